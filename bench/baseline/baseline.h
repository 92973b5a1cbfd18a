// Floors for the call benchmarks: plain functions in their own shared library, so the
// compiler sees only a symbol and must emit a real call (no inlining, no constant folding).
#ifndef POLYFFI_BENCH_BASELINE_BASELINE_H_
#define POLYFFI_BENCH_BASELINE_BASELINE_H_

#include <cstdint>
#include <functional>

extern "C" {
/*! \brief Returns nothing; the 0-argument floor. */
void bench_baseline_nop(void);
/*! \brief a + b + c; the 3-int floor. */
int64_t bench_baseline_add3(int64_t a, int64_t b, int64_t c);
}

namespace bench {
/*!
 * \brief A std::function wrapping add3, built inside the baseline library so the caller cannot
 *  see the target and devirtualize the call.
 */
const std::function<int64_t(int64_t, int64_t, int64_t)>& Add3StdFunction();
}  // namespace bench

#endif  // POLYFFI_BENCH_BASELINE_BASELINE_H_
