// Handle-owning Python types: ObjectBase, ModuleBase and PackedFunc (the vectorcall hot path).
#include <polyffi/binding_common.h>

#include <cstring>

#include "common.h"

namespace polyffi_py {

void FreeHandle(void* handle, int code) {
  // Dropping the last reference can run a Python finalizer (callback.cc), which takes the GIL
  // itself; we hold it here, which is fine because PyGILState_Ensure is re-entrant.
  PolyffiFreeHandle(handle, code);
}

static PyObject* AllocHandleObject(PyTypeObject* type, void* handle, int code) {
  PyObject* obj = type->tp_alloc(type, 0);
  if (obj == nullptr) {
    FreeHandle(handle, code);
    return nullptr;
  }
  auto* h = reinterpret_cast<HandleObject*>(obj);
  h->handle = handle;
  h->code = code;
  return obj;
}

static PyObject* PackedFuncVectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                                      PyObject* kwnames);

PyObject* NewPackedFunc(TVMFunctionHandle handle) {
  PyObject* obj = AllocHandleObject(&PackedFuncType, handle, kTVMPackedFuncHandle);
  if (obj != nullptr) reinterpret_cast<HandleObject*>(obj)->vectorcall = PackedFuncVectorcall;
  return obj;
}

PyObject* WrapHandle(void* handle, int code) {
  switch (code) {
    case kTVMPackedFuncHandle:
      return NewPackedFunc(handle);
    case kTVMModuleHandle:
      return AllocHandleObject(reinterpret_cast<PyTypeObject*>(g_module_class), handle, code);
    case kTVMNDArrayHandle:
      return AllocHandleObject(reinterpret_cast<PyTypeObject*>(g_ndarray_class), handle, code);
    case kTVMObjectHandle: {
      unsigned tindex = 0;
      if (TVMObjectGetTypeIndex(handle, &tindex) != 0) {
        TVMObjectFree(handle);
        return RaiseLastError(-1);
      }
      PyObject* cls = ClassForTypeIndex(tindex);
      if (cls == nullptr) {
        TVMObjectFree(handle);
        return nullptr;
      }
      return AllocHandleObject(reinterpret_cast<PyTypeObject*>(cls), handle, code);
    }
    default:
      PyErr_Format(PyExc_TypeError, "polyffi: cannot wrap a handle of type code %d", code);
      return nullptr;
  }
}

// ---- ObjectBase -------------------------------------------------------------------------------

static void HandleDealloc(PyObject* self) {
  auto* h = reinterpret_cast<HandleObject*>(self);
  if (h->weaklist != nullptr) PyObject_ClearWeakRefs(self);
  void* handle = h->handle;
  h->handle = nullptr;
  FreeHandle(handle, h->code);
  Py_TYPE(self)->tp_free(self);
}

static PyObject* HandleGetHandle(PyObject* self, void*) {
  return PyLong_FromVoidPtr(reinterpret_cast<HandleObject*>(self)->handle);
}

static PyObject* HandleGetCode(PyObject* self, void*) {
  return PyLong_FromLong(reinterpret_cast<HandleObject*>(self)->code);
}

static bool RequireHandle(HandleObject* h) {
  if (h->handle != nullptr) return true;
  PyErr_Format(PyExc_ValueError, "polyffi: %s handle has been released", Py_TYPE(h)->tp_name);
  return false;
}

static PyObject* HandleGetTypeIndex(PyObject* self, void*) {
  auto* h = reinterpret_cast<HandleObject*>(self);
  if (!RequireHandle(h)) return nullptr;
  void* obj = h->handle;
  unsigned tindex = 0;
  if (!CheckCall(TVMObjectGetTypeIndex(obj, &tindex))) return nullptr;
  return PyLong_FromUnsignedLong(tindex);
}

static PyObject* HandleGetTypeKey(PyObject* self, void*) {
  auto* h = reinterpret_cast<HandleObject*>(self);
  if (!RequireHandle(h)) return nullptr;
  unsigned tindex = 0;
  if (!CheckCall(TVMObjectGetTypeIndex(h->handle, &tindex))) return nullptr;
  char* key = nullptr;
  if (!CheckCall(TVMObjectTypeIndex2Key(tindex, &key))) return nullptr;
  return PyUnicode_FromString(key);
}

// Releases the handle now instead of waiting for the garbage collector.
static PyObject* HandleRelease(PyObject* self, PyObject*) {
  auto* h = reinterpret_cast<HandleObject*>(self);
  void* handle = h->handle;
  h->handle = nullptr;
  FreeHandle(handle, h->code);
  Py_RETURN_NONE;
}

static PyObject* HandleEnter(PyObject* self, PyObject*) {
  Py_INCREF(self);
  return self;
}

static PyObject* HandleExit(PyObject* self, PyObject*) { return HandleRelease(self, nullptr); }

static PyObject* HandleSameAs(PyObject* self, PyObject* other) {
  if (!PyObject_TypeCheck(other, &ObjectBaseType)) Py_RETURN_FALSE;
  return PyBool_FromLong(reinterpret_cast<HandleObject*>(self)->handle ==
                         reinterpret_cast<HandleObject*>(other)->handle);
}

static PyObject* HandleRichCompare(PyObject* self, PyObject* other, int op) {
  if ((op != Py_EQ && op != Py_NE) || !PyObject_TypeCheck(other, &ObjectBaseType)) {
    Py_RETURN_NOTIMPLEMENTED;
  }
  bool same = reinterpret_cast<HandleObject*>(self)->handle ==
              reinterpret_cast<HandleObject*>(other)->handle;
  return PyBool_FromLong(op == Py_EQ ? same : !same);
}

static Py_hash_t HandleHash(PyObject* self) {
  return _Py_HashPointer(reinterpret_cast<HandleObject*>(self)->handle);
}

static PyObject* HandleRepr(PyObject* self) {
  return PyUnicode_FromFormat("<%s handle=%p>", Py_TYPE(self)->tp_name,
                              reinterpret_cast<HandleObject*>(self)->handle);
}

static PyGetSetDef kHandleGetSet[] = {
    {"handle", HandleGetHandle, nullptr, "Address of the underlying handle (0 once released).",
     nullptr},
    {"type_code", HandleGetCode, nullptr, "Type code the handle travels as.", nullptr},
    {"type_index", HandleGetTypeIndex, nullptr, "Runtime type index of the object.", nullptr},
    {"type_key", HandleGetTypeKey, nullptr, "Runtime type key of the object.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

static PyMethodDef kHandleMethods[] = {
    {"release", HandleRelease, METH_NOARGS, "Release the handle now; later use is an error."},
    {"same_as", HandleSameAs, METH_O, "Whether both wrap the same runtime object."},
    {"__enter__", HandleEnter, METH_NOARGS, nullptr},
    {"__exit__", HandleExit, METH_VARARGS, nullptr},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject ObjectBaseType = {PyVarObject_HEAD_INIT(nullptr, 0)};
PyTypeObject ModuleBaseType = {PyVarObject_HEAD_INIT(nullptr, 0)};
PyTypeObject PackedFuncType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ---- PackedFunc -------------------------------------------------------------------------------

// Checks that the fast path leaves out: keyword arguments, a released handle, absurd counts.
static POLYFFI_COLD bool CheckUnusualCall(HandleObject* f, Py_ssize_t n, PyObject* kwnames) {
  if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0) {
    PyErr_SetString(PyExc_TypeError, "PackedFunc takes positional arguments only");
    return false;
  }
  if (f->handle == nullptr) {
    PyErr_SetString(PyExc_ValueError, "polyffi: calling a PackedFunc that has been released");
    return false;
  }
  if (n > INT32_MAX) {
    PyErr_SetString(PyExc_OverflowError, "polyffi: too many arguments");
    return false;
  }
  return true;
}

// The callee handed back the borrowed view of one of our arguments, which dies with this call:
// return an owned array over the same memory instead (the argument itself keeps it alive).
static POLYFFI_COLD PyObject* ArrayOfArgument(PyObject* arg) {
  TVMArrayHandle nd = OwnedArrayFromObject(arg);
  if (nd == nullptr) return nullptr;
  return WrapHandle(nd, kTVMNDArrayHandle);
}

// One argument of the scalar fast path: exact int (one machine word), float, None, an ASCII str
// without NUL, or a function/array/object handle. False sends the whole call to the general path.
static inline bool FastArg(PyObject* arg, TVMValue* v, int* code) {
  PyTypeObject* type = Py_TYPE(arg);
  if (type == &PyLong_Type) {
    *code = kTVMArgInt;
    return CompactLongValue(arg, &v->v_int64);
  }
  if (type == &PyFloat_Type) {
    v->v_float64 = PyFloat_AS_DOUBLE(arg);
    *code = kTVMArgFloat;
    return true;
  }
  if (type == &PyUnicode_Type && PyUnicode_IS_COMPACT_ASCII(arg)) {
    // Compact ASCII data is its own NUL-terminated UTF-8; an embedded NUL needs runtime.String.
    const char* s = static_cast<const char*>(PyUnicode_DATA(arg));
    v->v_str = s;
    *code = kTVMStr;
    return std::memchr(s, '\0', static_cast<size_t>(PyUnicode_GET_LENGTH(arg))) == nullptr;
  }
  if (arg == Py_None) {
    v->v_handle = nullptr;
    *code = kTVMNullptr;
    return true;
  }
  return false;
}

static PyObject* FinishCall(int rc, TVMValue ret, int ret_code) {
  if (POLYFFI_UNLIKELY(rc != 0)) return RaiseLastError(rc);
  return ReturnToPythonFast(ret, ret_code);
}

// Every other call: arrays as stack views, temporaries (callbacks, containers, NUL strings).
// Out of line (keeps the scalar path's frame small) but not cold: arrays are a hot case too.
static POLYFFI_NOINLINE PyObject* GeneralCall(HandleObject* f, PyObject* const* args,
                                              Py_ssize_t n) {
  ArgPack pack(n, /*allow_views=*/true);
  if (!pack.ok()) return PyErr_NoMemory();
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (pack.Set(static_cast<int>(i), args[i]) != 0) return nullptr;
  }
  TVMValue ret;
  int ret_code = kTVMNullptr;
  int rc = CallReleasingGIL(f->handle, pack.values(), pack.codes(), static_cast<int>(n), &ret,
                            &ret_code);
  if (rc == 0 && ret_code == kTVMDLTensorHandle) {
    int slot = pack.ViewSlot(ret.v_handle);
    if (slot >= 0) return ArrayOfArgument(args[slot]);
  }
  return FinishCall(rc, ret, ret_code);
}

// The call path. Calls whose arguments are all plain scalars (the common case) convert them
// into stack arrays with no allocation and no call into CPython; anything else takes
// GeneralCall. The GIL is released around TVMFuncCall as docs/spec/bindings.md requires.
static PyObject* PackedFuncVectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                                      PyObject* kwnames) {
  auto* f = reinterpret_cast<HandleObject*>(self);
  Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  if (POLYFFI_UNLIKELY(kwnames != nullptr || f->handle == nullptr || n > INT32_MAX) &&
      !CheckUnusualCall(f, n, kwnames)) {
    return nullptr;
  }
  constexpr Py_ssize_t kFastArgs = 6;
  if (n > kFastArgs) return GeneralCall(f, args, n);
  TVMValue values[kFastArgs];
  int codes[kFastArgs];
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!FastArg(args[i], &values[i], &codes[i])) return GeneralCall(f, args, n);
  }
  TVMValue ret;
  int ret_code = kTVMNullptr;
  int rc = CallReleasingGIL(f->handle, values, codes, static_cast<int>(n), &ret, &ret_code);
  return FinishCall(rc, ret, ret_code);
}

// f.call_async(*args): the coroutine of polyffi.function.call_async(f, *args), which holds the
// asyncio glue; the submit and the completion are async_call.cc.
static PyObject* PackedFuncCallAsync(PyObject* self, PyObject* args) {
  static PyObject* impl = nullptr;  // a module attribute, kept for the interpreter's life
  if (impl == nullptr) {
    PyObject* mod = PyImport_ImportModule("polyffi.function");
    if (mod == nullptr) return nullptr;
    impl = PyObject_GetAttrString(mod, "call_async");
    Py_DECREF(mod);
    if (impl == nullptr) return nullptr;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  PyObject* full = PyTuple_New(n + 1);
  if (full == nullptr) return nullptr;
  Py_INCREF(self);
  PyTuple_SET_ITEM(full, 0, self);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* a = PyTuple_GET_ITEM(args, i);
    Py_INCREF(a);
    PyTuple_SET_ITEM(full, i + 1, a);
  }
  PyObject* coro = PyObject_Call(impl, full, nullptr);
  Py_DECREF(full);
  return coro;
}

static PyMethodDef kPackedFuncMethods[] = {
    {"call_async", PackedFuncCallAsync, METH_VARARGS,
     "call_async(*args) -> awaitable: run the call on the core's worker pool."},
    {nullptr, nullptr, 0, nullptr}};

static PyObject* PackedFuncNew(PyTypeObject*, PyObject* args, PyObject* kwargs) {
  PyObject* callable = nullptr;
  static const char* kwlist[] = {"f", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:PackedFunc", const_cast<char**>(kwlist),
                                   &callable)) {
    return nullptr;
  }
  if (Py_IS_TYPE(callable, &PackedFuncType)) {
    Py_INCREF(callable);
    return callable;
  }
  if (!PyCallable_Check(callable)) {
    PyErr_Format(PyExc_TypeError, "PackedFunc() expects a callable, got %s",
                 Py_TYPE(callable)->tp_name);
    return nullptr;
  }
  TVMFunctionHandle h = CallbackFromCallable(callable);
  if (h == nullptr) return nullptr;
  return NewPackedFunc(h);
}

static int InitType(PyTypeObject* type, const char* name, const char* doc, PyTypeObject* base,
                    unsigned long flags) {
  type->tp_name = name;
  type->tp_doc = doc;
  type->tp_basicsize = sizeof(HandleObject);
  type->tp_dealloc = HandleDealloc;
  type->tp_flags = Py_TPFLAGS_DEFAULT | flags;
  type->tp_weaklistoffset = offsetof(HandleObject, weaklist);
  if (base != nullptr) {
    type->tp_base = base;
  } else {
    type->tp_getset = kHandleGetSet;
    type->tp_methods = kHandleMethods;
    type->tp_richcompare = HandleRichCompare;
    type->tp_hash = HandleHash;
    type->tp_repr = HandleRepr;
  }
  return PyType_Ready(type);
}

int InitFunctionTypes(PyObject* module) {
  if (InitType(&ObjectBaseType, "polyffi._core.ObjectBase", "A reference to a runtime object.",
               nullptr, Py_TPFLAGS_BASETYPE) < 0 ||
      InitType(&ModuleBaseType, "polyffi._core.ModuleBase", "A reference to a runtime module.",
               &ObjectBaseType, Py_TPFLAGS_BASETYPE) < 0) {
    return -1;
  }
  PackedFuncType.tp_vectorcall_offset = offsetof(HandleObject, vectorcall);
  PackedFuncType.tp_call = PyVectorcall_Call;
  PackedFuncType.tp_new = PackedFuncNew;
  PackedFuncType.tp_methods = kPackedFuncMethods;
  if (InitType(&PackedFuncType, "polyffi.PackedFunc",
               "A runtime function; call it with positional arguments.", &ObjectBaseType,
               Py_TPFLAGS_HAVE_VECTORCALL) < 0) {
    return -1;
  }
  PyObject* types[][2] = {
      {PyUnicode_FromString("ObjectBase"), reinterpret_cast<PyObject*>(&ObjectBaseType)},
      {PyUnicode_FromString("ModuleBase"), reinterpret_cast<PyObject*>(&ModuleBaseType)},
      {PyUnicode_FromString("PackedFunc"), reinterpret_cast<PyObject*>(&PackedFuncType)}};
  for (auto& t : types) {
    if (t[0] == nullptr) return -1;
    Py_INCREF(t[1]);
    int rc = PyModule_AddObject(module, PyUnicode_AsUTF8(t[0]), t[1]);
    Py_DECREF(t[0]);
    if (rc < 0) {
      Py_DECREF(t[1]);
      return -1;
    }
  }
  return 0;
}

}  // namespace polyffi_py
