// The extern "C" shell: every exported function, each inside one exception barrier.
#include <polyffi/c_backend_api.h>
#include <polyffi/c_direct_api.h>
#include <polyffi/c_runtime_api.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "api_guard.h"
#include "polyffi/container.h"
#include "polyffi/error.h"
#include "polyffi/function.h"
#include "polyffi/module.h"
#include "polyffi/ndarray.h"
#include "polyffi/registry.h"
#include "polyffi/thread_pool.h"
#include "polyffi/tvm_ffi_abi.h"

namespace polyffi {
TVMByteArray* ThreadLocalReturnBytes();
}  // namespace polyffi

using namespace polyffi;  // NOLINT(build/namespaces): this file is the boundary of the core

namespace {

template <typename T>
T* NotNull(T* p, const char* what) {
  if (p == nullptr) Throw("ValueError", what, " is NULL");
  return p;
}

const char* NotNullStr(const char* s, const char* what) { return NotNull(s, what); }

/*! \brief Check a handle is an object of the given type (a wrong handle type is an error). */
template <typename T>
T* HandleAs(void* handle, const char* what) {
  auto* obj = static_cast<Object*>(NotNull(handle, what));
  if (!obj->IsInstance(T::kTypeIndex)) {
    Throw("ValueError", what, " is not a ", TypeIndex2Key(T::kTypeIndex), " (it is a ",
          TypeIndex2Key(obj->type_index()), ")");
  }
  return static_cast<T*>(obj);
}

NDArrayObj* ArrayOf(TVMArrayHandle h, const char* what) {
  return NDArrayObj::FromHandle(NotNull(h, what));
}

struct NamesStore {
  std::vector<std::string> names;
  std::vector<const char*> ptrs;
  std::string type_key;
};
NamesStore& Names() {
  thread_local NamesStore store;
  return store;
}

}  // namespace

// ---- Version ----

int TVMAPIGetVersion(int* major, int* minor, int* patch) {
  if (major) *major = POLYFFI_VERSION_MAJOR;
  if (minor) *minor = POLYFFI_VERSION_MINOR;
  if (patch) *patch = POLYFFI_VERSION_PATCH;
  return 0;
}

// ---- Errors ----

void TVMAPISetLastError(const char* msg) { SetLastError(msg ? msg : ""); }

const char* TVMGetLastError(void) { return GetLastError().c_str(); }

void TVMFFIErrorSetRaisedFromCStrParts(const char* kind, const char** parts, int32_t nparts) {
  try {
    std::string message;
    for (int32_t i = 0; parts != nullptr && i < nparts; ++i) {
      if (parts[i] != nullptr) message += parts[i];
    }
    SetRaisedError(kind, message);
  } catch (...) {  // out of memory building the message: keep what can be kept
    try {
      SetRaisedError("RuntimeError", "out of memory raising an error");
    } catch (...) {
    }
  }
}

void TVMFFIErrorSetRaisedFromCStr(const char* kind, const char* message) {
  TVMFFIErrorSetRaisedFromCStrParts(kind, &message, 1);
}

// ---- Functions ----

namespace {

/*!
 * \brief Says what is wrong with a TVMFuncCall's arguments. Kept out of line (cold) so the hot
 *  path is a handful of compares and no error-message setup.
 */
[[gnu::noinline, gnu::cold]] int BadCall(TVMFunctionHandle func, TVMValue* arg_values,
                                         int* type_codes, int num_args, TVMValue* ret_val,
                                         int* ret_type_code) {
  API_BEGIN();
  HandleAs<FunctionObj>(func, "function handle");
  if (num_args < 0) Throw("ValueError", "num_args is negative (", num_args, ")");
  if (num_args > 0 && (arg_values == nullptr || type_codes == nullptr)) {
    Throw("ValueError", "arg_values or type_codes is NULL with ", num_args, " arguments");
  }
  NotNull(ret_val, "ret_val");
  NotNull(ret_type_code, "ret_type_code");
  Throw("InternalError", "TVMFuncCall: argument check disagrees with BadCall");
  API_END();
}

/*! \brief Any function through the direct protocol: TVMFuncGetDirect's entry for non-direct kinds.
 */
int ClassicAsDirect(void* resource, const TVMValue* args, const int* type_codes, int num_args,
                    TVMValue* ret_val, int* ret_type_code) {
  return static_cast<const FunctionObj*>(resource)->CallC(
      const_cast<TVMValue*>(args), const_cast<int*>(type_codes), num_args, ret_val, ret_type_code);
}

}  // namespace

int TVMFuncCall(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes, int num_args,
                TVMValue* ret_val, int* ret_type_code) {
  auto* f = static_cast<FunctionObj*>(func);
  if (__builtin_expect(f == nullptr || ret_val == nullptr || ret_type_code == nullptr ||
                           num_args < 0 ||
                           (num_args > 0 && (arg_values == nullptr || type_codes == nullptr)) ||
                           f->type_index() != TypeIndex::kFunction,
                       0)) {
    return BadCall(func, arg_values, type_codes, num_args, ret_val, ret_type_code);
  }
  // One jump into the kind's own entry: a direct callee gets the caller's slot, the others a
  // RetValue moved into it.
  return f->CallC(arg_values, type_codes, num_args, ret_val, ret_type_code);
}

int TVMFuncFree(TVMFunctionHandle func) {
  API_BEGIN();
  if (func) HandleAs<FunctionObj>(func, "function handle")->DecRef();
  API_END();
}

int TVMFuncCreateFromCFunc(TVMPackedCFunc func, void* resource_handle, TVMPackedCFuncFinalizer fin,
                           TVMFunctionHandle* out) {
  // The function object owns the resource from the first line: on any failure its
  // destructor (or this guard) runs the finalizer, so the resource never leaks.
  if (func == nullptr || out == nullptr) {
    if (fin) fin(resource_handle);
    SetLastError(func == nullptr ? "ValueError: TVMFuncCreateFromCFunc: func is NULL"
                                 : "ValueError: TVMFuncCreateFromCFunc: out is NULL");
    return -1;
  }
  API_BEGIN();
  *out = MakeObject<CFunction>(func, resource_handle, fin).release();
  API_END();
}

int TVMFuncCreateDirect(TVMDirectCFunc func, void* resource_handle, TVMPackedCFuncFinalizer fin,
                        TVMFunctionHandle* out) {
  return TVMFuncCreateDirectEx(func, resource_handle, fin, 0, out);
}

int TVMFuncCreateDirectEx(TVMDirectCFunc func, void* resource_handle, TVMPackedCFuncFinalizer fin,
                          int flags, TVMFunctionHandle* out) {
  if (func == nullptr || out == nullptr || (flags & ~TVM_DIRECT_CLASSIC_RESULTS) != 0) {
    if (fin) fin(resource_handle);
    SetLastError(func == nullptr  ? "ValueError: TVMFuncCreateDirect: func is NULL"
                 : out == nullptr ? "ValueError: TVMFuncCreateDirect: out is NULL"
                                  : "ValueError: TVMFuncCreateDirectEx: unknown flags");
    return -1;
  }
  try {
    *out = MakeObject<DirectFunction>(func, resource_handle, fin,
                                      (flags & TVM_DIRECT_CLASSIC_RESULTS) != 0)
               .release();
  } catch (...) {
    // The object was never built (allocation failed), so its destructor will not finalize.
    if (fin) fin(resource_handle);
    return SetLastErrorFromCurrentException();
  }
  return 0;
}

int TVMFuncGetDirect(TVMFunctionHandle f, TVMDirectCFunc* func, void** resource_handle) {
  API_BEGIN();
  auto* fn = HandleAs<FunctionObj>(f, "function handle");
  NotNull(func, "func");
  NotNull(resource_handle, "resource_handle");
  if (fn->invoker() == &DirectFunction::Invoke) {
    auto* d = static_cast<DirectFunction*>(fn);
    *func = d->func();
    *resource_handle = d->resource();
  } else {
    *func = &ClassicAsDirect;
    *resource_handle = fn;
  }
  API_END();
}

int TVMDirectReturnString(const char* data, size_t size, int is_bytes, TVMValue* ret_val,
                          int* ret_type_code) {
  API_BEGIN();
  NotNull(ret_val, "ret_val");
  NotNull(ret_type_code, "ret_type_code");
  if (data == nullptr && size != 0) Throw("ValueError", "TVMDirectReturnString: data is NULL");
  ReturnStringToC(data == nullptr ? "" : data, size, is_bytes != 0, ret_val, ret_type_code);
  API_END();
}

namespace {

[[gnu::noinline, gnu::cold]] int SetReturnChecked(TVMRetValueHandle ret, TVMValue* value,
                                                  int* type_code, int num_ret) {
  API_BEGIN();
  NotNull(ret, "ret");
  NotNull(value, "value");
  NotNull(type_code, "type_code");
  if (num_ret != 1) Throw("ValueError", "TVMCFuncSetReturn: num_ret must be 1, got ", num_ret);
  // Worded as every binding words a callback result it cannot pass ("callback returned an
  // unsupported ..."), so the same mistake reads the same from C.
  if (*type_code < 0 || *type_code > kTVMArgBool) {
    Throw("TypeError", "callback returned an unsupported value: unknown type code ", *type_code);
  }
  static_cast<RetValue*>(ret)->SetFromC(*value, *type_code);
  API_END();
}

}  // namespace

int TVMCFuncSetReturn(TVMRetValueHandle ret, TVMValue* value, int* type_code, int num_ret) {
  // Plain values into a slot that owns nothing (the usual case: a callee sets its result once)
  // cannot fail and need no call: a leaf without the exception barrier. Everything else,
  // including replacing an owned value, takes the checked path.
  auto* rv = static_cast<RetValue*>(ret);
  if (__builtin_expect(rv != nullptr && value != nullptr && type_code != nullptr && num_ret == 1 &&
                           RetValue::IsPlainCode(*type_code) && !rv->owns_value(),
                       1)) {
    rv->SetPlainUnowned(*value, *type_code);
    return 0;
  }
  return SetReturnChecked(ret, value, type_code, num_ret);
}

int TVMCbArgToReturn(TVMValue* value, int* code) {
  API_BEGIN();
  NotNull(value, "value");
  NotNull(code, "code");
  if (*code == kTVMObjectRValueRefArg || IsObjectCode(*code)) {
    RetValue rv;
    rv.SetFromC(*value, *code);
    rv.MoveToC(value, code);
  } else if (*code > kTVMArgBool || *code < 0) {
    Throw("TypeError", "unknown type code ", *code);
  }
  API_END();
}

// ---- Registry ----

int TVMFuncRegisterGlobal(const char* name, TVMFunctionHandle f, int override) {
  API_BEGIN();
  NotNullStr(name, "name");
  auto* fn = HandleAs<FunctionObj>(f, "function handle");
  Registry::Global()->Register(name, ObjectPtr<FunctionObj>::Borrow(fn), override != 0);
  API_END();
}

int TVMFuncGetGlobal(const char* name, TVMFunctionHandle* out) {
  API_BEGIN();
  NotNullStr(name, "name");
  NotNull(out, "out");
  *out = Registry::Global()->Get(name).release();
  API_END();
}

int TVMFuncListGlobalNames(int* out_size, const char*** out_array) {
  API_BEGIN();
  NotNull(out_size, "out_size");
  NotNull(out_array, "out_array");
  NamesStore& s = Names();
  s.names = Registry::Global()->ListNames();
  s.ptrs.clear();
  for (const auto& n : s.names) s.ptrs.push_back(n.c_str());
  *out_size = static_cast<int>(s.ptrs.size());
  *out_array = s.ptrs.data();
  API_END();
}

int TVMFuncRemoveGlobal(const char* name) {
  API_BEGIN();
  Registry::Global()->Remove(NotNullStr(name, "name"));
  API_END();
}

// ---- Modules ----

int TVMModLoadFromFile(const char* file_name, const char* format, TVMModuleHandle* out) {
  API_BEGIN();
  NotNullStr(file_name, "file_name");
  NotNull(out, "out");
  *out = LoadModuleFromFile(file_name, format ? format : "").release();
  API_END();
}

int TVMModImport(TVMModuleHandle mod, TVMModuleHandle dep) {
  API_BEGIN();
  auto* m = HandleAs<ModuleObj>(mod, "module handle");
  auto* d = HandleAs<ModuleObj>(dep, "dependency module handle");
  m->Import(ObjectPtr<ModuleObj>::Borrow(d));
  API_END();
}

int TVMModGetFunction(TVMModuleHandle mod, const char* func_name, int query_imports,
                      TVMFunctionHandle* out) {
  API_BEGIN();
  auto* m = HandleAs<ModuleObj>(mod, "module handle");
  NotNullStr(func_name, "func_name");
  NotNull(out, "out");
  *out = m->GetFunction(func_name, query_imports != 0).release();
  API_END();
}

int TVMModFree(TVMModuleHandle mod) {
  API_BEGIN();
  if (mod) HandleAs<ModuleObj>(mod, "module handle")->DecRef();
  API_END();
}

// ---- Arrays ----

int TVMArrayAlloc(const tvm_index_t* shape, int ndim, int dtype_code, int dtype_bits,
                  int dtype_lanes, int device_type, int device_id, TVMArrayHandle* out) {
  API_BEGIN();
  NotNull(out, "out");
  if (ndim < 0) Throw("ValueError", "ndim is negative (", ndim, ")");
  if (ndim > 0) NotNull(shape, "shape");
  if (dtype_code < 0 || dtype_code > 255 || dtype_bits <= 0 || dtype_bits > 255 ||
      dtype_lanes <= 0 || dtype_lanes > 65535) {
    Throw("ValueError", "invalid dtype (code ", dtype_code, ", bits ", dtype_bits, ", lanes ",
          dtype_lanes, ")");
  }
  DLDataType dtype{static_cast<uint8_t>(dtype_code), static_cast<uint8_t>(dtype_bits),
                   static_cast<uint16_t>(dtype_lanes)};
  DLDevice dev{kDLCPU, device_id};
  std::memcpy(&dev.device_type, &device_type, sizeof(int32_t));  // any int: Empty() checks it
  std::vector<int64_t> dims(shape, shape + ndim);
  *out = NDArrayObj::Empty(dims, dtype, dev).release()->handle();
  API_END();
}

int TVMArrayFree(TVMArrayHandle handle) {
  API_BEGIN();
  if (handle) NDArrayObj::FromHandle(handle)->DecRef();
  API_END();
}

int TVMArrayCopyFromBytes(TVMArrayHandle handle, void* data, size_t nbytes) {
  API_BEGIN();
  DLTensor& t = ArrayOf(handle, "array handle")->tensor;
  size_t size = CompactBytes(t);
  if (nbytes != size)
    Throw("ValueError", "TVMArrayCopyFromBytes: expected ", size, " bytes but got ", nbytes);
  if (size) std::memcpy(static_cast<char*>(t.data) + t.byte_offset, NotNull(data, "data"), size);
  API_END();
}

int TVMArrayCopyToBytes(TVMArrayHandle handle, void* data, size_t nbytes) {
  API_BEGIN();
  DLTensor& t = ArrayOf(handle, "array handle")->tensor;
  size_t size = CompactBytes(t);
  if (nbytes != size)
    Throw("ValueError", "TVMArrayCopyToBytes: expected ", size, " bytes but got ", nbytes);
  if (size) std::memcpy(NotNull(data, "data"), static_cast<char*>(t.data) + t.byte_offset, size);
  API_END();
}

int TVMArrayCopyFromTo(TVMArrayHandle from, TVMArrayHandle to, TVMStreamHandle) {
  API_BEGIN();
  // Plain DLTensors are accepted on both sides: the graph executor copies into views. A strided
  // source is gathered (TVM's frontends make it contiguous first: numpy.ascontiguousarray).
  DLTensor* src = NotNull(from, "from");
  DLTensor* dst = NotNull(to, "to");
  const bool src_compact = IsCompact(*src);
  size_t n = src_compact ? CompactBytes(*src) : CheckedBytes(src->shape, src->ndim, src->dtype);
  size_t m = CompactBytes(*dst);
  if (n != m || src->ndim != dst->ndim ||
      std::memcmp(&src->dtype, &dst->dtype, sizeof(DLDataType)) != 0) {
    Throw("ValueError", "TVMArrayCopyFromTo: arrays differ in shape, dtype or size (", n, " vs ", m,
          " bytes)");
  }
  for (int i = 0; i < src->ndim; ++i) {
    if (src->shape[i] != dst->shape[i]) {
      Throw("ValueError", "TVMArrayCopyFromTo: shapes differ at dimension ", i, " (", src->shape[i],
            " vs ", dst->shape[i], ")");
    }
  }
  if (n && src_compact) {
    std::memmove(static_cast<char*>(dst->data) + dst->byte_offset,
                 static_cast<char*>(src->data) + src->byte_offset, n);
  } else if (n) {
    CopyToCompact("TVMArrayCopyFromTo", *src, static_cast<char*>(dst->data) + dst->byte_offset);
  }
  API_END();
}

int TVMArrayFromDLPack(DLManagedTensor* from, TVMArrayHandle* out) {
  API_BEGIN();
  NotNull(out, "out");
  *out = NDArrayObj::FromDLPack(from).release()->handle();
  API_END();
}

int TVMArrayToDLPack(TVMArrayHandle from, DLManagedTensor** out) {
  API_BEGIN();
  NotNull(out, "out");
  *out = ArrayOf(from, "array handle")->ToDLPack();
  API_END();
}

void TVMDLManagedTensorCallDeleter(DLManagedTensor* dltensor) {
  if (dltensor != nullptr && dltensor->deleter != nullptr) dltensor->deleter(dltensor);
}

int TVMSetStream(int, int, TVMStreamHandle) { return 0; }

int TVMSynchronize(int, int, TVMStreamHandle) { return 0; }

// ---- Objects ----

int TVMObjectGetTypeIndex(TVMObjectHandle obj, unsigned* out_tindex) {
  API_BEGIN();
  auto* o = static_cast<Object*>(NotNull(obj, "object handle"));
  *NotNull(out_tindex, "out_tindex") = o->type_index();
  API_END();
}

int TVMObjectTypeKey2Index(const char* type_key, unsigned* out_tindex) {
  API_BEGIN();
  NotNull(out_tindex, "out_tindex");
  *out_tindex = TypeKey2Index(NotNullStr(type_key, "type_key"));
  API_END();
}

int TVMObjectTypeIndex2Key(unsigned tindex, char** out_type_key) {
  API_BEGIN();
  NotNull(out_type_key, "out_type_key");
  NamesStore& s = Names();
  s.type_key = TypeIndex2Key(tindex);
  *out_type_key = &s.type_key[0];
  API_END();
}

int TVMObjectRetain(TVMObjectHandle obj) {
  API_BEGIN();
  if (obj) static_cast<Object*>(obj)->IncRef();
  API_END();
}

int TVMObjectFree(TVMObjectHandle obj) {
  API_BEGIN();
  if (obj) static_cast<Object*>(obj)->DecRef();
  API_END();
}

int TVMObjectDerivedFrom(uint32_t child_type_index, uint32_t parent_type_index, int* is_derived) {
  API_BEGIN();
  *NotNull(is_derived, "is_derived") = child_type_index == parent_type_index ||
                                       parent_type_index == TypeIndex::kObject ||
                                       TypeDerivedFrom(child_type_index, parent_type_index);
  API_END();
}

int TVMByteArrayFree(TVMByteArray* arr) {
  API_BEGIN();
  if (arr != nullptr && arr != ThreadLocalReturnBytes()) {
    Throw("ValueError", "TVMByteArrayFree: this byte array was not allocated by polyffi");
  }
  API_END();
}

// ---- Backend ----

int TVMBackendGetFuncFromEnv(void* mod_node, const char* func_name, TVMFunctionHandle* out) {
  API_BEGIN();
  auto* m = HandleAs<ModuleObj>(mod_node, "module context");
  NotNull(out, "out");
  *out = m->GetFuncFromEnv(NotNullStr(func_name, "func_name"));
  API_END();
}

int TVMBackendRegisterSystemLibSymbol(const char* name, void* ptr) {
  API_BEGIN();
  RegisterSystemLibSymbol(NotNullStr(name, "name"), ptr);
  API_END();
}

void* TVMBackendAllocWorkspace(int device_type, int, uint64_t nbytes, int, int) {
  try {
    if (device_type != kDLCPU && device_type != kDLCUDAHost) {
      Throw("ValueError", "workspace on device type ", device_type, " is not available");
    }
    return WorkspaceAlloc(nbytes);
  } catch (const Error& e) {
    SetLastError(e.Full());
  } catch (...) {
    SetLastError("RuntimeError: workspace allocation failed");
  }
  return nullptr;
}

int TVMBackendFreeWorkspace(int, int, void* ptr) {
  API_BEGIN();
  WorkspaceFree(ptr);
  API_END();
}

int TVMBackendParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task) {
  API_BEGIN();
  return ParallelLaunch(flambda, cdata, num_task);
  API_END();
}

int TVMBackendParallelBarrier(int task_id, TVMParallelGroupEnv* penv) {
  API_BEGIN();
  return ParallelBarrier(task_id, penv);
  API_END();
}

int TVMBackendRunOnce(void** handle, int (*f)(void*), void* cdata, int) {
  API_BEGIN();
  NotNull(handle, "handle");
  NotNull(f, "f");
  static std::mutex* mu = new std::mutex();
  std::lock_guard<std::mutex> lock(*mu);
  if (*handle == nullptr) {
    if (f(cdata) != 0) Throw("RuntimeError", "TVMBackendRunOnce: the function failed");
    *handle = reinterpret_cast<void*>(1);
  }
  API_END();
}
