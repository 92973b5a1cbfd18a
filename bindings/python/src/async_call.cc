// Async calls (PackedFunc.call_async): arguments are converted here, with the GIL, into values the
// core's pool copies or retains (TVMAsyncSubmit); the call runs on a pool worker without the
// GIL; the completion takes the GIL on that worker and hands (status, result or exception) to a
// Python callable, which resolves the asyncio future through loop.call_soon_threadsafe
// (polyffi/function.py). The argument tuple stays referenced until the completion.
#include <polyffi/binding_common.h>
#include <polyffi/c_async_api.h>

#include "common.h"

namespace polyffi_py {
namespace {

constexpr char kCallCapsule[] = "polyffi.AsyncCall";

struct Pending {
  PyObject* done;  // called as done(status, value) with the GIL held
  PyObject* keep;  // the arguments, alive until the call ends
};

// The exception now set, normalized, as a new reference (the error indicator is cleared).
PyObject* FetchException() {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb != nullptr && value != nullptr) PyException_SetTraceback(value, tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  if (value == nullptr) {
    value = PyObject_CallFunction(PyExc_RuntimeError, "s", "polyffi: unknown async error");
  }
  return value;
}

void OnDone(int status, TVMValue* value, int code, void* resource) {
  auto* p = static_cast<Pending*>(resource);
  ScopedGIL gil;
  if (!gil.ok()) {
    // The interpreter is gone: nothing Python may be touched; only the result is released.
    if (status == kTVMAsyncReturned) PolyffiFreeHandle(value->v_handle, code);
    return;
  }
  PyObject* result = nullptr;
  if (status == kTVMAsyncReturned)
    result = ReturnToPython(*value, code);
  else
    RaiseLastError(status);
  if (result == nullptr) {
    result = FetchException();
    if (status == kTVMAsyncReturned) status = kTVMAsyncFailed;  // the result failed to convert
  }
  PyObject* r = PyObject_CallFunction(p->done, "iO", status, result);
  if (r == nullptr) PyErr_WriteUnraisable(p->done);
  Py_XDECREF(r);
  Py_XDECREF(result);
  Py_DECREF(p->done);
  Py_DECREF(p->keep);
  delete p;
}

void FreeCall(PyObject* capsule) { TVMAsyncFree(PyCapsule_GetPointer(capsule, kCallCapsule)); }

}  // namespace

// _core.async_submit(f, args: tuple, done) -> capsule for async_cancel.
PyObject* AsyncSubmit(PyObject*, PyObject* args) {
  PyObject *f, *tuple, *done;
  if (!PyArg_ParseTuple(args, "O!O!O:async_submit", &PackedFuncType, &f, &PyTuple_Type, &tuple,
                        &done)) {
    return nullptr;
  }
  auto* h = reinterpret_cast<HandleObject*>(f);
  if (h->handle == nullptr) {
    PyErr_SetString(PyExc_ValueError, "polyffi: calling a PackedFunc that has been released");
    return nullptr;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(tuple);
  // No borrowed views: each array travels as an NDArray the pool retains until the call ends.
  ArgPack pack(n, /*allow_views=*/false);
  if (!pack.ok()) return PyErr_NoMemory();
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (pack.Set(static_cast<int>(i), PyTuple_GET_ITEM(tuple, i)) != 0) return nullptr;
  }
  auto* p = new Pending{done, tuple};
  Py_INCREF(done);
  Py_INCREF(tuple);
  TVMAsyncCallHandle call = nullptr;
  int rc =
      TVMAsyncSubmit(h->handle, pack.values(), pack.codes(), static_cast<int>(n), OnDone, p, &call);
  if (rc != 0) {
    Py_DECREF(done);
    Py_DECREF(tuple);
    delete p;
    return RaiseLastError(rc);
  }
  PyObject* capsule = PyCapsule_New(call, kCallCapsule, FreeCall);
  if (capsule == nullptr) TVMAsyncFree(call);  // the call still completes
  return capsule;
}

// _core.async_cancel(call) -> 0 cancelled before start, 1 asked to stop, 2 already finished.
PyObject* AsyncCancel(PyObject*, PyObject* capsule) {
  void* call = PyCapsule_GetPointer(capsule, kCallCapsule);
  if (call == nullptr) return nullptr;
  int state = -1;
  if (!CheckCall(TVMAsyncCancel(call, &state))) return nullptr;
  return PyLong_FromLong(state);
}

// _core.async_configure(num_workers, queue_limit) (0 leaves a value) -> (workers, limit, queued).
PyObject* AsyncConfigure(PyObject*, PyObject* args) {
  int workers = 0, limit = 0;
  if (!PyArg_ParseTuple(args, "|ii:async_configure", &workers, &limit)) return nullptr;
  if (!CheckCall(TVMAsyncConfigure(workers, limit))) return nullptr;
  int queued = 0;
  if (!CheckCall(TVMAsyncGetConfig(&workers, &limit, &queued))) return nullptr;
  return Py_BuildValue("(iii)", workers, limit, queued);
}

}  // namespace polyffi_py
