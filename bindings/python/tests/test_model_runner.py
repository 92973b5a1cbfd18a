"""The core's model runner through the binding: one loaded model, eight threads at once.

``VirtualMachine.invoke`` / ``vm[name]`` and ``GraphModule.infer`` are stateless and run on the
runner's pool of executors (sharing the weights) with the GIL released: eight threads calling
them at once on one object must get exactly the outputs one thread gets.
"""

import json
import pathlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import polyffi

ROOT = pathlib.Path(__file__).resolve().parents[3]
TVM018 = ROOT / "tests" / "tvm_models" / "tvm018"
RELAX = ROOT / "tests" / "tvm_models" / "tvm027" / "relax"
THREADS = 8
ROUNDS = 25


def load_tensor(directory, desc):
    data = np.fromfile(directory / desc["file"], dtype=desc["dtype"])
    return data.reshape(desc["shape"])


def variants(inputs, n=6):
    """Inputs that differ from call to call: float inputs scaled by 1 + k/8."""
    return [[x * np.float32(1 + k / 8) if x.dtype.kind == "f" else x for x in inputs]
            for k in range(n)]


def concurrent_equals_serial(call, inputs):
    cases = variants(inputs)
    expected = [[o.numpy() for o in call(c)] for c in cases]
    assert not np.array_equal(expected[0][0], expected[1][0])  # the variants really differ

    def worker(t):
        bad = 0
        for r in range(ROUNDS):
            k = (t + r) % len(cases)
            got = call(cases[k])
            bad += any(not np.array_equal(g.numpy(), e) for g, e in zip(got, expected[k]))
        return bad

    with ThreadPoolExecutor(THREADS) as pool:
        assert sum(pool.map(worker, range(THREADS))) == 0


@pytest.mark.parametrize("name", ["digits", "two_outputs", "mlp_params"])
def test_vm_eight_threads_equal_one_thread(name):
    io = json.loads((RELAX / name / "io.json").read_text())
    run = io["runs"][0]
    inputs = [load_tensor(RELAX / name, d) for d in run["inputs"]]
    vm = polyffi.VirtualMachine(polyffi.load_module(RELAX / run["library"]))
    forward = vm["forward"]

    def call(args):
        out = forward(*args)
        return list(out) if isinstance(out, polyffi.Array) else [out]

    concurrent_equals_serial(call, inputs)
    assert 1 <= vm.runner["pool_size"]() <= THREADS


@pytest.mark.parametrize("name", ["digits_b1", "multi_io_b1"])
def test_graph_eight_threads_equal_one_thread(name):
    d = TVM018 / name
    io = json.loads((d / "io.json").read_text())
    inputs = [load_tensor(d, desc) for desc in io["inputs"]]
    gm = polyffi.GraphModule.from_factory(polyffi.load_module(d / "factory.so"), polyffi.cpu())
    assert gm.input_names == [desc["name"] for desc in io["inputs"]]
    concurrent_equals_serial(lambda args: gm.infer(*args), inputs)
    assert 1 <= gm.runner["pool_size"]() <= THREADS


def test_graph_infer_by_name_and_its_errors():
    d = TVM018 / "multi_io_b1"
    io = json.loads((d / "io.json").read_text())
    inputs = {desc["name"]: load_tensor(d, desc) for desc in io["inputs"]}
    gm = polyffi.GraphModule.from_factory(polyffi.load_module(d / "factory.so"))
    outs = gm.infer(**inputs)
    for got, desc in zip(outs, io["outputs"]):
        assert np.array_equal(got.numpy(), load_tensor(d, desc))
    # the stateful API of the same GraphModule still works, on its own executor
    gm.run(**inputs)
    assert np.array_equal(gm.get_output(0).numpy(), outs[0].numpy())
    with pytest.raises(TypeError, match="takes 3 inputs"):
        gm.infer(inputs["x"])
    with pytest.raises(TypeError, match="not both"):
        gm.infer(inputs["x"], z=inputs["z"])
    bare = polyffi.GraphModule(polyffi.load_module(d / "factory.so")["default"](polyffi.cpu()))
    with pytest.raises(TypeError, match="from_factory"):
        bare.infer(inputs["x"])
    with pytest.raises(TypeError, match="not a GraphExecutorFactory"):
        polyffi.GraphModule.from_factory(polyffi.load_module(RELAX / "digits.so"))


def test_graph_from_graph_takes_params_for_infer():
    d = TVM018 / "digits_b1"
    io = json.loads((d / "io.json").read_text())
    x = load_tensor(d, io["inputs"][0])
    want = load_tensor(d, io["outputs"][0])
    lib = polyffi.load_module(d / "kernels.so")
    gm = polyffi.GraphModule.from_graph((d / "graph.json").read_text(), lib)
    gm.load_params((d / "params.bin").read_bytes())
    assert np.array_equal(gm.infer(x)[0].numpy(), want)
    gm2 = polyffi.GraphModule.from_graph((d / "graph.json").read_text(), lib,
                                         params=(d / "params.bin").read_bytes())
    assert np.array_equal(gm2.infer(data=x)[0].numpy(), want)


def test_vm_misaligned_and_readonly_inputs_are_staged_by_the_core():
    io = json.loads((RELAX / "digits" / "io.json").read_text())
    run = io["runs"][0]
    x = load_tensor(RELAX / "digits", run["inputs"][0])
    want = load_tensor(RELAX / "digits", run["outputs"][0])
    vm = polyffi.VirtualMachine(polyffi.load_module(RELAX / "digits.so"))
    buf = np.zeros(x.size + 32, "float32")
    skew = (-buf.ctypes.data % 64) // 4 + 1  # one float past a 64-byte boundary
    mis = buf[skew:skew + x.size].reshape(x.shape)
    mis[...] = x
    assert mis.ctypes.data % 64 != 0
    assert np.array_equal(vm["forward"](mis).numpy(), want)
    ro = x.copy()
    ro.flags.writeable = False
    assert np.array_equal(vm.invoke("forward", ro).numpy(), want)


def test_vm_takes_a_transposed_input_in_both_apis():
    # A strided view (the batch stored column-major) is copied by the core: the runner's invoke
    # stages it and the stateful set_input gathers it, as TVM's frontends make it contiguous.
    io = json.loads((RELAX / "digits" / "io.json").read_text())
    run = next(r for r in io["runs"] if r["inputs"][0]["shape"][0] > 1)
    x = load_tensor(RELAX / "digits", run["inputs"][0])
    want = load_tensor(RELAX / "digits", run["outputs"][0])
    strided = np.ascontiguousarray(x.T).T
    assert not strided.flags.c_contiguous and np.array_equal(strided, x)
    vm = polyffi.VirtualMachine(polyffi.load_module(RELAX / run["library"]))
    assert np.array_equal(vm["forward"](strided).numpy(), want)
    vm.set_input("forward", strided)
    vm.invoke_stateful("forward")
    assert np.array_equal(vm.get_outputs("forward").numpy(), want)
