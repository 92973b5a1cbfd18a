// The parallel-launch thread pool: persistent workers, one launch at a time; a nested or
// concurrent launch runs on the calling thread as a single task (penv->num_task == 1).
//
// Tasks are claimed from a shared counter rather than assigned to workers: the launcher runs
// task 0 and then every task no worker has claimed yet, so a descheduled or sleeping worker
// costs the launch nothing (on a busy machine waiting for one used to dominate small kernels).
// Kernels that use TVMBackendParallelBarrier stay correct: a thread claims a new task only
// after finishing its previous one, so tasks blocked in a barrier each hold a distinct thread,
// and task 0 cannot pass a barrier before every task has been claimed.
#include "polyffi/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "polyffi/error.h"

namespace polyffi {
namespace {

struct Barrier {
  std::atomic<int> arrived{0};
  std::atomic<int> generation{0};
};

struct Job {
  FTVMParallelLambda flambda = nullptr;
  void* cdata = nullptr;
  TVMParallelGroupEnv env{nullptr, 0};
  Barrier barrier;
  std::atomic<int> pending{0};  // tasks 1..n-1 not finished yet
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  // The failing task's error, with any host exception attached to it and its raised mark (a
  // tvm-ffi kernel's task raises its error).
  LastErrorState error;
};

thread_local bool tls_in_task = false;

void RunTask(Job* job, int task_id) {
  tls_in_task = true;
  int rc = job->flambda(task_id, &job->env, job->cdata);
  tls_in_task = false;
  if (rc != 0) {
    if (!job->failed.exchange(true)) {
      std::lock_guard<std::mutex> lock(job->error_mu);
      job->error = TakeLastErrorState();  // moved off the task's thread
    } else {
      // Only the first failure is reported; a host exception attached to a later one is
      // released here rather than kept alive on this pool thread.
      TakeLastErrorState();
    }
  }
}

/*!
 * \brief The claim word: launch generation (32 bits), task count (16) and next unclaimed
 *  task (16). A claim is a compare-exchange on the whole word, so a thread that saw an old
 *  generation can never take a task of a newer launch, and never touches a finished Job.
 */
constexpr uint64_t Pack(uint64_t gen, uint64_t n, uint64_t next) {
  return (gen << 32) | (n << 16) | next;
}
constexpr uint32_t GenOf(uint64_t w) { return static_cast<uint32_t>(w >> 32); }
constexpr int CountOf(uint64_t w) { return static_cast<int>((w >> 16) & 0xffff); }
constexpr int NextOf(uint64_t w) { return static_cast<int>(w & 0xffff); }

class ThreadPool {
 public:
  static ThreadPool* Global() {
    // Leaked with its detached workers: no join races with static destruction at exit.
    static ThreadPool* pool = new ThreadPool(ParallelNumThreads());
    return pool;
  }

  int Launch(FTVMParallelLambda flambda, void* cdata, int num_task) {
    std::unique_lock<std::mutex> launch(launch_mu_, std::try_to_lock);
    int n = num_task <= 0 ? num_threads_ : std::min(num_task, num_threads_);
    if (tls_in_task || !launch.owns_lock() || n == 1) return RunSerial(flambda, cdata);
    Job job;
    job.flambda = flambda;
    job.cdata = cdata;
    job.env.sync_handle = &job.barrier;
    job.env.num_task = n;
    job.pending.store(n - 1, std::memory_order_relaxed);
    uint32_t gen;
    {
      // Under the lock so a worker deciding to sleep cannot miss the new generation.
      std::lock_guard<std::mutex> lock(mu_);
      job_.store(&job, std::memory_order_relaxed);
      gen = GenOf(claim_.load(std::memory_order_relaxed)) + 1;
      claim_.store(Pack(gen, n, 1), std::memory_order_release);
    }
    if (sleepers_.load(std::memory_order_relaxed) > 0) cv_.notify_all();
    RunTask(&job, 0);
    for (int task; (task = Claim(gen)) >= 0;) Finish(&job, task);
    // Claimed tasks are short for small kernels: poll before blocking.
    if (!SpinUntil([&] { return job.pending.load(std::memory_order_acquire) == 0; },
                   kLauncherSpinMicros, 0)) {
      std::unique_lock<std::mutex> lock(mu_);
      done_cv_.wait(lock, [&] { return job.pending.load(std::memory_order_acquire) == 0; });
    }
    job_.store(nullptr, std::memory_order_relaxed);
    if (job.failed.load()) {
      if (job.error.text.empty()) job.error.text = "RuntimeError: a parallel task failed";
      RestoreLastErrorState(std::move(job.error));
      return -1;
    }
    return 0;
  }

  int num_threads() const { return num_threads_; }

 private:
  explicit ThreadPool(int n) : num_threads_(std::clamp(n, 1, 0xffff)) {
    for (int i = 1; i < num_threads_; ++i) std::thread([this] { WorkerLoop(); }).detach();
  }

  static int RunSerial(FTVMParallelLambda flambda, void* cdata) {
    Barrier barrier;
    TVMParallelGroupEnv env{&barrier, 1};
    bool outer = !tls_in_task;
    tls_in_task = true;
    int rc = flambda(0, &env, cdata);
    if (outer) tls_in_task = false;
    return rc == 0 ? 0 : -1;
  }

  /*! \brief Take the next unclaimed task of launch gen, or -1 when none is left. */
  int Claim(uint32_t gen) {
    uint64_t w = claim_.load(std::memory_order_acquire);
    while (GenOf(w) == gen && NextOf(w) < CountOf(w)) {
      if (claim_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
        return NextOf(w);
      }
    }
    return -1;
  }

  /*! \brief Run a claimed task (1..n-1); the last one to finish wakes a blocked launcher. */
  void Finish(Job* job, int task) {
    RunTask(job, task);
    if (job->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_all();
    }
  }

  /*!
   * \brief Wait for done() without blocking: pause-spin for about pause_micros (a launch or a
   *  task that ends within microseconds is seen at once; waking a blocked thread costs tens of
   *  microseconds on a virtual CPU, more than a small kernel runs), then, for about
   *  yield_micros more, sched_yield() between checks. Yielding lets an idle worker keep
   *  polling for milliseconds without holding its core from a thread that needs it (on a
   *  shared machine, often our own launcher or another worker). Returns done().
   */
  template <typename Done>
  static bool SpinUntil(const Done& done, int64_t pause_micros, int64_t yield_micros) {
    auto start = std::chrono::steady_clock::now();
    auto past = [&](int64_t micros) {
      return std::chrono::steady_clock::now() - start > std::chrono::microseconds(micros);
    };
    for (int i = 1;; ++i) {
      if (done()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      if (i % 64 == 0 && past(pause_micros)) break;
    }
    if (yield_micros <= 0) return done();
    for (int i = 1;; ++i) {
      if (done()) return true;
      std::this_thread::yield();
      if (i % 16 == 0 && past(pause_micros + yield_micros)) return done();
    }
  }

  // An idle worker pause-spins 50 us, then yields for up to 2 ms before it blocks: the
  // kernels of one run() follow each other within microseconds to a few milliseconds (a
  // serial kernel between two parallel ones), and a worker that is awake when the next launch
  // comes takes its share at once instead of leaving it to the launcher.
  static constexpr int64_t kWorkerPauseMicros = 50;
  static constexpr int64_t kWorkerSpinMicros = 2000;
  // The launcher waits only for tasks already running on other threads, so it keeps its core
  // (pauses, no yield: a yielding thread can lose its core for a whole time slice of another
  // process) for 200 us before it blocks.
  static constexpr int64_t kLauncherSpinMicros = 200;

  void WorkerLoop() {
    uint32_t seen = 0;
    for (;;) {
      auto fresh = [&] { return GenOf(claim_.load(std::memory_order_acquire)) != seen; };
      if (!SpinUntil(fresh, kWorkerPauseMicros, kWorkerSpinMicros)) {
        std::unique_lock<std::mutex> lock(mu_);
        sleepers_.fetch_add(1, std::memory_order_relaxed);
        cv_.wait(lock, fresh);
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
      }
      seen = GenOf(claim_.load(std::memory_order_acquire));
      // A successful claim of generation seen means its Job is still alive: the launcher
      // cannot return before this task finishes (it is counted in pending).
      for (int task; (task = Claim(seen)) >= 0;) {
        Finish(job_.load(std::memory_order_acquire), task);
      }
    }
  }

  const int num_threads_;
  std::mutex launch_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  std::atomic<Job*> job_{nullptr};
  std::atomic<uint64_t> claim_{0};
  std::atomic<int> sleepers_{0};
};

}  // namespace

int ParallelNumThreads() {
  static const int n = [] {
    const char* env = std::getenv("TVM_NUM_THREADS");
    int v = env ? std::atoi(env) : 0;
    if (v <= 0) v = static_cast<int>(std::thread::hardware_concurrency());
    return std::max(1, v);
  }();
  return n;
}

int ParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task) {
  if (flambda == nullptr) Throw("ValueError", "TVMBackendParallelLaunch: lambda is NULL");
  if (num_task < 0) Throw("ValueError", "TVMBackendParallelLaunch: num_task ", num_task, " < 0");
  return ThreadPool::Global()->Launch(flambda, cdata, num_task);
}

int ParallelBarrier(int, TVMParallelGroupEnv* penv) {
  if (penv == nullptr || penv->sync_handle == nullptr) {
    Throw("ValueError", "TVMBackendParallelBarrier: environment is NULL");
  }
  auto* b = static_cast<Barrier*>(penv->sync_handle);
  int gen = b->generation.load(std::memory_order_acquire);
  if (b->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == penv->num_task) {
    b->arrived.store(0, std::memory_order_relaxed);
    b->generation.fetch_add(1, std::memory_order_acq_rel);
    return 0;
  }
  while (b->generation.load(std::memory_order_acquire) == gen) std::this_thread::yield();
  return 0;
}

// ---- Workspace: per-thread free lists by power-of-two size class ----

namespace {

constexpr size_t kHeader = 64;  // keeps the user pointer 64-byte aligned
constexpr int kClasses = 48;
constexpr size_t kMaxCachedPerClass = 16;

struct WorkspacePool {
  std::vector<void*> free_lists[kClasses];
  ~WorkspacePool() {
    for (auto& list : free_lists) {
      for (void* block : list) std::free(block);
    }
  }
};

WorkspacePool& Pool() {
  thread_local WorkspacePool pool;
  return pool;
}

int SizeClass(uint64_t nbytes) {
  int c = 6;  // 64 bytes minimum
  while ((uint64_t{1} << c) < nbytes) ++c;
  return c;
}

}  // namespace

void* WorkspaceAlloc(uint64_t nbytes) {
  int c = SizeClass(nbytes);
  if (c >= kClasses) Throw("ValueError", "workspace request of ", nbytes, " bytes is too large");
  auto& list = Pool().free_lists[c];
  void* block = nullptr;
  if (!list.empty()) {
    block = list.back();
    list.pop_back();
  } else {
    block = std::aligned_alloc(64, kHeader + (size_t{1} << c));
    if (block == nullptr) Throw("RuntimeError", "out of memory allocating workspace");
    *static_cast<int*>(block) = c;
  }
  return static_cast<char*>(block) + kHeader;
}

void WorkspaceFree(void* ptr) {
  if (ptr == nullptr) return;
  void* block = static_cast<char*>(ptr) - kHeader;
  int c = *static_cast<int*>(block);
  auto& list = Pool().free_lists[c];
  if (list.size() < kMaxCachedPerClass) {
    list.push_back(block);
  } else {
    std::free(block);
  }
}

}  // namespace polyffi
