//! Functions across threads: Send + Sync handles, closures called from and dropped on native
//! threads the Rust runtime did not create.
mod common;

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};

use polyffi::{Function, Value};

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn handles_are_send_and_sync() {
    assert_send_sync::<Function>();
    assert_send_sync::<polyffi::Module>();
    assert_send_sync::<polyffi::NDArray>();
    assert_send_sync::<Value>();
    assert_send_sync::<polyffi::Error>();
}

#[test]
fn eight_threads_share_functions_and_one_closure() {
    let add3 = common::global("testing.add3");
    let calls = Arc::new(AtomicI64::new(0));
    let c = calls.clone();
    let closure = Function::from_closure(move |args: &[Value]| {
        c.fetch_add(1, Ordering::Relaxed);
        Ok(Value::Int(i64::try_from(args[0].clone())? * 2))
    })
    .unwrap();
    let call_n = common::global("testing.call_n");
    thread::scope(|s| {
        for t in 0..8i64 {
            let (add3, closure, call_n) = (&add3, closure.clone(), &call_n);
            s.spawn(move || {
                for i in 0..2000 {
                    assert_eq!(add3.invoke::<i64>((t, i, 1)).unwrap(), t + i + 1);
                }
                // sum of 2*i for i < 100 = 9900
                assert_eq!(call_n.invoke::<i64>((&closure, 100)).unwrap(), 9900);
            });
        }
    });
    assert_eq!(calls.load(Ordering::Relaxed), 800);
}

#[test]
fn closure_called_from_a_native_thread() {
    let main = thread::current().id();
    let seen: Arc<Mutex<Option<ThreadId>>> = Arc::default();
    let s = seen.clone();
    let f = Function::from_closure(move |args: &[Value]| {
        *s.lock().unwrap() = Some(thread::current().id());
        Ok(Value::Int(i64::try_from(args[0].clone())? + 100))
    })
    .unwrap();
    let r: i64 = common::global("testing.call_on_thread")
        .invoke((&f, 5))
        .unwrap();
    assert_eq!(r, 105);
    let ran_on = seen.lock().unwrap().expect("closure ran");
    assert_ne!(ran_on, main, "the closure ran on the fixture's own thread");
}

#[test]
fn panic_on_a_native_thread_is_an_error() {
    common::quiet_intended_panics();
    let f = Function::from_closure(|_: &[Value]| -> polyffi::Result<Value> {
        panic!("[intended] boom on a C thread")
    })
    .unwrap();
    let err = common::global("testing.call_on_thread")
        .invoke::<Value>((&f,))
        .unwrap_err();
    assert_eq!(err.kind(), "RustPanic");
    assert_eq!(err.message(), "[intended] boom on a C thread");
}

#[test]
fn closure_dropped_on_a_native_thread() {
    struct Probe {
        drops: Arc<AtomicUsize>,
        dropped_on: Arc<Mutex<Option<ThreadId>>>,
    }
    impl Drop for Probe {
        fn drop(&mut self) {
            *self.dropped_on.lock().unwrap() = Some(thread::current().id());
            self.drops.fetch_add(1, Ordering::SeqCst);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let dropped_on: Arc<Mutex<Option<ThreadId>>> = Arc::default();
    let probe = Probe {
        drops: drops.clone(),
        dropped_on: dropped_on.clone(),
    };
    let f = Function::from_closure(move |_: &[Value]| {
        let _p = &probe;
        Ok(Value::Null)
    })
    .unwrap();
    common::global("testing.release_on_thread")
        .invoke::<()>((&f,))
        .unwrap();
    drop(f); // the fixture's thread now holds the last reference and drops it
    common::global("testing.join_release_threads")
        .call(&[])
        .unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    let on = dropped_on.lock().unwrap().expect("finalizer ran");
    assert_ne!(on, thread::current().id());
}
