// The C ABI under concurrency (docs/spec/abi.md section 8, threads): every function may be
// called from any thread at any time. A separate binary so CI can run exactly this under
// ThreadSanitizer. Iteration counts are small enough for TSan on two cores; the point is overlap,
// not volume.
#include <gtest/gtest.h>
#include <polyffi/c_runtime_api.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "c_api_test_util.h"

namespace abitests {
namespace {

constexpr int kThreads = 8;

/*! \brief Start n threads that wait on a common start line, run body(i), and join them. */
template <typename Body>
void RunTogether(int n, Body body) {
  std::mutex mu;
  std::condition_variable cv;
  bool go = false;
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return go; });
      }
      body(i);
    });
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    go = true;
  }
  cv.notify_all();
  for (auto& t : threads) t.join();
}

/*! \brief A function returning value, counting its finalizer runs. */
TVMFunctionHandle MakeConst(int64_t value, std::atomic<int>* finalized) {
  return MakeFunction(
      [value](TVMValue*, int*, int, TVMRetValueHandle ret) { return ReturnInt(ret, value); },
      finalized);
}

// ---- Registry ---------------------------------------------------------------------------------

TEST(ThreadsRegistry, RegisterLookupCallRemoveAtOnce) {
  constexpr int kRounds = 200;
  std::atomic<int> created{0};
  std::atomic<int> finalized{0};
  const std::string shared = "abitests.threads.shared";
  RunTogether(kThreads, [&](int t) {
    for (int k = 0; k < kRounds; ++k) {
      const int64_t value = t * 1000 + k;
      // A name only this thread writes: what it reads back must be exactly what it wrote.
      std::string own = "abitests.threads.own." + std::to_string(t) + "." + std::to_string(k % 3);
      TVMFunctionHandle f = MakeConst(value, &finalized);
      created++;
      ASSERT_EQ(TVMFuncRegisterGlobal(own.c_str(), f, 1), 0) << LastError();
      // A name every thread overrides: any thread's value, never a torn or freed function.
      ASSERT_EQ(TVMFuncRegisterGlobal(shared.c_str(), f, 1), 0) << LastError();
      TVMFuncFree(f);

      TVMFunctionHandle got = nullptr;
      ASSERT_EQ(TVMFuncGetGlobal(own.c_str(), &got), 0) << LastError();
      ASSERT_NE(got, nullptr);
      Ret r = Call(got);
      ASSERT_EQ(r.rc, 0) << r.error;
      EXPECT_EQ(r.value.v_int64, value);
      TVMFuncFree(got);

      got = nullptr;
      ASSERT_EQ(TVMFuncGetGlobal(shared.c_str(), &got), 0) << LastError();
      if (got != nullptr) {  // another thread may have just removed it
        Ret s = Call(got);
        ASSERT_EQ(s.rc, 0) << s.error;
        EXPECT_GE(s.value.v_int64 % 1000, 0);
        EXPECT_LT(s.value.v_int64 / 1000, kThreads);
        EXPECT_LT(s.value.v_int64 % 1000, kRounds);
        TVMFuncFree(got);
      }

      int size = 0;
      const char** names = nullptr;
      ASSERT_EQ(TVMFuncListGlobalNames(&size, &names), 0) << LastError();
      bool found = false;
      for (int i = 0; i < size; ++i) found = found || own == names[i];
      EXPECT_TRUE(found) << own << " missing from the list on its own thread";

      if (k % 5 == 4) {
        EXPECT_EQ(TVMFuncRemoveGlobal(own.c_str()), 0) << LastError();
        EXPECT_EQ(TVMFuncRemoveGlobal(shared.c_str()), 0) << LastError();
      }
    }
    for (int k = 0; k < 3; ++k) {
      std::string own = "abitests.threads.own." + std::to_string(t) + "." + std::to_string(k);
      EXPECT_EQ(TVMFuncRemoveGlobal(own.c_str()), 0) << LastError();
    }
  });
  EXPECT_EQ(TVMFuncRemoveGlobal(shared.c_str()), 0);
  // Every function created is finalized exactly once, whichever thread dropped it last.
  EXPECT_EQ(finalized.load(), created.load());
  EXPECT_EQ(created.load(), kThreads * kRounds);
}

TEST(ThreadsRegistry, ConcurrentDuplicateRegistrationHasOneWinner) {
  const char* name = "abitests.threads.one_winner";
  std::atomic<int> wins{0};
  std::atomic<int> value_errors{0};
  std::atomic<int> finalized{0};
  RunTogether(kThreads, [&](int t) {
    TVMFunctionHandle f = MakeConst(t, &finalized);
    int rc = TVMFuncRegisterGlobal(name, f, 0);
    if (rc == 0) {
      wins++;
    } else if (ErrorKind(LastError()) == "ValueError") {
      value_errors++;
    }
    TVMFuncFree(f);
  });
  EXPECT_EQ(wins.load(), 1);
  EXPECT_EQ(value_errors.load(), kThreads - 1);
  EXPECT_EQ(finalized.load(), kThreads - 1) << "only the registered function is still alive";
  TVMFuncRemoveGlobal(name);
  EXPECT_EQ(finalized.load(), kThreads);
}

// ---- Finalizers on other threads --------------------------------------------------------------

struct FinalizeRecord {
  std::atomic<int> count{0};
  std::thread::id thread;
};

void RecordFinalizer(void* resource) {
  auto* rec = static_cast<FinalizeRecord*>(resource);
  rec->thread = std::this_thread::get_id();
  rec->count++;
}

int NopCallback(TVMValue*, int*, int, TVMRetValueHandle, void*) { return 0; }

TEST(ThreadsFinalizer, RunsOnceOnTheThreadDroppingTheLastReference) {
  FinalizeRecord rec;
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMFuncCreateFromCFunc(NopCallback, &rec, RecordFinalizer, &f), 0) << LastError();
  ASSERT_EQ(TVMObjectRetain(f), 0);  // the other thread's reference
  TVMFuncFree(f);                    // ours
  EXPECT_EQ(rec.count, 0);
  std::thread::id dropper;
  std::thread t([&] {
    dropper = std::this_thread::get_id();
    EXPECT_EQ(Call(f).rc, 0);
    TVMFuncFree(f);
  });
  t.join();
  EXPECT_EQ(rec.count, 1);
  EXPECT_EQ(rec.thread, dropper);
  EXPECT_NE(rec.thread, std::this_thread::get_id());
}

TEST(ThreadsFinalizer, RunsOnceWhenRegistryRemovalOnAnotherThreadDropsIt) {
  FinalizeRecord rec;
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMFuncCreateFromCFunc(NopCallback, &rec, RecordFinalizer, &f), 0) << LastError();
  ASSERT_EQ(TVMFuncRegisterGlobal("abitests.threads.dropped_by_remove", f, 0), 0) << LastError();
  TVMFuncFree(f);
  std::thread::id remover;
  std::thread t([&] {
    remover = std::this_thread::get_id();
    EXPECT_EQ(TVMFuncRemoveGlobal("abitests.threads.dropped_by_remove"), 0);
  });
  t.join();
  EXPECT_EQ(rec.count, 1);
  EXPECT_EQ(rec.thread, remover);
}

TEST(ThreadsFinalizer, ManyThreadsDroppingSharedReferencesFinalizeOnce) {
  for (int round = 0; round < 50; ++round) {
    FinalizeRecord rec;
    TVMFunctionHandle f = nullptr;
    ASSERT_EQ(TVMFuncCreateFromCFunc(NopCallback, &rec, RecordFinalizer, &f), 0);
    for (int i = 1; i < kThreads; ++i) ASSERT_EQ(TVMObjectRetain(f), 0);
    RunTogether(kThreads, [&](int) {
      EXPECT_EQ(Call(f).rc, 0);
      TVMFuncFree(f);
    });
    EXPECT_EQ(rec.count, 1) << "round " << round;
  }
}

TEST(ThreadsObjects, ConcurrentRetainFreeKeepsTheCount) {
  void* array = MakeObject("runtime.Array", {Int(1)});
  ASSERT_NE(array, nullptr);
  int64_t before = UseCount(array);
  RunTogether(kThreads, [&](int) {
    for (int i = 0; i < 2000; ++i) {
      TVMObjectRetain(array);
      TVMObjectFree(array);
    }
  });
  EXPECT_EQ(UseCount(array), before);
  TVMObjectFree(array);
}

TEST(ThreadsObjects, ContainersReadConcurrently) {
  void* array = MakeObject("runtime.Array", {Int(10), Str("x"), Int(30)});
  ASSERT_NE(array, nullptr);
  Global get("runtime.ArrayGetItem");
  RunTogether(kThreads, [&](int t) {
    for (int i = 0; i < 100; ++i) {
      Ret r = Call(get, {Obj(array), Int((t + i) % 3)});
      ASSERT_EQ(r.rc, 0) << r.error;
      switch ((t + i) % 3) {
        case 0:
          EXPECT_EQ(r.value.v_int64, 10);
          break;
        case 1:
          EXPECT_EQ(r.str, "x");
          break;
        default:
          EXPECT_EQ(r.value.v_int64, 30);
          break;
      }
    }
  });
  EXPECT_EQ(UseCount(array), 1);
  TVMObjectFree(array);
}

// ---- Calls --------------------------------------------------------------------------------------

TEST(ThreadsCall, OneFunctionFromEightThreads) {
  std::atomic<int> calls{0};
  TVMFunctionHandle add = MakeFunction([&calls](TVMValue* args, int*, int, TVMRetValueHandle ret) {
    calls++;
    return ReturnInt(ret, args[0].v_int64 + args[1].v_int64);
  });
  constexpr int kCalls = 500;
  RunTogether(kThreads, [&](int t) {
    for (int i = 0; i < kCalls; ++i) {
      Ret r = Call(add, {Int(t), Int(i)});
      ASSERT_EQ(r.rc, 0) << r.error;
      ASSERT_EQ(r.value.v_int64, t + i);
    }
  });
  EXPECT_EQ(calls.load(), kThreads * kCalls);
  TVMFuncFree(add);
}

TEST(ThreadsCall, ReturnedStringsAreThreadLocalUnderContention) {
  // Each thread gets back its own string; a shared return buffer would mix them up.
  TVMFunctionHandle echo = MakeEcho();
  RunTogether(kThreads, [&](int t) {
    for (int i = 0; i < 200; ++i) {
      std::string mine = "thread-" + std::to_string(t) + "-call-" + std::to_string(i);
      TVMValue args[1];
      args[0].v_str = mine.c_str();
      int codes[1] = {kTVMStr};
      TVMValue ret;
      int code = -1;
      ASSERT_EQ(TVMFuncCall(echo, args, codes, 1, &ret, &code), 0) << LastError();
      ASSERT_EQ(code, kTVMStr);
      std::this_thread::yield();  // let other threads return their strings meanwhile
      ASSERT_STREQ(ret.v_str, mine.c_str());
    }
  });
  TVMFuncFree(echo);
}

TEST(ThreadsCall, GlobalLookupAndCallFromManyThreads) {
  std::atomic<int> finalized{0};
  TVMFunctionHandle f = MakeConst(7, &finalized);
  ASSERT_EQ(TVMFuncRegisterGlobal("abitests.threads.lookup_call", f, 0), 0) << LastError();
  TVMFuncFree(f);
  RunTogether(kThreads, [&](int) {
    for (int i = 0; i < 200; ++i) {
      TVMFunctionHandle got = nullptr;
      ASSERT_EQ(TVMFuncGetGlobal("abitests.threads.lookup_call", &got), 0);
      ASSERT_NE(got, nullptr);
      EXPECT_EQ(Call(got).value.v_int64, 7);
      TVMFuncFree(got);
    }
  });
  EXPECT_EQ(finalized, 0);
  TVMFuncRemoveGlobal("abitests.threads.lookup_call");
  EXPECT_EQ(finalized, 1);
}

// ---- Errors -------------------------------------------------------------------------------------

TEST(ThreadsErrors, EachThreadSeesItsOwnError) {
  TVMFunctionHandle fail = MakeFunction([](TVMValue* args, int*, int, TVMRetValueHandle) {
    std::string msg = "ValueError: failure of thread " + std::to_string(args[0].v_int64);
    TVMAPISetLastError(msg.c_str());
    return -1;
  });
  RunTogether(kThreads, [&](int t) {
    std::string expected = "failure of thread " + std::to_string(t);
    for (int i = 0; i < 200; ++i) {
      Ret r = Call(fail, {Int(t)});
      ASSERT_EQ(r.rc, -1);
      std::this_thread::yield();
      std::string now = LastError();
      ASSERT_EQ(ErrorKind(now), "ValueError") << now;
      ASSERT_NE(now.find(expected), std::string::npos) << now;
      ASSERT_EQ(now.find(expected + "0"), std::string::npos) << now;  // not thread 10+
    }
  });
  TVMFuncFree(fail);
}

TEST(ThreadsErrors, SetLastErrorIsPerThreadUnderContention) {
  RunTogether(kThreads, [&](int t) {
    std::string mine = "KeyError: key of thread " + std::to_string(t);
    for (int i = 0; i < 500; ++i) {
      TVMAPISetLastError(mine.c_str());
      std::this_thread::yield();
      ASSERT_EQ(LastError(), mine);
    }
  });
}

TEST(ThreadsErrors, ErrorsAndSuccessesInterleave) {
  // Half the threads fail, half succeed with strings, at once: neither sees the other's state.
  TVMFunctionHandle fail = MakeFailing("IndexError: always out of range");
  TVMFunctionHandle echo = MakeEcho();
  RunTogether(kThreads, [&](int t) {
    for (int i = 0; i < 200; ++i) {
      if (t % 2 == 0) {
        EXPECT_TRUE(FailsWith(Call(fail).rc, "IndexError", "always out of range"));
      } else {
        std::string s = "ok-" + std::to_string(t);
        Ret r = Call(echo, {Str(s.c_str())});
        ASSERT_EQ(r.rc, 0) << r.error;
        EXPECT_EQ(r.str, s);
      }
    }
  });
  TVMFuncFree(fail);
  TVMFuncFree(echo);
}

}  // namespace
}  // namespace abitests
