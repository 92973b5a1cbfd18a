// One registry of benchmark cases shared by every suite in the bench binaries.
//
// A case is a name ("calls/add3/polyffi_c": group/case/implementation) and a body that does
// one unit of work. AddCase registers it twice from the same body:
//   - with Google Benchmark, timed, with heap allocations per call as counters;
//   - in a table that `--case=NAME --iterations=N` runs N times untimed, so that
//     `valgrind --tool=callgrind` can count instructions per call as
//     (total(N) - total(0)) / N, which cancels start-up and library loading.
// Future suites (NDArray, graph executor, parallel) add their own AddCase calls in their own
// .cc files; the harness, the counters and bench/run_calls.py need no change.
#ifndef POLYFFI_BENCH_COMMON_HARNESS_H_
#define POLYFFI_BENCH_COMMON_HARNESS_H_

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "alloc_counter.h"

namespace bench {

/*! \brief A registered case, as the untimed (callgrind) mode sees it. */
struct CaseInfo {
  std::string name;
  /*! \brief Calls made by one body invocation (e.g. 1000 for call_n(cb, 1000)). */
  int64_t calls_per_iter;
  std::function<void(int64_t)> run_n;
};

/*! \brief Every case added so far, in registration order. */
std::vector<CaseInfo>& Cases();

/*! \brief Abort the run with a message: a benchmark that computes wrong answers is worthless. */
[[noreturn]] void Fail(const std::string& what);

/*!
 * \brief Register a case. body() is called once per benchmark iteration; it is a template
 *  parameter so the compiler inlines it into the timing loop (no std::function per iteration).
 * \param calls_per_iter how many calls of the measured kind one body() makes; times and counts
 *  are reported per call by run_calls.py.
 */
template <typename Body>
void AddCase(const std::string& name, Body body, int64_t calls_per_iter = 1) {
  auto shared = std::make_shared<Body>(std::move(body));
  benchmark::RegisterBenchmark(name.c_str(), [shared, calls_per_iter](benchmark::State& state) {
    Body& run = *shared;
    AllocStats before = AllocSnapshot();
    for (auto _ : state) {
      run();
    }
    AllocStats after = AllocSnapshot();
    double per_iter = static_cast<double>(calls_per_iter);
    // kAvgIterations divides by the iteration count: the counters read "per call".
    state.counters["allocs_per_call"] =
        benchmark::Counter(static_cast<double>(after.allocs - before.allocs) / per_iter,
                           benchmark::Counter::kAvgIterations);
    state.counters["bytes_per_call"] =
        benchmark::Counter(static_cast<double>(after.bytes - before.bytes) / per_iter,
                           benchmark::Counter::kAvgIterations);
    state.counters["calls_per_iter"] = per_iter;
  });
  Cases().push_back(CaseInfo{name, calls_per_iter, [shared](int64_t n) {
                               Body& run = *shared;
                               for (int64_t i = 0; i < n; ++i) run();
                             }});
}

/*!
 * \brief main() of a bench binary: runs `setup` (which adds cases), then either Google Benchmark
 *  (all its flags work) or one of the harness modes:
 *    --list_cases                 print case names, one per line
 *    --case=NAME --iterations=N   run NAME once to warm up, then N times, untimed
 */
int Main(int argc, char** argv, const std::function<void()>& setup);

}  // namespace bench

#endif  // POLYFFI_BENCH_COMMON_HARNESS_H_
