/* A model compiled by TVM 0.18 with --system-lib, linked statically into this C program: its
 * objects register their kernels and packed import blob at start-up, runtime.SystemLib() returns
 * the GraphExecutorFactory, and default(cpu) runs it. The outputs must equal TVM's own, byte for
 * byte (FIXTURE_DIR/io.txt lists the tensors). Public C header only; exits non-zero on any
 * failure. */
#include <polyffi/c_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                            \
  do {                                                                                         \
    if ((call) != 0) {                                                                         \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, TVMGetLastError()); \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

static void* read_file(const char* name, size_t* size) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", FIXTURE_DIR, name);
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void* data = malloc(n > 0 ? (size_t)n : 1);
  if (data == NULL || fread(data, 1, (size_t)n, f) != (size_t)n) exit(1);
  fclose(f);
  *size = (size_t)n;
  return data;
}

/* f(args...) on a module's function; the result (if any) goes to ret. */
static void call(TVMModuleHandle mod, const char* name, TVMValue* args, int* codes, int n,
                 TVMValue* ret, int* ret_code) {
  TVMFunctionHandle f = NULL;
  TVMValue unused;
  int unused_code;
  CHECK(TVMModGetFunction(mod, name, 0, &f));
  if (f == NULL) {
    fprintf(stderr, "module has no function %s\n", name);
    exit(1);
  }
  CHECK(TVMFuncCall(f, args, codes, n, ret ? ret : &unused, ret_code ? ret_code : &unused_code));
  CHECK(TVMFuncFree(f));
}

int main(void) {
  TVMFunctionHandle system_lib = NULL, type_key = NULL;
  TVMValue v[2], ret;
  int c[2], ret_code;
  CHECK(TVMFuncGetGlobal("runtime.SystemLib", &system_lib));
  CHECK(TVMFuncCall(system_lib, v, c, 0, &ret, &ret_code));
  TVMModuleHandle factory = ret.v_handle;
  CHECK(TVMFuncGetGlobal("runtime.ModuleGetTypeKey", &type_key));
  v[0].v_handle = factory;
  c[0] = kTVMModuleHandle;
  CHECK(TVMFuncCall(type_key, v, c, 1, &ret, &ret_code));
  if (ret_code != kTVMStr || strcmp(ret.v_str, "GraphExecutorFactory") != 0) {
    fprintf(stderr, "runtime.SystemLib() is not the factory\n");
    return 1;
  }

  v[0].v_device.device_type = kDLCPU;
  v[0].v_device.device_id = 0;
  c[0] = kDLDevice;
  call(factory, "default", v, c, 1, &ret, &ret_code);
  TVMModuleHandle exec = ret.v_handle;

  char path[1024];
  snprintf(path, sizeof(path), "%s/io.txt", FIXTURE_DIR);
  FILE* io = fopen(path, "r");
  if (io == NULL) return 1;
  char kind[16], name[64], file[256];
  int checked = 0;
  while (fscanf(io, "%15s", kind) == 1) {
    if (strcmp(kind, "input") == 0) {
      int code, bits, ndim;
      int64_t shape[8];
      if (fscanf(io, "%63s %d %d %d", name, &code, &bits, &ndim) != 4 || ndim > 8) return 1;
      for (int i = 0; i < ndim; ++i) {
        if (fscanf(io, "%ld", &shape[i]) != 1) return 1;
      }
      if (fscanf(io, "%255s", file) != 1) return 1;
      TVMArrayHandle arr;
      size_t size;
      void* data = read_file(file, &size);
      CHECK(TVMArrayAlloc(shape, ndim, code, bits, 1, kDLCPU, 0, &arr));
      CHECK(TVMArrayCopyFromBytes(arr, data, size));
      v[0].v_str = name;
      c[0] = kTVMStr;
      v[1].v_handle = arr;
      c[1] = kTVMNDArrayHandle;
      call(exec, "set_input", v, c, 2, NULL, NULL);
      CHECK(TVMArrayFree(arr));
      free(data);
    } else if (strcmp(kind, "output") == 0) {
      static int ran = 0;
      if (!ran) call(exec, "run", v, c, 0, NULL, NULL), ran = 1;
      long index, nbytes;
      if (fscanf(io, "%ld %ld %255s", &index, &nbytes, file) != 3) return 1;
      v[0].v_int64 = index;
      c[0] = kTVMArgInt;
      call(exec, "get_output", v, c, 1, &ret, &ret_code);
      TVMArrayHandle out = ret.v_handle;
      size_t size;
      void* expected = read_file(file, &size);
      void* got = malloc(size);
      CHECK(TVMArrayCopyToBytes(out, got, size));
      if (size != (size_t)nbytes || memcmp(got, expected, size) != 0) {
        fprintf(stderr, "output %ld differs from TVM's\n", index);
        return 1;
      }
      ++checked;
      CHECK(TVMArrayFree(out));
      free(got);
      free(expected);
    } else {
      return 1;
    }
  }
  fclose(io);
  CHECK(TVMModFree(exec));
  CHECK(TVMModFree(factory));
  CHECK(TVMFuncFree(system_lib));
  CHECK(TVMFuncFree(type_key));
  if (checked == 0) return 1;
  printf("system library %s: %d output(s) equal to TVM's\n", FIXTURE_DIR, checked);
  return 0;
}
