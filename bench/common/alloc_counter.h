// Heap-allocation counting for benchmarks.
//
// alloc_counter.cc defines malloc, calloc, realloc, free and the aligned allocators in the
// benchmark executable itself. The dynamic linker resolves every library's malloc call (libc,
// libstdc++'s operator new, libpolyffi, the fixtures, libtvm_ffi) to the executable's
// definition first, so each heap allocation in the process passes through one counter before
// being forwarded to glibc's __libc_* implementation. Link it only into benchmark binaries.
#ifndef POLYFFI_BENCH_COMMON_ALLOC_COUNTER_H_
#define POLYFFI_BENCH_COMMON_ALLOC_COUNTER_H_

#include <cstdint>

namespace bench {

/*! \brief Counts since process start; a snapshot is cheap (two relaxed loads). */
struct AllocStats {
  uint64_t allocs = 0;  // malloc, calloc, realloc that moved or grew from NULL, aligned allocs
  uint64_t bytes = 0;   // bytes requested by those calls
};

/*! \brief Current totals over all threads. */
AllocStats AllocSnapshot();

/*! \brief True when the interposed malloc is the one in use (sanity check at startup). */
bool AllocCounterActive();

}  // namespace bench

#endif  // POLYFFI_BENCH_COMMON_ALLOC_COUNTER_H_
