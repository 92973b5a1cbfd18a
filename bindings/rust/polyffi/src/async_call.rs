//! Async calls on the core's worker pool (`c_async_api.h`): [`Function::call_async`] submits a
//! call and returns a [`CallFuture`], a `Send` future that works under any executor (tokio,
//! async-std, a hand-written `block_on`): the core's completion callback, on a pool worker,
//! stores the result and wakes the task. Nothing is polled and no thread of the caller's runtime
//! blocks. Dropping the future before it resolves cancels the call: one that has not started
//! never runs; one that has is asked to stop (the graph executor and the relax VM stop at their
//! next check) and its result is dropped.
use std::ffi::c_void;
use std::future::Future;
use std::os::raw::c_int;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use polyffi_sys as sys;
use sys::TVMValue;

use crate::errors::{check_call, Error, Result};
use crate::function::Function;
use crate::value::{with_packed_slice, FromRet, Value};

/// What [`CallFuture::cancel`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelState {
    /// The call had not started: it never runs; the future resolves to a `CancelledError`.
    BeforeStart,
    /// The call is running: it was asked to stop and may still finish normally.
    Requested,
    /// The call had already finished.
    Finished,
}

/// The pool's settings: workers, queue limit (calls waiting to start) and calls waiting now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsyncPool {
    pub num_workers: i32,
    pub queue_limit: i32,
    pub queued: i32,
}

/// Sizes the core's async pool (0 leaves a value as it is; workers apply before the first async
/// call only) and returns its settings. A submit beyond the queue limit fails with kind
/// `QueueFullError`.
pub fn configure_async(num_workers: i32, queue_limit: i32) -> Result<AsyncPool> {
    crate::library::ensure()?;
    // SAFETY: plain integers in, out-parameters are local.
    check_call(unsafe { sys::TVMAsyncConfigure(num_workers, queue_limit) })?;
    let mut p = AsyncPool {
        num_workers: 0,
        queue_limit: 0,
        queued: 0,
    };
    check_call(unsafe {
        sys::TVMAsyncGetConfig(&mut p.num_workers, &mut p.queue_limit, &mut p.queued)
    })?;
    Ok(p)
}

struct Slot {
    result: Option<Result<Value>>,
    waker: Option<Waker>,
    /// The arguments, kept until the call ends (a borrowed NDArray view points into them).
    args: Option<Vec<Value>>,
}

struct Shared {
    slot: Mutex<Slot>,
}

/// The result of an async call: resolves to what [`Function::call`] would return.
pub struct CallFuture {
    shared: Arc<Shared>,
    call: CallHandle,
}

struct CallHandle(*mut c_void);
// SAFETY: the core's call handles are thread-safe (TVMAsyncCancel / TVMAsyncFree from any thread).
unsafe impl Send for CallHandle {}
unsafe impl Sync for CallHandle {}

unsafe extern "C" fn on_done(
    status: c_int,
    ret: *mut TVMValue,
    code: c_int,
    resource: *mut c_void,
) {
    // SAFETY: resource is the Arc handed over in submit; taken back exactly once, here.
    let shared = unsafe { Arc::from_raw(resource as *const Shared) };
    let result = if status == 0 {
        // SAFETY: ret/code are the call's owned result.
        unsafe { Value::from_ret(*ret, code) }
    } else {
        // The error is this worker thread's last error while the completion runs.
        Err(check_call(status)
            .err()
            .unwrap_or_else(|| Error::new("RuntimeError", "async call failed")))
    };
    let (waker, args) = {
        let mut slot = shared.slot.lock().unwrap_or_else(|e| e.into_inner());
        slot.result = Some(result);
        (slot.waker.take(), slot.args.take())
    };
    drop(args);
    if let Some(w) = waker {
        w.wake();
    }
}

impl Function {
    /// Runs `self(args)` on the core's worker pool; the returned future resolves to its result.
    /// A full queue is an `Err` of kind `QueueFullError` here, at submit.
    pub fn call_async(&self, args: &[Value]) -> Result<CallFuture> {
        let shared = Arc::new(Shared {
            slot: Mutex::new(Slot {
                result: None,
                waker: None,
                args: Some(args.to_vec()),
            }),
        });
        let resource = Arc::into_raw(shared.clone()) as *mut c_void;
        let mut call: *mut c_void = std::ptr::null_mut();
        let status = {
            let slot = shared.slot.lock().unwrap_or_else(|e| e.into_inner());
            let kept = slot.args.as_deref().unwrap_or(&[]);
            with_packed_slice(kept, |values, codes| {
                let n = c_int::try_from(values.len()).unwrap_or(c_int::MAX);
                // SAFETY: packed arguments valid for the submit; the core copies or retains them
                // (borrowed views point into `kept`, alive until on_done drops it).
                Ok(unsafe {
                    sys::TVMAsyncSubmit(
                        self.as_raw(),
                        values.as_mut_ptr(),
                        codes.as_mut_ptr(),
                        n,
                        Some(on_done),
                        resource,
                        &mut call,
                    )
                })
            })
        };
        let status = match status {
            Ok(s) => s,
            Err(e) => {
                // SAFETY: not submitted: the Arc given to the core was never taken.
                drop(unsafe { Arc::from_raw(resource as *const Shared) });
                return Err(e);
            }
        };
        if let Err(e) = check_call(status) {
            // SAFETY: on failure the core never calls on_done: take the Arc back.
            drop(unsafe { Arc::from_raw(resource as *const Shared) });
            return Err(e);
        }
        Ok(CallFuture {
            shared,
            call: CallHandle(call),
        })
    }
}

impl CallFuture {
    /// Cancels the call (see [`CancelState`]); the future still resolves.
    pub fn cancel(&self) -> Result<CancelState> {
        let mut state: c_int = -1;
        // SAFETY: the handle is owned by self.
        check_call(unsafe { sys::TVMAsyncCancel(self.call.0, &mut state) })?;
        Ok(match state {
            0 => CancelState::BeforeStart,
            1 => CancelState::Requested,
            _ => CancelState::Finished,
        })
    }
}

impl Future for CallFuture {
    type Output = Result<Value>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<Value>> {
        let mut slot = self.shared.slot.lock().unwrap_or_else(|e| e.into_inner());
        match slot.result.take() {
            Some(r) => Poll::Ready(r),
            None => {
                match &slot.waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => slot.waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
        }
    }
}

impl Drop for CallFuture {
    fn drop(&mut self) {
        let pending = {
            let slot = self.shared.slot.lock().unwrap_or_else(|e| e.into_inner());
            slot.result.is_none() && slot.args.is_some()
        };
        // SAFETY: the handle is owned by self; cancel and free are safe at any time.
        unsafe {
            if pending {
                sys::TVMAsyncCancel(self.call.0, std::ptr::null_mut());
            }
            sys::TVMAsyncFree(self.call.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn assert_send<T: Send + 'static>() {}
    #[test]
    fn call_future_is_send() {
        assert_send::<CallFuture>();
    }
}
