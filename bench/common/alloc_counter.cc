#include "alloc_counter.h"

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <new>

extern "C" {
// glibc's real allocator entry points; exported by libc.so.6 for exactly this purpose.
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t n, size_t size);
void* __libc_realloc(void* p, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* p);
}

namespace {
// Relaxed atomics: totals only need to be exact once the measured threads are done, and the
// counter must stay correct for the multi-threaded benchmarks that will join this binary.
std::atomic<uint64_t> g_allocs{0};
std::atomic<uint64_t> g_bytes{0};

inline void Count(size_t bytes) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  g_bytes.fetch_add(bytes, std::memory_order_relaxed);
}
}  // namespace

extern "C" {

void* malloc(size_t size) {
  Count(size);
  return __libc_malloc(size);
}

void* calloc(size_t n, size_t size) {
  Count(n * size);
  return __libc_calloc(n, size);
}

void* realloc(void* p, size_t size) {
  // A realloc may move the block; count it as an allocation either way, since avoiding it is
  // what a zero-allocation call path means.
  Count(size);
  return __libc_realloc(p, size);
}

void free(void* p) { __libc_free(p); }

void* memalign(size_t alignment, size_t size) {
  Count(size);
  return __libc_memalign(alignment, size);
}

void* aligned_alloc(size_t alignment, size_t size) {
  Count(size);
  return __libc_memalign(alignment, size);
}

int posix_memalign(void** out, size_t alignment, size_t size) {
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  Count(size);
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

}  // extern "C"

namespace bench {

AllocStats AllocSnapshot() {
  AllocStats s;
  s.allocs = g_allocs.load(std::memory_order_relaxed);
  s.bytes = g_bytes.load(std::memory_order_relaxed);
  return s;
}

bool AllocCounterActive() {
  uint64_t before = g_allocs.load(std::memory_order_relaxed);
  // libstdc++'s operator new lives in another shared object: counting it proves the dynamic
  // linker bound other libraries' malloc to this file. A direct operator call is never elided.
  void* p = ::operator new(24);
  ::operator delete(p);
  return g_allocs.load(std::memory_order_relaxed) == before + 1;
}

}  // namespace bench
