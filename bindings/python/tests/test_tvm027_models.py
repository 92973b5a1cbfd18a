"""Models compiled by Apache TVM 0.27 (tests/tvm_models/tvm027) through the Python binding.

Kernel libraries (`__tvm_ffi_<name>` functions) are called as module functions; relax VM
executables run through ``polyffi.VirtualMachine``. Every output must equal, bit for bit, what
TVM 0.27's own runtime computed (tools/tvm-fixtures/generate_tvm027.py), and bad calls raise the
error kinds TVM raised.
"""

import builtins
import hashlib
import json
import pathlib
from collections.abc import Sequence
import subprocess
import sys

import numpy as np
import pytest

import polyffi

ROOT = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "tvm_models" / "tvm027"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())
KERNELS = FIXTURES / "kernels"
KERNEL_IO = json.loads((KERNELS / "io.json").read_text())
RELAX = FIXTURES / "relax"
MODELS = sorted(MANIFEST["relax"])
RUNS = [(name, run["batch"]) for name in MODELS
        for run in json.loads((RELAX / name / "io.json").read_text())["runs"]]


def load_tensor(directory, desc):
    return np.fromfile(directory / desc["file"], dtype=desc["dtype"]).reshape(desc["shape"])


def model_io(name):
    return json.loads((RELAX / name / "io.json").read_text())


def model_run(name, batch):
    return next(r for r in model_io(name)["runs"] if r["batch"] == batch)


def aligned(arr, offset=0):
    """A copy of arr whose data starts `offset` bytes past a 64-byte boundary."""
    raw = np.empty(arr.nbytes + 128, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    view = raw[start:start + arr.nbytes].view(arr.dtype).reshape(arr.shape)
    view[...] = arr
    assert view.ctypes.data % 64 == offset
    return view


@pytest.fixture(scope="module")
def add_bias():
    """The host global the callpacked kernel calls: dst = src + bias."""
    calls = []

    def add_bias(src, dst, bias):
        calls.append(bias)
        dst.copyfrom(src.numpy() + np.float32(bias))

    polyffi.register_func(MANIFEST["host_global"], add_bias, override=True)
    yield calls
    polyffi.remove_global_func(MANIFEST["host_global"])


def test_manifest_checksums_match_the_files():
    for rel, digest in MANIFEST["sha256"].items():
        assert hashlib.sha256((FIXTURES / rel).read_bytes()).hexdigest() == digest, rel
    assert MANIFEST["tvm_version"].startswith("0.27")


# ---------------------------------------------------------------- kernels


def kernel_args(case):
    args = []
    for desc in case["args"]:
        if "file" in desc:
            args.append(load_tensor(KERNELS, desc))
        else:
            args.append(desc.get("float", desc.get("int")))
    return args


@pytest.mark.parametrize("case", KERNEL_IO["cases"], ids=lambda c: c["name"])
def test_kernel_matches_tvm(case, add_bias):
    lib = polyffi.load_module(KERNELS / case["library"])
    expected = load_tensor(KERNELS, case["output"])
    # numpy in zero-copy (aligned) and as NDArrays; the output written in place.
    for convert in (lambda a: aligned(a) if isinstance(a, np.ndarray) else a,
                    lambda a: polyffi.nd.array(a) if isinstance(a, np.ndarray) else a):
        out = polyffi.nd.empty(expected.shape, str(expected.dtype))
        assert lib[case["function"]](*[convert(a) for a in kernel_args(case)], out) is None
        assert np.array_equal(out.numpy(), expected)
    if case["name"] == "callpacked":
        assert add_bias and all(b == KERNEL_IO["host_bias"] for b in add_bias)


def test_single_function_library_has_main_and_two_funcs_has_not():
    assert "main" in polyffi.load_module(KERNELS / "elementwise.so")
    two = polyffi.load_module(KERNELS / "two_funcs.so")
    assert "scale" in two and "shift" in two and "main" not in two


@pytest.mark.parametrize("key", sorted(KERNEL_IO["errors"]))
def test_kernel_errors_match_tvm(key):
    err = KERNEL_IO["errors"][key]
    lib = polyffi.load_module(KERNELS / err["library"])
    x4 = polyffi.nd.array(np.zeros(4, "float32"))
    calls = {
        "scale_arity": lambda: lib["scale"](x4, 2.0),
        "scale_dtype": lambda: lib["scale"](polyffi.nd.array(np.zeros(4)), 2.0, x4),
        "scale_ndim": lambda: lib["scale"](polyffi.nd.array(np.zeros((2, 2), "float32")), 2.0,
                                           x4),
        "scale_shape": lambda: lib["scale"](x4, 2.0, polyffi.nd.array(np.zeros(5, "float32"))),
        "shift_float_for_int": lambda: lib["shift"](
            polyffi.nd.array(np.zeros(4, "int32")), 1.5, polyffi.nd.array(np.zeros(4, "int32"))),
        "scale_null_tensor": lambda: lib["scale"](None, 2.0, x4),
    }
    kind = getattr(builtins, err["kind"])  # TypeError / ValueError
    with pytest.raises(polyffi.FFIError) as info:
        calls[key]()
    assert info.value.kind == err["kind"]
    assert isinstance(info.value, kind)
    assert err["message"] in str(info.value)


def test_kernel_with_a_misaligned_array_is_safe():
    """TVM's kernels assume 64-byte-aligned data: a misaligned view is copied or refused."""
    lib = polyffi.load_module(KERNELS / "elementwise.so")
    a = np.arange(1000, dtype="float32")
    b = np.full(1000, 2, dtype="float32")
    expected = a * b + 1
    for offset in (4, 8, 16):
        out = polyffi.nd.empty((1000,), "float32")
        try:
            lib["elementwise"](aligned(a, offset), aligned(b, offset), out)
        except polyffi.FFIError as e:
            assert "align" in str(e)
        else:
            assert np.array_equal(out.numpy(), expected)


def test_callpacked_host_error_propagates():
    """A Python exception in the host global comes out of the kernel call as itself. The kernel
    resolves the global once per loaded library (as TVM does), so this runs in a fresh process
    where the failing function is the first one registered under that name."""
    script = f"""
import numpy as np, polyffi
def failing(src, dst, bias):
    raise KeyError("no bias today")
polyffi.register_func({MANIFEST["host_global"]!r}, failing)
lib = polyffi.load_module({str(KERNELS / "callpacked.so")!r})
try:
    lib["callpacked"](np.zeros(64, "float32"), polyffi.nd.empty((64,), "float32"))
except KeyError as e:
    assert "no bias today" in str(e), e
    print("raised KeyError")
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "raised KeyError"


# ---------------------------------------------------------------- relax VM


def run_inputs(name, batch):
    run = model_run(name, batch)
    d = RELAX / name
    return run, [load_tensor(d, desc) for desc in run["inputs"]]


def check_result(name, run, result):
    d = RELAX / name
    expected = [load_tensor(d, desc) for desc in run["outputs"]]
    if model_io(name)["tuple_output"]:
        assert isinstance(result, Sequence) and not isinstance(result, polyffi.NDArray)
        assert len(result) == len(expected)
        results = list(result)
    else:
        assert isinstance(result, polyffi.NDArray)
        results = [result]
    for got, want in zip(results, expected):
        assert isinstance(got, polyffi.NDArray)
        assert got.shape == want.shape and got.dtype == str(want.dtype)
        assert np.array_equal(got.numpy(), want), f"{name} b{run['batch']} differs from TVM's"


@pytest.mark.parametrize("name,batch", RUNS)
def test_relax_model_matches_tvm(name, batch):
    run, inputs = run_inputs(name, batch)
    lib = polyffi.load_module(RELAX / run["library"])
    assert lib.type_key == "relax.VMExecutable"
    assert [m.type_key for m in lib.imported_modules] == ["library"]
    vm = polyffi.VirtualMachine(lib, polyffi.cpu())
    check_result(name, run, vm["forward"](*inputs))  # numpy in (copied unless aligned)
    check_result(name, run, vm["forward"](*[aligned(x) for x in inputs]))  # zero-copy
    check_result(name, run, vm.invoke("forward", *[polyffi.nd.array(x) for x in inputs]))
    check_result(name, run, vm["forward"](*[aligned(x, 4) for x in inputs]))  # misaligned
    readonly = [aligned(x) for x in inputs]
    for x in readonly:
        x.flags.writeable = False
    check_result(name, run, vm["forward"](*readonly))


@pytest.mark.parametrize("name", MODELS)
def test_relax_results_stay_valid_after_the_next_call(name):
    io = model_io(name)
    run, inputs = run_inputs(name, io["runs"][0]["batch"])
    vm = polyffi.VirtualMachine(polyffi.load_module(RELAX / run["library"]))
    first = vm["forward"](*inputs)
    for _ in range(3):
        vm["forward"](*[np.zeros_like(x) + 0.5 for x in inputs])
    check_result(name, run, first)


@pytest.mark.parametrize("name", MODELS)
def test_relax_stateful_api(name):
    io = model_io(name)
    run, inputs = run_inputs(name, io["runs"][-1]["batch"])
    vm = polyffi.VirtualMachine(polyffi.load_module(RELAX / run["library"]))
    assert vm.param_names("forward") == io["param_names"]
    vm.set_input("forward", *inputs)
    vm.invoke_stateful("forward")
    got = vm.get_outputs("forward")
    check_result(name, run, got)
    # a relax Tuple comes back as a Python tuple, as from TVM's get_outputs
    assert not isinstance(got, polyffi.Array)
    assert isinstance(got, tuple) == isinstance(vm.invoke("forward", *inputs), polyffi.Array)
    # by parameter name
    vm.set_input("forward", **dict(zip(io["param_names"], inputs)))
    vm.invoke_stateful("forward")
    check_result(name, run, vm.get_outputs("forward"))


def test_relax_naive_allocator_gives_the_same_outputs():
    run, inputs = run_inputs("conv", 16)
    vm = polyffi.VirtualMachine(polyffi.load_module(RELAX / run["library"]), polyffi.cpu(),
                                memory_cfg="naive")
    check_result("conv", run, vm["forward"](*inputs))


def test_executable_kernels_are_reachable_through_the_imports():
    lib = polyffi.load_module(RELAX / "two_outputs.so")
    kernels = lib.imported_modules[0]
    a = np.arange(8, dtype="float32").reshape(1, 8)
    b = np.ones((1, 8), "float32")
    out = polyffi.nd.empty((1, 8), "float32")
    kernels["add"](aligned(a), aligned(b), out)
    assert np.array_equal(out.numpy(), a + b)


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("error", ["wrong_shape", "wrong_dtype"])
def test_relax_bad_input_is_a_clear_error(name, error):
    io = model_io(name)
    run, inputs = run_inputs(name, io["runs"][0]["batch"])
    vm = polyffi.VirtualMachine(polyffi.load_module(RELAX / run["library"]))
    tvm_err = io["errors"][error]
    x = inputs[0]
    if error == "wrong_shape":
        inputs[0] = np.zeros((x.shape[0],) + tuple(s + 1 for s in x.shape[1:]), x.dtype)
    else:
        inputs[0] = x.astype("float64")
    with pytest.raises(polyffi.FFIError) as info:
        vm["forward"](*inputs)
    assert info.value.kind == tvm_err["kind"], str(info.value)
    param = io["param_names"][0]
    assert f"param={param}" in str(info.value)
    if error == "wrong_dtype":
        assert "float64" in str(info.value) and "float32" in str(info.value)
    # the VM is still usable afterwards
    run, good = run_inputs(name, io["runs"][0]["batch"])
    check_result(name, run, vm["forward"](*good))


@pytest.mark.parametrize("name", MODELS)
def test_relax_wrong_arity_is_a_clear_error(name):
    io = model_io(name)
    run, inputs = run_inputs(name, io["runs"][0]["batch"])
    vm = polyffi.VirtualMachine(polyffi.load_module(RELAX / run["library"]))
    with pytest.raises(polyffi.FFIError) as info:
        vm["forward"](*inputs[:-1])
    n = len(io["param_names"])
    assert f"expects {n} arguments" in str(info.value)
    with pytest.raises(polyffi.FFIError):
        vm["forward"](*inputs, inputs[-1])


def test_virtual_machine_rejects_what_is_not_an_executable():
    with pytest.raises(TypeError, match="not a relax VM executable"):
        polyffi.VirtualMachine(polyffi.load_module(KERNELS / "elementwise.so"))
    factory = ROOT / "tests" / "tvm_models" / "tvm018" / "digits_b1" / "factory.so"
    with pytest.raises(TypeError, match="GraphModule"):
        polyffi.VirtualMachine(polyffi.load_module(factory))
    with pytest.raises(TypeError, match="expected a Module"):
        polyffi.VirtualMachine("mlp_const.so")
    lib = polyffi.load_module(RELAX / "mlp_const.so")
    with pytest.raises(TypeError, match="polyffi.Device"):
        polyffi.VirtualMachine(lib, "cpu")
    with pytest.raises(ValueError, match="memory_cfg"):
        polyffi.VirtualMachine(lib, memory_cfg="arena")
    vm = polyffi.VirtualMachine(lib)
    with pytest.raises(AttributeError, match="no function 'backward'"):
        vm["backward"]
    assert "forward" in vm
    with pytest.raises(BufferError, match="dtype"):
        vm["forward"](np.array([[None] * 16], dtype=object))


def test_large_input_result_does_not_depend_on_its_memory():
    run, inputs = run_inputs("digits", 359)  # the input is 91,904 bytes
    vm = polyffi.VirtualMachine(polyffi.load_module(RELAX / run["library"]))
    x = aligned(inputs[0])
    result = vm["forward"](x)
    del x
    check_result("digits", run, result)
    check_result("digits", run, vm["forward"](aligned(inputs[0])))


def test_digits_relax_export_classifies_like_the_training_script():
    """examples/digits' trained MLP compiled by TVM 0.27 (symbolic batch), all held-out digits."""
    model = ROOT / "examples" / "digits" / "model"
    x = np.fromfile(model / "test_x.bin", dtype="<f4").reshape(-1, 64)
    expected = json.loads((model / "expected.json").read_text())["predictions"]
    vm = polyffi.VirtualMachine(polyffi.load_module(RELAX / "digits.so"), polyffi.cpu())
    pred = vm["forward"](x).numpy().argmax(axis=1)
    assert pred.tolist() == expected
    single = [int(vm["forward"](x[i:i + 1]).numpy().argmax()) for i in range(0, len(x), 37)]
    assert single == expected[::37]


def test_virtual_machine_errors_of_the_stateful_api_and_devices():
    lib = polyffi.load_module(RELAX / "mlp_const.so")
    with pytest.raises(ValueError, match="not available"):
        polyffi.VirtualMachine(lib, polyffi.device("cuda"))
    vm = polyffi.VirtualMachine(lib)
    with pytest.raises(ValueError, match="invoke_stateful"):
        vm.get_outputs("forward")
    with pytest.raises(TypeError, match="takes 1 arguments but 3"):
        vm.set_input("forward", 1, 2, 3)
    with pytest.raises(TypeError, match="no parameter y"):
        vm.set_input("forward", y=np.zeros((1, 16), "float32"))
    with pytest.raises(TypeError, match="given twice"):
        vm.set_input("forward", np.zeros((1, 16), "float32"), x=np.zeros((1, 16), "float32"))


def test_vm_shapes_and_runtime_shape_tuples_are_one_type():
    # The relax VM's shapes and runtime.ShapeTuple are the same object type (one type index):
    # each side's functions must accept the other's.
    g = polyffi.get_global_func
    vm_shape = g("vm.builtin.make_shape")(None, 2, 0, 3, 0, 4)
    assert type(vm_shape) is polyffi.Shape and vm_shape == (3, 4)  # a ShapeTuple is a Shape
    assert g("runtime.GetShapeTupleSize")(vm_shape) == 2
    assert [g("runtime.GetShapeTupleElem")(vm_shape, i) for i in range(2)] == [3, 4]
    x = polyffi.nd.array(np.arange(12, dtype="float32"))
    reshaped = g("vm.builtin.reshape")(x, g("runtime.ShapeTuple")(3, 4))
    assert reshaped.shape == (3, 4)
    np.testing.assert_array_equal(reshaped.numpy(), np.arange(12, dtype="float32").reshape(3, 4))
    wide = g("runtime.ShapeTuple")(*range(1, 10))  # more dimensions than fit inline
    assert [g("runtime.GetShapeTupleElem")(wide, i) for i in range(9)] == list(range(1, 10))
