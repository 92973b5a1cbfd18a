//! The direct protocol as the binding uses it: Rust closures are direct functions (results
//! written into the caller's slot), and `Function` calls through the entry `TVMFuncGetDirect`
//! gives. Every result kind goes both ways: through the Rust caller's direct entry and through
//! C's `TVMFuncCall` (testing.apply calls its argument from C++).
mod common;

use std::ffi::c_void;
use std::os::raw::c_int;
use std::ptr::NonNull;

use polyffi::{DataType, Device, Function, Map, NDArray, Shape, Value};
use polyffi_sys as sys;

/// A closure that returns whatever `make` builds, called from Rust and from C.
fn both_ways(make: impl Fn() -> Value + Send + Sync + 'static) -> (Value, Value) {
    let f = Function::from_closure(move |_: &[Value]| Ok(make())).unwrap();
    let from_rust = f.call(&[]).unwrap();
    let from_c = common::global("testing.apply")
        .call(&[Value::Function(f)])
        .unwrap();
    (from_rust, from_c)
}

#[test]
fn plain_results_arrive_both_ways() {
    common::testing();
    for v in [
        Value::Int(-3),
        Value::Float(0.25),
        Value::Bool(true),
        Value::Null,
        Value::Device(Device::cpu(2)),
        Value::DataType(DataType::FLOAT32),
        Value::OpaqueHandle(0x1234),
    ] {
        // A dtype result reads as its string both ways, as in TVM's runtime: TVMFuncCall makes
        // it one, and the Rust caller's direct entry (which hands the dtype on raw) does too.
        let expected = match v.clone() {
            Value::DataType(t) => Value::Str(t.to_string()),
            other => other,
        };
        let (r, c) = both_ways(move || v.clone());
        assert_eq!(r, expected);
        assert_eq!(c, expected);
    }
}

#[test]
fn strings_and_bytes_are_copied_into_the_return_storage() {
    common::testing();
    for text in ["", "short", "é and ü", &"long ".repeat(100)] {
        let owned = text.to_string();
        let (r, c) = both_ways(move || Value::Str(owned.clone()));
        assert_eq!(r, Value::Str(text.into()));
        assert_eq!(c, Value::Str(text.into()));
    }
    // A NUL inside travels as a runtime.String object and comes back whole.
    let (r, c) = both_ways(|| Value::Str("a\0b".into()));
    assert_eq!(r, Value::Str("a\0b".into()));
    assert_eq!(c, Value::Str("a\0b".into()));
    let (r, c) = both_ways(|| Value::Bytes(vec![0, 0xff, 7]));
    assert_eq!(r, Value::Bytes(vec![0, 0xff, 7]));
    assert_eq!(c, Value::Bytes(vec![0, 0xff, 7]));
}

#[test]
fn object_results_hand_over_one_reference() {
    let count = common::global("testing.object_use_count");
    {
        let inner = Function::from_typed(|x: i64| Ok(x * 2)).unwrap();
        let keep = inner.clone();
        let (r, c) = both_ways(move || Value::Function(inner.clone()));
        // The closure (and its copy of inner) is gone: keep, r and c hold the function.
        assert_eq!(count.invoke::<i64>((&keep,)).unwrap(), 3);
        for got in [&r, &c] {
            let Value::Function(g) = got else {
                panic!("expected a Function")
            };
            assert_eq!(g.invoke::<i64>((21,)).unwrap(), 42);
        }
        drop(r);
        assert_eq!(count.invoke::<i64>((&keep,)).unwrap(), 2);
        drop(c);
        assert_eq!(count.invoke::<i64>((&keep,)).unwrap(), 1);

        let a = NDArray::empty(&[2, 3], DataType::FLOAT32, Device::cpu(0)).unwrap();
        let (r, c) = both_ways(move || Value::NDArray(a.clone()));
        for got in [r, c] {
            let Value::NDArray(b) = got else {
                panic!("expected an NDArray")
            };
            assert_eq!(b.shape(), &[2, 3]);
        }

        let (r, c) = both_ways(|| Value::Shape(Shape::new([4, 5])));
        assert_eq!(r, Value::Shape(Shape::new([4, 5])));
        assert_eq!(c, Value::Shape(Shape::new([4, 5])));

        let m = Map::new(&[(Value::Str("k".into()), Value::Int(1))]).unwrap();
        let (r, c) = both_ways(move || Value::Map(m.clone()));
        for got in [r, c] {
            let Value::Map(m) = got else {
                panic!("expected a Map")
            };
            assert_eq!(m.get("k").unwrap(), Value::Int(1));
        }
    }
}

#[test]
fn errors_and_panics_use_the_last_error() {
    common::testing();
    let f = Function::from_typed(|x: i64| -> polyffi::Result<i64> {
        if x < 0 {
            Err(polyffi::Error::new("IndexError", "negative"))
        } else {
            panic!("boom {x}")
        }
    })
    .unwrap();
    let apply = common::global("testing.apply");
    type Call = fn(&Function, &Function, i64) -> polyffi::Result<i64>;
    let calls: [Call; 2] = [
        |f, _, x| f.invoke::<i64>((x,)),
        |f, apply, x| apply.invoke::<i64>((f, x)),
    ];
    for call in calls {
        let e = call(&f, &apply, -1).unwrap_err();
        assert_eq!((e.kind(), e.message()), ("IndexError", "negative"));
        let e = call(&f, &apply, 3).unwrap_err();
        assert_eq!(e.kind(), "RustPanic");
        assert!(e.message().contains("boom 3"), "{}", e.message());
        // A wrong argument type is the typed closure's TypeError.
        let e = f.invoke::<i64>(("x",)).unwrap_err();
        assert_eq!(e.kind(), "TypeError");
    }
    // The function still works after errors.
    let ok = Function::from_typed(|x: i64| Ok(x + 1)).unwrap();
    assert_eq!(ok.invoke::<i64>((1,)).unwrap(), 2);
}

#[test]
fn an_rvalue_reference_result_is_refused() {
    common::testing();
    // A direct callee that (wrongly) writes an argument-only code into the slot.
    unsafe extern "C" fn rvalue(
        _: *mut c_void,
        _: *const sys::TVMValue,
        _: *const c_int,
        _: c_int,
        ret: *mut sys::TVMValue,
        code: *mut c_int,
    ) -> c_int {
        (*ret).v_handle = std::ptr::null_mut();
        *code = sys::kTVMObjectRValueRefArg as c_int;
        0
    }
    let mut out: *mut c_void = std::ptr::null_mut();
    // SAFETY: a direct function with no resource and no finalizer.
    let status =
        unsafe { sys::TVMFuncCreateDirect(Some(rvalue), std::ptr::null_mut(), None, &mut out) };
    assert_eq!(status, 0);
    // SAFETY: an owned function handle.
    let f = unsafe { Function::from_raw(NonNull::new(out).unwrap()) };
    // Through the Rust caller's direct entry: the binding refuses it.
    let e = f.call(&[]).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert!(e.message().contains("unsupported"), "{}", e.message());
    // Through TVMFuncCall (C calling it): the runtime refuses it.
    let e = common::global("testing.apply")
        .call(&[Value::Function(f)])
        .unwrap_err();
    assert_eq!(e.kind(), "TypeError");
}
