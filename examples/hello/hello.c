/* hello_polyffi: the C ABI in one page. Registers a C callback as a global function, loads
 * the fixture library, and calls through the registry: a typed function, a callback invoked
 * from C++, and an error with its kind. Uses only <polyffi/c_runtime_api.h>. */
#include <polyffi/c_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                 \
  do {                                                              \
    if ((call) != 0) {                                              \
      fprintf(stderr, "%s failed: %s\n", #call, TVMGetLastError()); \
      exit(1);                                                      \
    }                                                               \
  } while (0)

/* A host callback: returns x * 10. */
static int times_ten(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void* resource) {
  (void)resource;
  if (n != 1 || codes[0] != kTVMArgInt) {
    TVMAPISetLastError("TypeError: times_ten expects one int");
    return -1;
  }
  TVMValue v;
  int code = kTVMArgInt;
  v.v_int64 = args[0].v_int64 * 10;
  return TVMCFuncSetReturn(ret, &v, &code, 1);
}

static void finalize(void* resource) { printf("finalizer ran for %s\n", (const char*)resource); }

static TVMFunctionHandle global(const char* name) {
  TVMFunctionHandle f = NULL;
  CHECK(TVMFuncGetGlobal(name, &f));
  if (f == NULL) {
    fprintf(stderr, "missing global %s\n", name);
    exit(1);
  }
  return f;
}

int main(int argc, char** argv) {
  const char* fixtures = argc > 1 ? argv[1] : POLYFFI_TESTING_LIB;
  int major, minor, patch;
  TVMAPIGetVersion(&major, &minor, &patch);
  printf("polyffi %d.%d.%d\n", major, minor, patch);

  TVMModuleHandle lib;
  CHECK(TVMModLoadFromFile(fixtures, "", &lib));

  TVMFunctionHandle cb;
  CHECK(TVMFuncCreateFromCFunc(times_ten, (void*)"times_ten", finalize, &cb));
  CHECK(TVMFuncRegisterGlobal("hello.times_ten", cb, 0));

  TVMValue args[3], ret;
  int codes[3], ret_code;

  /* A typed C++ function. */
  TVMFunctionHandle add3 = global("testing.add3");
  for (int i = 0; i < 3; ++i) args[i].v_int64 = i + 1, codes[i] = kTVMArgInt;
  CHECK(TVMFuncCall(add3, args, codes, 3, &ret, &ret_code));
  printf("testing.add3(1, 2, 3) = %lld\n", (long long)ret.v_int64);

  /* C++ calling our C callback n times: testing.call_n(f, 5) = sum(f(i)). */
  TVMFunctionHandle call_n = global("testing.call_n");
  TVMFunctionHandle ours = global("hello.times_ten");
  args[0].v_handle = ours, codes[0] = kTVMPackedFuncHandle;
  args[1].v_int64 = 5, codes[1] = kTVMArgInt;
  CHECK(TVMFuncCall(call_n, args, codes, 2, &ret, &ret_code));
  printf("testing.call_n(hello.times_ten, 5) = %lld\n", (long long)ret.v_int64);

  /* Errors carry a kind. */
  args[0].v_float64 = 1.5, codes[0] = kTVMArgFloat;
  args[1].v_int64 = 2, codes[1] = kTVMArgInt;
  args[2].v_int64 = 3, codes[2] = kTVMArgInt;
  if (TVMFuncCall(add3, args, codes, 3, &ret, &ret_code) != 0) {
    printf("testing.add3(1.5, 2, 3) failed as expected: %s\n", TVMGetLastError());
  }

  /* Strings come back in thread-local storage: copy before the next call. */
  TVMFunctionHandle concat = global("testing.concat");
  args[0].v_str = "poly", codes[0] = kTVMStr;
  args[1].v_str = "ffi", codes[1] = kTVMStr;
  CHECK(TVMFuncCall(concat, args, codes, 2, &ret, &ret_code));
  printf("testing.concat(\"poly\", \"ffi\") = \"%s\"\n", ret.v_str);

  TVMFuncFree(concat);
  TVMFuncFree(ours);
  TVMFuncFree(call_n);
  TVMFuncFree(add3);
  CHECK(TVMFuncRemoveGlobal("hello.times_ten"));
  TVMFuncFree(cb); /* the last reference: the finalizer runs now */
  TVMModFree(lib);
  return 0;
}
