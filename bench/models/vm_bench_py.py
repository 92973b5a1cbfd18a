"""One relax-VM latency measurement from Python, under polyffi or under TVM 0.27 (child process of
run_tvm027_compare.py; the two runtimes never share a process).

    python vm_bench_py.py polyffi|tvm RUN_DIR BATCH MIN_MS

Prints one JSON line: median ns per ``vm["forward"](*ndarrays)`` (inputs already runtime arrays,
result dropped) and per ``vm["forward"](*numpy).numpy()`` (numpy in, numpy out), each over 9
timed batches of about MIN_MS (and the fastest batch, `*_min`), after checking that the outputs
equal TVM's reference bit for bit.
"""

import json
import pathlib
import statistics
import sys
import time

import numpy as np


def load(run_dir, batch):
    io = json.loads((run_dir / "io.json").read_text())
    run = next(r for r in io["runs"] if r["batch"] == batch)

    def tensor(desc):
        return np.fromfile(run_dir / desc["file"], dtype=desc["dtype"]).reshape(desc["shape"])

    return (run_dir.parent / run["library"], [tensor(d) for d in run["inputs"]],
            [tensor(d) for d in run["outputs"]])


def measure(fn, min_ms):
    iters = 1
    while True:
        t0 = time.perf_counter_ns()
        for _ in range(iters):
            fn()
        dt = time.perf_counter_ns() - t0
        if dt > min_ms * 1e6 / 4:
            iters = int(iters * min_ms * 1e6 / dt) + 1
            break
        iters *= 4
    per = []
    for _ in range(9):
        t0 = time.perf_counter_ns()
        for _ in range(iters):
            fn()
        per.append((time.perf_counter_ns() - t0) / iters)
    return statistics.median(per), min(per)


def main():
    runtime, run_dir, batch, min_ms = sys.argv[1], pathlib.Path(sys.argv[2]), int(sys.argv[3]), \
        float(sys.argv[4])
    lib_path, inputs, expected = load(run_dir, batch)
    if runtime == "polyffi":
        import polyffi

        vm = polyffi.VirtualMachine(polyffi.load_module(lib_path), polyffi.cpu())
        arrays = [polyffi.nd.array(x) for x in inputs]
    else:
        import tvm
        from tvm import relax

        vm = relax.VirtualMachine(tvm.runtime.load_module(str(lib_path)), tvm.cpu())
        arrays = [tvm.runtime.tensor(x) for x in inputs]
    forward = vm["forward"]

    def to_numpy(result):
        if hasattr(result, "numpy"):
            return [result.numpy()]
        return [r.numpy() for r in result]

    for args in (arrays, inputs):
        got = to_numpy(forward(*args))
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert np.array_equal(g, e), f"{runtime}: output differs from TVM's reference"

    def arrays_in():
        forward(*arrays)

    def numpy_in_out():
        to_numpy(forward(*inputs))

    for _ in range(200):
        numpy_in_out()
    fwd, fwd_min = measure(arrays_in, min_ms)
    npy, npy_min = measure(numpy_in_out, min_ms)
    print(json.dumps({"forward_ns": fwd, "numpy_ns": npy, "forward_ns_min": fwd_min,
                      "numpy_ns_min": npy_min}))


if __name__ == "__main__":
    main()
