// NDArray: a DLTensor* owned by the runtime, and DLPack exchange in and out (zero-copy).
#include <cstring>

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
    PyErr_SetString(PyExc_ValueError,
                    "polyffi: this DLPack capsule has already been consumed");
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
      PyErr_Format(PyExc_BufferError, "polyffi: unsupported DLPack version %u.%u",
                   v->version.major, v->version.minor);
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
  Py_BEGIN_ALLOW_THREADS
  rc = TVMArrayCopyFromBytes(t, view.buf, static_cast<size_t>(view.len));
  Py_END_ALLOW_THREADS
  PyBuffer_Release(&view);
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
  Py_BEGIN_ALLOW_THREADS
  rc = TVMArrayCopyFromTo(s, t, nullptr);
  Py_END_ALLOW_THREADS
  if (!CheckCall(rc)) return nullptr;
  Py_RETURN_NONE;
}

// Copies the array into a writable C-contiguous buffer of exactly its size.
static PyObject* NDArrayCopyToBuffer(PyObject* self, PyObject* dst) {
  DLTensor* t = TensorOf(self);
  if (t == nullptr) return nullptr;
  Py_buffer view;
  if (PyObject_GetBuffer(dst, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) != 0) return nullptr;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = TVMArrayCopyToBytes(t, view.buf, static_cast<size_t>(view.len));
  Py_END_ALLOW_THREADS
  PyBuffer_Release(&view);
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
