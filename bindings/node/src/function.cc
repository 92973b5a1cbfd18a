// PackedFunc: a callable JS function over a function handle; synchronous calls on the JS thread
// and callAsync on the core's worker pool. Also the handle wrappers every other kind shares.
#include <polyffi/binding_common.h>
#include <polyffi/c_async_api.h>

#include <cstring>

#include "common.h"

namespace polyffi_node {

const napi_type_tag kHandleTag = {0x706f6c7966666900ULL, 0x6e6f64652d726566ULL};

void FreeHandle(void* handle, int code) { PolyffiFreeHandle(handle, code); }

void DisposeRef(Ref* ref) {
  if (ref->disposed) return;
  ref->disposed = true;
  void* h = ref->handle;
  ref->handle = nullptr;
  if (ref->code == kTVMDLTensorHandle) return;
  if (ref->pins == 0) {
    FreeHandle(h, ref->code);
  } else {
    ref->pending = h;
  }
}

void Unpin(Ref* ref) {
  if (--ref->pins == 0 && ref->pending != nullptr) {
    FreeHandle(ref->pending, ref->code);
    ref->pending = nullptr;
  }
}

// ---- PackedFunc slots
// A PackedFunc is the one native callPacked bound to a number, its token: slot * 2^32 +
// generation. Its Ref lives in inst->fn_slots[slot] and is recycled (generation + 1) when the
// function is disposed or collected; a token whose generation is stale is a disposed function.
// So dispose() frees everything at once: no per-function native data outlives it, and nothing
// is left for Node's deferred finalizers (which run only when the event loop turns, so that a
// synchronous loop of convert + dispose used to grow without bound).

constexpr uint32_t kMaxFnSlots = 1u << 20;  // tokens stay below 2^52: exact as JS numbers

static Ref* TakeFnSlot(Instance* inst) {
  if (!inst->free_fn_slots.empty()) {
    Ref* ref = inst->fn_slots[inst->free_fn_slots.back()];
    inst->free_fn_slots.pop_back();
    return ref;
  }
  if (inst->fn_slots.size() >= kMaxFnSlots) return nullptr;
  auto* ref = new Ref{nullptr, kTVMPackedFuncHandle, inst};
  ref->slot = static_cast<uint32_t>(inst->fn_slots.size());
  inst->fn_slots.push_back(ref);
  return ref;
}

static void ReleaseFnSlot(Ref* ref) {
  ref->handle = nullptr;
  ref->direct = nullptr;
  ref->direct_res = nullptr;
  ref->disposed = true;
  ref->pins = 0;
  ref->pending = nullptr;
  ++ref->gen;
  ref->inst->free_fn_slots.push_back(ref->slot);
}

// Frees a Ref nothing references any more (its wrapper is gone or unwrapped).
static void DropRef(Ref* ref) {
  Instance* inst = ref->inst;
  if (ref->code == kTVMPackedFuncHandle && inst != nullptr && ref->slot < inst->fn_slots.size() &&
      inst->fn_slots[ref->slot] == ref) {
    ReleaseFnSlot(ref);
  } else {
    delete ref;
  }
}

static void FinalizeRef(napi_env, void* data, void*) {
  auto* ref = static_cast<Ref*>(data);
  // Pinned refs are reachable (their callAsync holds a reference), so pins are 0 here.
  if (ref->handle != nullptr) FreeHandle(ref->handle, ref->code);
  DropRef(ref);
}

// What a disposed wrapper (tagged, no longer wrapped) stands for: a Ref with no handle, of the
// wrapper's kind, so that every use reports "used after dispose()".
static Ref* DisposedRef(napi_env env, napi_value v) {
  static Ref kFunction{nullptr, kTVMPackedFuncHandle, nullptr, 0, true};
  static Ref kModule{nullptr, kTVMModuleHandle, nullptr, 0, true};
  static Ref kNDArray{nullptr, kTVMNDArrayHandle, nullptr, 0, true};
  static Ref kObject{nullptr, kTVMObjectHandle, nullptr, 0, true};
  napi_valuetype t = napi_undefined;
  napi_typeof(env, v, &t);
  if (t == napi_function) return &kFunction;
  Instance* inst = GetInstance(env);
  bool is = false;
  if (napi_instanceof(env, v, Get(env, inst->cls_module), &is) == napi_ok && is) return &kModule;
  if (napi_instanceof(env, v, Get(env, inst->cls_ndarray), &is) == napi_ok && is) return &kNDArray;
  return &kObject;
}

Ref* RefOf(napi_env env, napi_value v) {
  bool tagged = false;
  if (napi_check_object_type_tag(env, v, &kHandleTag, &tagged) != napi_ok || !tagged) {
    return nullptr;
  }
  void* data = nullptr;
  if (POLYFFI_UNLIKELY(napi_unwrap(env, v, &data) != napi_ok)) return DisposedRef(env, v);
  return static_cast<Ref*>(data);
}

// ---- Wrappers
// --------------------------------------------------------------------------------------

// new Handle(token, external): called by the JS classes' constructors for native wrappers only.
static napi_value HandleCtor(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], self;
  napi_get_cb_info(env, info, &argc, argv, &self, nullptr);
  Instance* inst = GetInstance(env);
  bool is_token = false;
  if (argc == 2) napi_strict_equals(env, argv[0], Get(env, inst->from_native), &is_token);
  napi_valuetype t = napi_undefined;
  if (is_token) napi_typeof(env, argv[1], &t);
  if (!is_token || t != napi_external) {
    return ThrowType(env, "polyffi: handles are made by the library (ffi.nd.empty, ...)");
  }
  void* data = nullptr;
  napi_get_value_external(env, argv[1], &data);
  auto* ref = static_cast<Ref*>(data);
  if (!CheckStatus(env, napi_wrap(env, self, ref, FinalizeRef, nullptr, nullptr))) return nullptr;
  napi_type_tag_object(env, self, &kHandleTag);
  ref->inst = inst;  // marks the Ref as taken over by the wrapper
  return self;
}

static napi_value ClassFor(napi_env env, Instance* inst, void* handle, int code) {
  if (code == kTVMModuleHandle) return Get(env, inst->cls_module);
  if (code == kTVMNDArrayHandle || code == kTVMDLTensorHandle) return Get(env, inst->cls_ndarray);
  unsigned tindex = 0;
  char* key = nullptr;
  if (TVMObjectGetTypeIndex(handle, &tindex) == 0 && TVMObjectTypeIndex2Key(tindex, &key) == 0 &&
      key != nullptr) {
    napi_value cls;
    napi_valuetype t = napi_undefined;
    if (napi_get_named_property(env, Get(env, inst->object_classes), key, &cls) == napi_ok &&
        napi_typeof(env, cls, &t) == napi_ok && t == napi_function) {
      return cls;
    }
  }
  return Get(env, inst->cls_object);
}

napi_value WrapHandle(Instance* inst, void* handle, int code) {
  napi_env env = inst->env;
  if (handle == nullptr) {
    napi_value null;
    napi_get_null(env, &null);
    return null;
  }
  auto* ref = new Ref{handle, code, nullptr};
  napi_value argv[2], out = nullptr;
  argv[0] = Get(env, inst->from_native);
  napi_create_external(env, ref, nullptr, nullptr, &argv[1]);
  napi_status status = napi_new_instance(env, ClassFor(env, inst, handle, code), 2, argv, &out);
  if (ref->inst == nullptr) {  // the constructor never took it over
    FreeHandle(handle, code);
    delete ref;
    CheckStatus(env, status == napi_ok ? napi_generic_failure : status);
    return nullptr;
  }
  if (!CheckStatus(env, status)) return nullptr;
  return out;
}

// ---- Calls
// --------------------------------------------------------------------------------------------

static POLYFFI_NOINLINE napi_value UseAfterDispose(napi_env env, Instance* inst) {
  return ThrowFFIError(env, inst, "ValueError", "polyffi: PackedFunc used after dispose()");
}

// The call through the function's entry and its result, once the arguments are in values/codes.
// Called with a live handle; the caller's pack (if any) still holds what the arguments borrow.
static POLYFFI_INLINE napi_value CallAndConvert(napi_env env, Instance* inst, Ref* ref,
                                                TVMValue* values, int* codes, int n) {
  std::atomic<int>& depth = *inst->sync_depth;
  int d = depth.load(std::memory_order_relaxed);
  depth.store(d + 1, std::memory_order_relaxed);
  TVMValue ret;
  ret.v_handle = nullptr;
  int code = kTVMNullptr;
  // The direct entry skips TVMFuncCall's checks: the handle is live (checked by the caller) and
  // the arrays are the caller's own.
  int rc = POLYFFI_LIKELY(ref->direct != nullptr)
               ? ref->direct(ref->direct_res, values, codes, n, &ret, &code)
               : TVMFuncCall(ref->handle, values, codes, n, &ret, &code);
  depth.store(d, std::memory_order_relaxed);
  if (POLYFFI_UNLIKELY(rc != 0)) return ThrowLastError(env, inst);
  // Converted before the caller lets go of its temporaries: strings are thread-local.
  napi_value out;
  if (code == kTVMArgInt && !inst->exact_numbers) {
    // A Smi for what fits 32 bits (napi_create_int32 skips the double's own Smi test).
    if (ret.v_int64 == static_cast<int32_t>(ret.v_int64)) {
      napi_create_int32(env, static_cast<int32_t>(ret.v_int64), &out);
      return out;
    }
    if (ret.v_int64 >= -9007199254740991LL && ret.v_int64 <= 9007199254740991LL) {
      napi_create_double(env, static_cast<double>(ret.v_int64), &out);
      return out;
    }
  }
  if (code == kTVMNullptr) {
    napi_get_null(env, &out);
    return out;
  }
  // The direct entry hands on the callee's own code: a dtype is made the string TVMFuncCall gives.
  return FromDirectResult(env, inst, ret, code);
}

// The general call: any arguments, converted into an ArgPack (argv may be the inline array or a
// vector). The first `done` arguments may be numbers CallPacked already converted (into values
// and codes), argument `done` then being the first that is not a number.
static POLYFFI_INLINE napi_value Invoke(napi_env env, Ref* ref, size_t argc, const napi_value* argv,
                                        size_t done = 0, const TVMValue* values = nullptr,
                                        const int* codes = nullptr) {
  Instance* inst = ref->inst;
  if (POLYFFI_UNLIKELY(ref->handle == nullptr)) return UseAfterDispose(env, inst);
  ArgPack pack(inst);
  bool set = values != nullptr ? pack.SetRest(env, argc, argv, done, values, codes)
                               : pack.SetAll(env, argc, argv);
  if (POLYFFI_UNLIKELY(!set)) return nullptr;
  // A conversion may run JS (a Map, a getter) that disposed the function meanwhile.
  if (POLYFFI_UNLIKELY(pack.used_slow_path() && ref->handle == nullptr)) {
    return UseAfterDispose(env, inst);
  }
  return CallAndConvert(env, inst, ref, pack.values(), pack.codes(), static_cast<int>(argc));
}

static POLYFFI_NOINLINE napi_value InvokeMany(napi_env env, napi_callback_info info, Ref* ref,
                                              size_t argc) {
  std::vector<napi_value> argv(argc);
  napi_get_cb_info(env, info, &argc, argv.data(), nullptr, nullptr);
  return Invoke(env, ref, argc - 1, argv.data() + 1);
}

// The common call: N arguments, all numbers (N <= 4, one copy per count so that the conversions
// are unrolled). They are converted in place, with no ArgPack (a number borrows nothing and runs
// no JS, so the handle the caller checked stays live); the first other value sends the call to
// the general path, which goes on from there.
template <size_t N>
static POLYFFI_INLINE napi_value CallNumbers(napi_env env, Instance* inst, Ref* ref,
                                             const napi_value* args) {
  TVMValue values[N > 0 ? N : 1];
  int codes[N > 0 ? N : 1];
#pragma GCC unroll 4
  for (size_t i = 0; i < N; ++i) {
    double d;
    if (POLYFFI_UNLIKELY(napi_get_value_double(env, args[i], &d) != napi_ok)) {
      return Invoke(env, ref, N, args, i, values, codes);
    }
    NumberToTVM(d, &values[i], &codes[i]);
  }
  return CallAndConvert(env, inst, ref, values, codes, static_cast<int>(N));
}

// Every PackedFunc's body: argv[0] is the bound token, the caller's arguments follow.
static napi_value CallPacked(napi_env env, napi_callback_info info) {
  constexpr size_t kInline = 5;
  size_t argc = kInline;
  napi_value argv[kInline];
  void* data = nullptr;
  napi_get_cb_info(env, info, &argc, argv, nullptr, &data);
  auto* inst = static_cast<Instance*>(data);
  // The token is read as a double (a number's own representation): half the cost of
  // napi_get_value_int64 on a value above 2^31, and exact, as tokens stay below 2^52. Only
  // MakePackedFunc binds this function (JS cannot reach it unbound), so argv[0] is a token; the
  // tests below keep a stray value from becoming an out-of-range conversion all the same.
  double token_d = -1;
  if (POLYFFI_UNLIKELY(argc == 0 || napi_get_value_double(env, argv[0], &token_d) != napi_ok ||
                       !(token_d >= 0 && token_d < 4503599627370496.0))) {
    return ThrowType(env, "polyffi: not a PackedFunc call");
  }
  // Through int64_t: a double -> uint64_t conversion costs a third comparison (values >= 2^63).
  const uint64_t token = static_cast<uint64_t>(static_cast<int64_t>(token_d));
  const uint64_t slot = token >> 32;
  Ref* ref = slot < inst->fn_slots.size() ? inst->fn_slots[slot] : nullptr;
  if (POLYFFI_UNLIKELY(ref == nullptr || ref->gen != static_cast<uint32_t>(token) ||
                       ref->handle == nullptr)) {
    return UseAfterDispose(env, inst);
  }
  if (POLYFFI_UNLIKELY(argc > kInline)) return InvokeMany(env, info, ref, argc);
  switch (argc - 1) {
    case 0:
      return CallNumbers<0>(env, inst, ref, argv + 1);
    case 1:
      return CallNumbers<1>(env, inst, ref, argv + 1);
    case 2:
      return CallNumbers<2>(env, inst, ref, argv + 1);
    case 3:
      return CallNumbers<3>(env, inst, ref, argv + 1);
    default:
      return CallNumbers<4>(env, inst, ref, argv + 1);
  }
}

napi_value MakePackedFunc(Instance* inst, void* handle) {
  napi_env env = inst->env;
  if (handle == nullptr) {
    napi_value null;
    napi_get_null(env, &null);
    return null;
  }
  if (inst->call_packed == nullptr) {
    napi_value call, bind, fn_proto, fn_ctor, global;
    napi_create_function(env, "packedFunc", NAPI_AUTO_LENGTH, CallPacked, inst, &call);
    napi_create_reference(env, call, 1, &inst->call_packed);
    napi_get_global(env, &global);
    napi_get_named_property(env, global, "Function", &fn_ctor);
    napi_get_named_property(env, fn_ctor, "prototype", &fn_proto);
    napi_get_named_property(env, fn_proto, "bind", &bind);
    napi_create_reference(env, bind, 1, &inst->bind);
  }
  Ref* ref = TakeFnSlot(inst);
  if (ref == nullptr) {
    TVMFuncFree(handle);
    return ThrowRange(env, "polyffi: too many live PackedFuncs (2^20); dispose() some");
  }
  ref->handle = handle;
  ref->disposed = false;
  if (TVMFuncGetDirect(handle, &ref->direct, &ref->direct_res) != 0) {
    ref->direct = nullptr;  // not expected for a function handle; TVMFuncCall reports it
    ref->direct_res = nullptr;
  }
  napi_value fn, bind_args[2];
  napi_get_undefined(env, &bind_args[0]);
  napi_create_int64(env, static_cast<int64_t>((uint64_t{ref->slot} << 32) | ref->gen),
                    &bind_args[1]);
  if (!CheckStatus(env, napi_call_function(env, Get(env, inst->call_packed), Get(env, inst->bind),
                                           2, bind_args, &fn))) {
    TVMFuncFree(handle);
    ReleaseFnSlot(ref);
    return nullptr;
  }
  if (!CheckStatus(env, napi_wrap(env, fn, ref, FinalizeRef, nullptr, nullptr))) {
    TVMFuncFree(handle);
    ReleaseFnSlot(ref);
    return nullptr;
  }
  napi_type_tag_object(env, fn, &kHandleTag);
  napi_value argv[2] = {fn, Get(env, inst->func_proto)}, ignored;
  napi_value global;
  napi_get_global(env, &global);
  if (!CheckStatus(env,
                   napi_call_function(env, global, Get(env, inst->set_proto), 2, argv, &ignored))) {
    return nullptr;
  }
  return fn;
}

// ---- callAsync
// ------------------------------------------------------------------------------------------
// Arguments are converted (and what they lend kept alive) on the JS thread, the call is submitted
// to the core's worker pool (TVMAsyncSubmit), and its completion, on a pool worker, hands the
// result to the JS thread through a thread-safe function of the call's own, which also keeps the
// event loop alive while the call is in flight. A signal's abort maps to TVMAsyncCancel.

// Shared by the call and an abort listener, which may outlive it; freed by whichever goes last.
struct CancelBox {
  std::mutex mu;
  TVMAsyncCallHandle handle = nullptr;
  ~CancelBox() { TVMAsyncFree(handle); }
};

// Whether the call's thread-safe function still exists: Node deletes it when its environment is
// torn down (a worker terminated) even while a pool worker still holds it, so the completion
// checks this, under the lock, before using it.
struct TsfnGuard {
  std::mutex mu;
  bool gone = false;
};

static void TsfnFinalized(napi_env, void* data, void*) {
  auto* guard = static_cast<std::shared_ptr<TsfnGuard>*>(data);
  {
    std::lock_guard<std::mutex> lock((*guard)->mu);
    (*guard)->gone = true;
  }
  delete guard;
}

struct AsyncCall {
  explicit AsyncCall(Instance* i) : inst(i), pack(i, /*async=*/true) {}
  Instance* inst;
  Ref* ref = nullptr;
  napi_ref fn_ref = nullptr;
  ArgPack pack;
  napi_deferred deferred = nullptr;
  napi_threadsafe_function tsfn = nullptr;
  std::shared_ptr<TsfnGuard> guard = std::make_shared<TsfnGuard>();
  std::shared_ptr<CancelBox> cancel;  // only with a signal
  int status = kTVMAsyncReturned;
  TVMValue ret;
  int code = kTVMNullptr;
  std::string text;  // error text, or a str/bytes result copied off the worker
};

static bool IsObjectCode(int code) {
  return code == kTVMPackedFuncHandle || code == kTVMModuleHandle || code == kTVMNDArrayHandle ||
         code == kTVMObjectHandle;
}

// On the JS thread (env set), or with env == nullptr when the environment is gone: then only
// what libpolyffi owns is released; the JS references went with the environment.
static void FinishAsync(napi_env env, napi_value, void*, void* data) {
  std::unique_ptr<AsyncCall> call(static_cast<AsyncCall*>(data));
  if (env == nullptr) {
    if (call->status == kTVMAsyncReturned && IsObjectCode(call->code)) {
      FreeHandle(call->ret.v_handle, call->code);
    }
    call.release();  // its napi references belong to the torn-down environment
    return;
  }
  Instance* inst = call->inst;
  napi_handle_scope scope;
  napi_open_handle_scope(env, &scope);
  napi_value result = nullptr, error = nullptr;
  if (call->status != kTVMAsyncReturned) {
    RejectOrThrowText(env, inst, call->text, &error);
  } else if (call->code == kTVMStr) {
    napi_create_string_utf8(env, call->text.data(), call->text.size(), &result);
  } else if (call->code == kTVMBytes) {
    napi_create_buffer_copy(env, call->text.size(), call->text.data(), nullptr, &result);
  } else {
    result = FromTVM(env, inst, call->ret, call->code);
    if (result == nullptr) napi_get_and_clear_last_exception(env, &error);
  }
  call->pack.Release();
  Unpin(call->ref);
  napi_delete_reference(env, call->fn_ref);
  if (error != nullptr) {
    napi_reject_deferred(env, call->deferred, error);
  } else {
    napi_resolve_deferred(env, call->deferred, result);
  }
  napi_close_handle_scope(env, scope);
}

// The completion, on a pool worker: copy what is thread-local, then hand over to the JS thread.
static void OnAsyncDone(int status, TVMValue* ret, int code, void* resource) {
  auto* call = static_cast<AsyncCall*>(resource);
  call->status = status;
  if (status == kTVMAsyncReturned) {
    call->ret = *ret;
    call->code = code;
    if (code == kTVMStr) {
      call->text = ret->v_str;
    } else if (code == kTVMBytes) {
      auto* arr = static_cast<TVMByteArray*>(ret->v_handle);
      call->text.assign(arr->data, arr->size);
    }
  } else {
    call->text = TVMGetLastError();
  }
  std::shared_ptr<TsfnGuard> guard = call->guard;
  std::lock_guard<std::mutex> lock(guard->mu);
  if (guard->gone) {
    FinishAsync(nullptr, nullptr, nullptr, call);  // the environment has been torn down
    return;
  }
  napi_threadsafe_function tsfn = call->tsfn;
  if (napi_call_threadsafe_function(tsfn, call, napi_tsfn_nonblocking) != napi_ok) {
    FinishAsync(nullptr, nullptr, nullptr, call);  // closing: the environment is going away
  }
  napi_release_threadsafe_function(tsfn, napi_tsfn_release);
}

// The abort listener: data is a napi_external holding the call's CancelBox.
static napi_value AbortCall(napi_env env, napi_callback_info info) {
  void* data = nullptr;
  napi_get_cb_info(env, info, nullptr, nullptr, nullptr, &data);
  auto* box = static_cast<std::shared_ptr<CancelBox>*>(data);
  std::lock_guard<std::mutex> lock((*box)->mu);
  if ((*box)->handle != nullptr) TVMAsyncCancel((*box)->handle, nullptr);
  return nullptr;
}

static void DeleteCancelBox(napi_env, void* data, void*) {
  delete static_cast<std::shared_ptr<CancelBox>*>(data);
}

// A JS function that cancels the call, for signal.addEventListener('abort', ...).
static napi_value MakeAbortListener(napi_env env, const std::shared_ptr<CancelBox>& box) {
  auto* held = new std::shared_ptr<CancelBox>(box);
  napi_value fn;
  if (napi_create_function(env, "abort", NAPI_AUTO_LENGTH, AbortCall, held, &fn) != napi_ok) {
    delete held;
    return nullptr;
  }
  napi_add_finalizer(env, fn, held, DeleteCancelBox, nullptr, nullptr);
  return fn;
}

// native.callAsync(fn, onSubmit, ...args) -> Promise. onSubmit, when a function, receives a
// function that cancels the call (the caller wires it to an AbortSignal); else undefined/null.
static napi_value CallAsync(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  napi_get_cb_info(env, info, &argc, nullptr, nullptr, nullptr);
  std::vector<napi_value> argv(argc > 1 ? argc : 2);
  napi_get_cb_info(env, info, &argc, argv.data(), nullptr, nullptr);
  Instance* inst = GetInstance(env);
  Ref* ref = argc > 0 ? RefOf(env, argv[0]) : nullptr;
  if (ref == nullptr || ref->code != kTVMPackedFuncHandle) {
    return ThrowType(env, "polyffi: callAsync needs a PackedFunc");
  }
  if (ref->handle == nullptr) {
    return ThrowFFIError(env, inst, "ValueError", "polyffi: PackedFunc used after dispose()");
  }
  napi_valuetype on_submit_type = napi_undefined;
  if (argc > 1) napi_typeof(env, argv[1], &on_submit_type);
  auto call = std::make_unique<AsyncCall>(inst);
  size_t first = argc > 1 ? 2 : argc;
  if (!call->pack.SetAll(env, argc - first, argv.data() + first)) return nullptr;
  napi_value promise, name;
  if (!CheckStatus(env, napi_create_promise(env, &call->deferred, &promise))) return nullptr;
  napi_create_string_utf8(env, "polyffi.callAsync", NAPI_AUTO_LENGTH, &name);
  auto* finalize_guard = new std::shared_ptr<TsfnGuard>(call->guard);
  if (!CheckStatus(
          env, napi_create_threadsafe_function(env, nullptr, nullptr, name, 0, 1, finalize_guard,
                                               TsfnFinalized, nullptr, FinishAsync, &call->tsfn))) {
    delete finalize_guard;
    return nullptr;
  }
  if (on_submit_type == napi_function) call->cancel = std::make_shared<CancelBox>();
  TVMAsyncCallHandle handle = nullptr;
  if (TVMAsyncSubmit(ref->handle, call->pack.values(), call->pack.codes(), call->pack.size(),
                     OnAsyncDone, call.get(), call->cancel ? &handle : nullptr) != 0) {
    // Nothing was queued: a full queue (QueueFullError) or a bad argument, as a rejection.
    napi_value error = MakeFFIError(env, inst, TVMGetLastError());
    napi_release_threadsafe_function(call->tsfn, napi_tsfn_abort);
    call->pack.Release();
    napi_reject_deferred(env, call->deferred, error);
    return promise;
  }
  napi_create_reference(env, argv[0], 1, &call->fn_ref);
  call->ref = ref;
  ++ref->pins;
  if (call->cancel) {
    {
      std::lock_guard<std::mutex> lock(call->cancel->mu);
      call->cancel->handle = handle;
    }
    napi_value abort = MakeAbortListener(env, call->cancel);
    call.release();  // owned by the completion from here on
    if (abort == nullptr) return promise;
    napi_value ignored;
    napi_call_function(env, argv[1], argv[1], 1, &abort, &ignored);
    return promise;
  }
  call.release();
  return promise;
}

// native.configureAsync(numWorkers, queueLimit) -> [numWorkers, queueLimit, queued]; 0 keeps a
// setting (TVMAsyncConfigure), so (0, 0) only reads them.
static napi_value ConfigureAsync(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  int32_t settings[2] = {0, 0};
  for (size_t i = 0; i < argc && i < 2; ++i) {
    if (napi_get_value_int32(env, argv[i], &settings[i]) != napi_ok) {
      return ThrowType(env, "polyffi: configureAsync takes two integers");
    }
  }
  Instance* inst = GetInstance(env);
  int workers = 0, limit = 0, queued = 0;
  if (TVMAsyncConfigure(settings[0], settings[1]) != 0 ||
      TVMAsyncGetConfig(&workers, &limit, &queued) != 0) {
    return ThrowLastError(env, inst);
  }
  napi_value out, v;
  napi_create_array_with_length(env, 3, &out);
  const int values[3] = {workers, limit, queued};
  for (uint32_t i = 0; i < 3; ++i) {
    napi_create_int32(env, values[i], &v);
    napi_set_element(env, out, i, v);
  }
  return out;
}

// native.dispose(x): release the handle now; later use is an error. Unless a callAsync still
// pins it (or it is a view lent to a callback), the wrapper is also unwrapped and its Ref freed
// here: the wrapper is then plain garbage, with no finalizer left for Node to run later.
static napi_value Dispose(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value v;
  napi_get_cb_info(env, info, &argc, &v, nullptr, nullptr);
  Ref* ref = argc == 1 ? RefOf(env, v) : nullptr;
  if (ref == nullptr) return ThrowType(env, "polyffi: dispose() needs a polyffi handle");
  if (ref->disposed) return nullptr;
  DisposeRef(ref);
  if (ref->pins == 0 && ref->code != kTVMDLTensorHandle &&
      napi_remove_wrap(env, v, nullptr) == napi_ok) {
    DropRef(ref);
  }
  return nullptr;
}

// native.isDisposed(x)
static napi_value IsDisposed(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value v, out;
  napi_get_cb_info(env, info, &argc, &v, nullptr, nullptr);
  Ref* ref = argc == 1 ? RefOf(env, v) : nullptr;
  napi_get_boolean(env, ref == nullptr || ref->handle == nullptr, &out);
  return out;
}

// native.handleAddress(x) -> bigint: the same object has the same address.
static napi_value HandleAddress(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value v, out;
  napi_get_cb_info(env, info, &argc, &v, nullptr, nullptr);
  Ref* ref = argc == 1 ? RefOf(env, v) : nullptr;
  if (ref == nullptr) return ThrowType(env, "polyffi: not a polyffi handle");
  if (ref->handle == nullptr) {
    return ThrowFFIError(env, GetInstance(env), "ValueError",
                         "polyffi: handle used after dispose()");
  }
  napi_create_bigint_uint64(env, reinterpret_cast<uintptr_t>(ref->handle), &out);
  return out;
}

static void SetRaw(Napi::Env env, Napi::Object exports, const char* name, napi_callback cb) {
  napi_value fn;
  napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, nullptr, &fn);
  exports.Set(name, Napi::Value(env, fn));
}

void InitFunction(Napi::Env env, Napi::Object exports) {
  napi_value handle_cls;
  napi_define_class(env, "Handle", NAPI_AUTO_LENGTH, HandleCtor, nullptr, 0, nullptr, &handle_cls);
  exports.Set("Handle", Napi::Value(env, handle_cls));
  SetRaw(env, exports, "callAsync", CallAsync);
  SetRaw(env, exports, "configureAsync", ConfigureAsync);
  SetRaw(env, exports, "dispose", Dispose);
  SetRaw(env, exports, "isDisposed", IsDisposed);
  SetRaw(env, exports, "handleAddress", HandleAddress);
}

}  // namespace polyffi_node
