// libbench_tvm_ffi_fixtures.so: tvm-ffi's counterparts of the polyffi fixtures used by
// bench_calls, registered as bench.* globals in tvm-ffi's registry. A separate shared library,
// like libpolyffi_testing.so, so callee code is equally out of the caller's reach.
#include <tvm/ffi/any.h>
#include <tvm/ffi/function.h>

#include <cstdint>

namespace {
namespace ffi = tvm::ffi;

TVM_FFI_STATIC_INIT_BLOCK() {
  ffi::Function::SetGlobal("bench.nop", ffi::Function::FromTyped([]() {}));
  ffi::Function::SetGlobal(
      "bench.add3",
      ffi::Function::FromTyped([](int64_t a, int64_t b, int64_t c) { return a + b + c; }));
  // Untyped like testing.echo: the argument comes back as given.
  ffi::Function::SetGlobal(
      "bench.echo",
      ffi::Function::FromPacked([](ffi::PackedArgs args, ffi::Any* rv) { *rv = args[0]; }));
  ffi::Function::SetGlobal("bench.call_n", ffi::Function::FromTyped([](ffi::Function f, int64_t n) {
                             int64_t sum = 0;
                             for (int64_t i = 0; i < n; ++i) sum += f(i).cast<int64_t>();
                             return sum;
                           }));
}
}  // namespace
