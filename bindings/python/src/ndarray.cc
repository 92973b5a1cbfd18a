// NDArray: a DLTensor* owned by the runtime, and DLPack exchange in and out (zero-copy).
#include <cstdlib>
#include <cstring>
#include <new>

#include "common.h"

namespace polyffi_py {

static const char kLegacyName[] = "dltensor";
static const char kVersionedName[] = "dltensor_versioned";
static const char kUsedLegacyName[] = "used_dltensor";
static const char kUsedVersionedName[] = "used_dltensor_versioned";

// ---- DLPack in ---------------------------------------------------------------------------------

// Adapts a DLPack >= 1.0 tensor to the legacy struct that TVMArrayFromDLPack takes.
static void DeleteVersionedAdapter(DLManagedTensor* self) {
  auto* versioned = static_cast<DLManagedTensorVersioned*>(self->manager_ctx);
  if (versioned != nullptr && versioned->deleter != nullptr) versioned->deleter(versioned);
  delete self;
}

bool IsDLPackProducer(PyObject* obj) {
  if (PyCapsule_CheckExact(obj)) {
    return PyCapsule_IsValid(obj, kLegacyName) || PyCapsule_IsValid(obj, kVersionedName) ||
           PyCapsule_IsValid(obj, kUsedLegacyName) || PyCapsule_IsValid(obj, kUsedVersionedName);
  }
  if (PyType_Check(obj)) return false;
  return PyObject_HasAttrString(reinterpret_cast<PyObject*>(Py_TYPE(obj)), "__dlpack__");
}

// Consumes a capsule: on success the capsule is renamed "used_*" and the array owns the tensor.
static TVMArrayHandle ArrayFromCapsule(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, kUsedLegacyName) ||
      PyCapsule_IsValid(capsule, kUsedVersionedName)) {
    PyErr_SetString(PyExc_ValueError, "polyffi: this DLPack capsule has already been consumed");
    return nullptr;
  }
  TVMArrayHandle out = nullptr;
  if (PyCapsule_IsValid(capsule, kLegacyName)) {
    auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kLegacyName));
    if (!CheckCall(TVMArrayFromDLPack(mt, &out))) return nullptr;
    PyCapsule_SetName(capsule, kUsedLegacyName);
    return out;
  }
  if (PyCapsule_IsValid(capsule, kVersionedName)) {
    auto* v = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kVersionedName));
    if (v->version.major != 1) {
      PyErr_Format(PyExc_BufferError, "polyffi: unsupported DLPack version %u.%u", v->version.major,
                   v->version.minor);
      return nullptr;
    }
    auto* adapter = new DLManagedTensor();
    adapter->dl_tensor = v->dl_tensor;
    adapter->manager_ctx = v;
    adapter->deleter = DeleteVersionedAdapter;
    if (TVMArrayFromDLPack(adapter, &out) != 0) {
      delete adapter;  // the capsule still owns v
      return RaiseLastError(-1), nullptr;
    }
    PyCapsule_SetName(capsule, kUsedVersionedName);
    return out;
  }
  PyErr_SetString(PyExc_TypeError, "polyffi: expected a DLPack capsule");
  return nullptr;
}

TVMArrayHandle ArrayFromDLPackObject(PyObject* obj) {
  if (PyCapsule_CheckExact(obj)) return ArrayFromCapsule(obj);
  // The legacy protocol is understood by every producer (numpy >= 1.22, torch, jax, cupy).
  PyObject* capsule = PyObject_CallMethod(obj, "__dlpack__", nullptr);
  if (capsule == nullptr) return nullptr;
  TVMArrayHandle out = ArrayFromCapsule(capsule);
  Py_DECREF(capsule);  // a consumed capsule's destructor does nothing
  return out;
}

// ---- numpy arrays without numpy -----------------------------------------------------------------
//
// Passing a numpy array used to cost a __dlpack__() call, a capsule and a runtime NDArray per
// argument per call (~350 ns). A borrowed view needs only the data pointer, shape, strides and
// dtype, which numpy keeps in public C structs (numpy/ndarraytypes.h). Extensions compiled
// against any numpy since 1.7 read these fields through macros, so numpy keeps their offsets;
// 2.0 moved PyArray_Descr's elsize and alignment, which come after type_num and are not read
// here. The layout is still checked once, against __array_interface__, before it is trusted.

namespace {

struct NumpyArrayFields {
  PyObject ob_base;  // PyObject_HEAD
  char* data;
  int nd;
  Py_ssize_t* dimensions;
  Py_ssize_t* strides;
  PyObject* base;
  PyObject* descr;
  int flags;
};

struct NumpyDescrHead {
  PyObject ob_base;  // PyObject_HEAD
  PyTypeObject* typeobj;
  char kind;
  char type;
  char byteorder;
  char former_flags;
  int type_num;
};

constexpr int kNpyCContiguous = 0x0001;
constexpr int kNpyWriteable = 0x0400;
constexpr char kForeignByteOrder = PY_LITTLE_ENDIAN ? '>' : '<';

enum class NumpyLayout { kUnknown, kTrusted, kRejected };
NumpyLayout g_numpy_layout = NumpyLayout::kUnknown;

// DLPack types of the builtin numpy type numbers (NPY_BOOL = 0 ... NPY_DOUBLE = 12, NPY_HALF =
// 23); bits 0 marks a type DLPack has no code for (long double, complex, object, ...).
constexpr DLDataType kNoType{0, 0, 0};
constexpr DLDataType NpyInt(int bytes) { return DLDataType{kDLInt, uint8_t(8 * bytes), 1}; }
constexpr DLDataType NpyUInt(int bytes) { return DLDataType{kDLUInt, uint8_t(8 * bytes), 1}; }
constexpr DLDataType kNumpyTypes[24] = {
    DLDataType{6, 8, 1},  // NPY_BOOL as kDLBool, like numpy's own DLPack export
    NpyInt(1),            // NPY_BYTE
    NpyUInt(1),           // NPY_UBYTE
    NpyInt(sizeof(short)), NpyUInt(sizeof(short)), NpyInt(sizeof(int)), NpyUInt(sizeof(int)),
    NpyInt(sizeof(long)), NpyUInt(sizeof(long)), NpyInt(sizeof(long long)),
    NpyUInt(sizeof(long long)), DLDataType{kDLFloat, 32, 1},  // NPY_FLOAT
    DLDataType{kDLFloat, 64, 1},                              // NPY_DOUBLE
    // 13-22: long double, the complex types, object, bytes, str, void, datetime, timedelta.
    kNoType, kNoType, kNoType, kNoType, kNoType, kNoType, kNoType, kNoType, kNoType, kNoType,
    DLDataType{kDLFloat, 16, 1}};  // NPY_HALF

inline bool NumpyDataType(int type_num, DLDataType* out) {
  if (type_num < 0 || type_num >= 24 || kNumpyTypes[type_num].bits == 0) return false;
  *out = kNumpyTypes[type_num];
  return true;
}

PyTypeObject* FindNumpyBase(PyTypeObject* type) {
  PyObject* mro = type->tp_mro;
  if (mro == nullptr || !PyTuple_Check(mro)) return nullptr;
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(mro); ++k) {
    auto* base = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, k));
    if (std::strcmp(base->tp_name, "numpy.ndarray") == 0) return base;
  }
  return nullptr;
}

// Compares what the struct layout says about `obj` with numpy's own __array_interface__.
bool LayoutMatches(PyObject* obj, const NumpyInfo& info, const NumpyArrayFields* a) {
  PyObject* iface = PyObject_GetAttrString(obj, "__array_interface__");
  if (iface == nullptr || !PyDict_Check(iface)) {
    Py_XDECREF(iface);
    PyErr_Clear();
    return false;
  }
  bool ok = false;
  PyObject* data = PyDict_GetItemString(iface, "data");        // (address, read_only)
  PyObject* shape = PyDict_GetItemString(iface, "shape");      // tuple
  PyObject* strides = PyDict_GetItemString(iface, "strides");  // None when C-contiguous
  PyObject* typestr = PyDict_GetItemString(iface, "typestr");  // e.g. "<f4"
  if (data != nullptr && PyTuple_Check(data) && PyTuple_GET_SIZE(data) == 2 && shape != nullptr &&
      PyTuple_Check(shape) && typestr != nullptr && PyUnicode_Check(typestr) &&
      strides != nullptr) {
    ok = PyLong_AsVoidPtr(PyTuple_GET_ITEM(data, 0)) == info.data &&
         PyTuple_GET_SIZE(shape) == info.ndim;
    for (int d = 0; ok && d < info.ndim; ++d) {
      ok = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d)) == info.shape[d];
    }
    if (ok && strides != Py_None) {
      ok = PyTuple_Check(strides) && PyTuple_GET_SIZE(strides) == info.ndim;
      for (int d = 0; ok && d < info.ndim; ++d) {
        ok = PyLong_AsSsize_t(PyTuple_GET_ITEM(strides, d)) == a->strides[d];
      }
    }
    const char* ts = PyUnicode_AsUTF8(typestr);
    char kind = info.dtype.code == 6         ? 'b'
                : info.dtype.code == kDLInt  ? 'i'
                : info.dtype.code == kDLUInt ? 'u'
                                             : 'f';
    ok = ok && ts != nullptr && std::strlen(ts) >= 3 && ts[1] == kind &&
         std::atoi(ts + 2) == info.itemsize;
  }
  PyErr_Clear();
  Py_DECREF(iface);
  return ok;
}

}  // namespace

PyTypeObject* g_numpy_type = nullptr;

bool DescribeNumpyArray(PyObject* obj, NumpyInfo* out) {
  if (g_numpy_layout == NumpyLayout::kRejected) return false;
  PyTypeObject* type = Py_TYPE(obj);
  if (g_numpy_type == nullptr) {
    PyTypeObject* base = FindNumpyBase(type);
    if (base == nullptr) return false;
    if (static_cast<size_t>(base->tp_basicsize) < sizeof(NumpyArrayFields)) {
      g_numpy_layout = NumpyLayout::kRejected;
      return false;
    }
    g_numpy_type = base;
  } else if (type != g_numpy_type && !PyType_IsSubtype(type, g_numpy_type)) {
    return false;
  }
  const auto* a = reinterpret_cast<const NumpyArrayFields*>(obj);
  const auto* descr = reinterpret_cast<const NumpyDescrHead*>(a->descr);
  if ((a->flags & kNpyWriteable) == 0 || descr == nullptr ||
      descr->byteorder == kForeignByteOrder || !NumpyDataType(descr->type_num, &out->dtype)) {
    return false;
  }
  out->data = a->data;
  out->ndim = a->nd;
  static_assert(sizeof(Py_ssize_t) == sizeof(int64_t), "npy_intp is shared as int64_t");
  out->shape = reinterpret_cast<int64_t*>(a->dimensions);
  out->itemsize = out->dtype.bits / 8;
  out->strides = nullptr;
  if ((a->flags & kNpyCContiguous) == 0) {
    for (int d = 0; d < a->nd; ++d) {
      if (a->strides[d] % out->itemsize != 0) return false;
    }
    out->strides = a->strides;
  }
  if (g_numpy_layout == NumpyLayout::kUnknown) {
    g_numpy_layout = LayoutMatches(obj, *out, a) ? NumpyLayout::kTrusted : NumpyLayout::kRejected;
    if (g_numpy_layout == NumpyLayout::kRejected) return false;
  }
  return true;
}

// ---- Owned arrays over Python buffers --------------------------------------------------------

bool DataTypeFromBufferFormat(const char* format, Py_ssize_t itemsize, DLDataType* out) {
  const char* f = format == nullptr ? "B" : format;
  if (*f == '@' || *f == '=' || *f == (PY_LITTLE_ENDIAN ? '<' : '>')) {
    ++f;
  } else if (*f == '<' || *f == '>' || *f == '!') {
    return false;  // foreign byte order
  }
  if (f[0] == '\0' || f[1] != '\0') return false;  // structs, sub-arrays, pointers
  if (itemsize != 1 && itemsize != 2 && itemsize != 4 && itemsize != 8) return false;
  uint8_t bits = static_cast<uint8_t>(8 * itemsize);
  if (std::strchr("bhilqn", *f) != nullptr) {
    *out = DLDataType{kDLInt, bits, 1};
  } else if (std::strchr("BHILQN", *f) != nullptr) {
    *out = DLDataType{kDLUInt, bits, 1};
  } else if (std::strchr("efd", *f) != nullptr) {
    *out = DLDataType{kDLFloat, bits, 1};
  } else if (*f == '?') {
    *out = DLDataType{6, bits, 1};
  } else {
    return false;
  }
  return true;
}

namespace {

// A DLManagedTensor that holds a Py_buffer; the runtime's deleter releases it. The buffer is
// filled in place (some exporters point view.shape into the Py_buffer itself).
struct BufferTensor {
  DLManagedTensor managed;
  Py_buffer view;
  int64_t shape[PyBUF_MAX_NDIM];
  int64_t strides[PyBUF_MAX_NDIM];
};

void DeleteBufferTensor(DLManagedTensor* self) {
  auto* bt = reinterpret_cast<BufferTensor*>(self);
  // The runtime may free the array on any thread; releasing the buffer needs the GIL, and after
  // interpreter shutdown leaking it is the only safe choice.
  {
    ScopedGIL gil;
    if (gil.ok()) PyBuffer_Release(&bt->view);
  }
  delete bt;
}

TVMArrayHandle ArrayFromBuffer(PyObject* obj) {
  auto* bt = new (std::nothrow) BufferTensor();
  if (bt == nullptr) {
    PyErr_NoMemory();
    return nullptr;
  }
  Py_buffer& view = bt->view;
  if (PyObject_GetBuffer(obj, &view, PyBUF_RECORDS) != 0) {
    delete bt;
    return nullptr;
  }
  auto fail = [bt]() -> TVMArrayHandle {
    PyBuffer_Release(&bt->view);
    delete bt;
    return nullptr;
  };
  DLTensor& t = bt->managed.dl_tensor;
  if (!DataTypeFromBufferFormat(view.format, view.itemsize, &t.dtype)) {
    PyErr_Format(PyExc_TypeError,
                 "polyffi: buffer of '%s' has element format '%s' that DLPack "
                 "cannot carry",
                 Py_TYPE(obj)->tp_name, view.format != nullptr ? view.format : "B");
    return fail();
  }
  t.data = view.buf;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = view.ndim;
  t.shape = bt->shape;
  t.strides = nullptr;
  t.byte_offset = 0;
  for (int d = 0; d < view.ndim; ++d) bt->shape[d] = view.shape[d];
  if (view.strides != nullptr && !PyBuffer_IsContiguous(&view, 'C')) {
    for (int d = 0; d < view.ndim; ++d) {
      if (view.strides[d] % view.itemsize != 0) {
        PyErr_SetString(PyExc_BufferError, "polyffi: buffer strides are not whole elements");
        return fail();
      }
      bt->strides[d] = view.strides[d] / view.itemsize;
    }
    t.strides = bt->strides;
  }
  bt->managed.manager_ctx = nullptr;
  bt->managed.deleter = DeleteBufferTensor;
  TVMArrayHandle out = nullptr;
  if (TVMArrayFromDLPack(&bt->managed, &out) != 0) {
    RaiseLastError(-1);
    return fail();
  }
  return out;
}

}  // namespace

TVMArrayHandle OwnedArrayFromObject(PyObject* obj) {
  if (IsDLPackProducer(obj)) return ArrayFromDLPackObject(obj);
  if (PyObject_CheckBuffer(obj)) return ArrayFromBuffer(obj);
  PyErr_Format(PyExc_TypeError, "polyffi: '%s' is not an array (no __dlpack__, no buffer)",
               Py_TYPE(obj)->tp_name);
  return nullptr;
}

// ---- DLPack out --------------------------------------------------------------------------------

static void LegacyCapsuleDestructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kLegacyName)) return;  // consumed: the consumer owns it
  auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kLegacyName));
  TVMDLManagedTensorCallDeleter(mt);
}

static void DeleteVersionedExport(DLManagedTensorVersioned* self) {
  TVMDLManagedTensorCallDeleter(static_cast<DLManagedTensor*>(self->manager_ctx));
  delete self;
}

static void VersionedCapsuleDestructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kVersionedName)) return;
  auto* v = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kVersionedName));
  if (v->deleter != nullptr) v->deleter(v);
}

static HandleObject* AsArray(PyObject* self) {
  auto* h = reinterpret_cast<HandleObject*>(self);
  if (h->handle == nullptr) {
    PyErr_SetString(PyExc_ValueError, "polyffi: NDArray handle has been released");
    return nullptr;
  }
  return h;
}

static DLTensor* TensorOf(PyObject* self) {
  HandleObject* h = AsArray(self);
  return h == nullptr ? nullptr : static_cast<DLTensor*>(h->handle);
}

static int64_t NumBytes(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n * ((t->dtype.bits * t->dtype.lanes + 7) / 8);
}

// Owned fresh copy of an array (for __dlpack__(copy=True)).
static TVMArrayHandle CopyOf(const DLTensor* t) {
  TVMArrayHandle out = nullptr;
  if (!CheckCall(TVMArrayAlloc(t->shape, t->ndim, t->dtype.code, t->dtype.bits, t->dtype.lanes,
                               t->device.device_type, t->device.device_id, &out))) {
    return nullptr;
  }
  if (!CheckCall(TVMArrayCopyFromTo(const_cast<DLTensor*>(t), out, nullptr))) {
    TVMArrayFree(out);
    return nullptr;
  }
  return out;
}

static PyObject* NDArrayDLPack(PyObject* self, PyObject* args, PyObject* kwargs) {
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  static const char* kwlist[] = {"stream", "max_version", "dl_device", "copy", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", const_cast<char**>(kwlist),
                                   &stream, &max_version, &dl_device, &copy)) {
    return nullptr;
  }
  HandleObject* h = AsArray(self);
  if (h == nullptr) return nullptr;
  auto* t = static_cast<DLTensor*>(h->handle);
  if (dl_device != Py_None) {
    int type = 0, id = 0;
    if (!PyArg_ParseTuple(dl_device, "ii:dl_device", &type, &id)) return nullptr;
    if (type != t->device.device_type || id != t->device.device_id) {
      PyErr_SetString(PyExc_BufferError, "polyffi: cross-device DLPack export is not supported");
      return nullptr;
    }
  }
  bool want_copy = copy != Py_None && PyObject_IsTrue(copy) == 1;
  if (h->code == kTVMDLTensorHandle && !want_copy) {
    PyErr_SetString(PyExc_BufferError,
                    "polyffi: a borrowed array view cannot be exported without copy=True");
    return nullptr;
  }
  TVMArrayHandle source = t;
  TVMArrayHandle copied = nullptr;
  if (want_copy) {
    copied = CopyOf(t);
    if (copied == nullptr) return nullptr;
    source = copied;
  }
  DLManagedTensor* mt = nullptr;
  int rc = TVMArrayToDLPack(source, &mt);
  TVMArrayFree(copied);  // the exported tensor keeps the copy alive
  if (!CheckCall(rc)) return nullptr;

  long major = 0;
  if (max_version != Py_None) {
    if (!PyTuple_Check(max_version) || PyTuple_GET_SIZE(max_version) < 1) {
      TVMDLManagedTensorCallDeleter(mt);
      PyErr_SetString(PyExc_TypeError, "max_version must be a (major, minor) tuple");
      return nullptr;
    }
    major = PyLong_AsLong(PyTuple_GET_ITEM(max_version, 0));
    if (major == -1 && PyErr_Occurred()) {
      TVMDLManagedTensorCallDeleter(mt);
      return nullptr;
    }
  }
  if (major >= 1) {
    auto* v = new DLManagedTensorVersioned();
    v->version = DLPackVersion{1, 0};
    v->manager_ctx = mt;
    v->deleter = DeleteVersionedExport;
    v->flags = want_copy ? (1ULL << 1) : 0;  // DLPACK_FLAG_BITMASK_IS_COPIED
    v->dl_tensor = mt->dl_tensor;
    PyObject* capsule = PyCapsule_New(v, kVersionedName, VersionedCapsuleDestructor);
    if (capsule == nullptr) DeleteVersionedExport(v);
    return capsule;
  }
  PyObject* capsule = PyCapsule_New(mt, kLegacyName, LegacyCapsuleDestructor);
  if (capsule == nullptr) TVMDLManagedTensorCallDeleter(mt);
  return capsule;
}

static PyObject* NDArrayDLPackDevice(PyObject* self, PyObject*) {
  DLTensor* t = TensorOf(self);
  if (t == nullptr) return nullptr;
  return Py_BuildValue("(ii)", static_cast<int>(t->device.device_type), t->device.device_id);
}

static PyObject* NDArrayGetShape(PyObject* self, void*) {
  DLTensor* t = TensorOf(self);
  if (t == nullptr) return nullptr;
  PyObject* shape = PyTuple_New(t->ndim);
  if (shape == nullptr) return nullptr;
  for (int i = 0; i < t->ndim; ++i) {
    PyObject* d = PyLong_FromLongLong(t->shape[i]);
    if (d == nullptr) {
      Py_DECREF(shape);
      return nullptr;
    }
    PyTuple_SET_ITEM(shape, i, d);
  }
  return shape;
}

static PyObject* NDArrayGetStrides(PyObject* self, void*) {
  DLTensor* t = TensorOf(self);
  if (t == nullptr) return nullptr;
  if (t->strides == nullptr) Py_RETURN_NONE;
  PyObject* strides = PyTuple_New(t->ndim);
  if (strides == nullptr) return nullptr;
  for (int i = 0; i < t->ndim; ++i) {
    PyTuple_SET_ITEM(strides, i, PyLong_FromLongLong(t->strides[i]));
  }
  return strides;
}

static PyObject* NDArrayGetDType(PyObject* self, void*) {
  DLTensor* t = TensorOf(self);
  if (t == nullptr) return nullptr;
  return DataTypeToString(t->dtype);
}

static PyObject* NDArrayGetDevice(PyObject* self, void*) {
  DLTensor* t = TensorOf(self);
  if (t == nullptr) return nullptr;
  auto* dev = PyObject_New(DeviceObject, &DeviceType);
  if (dev != nullptr) dev->dev = t->device;
  return reinterpret_cast<PyObject*>(dev);
}

static PyObject* NDArrayGetNDim(PyObject* self, void*) {
  DLTensor* t = TensorOf(self);
  if (t == nullptr) return nullptr;
  return PyLong_FromLong(t->ndim);
}

static PyObject* NDArrayGetDataPtr(PyObject* self, void*) {
  DLTensor* t = TensorOf(self);
  if (t == nullptr) return nullptr;
  return PyLong_FromVoidPtr(static_cast<char*>(t->data) + t->byte_offset);
}

static PyObject* NDArrayGetNBytes(PyObject* self, void*) {
  DLTensor* t = TensorOf(self);
  if (t == nullptr) return nullptr;
  return PyLong_FromLongLong(NumBytes(t));
}

static PyObject* NDArrayIsView(PyObject* self, void*) {
  return PyBool_FromLong(reinterpret_cast<HandleObject*>(self)->code == kTVMDLTensorHandle);
}

// Copies a C-contiguous buffer of exactly the array's size into it.
static PyObject* NDArrayCopyFromBuffer(PyObject* self, PyObject* src) {
  DLTensor* t = TensorOf(self);
  if (t == nullptr) return nullptr;
  Py_buffer view;
  if (PyObject_GetBuffer(src, &view, PyBUF_C_CONTIGUOUS) != 0) return nullptr;
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = TVMArrayCopyFromBytes(t, view.buf, static_cast<size_t>(view.len));
  Py_END_ALLOW_THREADS PyBuffer_Release(&view);
  if (!CheckCall(rc)) return nullptr;
  Py_RETURN_NONE;
}

// Copies from another NDArray of the same shape and dtype.
static PyObject* NDArrayCopyFromArray(PyObject* self, PyObject* src) {
  DLTensor* t = TensorOf(self);
  if (t == nullptr) return nullptr;
  if (!PyObject_TypeCheck(src, &NDArrayBaseType)) {
    PyErr_SetString(PyExc_TypeError, "expected an NDArray");
    return nullptr;
  }
  DLTensor* s = TensorOf(src);
  if (s == nullptr) return nullptr;
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = TVMArrayCopyFromTo(s, t, nullptr);
  Py_END_ALLOW_THREADS if (!CheckCall(rc)) return nullptr;
  Py_RETURN_NONE;
}

// Copies the array into a writable C-contiguous buffer of exactly its size.
static PyObject* NDArrayCopyToBuffer(PyObject* self, PyObject* dst) {
  DLTensor* t = TensorOf(self);
  if (t == nullptr) return nullptr;
  Py_buffer view;
  if (PyObject_GetBuffer(dst, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) != 0) return nullptr;
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = TVMArrayCopyToBytes(t, view.buf, static_cast<size_t>(view.len));
  Py_END_ALLOW_THREADS PyBuffer_Release(&view);
  if (!CheckCall(rc)) return nullptr;
  Py_RETURN_NONE;
}

static PyObject* NDArrayToBytes(PyObject* self, PyObject*) {
  DLTensor* t = TensorOf(self);
  if (t == nullptr) return nullptr;
  int64_t n = NumBytes(t);
  PyObject* out = PyBytes_FromStringAndSize(nullptr, n);
  if (out == nullptr) return nullptr;
  if (!CheckCall(TVMArrayCopyToBytes(t, PyBytes_AS_STRING(out), static_cast<size_t>(n)))) {
    Py_DECREF(out);
    return nullptr;
  }
  return out;
}

static PyGetSetDef kNDArrayGetSet[] = {
    {"shape", NDArrayGetShape, nullptr, "Shape as a tuple of ints.", nullptr},
    {"strides", NDArrayGetStrides, nullptr, "Strides in elements, or None if compact.", nullptr},
    {"dtype", NDArrayGetDType, nullptr, "Element type as a string, e.g. 'float32'.", nullptr},
    {"device", NDArrayGetDevice, nullptr, "The Device holding the data.", nullptr},
    {"ndim", NDArrayGetNDim, nullptr, "Number of dimensions.", nullptr},
    {"data_ptr", NDArrayGetDataPtr, nullptr, "Address of the first element.", nullptr},
    {"nbytes", NDArrayGetNBytes, nullptr, "Size of the data in bytes.", nullptr},
    {"is_view", NDArrayIsView, nullptr, "True for a borrowed view received in a callback.",
     nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

static PyMethodDef kNDArrayMethods[] = {
    {"__dlpack__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(NDArrayDLPack)),
     METH_VARARGS | METH_KEYWORDS, "Export as a DLPack capsule (zero-copy)."},
    {"__dlpack_device__", NDArrayDLPackDevice, METH_NOARGS, "(device_type, device_id)"},
    {"_copy_from_buffer", NDArrayCopyFromBuffer, METH_O, nullptr},
    {"_copy_from_array", NDArrayCopyFromArray, METH_O, nullptr},
    {"_copy_to_buffer", NDArrayCopyToBuffer, METH_O, nullptr},
    {"_to_bytes", NDArrayToBytes, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject NDArrayBaseType = {PyVarObject_HEAD_INIT(nullptr, 0)};

int InitNDArrayTypes(PyObject* module) {
  NDArrayBaseType.tp_name = "polyffi._core.NDArrayBase";
  NDArrayBaseType.tp_doc = "A runtime n-dimensional array.";
  NDArrayBaseType.tp_basicsize = sizeof(HandleObject);
  NDArrayBaseType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;
  NDArrayBaseType.tp_base = &ObjectBaseType;
  NDArrayBaseType.tp_getset = kNDArrayGetSet;
  NDArrayBaseType.tp_methods = kNDArrayMethods;
  if (PyType_Ready(&NDArrayBaseType) < 0) return -1;
  Py_INCREF(&NDArrayBaseType);
  return PyModule_AddObject(module, "NDArrayBase", reinterpret_cast<PyObject*>(&NDArrayBaseType));
}

}  // namespace polyffi_py
