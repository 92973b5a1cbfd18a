/*
 * libpolyffi opened RTLD_LOCAL, as a Python extension, a Node addon or System.load bring it in:
 * its symbols are not in the global scope, yet a TVM 0.27 kernel library (which imports
 * TVMFFIErrorSetRaisedFromCStrParts with no DT_NEEDED) must load, run, and raise through it.
 * This program does not link libpolyffi; it reaches the C ABI through dlsym only.
 */
#include <dlfcn.h>
#include <polyffi/c_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                     \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "check failed: %s (line %d)\n", #cond, __LINE__); \
      exit(1);                                                          \
    }                                                                   \
  } while (0)

typedef int (*ModLoad)(const char*, const char*, TVMModuleHandle*);
typedef int (*ModGetFunction)(TVMModuleHandle, const char*, int, TVMFunctionHandle*);
typedef int (*FuncCall)(TVMFunctionHandle, TVMValue*, int*, int, TVMValue*, int*);
typedef const char* (*GetLastError)(void);
typedef int (*Free)(void*);

int main(void) {
  void* lib = dlopen(POLYFFI_LIB, RTLD_NOW | RTLD_LOCAL);
  CHECK(lib != NULL);
  CHECK(dlsym(RTLD_DEFAULT, "TVMFFIErrorSetRaisedFromCStrParts") == NULL); /* really local */
  ModLoad load = (ModLoad)dlsym(lib, "TVMModLoadFromFile");
  ModGetFunction get = (ModGetFunction)dlsym(lib, "TVMModGetFunction");
  FuncCall call = (FuncCall)dlsym(lib, "TVMFuncCall");
  GetLastError last_error = (GetLastError)dlsym(lib, "TVMGetLastError");
  Free func_free = (Free)dlsym(lib, "TVMFuncFree");
  Free mod_free = (Free)dlsym(lib, "TVMModFree");
  CHECK(load && get && call && last_error && func_free && mod_free);

  TVMModuleHandle mod = NULL;
  if (load(KERNEL_LIB, "", &mod) != 0) {
    fprintf(stderr, "load failed: %s\n", last_error());
    return 1;
  }
  CHECK(dlsym(RTLD_DEFAULT, "TVMFFIErrorSetRaisedFromCStrParts") ==
        dlsym(lib, "TVMFFIErrorSetRaisedFromCStrParts"));
  TVMFunctionHandle scale = NULL;
  CHECK(get(mod, "scale", 0, &scale) == 0 && scale != NULL);

  float x[16] __attribute__((aligned(64))), y[16] __attribute__((aligned(64)));
  for (int i = 0; i < 16; ++i) x[i] = (float)i, y[i] = 0;
  int64_t shape[1] = {16};
  DLTensor tx = {x, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, NULL, 0};
  DLTensor ty = {y, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, NULL, 0};
  TVMValue args[3], ret;
  int codes[3] = {kTVMDLTensorHandle, kTVMArgFloat, kTVMDLTensorHandle}, ret_code = 0;
  args[0].v_handle = &tx;
  args[1].v_float64 = 3.0;
  args[2].v_handle = &ty;
  CHECK(call(scale, args, codes, 3, &ret, &ret_code) == 0);
  CHECK(ret_code == kTVMNullptr);
  for (int i = 0; i < 16; ++i) CHECK(y[i] == 3.0f * (float)i);

  /* The kernel's error goes through libpolyffi's TVMFFIErrorSetRaisedFromCStrParts. */
  CHECK(call(scale, args, codes, 2, &ret, &ret_code) == -1);
  const char* err = last_error();
  CHECK(strncmp(err, "TypeError: Expected 3 arguments when calling:", 45) == 0);
  CHECK(func_free(scale) == 0 && mod_free(mod) == 0);
  printf("ok: a tvm-ffi kernel ran and raised with libpolyffi loaded RTLD_LOCAL\n");
  return 0;
}
