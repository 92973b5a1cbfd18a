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

/* ---- Host environment ---------------------------------------------------------------------- */

/*!
 * \brief Register a function of the host environment's C API, by the name TVM's frontend uses:
 *  "Py_IncRef" and "Py_DecRef" (void (*)(void*)), "PyGILState_Ensure" (int (*)(void)),
 *  "PyGILState_Release" (void (*)(int)), "PyErr_CheckSignals" (int (*)(void)). The first four
 *  hold and release host objects attached to errors (TVMAPISetLastPythonError). The signal check
 *  is called, with the host's lock held, by long runtime loops (a graph executor's run, every
 *  10 ms of it): when it returns nonzero the loop stops and the call returns -2 with the last
 *  error "KeyboardInterrupt: ..." (the host's own exception is pending).
 * \param ptr the function; NULL unregisters it. An unknown name fails with ValueError.
 */
TVM_DLL int TVMBackendRegisterEnvCAPI(const char* name, void* ptr);

/* ---- AnyList: register files of compiled VM code ------------------------------------------- */

/*
 * An anylist is an array of return-value cells, the layout of TVM's TVMRetValue: a TVMValue
 * followed by an int type code (16 bytes each). Each cell owns what it holds (an object
 * reference, or a string kept by the runtime); a fresh cell has type code kTVMNullptr; release
 * a cell with TVMBackendAnyListResetItem. Indices are not checked against the list's length,
 * which the runtime does not know (a negative index fails with IndexError).
 */

/*!
 * \brief Pass anylist[index] as argument arg_offset of a packed call, borrowed (strings as
 *  kTVMStr pointing into the cell; bytes are not supported, as in TVM: TypeError).
 */
TVM_DLL int TVMBackendAnyListSetPackedArg(void* anylist, int index, TVMValue* args, int* type_codes,
                                          int arg_offset);

/*! \brief Release anylist[index] and set it to kTVMNullptr. */
TVM_DLL int TVMBackendAnyListResetItem(void* anylist, int index);

/*!
 * \brief Move the result of a packed call (args[ret_offset], as TVMFuncCall returned it) into
 *  anylist[index]: an object reference is taken over, strings and bytes are copied.
 */
TVM_DLL int TVMBackendAnyListMoveFromPackedReturn(void* anylist, int index, TVMValue* args,
                                                  int* type_codes, int ret_offset);

/* ---- Platform functions of TVM's C runtime (tvm/runtime/crt/platform.h, logging.h) ---------- */

/*! \brief An error code of TVM's C runtime (tvm_crt_error_t in TVM's crt/error_codes.h). */
typedef int32_t tvm_crt_error_t;

/*!
 * \brief Write a formatted line to stderr ("[HH:MM:SS] TVMLogf: message").
 * \param format borrowed printf format.
 */
TVM_DLL void TVMLogf(const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/*!
 * \brief Abandon the current operation after a fatal error of C runtime code. As TVM's
 *  libtvm_runtime (which raises an InternalError rather than aborting), it throws a C++ exception
 *  "InternalError: TVMPlatformAbort: error code 0x..." that the runtime's exception barrier turns
 *  into a -1 return of the enclosing API call (TVMFuncCall of the kernel that aborted). It never
 *  returns; with no barrier on the stack the process terminates.
 */
#if defined(__cplusplus)
[[noreturn]] TVM_DLL void TVMPlatformAbort(tvm_crt_error_t code);
#else
TVM_DLL _Noreturn void TVMPlatformAbort(tvm_crt_error_t code);
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* POLYFFI_C_BACKEND_API_H_ */
