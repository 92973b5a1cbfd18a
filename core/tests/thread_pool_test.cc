#include "polyffi/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "polyffi/error.h"

namespace polyffi {
namespace {

struct SumJob {
  std::vector<int64_t> partial;
  int64_t n;
};

int SumTask(int task_id, TVMParallelGroupEnv* env, void* cdata) {
  auto* job = static_cast<SumJob*>(cdata);
  int64_t begin = job->n * task_id / env->num_task, end = job->n * (task_id + 1) / env->num_task;
  for (int64_t i = begin; i < end; ++i) job->partial[task_id] += i;
  return 0;
}

TEST(ThreadPoolTest, LaunchCoversEveryIndexOnce) {
  for (int tasks : {0, 1, 2, 7}) {
    SumJob job{std::vector<int64_t>(64, 0), 100000};
    ASSERT_EQ(ParallelLaunch(SumTask, &job, tasks), 0);
    int64_t total = 0;
    for (int64_t x : job.partial) total += x;
    EXPECT_EQ(total, int64_t{100000} * 99999 / 2) << tasks;
  }
}

int FailOnTaskZero(int task_id, TVMParallelGroupEnv*, void*) {
  if (task_id != 0) return 0;
  SetLastError("ValueError: task zero failed");
  return -1;
}

TEST(ThreadPoolTest, ATaskErrorBecomesTheLaunchersError) {
  EXPECT_EQ(ParallelLaunch(FailOnTaskZero, nullptr, 0), -1);
  EXPECT_EQ(GetLastError(), "ValueError: task zero failed");
}

// A tvm-ffi kernel's task raises its error; the mark travels with the error to the launcher.
int RaiseOnLastTask(int task_id, TVMParallelGroupEnv* env, void*) {
  if (task_id != env->num_task - 1) return 0;
  SetRaisedError("IndexError", "raised by a kernel's task");
  return -1;
}

TEST(ThreadPoolTest, ARaisedErrorKeepsItsMarkOnTheLaunchersThread) {
  for (int tasks : {1, 2, 4}) {
    EXPECT_EQ(ParallelLaunch(RaiseOnLastTask, nullptr, tasks), -1) << tasks;
    EXPECT_EQ(GetLastError(), "IndexError: raised by a kernel's task") << tasks;
    EXPECT_EQ(TakeRaisedMark(), RaisedMark::kError) << tasks;
    EXPECT_EQ(TakeRaisedMark(), RaisedMark::kNone) << tasks;  // taken once
  }
}

struct BarrierJob {
  std::atomic<int> before{0};
  std::atomic<int> wrong{0};
};

int BarrierTask(int task_id, TVMParallelGroupEnv* env, void* cdata) {
  auto* job = static_cast<BarrierJob*>(cdata);
  job->before.fetch_add(1);
  ParallelBarrier(task_id, env);
  if (job->before.load() != env->num_task) job->wrong.fetch_add(1);
  return 0;
}

TEST(ThreadPoolTest, BarrierWaitsForEveryTask) {
  BarrierJob job;
  ASSERT_EQ(ParallelLaunch(BarrierTask, &job, 0), 0);
  EXPECT_EQ(job.wrong.load(), 0);
}

int NestedTask(int, TVMParallelGroupEnv*, void* cdata) {
  SumJob inner{std::vector<int64_t>(64, 0), 1000};
  if (ParallelLaunch(SumTask, &inner, 0) != 0) return -1;
  static_cast<std::atomic<int64_t>*>(cdata)->fetch_add(inner.partial[0]);
  return 0;
}

TEST(ThreadPoolTest, NestedLaunchRunsInlineAsOneTask) {
  std::atomic<int64_t> total{0};
  ASSERT_EQ(ParallelLaunch(NestedTask, &total, 2), 0);
  EXPECT_EQ(total.load() % (999 * 1000 / 2), 0);
}

TEST(ThreadPoolTest, ConcurrentLaunchesFromManyThreadsAllComplete) {
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&bad] {
      for (int i = 0; i < 50; ++i) {
        SumJob job{std::vector<int64_t>(64, 0), 1000};
        int64_t total = 0;
        if (ParallelLaunch(SumTask, &job, 0) != 0) ++bad;
        for (int64_t x : job.partial) total += x;
        if (total != 999 * 1000 / 2) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(WorkspaceTest, ReusesBlocksAndAligns) {
  void* a = WorkspaceAlloc(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  std::memset(a, 1, 1000);
  WorkspaceFree(a);
  void* b = WorkspaceAlloc(900);  // same size class: the cached block comes back
  EXPECT_EQ(a, b);
  WorkspaceFree(b);
}

}  // namespace
}  // namespace polyffi
