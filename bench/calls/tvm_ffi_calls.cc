// The tvm-ffi side of bench_calls: tvm::ffi::Function called from C++, the way a tvm-ffi user
// makes the calls polyffi's C callers make. Fixture functions are globals from a separate
// shared library (libbench_tvm_ffi_fixtures.so), found through tvm-ffi's registry.
#include "tvm_ffi_calls.h"

#include <dlfcn.h>
#include <tvm/ffi/any.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <optional>
#include <string>

#include "../common/harness.h"
#include "common_inputs.h"

namespace bench {
namespace {
namespace ffi = tvm::ffi;

ffi::Function Require(const char* name) {
  std::optional<ffi::Function> f = ffi::Function::GetGlobal(name);
  if (!f.has_value()) Fail(std::string("tvm-ffi global ") + name + " is not registered");
  return *f;
}

}  // namespace

void AddTvmFfiCallCases(const char* fixture_path) {
  // RTLD_LOCAL: the fixture's static initializer registers its globals; nothing else is needed.
  if (dlopen(fixture_path, RTLD_NOW | RTLD_LOCAL) == nullptr) {
    Fail(std::string("cannot load tvm-ffi fixtures: ") + dlerror());
  }
  ffi::Function nop = Require("bench.nop");
  ffi::Function add3 = Require("bench.add3");
  ffi::Function echo = Require("bench.echo");
  ffi::Function call_n = Require("bench.call_n");
  ffi::Function add_one = ffi::Function::FromTyped([](int64_t x) { return x + 1; });
  const ffi::String str16(kStr16);

  try {
    if (!(nop() == nullptr)) Fail("tvm-ffi bench.nop returned a value");
    if (add3(1, 2, 3).cast<int64_t>() != 6) Fail("tvm-ffi bench.add3(1, 2, 3) != 6");
    if (echo(kStr16).cast<ffi::String>() != kStr16) Fail("tvm-ffi bench.echo(char*) mismatch");
    if (echo(str16).cast<ffi::String>() != kStr16) Fail("tvm-ffi bench.echo(String) mismatch");
    if (add_one(41).cast<int64_t>() != 42) Fail("tvm-ffi lambda add_one(41) != 42");
    if (call_n(add_one, kCallN).cast<int64_t>() != kCallN * (kCallN + 1) / 2) {
      Fail("tvm-ffi bench.call_n(add_one, N) != N(N+1)/2");
    }
  } catch (const ffi::Error& e) {
    Fail(std::string("tvm-ffi fixture check failed: ") + e.what());
  }

  AddCase("calls/nop/tvm_ffi", [nop] {
    ffi::Any r = nop();
    benchmark::DoNotOptimize(r);
  });
  AddCase("calls/add3/tvm_ffi", [add3] {
    int64_t r = add3(1, 2, 3).cast<int64_t>();
    benchmark::DoNotOptimize(r);
  });
  // Same argument as polyffi's C caller passes: a borrowed C string.
  AddCase("calls/str16/tvm_ffi", [echo] {
    ffi::Any r = echo(kStr16);
    benchmark::DoNotOptimize(r);
  });
  // tvm-ffi's best case for strings: the caller already holds an ffi::String object.
  AddCase("calls/str16/tvm_ffi_string", [echo, str16] {
    ffi::Any r = echo(str16);
    benchmark::DoNotOptimize(r);
  });
  AddCase("calls/callback/tvm_ffi", [add_one] {
    int64_t r = add_one(1).cast<int64_t>();
    benchmark::DoNotOptimize(r);
  });
  AddCase(
      "calls/callback_call_n/tvm_ffi",
      [call_n, add_one] {
        int64_t r = call_n(add_one, kCallN).cast<int64_t>();
        benchmark::DoNotOptimize(r);
      },
      kCallN);
  // Like for like with polyffi_c: tvm-ffi's own C ABI entry point, TVMFFIFunctionCall, rather
  // than the C++ Function, whose operator() reaches the callee without an exported call.
  TVMFFIObjectHandle nop_c = nullptr, add3_c = nullptr;
  TVMFFIByteArray nop_name{"bench.nop", 9}, add3_name{"bench.add3", 10};
  if (TVMFFIFunctionGetGlobal(&nop_name, &nop_c) != 0 || nop_c == nullptr ||
      TVMFFIFunctionGetGlobal(&add3_name, &add3_c) != 0 || add3_c == nullptr) {
    Fail("tvm-ffi C API: TVMFFIFunctionGetGlobal failed");
  }
  AddCase("calls/nop/tvm_ffi_c", [nop_c] {
    TVMFFIAny result;
    result.type_index = kTVMFFINone;
    result.zero_padding = 0;
    result.v_int64 = 0;
    if (TVMFFIFunctionCall(nop_c, nullptr, 0, &result) != 0) Fail("tvm-ffi C nop failed");
    benchmark::DoNotOptimize(result);
  });
  AddCase("calls/add3/tvm_ffi_c", [add3_c] {
    TVMFFIAny args[3], result;
    for (int i = 0; i < 3; ++i) {
      args[i].type_index = kTVMFFIInt;
      args[i].zero_padding = 0;
      args[i].v_int64 = i + 1;
    }
    result.type_index = kTVMFFINone;
    result.zero_padding = 0;
    result.v_int64 = 0;
    if (TVMFFIFunctionCall(add3_c, args, 3, &result) != 0) Fail("tvm-ffi C add3 failed");
    benchmark::DoNotOptimize(result.v_int64);
  });
  AddCase("calls/lookup/tvm_ffi", [] {
    std::optional<ffi::Function> f = ffi::Function::GetGlobal("bench.add3");
    benchmark::DoNotOptimize(f);
  });
}

}  // namespace bench
