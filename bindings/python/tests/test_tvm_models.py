"""Models compiled by Apache TVM 0.18 (tests/tvm_models/tvm018) through the Python binding.

Every fixture in every form reproduces the outputs TVM's own runtime computed, bit for bit:
``GraphModule(lib["default"](cpu))`` over the exported factory library, the three-artifact
form, and plain TE kernels (scalars, a parallel loop, a call back into a Python global).
"""

import hashlib
import json
import pathlib

import numpy as np
import pytest

import polyffi

ROOT = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "tvm_models" / "tvm018"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())
GRAPHS = [name for name in MANIFEST["fixtures"] if name != "te_kernels"]


def load_tensor(directory, desc):
    return np.fromfile(directory / desc["file"], dtype=desc["dtype"]).reshape(desc["shape"])


def check_outputs(gm, directory, io):
    for name_desc in io["inputs"]:
        gm.set_input(name_desc["name"], load_tensor(directory, name_desc))
    gm.run()
    assert gm.get_num_outputs() == len(io["outputs"])
    for i, desc in enumerate(io["outputs"]):
        got = gm.get_output(i).numpy()
        expected = load_tensor(directory, desc)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert np.array_equal(got, expected), f"output {i} differs from TVM's"


def test_manifest_checksums_match_the_files():
    for rel, digest in MANIFEST["sha256"].items():
        assert hashlib.sha256((FIXTURES / rel).read_bytes()).hexdigest() == digest, rel
    assert MANIFEST["tvm_version"] == "0.18.0"


@pytest.mark.parametrize("name", GRAPHS)
def test_factory_library_through_graph_module(name):
    d = FIXTURES / name
    lib = polyffi.load_module(d / "factory.so")
    assert lib.type_key == "GraphExecutorFactory"
    assert [m.type_key for m in lib.imported_modules] == ["library"]
    gm = polyffi.GraphModule(lib["default"](polyffi.cpu()))
    check_outputs(gm, d, json.loads((d / "io.json").read_text()))


@pytest.mark.parametrize("name", GRAPHS)
def test_three_artifacts_through_graph_module(name):
    d = FIXTURES / name
    gm = polyffi.GraphModule.from_graph(
        (d / "graph.json").read_text(), polyffi.load_module(d / "kernels.so")
    )
    gm.load_params((d / "params.bin").read_bytes())
    check_outputs(gm, d, json.loads((d / "io.json").read_text()))


def test_factory_accessors():
    d = FIXTURES / "conv_b1"
    lib = polyffi.load_module(d / "factory.so")
    assert lib["get_graph_json"]() == (d / "graph.json").read_text()
    params = lib["get_graph_params"]()
    io = json.loads((d / "io.json").read_text())
    assert sorted(params.keys()) == io["params"]
    assert all(isinstance(v, polyffi.NDArray) for v in params.values())
    bare = lib["remove_params"]()
    assert bare.type_key == "GraphExecutorFactory"
    assert len(bare["get_graph_params"]()) == 0


def test_graph_module_rejects_the_factory_itself():
    lib = polyffi.load_module(FIXTURES / "digits_b1" / "factory.so")
    with pytest.raises(TypeError, match="GraphExecutorFactory"):
        polyffi.GraphModule(lib)


def test_digits_compiled_by_tvm_agrees_with_the_demo():
    d = FIXTURES / "digits_b359"
    expected = json.loads((ROOT / "examples/digits/model/expected.json").read_text())
    lib = polyffi.load_module(d / "factory.so")
    gm = polyffi.GraphModule(lib["default"](polyffi.cpu()))
    x = np.fromfile(ROOT / "examples/digits/model/test_x.bin", dtype="<f4").reshape(-1, 64)
    gm.run(data=x)
    pred = gm.get_output(0).numpy().argmax(axis=1)
    assert pred.tolist() == expected["predictions"]


def test_te_kernels_match_tvm():
    d = FIXTURES / "te_kernels"

    @polyffi.register_func("polyffi_test.add_one", override=True)
    def add_one(src, dst):
        dst.copyfrom(src.numpy() + 1)

    try:
        io = json.loads((d / "io.json").read_text())
        for case in io["cases"]:
            lib = polyffi.load_module(d / case["library"])
            args = []
            for arg in case["args"]:
                if "file" in arg:
                    args.append(load_tensor(d, arg))
                else:
                    args.append(arg.get("float", arg.get("int")))
            out = np.zeros(case["output"]["shape"], case["output"]["dtype"])
            lib[case["function"]](*args, out)  # out is written in place, zero-copy
            assert np.array_equal(out, load_tensor(d, case["output"])), case["name"]
    finally:
        polyffi.remove_global_func("polyffi_test.add_one")


def test_a_blob_read_on_its_own():
    """runtime.ModuleLoadFromBlob: the reader a TVM export's __tvm_dev_mblob goes through."""
    load = polyffi.get_global_func("runtime.ModuleLoadFromBlob")
    seeds = ROOT / "tests" / "fuzz" / "corpus" / "module_blob"
    factory = load((seeds / "tvm018_conv_b1.bin").read_bytes())
    assert factory.type_key == "GraphExecutorFactory"
    assert [m.type_key for m in factory.imported_modules] == ["library"]
    io = json.loads((FIXTURES / "conv_b1" / "io.json").read_text())
    assert sorted(factory["get_graph_params"]().keys()) == io["params"]
    with pytest.raises(ValueError, match="cycle"):
        load((seeds / "bad_cycle.bin").read_bytes())
    with pytest.raises(ValueError, match="no loader for it is registered"):
        load((seeds / "bad_unknown_key.bin").read_bytes())
    with pytest.raises(TypeError):
        load("not bytes")


def test_set_input_takes_a_read_only_array():
    # numpy cannot export read-only memory (an Arrow or mmapped buffer) through DLPack;
    # set_input copies the input anyway, so such an array must work like any other.
    d = FIXTURES / "digits_b1"
    io = json.loads((d / "io.json").read_text())
    gm = polyffi.GraphModule(polyffi.load_module(d / "factory.so")["default"](polyffi.cpu()))
    for desc in io["inputs"]:
        x = load_tensor(d, desc)
        x.flags.writeable = False
        gm.set_input(desc["name"], x)
        gm.set_input(**{desc["name"]: x})
    gm.run()
    expected = load_tensor(d, io["outputs"][0])
    assert np.array_equal(gm.get_output(0).numpy(), expected)


def test_set_input_copies_a_transposed_image():
    # The most common input there is: an HWC image transposed to the model's CHW, a strided view.
    # TVM's GraphModule copies it (ascontiguousarray); the core gathers it the same way.
    d = FIXTURES / "conv_b1"
    io = json.loads((d / "io.json").read_text())
    x = load_tensor(d, io["inputs"][0])  # [1, 3, 16, 16]
    hwc = np.ascontiguousarray(x[0].transpose(1, 2, 0))
    chw = hwc.transpose(2, 0, 1)[None]
    assert not chw.flags.c_contiguous and np.array_equal(chw, x)
    expected = load_tensor(d, io["outputs"][0])
    gm = polyffi.GraphModule.from_factory(polyffi.load_module(d / "factory.so"))
    gm.set_input("data", chw)
    gm.run()
    assert np.array_equal(gm.get_output(0).numpy(), expected)
    gm.run(data=x[:, ::-1][:, ::-1])  # negative strides too
    assert np.array_equal(gm.get_output(0).numpy(), expected)
    assert np.array_equal(gm.infer(chw)[0].numpy(), expected)
    assert np.array_equal(gm.infer(data=chw)[0].numpy(), expected)
    # a strided destination is still refused clearly (get_output writes in place)
    out = np.zeros((1, 20), expected.dtype)[:, ::2]
    with pytest.raises(ValueError, match="not contiguous"):
        gm.get_output(0, out)


def test_set_input_bad_key_is_the_same_error_in_every_binding():
    d = FIXTURES / "digits_b1"
    x = load_tensor(d, json.loads((d / "io.json").read_text())["inputs"][0])
    gm = polyffi.GraphModule.from_factory(polyffi.load_module(d / "factory.so"))
    with pytest.raises(KeyError) as info:
        gm.set_input("dta", x)
    assert str(info.value) == "set_input: the graph has no input named 'dta'"
    n = gm.get_num_inputs()
    with pytest.raises(IndexError, match=rf"^set_input: input index 7 out of range \[0, {n}\)"):
        gm.set_input(7, x)
