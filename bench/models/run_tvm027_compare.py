#!/usr/bin/env python3
"""polyffi's relax VM against TVM 0.27's own runtime on the TVM 0.27 fixtures, from C and Python.

    python3 bench/models/run_tvm027_compare.py [--threads N] [--rounds R] [--min-ms MS]
                                               [--no-c] [--no-python] [--instructions]

Needs the Release build (build/bin/bench_vm_polyffi, build/lib/libpolyffi.so), the Python
binding's venv (ci/python-env.sh) and TVM 0.27 from PyPI (tools/tvm-fixtures/setup-tvm027.sh
installs it into build/tvm027 on first use). The TVM-side C driver (vm_bench_tvm027.c) is
compiled here against the wheel's own tvm-ffi headers and libtvm_ffi.so.

For every relax fixture (tests/tvm_models/tvm027/relax) at batch 1 and at its largest batch it
runs each runtime in its own process, alternating R rounds so drift hits both alike, with the
same TVM_NUM_THREADS, and prints median ns and the ratio polyffi / TVM (below 1: polyffi is
faster):
  C       forward: vm forward on prebuilt input tensors, result released;
          e2e: input bytes copied in + forward + outputs copied out
  Python  arrays: vm["forward"](*runtime_arrays); numpy: vm["forward"](*numpy).numpy()
Both drivers first check that the outputs equal TVM's reference bit for bit.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "tvm_models" / "tvm027"
HERE = pathlib.Path(__file__).resolve().parent


def tvm_environment():
    out = subprocess.run([str(ROOT / "tools/tvm-fixtures/setup-tvm027.sh")], check=True,
                         capture_output=True, text=True).stdout
    env = {}
    for line in out.splitlines():
        if line.startswith("export "):
            key, value = line[len("export "):].split("=", 1)
            env[key] = value.strip('"')
    return env


def build_tvm_driver(env, build):
    out = pathlib.Path(build) / "bench-tvm027" / "vm_bench_tvm027"
    out.parent.mkdir(parents=True, exist_ok=True)
    libdir = os.path.dirname(env["TVM027_FFI_LIB"])
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-o", str(out),
                    str(HERE / "vm_bench_tvm027.c"), "-I", env["TVM027_FFI_INCLUDE"],
                    f"-L{libdir}", "-ltvm_ffi", f"-Wl,-rpath,{libdir}", "-ldl"], check=True)
    return out


def runs(runtime=False):
    """(model, batch, run directory, io.txt) at batch 1 and the largest batch of each model; with
    runtime, the first run of each runtime-library fixture (tvm027/runtime) the C drivers can
    feed (tensor inputs, tensor or flat-tuple result: those with an r0_io.txt), batch 0."""
    manifest = json.loads((FIXTURES / "manifest.json").read_text())
    if runtime:
        for model in manifest.get("runtime", {}):
            d = FIXTURES / "runtime" / model
            if (d / "r0_io.txt").exists():
                yield model, 0, d, "r0_io.txt"
        return
    for model in manifest["relax"]:
        d = FIXTURES / "relax" / model
        batches = sorted(r["batch"] for r in json.loads((d / "io.json").read_text())["runs"])
        for b in sorted({batches[0], batches[-1]}):
            yield model, b, d, f"b{b}_io.txt"


def run_json(cmd, threads, extra_env=None):
    env = dict(os.environ, TVM_NUM_THREADS=str(threads), **(extra_env or {}))
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def instructions(cmd, loop, library, iters=200):
    """Instructions per iteration of the counted loop, in all and inside the model's kernels
    (functions of the fixture library, as callgrind attributes them), with one thread."""
    env = dict(os.environ, TVM_NUM_THREADS="1", BENCH_COUNT_ITERS=str(iters))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        proc = subprocess.run(["valgrind", "--tool=callgrind", f"--toggle-collect={loop}",
                               f"--callgrind-out-file={out}"] + [str(c) for c in cmd],
                              check=True, capture_output=True, text=True, env=env)
        line = next(x for x in proc.stderr.splitlines() if "Collected :" in x)
        total = int(line.split(":")[-1]) / iters
        annotate = subprocess.run(["callgrind_annotate", "--threshold=100", out], check=True,
                                  capture_output=True, text=True).stdout
    kernels = 0
    for row in annotate.splitlines():
        fields = row.split()
        if fields and row.rstrip().endswith(f"/{library}]") and fields[0][0].isdigit():
            kernels += int(fields[0].replace(",", ""))
    return total, kernels / iters


def table(title, columns, rows):
    print(f"\n{title}")
    header = f"{'model':<16}{'batch':>6}" + "".join(
        f"{c.removesuffix('_ns') + ' polyffi':>20}{c.removesuffix('_ns') + ' TVM':>16}{'ratio':>7}"
        for c in columns)
    print(header)
    print("-" * len(header))
    for model, batch, med in rows:
        line = f"{model:<16}{batch:>6}"
        for key in columns:
            p, t = med["polyffi"][key], med["tvm"][key]
            line += f"{p:>20.0f}{t:>16.0f}{p / t:>7.2f}"
        print(line, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-ms", type=float, default=40)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--no-c", action="store_true")
    ap.add_argument("--no-python", action="store_true")
    ap.add_argument("--instructions", action="store_true",
                    help="C drivers only: count instructions with callgrind instead of timing")
    ap.add_argument("--stat", choices=["median", "min"], default="median",
                    help="per process: the median timed batch, or the fastest (on a loaded "
                         "machine); across rounds always the median")
    ap.add_argument("--runtime-fixtures", action="store_true",
                    help="C drivers only: the runtime-library fixtures (tvm027/runtime) instead "
                         "of the relax models")
    ap.add_argument("--json-out")
    args = ap.parse_args()

    env = tvm_environment()
    ours_c = pathlib.Path(args.build) / "bin" / "bench_vm_polyffi"
    theirs_c = build_tvm_driver(env, args.build)
    manifest = json.loads((FIXTURES / "manifest.json").read_text())
    py_ours = subprocess.run([str(ROOT / "ci/python-env.sh")], check=True, capture_output=True,
                             text=True).stdout.strip() if not args.no_python else None
    print(f"TVM_NUM_THREADS={args.threads}, {args.rounds} alternating rounds, "
          f"{args.stat} of 9 timed batches per process, median over rounds "
          f"(polyffi vs TVM {manifest['tvm_version']} / tvm-ffi {manifest['tvm_ffi_version']}, "
          f"kernels compiled for {json.dumps(manifest['target'])})")
    results = {"c": [], "python": []}

    if not args.no_c:
        rows = []
        for model, batch, d, io in runs(args.runtime_fixtures):
            ours = [ours_c, d, io]
            theirs = [theirs_c, env["TVM027_RUNTIME"], d, io]
            samples = {"polyffi": [], "tvm": []}
            if args.instructions:
                library = next(x.split()[1] for x in (d / io).read_text().splitlines()
                               if x.startswith("library "))
                for name, cmd in (("polyffi", ours), ("tvm", theirs)):
                    fwd, kern = instructions(cmd, "counted_forward_loop", library)
                    e2e, _ = instructions(cmd, "counted_end_to_end_loop", library)
                    samples[name].append({"forward_ns": fwd, "end_to_end_ns": e2e,
                                          "kernels": kern, "runtime_ns": fwd - kern})
            else:
                for _ in range(args.rounds):
                    samples["polyffi"].append(run_json(ours + [args.min_ms], args.threads))
                    samples["tvm"].append(run_json(theirs + [args.min_ms], args.threads))
            sfx = "_min" if args.stat == "min" and not args.instructions else ""
            keys = ("forward_ns", "end_to_end_ns") + (
                ("runtime_ns", "kernels") if args.instructions else ())
            med = {k: {m: statistics.median(s[m + sfx] for s in v) for m in keys}
                   for k, v in samples.items()}
            rows.append((model, batch, med))
            results["c"].append({"model": model, "batch": batch, **med})
        unit = "instructions (callgrind, 1 thread)" if args.instructions else f"ns, {args.stat}"
        table(f"From C ({unit}): forward = VM call on prebuilt tensors; "
              "end_to_end = copy in + forward + copy out"
              + ("; runtime = forward minus the model's kernels" if args.instructions else ""),
              ["forward_ns", "end_to_end_ns"] + (["runtime_ns"] if args.instructions else []),
              rows)

    if not args.no_python and not args.instructions and not args.runtime_fixtures:
        rows = []
        script = HERE / "vm_bench_py.py"
        for model, batch, d, _ in runs():
            samples = {"polyffi": [], "tvm": []}
            for _ in range(args.rounds):
                samples["polyffi"].append(run_json(
                    [py_ours, script, "polyffi", d, batch, args.min_ms], args.threads,
                    {"POLYFFI_TEST_LIB_DIR": str(pathlib.Path(args.build) / "lib")}))
                samples["tvm"].append(run_json(
                    [env["TVM027_PYTHON"], script, "tvm", d, batch, args.min_ms], args.threads))
            sfx = "_min" if args.stat == "min" else ""
            med = {k: {m: statistics.median(s[m + sfx] for s in v)
                       for m in ("forward_ns", "numpy_ns")} for k, v in samples.items()}
            rows.append((model, batch, med))
            results["python"].append({"model": model, "batch": batch, **med})
        table(f"From Python (ns, {args.stat}): forward = vm['forward'](*runtime arrays); "
              "numpy = vm['forward'](*numpy).numpy()", ["forward_ns", "numpy_ns"], rows)
    if args.json_out:
        pathlib.Path(args.json_out).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
