/* Shared by the two relax-VM latency drivers (vm_bench_polyffi.c over polyffi's classic C API,
 * vm_bench_tvm027.c over TVM 0.27's tvm-ffi C API): reading a fixture run
 * (tests/tvm_models/tvm027/relax/<model>/b<B>_io.txt), timing, and the JSON line they print.
 * Each driver defines forward_once() (the VM's forward on prebuilt input tensors, result
 * released) and end_to_end_once() (host bytes copied in, forward, outputs copied out). */
#ifndef POLYFFI_BENCH_VM_BENCH_COMMON_H_
#define POLYFFI_BENCH_VM_BENCH_COMMON_H_

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kMaxTensors = 8, kMaxDims = 8, kRepeats = 9 };

typedef struct {
  char name[64];
  int code, bits, ndim;
  int64_t shape[kMaxDims];
  size_t nbytes;
  char* data; /* host bytes: the input, or TVM's expected output */
  char* host; /* outputs: where end_to_end_once() copies the result */
} BenchTensor;

static BenchTensor bench_inputs[kMaxTensors], bench_outputs[kMaxTensors];
static int bench_n_in, bench_n_out;
static char bench_library[1024];

static void bench_fail(const char* what, const char* detail) {
  fprintf(stderr, "vm_bench: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  exit(1);
}

static char* bench_read_file(const char* dir, const char* name, size_t* size) {
  char path[2048];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE* f = fopen(path, "rb");
  if (f == NULL) bench_fail("cannot open", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* data = aligned_alloc(64, ((size_t)n + 64) / 64 * 64);
  if (data == NULL || fread(data, 1, (size_t)n, f) != (size_t)n) bench_fail("cannot read", path);
  data[n] = 0;
  fclose(f);
  *size = (size_t)n;
  return data;
}

/* Parses DIR/IO_TXT; the library path becomes DIR/../<library>. */
static void bench_parse_run(const char* dir, const char* io_txt) {
  size_t size;
  char* io = bench_read_file(dir, io_txt, &size);
  char* save = NULL;
  for (char* line = strtok_r(io, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char kind[16], file[256];
    int n = 0, k = 0;
    if (sscanf(line, "%15s%n", kind, &n) != 1) continue;
    const char* rest = line + n;
    if (strcmp(kind, "library") == 0) {
      sscanf(rest, " %255s", file);
      snprintf(bench_library, sizeof(bench_library), "%s/../%s", dir, file);
    } else if (strcmp(kind, "input") == 0) {
      if (bench_n_in == kMaxTensors) bench_fail("too many inputs", io_txt);
      BenchTensor* t = &bench_inputs[bench_n_in++];
      sscanf(rest, "%63s %d %d %d%n", t->name, &t->code, &t->bits, &t->ndim, &k);
      rest += k;
      if (t->ndim > kMaxDims) bench_fail("too many dimensions", t->name);
      for (int i = 0; i < t->ndim; ++i) sscanf(rest, " %ld%n", (long*)&t->shape[i], &k), rest += k;
      sscanf(rest, " %255s", file);
      t->data = bench_read_file(dir, file, &t->nbytes);
    } else if (strcmp(kind, "output") == 0) {
      if (bench_n_out == kMaxTensors) bench_fail("too many outputs", io_txt);
      BenchTensor* t = &bench_outputs[bench_n_out++];
      long index;
      sscanf(rest, "%ld %zu %255s", &index, &t->nbytes, file);
      t->data = bench_read_file(dir, file, &size);
      if (size != t->nbytes) bench_fail("output size differs from io.txt", file);
      t->host = aligned_alloc(64, (t->nbytes + 64) / 64 * 64);
    }
  }
  free(io);
  if (bench_library[0] == 0 || bench_n_in == 0 || bench_n_out == 0) bench_fail("bad", io_txt);
}

/* After one end_to_end_once(): the copied-out outputs must equal TVM's bit for bit. */
static void bench_check_outputs(void) {
  for (int i = 0; i < bench_n_out; ++i)
    if (memcmp(bench_outputs[i].host, bench_outputs[i].data, bench_outputs[i].nbytes) != 0)
      bench_fail("output differs from TVM's reference", bench_outputs[i].name);
}

static double bench_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static int bench_cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Median (and in *best the minimum) ns per call of fn over kRepeats timed batches of about
 * min_ms each. */
static double bench_measure(void (*fn)(void), double min_ms, double* best) {
  long iters = 1;
  for (;;) { /* calibrate */
    double t0 = bench_now_ns();
    for (long i = 0; i < iters; ++i) fn();
    double dt = bench_now_ns() - t0;
    if (dt > min_ms * 1e6 / 4) {
      iters = (long)(iters * (min_ms * 1e6 / dt)) + 1;
      break;
    }
    iters *= 4;
  }
  double per[kRepeats];
  for (int r = 0; r < kRepeats; ++r) {
    double t0 = bench_now_ns();
    for (long i = 0; i < iters; ++i) fn();
    per[r] = (bench_now_ns() - t0) / iters;
  }
  qsort(per, kRepeats, sizeof(double), bench_cmp_double);
  *best = per[0];
  return per[kRepeats / 2];
}

static void forward_once(void);
static void end_to_end_once(void);

/* Fixed-count loops for callgrind: --toggle-collect=counted_forward_loop. */
__attribute__((noinline)) void counted_forward_loop(long n) {
  for (long i = 0; i < n; ++i) forward_once();
}
__attribute__((noinline)) void counted_end_to_end_loop(long n) {
  for (long i = 0; i < n; ++i) end_to_end_once();
}

/* Checks, warms up, times; prints one JSON line. */
static int bench_main_loop(double min_ms) {
  end_to_end_once();
  bench_check_outputs();
  for (int i = 0; i < 200; ++i) end_to_end_once(); /* warm caches, pools, the thread pool */
  bench_check_outputs();
  const char* count = getenv("BENCH_COUNT_ITERS");
  if (count != NULL) {
    counted_forward_loop(atol(count));
    counted_end_to_end_loop(atol(count));
    printf("{\"counted\": %ld}\n", atol(count));
    return 0;
  }
  double fwd_min, e2e_min;
  double fwd = bench_measure(forward_once, min_ms, &fwd_min);
  double e2e = bench_measure(end_to_end_once, min_ms, &e2e_min);
  printf(
      "{\"forward_ns\": %.1f, \"end_to_end_ns\": %.1f, \"forward_ns_min\": %.1f, "
      "\"end_to_end_ns_min\": %.1f}\n",
      fwd, e2e, fwd_min, e2e_min);
  return 0;
}

#endif /* POLYFFI_BENCH_VM_BENCH_COMMON_H_ */
