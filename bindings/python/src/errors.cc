// Error mapping: "Kind: message" from the runtime <-> Python exceptions.
//
// A Python exception raised inside a callback is stashed (per thread, keyed by the error text it
// became) so that when the same error comes back out of the outer call on this thread, the very
// same exception object is re-raised, with the callback's frames still in its traceback.
#include <cstring>
#include <string>

#include "common.h"

namespace polyffi_py {

PyObject* g_error_factory = nullptr;    // polyffi.errors._error_from_text(text) -> exception
PyObject* g_ffi_error_class = nullptr;  // polyffi.FFIError

static const char kStashKey[] = "polyffi.error_stash";

// First line of an error text: the part that identifies the error ("Kind: message").
static std::string FirstLine(const char* text) {
  const char* nl = std::strchr(text, '\n');
  return nl == nullptr ? std::string(text) : std::string(text, nl - text);
}

// Returns a new reference to the stashed exception if its text matches, and clears the stash.
static PyObject* TakeStashed(const char* text) {
  PyObject* dict = PyThreadState_GetDict();  // borrowed; per thread, freed with the thread
  if (dict == nullptr) return nullptr;
  PyObject* entry = PyDict_GetItemString(dict, kStashKey);  // borrowed
  if (entry == nullptr) return nullptr;
  Py_INCREF(entry);
  PyDict_DelItemString(dict, kStashKey);
  PyObject* result = nullptr;
  if (PyTuple_Check(entry) && PyTuple_GET_SIZE(entry) == 2) {
    const char* key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(entry, 0));
    if (key != nullptr && FirstLine(key) == FirstLine(text)) {
      result = PyTuple_GET_ITEM(entry, 1);
      Py_INCREF(result);
    }
  }
  PyErr_Clear();
  Py_DECREF(entry);
  return result;
}

static void Stash(const std::string& text, PyObject* exc) {
  PyObject* dict = PyThreadState_GetDict();
  if (dict == nullptr) return;
  PyObject* entry = Py_BuildValue("(s#O)", text.data(), static_cast<Py_ssize_t>(text.size()), exc);
  if (entry == nullptr || PyDict_SetItemString(dict, kStashKey, entry) != 0) PyErr_Clear();
  Py_XDECREF(entry);
}

PyObject* RaiseLastError(int ret) {
  // -2: the Python error that a callback left pending is still set; keep it.
  if (ret == -2 && PyErr_Occurred()) return nullptr;
  const char* text = TVMGetLastError();
  if (text == nullptr) text = "";
  PyObject* exc = TakeStashed(text);
  if (exc != nullptr) {
    PyObject* tb = PyException_GetTraceback(exc);  // the callback's frames
    PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(exc));
    Py_INCREF(type);
    PyErr_Restore(type, exc, tb);  // steals all three
    return nullptr;
  }
  if (g_error_factory == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, text);
    return nullptr;
  }
  PyObject* made = PyObject_CallFunction(g_error_factory, "s", text);
  if (made == nullptr) return nullptr;
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(made)), made);
  Py_DECREF(made);
  return nullptr;
}

// The kind of a Python exception: FFIError keeps its .kind, others use the class name.
static std::string KindOf(PyObject* exc) {
  if (g_ffi_error_class != nullptr && PyObject_IsInstance(exc, g_ffi_error_class) == 1) {
    PyObject* kind = PyObject_GetAttrString(exc, "kind");
    if (kind != nullptr && PyUnicode_Check(kind)) {
      std::string s = PyUnicode_AsUTF8(kind);
      Py_DECREF(kind);
      if (!s.empty()) return s;
    } else {
      Py_XDECREF(kind);
    }
    PyErr_Clear();
  }
  const char* name = Py_TYPE(exc)->tp_name;
  const char* dot = std::strrchr(name, '.');
  return dot == nullptr ? name : dot + 1;
}

void SetLastErrorFromPython() {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (value == nullptr) {
    TVMAPISetLastError("RuntimeError: unknown Python error");
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return;
  }
  if (tb != nullptr) PyException_SetTraceback(value, tb);
  std::string text = KindOf(value);
  text += ": ";
  PyObject* msg = PyObject_Str(value);
  if (msg != nullptr) {
    const char* s = PyUnicode_AsUTF8(msg);
    if (s != nullptr) text += s;
    Py_DECREF(msg);
  }
  PyErr_Clear();
  TVMAPISetLastError(text.c_str());
  Stash(text, value);
  Py_XDECREF(type);
  Py_DECREF(value);
  Py_XDECREF(tb);
}

void ClearErrorStash() {
  PyObject* dict = PyThreadState_GetDict();
  if (dict != nullptr && PyDict_GetItemString(dict, kStashKey) != nullptr) {
    PyDict_DelItemString(dict, kStashKey);
  }
  PyErr_Clear();
}

}  // namespace polyffi_py
