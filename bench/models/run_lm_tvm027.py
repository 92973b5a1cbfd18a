"""Greedy generation of the TVM 0.27 decoder fixture: polyffi against TVM 0.27's own runtime.

    python3 bench/models/run_lm_tvm027.py [--tokens 64] [--rounds 5] [--batches 1,4]

Runs bench/models/lm_bench_py.py under polyffi's Python binding (ci/python-env.sh; libpolyffi
from --build) and under TVM 0.27 from PyPI (tools/tvm-fixtures/setup-tvm027.sh), alternating
processes, with TVM_NUM_THREADS=1 for both. Each process checks its greedy tokens against TVM's
recorded ones first. Prints, per batch size, time to first token (the batched prefill of the
19-token prompt) and decode tokens/s, median over the processes' median rounds, and the load
average before and after (the machine is shared: say the load with any number quoted).

With --instructions, each runtime instead runs one untimed generation under callgrind for two
token counts (8 and 40 decode steps); the difference divided by the extra steps is the
instructions of one decode step end to end (Python driver, binding, VM, cache, kernels, argmax),
which the load does not change.
"""

import argparse
import json
import os
import re
import tempfile
import pathlib
import statistics
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LM_DIR = ROOT / "tests/tvm_models/tvm027/lm"


def tvm_python():
    env_text = subprocess.run(
        [str(ROOT / "tools/tvm-fixtures/setup-tvm027.sh")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    for line in env_text.splitlines():
        if line.startswith("export TVM027_PYTHON="):
            return line.split("=", 1)[1].strip('"')
    raise RuntimeError("setup-tvm027.sh printed no TVM027_PYTHON")


def run(cmd, extra_env):
    env = dict(os.environ, TVM_NUM_THREADS="1", **extra_env)
    out = subprocess.run(
        [str(c) for c in cmd], check=True, capture_output=True, text=True, env=env
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def instructions(cmd, extra_env):
    """Total instructions of cmd under callgrind (one thread)."""
    # A fixed hash seed: the import's instructions (most of the total) then do not vary between
    # the two runs whose difference is taken.
    env = dict(os.environ, TVM_NUM_THREADS="1", PYTHONHASHSEED="0", **extra_env)
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.out"]
            + [str(c) for c in cmd],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
    m = re.search(r"Collected : (\d+)", out.stderr)
    if not m:
        raise RuntimeError("callgrind printed no total:\n" + out.stderr[-2000:])
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=5, help="timed generations per process")
    ap.add_argument("--processes", type=int, default=3, help="processes per runtime and batch")
    ap.add_argument("--batches", default="1,4")
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--instructions", action="store_true")
    args = ap.parse_args()
    py_ours = subprocess.run(
        [str(ROOT / "ci/python-env.sh")], check=True, capture_output=True, text=True
    ).stdout.strip()
    py_tvm = tvm_python()
    ours_env = {"POLYFFI_TEST_LIB_DIR": str(pathlib.Path(args.build) / "lib")}
    script = HERE / "lm_bench_py.py"
    load_before = os.getloadavg()
    if args.instructions:
        steps = (8, 40)
        print(f"{'batch':>5} {'runtime':>8} {'instructions per decode step':>30}")
        for batch in (int(b) for b in args.batches.split(",")):
            for name, py, env in (("polyffi", py_ours, ours_env), ("tvm", py_tvm, {})):
                n = [instructions([py, script, name, LM_DIR, batch, t, 0], env) for t in steps]
                per_step = (n[1] - n[0]) / (steps[1] - steps[0])
                print(f"{batch:>5} {name:>8} {per_step:>30,.0f}")
        return 0
    print(f"{'batch':>5} {'runtime':>8} {'TTFT ms':>9} {'tokens/s':>10}")
    rows = []
    for batch in (int(b) for b in args.batches.split(",")):
        samples = {"polyffi": [], "tvm": []}
        for _ in range(args.processes):
            for name, py, env in (("polyffi", py_ours, ours_env), ("tvm", py_tvm, {})):
                samples[name].append(
                    run([py, script, name, LM_DIR, batch, args.tokens, args.rounds], env)
                )
        for name, s in samples.items():
            ttft = statistics.median(x["ttft_ms"] for x in s)
            tps = statistics.median(x["tokens_per_s"] for x in s)
            rows.append({"batch": batch, "runtime": name, "ttft_ms": ttft, "tokens_per_s": tps})
            print(f"{batch:>5} {name:>8} {ttft:>9.2f} {tps:>10.0f}")
    print(f"load average (1, 5, 15 min): before {load_before}, after {os.getloadavg()}")
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
