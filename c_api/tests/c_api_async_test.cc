// The async calls of c_async_api.h through the C headers alone: results and errors equal the
// synchronous ones, arguments outlive the caller's copies, cancellation before and during a
// call, the queue limit, and many threads submitting at once (label "threads": TSan runs it).
#include <gtest/gtest.h>
#include <polyffi/c_async_api.h>
#include <polyffi/c_runtime_api.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "c_api_test_util.h"

namespace {

using abitests::SumInts;

constexpr int kWorkers = 2;

// Every test sizes the pool before its first submit (ctest runs each test in its own process).
void UsePool() { ASSERT_EQ(TVMAsyncConfigure(kWorkers, 0), 0) << TVMGetLastError(); }

/*! \brief One completion as the callback saw it, and a way to wait for it. */
struct Outcome {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  int status = 99;
  int code = -1;
  int64_t i = 0;
  std::string text;  // a string result, or the error text
  std::thread::id thread;

  static void OnDone(int status, TVMValue* v, int code, void* self) {
    auto* o = static_cast<Outcome*>(self);
    std::lock_guard<std::mutex> lock(o->mu);
    o->status = status;
    o->code = code;
    o->thread = std::this_thread::get_id();
    if (status != kTVMAsyncReturned) {
      o->text = TVMGetLastError();
    } else if (code == kTVMArgInt) {
      o->i = v->v_int64;
    } else if (code == kTVMStr) {
      o->text = v->v_str;
    } else if (code == kTVMPackedFuncHandle) {
      TVMFuncFree(v->v_handle);
    }
    o->done = true;
    o->cv.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return done; }))
        << "completion never came";
  }
};

TVMFunctionHandle Make(TVMPackedCFunc body, void* resource = nullptr) {
  TVMFunctionHandle f = nullptr;
  EXPECT_EQ(TVMFuncCreateFromCFunc(body, resource, nullptr, &f), 0) << TVMGetLastError();
  return f;
}

int Add(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void*) {
  int64_t sum;
  if (!SumInts(args, codes, n, &sum)) return -1;
  TVMValue v;
  v.v_int64 = sum;
  int code = kTVMArgInt;
  return TVMCFuncSetReturn(ret, &v, &code, 1);
}

int Echo(TVMValue* args, int* codes, int, TVMRetValueHandle ret, void*) {
  return TVMCFuncSetReturn(ret, args, codes, 1);
}

int Fail(TVMValue*, int*, int, TVMRetValueHandle, void*) {
  TVMAPISetLastError("ValueError: bad input 7");
  return -1;
}

/*! \brief Holds every worker until Open(): calls queued behind it stay queued. */
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> entered{0};
  static int Body(TVMValue*, int*, int, TVMRetValueHandle, void* self) {
    auto* g = static_cast<Gate*>(self);
    g->entered.fetch_add(1);
    std::unique_lock<std::mutex> lock(g->mu);
    g->cv.wait(lock, [&] { return g->open; });
    return 0;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
  void WaitEntered(int n) {
    while (entered.load() < n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
};

TEST(Async, ResultEqualsSynchronousCall) {
  UsePool();
  TVMFunctionHandle f = Make(Add);
  TVMValue args[3];
  int codes[3] = {kTVMArgInt, kTVMArgInt, kTVMArgInt};
  args[0].v_int64 = 1, args[1].v_int64 = 20, args[2].v_int64 = 300;
  TVMValue sync_ret;
  int sync_code;
  ASSERT_EQ(TVMFuncCall(f, args, codes, 3, &sync_ret, &sync_code), 0);
  Outcome o;
  ASSERT_EQ(TVMAsyncSubmit(f, args, codes, 3, Outcome::OnDone, &o, nullptr), 0);
  o.Wait();
  EXPECT_EQ(o.status, kTVMAsyncReturned);
  EXPECT_EQ(o.code, sync_code);
  EXPECT_EQ(o.i, sync_ret.v_int64);
  EXPECT_EQ(o.i, 321);
  EXPECT_NE(o.thread, std::this_thread::get_id());
  TVMFuncFree(f);
}

TEST(Async, ErrorArrivesWithItsKind) {
  UsePool();
  TVMFunctionHandle f = Make(Fail);
  Outcome o;
  ASSERT_EQ(TVMAsyncSubmit(f, nullptr, nullptr, 0, Outcome::OnDone, &o, nullptr), 0);
  o.Wait();
  EXPECT_EQ(o.status, kTVMAsyncFailed);
  EXPECT_EQ(o.text.rfind("ValueError: bad input 7", 0), 0u) << o.text;
  TVMFuncFree(f);
}

TEST(Async, StringArgumentIsCopiedAtSubmit) {
  UsePool();
  Gate gate;
  TVMFunctionHandle hold = Make(Gate::Body, &gate);
  Outcome held[kWorkers];
  for (auto& h : held) {
    ASSERT_EQ(TVMAsyncSubmit(hold, nullptr, nullptr, 0, Outcome::OnDone, &h, nullptr), 0);
  }
  gate.WaitEntered(kWorkers);
  TVMFunctionHandle f = Make(Echo);
  char buf[] = "hello async";
  TVMValue arg;
  arg.v_str = buf;
  int code = kTVMStr;
  Outcome o;
  ASSERT_EQ(TVMAsyncSubmit(f, &arg, &code, 1, Outcome::OnDone, &o, nullptr), 0);
  std::memset(buf, 'x', sizeof(buf) - 1);  // the caller's copy changes before the call runs
  TVMFuncFree(f);                          // and the caller drops its function handle
  gate.Open();
  o.Wait();
  EXPECT_EQ(o.status, kTVMAsyncReturned);
  EXPECT_EQ(o.code, kTVMStr);
  EXPECT_EQ(o.text, "hello async");
  for (auto& h : held) h.Wait();
  TVMFuncFree(hold);
}

TEST(Async, ObjectResultBelongsToTheCallback) {
  UsePool();
  TVMFunctionHandle f = Make(Echo);
  TVMFunctionHandle inner = Make(Add);
  TVMValue arg;
  arg.v_handle = inner;
  int code = kTVMPackedFuncHandle;
  Outcome o;
  ASSERT_EQ(TVMAsyncSubmit(f, &arg, &code, 1, Outcome::OnDone, &o, nullptr), 0);
  TVMFuncFree(inner);  // the pool holds its own reference until the call ends
  o.Wait();
  EXPECT_EQ(o.status, kTVMAsyncReturned);
  EXPECT_EQ(o.code, kTVMPackedFuncHandle);
  TVMFuncFree(f);
}

TEST(Async, CancelBeforeStartNeverRuns) {
  UsePool();
  Gate gate;
  TVMFunctionHandle hold = Make(Gate::Body, &gate);
  Outcome held[kWorkers];
  for (auto& h : held) {
    ASSERT_EQ(TVMAsyncSubmit(hold, nullptr, nullptr, 0, Outcome::OnDone, &h, nullptr), 0);
  }
  gate.WaitEntered(kWorkers);
  Gate never;  // entering it would count
  never.open = true;
  TVMFunctionHandle f = Make(Gate::Body, &never);
  Outcome o;
  TVMAsyncCallHandle call = nullptr;
  ASSERT_EQ(TVMAsyncSubmit(f, nullptr, nullptr, 0, Outcome::OnDone, &o, &call), 0);
  int queued = -1;
  ASSERT_EQ(TVMAsyncGetConfig(nullptr, nullptr, &queued), 0);
  EXPECT_EQ(queued, 1);
  int state = -1;
  ASSERT_EQ(TVMAsyncCancel(call, &state), 0);
  EXPECT_EQ(state, kTVMAsyncCancelledBeforeStart);
  ASSERT_EQ(TVMAsyncGetConfig(nullptr, nullptr, &queued), 0);
  EXPECT_EQ(queued, 0);  // a cancelled call no longer counts against the limit
  gate.Open();
  o.Wait();
  EXPECT_EQ(o.status, kTVMAsyncCancelled);
  EXPECT_EQ(o.text.rfind("CancelledError: ", 0), 0u) << o.text;
  EXPECT_EQ(never.entered.load(), 0);
  ASSERT_EQ(TVMAsyncCancel(call, &state), 0);
  EXPECT_EQ(state, kTVMAsyncFinished);
  EXPECT_EQ(TVMAsyncFree(call), 0);
  for (auto& h : held) h.Wait();
  TVMFuncFree(f);
  TVMFuncFree(hold);
}

int PollUntilCancelled(TVMValue*, int*, int, TVMRetValueHandle, void* entered) {
  static_cast<std::atomic<int>*>(entered)->store(1);
  for (;;) {
    int cancelled = 0;
    if (TVMAsyncCancelRequested(&cancelled) != 0) return -1;
    if (cancelled) {
      TVMAPISetLastError("CancelledError: stopped at a poll");
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

TEST(Async, RunningCallSeesItsCancellation) {
  UsePool();
  std::atomic<int> entered{0};
  TVMFunctionHandle f = Make(PollUntilCancelled, &entered);
  Outcome o;
  TVMAsyncCallHandle call = nullptr;
  ASSERT_EQ(TVMAsyncSubmit(f, nullptr, nullptr, 0, Outcome::OnDone, &o, &call), 0);
  while (entered.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  int state = -1;
  ASSERT_EQ(TVMAsyncCancel(call, &state), 0);
  EXPECT_EQ(state, kTVMAsyncCancelRequested);
  o.Wait();
  EXPECT_EQ(o.status, kTVMAsyncFailed);
  EXPECT_EQ(o.text.rfind("CancelledError: stopped at a poll", 0), 0u) << o.text;
  TVMAsyncFree(call);
  TVMFuncFree(f);
}

TEST(Async, CancelRequestedIsZeroOutsideAnAsyncCall) {
  int cancelled = -1;
  ASSERT_EQ(TVMAsyncCancelRequested(&cancelled), 0);
  EXPECT_EQ(cancelled, 0);
  EXPECT_EQ(TVMAsyncCancelRequested(nullptr), -1);
  EXPECT_EQ(std::string(TVMGetLastError()).rfind("ValueError: ", 0), 0u);
}

TEST(Async, FullQueueIsATypedErrorAtSubmit) {
  UsePool();
  ASSERT_EQ(TVMAsyncConfigure(0, 2), 0);
  Gate gate;
  TVMFunctionHandle hold = Make(Gate::Body, &gate);
  Outcome held[kWorkers];
  for (auto& h : held) {
    ASSERT_EQ(TVMAsyncSubmit(hold, nullptr, nullptr, 0, Outcome::OnDone, &h, nullptr), 0);
  }
  gate.WaitEntered(kWorkers);
  TVMFunctionHandle f = Make(Add);
  Outcome a, b, never;
  ASSERT_EQ(TVMAsyncSubmit(f, nullptr, nullptr, 0, Outcome::OnDone, &a, nullptr), 0);
  ASSERT_EQ(TVMAsyncSubmit(f, nullptr, nullptr, 0, Outcome::OnDone, &b, nullptr), 0);
  TVMAsyncCallHandle call = reinterpret_cast<TVMAsyncCallHandle>(0x1);
  EXPECT_EQ(TVMAsyncSubmit(f, nullptr, nullptr, 0, Outcome::OnDone, &never, &call), -1);
  EXPECT_EQ(std::string(TVMGetLastError()).rfind("QueueFullError: ", 0), 0u) << TVMGetLastError();
  EXPECT_EQ(call, reinterpret_cast<TVMAsyncCallHandle>(0x1));  // untouched on failure
  gate.Open();
  a.Wait();
  b.Wait();
  EXPECT_EQ(a.status, kTVMAsyncReturned);
  EXPECT_EQ(b.i, 0);
  // Once the queue drains, submitting works again.
  Outcome c;
  ASSERT_EQ(TVMAsyncSubmit(f, nullptr, nullptr, 0, Outcome::OnDone, &c, nullptr), 0);
  c.Wait();
  EXPECT_FALSE(never.done);
  for (auto& h : held) h.Wait();
  TVMFuncFree(f);
  TVMFuncFree(hold);
}

TEST(Async, BadSubmitsAreValueErrors) {
  UsePool();
  TVMFunctionHandle f = Make(Add);
  Outcome o;
  EXPECT_EQ(TVMAsyncSubmit(nullptr, nullptr, nullptr, 0, Outcome::OnDone, &o, nullptr), -1);
  EXPECT_EQ(std::string(TVMGetLastError()).rfind("ValueError: ", 0), 0u);
  EXPECT_EQ(TVMAsyncSubmit(f, nullptr, nullptr, 0, nullptr, &o, nullptr), -1);
  EXPECT_EQ(std::string(TVMGetLastError()).rfind("ValueError: ", 0), 0u);
  EXPECT_EQ(TVMAsyncSubmit(f, nullptr, nullptr, 2, Outcome::OnDone, &o, nullptr), -1);
  EXPECT_EQ(std::string(TVMGetLastError()).rfind("ValueError: ", 0), 0u);
  TVMValue v;
  v.v_int64 = 0;
  int bad_code = 1234;
  EXPECT_EQ(TVMAsyncSubmit(f, &v, &bad_code, 1, Outcome::OnDone, &o, nullptr), -1);
  EXPECT_EQ(TVMAsyncCancel(nullptr, nullptr), -1);
  EXPECT_EQ(TVMAsyncConfigure(-1, 0), -1);
  EXPECT_EQ(std::string(TVMGetLastError()).rfind("ValueError: ", 0), 0u);
  EXPECT_FALSE(o.done);
  TVMFuncFree(f);
}

TEST(Async, WorkerCountIsFixedOnceStarted) {
  UsePool();
  TVMFunctionHandle f = Make(Add);
  Outcome o;
  ASSERT_EQ(TVMAsyncSubmit(f, nullptr, nullptr, 0, Outcome::OnDone, &o, nullptr), 0);
  o.Wait();
  EXPECT_EQ(TVMAsyncConfigure(kWorkers + 1, 0), -1);
  EXPECT_EQ(std::string(TVMGetLastError()).rfind("RuntimeError: ", 0), 0u);
  int workers = 0;
  ASSERT_EQ(TVMAsyncGetConfig(&workers, nullptr, nullptr), 0);
  EXPECT_EQ(workers, kWorkers);
  TVMFuncFree(f);
}

// Many threads submit at once; each completion is counted once with its own sum (TSan).
TEST(AsyncThreads, EightSubmittersEveryCallCompletesOnce) {
  UsePool();
  ASSERT_EQ(TVMAsyncConfigure(0, 100000), 0);
  TVMFunctionHandle f = Make(Add);
  constexpr int kThreads = 8, kCalls = 500;
  struct Tally {
    std::atomic<int64_t> sum{0};
    std::atomic<int> count{0};
    static void OnDone(int status, TVMValue* v, int, void* self) {
      auto* t = static_cast<Tally*>(self);
      if (status == kTVMAsyncReturned) t->sum.fetch_add(v->v_int64);
      t->count.fetch_add(1);
    }
  } tally;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        TVMValue args[2];
        int codes[2] = {kTVMArgInt, kTVMArgInt};
        args[0].v_int64 = t;
        args[1].v_int64 = i;
        TVMAsyncCallHandle call = nullptr;
        if (TVMAsyncSubmit(f, args, codes, 2, Tally::OnDone, &tally, i % 3 ? &call : nullptr)) {
          failures.fetch_add(1);
        }
        if (call && i % 2) TVMAsyncCancel(call, nullptr);  // cancelled or not: counted once
        TVMAsyncFree(call);
      }
    });
  }
  for (auto& th : threads) th.join();
  while (tally.count.load() < kThreads * kCalls) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(failures.load(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(tally.count.load(), kThreads * kCalls);
  int queued = -1;
  ASSERT_EQ(TVMAsyncGetConfig(nullptr, nullptr, &queued), 0);
  EXPECT_EQ(queued, 0);
  TVMFuncFree(f);
}

}  // namespace
