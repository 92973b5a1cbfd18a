//! The Rust API beyond the shared suite: typed calls, import_api!, closures (Err kinds,
//! panics), the registry, Clone/Drop reference counting, containers and the handshake.
mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use polyffi::{Array, DataType, Device, Error, Function, Map, Value};

polyffi::import_api! {
    mod testing = "testing" {
        fn add3(a: i64, b: i64, c: i64) -> i64;
        fn concat(a: &str, b: &str) -> String;
        fn echo(x: f64) -> f64;
        fn nop();
        fn raise_error(kind: &str, msg: &str);
    }
}

#[test]
fn runtime_version_matches_the_headers() {
    common::testing();
    assert_eq!(polyffi::runtime_version().unwrap(), "0.1.0");
    assert_eq!(polyffi::library::BUILT_VERSION, (0, 1, 0));
}

#[test]
fn typed_invoke_and_generic_call_agree() {
    let add3 = common::global("testing.add3");
    assert_eq!(add3.invoke::<i64>((1, 2, 3)).unwrap(), 6);
    assert_eq!(
        add3.call(&[1.into(), 2.into(), 3.into()]).unwrap(),
        Value::Int(6)
    );
    let concat = common::global("testing.concat");
    let s: String = concat.invoke(("ab", String::from("cd"), "é")).unwrap();
    assert_eq!(s, "abcdé");
    // Long strings take the heap path of the argument packer.
    let long = "x".repeat(1000);
    assert_eq!(
        concat.invoke::<String>((long.as_str(), "!")).unwrap().len(),
        1001
    );
}

#[test]
fn import_api_wraps_globals() {
    common::testing();
    assert_eq!(testing::add3(4, 5, 6).unwrap(), 15);
    assert_eq!(testing::concat("a", "b").unwrap(), "ab");
    assert_eq!(testing::echo(-0.0).unwrap().to_bits(), (-0.0f64).to_bits());
    testing::nop().unwrap();
    let err = testing::raise_error("KeyError", "nope").unwrap_err();
    assert_eq!((err.kind(), err.message()), ("KeyError", "nope"));
}

#[test]
fn wrong_result_type_is_a_type_error() {
    let add3 = common::global("testing.add3");
    let err = add3.invoke::<String>((1, 2, 3)).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert!(err.message().contains("expected str but got int"), "{err}");
}

#[test]
fn value_conversions() {
    assert_eq!(Value::from(7i32), Value::Int(7));
    assert_eq!(Value::from("s"), Value::Str("s".into()));
    assert_eq!(Value::from(&b"\x00\x01"[..]), Value::Bytes(vec![0, 1]));
    assert_eq!(Value::from(None::<i64>), Value::Null);
    assert_eq!(i64::try_from(Value::Int(-3)).unwrap(), -3);
    let err = i64::try_from(Value::Float(1.5)).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert_eq!(err.message(), "expected int but got float");
    assert_eq!(
        Value::try_from(u64::MAX).unwrap_err().kind(),
        "OverflowError"
    );
    assert_eq!(Value::try_from(5u64).unwrap(), Value::Int(5));
}

#[test]
fn devices_and_dtypes_round_trip() {
    let echo = common::global("testing.echo");
    let dev: Device = echo.invoke((Device::new(2, 3),)).unwrap();
    assert_eq!(dev, Device::new(2, 3));
    // dtypes come back in their string form (docs/abi-decisions.md).
    let t: polyffi::DataTypeOrString = echo.invoke((DataType::parse("int8x4").unwrap(),)).unwrap();
    assert_eq!(t.0.to_string(), "int8x4");
    assert_eq!(Device::cpu(0).to_string(), "cpu:0");
}

#[test]
fn closure_err_keeps_its_kind() {
    let apply = common::global("testing.apply");
    let f = Function::from_closure(|_: &[Value]| Err(Error::new("KeyError", "no such key 'k'")))
        .unwrap();
    let err = apply.invoke::<Value>((&f,)).unwrap_err();
    assert_eq!(err.kind(), "KeyError");
    assert_eq!(err.message(), "no such key 'k'");
    let custom = Function::from_closure(|_: &[Value]| Err(Error::new("my.Custom", "x"))).unwrap();
    assert_eq!(
        apply.invoke::<Value>((&custom,)).unwrap_err().kind(),
        "my.Custom"
    );
}

#[test]
fn panic_in_closure_becomes_rust_panic_error() {
    common::quiet_intended_panics();
    let apply = common::global("testing.apply");
    let f = Function::from_closure(|args: &[Value]| {
        if args.is_empty() {
            panic!("[intended] closure exploded");
        }
        Ok(args[0].clone())
    })
    .unwrap();
    let err = apply.invoke::<Value>((&f,)).unwrap_err();
    assert_eq!(err.kind(), "RustPanic");
    assert_eq!(err.message(), "[intended] closure exploded");
    // The function still works after the panic, and C code sees the error text as well.
    assert_eq!(apply.invoke::<i64>((&f, 5)).unwrap(), 5);
    let caught: String = common::global("testing.call_and_catch")
        .invoke((&f,))
        .unwrap();
    assert_eq!(caught, "RustPanic: [intended] closure exploded");
}

#[test]
fn closure_receives_and_returns_every_kind_of_value() {
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let f = Function::from_closure(move |args: &[Value]| {
        s.fetch_add(args.len(), Ordering::SeqCst);
        Ok(Value::Array(Array::new(args)?))
    })
    .unwrap();
    let apply = common::global("testing.apply");
    let out: Array = apply
        .invoke((&f, 1, 2.5, true, "s\0t", &b"\xff"[..], Device::cpu(1), ()))
        .unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 7);
    let items = out.to_vec().unwrap();
    assert_eq!(
        items,
        vec![
            Value::Int(1),
            Value::Float(2.5),
            Value::Bool(true),
            Value::Str("s\0t".into()),
            Value::Bytes(vec![0xff]),
            Value::Device(Device::cpu(1)),
            Value::Null
        ]
    );
}

#[test]
fn generic_call_packs_every_plain_value_and_strings_after_them() {
    // The closure reports what it received, so the packing of each kind is checked.
    let describe = Function::from_closure(|args: &[Value]| {
        Ok(Value::Str(
            args.iter()
                .map(|a| match a {
                    Value::Int(x) => format!("int {x}"),
                    Value::Float(x) => format!("float {x}"),
                    Value::Bool(x) => format!("bool {x}"),
                    Value::Null => "null".to_string(),
                    Value::Device(d) => format!("device {d}"),
                    Value::DataType(t) => format!("dtype {t}"),
                    Value::Str(s) => format!("str {s}"),
                    other => other.type_name().to_string(),
                })
                .collect::<Vec<_>>()
                .join(", "),
        ))
    })
    .unwrap();
    let apply = common::global("testing.apply");
    let plain = vec![
        Value::Function(describe.clone()),
        Value::Int(-7),
        Value::Float(2.5),
        Value::Bool(true),
        Value::Null,
        Value::Device(Device::cpu(0)),
        Value::DataType(DataType::FLOAT32),
    ];
    let expected = "int -7, float 2.5, bool true, null, device cpu:0, dtype float32";
    assert_eq!(apply.call(&plain).unwrap(), Value::Str(expected.into()));
    // A string after plain values: the packer switches to the path with holders.
    let mut with_str = plain.clone();
    with_str.push(Value::Str("last".into()));
    assert_eq!(
        apply.call(&with_str).unwrap(),
        Value::Str(format!("{expected}, str last"))
    );
}

#[test]
fn invoke_into_string_reuses_the_buffer() {
    let echo = common::global("testing.echo");
    let concat = common::global("testing.concat");
    let mut out = String::with_capacity(64);
    let at = out.as_ptr();
    echo.invoke_into_string(("0123456789abcdef",), &mut out)
        .unwrap();
    assert_eq!(out, "0123456789abcdef");
    concat.invoke_into_string(("ab", "cd"), &mut out).unwrap();
    assert_eq!(out, "abcd");
    // Non-ASCII text takes the full UTF-8 check.
    concat.invoke_into_string(("é", "ü"), &mut out).unwrap();
    assert_eq!(out, "éü");
    assert_eq!(out.as_ptr(), at, "the buffer was reallocated");
    // A result that is not a string: TypeError, and the buffer is left empty.
    let err = echo.invoke_into_string((5i64,), &mut out).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert!(out.is_empty());
    // A callee's error reaches the caller as it is.
    let raise = common::global("testing.raise_error");
    let err = raise
        .invoke_into_string(("ValueError", "nope"), &mut out)
        .unwrap_err();
    assert_eq!((err.kind(), err.message()), ("ValueError", "nope"));
    assert!(out.is_empty());
}

/// A `kTVMStr` argument with the caller's bytes as they are (not UTF-8 here): what a C caller
/// may pass, which safe Rust cannot build as a `&str`.
struct RawCStr(&'static [u8]);

impl polyffi::ToArg for RawCStr {
    type Holder = ();
    fn prepare(&self) -> polyffi::Result<()> {
        assert_eq!(self.0.last(), Some(&0), "RawCStr needs its NUL");
        Ok(())
    }
    fn raw(&self, _: &()) -> (polyffi::sys::TVMValue, std::os::raw::c_int) {
        (
            polyffi::sys::TVMValue {
                v_str: self.0.as_ptr() as *const _,
            },
            polyffi::sys::kTVMStr as std::os::raw::c_int,
        )
    }
}

#[test]
fn invoke_with_str_lends_the_result() {
    let echo = common::global("testing.echo");
    let concat = common::global("testing.concat");
    assert_eq!(
        echo.invoke_with_str(("0123456789abcdef",), |s| s.to_uppercase())
            .unwrap(),
        "0123456789ABCDEF"
    );
    assert_eq!(
        concat
            .invoke_with_str(("é", "ü"), |s| s.chars().count())
            .unwrap(),
        2
    );
    let long = "y".repeat(5000);
    assert!(echo
        .invoke_with_str((long.as_str(),), |s| s == long)
        .unwrap());
    // A string with a NUL inside comes back as a runtime.String object: converted, then lent.
    assert_eq!(
        concat
            .invoke_with_str(("a\0b", "c"), |s| s.as_bytes().to_vec())
            .unwrap(),
        b"a\0bc"
    );
    // Bytes: a bytes result and a str result are both lent as they are.
    let raw: &[u8] = &[0, 1, 0xff, 0x80];
    assert_eq!(echo.invoke_with_bytes((raw,), |b| b.to_vec()).unwrap(), raw);
    assert_eq!(
        echo.invoke_with_bytes(("abc",), |b| b.to_vec()).unwrap(),
        b"abc"
    );
}

#[test]
fn invoke_with_str_errors_are_typed_and_skip_the_closure() {
    let echo = common::global("testing.echo");
    let mut ran = false;
    // A str result that is not UTF-8: the TypeError invoke::<String> gives.
    let bad = RawCStr(b"ab\xff\xfecd\0");
    let err = echo.invoke_with_str((&bad,), |_| ran = true).unwrap_err();
    assert_eq!(
        (err.kind(), err.message()),
        ("TypeError", "expected str but got bytes")
    );
    assert_eq!(
        err,
        echo.invoke::<String>((&bad,)).unwrap_err(),
        "the owned call gives the same error"
    );
    // Read as bytes, the same result is fine.
    assert_eq!(
        echo.invoke_with_bytes((&bad,), |b| b.to_vec()).unwrap(),
        b"ab\xff\xfecd"
    );
    // Not a string at all.
    let err = echo.invoke_with_str((5i64,), |_| ran = true).unwrap_err();
    assert_eq!(
        (err.kind(), err.message()),
        ("TypeError", "expected str but got int")
    );
    let err = echo
        .invoke_with_bytes((1.5f64,), |_| ran = true)
        .unwrap_err();
    assert_eq!(
        (err.kind(), err.message()),
        ("TypeError", "expected bytes but got float")
    );
    // The callee's own error.
    let raise = common::global("testing.raise_error");
    let err = raise
        .invoke_with_str(("KeyError", "nope"), |_| ran = true)
        .unwrap_err();
    assert_eq!((err.kind(), err.message()), ("KeyError", "nope"));
    assert!(!ran, "the closure ran although the call failed");
}

#[test]
fn calls_inside_a_lending_closure_are_refused() {
    let echo = common::global("testing.echo");
    let add3 = common::global("testing.add3");
    // A second call would replace the lent characters: it is refused, and the string the
    // closure holds is still the first result.
    let (inner, seen) = echo
        .invoke_with_str(("first",), |s| {
            let inner = echo.invoke::<String>(("second",));
            (inner, s.to_owned())
        })
        .unwrap();
    let err = inner.unwrap_err();
    assert_eq!(err.kind(), "RuntimeError");
    assert!(err.message().contains("lent"), "{}", err.message());
    assert_eq!(seen, "first");
    // Every kind of call through the crate: typed, generic, nested lending, a global's call.
    echo.invoke_with_bytes((b"x".as_slice(),), |_| {
        assert_eq!(
            add3.invoke::<i64>((1, 2, 3)).unwrap_err().kind(),
            "RuntimeError"
        );
        assert_eq!(
            add3.call(&[1.into(), 2.into(), 3.into()])
                .unwrap_err()
                .kind(),
            "RuntimeError"
        );
        assert_eq!(
            echo.invoke_with_str(("z",), |_| ()).unwrap_err().kind(),
            "RuntimeError"
        );
    })
    .unwrap();
    // After the closure, and after a closure that panicked, calls go through again.
    assert_eq!(add3.invoke::<i64>((1, 2, 3)).unwrap(), 6);
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        echo.invoke_with_str(("p",), |_| panic!("inside")).unwrap();
    }));
    assert!(panicked.is_err());
    assert_eq!(add3.invoke::<i64>((1, 2, 3)).unwrap(), 6);
    // The guard is per thread: another thread calls freely while this one lends.
    echo.invoke_with_str(("here",), |s| {
        let other = std::thread::scope(|t| {
            t.spawn(|| echo.invoke::<String>(("there",)).unwrap())
                .join()
                .unwrap()
        });
        assert_eq!((s, other.as_str()), ("here", "there"));
    })
    .unwrap();
}

#[test]
fn more_than_eight_arguments_use_the_heap_path() {
    let sum = common::global("testing.sum");
    let args: Vec<Value> = (1..=20).map(Value::Int).collect();
    assert_eq!(sum.call(&args).unwrap(), Value::Int(210));
    let f = Function::from_closure(|args: &[Value]| Ok(Value::Int(args.len() as i64))).unwrap();
    let mut with_f = vec![Value::Function(f)];
    with_f.extend(args);
    assert_eq!(
        common::global("testing.apply").call(&with_f).unwrap(),
        Value::Int(20)
    );
}

#[test]
fn clone_retains_and_drop_releases() {
    let count = common::global("testing.object_use_count");
    let f = Function::from_closure(|_: &[Value]| Ok(Value::Null)).unwrap();
    let base: i64 = count.invoke((&f,)).unwrap();
    let g = f.clone();
    assert_eq!(count.invoke::<i64>((&f,)).unwrap(), base + 1);
    drop(g);
    assert_eq!(count.invoke::<i64>((&f,)).unwrap(), base);
}

#[test]
fn finalizer_drops_the_closure_exactly_once() {
    struct Probe(Arc<AtomicUsize>);
    impl Drop for Probe {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let probe = Probe(drops.clone());
    let f = Function::from_closure(move |_: &[Value]| {
        let _p = &probe;
        Ok(Value::Null)
    })
    .unwrap();
    let g = f.clone();
    let wrapped: Function = common::global("testing.wrap_callback")
        .invoke((&f,))
        .unwrap();
    drop(f);
    drop(g);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        0,
        "the wrapper still holds the closure"
    );
    drop(wrapped);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn register_list_and_remove_globals() {
    common::testing();
    let name = "rust_test.triple";
    let f = polyffi::register_global(name, |args: &[Value]| {
        Ok(Value::Int(3 * i64::try_from(args[0].clone())?))
    })
    .unwrap();
    assert!(polyffi::list_global_names()
        .unwrap()
        .iter()
        .any(|n| n == name));
    assert_eq!(
        Function::global(name).unwrap().invoke::<i64>((7,)).unwrap(),
        21
    );
    let err = f.register_global(name, false).unwrap_err();
    assert_eq!(err.kind(), "ValueError");
    f.register_global(name, true).unwrap();
    polyffi::remove_global(name).unwrap();
    assert!(Function::get_global(name).is_none());
    let err = Function::global(name).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("ValueError: Cannot find global function {name}")
    );
    polyffi::remove_global(name).unwrap(); // absent: still fine
}

#[test]
fn containers() {
    common::testing();
    let a = Array::new(&[1.into(), "two".into(), Value::Null]).unwrap();
    assert_eq!(a.len().unwrap(), 3);
    assert_eq!(a.get(1).unwrap(), Value::Str("two".into()));
    assert_eq!(a.get(7).unwrap_err().kind(), "IndexError");
    let m = Map::new(&[("k".into(), 1.into()), (Value::Int(2), "v".into())]).unwrap();
    assert_eq!(m.len().unwrap(), 2);
    assert_eq!(m.get("k").unwrap(), Value::Int(1));
    assert_eq!(m.get(2i64).unwrap(), Value::Str("v".into()));
    assert!(m.contains("k").unwrap());
    assert!(!m.contains("zz").unwrap());
    assert_eq!(m.get("zz").unwrap_err().kind(), "KeyError");
    let items = m.items().unwrap();
    assert_eq!(items[0], ("k".into(), Value::Int(1)));
    // Objects keep their identity through a round trip.
    let echo = common::global("testing.echo");
    let back = echo.call(&[Value::Array(a.clone())]).unwrap();
    assert_eq!(back, Value::Array(a));
}

#[test]
fn typed_closures_unpack_their_arguments() {
    common::quiet_intended_panics();
    let apply = common::global("testing.apply");
    let add = Function::from_typed(|x: i64, y: f64| Ok(x as f64 + y)).unwrap();
    assert_eq!(apply.invoke::<f64>((&add, 2, 0.5)).unwrap(), 2.5);
    let greet = Function::from_typed(|name: String| Ok(format!("hi {name}"))).unwrap();
    assert_eq!(apply.invoke::<String>((&greet, "a\0b")).unwrap(), "hi a\0b");
    let none = Function::from_typed(|| Ok(())).unwrap();
    assert_eq!(apply.invoke::<Value>((&none,)).unwrap(), Value::Null);

    let err = apply.invoke::<f64>((&add, 1)).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert_eq!(err.message(), "expected 2 arguments but got 1");
    let err = apply.invoke::<f64>((&add, "x", 1.0)).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert_eq!(err.message(), "argument 0 expected int but got str");

    let fails = Function::from_typed(|x: i64| -> polyffi::Result<i64> {
        if x < 0 {
            return Err(Error::new("ValueError", "negative"));
        }
        panic!("[intended] typed panic {x}")
    })
    .unwrap();
    assert_eq!(
        apply.invoke::<i64>((&fails, -1)).unwrap_err().kind(),
        "ValueError"
    );
    let err = apply.invoke::<i64>((&fails, 3)).unwrap_err();
    assert_eq!(
        (err.kind(), err.message()),
        ("RustPanic", "[intended] typed panic 3")
    );
    // C calls the typed closure a thousand times.
    let inc = Function::from_typed(|x: i64| Ok(x + 1)).unwrap();
    let total: i64 = common::global("testing.call_n")
        .invoke((&inc, 1000))
        .unwrap();
    assert_eq!(total, (1..=1000).sum::<i64>());
}
