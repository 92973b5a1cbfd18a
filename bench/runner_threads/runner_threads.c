/*
 * Throughput of the core's model runner against thread count: one loaded model, N threads
 * calling its thread-safe run at once (polyffi.runner.vm / polyffi.runner.graph), over the C ABI.
 *
 *   runner_threads vm    <model.so> <input.bin> <d0,d1,...> <threads> <seconds>
 *   runner_threads graph <factory.so> <input.bin> <d0,d1,...> <threads> <seconds>
 *       calls per second with that many threads (each call: one float32 input, new outputs);
 *   runner_threads vm|graph <model.so> <input.bin> <dims> count <n> [direct]
 *       n calls on one thread, for callgrind (`direct`: the VM's own function or the stateful
 *       executor instead of the runner, the baseline of the runner's own cost);
 *   runner_threads vm <model.so> <input.bin> <dims> <threads> <seconds> direct
 *       the threads share the runner's own VM, whose calls take its lock (one at a time).
 * Nothing here asserts performance; docs/reliability.md records the numbers and the load.
 */
#include <polyffi/c_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void check(int rc) {
  if (rc != 0) {
    fprintf(stderr, "runner_threads: %s\n", TVMGetLastError());
    exit(1);
  }
}

static void release(TVMValue v, int code) {
  if (code == kTVMNDArrayHandle) {
    check(TVMArrayFree((TVMArrayHandle)v.v_handle));
  } else if (code == kTVMObjectHandle || code == kTVMModuleHandle || code == kTVMPackedFuncHandle) {
    check(TVMObjectFree(v.v_handle));
  }
}

static TVMFunctionHandle module_function(TVMModuleHandle m, const char* name) {
  TVMFunctionHandle f = NULL;
  check(TVMModGetFunction(m, name, 0, &f));
  if (f == NULL) {
    fprintf(stderr, "runner_threads: no function %s\n", name);
    exit(1);
  }
  return f;
}

static int is_vm;
static TVMFunctionHandle run_fn; /* runner.run, or the baseline's function */
static int direct;               /* baseline: VM forward / executor set_input+run+get_output */
static TVMFunctionHandle set_input_fn, exec_run_fn, get_output_fn;
static TVMArrayHandle input;
static atomic_int stop;

static void one_call(void) {
  TVMValue v[2], rv;
  int c[2], rc;
  if (direct && !is_vm) {
    v[0].v_int64 = 0;
    v[1].v_handle = input;
    c[0] = kTVMArgInt;
    c[1] = kTVMNDArrayHandle;
    check(TVMFuncCall(set_input_fn, v, c, 2, &rv, &rc));
    check(TVMFuncCall(exec_run_fn, v, c, 0, &rv, &rc));
    check(TVMFuncCall(get_output_fn, v, c, 1, &rv, &rc));
  } else if (is_vm && !direct) {
    v[0].v_str = "forward";
    v[1].v_handle = input;
    c[0] = kTVMStr;
    c[1] = kTVMNDArrayHandle;
    check(TVMFuncCall(run_fn, v, c, 2, &rv, &rc));
  } else {
    v[0].v_handle = input;
    c[0] = kTVMNDArrayHandle;
    check(TVMFuncCall(run_fn, v, c, 1, &rv, &rc));
  }
  release(rv, rc);
}

static void* worker(void* arg) {
  long* calls = (long*)arg;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    one_call();
    ++*calls;
  }
  return NULL;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  if (argc < 7) {
    fprintf(stderr,
            "usage: runner_threads vm|graph <lib> <input.bin> <dims> <threads> <seconds>\n"
            "       runner_threads vm|graph <lib> <input.bin> <dims> count <n> [direct]\n");
    return 2;
  }
  is_vm = strcmp(argv[1], "vm") == 0;
  int64_t shape[8];
  int ndim = 0;
  for (char* tok = strtok(argv[4], ","); tok != NULL && ndim < 8; tok = strtok(NULL, ",")) {
    shape[ndim++] = atoll(tok);
  }
  check(TVMArrayAlloc(shape, ndim, kDLFloat, 32, 1, kDLCPU, 0, &input));
  size_t nbytes = 4;
  for (int i = 0; i < ndim; ++i) nbytes *= (size_t)shape[i];
  FILE* f = fopen(argv[3], "rb");
  if (f == NULL || fread(input->data, 1, nbytes, f) != nbytes) {
    fprintf(stderr, "runner_threads: cannot read %zu bytes from %s\n", nbytes, argv[3]);
    return 1;
  }
  fclose(f);

  TVMModuleHandle lib;
  check(TVMModLoadFromFile(argv[2], "", &lib));
  TVMFunctionHandle make;
  check(TVMFuncGetGlobal(is_vm ? "polyffi.runner.vm" : "polyffi.runner.graph", &make));
  TVMValue v[3], rv;
  int c[3] = {kTVMModuleHandle, kTVMArgInt, kTVMArgInt}, rc;
  v[0].v_handle = lib;
  v[1].v_int64 = kDLCPU;
  v[2].v_int64 = 0;
  check(TVMFuncCall(make, v, c, 3, &rv, &rc));
  TVMModuleHandle runner = rv.v_handle;
  run_fn = module_function(runner, "run");

  int counting = strcmp(argv[5], "count") == 0;
  direct = argc > 7 && strcmp(argv[7], "direct") == 0;
  if (direct && !counting && !is_vm) {
    fprintf(stderr, "runner_threads: the stateful graph executor is not thread-safe\n");
    return 2;
  }
  if (direct) {
    TVMFunctionHandle own = module_function(runner, is_vm ? "vm" : "executor");
    check(TVMFuncCall(own, v, c, 0, &rv, &rc));
    TVMModuleHandle m = rv.v_handle;
    if (is_vm) {
      run_fn = module_function(m, "forward");
    } else {
      set_input_fn = module_function(m, "set_input");
      exec_run_fn = module_function(m, "run");
      get_output_fn = module_function(m, "get_output");
    }
  }
  if (counting) {
    long n = atol(argv[6]);
    for (long i = 0; i < n; ++i) one_call();
    printf("%ld calls\n", n);
    return 0;
  }

  int threads = atoi(argv[5]);
  double seconds = atof(argv[6]);
  if (threads < 1 || threads > 64) return 2;
  for (int i = 0; i < 20; ++i) one_call(); /* warm up: the pool, the allocator */
  pthread_t tid[64];
  long calls[64] = {0};
  double t0 = now();
  for (int i = 0; i < threads; ++i) pthread_create(&tid[i], NULL, worker, &calls[i]);
  struct timespec nap = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
  nanosleep(&nap, NULL);
  atomic_store(&stop, 1);
  long total = 0;
  for (int i = 0; i < threads; ++i) {
    pthread_join(tid[i], NULL);
    total += calls[i];
  }
  double elapsed = now() - t0;
  TVMFunctionHandle pool_size = module_function(runner, "pool_size");
  check(TVMFuncCall(pool_size, v, c, 0, &rv, &rc));
  printf("%s%s threads=%d calls=%ld seconds=%.3f calls_per_s=%.1f pool=%lld\n", argv[1],
         direct ? "-locked" : "", threads, total, elapsed, (double)total / elapsed,
         (long long)rv.v_int64);
  return 0;
}
