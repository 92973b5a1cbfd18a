// The cost of calling a TVM 0.27 kernel (tvm-ffi ABI) through polyffi's classic C API, against
// its floor: the kernel's `__tvm_ffi_scale` called directly with TVMFFIAny arguments built by
// hand (what a runtime speaking tvm-ffi natively does at the very least). Also the cost of
// staging a misaligned tensor (docs/abi-decisions.md). Kernel: two_funcs.so `scale(X, k, Y)`,
// Y = X * k, float32, any length. See docs/performance/ffi_kernels.md for the commands.
//
//   bench_ffi_kernels [google-benchmark flags]
//   bench_ffi_kernels --count <direct|polyffi|ndarray|misaligned> <n_elems> <calls>
//       (a fixed number of calls, for callgrind instruction counts)
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <polyffi/c_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Any {  // TVMFFIAny
  int32_t type_index;
  uint32_t pad;
  union {
    int64_t v_int64;
    double v_float64;
    void* v_ptr;
  };
};
using SafeCall = int (*)(void*, const Any*, int32_t, Any*);

const char* kKernel = TVM027_KERNELS "/two_funcs.so";

struct Kernel {
  TVMModuleHandle mod = nullptr;
  TVMFunctionHandle scale = nullptr;
  SafeCall direct = nullptr;
  Kernel() {
    if (TVMModLoadFromFile(kKernel, "", &mod) != 0 ||
        TVMModGetFunction(mod, "scale", 0, &scale) != 0 || scale == nullptr) {
      std::fprintf(stderr, "cannot load %s: %s\n", kKernel, TVMGetLastError());
      std::exit(1);
    }
    // The same library, already open (RTLD_NOLOAD): the symbol polyffi wraps.
    void* h = dlopen(kKernel, RTLD_NOW | RTLD_NOLOAD);
    direct = h ? reinterpret_cast<SafeCall>(dlsym(h, "__tvm_ffi_scale")) : nullptr;
    if (direct == nullptr) std::exit(1);
  }
};
Kernel& K() {
  static Kernel k;
  return k;
}

// Two tensors of n float32, `offset` bytes past 64-byte alignment.
struct Tensors {
  std::vector<char> xmem, ymem;
  int64_t shape[1];
  DLTensor x{}, y{};
  Tensors(int64_t n, size_t offset) : xmem(n * 4 + 128), ymem(n * 4 + 128), shape{n} {
    auto at = [offset](std::vector<char>& m) {
      uintptr_t p = reinterpret_cast<uintptr_t>(m.data());
      return reinterpret_cast<void*>((p + 63) / 64 * 64 + offset);
    };
    x = DLTensor{at(xmem), {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
    y = DLTensor{at(ymem), {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
    for (int64_t i = 0; i < n; ++i) static_cast<float*>(x.data)[i] = float(i);
  }
};

int CallDirect(Tensors& t) {
  Any args[3], result;
  args[0].type_index = 7, args[0].pad = 0, args[0].v_ptr = &t.x;
  args[1].type_index = 3, args[1].pad = 0, args[1].v_float64 = 2.5;
  args[2].type_index = 7, args[2].pad = 0, args[2].v_ptr = &t.y;
  result.type_index = 0, result.pad = 0, result.v_int64 = 0;
  return K().direct(nullptr, args, 3, &result);
}

int CallPolyffi(Tensors& t) {
  TVMValue v[3], rv;
  int codes[3] = {kTVMDLTensorHandle, kTVMArgFloat, kTVMDLTensorHandle}, rc = 0;
  v[0].v_handle = &t.x, v[1].v_float64 = 2.5, v[2].v_handle = &t.y;
  return TVMFuncCall(K().scale, v, codes, 3, &rv, &rc);
}

struct Arrays {
  TVMArrayHandle x = nullptr, y = nullptr;
  explicit Arrays(int64_t n) {
    TVMArrayAlloc(&n, 1, kDLFloat, 32, 1, kDLCPU, 0, &x);
    TVMArrayAlloc(&n, 1, kDLFloat, 32, 1, kDLCPU, 0, &y);
  }
  ~Arrays() {
    TVMArrayFree(x);
    TVMArrayFree(y);
  }
};

int CallNDArray(Arrays& a) {
  TVMValue v[3], rv;
  int codes[3] = {kTVMNDArrayHandle, kTVMArgFloat, kTVMNDArrayHandle}, rc = 0;
  v[0].v_handle = a.x, v[1].v_float64 = 2.5, v[2].v_handle = a.y;
  return TVMFuncCall(K().scale, v, codes, 3, &rv, &rc);
}

void BM_Direct(benchmark::State& s) {
  Tensors t(s.range(0), 0);
  for (auto _ : s) benchmark::DoNotOptimize(CallDirect(t));
}
void BM_PolyffiDLTensor(benchmark::State& s) {
  Tensors t(s.range(0), 0);
  for (auto _ : s) benchmark::DoNotOptimize(CallPolyffi(t));
}
void BM_PolyffiNDArray(benchmark::State& s) {
  Arrays a(s.range(0));
  for (auto _ : s) benchmark::DoNotOptimize(CallNDArray(a));
}
void BM_PolyffiMisaligned(benchmark::State& s) {
  Tensors t(s.range(0), 4);
  for (auto _ : s) benchmark::DoNotOptimize(CallPolyffi(t));
}
BENCHMARK(BM_Direct)->Arg(16)->Arg(1 << 16);
BENCHMARK(BM_PolyffiDLTensor)->Arg(16)->Arg(1 << 16);
BENCHMARK(BM_PolyffiNDArray)->Arg(16)->Arg(1 << 16);
BENCHMARK(BM_PolyffiMisaligned)->Arg(16)->Arg(1 << 16);

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "--count") == 0) {
    std::string mode = argv[2];
    int64_t n = std::atoll(argv[3]);
    long calls = std::atol(argv[4]);
    Tensors aligned(n, 0), off(n, 4);
    Arrays arrays(n);
    int bad = 0;
    for (long i = 0; i < calls; ++i) {
      if (mode == "direct") bad |= CallDirect(aligned);
      if (mode == "polyffi") bad |= CallPolyffi(aligned);
      if (mode == "ndarray") bad |= CallNDArray(arrays);
      if (mode == "misaligned") bad |= CallPolyffi(off);
    }
    return bad == 0 ? 0 : 1;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
