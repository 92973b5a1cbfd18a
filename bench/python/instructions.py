"""Instructions per call of the polyffi Python binding and of apache-tvm-ffi, side by side.

The wall-clock table of bench_calls.py moves with the machine's load; this one does not. Every
(operation, peer) pair runs in its own interpreter under `valgrind --tool=callgrind`, twice: with
N calls and with none. Interpreter start-up, imports and the one warm-up call are in both runs and
cancel, so (total(N) - total(0)) / N is what one call costs, the Python `for` loop included (the
"loop" row measures the loop alone). Prints a markdown table with the ratio tvm-ffi / polyffi
(above 1 means polyffi does less work). Exits non-zero, naming the rows, when a peer could not be
measured, instead of printing an empty column.

    python bench/python/instructions.py [--iterations N] [--only OP]

Needs valgrind, apache-tvm-ffi and libpolyffi_testing.so (env POLYFFI_TEST_LIB_DIR, default
<repo>/build/lib); add3 and call_n for tvm-ffi come from build/lib/libbench_tvm_ffi_fixtures.so.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

OPS = [
    "loop",
    "nop()",
    "add3(1, 2, 3)",
    "echo(16-byte str)",
    "nop(x, y, z) numpy",
    "get_global_func",
    "call_n(py callback)/call",
]
PEERS = ["polyffi", "tvm-ffi"]


def build_case(op: str, peer: str):
    """The callable run(k) for one (op, peer): k calls of the operation."""
    sys.path.insert(0, str(HERE))
    import numpy as np

    import bench_calls  # the same fixtures and peers as the timed table

    s16 = "0123456789abcdef"
    arrays = [np.zeros(16, dtype="float32") for _ in range(3)]

    def cb(i):
        return i

    if peer == "polyffi":
        import polyffi

        polyffi.load_module(str(bench_calls.LIB_DIR / "libpolyffi_testing.so"))
        get = polyffi.get_global_func
        names = {"add3": "testing.add3", "call_n": "testing.call_n"}
    else:
        tf = bench_calls.load_tvm_ffi()
        if tf is None:
            raise SystemExit("apache-tvm-ffi is not importable")
        get = tf.get_global_func
        names = {"add3": "bench.add3", "call_n": "bench.call_n"}

    def loop(f, *args):
        def run(k):
            for _ in range(k):
                f(*args)

        return run

    if op == "loop":
        return _bare_loop
    if op == "nop()":
        return loop(get("testing.nop"))
    if op == "add3(1, 2, 3)":
        f = get(names["add3"])
        if f(1, 2, 3) != 6:
            raise SystemExit(f"{peer} add3 gave a wrong result")
        return loop(f, 1, 2, 3)
    if op == "echo(16-byte str)":
        f = get("testing.echo")
        if f(s16) != s16:
            raise SystemExit(f"{peer} echo gave a wrong result")
        return loop(f, s16)
    if op == "nop(x, y, z) numpy":
        return loop(get("testing.nop"), *arrays)
    if op == "get_global_func":
        return loop(get, "testing.nop")
    if op == "call_n(py callback)/call":
        f = get(names["call_n"])
        if f(cb, 1000) != 499500:
            raise SystemExit(f"{peer} call_n gave a wrong result")
        return lambda k: f(cb, k)
    raise SystemExit(f"unknown operation {op!r}")


def _bare_loop(k):
    for _ in range(k):
        pass


def child(op: str, peer: str, n: int) -> None:
    run = build_case(op, peer)
    run(1)  # warm-up: first-call caches are in both counted runs
    run(n)


def count(op: str, peer: str, n: int, env: dict) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        cmd = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            __file__,
            "--child",
            op,
            peer,
            str(n),
        ]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{op} / {peer}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
        m = re.search(r"^summary:\s+(\d+)", out.read_text(), re.MULTILINE)
        if not m:
            raise RuntimeError(f"{op} / {peer}: no callgrind summary")
        return int(m.group(1))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=100_000)
    parser.add_argument("--only", action="append", help="operation(s) to run")
    parser.add_argument("--child", nargs=3, metavar=("OP", "PEER", "N"), help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        child(opts.child[0], opts.child[1], int(opts.child[2]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind not found", file=sys.stderr)
        return 2
    # numpy's OpenBLAS starts worker threads whose spinning differs from run to run; with one
    # thread (and a fixed hash seed) a run's count is the same every time.
    env = dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    ops = opts.only or OPS
    n = opts.iterations
    results: dict[tuple[str, str], float] = {}
    missing = []
    for op in ops:
        for peer in ["polyffi"] if op == "loop" else PEERS:
            calls = n  # call_n's run(k) is one call_n(cb, k): k callbacks
            try:
                total_n = count(op, peer, calls, env)
                total_0 = count(op, peer, 0, env)
            except RuntimeError as e:
                print(f"# {e}", file=sys.stderr)
                missing.append(f"{op} / {peer}")
                continue
            results[(op, peer)] = (total_n - total_0) / calls
    print(
        f"# Python {sys.version.split()[0]}, callgrind, N = {n} "
        f"(call_n: one call of N callbacks, per callback), instructions per call, "
        "Python loop included"
    )
    print("| operation | polyffi | apache-tvm-ffi | tvm-ffi / polyffi |")
    print("|---|---:|---:|---:|")
    for op in ops:
        p, t = results.get((op, "polyffi")), results.get((op, "tvm-ffi"))
        cells = [
            f"{p:.0f}" if p is not None else "n/a",
            f"{t:.0f}" if t is not None else ("—" if op == "loop" else "n/a"),
            f"{t / p:.2f}×" if p and t else "—",
        ]
        print(f"| {op} | " + " | ".join(cells) + " |")
    if missing:
        print("not measured: " + ", ".join(missing), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
