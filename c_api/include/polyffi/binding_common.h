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
#endif /* POLYFFI_BINDING_COMMON_H_ */
