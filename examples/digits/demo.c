/*
 * Runs the digits MLP through polyffi's graph executor, using nothing but the public C header.
 *
 *   digits_demo [MODEL_DIR [MODEL_LIB]]
 *
 * MODEL_DIR holds what train.py wrote (graph.json, graph_b1.json, params.bin, test_x.bin,
 * test_y.bin, expected.json, expected_probs.bin); MODEL_LIB is libdigits_model.so. Both default
 * to the paths the build configured. Exits non-zero when any prediction differs from the
 * training script's, so it doubles as an end-to-end test.
 */
/* clock_gettime under strict C11. */
#define _POSIX_C_SOURCE 199309L

#include <math.h>
#include <polyffi/c_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef DIGITS_MODEL_DIR
#define DIGITS_MODEL_DIR "model"
#endif
#ifndef DIGITS_MODEL_LIB
#define DIGITS_MODEL_LIB "libdigits_model.so"
#endif

#define kFeatures 64
#define kClasses 10
/* Passes over the held-out set for the batch-1 latency measurement. */
#define kLatencyPasses 5

static void Die(const char* what) {
  fprintf(stderr, "digits_demo: %s failed: %s\n", what, TVMGetLastError());
  exit(1);
}

#define CHECK_CALL(expr)         \
  do {                           \
    if ((expr) != 0) Die(#expr); \
  } while (0)

/* Reads a whole file; the caller frees. Exits with a message when it cannot. */
static char* ReadFile(const char* dir, const char* name, size_t* size) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "digits_demo: cannot open %s (run train.py, or pass the model dir)\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* buf = (char*)malloc((size_t)n + 1);
  if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "digits_demo: cannot read %s\n", path);
    exit(1);
  }
  buf[n] = '\0';
  fclose(f);
  *size = (size_t)n;
  return buf;
}

/* The "predictions" list of expected.json (written by train.py as a flat list of ints). */
static int* ReadPredictions(const char* text, size_t count) {
  const char* p = strstr(text, "\"predictions\"");
  p = p ? strchr(p, '[') : NULL;
  if (p == NULL) {
    fprintf(stderr, "digits_demo: expected.json has no predictions list\n");
    exit(1);
  }
  int* out = (int*)malloc(count * sizeof(int));
  ++p;
  for (size_t i = 0; i < count; ++i) {
    char* end;
    out[i] = (int)strtol(p, &end, 10);
    if (end == p) {
      fprintf(stderr, "digits_demo: expected.json lists fewer than %zu predictions\n", count);
      exit(1);
    }
    p = end;
    while (*p == ',' || *p == ' ' || *p == '\n') ++p;
  }
  return out;
}

static TVMFunctionHandle ModFunc(TVMModuleHandle mod, const char* name) {
  TVMFunctionHandle f = NULL;
  CHECK_CALL(TVMModGetFunction(mod, name, 0, &f));
  if (f == NULL) {
    fprintf(stderr, "digits_demo: executor module has no function %s\n", name);
    exit(1);
  }
  return f;
}

/* The executor module's functions, looked up once. */
typedef struct {
  TVMModuleHandle mod;
  TVMFunctionHandle set_input, run, get_output, load_params;
} Executor;

static Executor CreateExecutor(TVMModuleHandle lib, const char* dir, const char* graph_name,
                               const char* params, size_t params_size) {
  size_t graph_size;
  char* graph = ReadFile(dir, graph_name, &graph_size);
  TVMFunctionHandle create = NULL;
  CHECK_CALL(TVMFuncGetGlobal("tvm.graph_executor.create", &create));
  if (create == NULL) {
    fprintf(stderr, "digits_demo: tvm.graph_executor.create is not registered\n");
    exit(1);
  }
  TVMValue args[4], ret;
  int codes[4] = {kTVMStr, kTVMModuleHandle, kTVMArgInt, kTVMArgInt}, ret_code;
  args[0].v_str = graph;
  args[1].v_handle = lib;
  args[2].v_int64 = kDLCPU;
  args[3].v_int64 = 0;
  CHECK_CALL(TVMFuncCall(create, args, codes, 4, &ret, &ret_code));
  TVMFuncFree(create);
  free(graph);
  if (ret_code != kTVMModuleHandle) {
    fprintf(stderr, "digits_demo: create returned type code %d, not a module\n", ret_code);
    exit(1);
  }
  Executor ex;
  ex.mod = ret.v_handle;
  ex.set_input = ModFunc(ex.mod, "set_input");
  ex.run = ModFunc(ex.mod, "run");
  ex.get_output = ModFunc(ex.mod, "get_output");
  ex.load_params = ModFunc(ex.mod, "load_params");

  TVMByteArray blob = {params, params_size};
  TVMValue a;
  int c = kTVMBytes;
  a.v_handle = &blob;
  CHECK_CALL(TVMFuncCall(ex.load_params, &a, &c, 1, &ret, &ret_code));
  return ex;
}

static void FreeExecutor(Executor* ex) {
  TVMFuncFree(ex->set_input);
  TVMFuncFree(ex->run);
  TVMFuncFree(ex->get_output);
  TVMFuncFree(ex->load_params);
  TVMModFree(ex->mod);
}

static void SetInput(const Executor* ex, TVMArrayHandle x) {
  TVMValue a[2], ret;
  int c[2] = {kTVMStr, kTVMNDArrayHandle}, ret_code;
  a[0].v_str = "data";
  a[1].v_handle = x;
  CHECK_CALL(TVMFuncCall(ex->set_input, a, c, 2, &ret, &ret_code));
}

static void Run(const Executor* ex) {
  TVMValue ret;
  int ret_code;
  CHECK_CALL(TVMFuncCall(ex->run, NULL, NULL, 0, &ret, &ret_code));
}

static void GetOutputInto(const Executor* ex, TVMArrayHandle out) {
  TVMValue a[2], ret;
  int c[2] = {kTVMArgInt, kTVMNDArrayHandle}, ret_code;
  a[0].v_int64 = 0;
  a[1].v_handle = out;
  CHECK_CALL(TVMFuncCall(ex->get_output, a, c, 2, &ret, &ret_code));
}

static int ArgMax(const float* row) {
  int best = 0;
  for (int j = 1; j < kClasses; ++j) {
    if (row[j] > row[best]) best = j;
  }
  return best;
}

static double NowMicros(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int CompareDouble(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : DIGITS_MODEL_DIR;
  const char* lib_path = argc > 2 ? argv[2] : DIGITS_MODEL_LIB;

  size_t x_size, y_size, expected_size, probs_size, params_size;
  float* test_x = (float*)ReadFile(dir, "test_x.bin", &x_size);
  int32_t* test_y = (int32_t*)ReadFile(dir, "test_y.bin", &y_size);
  char* expected_json = ReadFile(dir, "expected.json", &expected_size);
  float* expected_probs = (float*)ReadFile(dir, "expected_probs.bin", &probs_size);
  char* params = ReadFile(dir, "params.bin", &params_size);
  const size_t n = y_size / sizeof(int32_t);
  if (x_size != n * kFeatures * sizeof(float) || probs_size != n * kClasses * sizeof(float)) {
    fprintf(stderr, "digits_demo: test_x.bin / expected_probs.bin do not match %zu labels\n", n);
    return 1;
  }
  int* expected = ReadPredictions(expected_json, n);

  TVMModuleHandle lib = NULL;
  CHECK_CALL(TVMModLoadFromFile(lib_path, "", &lib));

  /* Whole held-out set in one batch. */
  Executor ex = CreateExecutor(lib, dir, "graph.json", params, params_size);
  tvm_index_t x_shape[2] = {(tvm_index_t)n, kFeatures};
  TVMArrayHandle x = NULL;
  CHECK_CALL(TVMArrayAlloc(x_shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &x));
  CHECK_CALL(TVMArrayCopyFromBytes(x, test_x, x_size));
  SetInput(&ex, x);
  Run(&ex);
  TVMValue a, ret;
  int c = kTVMArgInt, ret_code;
  a.v_int64 = 0;
  CHECK_CALL(TVMFuncCall(ex.get_output, &a, &c, 1, &ret, &ret_code));
  if (ret_code != kTVMNDArrayHandle) {
    fprintf(stderr, "digits_demo: get_output returned type code %d\n", ret_code);
    return 1;
  }
  TVMArrayHandle y = (TVMArrayHandle)ret.v_handle;
  float* probs = (float*)malloc(probs_size);
  CHECK_CALL(TVMArrayCopyToBytes(y, probs, probs_size));
  TVMArrayFree(y);

  size_t correct = 0, agree = 0;
  double max_diff = 0.0;
  for (size_t i = 0; i < n; ++i) {
    int pred = ArgMax(probs + i * kClasses);
    correct += pred == test_y[i];
    if (pred == expected[i]) {
      ++agree;
    } else {
      fprintf(stderr, "sample %zu: predicted %d, train.py predicted %d\n", i, pred, expected[i]);
    }
    for (int j = 0; j < kClasses; ++j) {
      double d = fabs((double)probs[i * kClasses + j] - expected_probs[i * kClasses + j]);
      if (d > max_diff) max_diff = d;
    }
  }

  /* Batch 1, one held-out sample at a time: set_input + run + get_output per inference. */
  Executor ex1 = CreateExecutor(lib, dir, "graph_b1.json", params, params_size);
  tvm_index_t x1_shape[2] = {1, kFeatures}, y1_shape[2] = {1, kClasses};
  TVMArrayHandle x1 = NULL, y1 = NULL;
  CHECK_CALL(TVMArrayAlloc(x1_shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &x1));
  CHECK_CALL(TVMArrayAlloc(y1_shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &y1));
  double* micros = (double*)malloc(n * kLatencyPasses * sizeof(double));
  size_t agree_b1 = 0;
  for (int pass = 0; pass < kLatencyPasses; ++pass) {
    for (size_t i = 0; i < n; ++i) {
      double t0 = NowMicros();
      CHECK_CALL(TVMArrayCopyFromBytes(x1, test_x + i * kFeatures, kFeatures * sizeof(float)));
      SetInput(&ex1, x1);
      Run(&ex1);
      GetOutputInto(&ex1, y1);
      micros[pass * n + i] = NowMicros() - t0;
      if (pass == 0) agree_b1 += ArgMax((const float*)y1->data) == expected[i];
    }
  }
  qsort(micros, n * kLatencyPasses, sizeof(double), CompareDouble);
  double median = micros[n * kLatencyPasses / 2];
  double p90 = micros[n * kLatencyPasses * 9 / 10];

  printf("held-out samples:        %zu\n", n);
  printf("accuracy:                %.4f (%zu/%zu correct)\n", (double)correct / n, correct, n);
  printf("agreement with train.py: %zu/%zu batched, %zu/%zu batch-1\n", agree, n, agree_b1, n);
  printf("max |prob - numpy prob|: %.3g\n", max_diff);
  printf(
      "batch-1 latency:         median %.2f us, p90 %.2f us (set_input+run+get_output, "
      "%d x %zu inferences)\n",
      median, p90, kLatencyPasses, n);

  TVMArrayFree(x);
  TVMArrayFree(x1);
  TVMArrayFree(y1);
  FreeExecutor(&ex);
  FreeExecutor(&ex1);
  TVMModFree(lib);
  free(micros);
  free(probs);
  free(expected);
  free(params);
  free(expected_probs);
  free(expected_json);
  free(test_y);
  free(test_x);
  if (agree != n || agree_b1 != n) {
    fprintf(stderr, "digits_demo: FAILED: predictions differ from train.py's\n");
    return 1;
  }
  return 0;
}
