/*
 * polyffi C backend API: what compiled model code calls. Source-compatible with the classic
 * TVM c_backend_api.h. A model library may link libpolyffi, or leave it unlinked and use the
 * function-pointer slots (__TVMFuncCall, __TVMBackendAllocWorkspace, ...) that
 * TVMModLoadFromFile fills when it loads the library.
 */
#ifndef POLYFFI_C_BACKEND_API_H_
#define POLYFFI_C_BACKEND_API_H_

#include <polyffi/c_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Backend functions --------------------------------------------------------------------- */

/*!
 * \brief Signature of a function exported by a compiled model library.
 * \param args, type_codes borrowed. \param out_ret_value, out_ret_tcode out: the result; an
 *  object result is transferred to the caller (as in classic TVM), a string is copied.
 * \return 0 on success, -1 after TVMAPISetLastError.
 */
typedef int (*TVMBackendPackedCFunc)(TVMValue* args, int* type_codes, int num_args,
                                     TVMValue* out_ret_value, int* out_ret_tcode,
                                     void* resource_handle);

/*!
 * \brief Look up a function for compiled code: first in the module mod_node (the library's
 *  __tvm_module_ctx) and its imports, then in the global registry.
 * \param mod_node borrowed module handle. \param out borrowed: the module caches it and keeps
 *  it alive as long as the module lives; do not free it.
 */
TVM_DLL int TVMBackendGetFuncFromEnv(void* mod_node, const char* func_name, TVMFunctionHandle* out);

/*!
 * \brief Register a symbol of the system library (served by the global runtime.SystemLib).
 * \param name borrowed; copied. \param ptr a TVMBackendPackedCFunc, or the address of a
 *  __tvm_module_ctx / __tvm_main__ symbol.
 */
TVM_DLL int TVMBackendRegisterSystemLibSymbol(const char* name, void* ptr);

/*!
 * \brief Allocate temporary workspace from the calling thread's pool (no malloc per call once
 *  warm). \return owned: release with TVMBackendFreeWorkspace on the same thread; NULL on error.
 */
TVM_DLL void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes,
                                       int dtype_code_hint, int dtype_bits_hint);

/*! \brief Release workspace from TVMBackendAllocWorkspace. \param ptr owned. */
TVM_DLL int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr);

/* ---- Parallel launch ----------------------------------------------------------------------- */

/*! \brief Environment of one parallel task group. */
typedef struct {
  /*! \brief runtime-owned barrier state. */
  void* sync_handle;
  /*! \brief number of tasks in the group. */
  int32_t num_task;
} TVMParallelGroupEnv;

/*! \brief One task of a parallel launch; returns 0, or -1 after TVMAPISetLastError. */
typedef int (*FTVMParallelLambda)(int task_id, TVMParallelGroupEnv* penv, void* cdata);

/*!
 * \brief Run flambda(task_id, env, cdata) for task_id in [0, n) on the runtime's thread pool
 *  (TVM_NUM_THREADS threads; default: the machine's cores) and wait for all of them.
 * \param num_task 0 for one task per pool thread. \param cdata borrowed.
 * \return 0, or -1 when any task failed (its error becomes this thread's last error).
 */
TVM_DLL int TVMBackendParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task);

/*! \brief Wait until every task of penv reached this barrier. */
TVM_DLL int TVMBackendParallelBarrier(int task_id, TVMParallelGroupEnv* penv);

/*!
 * \brief Run f(cdata) once per *handle, thread-safely; later calls return at once.
 * \param handle borrowed slot, initially NULL. \param nbytes unused (classic signature).
 */
TVM_DLL int TVMBackendRunOnce(void** handle, int (*f)(void*), void* cdata, int nbytes);

/* ---- tvm-ffi ABI libraries (TVM >= 0.20) ----------------------------------------------------- */

/*!
 * \brief Raise an error from a tvm-ffi ABI kernel (`__tvm_ffi_<name>`): libraries compiled by
 *  TVM 0.27 import this symbol without naming a library, so TVMModLoadFromFile puts libpolyffi
 *  in the global symbol scope before opening one. The kernel then returns -1 and its caller
 *  gets an error of this kind with this message (docs/abi-decisions.md).
 * \param kind e.g. "TypeError", "ValueError" (NULL: RuntimeError). \param parts nparts
 *  borrowed strings concatenated into the message; NULL entries are skipped.
 */
TVM_DLL void TVMFFIErrorSetRaisedFromCStrParts(const char* kind, const char** parts,
                                               int32_t nparts);

/*! \brief TVMFFIErrorSetRaisedFromCStrParts with a single message part. */
TVM_DLL void TVMFFIErrorSetRaisedFromCStr(const char* kind, const char* message);

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* POLYFFI_C_BACKEND_API_H_ */
