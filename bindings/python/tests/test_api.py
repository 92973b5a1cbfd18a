"""Registry, decorators, init_api, containers and value conversion specific to Python."""

from __future__ import annotations

import functools
import sys
import types

import pytest

import polyffi


def test_version_matches_runtime():
    major, minor, patch = polyffi.runtime_version()
    assert polyffi.__version__ == f"{major}.{minor}.{patch}"


def test_get_global_func_missing_raises_value_error():
    with pytest.raises(ValueError, match="Cannot find global function no.such.fn"):
        polyffi.get_global_func("no.such.fn")
    assert polyffi.get_global_func("no.such.fn", allow_missing=True) is None


def test_register_func_plain_call():
    f = polyffi.register_func("pytest.api.plain", lambda a, b: a * b)
    try:
        assert isinstance(f, polyffi.PackedFunc)
        assert polyffi.get_global_func("pytest.api.plain")(6, 7) == 42
    finally:
        polyffi.remove_global_func("pytest.api.plain")


def test_register_func_decorator_with_name():
    @polyffi.register_func("pytest.api.deco")
    def deco(x):
        return x + "!"

    try:
        assert isinstance(deco, polyffi.PackedFunc)
        assert deco("hi") == "hi!"
        assert polyffi.get_global_func("testing.apply")(
            polyffi.get_global_func("pytest.api.deco"), "x") == "x!"
    finally:
        polyffi.remove_global_func("pytest.api.deco")


def test_register_func_bare_decorator_uses_function_name():
    @polyffi.register_func
    def pytest_api_bare(x):
        return -x

    try:
        assert polyffi.get_global_func("pytest_api_bare")(5) == -5
        assert "pytest_api_bare" in polyffi.list_global_func_names()
    finally:
        polyffi.remove_global_func("pytest_api_bare")


def test_register_func_override():
    polyffi.register_func("pytest.api.ovr", lambda: 1)
    try:
        with pytest.raises(ValueError, match="already registered"):
            polyffi.register_func("pytest.api.ovr", lambda: 2)
        assert polyffi.get_global_func("pytest.api.ovr")() == 1
        polyffi.register_func("pytest.api.ovr", lambda: 3, override=True)
        assert polyffi.get_global_func("pytest.api.ovr")() == 3
    finally:
        polyffi.remove_global_func("pytest.api.ovr")
    assert polyffi.get_global_func("pytest.api.ovr", allow_missing=True) is None


def test_remove_absent_global_is_fine():
    polyffi.remove_global_func("pytest.api.never")


def test_convert_returns_packed_func_and_keeps_packed_func():
    f = polyffi.convert(lambda x: x * 2)
    assert f(21) == 42
    assert polyffi.convert(f) is f
    with pytest.raises(TypeError, match="callable"):
        polyffi.convert(42)


def test_packed_func_rejects_keywords():
    with pytest.raises(TypeError, match="positional"):
        polyffi.get_global_func("testing.add")(a=1, b=2)


def _register_ns():
    names = ["pytest.ns.one", "pytest.ns.two", "pytest.ns.sub.deep", "pytest.nsx"]
    for i, n in enumerate(names):
        polyffi.register_func(n, functools.partial(int, i), override=True)
    return names


def test_init_api_returns_module_with_direct_children_only():
    names = _register_ns()
    try:
        ns = polyffi.init_api("pytest.ns")
        assert isinstance(ns, types.ModuleType)
        assert ns.one() == 0 and ns.two() == 1
        assert not hasattr(ns, "sub")  # pytest.ns.sub.deep is not attached
        assert not hasattr(ns, "deep")
        assert not hasattr(ns, "x")  # "pytest.nsx" is not under "pytest.ns."
    finally:
        for n in names:
            polyffi.remove_global_func(n)


def test__init_api_populates_a_real_module():
    names = _register_ns()
    mod = types.ModuleType("pytest_fake_ns_module")
    sys.modules[mod.__name__] = mod
    try:
        polyffi._init_api("pytest.ns", mod.__name__)
        import pytest_fake_ns_module  # noqa: F401 - the module the functions went into

        assert pytest_fake_ns_module.one() == 0
        assert pytest_fake_ns_module.two() == 1
        assert not hasattr(pytest_fake_ns_module, "deep")
    finally:
        del sys.modules[mod.__name__]
        for n in names:
            polyffi.remove_global_func(n)


def test_init_api_on_fixtures(testing):
    assert testing.add(2, 3) == 5
    assert testing.concat("a", "b") == "ab"


def test_list_and_tuple_become_arrays(testing):
    arr = testing.echo([1, "a", 2.5, None])
    assert isinstance(arr, polyffi.Array)
    assert list(arr) == [1, "a", 2.5, None]
    assert testing.array_sum_ints((1, 2, 3)) == 6
    assert arr[-1] is None and arr[1:3] == ["a", 2.5]
    with pytest.raises(IndexError):
        arr[4]


def test_dict_becomes_map(testing):
    m = testing.echo({"a": 1, "b": [1, 2], 3: "three"})
    assert isinstance(m, polyffi.Map)
    assert len(m) == 3 and m["a"] == 1 and m[3] == "three"
    assert list(m["b"]) == [1, 2]
    assert "a" in m and "zz" not in m
    assert m.get("zz") is None
    with pytest.raises(KeyError):
        m["zz"]
    assert dict(polyffi.Map({"k": 1}).items()) == {"k": 1}


def test_containers_are_sequence_and_mapping():
    from collections.abc import Mapping, Sequence

    assert isinstance(polyffi.Array([1]), Sequence)
    assert isinstance(polyffi.Map({}), Mapping)


def test_values_round_trip(testing):
    assert testing.echo(True) is True
    assert testing.echo(2**63 - 1) == 2**63 - 1
    assert testing.echo(b"\x00a\x00") == b"\x00a\x00"
    assert testing.echo(bytearray(b"xy")) == b"xy"
    assert testing.echo("a\0b") == "a\0b"
    assert testing.echo(polyffi.cpu(3)) == polyffi.Device("cpu", 3)
    assert testing.echo(polyffi.DataType("float32")) == "float32"
    assert polyffi.DataType("int8x4").lanes == 4
    assert str(polyffi.DataType("bool")) == "bool"
    assert testing.return_type(polyffi.DataType("float16")) == "dtype"


def test_numpy_scalars_convert(testing):
    np = pytest.importorskip("numpy")
    assert testing.add(np.int64(2), np.int32(3)) == 5
    assert testing.echo(np.float32(1.5)) == 1.5


def test_objects_compare_by_identity(testing):
    f = polyffi.get_global_func("testing.add")
    g = testing.echo(f)
    assert g is not f and g == f and g.same_as(f) and hash(g) == hash(f)
