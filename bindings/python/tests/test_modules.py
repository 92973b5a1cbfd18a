"""Modules: plugin libraries, DSO models, lifetimes."""

from __future__ import annotations

import gc

import pytest

import polyffi


def test_plugin_registers_globals(lib_dir):
    m = polyffi.load_module(lib_dir / "libpolyffi_test_plugin.so")
    assert isinstance(m, polyffi.Module)
    assert polyffi.get_global_func("plugin.AddOne")(41) == 42
    assert "plugin.SubOne" in polyffi.list_global_func_names()


def test_plugin_module_functions(lib_dir):
    polyffi.load_module(str(lib_dir / "libpolyffi_test_plugin.so"))
    mm = polyffi.get_global_func("plugin.make_module")(3)
    assert isinstance(mm, polyffi.Module)
    assert mm["add_y"](4) == 7
    assert mm.get_function("mul_y")(4) == 12
    assert "add_y" in mm and "nope" not in mm
    with pytest.raises(AttributeError, match="nope"):
        mm.get_function("nope")
    assert mm.type_key


def test_function_outlives_module_handle(lib_dir):
    polyffi.load_module(str(lib_dir / "libpolyffi_test_plugin.so"))
    mm = polyffi.get_global_func("plugin.make_module")(5)
    f = mm["add_y"]
    del mm
    gc.collect()
    assert f(1) == 6


def test_dso_entry_func_and_call(lib_dir):
    m = polyffi.load_module(str(lib_dir / "libpolyffi_test_dso.so"))
    assert m["scale_i64"](6, 7) == 42
    assert m.entry_func(2, 5) == 10
    assert m(3, 3) == 9


def test_import_module_query_imports(lib_dir):
    dso = polyffi.load_module(str(lib_dir / "libpolyffi_test_dso.so"))
    polyffi.load_module(str(lib_dir / "libpolyffi_test_plugin.so"))
    mm = polyffi.get_global_func("plugin.make_module")(1)
    mm.import_module(dso)
    assert "scale_i64" not in mm
    assert mm.get_function("scale_i64", query_imports=True)(2, 3) == 6


def test_missing_library_is_value_error(lib_dir):
    with pytest.raises(ValueError):
        polyffi.load_module(str(lib_dir / "libpolyffi_no_such.so"))


def test_released_module_is_an_error(lib_dir):
    m = polyffi.load_module(str(lib_dir / "libpolyffi_test_dso.so"))
    m.release()
    with pytest.raises(ValueError, match="released"):
        m.get_function("scale_i64")
