// JS function -> runtime function: the trampoline (a direct function, TVMDirectCFunc, which writes
// its result straight into the caller's slot), its finalizer, and the thread-safe function that
// carries work from native threads to the JS thread.
//
// On the JS thread a callback runs directly. From another thread it runs on the JS thread through
// the environment's thread-safe function while the calling thread waits, unless the JS thread is
// blocked in a synchronous call (then waiting would deadlock, so it fails at once). Finalizers
// and deleters that drop the last reference on another thread are handed to the JS thread the
// same way. After the environment is torn down (worker exit) nothing touches Node-API.
#include <polyffi/c_direct_api.h>

#include <cstring>

#include "common.h"

namespace polyffi_node {

struct CallbackRes {
  std::shared_ptr<EnvState> state;
  Instance* inst;  // valid while state->alive
  napi_ref fn;
  napi_ref on_finalize;  // or nullptr
  // The JS function itself while the synchronous call that converted it is running (its value
  // is valid in that call's scope): saves napi_get_reference_value. Null otherwise.
  napi_value live = nullptr;
};

struct CallJob {
  enum Kind { kCall, kRelease } kind = kCall;
  // kCall
  CallbackRes* cb = nullptr;
  const TVMValue* args = nullptr;
  const int* codes = nullptr;
  int num_args = 0;
  TVMValue* ret_val = nullptr;  // the calling thread's slot
  int* ret_code = nullptr;
  bool done = false;
  int rc = 0;
  std::string error;
  std::string text;  // a str/bytes result, returned by the calling thread (its own storage)
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

// What is not a number: strings and bytes go to the return storage (of this thread, or copied
// for the calling thread when `foreign` is given), objects are handed over with a reference of
// their own (TVMCbArgToReturn), plain values are written as they are.
static POLYFFI_NOINLINE int SetResultSlow(Instance* inst, napi_value result, TVMValue* ret_val,
                                          int* ret_code, CallJob* foreign, std::string* err_out) {
  napi_env env = inst->env;
  ArgPack pack(inst);
  TVMValue v;
  int code;
  if (!pack.Set(env, result, &v, &code, /*for_return=*/true)) return Fail(inst, err_out);
  int rc = 0;
  if (code == kTVMStr || code == kTVMBytes) {
    const char* data = v.v_str;
    size_t size = 0;
    if (code == kTVMBytes) {
      auto* arr = static_cast<const TVMByteArray*>(v.v_handle);
      data = arr->data;
      size = arr->size;
    } else {
      size = std::strlen(data);
    }
    if (foreign != nullptr) {
      foreign->text.assign(data, size);
      *ret_code = code;
      return 0;
    }
    rc = TVMDirectReturnString(data, size, code == kTVMBytes, ret_val, ret_code);
  } else if (code == kTVMPackedFuncHandle || code == kTVMModuleHandle ||
             code == kTVMNDArrayHandle || code == kTVMObjectHandle) {
    // Borrowed from a JS wrapper or the pack's temporaries: the caller gets its own reference.
    if (v.v_handle != nullptr) rc = TVMCbArgToReturn(&v, &code);
    if (rc == 0) {
      *ret_val = v;
      *ret_code = code;
    }
  } else {
    *ret_val = v;
    *ret_code = code;
  }
  if (POLYFFI_UNLIKELY(rc != 0) && err_out != nullptr) *err_out = TVMGetLastError();
  return rc;
}

// Writes the callback's result into the caller's slot; a number (the common case) inline.
static POLYFFI_INLINE int SetResult(Instance* inst, napi_value result, TVMValue* ret_val,
                                    int* ret_code, CallJob* foreign, std::string* err_out) {
  double d;
  if (POLYFFI_LIKELY(napi_get_value_double(inst->env, result, &d) == napi_ok)) {
    NumberToTVM(d, ret_val, ret_code);
    return 0;
  }
  return SetResultSlow(inst, result, ret_val, ret_code, foreign, err_out);
}

// Runs the callback on its own JS thread. With `foreign` (the caller is another thread) errors
// go to *err_out and a string result to foreign->text; else to this thread's last error and
// return storage.
// The body, with room for the n JS arguments in argv.
static POLYFFI_INLINE int RunWith(CallbackRes* cb, const TVMValue* args, const int* codes, int n,
                                  TVMValue* ret_val, int* ret_code, CallJob* foreign,
                                  std::string* err_out, napi_value* argv) {
  Instance* inst = cb->inst;
  napi_env env = inst->env;
  napi_handle_scope scope;
  napi_open_handle_scope(env, &scope);
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
    napi_value undefined, fn = foreign == nullptr ? cb->live : nullptr;
    napi_get_undefined(env, &undefined);
    if (fn == nullptr) napi_get_reference_value(env, cb->fn, &fn);
    ok = napi_call_function(env, undefined, fn, n, argv, &result) == napi_ok;
  }
  int rc;
  if (POLYFFI_LIKELY(ok)) {
    rc = SetResult(inst, result, ret_val, ret_code, foreign, err_out);
  } else {
    rc = Fail(inst, err_out);
  }
  if (POLYFFI_UNLIKELY(has_view)) DetachViews(env, argv, codes, n);
  napi_close_handle_scope(env, scope);
  return rc;
}

static POLYFFI_NOINLINE int RunWithManyArgs(CallbackRes* cb, const TVMValue* args, const int* codes,
                                            int n, TVMValue* ret_val, int* ret_code,
                                            CallJob* foreign, std::string* err_out) {
  std::vector<napi_value> argv(static_cast<size_t>(n));
  return RunWith(cb, args, codes, n, ret_val, ret_code, foreign, err_out, argv.data());
}

constexpr int kInlineArgs = 6;

// A call made on the JS thread itself (six arguments: the trampoline's call becomes a jump).
static int RunOnJsThread(CallbackRes* cb, const TVMValue* args, const int* codes, int n,
                         TVMValue* ret_val, int* ret_code) {
  if (POLYFFI_UNLIKELY(n > kInlineArgs)) {
    return RunWithManyArgs(cb, args, codes, n, ret_val, ret_code, nullptr, nullptr);
  }
  napi_value argv[kInlineArgs];
  return RunWith(cb, args, codes, n, ret_val, ret_code, nullptr, nullptr, argv);
}

// A native thread's call, run on the JS thread for it: the error goes to *err_out.
static POLYFFI_NOINLINE int RunForOtherThread(CallJob* job, std::string* err_out) {
  if (job->num_args > kInlineArgs) {
    return RunWithManyArgs(job->cb, job->args, job->codes, job->num_args, job->ret_val,
                           job->ret_code, job, err_out);
  }
  napi_value argv[kInlineArgs];
  return RunWith(job->cb, job->args, job->codes, job->num_args, job->ret_val, job->ret_code, job,
                 err_out, argv);
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
    rc = RunForOtherThread(&job, &error);
  }
  std::lock_guard<std::mutex> lock(state->mu);
  job.done = true;
  job.rc = rc;
  job.error = std::move(error);
  state->pending.erase(*holder);
  job.cv.notify_all();
}

// A call from a thread other than the callback's JS thread: queued to the JS thread, waited for.
static POLYFFI_NOINLINE int CallFromOtherThread(CallbackRes* cb, const TVMValue* args,
                                                const int* codes, int num_args, TVMValue* ret_val,
                                                int* ret_code) {
  EnvState* st = cb->state.get();
  auto job = std::make_shared<CallJob>();
  job->cb = cb;
  job->args = args;
  job->codes = codes;
  job->num_args = num_args;
  job->ret_val = ret_val;
  job->ret_code = ret_code;
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
  if (job->rc != 0) {
    TVMAPISetLastError(job->error.c_str());
    return job->rc;
  }
  const int kind = *ret_code;
  if (kind == kTVMStr || kind == kTVMBytes) {
    // Copied off the JS thread; returned from this thread's own storage.
    *ret_code = kTVMNullptr;
    return TVMDirectReturnString(job->text.data(), job->text.size(), kind == kTVMBytes, ret_val,
                                 ret_code);
  }
  return 0;
}

static int Trampoline(void* resource, const TVMValue* args, const int* codes, int num_args,
                      TVMValue* ret_val, int* ret_code) {
  auto* cb = static_cast<CallbackRes*>(resource);
  EnvState* st = cb->state.get();
  if (POLYFFI_UNLIKELY(std::this_thread::get_id() != st->js_thread)) {
    return CallFromOtherThread(cb, args, codes, num_args, ret_val, ret_code);
  }
  if (POLYFFI_UNLIKELY(!st->alive)) {
    TVMAPISetLastError(kEnvGone);
    return -1;
  }
  return RunOnJsThread(cb, args, codes, num_args, ret_val, ret_code);
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
                                 napi_value on_finalize, CallbackRes** live) {
  auto* cb = new CallbackRes{inst->state, inst, nullptr, nullptr};
  napi_create_reference(env, fn, 1, &cb->fn);
  if (on_finalize != nullptr) napi_create_reference(env, on_finalize, 1, &cb->on_finalize);
  TVMFunctionHandle out = nullptr;
  // On failure the finalizer has already run (and released cb).
  if (TVMFuncCreateDirect(Trampoline, cb, Finalizer, &out) != 0) {
    ThrowLastError(env, inst);
    return nullptr;
  }
  if (live != nullptr) {
    cb->live = fn;
    *live = cb;
  }
  return out;
}

void EndLiveCallback(CallbackRes* cb) { cb->live = nullptr; }

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
