#!/usr/bin/env python3
"""polyffi against TVM 0.18's own runtime on real networks, per thread count, in one run.

    python3 bench/models/run_tvm_networks.py [--threads 1,2,all] [--rounds R] [--min-ms MS]
                                             [--instructions]

The networks (ResNet-18 and MobileNet at 3x112x112, compiled by TVM 0.18) are generated into
build/bench/tvm018_networks by tools/tvm-fixtures/generate_tvm018_networks.py on first use. For
every network and thread count ("all": every core) it runs bench_tvm_compare under each runtime
with that TVM_NUM_THREADS, alternating R rounds so drift on a shared machine hits both alike;
bench_tvm_compare first checks that the runtime's output equals TVM's recorded one bit for bit.
It prints the median ns per run(), the ratio polyffi / TVM (below 1: polyffi is faster) and each
runtime's scaling t(1 thread) / t(N threads). With --instructions it also counts, under callgrind
at one thread, the instructions per run() outside the network's kernel library: the runtime's
own part (executor, launches, workspaces, and the C library it calls).
"""

import argparse
import collections
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from run_tvm_compare import ROOT, tvm_environment  # noqa: E402

NETWORKS = ("resnet18", "mobilenet")


def ensure_networks(out):
    missing = [n for n in NETWORKS if not (out / n / "io.txt").exists()]
    if missing:
        print(f"generating {', '.join(missing)} into {out} (TVM 0.18, a few minutes)", flush=True)
        subprocess.run([str(ROOT / "tools/tvm-fixtures/tvm018.sh"),
                        str(ROOT / "tools/tvm-fixtures/generate_tvm018_networks.py"), str(out)]
                       + missing, check=True, stdout=sys.stderr)


def measure(binary, runtime, net_dir, threads, min_ms, ld_path):
    env = dict(os.environ, TVM_NUM_THREADS=str(threads), LD_LIBRARY_PATH=ld_path,
               BENCH_WARMUP="5")
    out = subprocess.run([str(binary), runtime, str(net_dir), "factory", str(min_ms)],
                         check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out)["run_ns"]


def self_cost_by_object(path):
    """Self instructions per object file from a callgrind output file (name compression aware)."""
    names = {"ob": {}, "fl": {}, "fn": {}}
    cost = collections.Counter()
    obj = None
    skip_next = False
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            if line[0].isdigit() or line[0] in "+-*":
                if skip_next:  # the inclusive cost of a call line, not self cost
                    skip_next = False
                    continue
                parts = line.split()
                if len(parts) >= 2:
                    cost[obj] += int(parts[1])
                continue
            key, _, value = line.partition("=")
            if key in ("ob", "cob"):
                name = value
                if value.startswith("("):
                    ref, _, rest = value.partition(")")
                    name = rest.strip() or names["ob"][ref]
                    names["ob"][ref] = name
                if key == "ob":
                    obj = name
            elif key == "calls":
                skip_next = True
    return cost


def instructions(binary, runtime, net_dir, ld_path, iters=3):
    """Instructions per run() at one thread: in total and outside the network's kernels."""
    env = dict(os.environ, TVM_NUM_THREADS="1", LD_LIBRARY_PATH=ld_path,
               BENCH_COUNT_ITERS=str(iters), BENCH_WARMUP="1", BENCH_COUNT_RUN_ONLY="1")
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "callgrind.out"
        subprocess.run(["valgrind", "--tool=callgrind", "--toggle-collect=counted_run_loop",
                        "--compress-pos=no", f"--callgrind-out-file={out}", str(binary),
                        runtime, str(net_dir), "factory"],
                       check=True, capture_output=True, text=True, env=env)
        cost = self_cost_by_object(out)
    total = sum(cost.values())
    kernels = sum(v for k, v in cost.items() if k and os.path.basename(k) == "factory.so")
    return total / iters, (total - kernels) / iters


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="1,2,all",
                    help="comma-separated thread counts; 'all' is every core")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-ms", type=float, default=300)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--networks", default=None,
                    help="directory of generated networks (default BUILD/bench/tvm018_networks)")
    ap.add_argument("--only", action="append", choices=NETWORKS,
                    help="measure only this network (repeatable)")
    ap.add_argument("--instructions", action="store_true",
                    help="also count instructions per run() at one thread (callgrind, slow)")
    args = ap.parse_args()

    build = pathlib.Path(args.build)
    binary = build / "bin" / "bench_tvm_compare"
    ours = str(build / "lib" / "libpolyffi.so")
    nets = pathlib.Path(args.networks) if args.networks else build / "bench" / "tvm018_networks"
    ensure_networks(nets)
    env = tvm_environment()
    theirs, ld_path = env["TVM018_RUNTIME"], env["TVM018_LD_LIBRARY_PATH"]
    counts = []
    for t in args.threads.split(","):
        n = os.cpu_count() if t.strip() == "all" else int(t)
        counts.append((t.strip(), n))

    load = os.getloadavg()
    print(f"{args.rounds} alternating rounds, median ms per run(); {os.cpu_count()} cores; "
          f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    header = (f"{'network':<11}{'threads':>8}{'TVM ms':>9}{'polyffi ms':>12}{'ratio':>7}"
              f"{'TVM t1/tN':>11}{'polyffi t1/tN':>15}")
    print(header)
    print("-" * len(header))
    networks = args.only or NETWORKS
    for net in networks:
        d = nets / net
        t1 = {}
        for label, n in counts:
            samples = {"polyffi": [], "tvm": []}
            for _ in range(args.rounds):
                samples["polyffi"].append(measure(binary, ours, d, n, args.min_ms, ld_path))
                samples["tvm"].append(measure(binary, theirs, d, n, args.min_ms, ld_path))
            p, t = (statistics.median(samples[k]) / 1e6 for k in ("polyffi", "tvm"))
            if n == 1:
                t1 = {"polyffi": p, "tvm": t}
            scale = (f"{t1['tvm'] / t:>11.2f}{t1['polyffi'] / p:>15.2f}" if t1 else
                     f"{'-':>11}{'-':>15}")
            print(f"{net:<11}{label if label == 'all' else n:>8}{t:>9.2f}{p:>12.2f}{p / t:>7.3f}"
                  f"{scale}", flush=True)
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.instructions:
        print("\ninstructions per run() at one thread (callgrind): total, and outside the "
              "kernel library (the runtime's own part)")
        for net in networks:
            for name, so in (("TVM", theirs), ("polyffi", ours)):
                total, own = instructions(binary, so, nets / net, ld_path)
                print(f"{net:<11}{name:<9}{total:>16,.0f}{own:>14,.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
