#!/usr/bin/env python3
"""Run bench_calls (and bench_memory) and print one markdown table for docs/performance/calls.md.

For every case calls/<case>/<impl> it reports:
  - median ns per call over --repetitions Google Benchmark repetitions (time / calls_per_iter);
  - the ratio to the function-pointer floor (calls/nop/fnptr for nop, calls/add3/fnptr else);
  - the ratio to tvm-ffi doing the same case, in instructions and in time: polyffi_c against
    tvm-ffi's C entry point (calls/<case>/tvm_ffi_c), polyffi_cpp against its C++ Function
    (calls/<case>/tvm_ffi). A polyffi row whose peer was not measured is an error: the script
    exits non-zero naming it (build with apache-tvm-ffi installed; see calls.md);
  - instructions per call from callgrind: (total(N) - total(0)) / N, which cancels start-up;
  - heap allocations per call counted by the bench's malloc interposer.

Usage (from the repository root, Release build in build/):
  python3 bench/run_calls.py --build-dir build
Nothing here asserts performance: it measures and prints.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# Implementations in display order; anything else sorts after them.
IMPL_ORDER = ["fnptr", "std_function", "polyffi_c", "polyffi_cpp", "polyffi_cpp_view", "tvm_ffi_c",
              "tvm_ffi", "tvm_ffi_string"]
# What each case measures, for the table's first column.
CASE_TITLES = {
    "nop": "nop (0 args)",
    "add3": "add3(1, 2, 3)",
    "str16": "echo(16-byte str)",
    "callback": "C callback via TVMFuncCall",
    "callback_call_n": "call_n(cb, 1000), per callback",
    "callback_direct": "direct C callback via TVMFuncCall",
    "callback_call_n_direct": "call_n(direct C cb, 1000), per callback",
    "lookup": "global lookup + free",
    "c_nop": "plain C: nop (0 args)",
    "c_add3": "plain C: add3(1, 2, 3)",
    "c_str16": "plain C: echo(16-byte str)",
    "c_callback": "plain C: callback via the C entry point",
    "c_callback_call_n": "plain C: call_n(cb, 1000), per callback",
    "d_nop": "plain C, direct protocol: nop (0 args)",
    "d_add3": "plain C, direct protocol: add3(1, 2, 3)",
    "d_str16": "plain C, direct protocol: echo(16-byte str)",
    "d_callback": "plain C, direct protocol: callback via the C entry point",
    "d_callback_call_n": "plain C, direct protocol: call_n(cb, 1000), per callback",
    "g_nop": "plain C, TVMFuncGetDirect pair: nop (0 args)",
    "g_add3": "plain C, TVMFuncGetDirect pair: add3(1, 2, 3)",
    "g_str16": "plain C, TVMFuncGetDirect pair: echo(16-byte str)",
    "g_callback": "plain C, TVMFuncGetDirect pair: callback",
}
# Like for like: polyffi's C ABI row against tvm-ffi's C entry point (TVMFFIFunctionCall), the
# C++ layer against tvm-ffi's C++ Function. Every polyffi row must have its peer measured.
PEERS = {"polyffi_c": "tvm_ffi_c", "polyffi_cpp": "tvm_ffi", "polyffi_cpp_view": "tvm_ffi"}
# Direct-protocol rows (calls/d_*: TVMFuncCall on direct callees; calls/g_*: a trusted caller
# through TVMFuncGetDirect's pair) have no case of their own on the tvm-ffi side: their peer is
# the plain C safe-call row of the same case (calls/c_*/tvm_ffi_c).
PEER_CASE = {f"{p}_{c}": f"c_{c}" for p in ("d", "g")
             for c in ("nop", "add3", "str16", "callback", "callback_call_n")}
# The fixtures' call_n (and TVMFuncCall) on a direct C callback: compared with tvm-ffi's C entry
# on its own callback rows.
PEER_CASE.update({"callback_direct": "callback", "callback_call_n_direct": "callback_call_n"})


def peer_of(name: str) -> str | None:
    """The tvm-ffi row a polyffi row is compared with, or None for rows without a peer."""
    group, case, impl = split(name)
    if impl not in PEERS:
        return None
    return f"{group}/{PEER_CASE.get(case, case)}/{PEERS[impl]}"


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    result = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if result.returncode != 0:
        sys.exit(f"command failed ({result.returncode}): {' '.join(cmd)}\n{result.stderr}")
    return result


def list_cases(binary: Path) -> dict[str, int]:
    out = run([str(binary), "--list_cases"]).stdout
    cases = {}
    for line in out.splitlines():
        name, calls = line.split()
        cases[name] = int(calls)
    return cases


def run_timings(binary: Path, repetitions: int, min_time: float, flt: str,
                metric: str) -> tuple[dict[str, dict], dict]:
    """Median ns per call and allocations per call for each case, and the run's context."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        cmd = [
            str(binary),
            f"--benchmark_repetitions={repetitions}",
            f"--benchmark_min_time={min_time}",
            f"--benchmark_filter={flt}",
            "--benchmark_out_format=json",
            f"--benchmark_out={out}",
            "--benchmark_display_aggregates_only=true",
        ]
        print("running:", " ".join(cmd), file=sys.stderr)
        run(cmd)
        data = json.loads(out.read_text())
    per_case: dict[str, dict[str, list[float]]] = {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue  # recompute medians from the repetitions themselves
        if b.get("time_unit") != "ns":
            sys.exit(f"unexpected time unit {b.get('time_unit')} for {b['name']}")
        calls = b["calls_per_iter"]
        slot = per_case.setdefault(b["run_name"], {"ns": [], "allocs": [], "bytes": []})
        slot["ns"].append(b[metric] / calls)
        slot["allocs"].append(b["allocs_per_call"])
        slot["bytes"].append(b["bytes_per_call"])
    results = {}
    for name, s in per_case.items():
        results[name] = {
            "ns": statistics.median(s["ns"]),
            "ns_min": min(s["ns"]),
            "ns_max": max(s["ns"]),
            "allocs": statistics.median(s["allocs"]),
            "bytes": statistics.median(s["bytes"]),
        }
    return results, data.get("context", {})


def callgrind_total(binary: Path, case: str, iterations: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        run([
            "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
            str(binary), f"--case={case}", f"--iterations={iterations}",
        ])
        for line in out.read_text().splitlines():
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    sys.exit(f"no totals in callgrind output for {case}")


def instructions_per_call(binary: Path, case: str, calls_per_iter: int, n: int) -> float:
    iters = max(1, n // calls_per_iter)
    zero = callgrind_total(binary, case, 0)
    total = callgrind_total(binary, case, iters)
    return (total - zero) / (iters * calls_per_iter)


def annotate(binary: Path, case: str, n: int) -> str:
    """callgrind_annotate of one case: where the instructions of a call go, by function."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        run([
            "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
            str(binary), f"--case={case}", f"--iterations={n}",
        ])
        return run(["callgrind_annotate", "--inclusive=no", "--threshold=99", str(out)]).stdout


def split(name: str) -> tuple[str, str, str]:
    parts = name.split("/")
    if len(parts) != 3:
        return name, "", ""
    return parts[0], parts[1], parts[2]


def fmt(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "—"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.{digits}f}"


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cxx = ""
    if shutil.which("c++"):
        cxx = subprocess.run(["c++", "--version"], capture_output=True, text=True).stdout
        cxx = cxx.splitlines()[0] if cxx else ""
    return f"{cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, {cxx}"


def missing_peers(timings: dict) -> list[str]:
    """polyffi rows whose tvm-ffi peer was not measured."""
    missing = []
    for name in timings:
        peer = peer_of(name)
        if peer is not None and peer not in timings:
            missing.append(f"{name} (needs {peer})")
    return sorted(missing)


def table(timings: dict, instr: dict) -> str:
    rows = []
    header = ("| case | implementation | instr/call | × tvm-ffi (instr) | median ns/call | min–max "
              "| × tvm-ffi (time) | × fn ptr (time) | allocs/call |")
    rows.append(header)
    rows.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")

    def key(name: str):
        group, case, impl = split(name)
        case_rank = list(CASE_TITLES).index(case) if case in CASE_TITLES else len(CASE_TITLES)
        impl_rank = IMPL_ORDER.index(impl) if impl in IMPL_ORDER else len(IMPL_ORDER)
        return (group, case_rank, case, impl_rank, impl)

    for name in sorted(timings, key=key):
        group, case, impl = split(name)
        t = timings[name]
        floor_name = f"{group}/nop/fnptr" if case.endswith("nop") else f"{group}/add3/fnptr"
        floor = timings.get(floor_name)
        vs_floor = t["ns"] / floor["ns"] if floor and name != floor_name else None
        peer_name = peer_of(name)
        vs_peer = vs_peer_instr = None
        if peer_name is not None:
            vs_peer = t["ns"] / timings[peer_name]["ns"]
            if name in instr and peer_name in instr:
                vs_peer_instr = instr[name] / instr[peer_name]
        ins = instr.get(name)
        rows.append(
            f"| {CASE_TITLES.get(case, case)} | {impl} "
            f"| {fmt(ins, 1) if ins is not None else '—'} | {fmt(vs_peer_instr)} "
            f"| {fmt(t['ns'])} | {fmt(t['ns_min'])}–{fmt(t['ns_max'])} | {fmt(vs_peer)} "
            f"| {fmt(vs_floor)} | {t['allocs']:g} |"
        )
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build", help="CMake build directory")
    parser.add_argument("--repetitions", type=int, default=7)
    parser.add_argument("--min-time", type=float, default=0.5,
                        help="seconds per repetition (Google Benchmark --benchmark_min_time)")
    parser.add_argument("--filter", default="calls/", help="regex of case names to run")
    parser.add_argument("--metric", choices=["cpu_time", "real_time"], default="cpu_time",
                        help="cpu_time (default) excludes time the thread spent descheduled, "
                             "which matters on a shared machine; single-threaded cases only")
    parser.add_argument("--callgrind-iterations", type=int, default=100000)
    parser.add_argument("--no-callgrind", action="store_true")
    parser.add_argument("--no-memory", action="store_true", help="skip bench_memory")
    parser.add_argument("--memory-calls", type=int, default=10_000_000)
    parser.add_argument("--annotate", metavar="CASE",
                        help="only print callgrind_annotate (self cost by function) for CASE, "
                             "run for --callgrind-iterations calls")
    parser.add_argument("--json", metavar="FILE", help="also write the raw results as JSON")
    args = parser.parse_args()

    build = Path(args.build_dir)
    binary = build / "bin" / "bench_calls"
    if not binary.exists():
        sys.exit(f"{binary} not found: build the bench_calls target first")

    cases = list_cases(binary)
    if args.annotate:
        if args.annotate not in cases:
            sys.exit(f"no case {args.annotate}; cases: {', '.join(cases)}")
        iters = max(1, args.callgrind_iterations // cases[args.annotate])
        print(annotate(binary, args.annotate, iters))
        return 0

    timings, context = run_timings(binary, args.repetitions, args.min_time, args.filter,
                                   args.metric)
    missing = missing_peers(timings)
    if missing:
        sys.exit("no tvm-ffi peer measured for:\n  " + "\n  ".join(missing) +
                 "\nbench_calls was built without apache-tvm-ffi (pip install apache-tvm-ffi, "
                 "reconfigure) or the --filter left the peers out")

    instr: dict[str, float] = {}
    if not args.no_callgrind:
        if not shutil.which("valgrind"):
            sys.exit("valgrind not found (apt-get install valgrind) or pass --no-callgrind")
        names = [n for n in timings if n in cases]
        print(f"callgrind: {len(names)} cases x 2 runs", file=sys.stderr)
        # Instruction counts do not depend on timing, so these runs may share the CPUs.
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            futures = {
                pool.submit(instructions_per_call, binary, n, cases[n],
                            args.callgrind_iterations): n
                for n in names
            }
            for f in concurrent.futures.as_completed(futures):
                instr[futures[f]] = f.result()

    memory_text = ""
    memory_bin = build / "bin" / "bench_memory"
    if not args.no_memory and memory_bin.exists():
        memory_text = run([str(memory_bin), "add3", str(args.memory_calls)]).stdout

    print(f"Machine: {machine()}")
    if context:
        print(f"Google Benchmark: {context.get('library_build_type', '?')} library, "
              f"{context.get('num_cpus', '?')} CPUs at {context.get('mhz_per_cpu', '?')} MHz, "
              f"{args.repetitions} repetitions of >= {args.min_time} s, {args.metric}; "
              f"callgrind N = {args.callgrind_iterations}")
    print()
    print(table(timings, instr))
    if memory_text:
        print()
        print("bench_memory:")
        print("```")
        print(memory_text.rstrip())
        print("```")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"timings": timings, "instructions_per_call": instr, "memory": memory_text,
             "machine": machine()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
