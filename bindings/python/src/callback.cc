// Python callable -> runtime function: the trampoline (TVMPackedCFunc) and its finalizer.
//
// The resource handle is an owned reference to the callable. Both the trampoline and the
// finalizer may run on native threads Python did not create, so they take the GIL through
// ScopedGIL, and they refuse to touch an interpreter that is gone or going.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

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

// ---- Entering the interpreter from any thread ------------------------------------------------
//
// A thread without a Python thread state that waits for the GIL while the interpreter starts
// finalizing is ended by CPython with pthread_exit; the forced unwind through the runtime's
// noexcept C++ frames (an ObjectRef destructor dropping the last reference to a callback) then
// aborts the process ("terminate called without an active exception"). So such threads count
// themselves in flight, and the atexit hook below, which runs before finalization starts, stops
// new entries and lets the ones in flight finish before the interpreter goes away.

static std::atomic<bool> g_shutting_down{false};
static std::atomic<int> g_foreign_in_flight{0};

static PyThreadState* CurrentThreadState() {
#if PY_VERSION_HEX >= 0x030D0000
  return PyThreadState_GetUnchecked();
#else
  return _PyThreadState_UncheckedGet();
#endif
}

ScopedGIL::ScopedGIL() {
  if (!InterpreterAlive()) return;
  PyThreadState* tstate = PyGILState_GetThisThreadState();
  if (tstate != nullptr) {
    // A thread Python knows (typically the one whose call released the GIL): what
    // PyGILState_Ensure would do, minus its second thread-state lookup and counter.
    if (tstate != CurrentThreadState()) {
      PyEval_RestoreThread(tstate);
      restored_ = true;
    }
    ok_ = true;
    return;
  }
  // A thread Python did not create.
  if (g_shutting_down.load()) return;
  g_foreign_in_flight.fetch_add(1);
  if (g_shutting_down.load()) {  // seq_cst pairs with BeforeShutdown's store and load
    g_foreign_in_flight.fetch_sub(1);
    return;
  }
  counted_ = true;
  state_ = PyGILState_Ensure();  // creates a thread state for this thread
  ok_ = true;
}

ScopedGIL::~ScopedGIL() {
  if (restored_) {
    PyEval_SaveThread();
  } else if (counted_) {
    PyGILState_Release(state_);
    g_foreign_in_flight.fetch_sub(1);
  }
}

PyObject* BeforeShutdown(PyObject*, PyObject*) {
  g_shutting_down.store(true);
  // Entries in flight need the GIL to finish; give it up until they are done. Bounded, so that a
  // callback that never returns cannot hang the exit.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (g_foreign_in_flight.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    Py_BEGIN_ALLOW_THREADS std::this_thread::sleep_for(std::chrono::milliseconds(1));
    Py_END_ALLOW_THREADS
  }
  Py_RETURN_NONE;
}

// Converts one callback argument; ints (the common case) without a call through the switch.
static inline PyObject* ArgToPython(TVMValue value, int code) {
  if (code == kTVMArgInt) return PyLong_FromLongLong(value.v_int64);
  return CallbackArgToPython(value, code);
}

// Hands the callable's result to the runtime (which copies strings and retains objects).
static int SetReturn(TVMRetValueHandle ret, PyObject* result) {
  TVMValue v;
  int code;
  if (Py_IS_TYPE(result, &PyLong_Type) && CompactLongValue(result, &v.v_int64)) {
    code = kTVMArgInt;
    return TVMCFuncSetReturn(ret, &v, &code, 1);
  }
  if (result == Py_None) {
    v.v_handle = nullptr;
    code = kTVMNullptr;
    return TVMCFuncSetReturn(ret, &v, &code, 1);
  }
  // Arrays returned from Python must outlive this frame: no borrowed views here.
  ArgPack pack(1, /*allow_views=*/false);
  pack.ForReturn();
  if (pack.Set(0, result) != 0) {
    SetLastErrorFromPython();
    return -1;
  }
  return TVMCFuncSetReturn(ret, pack.values(), pack.codes(), 1);
}

// A borrowed array view handed to Python is only valid during the callback. Wrappers the callable
// kept (stored in a list, a closure, ...) are detached, so that later use raises ValueError
// instead of reading freed memory.
static POLYFFI_COLD void DetachKeptViews(PyObject** py_args, const int* codes, int n) {
  for (int i = 0; i < n; ++i) {
    if (codes[i] == kTVMDLTensorHandle && Py_REFCNT(py_args[i]) > 1 &&
        PyObject_TypeCheck(py_args[i], &ObjectBaseType)) {
      reinterpret_cast<HandleObject*>(py_args[i])->handle = nullptr;
    }
  }
}

static int Trampoline(TVMValue* args, int* type_codes, int num_args, TVMRetValueHandle ret,
                      void* resource_handle) {
  ScopedGIL gil;
  if (POLYFFI_UNLIKELY(!gil.ok())) {
    TVMAPISetLastError("RuntimeError: the Python interpreter is shutting down");
    return -1;
  }
  auto* callable = static_cast<PyObject*>(resource_handle);
  constexpr int kInline = 8;
  // Slot 0 is scratch for PY_VECTORCALL_ARGUMENTS_OFFSET (lets bound methods avoid a copy).
  PyObject* inline_args[kInline + 1];
  PyObject** slots = inline_args;
  if (POLYFFI_UNLIKELY(num_args > kInline)) {
    slots = static_cast<PyObject**>(std::malloc((num_args + 1) * sizeof(PyObject*)));
    if (slots == nullptr) {
      TVMAPISetLastError("MemoryError: out of memory converting callback arguments");
      return -1;
    }
  }
  PyObject** py_args = slots + 1;
  int converted = 0;
  bool has_view = false;
  int rc = 0;
  for (; converted < num_args; ++converted) {
    int code = type_codes[converted];
    has_view |= code == kTVMDLTensorHandle;
    py_args[converted] = ArgToPython(args[converted], code);
    if (py_args[converted] == nullptr) break;
  }
  PyObject* result = nullptr;
  if (converted == num_args) {
    result = PyObject_Vectorcall(
        callable, py_args, static_cast<size_t>(num_args) | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
  }
  if (result == nullptr) {
    SetLastErrorFromPython();
    rc = -1;
  } else {
    rc = SetReturn(ret, result);
    Py_DECREF(result);
  }
  if (POLYFFI_UNLIKELY(has_view)) DetachKeptViews(py_args, type_codes, converted);
  for (int i = 0; i < converted; ++i) Py_DECREF(py_args[i]);
  if (slots != inline_args) std::free(slots);
  return rc;
}

static void Finalizer(void* resource_handle) {
  // During interpreter shutdown, leaking the callable is the only safe choice.
  ScopedGIL gil;
  if (gil.ok()) Py_DECREF(static_cast<PyObject*>(resource_handle));
}

TVMFunctionHandle CallbackFromCallable(PyObject* callable) {
  Py_INCREF(callable);  // released by Finalizer, which also runs when creation fails
  TVMFunctionHandle out = nullptr;
  if (!CheckCall(TVMFuncCreateFromCFunc(Trampoline, callable, Finalizer, &out))) return nullptr;
  return out;
}

}  // namespace polyffi_py
