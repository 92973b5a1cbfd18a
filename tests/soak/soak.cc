// Soak of the core through the C ABI: 10M calls, 1M callbacks (a C callback and a fixture
// closure each) created, called and freed, 100k
// module loads with a function lookup, 100k NDArrays allocated (and exported/imported through
// DLPack) and freed. After a warm-up of each phase the resident set may grow by at most 1 MiB
// over the rest of it, and testing.live_objects() must be back at its start. Prints the figures
// (docs/reliability.md records them).
//
//   soak [scale]   scale multiplies every count (default 1, as ctest runs it)
#include <polyffi/c_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
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

// Runs body(i) for i in [0, n): the first tenth warms up, then RSS is measured over the rest.
void Phase(const char* name, long n, const std::function<void(long)>& body) {
  long warm = n / 10;
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < warm; ++i) body(i);
  long before = RssKiB();
  for (long i = warm; i < n; ++i) body(i);
  long after = RssKiB();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  bool ok = after - before <= 1024;
  std::printf("%-36s %10ld  %7.2f s  RSS %6ld KiB -> %6ld KiB (%+ld KiB after warm-up) %s\n", name,
              n, s, before, after, after - before, ok ? "ok" : "GROWS");
  if (!ok) ++failures;
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
