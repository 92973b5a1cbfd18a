// polyffi._core module init: checks the loaded libpolyffi against the header it was built with.
#include <cstring>

#include "common.h"

namespace polyffi_py {
extern PyMethodDef kCoreMethods[];
}  // namespace polyffi_py

static PyModuleDef kCoreModule = {PyModuleDef_HEAD_INIT,
                                  "polyffi._core",
                                  "CPython extension over the polyffi C ABI.",
                                  -1,
                                  polyffi_py::kCoreMethods,
                                  nullptr,
                                  nullptr,
                                  nullptr,
                                  nullptr};

PyMODINIT_FUNC PyInit__core(void) {
  using namespace polyffi_py;
  int major = -1, minor = -1, patch = -1;
  TVMAPIGetVersion(&major, &minor, &patch);
  if (major != POLYFFI_VERSION_MAJOR) {
    PyErr_Format(PyExc_ImportError,
                 "polyffi: the loaded libpolyffi is version %d.%d.%d (major %d) but this "
                 "extension was built for %s (major %d)",
                 major, minor, patch, major, POLYFFI_VERSION, POLYFFI_VERSION_MAJOR);
    return nullptr;
  }
  // The ABI digest: same declarations and struct layouts on both sides, or no import.
  const char* digest = nullptr;
  if (TVMAPIGetAbiDigest(&digest) != 0 || digest == nullptr ||
      std::strcmp(digest, POLYFFI_ABI_DIGEST) != 0) {
    PyErr_Format(PyExc_ImportError,
                 "polyffi: ABI mismatch: this extension was built against libpolyffi %s with ABI "
                 "digest %s, but the loaded libpolyffi %d.%d.%d has ABI digest %s",
                 POLYFFI_VERSION, POLYFFI_ABI_DIGEST, major, minor, patch,
                 digest != nullptr ? digest : "(none)");
    return nullptr;
  }
  PyObject* m = PyModule_Create(&kCoreModule);
  if (m == nullptr) return nullptr;
  if (InitFunctionTypes(m) < 0 || InitValueTypes(m) < 0 || InitNDArrayTypes(m) < 0 ||
      PyModule_AddStringConstant(m, "__version__", POLYFFI_VERSION) < 0 ||
      PyModule_AddIntConstant(m, "VERSION_MAJOR", POLYFFI_VERSION_MAJOR) < 0 ||
      PyModule_AddStringConstant(m, "ABI_DIGEST", POLYFFI_ABI_DIGEST) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
