// A C++ plugin as a user would write one: globals registered in static initialisers, reached
// through the C ABI only. Loading it with TVMModLoadFromFile makes plugin.* appear.
#include <cstdint>
#include <polyffi/polyffi.hpp>

#include "fixture_util.h"

namespace {

using polyffi::Function;
using polyffi_testing::CheckedAdd;
using polyffi_testing::CheckedMul;

POLYFFI_REGISTER_GLOBAL("plugin.AddOne").set_body_typed([](int64_t x) {
  return CheckedAdd(x, 1, "plugin.AddOne");
});

POLYFFI_REGISTER_GLOBAL("plugin.SubOne").set_body_typed([](int64_t x) {
  return CheckedAdd(x, -1, "plugin.SubOne");
});

// A module built from closures through the core's runtime.ModuleFromFunctions, so modules made
// in C++ plugins need nothing beyond the registry.
POLYFFI_REGISTER_GLOBAL("plugin.make_module").set_body_typed([](int64_t y) {
  static Function make = Function::GetGlobalRequired("runtime.ModuleFromFunctions");
  Function add = polyffi::MakeTyped([y](int64_t x) { return CheckedAdd(x, y, "add_y"); }, "add_y");
  Function mul = polyffi::MakeTyped([y](int64_t x) { return CheckedMul(x, y, "mul_y"); }, "mul_y");
  return make("plugin.TestModule", "add_y", add, "mul_y", mul);
});

}  // namespace
