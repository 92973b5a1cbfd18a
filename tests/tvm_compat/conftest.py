"""TVM 0.18's own Python package, runtime-only, over whichever libtvm_runtime.so it was given.

ci/test-tvm-compat.sh runs this suite twice: against TVM 0.18's own libtvm_runtime.so (proof
that the tests are right) and against libpolyffi.so installed under that name. The environment
says which: TVM_COMPAT_RUNTIME ("tvm" or "polyffi") and TVM_COMPAT_LIB (the library that must
have been loaded). TVM itself is imported with TVM_USE_RUNTIME_LIB=1 and TVM_FFI=ctypes.
"""

import json
import os
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "tvm_models" / "tvm018"
RUNTIME = os.environ.get("TVM_COMPAT_RUNTIME", "")


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
