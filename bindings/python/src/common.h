// Shared declarations of the polyffi CPython extension (polyffi._core).
// The extension talks to libpolyffi only through the C ABI in c_runtime_api.h.
#ifndef POLYFFI_PYTHON_COMMON_H_
#define POLYFFI_PYTHON_COMMON_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlpack/dlpack.h>
#include <polyffi/binding_common.h>
#include <polyffi/c_runtime_api.h>
#include <polyffi/dlpack_compat.h>
#include <polyffi/dtype_string.h>

#include <cstdint>
#include <string>

#if defined(__GNUC__)
#define POLYFFI_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define POLYFFI_COLD __attribute__((cold, noinline))
#define POLYFFI_NOINLINE __attribute__((noinline))
#else
#define POLYFFI_UNLIKELY(x) (x)
#define POLYFFI_COLD
#define POLYFFI_NOINLINE
#endif

namespace polyffi_py {

// DLPack >= 1.0 types (DLManagedTensorVersioned, DLPackVersion) come from dlpack_compat.h.
constexpr uint64_t kDLFlagBitmaskReadOnly = DLPACK_FLAG_BITMASK_READ_ONLY;

// ---- Handle-carrying objects (function.cc) -----------------------------------------------------
// Every object that owns a libpolyffi handle shares this layout; `code` says which type code it
// travels as and which *Free releases it.
struct HandleObject {
  PyObject ob_base;           // PyObject_HEAD
  vectorcallfunc vectorcall;  // only used by PackedFunc
  void* handle;               // owned
  int code;                   // kTVMObjectHandle / kTVMModuleHandle / kTVMPackedFuncHandle /
                              // kTVMNDArrayHandle
  PyObject* weaklist;
};

extern PyTypeObject ObjectBaseType;   // _core.ObjectBase, generic objects
extern PyTypeObject PackedFuncType;   // _core.PackedFunc
extern PyTypeObject ModuleBaseType;   // _core.ModuleBase
extern PyTypeObject NDArrayBaseType;  // _core.NDArrayBase (ndarray.cc)
extern PyTypeObject DeviceType;       // _core.Device (value.cc)
extern PyTypeObject DataTypeType;     // _core.DataType (value.cc)

struct DeviceObject {
  PyObject ob_base;  // PyObject_HEAD
  DLDevice dev;
};
struct DataTypeObject {
  PyObject ob_base;  // PyObject_HEAD
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
// Reads a Python int that fits in one machine word without a call into CPython; false when the
// slow path (PyLong_AsLongLongAndOverflow) is needed. Only for exact ints.
inline bool CompactLongValue(PyObject* obj, int64_t* out) {
#if PY_VERSION_HEX >= 0x030C0000
  auto* v = reinterpret_cast<PyLongObject*>(obj);
  if (!PyUnstable_Long_IsCompact(v)) return false;
  *out = PyUnstable_Long_CompactValue(v);
  return true;
#elif PY_VERSION_HEX >= 0x030B0000
  // 3.11: |ob_size| <= 1 means one 30-bit digit, the sign in ob_size.
  Py_ssize_t size = Py_SIZE(obj);
  if (size < -1 || size > 1) return false;
  *out = size * static_cast<int64_t>(reinterpret_cast<PyLongObject*>(obj)->ob_digit[0]);
  return true;
#else
  (void)obj;
  (void)out;
  return false;
#endif
}

struct NumpyInfo;  // ndarray.cc

// Arguments converted from Python; up to kInline of them live on the stack. Temporaries created
// for the call (callbacks, containers, arrays, NUL-carrying strings, buffer exports) are
// released by the destructor, which must run with the GIL held.
//
// With allow_views, array arguments (numpy arrays, buffer-protocol objects, __dlpack__
// producers) travel as borrowed kTVMDLTensorHandle views whose DLTensor lives in this pack: no
// allocation, no runtime object. That is only right for a direct call whose arguments outlive
// it (the vectorcall path). Containers and callback results must own their arrays, so they
// build packs without views and get kTVMNDArrayHandle arrays instead.
class ArgPack {
 public:
  static constexpr int kInline = 8;
  ArgPack(Py_ssize_t n, bool allow_views) : n_(static_cast<int>(n)), allow_views_(allow_views) {
    if (n <= kInline) {
      values_ = inline_values_;
      codes_ = inline_codes_;
      scratch_ = inline_scratch_;
    } else {
      AllocateLarge(n);
    }
  }
  ~ArgPack() {
    if (num_temps_ != 0 || values_ != inline_values_) ReleaseAll();
  }
  ArgPack(const ArgPack&) = delete;
  ArgPack& operator=(const ArgPack&) = delete;

  // Converts arg into slot i. Returns -1 with a Python error set. Exact ints and floats are
  // decided here, inline; everything else goes to SetSlow.
  int Set(int i, PyObject* arg) {
    PyTypeObject* type = Py_TYPE(arg);
    if (type == &PyLong_Type) {
      if (CompactLongValue(arg, &values_[i].v_int64)) {
        codes_[i] = kTVMArgInt;
        return 0;
      }
    } else if (type == &PyFloat_Type) {
      values_[i].v_float64 = PyFloat_AS_DOUBLE(arg);
      codes_[i] = kTVMArgFloat;
      return 0;
    }
    return SetSlow(i, arg);
  }
  // The pack holds a callback's return value: errors name it, not "argument 0".
  void ForReturn() { for_return_ = true; }
  // False when the arrays for a large argument count could not be allocated.
  bool ok() const { return n_ >= 0; }
  TVMValue* values() { return values_; }
  int* codes() { return codes_; }
  int size() const { return n_; }
  // The slot whose borrowed view `tensor` is, or -1 when the view is not one of this pack's.
  int ViewSlot(const void* tensor) const {
    const auto* s = static_cast<const Scratch*>(tensor);
    if (s < scratch_ || s >= scratch_ + n_) return -1;
    return static_cast<int>(s - scratch_);
  }

 private:
  // Per-slot storage for what a TVMValue points at.
  union Scratch {
    TVMByteArray bytes;
    DLTensor tensor;
  };
  struct Temp {
    void* ptr;
    int kind;  // a handle type code (>= 0) or one of the kTemp* values below
  };
  static constexpr int kTempPyObject = -1;  // a reference to drop
  static constexpr int kTempBuffer = -2;    // a PyMem_Malloc'ed Py_buffer to release and free
  static constexpr int kTempMemory = -3;    // PyMem_Malloc'ed memory
  static constexpr int kStridePool = 16;

  int SetSlow(int i, PyObject* arg);
  int SetArray(int i, PyObject* arg, bool* handled);
  int SetNumpyView(int i, const NumpyInfo& np);
  int SetBufferView(int i, PyObject* arg);
  int SetDLPackView(int i, PyObject* arg);
  int64_t* AllocInt64(int count);
  void AllocateLarge(Py_ssize_t n);
  void ReleaseAll();
  // Takes ownership of ptr: on failure releases it and returns -1 with MemoryError set.
  int AddTemp(void* ptr, int kind);

  // "argument i", or "callback return value" (ForReturn): what an error message names.
  std::string Subject(int i) const;

  int n_;
  bool allow_views_;
  bool for_return_ = false;
  int num_temps_ = 0;
  int cap_temps_ = kInline;
  int strides_used_ = 0;
  TVMValue* values_;
  int* codes_;
  Scratch* scratch_;
  Temp* temps_ = inline_temps_;
  TVMValue inline_values_[kInline];
  int inline_codes_[kInline];
  Scratch inline_scratch_[kInline];
  Temp inline_temps_[kInline];
  int64_t stride_pool_[kStridePool];
};

// Converts a value returned by TVMFuncCall (owned handles, thread-local strings) to Python.
// Takes ownership of handles even on failure.
PyObject* ReturnToPython(TVMValue value, int code);
// The common cases of ReturnToPython, inline.
inline PyObject* ReturnToPythonFast(TVMValue value, int code) {
  if (code == kTVMArgInt) return PyLong_FromLongLong(value.v_int64);
  if (code == kTVMNullptr) Py_RETURN_NONE;
  return ReturnToPython(value, code);
}
// Converts a borrowed callback argument: objects are retained (TVMCbArgToReturn) first.
PyObject* CallbackArgToPython(TVMValue value, int code);

// Builds runtime.Array / runtime.Map from Python containers: an owned object handle or NULL.
void* MakeArray(PyObject* seq);
void* MakeMap(PyObject* dict);
// Builds a runtime.ShapeTuple from a polyffi.Shape (a tuple of ints): an owned handle or NULL.
void* MakeShapeTuple(PyObject* shape);
// Parses "float32", "int8x4", "bool", ... Returns -1 with ValueError set.
int ParseDataType(const char* s, DLDataType* out);
// Formats a DLDataType the way the runtime does ("float32", "int8x4", "bool").
PyObject* DataTypeToString(DLDataType t);

// Python classes registered from the package (polyffi.value etc.) for returned objects.
PyObject* ClassForTypeIndex(uint32_t tindex);  // borrowed; never NULL after init
extern PyObject* g_type_key_registry;          // dict: type key -> class
extern PyObject* g_default_object_class;       // class for unknown type keys
extern PyObject* g_module_class;               // class for module handles
extern PyObject* g_ndarray_class;              // class for NDArray handles
extern PyTypeObject* g_shape_class;            // polyffi.Shape (a tuple subclass)

// ---- NDArray (ndarray.cc) ----------------------------------------------------------------------
// Turns any __dlpack__ producer (or a DLPack capsule) into an owned TVMArrayHandle, zero-copy.
// Returns NULL with a Python error set.
TVMArrayHandle ArrayFromDLPackObject(PyObject* obj);
bool IsDLPackProducer(PyObject* obj);
// An owned array sharing the memory of a __dlpack__ producer, a numpy array or a writable
// buffer-protocol object (the buffer is released when the runtime frees the array). NULL with a
// Python error set; TypeError when obj is none of these.
TVMArrayHandle OwnedArrayFromObject(PyObject* obj);
// What a borrowed view of a numpy array needs, read from the array without calling numpy.
struct NumpyInfo {
  void* data;
  int ndim;
  int64_t* shape;             // numpy's own dimensions array (npy_intp is int64 here)
  const Py_ssize_t* strides;  // in bytes; NULL when the array is C-contiguous
  DLDataType dtype;
  int itemsize;
};
// True when obj is a numpy.ndarray (or subclass) that a view can describe: writable, native byte
// order, a dtype with a DLPack code, strides that are whole elements. False means "take the
// generic path" (which raises numpy's own error for arrays DLPack cannot carry); never fails.
bool DescribeNumpyArray(PyObject* obj, NumpyInfo* out);
// numpy.ndarray once an argument has shown it exists (found by name in the argument's MRO);
// NULL before. Lets the argument converter test for the common exact type first.
extern PyTypeObject* g_numpy_type;
// Parses a buffer-protocol format of one element ("f", "<i4"-style chars) into a DLPack type.
bool DataTypeFromBufferFormat(const char* format, Py_ssize_t itemsize, DLDataType* out);

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
extern PyObject* g_error_factory;    // polyffi.errors._error_from_text

// ---- Callbacks (callback.cc) -------------------------------------------------------------------
// Holds the GIL for a callback, finalizer or deleter that may run on any thread, including
// threads Python did not create. ok() is false (and nothing was taken) once the interpreter is
// gone or shutting down; the caller must then leave Python objects alone.
class ScopedGIL {
 public:
  ScopedGIL();
  ~ScopedGIL();
  ScopedGIL(const ScopedGIL&) = delete;
  ScopedGIL& operator=(const ScopedGIL&) = delete;
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
  bool restored_ = false;  // took the GIL with PyEval_RestoreThread (a known thread)
  bool counted_ = false;   // a foreign thread, in flight, with a PyGILState_Ensure state
  PyGILState_STATE state_ = PyGILState_UNLOCKED;
};
// _core._before_shutdown, registered with atexit by the package: stops new entries from threads
// Python did not create and waits (GIL released) for those in flight.
PyObject* BeforeShutdown(PyObject*, PyObject*);

// Wraps a Python callable as a new owned function handle. NULL with a Python error set.
TVMFunctionHandle CallbackFromCallable(PyObject* callable);

// ---- Async calls (async_call.cc) ---------------------------------------------------------------
PyObject* AsyncSubmit(PyObject*, PyObject* args);
PyObject* AsyncCancel(PyObject*, PyObject* capsule);
PyObject* AsyncConfigure(PyObject*, PyObject* args);

// The one error-check helper: on failure raises and returns false.
inline bool CheckCall(int ret) {
  if (ret == 0) return true;
  RaiseLastError(ret);
  return false;
}

// Calls a function with the GIL released. Returns the TVMFuncCall result code.
inline int CallReleasingGIL(TVMFunctionHandle f, TVMValue* values, int* codes, int n, TVMValue* ret,
                            int* ret_code) {
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = TVMFuncCall(f, values, codes, n, ret, ret_code);
  Py_END_ALLOW_THREADS return rc;
}

}  // namespace polyffi_py

#endif  // POLYFFI_PYTHON_COMMON_H_
