// Value conversion, Python <-> TVMValue, in one place; plus the Device and DataType types.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "common.h"

namespace polyffi_py {

PyObject* g_type_key_registry = nullptr;
PyObject* g_default_object_class = nullptr;
PyObject* g_module_class = nullptr;
PyObject* g_ndarray_class = nullptr;
PyTypeObject* g_shape_class = nullptr;

static const char kOpaqueCapsuleName[] = "polyffi.opaque_handle";

// ---- Core globals (looked up once, in polyffi/binding_common.h) ---------------------------------

using polyffi::binding::Global;

// Raises the error for a failed shared helper about `which`; returns NULL.
static PyObject* RaiseGlobalFailure(Global which, polyffi::binding::Failure failure, int rc,
                                    int ret_code) {
  using polyffi::binding::Failure;
  const char* name = polyffi::binding::GlobalName(which);
  if (failure == Failure::kLookupFailed || failure == Failure::kCallFailed) {
    return RaiseLastError(rc);
  }
  if (failure == Failure::kMissing) {
    PyErr_Format(PyExc_RuntimeError, "polyffi: core global function %s is missing", name);
  } else {
    PyErr_Format(PyExc_RuntimeError, "polyffi: %s returned type code %d", name, ret_code);
  }
  return nullptr;
}

static std::unordered_map<unsigned, PyObject*>& ClassCache() {
  static auto* cache = new std::unordered_map<unsigned, PyObject*>();
  return *cache;
}

void ClearClassCache() { ClassCache().clear(); }

PyObject* ClassForTypeIndex(uint32_t tindex) {
  auto& cache = ClassCache();
  auto it = cache.find(tindex);
  if (it != cache.end()) return it->second;
  char* key = nullptr;
  PyObject* cls = g_default_object_class;
  if (TVMObjectTypeIndex2Key(tindex, &key) == 0 && key != nullptr && g_type_key_registry) {
    PyObject* found = PyDict_GetItemString(g_type_key_registry, key);  // borrowed
    if (found != nullptr) cls = found;
  }
  if (cls == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "polyffi: object classes are not registered yet");
    return nullptr;
  }
  cache.emplace(tindex, cls);
  return cls;
}

// ---- ArgPack ----------------------------------------------------------------------------------

void ArgPack::AllocateLarge(Py_ssize_t n) {
  // Large argument lists are rare; one allocation for the three per-slot arrays.
  void* block = std::malloc(n * (sizeof(Scratch) + sizeof(TVMValue) + sizeof(int)));
  if (block == nullptr) {
    n_ = -1;  // ok() is false; the caller raises MemoryError
    values_ = nullptr;
    codes_ = nullptr;
    scratch_ = nullptr;
    return;
  }
  scratch_ = static_cast<Scratch*>(block);
  values_ = reinterpret_cast<TVMValue*>(scratch_ + n);
  codes_ = reinterpret_cast<int*>(values_ + n);
}

static void ReleaseTemp(void* ptr, int kind) {
  switch (kind) {
    case -1:  // kTempPyObject
      Py_DECREF(static_cast<PyObject*>(ptr));
      break;
    case -2:  // kTempBuffer
      PyBuffer_Release(static_cast<Py_buffer*>(ptr));
      std::free(ptr);
      break;
    case -3:  // kTempMemory
      std::free(ptr);
      break;
    default:
      FreeHandle(ptr, kind);
      break;
  }
}

void ArgPack::ReleaseAll() {
  for (int i = 0; i < num_temps_; ++i) ReleaseTemp(temps_[i].ptr, temps_[i].kind);
  num_temps_ = 0;
  if (temps_ != inline_temps_) std::free(temps_);
  temps_ = inline_temps_;
  // The three per-slot arrays share one block that starts at scratch_.
  if (values_ != inline_values_ && scratch_ != nullptr) std::free(scratch_);
  values_ = inline_values_;
}

int ArgPack::AddTemp(void* ptr, int kind) {
  static_assert(kTempPyObject == -1 && kTempBuffer == -2 && kTempMemory == -3,
                "ReleaseTemp hard-codes the kinds");
  if (num_temps_ == cap_temps_) {
    Temp* grown = static_cast<Temp*>(std::malloc(2 * cap_temps_ * sizeof(Temp)));
    if (grown == nullptr) {
      ReleaseTemp(ptr, kind);
      PyErr_NoMemory();
      return -1;
    }
    std::memcpy(grown, temps_, num_temps_ * sizeof(Temp));
    if (temps_ != inline_temps_) std::free(temps_);
    temps_ = grown;
    cap_temps_ *= 2;
  }
  temps_[num_temps_++] = Temp{ptr, kind};
  return 0;
}

int64_t* ArgPack::AllocInt64(int count) {
  if (strides_used_ + count <= kStridePool) {
    int64_t* out = stride_pool_ + strides_used_;
    strides_used_ += count;
    return out;
  }
  auto* out = static_cast<int64_t*>(std::malloc(sizeof(int64_t) * (count > 0 ? count : 1)));
  if (out == nullptr) {
    PyErr_NoMemory();
    return nullptr;
  }
  return AddTemp(out, kTempMemory) == 0 ? out : nullptr;
}

static void* MakeCoreObject(Global which, TVMValue* values, int* codes, int n);

// A str with embedded NUL bytes travels as a runtime.String object (docs/spec/abi.md section 6,
// objects and containers).
static void* MakeRuntimeString(const char* data, Py_ssize_t size) {
  TVMByteArray arr{data, static_cast<size_t>(size)};
  TVMValue v;
  v.v_handle = &arr;
  int code = kTVMBytes;
  return MakeCoreObject(Global::kString, &v, &code, 1);
}

// Byte strides -> element strides; false when a stride is not a whole number of elements.
static bool ElementStrides(const Py_ssize_t* bytes, int ndim, int itemsize, int64_t* out) {
  for (int d = 0; d < ndim; ++d) {
    if (bytes[d] % itemsize != 0) return false;
    out[d] = bytes[d] / itemsize;
  }
  return true;
}

// A view of a buffer-protocol object. The Py_buffer is held until the call returns.
int ArgPack::SetBufferView(int i, PyObject* arg) {
  auto* view = static_cast<Py_buffer*>(std::malloc(sizeof(Py_buffer)));
  if (view == nullptr) {
    PyErr_NoMemory();
    return -1;
  }
  if (PyObject_GetBuffer(arg, view, PyBUF_RECORDS) != 0) {
    std::free(view);
    return -1;
  }
  if (AddTemp(view, kTempBuffer) != 0) return -1;  // released from here on by the pack
  DLTensor& t = scratch_[i].tensor;
  if (!DataTypeFromBufferFormat(view->format, view->itemsize, &t.dtype)) {
    PyErr_Format(PyExc_TypeError,
                 "polyffi: argument %d: buffer of '%s' has element format '%s' that DLPack "
                 "cannot carry",
                 i, Py_TYPE(arg)->tp_name, view->format != nullptr ? view->format : "B");
    return -1;
  }
  t.data = view->buf;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = view->ndim;
  t.byte_offset = 0;
  static_assert(sizeof(Py_ssize_t) == sizeof(int64_t), "shape arrays are shared with CPython");
  t.shape = reinterpret_cast<int64_t*>(view->shape);
  t.strides = nullptr;
  if (view->strides != nullptr && !PyBuffer_IsContiguous(view, 'C')) {
    t.strides = AllocInt64(view->ndim);
    if (t.strides == nullptr) return -1;
    if (!ElementStrides(view->strides, view->ndim, static_cast<int>(view->itemsize), t.strides)) {
      PyErr_Format(PyExc_BufferError, "polyffi: argument %d: buffer strides are not whole elements",
                   i);
      return -1;
    }
  }
  values_[i].v_handle = &t;
  codes_[i] = kTVMDLTensorHandle;
  return 0;
}

// A view of a __dlpack__ producer (torch, jax, ...): the capsule stays unconsumed and alive until
// the call returns; its own destructor then runs the producer's deleter.
int ArgPack::SetDLPackView(int i, PyObject* arg) {
  PyObject* capsule = PyObject_CallMethod(arg, "__dlpack__", nullptr);
  if (capsule == nullptr) return -1;
  if (AddTemp(capsule, kTempPyObject) != 0) return -1;
  const DLTensor* src = nullptr;
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    src = &static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"))->dl_tensor;
  } else if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    auto* v =
        static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, "dltensor_versioned"));
    if (v->version.major != 1) {
      PyErr_Format(PyExc_BufferError, "polyffi: unsupported DLPack version %u.%u", v->version.major,
                   v->version.minor);
      return -1;
    }
    src = &v->dl_tensor;
  } else {
    PyErr_Format(PyExc_TypeError,
                 "polyffi: argument %d: %s.__dlpack__() did not return a DLPack capsule", i,
                 Py_TYPE(arg)->tp_name);
    return -1;
  }
  // A copy of the struct, so that every view of this pack lives in scratch_ (see ViewSlot).
  scratch_[i].tensor = *src;
  values_[i].v_handle = &scratch_[i].tensor;
  codes_[i] = kTVMDLTensorHandle;
  return 0;
}

int ArgPack::SetNumpyView(int i, const NumpyInfo& np) {
  DLTensor& t = scratch_[i].tensor;
  t.data = np.data;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = np.ndim;
  t.dtype = np.dtype;
  t.shape = np.shape;
  t.strides = nullptr;
  t.byte_offset = 0;
  if (np.strides != nullptr) {
    t.strides = AllocInt64(np.ndim);
    if (t.strides == nullptr) return -1;
    ElementStrides(np.strides, np.ndim, np.itemsize, t.strides);  // checked by Describe
  }
  values_[i].v_handle = &t;
  codes_[i] = kTVMDLTensorHandle;
  return 0;
}

// Arrays of any kind. *handled is false when arg is not an array at all.
int ArgPack::SetArray(int i, PyObject* arg, bool* handled) {
  *handled = true;
  NumpyInfo np;
  if (allow_views_ && DescribeNumpyArray(arg, &np)) return SetNumpyView(i, np);
  if (IsDLPackProducer(arg)) {
    if (allow_views_ && !PyCapsule_CheckExact(arg)) return SetDLPackView(i, arg);
    // Owned: a capsule passed as such is consumed, like nd.from_dlpack does.
    TVMArrayHandle nd = ArrayFromDLPackObject(arg);
    if (nd == nullptr) return -1;
    if (AddTemp(nd, kTVMNDArrayHandle) != 0) return -1;
    values_[i].v_handle = nd;
    codes_[i] = kTVMNDArrayHandle;
    return 0;
  }
  *handled = false;
  return 0;
}

int ArgPack::SetSlow(int i, PyObject* arg) {
  TVMValue& v = values_[i];
  int& code = codes_[i];
  if (arg == Py_None) {
    v.v_handle = nullptr;
    code = kTVMNullptr;
    return 0;
  }
  PyTypeObject* type = Py_TYPE(arg);
  if (type == g_numpy_type && allow_views_) {  // the common array, before the chain below
    NumpyInfo np;
    if (DescribeNumpyArray(arg, &np)) return SetNumpyView(i, np);
  }
  if (PyUnicode_Check(arg)) {
    Py_ssize_t size = 0;
    const char* s;
    if (PyUnicode_IS_COMPACT_ASCII(arg)) {  // the common case: the data is already UTF-8
      s = static_cast<const char*>(PyUnicode_DATA(arg));
      size = PyUnicode_GET_LENGTH(arg);
    } else {
      s = PyUnicode_AsUTF8AndSize(arg, &size);  // cached in the str object
      if (s == nullptr) return -1;
    }
    if (std::memchr(s, '\0', static_cast<size_t>(size)) == nullptr) {
      v.v_str = s;
      code = kTVMStr;
      return 0;
    }
    void* obj = MakeRuntimeString(s, size);
    if (obj == nullptr || AddTemp(obj, kTVMObjectHandle) != 0) return -1;
    v.v_handle = obj;
    code = kTVMObjectHandle;
    return 0;
  }
  if (type == &PyBool_Type) {
    v.v_int64 = arg == Py_True;
    code = kTVMArgBool;
    return 0;
  }
  if (PyLong_Check(arg)) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(arg, &overflow);
    if (overflow != 0) {
      PyErr_Format(PyExc_OverflowError, "polyffi: %s: int %R does not fit in int64",
                   Subject(i).c_str(), arg);
      return -1;
    }
    if (x == -1 && PyErr_Occurred()) return -1;
    v.v_int64 = x;
    code = kTVMArgInt;
    return 0;
  }
  if (PyFloat_Check(arg)) {
    v.v_float64 = PyFloat_AS_DOUBLE(arg);
    code = kTVMArgFloat;
    return 0;
  }
  if (PyObject_TypeCheck(arg, &ObjectBaseType)) {
    auto* h = reinterpret_cast<HandleObject*>(arg);
    if (h->handle == nullptr) {
      PyErr_Format(PyExc_ValueError, "polyffi: %s: %s handle has been released", Subject(i).c_str(),
                   type->tp_name);
      return -1;
    }
    if (for_return_ && h->code == kTVMDLTensorHandle) {
      // The view's DLTensor lives in the caller's frame, gone once the call returns (as Node).
      PyErr_SetString(PyExc_ValueError,
                      "polyffi: a borrowed NDArray view cannot be returned from a callback");
      return -1;
    }
    v.v_handle = h->handle;
    code = h->code;
    return 0;
  }
  if (PyBytes_Check(arg) || PyByteArray_Check(arg)) {
    bool is_bytes = PyBytes_Check(arg);
    TVMByteArray& b = scratch_[i].bytes;
    b.data = is_bytes ? PyBytes_AS_STRING(arg) : PyByteArray_AS_STRING(arg);
    b.size = static_cast<size_t>(is_bytes ? PyBytes_GET_SIZE(arg) : PyByteArray_GET_SIZE(arg));
    v.v_handle = &b;
    code = kTVMBytes;
    return 0;
  }
  if (type == &DeviceType) {
    v.v_device = reinterpret_cast<DeviceObject*>(arg)->dev;
    code = kDLDevice;
    return 0;
  }
  if (type == &DataTypeType) {
    v.v_type = reinterpret_cast<DataTypeObject*>(arg)->dtype;
    code = kTVMDataType;
    return 0;
  }
  // A polyffi.Shape is a tuple too: test for it first (a plain tuple stays an Array).
  if (g_shape_class != nullptr && PyObject_TypeCheck(arg, g_shape_class)) {
    void* obj = MakeShapeTuple(arg);
    if (obj == nullptr || AddTemp(obj, kTVMObjectHandle) != 0) return -1;
    v.v_handle = obj;
    code = kTVMObjectHandle;
    return 0;
  }
  if (PyList_Check(arg) || PyTuple_Check(arg) || PyDict_Check(arg)) {
    void* obj = PyDict_Check(arg) ? MakeMap(arg) : MakeArray(arg);
    if (obj == nullptr || AddTemp(obj, kTVMObjectHandle) != 0) return -1;
    v.v_handle = obj;
    code = kTVMObjectHandle;
    return 0;
  }
  if (PyCapsule_IsValid(arg, kOpaqueCapsuleName)) {
    v.v_handle = PyCapsule_GetPointer(arg, kOpaqueCapsuleName);
    code = kTVMOpaqueHandle;
    return 0;
  }
  bool handled = false;
  int rc = SetArray(i, arg, &handled);
  if (handled) return rc;
  if (PyCallable_Check(arg)) {
    TVMFunctionHandle f = CallbackFromCallable(arg);
    if (f == nullptr || AddTemp(f, kTVMPackedFuncHandle) != 0) return -1;
    v.v_handle = f;
    code = kTVMPackedFuncHandle;
    return 0;
  }
  // numpy scalars and other number-likes (before buffers: numpy scalars export a buffer too).
  if (PyIndex_Check(arg)) {
    PyObject* index = PyNumber_Index(arg);
    if (index == nullptr) return -1;
    rc = Set(i, index);
    Py_DECREF(index);
    return rc;
  }
  if (type->tp_as_number != nullptr && type->tp_as_number->nb_float != nullptr) {
    double d = PyFloat_AsDouble(arg);
    if (d == -1.0 && PyErr_Occurred()) return -1;
    v.v_float64 = d;
    code = kTVMArgFloat;
    return 0;
  }
  if (PyObject_CheckBuffer(arg)) {  // memoryview, array.array, ...
    if (allow_views_) return SetBufferView(i, arg);
    TVMArrayHandle nd = OwnedArrayFromObject(arg);
    if (nd == nullptr || AddTemp(nd, kTVMNDArrayHandle) != 0) return -1;
    v.v_handle = nd;
    code = kTVMNDArrayHandle;
    return 0;
  }
  if (for_return_) {
    PyErr_Format(PyExc_TypeError, "polyffi: callback returned an unsupported Python type '%s'",
                 type->tp_name);
  } else {
    PyErr_Format(PyExc_TypeError, "polyffi: argument %d: unsupported argument type '%s'", i,
                 type->tp_name);
  }
  return -1;
}

std::string ArgPack::Subject(int i) const {
  return for_return_ ? "callback return value" : "argument " + std::to_string(i);
}

// ---- Containers -------------------------------------------------------------------------------

// The object the constructor `which` makes of pack's values: owned, or NULL with an exception set.
static void* MakeCoreObject(Global which, TVMValue* values, int* codes, int n) {
  polyffi::binding::ObjectResult made = polyffi::binding::MakeObject(which, values, codes, n);
  if (made.failure != polyffi::binding::Failure::kNone) {
    RaiseGlobalFailure(which, made.failure, made.rc, made.ret_code);
  }
  return made.handle;
}

static void* CallForObject(Global which, ArgPack& pack) {
  return MakeCoreObject(which, pack.values(), pack.codes(), pack.size());
}

void* MakeArray(PyObject* seq) {
  PyObject* fast = PySequence_Fast(seq, "polyffi: expected a sequence");
  if (fast == nullptr) return nullptr;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  PyObject** items = PySequence_Fast_ITEMS(fast);
  void* result = nullptr;
  {
    ArgPack pack(n, /*allow_views=*/false);
    if (!pack.ok()) {
      Py_DECREF(fast);
      PyErr_NoMemory();
      return nullptr;
    }
    int i = 0;
    for (; i < n; ++i) {
      if (pack.Set(i, items[i]) != 0) break;
    }
    if (i == n) result = CallForObject(Global::kArray, pack);
  }
  Py_DECREF(fast);
  return result;
}

void* MakeMap(PyObject* dict) {
  Py_ssize_t n = PyDict_Size(dict);
  ArgPack pack(2 * n, /*allow_views=*/false);
  if (!pack.ok()) {
    PyErr_NoMemory();
    return nullptr;
  }
  Py_ssize_t pos = 0;
  PyObject *key, *value;
  int i = 0;
  while (PyDict_Next(dict, &pos, &key, &value)) {
    if (i + 1 >= 2 * n + 1) break;  // the dict changed size under us
    if (pack.Set(i, key) != 0 || pack.Set(i + 1, value) != 0) return nullptr;
    i += 2;
  }
  if (i != 2 * n) {
    PyErr_SetString(PyExc_RuntimeError, "polyffi: dict changed size during conversion");
    return nullptr;
  }
  return CallForObject(Global::kMap, pack);
}

void* MakeShapeTuple(PyObject* shape) {
  Py_ssize_t n = PyTuple_GET_SIZE(shape);
  ArgPack pack(n, /*allow_views=*/false);
  if (!pack.ok()) {
    PyErr_NoMemory();
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    // Shape() checks its items; tuple.__new__(Shape, ...) can still smuggle in others.
    PyObject* item = PyTuple_GET_ITEM(shape, i);
    if (!PyLong_Check(item) || PyBool_Check(item)) {
      PyErr_Format(PyExc_TypeError, "polyffi: Shape dimension %zd is '%s', not int", i,
                   Py_TYPE(item)->tp_name);
      return nullptr;
    }
    if (pack.Set(static_cast<int>(i), item) != 0) return nullptr;
  }
  return CallForObject(Global::kShapeTuple, pack);
}

// ---- Returns ----------------------------------------------------------------------------------

static PyObject* DecodeUtf8(const char* s, Py_ssize_t size) {
  // surrogateescape keeps arbitrary bytes round-trippable instead of failing the call.
  return PyUnicode_DecodeUTF8(s, size, "surrogateescape");
}

static PyObject* RuntimeStringToPython(void* obj) {
  polyffi::binding::BytesResult text = polyffi::binding::StringObjectBytes(obj);
  TVMObjectFree(obj);
  if (text.failure != polyffi::binding::Failure::kNone) {
    return RaiseGlobalFailure(Global::kStringBytes, text.failure, text.rc, text.ret_code);
  }
  return DecodeUtf8(text.data, static_cast<Py_ssize_t>(text.size));
}

// A runtime.ShapeTuple as a polyffi.Shape; takes over (and frees) the reference to obj.
static PyObject* ShapeTupleToPython(void* obj) {
  if (g_shape_class == nullptr) {
    TVMObjectFree(obj);
    PyErr_SetString(PyExc_RuntimeError, "polyffi: Shape is not registered yet");
    return nullptr;
  }
  polyffi::binding::BytesResult raw = polyffi::binding::ShapeTupleObjectBytes(obj);
  TVMObjectFree(obj);
  if (raw.failure != polyffi::binding::Failure::kNone) {
    return RaiseGlobalFailure(Global::kShapeTupleBytes, raw.failure, raw.rc, raw.ret_code);
  }
  Py_ssize_t n = static_cast<Py_ssize_t>(raw.size / sizeof(int64_t));
  PyObject* dims = PyTuple_New(n);
  if (dims == nullptr) return nullptr;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PyLong_FromLongLong(polyffi::binding::ShapeDim(raw, i));
    if (item == nullptr) {
      Py_DECREF(dims);
      return nullptr;
    }
    PyTuple_SET_ITEM(dims, i, item);
  }
  // tuple.__new__(Shape, dims): the dimensions are ints already, so Shape.__new__'s checks are
  // skipped, and CPython initialises the subclass instance itself on every version.
  PyObject* args = PyTuple_Pack(1, dims);
  Py_DECREF(dims);
  if (args == nullptr) return nullptr;
  PyObject* out = PyTuple_Type.tp_new(g_shape_class, args, nullptr);
  Py_DECREF(args);
  return out;
}

PyObject* ReturnToPython(TVMValue value, int code) {
  switch (code) {
    case kTVMNullptr:
      Py_RETURN_NONE;
    case kTVMArgInt:
    case kDLUInt:
      return PyLong_FromLongLong(value.v_int64);
    case kTVMArgBool:
      return PyBool_FromLong(value.v_int64 != 0);
    case kTVMArgFloat:
      return PyFloat_FromDouble(value.v_float64);
    case kTVMStr:
      return DecodeUtf8(value.v_str, std::strlen(value.v_str));
    case kTVMBytes: {
      auto* arr = static_cast<TVMByteArray*>(value.v_handle);
      return PyBytes_FromStringAndSize(arr->data, static_cast<Py_ssize_t>(arr->size));
    }
    case kTVMDataType: {
      auto* obj = PyObject_New(DataTypeObject, &DataTypeType);
      if (obj != nullptr) obj->dtype = value.v_type;
      return reinterpret_cast<PyObject*>(obj);
    }
    case kDLDevice: {
      auto* obj = PyObject_New(DeviceObject, &DeviceType);
      if (obj != nullptr) obj->dev = value.v_device;
      return reinterpret_cast<PyObject*>(obj);
    }
    case kTVMOpaqueHandle:
      if (value.v_handle == nullptr) Py_RETURN_NONE;
      return PyCapsule_New(value.v_handle, kOpaqueCapsuleName, nullptr);
    case kTVMObjectHandle: {
      if (value.v_handle == nullptr) Py_RETURN_NONE;
      unsigned tindex = 0;
      if (TVMObjectGetTypeIndex(value.v_handle, &tindex) == 0 &&
          static_cast<int64_t>(tindex) ==
              polyffi::binding::CachedTypeIndex(polyffi::binding::TypeKey::kString)) {
        return RuntimeStringToPython(value.v_handle);
      }
      if (static_cast<int64_t>(tindex) ==
          polyffi::binding::CachedTypeIndex(polyffi::binding::TypeKey::kShapeTuple)) {
        return ShapeTupleToPython(value.v_handle);
      }
      return WrapHandle(value.v_handle, code);
    }
    case kTVMModuleHandle:
    case kTVMPackedFuncHandle:
    case kTVMNDArrayHandle:
      if (value.v_handle == nullptr) Py_RETURN_NONE;
      return WrapHandle(value.v_handle, code);
    case kTVMDLTensorHandle: {
      // A borrowed view: wrapped without ownership; valid as long as its producer keeps it.
      PyTypeObject* cls = reinterpret_cast<PyTypeObject*>(g_ndarray_class);
      PyObject* obj = cls->tp_alloc(cls, 0);
      if (obj == nullptr) return nullptr;
      reinterpret_cast<HandleObject*>(obj)->handle = value.v_handle;
      reinterpret_cast<HandleObject*>(obj)->code = kTVMDLTensorHandle;
      return obj;
    }
    default:
      PyErr_Format(PyExc_TypeError, "unknown type code %d", code);
      return nullptr;
  }
}

PyObject* CallbackArgToPython(TVMValue value, int code) {
  switch (code) {
    case kTVMObjectHandle:
    case kTVMModuleHandle:
    case kTVMPackedFuncHandle:
    case kTVMNDArrayHandle:
    case kTVMObjectRValueRefArg:
      if (!CheckCall(TVMCbArgToReturn(&value, &code))) return nullptr;
      break;
    default:
      break;
  }
  return ReturnToPython(value, code);
}

// ---- DataType ---------------------------------------------------------------------------------

int ParseDataType(const char* s, DLDataType* out) {
  if (PolyffiDataTypeFromString(s, out) != 0) {
    PyErr_Format(PyExc_ValueError, "polyffi: unknown dtype '%s'", s);
    return -1;
  }
  return 0;
}

PyObject* DataTypeToString(DLDataType t) {
  char buf[32];
  PolyffiDataTypeToString(t, buf, sizeof(buf));
  return PyUnicode_FromString(buf);
}

static PyObject* DataTypeNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* spec = nullptr;
  static const char* kwlist[] = {"dtype", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:DataType", const_cast<char**>(kwlist), &spec)) {
    return nullptr;
  }
  DLDataType t;
  if (Py_IS_TYPE(spec, &DataTypeType)) {
    t = reinterpret_cast<DataTypeObject*>(spec)->dtype;
  } else {
    PyObject* text = PyObject_Str(spec);  // accepts numpy dtypes and str alike
    if (text == nullptr) return nullptr;
    const char* s = PyUnicode_AsUTF8(text);
    int rc = s == nullptr ? -1 : ParseDataType(s, &t);
    Py_DECREF(text);
    if (rc != 0) return nullptr;
  }
  auto* obj = reinterpret_cast<DataTypeObject*>(type->tp_alloc(type, 0));
  if (obj != nullptr) obj->dtype = t;
  return reinterpret_cast<PyObject*>(obj);
}

static PyObject* DataTypeStr(PyObject* self) {
  return DataTypeToString(reinterpret_cast<DataTypeObject*>(self)->dtype);
}

static PyObject* DataTypeRepr(PyObject* self) {
  PyObject* s = DataTypeStr(self);
  if (s == nullptr) return nullptr;
  PyObject* r = PyUnicode_FromFormat("DataType(\"%U\")", s);
  Py_DECREF(s);
  return r;
}

static PyObject* DataTypeRichCompare(PyObject* self, PyObject* other, int op) {
  if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
  DLDataType a = reinterpret_cast<DataTypeObject*>(self)->dtype;
  DLDataType b;
  if (Py_IS_TYPE(other, &DataTypeType)) {
    b = reinterpret_cast<DataTypeObject*>(other)->dtype;
  } else if (PyUnicode_Check(other)) {
    if (ParseDataType(PyUnicode_AsUTF8(other), &b) != 0) {
      PyErr_Clear();
      return PyBool_FromLong(op == Py_NE);
    }
  } else {
    Py_RETURN_NOTIMPLEMENTED;
  }
  bool eq = a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t DataTypeHash(PyObject* self) {
  DLDataType t = reinterpret_cast<DataTypeObject*>(self)->dtype;
  return static_cast<Py_hash_t>((t.code << 24) ^ (t.bits << 16) ^ t.lanes) + 1;
}

static PyObject* DataTypeGetCode(PyObject* self, void*) {
  return PyLong_FromLong(reinterpret_cast<DataTypeObject*>(self)->dtype.code);
}
static PyObject* DataTypeGetBits(PyObject* self, void*) {
  return PyLong_FromLong(reinterpret_cast<DataTypeObject*>(self)->dtype.bits);
}
static PyObject* DataTypeGetLanes(PyObject* self, void*) {
  return PyLong_FromLong(reinterpret_cast<DataTypeObject*>(self)->dtype.lanes);
}

static PyGetSetDef kDataTypeGetSet[] = {
    {"type_code", DataTypeGetCode, nullptr, "DLPack type code.", nullptr},
    {"bits", DataTypeGetBits, nullptr, "Bits per lane.", nullptr},
    {"lanes", DataTypeGetLanes, nullptr, "Vector lanes.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyTypeObject DataTypeType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ---- Device -----------------------------------------------------------------------------------

struct DeviceName {
  const char* name;
  int type;
};
static const DeviceName kDeviceNames[] = {
    {"cpu", 1},        {"cuda", 2},     {"cuda_host", 3},     {"opencl", 4},
    {"vulkan", 7},     {"metal", 8},    {"vpi", 9},           {"rocm", 10},
    {"rocm_host", 11}, {"ext_dev", 12}, {"cuda_managed", 13}, {"oneapi", 14},
    {"webgpu", 15},    {"hexagon", 16}, {"llvm", 1},          {"gpu", 2}};

static PyObject* DeviceNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* dev_type = nullptr;
  int dev_id = 0;
  static const char* kwlist[] = {"device_type", "device_id", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|i:Device", const_cast<char**>(kwlist),
                                   &dev_type, &dev_id)) {
    return nullptr;
  }
  int code = -1;
  if (PyUnicode_Check(dev_type)) {
    const char* s = PyUnicode_AsUTF8(dev_type);
    if (s == nullptr) return nullptr;
    for (const auto& d : kDeviceNames) {
      if (std::strcmp(s, d.name) == 0) code = d.type;
    }
    if (code < 0) {
      PyErr_Format(PyExc_ValueError, "polyffi: unknown device type '%s'", s);
      return nullptr;
    }
  } else {
    long x = PyLong_AsLong(dev_type);
    if (x == -1 && PyErr_Occurred()) return nullptr;
    code = static_cast<int>(x);
  }
  auto* obj = reinterpret_cast<DeviceObject*>(type->tp_alloc(type, 0));
  if (obj != nullptr) obj->dev = DLDevice{static_cast<DLDeviceType>(code), dev_id};
  return reinterpret_cast<PyObject*>(obj);
}

static const char* DeviceTypeName(int type) {
  for (const auto& d : kDeviceNames) {
    if (d.type == type) return d.name;
  }
  return nullptr;
}

static PyObject* DeviceRepr(PyObject* self) {
  DLDevice d = reinterpret_cast<DeviceObject*>(self)->dev;
  const char* name = DeviceTypeName(d.device_type);
  if (name != nullptr) return PyUnicode_FromFormat("%s(%d)", name, d.device_id);
  return PyUnicode_FromFormat("Device(%d, %d)", static_cast<int>(d.device_type), d.device_id);
}

static PyObject* DeviceRichCompare(PyObject* self, PyObject* other, int op) {
  if ((op != Py_EQ && op != Py_NE) || !Py_IS_TYPE(other, &DeviceType)) {
    Py_RETURN_NOTIMPLEMENTED;
  }
  DLDevice a = reinterpret_cast<DeviceObject*>(self)->dev;
  DLDevice b = reinterpret_cast<DeviceObject*>(other)->dev;
  bool eq = a.device_type == b.device_type && a.device_id == b.device_id;
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t DeviceHash(PyObject* self) {
  DLDevice d = reinterpret_cast<DeviceObject*>(self)->dev;
  return (static_cast<Py_hash_t>(d.device_type) << 20) + d.device_id + 1;
}

static PyObject* DeviceGetType(PyObject* self, void*) {
  return PyLong_FromLong(reinterpret_cast<DeviceObject*>(self)->dev.device_type);
}
static PyObject* DeviceGetId(PyObject* self, void*) {
  return PyLong_FromLong(reinterpret_cast<DeviceObject*>(self)->dev.device_id);
}

static PyObject* DeviceDLPack(PyObject* self, PyObject*) {
  DLDevice d = reinterpret_cast<DeviceObject*>(self)->dev;
  return Py_BuildValue("(ii)", static_cast<int>(d.device_type), d.device_id);
}

static PyGetSetDef kDeviceGetSet[] = {
    {"device_type", DeviceGetType, nullptr, "DLPack device type.", nullptr},
    {"device_id", DeviceGetId, nullptr, "Device ordinal.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

static PyMethodDef kDeviceMethods[] = {
    {"_tuple", DeviceDLPack, METH_NOARGS, "(device_type, device_id)"},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject DeviceType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// _core._set_shape_class(Shape): the tuple subclass returned shapes are made of.
static PyObject* SetShapeClass(PyObject*, PyObject* cls) {
  if (!PyType_Check(cls) ||
      !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls), &PyTuple_Type)) {
    PyErr_SetString(PyExc_TypeError, "_set_shape_class: expected a subclass of tuple");
    return nullptr;
  }
  Py_INCREF(cls);
  Py_XSETREF(g_shape_class, reinterpret_cast<PyTypeObject*>(cls));
  Py_RETURN_NONE;
}

static PyMethodDef kValueMethods[] = {{"_set_shape_class", SetShapeClass, METH_O, nullptr},
                                      {nullptr, nullptr, 0, nullptr}};

int InitValueTypes(PyObject* module) {
  if (PyModule_AddFunctions(module, kValueMethods) < 0) return -1;
  DataTypeType.tp_name = "polyffi.DataType";
  DataTypeType.tp_doc = "A DLPack data type, e.g. DataType(\"float32\").";
  DataTypeType.tp_basicsize = sizeof(DataTypeObject);
  DataTypeType.tp_flags = Py_TPFLAGS_DEFAULT;
  DataTypeType.tp_new = DataTypeNew;
  DataTypeType.tp_str = DataTypeStr;
  DataTypeType.tp_repr = DataTypeRepr;
  DataTypeType.tp_richcompare = DataTypeRichCompare;
  DataTypeType.tp_hash = DataTypeHash;
  DataTypeType.tp_getset = kDataTypeGetSet;
  DeviceType.tp_name = "polyffi.Device";
  DeviceType.tp_doc = "A DLPack device, e.g. Device(\"cpu\", 0).";
  DeviceType.tp_basicsize = sizeof(DeviceObject);
  DeviceType.tp_flags = Py_TPFLAGS_DEFAULT;
  DeviceType.tp_new = DeviceNew;
  DeviceType.tp_repr = DeviceRepr;
  DeviceType.tp_richcompare = DeviceRichCompare;
  DeviceType.tp_hash = DeviceHash;
  DeviceType.tp_getset = kDeviceGetSet;
  DeviceType.tp_methods = kDeviceMethods;
  if (PyType_Ready(&DataTypeType) < 0 || PyType_Ready(&DeviceType) < 0) return -1;
  Py_INCREF(&DataTypeType);
  if (PyModule_AddObject(module, "DataType", reinterpret_cast<PyObject*>(&DataTypeType)) < 0) {
    return -1;
  }
  Py_INCREF(&DeviceType);
  return PyModule_AddObject(module, "Device", reinterpret_cast<PyObject*>(&DeviceType));
}

}  // namespace polyffi_py
