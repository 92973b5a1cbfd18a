// Fuzz target: the packed import blob of a TVM-exported library (`__tvm_dev_mblob`: size prefix,
// module count, type keys, the import tree, and each module's own section, here the
// GraphExecutorFactory's graph JSON, params and name). Fed through runtime.ModuleLoadFromBlob,
// the same reader a library's blob goes through. An accepted blob must give a module whose
// imports and factory functions can be walked.
#include <cstdint>
#include <vector>

#include "fuzz_common.h"

namespace {

// Calls f(args...) and releases what it returns; reports whether it succeeded.
bool CallAndRelease(TVMFunctionHandle f, TVMValue* v, int* c, int n) {
  TVMValue rv;
  int rc = 0;
  int r = TVMFuncCall(f, v, c, n, &rv, &rc);
  if (r != 0) {
    fuzz::CheckFailure(r);
    return false;
  }
  fuzz::ReleaseReturn(rv, rc);
  return true;
}

void Walk(TVMModuleHandle mod, int depth) {
  static TVMFunctionHandle size = fuzz::Global("runtime.ModuleImportsSize");
  static TVMFunctionHandle get = fuzz::Global("runtime.ModuleGetImport");
  TVMValue v[2], rv;
  int c[2] = {kTVMModuleHandle, kTVMArgInt}, rc = 0;
  v[0].v_handle = mod;
  FUZZ_CHECK(TVMFuncCall(size, v, c, 1, &rv, &rc) == 0 && rc == kTVMArgInt);
  int64_t n = rv.v_int64;
  FUZZ_CHECK(depth < 64);  // the import tree is acyclic, so this is bounded by the blob
  for (int64_t i = 0; i < n && i < 8; ++i) {
    v[1].v_int64 = i;
    FUZZ_CHECK(TVMFuncCall(get, v, c, 2, &rv, &rc) == 0 && rc == kTVMModuleHandle);
    Walk(rv.v_handle, depth + 1);
    TVMModFree(rv.v_handle);
  }
  // A factory: accessors, and an executor (kernels are missing from the empty library, so
  // making or running one may fail cleanly).
  for (const char* name : {"get_graph_json", "get_graph_params", "remove_params", "default"}) {
    TVMFunctionHandle f = nullptr;
    FUZZ_CHECK(TVMModGetFunction(mod, name, 0, &f) == 0);
    if (f == nullptr) continue;
    TVMValue dv;
    int dc = kDLDevice;
    dv.v_device = DLDevice{kDLCPU, 0};
    CallAndRelease(f, &dv, &dc, name[0] == 'd' ? 1 : 0);
    TVMFuncFree(f);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static TVMFunctionHandle load = fuzz::Global("runtime.ModuleLoadFromBlob");
  std::vector<char> blob(data, data + size);  // exactly size bytes: reads past are reports
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
