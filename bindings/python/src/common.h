// Shared declarations of the polyffi CPython extension (polyffi._core).
// The extension talks to libpolyffi only through the C ABI in c_runtime_api.h.
#ifndef POLYFFI_PYTHON_COMMON_H_
#define POLYFFI_PYTHON_COMMON_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlpack/dlpack.h>
#include <polyffi/c_runtime_api.h>
#include <polyffi/dlpack_compat.h>

#include <cstdint>

namespace polyffi_py {

// DLPack >= 1.0 types (DLManagedTensorVersioned, DLPackVersion) come from dlpack_compat.h.
constexpr uint64_t kDLFlagBitmaskReadOnly = DLPACK_FLAG_BITMASK_READ_ONLY;

// ---- Handle-carrying objects (function.cc) -----------------------------------------------------
// Every object that owns a libpolyffi handle shares this layout; `code` says which type code it
// travels as and which *Free releases it.
struct HandleObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;  // only used by PackedFunc
  void* handle;               // owned
  int code;                   // kTVMObjectHandle / kTVMModuleHandle / kTVMPackedFuncHandle /
                              // kTVMNDArrayHandle
  PyObject* weaklist;
};

extern PyTypeObject ObjectBaseType;    // _core.ObjectBase, generic objects
extern PyTypeObject PackedFuncType;    // _core.PackedFunc
extern PyTypeObject ModuleBaseType;    // _core.ModuleBase
extern PyTypeObject NDArrayBaseType;   // _core.NDArrayBase (ndarray.cc)
extern PyTypeObject DeviceType;        // _core.Device (value.cc)
extern PyTypeObject DataTypeType;      // _core.DataType (value.cc)

struct DeviceObject {
  PyObject_HEAD
  DLDevice dev;
};
struct DataTypeObject {
  PyObject_HEAD
  DLDataType dtype;
};

int InitFunctionTypes(PyObject* module);
int InitValueTypes(PyObject* module);
int InitNDArrayTypes(PyObject* module);

// Releases a handle of the given type code (NULL allowed). Never raises.
void FreeHandle(void* handle, int code);
// Wraps an owned handle in a new Python object; on failure frees the handle and returns NULL.
PyObject* WrapHandle(void* handle, int code);
PyObject* NewPackedFunc(TVMFunctionHandle handle);  // takes ownership

// ---- Values (value.cc) -------------------------------------------------------------------------
// Arguments converted from Python; small counts live on the stack. Temporaries created for the
// call (callbacks, containers, arrays, NUL-carrying strings) are released by the destructor.
class ArgPack {
 public:
  static constexpr int kInline = 8;
  explicit ArgPack(Py_ssize_t n);
  ~ArgPack();
  ArgPack(const ArgPack&) = delete;
  ArgPack& operator=(const ArgPack&) = delete;

  // Converts args[i] into slot i. Returns -1 with a Python error set.
  int Set(int i, PyObject* arg);
  TVMValue* values() { return values_; }
  int* codes() { return codes_; }
  int size() const { return n_; }

 private:
  struct Temp {
    void* handle;
    int code;
  };
  void AddTemp(void* handle, int code);

  int n_;
  TVMValue* values_;
  int* codes_;
  TVMByteArray* bytes_;
  TVMValue inline_values_[kInline];
  int inline_codes_[kInline];
  TVMByteArray inline_bytes_[kInline];
  Temp inline_temps_[kInline];
  Temp* temps_;
  int num_temps_ = 0;
  int cap_temps_ = kInline;
};

// Converts a value returned by TVMFuncCall (owned handles, thread-local strings) to Python.
// Takes ownership of handles even on failure.
PyObject* ReturnToPython(TVMValue value, int code);
// Converts a borrowed callback argument: objects are retained (TVMCbArgToReturn) first.
PyObject* CallbackArgToPython(TVMValue value, int code);

// Builds runtime.Array / runtime.Map from Python containers: an owned object handle or NULL.
void* MakeArray(PyObject* seq);
void* MakeMap(PyObject* dict);
// Parses "float32", "int8x4", "bool", ... Returns -1 with ValueError set.
int ParseDataType(const char* s, DLDataType* out);
// Formats a DLDataType the way the runtime does ("float32", "int8x4", "bool").
PyObject* DataTypeToString(DLDataType t);

// Lookup of core global functions used by the binding, cached once per process. Borrowed.
TVMFunctionHandle CachedGlobal(int which);
enum CachedGlobalId {
  kRuntimeArray = 0,
  kRuntimeMap,
  kRuntimeString,
  kRuntimeStringBytes,
  kNumCachedGlobals
};

// Python classes registered from the package (polyffi.value etc.) for returned objects.
PyObject* ClassForTypeIndex(uint32_t tindex);  // borrowed; never NULL after init
extern PyObject* g_type_key_registry;           // dict: type key -> class
extern PyObject* g_default_object_class;        // class for unknown type keys
extern PyObject* g_module_class;                // class for module handles
extern PyObject* g_ndarray_class;               // class for NDArray handles

// ---- NDArray (ndarray.cc) ----------------------------------------------------------------------
// Turns any __dlpack__ producer (or a DLPack capsule) into an owned TVMArrayHandle, zero-copy.
// Returns NULL with a Python error set.
TVMArrayHandle ArrayFromDLPackObject(PyObject* obj);
bool IsDLPackProducer(PyObject* obj);

// ---- Errors (errors.cc) ------------------------------------------------------------------------
// Raises the Python exception for the last libpolyffi error (ret is the failing return code).
// Always returns NULL.
PyObject* RaiseLastError(int ret);
// Records the current Python exception as the thread's last error ("Kind: message") and stashes
// the exception object so that it can be re-raised as is. Clears the Python error.
void SetLastErrorFromPython();
// Drops this thread's stashed exception (it keeps the callback's frames alive until then).
void ClearErrorStash();
extern PyObject* g_ffi_error_class;  // polyffi.FFIError
extern PyObject* g_error_factory;  // polyffi.errors._error_from_text

// ---- Callbacks (callback.cc) -------------------------------------------------------------------
// Wraps a Python callable as a new owned function handle. NULL with a Python error set.
TVMFunctionHandle CallbackFromCallable(PyObject* callable);

// The one error-check helper: on failure raises and returns false.
inline bool CheckCall(int ret) {
  if (ret == 0) return true;
  RaiseLastError(ret);
  return false;
}

// Calls a function with the GIL released. Returns the TVMFuncCall result code.
inline int CallReleasingGIL(TVMFunctionHandle f, TVMValue* values, int* codes, int n,
                            TVMValue* ret, int* ret_code) {
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = TVMFuncCall(f, values, codes, n, ret, ret_code);
  Py_END_ALLOW_THREADS
  return rc;
}

}  // namespace polyffi_py

#endif  // POLYFFI_PYTHON_COMMON_H_
