#!/usr/bin/env python3
"""Instructions per call (valgrind callgrind) for the Rust binding, the C ABI from C and the
tvm-ffi crate, case by case: (Ir(N) - Ir(0)) / (N * calls per iteration), which cancels start-up.

Usage: python3 bench/rust/instructions.py [--build build] [--only SUBSTRING]
(after building polyffi-bench and tvm-ffi-rows in release mode into build/cargo, see
docs/performance/rust.md; --only keeps the cases whose name contains SUBSTRING)
"""
import argparse
import re
import subprocess
import sys
from pathlib import Path

# case: (rust case, bench_calls case, tvm-ffi-rows case, iterations, calls per iteration)
CASES = [
    ("nop", "nop/rust_typed", "calls/nop/polyffi_c", "nop", 20000, 1),
    ("add3", "add3/rust_typed", "calls/add3/polyffi_c", "add3", 20000, 1),
    ("add3 generic", "add3/rust_generic", "calls/add3/polyffi_c", "add3", 20000, 1),
    ("add3 Value result", "add3/rust_value", "calls/add3/polyffi_c", "add3", 20000, 1),
    ("str16", "str16/rust_typed", "calls/str16/polyffi_c", "str16", 20000, 1),
    ("str16 into a reused String", "str16/rust_into", "calls/str16/polyffi_c", "str16", 20000, 1),
    ("str16 lent as &str", "str16/rust_borrowed", "calls/str16/polyffi_c", "str16", 20000, 1),
    ("callback (from_closure)", "callback/rust_typed", None, "callback", 1, 1_000_000),
    ("callback (from_typed)", "callback/rust_from_typed", None, "callback", 1, 1_000_000),
    ("lookup", "lookup/rust_typed", "calls/lookup/polyffi_c", "lookup", 20000, 1),
]
FLOORS = {"nop": "calls/nop/fnptr", "add3": "calls/add3/fnptr"}


def instructions(cmd):
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + cmd,
                         capture_output=True, text=True, check=True).stderr
    return int(re.search(r"Collected : (\d+)", out).group(1))


def per_call(cmd, n, calls):
    """cmd(k) is the command line that runs k iterations."""
    return (instructions(cmd(n)) - instructions(cmd(0))) / (n * calls)


def rust_cmd(binary, case):
    return lambda k: [str(binary), "--case", case, "--iterations", str(k)]


def c_cmd(binary, case):
    return lambda k: [str(binary), f"--case={case}", f"--iterations={k}"]


def tvm_cmd(binary, fixtures, case):
    return lambda k: [str(binary), str(fixtures), "--case", case, "--iterations", str(k)]


def fmt(x):
    return "-" if x is None else f"{x:.0f}"


def ratio(a, b):
    return "-" if not b else f"{a / b:.2f}x"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", default="", help="only the cases whose name contains this")
    opts = ap.parse_args()
    build = Path(opts.build)
    rust = build / "cargo/release/polyffi-bench"
    tvm = build / "cargo/release/tvm-ffi-rows"
    fixtures = build / "lib/libbench_tvm_ffi_fixtures.so"
    c = build / "bin/bench_calls"
    for p in (rust, c, tvm, fixtures):
        if not p.exists():
            # Every row is judged against the tvm-ffi crate: without the peer there is no result.
            sys.exit(f"instructions.py: {p} not found (build polyffi-bench with --features "
                     "tvm-ffi and bench_calls with TVM_FFI_ROOT, see docs/performance/rust.md)")
    print("| case | Rust instr/call | C ABI from C | floor | tvm-ffi crate | Rust / C | "
          "Rust / tvm-ffi |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, rcase, ccase, tcase, n, calls in CASES:
        if opts.only not in name:
            continue
        r = per_call(rust_cmd(rust, rcase), n, calls)
        if ccase is None:  # the C callback case runs 1000 callbacks per iteration
            cv = per_call(c_cmd(c, "calls/callback_call_n/polyffi_c"), 2000, 1000)
        else:
            cv = per_call(c_cmd(c, ccase), n, 1)
        floor = per_call(c_cmd(c, FLOORS[name]), n, 1) if name in FLOORS else None
        t = per_call(tvm_cmd(tvm, fixtures, tcase), n, calls)
        print(f"| {name} | {r:.0f} | {fmt(cv)} | {fmt(floor)} | {fmt(t)} | {ratio(r, cv)} | "
              f"{ratio(r, t)} |")

if __name__ == "__main__":
    main()
