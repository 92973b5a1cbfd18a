// An async nop call through the core's pool (c_async_api.h) against the same call made
// synchronously (TVMFuncCall). bench/async/run.sh runs it under callgrind at two counts and
// takes the difference (instructions per call, every thread counted), then for wall time.
//   bench_async sync|async|batch N
//     sync:  N TVMFuncCall of a C nop
//     async: N round trips, one at a time: submit, the worker runs the nop, the completion
//            wakes the submitter (blocking wait, no spinning)
//     batch: N submits back to back, then one wait for all completions (throughput)
// Prints "<mode> <N> <ns per call>".
#include <polyffi/c_async_api.h>
#include <polyffi/c_runtime_api.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace {

int Nop(TVMValue*, int*, int, TVMRetValueHandle, void*) { return 0; }

struct Waiter {
  std::mutex mu;
  std::condition_variable cv;
  long done = 0;
  static void OnDone(int status, TVMValue*, int, void* self) {
    if (status != kTVMAsyncReturned) {
      std::fprintf(stderr, "async call failed: %s\n", TVMGetLastError());
      std::abort();
    }
    auto* w = static_cast<Waiter*>(self);
    std::lock_guard<std::mutex> lock(w->mu);
    ++w->done;
    w->cv.notify_one();
  }
  void WaitFor(long n) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done >= n; });
  }
};

void Check(int rc, const char* what) {
  if (rc != 0) {
    std::fprintf(stderr, "%s: %s\n", what, TVMGetLastError());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: bench_async sync|async|batch N\n");
    return 2;
  }
  const char* mode = argv[1];
  long n = std::atol(argv[2]);
  TVMFunctionHandle f = nullptr;
  Check(TVMFuncCreateFromCFunc(Nop, nullptr, nullptr, &f), "create");
  Check(TVMAsyncConfigure(0, static_cast<int>(n) + 16), "configure");
  Waiter w;
  // Warm up: start the pool's workers and fault in the paths once.
  Check(TVMAsyncSubmit(f, nullptr, nullptr, 0, Waiter::OnDone, &w, nullptr), "submit");
  w.WaitFor(1);
  long base = 1;
  auto start = std::chrono::steady_clock::now();
  if (std::strcmp(mode, "sync") == 0) {
    for (long i = 0; i < n; ++i) {
      TVMValue ret;
      int code;
      Check(TVMFuncCall(f, nullptr, nullptr, 0, &ret, &code), "call");
    }
  } else if (std::strcmp(mode, "async") == 0) {
    for (long i = 1; i <= n; ++i) {
      Check(TVMAsyncSubmit(f, nullptr, nullptr, 0, Waiter::OnDone, &w, nullptr), "submit");
      w.WaitFor(base + i);
    }
  } else if (std::strcmp(mode, "batch") == 0) {
    for (long i = 0; i < n; ++i) {
      Check(TVMAsyncSubmit(f, nullptr, nullptr, 0, Waiter::OnDone, &w, nullptr), "submit");
    }
    w.WaitFor(base + n);
  } else {
    std::fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s %ld %.0f\n", mode, n, n > 0 ? ns / static_cast<double>(n) : 0.0);
  TVMFuncFree(f);
  return 0;
}
