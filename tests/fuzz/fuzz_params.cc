// Fuzz target: the params blob reader (GraphExecutor.load_params, TVM's binary format: magic,
// names, then NDArray headers, shapes and data). One executor whose inputs cover several
// dtypes takes every blob; a blob it accepts must leave each input readable.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_common.h"

namespace {

// Inputs of every kind a blob may fill: float32 matrix, int8 vector, float16 scalar, bool
// (TVM's uint1), a 4-lane float32 vector and a zero-sized array. No operators.
const char kGraph[] = R"({
  "nodes": [
    {"op": "null", "name": "x", "inputs": []},
    {"op": "null", "name": "w", "inputs": []},
    {"op": "null", "name": "s", "inputs": []},
    {"op": "null", "name": "m", "inputs": []},
    {"op": "null", "name": "v", "inputs": []},
    {"op": "null", "name": "e", "inputs": []}],
  "arg_nodes": [0, 1, 2, 3, 4, 5],
  "heads": [[0, 0, 0], [5, 0, 0]],
  "node_row_ptr": [0, 1, 2, 3, 4, 5, 6],
  "attrs": {
    "storage_id": ["list_int", [0, 1, 2, 3, 4, 5]],
    "shape": ["list_shape", [[2, 3], [4], [], [3], [2], [0, 5]]],
    "dltype": ["list_str", ["float32", "int8", "float16", "bool", "float32x4", "int64"]]}
})";

TVMModuleHandle Executor() {
  // An empty module serves as the kernel library of a graph without operators.
  TVMValue lib_rv;
  int lib_rc = 0;
  TVMValue v;
  int c = kTVMStr;
  v.v_str = "fuzz.Empty";
  FUZZ_CHECK(
      TVMFuncCall(fuzz::Global("runtime.ModuleFromFunctions"), &v, &c, 1, &lib_rv, &lib_rc) == 0);
  TVMValue a[4];
  int ac[4] = {kTVMStr, kTVMModuleHandle, kTVMArgInt, kTVMArgInt};
  a[0].v_str = kGraph;
  a[1].v_handle = lib_rv.v_handle;
  a[2].v_int64 = kDLCPU;
  a[3].v_int64 = 0;
  TVMValue rv;
  int rc = 0;
  if (TVMFuncCall(fuzz::Global("tvm.graph_executor.create"), a, ac, 4, &rv, &rc) != 0) {
    std::fprintf(stderr, "%s\n", TVMGetLastError());
    std::abort();
  }
  TVMModFree(lib_rv.v_handle);
  return rv.v_handle;
}

TVMFunctionHandle Method(TVMModuleHandle m, const char* name) {
  TVMFunctionHandle f = nullptr;
  FUZZ_CHECK(TVMModGetFunction(m, name, 0, &f) == 0 && f != nullptr);
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static TVMModuleHandle ex = Executor();
  static TVMFunctionHandle load = Method(ex, "load_params");
  static TVMFunctionHandle get_input = Method(ex, "get_input");
  // A copy of exactly size bytes, so reading one byte past the blob is an ASan report.
  std::vector<char> blob(data, data + size);
  TVMByteArray bytes{blob.data(), blob.size()};
  TVMValue v;
  v.v_handle = &bytes;
  int code = kTVMBytes;
  TVMValue rv;
  int rc = 0;
  int r = TVMFuncCall(load, &v, &code, 1, &rv, &rc);
  if (r != 0) {
    fuzz::CheckFailure(r);
    return 0;
  }
  fuzz::ReleaseReturn(rv, rc);
  // Accepted: every input stays a readable array of the graph's shape.
  for (int64_t i = 0; i < 6; ++i) {
    TVMValue iv;
    iv.v_int64 = i;
    int ic = kTVMArgInt;
    FUZZ_CHECK(TVMFuncCall(get_input, &iv, &ic, 1, &rv, &rc) == 0 && rc == kTVMNDArrayHandle);
    auto* t = static_cast<TVMArrayHandle>(rv.v_handle);
    size_t n = (static_cast<size_t>(t->dtype.bits) * t->dtype.lanes + 7) / 8;
    for (int d = 0; d < t->ndim; ++d) n *= static_cast<size_t>(t->shape[d]);
    std::vector<char> out(n);
    FUZZ_CHECK(TVMArrayCopyToBytes(t, out.data(), out.size()) == 0);
    TVMArrayFree(t);
  }
  return 0;
}
