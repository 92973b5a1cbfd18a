// Fuzz target: the graph executor's JSON reader (tvm.graph_executor.create), then, for graphs
// it accepts, everything a caller does next: give every input a value, run, read every output.
// Kernels are made here and check their arguments, so a run can only fail cleanly.
#include <polyffi/dtype_string.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fuzz_common.h"

namespace {

// Bytes of a compact tensor (the executor validated shapes, so this cannot overflow).
size_t Bytes(const DLTensor* t) {
  size_t n = (static_cast<size_t>(t->dtype.bits) * t->dtype.lanes + 7) / 8;
  for (int i = 0; i < t->ndim; ++i) n *= static_cast<size_t>(t->shape[i]);
  return n;
}

int Fail(const char* msg) {
  TVMAPISetLastError(msg);
  return -1;
}

// Every kernel takes DLTensor arguments; "copy" copies its first into its last (equal sizes),
// "add" adds two float32 tensors of equal size into the third, "zero" clears every output.
enum Kind { kCopy, kAdd, kZero };

int Kernel(TVMValue* args, int* codes, int n, TVMRetValueHandle, void* resource) {
  std::vector<DLTensor*> t;
  for (int i = 0; i < n; ++i) {
    if (codes[i] != kTVMDLTensorHandle) return Fail("TypeError: kernel wants DLTensor arguments");
    t.push_back(static_cast<DLTensor*>(args[i].v_handle));
  }
  auto at = [](DLTensor* x) { return static_cast<char*>(x->data) + x->byte_offset; };
  switch (static_cast<Kind>(reinterpret_cast<intptr_t>(resource))) {
    case kCopy:
      if (n != 2 || Bytes(t[0]) != Bytes(t[1])) return Fail("ValueError: copy: sizes differ");
      std::memmove(at(t[1]), at(t[0]), Bytes(t[0]));
      return 0;
    case kAdd: {
      if (n != 3) return Fail("ValueError: add: arity");
      for (DLTensor* x : t) {
        if (x->dtype.code != kDLFloat || x->dtype.bits != 32 || x->dtype.lanes != 1 ||
            Bytes(x) != Bytes(t[0])) {
          return Fail("ValueError: add: float32 tensors of equal size only");
        }
      }
      auto* a = reinterpret_cast<float*>(at(t[0]));
      auto* b = reinterpret_cast<float*>(at(t[1]));
      auto* c = reinterpret_cast<float*>(at(t[2]));
      for (size_t i = 0; i < Bytes(t[0]) / 4; ++i) c[i] = a[i] + b[i];
      return 0;
    }
    case kZero:
      for (DLTensor* x : t) std::memset(at(x), 0, Bytes(x));
      return 0;
  }
  return Fail("RuntimeError: unknown kernel");
}

TVMFunctionHandle MakeKernel(Kind k) {
  TVMFunctionHandle f = nullptr;
  FUZZ_CHECK(TVMFuncCreateFromCFunc(Kernel, reinterpret_cast<void*>(static_cast<intptr_t>(k)),
                                    nullptr, &f) == 0);
  return f;
}

TVMModuleHandle KernelLib() {
  static TVMModuleHandle lib = [] {
    TVMFunctionHandle copy = MakeKernel(kCopy), add = MakeKernel(kAdd), zero = MakeKernel(kZero);
    TVMValue v[7];
    int c[7] = {kTVMStr,
                kTVMStr,
                kTVMPackedFuncHandle,
                kTVMStr,
                kTVMPackedFuncHandle,
                kTVMStr,
                kTVMPackedFuncHandle};
    v[0].v_str = "fuzz.Kernels";
    v[1].v_str = "copy", v[2].v_handle = copy;
    v[3].v_str = "add", v[4].v_handle = add;
    v[5].v_str = "zero", v[6].v_handle = zero;
    TVMValue rv;
    int rc = 0;
    FUZZ_CHECK(TVMFuncCall(fuzz::Global("runtime.ModuleFromFunctions"), v, c, 7, &rv, &rc) == 0);
    FUZZ_CHECK(rc == kTVMModuleHandle);
    TVMFuncFree(copy), TVMFuncFree(add), TVMFuncFree(zero);
    return static_cast<TVMModuleHandle>(rv.v_handle);
  }();
  return lib;
}

TVMFunctionHandle Method(TVMModuleHandle m, const char* name) {
  TVMFunctionHandle f = nullptr;
  FUZZ_CHECK(TVMModGetFunction(m, name, 0, &f) == 0 && f != nullptr);
  return f;
}

// Calls f(args); returns rc, releasing any returned reference unless out is given.
int Call(TVMFunctionHandle f, std::vector<TVMValue> v, std::vector<int> c, TVMValue* out = nullptr,
         int* out_code = nullptr) {
  TVMValue rv;
  int rc = kTVMNullptr;
  int r = TVMFuncCall(f, v.data(), c.data(), static_cast<int>(v.size()), &rv, &rc);
  if (r != 0) {
    fuzz::CheckFailure(r);
    return r;
  }
  if (out != nullptr) {
    *out = rv, *out_code = rc;
  } else {
    fuzz::ReleaseReturn(rv, rc);
  }
  return 0;
}

TVMValue Int(int64_t i) {
  TVMValue v;
  v.v_int64 = i;
  return v;
}

constexpr size_t kMaxTouch = size_t{64} << 20;  // inputs larger than this are not written

// Whether a graph asks for more than 256 MiB of real storage. Such graphs are valid (big
// models are), and the executor would allocate and run them, but at seconds per input under
// ASan; the fuzzer skips them. Sizes that overflow int64 are not skipped: the executor must
// refuse those itself. The harness reads the JSON on its own, leniently; anything it does not
// understand goes to the executor.
bool TooLargeToRun(const std::string& text) {
  auto g = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!g.is_object() || !g.contains("attrs") || !g["attrs"].is_object()) return false;
  const auto& shapes = g["attrs"]["shape"];
  if (!shapes.is_array() || shapes.size() != 2 || !shapes[1].is_array()) return false;
  const auto& dtypes = g["attrs"]["dltype"];
  bool have_dtypes = dtypes.is_array() && dtypes.size() == 2 && dtypes[1].is_array();
  double total = 0;
  for (size_t i = 0; i < shapes[1].size(); ++i) {
    const auto& shape = shapes[1][i];
    if (!shape.is_array()) return false;
    double n = 8;  // bytes per element: the dtype's, or 8 when unreadable
    DLDataType t;
    if (have_dtypes && i < dtypes[1].size() && dtypes[1][i].is_string() &&
        PolyffiDataTypeFromString(dtypes[1][i].get<std::string>().c_str(), &t) == 0) {
      n = (double(t.bits) * t.lanes + 7) / 8;
    }
    for (const auto& d : shape) {
      if (!d.is_number()) return false;
      n *= std::fabs(d.get<double>());
    }
    if (n >= 9.2e18) return false;  // overflows: the executor must refuse it
    total += n;
  }
  return total > double(uint64_t{256} << 20);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static TVMFunctionHandle create = fuzz::Global("tvm.graph_executor.create");
  std::string json(reinterpret_cast<const char*>(data), size);
  if (TooLargeToRun(json)) return 0;
  TVMValue args[4];
  int codes[4] = {kTVMStr, kTVMModuleHandle, kTVMArgInt, kTVMArgInt};
  args[0].v_str = json.c_str();
  args[1].v_handle = KernelLib();
  args[2].v_int64 = kDLCPU;
  args[3].v_int64 = 0;
  TVMValue rv;
  int rc = kTVMNullptr;
  int r = TVMFuncCall(create, args, codes, 4, &rv, &rc);
  if (r != 0) {
    fuzz::CheckFailure(r);
    return 0;
  }
  FUZZ_CHECK(rc == kTVMModuleHandle);
  TVMModuleHandle ex = rv.v_handle;

  TVMFunctionHandle get_input = Method(ex, "get_input"), set_input = Method(ex, "set_input"),
                    run = Method(ex, "run"), get_output = Method(ex, "get_output"),
                    get_num_inputs = Method(ex, "get_num_inputs"),
                    get_num_outputs = Method(ex, "get_num_outputs");
  TVMValue n;
  int nc = 0;
  FUZZ_CHECK(Call(get_num_inputs, {}, {}, &n, &nc) == 0 && nc == kTVMArgInt);
  int64_t num_inputs = n.v_int64;
  FUZZ_CHECK(Call(get_num_outputs, {}, {}, &n, &nc) == 0 && nc == kTVMArgInt);
  int64_t num_outputs = n.v_int64;

  // run() before any input has a value must fail cleanly when the graph has inputs.
  int first = Call(run, {}, {});
  FUZZ_CHECK(num_inputs == 0 || first != 0);
  // Every input: read its storage, and set it from a fresh array of the same shape and dtype.
  for (int64_t i = 0; i < num_inputs; ++i) {
    TVMValue a;
    int ac = 0;
    FUZZ_CHECK(Call(get_input, {Int(i)}, {kTVMArgInt}, &a, &ac) == 0 && ac == kTVMNDArrayHandle);
    auto* in = static_cast<TVMArrayHandle>(a.v_handle);
    if (Bytes(in) <= kMaxTouch) {
      std::vector<char> zeros(Bytes(in), 0);
      FUZZ_CHECK(TVMArrayCopyFromBytes(in, zeros.data(), zeros.size()) == 0);
      TVMArrayHandle fresh = nullptr;
      if (TVMArrayAlloc(in->shape, in->ndim, in->dtype.code, in->dtype.bits, in->dtype.lanes,
                        kDLCPU, 0, &fresh) == 0) {
        FUZZ_CHECK(TVMArrayCopyFromBytes(fresh, zeros.data(), zeros.size()) == 0);
        TVMValue sv;
        sv.v_handle = fresh;
        FUZZ_CHECK(Call(set_input, {Int(i), sv}, {kTVMArgInt, kTVMNDArrayHandle}) == 0);
        TVMArrayFree(fresh);
      }
    }
    TVMArrayFree(in);
  }
  if (Call(run, {}, {}) == 0) {
    for (int64_t i = 0; i < num_outputs; ++i)
      FUZZ_CHECK(Call(get_output, {Int(i)}, {kTVMArgInt}) == 0);
  }
  // Out of range indices are errors, never reads.
  FUZZ_CHECK(Call(get_output, {Int(num_outputs)}, {kTVMArgInt}) != 0);
  FUZZ_CHECK(Call(get_input, {Int(-1)}, {kTVMArgInt}) != 0);
  for (TVMFunctionHandle f :
       {get_input, set_input, run, get_output, get_num_inputs, get_num_outputs}) {
    TVMFuncFree(f);
  }
  TVMModFree(ex);
  return 0;
}
