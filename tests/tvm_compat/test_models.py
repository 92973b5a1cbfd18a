"""Every TVM 0.18 fixture form through TVM's own deploy API; outputs bit-equal to the outputs
TVM's runtime recorded when the fixtures were made (tests/tvm_models/tvm018)."""

import numpy as np
import pytest
from conftest import FIXTURES, graph_models, load_io, read_tensor

GRAPH_MODELS = graph_models()


def inputs_of(name):
    io = load_io(name)
    return {e["name"]: read_tensor(FIXTURES / name, e) for e in io["inputs"]}


def check_outputs(gm, name):
    io = load_io(name)
    assert gm.get_num_outputs() == len(io["outputs"])
    for i, entry in enumerate(io["outputs"]):
        out = gm.get_output(i)
        assert out.dtype == entry["dtype"]
        assert list(out.shape) == entry["shape"]
        np.testing.assert_array_equal(out.numpy(), read_tensor(FIXTURES / name, entry))


@pytest.fixture(params=GRAPH_MODELS)
def model(request):
    return request.param


def test_factory_library(tvm, model):
    from tvm.contrib import graph_executor

    lib = tvm.runtime.load_module(str(FIXTURES / model / "factory.so"))
    assert lib.type_key == "GraphExecutorFactory"
    assert [m.type_key for m in lib.imported_modules] == ["library"]
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    io = load_io(model)
    # The factory sets its baked-in parameters with set_input, not load_params, so TVM lists
    # them among the inputs too.
    shapes, dtypes = gm.get_input_info()
    assert sorted(shapes.keys()) == sorted([e["name"] for e in io["inputs"]] + io["params"])
    for e in io["inputs"]:
        assert isinstance(shapes[e["name"]], tvm.runtime.ShapeTuple)
        assert list(shapes[e["name"]]) == e["shape"]
        assert dtypes[e["name"]] == e["dtype"]
    gm.set_input(**inputs_of(model))
    gm.run()
    check_outputs(gm, model)


def test_three_artifacts(tvm, model):
    from tvm.contrib import graph_executor

    d = FIXTURES / model
    io = load_io(model)
    lib = tvm.runtime.load_module(str(d / "kernels.so"))
    gm = graph_executor.create((d / "graph.json").read_text(), lib, tvm.cpu(0))
    names_in = [e["name"] for e in io["inputs"]]
    assert gm.get_num_inputs() == len(names_in) + len(io["params"])
    assert sorted(gm.get_input_info()[0].keys()) == sorted(names_in + io["params"])
    gm.load_params(bytearray((d / "params.bin").read_bytes()))
    assert sorted(gm.get_input_info()[0].keys()) == sorted(names_in)
    # run(**inputs) = set_input by name, then run.
    gm.run(**inputs_of(model))
    check_outputs(gm, model)
    # Inputs read back by name and by index.
    for e in io["inputs"]:
        expected = read_tensor(d, e)
        np.testing.assert_array_equal(gm.get_input(e["name"]).numpy(), expected)
        idx = gm.get_input_index(e["name"])
        np.testing.assert_array_equal(gm.get_input(idx).numpy(), expected)
    assert gm.get_input_index("no_such_input") == -1


def test_set_input_by_index_and_output_into(tvm):
    from tvm.contrib import graph_executor

    name = GRAPH_MODELS[0]
    d = FIXTURES / name
    io = load_io(name)
    gm = graph_executor.GraphModule(
        tvm.runtime.load_module(str(d / "factory.so"))["default"](tvm.cpu()))
    for e in io["inputs"]:
        gm.set_input(gm.get_input_index(e["name"]), tvm.nd.array(read_tensor(d, e)))
    gm.run()
    entry = io["outputs"][0]
    out = tvm.nd.empty(entry["shape"], entry["dtype"])
    gm.get_output(0, out)
    np.testing.assert_array_equal(out.numpy(), read_tensor(d, entry))


def test_unknown_input_name(tvm):
    from tvm.contrib import graph_executor

    d = FIXTURES / GRAPH_MODELS[0]
    gm = graph_executor.GraphModule(
        tvm.runtime.load_module(str(d / "factory.so"))["default"](tvm.cpu()))
    # get_input of an unknown name is None; the frontend turns that into its own error ...
    assert gm.module["get_input"]("no_such_input") is None
    with pytest.raises(RuntimeError, match="no_such_input"):
        gm.set_input("no_such_input", np.zeros(1, "float32"))
    # ... and set_input(**params) skips unknown names.
    gm.set_input(no_such_input=np.zeros(1, "float32"))


def test_share_params(tvm):
    from tvm.contrib import graph_executor

    name = GRAPH_MODELS[0]
    d = FIXTURES / name
    lib = tvm.runtime.load_module(str(d / "kernels.so"))
    graph = (d / "graph.json").read_text()
    params = bytearray((d / "params.bin").read_bytes())
    owner = graph_executor.create(graph, lib, tvm.cpu())
    owner.load_params(params)
    borrower = graph_executor.create(graph, lib, tvm.cpu())
    borrower.share_params(owner, params)
    borrower.run(**inputs_of(name))
    check_outputs(borrower, name)


def test_zero_copy_input(tvm):
    from tvm.contrib import graph_executor

    name = GRAPH_MODELS[0]
    d = FIXTURES / name
    gm = graph_executor.GraphModule(
        tvm.runtime.load_module(str(d / "factory.so"))["default"](tvm.cpu()))
    arrays = {k: tvm.nd.array(v) for k, v in inputs_of(name).items()}
    gm.set_input_zero_copy(**arrays)
    gm.run()
    check_outputs(gm, name)


def test_te_kernels(tvm, add_one_calls):
    d = FIXTURES / "te_kernels"
    for case in load_io("te_kernels")["cases"]:
        lib = tvm.runtime.load_module(str(d / case["library"]))
        assert lib.type_key == "library"
        assert lib.implements_function(case["function"])
        assert not lib.implements_function("no_such_function")
        args = []
        for a in case["args"]:
            if "file" in a:
                args.append(tvm.nd.array(read_tensor(d, a)))
            else:
                args.append(a["float"] if "float" in a else a["int"])
        o = case["output"]
        out = tvm.nd.empty(o["shape"], o["dtype"])
        lib[case["function"]](*args, out)
        np.testing.assert_array_equal(out.numpy(), read_tensor(d, o))
        # The library's entry function is the same kernel.
        out2 = tvm.nd.empty(o["shape"], o["dtype"])
        lib.entry_func(*args, out2)
        np.testing.assert_array_equal(out2.numpy(), read_tensor(d, o))
    # host_call.so called the Python function once per call (twice in all).
    assert len(add_one_calls) == 2


class KernelCallbackError(Exception):
    pass


def test_host_exception_through_compiled_code(tvm, host_function):
    # The kernel calls the Python function through the runtime; the exception it raises crosses
    # the compiled code and comes back as the very same object.
    lib = tvm.runtime.load_module(str(FIXTURES / "te_kernels" / "host_call.so"))
    a = tvm.nd.array(np.zeros(64, "float32"))
    out = tvm.nd.empty((64,), "float32")
    err = KernelCallbackError("from the host")
    host_function.error = err
    try:
        with pytest.raises(KernelCallbackError) as info:
            lib["host_call"](a, out)
        assert info.value is err
    finally:
        host_function.error = None
    lib["host_call"](a, out)  # and the library still works
    np.testing.assert_array_equal(out.numpy(), np.ones(64))


def test_kernel_errors_are_clean(tvm):
    lib = tvm.runtime.load_module(str(FIXTURES / "te_kernels" / "vadd.so"))
    a = tvm.nd.array(np.zeros(4, "float32"))
    b = tvm.nd.array(np.zeros(5, "float32"))
    with pytest.raises(tvm.TVMError):  # the kernel's own shape check
        lib["vadd"](a, b, tvm.nd.empty((4,), "float32"))
    with pytest.raises(AttributeError):
        lib["no_such_function"]


def test_module_properties(tvm):
    # TVM 0.18's masks as measured: a loaded library is runnable and binary-serializable (3),
    # the graph executor factory binary-serializable only (1).
    lib = tvm.runtime.load_module(str(FIXTURES / "te_kernels" / "vadd.so"))
    assert lib.get_property_mask() == 3
    assert lib.is_runnable and lib.is_binary_serializable and not lib.is_dso_exportable
    factory = tvm.runtime.load_module(str(FIXTURES / GRAPH_MODELS[0] / "factory.so"))
    assert factory.get_property_mask() == 1
    assert factory.imported_modules[0].get_property_mask() == 3
    # A loaded library cannot be saved again (TVM: "does not support SaveToFile").
    with pytest.raises(tvm.TVMError):
        lib.save("/nonexistent-dir/lib.so")


def test_system_lib_without_objects(tvm):
    # Nothing was linked in with --system-lib here: the system library is an empty library
    # module (the syslib fixtures are objects for static linking; tests/tvm_models runs them).
    syslib = tvm.runtime.system_lib()
    assert syslib.type_key == "library"
    assert syslib.get_property_mask() == 3
    assert not syslib.implements_function("vadd")
    with pytest.raises(AttributeError):
        syslib["vadd"]


def test_clear_imports(tvm, tmp_path):
    # A private copy: polyffi hands out one module per library file for the whole process
    # (docs/compatibility.md), and this test empties the module's imports.
    copy = tmp_path / "factory.so"
    copy.write_bytes((FIXTURES / GRAPH_MODELS[0] / "factory.so").read_bytes())
    factory = tvm.runtime.load_module(str(copy))
    assert len(factory.imported_modules) == 1
    factory.clear_imports()
    assert factory.imported_modules == []


def test_bool_graph(tvm):
    # A bool input and a bool output through the executor (TVM stores bool as uint1, a byte per
    # element); made by tools/tvm-fixtures/generate_tvm018_compat.py with TVM's outputs.
    import json
    import pathlib

    from tvm.contrib import graph_executor

    d = pathlib.Path(__file__).resolve().parent / "fixtures" / "bool_graph"
    io = json.loads((d / "io.json").read_text())
    gm = graph_executor.GraphModule(
        tvm.runtime.load_module(str(d / "factory.so"))["default"](tvm.cpu()))
    shapes, dtypes = gm.get_input_info()
    assert dtypes["m"] == "uint1" and dtypes["x"] == "float32"
    for entry in io["inputs"]:
        gm.set_input(entry["name"], np.array(entry["values"], dtype=entry["dtype"]))
    gm.run()
    assert gm.get_input("m").dtype == "bool"
    for i, entry in enumerate(io["outputs"]):
        out = gm.get_output(i)
        assert out.dtype == entry["dtype"]
        np.testing.assert_array_equal(out.numpy(), np.array(entry["values"], entry["dtype"]))
    # The same through an NDArray the frontend made from numpy bools.
    m = np.array(io["inputs"][1]["values"], bool)
    gm.set_input(m=tvm.nd.array(~m))
    gm.run()
    x = np.array(io["inputs"][0]["values"], "float32")
    np.testing.assert_array_equal(gm.get_output(0).numpy(), (x > 0) & ~m)
