#!/usr/bin/env python3
"""polyffi against TVM 0.18's own runtime on the TVM-compiled fixtures, from C, in one run.

    python3 bench/models/run_tvm_compare.py [--threads N] [--rounds R] [--min-ms MS]

Needs the Release build (build/bin/bench_tvm_compare, build/lib/libpolyffi.so) and TVM 0.18's
runtime, which tools/tvm-fixtures/setup-tvm018.sh fetches from Maven Central on first use. For
every fixture (tests/tvm_models/tvm018) and form (the exported factory library, the
three-artifact form) it runs bench_tvm_compare under each runtime, alternating R rounds so drift
hits both alike, with the same TVM_NUM_THREADS, and prints median ns per run() and per
set_input+run+get_output, with the ratio polyffi / TVM (below 1: polyffi is faster).
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "tvm_models" / "tvm018"


def tvm_environment():
    out = subprocess.run([str(ROOT / "tools/tvm-fixtures/setup-tvm018.sh")], check=True,
                         capture_output=True, text=True).stdout
    env = {}
    for line in out.splitlines():
        if line.startswith("export "):
            key, value = line[len("export "):].split("=", 1)
            env[key] = value.strip('"')
    return env


def measure(binary, runtime, fixture, form, threads, min_ms, ld_path):
    env = dict(os.environ, TVM_NUM_THREADS=str(threads), LD_LIBRARY_PATH=ld_path)
    out = subprocess.run([str(binary), runtime, str(FIXTURES / fixture), form, str(min_ms)],
                         check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out)


def instructions(binary, runtime, fixture, form, ld_path, iters=200):
    """Instructions per run() and per set_input+run+get_output (callgrind, one thread)."""
    result = {}
    for key, loop in (("run_ns", "counted_run_loop"), ("end_to_end_ns", "counted_end_to_end_loop")):
        env = dict(os.environ, TVM_NUM_THREADS="1", LD_LIBRARY_PATH=ld_path,
                   BENCH_COUNT_ITERS=str(iters))
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--toggle-collect={loop}",
             "--callgrind-out-file=/dev/null", str(binary), runtime, str(FIXTURES / fixture),
             form],
            check=True, capture_output=True, text=True, env=env)
        line = next(x for x in proc.stderr.splitlines() if "Collected :" in x)
        result[key] = int(line.split(":")[-1]) / iters
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-ms", type=float, default=40)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--instructions", action="store_true",
                    help="count instructions with callgrind (one thread) instead of timing")
    args = ap.parse_args()

    binary = pathlib.Path(args.build) / "bin" / "bench_tvm_compare"
    ours = str(pathlib.Path(args.build) / "lib" / "libpolyffi.so")
    env = tvm_environment()
    theirs, ld_path = env["TVM018_RUNTIME"], env["TVM018_LD_LIBRARY_PATH"]
    manifest = json.loads((FIXTURES / "manifest.json").read_text())
    fixtures = [f for f in manifest["fixtures"] if f != "te_kernels"]

    unit = "instructions (callgrind)" if args.instructions else "ns"
    print(f"TVM_NUM_THREADS={1 if args.instructions else args.threads}, "
          f"{1 if args.instructions else args.rounds} alternating rounds, median {unit} "
          f"(polyffi vs TVM {manifest['tvm_version']} libtvm_runtime.so, kernels from "
          f"{manifest['target']})")
    header = (f"{'fixture':<14}{'form':<9}{'run polyffi':>12}{'run TVM':>11}{'ratio':>7}"
              f"{'e2e polyffi':>13}{'e2e TVM':>11}{'ratio':>7}")
    print(header)
    print("-" * len(header))
    for fixture in fixtures:
        for form in ("factory", "three"):
            samples = {"polyffi": [], "tvm": []}
            if args.instructions:
                samples["polyffi"].append(instructions(binary, ours, fixture, form, ld_path))
                samples["tvm"].append(instructions(binary, theirs, fixture, form, ld_path))
            for _ in range(0 if args.instructions else args.rounds):
                samples["polyffi"].append(
                    measure(binary, ours, fixture, form, args.threads, args.min_ms, ld_path))
                samples["tvm"].append(
                    measure(binary, theirs, fixture, form, args.threads, args.min_ms, ld_path))
            med = {k: {m: statistics.median(s[m] for s in v) for m in ("run_ns", "end_to_end_ns")}
                   for k, v in samples.items()}
            p, t = med["polyffi"], med["tvm"]
            print(f"{fixture:<14}{form:<9}{p['run_ns']:>12.0f}{t['run_ns']:>11.0f}"
                  f"{p['run_ns'] / t['run_ns']:>7.2f}{p['end_to_end_ns']:>13.0f}"
                  f"{t['end_to_end_ns']:>11.0f}{p['end_to_end_ns'] / t['end_to_end_ns']:>7.2f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
