// The async call pool (core/src/async/): calls submitted through TVMAsyncSubmit run on the core's
// own worker threads (one pool per process, shared by every binding), each reporting to a
// completion callback on the worker. A call can be cancelled before it starts; a running call sees
// its cancellation through CheckCancelled(), which long loops (graph executor, relax VM) poll.
#ifndef POLYFFI_CORE_ASYNC_H_
#define POLYFFI_CORE_ASYNC_H_

#include <polyffi/c_async_api.h>

#include <atomic>

namespace polyffi {
namespace async {

/*! \brief The cancellation flag of the async call running on this thread, or NULL. */
extern thread_local const std::atomic<bool>* tls_cancel_flag;

/*! \brief Set this thread's last error to the CancelledError of a cancelled running call. */
[[gnu::cold]] int SetCancelledError();

/*! \brief Whether the async call running on this thread was asked to stop. */
inline bool CancelRequested() {
  const std::atomic<bool>* flag = tls_cancel_flag;
  return flag != nullptr && flag->load(std::memory_order_relaxed);
}

/*!
 * \brief 0, or -1 with a CancelledError as the last error when the async call running on this
 *  thread was asked to stop. One thread-local load on the common path.
 */
inline int CheckCancelled() {
  return __builtin_expect(CancelRequested(), 0) ? SetCancelledError() : 0;
}

struct Call;

/*!
 * \brief Queue a call (arguments copied: strings and bytes deep, objects retained); throws
 *  QueueFullError when the queue holds its limit of calls not yet started. Returns the call with
 *  one reference for the caller when want_handle, else NULL.
 */
Call* Submit(void* func, TVMValue* args, int* codes, int n, TVMAsyncCallback done, void* resource,
             bool want_handle);
/*! \brief Cancel: kTVMAsyncCancelledBeforeStart, kTVMAsyncCancelRequested or kTVMAsyncFinished. */
int Cancel(Call* call);
void Release(Call* call);
/*! \brief Validate a handle from the C ABI (ValueError when it is not a call). */
Call* CallOf(void* handle);
void Configure(int num_workers, int queue_limit);
void GetConfig(int* num_workers, int* queue_limit, int* queued);

}  // namespace async
}  // namespace polyffi
#endif  // POLYFFI_CORE_ASYNC_H_
