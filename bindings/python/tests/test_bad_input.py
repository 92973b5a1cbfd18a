"""Bad input gives clear Python errors, never a crash."""

from __future__ import annotations

import pytest

import polyffi


class Unsupported:
    pass


def test_unsupported_argument_type_names_the_type(testing):
    with pytest.raises(TypeError, match="Unsupported"):
        testing.nop(1, Unsupported())


def test_unsupported_return_from_callback(testing):
    with pytest.raises(TypeError, match="Unsupported"):
        testing.apply(lambda: Unsupported())


def test_int_beyond_int64_is_overflow_error(testing):
    with pytest.raises(OverflowError):
        testing.echo(2**63)
    with pytest.raises(OverflowError):
        testing.echo(-(2**63) - 1)
    assert testing.echo(-(2**63)) == -(2**63)


def test_calling_a_released_function(testing):
    f = polyffi.convert(lambda: 1)
    f.release()
    with pytest.raises(ValueError, match="released"):
        f()
    with pytest.raises(ValueError, match="released"):
        testing.apply(f)


def test_context_manager_releases():
    with polyffi.convert(lambda: 1) as f:
        assert f() == 1
    with pytest.raises(ValueError):
        f()


def test_typed_function_type_error(testing):
    with pytest.raises(TypeError, match="expected int but got float"):
        testing.add(1.5, 2)


def test_bad_dtype_and_device():
    with pytest.raises(ValueError, match="dtype"):
        polyffi.DataType("float3x")
    with pytest.raises(ValueError, match="device"):
        polyffi.Device("warp-drive")


def test_released_object_argument(testing):
    arr = polyffi.Array([1])
    arr.release()
    with pytest.raises(ValueError, match="released"):
        testing.echo(arr)
