// Peer extension for bench_calls.py: the same operations written directly with nanobind.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <string>

namespace nb = nanobind;

NB_MODULE(nb_bench, m) {
  m.def("nop", [](nb::args) {});
  m.def("add3", [](int64_t a, int64_t b, int64_t c) { return a + b + c; });
  m.def("echo", [](const std::string& s) { return s; });
  // The same with the GIL released around the body, as every polyffi call does
  // (docs/spec/bindings.md requires it so that long native calls and native threads calling back
  // never block): the floor of a hand-written extension that also releases the GIL.
  m.def(
      "nop_nogil", []() {}, nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "add3_nogil", [](int64_t a, int64_t b, int64_t c) { return a + b + c; },
      nb::call_guard<nb::gil_scoped_release>());
  // Calls f(i) for i < n and sums the int results, like testing.call_n.
  m.def("call_n", [](nb::callable f, int64_t n) {
    int64_t total = 0;
    for (int64_t i = 0; i < n; ++i) total += nb::cast<int64_t>(f(i));
    return total;
  });
}
