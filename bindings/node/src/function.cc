// PackedFunc: a callable JS function over a function handle; synchronous calls on the JS thread
// and callAsync on the libuv pool. Also the handle wrappers every other kind shares.
#include <polyffi/binding_common.h>

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

static void FinalizeRef(napi_env, void* data, void*) {
  auto* ref = static_cast<Ref*>(data);
  // Pinned refs are reachable (their callAsync holds a reference), so pins are 0 here.
  if (ref->handle != nullptr) FreeHandle(ref->handle, ref->code);
  delete ref;
}

Ref* RefOf(napi_env env, napi_value v) {
  bool tagged = false;
  if (napi_check_object_type_tag(env, v, &kHandleTag, &tagged) != napi_ok || !tagged) {
    return nullptr;
  }
  void* data = nullptr;
  if (napi_unwrap(env, v, &data) != napi_ok) return nullptr;
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

// The call itself, once the arguments are in hand (argv may be the inline array or a vector).
static POLYFFI_INLINE napi_value Invoke(napi_env env, Ref* ref, size_t argc,
                                        const napi_value* argv) {
  Instance* inst = ref->inst;
  if (POLYFFI_UNLIKELY(ref->handle == nullptr)) return UseAfterDispose(env, inst);
  ArgPack pack(inst);
  if (POLYFFI_UNLIKELY(!pack.SetAll(env, argc, argv))) return nullptr;
  // A conversion may run JS (a Map, a getter) that disposed the function meanwhile.
  if (POLYFFI_UNLIKELY(pack.used_slow_path() && ref->handle == nullptr)) {
    return UseAfterDispose(env, inst);
  }
  std::atomic<int>& depth = *inst->sync_depth;
  int d = depth.load(std::memory_order_relaxed);
  depth.store(d + 1, std::memory_order_relaxed);
  TVMValue ret;
  int code = kTVMNullptr;
  int rc =
      TVMFuncCall(ref->handle, pack.values(), pack.codes(), static_cast<int>(argc), &ret, &code);
  depth.store(d, std::memory_order_relaxed);
  if (POLYFFI_UNLIKELY(rc != 0)) return ThrowLastError(env, inst);
  // Converted before the pack lets go of its temporaries: strings are thread-local.
  napi_value out;
  if (code == kTVMArgInt && !inst->exact_numbers && ret.v_int64 >= -9007199254740991LL &&
      ret.v_int64 <= 9007199254740991LL) {
    napi_create_double(env, static_cast<double>(ret.v_int64), &out);
    return out;
  }
  if (code == kTVMNullptr) {
    napi_get_null(env, &out);
    return out;
  }
  return FromTVM(env, inst, ret, code);
}

static POLYFFI_NOINLINE napi_value InvokeMany(napi_env env, napi_callback_info info, Ref* ref,
                                              size_t argc) {
  std::vector<napi_value> argv(argc);
  napi_get_cb_info(env, info, &argc, argv.data(), nullptr, nullptr);
  return Invoke(env, ref, argc, argv.data());
}

static napi_value CallPacked(napi_env env, napi_callback_info info) {
  constexpr size_t kInline = 4;
  size_t argc = kInline;
  napi_value argv[kInline];
  void* data = nullptr;
  napi_get_cb_info(env, info, &argc, argv, nullptr, &data);
  auto* ref = static_cast<Ref*>(data);
  if (POLYFFI_UNLIKELY(argc > kInline)) return InvokeMany(env, info, ref, argc);
  return Invoke(env, ref, argc, argv);
}

napi_value MakePackedFunc(Instance* inst, void* handle) {
  napi_env env = inst->env;
  if (handle == nullptr) {
    napi_value null;
    napi_get_null(env, &null);
    return null;
  }
  auto* ref = new Ref{handle, kTVMPackedFuncHandle, inst};
  napi_value fn;
  if (!CheckStatus(
          env, napi_create_function(env, "packedFunc", NAPI_AUTO_LENGTH, CallPacked, ref, &fn))) {
    TVMFuncFree(handle);
    delete ref;
    return nullptr;
  }
  if (!CheckStatus(env, napi_wrap(env, fn, ref, FinalizeRef, nullptr, nullptr))) {
    TVMFuncFree(handle);
    delete ref;
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
// Arguments are converted (and what they lend kept alive) on the JS thread, the call runs on the
// libuv pool, and the result is converted back on the JS thread.

struct AsyncCall {
  explicit AsyncCall(Instance* i) : inst(i), pack(i, /*async=*/true) {}
  Instance* inst;
  Ref* ref = nullptr;
  napi_ref fn_ref = nullptr;
  ArgPack pack;
  napi_deferred deferred = nullptr;
  napi_async_work work = nullptr;
  void* handle = nullptr;
  int rc = 0;
  TVMValue ret;
  int code = kTVMNullptr;
  std::string text;  // error text, or a str/bytes result copied off the pool thread
};

static void ExecuteAsync(napi_env, void* data) {
  auto* call = static_cast<AsyncCall*>(data);
  call->rc = TVMFuncCall(call->handle, call->pack.values(), call->pack.codes(), call->pack.size(),
                         &call->ret, &call->code);
  if (call->rc != 0) {
    call->text = TVMGetLastError();
  } else if (call->code == kTVMStr) {
    call->text = call->ret.v_str;
  } else if (call->code == kTVMBytes) {
    auto* arr = static_cast<TVMByteArray*>(call->ret.v_handle);
    call->text.assign(arr->data, arr->size);
  }
}

static void CompleteAsync(napi_env env, napi_status status, void* data) {
  std::unique_ptr<AsyncCall> call(static_cast<AsyncCall*>(data));
  Instance* inst = call->inst;
  napi_handle_scope scope;
  napi_open_handle_scope(env, &scope);
  napi_value result = nullptr, error = nullptr;
  if (status != napi_ok) {
    error = MakeFFIError(env, inst, "RuntimeError: polyffi: callAsync was cancelled");
  } else if (call->rc != 0) {
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
  napi_delete_async_work(env, call->work);
  napi_close_handle_scope(env, scope);
}

// native.callAsync(fn, ...args) -> Promise
static napi_value CallAsync(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  napi_get_cb_info(env, info, &argc, nullptr, nullptr, nullptr);
  std::vector<napi_value> argv(argc > 0 ? argc : 1);
  napi_get_cb_info(env, info, &argc, argv.data(), nullptr, nullptr);
  Instance* inst = GetInstance(env);
  Ref* ref = argc > 0 ? RefOf(env, argv[0]) : nullptr;
  if (ref == nullptr || ref->code != kTVMPackedFuncHandle) {
    return ThrowType(env, "polyffi: callAsync needs a PackedFunc");
  }
  if (ref->handle == nullptr) {
    return ThrowFFIError(env, inst, "ValueError", "polyffi: PackedFunc used after dispose()");
  }
  auto call = std::make_unique<AsyncCall>(inst);
  if (!call->pack.SetAll(env, argc - 1, argv.data() + 1)) return nullptr;
  napi_value promise, name;
  if (!CheckStatus(env, napi_create_promise(env, &call->deferred, &promise))) return nullptr;
  napi_create_string_utf8(env, "polyffi.callAsync", NAPI_AUTO_LENGTH, &name);
  if (!CheckStatus(env, napi_create_async_work(env, nullptr, name, ExecuteAsync, CompleteAsync,
                                               call.get(), &call->work))) {
    return nullptr;
  }
  napi_create_reference(env, argv[0], 1, &call->fn_ref);
  call->ref = ref;
  call->handle = ref->handle;
  ++ref->pins;
  if (napi_queue_async_work(env, call->work) != napi_ok) {
    Unpin(ref);
    napi_delete_reference(env, call->fn_ref);
    napi_delete_async_work(env, call->work);
    return ThrowFFIError(env, inst, "RuntimeError", "polyffi: cannot queue callAsync");
  }
  call.release();
  return promise;
}

// native.dispose(x): release the handle now; later use is an error.
static napi_value Dispose(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value v;
  napi_get_cb_info(env, info, &argc, &v, nullptr, nullptr);
  Ref* ref = argc == 1 ? RefOf(env, v) : nullptr;
  if (ref == nullptr) return ThrowType(env, "polyffi: dispose() needs a polyffi handle");
  DisposeRef(ref);
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
  SetRaw(env, exports, "dispose", Dispose);
  SetRaw(env, exports, "isDisposed", IsDisposed);
  SetRaw(env, exports, "handleAddress", HandleAddress);
}

}  // namespace polyffi_node
