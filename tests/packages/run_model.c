/*
 * A C consumer of the packaged libpolyffi (ci/test-packages.sh builds it with pkg-config and with
 * find_package(polyffi CONFIG) on x86_64, and cross-compiles it for aarch64 to run under
 * qemu-user).
 *
 *   run_model graph MODEL_DIR EXPECTED_LIB_DIR
 *     the TVM 0.18 graph model MODEL_DIR/factory.so (one float32 input "data"): output 0 must equal
 *     MODEL_DIR/output_0.bin, which TVM's runtime wrote, byte for byte
 *   run_model relax LIBRARY INPUT OUTPUT EXPECTED_LIB_DIR
 *     a TVM 0.27 relax VM executable whose forward(data) takes one float32 [1, n] tensor: the
 * result must match OUTPUT within 1e-5 (relative to max(1, |expected|)), for a library compiled for
 *     another CPU than the one that recorded OUTPUT
 * Either way, the libpolyffi.so mapped into this process must be EXPECTED_LIB_DIR/libpolyffi.so.
 * Exits non-zero, with a message, on any difference.
 */
#define _DEFAULT_SOURCE
#include <limits.h>
#include <math.h>
#include <polyffi/c_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void Fail(const char* what) {
  fprintf(stderr, "run_model: %s: %s\n", what, TVMGetLastError());
  exit(1);
}

static char* ReadFile(const char* dir, const char* name, size_t* size) {
  char path[PATH_MAX];
  if (dir != NULL) {
    snprintf(path, sizeof(path), "%s/%s", dir, name);
  } else {
    snprintf(path, sizeof(path), "%s", name);
  }
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "run_model: cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* buf = (char*)malloc((size_t)n);
  if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "run_model: cannot read %s\n", path);
    exit(1);
  }
  fclose(f);
  *size = (size_t)n;
  return buf;
}

/* The path of the libpolyffi.so this process mapped, from /proc/self/maps. */
static void MappedLibrary(char* out, size_t cap) {
  FILE* maps = fopen("/proc/self/maps", "r");
  char line[PATH_MAX + 256];
  out[0] = '\0';
  while (maps != NULL && fgets(line, sizeof(line), maps) != NULL) {
    char* path = strchr(line, '/');
    if (path != NULL && strstr(path, "/libpolyffi.so") != NULL) {
      path[strcspn(path, "\n")] = '\0';
      snprintf(out, cap, "%s", path);
      break;
    }
  }
  if (maps != NULL) fclose(maps);
}

static size_t ByteSize(TVMArrayHandle a) {
  size_t n = (a->dtype.bits * a->dtype.lanes + 7) / 8;
  for (int i = 0; i < a->ndim; ++i) n *= (size_t)a->shape[i];
  return n;
}

static TVMFunctionHandle Func(TVMModuleHandle mod, const char* name) {
  TVMFunctionHandle f = NULL;
  if (TVMModGetFunction(mod, name, 0, &f) != 0 || f == NULL) Fail(name);
  return f;
}

/* The graph executor of a TVM 0.18 factory library: default(cpu), set_input, run, get_output(0). */
static char* RunGraph(const char* dir, size_t* out_size) {
  char factory_path[PATH_MAX];
  snprintf(factory_path, sizeof(factory_path), "%s/factory.so", dir);
  TVMModuleHandle lib = NULL, gm = NULL;
  if (TVMModLoadFromFile(factory_path, "so", &lib) != 0) Fail("TVMModLoadFromFile");
  TVMValue args[2], ret;
  int codes[2], ret_code;
  args[0].v_device.device_type = kDLCPU;
  args[0].v_device.device_id = 0;
  codes[0] = kDLDevice;
  TVMFunctionHandle create = Func(lib, "default");
  if (TVMFuncCall(create, args, codes, 1, &ret, &ret_code) != 0) Fail("default(cpu)");
  if (ret_code != kTVMModuleHandle) {
    fprintf(stderr, "run_model: default(cpu) returned type code %d, not a module\n", ret_code);
    exit(1);
  }
  gm = ret.v_handle;

  size_t in_size;
  char* input = ReadFile(dir, "input_data.bin", &in_size);
  int64_t in_shape[2] = {1, (int64_t)(in_size / sizeof(float))};
  TVMArrayHandle x = NULL;
  if (TVMArrayAlloc(in_shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &x) != 0) Fail("TVMArrayAlloc");
  if (TVMArrayCopyFromBytes(x, input, in_size) != 0) Fail("TVMArrayCopyFromBytes");

  TVMFunctionHandle set_input = Func(gm, "set_input"), run = Func(gm, "run");
  TVMFunctionHandle get_output = Func(gm, "get_output");
  args[0].v_str = "data";
  codes[0] = kTVMStr;
  args[1].v_handle = x;
  codes[1] = kTVMDLTensorHandle;
  if (TVMFuncCall(set_input, args, codes, 2, &ret, &ret_code) != 0) Fail("set_input");
  if (TVMFuncCall(run, NULL, NULL, 0, &ret, &ret_code) != 0) Fail("run");
  args[0].v_int64 = 0;
  codes[0] = kTVMArgInt;
  if (TVMFuncCall(get_output, args, codes, 1, &ret, &ret_code) != 0) Fail("get_output");
  if (ret_code != kTVMNDArrayHandle) {
    fprintf(stderr, "run_model: get_output(0) returned type code %d\n", ret_code);
    exit(1);
  }
  TVMArrayHandle y = ret.v_handle;
  *out_size = ByteSize(y);
  char* got = (char*)malloc(*out_size);
  if (TVMArrayCopyToBytes(y, got, *out_size) != 0) Fail("TVMArrayCopyToBytes");
  TVMArrayFree(y);
  TVMArrayFree(x);
  TVMFuncFree(set_input);
  TVMFuncFree(run);
  TVMFuncFree(get_output);
  TVMFuncFree(create);
  TVMModFree(gm);
  TVMModFree(lib);
  free(input);
  return got;
}

/* A TVM 0.27 relax VM executable: vm_load_executable, vm_initialization(cpu), forward(data). */
static char* RunRelax(const char* library, const char* input_path, size_t* out_size) {
  TVMModuleHandle lib = NULL, vm = NULL;
  if (TVMModLoadFromFile(library, "", &lib) != 0) Fail("TVMModLoadFromFile");
  TVMValue args[3], ret;
  int codes[3], ret_code;
  TVMFunctionHandle load = Func(lib, "vm_load_executable");
  if (TVMFuncCall(load, args, codes, 0, &ret, &ret_code) != 0) Fail("vm_load_executable");
  if (ret_code != kTVMModuleHandle) {
    fprintf(stderr, "run_model: vm_load_executable returned type code %d\n", ret_code);
    exit(1);
  }
  vm = ret.v_handle;
  args[0].v_int64 = kDLCPU, args[1].v_int64 = 0, args[2].v_int64 = 2; /* pooled allocator */
  codes[0] = codes[1] = codes[2] = kTVMArgInt;
  TVMFunctionHandle init = Func(vm, "vm_initialization"), forward = Func(vm, "forward");
  if (TVMFuncCall(init, args, codes, 3, &ret, &ret_code) != 0) Fail("vm_initialization");

  size_t in_size;
  char* input = ReadFile(NULL, input_path, &in_size);
  int64_t in_shape[2] = {1, (int64_t)(in_size / sizeof(float))};
  TVMArrayHandle x = NULL;
  if (TVMArrayAlloc(in_shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &x) != 0) Fail("TVMArrayAlloc");
  if (TVMArrayCopyFromBytes(x, input, in_size) != 0) Fail("TVMArrayCopyFromBytes");
  args[0].v_handle = x;
  codes[0] = kTVMDLTensorHandle;
  if (TVMFuncCall(forward, args, codes, 1, &ret, &ret_code) != 0) Fail("forward");
  if (ret_code != kTVMNDArrayHandle) {
    fprintf(stderr, "run_model: forward returned type code %d, not an NDArray\n", ret_code);
    exit(1);
  }
  TVMArrayHandle y = ret.v_handle;
  *out_size = ByteSize(y);
  char* got = (char*)malloc(*out_size);
  if (TVMArrayCopyToBytes(y, got, *out_size) != 0) Fail("TVMArrayCopyToBytes");
  TVMArrayFree(y);
  TVMArrayFree(x);
  TVMFuncFree(forward);
  TVMFuncFree(init);
  TVMFuncFree(load);
  TVMModFree(vm);
  TVMModFree(lib);
  free(input);
  return got;
}

int main(int argc, char** argv) {
  int graph = argc == 4 && strcmp(argv[1], "graph") == 0;
  int relax = argc == 6 && strcmp(argv[1], "relax") == 0;
  if (!graph && !relax) {
    fprintf(stderr,
            "usage: run_model graph MODEL_DIR EXPECTED_LIB_DIR\n"
            "       run_model relax LIBRARY INPUT OUTPUT EXPECTED_LIB_DIR\n");
    return 2;
  }
  size_t got_size, want_size;
  char* got = graph ? RunGraph(argv[2], &got_size) : RunRelax(argv[2], argv[3], &got_size);
  char* want =
      graph ? ReadFile(argv[2], "output_0.bin", &want_size) : ReadFile(NULL, argv[4], &want_size);
  if (got_size != want_size) {
    fprintf(stderr, "run_model: output has %zu bytes, TVM's has %zu\n", got_size, want_size);
    return 1;
  }
  double worst = 0;
  if (graph) {
    if (memcmp(got, want, want_size) != 0) {
      fprintf(stderr, "run_model: output 0 differs from TVM's output_0.bin\n");
      return 1;
    }
  } else {
    for (size_t i = 0; i < want_size / sizeof(float); ++i) {
      float g, w;
      memcpy(&g, got + i * sizeof(float), sizeof(float));
      memcpy(&w, want + i * sizeof(float), sizeof(float));
      double err = fabs((double)g - w) / fmax(1.0, fabs((double)w));
      if (!(err <= 1e-5)) {
        fprintf(stderr, "run_model: element %zu is %.9g, TVM's is %.9g\n", i, g, w);
        return 1;
      }
      worst = fmax(worst, err);
    }
  }

  const char* lib_dir = argv[argc - 1];
  char mapped[PATH_MAX], mapped_real[PATH_MAX], expected[PATH_MAX], expected_real[PATH_MAX];
  MappedLibrary(mapped, sizeof(mapped));
  snprintf(expected, sizeof(expected), "%s/libpolyffi.so", lib_dir);
  int packaged = mapped[0] != '\0' && realpath(mapped, mapped_real) != NULL &&
                 realpath(expected, expected_real) != NULL &&
                 strcmp(mapped_real, expected_real) == 0;
  free(got);
  free(want);
  if (!packaged) {
    fprintf(stderr, "run_model: runs %s, not the packaged %s\n", mapped, expected);
    return 1;
  }
  if (graph) {
    printf("run_model: output equals TVM's (%zu bytes); libpolyffi %s\n", want_size, mapped_real);
  } else {
    printf(
        "run_model: output matches TVM's (%zu floats, largest relative difference %.2g); "
        "libpolyffi %s\n",
        want_size / sizeof(float), worst, mapped_real);
  }
  return 0;
}
