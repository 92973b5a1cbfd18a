/*
 * polyffi C runtime API.
 *
 * Source-compatible with the classic TVM runtime API (c_runtime_api.h, TVM <= 0.19): code
 * written against those declarations compiles against this header and runs unchanged.
 * This header, c_backend_api.h and polyffi's own extension c_async_api.h are the whole public
 * surface of libpolyffi.
 *
 * Conventions used in every comment below:
 *   borrowed     the callee reads the pointer during the call only; the caller keeps it.
 *   owned        the caller receives a reference and must release it with the named function.
 *   thread-local storage owned by the runtime, valid until the next API call on the same
 *                thread: copy it at once.
 * Every int-returning function returns 0 on success, -1 on error (message in TVMGetLastError)
 * and -2 when a host callback reported that the host language already has a pending error.
 * On failure, out-parameters are left untouched.
 */
#ifndef POLYFFI_C_RUNTIME_API_H_
#define POLYFFI_C_RUNTIME_API_H_

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version ------------------------------------------------------------------------------- */

/*! \brief polyffi's own version; bindings compare the major number at load. */
#define POLYFFI_VERSION_MAJOR 0
#define POLYFFI_VERSION_MINOR 1
#define POLYFFI_VERSION_PATCH 0
#define POLYFFI_VERSION "0.1.0"
/*! \brief The classic TVM API version this header is compatible with. */
#define TVM_VERSION "0.19.0"

#ifndef TVM_DLL
#if defined(_WIN32)
#define TVM_DLL __declspec(dllimport)
#else
#define TVM_DLL __attribute__((visibility("default")))
#endif
#endif

/*! \brief Index type of shapes. */
typedef int64_t tvm_index_t;

/*!
 * \brief Runtime version of the loaded libpolyffi.
 * \param major, minor, patch out: version numbers; any may be NULL.
 * \return 0 always.
 */
TVM_DLL int TVMAPIGetVersion(int* major, int* minor, int* patch);

/*!
 * \brief Digest of the C ABI these headers declare: SHA-256 (hex) of the declarations of
 *  c_runtime_api.h, c_backend_api.h and c_async_api.h without comments or version macros, plus
 *  the size, alignment and field offsets of every public struct. A test of the build
 *  (c_api/tests/abi_digest) recomputes it, so it changes whenever a declaration or a layout does.
 */
#define POLYFFI_ABI_DIGEST "bc8542610ad3cb3d32b7d697d4fb5ce17b66c35f2bb1bf3de876d6edc715c580"

/*!
 * \brief The ABI digest the loaded libpolyffi was built with. Bindings compare it with the
 *  POLYFFI_ABI_DIGEST they were compiled against, at load, and refuse a library whose digest
 *  differs (the version number alone does not catch a struct that grew).
 * \param out receives a static NUL-terminated string (valid for the life of the library).
 * \return 0, or -1 when out is NULL.
 */
TVM_DLL int TVMAPIGetAbiDigest(const char** out);

/* ---- Errors -------------------------------------------------------------------------------- */

/*!
 * \brief Set the calling thread's last error. A callback reports failure with
 *  TVMAPISetLastError("Kind: message") and then returns -1.
 * \param msg borrowed, NUL-terminated; copied. NULL sets an empty message.
 */
TVM_DLL void TVMAPISetLastError(const char* msg);

/*!
 * \brief The calling thread's last error message. First line "Kind: message"; a traceback may
 *  follow after a newline.
 * \return thread-local; never NULL.
 */
TVM_DLL const char* TVMGetLastError(void);

/*!
 * \brief Make a host-language exception object the calling thread's last error (TVM's
 *  host-exception protocol). A callback calls it and returns -1; the object then crosses every
 *  C frame up to the outer call, which returns -1 with the same object attached
 *  (TVMGetLastPythonError returns it). The runtime holds a reference taken with the Py_IncRef
 *  hook of TVMBackendRegisterEnvCAPI and released with Py_DecRef (both under the
 *  PyGILState_Ensure/Release hooks, on whatever thread drops it); without those hooks the object
 *  is held borrowed and the host must keep it alive until it is dropped.
 *  The error's text (TVMGetLastError) is "TVMError: a host-language exception was raised ...".
 *  Any layer that re-sets exactly that text (TVMAPISetLastError(TVMGetLastError())) keeps the
 *  object attached; any other error on the thread releases it. A thread that exits while still
 *  holding one does not release it (its host may be finalised by then): drop it first.
 * \param python_error borrowed host object (a PyObject*); NULL attaches none.
 */
TVM_DLL void TVMAPISetLastPythonError(void* python_error);

/*!
 * \brief The host object attached to the calling thread's last error, or NULL when the last
 *  error carries none. \return borrowed: valid until the error is dropped or replaced.
 */
TVM_DLL void* TVMGetLastPythonError(void);

/*!
 * \brief Release the host object attached to the last error (through the Py_DecRef hook) and
 *  clear the last error; a no-op when the last error carries no host object.
 */
TVM_DLL void TVMDropLastPythonError(void);

/*!
 * \brief The C++ backtrace of the last error. polyffi records none: always NULL (TVM returns
 *  NULL too for errors set as text).
 */
TVM_DLL const char* TVMGetLastBacktrace(void);

/*!
 * \brief C++ callers only: throw the calling thread's last error as a C++ exception (a
 *  std::exception whose what() is the whole "Kind: message" text; any host object stays
 *  attached to the thread's last error). Called from C, the exception cannot be caught and the
 *  process terminates, as with TVM.
 */
TVM_DLL void TVMThrowLastError(void);

/* ---- Values and type codes ----------------------------------------------------------------- */

/*! \brief Type code of a TVMValue. */
typedef enum {
  kTVMArgInt = kDLInt,
  kTVMArgFloat = kDLFloat,
  kTVMOpaqueHandle = 3U,
  kTVMNullptr = 4U,
  kTVMDataType = 5U,
  kDLDevice = 6U,
  kTVMDLTensorHandle = 7U,
  kTVMObjectHandle = 8U,
  kTVMModuleHandle = 9U,
  kTVMPackedFuncHandle = 10U,
  kTVMStr = 11U,
  kTVMBytes = 12U,
  kTVMNDArrayHandle = 13U,
  kTVMObjectRValueRefArg = 14U,
  kTVMArgBool = 15U,
  /* Extension codes. */
  kTVMExtBegin = 16U,
  kTVMNNVMFirst = 16U,
  kTVMNNVMLast = 20U,
  kTVMExtReserveEnd = 64U,
  kTVMExtEnd = 128U
} TVMArgTypeCode;

/*! \brief Device types beyond DLPack's, kept for source compatibility. */
typedef enum { kDLAOCL = 5, kDLSDAccel = 6, kOpenGL = 11, kDLMicroDev = 13 } TVMDeviceExtType;

/*! \brief Handle to an array: a DLTensor whose owner is an NDArray object. */
typedef DLTensor* TVMArrayHandle;

/*! \brief One packed value; its meaning is given by a separate type code. */
typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
  const char* v_str;
  DLDataType v_type;
  DLDevice v_device;
} TVMValue;

/*! \brief A length-carrying byte string (kTVMBytes); may contain NUL bytes. */
typedef struct {
  const char* data;
  size_t size;
} TVMByteArray;

typedef void* TVMModuleHandle;
typedef void* TVMFunctionHandle;
typedef void* TVMRetValueHandle;
typedef void* TVMStreamHandle;
typedef void* TVMObjectHandle;

/* ---- Functions and callbacks --------------------------------------------------------------- */

/*!
 * \brief Call a packed function.
 * \param func borrowed function handle.
 * \param arg_values, type_codes borrowed arrays of num_args entries (NULL allowed when 0).
 * \param ret_val, ret_type_code out: the result. Objects, modules, functions and arrays are
 *  owned by the caller; kTVMStr / kTVMBytes results (and dtypes, returned as kTVMStr) are
 *  thread-local; kTVMNullptr when the function returned nothing.
 */
TVM_DLL int TVMFuncCall(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes, int num_args,
                        TVMValue* ret_val, int* ret_type_code);

/*! \brief Release a function handle. \param func owned; NULL is a no-op. */
TVM_DLL int TVMFuncFree(TVMFunctionHandle func);

/*!
 * \brief Signature of a host callback. args and type_codes are borrowed for the duration of
 *  the call (TVMCbArgToReturn turns one into an owned reference). Return 0 on success, -1 after
 *  TVMAPISetLastError, or -2 when the host language already has a pending error.
 */
typedef int (*TVMPackedCFunc)(TVMValue* args, int* type_codes, int num_args, TVMRetValueHandle ret,
                              void* resource_handle);

/*! \brief Releases resource_handle; runs exactly once, on whatever thread drops the last ref. */
typedef void (*TVMPackedCFuncFinalizer)(void* resource_handle);

/*! \brief Classic extension hook type, kept for source compatibility. */
typedef int (*TVMExtensionFuncDeclarer)(TVMFunctionHandle register_func_handle);

/*!
 * \brief Wrap a C callback as a function.
 * \param func callback; must not be NULL.
 * \param resource_handle opaque, passed to func and to fin.
 * \param fin finalizer or NULL; runs exactly once when the last reference dies, also when this
 *  call fails (so the resource never leaks).
 * \param out owned: release with TVMFuncFree.
 */
TVM_DLL int TVMFuncCreateFromCFunc(TVMPackedCFunc func, void* resource_handle,
                                   TVMPackedCFuncFinalizer fin, TVMFunctionHandle* out);

/*!
 * \brief Set the return value from inside a TVMPackedCFunc.
 * \param ret the handle the callback received.
 * \param value, type_code borrowed; copied (strings and bytes copied, objects retained).
 *  A kTVMObjectRValueRefArg value is moved out of its slot.
 * \param num_ret must be 1.
 */
TVM_DLL int TVMCFuncSetReturn(TVMRetValueHandle ret, TVMValue* value, int* type_code, int num_ret);

/*!
 * \brief Turn a borrowed callback argument into an owned reference, in place. Objects
 *  (object, module, function, ndarray handles) are retained, or moved out of a
 *  kTVMObjectRValueRefArg slot; the value then has the object's own type code. Other values
 *  (numbers, strings, bytes, views) are left as they are: strings and bytes stay borrowed.
 */
TVM_DLL int TVMCbArgToReturn(TVMValue* value, int* code);

/* ---- Registry ------------------------------------------------------------------------------ */

/*!
 * \brief Register a global function.
 * \param name borrowed; copied. \param f borrowed: the registry takes its own reference.
 * \param override nonzero to replace an existing function; otherwise an existing name fails
 *  with ValueError.
 */
TVM_DLL int TVMFuncRegisterGlobal(const char* name, TVMFunctionHandle f, int override);

/*!
 * \brief Look up a global function.
 * \param out owned, release with TVMFuncFree; set to NULL (and 0 returned) when missing.
 */
TVM_DLL int TVMFuncGetGlobal(const char* name, TVMFunctionHandle* out);

/*!
 * \brief List global function names.
 * \param out_size out: count. \param out_array out: thread-local array of thread-local strings.
 */
TVM_DLL int TVMFuncListGlobalNames(int* out_size, const char*** out_array);

/*! \brief Remove a global function; removing an absent name returns 0. */
TVM_DLL int TVMFuncRemoveGlobal(const char* name);

/* ---- Modules ------------------------------------------------------------------------------- */

/*!
 * \brief Load a module from a file.
 * \param file_name borrowed path. \param format "" or NULL to take the suffix; "so", "dll" and
 *  "dylib" load a shared library. \param out owned: release with TVMModFree.
 */
TVM_DLL int TVMModLoadFromFile(const char* file_name, const char* format, TVMModuleHandle* out);

/*! \brief Make dep an import of mod; mod takes its own reference to dep. Both borrowed. */
TVM_DLL int TVMModImport(TVMModuleHandle mod, TVMModuleHandle dep);

/*!
 * \brief Get a function from a module.
 * \param query_imports nonzero to search imported modules too.
 * \param out owned (keeps the module alive), release with TVMFuncFree; NULL when missing.
 */
TVM_DLL int TVMModGetFunction(TVMModuleHandle mod, const char* func_name, int query_imports,
                              TVMFunctionHandle* out);

/*! \brief Release a module handle. \param mod owned; NULL is a no-op. */
TVM_DLL int TVMModFree(TVMModuleHandle mod);

/* ---- Arrays -------------------------------------------------------------------------------- */

/*!
 * \brief Allocate a contiguous array (CPU: 64-byte aligned data).
 * \param shape borrowed, ndim entries. \param out owned: release with TVMArrayFree.
 */
TVM_DLL int TVMArrayAlloc(const tvm_index_t* shape, int ndim, int dtype_code, int dtype_bits,
                          int dtype_lanes, int device_type, int device_id, TVMArrayHandle* out);

/*! \brief Release an array handle. \param handle owned; NULL is a no-op. */
TVM_DLL int TVMArrayFree(TVMArrayHandle handle);

/*! \brief Copy nbytes from data (borrowed) into the array; nbytes must equal its size. */
TVM_DLL int TVMArrayCopyFromBytes(TVMArrayHandle handle, void* data, size_t nbytes);

/*! \brief Copy the array into data (borrowed); nbytes must equal its size. */
TVM_DLL int TVMArrayCopyToBytes(TVMArrayHandle handle, void* data, size_t nbytes);

/*!
 * \brief Copy between arrays of equal shape, dtype and size. Both borrowed. The source may be
 *  strided (its elements are gathered in row-major order); the destination must be compact.
 */
TVM_DLL int TVMArrayCopyFromTo(TVMArrayHandle from, TVMArrayHandle to, TVMStreamHandle stream);

/*!
 * \brief Wrap a DLPack tensor without copying.
 * \param from transferred: on success its deleter runs exactly once, when the array dies; on
 *  failure the caller keeps it. \param out owned: release with TVMArrayFree.
 */
TVM_DLL int TVMArrayFromDLPack(DLManagedTensor* from, TVMArrayHandle* out);

/*!
 * \brief Export an array as DLPack without copying.
 * \param from borrowed. \param out owned: call its deleter (TVMDLManagedTensorCallDeleter)
 *  once; it keeps the array alive until then.
 */
TVM_DLL int TVMArrayToDLPack(TVMArrayHandle from, DLManagedTensor** out);

/*! \brief Call dltensor->deleter if set. \param dltensor transferred; NULL is a no-op. */
TVM_DLL void TVMDLManagedTensorCallDeleter(DLManagedTensor* dltensor);

/*!
 * \brief Type index of the array object behind a handle (that of "runtime.NDArray").
 * \param handle borrowed, from this runtime (TVMArrayAlloc, a kTVMNDArrayHandle value).
 */
TVM_DLL int TVMArrayGetTypeIndex(TVMArrayHandle handle, unsigned* out_tindex);

/*! \brief Set the current stream of a device; a no-op on CPU. */
TVM_DLL int TVMSetStream(int device_type, int device_id, TVMStreamHandle handle);

/*! \brief Wait for a stream; a no-op on CPU. */
TVM_DLL int TVMSynchronize(int device_type, int device_id, TVMStreamHandle stream);

/*!
 * \brief Create a stream. The CPU has none: *out is NULL and 0 is returned (kDLCPU and
 *  kDLCUDAHost). Other devices fail with ValueError (this runtime has the CPU only).
 */
TVM_DLL int TVMStreamCreate(int device_type, int device_id, TVMStreamHandle* out);

/*! \brief Free a stream from TVMStreamCreate. On the CPU only NULL is a stream. */
TVM_DLL int TVMStreamFree(int device_type, int device_id, TVMStreamHandle stream);

/*!
 * \brief Make stream dst wait for stream src. On the CPU (NULL streams, synchronous work) a
 *  no-op; a non-NULL stream fails with ValueError.
 */
TVM_DLL int TVMStreamStreamSynchronize(int device_type, int device_id, TVMStreamHandle src,
                                       TVMStreamHandle dst);

/* ---- Device memory ------------------------------------------------------------------------- */

/*!
 * \brief Allocate nbytes of device memory (CPU: kDLCPU, kDLCUDAHost).
 * \param alignment a power of two; the result is aligned to it and to at least 64 bytes.
 * \param type_hint unused on the CPU. \param out_data owned: release with
 *  TVMDeviceFreeDataSpace. 0 bytes gives a valid, distinct pointer.
 */
TVM_DLL int TVMDeviceAllocDataSpace(DLDevice dev, size_t nbytes, size_t alignment,
                                    DLDataType type_hint, void** out_data);

/*!
 * \brief Allocate device memory for a compact array of this shape and dtype, aligned as TVM
 *  aligns arrays (64 bytes, or the element size when larger).
 * \param shape borrowed, ndim entries. \param mem_scope NULL or "global" (other scopes fail with
 *  ValueError on the CPU). \param out_data owned: release with TVMDeviceFreeDataSpace.
 */
TVM_DLL int TVMDeviceAllocDataSpaceWithScope(DLDevice dev, int ndim, const int64_t* shape,
                                             DLDataType dtype, const char* mem_scope,
                                             void** out_data);

/*!
 * \brief Release memory from TVMDeviceAllocDataSpace(WithScope). NULL is a no-op; a pointer
 *  this runtime did not allocate (or already freed) fails with ValueError and is not touched.
 */
TVM_DLL int TVMDeviceFreeDataSpace(DLDevice dev, void* ptr);

/*!
 * \brief Copy the bytes of one compact tensor into another, as TVM does: both must hold the
 *  same number of bytes (shapes and dtypes may differ) and be on the CPU. Both borrowed.
 * \param stream NULL on the CPU.
 */
TVM_DLL int TVMDeviceCopyDataFromTo(DLTensor* from, DLTensor* to, TVMStreamHandle stream);

/* ---- Objects ------------------------------------------------------------------------------- */

/*! \brief Type index of an object (borrowed). */
TVM_DLL int TVMObjectGetTypeIndex(TVMObjectHandle obj, unsigned* out_tindex);

/*! \brief Type index registered for type_key; a KeyError when unknown. */
TVM_DLL int TVMObjectTypeKey2Index(const char* type_key, unsigned* out_tindex);

/*! \brief Type key of a type index. \param out_type_key out: thread-local string. */
TVM_DLL int TVMObjectTypeIndex2Key(unsigned tindex, char** out_type_key);

/*! \brief Add a reference to obj (borrowed); NULL is a no-op. */
TVM_DLL int TVMObjectRetain(TVMObjectHandle obj);

/*! \brief Release a reference to obj (owned); NULL is a no-op. */
TVM_DLL int TVMObjectFree(TVMObjectHandle obj);

/*! \brief Whether child_type_index is parent_type_index or derives from it. */
TVM_DLL int TVMObjectDerivedFrom(uint32_t child_type_index, uint32_t parent_type_index,
                                 int* is_derived);

/*!
 * \brief Release a byte array. polyffi hands out no owned byte arrays: the thread-local one
 *  returned by TVMFuncCall and NULL are accepted and left alone; any other pointer fails with
 *  ValueError and is not touched.
 */
TVM_DLL int TVMByteArrayFree(TVMByteArray* arr);

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* POLYFFI_C_RUNTIME_API_H_ */
