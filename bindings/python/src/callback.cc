// Python callable -> runtime function: the trampoline (TVMPackedCFunc) and its finalizer.
//
// The resource handle is an owned reference to the callable. Both the trampoline and the
// finalizer may run on native threads Python did not create, so they take the GIL with
// PyGILState_Ensure, and they refuse to touch an interpreter that is gone or going.
#include <cstdlib>

#include "common.h"

namespace polyffi_py {

static bool InterpreterAlive() {
  if (!Py_IsInitialized()) return false;
#if PY_VERSION_HEX >= 0x030D0000
  return !Py_IsFinalizing();
#else
  return !_Py_IsFinalizing();
#endif
}

static int Trampoline(TVMValue* args, int* type_codes, int num_args, TVMRetValueHandle ret,
                      void* resource_handle) {
  if (!InterpreterAlive()) {
    TVMAPISetLastError("RuntimeError: the Python interpreter is shutting down");
    return -1;
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  auto* callable = static_cast<PyObject*>(resource_handle);
  constexpr int kInline = 8;
  PyObject* inline_args[kInline];
  PyObject** py_args = num_args <= kInline
                           ? inline_args
                           : static_cast<PyObject**>(std::malloc(num_args * sizeof(PyObject*)));
  int converted = 0;
  int rc = 0;
  PyObject* result = nullptr;
  for (; converted < num_args; ++converted) {
    py_args[converted] = CallbackArgToPython(args[converted], type_codes[converted]);
    if (py_args[converted] == nullptr) break;
  }
  if (converted == num_args) {
    result = PyObject_Vectorcall(callable, py_args, static_cast<size_t>(num_args), nullptr);
  }
  for (int i = 0; i < converted; ++i) Py_DECREF(py_args[i]);
  if (py_args != inline_args) std::free(py_args);

  if (result == nullptr) {
    SetLastErrorFromPython();
    rc = -1;
  } else {
    ArgPack pack(1);
    if (pack.Set(0, result) != 0) {
      SetLastErrorFromPython();
      rc = -1;
    } else {
      // TVMCFuncSetReturn copies strings and retains objects, so the pack may drop its temps.
      rc = TVMCFuncSetReturn(ret, pack.values(), pack.codes(), 1);
    }
    Py_DECREF(result);
  }
  PyGILState_Release(gil);
  return rc;
}

static void Finalizer(void* resource_handle) {
  // During interpreter shutdown, leaking the callable is the only safe choice.
  if (!InterpreterAlive()) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_DECREF(static_cast<PyObject*>(resource_handle));
  PyGILState_Release(gil);
}

TVMFunctionHandle CallbackFromCallable(PyObject* callable) {
  Py_INCREF(callable);  // released by Finalizer, which also runs when creation fails
  TVMFunctionHandle out = nullptr;
  if (!CheckCall(TVMFuncCreateFromCFunc(Trampoline, callable, Finalizer, &out))) return nullptr;
  return out;
}

}  // namespace polyffi_py
