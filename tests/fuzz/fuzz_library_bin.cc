// Fuzz target: the embedded module tree of a TVM >= 0.20 export (`__tvm_ffi__library_bin`: size
// prefix, CSR import tree, per module a kind and its bytes). Fed through
// runtime.ModuleLoadFromLibraryBin, the same reader a loaded library's blob goes through. Kinds
// reach their registered loaders: `fuzz.echo` (registered here: a module holding the bytes it
// was given, checked against the input) and whatever the core registers
// (`relax.VMExecutable` once the relax VM is in). An accepted tree must be walkable.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_common.h"

namespace {

// The input of the current run, so the echo loader can check it was handed a slice of it.
const char* g_input = nullptr;
size_t g_input_size = 0;

int EchoLoader(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void*) {
  // The contract: exactly one argument, the module's bytes, lying inside the blob.
  FUZZ_CHECK(n == 1 && codes[0] == kTVMBytes);
  auto* b = static_cast<TVMByteArray*>(args[0].v_handle);
  FUZZ_CHECK(b != nullptr && (b->size == 0 || b->data != nullptr));
  if (b->size != 0) {
    FUZZ_CHECK(b->data >= g_input && b->size <= g_input_size &&
               b->data + b->size <= g_input + g_input_size);
  }
  if (b->size > 0 && b->data[0] == '!') {  // lets the fuzzer reach the loader-failed path
    TVMAPISetLastError("ValueError: fuzz.echo refused its bytes");
    return -1;
  }
  static TVMFunctionHandle make = fuzz::Global("runtime.ModuleFromFunctions");
  TVMValue v;
  int c = kTVMStr;
  v.v_str = "fuzz.echo";
  TVMValue rv;
  int rc = 0;
  FUZZ_CHECK(TVMFuncCall(make, &v, &c, 1, &rv, &rc) == 0 && rc == kTVMModuleHandle);
  int r = TVMCFuncSetReturn(ret, &rv, &rc, 1);
  TVMModFree(rv.v_handle);
  return r;
}

void RegisterEcho() {
  static bool done = [] {
    TVMFunctionHandle f = nullptr;
    FUZZ_CHECK(TVMFuncCreateFromCFunc(EchoLoader, nullptr, nullptr, &f) == 0);
    FUZZ_CHECK(TVMFuncRegisterGlobal("ffi.Module.load_from_bytes.fuzz.echo", f, 1) == 0);
    TVMFuncFree(f);
    return true;
  }();
  (void)done;
}

void Walk(TVMModuleHandle mod, int depth) {
  static TVMFunctionHandle size = fuzz::Global("runtime.ModuleImportsSize");
  static TVMFunctionHandle get = fuzz::Global("runtime.ModuleGetImport");
  static TVMFunctionHandle key = fuzz::Global("runtime.ModuleGetTypeKey");
  TVMValue v[2], rv;
  int c[2] = {kTVMModuleHandle, kTVMArgInt}, rc = 0;
  v[0].v_handle = mod;
  FUZZ_CHECK(TVMFuncCall(key, v, c, 1, &rv, &rc) == 0 && rc == kTVMStr);
  FUZZ_CHECK(TVMFuncCall(size, v, c, 1, &rv, &rc) == 0 && rc == kTVMArgInt);
  int64_t n = rv.v_int64;
  FUZZ_CHECK(depth < 64);  // the import tree is acyclic, so this is bounded by the blob
  for (int64_t i = 0; i < n && i < 8; ++i) {
    v[1].v_int64 = i;
    FUZZ_CHECK(TVMFuncCall(get, v, c, 2, &rv, &rc) == 0 && rc == kTVMModuleHandle);
    Walk(rv.v_handle, depth + 1);
    TVMModFree(rv.v_handle);
  }
  // Lookups through the imports (the empty library and echo modules have none).
  TVMFunctionHandle f = nullptr;
  FUZZ_CHECK(TVMModGetFunction(mod, "forward", 1, &f) == 0);
  if (f != nullptr) TVMFuncFree(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static TVMFunctionHandle load = fuzz::Global("runtime.ModuleLoadFromLibraryBin");
  RegisterEcho();
  std::vector<char> blob(data, data + size);  // exactly size bytes: reads past are reports
  g_input = blob.data();
  g_input_size = blob.size();
  TVMByteArray bytes{blob.data(), blob.size()};
  TVMValue v, rv;
  v.v_handle = &bytes;
  int code = kTVMBytes, rc = 0;
  int r = TVMFuncCall(load, &v, &code, 1, &rv, &rc);
  if (r != 0) {
    fuzz::CheckFailure(r);
    return 0;
  }
  FUZZ_CHECK(rc == kTVMModuleHandle);
  Walk(rv.v_handle, 0);
  TVMModFree(rv.v_handle);
  return 0;
}
