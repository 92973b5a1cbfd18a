"""Error mapping: builtin kinds, registered kinds, exception identity and chaining."""

from __future__ import annotations

import traceback

import pytest

import polyffi


def test_builtin_kind_is_both_builtin_and_ffi_error(testing):
    with pytest.raises(ValueError) as info:
        testing.raise_error("ValueError", "bad value")
    e = info.value
    assert isinstance(e, polyffi.FFIError) and isinstance(e, ValueError)
    assert e.kind == "ValueError" and str(e) == "bad value"


@pytest.mark.parametrize("kind", ["TypeError", "IndexError", "KeyError", "AttributeError",
                                  "NotImplementedError", "AssertionError", "RuntimeError"])
def test_each_builtin_kind(testing, kind):
    import builtins

    with pytest.raises(getattr(builtins, kind)) as info:
        testing.raise_error(kind, "msg")
    assert isinstance(info.value, polyffi.FFIError)
    assert info.value.kind == kind and str(info.value) == "msg"


def test_unknown_kind_is_ffi_error_with_kind(testing):
    with pytest.raises(polyffi.FFIError) as info:
        testing.raise_error("my.pkg.Weird", "odd")
    assert type(info.value) is polyffi.FFIError
    assert info.value.kind == "my.pkg.Weird" and str(info.value) == "odd"


def test_tvm_error_and_internal_error_classes(testing):
    with pytest.raises(polyffi.TVMError):
        testing.raise_error("TVMError", "x")
    with pytest.raises(polyffi.InternalError):
        testing.raise_error("InternalError", "x")


def test_register_error_maps_kind_to_class(testing):
    @polyffi.register_error("PyTestCustomError")
    class PyTestCustomError(polyffi.FFIError):
        pass

    with pytest.raises(PyTestCustomError) as info:
        testing.raise_error("PyTestCustomError", "custom")
    assert info.value.kind == "PyTestCustomError"


def test_registered_error_raised_in_callback_keeps_kind(testing):
    class SensorError(polyffi.FFIError):
        kind = "SensorError"

    polyffi.register_error("SensorError", SensorError)

    def cb():
        raise SensorError("sensor down")

    assert testing.call_and_catch(cb) == "SensorError: sensor down"


def test_callback_exception_is_reraised_as_same_object(testing):
    raised = []

    def cb():
        e = ValueError("original")
        raised.append(e)
        raise e

    with pytest.raises(ValueError) as info:
        testing.apply(cb)
    assert info.value is raised[0]
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "cb" in frames  # the callback's frame is in the traceback


def test_builtin_exception_kind_text_seen_by_native_code(testing):
    def cb():
        raise KeyError("k")

    assert testing.call_and_catch(cb) == "KeyError: 'k'"


def test_custom_exception_class_name_is_kind(testing):
    class Boom(Exception):
        pass

    def cb():
        raise Boom("b")

    assert testing.call_and_catch(cb) == "Boom: b"
    with pytest.raises(Boom):
        testing.apply(cb)


def test_exception_chaining_is_kept(testing):
    def cb():
        try:
            {}["missing"]
        except KeyError as inner:
            raise RuntimeError("outer") from inner

    with pytest.raises(RuntimeError) as info:
        testing.apply(cb)
    assert isinstance(info.value.__cause__, KeyError)


def test_exception_through_nested_callbacks(testing):
    def inner():
        raise IndexError("deep")

    def outer():
        return testing.apply(inner)

    with pytest.raises(IndexError) as info:
        testing.apply(outer)
    names = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "inner" in names and "outer" in names


def test_error_does_not_leak_into_next_call(testing):
    with pytest.raises(ValueError):
        testing.raise_error("ValueError", "first")
    assert testing.add(1, 2) == 3
    with pytest.raises(KeyError):
        testing.raise_error("KeyError", "second")


def test_callback_result_errors_name_the_return_value(testing):
    apply = polyffi.get_global_func("testing.apply")
    with pytest.raises(TypeError) as info:
        apply(lambda: object())
    assert str(info.value) == "polyffi: callback returned an unsupported Python type 'object'"
    with pytest.raises(OverflowError, match="^polyffi: callback return value: int 1844674"):
        apply(lambda: 2**64)


def test_callback_cannot_return_a_borrowed_view(testing):
    # A numpy argument travels as a view whose DLTensor lives in the call's frame: handing it back
    # as the result would outlive it. The same ValueError as in Node.
    import numpy as np

    apply = polyffi.get_global_func("testing.apply")
    with pytest.raises(ValueError, match="^polyffi: a borrowed NDArray view cannot be returned"):
        apply(lambda a: a, np.arange(4, dtype="float32"))
