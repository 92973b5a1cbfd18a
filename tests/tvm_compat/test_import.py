"""import tvm binds the library it was pointed at, in runtime-only mode."""

import os

import pytest


def test_loaded_the_library_under_test(tvm):
    from tvm._ffi import base

    expected = os.environ.get("TVM_COMPAT_LIB")
    if not expected:
        pytest.fail("TVM_COMPAT_LIB is not set (run through ci/test-tvm-compat.sh)")
    assert os.path.realpath(base._LIB._name) == os.path.realpath(expected)
    assert base._RUNTIME_ONLY
    assert os.path.basename(base._LIB._name) == "libtvm_runtime.so"


def test_version_and_ctypes_core(tvm):
    from tvm._ffi import base
    from tvm.runtime import packed_func

    assert tvm.__version__ == "0.18.0"
    assert base._FFI_MODE == "ctypes"
    assert packed_func.PackedFuncBase.__module__ == "tvm._ffi._ctypes.packed_func"


def test_runtime_api_bound_at_import(tvm):
    # _init_api binds the globals present at import time; the deploy flows need these.
    from tvm.runtime import _ffi_api

    needed = [
        "TVMArrayAllocWithScope", "TVMArrayCreateView", "ShapeTuple", "GetShapeTupleSize",
        "GetShapeTupleElem", "String", "GetFFIString", "Array", "ArraySize", "ArrayGetItem",
        "Map", "MapSize", "MapGetItem", "MapCount", "MapItems", "ObjectPtrHash",
        "ModuleLoadFromFile", "ModuleGetTypeKey", "ModuleImportsSize", "ModuleGetImport",
        "ModuleImplementsFunction", "ModuleGetPropertyMask", "RPCTimeEvaluator", "SystemLib",
        "LoadParams", "SaveParams", "LoadParamsFromFile", "SaveParamsToFile", "GetDeviceAttr",
        "RuntimeEnabled", "NumThreads",
    ]
    missing = [n for n in needed if not hasattr(_ffi_api, n)]
    assert missing == []


def test_global_listing(tvm):
    names = tvm._ffi.registry.list_global_func_names()
    assert "tvm.graph_executor.create" in names
    assert "runtime.ModuleLoadFromFile" in names
    assert len(names) == len(set(names))
