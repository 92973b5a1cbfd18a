"""Kernels compiled by Apache TVM 0.27 (tvm-ffi ABI, tests/tvm_models/tvm027/kernels): the loader.

They load after a plain ``import polyffi`` although the extension brings libpolyffi in
RTLD_LOCAL (the kernels import ``TVMFFIErrorSetRaisedFromCStrParts`` with no DT_NEEDED), reproduce
TVM's own outputs bit for bit with numpy arrays passed zero-copy (misaligned views are staged,
docs/abi-decisions.md), raise TVM's exceptions with TVM's messages, and call a Python global.
"""

import json
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import polyffi

ROOT = pathlib.Path(__file__).resolve().parents[3]
KERNELS = ROOT / "tests" / "tvm_models" / "tvm027" / "kernels"
IO = json.loads((KERNELS / "io.json").read_text())

# callpacked.so resolves its host global once per process and keeps it (as in TVM), so the tests
# that register one run in a fresh interpreter: test_tvm027_models.py registers its own.
IN_PROCESS = [c for c in IO["cases"] if c["name"] != "callpacked"]


def load(directory, desc):
    return np.fromfile(directory / desc["file"], dtype=desc["dtype"]).reshape(desc["shape"])


def misaligned(array, offset):
    """A copy of array whose data sits `offset` bytes past a 64-byte boundary."""
    raw = np.zeros(array.nbytes + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    view = raw[start : start + array.nbytes].view(array.dtype).reshape(array.shape)
    view[...] = array
    assert view.ctypes.data % 64 == offset
    return view


def run_case(case, offset=None):
    lib = polyffi.load_module(KERNELS / case["library"])
    args = []
    for arg in case["args"]:
        if "file" in arg:
            a = load(KERNELS, arg)
            args.append(a if offset is None else misaligned(a, offset))
        else:
            args.append(arg.get("float", arg.get("int")))
    out = np.zeros(case["output"]["shape"], case["output"]["dtype"])
    if offset is not None:
        out = misaligned(out, offset)
    assert lib[case["function"]](*args, out) is None
    return out


def test_a_kernel_loads_although_libpolyffi_came_in_rtld_local():
    # A fresh interpreter: before the load, libpolyffi's symbols are not global (the extension
    # was opened RTLD_LOCAL); loading a tvm-ffi library promotes them, and the kernel runs.
    code = f"""
import ctypes, numpy as np, polyffi
sym = "TVMFFIErrorSetRaisedFromCStrParts"
glob = ctypes.CDLL(None)
assert not hasattr(glob, sym), "already global before loading a model"
lib = polyffi.load_module({str(KERNELS / "two_funcs.so")!r})
x = np.arange(8, dtype="float32"); y = np.zeros(8, "float32")
lib["scale"](x, 2.0, y)
assert (y == x * 2).all()
assert hasattr(ctypes.CDLL(None), sym)
try:
    lib["scale"](x, 2.0)
except TypeError as e:
    assert "Expected 3 arguments" in str(e), e
else:
    raise AssertionError("no error")
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


@pytest.mark.parametrize("case", IN_PROCESS, ids=lambda c: c["name"])
def test_every_kernel_matches_tvm(case):
    out = run_case(case)
    assert np.array_equal(out, load(KERNELS, case["output"])), case["name"]


@pytest.mark.parametrize("offset", [4, 8, 16, 32])
@pytest.mark.parametrize("case", IN_PROCESS, ids=lambda c: c["name"])
def test_misaligned_numpy_views_are_staged(case, offset):
    out = run_case(case, offset)
    assert out.ctypes.data % 64 == offset  # the caller's own buffer holds the result
    assert np.array_equal(out, load(KERNELS, case["output"])), case["name"]


def test_tvm_errors_keep_their_class_and_message():
    errors = IO["errors"]
    lib = polyffi.load_module(KERNELS / "two_funcs.so")
    scale, shift = lib["scale"], lib["shift"]
    x, y = np.zeros(8, "float32"), np.zeros(8, "float32")
    calls = {
        "scale_arity": lambda: scale(x, 1.0),
        "scale_dtype": lambda: scale(np.zeros(8, "float64"), 1.0, y),
        "scale_ndim": lambda: scale(np.zeros((2, 4), "float32"), 1.0, y),
        "scale_shape": lambda: scale(x, 1.0, np.zeros(9, "float32")),
        "shift_float_for_int": lambda: shift(np.zeros(8, "int32"), 1.5, np.zeros(8, "int32")),
        "scale_null_tensor": lambda: scale(None, 1.0, y),
    }
    assert sorted(calls) == sorted(errors)
    for key, call in calls.items():
        expected = errors[key]
        cls = {"TypeError": TypeError, "ValueError": ValueError}[expected["kind"]]
        with pytest.raises(cls, match=re.escape(expected["message"])) as info:
            call()
        assert type(info.value) is cls or issubclass(type(info.value), cls), key
    # A strided, misaligned view is refused before the kernel sees it.
    strided = misaligned(np.zeros(16, "float32"), 4)[::2]
    with pytest.raises(ValueError, match="strided tensor"):
        scale(strided, 1.0, y)
    # The function still works afterwards.
    scale(np.ones(8, "float32"), 3.0, y)
    assert (y == 3).all()


def test_a_python_host_global_called_by_the_kernel():
    # TVM's callpacked(A, C) calls the host global polyffi_test.add_bias(A, C, 3.5): first missing
    # (a clear error, and nothing cached), then a Python function, with misaligned views staged,
    # then that function raising (the kernel passes the error through, class and message).
    code = f"""
import json, numpy as np, polyffi
io = json.loads(open({str(KERNELS / "io.json")!r}).read())
case = [c for c in io["cases"] if c["name"] == "callpacked"][0]
lib = polyffi.load_module({str(KERNELS / "callpacked.so")!r})
a = np.fromfile({str(KERNELS)!r} + "/" + case["args"][0]["file"], dtype="float32")
expected = np.fromfile({str(KERNELS)!r} + "/" + case["output"]["file"], dtype="float32")
c = np.zeros(64, "float32")
try:
    lib["callpacked"](a, c)
except AttributeError as e:
    assert io["host_global"] in str(e), e
else:
    raise AssertionError("no error without the host global")
state = {{"calls": [], "fail": False}}
@polyffi.register_func(io["host_global"])
def add_bias(src, dst, bias):
    state["calls"].append(bias)
    if state["fail"]:
        raise ValueError("add_bias was told to fail")
    dst.copyfrom(src.numpy() + np.float32(bias))
lib["callpacked"](a, c)
assert np.array_equal(c, expected) and state["calls"] == [io["host_bias"]]
raw = np.zeros(64 * 4 + 128, np.uint8)
start = (-raw.ctypes.data) % 64 + 4
view = raw[start:start + 256].view("float32")
lib["callpacked"](a, view)
assert view.ctypes.data % 64 == 4 and np.array_equal(view, expected)
state["fail"] = True
try:
    lib["callpacked"](a, c)
except ValueError as e:
    assert "add_bias was told to fail" in str(e), e
else:
    raise AssertionError("the host error was lost")
print("ok", len(state["calls"]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok 3"


def test_kernel_names_follow_the_ffi_prefix():
    single = polyffi.load_module(KERNELS / "elementwise.so")
    assert single.type_key == "library"
    a, b, out = np.ones(10, "float32"), np.full(10, 2, "float32"), np.zeros(10, "float32")
    single["main"](a, b, out)
    assert (out == 3).all()
    two = polyffi.load_module(KERNELS / "two_funcs.so")
    with pytest.raises(AttributeError):
        two["main"]
    with pytest.raises(AttributeError):
        two["__truncsfhf2"]
