"""TVM 0.18's own Python package, runtime-only, over whichever libtvm_runtime.so it was given.

ci/test-tvm-compat.sh runs this suite twice: against TVM 0.18's own libtvm_runtime.so (proof
that the tests are right) and against libpolyffi.so installed under that name. The environment
says which: TVM_COMPAT_RUNTIME ("tvm" or "polyffi") and TVM_COMPAT_LIB (the library that must
have been loaded). TVM itself is imported with TVM_USE_RUNTIME_LIB=1 and TVM_FFI=ctypes.
"""

import ctypes
import json
import os
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "tvm_models" / "tvm018"
RUNTIME = os.environ.get("TVM_COMPAT_RUNTIME", "")
TRACE = os.environ.get("TVM_COMPAT_TRACE")  # file to write the globals the suite called


class _TracingCDLL(ctypes.CDLL):
    """With TVM_COMPAT_TRACE: records which global functions TVM's frontend fetches
    (TVMFuncGetGlobal: handle -> name) and calls (TVMFuncCall), for docs/compatibility.md."""

    names, called = {}, set()

    def __init__(self, name, *args, **kwargs):
        super().__init__(name, *args, **kwargs)
        if os.path.basename(str(name)) != "libtvm_runtime.so":
            return
        get_global, call = self.TVMFuncGetGlobal, self.TVMFuncCall

        def traced_get_global(c_name, out):
            rc = get_global(c_name, out)
            handle = out._obj.value
            if rc == 0 and handle:
                _TracingCDLL.names[handle] = c_name.value.decode()
            return rc

        def traced_call(handle, *rest):
            name = _TracingCDLL.names.get(handle.value)
            if name is not None:
                _TracingCDLL.called.add(name)
            return call(handle, *rest)

        self.TVMFuncGetGlobal, self.TVMFuncCall = traced_get_global, traced_call


if TRACE:
    # Installed before TVM is imported (the tvm fixture imports it), so that the handles its
    # _init_api binds at import are known.
    ctypes.CDLL = _TracingCDLL


def pytest_unconfigure(config):
    if TRACE:
        pathlib.Path(TRACE).write_text("\n".join(sorted(_TracingCDLL.called)) + "\n")


def pytest_report_header(config):
    return f"tvm_compat: runtime={RUNTIME or '?'} lib={os.environ.get('TVM_COMPAT_LIB', '?')}"


@pytest.fixture(scope="session")
def tvm():
    import tvm as tvm_module  # noqa: PLC0415 (imported once the environment is checked)

    return tvm_module


def read_tensor(directory, entry):
    """A fixture tensor (raw little-endian file described by an io.json entry) as numpy."""
    data = np.fromfile(directory / entry["file"], dtype=entry["dtype"])
    return data.reshape(entry["shape"])


def graph_models():
    manifest = json.loads((FIXTURES / "manifest.json").read_text())
    names = []
    for name in manifest["fixtures"]:
        io = json.loads((FIXTURES / name / "io.json").read_text())
        if io["kind"] == "graph":
            names.append(name)
    return names


def load_io(name):
    return json.loads((FIXTURES / name / "io.json").read_text())


def error_kind(tvm_class, polyffi_class):
    """The exception class expected where TVM's runtime and polyffi deliberately raise different
    kinds for the same refusal (each such case is listed in docs/compatibility.md, "Error
    kinds"): TVM fails a check (InternalError, a tvm.TVMError), polyffi's contract names the
    kind (ValueError, KeyError, ...)."""
    return polyffi_class if RUNTIME == "polyffi" else tvm_class


class HostFunction:
    """polyffi_test.add_one, the host function host_call.so calls: records its calls and, when
    `error` is set, raises it instead of computing."""

    def __init__(self):
        self.calls = []
        self.error = None

    def __call__(self, src, dst):
        self.calls.append(1)
        if self.error is not None:
            raise self.error
        dst.copyfrom(src.numpy() + 1)


@pytest.fixture(scope="session")
def host_function(tvm):
    """Registered once for the session because a library caches the functions it looked up:
    TVM per loaded module, polyffi per library for the process (docs/compatibility.md)."""
    host = HostFunction()
    tvm.register_func("polyffi_test.add_one", lambda src, dst: host(src, dst), override=True)
    return host


@pytest.fixture
def add_one_calls(host_function):
    """The list of polyffi_test.add_one calls, emptied for this test."""
    host_function.calls.clear()
    host_function.error = None
    return host_function.calls
