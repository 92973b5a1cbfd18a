//! Cancellation and the queue limit of Function::call_async. Its own test binary: the test
//! resizes the process-wide pool's queue, which would refuse the other async tests' calls.
mod common;

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;

use polyffi::{CancelState, Function, Value};

/// Holds one pool worker inside testing.apply until released.
struct Blocker {
    entered: mpsc::Receiver<()>,
    open: Arc<(Mutex<bool>, Condvar)>,
    f: Function,
}

impl Blocker {
    fn new() -> Blocker {
        let (tx, rx) = mpsc::channel();
        let tx = Mutex::new(tx);
        let open = Arc::new((Mutex::new(false), Condvar::new()));
        let o = open.clone();
        let f = Function::from_closure(move |_: &[Value]| {
            tx.lock().unwrap().send(()).unwrap();
            let (m, cv) = &*o;
            let _g = cv.wait_while(m.lock().unwrap(), |open| !*open).unwrap();
            Ok(Value::Int(1))
        })
        .unwrap();
        Blocker {
            entered: rx,
            open,
            f,
        }
    }
    fn release(&self) {
        *self.open.0.lock().unwrap() = true;
        self.open.1.notify_all();
    }
}

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
fn cancel_before_start_and_the_queue_limit() {
    let apply = common::global("testing.apply");
    let pool = polyffi::configure_async(0, 0).unwrap();
    let blockers: Vec<Blocker> = (0..pool.num_workers).map(|_| Blocker::new()).collect();
    let holds: Vec<_> = blockers
        .iter()
        .map(|b| apply.call_async(&[Value::Function(b.f.clone())]).unwrap())
        .collect();
    for b in &blockers {
        b.entered.recv().unwrap();
    }
    // Every worker is held: from here on, submitted calls wait in the queue.
    assert_eq!(polyffi::configure_async(0, 1).unwrap().queue_limit, 1);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let never = Function::from_closure(move |_: &[Value]| {
        r.fetch_add(1, Ordering::SeqCst);
        Ok(Value::Null)
    })
    .unwrap();
    let late = apply.call_async(&[Value::Function(never.clone())]).unwrap();
    // The queue holds its one waiting call: the next submit is refused at once.
    let full = apply
        .call_async(&[Value::Function(never.clone())])
        .err()
        .unwrap();
    assert_eq!(full.kind(), "QueueFullError");
    assert_eq!(late.cancel().unwrap(), CancelState::BeforeStart);
    assert_eq!(polyffi::configure_async(0, 0).unwrap().queued, 0);
    // Dropping a future of a call not yet started cancels it too.
    drop(apply.call_async(&[Value::Function(never.clone())]).unwrap());
    for b in &blockers {
        b.release();
    }
    for h in holds {
        assert_eq!(i64::try_from(block_on(h).unwrap()).unwrap(), 1);
    }
    let err = block_on(late).unwrap_err();
    assert_eq!(err.kind(), "CancelledError");
    // A call after both shows the pool ran neither cancelled call.
    block_on(apply.call_async(&[Value::Function(never)]).unwrap()).unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    polyffi::configure_async(0, 1024).unwrap();
}
