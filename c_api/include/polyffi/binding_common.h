/*
 * Helpers the C++ bindings (Python, Node, Java natives) share, so one rule holds in all of them.
 * Header-only; exports nothing.
 *
 * Freeing a value by its type code: a call result, or a handle a binding wraps, owns a reference
 * exactly when its code is one of the four object codes (function, module, NDArray, object);
 * each goes back through its own free function. Every other code owns nothing: plain values,
 * strings and bytes (the runtime's storage, valid until the next call), borrowed DLTensor views,
 * opaque handles, and codes this version does not know. Freeing an unknown code as an object
 * would hand the runtime a pointer it never gave out.
 *
 * In C++ also (namespace polyffi::binding): the core globals the bindings call on their hot
 * paths, looked up once per process by an enum and safe from any thread; the type indices of the
 * objects they turn into native values (runtime.String, runtime.ShapeTuple); making an Array,
 * Map, String or ShapeTuple object; and reading a String or ShapeTuple object's bytes. Each
 * returns its result or a typed failure that the binding turns into its own error.
 */
#ifndef POLYFFI_BINDING_COMMON_H_
#define POLYFFI_BINDING_COMMON_H_

#include <polyffi/c_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/*! \brief Whether a value of this type code owns a reference the holder must free. */
static inline int PolyffiCodeOwnsHandle(int code) {
  return code == kTVMPackedFuncHandle || code == kTVMModuleHandle || code == kTVMNDArrayHandle ||
         code == kTVMObjectHandle;
}

/*! \brief Drop the reference handle holds if its code owns one (see above); NULL is a no-op. */
static inline void PolyffiFreeHandle(void* handle, int code) {
  if (handle == NULL) return;
  switch (code) {
    case kTVMPackedFuncHandle:
      TVMFuncFree(handle);
      break;
    case kTVMModuleHandle:
      TVMModFree(handle);
      break;
    case kTVMNDArrayHandle:
      TVMArrayFree((TVMArrayHandle)handle);
      break;
    case kTVMObjectHandle:
      TVMObjectFree(handle);
      break;
    default:
      break;
  }
}

#ifdef __cplusplus
}
#endif
#ifdef __cplusplus
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace polyffi {
namespace binding {

/*
 * The core's own global functions the bindings call on their hot paths, looked up once per
 * process (the registry is never torn down) and shared by every thread: one atomic slot each.
 */
enum class Global : int {
  kArray = 0,       /* runtime.Array(items...) -> Array object */
  kMap,             /* runtime.Map(k0, v0, k1, v1, ...) -> Map object */
  kString,          /* runtime.String(str) -> String object (the form that carries a NUL) */
  kStringBytes,     /* runtime.StringBytes(String object) -> its bytes */
  kShapeTuple,      /* runtime.ShapeTuple(dims...) -> ShapeTuple object */
  kShapeTupleBytes, /* runtime.ShapeTupleBytes(ShapeTuple object) -> its int64 dims as bytes */
  kCount
};

inline const char* GlobalName(Global which) {
  static const char* const names[static_cast<int>(Global::kCount)] = {
      "runtime.Array",       "runtime.Map",        "runtime.String",
      "runtime.StringBytes", "runtime.ShapeTuple", "runtime.ShapeTupleBytes"};
  return names[static_cast<int>(which)];
}

/*! \brief Why a shared helper failed; the binding turns each into its own error. */
enum class Failure : int {
  kNone = 0,
  kLookupFailed, /* TVMFuncGetGlobal failed: the runtime's last error says why (rc) */
  kMissing,      /* the global is not registered: "polyffi: core global function NAME is missing" */
  kCallFailed,   /* the call failed: the runtime's last error says why (rc) */
  kWrongCode,    /* the call returned a type code the helper does not take (ret_code) */
};

/*!
 * \brief The global `which`, borrowed for the life of the process. On failure returns NULL
 * and sets *failure (kLookupFailed with *rc, or kMissing).
 */
inline TVMFunctionHandle CachedGlobal(Global which, Failure* failure, int* rc) {
  static std::atomic<TVMFunctionHandle> cache[static_cast<int>(Global::kCount)];
  std::atomic<TVMFunctionHandle>& slot = cache[static_cast<int>(which)];
  TVMFunctionHandle f = slot.load(std::memory_order_acquire);
  if (f != nullptr) return f;
  *rc = TVMFuncGetGlobal(GlobalName(which), &f);
  if (*rc != 0) {
    *failure = Failure::kLookupFailed;
    return nullptr;
  }
  if (f == nullptr) {
    *failure = Failure::kMissing;
    return nullptr;
  }
  TVMFunctionHandle expected = nullptr;
  if (!slot.compare_exchange_strong(expected, f, std::memory_order_acq_rel)) {
    TVMFuncFree(f);  // another thread stored the same function first
    f = expected;
  }
  return f;
}

/*! \brief The core's object type keys the bindings turn into native values. */
enum class TypeKey : int { kString = 0, kShapeTuple, kCount };

/*! \brief The type index of `key`, looked up once per process; -1 when the runtime has none. */
inline int64_t CachedTypeIndex(TypeKey key) {
  static const char* const names[static_cast<int>(TypeKey::kCount)] = {"runtime.String",
                                                                       "runtime.ShapeTuple"};
  static std::atomic<int64_t> cache[static_cast<int>(TypeKey::kCount)] = {{-2}, {-2}};
  std::atomic<int64_t>& slot = cache[static_cast<int>(key)];
  int64_t index = slot.load(std::memory_order_relaxed);
  if (index != -2) return index;
  unsigned t = 0;
  index = TVMObjectTypeKey2Index(names[static_cast<int>(key)], &t) == 0 ? int64_t{t} : -1;
  slot.store(index, std::memory_order_relaxed);
  return index;
}

/*!
 * \brief What ObjectBytes read: data/size (the runtime's storage, valid until the next call on
 * this thread) or the failure, with rc for kLookupFailed / kCallFailed and ret_code for
 * kWrongCode.
 */
struct BytesResult {
  const char* data = nullptr;
  size_t size = 0;
  Failure failure = Failure::kNone;
  int rc = 0;
  int ret_code = kTVMNullptr;
};

/*!
 * \brief Calls `which` (runtime.StringBytes or runtime.ShapeTupleBytes) on the object obj,
 * which stays borrowed: the caller frees it. A string result (kTVMStr) counts as its bytes when
 * accept_str is set; any other code is kWrongCode and whatever reference it held is dropped.
 */
inline BytesResult ObjectBytes(Global which, void* obj, bool accept_str) {
  BytesResult out;
  TVMFunctionHandle f = CachedGlobal(which, &out.failure, &out.rc);
  if (f == nullptr) return out;
  TVMValue arg;
  arg.v_handle = obj;
  int arg_code = kTVMObjectHandle;
  TVMValue ret;
  out.rc = TVMFuncCall(f, &arg, &arg_code, 1, &ret, &out.ret_code);
  if (out.rc != 0) {
    out.failure = Failure::kCallFailed;
  } else if (out.ret_code == kTVMBytes) {
    const auto* arr = static_cast<const TVMByteArray*>(ret.v_handle);
    out.data = arr->data;
    out.size = arr->size;
  } else if (out.ret_code == kTVMStr && accept_str) {
    out.data = ret.v_str;
    out.size = std::strlen(ret.v_str);
  } else {
    PolyffiFreeHandle(ret.v_handle, out.ret_code);
    out.failure = Failure::kWrongCode;
  }
  return out;
}

/*! \brief What MakeObject made: an owned object handle, or the failure (as in BytesResult). */
struct ObjectResult {
  void* handle = nullptr;
  Failure failure = Failure::kNone;
  int rc = 0;
  int ret_code = kTVMNullptr;
};

/*!
 * \brief Calls the constructor `which` (runtime.Array, Map, String or ShapeTuple) on n C
 * arguments: the object it made, which the caller owns, or the failure. A result of any other
 * code is kWrongCode and whatever reference it held is dropped.
 */
inline ObjectResult MakeObject(Global which, TVMValue* values, int* codes, int n) {
  ObjectResult out;
  TVMFunctionHandle f = CachedGlobal(which, &out.failure, &out.rc);
  if (f == nullptr) return out;
  TVMValue ret;
  out.rc = TVMFuncCall(f, values, codes, n, &ret, &out.ret_code);
  if (out.rc != 0) {
    out.failure = Failure::kCallFailed;
  } else if (out.ret_code == kTVMObjectHandle) {
    out.handle = ret.v_handle;
  } else {
    PolyffiFreeHandle(ret.v_handle, out.ret_code);
    out.failure = Failure::kWrongCode;
  }
  return out;
}

/*! \brief The text of a runtime.String object (borrowed); see ObjectBytes. */
inline BytesResult StringObjectBytes(void* obj) {
  return ObjectBytes(Global::kStringBytes, obj, true);
}

/*! \brief The dimensions of a runtime.ShapeTuple object (borrowed), as native-endian int64s. */
inline BytesResult ShapeTupleObjectBytes(void* obj) {
  return ObjectBytes(Global::kShapeTupleBytes, obj, false);
}

/*! \brief Dimension i of a ShapeTupleObjectBytes result (the bytes need not be aligned). */
inline int64_t ShapeDim(const BytesResult& dims, size_t i) {
  int64_t d;
  std::memcpy(&d, dims.data + i * sizeof(int64_t), sizeof(d));
  return d;
}

}  // namespace binding
}  // namespace polyffi
#endif /* __cplusplus */

#endif /* POLYFFI_BINDING_COMMON_H_ */
