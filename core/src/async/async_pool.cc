// The async call pool (polyffi/async.h): a FIFO of calls not yet started, bounded by a limit that
// counts only calls still waiting, and detached workers that run them one at a time each.
#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#endif

#include "../stored_args.h"
#include "polyffi/async.h"
#include "polyffi/error.h"
#include "polyffi/function.h"
#include "polyffi/value.h"

namespace polyffi {
namespace async {

thread_local const std::atomic<bool>* tls_cancel_flag = nullptr;

int SetCancelledError() {
  SetLastError("CancelledError: the async call was cancelled while it ran");
  return -1;
}

namespace {

enum State : int { kQueued, kRunning, kDone, kCancelled };

constexpr uint32_t kCallMagic = 0x41735943;  // tells a call handle from a stray pointer

}  // namespace

struct Call {
  uint32_t magic = kCallMagic;
  std::atomic<int> refs{1};
  std::atomic<int> state{kQueued};
  std::atomic<bool> cancel{false};
  FunctionObj* func = nullptr;  // retained
  std::vector<RetValue> args;   // owned copies: strings, bytes, retained objects
  TVMAsyncCallback done = nullptr;
  void* resource = nullptr;

  ~Call() {
    magic = 0;
    if (func) func->DecRef();
  }
};

namespace {

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  int n = v ? std::atoi(v) : 0;
  return n > 0 ? n : fallback;
}

class Pool {
 public:
  static Pool* Global() {
    // Leaked with its detached workers: no join races with static destruction at exit.
    static Pool* pool = new Pool();
    return pool;
  }

  void Push(Call* call) {
    std::unique_lock<std::mutex> lock(mu_);
    if (queued_ >= queue_limit_) {
      Throw("QueueFullError", "the async queue holds its limit of ", queue_limit_,
            " calls waiting to start (TVMAsyncConfigure / POLYFFI_ASYNC_QUEUE_LIMIT)");
    }
    if (!started_) Start();
    queue_.push_back(call);
    ++queued_;
    lock.unlock();
    cv_.notify_one();
  }

  /*! \brief A queued call was cancelled: it no longer counts against the limit. */
  void Unqueue() {
    std::lock_guard<std::mutex> lock(mu_);
    --queued_;
  }

  void Configure(int num_workers, int queue_limit) {
    if (num_workers < 0 || queue_limit < 0) {
      Throw("ValueError", "TVMAsyncConfigure: num_workers (", num_workers, ") and queue_limit (",
            queue_limit, ") must not be negative");
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (num_workers > 0 && num_workers != num_workers_) {
      if (started_) {
        Throw("RuntimeError", "TVMAsyncConfigure: the async pool already runs ", num_workers_,
              " workers; set num_workers before the first submit");
      }
      num_workers_ = num_workers;
    }
    if (queue_limit > 0) queue_limit_ = queue_limit;
  }

  void GetConfig(int* num_workers, int* queue_limit, int* queued) {
    std::lock_guard<std::mutex> lock(mu_);
    if (num_workers) *num_workers = num_workers_;
    if (queue_limit) *queue_limit = queue_limit_;
    if (queued) *queued = queued_;
  }

 private:
  Pool()
      : num_workers_(EnvInt("POLYFFI_ASYNC_THREADS",
                            std::max(1, static_cast<int>(std::thread::hardware_concurrency())))),
        queue_limit_(EnvInt("POLYFFI_ASYNC_QUEUE_LIMIT", 1024)) {}

  void Start() {  // under mu_
    for (int i = 0; i < num_workers_; ++i) std::thread([this] { WorkerLoop(); }).detach();
    started_ = true;
  }

  void WorkerLoop() {
#if defined(__linux__)
    // Named so that tools (top -H, debuggers) and the bindings (the JVM attaches pool workers
    // under this name) can tell the pool's threads apart.
    pthread_setname_np(pthread_self(), "polyffi-async");
#endif
    for (;;) {
      Call* call;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !queue_.empty(); });
        call = queue_.front();
        queue_.pop_front();
        int expected = kQueued;
        // A call cancelled while queued was already taken off the count by Unqueue.
        if (call->state.compare_exchange_strong(expected, kRunning)) --queued_;
      }
      Run(call);
    }
  }

  static void Run(Call* call) {
    TVMValue ret;
    ret.v_handle = nullptr;
    int ret_code = kTVMNullptr;
    int status;
    if (call->state.load(std::memory_order_acquire) == kCancelled) {
      SetLastError("CancelledError: the async call was cancelled before it started");
      status = kTVMAsyncCancelled;
    } else {
      status = Invoke(call, &ret, &ret_code);
      call->state.store(kDone, std::memory_order_release);
    }
    // Arguments go before the completion: once a caller sees its result, the pool holds none of
    // its objects.
    call->args.clear();
    call->args.shrink_to_fit();
    call->done(status, &ret, ret_code, call->resource);
    // The error (and any host object attached to it) does not outlive the completion.
    if (status != kTVMAsyncReturned) DropLastHostError();
    Release(call);
  }

  static int Invoke(Call* call, TVMValue* ret, int* ret_code) {
    tls_cancel_flag = &call->cancel;
    int status = kTVMAsyncReturned;
    try {
      StoredArgs a(call->args);
      RetValue rv;
      call->func->Call(a.values.data(), a.codes.data(), a.size(), &rv);
      rv.MoveToC(ret, ret_code);
    } catch (...) {
      status = SetLastErrorFromCurrentException();
    }
    tls_cancel_flag = nullptr;
    return status;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Call*> queue_;
  int queued_ = 0;  // calls in the queue still waiting to start
  int num_workers_;
  int queue_limit_;
  bool started_ = false;
};

}  // namespace

Call* Submit(void* func, TVMValue* args, int* codes, int n, TVMAsyncCallback done, void* resource,
             bool want_handle) {
  auto* f = static_cast<Object*>(func);
  if (f == nullptr) Throw("ValueError", "TVMAsyncSubmit: function handle is NULL");
  if (!f->IsInstance(FunctionObj::kTypeIndex)) {
    Throw("ValueError", "TVMAsyncSubmit: function handle is not a function (it is a ",
          TypeIndex2Key(f->type_index()), ")");
  }
  if (done == nullptr) Throw("ValueError", "TVMAsyncSubmit: completion callback is NULL");
  if (n < 0) Throw("ValueError", "TVMAsyncSubmit: num_args is negative (", n, ")");
  if (n > 0 && (args == nullptr || codes == nullptr)) {
    Throw("ValueError", "TVMAsyncSubmit: arg_values or type_codes is NULL with ", n, " arguments");
  }
  auto* call = new Call();
  try {
    call->args.resize(n);
    for (int i = 0; i < n; ++i) call->args[i].SetFromC(args[i], codes[i]);
  } catch (...) {
    delete call;
    throw;
  }
  f->IncRef();
  call->func = static_cast<FunctionObj*>(f);
  call->done = done;
  call->resource = resource;
  if (want_handle) call->refs.store(2, std::memory_order_relaxed);
  try {
    Pool::Global()->Push(call);
  } catch (...) {
    delete call;
    throw;
  }
  return want_handle ? call : nullptr;
}

int Cancel(Call* call) {
  call->cancel.store(true, std::memory_order_relaxed);
  int expected = kQueued;
  if (call->state.compare_exchange_strong(expected, kCancelled)) {
    Pool::Global()->Unqueue();
    return kTVMAsyncCancelledBeforeStart;
  }
  return expected == kRunning ? kTVMAsyncCancelRequested : kTVMAsyncFinished;
}

void Release(Call* call) {
  if (call->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete call;
}

Call* CallOf(void* handle) {
  auto* call = static_cast<Call*>(handle);
  if (call == nullptr) Throw("ValueError", "async call handle is NULL");
  if (call->magic != kCallMagic) Throw("ValueError", "not an async call handle");
  return call;
}

void Configure(int num_workers, int queue_limit) {
  Pool::Global()->Configure(num_workers, queue_limit);
}

void GetConfig(int* num_workers, int* queue_limit, int* queued) {
  Pool::Global()->GetConfig(num_workers, queue_limit, queued);
}

}  // namespace async
}  // namespace polyffi
