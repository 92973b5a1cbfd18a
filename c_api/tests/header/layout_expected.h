/* The pinned ABI layout (LP64: Linux/macOS x86_64 and aarch64), one table shared by the
 * compile-time check (layout_c11.c) and the run-time test (layout_test.cc). The type codes are
 * docs/spec/abi.md section 2 (values and type codes); the struct layouts are DLPack 0.6 and the
 * classic TVM headers. A binding that hard-codes any of these numbers (ctypes, JNI, FFM, koffi,
 * bindgen output) relies on them never changing. */
#ifndef POLYFFI_C_API_TESTS_LAYOUT_EXPECTED_H_
#define POLYFFI_C_API_TESTS_LAYOUT_EXPECTED_H_

/* X(name, value): every type code of TVMArgTypeCode and the DLPack codes it builds on. */
#define POLYFFI_TYPE_CODES(X)   \
  X(kDLInt, 0)                  \
  X(kDLUInt, 1)                 \
  X(kDLFloat, 2)                \
  X(kDLBfloat, 4)               \
  X(kDLCPU, 1)                  \
  X(kTVMArgInt, 0)              \
  X(kTVMArgFloat, 2)            \
  X(kTVMOpaqueHandle, 3)        \
  X(kTVMNullptr, 4)             \
  X(kTVMDataType, 5)            \
  X(kDLDevice, 6)               \
  X(kTVMDLTensorHandle, 7)      \
  X(kTVMObjectHandle, 8)        \
  X(kTVMModuleHandle, 9)        \
  X(kTVMPackedFuncHandle, 10)   \
  X(kTVMStr, 11)                \
  X(kTVMBytes, 12)              \
  X(kTVMNDArrayHandle, 13)      \
  X(kTVMObjectRValueRefArg, 14) \
  X(kTVMArgBool, 15)            \
  X(kTVMExtBegin, 16)

/* S(type, size): sizeof of every public struct. */
#define POLYFFI_STRUCT_SIZES(S) \
  S(TVMValue, 8)                \
  S(TVMByteArray, 16)           \
  S(TVMParallelGroupEnv, 16)    \
  S(DLDataType, 4)              \
  S(DLDevice, 8)                \
  S(DLTensor, 48)               \
  S(DLManagedTensor, 64)

/* O(type, member, offset): offsetof of every member a binding reads or writes. */
#define POLYFFI_STRUCT_OFFSETS(O)        \
  O(TVMValue, v_int64, 0)                \
  O(TVMValue, v_float64, 0)              \
  O(TVMValue, v_handle, 0)               \
  O(TVMValue, v_str, 0)                  \
  O(TVMValue, v_type, 0)                 \
  O(TVMValue, v_device, 0)               \
  O(TVMByteArray, data, 0)               \
  O(TVMByteArray, size, 8)               \
  O(TVMParallelGroupEnv, sync_handle, 0) \
  O(TVMParallelGroupEnv, num_task, 8)    \
  O(DLDataType, code, 0)                 \
  O(DLDataType, bits, 1)                 \
  O(DLDataType, lanes, 2)                \
  O(DLDevice, device_type, 0)            \
  O(DLDevice, device_id, 4)              \
  O(DLTensor, data, 0)                   \
  O(DLTensor, device, 8)                 \
  O(DLTensor, ndim, 16)                  \
  O(DLTensor, dtype, 20)                 \
  O(DLTensor, shape, 24)                 \
  O(DLTensor, strides, 32)               \
  O(DLTensor, byte_offset, 40)           \
  O(DLManagedTensor, dl_tensor, 0)       \
  O(DLManagedTensor, manager_ctx, 48)    \
  O(DLManagedTensor, deleter, 56)

/* polyffi/dlpack_compat.h: the DLPack >= 1.0 definitions, as the DLPack specification lays
 * them out (numpy >= 2 and torch hand these across). */
#define POLYFFI_COMPAT_CODES(X)       \
  X(kDLBool, 6)                       \
  X(DLPACK_FLAG_BITMASK_READ_ONLY, 1) \
  X(DLPACK_FLAG_BITMASK_IS_COPIED, 2)

#define POLYFFI_COMPAT_SIZES(S) \
  S(DLPackVersion, 8)           \
  S(DLManagedTensorVersioned, 80)

#define POLYFFI_COMPAT_OFFSETS(O)             \
  O(DLPackVersion, major, 0)                  \
  O(DLPackVersion, minor, 4)                  \
  O(DLManagedTensorVersioned, version, 0)     \
  O(DLManagedTensorVersioned, manager_ctx, 8) \
  O(DLManagedTensorVersioned, deleter, 16)    \
  O(DLManagedTensorVersioned, flags, 24)      \
  O(DLManagedTensorVersioned, dl_tensor, 32)

#endif /* POLYFFI_C_API_TESTS_LAYOUT_EXPECTED_H_ */
