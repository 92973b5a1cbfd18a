//! Function::call_async: a Send future over the core's worker pool, under tokio and under a
//! hand-written executor; results and errors equal the synchronous ones (cancellation and the
//! queue limit: async_cancel.rs).
mod common;

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;

use polyffi::{Function, Value};

/// A minimal executor: the future must wake this thread itself (no runtime behind it).
fn block_on<F: Future>(fut: F) -> F::Output {
    struct ThreadWaker(thread::Thread);
    impl Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        thread::park();
    }
}

#[test]
fn call_async_without_a_runtime_equals_sync() {
    let add3 = common::global("testing.add3");
    let args = [Value::Int(1), Value::Int(20), Value::Int(300)];
    let sync = add3.call(&args).unwrap();
    let got = block_on(add3.call_async(&args).unwrap()).unwrap();
    assert_eq!(i64::try_from(got).unwrap(), i64::try_from(sync).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_many_calls_at_once_equal_sync() {
    let add = common::global("testing.add");
    let echo = common::global("testing.echo");
    let mut tasks = Vec::new();
    for i in 0..64i64 {
        let add = add.clone();
        tasks.push(tokio::spawn(async move {
            add.call_async(&[Value::Int(i), Value::Int(1000)])
                .unwrap()
                .await
        }));
    }
    for (i, t) in tasks.into_iter().enumerate() {
        assert_eq!(
            i64::try_from(t.await.unwrap().unwrap()).unwrap(),
            i as i64 + 1000
        );
    }
    let s = echo
        .call_async(&[Value::Str("héllo".into())])
        .unwrap()
        .await
        .unwrap();
    assert_eq!(String::try_from(s).unwrap(), "héllo");
}

#[tokio::test]
async fn error_arrives_with_its_kind() {
    let raise = common::global("testing.raise_error");
    let args = [
        Value::Str("ValueError".into()),
        Value::Str("bad value 7".into()),
    ];
    let sync = raise.call(&args).unwrap_err();
    let err = raise.call_async(&args).unwrap().await.unwrap_err();
    assert_eq!(err.kind(), "ValueError");
    assert_eq!(err.kind(), sync.kind());
    assert_eq!(err.message(), sync.message());
}

#[tokio::test]
async fn callback_into_rust_during_an_async_call() {
    let apply = common::global("testing.apply");
    let caller = thread::current().id();
    let seen = Arc::new(Mutex::new(None));
    let s = seen.clone();
    let cb = Function::from_closure(move |args: &[Value]| {
        *s.lock().unwrap() = Some(thread::current().id());
        Ok(Value::Int(i64::try_from(args[0].clone())? * 2))
    })
    .unwrap();
    let got = apply
        .call_async(&[Value::Function(cb), Value::Int(21)])
        .unwrap()
        .await
        .unwrap();
    assert_eq!(i64::try_from(got).unwrap(), 42);
    assert_ne!(seen.lock().unwrap().unwrap(), caller);
}
