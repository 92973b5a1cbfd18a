// Inputs shared by the polyffi and tvm-ffi sides so both measure the same work.
#ifndef POLYFFI_BENCH_CALLS_COMMON_INPUTS_H_
#define POLYFFI_BENCH_CALLS_COMMON_INPUTS_H_

#include <cstdint>

namespace bench {
/*! \brief 16 bytes: one past libstdc++'s 15-byte small-string buffer, so a copy must allocate. */
constexpr const char kStr16[] = "0123456789abcdef";
static_assert(sizeof(kStr16) == 17, "the string case is about a 16-byte string");
/*! \brief Callbacks made per body in the call_n cases; times are reported per callback. */
constexpr int64_t kCallN = 1000;
}  // namespace bench

#endif  // POLYFFI_BENCH_CALLS_COMMON_INPUTS_H_
