/* Latency of a TVM 0.27 relax VM executable under TVM 0.27's own runtime, through the tvm-ffi C
 * API (libtvm_ffi.so + libtvm_runtime.so from the apache-tvm wheel): the reference the polyffi
 * driver (vm_bench_polyffi.c) is compared with. run_tvm027_compare.py compiles this file against
 * the installed wheel's headers at run time (they are never copied into this repository).
 *
 * usage: vm_bench_tvm027 LIBTVM_RUNTIME_SO RUN_DIR IO_TXT [min_ms]
 *   RUN_DIR: tests/tvm_models/tvm027/relax/<model>; IO_TXT: b<B>_io.txt there.
 * Same steps as tvm.relax.VirtualMachine(lib, tvm.cpu()): ffi.ModuleLoadFromFile,
 * vm_load_executable, vm_initialization(kDLCPU, 0, pooled), then forward. Prints one JSON line. */
#include <dlfcn.h>
#include <tvm/ffi/c_api.h>

#include "vm_bench_common.h"

static TVMFFIObjectHandle f_forward, f_array_get_item;
static TVMFFIObjectHandle in_tensors[kMaxTensors];

static void check(int rc, const char* what) {
  if (rc == 0) return;
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  if (err == NULL) bench_fail(what, "failed without an error");
  const TVMFFIErrorCell* cell = (const TVMFFIErrorCell*)((const char*)err + sizeof(TVMFFIObject));
  fprintf(stderr, "vm_bench_tvm027: %s: %.*s: %.*s\n", what, (int)cell->kind.size, cell->kind.data,
          (int)cell->message.size, cell->message.data);
  exit(1);
}

static void release(TVMFFIAny* v) {
  if (v->type_index >= kTVMFFIStaticObjectBegin && v->v_obj != NULL) TVMFFIObjectDecRef(v->v_obj);
}

static TVMFFIObjectHandle global(const char* name) {
  TVMFFIByteArray n = {name, strlen(name)};
  TVMFFIObjectHandle f = NULL;
  check(TVMFFIFunctionGetGlobal(&n, &f), name);
  if (f == NULL) bench_fail("missing global", name);
  return f;
}

static TVMFFIAny obj_arg(TVMFFIObjectHandle h, int32_t type_index) {
  TVMFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = type_index;
  a.v_obj = (TVMFFIObject*)h;
  return a;
}

static TVMFFIAny int_arg(int64_t v) {
  TVMFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = kTVMFFIInt;
  a.v_int64 = v;
  return a;
}

static TVMFFIAny call(TVMFFIObjectHandle f, TVMFFIAny* args, int n, const char* what) {
  TVMFFIAny r;
  memset(&r, 0, sizeof(r));
  r.type_index = kTVMFFINone;
  check(TVMFFIFunctionCall(f, args, n, &r), what);
  return r;
}

static TVMFFIObjectHandle mod_func(TVMFFIObjectHandle mod, const char* name) {
  static TVMFFIObjectHandle get;
  if (get == NULL) get = global("ffi.ModuleGetFunction");
  TVMFFIAny a[3] = {obj_arg(mod, kTVMFFIModule), {0}, {0}};
  a[1].type_index = kTVMFFIRawStr, a[1].v_c_str = name;
  a[2].type_index = kTVMFFIBool, a[2].v_int64 = 0;
  TVMFFIAny r = call(get, a, 3, name);
  if (r.type_index != kTVMFFIFunction) bench_fail("module has no function", name);
  return r.v_obj;
}

static DLTensor* dl(TVMFFIObjectHandle t) { return (DLTensor*)((char*)t + sizeof(TVMFFIObject)); }

static void free_managed(DLManagedTensor* m) {
  free(m->dl_tensor.data);
  free(m->dl_tensor.shape);
  free(m);
}

/* A CPU tensor owning a 64-byte-aligned copy of t's bytes (through DLPack). */
static TVMFFIObjectHandle make_tensor(const BenchTensor* t) {
  DLManagedTensor* m = calloc(1, sizeof(DLManagedTensor));
  m->dl_tensor.data = aligned_alloc(64, (t->nbytes + 64) / 64 * 64);
  memcpy(m->dl_tensor.data, t->data, t->nbytes);
  m->dl_tensor.device.device_type = kDLCPU;
  m->dl_tensor.ndim = t->ndim;
  m->dl_tensor.dtype.code = (uint8_t)t->code;
  m->dl_tensor.dtype.bits = (uint8_t)t->bits;
  m->dl_tensor.dtype.lanes = 1;
  m->dl_tensor.shape = malloc(sizeof(int64_t) * (t->ndim ? t->ndim : 1));
  memcpy(m->dl_tensor.shape, t->shape, sizeof(int64_t) * t->ndim);
  m->deleter = free_managed;
  TVMFFIObjectHandle out = NULL;
  check(TVMFFITensorFromDLPack(m, 64, 1, &out), "TVMFFITensorFromDLPack");
  return out;
}

static TVMFFIAny forward(void) {
  TVMFFIAny a[kMaxTensors];
  for (int i = 0; i < bench_n_in; ++i) a[i] = obj_arg(in_tensors[i], kTVMFFITensor);
  return call(f_forward, a, bench_n_in, "forward");
}

static void forward_once(void) {
  TVMFFIAny r = forward();
  release(&r);
}

static void copy_out(TVMFFIObjectHandle t, int i) {
  DLTensor* d = dl(t);
  memcpy(bench_outputs[i].host, (char*)d->data + d->byte_offset, bench_outputs[i].nbytes);
}

static void end_to_end_once(void) {
  for (int i = 0; i < bench_n_in; ++i) {
    DLTensor* d = dl(in_tensors[i]);
    memcpy((char*)d->data + d->byte_offset, bench_inputs[i].data, bench_inputs[i].nbytes);
  }
  TVMFFIAny r = forward();
  if (r.type_index == kTVMFFITensor) {
    copy_out(r.v_obj, 0);
  } else if (r.type_index == kTVMFFIArray) {
    for (int i = 0; i < bench_n_out; ++i) {
      TVMFFIAny a[2] = {obj_arg(r.v_obj, kTVMFFIArray), int_arg(i)};
      TVMFFIAny item = call(f_array_get_item, a, 2, "ffi.ArrayGetItem");
      if (item.type_index != kTVMFFITensor) bench_fail("tuple item is not a tensor", NULL);
      copy_out(item.v_obj, i);
      release(&item);
    }
  } else {
    bench_fail("forward returned neither a tensor nor an array", NULL);
  }
  release(&r);
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s LIBTVM_RUNTIME_SO RUN_DIR IO_TXT [min_ms]\n", argv[0]);
    return 2;
  }
  /* libtvm_runtime holds the relax VM, its builtins and the relax.VMExecutable loader; GLOBAL
   * as TVM's Python loads it (kernels import TVMFFIErrorSetRaisedFromCStrParts from the scope). */
  if (dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) == NULL) bench_fail("dlopen", dlerror());
  /* Its neighbour libtvm_runtime_extra.so registers the contrib kernels (tvm.contrib.sort.*,
   * tvm.contrib.random.*) that the runtime-library fixtures call; TVM's Python loads it too. */
  char extra[1024];
  const char* slash = strrchr(argv[1], '/');
  snprintf(extra, sizeof(extra), "%.*slibtvm_runtime_extra.so",
           slash ? (int)(slash - argv[1] + 1) : 0, argv[1]);
  if (dlopen(extra, RTLD_NOW | RTLD_GLOBAL) == NULL) bench_fail("dlopen", dlerror());
  bench_parse_run(argv[2], argv[3]);
  double min_ms = argc > 4 ? atof(argv[4]) : 40;
  f_array_get_item = global("ffi.ArrayGetItem");

  TVMFFIAny a[3];
  memset(a, 0, sizeof(a));
  a[0].type_index = kTVMFFIRawStr, a[0].v_c_str = bench_library;
  TVMFFIAny lib = call(global("ffi.ModuleLoadFromFile"), a, 1, bench_library);
  TVMFFIAny vm = call(mod_func(lib.v_obj, "vm_load_executable"), a, 0, "vm_load_executable");
  a[0] = int_arg(kDLCPU), a[1] = int_arg(0), a[2] = int_arg(2); /* pooled allocator */
  TVMFFIAny none = call(mod_func(vm.v_obj, "vm_initialization"), a, 3, "vm_initialization");
  release(&none);
  f_forward = mod_func(vm.v_obj, "forward");
  for (int i = 0; i < bench_n_in; ++i) in_tensors[i] = make_tensor(&bench_inputs[i]);
  return bench_main_loop(min_ms);
}
