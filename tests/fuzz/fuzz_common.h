// Shared by the libFuzzer targets: the fixtures library, globals, and the error contract every
// failing call must keep (return -1 and leave a "Kind: message" last error).
#ifndef POLYFFI_FUZZ_COMMON_H_
#define POLYFFI_FUZZ_COMMON_H_

#include <polyffi/c_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

// A property the runtime must keep; a violation is a crash libFuzzer records with its input.
#define FUZZ_CHECK(cond)                                                                  \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)

namespace fuzz {

// libpolyffi_testing.so (the testing.* globals), loaded once.
inline TVMModuleHandle TestingLib() {
  static TVMModuleHandle mod = [] {
    TVMModuleHandle m = nullptr;
    if (TVMModLoadFromFile(POLYFFI_FUZZ_LIB_DIR "/libpolyffi_testing.so", "", &m) != 0) {
      std::fprintf(stderr, "cannot load the fixtures: %s\n", TVMGetLastError());
      std::abort();
    }
    return m;
  }();
  return mod;
}

inline TVMFunctionHandle Global(const char* name) {
  TestingLib();
  TVMFunctionHandle f = nullptr;
  if (TVMFuncGetGlobal(name, &f) != 0 || f == nullptr) {
    std::fprintf(stderr, "missing global %s\n", name);
    std::abort();
  }
  return f;
}

// A failed call: -1 (never -2 here: no host error is pending) and a "Kind: message" error.
inline void CheckFailure(int rc) {
  FUZZ_CHECK(rc == -1);
  const char* msg = TVMGetLastError();
  FUZZ_CHECK(msg != nullptr);
  const char* colon = std::strstr(msg, ": ");
  FUZZ_CHECK(colon != nullptr && colon != msg);
}

// Releases whatever reference a call returned.
inline void ReleaseReturn(TVMValue v, int code) {
  switch (code) {
    case kTVMObjectHandle:
    case kTVMModuleHandle:
    case kTVMPackedFuncHandle:
      FUZZ_CHECK(TVMObjectFree(v.v_handle) == 0);
      break;
    case kTVMNDArrayHandle:
      FUZZ_CHECK(TVMArrayFree(static_cast<TVMArrayHandle>(v.v_handle)) == 0);
      break;
    case kTVMStr:
      FUZZ_CHECK(v.v_str != nullptr);
      (void)std::strlen(v.v_str);  // must be NUL-terminated, readable
      break;
    case kTVMBytes: {
      auto* b = static_cast<TVMByteArray*>(v.v_handle);
      FUZZ_CHECK(b != nullptr && (b->size == 0 || b->data != nullptr));
      volatile char sink = 0;
      for (size_t i = 0; i < b->size; ++i) sink ^= b->data[i];
      (void)sink;
      break;
    }
    default:
      // Plain values only: no other code may come back from a call.
      FUZZ_CHECK(code == kTVMArgInt || code == kTVMArgFloat || code == kTVMArgBool ||
                 code == kTVMNullptr || code == kTVMOpaqueHandle || code == kDLDevice ||
                 code == kTVMDataType || code == kTVMDLTensorHandle);
  }
}

}  // namespace fuzz

#endif  // POLYFFI_FUZZ_COMMON_H_
