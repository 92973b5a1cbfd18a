// bench_calls: the cost of one call across the C ABI, side by side with its floors (a function
// pointer and a std::function into another shared library) and with apache-tvm-ffi's C++
// Function doing the same work. Case names are calls/<case>/<implementation>; run_calls.py
// turns the JSON output into ratios and adds callgrind instruction counts.
//
// Every body does what a real caller does per call: fill the argument arrays, call, check the
// return code. Results are verified once at setup, so a fast wrong answer cannot be reported.
#include <polyffi/c_direct_api.h>
#include <polyffi/c_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <polyffi/polyffi.hpp>
#include <string>
#include <string_view>

#include "../baseline/baseline.h"
#include "../common/harness.h"
#include "common_inputs.h"
#ifdef POLYFFI_BENCH_WITH_TVM_FFI
#include "tvm_ffi_calls.h"
#endif

namespace bench {
namespace {

// Handles live for the whole process; the fixture module is never unloaded.
struct PolyffiHandles {
  TVMModuleHandle testing_module = nullptr;
  TVMFunctionHandle nop = nullptr;
  TVMFunctionHandle add3 = nullptr;
  TVMFunctionHandle echo = nullptr;
  TVMFunctionHandle call_n = nullptr;
  TVMFunctionHandle add_one_callback = nullptr;
};

inline void Check(int rc, const char* what) {
  if (__builtin_expect(rc != 0, 0)) Fail(std::string(what) + ": " + TVMGetLastError());
}

TVMFunctionHandle RequireGlobal(const char* name) {
  TVMFunctionHandle h = nullptr;
  Check(TVMFuncGetGlobal(name, &h), name);
  if (h == nullptr) Fail(std::string("global ") + name + " is not registered by the fixture");
  return h;
}

// The C callback of the round-trip cases: returns args[0] + 1.
int AddOneCallback(TVMValue* args, int* type_codes, int num_args, TVMRetValueHandle ret,
                   void* /*resource_handle*/) {
  if (num_args != 1 || type_codes[0] != kTVMArgInt) {
    TVMAPISetLastError("TypeError: add_one expects one int");
    return -1;
  }
  TVMValue value;
  value.v_int64 = args[0].v_int64 + 1;
  int code = kTVMArgInt;
  return TVMCFuncSetReturn(ret, &value, &code, 1);
}

// ---- Plain C callees: TVMPackedCFunc functions returning through TVMCFuncSetReturn, the peers
// of tvm-ffi's safe-call functions. Each checks its arguments like those do.

int CNop(TVMValue*, int*, int, TVMRetValueHandle, void*) { return 0; }

int CAdd3(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void*) {
  if (n != 3 || codes[0] != kTVMArgInt || codes[1] != kTVMArgInt || codes[2] != kTVMArgInt) {
    TVMAPISetLastError("TypeError: add3 expects three ints");
    return -1;
  }
  TVMValue value;
  value.v_int64 = args[0].v_int64 + args[1].v_int64 + args[2].v_int64;
  int code = kTVMArgInt;
  return TVMCFuncSetReturn(ret, &value, &code, 1);
}

int CEcho(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void*) {
  if (n != 1) {
    TVMAPISetLastError("TypeError: echo expects one argument");
    return -1;
  }
  return TVMCFuncSetReturn(ret, &args[0], &codes[0], 1);
}

int CCallN(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void*) {
  if (n != 2 || codes[0] != kTVMPackedFuncHandle || codes[1] != kTVMArgInt) {
    TVMAPISetLastError("TypeError: call_n expects (function, int)");
    return -1;
  }
  int64_t sum = 0;
  for (int64_t i = 0; i < args[1].v_int64; ++i) {
    TVMValue arg, rv;
    arg.v_int64 = i;
    int code = kTVMArgInt, rc = kTVMNullptr;
    if (TVMFuncCall(args[0].v_handle, &arg, &code, 1, &rv, &rc) != 0) return -1;
    if (rc != kTVMArgInt) {
      TVMAPISetLastError("TypeError: call_n: the callback did not return an int");
      return -1;
    }
    sum += rv.v_int64;
  }
  TVMValue value;
  value.v_int64 = sum;
  int code = kTVMArgInt;
  return TVMCFuncSetReturn(ret, &value, &code, 1);
}

// ---- Plain C callees through the direct protocol (TVMFuncCreateDirect): the same checks, the
// result written into the caller's slot as tvm-ffi's safe-call functions write theirs.

int DNop(void*, const TVMValue*, const int*, int, TVMValue*, int*) { return 0; }

int DAdd3(void*, const TVMValue* args, const int* codes, int n, TVMValue* ret, int* ret_code) {
  if (n != 3 || codes[0] != kTVMArgInt || codes[1] != kTVMArgInt || codes[2] != kTVMArgInt) {
    TVMAPISetLastError("TypeError: add3 expects three ints");
    return -1;
  }
  ret->v_int64 = args[0].v_int64 + args[1].v_int64 + args[2].v_int64;
  *ret_code = kTVMArgInt;
  return 0;
}

int DEcho(void*, const TVMValue* args, const int* codes, int n, TVMValue* ret, int* ret_code) {
  if (n != 1 || codes[0] != kTVMStr) {
    TVMAPISetLastError("TypeError: echo expects one str");
    return -1;
  }
  return TVMDirectReturnString(args[0].v_str, std::strlen(args[0].v_str), 0, ret, ret_code);
}

int DAddOne(void*, const TVMValue* args, const int* codes, int n, TVMValue* ret, int* ret_code) {
  if (n != 1 || codes[0] != kTVMArgInt) {
    TVMAPISetLastError("TypeError: add_one expects one int");
    return -1;
  }
  ret->v_int64 = args[0].v_int64 + 1;
  *ret_code = kTVMArgInt;
  return 0;
}

int DCallN(void*, const TVMValue* args, const int* codes, int n, TVMValue* ret, int* ret_code) {
  if (n != 2 || codes[0] != kTVMPackedFuncHandle || codes[1] != kTVMArgInt) {
    TVMAPISetLastError("TypeError: call_n expects (function, int)");
    return -1;
  }
  int64_t sum = 0;
  for (int64_t i = 0; i < args[1].v_int64; ++i) {
    TVMValue arg, rv;
    arg.v_int64 = i;
    int code = kTVMArgInt, rc = kTVMNullptr;
    if (TVMFuncCall(args[0].v_handle, &arg, &code, 1, &rv, &rc) != 0) return -1;
    if (rc != kTVMArgInt) {
      TVMAPISetLastError("TypeError: call_n: the callback did not return an int");
      return -1;
    }
    sum += rv.v_int64;
  }
  ret->v_int64 = sum;
  *ret_code = kTVMArgInt;
  return 0;
}

TVMFunctionHandle RequireDirect(TVMDirectCFunc fn) {
  TVMFunctionHandle h = nullptr;
  Check(TVMFuncCreateDirect(fn, nullptr, nullptr, &h), "TVMFuncCreateDirect");
  return h;
}

TVMFunctionHandle RequireCFunc(TVMPackedCFunc fn) {
  TVMFunctionHandle h = nullptr;
  Check(TVMFuncCreateFromCFunc(fn, nullptr, nullptr, &h), "TVMFuncCreateFromCFunc");
  return h;
}

const char* TestingLibraryPath() {
  const char* env = std::getenv("POLYFFI_TESTING_LIB");
  return env != nullptr && env[0] != '\0' ? env : POLYFFI_TESTING_LIB_PATH;
}

PolyffiHandles LoadPolyffi() {
  PolyffiHandles h;
  Check(TVMModLoadFromFile(TestingLibraryPath(), "", &h.testing_module), TestingLibraryPath());
  h.nop = RequireGlobal("testing.nop");
  h.add3 = RequireGlobal("testing.add3");
  h.echo = RequireGlobal("testing.echo");
  h.call_n = RequireGlobal("testing.call_n");
  Check(TVMFuncCreateFromCFunc(AddOneCallback, nullptr, nullptr, &h.add_one_callback),
        "TVMFuncCreateFromCFunc");
  return h;
}

// ---- Floors -----------------------------------------------------------------------------------

void AddFloorCases() {
  AddCase("calls/nop/fnptr", [] {
    void (*fn)() = &bench_baseline_nop;
    benchmark::DoNotOptimize(fn);  // opaque pointer: a genuine indirect call every iteration
    fn();
  });
  AddCase("calls/add3/fnptr", [] {
    int64_t (*fn)(int64_t, int64_t, int64_t) = &bench_baseline_add3;
    benchmark::DoNotOptimize(fn);
    int64_t r = fn(1, 2, 3);
    benchmark::DoNotOptimize(r);
  });
  const auto& add3 = Add3StdFunction();
  if (add3(1, 2, 3) != 6) Fail("baseline std::function add3 is wrong");
  AddCase("calls/add3/std_function", [&add3] {
    int64_t r = add3(1, 2, 3);
    benchmark::DoNotOptimize(r);
  });
}

// ---- polyffi through the C ABI ----------------------------------------------------------------

// testing.call_n(cb, kCallN) through TVMFuncCall: the call_n rows' body and their check.
inline void CallN(TVMFunctionHandle call_n, TVMFunctionHandle cb, TVMValue* rv, int* rc) {
  TVMValue args[2];
  int codes[2] = {kTVMPackedFuncHandle, kTVMArgInt};
  args[0].v_handle = cb;
  args[1].v_int64 = kCallN;
  Check(TVMFuncCall(call_n, args, codes, 2, rv, rc), "testing.call_n");
}

void CheckCallN(TVMFunctionHandle call_n, TVMFunctionHandle cb, const char* what) {
  TVMValue rv;
  int rc = -1;
  CallN(call_n, cb, &rv, &rc);
  if (rc != kTVMArgInt || rv.v_int64 != kCallN * (kCallN + 1) / 2) {
    Fail(std::string("testing.call_n(") + what + ", N) != N(N+1)/2");
  }
}

// The two callback rows of one callback: cb(1) through TVMFuncCall, and testing.call_n(cb, N)
// per callback.
void AddCallbackCases(const std::string& callback_case, const std::string& call_n_case,
                      TVMFunctionHandle call_n, TVMFunctionHandle cb) {
  AddCase(callback_case, [cb] {
    TVMValue arg;
    arg.v_int64 = 1;
    int code = kTVMArgInt;
    TVMValue rv;
    int rc;
    Check(TVMFuncCall(cb, &arg, &code, 1, &rv, &rc), "callback");
    benchmark::DoNotOptimize(rv.v_int64);
  });
  AddCase(
      call_n_case,
      [call_n, cb] {
        TVMValue rv;
        int rc;
        CallN(call_n, cb, &rv, &rc);
        benchmark::DoNotOptimize(rv.v_int64);
      },
      kCallN);
}

void VerifyPolyffi(const PolyffiHandles& h) {
  TVMValue rv;
  int rc = -1;
  Check(TVMFuncCall(h.nop, nullptr, nullptr, 0, &rv, &rc), "testing.nop");
  if (rc != kTVMNullptr) Fail("testing.nop did not return None");

  TVMValue args[3];
  int codes[3] = {kTVMArgInt, kTVMArgInt, kTVMArgInt};
  args[0].v_int64 = 1, args[1].v_int64 = 2, args[2].v_int64 = 3;
  Check(TVMFuncCall(h.add3, args, codes, 3, &rv, &rc), "testing.add3");
  if (rc != kTVMArgInt || rv.v_int64 != 6) Fail("testing.add3(1, 2, 3) != 6");

  args[0].v_str = kStr16;
  codes[0] = kTVMStr;
  Check(TVMFuncCall(h.echo, args, codes, 1, &rv, &rc), "testing.echo");
  if (rc != kTVMStr || std::strcmp(rv.v_str, kStr16) != 0) Fail("testing.echo(str) mismatch");

  args[0].v_int64 = 41;
  codes[0] = kTVMArgInt;
  Check(TVMFuncCall(h.add_one_callback, args, codes, 1, &rv, &rc), "callback");
  if (rc != kTVMArgInt || rv.v_int64 != 42) Fail("C callback(41) != 42");

  CheckCallN(h.call_n, h.add_one_callback, "add_one");
}

void AddPolyffiCases(const PolyffiHandles& h, const std::string& prefix) {
  VerifyPolyffi(h);
  AddCase(prefix + "nop/polyffi_c", [f = h.nop] {
    TVMValue rv;
    int rc;
    Check(TVMFuncCall(f, nullptr, nullptr, 0, &rv, &rc), "testing.nop");
    benchmark::DoNotOptimize(rc);
  });
  AddCase(prefix + "add3/polyffi_c", [f = h.add3] {
    TVMValue args[3];
    int codes[3] = {kTVMArgInt, kTVMArgInt, kTVMArgInt};
    args[0].v_int64 = 1, args[1].v_int64 = 2, args[2].v_int64 = 3;
    TVMValue rv;
    int rc;
    Check(TVMFuncCall(f, args, codes, 3, &rv, &rc), "testing.add3");
    benchmark::DoNotOptimize(rv.v_int64);
  });
  AddCase(prefix + "str16/polyffi_c", [f = h.echo] {
    TVMValue arg;
    arg.v_str = kStr16;
    int code = kTVMStr;
    TVMValue rv;
    int rc;
    Check(TVMFuncCall(f, &arg, &code, 1, &rv, &rc), "testing.echo");
    benchmark::DoNotOptimize(rv.v_str);
  });
  AddCallbackCases(prefix + "callback/polyffi_c", prefix + "callback_call_n/polyffi_c", h.call_n,
                   h.add_one_callback);
}

// testing.call_n and TVMFuncCall on a callback that is a direct C callee.
void AddDirectCallbackCases(TVMFunctionHandle call_n, TVMFunctionHandle cb) {
  CheckCallN(call_n, cb, "direct add_one");
  AddCallbackCases("calls/callback_direct/polyffi_c", "calls/callback_call_n_direct/polyffi_c",
                   call_n, cb);
}

// A trusted caller (a binding, the C++ layer) through TVMFuncGetDirect's pair: no argument checks,
// the slot reset before each call as the contract asks. The callees are the direct ones.
void AddDirectPairCases(const PolyffiHandles& d) {
  struct Pair {
    TVMDirectCFunc fn;
    void* res;
  };
  auto pair = [](TVMFunctionHandle f) {
    Pair p{nullptr, nullptr};
    Check(TVMFuncGetDirect(f, &p.fn, &p.res), "TVMFuncGetDirect");
    return p;
  };
  {
    Pair p = pair(d.add3);
    TVMValue args[3], rv;
    int codes[3] = {kTVMArgInt, kTVMArgInt, kTVMArgInt}, rc = kTVMNullptr;
    args[0].v_int64 = 1, args[1].v_int64 = 2, args[2].v_int64 = 3;
    rv.v_handle = nullptr;
    Check(p.fn(p.res, args, codes, 3, &rv, &rc), "direct add3");
    if (rc != kTVMArgInt || rv.v_int64 != 6) Fail("direct pair add3(1, 2, 3) != 6");
  }
  AddCase("calls/g_nop/polyffi_c", [p = pair(d.nop)] {
    TVMValue rv;
    rv.v_handle = nullptr;
    int rc = kTVMNullptr;
    Check(p.fn(p.res, nullptr, nullptr, 0, &rv, &rc), "direct nop");
    benchmark::DoNotOptimize(rc);
  });
  AddCase("calls/g_add3/polyffi_c", [p = pair(d.add3)] {
    TVMValue args[3];
    int codes[3] = {kTVMArgInt, kTVMArgInt, kTVMArgInt};
    args[0].v_int64 = 1, args[1].v_int64 = 2, args[2].v_int64 = 3;
    TVMValue rv;
    rv.v_handle = nullptr;
    int rc = kTVMNullptr;
    Check(p.fn(p.res, args, codes, 3, &rv, &rc), "direct add3");
    benchmark::DoNotOptimize(rv.v_int64);
  });
  AddCase("calls/g_str16/polyffi_c", [p = pair(d.echo)] {
    TVMValue arg;
    arg.v_str = kStr16;
    int code = kTVMStr;
    TVMValue rv;
    rv.v_handle = nullptr;
    int rc = kTVMNullptr;
    Check(p.fn(p.res, &arg, &code, 1, &rv, &rc), "direct echo");
    benchmark::DoNotOptimize(rv.v_str);
  });
  AddCase("calls/g_callback/polyffi_c", [p = pair(d.add_one_callback)] {
    TVMValue arg;
    arg.v_int64 = 1;
    int code = kTVMArgInt;
    TVMValue rv;
    rv.v_handle = nullptr;
    int rc = kTVMNullptr;
    Check(p.fn(p.res, &arg, &code, 1, &rv, &rc), "direct callback");
    benchmark::DoNotOptimize(rv.v_int64);
  });
}

void AddLookupCase() {
  AddCase("calls/lookup/polyffi_c", [] {
    TVMFunctionHandle f = nullptr;
    Check(TVMFuncGetGlobal("testing.add3", &f), "TVMFuncGetGlobal");
    benchmark::DoNotOptimize(f);
    Check(TVMFuncFree(f), "TVMFuncFree");
  });
}

// ---- polyffi through the header-only C++ layer (the peer of tvm-ffi's C++ Function) -----------

void AddPolyffiCppCases() {
  polyffi::Function nop = polyffi::Function::GetGlobalRequired("testing.nop");
  polyffi::Function add3 = polyffi::Function::GetGlobalRequired("testing.add3");
  polyffi::Function echo = polyffi::Function::GetGlobalRequired("testing.echo");
  polyffi::Function call_n = polyffi::Function::GetGlobalRequired("testing.call_n");
  // The peer of tvm-ffi's Function::FromTyped lambda: a typed C++ callback made by this layer.
  polyffi::Function add_one = polyffi::MakeTyped([](int64_t x) { return x + 1; }, "add_one");
  if (!nop().is_none()) Fail("polyffi::Function nop() returned a value");
  if (add3(1, 2, 3).as_int() != 6) Fail("polyffi::Function add3(1, 2, 3) != 6");
  if (echo(kStr16).as_str() != kStr16) Fail("polyffi::Function echo(str) mismatch");
  if (add_one(41).as_int() != 42) Fail("polyffi::MakeTyped add_one(41) != 42");
  if (call_n(add_one, kCallN).as_int() != kCallN * (kCallN + 1) / 2) {
    Fail("polyffi::Function call_n(add_one, N) != N(N+1)/2");
  }
  AddCase("calls/nop/polyffi_cpp", [nop] {
    polyffi::Any r = nop();
    benchmark::DoNotOptimize(r);
  });
  AddCase("calls/add3/polyffi_cpp", [add3] {
    int64_t r = add3(1, 2, 3).as_int();
    benchmark::DoNotOptimize(r);
  });
  AddCase("calls/str16/polyffi_cpp", [echo] {
    polyffi::Any r = echo(kStr16);
    benchmark::DoNotOptimize(r);
  });
  // The same echo with a borrowed result (Function::CallView): the string stays in the
  // runtime's per-thread return storage instead of being copied into a std::string.
  if (echo.CallView(kStr16).as_str_view() != kStr16) Fail("polyffi::Function echo view mismatch");
  AddCase("calls/str16/polyffi_cpp_view", [echo] {
    polyffi::AnyView r = echo.CallView(kStr16);
    std::string_view s = r.as_str_view();
    benchmark::DoNotOptimize(s);
  });
  AddCase("calls/callback/polyffi_cpp", [add_one] {
    int64_t r = add_one(1).as_int();
    benchmark::DoNotOptimize(r);
  });
  AddCase(
      "calls/callback_call_n/polyffi_cpp",
      [call_n, add_one] {
        int64_t r = call_n(add_one, kCallN).as_int();
        benchmark::DoNotOptimize(r);
      },
      kCallN);
}

void Setup() {
  AddFloorCases();
  PolyffiHandles h = LoadPolyffi();
  AddPolyffiCases(h, "calls/");
  // The fixtures' call_n with a direct C callback (TVMFuncCreateDirect): the like-for-like of a
  // tvm-ffi C callback writing the caller's slot.
  AddDirectCallbackCases(h.call_n, RequireDirect(DAddOne));
  // Plain C callees (the callback is already one).
  PolyffiHandles c = h;
  c.nop = RequireCFunc(CNop);
  c.add3 = RequireCFunc(CAdd3);
  c.echo = RequireCFunc(CEcho);
  c.call_n = RequireCFunc(CCallN);
  AddPolyffiCases(c, "calls/c_");
  // The same plain C callees through the direct protocol, callback included.
  PolyffiHandles d = h;
  d.nop = RequireDirect(DNop);
  d.add3 = RequireDirect(DAdd3);
  d.echo = RequireDirect(DEcho);
  d.call_n = RequireDirect(DCallN);
  d.add_one_callback = RequireDirect(DAddOne);
  AddPolyffiCases(d, "calls/d_");
  AddDirectPairCases(d);
  AddLookupCase();
  AddPolyffiCppCases();
#ifdef POLYFFI_BENCH_WITH_TVM_FFI
  AddTvmFfiCallCases(BENCH_TVM_FFI_FIXTURES_PATH);
#endif
}

}  // namespace
}  // namespace bench

int main(int argc, char** argv) { return bench::Main(argc, argv, bench::Setup); }
