"""Registry and callbacks: tvm.register_func, global lookups, Python functions called through
the runtime, and exceptions crossing it as the very same object."""

import threading

import numpy as np
import pytest
from conftest import error_kind


def test_register_and_call(tvm):
    @tvm.register_func("tvm_compat.add")
    def add(a, b):
        return a + b

    try:
        f = tvm.get_global_func("tvm_compat.add")
        assert f(2, 3) == 5
        assert f(1.5, 2.0) == 3.5
        assert f("a", "b") == "ab"
        assert "tvm_compat.add" in tvm._ffi.registry.list_global_func_names()
        # A second registration of the name needs override.
        duplicate = error_kind(tvm.error.InternalError, ValueError)
        with pytest.raises(duplicate, match="already registered"):
            tvm.register_func("tvm_compat.add", lambda: 0)
        tvm.register_func("tvm_compat.add", lambda a, b: a * b, override=True)
        assert tvm.get_global_func("tvm_compat.add")(2, 3) == 6
    finally:
        tvm._ffi.registry.remove_global_func("tvm_compat.add")
    assert tvm.get_global_func("tvm_compat.add", allow_missing=True) is None
    with pytest.raises(ValueError):
        tvm.get_global_func("tvm_compat.add")


def test_values_cross_both_ways(tvm):
    seen = []

    @tvm.register_func("tvm_compat.echo")
    def echo(*args):
        seen.append(args)
        return args[-1]

    try:
        f = tvm.get_global_func("tvm_compat.echo")
        arr = tvm.nd.array(np.arange(3, dtype="int32"))
        assert f(1, arr).same_as(arr)
        assert f(None) is None
        assert f(b"\x00\x01") == bytearray(b"\x00\x01")
        assert f(tvm.cpu(0)) == tvm.cpu(0)
        assert f(True) == 1
        assert f(-(2**62)) == -(2**62)
        lst = tvm.runtime.convert([1, 2])
        assert f(lst).same_as(lst)
        st = tvm.runtime.ShapeTuple([5, 6])
        assert list(f(st)) == [5, 6]
        assert len(seen) == 8
    finally:
        tvm._ffi.registry.remove_global_func("tvm_compat.echo")


def test_python_function_as_argument(tvm):
    # A Python closure is converted to a PackedFunc; the global calls it back through the
    # runtime (TVMFuncCall -> the ctypes trampoline), several levels deep.
    @tvm.register_func("tvm_compat.apply")
    def apply(f, x):
        return f(x) + 1

    try:
        outer = tvm.get_global_func("tvm_compat.apply")
        assert outer(lambda x: x * 10, 4) == 41
        assert outer(lambda x: outer(lambda y: y * 2, x), 5) == 12
        packed = tvm.runtime.convert(lambda s: s.upper())
        assert isinstance(packed, tvm.runtime.PackedFunc)
        assert packed("abc") == "ABC"
    finally:
        tvm._ffi.registry.remove_global_func("tvm_compat.apply")


class CompatError(Exception):
    pass


def test_exception_identity(tvm):
    err = CompatError("raised in a callback")

    @tvm.register_func("tvm_compat.raise")
    def fail():
        raise err

    @tvm.register_func("tvm_compat.apply_twice")
    def apply_twice(f):
        return f()

    try:
        with pytest.raises(CompatError) as info:
            tvm.get_global_func("tvm_compat.raise")()
        assert info.value is err
        # Through two runtime frames (Python -> runtime -> Python -> runtime -> Python).
        with pytest.raises(CompatError) as info:
            tvm.get_global_func("tvm_compat.apply_twice")(tvm.get_global_func("tvm_compat.raise"))
        assert info.value is err
        # Again and again: the runtime holds no stale error between calls.
        for _ in range(3):
            with pytest.raises(CompatError) as info:
                tvm.get_global_func("tvm_compat.raise")()
            assert info.value is err
        assert tvm.get_global_func("tvm_compat.apply_twice")(lambda: 7) == 7
    finally:
        tvm._ffi.registry.remove_global_func("tvm_compat.raise")
        tvm._ffi.registry.remove_global_func("tvm_compat.apply_twice")


def test_exception_identity_on_threads(tvm):
    @tvm.register_func("tvm_compat.raise_arg")
    def raise_arg(i):
        raise CompatError(i)

    errors = {}

    def worker(i):
        try:
            tvm.get_global_func("tvm_compat.raise_arg")(i)
        except CompatError as e:
            errors[i] = e

    try:
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(errors) == list(range(8))
        assert all(e.args == (i,) for i, e in errors.items())
    finally:
        tvm._ffi.registry.remove_global_func("tvm_compat.raise_arg")


def test_runtime_errors_map_to_frontend_classes(tvm):
    # A runtime error's kind selects the Python class (tvm._ffi.base.ERROR_TYPE).
    with pytest.raises(IndexError):
        tvm.runtime.convert([1])[5]
    with pytest.raises(ValueError):  # checked by the frontend before the runtime
        tvm.runtime.load_module("/nonexistent/lib.so")


def test_corrupt_library_fails_cleanly(tvm, tmp_path):
    bad = tmp_path / "bad.so"
    bad.write_bytes(b"not an ELF file")
    with pytest.raises(tvm.TVMError):
        tvm.runtime.load_module(str(bad))
