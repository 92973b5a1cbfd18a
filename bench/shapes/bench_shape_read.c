/* Reading a runtime.ShapeTuple's dimensions over the C ABI, the two ways a binding can:
 *   bytes: one call of runtime.ShapeTupleBytes (what every binding does);
 *   elems: runtime.GetShapeTupleSize plus one runtime.GetShapeTupleElem per dimension (TVM's
 *          globals, the only way before runtime.ShapeTupleBytes).
 * Usage: bench_shape_read <bytes|elems> <ndim> <iterations>. Run it under callgrind with two
 * iteration counts and take the difference per iteration (bench/shapes/run_shape_read.py);
 * it prints the checksum of what it read so the loop cannot be dropped. Asserts nothing. */
#include <polyffi/c_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static TVMFunctionHandle Global(const char* name) {
  TVMFunctionHandle f = NULL;
  if (TVMFuncGetGlobal(name, &f) != 0 || f == NULL) {
    fprintf(stderr, "missing global %s\n", name);
    exit(1);
  }
  return f;
}

static void Check(int rc) {
  if (rc != 0) {
    fprintf(stderr, "%s\n", TVMGetLastError());
    exit(1);
  }
}

int main(int argc, char** argv) {
  if (argc != 4 || (strcmp(argv[1], "bytes") != 0 && strcmp(argv[1], "elems") != 0)) {
    fprintf(stderr, "usage: %s <bytes|elems> <ndim> <iterations>\n", argv[0]);
    return 2;
  }
  int use_bytes = strcmp(argv[1], "bytes") == 0;
  int ndim = atoi(argv[2]);
  long iterations = atol(argv[3]);
  if (ndim < 0 || ndim > 64 || iterations < 0) return 2;
  TVMFunctionHandle make = Global("runtime.ShapeTuple");
  TVMFunctionHandle bytes = Global("runtime.ShapeTupleBytes");
  TVMFunctionHandle size = Global("runtime.GetShapeTupleSize");
  TVMFunctionHandle elem = Global("runtime.GetShapeTupleElem");
  TVMValue dims[64];
  int codes[64];
  for (int i = 0; i < ndim; ++i) {
    dims[i].v_int64 = 3 + i;
    codes[i] = kTVMArgInt;
  }
  TVMValue shape;
  int shape_code = 0;
  Check(TVMFuncCall(make, dims, codes, ndim, &shape, &shape_code));
  int64_t out[64];
  int64_t checksum = 0;
  for (long it = 0; it < iterations; ++it) {
    TVMValue args[2], ret;
    int arg_codes[2] = {kTVMObjectHandle, kTVMArgInt}, ret_code = 0;
    args[0] = shape;
    int64_t n = 0;
    if (use_bytes) {
      Check(TVMFuncCall(bytes, args, arg_codes, 1, &ret, &ret_code));
      const TVMByteArray* arr = (const TVMByteArray*)ret.v_handle;
      n = (int64_t)(arr->size / sizeof(int64_t));
      memcpy(out, arr->data, arr->size);
    } else {
      Check(TVMFuncCall(size, args, arg_codes, 1, &ret, &ret_code));
      n = ret.v_int64;
      for (int64_t i = 0; i < n; ++i) {
        args[1].v_int64 = i;
        Check(TVMFuncCall(elem, args, arg_codes, 2, &ret, &ret_code));
        out[i] = ret.v_int64;
      }
    }
    for (int64_t i = 0; i < n; ++i) checksum += out[i];
  }
  TVMObjectFree(shape.v_handle);
  printf("%lld\n", (long long)checksum);
  return 0;
}
