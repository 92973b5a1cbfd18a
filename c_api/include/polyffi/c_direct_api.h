/*
 * polyffi's direct call protocol: an extension of the classic TVM runtime API (not part of TVM's).
 *
 * A classic callee (TVMPackedCFunc) reports its result through TVMCFuncSetReturn into a return
 * slot the runtime owns, which the runtime then moves into the caller's TVMValue. A direct callee
 * (TVMDirectCFunc) writes its result straight into the caller's TVMValue and type code: no
 * staging slot, no call back into the runtime for a plain value. Both kinds are ordinary
 * kTVMPackedFuncHandle functions: TVMFuncCall, the registry, modules, the graph executor, the VM
 * and the async pool call either kind and see the same results and errors.
 *
 * TVMFuncGetDirect gives trusted callers (bindings, fixtures) one (func, resource) pair per
 * function handle that they call themselves, with no argument checks on the way.
 *
 * Conventions as in c_runtime_api.h: 0 on success, -1 on error (message in TVMGetLastError).
 */
#ifndef POLYFFI_C_DIRECT_API_H_
#define POLYFFI_C_DIRECT_API_H_

#include <polyffi/c_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Functions and callbacks --------------------------------------------------------------- */

/*!
 * \brief Signature of a direct function.
 * \param resource_handle the pointer given to TVMFuncCreateDirect (or by TVMFuncGetDirect).
 * \param args, type_codes borrowed arrays of num_args entries, valid for the call only.
 * \param ret_val, ret_type_code the caller's result slot, holding kTVMNullptr on entry. On
 *  success it holds a plain value (kDLInt, kDLUInt, kDLFloat, kTVMArgBool, kTVMOpaqueHandle,
 *  kTVMNullptr, kTVMDataType, kDLDevice); a kTVMDLTensorHandle view, borrowed and handed on as
 *  a classic callee's view is (valid while its producer, say the caller's argument, keeps it);
 *  a kTVMStr / kTVMBytes written by TVMDirectReturnString; or a function, module, NDArray or
 *  object handle whose one reference now belongs to the caller. A kTVMObjectRValueRefArg is not
 *  a result: the runtime refuses it with a TypeError.
 * \return 0 on success; -1 after TVMAPISetLastError (or TVMFFIErrorSetRaisedFromCStr, in
 *  c_backend_api.h); -2 when the host language already holds the error. On failure the slot
 *  must own nothing: the caller ignores it.
 */
typedef int (*TVMDirectCFunc)(void* resource_handle, const TVMValue* args, const int* type_codes,
                              int num_args, TVMValue* ret_val, int* ret_type_code);

/*!
 * \brief Wrap a direct function as a function handle.
 * \param func the function; must not be NULL.
 * \param resource_handle opaque, passed to func and to fin.
 * \param fin finalizer or NULL; runs exactly once when the last reference dies, also when this
 *  call fails (so the resource never leaks).
 * \param out owned: release with TVMFuncFree.
 */
TVM_DLL int TVMFuncCreateDirect(TVMDirectCFunc func, void* resource_handle,
                                TVMPackedCFuncFinalizer fin, TVMFunctionHandle* out);

/*!
 * \brief TVMFuncCreateDirectEx flag: the callee promises classic results. It returns 0, -1 (after
 *  TVMAPISetLastError) or -2 only, and on success writes only codes a classic call returns
 *  (never kDLUInt, kTVMDataType or kTVMObjectRValueRefArg). TVMFuncCall then hands the callee's
 *  status and slot to its caller as they are, with no check of its own after the call.
 */
#define TVM_DIRECT_CLASSIC_RESULTS 1

/*!
 * \brief TVMFuncCreateDirect with flags (0 or TVM_DIRECT_CLASSIC_RESULTS). Unknown flags are a
 *  ValueError; as for TVMFuncCreateDirect, fin runs when the call fails.
 */
TVM_DLL int TVMFuncCreateDirectEx(TVMDirectCFunc func, void* resource_handle,
                                  TVMPackedCFuncFinalizer fin, int flags, TVMFunctionHandle* out);

/*!
 * \brief The fast entry of any function handle, for trusted callers.
 *  For a direct function: its own func and resource_handle. For any other function: an adapter
 *  entry whose resource is the handle itself, which calls the function as TVMFuncCall would
 *  and writes the result as a direct function does.
 *  A call through the pair checks nothing: the caller passes valid arrays, sets *ret_type_code
 *  to kTVMNullptr and ret_val->v_handle to NULL before every call, and refuses result codes it
 *  cannot take (a direct callee's slot reaches it exactly as the callee wrote it).
 * \param f borrowed function handle; the pair is valid while the caller holds a reference to f.
 * \param func, resource_handle out: the pair. Unchanged on failure.
 * \return 0; -1 with ValueError for a NULL or non-function handle or a NULL out pointer.
 */
TVM_DLL int TVMFuncGetDirect(TVMFunctionHandle f, TVMDirectCFunc* func, void** resource_handle);

/*!
 * \brief Return a string or bytes from a direct function: copies size bytes of data into the
 *  calling thread's return storage (valid until the thread's next call into the runtime, as any
 *  classic string result) and writes kTVMStr (ret_val->v_str, NUL-terminated) or kTVMBytes
 *  (ret_val->v_handle, a TVMByteArray in that storage) into the slot.
 * \param data borrowed; may be NULL only when size is 0. May point into the current return
 *  storage (a string received from an earlier call).
 * \param is_bytes nonzero for kTVMBytes, zero for kTVMStr.
 * \return 0; -1 with the error set (NULL pointers, out of memory), the slot left unchanged.
 */
TVM_DLL int TVMDirectReturnString(const char* data, size_t size, int is_bytes, TVMValue* ret_val,
                                  int* ret_type_code);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* POLYFFI_C_DIRECT_API_H_ */
