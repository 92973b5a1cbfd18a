// Module-level functions of polyffi._core: global registry, modules, containers, arrays.
#include <cstring>

#include "common.h"

namespace polyffi_py {

void ClearClassCache();

static PyObject* GetGlobal(PyObject*, PyObject* name) {
  const char* s = PyUnicode_AsUTF8(name);
  if (s == nullptr) return nullptr;
  TVMFunctionHandle f = nullptr;
  if (!CheckCall(TVMFuncGetGlobal(s, &f))) return nullptr;
  if (f == nullptr) Py_RETURN_NONE;
  return NewPackedFunc(f);
}

// polyffi.get_global_func(name, allow_missing=False), in C: a lookup is a hash-table probe in the
// runtime, so a Python frame around it would be most of its cost. Nothing is cached here, so a
// lookup always sees the current registration.
static PyObject* GetGlobalFunc(PyObject*, PyObject* const* args, Py_ssize_t nargsf,
                               PyObject* kwnames) {
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  PyObject* name = nargs > 0 ? args[0] : nullptr;
  PyObject* allow_missing = nargs > 1 ? args[1] : nullptr;
  Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  bool bad = nargs > 2;
  for (Py_ssize_t k = 0; k < nkw && !bad; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    PyObject* value = args[nargs + k];
    if (PyUnicode_CompareWithASCIIString(key, "name") == 0 && name == nullptr) {
      name = value;
    } else if (PyUnicode_CompareWithASCIIString(key, "allow_missing") == 0 &&
               allow_missing == nullptr) {
      allow_missing = value;
    } else {
      bad = true;
    }
  }
  if (bad || name == nullptr) {
    PyErr_SetString(PyExc_TypeError,
                    "get_global_func(name: str, allow_missing: bool = False) takes a name and "
                    "an optional allow_missing");
    return nullptr;
  }
  if (!PyUnicode_Check(name)) {
    PyErr_Format(PyExc_TypeError, "get_global_func: name must be a str, got '%s'",
                 Py_TYPE(name)->tp_name);
    return nullptr;
  }
  const char* s = PyUnicode_AsUTF8(name);
  if (s == nullptr) return nullptr;
  TVMFunctionHandle f = nullptr;
  if (!CheckCall(TVMFuncGetGlobal(s, &f))) return nullptr;
  if (f != nullptr) return NewPackedFunc(f);
  int missing_ok = allow_missing == nullptr ? 0 : PyObject_IsTrue(allow_missing);
  if (missing_ok < 0) return nullptr;
  if (missing_ok) Py_RETURN_NONE;
  PyErr_Format(PyExc_ValueError, "Cannot find global function %U", name);
  return nullptr;
}

static PyObject* RegisterGlobal(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3 || !PyUnicode_Check(args[0]) || !Py_IS_TYPE(args[1], &PackedFuncType)) {
    PyErr_SetString(PyExc_TypeError, "register_global(name: str, f: PackedFunc, override: bool)");
    return nullptr;
  }
  const char* name = PyUnicode_AsUTF8(args[0]);
  if (name == nullptr) return nullptr;
  auto* f = reinterpret_cast<HandleObject*>(args[1]);
  if (f->handle == nullptr) {
    PyErr_SetString(PyExc_ValueError, "polyffi: PackedFunc has been released");
    return nullptr;
  }
  int override_flag = PyObject_IsTrue(args[2]);
  if (override_flag < 0) return nullptr;
  if (!CheckCall(TVMFuncRegisterGlobal(name, f->handle, override_flag))) return nullptr;
  Py_RETURN_NONE;
}

static PyObject* ListGlobalNames(PyObject*, PyObject*) {
  int size = 0;
  const char** names = nullptr;
  if (!CheckCall(TVMFuncListGlobalNames(&size, &names))) return nullptr;
  PyObject* out = PyList_New(size);
  if (out == nullptr) return nullptr;
  for (int i = 0; i < size; ++i) {
    PyObject* s = PyUnicode_FromString(names[i]);
    if (s == nullptr) {
      Py_DECREF(out);
      return nullptr;
    }
    PyList_SET_ITEM(out, i, s);
  }
  return out;
}

static PyObject* RemoveGlobal(PyObject*, PyObject* name) {
  const char* s = PyUnicode_AsUTF8(name);
  if (s == nullptr) return nullptr;
  if (!CheckCall(TVMFuncRemoveGlobal(s))) return nullptr;
  Py_RETURN_NONE;
}

static PyObject* ConvertCallable(PyObject*, PyObject* callable) {
  if (Py_IS_TYPE(callable, &PackedFuncType)) {
    Py_INCREF(callable);
    return callable;
  }
  if (!PyCallable_Check(callable)) {
    PyErr_Format(PyExc_TypeError, "polyffi: expected a callable, got '%s'",
                 Py_TYPE(callable)->tp_name);
    return nullptr;
  }
  TVMFunctionHandle f = CallbackFromCallable(callable);
  if (f == nullptr) return nullptr;
  return NewPackedFunc(f);
}

static PyObject* LoadModule(PyObject*, PyObject* args) {
  const char* path = nullptr;
  const char* fmt = "";
  if (!PyArg_ParseTuple(args, "s|s:load_module", &path, &fmt)) return nullptr;
  TVMModuleHandle mod = nullptr;
  int rc;
  Py_BEGIN_ALLOW_THREADS  // static initializers of plugins may call back into Python
      rc = TVMModLoadFromFile(path, fmt, &mod);
  Py_END_ALLOW_THREADS if (!CheckCall(rc)) return nullptr;
  return WrapHandle(mod, kTVMModuleHandle);
}

static HandleObject* ModuleArg(PyObject* obj) {
  if (!PyObject_TypeCheck(obj, &ModuleBaseType)) {
    PyErr_Format(PyExc_TypeError, "polyffi: expected a Module, got '%s'", Py_TYPE(obj)->tp_name);
    return nullptr;
  }
  auto* h = reinterpret_cast<HandleObject*>(obj);
  if (h->handle == nullptr) {
    PyErr_SetString(PyExc_ValueError, "polyffi: Module handle has been released");
    return nullptr;
  }
  return h;
}

static PyObject* ModGetFunction(PyObject*, PyObject* args) {
  PyObject* mod = nullptr;
  const char* name = nullptr;
  int query_imports = 0;
  if (!PyArg_ParseTuple(args, "Os|p:mod_get_function", &mod, &name, &query_imports)) {
    return nullptr;
  }
  HandleObject* m = ModuleArg(mod);
  if (m == nullptr) return nullptr;
  TVMFunctionHandle f = nullptr;
  if (!CheckCall(TVMModGetFunction(m->handle, name, query_imports, &f))) return nullptr;
  if (f == nullptr) Py_RETURN_NONE;
  return NewPackedFunc(f);
}

static PyObject* ModImport(PyObject*, PyObject* args) {
  PyObject *mod = nullptr, *dep = nullptr;
  if (!PyArg_ParseTuple(args, "OO:mod_import", &mod, &dep)) return nullptr;
  HandleObject* m = ModuleArg(mod);
  HandleObject* d = m == nullptr ? nullptr : ModuleArg(dep);
  if (d == nullptr) return nullptr;
  if (!CheckCall(TVMModImport(m->handle, d->handle))) return nullptr;
  Py_RETURN_NONE;
}

static PyObject* MakeArrayPy(PyObject*, PyObject* seq) {
  void* obj = MakeArray(seq);
  if (obj == nullptr) return nullptr;
  return WrapHandle(obj, kTVMObjectHandle);
}

static PyObject* MakeMapPy(PyObject*, PyObject* dict) {
  if (!PyDict_Check(dict)) {
    PyErr_SetString(PyExc_TypeError, "polyffi: expected a dict");
    return nullptr;
  }
  void* obj = MakeMap(dict);
  if (obj == nullptr) return nullptr;
  return WrapHandle(obj, kTVMObjectHandle);
}

static PyObject* NDEmpty(PyObject*, PyObject* args) {
  PyObject *shape = nullptr, *dtype = nullptr, *device = nullptr;
  if (!PyArg_ParseTuple(args, "OOO!:nd_empty", &shape, &dtype, &DeviceType, &device)) {
    return nullptr;
  }
  if (!Py_IS_TYPE(dtype, &DataTypeType)) {
    PyErr_SetString(PyExc_TypeError, "nd_empty: dtype must be a DataType");
    return nullptr;
  }
  PyObject* fast = PySequence_Fast(shape, "nd_empty: shape must be a sequence of ints");
  if (fast == nullptr) return nullptr;
  Py_ssize_t ndim = PySequence_Fast_GET_SIZE(fast);
  if (ndim > 32) {
    Py_DECREF(fast);
    PyErr_SetString(PyExc_ValueError, "nd_empty: at most 32 dimensions");
    return nullptr;
  }
  tvm_index_t dims[32];
  for (Py_ssize_t i = 0; i < ndim; ++i) {
    dims[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
    if (dims[i] == -1 && PyErr_Occurred()) {
      Py_DECREF(fast);
      return nullptr;
    }
    if (dims[i] < 0) {
      Py_DECREF(fast);
      PyErr_SetString(PyExc_ValueError, "nd_empty: negative dimension");
      return nullptr;
    }
  }
  Py_DECREF(fast);
  DLDataType t = reinterpret_cast<DataTypeObject*>(dtype)->dtype;
  DLDevice d = reinterpret_cast<DeviceObject*>(device)->dev;
  TVMArrayHandle out = nullptr;
  if (!CheckCall(TVMArrayAlloc(dims, static_cast<int>(ndim), t.code, t.bits, t.lanes, d.device_type,
                               d.device_id, &out))) {
    return nullptr;
  }
  return WrapHandle(out, kTVMNDArrayHandle);
}

static PyObject* NDFromDLPack(PyObject*, PyObject* obj) {
  if (!IsDLPackProducer(obj)) {
    PyErr_Format(PyExc_TypeError,
                 "polyffi: from_dlpack expects a DLPack capsule or an object with __dlpack__, "
                 "got '%s'",
                 Py_TYPE(obj)->tp_name);
    return nullptr;
  }
  TVMArrayHandle nd = ArrayFromDLPackObject(obj);
  if (nd == nullptr) return nullptr;
  return WrapHandle(nd, kTVMNDArrayHandle);
}

static PyObject* ApiVersion(PyObject*, PyObject*) {
  int major = 0, minor = 0, patch = 0;
  TVMAPIGetVersion(&major, &minor, &patch);
  return Py_BuildValue("(iii)", major, minor, patch);
}

static PyObject* SetHooks(PyObject*, PyObject* args) {
  PyObject *factory, *ffi_error, *registry, *default_cls, *module_cls, *ndarray_cls;
  if (!PyArg_ParseTuple(args, "OOO!OOO:_set_hooks", &factory, &ffi_error, &PyDict_Type, &registry,
                        &default_cls, &module_cls, &ndarray_cls)) {
    return nullptr;
  }
  struct {
    PyObject** slot;
    PyObject* value;
    PyTypeObject* base;
  } hooks[] = {{&g_error_factory, factory, nullptr},
               {&g_ffi_error_class, ffi_error, nullptr},
               {&g_type_key_registry, registry, nullptr},
               {&g_default_object_class, default_cls, &ObjectBaseType},
               {&g_module_class, module_cls, &ModuleBaseType},
               {&g_ndarray_class, ndarray_cls, &NDArrayBaseType}};
  for (auto& h : hooks) {
    if (h.base != nullptr &&
        (!PyType_Check(h.value) ||
         !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(h.value), h.base))) {
      PyErr_Format(PyExc_TypeError, "_set_hooks: expected a subclass of %s", h.base->tp_name);
      return nullptr;
    }
  }
  for (auto& h : hooks) {
    Py_INCREF(h.value);
    Py_XSETREF(*h.slot, h.value);
  }
  ClearClassCache();
  Py_RETURN_NONE;
}

static PyObject* ClearClassCachePy(PyObject*, PyObject*) {
  ClearClassCache();
  Py_RETURN_NONE;
}

static PyObject* ClearErrorStashPy(PyObject*, PyObject*) {
  ClearErrorStash();
  Py_RETURN_NONE;
}

static PyObject* LastError(PyObject*, PyObject*) { return PyUnicode_FromString(TVMGetLastError()); }

PyMethodDef kCoreMethods[] = {
    {"get_global", GetGlobal, METH_O, "Look up a global function; None when missing."},
    {"get_global_func",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(GetGlobalFunc)),
     METH_FASTCALL | METH_KEYWORDS,
     "get_global_func(name, allow_missing=False)\n--\n\n"
     "Look up a global function; ValueError when missing unless allow_missing."},
    {"register_global",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(RegisterGlobal)), METH_FASTCALL,
     "register_global(name, packed_func, override)"},
    {"list_global_names", ListGlobalNames, METH_NOARGS, "Names of all global functions."},
    {"remove_global", RemoveGlobal, METH_O, "Remove a global function (absent is fine)."},
    {"convert", ConvertCallable, METH_O, "Wrap a Python callable as a PackedFunc."},
    {"load_module", LoadModule, METH_VARARGS, "load_module(path, fmt='') -> Module"},
    {"mod_get_function", ModGetFunction, METH_VARARGS,
     "mod_get_function(mod, name, query_imports=False) -> PackedFunc | None"},
    {"mod_import", ModImport, METH_VARARGS, "mod_import(mod, dep)"},
    {"make_array", MakeArrayPy, METH_O, "Build a runtime Array from a sequence."},
    {"make_map", MakeMapPy, METH_O, "Build a runtime Map from a dict."},
    {"nd_empty", NDEmpty, METH_VARARGS, "nd_empty(shape, DataType, Device) -> NDArray"},
    {"nd_from_dlpack", NDFromDLPack, METH_O, "Wrap a DLPack producer or capsule, zero-copy."},
    {"async_submit", AsyncSubmit, METH_VARARGS, "async_submit(f, args, done) -> call"},
    {"async_cancel", AsyncCancel, METH_O,
     "async_cancel(call) -> 0 before start, 1 running, 2 done"},
    {"async_configure", AsyncConfigure, METH_VARARGS,
     "async_configure(num_workers=0, queue_limit=0) -> (num_workers, queue_limit, queued)"},
    {"api_version", ApiVersion, METH_NOARGS, "(major, minor, patch) of the loaded libpolyffi."},
    {"last_error", LastError, METH_NOARGS, "This thread's last runtime error text."},
    {"clear_error_stash", ClearErrorStashPy, METH_NOARGS,
     "Forget the exception kept for re-raising on this thread."},
    {"_set_hooks", SetHooks, METH_VARARGS, nullptr},
    {"_before_shutdown", BeforeShutdown, METH_NOARGS,
     "atexit hook: wait for callbacks and finalizers running on native threads."},
    {"_clear_class_cache", ClearClassCachePy, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace polyffi_py
