#!/usr/bin/env python3
"""Run bench_models with repetitions and print medians, ratios and the issue's targets.

    python3 bench/models/run_models.py                       # build/bin/bench_models, 7 reps
    python3 bench/models/run_models.py --binary /tmp/b/bin/bench_models --repetitions 9
    python3 bench/models/run_models.py --from-json saved.json   # re-print a saved run

Prints markdown: one table per question the issue asks, then every case with its spread.
Targets (from the issue) are reported as met / missed; nothing here fails on a missed target,
because a benchmark on a shared machine is evidence, not a test. The exit status is non-zero
only when the benchmark binary fails or a case is missing.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SIZES = ["1elem", "1MiB", "256MiB"]
SIZE_BYTES = {"1elem": 4, "1MiB": 1 << 20, "256MiB": 1 << 28}
PARALLEL_SIZES = ["1000", "100000", "10000000"]
DLPACK_GROWTH_TARGET = 1.10  # 256 MiB within 10 % of 1 element
EXECUTOR_OVERHEAD_TARGET = 5.0  # percent
TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def run_benchmark(binary, repetitions, min_time, extra):
    cmd = [
        str(binary),
        "--benchmark_format=json",
        f"--benchmark_repetitions={repetitions}",
        f"--benchmark_min_time={min_time}",
        # Interleave the cases' repetitions in random order, so a burst of load from other work
        # spreads over all cases instead of landing on one of them.
        "--benchmark_enable_random_interleaving=true",
    ] + extra
    print(f"running: {' '.join(cmd)}", file=sys.stderr)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"bench_models exited with {proc.returncode}")
    return json.loads(proc.stdout)


def collect(report, metric):
    """name -> list of ns per operation (the chosen metric), one entry per repetition."""
    runs, order = {}, {}
    for b in report["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        if b.get("error_occurred"):
            sys.exit(f"{b['name']}: {b.get('error_message')}")
        name = b.get("run_name", b["name"]).removesuffix("/real_time")
        order.setdefault(name, (b.get("family_index", len(order)), name))
        runs.setdefault(name, []).append(b[metric] * TO_NS[b.get("time_unit", "ns")])
    # Registration order, not the random order the interleaved repetitions ran in.
    return {name: runs[name] for name in sorted(runs, key=lambda n: order[n])}


class Results:
    def __init__(self, runs, cpu_runs):
        self.runs = runs
        self.cpu_runs = cpu_runs  # the calling thread's CPU time, to show contention

    def median(self, name):
        if name not in self.runs:
            sys.exit(f"case {name} is missing from the benchmark output")
        return statistics.median(self.runs[name])

    def has(self, *names):
        return all(n in self.runs for n in names)

    def spread(self, name):
        """(max - min) / median, in percent: how much the repetitions disagree."""
        v = self.runs[name]
        return 100.0 * (max(v) - min(v)) / statistics.median(v)


def fmt_time(ns):
    if ns < 1e4:
        return f"{ns:.1f} ns"
    if ns < 1e7:
        return f"{ns / 1e3:.1f} µs"
    return f"{ns / 1e6:.2f} ms"


def verdict(ok):
    return "**met**" if ok else "**missed**"


def print_context(report, r, load_before, load_after):
    ctx = report.get("context", {})
    print("## Machine and run\n")
    print(
        f"- {ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz; "
        f"library build: {ctx.get('library_build_type', '?')} libbenchmark; "
        f"TVM_NUM_THREADS: {ctx.get('TVM_NUM_THREADS', '?')}"
    )
    if load_before is not None:
        print(
            f"- load average (1/5/15 min) before: {load_before[0]:.2f} / {load_before[1]:.2f} / "
            f"{load_before[2]:.2f}; after: {load_after[0]:.2f} / {load_after[1]:.2f} / "
            f"{load_after[2]:.2f}"
        )
    elif "load_avg" in ctx:
        print(
            f"- load average at start (1/5/15 min): "
            f"{' / '.join(f'{x:.2f}' for x in ctx['load_avg'])}"
        )
    reps = {len(v) for v in r.runs.values()}
    print(
        f"- repetitions per case: {', '.join(map(str, sorted(reps)))}; times are medians of "
        f"wall-clock ns per operation\n"
    )


def print_transfer(r):
    print("## Passing a float32 array to testing.nop vs memcpy of the same bytes\n")
    print(
        "| size | DLPack import + nop + free | existing NDArray + nop | memcpy | memcpy / DLPack |"
    )
    print("|---|---:|---:|---:|---:|")
    for s in SIZES:
        d, a, m = (r.median(f"{k}/{s}") for k in ("dlpack/nop", "ndarray/nop", "memcpy"))
        print(
            f"| {s} ({SIZE_BYTES[s]:,} B) | {fmt_time(d)} | {fmt_time(a)} | {fmt_time(m)} | "
            f"{m / d:,.2f}× |"
        )
    print()
    for kind, label in (
        ("dlpack/nop", "DLPack import + nop + free"),
        ("ndarray/nop", "existing NDArray + nop"),
    ):
        ratio = r.median(f"{kind}/256MiB") / r.median(f"{kind}/1elem")
        print(
            f"- {label}: 256 MiB / 1 element = **{ratio:.3f}** "
            f"(target ≤ {DLPACK_GROWTH_TARGET:.2f}: {verdict(ratio <= DLPACK_GROWTH_TARGET)})"
        )
    print()


def print_digits(r):
    print("## Digits model, batch 1: graph executor vs the same kernels called directly\n")
    rows = [
        ("digits/executor/full", "executor: set_input + run + get_output(into array)"),
        ("digits/direct/full", "direct: input copy + 2 kernels (TVMFuncCall), output in place"),
        ("digits/direct/full_outcopy", "direct: as above + the output copy get_output makes"),
        ("digits/executor/run", "executor: run() alone"),
        ("digits/direct/kernels", "direct: 2 kernels via TVMFuncCall"),
        ("digits/direct/kernels_raw", "direct: 2 kernels via their C symbols (no runtime)"),
        ("digits/executor/set_input", "executor: set_input('data', x) alone"),
        ("digits/executor/set_input_by_index", "executor: set_input(0, x) alone"),
        ("digits/executor/get_output", "executor: get_output(0, out) alone"),
        ("digits/direct/array_copy", "TVMArrayCopyFromTo of the input alone"),
    ]
    print("| case | what | median |")
    print("|---|---|---:|")
    for name, what in rows:
        print(f"| `{name}` | {what} | {fmt_time(r.median(name))} |")
    print()

    pairs = [
        ("executor full vs direct full", "digits/executor/full", "digits/direct/full", True),
        (
            "executor full vs direct full + output copy",
            "digits/executor/full",
            "digits/direct/full_outcopy",
            False,
        ),
        ("run() vs 2 kernel calls", "digits/executor/run", "digits/direct/kernels", True),
        (
            "2 kernels via TVMFuncCall vs raw symbols",
            "digits/direct/kernels",
            "digits/direct/kernels_raw",
            False,
        ),
    ]
    print_overheads(r, pairs, "per inference")

    print("\nThe same pairs with graph.json (batch 359, the whole held-out set, one inference):\n")
    print("| case | median | per sample |")
    print("|---|---:|---:|")
    for name in ("executor/full", "direct/full", "executor/run", "direct/kernels"):
        m = r.median(f"digits_b359/{name}")
        print(f"| `digits_b359/{name}` | {fmt_time(m)} | {fmt_time(m / 359)} |")
    print()
    print_overheads(
        r,
        [
            (
                "executor full vs direct full",
                "digits_b359/executor/full",
                "digits_b359/direct/full",
                True,
            ),
            (
                "run() vs 2 kernel calls",
                "digits_b359/executor/run",
                "digits_b359/direct/kernels",
                True,
            ),
        ],
        "per batch of 359",
    )
    print()


def print_overheads(r, pairs, unit):
    for label, a, b, targeted in pairs:
        o = 100.0 * (r.median(a) - r.median(b)) / r.median(b)
        delta = r.median(a) - r.median(b)
        target = (
            f" (target ≤ {EXECUTOR_OVERHEAD_TARGET:.0f} %: "
            f"{verdict(o <= EXECUTOR_OVERHEAD_TARGET)})"
            if targeted
            else ""
        )
        print(f"- {label}: **{o:+.1f} %** ({delta:+.1f} ns {unit}){target}")


def print_parallel(r):
    print("## TVMBackendParallelLaunch vs a plain loop (sum of n uint32)\n")
    print("| n | parallel launch | plain loop | launch / loop | launch − loop |")
    print("|---:|---:|---:|---:|---:|")
    for n in PARALLEL_SIZES:
        launch, loop = r.median(f"parallel/launch/{n}"), r.median(f"parallel/loop/{n}")
        diff = fmt_time(launch - loop) if launch >= loop else "−" + fmt_time(loop - launch)
        print(
            f"| {int(n):,} | {fmt_time(launch)} | {fmt_time(loop)} | {launch / loop:.2f}× | "
            f"{diff} |"
        )
    print(
        f"\n- empty launch (no work, one task per pool thread): "
        f"**{fmt_time(r.median('parallel/launch/empty'))}**\n"
    )


def print_all(r):
    print("## Every case\n")
    print(
        "Wall-clock medians; the last column is the calling thread's CPU time over wall time "
        "(≈ 1.00 when nothing else ran on its core; the parallel cases wait for workers, so "
        "theirs is lower by design).\n"
    )
    print("| case | median | min | max | spread (max − min) / median | CPU / wall |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, v in r.runs.items():
        cpu = statistics.median(r.cpu_runs[name]) / r.median(name)
        print(
            f"| `{name}` | {fmt_time(r.median(name))} | {fmt_time(min(v))} | "
            f"{fmt_time(max(v))} | {r.spread(name):.1f} % | {cpu:.2f} |"
        )
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", type=Path, default=REPO / "build" / "bin" / "bench_models")
    ap.add_argument("--repetitions", type=int, default=7)
    ap.add_argument(
        "--min-time",
        type=float,
        default=0.2,
        help="seconds per repetition of each case (Google Benchmark min_time)",
    )
    ap.add_argument(
        "--filter",
        help="only cases matching this regex (--benchmark_filter); "
        "sections whose cases did not run are left out",
    )
    ap.add_argument("--json-out", type=Path, help="also save the raw JSON report here")
    ap.add_argument("--from-json", type=Path, help="print a saved report instead of running")
    ap.add_argument("extra", nargs="*", help="more flags for bench_models (after --)")
    args = ap.parse_args()

    load_before = load_after = None
    if args.from_json:
        report = json.loads(args.from_json.read_text())
    else:
        if not args.binary.exists():
            sys.exit(f"{args.binary} not found: build the bench_models target first")
        load_before = os.getloadavg()
        extra = args.extra + ([f"--benchmark_filter={args.filter}"] if args.filter else [])
        report = run_benchmark(args.binary, args.repetitions, args.min_time, extra)
        load_after = os.getloadavg()
        if args.json_out:
            args.json_out.write_text(json.dumps(report, indent=1))

    results = Results(collect(report, "real_time"), collect(report, "cpu_time"))
    print_context(report, results, load_before, load_after)
    if results.has(*(f"{k}/{s}" for k in ("dlpack/nop", "ndarray/nop", "memcpy") for s in SIZES)):
        print_transfer(results)
    if results.has("digits/executor/full", "digits_b359/executor/full"):
        print_digits(results)
    if results.has(
        "parallel/launch/empty",
        *(f"parallel/{k}/{n}" for k in ("launch", "loop") for n in PARALLEL_SIZES),
    ):
        print_parallel(results)
    print_all(results)


if __name__ == "__main__":
    main()
