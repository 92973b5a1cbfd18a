// Mixed 8-thread stress over the C ABI, for a fixed number of iterations: calls, callbacks
// created and freed, globals registered and removed (per thread and one name shared by all),
// module loads, NDArray creation, DLPack exchange between threads, and graph executor runs on
// per-thread executors. Run under TSan and ASan by ci/test-sanitizers.sh (label "threads");
// the plain build runs it too. Every result is checked, and at the end every callback has been
// finalized exactly once and testing.live_objects() is back where it started.
//
// POLYFFI_STRESS_ITERATIONS overrides the iterations per thread (default 2000).
#include <atomic>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>

#include "hardening_util.h"

namespace hardening {
namespace {

using abitests::Handle;
using abitests::Int;
using abitests::Str;

constexpr int kThreads = 8;

int Iterations() {
  const char* s = std::getenv("POLYFFI_STRESS_ITERATIONS");
  return s != nullptr ? std::atoi(s) : 2000;
}

// DLPack tensors exported by one thread and imported (and freed) by whichever thread comes next.
class Exchange {
 public:
  void Put(DLManagedTensor* t) {
    std::lock_guard<std::mutex> lock(mu_);
    q_.push_back(t);
  }
  DLManagedTensor* Take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (q_.empty()) return nullptr;
    DLManagedTensor* t = q_.front();
    q_.pop_front();
    return t;
  }

 private:
  std::mutex mu_;
  std::deque<DLManagedTensor*> q_;
};

std::string AddOneGraph() { return OneOpGraph("add_one_f32", "[8]"); }

// The per-thread work; returns the number of failed checks (gtest assertions are not used off
// the main thread).
int Worker(int tid, int iterations, TVMModuleHandle dso, Exchange* exchange,
           std::atomic<int>* created, std::atomic<int>* finalized) {
  int failures = 0;
  auto check = [&failures](bool ok, const char* what, const std::string& detail = "") {
    if (!ok) {
      if (failures < 5) std::fprintf(stderr, "stress check failed: %s %s\n", what, detail.c_str());
      ++failures;
    }
  };
  TVMFunctionHandle add = nullptr, apply = nullptr, concat = nullptr, nd_sum = nullptr;
  TVMFuncGetGlobal("testing.add", &add);
  TVMFuncGetGlobal("testing.apply", &apply);
  TVMFuncGetGlobal("testing.concat", &concat);
  TVMFuncGetGlobal("testing.nd_sum", &nd_sum);
  std::string own = "stress.thread" + std::to_string(tid);
  std::unique_ptr<Executor> ex;
  for (int i = 0; i < iterations; ++i) {
    // Plain calls, a string result in thread-local storage.
    Ret r = Call(add, {Int(i), Int(tid)});
    check(r.rc == 0 && r.value.v_int64 == i + tid, "testing.add", r.error);
    std::string tag = std::to_string(tid) + ":" + std::to_string(i);
    r = Call(concat, {Str("t"), Str(tag.c_str())});
    check(r.rc == 0 && r.str == "t" + tag, "testing.concat", r.error);

    // A callback, called back through the fixtures, then freed.
    created->fetch_add(1);
    TVMFunctionHandle cb = abitests::MakeFunction(
        [](TVMValue* args, int* codes, int n, TVMRetValueHandle ret) {
          if (n != 1 || codes[0] != kTVMArgInt) return -1;
          return abitests::ReturnInt(ret, args[0].v_int64 * 2);
        },
        finalized);
    r = Call(apply, {Handle(cb, kTVMPackedFuncHandle), Int(i)});
    check(r.rc == 0 && r.value.v_int64 == 2 * i, "callback via testing.apply", r.error);

    // Globals: this thread's own name, and one name every thread replaces and removes.
    check(TVMFuncRegisterGlobal(own.c_str(), cb, 1) == 0, "register own");
    check(TVMFuncRegisterGlobal("stress.shared", cb, 1) == 0, "register shared");
    TVMFunctionHandle g = nullptr;
    check(TVMFuncGetGlobal(own.c_str(), &g) == 0 && g != nullptr, "get own");
    if (g != nullptr) {
      r = Call(g, {Int(3)});
      check(r.rc == 0 && r.value.v_int64 == 6, "call own", r.error);
      TVMFuncFree(g);
    }
    g = nullptr;
    check(TVMFuncGetGlobal("stress.shared", &g) == 0, "get shared");
    if (g != nullptr) {  // some thread's callback, or none if just removed
      r = Call(g, {Int(5)});
      check(r.rc == 0 && r.value.v_int64 == 10, "call shared", r.error);
      TVMFuncFree(g);
    }
    check(TVMFuncRemoveGlobal(own.c_str()) == 0, "remove own");
    if (i % 3 == 0) check(TVMFuncRemoveGlobal("stress.shared") == 0, "remove shared");
    TVMFuncFree(cb);

    // Module load (the same library from every thread) and a call into it.
    TVMModuleHandle m = nullptr;
    check(TVMModLoadFromFile(LibPath("libpolyffi_test_dso.so").c_str(), "", &m) == 0, "load");
    TVMFunctionHandle scale = nullptr;
    check(TVMModGetFunction(m, "scale_i64", 0, &scale) == 0 && scale != nullptr, "get scale");
    if (scale != nullptr) {
      r = Call(scale, {Int(i), Int(3)});
      check(r.rc == 0 && r.value.v_int64 == 3 * i, "scale_i64", r.error);
      TVMFuncFree(scale);
    }
    TVMModFree(m);

    // NDArrays and DLPack: export, import here, and hand one export to another thread.
    int64_t n = 16;
    TVMArrayHandle a = nullptr;
    check(TVMArrayAlloc(&n, 1, kDLFloat, 32, 1, kDLCPU, 0, &a) == 0, "alloc");
    std::vector<float> ones(16, 1.0f);
    TVMArrayCopyFromBytes(a, ones.data(), ones.size() * sizeof(float));
    DLManagedTensor* mine = nullptr;
    DLManagedTensor* theirs = nullptr;
    TVMArrayToDLPack(a, &mine);
    TVMArrayToDLPack(a, &theirs);
    TVMArrayHandle b = nullptr;
    check(TVMArrayFromDLPack(mine, &b) == 0, "import");
    TVMArrayFree(a);  // b keeps the storage alive through the export
    r = Call(nd_sum, {Handle(b, kTVMNDArrayHandle)});
    check(r.rc == 0 && r.value.v_float64 == 16.0, "nd_sum", r.error);
    TVMArrayFree(b);
    exchange->Put(theirs);
    if (DLManagedTensor* other = exchange->Take()) {
      TVMArrayHandle c = nullptr;
      check(TVMArrayFromDLPack(other, &c) == 0, "import other's");
      r = Call(nd_sum, {Handle(c, kTVMNDArrayHandle)});
      check(r.rc == 0 && r.value.v_float64 == 16.0, "nd_sum other's", r.error);
      TVMArrayFree(c);
    }

    // This thread's executor (made anew now and then), one inference.
    if (i % 50 == 0) {
      ex = std::make_unique<Executor>();
      check(ex->Create(AddOneGraph(), dso) == 0, "executor create", ex->error());
    }
    Array x({8});
    std::vector<float> xs(8);
    for (int k = 0; k < 8; ++k) xs[k] = static_cast<float>(tid * 100 + i + k);
    x.SetBytes(xs.data(), xs.size() * sizeof(float));
    check((*ex)("set_input", {Str("x"), x.arg()}).rc == 0, "set_input");
    r = (*ex)("run");
    check(r.rc == 0, "run", r.error);
    r = (*ex)("get_output", {Int(0)});
    check(r.rc == 0 && r.code == kTVMNDArrayHandle, "get_output", r.error);
    if (r.rc == 0) {
      Array y(static_cast<TVMArrayHandle>(r.value.v_handle));
      std::vector<float> ys = y.Floats();
      for (int k = 0; k < 8; ++k) check(ys[k] == xs[k] + 1, "executor output");
    }
  }
  for (TVMFunctionHandle f : {add, apply, concat, nd_sum}) TVMFuncFree(f);
  return failures;
}

TEST(Stress, EightThreadsMixedWork) {
  LoadFixtures();
  TVMModuleHandle dso = LoadLib(LibPath("libpolyffi_test_dso.so"));
  Global live("testing.live_objects");
  int64_t live_before = Call(live.get()).value.v_int64;
  const int iterations = Iterations();
  Exchange exchange;
  std::atomic<int> created{0}, finalized{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back(
        [&, t] { failures += Worker(t, iterations, dso, &exchange, &created, &finalized); });
  }
  for (std::thread& t : threads) t.join();
  while (DLManagedTensor* left = exchange.Take()) TVMDLManagedTensorCallDeleter(left);
  TVMFuncRemoveGlobal("stress.shared");
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(created.load(), kThreads * iterations);
  EXPECT_EQ(finalized.load(), created.load());  // every callback freed exactly once
  EXPECT_EQ(Call(live.get()).value.v_int64, live_before);
  for (int t = 0; t < kThreads; ++t) {
    TVMFunctionHandle g = reinterpret_cast<TVMFunctionHandle>(1);
    TVMFuncGetGlobal(("stress.thread" + std::to_string(t)).c_str(), &g);
    EXPECT_EQ(g, nullptr);
  }
  TVMModFree(dso);
}

}  // namespace
}  // namespace hardening
