#include "baseline.h"

extern "C" {
void bench_baseline_nop(void) {}
int64_t bench_baseline_add3(int64_t a, int64_t b, int64_t c) { return a + b + c; }
}

namespace bench {
const std::function<int64_t(int64_t, int64_t, int64_t)>& Add3StdFunction() {
  static const std::function<int64_t(int64_t, int64_t, int64_t)> f =
      [](int64_t a, int64_t b, int64_t c) { return a + b + c; };
  return f;
}
}  // namespace bench
