// Soak of the core through the C ABI: 10M calls, 1M callbacks (a C callback and a fixture
// closure each) created, called and freed, 1M global lookups, 100k module loads with a function
// lookup, 100k NDArrays allocated (and exported/imported through DLPack) and freed, 100k NDArray
// round trips (bytes in, bytes out), 100k runs of TVM 0.18's digits model (set_input, run,
// get_output). After a warm-up of each phase the resident set may grow by at most 1 MiB over
// the rest of it, the runtime's live objects (runtime.LiveObjectCount) must be where they were
// after the warm-up at the end of each phase, and the fixtures' (testing.live_objects) back at
// their start at the end. Prints the figures
// (docs/reliability.md records them).
//
//   soak [scale]   scale multiplies every count (default 1, as ctest runs it)
#include <polyffi/c_runtime_api.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

namespace {

long RssKiB() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "soak: %s: %s\n", what, TVMGetLastError());
  std::exit(2);
}

TVMFunctionHandle Global(const char* name) {
  TVMFunctionHandle f = nullptr;
  if (TVMFuncGetGlobal(name, &f) != 0 || f == nullptr) Die(name);
  return f;
}

int64_t CallInt(TVMFunctionHandle f, int64_t a, int64_t b) {
  TVMValue v[2], rv;
  v[0].v_int64 = a;
  v[1].v_int64 = b;
  int codes[2] = {kTVMArgInt, kTVMArgInt}, rc = 0;
  if (TVMFuncCall(f, v, codes, 2, &rv, &rc) != 0) Die("call");
  return rv.v_int64;
}

int64_t CallInt1(TVMFunctionHandle f, int64_t a) {
  TVMValue v, rv;
  v.v_int64 = a;
  int code = kTVMArgInt, rc = 0;
  if (TVMFuncCall(f, &v, &code, 1, &rv, &rc) != 0) Die("call");
  return rv.v_int64;
}

int Double(TVMValue* args, int*, int, TVMRetValueHandle ret, void*) {
  TVMValue v;
  v.v_int64 = args[0].v_int64 * 2;
  int code = kTVMArgInt;
  return TVMCFuncSetReturn(ret, &v, &code, 1);
}
long finalized = 0;
void Finalize(void* resource) { finalized += reinterpret_cast<intptr_t>(resource); }

int failures = 0;

int64_t RuntimeLiveObjects() {
  static TVMFunctionHandle f = Global("runtime.LiveObjectCount");
  TVMValue rv;
  int rc = 0;
  if (TVMFuncCall(f, nullptr, nullptr, 0, &rv, &rc) != 0) Die("runtime.LiveObjectCount");
  return rv.v_int64;
}

// Runs body(i) for i in [0, n): the first tenth warms up, then RSS is measured over the rest.
// The runtime's live objects must be where they were after the warm-up (which absorbs one-time
// caches: a library, once loaded, stays loaded for the process).
void Phase(const char* name, long n, const std::function<void(long)>& body) {
  long warm = n / 10;
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < warm; ++i) body(i);
  const int64_t live_before = RuntimeLiveObjects();
  long before = RssKiB();
  for (long i = warm; i < n; ++i) body(i);
  long after = RssKiB();
  const int64_t live_after = RuntimeLiveObjects();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  bool ok = after - before <= 1024 && live_after == live_before;
  std::printf(
      "%-46s %9ld  %7.2f s  RSS %6ld KiB -> %6ld KiB (%+ld KiB after warm-up), live objects "
      "%lld -> %lld %s\n",
      name, n, s, before, after, after - before, static_cast<long long>(live_before),
      static_cast<long long>(live_after), ok ? "ok" : "GROWS");
  if (!ok) ++failures;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TVMFunctionHandle ModFunc(TVMModuleHandle m, const char* name) {
  TVMFunctionHandle f = nullptr;
  if (TVMModGetFunction(m, name, 0, &f) != 0 || f == nullptr) Die(name);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  double scale = argc > 1 ? std::atof(argv[1]) : 1.0;
  auto count = [scale](long n) { return static_cast<long>(n * scale); };
  const std::string lib_dir = POLYFFI_LIB_DIR;
  TVMModuleHandle fixtures = nullptr;
  if (TVMModLoadFromFile((lib_dir + "/libpolyffi_testing.so").c_str(), "", &fixtures) != 0) {
    Die("load fixtures");
  }
  TVMFunctionHandle add = Global("testing.add"), apply = Global("testing.apply");
  TVMFunctionHandle closure = Global("testing.return_closure");
  TVMFunctionHandle live = Global("testing.live_objects");
  TVMValue none[1];
  int none_codes[1];
  auto live_objects = [&] {
    TVMValue rv;
    int rc = 0;
    if (TVMFuncCall(live, none, none_codes, 0, &rv, &rc) != 0) Die("live_objects");
    return rv.v_int64;
  };
  const int64_t live_start = live_objects();
  std::printf("soak (scale %g), start RSS %ld KiB, live objects %lld\n", scale, RssKiB(),
              static_cast<long long>(live_start));

  int64_t sum = 0;
  Phase("calls (testing.add)", count(10000000), [&](long i) { sum += CallInt(add, i, 1); });

  long created = 0;
  Phase("callbacks + closures create/call/free", count(1000000), [&](long i) {
    TVMFunctionHandle cb = nullptr;
    if (TVMFuncCreateFromCFunc(Double, reinterpret_cast<void*>(1), Finalize, &cb) != 0) {
      Die("create");
    }
    ++created;
    TVMValue v[2], rv;
    v[0].v_handle = cb;
    v[1].v_int64 = i;
    int codes[2] = {kTVMPackedFuncHandle, kTVMArgInt}, rc = 0;
    if (TVMFuncCall(apply, v, codes, 2, &rv, &rc) != 0 || rv.v_int64 != 2 * i) Die("apply");
    TVMFuncFree(cb);
    // And a closure made by the fixtures (counted by testing.live_objects), called and freed.
    v[0].v_int64 = i;
    codes[0] = kTVMArgInt;
    if (TVMFuncCall(closure, v, codes, 1, &rv, &rc) != 0 || rc != kTVMPackedFuncHandle) {
      Die("return_closure");
    }
    TVMFunctionHandle g = rv.v_handle;
    if (CallInt1(g, 1) != i + 1) Die("closure");
    TVMFuncFree(g);
  });

  const std::string dso = lib_dir + "/libpolyffi_test_dso.so";
  Phase("module load/get function/free", count(100000), [&](long i) {
    TVMModuleHandle m = nullptr;
    TVMFunctionHandle f = nullptr;
    if (TVMModLoadFromFile(dso.c_str(), "", &m) != 0) Die("load");
    if (TVMModGetFunction(m, "scale_i64", 0, &f) != 0 || f == nullptr) Die("get");
    if (CallInt(f, i, 2) != 2 * i) Die("scale_i64");
    TVMFuncFree(f);
    TVMModFree(m);
  });

  Phase("NDArray alloc/DLPack/free", count(100000), [&](long i) {
    int64_t shape[2] = {4, 1 + i % 64};
    TVMArrayHandle a = nullptr, b = nullptr;
    if (TVMArrayAlloc(shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &a) != 0) Die("alloc");
    DLManagedTensor* m = nullptr;
    if (TVMArrayToDLPack(a, &m) != 0 || TVMArrayFromDLPack(m, &b) != 0) Die("dlpack");
    TVMArrayFree(a);
    TVMArrayFree(b);
  });

  Phase("global lookup/free (testing.add)", count(1000000), [&](long) {
    TVMFunctionHandle f = nullptr;
    if (TVMFuncGetGlobal("testing.add", &f) != 0 || f == nullptr) Die("lookup");
    TVMFuncFree(f);
  });

  Phase("NDArray round trip (bytes in/out)", count(100000), [&](long i) {
    int64_t shape[1] = {64};
    float in[64], out[64];
    for (int k = 0; k < 64; ++k) in[k] = static_cast<float>(i + k);
    TVMArrayHandle a = nullptr;
    if (TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &a) != 0) Die("alloc");
    if (TVMArrayCopyFromBytes(a, in, sizeof(in)) != 0) Die("from bytes");
    if (TVMArrayCopyToBytes(a, out, sizeof(out)) != 0) Die("to bytes");
    if (std::memcmp(in, out, sizeof(in)) != 0) Die("round trip");
    TVMArrayFree(a);
  });

  // TVM 0.18's digits model: one executor, many runs on its recorded input.
  const std::string model = POLYFFI_TVM018_DIR "/digits_b1";
  TVMModuleHandle factory = nullptr;
  if (TVMModLoadFromFile((model + "/factory.so").c_str(), "", &factory) != 0) Die("factory");
  TVMValue dev;
  dev.v_device = {kDLCPU, 0};
  int dev_code = kDLDevice, rc = 0;
  TVMValue exec_v;
  TVMFunctionHandle make = ModFunc(factory, "default");
  if (TVMFuncCall(make, &dev, &dev_code, 1, &exec_v, &rc) != 0) Die("default");
  TVMFuncFree(make);
  TVMModuleHandle exec = exec_v.v_handle;
  TVMFunctionHandle set_input = ModFunc(exec, "set_input"), run = ModFunc(exec, "run");
  TVMFunctionHandle get_output = ModFunc(exec, "get_output");
  const std::string input = ReadFile(model + "/input_data.bin");
  const std::string expected = ReadFile(model + "/output_0.bin");
  if (input.size() != 64 * sizeof(float) || expected.size() != 10 * sizeof(float)) Die("io files");
  int64_t in_shape[2] = {1, 64}, out_shape[2] = {1, 10};
  TVMArrayHandle x = nullptr, y = nullptr;
  if (TVMArrayAlloc(in_shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &x) != 0 ||
      TVMArrayAlloc(out_shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &y) != 0) {
    Die("alloc io");
  }
  if (TVMArrayCopyFromBytes(x, const_cast<char*>(input.data()), input.size()) != 0) Die("input");
  Phase("model run (digits: set_input/run/get_output)", count(100000), [&](long) {
    TVMValue v[2], rv;
    int codes[2] = {kTVMStr, kTVMNDArrayHandle}, r = 0;
    v[0].v_str = "data";
    v[1].v_handle = x;
    if (TVMFuncCall(set_input, v, codes, 2, &rv, &r) != 0) Die("set_input");
    if (TVMFuncCall(run, nullptr, nullptr, 0, &rv, &r) != 0) Die("run");
    v[0].v_int64 = 0;
    codes[0] = kTVMArgInt;
    v[1].v_handle = y;
    if (TVMFuncCall(get_output, v, codes, 2, &rv, &r) != 0) Die("get_output");
  });
  std::string got(expected.size(), '\0');
  if (TVMArrayCopyToBytes(y, &got[0], got.size()) != 0) Die("output");
  const float* g = reinterpret_cast<const float*>(got.data());
  const float* e = reinterpret_cast<const float*>(expected.data());
  for (int k = 0; k < 10; ++k) {
    if (std::fabs(g[k] - e[k]) > 1e-5f * (1 + std::fabs(e[k]))) Die("digits output differs");
  }
  TVMArrayFree(x);
  TVMArrayFree(y);
  for (TVMFunctionHandle f : {set_input, run, get_output}) TVMFuncFree(f);
  TVMModFree(exec);
  TVMModFree(factory);

  int64_t live_end = live_objects();
  std::printf("live objects: %lld at start, %lld at end; finalizers run: %ld of %ld\n",
              static_cast<long long>(live_start), static_cast<long long>(live_end), finalized,
              created);
  if (live_end != live_start || finalized != created) ++failures;
  for (TVMFunctionHandle f : {add, apply, closure, live}) TVMFuncFree(f);
  TVMModFree(fixtures);
  std::printf("%s (checksum %lld)\n", failures == 0 ? "soak: ok" : "soak: FAILED",
              static_cast<long long>(sum));
  return failures == 0 ? 0 : 1;
}
