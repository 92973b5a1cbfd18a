/* Latency of TVM-compiled models under one runtime, chosen at run time: libpolyffi or TVM's own
 * libtvm_runtime.so. Both export the classic C API, so this program dlopens the one named on the
 * command line (RTLD_LOCAL) and calls it through function pointers; run_tvm_compare.py runs it
 * once per runtime with the same fixtures and thread count and prints the ratios.
 *
 * usage: bench_tvm_compare RUNTIME_SO FIXTURE_DIR FORM [min_ms]
 *   FORM: factory (export_library + default(cpu)) or three (graph JSON + params + kernels)
 * Prints one JSON line: median ns per run() and per set_input+run+get_output, over repeats.
 * With BENCH_COUNT_ITERS=N it runs each loop N times untimed, for callgrind instead
 * (BENCH_COUNT_RUN_ONLY: only the run() loop). BENCH_WARMUP=N: warm-up runs (default 200). */
#include <dlfcn.h>
#include <polyffi/c_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The C API, resolved from the runtime under test. */
static struct {
  int (*ModLoadFromFile)(const char*, const char*, TVMModuleHandle*);
  int (*ModGetFunction)(TVMModuleHandle, const char*, int, TVMFunctionHandle*);
  int (*FuncGetGlobal)(const char*, TVMFunctionHandle*);
  int (*FuncCall)(TVMFunctionHandle, TVMValue*, int*, int, TVMValue*, int*);
  int (*ArrayAlloc)(const tvm_index_t*, int, int, int, int, int, int, TVMArrayHandle*);
  int (*ArrayCopyFromBytes)(TVMArrayHandle, void*, size_t);
  int (*ArrayCopyToBytes)(TVMArrayHandle, void*, size_t);
  int (*ArrayFree)(TVMArrayHandle);
  const char* (*GetLastError)(void);
} api;

static void die(const char* what) {
  fprintf(stderr, "bench_tvm_compare: %s: %s\n", what, api.GetLastError ? api.GetLastError() : "");
  exit(1);
}
#define CHECK(call) \
  if ((call) != 0) die(#call)

static void* sym(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (p == NULL) {
    fprintf(stderr, "bench_tvm_compare: runtime lacks %s\n", name);
    exit(1);
  }
  return p;
}

static char* read_file(const char* dir, const char* name, size_t* size) {
  char path[2048];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "bench_tvm_compare: cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* data = malloc((size_t)n + 1);
  if (fread(data, 1, (size_t)n, f) != (size_t)n) exit(1);
  data[n] = 0;
  fclose(f);
  *size = (size_t)n;
  return data;
}

static TVMFunctionHandle mod_func(TVMModuleHandle m, const char* name) {
  TVMFunctionHandle f = NULL;
  CHECK(api.ModGetFunction(m, name, 0, &f));
  if (f == NULL) die(name);
  return f;
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

enum { kMaxTensors = 8, kRepeats = 9 };
static struct {
  char name[64];
  TVMArrayHandle arr;
  size_t nbytes;
  char* expected;
} inputs[kMaxTensors], outputs[kMaxTensors];
static int n_in, n_out;
static TVMFunctionHandle f_set_input, f_run, f_get_output;

static void run_once(void) {
  TVMValue v[2], r;
  int c[2], rc;
  CHECK(api.FuncCall(f_run, v, c, 0, &r, &rc));
}

static void end_to_end_once(void) {
  TVMValue v[2], r;
  int c[2], rc;
  for (int i = 0; i < n_in; ++i) {
    v[0].v_str = inputs[i].name, c[0] = kTVMStr;
    v[1].v_handle = inputs[i].arr, c[1] = kTVMNDArrayHandle;
    CHECK(api.FuncCall(f_set_input, v, c, 2, &r, &rc));
  }
  CHECK(api.FuncCall(f_run, v, c, 0, &r, &rc));
  for (int i = 0; i < n_out; ++i) {
    v[0].v_int64 = i, c[0] = kTVMArgInt;
    v[1].v_handle = outputs[i].arr, c[1] = kTVMNDArrayHandle;
    CHECK(api.FuncCall(f_get_output, v, c, 2, &r, &rc));
  }
}

/* Fixed-count loops for instruction counting: valgrind --tool=callgrind
 * --toggle-collect=counted_run_loop (or counted_end_to_end_loop) counts only inside them. */
__attribute__((noinline)) void counted_run_loop(long n) {
  for (long i = 0; i < n; ++i) run_once();
}
__attribute__((noinline)) void counted_end_to_end_loop(long n) {
  for (long i = 0; i < n; ++i) end_to_end_once();
}

/* Median ns per call of fn over kRepeats timed batches of about min_ms each. */
static double measure(void (*fn)(void), double min_ms) {
  long iters = 1;
  for (;;) { /* calibrate */
    double t0 = now_ns();
    for (long i = 0; i < iters; ++i) fn();
    double dt = now_ns() - t0;
    if (dt > min_ms * 1e6 / 4) {
      iters = (long)(iters * (min_ms * 1e6 / dt)) + 1;
      break;
    }
    iters *= 4;
  }
  double per[kRepeats];
  for (int r = 0; r < kRepeats; ++r) {
    double t0 = now_ns();
    for (long i = 0; i < iters; ++i) fn();
    per[r] = (now_ns() - t0) / iters;
  }
  qsort(per, kRepeats, sizeof(double), cmp_double);
  return per[kRepeats / 2];
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s RUNTIME_SO FIXTURE_DIR factory|three [min_ms]\n", argv[0]);
    return 2;
  }
  const char* dir = argv[2];
  const char* form = argv[3];
  double min_ms = argc > 4 ? atof(argv[4]) : 40;
  void* rt = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (rt == NULL) {
    fprintf(stderr, "bench_tvm_compare: %s\n", dlerror());
    return 1;
  }
  *(void**)&api.ModLoadFromFile = sym(rt, "TVMModLoadFromFile");
  *(void**)&api.ModGetFunction = sym(rt, "TVMModGetFunction");
  *(void**)&api.FuncGetGlobal = sym(rt, "TVMFuncGetGlobal");
  *(void**)&api.FuncCall = sym(rt, "TVMFuncCall");
  *(void**)&api.ArrayAlloc = sym(rt, "TVMArrayAlloc");
  *(void**)&api.ArrayCopyFromBytes = sym(rt, "TVMArrayCopyFromBytes");
  *(void**)&api.ArrayCopyToBytes = sym(rt, "TVMArrayCopyToBytes");
  *(void**)&api.ArrayFree = sym(rt, "TVMArrayFree");
  *(void**)&api.GetLastError = sym(rt, "TVMGetLastError");

  TVMValue v[4], r;
  int c[4], rc;
  TVMModuleHandle exec;
  char path[2048];
  if (strcmp(form, "factory") == 0) {
    TVMModuleHandle lib;
    snprintf(path, sizeof(path), "%s/factory.so", dir);
    CHECK(api.ModLoadFromFile(path, "", &lib));
    v[0].v_device.device_type = kDLCPU, v[0].v_device.device_id = 0, c[0] = kDLDevice;
    CHECK(api.FuncCall(mod_func(lib, "default"), v, c, 1, &r, &rc));
    exec = r.v_handle;
  } else {
    TVMModuleHandle lib;
    TVMFunctionHandle create;
    size_t size;
    snprintf(path, sizeof(path), "%s/kernels.so", dir);
    CHECK(api.ModLoadFromFile(path, "", &lib));
    CHECK(api.FuncGetGlobal("tvm.graph_executor.create", &create));
    char* graph = read_file(dir, "graph.json", &size);
    v[0].v_str = graph, c[0] = kTVMStr;
    v[1].v_handle = lib, c[1] = kTVMModuleHandle;
    v[2].v_int64 = kDLCPU, c[2] = kTVMArgInt;
    v[3].v_int64 = 0, c[3] = kTVMArgInt;
    CHECK(api.FuncCall(create, v, c, 4, &r, &rc));
    exec = r.v_handle;
    char* params = read_file(dir, "params.bin", &size);
    TVMByteArray bytes = {params, size};
    v[0].v_handle = &bytes, c[0] = kTVMBytes;
    CHECK(api.FuncCall(mod_func(exec, "load_params"), v, c, 1, &r, &rc));
  }
  f_set_input = mod_func(exec, "set_input");
  f_run = mod_func(exec, "run");
  f_get_output = mod_func(exec, "get_output");

  size_t size;
  char* io = read_file(dir, "io.txt", &size);
  char* save = NULL;
  for (char* line = strtok_r(io, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char kind[16], file[256];
    int n = 0;
    if (sscanf(line, "%15s%n", kind, &n) != 1) continue;
    const char* rest = line + n;
    if (strcmp(kind, "input") == 0 && n_in < kMaxTensors) {
      int code, bits, ndim, k;
      tvm_index_t shape[8];
      sscanf(rest, "%63s %d %d %d%n", inputs[n_in].name, &code, &bits, &ndim, &k);
      rest += k;
      for (int i = 0; i < ndim && i < 8; ++i) sscanf(rest, " %ld%n", &shape[i], &k), rest += k;
      sscanf(rest, " %255s", file);
      char* data = read_file(dir, file, &inputs[n_in].nbytes);
      CHECK(api.ArrayAlloc(shape, ndim, code, bits, 1, kDLCPU, 0, &inputs[n_in].arr));
      CHECK(api.ArrayCopyFromBytes(inputs[n_in].arr, data, inputs[n_in].nbytes));
      free(data);
      ++n_in;
    } else if (strcmp(kind, "output") == 0 && n_out < kMaxTensors) {
      long index;
      sscanf(rest, "%ld %zu %255s", &index, &outputs[n_out].nbytes, file);
      outputs[n_out].expected = read_file(dir, file, &size);
      v[0].v_int64 = index, c[0] = kTVMArgInt;
      /* The output's type, then an array of our own for get_output(i, out) to fill (TVM's
       * one-argument get_output returns its internal storage, polyffi's a copy). */
      CHECK(api.FuncCall(f_get_output, v, c, 1, &r, &rc));
      DLTensor* t = r.v_handle;
      CHECK(api.ArrayAlloc(t->shape, t->ndim, t->dtype.code, t->dtype.bits, t->dtype.lanes, kDLCPU,
                           0, &outputs[n_out].arr));
      CHECK(api.ArrayFree(t));
      ++n_out;
    }
  }
  /* Check this runtime really computes TVM's outputs before timing it. */
  end_to_end_once();
  for (int i = 0; i < n_out; ++i) {
    char* got = malloc(outputs[i].nbytes);
    CHECK(api.ArrayCopyToBytes(outputs[i].arr, got, outputs[i].nbytes));
    if (memcmp(got, outputs[i].expected, outputs[i].nbytes) != 0) {
      fprintf(stderr, "bench_tvm_compare: output %d differs from TVM's reference\n", i);
      return 1;
    }
    free(got);
  }
  /* Warm caches and the thread pool (BENCH_WARMUP runs; fewer for large networks). */
  const char* warmup = getenv("BENCH_WARMUP");
  for (long i = 0, n = warmup ? atol(warmup) : 200; i < n; ++i) end_to_end_once();
  const char* count = getenv("BENCH_COUNT_ITERS");
  if (count != NULL) { /* instruction-count mode: no timing */
    counted_run_loop(atol(count));
    if (getenv("BENCH_COUNT_RUN_ONLY") == NULL) counted_end_to_end_loop(atol(count));
    printf("{\"counted\": %ld}\n", atol(count));
    return 0;
  }
  double run_ns = measure(run_once, min_ms);
  double e2e_ns = measure(end_to_end_once, min_ms);
  printf("{\"run_ns\": %.1f, \"end_to_end_ns\": %.1f}\n", run_ns, e2e_ns);
  return 0;
}
