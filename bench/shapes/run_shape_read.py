#!/usr/bin/env python3
"""Instructions per shape read, runtime.ShapeTupleBytes against GetShapeTupleSize/Elem.

Runs build/bin/bench_shape_read under callgrind with N and 0 iterations for each way and each
rank, and prints (total(N) - total(0)) / N as a markdown table for docs/performance/shapes.md.
Nothing here asserts performance: it measures and prints.

Usage: python3 bench/shapes/run_shape_read.py [--build-dir build] [--iterations 2000]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
from pathlib import Path

RANKS = [0, 2, 4, 8]


def instructions(binary: Path, mode: str, ndim: int, iterations: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(binary),
                        mode, str(ndim), str(iterations)],
                       check=True, capture_output=True, text=True)
        text = out.read_text()
    m = re.search(r"^summary:\s+(\d+)", text, re.M) or re.search(r"^totals:\s+(\d+)", text, re.M)
    if m is None:
        raise RuntimeError("no instruction total in the callgrind output")
    return int(m.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--iterations", type=int, default=2000)
    args = ap.parse_args()
    binary = Path(args.build_dir) / "bin" / "bench_shape_read"
    n = args.iterations
    print("| dimensions | ShapeTupleBytes (1 call) | GetShapeTupleSize + Elem (1 + n calls) "
          "| ratio |")
    print("|---:|---:|---:|---:|")
    for ndim in RANKS:
        per = {}
        for mode in ("bytes", "elems"):
            total = instructions(binary, mode, ndim, n) - instructions(binary, mode, ndim, 0)
            per[mode] = total / n
        print(f"| {ndim} | {per['bytes']:.0f} | {per['elems']:.0f} | "
              f"{per['elems'] / per['bytes']:.2f}x |")


if __name__ == "__main__":
    main()
