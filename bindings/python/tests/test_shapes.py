"""Shapes as values: a runtime.ShapeTuple is a polyffi.Shape (a tuple of ints) both ways."""

from __future__ import annotations

import numpy as np
import pytest

import polyffi
from polyffi import Shape

INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)


def g(name):
    return polyffi.get_global_func(name)


def test_shape_is_a_tuple_of_ints():
    s = Shape([2, 3, 4])
    assert isinstance(s, tuple)
    assert s == (2, 3, 4) and (2, 3, 4) == s
    assert len(s) == 3 and s[0] == 2 and s[-1] == 4 and list(s) == [2, 3, 4]
    assert s[1:] == (3, 4) and type(s[1:]) is tuple  # slices are plain tuples
    assert repr(s) == "Shape([2, 3, 4])"
    assert Shape() == () and len(Shape()) == 0
    assert Shape(np.array([5, 6], dtype="int64")) == (5, 6)  # anything with __index__
    assert hash(s) == hash((2, 3, 4))


@pytest.mark.parametrize("dims, error", [
    (["a"], TypeError),
    ([1.5], TypeError),
    ([True], TypeError),
    ([INT64_MAX + 1], OverflowError),
    ([INT64_MIN - 1], OverflowError),
    (3, TypeError),  # not iterable
])
def test_shape_refuses_what_is_not_an_int64(dims, error):
    with pytest.raises(error):
        Shape(dims)


def test_shape_result_is_a_shape(testing):
    out = testing.echo(Shape([2, 3]))
    assert type(out) is Shape and out == (2, 3)
    assert all(type(d) is int for d in out)


@pytest.mark.parametrize("dims", [
    [], [7], [INT64_MAX, INT64_MIN, 0, -1], list(range(1, 10)),  # 9 > the core's inline size
])
def test_shape_round_trip(testing, dims):
    assert testing.echo(Shape(dims)) == tuple(dims)


def test_shape_from_the_core():
    assert g("runtime.ShapeTuple")(1, -2, 65536) == Shape([1, -2, 65536])
    assert g("runtime.ShapeTuple")() == ()
    x = polyffi.nd.array(np.zeros((2, 3, 0), dtype="float32"))
    assert g("vm.builtin.shape_of")(x) == (2, 3, 0)


def test_shape_argument_is_read_by_the_core():
    s = Shape([5, 6, 7])
    assert g("runtime.GetShapeTupleSize")(s) == 3
    assert g("runtime.GetShapeTupleElem")(s, 2) == 7
    x = polyffi.nd.array(np.arange(6, dtype="int32"))
    y = g("vm.builtin.reshape")(x, Shape([3, 2]))
    assert y.shape == (3, 2)
    np.testing.assert_array_equal(y.numpy(), np.arange(6, dtype="int32").reshape(3, 2))


def test_plain_tuple_stays_an_array(testing):
    # Only a Shape is a ShapeTuple: a plain tuple keeps its meaning, a runtime Array.
    out = testing.echo((1, 2))
    assert isinstance(out, polyffi.Array) and list(out) == [1, 2]
    with pytest.raises(TypeError):
        g("runtime.GetShapeTupleSize")((1, 2))


def test_shapes_inside_containers(testing):
    arr = polyffi.Array([Shape([1, 2]), Shape([])])
    assert list(arr) == [(1, 2), ()] and all(type(s) is Shape for s in arr)
    m = testing.echo({"s": Shape([4])})
    assert type(m["s"]) is Shape and m["s"] == (4,)


def test_shape_through_a_python_callback():
    seen = []

    def identity(x):
        seen.append(x)
        return x

    out = g("testing.apply")(identity, Shape([3, 4]))
    assert type(seen[0]) is Shape and seen[0] == (3, 4)
    assert type(out) is Shape and out == (3, 4)
    # A callback returning a Shape hands the runtime a ShapeTuple.
    assert g("testing.apply")(lambda: Shape([9, 8, 7])) == (9, 8, 7)


def test_smuggled_non_int_item_is_a_type_error(testing):
    bad = tuple.__new__(Shape, ["x"])  # bypasses Shape's own check
    with pytest.raises(TypeError, match="Shape dimension 0"):
        testing.echo(bad)


def test_shape_bytes_global():
    raw = g("runtime.ShapeTupleBytes")(Shape([1, 258, -1]))
    assert raw == np.array([1, 258, -1], dtype="<i8").tobytes()
    with pytest.raises(TypeError):
        g("runtime.ShapeTupleBytes")(polyffi.Array([1]))

