//! Modules (plugin, DSO, imports) and bad input: missing files, non-libraries, missing
//! functions, wrong argument types, NUL bytes, int64 extremes. Errors, never panics.
mod common;

use polyffi::{Function, Module, Value};

#[test]
fn plugin_library_registers_globals_and_makes_modules() {
    let plugin = Module::load(common::lib_path("polyffi_test_plugin")).unwrap();
    assert_eq!(
        Function::global("plugin.AddOne")
            .unwrap()
            .invoke::<i64>((41,))
            .unwrap(),
        42
    );
    assert_eq!(
        Function::global("plugin.SubOne")
            .unwrap()
            .invoke::<i64>((43,))
            .unwrap(),
        42
    );
    let m: Module = Function::global("plugin.make_module")
        .unwrap()
        .invoke((10,))
        .unwrap();
    assert_eq!(
        m.function("add_y").unwrap().invoke::<i64>((5,)).unwrap(),
        15
    );
    assert_eq!(
        m.function("mul_y").unwrap().invoke::<i64>((5,)).unwrap(),
        50
    );
    drop(plugin);
}

#[test]
fn dso_module_functions_entry_and_imports() {
    let dso = Module::load(common::lib_path("polyffi_test_dso")).unwrap();
    assert_eq!(
        dso.function("scale_i64")
            .unwrap()
            .invoke::<i64>((6, 7))
            .unwrap(),
        42
    );
    assert_eq!(dso.entry_func().unwrap().invoke::<i64>((2, 3)).unwrap(), 6);
    assert!(dso
        .get_function("no_such_function", false)
        .unwrap()
        .is_none());
    let err = dso.function("no_such_function").unwrap_err();
    assert_eq!(err.kind(), "AttributeError");
    assert!(err.message().contains("no_such_function"));
    let err = dso.function("always_fails").unwrap().call(&[]).unwrap_err();
    assert!(!err.kind().is_empty());
    assert_eq!(dso.type_key().unwrap(), "library");
    let host: Module = Function::global("plugin.make_module")
        .or_else(|_| {
            Module::load(common::lib_path("polyffi_test_plugin"))?;
            Function::global("plugin.make_module")
        })
        .unwrap()
        .invoke((3,))
        .unwrap();
    host.import(&dso).unwrap();
    assert!(host.get_function("scale_i64", false).unwrap().is_none());
    assert!(host.get_function("scale_i64", true).unwrap().is_some());
    assert_eq!(host.imports().unwrap().len(), 1);
}

#[test]
fn missing_file_is_a_value_error() {
    let err = Module::load("/nonexistent/libnothing.so").unwrap_err();
    assert_eq!(err.kind(), "ValueError");
    assert!(
        err.message().contains("/nonexistent/libnothing.so"),
        "{err}"
    );
}

#[test]
fn non_library_file_is_an_error_with_the_loaders_text() {
    let path = common::lib_path("polyffi_corrupt");
    assert!(path.exists(), "{} missing", path.display());
    let err = Module::load(&path).unwrap_err();
    assert!(!err.message().is_empty());
    assert!(
        format!("{err:?}").contains("libpolyffi_corrupt.so"),
        "{err:?}"
    );
}

#[test]
fn nul_bytes_in_names_are_value_errors() {
    common::testing();
    assert_eq!(
        Function::global("testing.\0echo").unwrap_err().kind(),
        "ValueError"
    );
    assert!(Function::get_global("testing.\0echo").is_none());
    assert_eq!(Module::load("a\0b.so").unwrap_err().kind(), "ValueError");
    assert_eq!(
        polyffi::remove_global("x\0y").unwrap_err().kind(),
        "ValueError"
    );
}

#[test]
fn strings_with_nul_round_trip() {
    let echo = common::global("testing.echo");
    for s in ["a\0b", "\0", "\0\0\0", "x\0é🎉"] {
        assert_eq!(echo.invoke::<String>((s,)).unwrap(), s);
    }
    let rev: Vec<u8> = common::global("testing.bytes_reverse")
        .invoke((&b"a\0b\xff"[..],))
        .unwrap();
    assert_eq!(rev, b"\xffb\0a");
}

#[test]
fn int64_extremes_and_overflow() {
    let echo = common::global("testing.echo");
    for x in [i64::MIN, i64::MAX, 0, -1] {
        assert_eq!(echo.invoke::<i64>((x,)).unwrap(), x);
    }
    let err = common::global("testing.add")
        .invoke::<i64>((i64::MAX, 1))
        .unwrap_err();
    assert!(!err.kind().is_empty(), "overflow is reported: {err}");
    assert_eq!(
        Value::try_from(1u64 << 63).unwrap_err().kind(),
        "OverflowError"
    );
    assert_eq!(
        i32::try_from(Value::Int(i64::MAX)).unwrap_err().kind(),
        "OverflowError"
    );
}

#[test]
fn wrong_argument_types_and_arity() {
    let add = common::global("testing.add");
    let err = add.invoke::<i64>((1.5, 2)).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert!(
        err.message()
            .contains("argument 0 expected int but got float"),
        "{err}"
    );
    let err = add.invoke::<i64>(("x", 2)).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    let err = add.invoke::<i64>((1,)).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert!(
        err.message().contains("expected 2 arguments but got 1"),
        "{err}"
    );
}
