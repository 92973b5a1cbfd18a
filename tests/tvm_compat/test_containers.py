"""runtime containers as TVM's frontend builds and reads them: Array, Map, String, ShapeTuple."""

import pytest
from conftest import RUNTIME


def test_array(tvm):
    arr = tvm.runtime.convert([1, 2, 3])
    assert isinstance(arr, tvm.ir.container.Array)
    assert len(arr) == 3
    assert [int(x) for x in arr] == [1, 2, 3]
    assert int(arr[-1]) == 3
    with pytest.raises(IndexError):
        arr[3]
    # Scalars come back as Python scalars (TVM 0.18 boxes them in containers and unboxes them on
    # return; polyffi stores them by value).
    mixed = tvm.runtime.convert([1, 2.5, True])
    assert [type(x) for x in mixed] == [int, float, bool]
    assert list(mixed) == [1, 2.5, True]
    nested = tvm.runtime.convert([[1, 2], ["a", "b"]])
    assert len(nested) == 2 and len(nested[1]) == 2
    assert str(nested[1][0]) == "a"


def test_array_of_ndarrays_keeps_identity(tvm):
    import numpy as np

    a = tvm.nd.array(np.arange(3, dtype="float32"))
    arr = tvm.runtime.convert([a, a])
    assert arr[0].same_as(a) and arr[1].same_as(a)


def test_map(tvm):
    m = tvm.runtime.convert({"a": 1, "b": 2})
    assert isinstance(m, tvm.ir.container.Map)
    assert len(m) == 2
    assert int(m["a"]) == 1 and int(m["b"]) == 2
    assert "a" in m and "z" not in m
    assert sorted(str(k) for k in m.keys()) == ["a", "b"]
    assert sorted(int(v) for v in m.values()) == [1, 2]
    assert dict((str(k), int(v)) for k, v in m.items()) == {"a": 1, "b": 2}
    assert m.get("z", 5) == 5


def test_map_missing_key(tvm):
    m = tvm.runtime.convert({"a": 1})
    # DIFFERENCE (docs/compatibility.md, "Error kinds"): TVM's runtime fails a missing key with a
    # check (InternalError, a tvm.TVMError); polyffi's contract (conformance case
    # containers.core.map_missing_key) is KeyError. Both refuse the lookup with the key's text.
    expected = KeyError if RUNTIME == "polyffi" else tvm.error.InternalError
    with pytest.raises(expected):
        m["z"]


def test_string_object(tvm):
    s = tvm.runtime.convert("hello")
    # A runtime.String comes back as TVM's String class, a str subclass (GetFFIString).
    assert isinstance(s, str)
    assert isinstance(s, tvm.runtime.String)
    assert s == "hello"
    assert tvm.runtime.convert(["\u00e9t\u00e9"])[0] == "\u00e9t\u00e9"


def test_shape_tuple(tvm):
    st = tvm.runtime.ShapeTuple([2, 3, 4])
    assert isinstance(st, tvm.runtime.ShapeTuple)
    assert len(st) == 3
    assert list(st) == [2, 3, 4]
    assert st[-1] == 4 and st[0] == 2
    assert st == tvm.runtime.ShapeTuple((2, 3, 4))
    assert st == [2, 3, 4]
    assert st != tvm.runtime.ShapeTuple([2, 3])
    with pytest.raises(IndexError):
        st[3]
    assert len(tvm.runtime.ShapeTuple([])) == 0
    big = tvm.runtime.ShapeTuple([2**40, -1])
    assert list(big) == [2**40, -1]


def test_object_hash_is_identity(tvm):
    a = tvm.runtime.convert([1])
    b = tvm.runtime.convert([1])
    assert hash(a) == hash(a)
    assert hash(a) != hash(b)
    assert a.same_as(a) and not a.same_as(b)
    # An object handed back through the runtime is the same object.
    same = tvm.runtime.convert([a])[0]
    assert same.same_as(a) and hash(same) == hash(a)
    assert len({a, b, same}) == 2


def test_tuple_object(tvm):
    a = tvm.nd.array(__import__("numpy").zeros(2, "float32"))
    t = tvm.runtime.container.tuple_object([a, tvm.runtime.convert([1, 2])])
    assert isinstance(t, tvm.runtime.container.ADT)
    assert t.tag == 0
    assert len(t) == 2
    assert t[0].same_as(a)
    assert len(t[1]) == 2
    empty = tvm.runtime.container.tuple_object()
    assert len(empty) == 0


def test_adt(tvm):
    adt = tvm.runtime.container.ADT(3, [tvm.runtime.convert([7])])
    assert adt.tag == 3 and len(adt) == 1
    assert int(adt[0][0]) == 7
