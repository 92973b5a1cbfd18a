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
#include <cstring>
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

TVMFFIAny None() {
  TVMFFIAny a;
  a.type_index = kTVMFFINone;
  a.zero_padding = 0;
  a.v_int64 = 0;
  return a;
}

TVMFFIAny IntArg(int64_t x) {
  TVMFFIAny a = None();
  a.type_index = kTVMFFIInt;
  a.v_int64 = x;
  return a;
}

/*! \brief Release what a TVMFFIFunctionCall result owns (objects; strings are objects). */
void Release(TVMFFIAny* a) {
  if (a->type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(a->v_obj);
}

TVMFFIObjectHandle RequireC(const char* name) {
  TVMFFIByteArray bytes{name, std::strlen(name)};
  TVMFFIObjectHandle h = nullptr;
  if (TVMFFIFunctionGetGlobal(&bytes, &h) != 0 || h == nullptr) {
    Fail(std::string("tvm-ffi C API: no global ") + name);
  }
  return h;
}

TVMFFIObjectHandle RequireCreate(void* self, TVMFFISafeCallType fn) {
  TVMFFIObjectHandle h = nullptr;
  if (TVMFFIFunctionCreate(self, fn, nullptr, &h) != 0 || h == nullptr) {
    Fail("tvm-ffi C API: TVMFFIFunctionCreate failed");
  }
  return h;
}

// ---- Plain C callees: tvm-ffi safe-call functions, the peers of polyffi's TVMPackedCFunc ones.
// Each checks its arguments like the polyffi callees do and writes its result straight into the
// caller's TVMFFIAny.

int SafeNop(void*, const TVMFFIAny*, int32_t, TVMFFIAny*) { return 0; }

int SafeAdd3(void*, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  if (n != 3 || args[0].type_index != kTVMFFIInt || args[1].type_index != kTVMFFIInt ||
      args[2].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "add3 expects three ints");
    return -1;
  }
  result->type_index = kTVMFFIInt;
  result->v_int64 = args[0].v_int64 + args[1].v_int64 + args[2].v_int64;
  return 0;
}

int SafeEcho(void*, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  if (n != 1) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "echo expects one argument");
    return -1;
  }
  return TVMFFIAnyViewToOwnedAny(&args[0], result);
}

int SafeAddOne(void*, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  if (n != 1 || args[0].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "add_one expects one int");
    return -1;
  }
  result->type_index = kTVMFFIInt;
  result->v_int64 = args[0].v_int64 + 1;
  return 0;
}

int SafeCallN(void*, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  if (n != 2 || args[0].type_index != kTVMFFIFunction || args[1].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "call_n expects (function, int)");
    return -1;
  }
  int64_t sum = 0;
  for (int64_t i = 0; i < args[1].v_int64; ++i) {
    TVMFFIAny arg = IntArg(i), r = None();
    if (TVMFFIFunctionCall(args[0].v_obj, &arg, 1, &r) != 0) return -1;
    if (r.type_index != kTVMFFIInt) {
      Release(&r);
      TVMFFIErrorSetRaisedFromCStr("TypeError", "call_n: the callback did not return an int");
      return -1;
    }
    sum += r.v_int64;
  }
  result->type_index = kTVMFFIInt;
  result->v_int64 = sum;
  return 0;
}

/*! \brief Call f through tvm-ffi's C entry point; the check of its status stays in the body. */
inline TVMFFIAny CallC(TVMFFIObjectHandle f, TVMFFIAny* args, int32_t n, const char* what) {
  TVMFFIAny result = None();
  if (__builtin_expect(TVMFFIFunctionCall(f, args, n, &result) != 0, 0)) {
    Fail(std::string("tvm-ffi C call failed: ") + what);
  }
  return result;
}

/*!
 * \brief The C entry point's cases for one set of callees (nop, add3, echo, add_one, call_n):
 *  every body fills TVMFFIAny arguments, calls TVMFFIFunctionCall and releases the result,
 *  which is what a C caller of tvm-ffi does. Results are verified once first.
 */
void AddCApiCases(const std::string& prefix, const char* suffix, TVMFFIObjectHandle nop,
                  TVMFFIObjectHandle add3, TVMFFIObjectHandle echo, TVMFFIObjectHandle add_one,
                  TVMFFIObjectHandle call_n) {
  {
    TVMFFIAny r = CallC(nop, nullptr, 0, "nop");
    if (r.type_index != kTVMFFINone) Fail("tvm-ffi C nop returned a value");
    TVMFFIAny a3[3] = {IntArg(1), IntArg(2), IntArg(3)};
    r = CallC(add3, a3, 3, "add3");
    if (r.type_index != kTVMFFIInt || r.v_int64 != 6) Fail("tvm-ffi C add3(1, 2, 3) != 6");
    TVMFFIAny s = None();
    s.type_index = kTVMFFIRawStr;
    s.v_c_str = kStr16;
    r = CallC(echo, &s, 1, "echo");
    ffi::String got = ffi::detail::AnyUnsafe::MoveTVMFFIAnyToAny(&r).cast<ffi::String>();
    if (got != kStr16) Fail("tvm-ffi C echo(str) mismatch");
    TVMFFIAny x = IntArg(41);
    r = CallC(add_one, &x, 1, "add_one");
    if (r.type_index != kTVMFFIInt || r.v_int64 != 42) Fail("tvm-ffi C add_one(41) != 42");
    TVMFFIAny cn[2] = {None(), IntArg(kCallN)};
    cn[0].type_index = kTVMFFIFunction;
    cn[0].v_obj = static_cast<TVMFFIObject*>(add_one);
    r = CallC(call_n, cn, 2, "call_n");
    if (r.type_index != kTVMFFIInt || r.v_int64 != kCallN * (kCallN + 1) / 2) {
      Fail("tvm-ffi C call_n(add_one, N) != N(N+1)/2");
    }
  }
  AddCase(prefix + "nop/" + suffix, [nop] {
    TVMFFIAny r = CallC(nop, nullptr, 0, "nop");
    benchmark::DoNotOptimize(r);
  });
  AddCase(prefix + "add3/" + suffix, [add3] {
    TVMFFIAny args[3] = {IntArg(1), IntArg(2), IntArg(3)};
    TVMFFIAny r = CallC(add3, args, 3, "add3");
    benchmark::DoNotOptimize(r.v_int64);
  });
  AddCase(prefix + "str16/" + suffix, [echo] {
    TVMFFIAny arg = None();
    arg.type_index = kTVMFFIRawStr;
    arg.v_c_str = kStr16;
    TVMFFIAny r = CallC(echo, &arg, 1, "echo");
    benchmark::DoNotOptimize(r);
    Release(&r);
  });
  AddCase(prefix + "callback/" + suffix, [add_one] {
    TVMFFIAny arg = IntArg(1);
    TVMFFIAny r = CallC(add_one, &arg, 1, "add_one");
    benchmark::DoNotOptimize(r.v_int64);
  });
  AddCase(
      prefix + "callback_call_n/" + suffix,
      [call_n, add_one] {
        TVMFFIAny args[2] = {None(), IntArg(kCallN)};
        args[0].type_index = kTVMFFIFunction;
        args[0].v_obj = static_cast<TVMFFIObject*>(add_one);
        TVMFFIAny r = CallC(call_n, args, 2, "call_n");
        benchmark::DoNotOptimize(r.v_int64);
      },
      kCallN);
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
  // than the C++ Function, whose operator() reaches the callee without an exported call. Callees
  // are the same C++ functions as above (the lambda add_one is held by its Function).
  AddCApiCases(
      "calls/", "tvm_ffi_c", RequireC("bench.nop"), RequireC("bench.add3"), RequireC("bench.echo"),
      ffi::detail::ObjectUnsafe::TVMFFIObjectPtrFromObjectRef(add_one), RequireC("bench.call_n"));
  // Plain C callees on both sides: tvm-ffi safe-call functions (TVMFFIFunctionCreate).
  AddCApiCases("calls/c_", "tvm_ffi_c", RequireCreate(nullptr, SafeNop),
               RequireCreate(nullptr, SafeAdd3), RequireCreate(nullptr, SafeEcho),
               RequireCreate(nullptr, SafeAddOne), RequireCreate(nullptr, SafeCallN));
  AddCase("calls/lookup/tvm_ffi_c", [] {
    TVMFFIByteArray name{"bench.add3", 10};
    TVMFFIObjectHandle f = nullptr;
    if (TVMFFIFunctionGetGlobal(&name, &f) != 0) Fail("tvm-ffi C TVMFFIFunctionGetGlobal failed");
    benchmark::DoNotOptimize(f);
    TVMFFIObjectDecRef(f);
  });
  AddCase("calls/lookup/tvm_ffi", [] {
    std::optional<ffi::Function> f = ffi::Function::GetGlobal("bench.add3");
    benchmark::DoNotOptimize(f);
  });
}

}  // namespace bench
