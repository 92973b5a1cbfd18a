/* Plain C functions that koffi and the hand-written addons call: the same signatures as the
 * polyffi fixtures measured beside them (testing.nop, testing.add3, testing.echo, testing.call_n).
 * In their own shared library so that no caller can inline them. */
#include <stdint.h>

__attribute__((visibility("default"))) void nb_nop(void) {}

__attribute__((visibility("default"))) int64_t nb_add3(int64_t a, int64_t b, int64_t c) {
  return a + b + c;
}

__attribute__((visibility("default"))) const char* nb_echo(const char* s) { return s; }

/* Calls f(i) for i in 0..n-1 and returns the sum, as testing.call_n does. */
__attribute__((visibility("default"))) int64_t nb_call_n(int64_t (*f)(int64_t), int64_t n) {
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) total += f(i);
  return total;
}
