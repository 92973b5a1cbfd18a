// bench_memory: is memory flat over many calls? Makes TOTAL calls of one case through
// TVMFuncCall (default: testing.add3(1, 2, 3), 10M calls) and prints resident set size (from
// /proc/self/statm) after a 1M-call warm-up and at the end, plus heap allocations counted by
// the malloc interposer in between. It only reports: performance is never asserted.
//
//   bench_memory [add3|nop|str16|callback] [TOTAL]
#include <polyffi/c_runtime_api.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../calls/common_inputs.h"
#include "../common/alloc_counter.h"

namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "bench_memory: %s\n", what.c_str());
  std::exit(2);
}

void Check(int rc, const char* what) {
  if (rc != 0) Fail(std::string(what) + ": " + TVMGetLastError());
}

long ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) Fail("cannot open /proc/self/statm");
  long size = 0, resident = 0;
  int n = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  if (n != 2) Fail("cannot parse /proc/self/statm");
  return resident * sysconf(_SC_PAGESIZE);
}

int AddOne(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void*) {
  if (n != 1 || codes[0] != kTVMArgInt) {
    TVMAPISetLastError("TypeError: add_one expects one int");
    return -1;
  }
  TVMValue v;
  v.v_int64 = args[0].v_int64 + 1;
  int code = kTVMArgInt;
  return TVMCFuncSetReturn(ret, &v, &code, 1);
}

struct Call {
  TVMFunctionHandle f = nullptr;
  TVMValue args[3];
  int codes[3] = {0, 0, 0};
  int num_args = 0;
};

Call MakeCall(const std::string& which) {
  Call c;
  const char* name = nullptr;
  if (which == "add3") {
    name = "testing.add3";
    c.num_args = 3;
    for (int i = 0; i < 3; ++i) c.args[i].v_int64 = i + 1, c.codes[i] = kTVMArgInt;
  } else if (which == "nop") {
    name = "testing.nop";
  } else if (which == "str16") {
    name = "testing.echo";
    c.num_args = 1;
    c.args[0].v_str = bench::kStr16;
    c.codes[0] = kTVMStr;
  } else if (which == "callback") {
    Check(TVMFuncCreateFromCFunc(AddOne, nullptr, nullptr, &c.f), "TVMFuncCreateFromCFunc");
    c.num_args = 1;
    c.args[0].v_int64 = 1;
    c.codes[0] = kTVMArgInt;
    return c;
  } else {
    Fail("unknown case '" + which + "' (add3, nop, str16, callback)");
  }
  Check(TVMFuncGetGlobal(name, &c.f), name);
  if (c.f == nullptr) Fail(std::string(name) + " is not registered");
  return c;
}

void Run(Call& c, long n) {
  TVMValue rv;
  int rc;
  for (long i = 0; i < n; ++i) {
    // Refill every time, as a caller would; a callee may not write into args, but we don't rely
    // on it.
    TVMValue args[3] = {c.args[0], c.args[1], c.args[2]};
    int codes[3] = {c.codes[0], c.codes[1], c.codes[2]};
    if (TVMFuncCall(c.f, args, codes, c.num_args, &rv, &rc) != 0) {
      Fail(std::string("call failed: ") + TVMGetLastError());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string which = argc > 1 ? argv[1] : "add3";
  long total = 10000000;
  if (argc > 2) {
    char* end = nullptr;
    total = std::strtol(argv[2], &end, 10);
    if (*end != '\0' || total < 1) Fail(std::string("TOTAL must be a positive count: ") + argv[2]);
  }
  if (!bench::AllocCounterActive()) Fail("the malloc interposer is not in use");
  const long warmup = total < 1000000 ? total / 10 : 1000000;
  const char* lib = std::getenv("POLYFFI_TESTING_LIB");
  if (lib == nullptr || lib[0] == '\0') lib = POLYFFI_TESTING_LIB_PATH;
  TVMModuleHandle mod = nullptr;
  Check(TVMModLoadFromFile(lib, "", &mod), lib);

  Call c = MakeCall(which);
  long rss_start = ResidentBytes();
  Run(c, warmup);
  long rss_warm = ResidentBytes();
  bench::AllocStats before = bench::AllocSnapshot();
  Run(c, total - warmup);
  bench::AllocStats after = bench::AllocSnapshot();
  long rss_end = ResidentBytes();

  std::printf("case: %s, calls: %ld (warm-up %ld)\n", which.c_str(), total, warmup);
  std::printf("rss_before_kib: %ld\n", rss_start / 1024);
  std::printf("rss_after_warmup_kib: %ld\n", rss_warm / 1024);
  std::printf("rss_end_kib: %ld\n", rss_end / 1024);
  std::printf("rss_growth_after_warmup_kib: %ld\n", (rss_end - rss_warm) / 1024);
  std::printf("heap_allocs_after_warmup: %llu (%.3f per call)\n",
              static_cast<unsigned long long>(after.allocs - before.allocs),
              static_cast<double>(after.allocs - before.allocs) / (total - warmup));
  TVMFuncFree(c.f);
  TVMModFree(mod);
  return 0;
}
