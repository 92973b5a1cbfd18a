/*
 * polyffi's async calls: an extension of the classic TVM runtime API (not part of TVM's).
 *
 * A call submitted here runs on libpolyffi's worker pool (one per process, shared by every
 * binding) and reports to a completion callback on the worker thread. The submitting thread
 * returns at once. Calls not yet started wait in a bounded queue: when it is full, submitting
 * fails with a QueueFullError instead of growing without bound. A call can be cancelled: before
 * it starts it never runs; once running, the graph executor (between nodes), the relax VM
 * (between instructions) and any function that polls TVMAsyncCancelRequested stop with a
 * CancelledError.
 *
 * Conventions as in c_runtime_api.h: 0 on success, -1 on error (message in TVMGetLastError).
 */
#ifndef POLYFFI_C_ASYNC_API_H_
#define POLYFFI_C_ASYNC_API_H_

#include <polyffi/c_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Calls --------------------------------------------------------------------------------- */

/*! \brief A submitted call (owned when returned by TVMAsyncSubmit; released with TVMAsyncFree). */
typedef void* TVMAsyncCallHandle;

/*! \brief How a call ended, as its completion callback receives it. */
typedef enum {
  /*! \brief The function returned; ret_value / ret_type_code hold its result. */
  kTVMAsyncReturned = 0,
  /*! \brief The function failed: TVMGetLastError (and TVMGetLastPythonError) on the worker
   *  thread, during the callback, describe the error. */
  kTVMAsyncFailed = -1,
  /*! \brief A host callback returned -2: as kTVMAsyncFailed, the error text tells the rest. */
  kTVMAsyncEnvError = -2,
  /*! \brief Cancelled before it started: the function never ran ("CancelledError: ..."). */
  kTVMAsyncCancelled = 1,
} TVMAsyncStatus;

/*!
 * \brief Completion of a call: called exactly once per successfully submitted call, on a worker
 *  thread of the pool.
 * \param status a TVMAsyncStatus.
 * \param ret_value, ret_type_code the result when status is kTVMAsyncReturned (else a null
 *  value): an object reference (function, module, NDArray, object) is owned by the callback and
 *  released with its free function; strings and bytes are thread-local (valid until the callback
 *  returns).
 * \param resource_handle the pointer given to TVMAsyncSubmit.
 */
typedef void (*TVMAsyncCallback)(int status, TVMValue* ret_value, int ret_type_code,
                                 void* resource_handle);

/*!
 * \brief Submit func(args...) to the worker pool.
 *  The arguments are copied at once: strings and bytes by value, function, module, NDArray and
 *  object handles retained until the call ends (the caller may free its own at once); DLTensor
 *  views and opaque handles are borrowed, so the caller keeps what they point at alive until the
 *  completion callback runs.
 * \param func borrowed function handle (retained until the call ends).
 * \param arg_values, type_codes, num_args the arguments, as for TVMFuncCall.
 * \param done the completion callback; required.
 * \param resource_handle passed to done unchanged.
 * \param out receives an owned call handle (for TVMAsyncCancel), released with TVMAsyncFree; NULL
 *  when the caller does not need one.
 * \return 0; -1 with "QueueFullError: ..." when the queue holds its limit of calls not yet
 *  started, or "ValueError: ..." / "TypeError: ..." for bad arguments. On failure done is never
 *  called and nothing is retained.
 */
TVM_DLL int TVMAsyncSubmit(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes,
                           int num_args, TVMAsyncCallback done, void* resource_handle,
                           TVMAsyncCallHandle* out);

/*! \brief What TVMAsyncCancel found. */
typedef enum {
  /*! \brief The call had not started: it will not run; done reports kTVMAsyncCancelled. */
  kTVMAsyncCancelledBeforeStart = 0,
  /*! \brief The call is running: it was asked to stop and may end with a CancelledError at its
   *  next check, or finish normally. */
  kTVMAsyncCancelRequested = 1,
  /*! \brief The call had already finished (or its cancellation was already decided). */
  kTVMAsyncFinished = 2,
} TVMAsyncCancelState;

/*!
 * \brief Cancel a call. Thread-safe; any number of times.
 * \param call borrowed call handle.
 * \param out_state out: a TVMAsyncCancelState; may be NULL.
 */
TVM_DLL int TVMAsyncCancel(TVMAsyncCallHandle call, int* out_state);

/*! \brief Release a call handle (the call itself runs on regardless). NULL is a no-op. */
TVM_DLL int TVMAsyncFree(TVMAsyncCallHandle call);

/*!
 * \brief Whether the async call running on the calling thread was asked to stop: a long
 *  function polls it and fails with a CancelledError when it is set. Outside an async call: 0.
 * \param out out: 1 or 0.
 */
TVM_DLL int TVMAsyncCancelRequested(int* out);

/* ---- Pool ---------------------------------------------------------------------------------- */

/*!
 * \brief Size the pool. num_workers applies before the first submit only (default: the
 *  POLYFFI_ASYNC_THREADS environment variable, else the number of CPUs); queue_limit, the most
 *  calls waiting to start, applies at any time (default: POLYFFI_ASYNC_QUEUE_LIMIT, else 1024).
 *  0 leaves a value as it is.
 * \return -1 with a ValueError for a negative value, or a RuntimeError when num_workers changes
 *  after the pool has started.
 */
TVM_DLL int TVMAsyncConfigure(int num_workers, int queue_limit);

/*!
 * \brief The pool's settings and load.
 * \param num_workers, queue_limit, queued out: worker count, queue limit, calls waiting to
 *  start now; any may be NULL.
 */
TVM_DLL int TVMAsyncGetConfig(int* num_workers, int* queue_limit, int* queued);

#ifdef __cplusplus
}
#endif
#endif /* POLYFFI_C_ASYNC_API_H_ */
