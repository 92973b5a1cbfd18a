"""Generation with polyffi.lm (the core's language-model API) against TVM 0.27's own runtime
driving the same fixture, on the same machine in one run.

    python3 bench/lm/run_lm_generate.py [--tokens 64] [--rounds 5] [--processes 3] [--batches 1,4]
    python3 bench/lm/run_lm_generate.py --instructions [--batches 1,4]

TVM's side is bench/models/lm_bench_py.py under TVM 0.27 from PyPI
(tools/tvm-fixtures/setup-tvm027.sh): its runtime's paged KV cache driven as TVM's examples do,
one batched prefill and one batched decode call per step, argmax in numpy. polyffi's side is
bench/lm/lm_generate_py.py: polyffi.lm generations through the Python binding (ci/python-env.sh,
libpolyffi from --build), one next() per generation per step (the core batches the decode
steps of running generations; prefill is per generation). Both check their greedy tokens
against TVM's recorded ones first; TVM_NUM_THREADS=1 for both; processes alternate.

Prints, per batch size, time to first token and decode tokens/s for both runtimes and the ratio
polyffi.lm / TVM (tokens/s: above 1 is faster; TTFT: below 1 is faster), and the load average
before and after (the machine may be shared: quote the load with any wall-time number).

With --instructions, each runtime runs one untimed generation under callgrind for 8 and for 40
decode steps; the difference over the 32 extra steps is one decode step end to end (the Python
driver, the binding, the VM, the cache, the kernels, the token choice) for the whole batch,
which the load does not change.
"""

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LM_DIR = ROOT / "tests/tvm_models/tvm027/lm"
TVM_SCRIPT = ROOT / "bench/models/lm_bench_py.py"
OURS_SCRIPT = HERE / "lm_generate_py.py"


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


def commands(py_ours, py_tvm, build, batch, tokens, rounds):
    ours_env = {"POLYFFI_TEST_LIB_DIR": str(pathlib.Path(build) / "lib")}
    return (
        ("polyffi.lm", [py_ours, OURS_SCRIPT, LM_DIR, batch, tokens, rounds], ours_env),
        ("tvm", [py_tvm, TVM_SCRIPT, "tvm", LM_DIR, batch, tokens, rounds], {}),
    )


def run(cmd, extra_env):
    env = dict(os.environ, TVM_NUM_THREADS="1", **extra_env)
    out = subprocess.run(
        [str(c) for c in cmd], check=True, capture_output=True, text=True, env=env
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def instructions(cmd, extra_env):
    """Total instructions of cmd under callgrind (fixed hash seed: the imports count alike)."""
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
    batches = [int(b) for b in args.batches.split(",")]
    load_before = os.getloadavg()
    if args.instructions:
        steps = (8, 40)
        print(f"{'batch':>5} {'runtime':>10} {'instructions per decode step':>30} {'ratio':>6}")
        for batch in batches:
            per = {}
            for name, _, env in commands(py_ours, py_tvm, args.build, batch, 0, 0):
                n = []
                for t in steps:
                    cmd = commands(py_ours, py_tvm, args.build, batch, t, 0)
                    n.append(instructions(next(c for c in cmd if c[0] == name)[1], env))
                per[name] = (n[1] - n[0]) / (steps[1] - steps[0])
            for name, v in per.items():
                print(f"{batch:>5} {name:>10} {v:>30,.0f} {v / per['tvm']:>6.2f}")
        return 0
    print(f"{'batch':>5} {'runtime':>10} {'TTFT ms':>9} {'tokens/s':>10}")
    rows = []
    for batch in batches:
        samples = {"polyffi.lm": [], "tvm": []}
        for _ in range(args.processes):
            for name, cmd, env in commands(
                py_ours, py_tvm, args.build, batch, args.tokens, args.rounds
            ):
                samples[name].append(run(cmd, env))
        res = {}
        for name, s in samples.items():
            res[name] = (
                statistics.median(x["ttft_ms"] for x in s),
                statistics.median(x["tokens_per_s"] for x in s),
            )
            rows.append(
                {
                    "batch": batch,
                    "runtime": name,
                    "ttft_ms": res[name][0],
                    "tokens_per_s": res[name][1],
                }
            )
            print(f"{batch:>5} {name:>10} {res[name][0]:>9.2f} {res[name][1]:>10.0f}")
        print(
            f"{batch:>5} {'ratio':>10} {res['polyffi.lm'][0] / res['tvm'][0]:>9.2f} "
            f"{res['polyffi.lm'][1] / res['tvm'][1]:>10.2f}"
        )
    print(f"load average (1, 5, 15 min): before {load_before}, after {os.getloadavg()}")
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
