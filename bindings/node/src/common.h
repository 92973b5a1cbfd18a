// Shared declarations of the polyffi Node.js addon (polyffi.node).
// The addon reaches libpolyffi only through the C ABI in c_runtime_api.h. The hot paths (calls,
// callbacks, value conversion) use Node-API directly; the rest uses node-addon-api.
#ifndef POLYFFI_NODE_COMMON_H_
#define POLYFFI_NODE_COMMON_H_

#include <dlpack/dlpack.h>
#include <napi.h>
#include <polyffi/binding_common.h>
#include <polyffi/c_direct_api.h>
#include <polyffi/c_runtime_api.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#if defined(__GNUC__)
#define POLYFFI_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define POLYFFI_LIKELY(x) __builtin_expect(!!(x), 1)
#define POLYFFI_NOINLINE __attribute__((noinline, cold))
#define POLYFFI_INLINE inline __attribute__((always_inline))
#else
#define POLYFFI_NOINLINE
#define POLYFFI_INLINE inline
#define POLYFFI_UNLIKELY(x) (x)
#define POLYFFI_LIKELY(x) (x)
#endif

namespace polyffi_node {

using polyffi::binding::Global;  // the core globals of polyffi/binding_common.h

struct Instance;

// ---- Handles (function.cc) --------------------------------------------------------------------
// Every JS object that owns a libpolyffi handle (PackedFunc, Module, NDArray, Array, Map, Object)
// is type-tagged with kHandleTag and wraps one Ref. `code` says how the handle travels and which
// *Free releases it. A pinned Ref (used by a callAsync in flight) is freed when the last pin goes.
struct Ref {
  void* handle;  // owned, except for kTVMDLTensorHandle views lent to a callback
  int code;      // kTVMPackedFuncHandle, kTVMModuleHandle, kTVMNDArrayHandle, kTVMObjectHandle,
                 // kTVMDLTensorHandle (a borrowed view, never freed)
  Instance* inst;
  int pins = 0;
  bool disposed = false;
  void* pending = nullptr;  // disposed while pinned: freed by the last Unpin
  // PackedFuncs only: the Ref's slot in Instance::fn_slots and its generation (see function.cc).
  uint32_t slot = 0;
  uint32_t gen = 0;
  // PackedFuncs only: TVMFuncGetDirect's entry, called in place of TVMFuncCall (valid while
  // handle is; nullptr: call through TVMFuncCall).
  TVMDirectCFunc direct = nullptr;
  void* direct_res = nullptr;
};

extern const napi_type_tag kHandleTag;
void FreeHandle(void* handle, int code);
void DisposeRef(Ref* ref);  // idempotent; frees now or when the last pin goes
void Unpin(Ref* ref);
// The Ref of a handle-carrying object, or nullptr when `v` is not one (no exception).
Ref* RefOf(napi_env env, napi_value v);
// Wraps an owned handle in the JS object of its kind; frees the handle on failure.
napi_value WrapHandle(Instance* inst, void* handle, int code);
napi_value MakePackedFunc(Instance* inst, void* handle);

// ---- Per-environment state (addon.cc, callback.cc)
// ----------------------------------------------- What callbacks and deleters need to reach an
// environment from any thread. It outlives the environment (shared_ptr): after teardown `alive` is
// false and nothing touches Node-API.
struct CallJob;
struct EnvState {
  std::mutex mu;
  bool alive = true;
  napi_threadsafe_function tsfn = nullptr;
  std::thread::id js_thread;
  // Depth of synchronous calls into the runtime on the JS thread (only that thread writes).
  std::atomic<int> sync_depth{0};
  std::set<std::shared_ptr<CallJob>> pending;  // foreign-thread callbacks waiting for the JS thread
};

struct Instance {
  napi_env env = nullptr;
  std::shared_ptr<EnvState> state;
  napi_ref func_proto = nullptr;   // PackedFunc.prototype
  napi_ref set_proto = nullptr;    // Object.setPrototypeOf
  napi_ref from_native = nullptr;  // token passed to class constructors for native wrappers
  napi_ref cls_module = nullptr;   // Module, NDArray, Object classes (JS subclasses of Handle)
  napi_ref cls_ndarray = nullptr;
  napi_ref cls_object = nullptr;
  napi_ref object_classes = nullptr;  // { typeKey: class } for Object subclasses (Array, Map)
  napi_ref ffi_error = nullptr;       // FFIError class
  napi_ref device_cls = nullptr;
  napi_ref dtype_cls = nullptr;
  napi_ref float_cls = nullptr;  // ffi.Float box (ffi.float(x))
  napi_ref int_cls = nullptr;    // ffi.Int box (ffi.int(x))
  napi_ref shape_cls = nullptr;  // ffi.Shape (an Array subclass) <-> runtime.ShapeTuple
  napi_ref buffer_cls = nullptr;
  napi_ref map_cls = nullptr;              // the global Map
  std::atomic<int>* sync_depth = nullptr;  // &state->sync_depth, one load on the call path
  bool exact_numbers = false;              // numbers come out as ffi.Int / ffi.Float boxes
  // A JS exception thrown by a callback, re-thrown by the outer call that reports its text.
  napi_ref stash = nullptr;
  std::string stash_text;
  // PackedFuncs (function.cc): each is callPacked bound to a (slot, generation) token, and its
  // Ref lives in fn_slots[slot]; dispose() recycles the slot at once (generation + 1), so that
  // convert + dispose leaves no native finalizer for Node to run later.
  napi_ref call_packed = nullptr;  // the one native function every PackedFunc is bound from
  napi_ref bind = nullptr;         // Function.prototype.bind
  std::vector<Ref*> fn_slots;
  std::vector<uint32_t> free_fn_slots;
};

Instance* GetInstance(napi_env env);
napi_value Get(napi_env env, napi_ref ref);

// ---- Errors (errors.cc) -----------------------------------------------------------------------
// Throws the calling thread's last runtime error as an FFIError (or the stashed JS exception the
// error came from). Returns nullptr for the caller to return.
napi_value ThrowLastError(napi_env env, Instance* inst);
// Same for an error text captured on another thread.
void RejectOrThrowText(napi_env env, Instance* inst, const std::string& text,
                       napi_value* out_error);
napi_value MakeFFIError(napi_env env, Instance* inst, const std::string& text);
napi_value ThrowFFIError(napi_env env, Instance* inst, const char* kind, const std::string& msg);
napi_value ThrowType(napi_env env, const std::string& msg);
napi_value ThrowRange(napi_env env, const std::string& msg);
// "Kind: message" of a JS exception value, for TVMAPISetLastError.
std::string ExceptionText(napi_env env, napi_value exc);
// Keep `exc` to re-throw it from the outer call that fails with `text`.
void StashException(Instance* inst, napi_value exc, const std::string& text);
bool CheckStatus(napi_env env, napi_status status);  // false: a JS exception is pending

// ---- Values (value.cc) ------------------------------------------------------------------------
// Arguments of one call: values, codes and whatever they borrow (strings, byte arrays, tensors,
// temporary handles), released together. For callAsync (`async_` set) JS objects whose memory
// is lent are also referenced, and handles pinned, until Release().
class ArgPack {
 public:
  explicit ArgPack(Instance* inst, bool async = false) : inst_(inst), async_(async) {}
  ~ArgPack() {
    if (POLYFFI_UNLIKELY(extra_ != nullptr)) Release();
  }
  ArgPack(const ArgPack&) = delete;
  ArgPack& operator=(const ArgPack&) = delete;

  // Converts argv into the pack; false with a JS exception pending.
  POLYFFI_INLINE bool SetAll(napi_env env, size_t argc, const napi_value* argv);
  // SetAll for a call whose first `done` arguments are numbers already converted (into values
  // and codes) and whose argument `done` was found not to be a number (argc <= kInline).
  POLYFFI_INLINE bool SetRest(napi_env env, size_t argc, const napi_value* argv, size_t done,
                              const TVMValue* values, const int* codes);
  // One value; `for_return` forbids borrowed views (a callback's result outlives its frame).
  POLYFFI_INLINE bool Set(napi_env env, napi_value v, TVMValue* out, int* code,
                          bool for_return = false);
  void Release();

  TVMValue* values() { return values_; }
  int* codes() { return codes_; }
  int size() const { return n_; }
  // Whether a conversion went beyond plain numbers (and so may have run JS).
  bool used_slow_path() const { return slow_; }

 private:
  struct Temp {
    void* ptr;
    int kind;  // a type code (freed with FreeHandle), kTempRef, kTempPin
  };
  static constexpr int kTempRef = -1;
  static constexpr int kTempPin = -2;
  static constexpr int kTempLive = -3;  // a callback using its JS function's value (sync only)
  static constexpr int kInline = 8;
  // What only some calls need, allocated on first use so that scalar calls allocate nothing.
  struct Extra {
    std::vector<TVMValue> big_values;
    std::vector<int> big_codes;
    std::vector<Temp> temps;
    std::vector<std::unique_ptr<char[]>> blocks;
  };
  Extra& extra() {
    if (extra_ == nullptr) extra_.reset(new Extra());
    return *extra_;
  }
  bool SetSlow(napi_env env, napi_value v, TVMValue* out, int* code, bool for_return);
  char* Alloc(size_t n);
  // 1: set; 0: failed with a JS exception pending; -1: v is not a string.
  int SetString(napi_env env, napi_value v, TVMValue* out, int* code);
  bool SetObject(napi_env env, napi_value v, TVMValue* out, int* code, bool for_return);
  bool SetTypedArray(napi_env env, napi_value v, TVMValue* out, int* code, bool for_return);
  bool SetArray(napi_env env, napi_value v, TVMValue* out, int* code);
  bool SetShape(napi_env env, napi_value v, TVMValue* out, int* code);
  bool SetMapEntries(napi_env env, napi_value entries_array, TVMValue* out, int* code);
  bool SetPlainObject(napi_env env, napi_value v, TVMValue* out, int* code);
  // The object the constructor `which` makes of these values, kept as a temp of this pack.
  bool MakeObject(napi_env env, Global which, TVMValue* values, int* codes, int n, TVMValue* out,
                  int* code);
  void AddTemp(void* ptr, int kind) { extra().temps.push_back(Temp{ptr, kind}); }
  void KeepAlive(napi_env env, napi_value v);

  Instance* inst_;
  bool async_;
  bool slow_ = false;
  int n_ = 0;
  TVMValue* values_ = inline_values_;
  int* codes_ = inline_codes_;
  std::unique_ptr<Extra> extra_;
  size_t small_used_ = 0;
  TVMValue inline_values_[kInline];
  int inline_codes_[kInline];
  // Bump storage for strings, byte arrays and tensors; blocks never move once handed out.
  char small_[256];
};

constexpr double kMaxSafeInteger = 9007199254740991.0;  // 2^53 - 1

// A JS number as a value: a safe integer is an int (-0 stays a float). One range test
// (|d| <= 2^53 - 1, false for NaN) and one round trip.
POLYFFI_INLINE void NumberToTVM(double d, TVMValue* out, int* code) {
  if (POLYFFI_LIKELY(std::fabs(d) <= kMaxSafeInteger)) {
    int64_t i = static_cast<int64_t>(d);
    if (POLYFFI_LIKELY(static_cast<double>(i) == d) && (i != 0 || !std::signbit(d))) {
      out->v_int64 = i;
      *code = kTVMArgInt;
      return;
    }
  }
  out->v_float64 = d;
  *code = kTVMArgFloat;
}

// Numbers (the common case) without napi_typeof.
POLYFFI_INLINE bool ArgPack::Set(napi_env env, napi_value v, TVMValue* out, int* code,
                                 bool for_return) {
  double d;
  if (POLYFFI_LIKELY(napi_get_value_double(env, v, &d) == napi_ok)) {
    NumberToTVM(d, out, code);
    return true;
  }
  slow_ = true;
  return SetSlow(env, v, out, code, for_return);
}

POLYFFI_INLINE bool ArgPack::SetAll(napi_env env, size_t argc, const napi_value* argv) {
  n_ = static_cast<int>(argc);
  if (POLYFFI_UNLIKELY(argc > kInline)) {
    Extra& e = extra();
    e.big_values.resize(argc);
    e.big_codes.resize(argc);
    values_ = e.big_values.data();
    codes_ = e.big_codes.data();
  }
  // Locals, not the members: the napi calls in Set would make the compiler reload them per
  // argument.
  TVMValue* values = values_;
  int* codes = codes_;
  for (size_t i = 0; i < argc; ++i) {
    if (POLYFFI_UNLIKELY(!Set(env, argv[i], &values[i], &codes[i]))) return false;
  }
  return true;
}

POLYFFI_INLINE bool ArgPack::SetRest(napi_env env, size_t argc, const napi_value* argv, size_t done,
                                     const TVMValue* values, const int* codes) {
  n_ = static_cast<int>(argc);
  for (size_t i = 0; i < done; ++i) {
    values_[i] = values[i];
    codes_[i] = codes[i];
  }
  slow_ = true;
  if (!SetSlow(env, argv[done], &values_[done], &codes_[done], false)) return false;
  for (size_t i = done + 1; i < argc; ++i) {
    if (!Set(env, argv[i], &values_[i], &codes_[i])) return false;
  }
  return true;
}

// Converts a result the caller owns (handles are taken over). nullptr with an exception pending.
napi_value FromTVM(napi_env env, Instance* inst, TVMValue v, int code);
// A direct callee's result that a classic call would have converted (cold): a kTVMDataType
// becomes its dtype string, as TVMFuncCall returns it; any other code goes to FromTVM.
napi_value FromDirectResult(napi_env env, Instance* inst, TVMValue v, int code);
// Converts a callback argument (borrowed: objects are retained first).
napi_value FromCallbackArg(napi_env env, Instance* inst, TVMValue v, int code);

// ---- Callbacks (callback.cc) -----------------------------------------------------------------
// JS function -> owned function handle. nullptr with an exception pending. With `live`, `fn`
// itself is used for calls until EndLiveCallback(*live): only while fn's value stays valid (the
// synchronous call converting it), and before the handle may be freed.
struct CallbackRes;
TVMFunctionHandle CallbackFromJs(napi_env env, Instance* inst, napi_value fn,
                                 napi_value on_finalize = nullptr, CallbackRes** live = nullptr);
void EndLiveCallback(CallbackRes* cb);
// Deletes `ref` on the JS thread of `state`, now or later; dropped when the env is gone.
void ReleaseRefAnywhere(const std::shared_ptr<EnvState>& state, napi_env env, napi_ref ref);
void SetupEnvState(napi_env env, Instance* inst);

// ---- Module exports
// -------------------------------------------------------------------------------
void InitFunction(Napi::Env env, Napi::Object exports);
void InitRegistry(Napi::Env env, Napi::Object exports);
void InitNDArray(Napi::Env env, Napi::Object exports);
// The dtype of a TypedArray's elements (false for a kind with no DLPack dtype).
bool DTypeOfTypedArray(napi_typedarray_type t, DLDataType* out);
void InitLibrary(Napi::Env env, Napi::Object exports);

// Type-code name for messages ("int", "float", "NDArray", ...).
const char* CodeName(int code);

}  // namespace polyffi_node

#endif  // POLYFFI_NODE_COMMON_H_
