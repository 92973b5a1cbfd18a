/* Latency of a TVM 0.27 relax VM executable under polyffi, through polyffi's classic C API only:
 * the same steps as polyffi.VirtualMachine / tvm.relax.VirtualMachine (TVMModLoadFromFile,
 * vm_load_executable, vm_initialization(kDLCPU, 0, pooled), then forward). Compared with
 * vm_bench_tvm027.c (TVM 0.27's own runtime) by run_tvm027_compare.py.
 *
 * usage: vm_bench_polyffi RUN_DIR IO_TXT [min_ms]
 *   RUN_DIR: tests/tvm_models/tvm027/relax/<model>; IO_TXT: b<B>_io.txt there.
 * Prints one JSON line (see vm_bench_common.h). */
#include <polyffi/c_runtime_api.h>

#include "vm_bench_common.h"

static TVMFunctionHandle f_forward, f_array_get_item;
static TVMArrayHandle in_arrays[kMaxTensors];

#define CHECK(call) \
  if ((call) != 0) bench_fail(#call, TVMGetLastError())

static TVMFunctionHandle mod_func(TVMModuleHandle m, const char* name) {
  TVMFunctionHandle f = NULL;
  CHECK(TVMModGetFunction(m, name, 0, &f));
  if (f == NULL) bench_fail("module has no function", name);
  return f;
}

static void release(TVMValue v, int code) {
  if (code == kTVMNDArrayHandle) {
    CHECK(TVMArrayFree(v.v_handle));
  } else if (code == kTVMObjectHandle) {
    CHECK(TVMObjectFree(v.v_handle));
  } else if (code == kTVMModuleHandle) {
    CHECK(TVMModFree(v.v_handle));
  } else if (code == kTVMPackedFuncHandle) {
    CHECK(TVMFuncFree(v.v_handle));
  }
}

static void forward(TVMValue* r, int* rc) {
  TVMValue v[kMaxTensors];
  int c[kMaxTensors];
  for (int i = 0; i < bench_n_in; ++i) v[i].v_handle = in_arrays[i], c[i] = kTVMNDArrayHandle;
  CHECK(TVMFuncCall(f_forward, v, c, bench_n_in, r, rc));
}

static void forward_once(void) {
  TVMValue r;
  int rc;
  forward(&r, &rc);
  release(r, rc);
}

static void end_to_end_once(void) {
  for (int i = 0; i < bench_n_in; ++i)
    CHECK(TVMArrayCopyFromBytes(in_arrays[i], bench_inputs[i].data, bench_inputs[i].nbytes));
  TVMValue r;
  int rc;
  forward(&r, &rc);
  if (rc == kTVMNDArrayHandle) {
    CHECK(TVMArrayCopyToBytes(r.v_handle, bench_outputs[0].host, bench_outputs[0].nbytes));
  } else if (rc == kTVMObjectHandle) {
    for (int i = 0; i < bench_n_out; ++i) {
      TVMValue a[2], item;
      int c[2] = {kTVMObjectHandle, kTVMArgInt}, ic;
      a[0].v_handle = r.v_handle, a[1].v_int64 = i;
      CHECK(TVMFuncCall(f_array_get_item, a, c, 2, &item, &ic));
      if (ic != kTVMNDArrayHandle) bench_fail("tuple item is not an NDArray", NULL);
      CHECK(TVMArrayCopyToBytes(item.v_handle, bench_outputs[i].host, bench_outputs[i].nbytes));
      release(item, ic);
    }
  } else {
    bench_fail("forward returned neither an NDArray nor an Array", NULL);
  }
  release(r, rc);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s RUN_DIR IO_TXT [min_ms]\n", argv[0]);
    return 2;
  }
  bench_parse_run(argv[1], argv[2]);
  double min_ms = argc > 3 ? atof(argv[3]) : 40;
  CHECK(TVMFuncGetGlobal("runtime.ArrayGetItem", &f_array_get_item));
  if (f_array_get_item == NULL) bench_fail("missing global", "runtime.ArrayGetItem");

  TVMModuleHandle lib;
  CHECK(TVMModLoadFromFile(bench_library, "", &lib));
  TVMValue v[3], r;
  int c[3], rc;
  CHECK(TVMFuncCall(mod_func(lib, "vm_load_executable"), v, c, 0, &r, &rc));
  if (rc != kTVMModuleHandle) bench_fail("vm_load_executable did not return a module", NULL);
  TVMModuleHandle vm = r.v_handle;
  v[0].v_int64 = kDLCPU, v[1].v_int64 = 0, v[2].v_int64 = 2; /* pooled allocator */
  c[0] = c[1] = c[2] = kTVMArgInt;
  CHECK(TVMFuncCall(mod_func(vm, "vm_initialization"), v, c, 3, &r, &rc));
  f_forward = mod_func(vm, "forward");
  for (int i = 0; i < bench_n_in; ++i) {
    const BenchTensor* t = &bench_inputs[i];
    CHECK(TVMArrayAlloc(t->shape, t->ndim, t->code, t->bits, 1, kDLCPU, 0, &in_arrays[i]));
    CHECK(TVMArrayCopyFromBytes(in_arrays[i], t->data, t->nbytes));
  }
  return bench_main_loop(min_ms);
}
