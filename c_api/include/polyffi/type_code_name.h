/*
 * The name of each type code, as error messages spell it ("expected int but got float").
 * One table for the core, the C++ layer (polyffi.hpp) and the C-level tests, so a message reads
 * the same whichever side produced it. Header-only; exports nothing.
 */
#ifndef POLYFFI_TYPE_CODE_NAME_H_
#define POLYFFI_TYPE_CODE_NAME_H_

#include <polyffi/c_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/*! \brief Name of a type code; "unknown type code" for anything else. \return static string. */
static inline const char* PolyffiTypeCodeName(int code) {
  switch (code) {
    case kTVMArgInt:
      return "int";
    case kDLUInt:
      return "uint";
    case kTVMArgFloat:
      return "float";
    case kTVMOpaqueHandle:
      return "handle";
    case kTVMNullptr:
      return "None";
    case kTVMDataType:
      return "dtype";
    case kDLDevice:
      return "Device";
    case kTVMDLTensorHandle:
      return "DLTensor*";
    case kTVMObjectHandle:
      return "Object";
    case kTVMModuleHandle:
      return "Module";
    case kTVMPackedFuncHandle:
      return "Function";
    case kTVMStr:
      return "str";
    case kTVMBytes:
      return "bytes";
    case kTVMNDArrayHandle:
      return "NDArray";
    case kTVMObjectRValueRefArg:
      return "ObjectRValueRef";
    case kTVMArgBool:
      return "bool";
    default:
      return "unknown type code";
  }
}

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* POLYFFI_TYPE_CODE_NAME_H_ */
