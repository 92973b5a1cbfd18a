// JS function -> runtime function: the trampoline (TVMPackedCFunc), its finalizer, and the
// thread-safe function that carries work from native threads to the JS thread.
//
// On the JS thread a callback runs directly. From another thread it runs on the JS thread through
// the environment's thread-safe function while the calling thread waits, unless the JS thread is
// blocked in a synchronous call (then waiting would deadlock, so it fails at once). Finalizers
// and deleters that drop the last reference on another thread are handed to the JS thread the
// same way. After the environment is torn down (worker exit) nothing touches Node-API.
#include <cstring>

#include "common.h"

namespace polyffi_node {

struct CallbackRes {
  std::shared_ptr<EnvState> state;
  Instance* inst;  // valid while state->alive
  napi_ref fn;
  napi_ref on_finalize;  // or nullptr
};

struct CallJob {
  enum Kind { kCall, kRelease } kind = kCall;
  // kCall
  CallbackRes* cb = nullptr;
  TVMValue* args = nullptr;
  int* codes = nullptr;
  int num_args = 0;
  TVMRetValueHandle ret = nullptr;
  bool done = false;
  int rc = 0;
  std::string error;
  std::condition_variable cv;
  // kRelease: references to delete on the JS thread; on_finalize is called first.
  napi_ref ref = nullptr;
  napi_ref on_finalize = nullptr;
};

static const char kEnvGone[] =
    "RuntimeError: polyffi: the JS environment of this callback has exited (worker ended)";
static const char kJsBlocked[] =
    "RuntimeError: polyffi: a JS callback was called from a native thread while its JS thread is "
    "blocked in a synchronous call; call the outer function with callAsync() so the JS thread "
    "stays free";

// Fills `error` with the pending JS exception (kept to re-throw from the outer call).
static POLYFFI_NOINLINE void TakeException(Instance* inst, std::string* error) {
  napi_env env = inst->env;
  napi_value exc = nullptr;
  napi_get_and_clear_last_exception(env, &exc);
  *error = exc != nullptr ? ExceptionText(env, exc) : "Error: unknown JS failure";
  if (exc != nullptr) StashException(inst, exc, *error);
}

// Converts a callback argument; numbers (the common case) inline.
static POLYFFI_INLINE napi_value ArgToJs(napi_env env, Instance* inst, TVMValue v, int code) {
  if (POLYFFI_LIKELY(!inst->exact_numbers)) {
    napi_value out;
    if (code == kTVMArgInt && v.v_int64 >= -9007199254740991LL && v.v_int64 <= 9007199254740991LL) {
      napi_create_double(env, static_cast<double>(v.v_int64), &out);
      return out;
    }
    if (code == kTVMArgFloat) {
      napi_create_double(env, v.v_float64, &out);
      return out;
    }
  }
  return FromCallbackArg(env, inst, v, code);
}

// Views were lent for the call only: wrappers the callback kept stop working.
static POLYFFI_NOINLINE void DetachViews(napi_env env, const napi_value* argv, const int* codes,
                                         int n) {
  for (int i = 0; i < n; ++i) {
    if (codes[i] != kTVMDLTensorHandle || argv[i] == nullptr) continue;
    if (Ref* r = RefOf(env, argv[i])) {
      r->handle = nullptr;
      r->disposed = true;
    }
  }
}

// Reports the pending JS exception as this callback's error (to *err_out or this thread).
static POLYFFI_NOINLINE int Fail(Instance* inst, std::string* err_out) {
  std::string error;
  TakeException(inst, &error);
  if (err_out != nullptr) {
    *err_out = error;
  } else {
    TVMAPISetLastError(error.c_str());
  }
  return -1;
}

// Hands the callback's result to the runtime (which copies strings and retains objects).
static inline int SetResult(Instance* inst, TVMRetValueHandle ret, napi_value result,
                            std::string* err_out) {
  napi_env env = inst->env;
  ArgPack pack(inst);
  TVMValue v;
  int code;
  if (POLYFFI_UNLIKELY(!pack.Set(env, result, &v, &code, /*for_return=*/true))) {
    return Fail(inst, err_out);
  }
  int rc = TVMCFuncSetReturn(ret, &v, &code, 1);
  if (POLYFFI_UNLIKELY(rc != 0) && err_out != nullptr) *err_out = TVMGetLastError();
  return rc;
}

// Runs the callback on its own JS thread. Errors go to *err_out when given (the caller is
// another thread), else to this thread's last error.
static int RunOnJsThread(CallbackRes* cb, TVMValue* args, int* codes, int n, TVMRetValueHandle ret,
                         std::string* err_out) {
  Instance* inst = cb->inst;
  napi_env env = inst->env;
  napi_handle_scope scope;
  napi_open_handle_scope(env, &scope);
  constexpr int kInline = 6;
  napi_value argv_inline[kInline];
  std::unique_ptr<napi_value[]> big;
  napi_value* argv = argv_inline;
  if (POLYFFI_UNLIKELY(n > kInline)) {
    big.reset(new napi_value[n]());
    argv = big.get();
  }
  bool has_view = false;
  bool ok = true;
  for (int i = 0; i < n; ++i) {
    has_view |= codes[i] == kTVMDLTensorHandle;
    argv[i] = ArgToJs(env, inst, args[i], codes[i]);
    if (POLYFFI_UNLIKELY(argv[i] == nullptr)) {
      for (int j = i + 1; j < n; ++j) argv[j] = nullptr;
      ok = false;
      break;
    }
  }
  napi_value result = nullptr;
  if (POLYFFI_LIKELY(ok)) {
    napi_value undefined, fn;
    napi_get_undefined(env, &undefined);
    napi_get_reference_value(env, cb->fn, &fn);
    ok = napi_call_function(env, undefined, fn, n, argv, &result) == napi_ok;
  }
  int rc;
  if (POLYFFI_LIKELY(ok)) {
    rc = SetResult(inst, ret, result, err_out);
  } else {
    rc = Fail(inst, err_out);
  }
  if (POLYFFI_UNLIKELY(has_view)) DetachViews(env, argv, codes, n);
  napi_close_handle_scope(env, scope);
  return rc;
}

static void QueueRelease(EnvState* st, napi_ref ref, napi_ref on_finalize) {
  // Caller holds st->mu and has checked st->alive.
  auto job = std::make_shared<CallJob>();
  job->kind = CallJob::kRelease;
  job->ref = ref;
  job->on_finalize = on_finalize;
  auto* holder = new std::shared_ptr<CallJob>(job);
  if (napi_call_threadsafe_function(st->tsfn, holder, napi_tsfn_nonblocking) != napi_ok) {
    delete holder;  // closing: the environment frees its references itself
  }
}

// The thread-safe function's JS-thread side; env is null when the queue is drained at teardown.
static void CallJs(napi_env env, napi_value, void*, void* data) {
  std::unique_ptr<std::shared_ptr<CallJob>> holder(static_cast<std::shared_ptr<CallJob>*>(data));
  CallJob& job = **holder;
  if (job.kind == CallJob::kRelease) {
    if (env == nullptr) return;
    if (job.ref != nullptr) napi_delete_reference(env, job.ref);
    if (job.on_finalize != nullptr) {
      napi_handle_scope scope;
      napi_open_handle_scope(env, &scope);
      napi_value fn, undefined, ignored;
      napi_get_reference_value(env, job.on_finalize, &fn);
      napi_get_undefined(env, &undefined);
      if (napi_call_function(env, undefined, fn, 0, nullptr, &ignored) != napi_ok) {
        napi_get_and_clear_last_exception(env, &ignored);  // a finalize hook cannot fail a call
      }
      napi_delete_reference(env, job.on_finalize);
      napi_close_handle_scope(env, scope);
    }
    return;
  }
  std::shared_ptr<EnvState> state = job.cb->state;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    if (job.done) return;  // failed by the teardown already
  }
  std::string error;
  int rc = -1;
  if (env == nullptr) {
    error = kEnvGone;
  } else {
    rc = RunOnJsThread(job.cb, job.args, job.codes, job.num_args, job.ret, &error);
  }
  std::lock_guard<std::mutex> lock(state->mu);
  job.done = true;
  job.rc = rc;
  job.error = std::move(error);
  state->pending.erase(*holder);
  job.cv.notify_all();
}

static int Trampoline(TVMValue* args, int* codes, int num_args, TVMRetValueHandle ret,
                      void* resource) {
  auto* cb = static_cast<CallbackRes*>(resource);
  EnvState* st = cb->state.get();
  if (POLYFFI_LIKELY(std::this_thread::get_id() == st->js_thread)) {
    if (POLYFFI_UNLIKELY(!st->alive)) {
      TVMAPISetLastError(kEnvGone);
      return -1;
    }
    return RunOnJsThread(cb, args, codes, num_args, ret, nullptr);
  }
  auto job = std::make_shared<CallJob>();
  job->cb = cb;
  job->args = args;
  job->codes = codes;
  job->num_args = num_args;
  job->ret = ret;
  std::unique_lock<std::mutex> lock(st->mu);
  if (!st->alive) {
    lock.unlock();
    TVMAPISetLastError(kEnvGone);
    return -1;
  }
  if (st->sync_depth.load(std::memory_order_relaxed) > 0) {
    lock.unlock();
    TVMAPISetLastError(kJsBlocked);
    return -1;
  }
  st->pending.insert(job);
  auto* holder = new std::shared_ptr<CallJob>(job);
  if (napi_call_threadsafe_function(st->tsfn, holder, napi_tsfn_nonblocking) != napi_ok) {
    delete holder;
    st->pending.erase(job);
    lock.unlock();
    TVMAPISetLastError(kEnvGone);
    return -1;
  }
  job->cv.wait(lock, [&] { return job->done; });
  lock.unlock();
  if (job->rc != 0) TVMAPISetLastError(job->error.c_str());
  return job->rc;
}

static void Finalizer(void* resource) {
  std::unique_ptr<CallbackRes> cb(static_cast<CallbackRes*>(resource));
  EnvState* st = cb->state.get();
  std::lock_guard<std::mutex> lock(st->mu);
  if (!st->alive) return;  // the environment's references went with it
  if (std::this_thread::get_id() == st->js_thread) {
    // Possibly inside a GC finalizer: deleting a reference is allowed there, calling JS is not.
    napi_delete_reference(cb->inst->env, cb->fn);
    if (cb->on_finalize != nullptr) QueueRelease(st, nullptr, cb->on_finalize);
    return;
  }
  QueueRelease(st, cb->fn, cb->on_finalize);
}

TVMFunctionHandle CallbackFromJs(napi_env env, Instance* inst, napi_value fn,
                                 napi_value on_finalize) {
  auto* cb = new CallbackRes{inst->state, inst, nullptr, nullptr};
  napi_create_reference(env, fn, 1, &cb->fn);
  if (on_finalize != nullptr) napi_create_reference(env, on_finalize, 1, &cb->on_finalize);
  TVMFunctionHandle out = nullptr;
  // On failure the finalizer has already run (and released cb).
  if (TVMFuncCreateFromCFunc(Trampoline, cb, Finalizer, &out) != 0) {
    ThrowLastError(env, inst);
    return nullptr;
  }
  return out;
}

void ReleaseRefAnywhere(const std::shared_ptr<EnvState>& state, napi_env env, napi_ref ref) {
  std::lock_guard<std::mutex> lock(state->mu);
  if (!state->alive) return;
  if (std::this_thread::get_id() == state->js_thread) {
    napi_delete_reference(env, ref);
  } else {
    QueueRelease(state.get(), ref, nullptr);
  }
}

static void Teardown(void* arg) {
  auto* inst = static_cast<Instance*>(arg);
  std::shared_ptr<EnvState> st = inst->state;
  {
    std::lock_guard<std::mutex> lock(st->mu);
    st->alive = false;
    for (const auto& job : st->pending) {
      job->done = true;
      job->rc = -1;
      job->error = kEnvGone;
      job->cv.notify_all();
    }
    st->pending.clear();
  }
  napi_release_threadsafe_function(st->tsfn, napi_tsfn_abort);
}

void SetupEnvState(napi_env env, Instance* inst) {
  inst->state = std::make_shared<EnvState>();
  inst->state->js_thread = std::this_thread::get_id();
  napi_value name;
  napi_create_string_utf8(env, "polyffi.callbacks", NAPI_AUTO_LENGTH, &name);
  napi_create_threadsafe_function(env, nullptr, nullptr, name, 0, 1, nullptr, nullptr, nullptr,
                                  CallJs, &inst->state->tsfn);
  // Waiting callbacks and finalizers need no loop of their own: callAsync keeps it alive.
  napi_unref_threadsafe_function(env, inst->state->tsfn);
  inst->sync_depth = &inst->state->sync_depth;
  napi_add_env_cleanup_hook(env, Teardown, inst);
}

}  // namespace polyffi_node
