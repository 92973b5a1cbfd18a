// Fuzz target: every registered global and every function of the loaded modules, called with
// arguments generated from the input.
//
// Setup (once): libpolyffi_testing, the test plugin, TVM 0.18's fixtures (a graph executor
// factory, its kernels, a graph executor, the TE kernel libraries) and TVM 0.27's (tvm-ffi
// kernel libraries, a relax VM executable and an initialised VM). Then the callees are every
// name TVMFuncListGlobalNames reports (minus kSkipped, each with its reason) and every function
// the pool's modules answer for a list of known method and kernel names.
//
// Arguments: every type code, unknown codes, objects and modules of every kind (often the wrong
// one), pool NDArrays (empty, scalar, bool, float16, vector lanes, a view with a byte offset),
// caller-made DLTensors with hostile fields (negative ndim or dims, sizes overflowing int64,
// zero-bit or zero-lane dtypes, NULL data, odd strides, byte offsets, devices), strings and
// bytes, and moved-from rvalue-reference slots (the one closed handle the ABI can detect: a
// slot holding NULL). Freed handles are not sent: a pointer to freed memory cannot be told
// from a live one through the C ABI.
//
// A caller-made DLTensor either fits the 4 KiB buffer it points into or is invalid in a way the
// callee can detect (as above); a tensor whose fields lie about a buffer it has no way to
// measure is the caller's undefined behaviour, not the runtime's, and is never sent.
//
// Properties: a failure returns -1 with a "Kind: message" error; a return is releasable; the
// pool's NDArrays keep their fields; nothing crashes, leaks or trips ASan/UBSan.
#include <fuzzer/FuzzedDataProvider.h>
#include <polyffi/dlpack_compat.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_common.h"

namespace {

// Globals not called, and why: their documented purpose makes arbitrary arguments unsafe or
// unbounded by design (every other registered global is called).
struct Skipped {
  const char* name;
  const char* reason;
};
const Skipped kSkipped[] = {
    {"testing.sleep_ms", "sleeps for the requested time"},
    {"testing.call_n", "calls its argument n times: run time grows with an integer argument"},
    {"testing.release_on_thread", "starts a thread that polls for up to 10 s per call"},
    {"runtime.ModuleSaveToFile", "writes a file at a caller-given path"},
    {"runtime.SaveParamsToFile", "writes a file at a caller-given path"},
    {"runtime.ModuleLoadFromFile",
     "dlopens a caller-given path: any library on the machine, constructors included"},
    {"runtime.module.loadfile_so", "dlopens a caller-given path (as above)"},
    {"runtime.LoadParamsFromFile", "reads a caller-given path (a FIFO or /dev/stdin blocks)"},
    {"ffi.Module.load_from_file.relax.VMExecutable", "dlopens a caller-given path (as above)"},
};

bool IsSkipped(const std::string& name) {
  for (const Skipped& s : kSkipped) {
    if (name == s.name) return true;
  }
  return false;
}

TVMValue Str(const char* s) {
  TVMValue v;
  v.v_str = s;
  return v;
}
TVMValue Int(int64_t i) {
  TVMValue v;
  v.v_int64 = i;
  return v;
}
TVMValue Handle(void* p) {
  TVMValue v;
  v.v_handle = p;
  return v;
}

// A setup call that must succeed; returns its value.
TVMValue Must(TVMFunctionHandle f, std::vector<TVMValue> v, std::vector<int> c, int* code) {
  TVMValue rv;
  int r = TVMFuncCall(f, v.data(), c.data(), static_cast<int>(v.size()), &rv, code);
  if (r != 0) {
    std::fprintf(stderr, "setup call failed: %s\n", TVMGetLastError());
    std::abort();
  }
  return rv;
}

TVMModuleHandle Load(const std::string& path) {
  TVMModuleHandle m = nullptr;
  if (TVMModLoadFromFile(path.c_str(), "", &m) != 0) {
    std::fprintf(stderr, "cannot load %s: %s\n", path.c_str(), TVMGetLastError());
    std::abort();
  }
  return m;
}

// A setup call of a module's function (released after the call).
TVMValue MustMod(TVMModuleHandle m, const char* name, std::vector<TVMValue> v, std::vector<int> c,
                 int* code) {
  TVMFunctionHandle f = nullptr;
  FUZZ_CHECK(TVMModGetFunction(m, name, 0, &f) == 0 && f != nullptr);
  TVMValue rv = Must(f, std::move(v), std::move(c), code);
  FUZZ_CHECK(TVMFuncFree(f) == 0);
  return rv;
}

int ReturnFirst(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void*) {
  if (n == 0) return 0;
  return TVMCFuncSetReturn(ret, &args[0], &codes[0], 1);
}

int Fails(TVMValue*, int*, int, TVMRetValueHandle, void*) {
  TVMAPISetLastError("ValueError: fuzz callback fails");
  return -1;
}

// Method names of the runtime's modules and the fixtures' kernel names.
const char* const kMethodNames[] = {
    // graph executor and its factory
    "set_input", "set_input_zero_copy", "set_output_zero_copy", "run", "run_from_inputs",
    "get_input", "get_output", "get_num_inputs", "get_num_outputs", "get_input_index",
    "get_output_index", "get_input_info", "get_output_info", "load_params", "share_params",
    "get_graph_json", "get_graph_params", "remove_params", "default",
    // relax VM and its executable
    "vm_load_executable", "vm_initialization", "invoke_stateful", "get_output_arity",
    "get_function_arity", "get_function_param_name", "save_function", "invoke_closure",
    "has_function", "as_text", "stats", "forward",
    // closures module, plugin module
    "echo", "add_y", "mul_y",
    // TVM 0.18 kernels (digits graph, TE kernels)
    "tvmgen_default_fused_nn_contrib_dense_pack_add",
    "tvmgen_default_fused_nn_contrib_dense_pack_add_nn_relu", "tvmgen_default_fused_nn_softmax",
    "vadd", "scale_shift", "host_call", "__tvm_main__",
    // TVM 0.27 kernels
    "elementwise", "main", "scale", "shift", "parallel", "callpacked"};

// TVM 0.27's tensor-cache directories: vm.builtin.tensor_cache.load reads them into the cache
// that tensor_cache.get and the param_*_from_cache* builtins look names up in.
#define FUZZ_TENSOR_CACHE_RAW POLYFFI_FUZZ_TVM027_DIR "/tensor_cache/raw"
#define FUZZ_TENSOR_CACHE_BF16 POLYFFI_FUZZ_TVM027_DIR "/tensor_cache/bf16"
// Strings worth sending besides random ones: names the callees look up.
const char* const kStrings[] = {
    "forward", "main", "default", "data", "float32", "int64", "bool", "global", "x", "", "echo",
    "run", "handle", "float16", "int8x4", "uint1", "plugin.AddOne",
    // parameters of TVM 0.27's tensor-cache directories
    "embed.weight", "proj.bf16", FUZZ_TENSOR_CACHE_RAW, FUZZ_TENSOR_CACHE_BF16};

struct Callee {
  std::string name;
  TVMFunctionHandle f;
};

constexpr size_t kBufBytes = 4096;

struct Pool {
  std::vector<Callee> callees;
  std::vector<void*> modules, functions, objects;  // objects: every object handle
  std::vector<TVMArrayHandle> arrays;
  std::vector<DLTensor> array_fields;  // each pool array's fields at setup
  alignas(64) unsigned char buf[kBufBytes];
  char opaque[16] = {};
};

void AddModule(Pool* p, TVMModuleHandle m) {
  p->modules.push_back(m);
  p->objects.push_back(m);
}
void AddObject(Pool* p, void* o) { p->objects.push_back(o); }

TVMArrayHandle AddArray(Pool* p, std::vector<int64_t> shape, DLDataType t) {
  TVMArrayHandle a = nullptr;
  FUZZ_CHECK(TVMArrayAlloc(shape.data(), static_cast<int>(shape.size()), t.code, t.bits, t.lanes,
                           kDLCPU, 0, &a) == 0);
  p->arrays.push_back(a);
  int code = 0;
  static TVMFunctionHandle obj = fuzz::Global("runtime.NDArrayObjectHandle");
  p->objects.push_back(Must(obj, {Handle(a)}, {kTVMNDArrayHandle}, &code).v_handle);
  return a;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Pool* MakePool() {
  auto* p = new Pool();
  std::memset(p->buf, 0x3f, sizeof(p->buf));
  TVMModuleHandle testing = fuzz::TestingLib();
  AddModule(p, testing);
  AddModule(p, Load(POLYFFI_FUZZ_LIB_DIR "/libpolyffi_test_plugin.so"));
  int code = 0;
  // Functions: fixtures' and C callbacks (one returning its argument, one failing).
  TVMFunctionHandle cb = nullptr, failing = nullptr;
  FUZZ_CHECK(TVMFuncCreateFromCFunc(ReturnFirst, nullptr, nullptr, &cb) == 0);
  FUZZ_CHECK(TVMFuncCreateFromCFunc(Fails, nullptr, nullptr, &failing) == 0);
  for (void* f : {fuzz::Global("testing.nop"), fuzz::Global("testing.echo"),
                  fuzz::Global("plugin.AddOne"), cb, failing}) {
    p->functions.push_back(f);
    p->objects.push_back(f);
  }
  AddModule(p, Must(fuzz::Global("runtime.ModuleFromFunctions"),
                    {Str("fuzz.M"), Str("echo"), Handle(p->functions[1])},
                    {kTVMStr, kTVMStr, kTVMPackedFuncHandle}, &code)
                   .v_handle);
  AddModule(p, Must(fuzz::Global("plugin.make_module"), {Int(3)}, {kTVMArgInt}, &code).v_handle);

  // TVM 0.18: the digits factory, a graph executor from it (params loaded), the kernels
  // library, a second executor from graph.json + kernels, and the TE kernel libraries.
  const std::string d18 = POLYFFI_FUZZ_TVM018_DIR;
  TVMModuleHandle factory = Load(d18 + "/digits_b1/factory.so");
  AddModule(p, factory);
  TVMValue dev;
  dev.v_device = {kDLCPU, 0};
  TVMModuleHandle exec = MustMod(factory, "default", {dev}, {kDLDevice}, &code).v_handle;
  AddModule(p, exec);
  TVMModuleHandle kernels = Load(d18 + "/digits_b1/kernels.so");
  AddModule(p, kernels);
  static std::string graph = ReadFile(d18 + "/digits_b1/graph.json");
  AddModule(p, Must(fuzz::Global("tvm.graph_executor.create"),
                    {Str(graph.c_str()), Handle(kernels), Int(kDLCPU), Int(0)},
                    {kTVMStr, kTVMModuleHandle, kTVMArgInt, kTVMArgInt}, &code)
                   .v_handle);
  for (const char* lib : {"vadd.so", "scale_shift.so", "host_call.so"}) {
    AddModule(p, Load(d18 + "/te_kernels/" + lib));
  }
  // TVM 0.27: kernel libraries, a relax executable (tuple output) and its initialised VM,
  // and a dynamic-batch executable (shape heap, make_shape).
  const std::string d27 = POLYFFI_FUZZ_TVM027_DIR;
  for (const char* lib : {"two_funcs.so", "elementwise.so", "parallel.so", "callpacked.so"}) {
    AddModule(p, Load(d27 + "/kernels/" + lib));
  }
  for (const char* lib : {"two_outputs.so", "dyn_batch.so"}) {
    TVMModuleHandle exe = Load(d27 + "/relax/" + lib);
    AddModule(p, exe);
    TVMModuleHandle vm = MustMod(exe, "vm_load_executable", {}, {}, &code).v_handle;
    AddModule(p, vm);
    MustMod(vm, "vm_initialization", {Int(kDLCPU), Int(0), Int(2)},
            {kTVMArgInt, kTVMArgInt, kTVMArgInt}, &code);
  }

  // NDArrays: plain, the digits input shape, empty, scalar, bool, float16, 4 lanes, and a view
  // with a byte offset.
  TVMArrayHandle f32 = AddArray(p, {3}, {kDLFloat, 32, 1});
  AddArray(p, {2}, {kDLInt, 64, 1});
  AddArray(p, {1, 64}, {kDLFloat, 32, 1});
  AddArray(p, {0}, {kDLFloat, 32, 1});
  AddArray(p, {2, 0, 3}, {kDLInt, 8, 1});
  AddArray(p, {}, {kDLFloat, 64, 1});
  AddArray(p, {4}, {kDLBool, 8, 1});
  AddArray(p, {2, 2}, {kDLFloat, 16, 1});
  AddArray(p, {2}, {kDLInt, 32, 4});
  AddArray(p, {1000}, {kDLFloat, 32, 1});
  {
    void* base = p->objects.back();  // the [1000] array's object handle
    TVMValue dt;
    dt.v_type = {kDLFloat, 32, 1};
    void* shape = Must(fuzz::Global("runtime.ShapeTuple"), {Int(2)}, {kTVMArgInt}, &code).v_handle;
    AddObject(p, shape);
    TVMArrayHandle view = static_cast<TVMArrayHandle>(
        Must(fuzz::Global("runtime.TVMArrayCreateView"), {Handle(base), Handle(shape), dt, Int(4)},
             {kTVMObjectHandle, kTVMObjectHandle, kTVMDataType, kTVMArgInt}, &code)
            .v_handle);
    // The view comes back as an NDArray handle.
    FUZZ_CHECK(code == kTVMNDArrayHandle);
    p->arrays.push_back(view);
    AddObject(p, Must(fuzz::Global("runtime.NDArrayObjectHandle"), {Handle(view)},
                      {kTVMNDArrayHandle}, &code)
                     .v_handle);
  }
  // Containers and strings.
  AddObject(p, Must(fuzz::Global("runtime.Array"), {Int(1), Str("a"), Handle(f32)},
                    {kTVMArgInt, kTVMStr, kTVMNDArrayHandle}, &code)
                   .v_handle);
  AddObject(
      p,
      Must(fuzz::Global("runtime.Map"), {Str("k"), Int(1)}, {kTVMStr, kTVMArgInt}, &code).v_handle);
  AddObject(p, Must(fuzz::Global("runtime.String"), {Str("forward")}, {kTVMStr}, &code).v_handle);
  AddObject(p, Must(fuzz::Global("runtime.ShapeTuple"), {Int(1), Int(64)}, {kTVMArgInt, kTVMArgInt},
                    &code)
                   .v_handle);
  AddObject(p, Must(fuzz::Global("runtime.Tuple"), {Int(7), Handle(f32)},
                    {kTVMArgInt, kTVMNDArrayHandle}, &code)
                   .v_handle);
  for (TVMArrayHandle a : p->arrays) p->array_fields.push_back(*a);

  // Callees: every global but the skipped ones, then every module function found.
  int n = 0;
  const char** names = nullptr;
  FUZZ_CHECK(TVMFuncListGlobalNames(&n, &names) == 0);
  std::set<std::string> sorted(names, names + n);
  for (const std::string& g : sorted) {
    if (IsSkipped(g)) continue;
    p->callees.push_back({g, fuzz::Global(g.c_str())});
  }
  for (size_t m = 0; m < p->modules.size(); ++m) {
    for (const char* name : kMethodNames) {
      TVMFunctionHandle f = nullptr;
      FUZZ_CHECK(TVMModGetFunction(p->modules[m], name, 1, &f) == 0);
      if (f != nullptr) p->callees.push_back({"module " + std::to_string(m) + "." + name, f});
    }
  }
  if (std::getenv("FUZZ_VERBOSE") != nullptr) {
    std::fprintf(stderr, "%zu callees, %zu modules, %zu objects\n", p->callees.size(),
                 p->modules.size(), p->objects.size());
    for (const Callee& c : p->callees) std::fprintf(stderr, "  %s\n", c.name.c_str());
  }
  return p;
}

// Storage that must outlive one call's arguments.
struct Scratch {
  std::vector<std::string> strings;
  std::vector<TVMByteArray> bytes;
  std::vector<void*> slots;
  std::vector<DLTensor> tensors;
  std::vector<std::vector<int64_t>> dims;
  Scratch() {
    strings.reserve(16);
    bytes.reserve(16);
    slots.reserve(16);
    tensors.reserve(16);
    dims.reserve(32);
  }
};

int64_t Palette(FuzzedDataProvider& in) {
  static const int64_t kInts[] = {0,         1,         2,         3,         4,
                                  7,         16,        64,        1000,      -1,
                                  -5,        INT64_MAX, INT64_MIN, 1LL << 31, 1LL << 32,
                                  1LL << 62, INT32_MAX, INT32_MIN, kDLCPU,    kDLCUDA};
  if (in.ConsumeBool()) return in.ConsumeIntegral<int64_t>();
  return kInts[in.ConsumeIntegralInRange<size_t>(0, sizeof(kInts) / sizeof(kInts[0]) - 1)];
}

bool MulOverflows(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }

// A caller-made tensor: either it fits the pool buffer, or it is invalid in a way a callee can
// see (negative ndim or dim, element count overflowing int64, zero bits or lanes, NULL data
// with elements). Anything else is rewritten into a 1-element float32 tensor.
DLTensor* HostileTensor(Pool* p, FuzzedDataProvider& in, Scratch& s) {
  DLTensor t{};
  t.ndim = in.ConsumeIntegralInRange<int32_t>(-2, 6);
  s.dims.emplace_back(8, 1);
  std::vector<int64_t>& shape = s.dims.back();
  int given = t.ndim > 0 ? t.ndim : 0;
  for (int i = 0; i < given; ++i) {
    shape[i] = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(0, 8) : Palette(in);
  }
  t.shape = shape.data();
  if (in.ConsumeBool()) {
    s.dims.emplace_back(8, 1);
    for (int i = 0; i < given; ++i) {
      s.dims.back()[i] = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(-2, 8) : Palette(in);
    }
    t.strides = s.dims.back().data();
  }
  static const DLDataType kTypes[] = {{kDLFloat, 32, 1}, {kDLInt, 64, 1},   {kDLInt, 8, 1},
                                      {kDLBool, 8, 1},   {kDLFloat, 16, 1}, {kDLUInt, 1, 1},
                                      {kDLFloat, 64, 1}, {kDLInt, 32, 4}};
  if (in.ConsumeBool()) {
    t.dtype = kTypes[in.ConsumeIntegralInRange<size_t>(0, 7)];
  } else {
    t.dtype.code = in.ConsumeIntegral<uint8_t>();
    t.dtype.bits = in.ConsumeIntegral<uint8_t>();
    t.dtype.lanes = in.ConsumeIntegral<uint16_t>();
  }
  int32_t dev_type = in.ConsumeBool() ? kDLCPU : in.ConsumeIntegral<int32_t>();
  std::memcpy(&t.device.device_type, &dev_type, sizeof(dev_type));
  t.device.device_id = in.ConsumeBool() ? 0 : in.ConsumeIntegral<int32_t>();
  static const uint64_t kOffsets[] = {0, 1, 4, 64, 4095, 1ULL << 63, UINT64_MAX};
  t.byte_offset = in.ConsumeBool() ? 0 : kOffsets[in.ConsumeIntegralInRange<size_t>(0, 6)];
  int data = in.ConsumeIntegralInRange<int>(0, 3);
  t.data = data == 0 ? nullptr : data == 1 ? static_cast<void*>(p->buf + 1) : p->buf;
  size_t avail = data == 1 ? kBufBytes - 1 : kBufBytes;

  // Detectably invalid?
  bool invalid = t.ndim < 0 || t.dtype.bits == 0 || t.dtype.lanes == 0;
  int64_t numel = 1;
  for (int i = 0; i < given && !invalid; ++i) {
    if (shape[i] < 0 || MulOverflows(numel, shape[i], &numel)) invalid = true;
  }
  if (!invalid && t.data == nullptr && numel > 0) invalid = true;
  if (invalid) {
    s.tensors.push_back(t);
    return &s.tensors.back();
  }
  // Otherwise it must fit: element offsets [lo, hi] times the element size, plus the offset.
  bool fits = numel == 0 ? t.byte_offset <= avail : false;
  // A dim or a stride beyond the buffer cannot fit (and would overflow the sums below).
  bool bounded = numel > 0 && t.data != nullptr;
  for (int i = 0; i < given && bounded; ++i) {
    const int64_t st = t.strides != nullptr ? t.strides[i] : 0;
    bounded = shape[i] <= static_cast<int64_t>(kBufBytes) &&
              (shape[i] == 1 ||
               (st >= -static_cast<int64_t>(kBufBytes) && st <= static_cast<int64_t>(kBufBytes)));
  }
  if (bounded) {
    const int64_t elem = (int64_t{t.dtype.bits} * t.dtype.lanes + 7) / 8;
    __int128 lo = 0, hi = 0;
    __int128 stride = 1;
    for (int i = given - 1; i >= 0; --i) {
      __int128 st = t.strides != nullptr ? t.strides[i] : stride;
      __int128 span = st * (shape[i] - 1);
      if (span < 0) {
        lo += span;
      } else {
        hi += span;
      }
      stride *= shape[i];
    }
    __int128 first = static_cast<__int128>(t.byte_offset) + lo * elem;
    __int128 end = static_cast<__int128>(t.byte_offset) + (hi + 1) * elem;
    fits = first >= 0 && end <= static_cast<__int128>(avail);
  }
  if (!fits) {
    t.ndim = 1;
    shape[0] = 1;
    t.strides = nullptr;
    t.dtype = {kDLFloat, 32, 1};
    t.byte_offset = 0;
    t.data = p->buf;
  }
  s.tensors.push_back(t);
  return &s.tensors.back();
}

void* Pick(const std::vector<void*>& v, FuzzedDataProvider& in) {
  return v[in.ConsumeIntegralInRange<size_t>(0, v.size() - 1)];
}

void MakeArg(Pool* p, FuzzedDataProvider& in, Scratch& s, TVMValue* v, int* code) {
  switch (in.ConsumeIntegralInRange<int>(0, 18)) {
    case 0:
      *code = kTVMArgInt, v->v_int64 = Palette(in);
      break;
    case 1:
      *code = kTVMArgInt, v->v_int64 = in.ConsumeIntegralInRange<int64_t>(-2, 8);
      break;
    case 2:
      *code = kTVMArgFloat, v->v_float64 = in.ConsumeFloatingPoint<double>();
      break;
    case 3:
      *code = in.ConsumeBool() ? kTVMArgBool : kDLUInt, v->v_int64 = Palette(in);
      break;
    case 4:
      if (in.ConsumeBool()) {
        s.strings.push_back(in.ConsumeRandomLengthString(64));
      } else {
        s.strings.push_back(
            kStrings[in.ConsumeIntegralInRange<size_t>(0, sizeof(kStrings) / sizeof(char*) - 1)]);
      }
      *code = kTVMStr, v->v_str = s.strings.back().c_str();
      break;
    case 5:
      s.strings.push_back(in.ConsumeRandomLengthString(256));
      s.bytes.push_back(TVMByteArray{s.strings.back().data(), s.strings.back().size()});
      *code = kTVMBytes, v->v_handle = &s.bytes.back();
      break;
    case 6:
      *code = kTVMDataType;
      v->v_type.code = in.ConsumeIntegral<uint8_t>();
      v->v_type.bits = in.ConsumeIntegral<uint8_t>();
      v->v_type.lanes = in.ConsumeIntegral<uint16_t>();
      break;
    case 7: {
      *code = kDLDevice;
      int32_t type = in.ConsumeBool() ? kDLCPU : in.ConsumeIntegral<int32_t>();
      std::memcpy(&v->v_device.device_type, &type, sizeof(type));
      v->v_device.device_id = in.ConsumeBool() ? 0 : in.ConsumeIntegral<int32_t>();
      break;
    }
    case 8:
      *code = kTVMNullptr, v->v_handle = nullptr;
      break;
    case 9:
      *code = kTVMOpaqueHandle, v->v_handle = p->opaque;
      break;
    case 10:
      *code = kTVMObjectHandle, v->v_handle = Pick(p->objects, in);
      break;
    case 11:
      *code = kTVMModuleHandle, v->v_handle = Pick(p->modules, in);
      break;
    case 12:
      *code = kTVMPackedFuncHandle, v->v_handle = Pick(p->functions, in);
      break;
    case 13:
    case 14:
      *code = kTVMNDArrayHandle;
      v->v_handle = p->arrays[in.ConsumeIntegralInRange<size_t>(0, p->arrays.size() - 1)];
      break;
    case 15:
      *code = kTVMDLTensorHandle;
      if (in.ConsumeBool()) {
        v->v_handle = p->arrays[in.ConsumeIntegralInRange<size_t>(0, p->arrays.size() - 1)];
      } else {
        v->v_handle = HostileTensor(p, in, s);
      }
      break;
    case 16: {
      // An rvalue-reference slot: a retained pool object, or a moved-from (NULL) slot.
      void* obj = in.ConsumeBool() ? Pick(p->objects, in) : nullptr;
      if (obj != nullptr) FUZZ_CHECK(TVMObjectRetain(obj) == 0);
      s.slots.push_back(obj);
      *code = kTVMObjectRValueRefArg, v->v_handle = &s.slots.back();
      break;
    }
    case 17:
      // An object of any kind sent under another handle code.
      *code = in.PickValueInArray({kTVMModuleHandle, kTVMPackedFuncHandle, kTVMNDArrayHandle});
      v->v_handle = Pick(p->objects, in);
      if (*code == kTVMNDArrayHandle) {
        // An NDArray handle is a DLTensor*, not an object pointer: only pool arrays are valid.
        v->v_handle = p->arrays[in.ConsumeIntegralInRange<size_t>(0, p->arrays.size() - 1)];
      }
      break;
    default: {
      const int unknown[] = {16, 20, 63, 64, 127, 128, 1000, -1, -100};
      *code = unknown[in.ConsumeIntegralInRange<int>(0, 8)];
      v->v_int64 = in.ConsumeIntegral<int64_t>();
      break;
    }
  }
}

void CheckArrays(const Pool* p) {
  for (size_t i = 0; i < p->arrays.size(); ++i) {
    const DLTensor& a = *p->arrays[i];
    const DLTensor& b = p->array_fields[i];
    FUZZ_CHECK(a.data == b.data && a.ndim == b.ndim && a.shape == b.shape &&
               a.strides == b.strides && a.byte_offset == b.byte_offset);
    FUZZ_CHECK(a.dtype.code == b.dtype.code && a.dtype.bits == b.dtype.bits &&
               a.dtype.lanes == b.dtype.lanes && a.device.device_type == b.device.device_type);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Pool* pool = MakePool();
  static const bool verbose = std::getenv("FUZZ_VERBOSE") != nullptr;
  FuzzedDataProvider in(data, size);
  int calls = in.ConsumeIntegralInRange<int>(1, 4);
  for (int c = 0; c < calls && in.remaining_bytes() > 0; ++c) {
    const Callee& callee =
        pool->callees[in.ConsumeIntegralInRange<size_t>(0, pool->callees.size() - 1)];
    Scratch s;
    int n = in.ConsumeIntegralInRange<int>(0, 7);
    std::vector<TVMValue> values(n);
    std::vector<int> codes(n);
    for (int i = 0; i < n; ++i) MakeArg(pool, in, s, &values[i], &codes[i]);
    if (verbose) {
      std::fprintf(stderr, "call %s codes", callee.name.c_str());
      for (int i = 0; i < n; ++i) std::fprintf(stderr, " %d", codes[i]);
      std::fprintf(stderr, "\n");
    }
    TVMValue rv;
    int rc = kTVMNullptr;
    int r = TVMFuncCall(callee.f, values.data(), codes.data(), n, &rv, &rc);
    if (r == 0) {
      fuzz::ReleaseReturn(rv, rc);
    } else {
      fuzz::CheckFailure(r);
    }
    for (void* obj : s.slots) {
      if (obj != nullptr) FUZZ_CHECK(TVMObjectFree(obj) == 0);
    }
    CheckArrays(pool);
  }
  return 0;
}
