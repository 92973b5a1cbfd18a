// bench_models: what the runtime adds around real work, measured next to that work in one run.
//
//   dlpack/nop/<size>      wrap a caller-owned float32 buffer as a DLManagedTensor,
//                          TVMArrayFromDLPack, testing.nop(array), TVMArrayFree (the producer's
//                          deleter runs): the zero-copy hand-over, which must not grow with size
//   ndarray/nop/<size>     testing.nop(an existing NDArray handle): no conversion at all
//   memcpy/<size>          memcpy of the same bytes: what a copying bridge would pay instead
//   digits/executor/...    the digits MLP through tvm.graph_executor (set_input, run, get_output)
//   digits/direct/...      the same two kernels called from C++ on preallocated arrays
//   parallel/launch/<n>    TVMBackendParallelLaunch summing n uint32 split across the pool
//   parallel/loop/<n>      the same sum as a plain loop on the calling thread
//
// Every case is checked once before timing (values, deleter counts, kernel outputs), so a fast
// wrong answer cannot be reported. Times are wall-clock (UseRealTime) because the parallel cases
// spend time on other threads. run_models.py turns the JSON output into medians and ratios.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <polyffi/c_backend_api.h>
#include <polyffi/c_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

// ---- Plumbing -----------------------------------------------------------------------------------

[[noreturn]] void Fail(const std::string& msg) {
  std::fprintf(stderr, "bench_models: %s\n", msg.c_str());
  std::exit(1);
}

inline void Check(int rc, const char* what) {
  if (__builtin_expect(rc != 0, 0)) Fail(std::string(what) + ": " + TVMGetLastError());
}

const char* EnvOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? v : fallback;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("cannot open " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// 64-byte aligned and touched once, so page faults never land inside a timed loop.
struct Buffer {
  explicit Buffer(size_t bytes) : size(bytes) {
    ptr = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (ptr == nullptr) Fail("out of memory allocating " + std::to_string(bytes) + " bytes");
    std::memset(ptr, 0x3f, bytes);
  }
  ~Buffer() { std::free(ptr); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* ptr;
  size_t size;
};

TVMFunctionHandle RequireGlobal(const char* name) {
  TVMFunctionHandle f = nullptr;
  Check(TVMFuncGetGlobal(name, &f), name);
  if (f == nullptr) Fail(std::string("global function ") + name + " is not registered");
  return f;
}

TVMFunctionHandle RequireModFunc(TVMModuleHandle mod, const char* name) {
  TVMFunctionHandle f = nullptr;
  Check(TVMModGetFunction(mod, name, 0, &f), name);
  if (f == nullptr) Fail(std::string("module has no function ") + name);
  return f;
}

TVMArrayHandle AllocFloat(std::vector<int64_t> shape) {
  TVMArrayHandle a = nullptr;
  Check(TVMArrayAlloc(shape.data(), static_cast<int>(shape.size()), kDLFloat, 32, 1, kDLCPU, 0, &a),
        "TVMArrayAlloc");
  return a;
}

// ---- DLPack pass-through vs memcpy --------------------------------------------------------------

struct Size {
  int64_t elements;
  const char* label;
};
constexpr Size kSizes[] = {{1, "1elem"}, {int64_t{1} << 18, "1MiB"}, {int64_t{1} << 26, "256MiB"}};
constexpr int64_t kMaxElements = int64_t{1} << 26;

// A producer's tensor: the buffer stays the caller's; the deleter only counts, as a real
// producer's would release its own reference.
struct CallerTensor {
  DLManagedTensor managed{};
  int64_t shape[1] = {0};
  int64_t deleter_calls = 0;
};

void CountingDeleter(DLManagedTensor* self) {
  ++static_cast<CallerTensor*>(self->manager_ctx)->deleter_calls;
}

// Fills the whole DLManagedTensor each time, as a producer exporting a fresh tensor does.
inline TVMArrayHandle ImportDLPack(CallerTensor* t, float* data, int64_t n) {
  t->shape[0] = n;
  DLTensor& dl = t->managed.dl_tensor;
  dl.data = data;
  dl.device = DLDevice{kDLCPU, 0};
  dl.ndim = 1;
  dl.dtype = DLDataType{kDLFloat, 32, 1};
  dl.shape = t->shape;
  dl.strides = nullptr;
  dl.byte_offset = 0;
  t->managed.manager_ctx = t;
  t->managed.deleter = CountingDeleter;
  TVMArrayHandle arr = nullptr;
  Check(TVMArrayFromDLPack(&t->managed, &arr), "TVMArrayFromDLPack");
  return arr;
}

inline void CallWithArray(TVMFunctionHandle f, TVMArrayHandle arr) {
  TVMValue arg, rv;
  arg.v_handle = arr;
  int code = kTVMNDArrayHandle, rc = -1;
  Check(TVMFuncCall(f, &arg, &code, 1, &rv, &rc), "testing.nop");
}

void VerifyDLPack(TVMFunctionHandle nop, float* data) {
  for (const Size& s : kSizes) {
    CallerTensor t;
    TVMArrayHandle arr = ImportDLPack(&t, data, s.elements);
    if (arr->data != data || arr->ndim != 1 || arr->shape[0] != s.elements) {
      Fail(std::string("TVMArrayFromDLPack copied or reshaped the ") + s.label + " tensor");
    }
    CallWithArray(nop, arr);
    if (t.deleter_calls != 0) Fail("the DLPack deleter ran while the array was alive");
    Check(TVMArrayFree(arr), "TVMArrayFree");
    if (t.deleter_calls != 1) Fail("the DLPack deleter did not run exactly once on free");
  }
}

void RegisterTransferCases(TVMFunctionHandle nop, float* src, float* dst) {
  for (const Size& s : kSizes) {
    const int64_t n = s.elements;
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    benchmark::RegisterBenchmark(
        (std::string("dlpack/nop/") + s.label).c_str(),
        [nop, src, n](benchmark::State& state) {
          CallerTensor t;
          for (auto _ : state) {
            TVMArrayHandle arr = ImportDLPack(&t, src, n);
            CallWithArray(nop, arr);
            Check(TVMArrayFree(arr), "TVMArrayFree");
          }
          if (t.deleter_calls != static_cast<int64_t>(state.iterations())) {
            state.SkipWithError("deleter count differs from the number of imports");
          }
        })
        ->UseRealTime();

    TVMArrayHandle owned = AllocFloat({n});  // lives for the whole process
    benchmark::RegisterBenchmark((std::string("ndarray/nop/") + s.label).c_str(),
                                 [nop, owned](benchmark::State& state) {
                                   for (auto _ : state) CallWithArray(nop, owned);
                                 })
        ->UseRealTime();

    benchmark::RegisterBenchmark(
        (std::string("memcpy/") + s.label).c_str(),
        [src, dst, bytes](benchmark::State& state) {
          for (auto _ : state) {
            void* d = dst;
            const void* sp = src;
            benchmark::DoNotOptimize(d);  // opaque pointers: the copy cannot be folded away
            benchmark::DoNotOptimize(sp);
            std::memcpy(d, sp, bytes);
            benchmark::ClobberMemory();
          }
          state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                                  static_cast<int64_t>(bytes));
        })
        ->UseRealTime();
  }
}

// ---- Digits: graph executor vs direct kernel calls ----------------------------------------------

constexpr int kFeatures = 64, kHidden = 32, kClasses = 10;
constexpr int64_t kHeldOut = 359;  // graph.json's batch: the whole held-out set

// One kernel call with prebuilt arguments (data, weight, bias, out), as the executor keeps them.
struct KernelCall {
  TVMFunctionHandle func = nullptr;     // from TVMModGetFunction
  TVMBackendPackedCFunc raw = nullptr;  // the exported symbol itself
  TVMValue args[4];
  int codes[4] = {kTVMNDArrayHandle, kTVMNDArrayHandle, kTVMNDArrayHandle, kTVMNDArrayHandle};

  void Bind(TVMArrayHandle a, TVMArrayHandle b, TVMArrayHandle c, TVMArrayHandle d) {
    args[0].v_handle = a, args[1].v_handle = b, args[2].v_handle = c, args[3].v_handle = d;
  }
  inline void Call() {
    TVMValue rv;
    int rc = kTVMNullptr;
    Check(TVMFuncCall(func, args, codes, 4, &rv, &rc), "kernel");
  }
  inline void CallRaw() {
    TVMValue rv;
    int rc = kTVMNullptr;
    if (__builtin_expect(raw(args, codes, 4, &rv, &rc, nullptr) != 0, 0)) {
      Fail(std::string("kernel: ") + TVMGetLastError());
    }
  }
};

struct Digits {
  int64_t batch = 0;
  TVMModuleHandle executor = nullptr;
  TVMFunctionHandle set_input = nullptr, run = nullptr, get_output = nullptr;
  TVMArrayHandle x = nullptr;     // the caller's input: the first `batch` held-out samples
  TVMArrayHandle out = nullptr;   // the caller's preallocated output
  TVMArrayHandle params[4] = {};  // p0..p3: the executor's storage (get_input 1..4)
  TVMArrayHandle in = nullptr, hidden = nullptr, probs = nullptr;  // the direct path's own
  KernelCall relu, softmax;
  std::vector<float> expected_probs;  // train.py's probabilities for those samples
  int32_t first_label = -1;

  // By name, as TVM's examples and demo.c do.
  void SetInput() {
    TVMValue a[2], rv;
    int c[2] = {kTVMStr, kTVMNDArrayHandle}, rc;
    a[0].v_str = "data";
    a[1].v_handle = x;
    Check(TVMFuncCall(set_input, a, c, 2, &rv, &rc), "set_input");
  }
  void SetInputByIndex() {
    TVMValue a[2], rv;
    int c[2] = {kTVMArgInt, kTVMNDArrayHandle}, rc;
    a[0].v_int64 = 0;
    a[1].v_handle = x;
    Check(TVMFuncCall(set_input, a, c, 2, &rv, &rc), "set_input");
  }
  void Run() {
    TVMValue rv;
    int rc;
    Check(TVMFuncCall(run, nullptr, nullptr, 0, &rv, &rc), "run");
  }
  void GetOutput() {
    TVMValue a[2], rv;
    int c[2] = {kTVMArgInt, kTVMNDArrayHandle}, rc;
    a[0].v_int64 = 0;
    a[1].v_handle = out;
    Check(TVMFuncCall(get_output, a, c, 2, &rv, &rc), "get_output");
  }
  // What a C++ caller without an executor does: copy the input in, call both kernels, the
  // second one writing straight into the caller's output.
  void DirectFull() {
    Check(TVMArrayCopyFromTo(x, in, nullptr), "TVMArrayCopyFromTo");
    relu.Call();
    softmax.Call();
  }
};

// lib: the loaded libdigits_model.so (TVMModLoadFromFile); so: the same library's dlopen handle.
Digits LoadDigits(TVMModuleHandle lib, void* so, const char* graph_file, int64_t batch) {
  Digits d;
  d.batch = batch;
  const std::string dir = EnvOr("DIGITS_MODEL_DIR", DIGITS_MODEL_DIR);
  const std::string graph = ReadFile(dir + "/" + graph_file);
  TVMFunctionHandle create = RequireGlobal("tvm.graph_executor.create");
  TVMValue a[4], rv;
  int c[4] = {kTVMStr, kTVMModuleHandle, kTVMArgInt, kTVMArgInt}, rc;
  a[0].v_str = graph.c_str();
  a[1].v_handle = lib;
  a[2].v_int64 = kDLCPU;
  a[3].v_int64 = 0;
  Check(TVMFuncCall(create, a, c, 4, &rv, &rc), "tvm.graph_executor.create");
  Check(TVMFuncFree(create), "TVMFuncFree");
  if (rc != kTVMModuleHandle) Fail("tvm.graph_executor.create did not return a module");
  d.executor = rv.v_handle;
  d.set_input = RequireModFunc(d.executor, "set_input");
  d.run = RequireModFunc(d.executor, "run");
  d.get_output = RequireModFunc(d.executor, "get_output");

  const std::string params = ReadFile(dir + "/params.bin");
  TVMFunctionHandle load_params = RequireModFunc(d.executor, "load_params");
  TVMByteArray blob{params.data(), params.size()};
  a[0].v_handle = &blob;
  c[0] = kTVMBytes;
  Check(TVMFuncCall(load_params, a, c, 1, &rv, &rc), "load_params");
  Check(TVMFuncFree(load_params), "TVMFuncFree");

  // The direct path uses the very weights the executor loaded (get_input returns its storage),
  // so both paths read the same memory.
  TVMFunctionHandle get_input = RequireModFunc(d.executor, "get_input");
  for (int i = 0; i < 4; ++i) {
    a[0].v_int64 = i + 1;
    c[0] = kTVMArgInt;
    Check(TVMFuncCall(get_input, a, c, 1, &rv, &rc), "get_input");
    if (rc != kTVMNDArrayHandle) Fail("get_input did not return an array");
    d.params[i] = static_cast<TVMArrayHandle>(rv.v_handle);
  }
  Check(TVMFuncFree(get_input), "TVMFuncFree");

  const std::string test_x = ReadFile(dir + "/test_x.bin");
  const std::string test_y = ReadFile(dir + "/test_y.bin");
  const std::string probs = ReadFile(dir + "/expected_probs.bin");
  const size_t x_bytes = batch * kFeatures * sizeof(float);
  const size_t p_bytes = batch * kClasses * sizeof(float);
  if (test_x.size() < x_bytes || test_y.size() < sizeof(int32_t) || probs.size() < p_bytes) {
    Fail("model files in " + dir + " hold fewer than " + std::to_string(batch) + " samples");
  }
  d.x = AllocFloat({batch, kFeatures});
  Check(TVMArrayCopyFromBytes(d.x, const_cast<char*>(test_x.data()), x_bytes),
        "TVMArrayCopyFromBytes");
  std::memcpy(&d.first_label, test_y.data(), sizeof(int32_t));
  d.expected_probs.resize(batch * kClasses);
  std::memcpy(d.expected_probs.data(), probs.data(), p_bytes);
  d.out = AllocFloat({batch, kClasses});
  d.in = AllocFloat({batch, kFeatures});
  d.hidden = AllocFloat({batch, kHidden});
  d.probs = AllocFloat({batch, kClasses});

  d.relu.func = RequireModFunc(lib, "fused_dense_bias_relu");
  d.softmax.func = RequireModFunc(lib, "fused_dense_bias_softmax");
  d.relu.raw = reinterpret_cast<TVMBackendPackedCFunc>(dlsym(so, "fused_dense_bias_relu"));
  d.softmax.raw = reinterpret_cast<TVMBackendPackedCFunc>(dlsym(so, "fused_dense_bias_softmax"));
  if (d.relu.raw == nullptr || d.softmax.raw == nullptr) Fail("kernel symbols not exported");
  d.relu.Bind(d.in, d.params[0], d.params[1], d.hidden);
  d.softmax.Bind(d.hidden, d.params[2], d.params[3], d.out);
  return d;
}

std::vector<float> ReadArray(TVMArrayHandle a, size_t n) {
  std::vector<float> v(n);
  Check(TVMArrayCopyToBytes(a, v.data(), n * sizeof(float)), "TVMArrayCopyToBytes");
  return v;
}

// Both paths must give the same bits, and match train.py's probabilities and label.
void VerifyDigits(Digits& d) {
  const size_t n = d.batch * kClasses;
  std::vector<float> zeros(n, 0.0f);
  Check(TVMArrayCopyFromBytes(d.out, zeros.data(), n * sizeof(float)), "clear");
  d.SetInput();
  d.Run();
  d.GetOutput();
  const std::vector<float> via_executor = ReadArray(d.out, n);

  Check(TVMArrayCopyFromBytes(d.out, zeros.data(), n * sizeof(float)), "clear");
  d.SetInputByIndex();
  d.Run();
  d.GetOutput();
  if (ReadArray(d.out, n) != via_executor) Fail("set_input by index and by name differ");

  Check(TVMArrayCopyFromBytes(d.out, zeros.data(), n * sizeof(float)), "clear");
  d.DirectFull();
  const std::vector<float> direct = ReadArray(d.out, n);

  Check(TVMArrayCopyFromBytes(d.out, zeros.data(), n * sizeof(float)), "clear");
  d.relu.CallRaw();
  d.softmax.CallRaw();
  const std::vector<float> raw = ReadArray(d.out, n);

  if (via_executor != direct || via_executor != raw) {
    Fail("graph executor and direct kernel calls disagree on the digits sample");
  }
  for (size_t i = 0; i < n; ++i) {
    if (std::fabs(via_executor[i] - d.expected_probs[i]) > 1e-5f) {
      Fail("digits probabilities differ from expected_probs.bin at sample " +
           std::to_string(i / kClasses) + ", class " + std::to_string(i % kClasses));
    }
  }
  int best = 0;
  for (int j = 1; j < kClasses; ++j) {
    if (via_executor[j] > via_executor[best]) best = j;
  }
  if (best != d.first_label) {
    Fail("digits sample 0 predicted " + std::to_string(best) + ", label " +
         std::to_string(d.first_label));
  }
}

template <typename Body>
void AddDigitsCase(const std::string& name, Body body) {
  benchmark::RegisterBenchmark(name.c_str(), [body](benchmark::State& state) {
    for (auto _ : state) body();
  })->UseRealTime();
}

// The head-to-head pairs, for any batch; prefix is "digits" (batch 1) or "digits_b<N>".
void RegisterDigitsPairs(const std::string& prefix, Digits* d) {
  AddDigitsCase(prefix + "/executor/full", [d] {
    d->SetInput();
    d->Run();
    d->GetOutput();
  });
  AddDigitsCase(prefix + "/direct/full", [d] { d->DirectFull(); });
  AddDigitsCase(prefix + "/executor/run", [d] { d->Run(); });
  AddDigitsCase(prefix + "/direct/kernels", [d] {
    d->relu.Call();
    d->softmax.Call();
  });
}

// Batch 1 also gets the cases that split the executor's overhead into its parts.
void RegisterDigitsBreakdown(Digits* d) {
  auto add = [](const char* name, auto body) { AddDigitsCase(name, body); };
  // The executor's get_output copies into the caller's array; this is the direct path paying
  // for the same copy, to split the executor's overhead into "dispatch" and "that copy".
  add("digits/direct/full_outcopy", [d] {
    Check(TVMArrayCopyFromTo(d->x, d->in, nullptr), "TVMArrayCopyFromTo");
    d->relu.Call();
    TVMArrayHandle keep = static_cast<TVMArrayHandle>(d->softmax.args[3].v_handle);
    d->softmax.args[3].v_handle = d->probs;
    d->softmax.Call();
    d->softmax.args[3].v_handle = keep;
    Check(TVMArrayCopyFromTo(d->probs, d->out, nullptr), "TVMArrayCopyFromTo");
  });
  add("digits/direct/kernels_raw", [d] {
    d->relu.CallRaw();
    d->softmax.CallRaw();
  });
  // Where the executor's extra time goes: each entry point alone, against the copy it makes.
  add("digits/executor/set_input", [d] { d->SetInput(); });
  add("digits/executor/set_input_by_index", [d] { d->SetInputByIndex(); });
  add("digits/executor/get_output", [d] { d->GetOutput(); });
  add("digits/direct/array_copy",
      [d] { Check(TVMArrayCopyFromTo(d->x, d->in, nullptr), "TVMArrayCopyFromTo"); });
}

// ---- Parallel launch vs a plain loop ------------------------------------------------------------

constexpr int kMaxTasks = 256;
constexpr int64_t kParallelSizes[] = {1000, 100000, 10000000};

// noinline: the loop and every task run the very same machine code.
__attribute__((noinline)) uint64_t SumRange(const uint32_t* data, int64_t begin, int64_t end) {
  uint64_t s = 0;
  for (int64_t i = begin; i < end; ++i) s += data[i];
  return s;
}

struct alignas(64) Partial {  // one cache line per task: no false sharing between tasks
  uint64_t value;
};

struct SumJob {
  const uint32_t* data = nullptr;
  int64_t n = 0;
  int tasks = 0;  // how many tasks the runtime actually ran
  Partial partial[kMaxTasks];
};

int SumTask(int task_id, TVMParallelGroupEnv* penv, void* cdata) {
  auto* job = static_cast<SumJob*>(cdata);
  const int64_t num_task = penv->num_task;
  if (num_task > kMaxTasks) {
    TVMAPISetLastError("ValueError: bench_models supports at most 256 parallel tasks");
    return -1;
  }
  const int64_t chunk = (job->n + num_task - 1) / num_task;
  const int64_t begin = std::min(job->n, task_id * chunk);
  const int64_t end = std::min(job->n, begin + chunk);
  job->partial[task_id].value = SumRange(job->data, begin, end);
  if (task_id == 0) job->tasks = static_cast<int>(num_task);
  return 0;
}

int EmptyTask(int, TVMParallelGroupEnv*, void*) { return 0; }

inline uint64_t ParallelSum(SumJob* job) {
  Check(TVMBackendParallelLaunch(SumTask, job, 0), "TVMBackendParallelLaunch");
  uint64_t total = 0;
  for (int t = 0; t < job->tasks; ++t) total += job->partial[t].value;
  return total;
}

void RegisterParallelCases(const uint32_t* data) {
  benchmark::RegisterBenchmark("parallel/launch/empty", [](benchmark::State& state) {
    for (auto _ : state) Check(TVMBackendParallelLaunch(EmptyTask, nullptr, 0), "launch");
  })->UseRealTime();
  for (int64_t n : kParallelSizes) {
    // Checked here, once per size: parallel and serial sums agree with a closed form.
    auto* job = new SumJob;  // lives for the whole process, like the registered cases
    job->data = data;
    job->n = n;
    uint64_t expect = 0;
    for (int64_t i = 0; i < n; ++i) expect += static_cast<uint64_t>(i % 1000);
    if (ParallelSum(job) != expect || SumRange(data, 0, n) != expect) {
      Fail("parallel sum over " + std::to_string(n) + " elements is wrong");
    }
    const std::string size = std::to_string(n);
    benchmark::RegisterBenchmark(("parallel/launch/" + size).c_str(), [job, expect](
                                                                          benchmark::State& state) {
      for (auto _ : state) {
        uint64_t s = ParallelSum(job);
        benchmark::DoNotOptimize(s);
      }
      state.counters["tasks"] = job->tasks;
      if (ParallelSum(job) != expect) state.SkipWithError("wrong");
    })->UseRealTime();
    benchmark::RegisterBenchmark(("parallel/loop/" + size).c_str(), [data,
                                                                     n](benchmark::State& state) {
      for (auto _ : state) {
        const uint32_t* p = data;
        benchmark::DoNotOptimize(p);
        uint64_t s = SumRange(p, 0, n);
        benchmark::DoNotOptimize(s);
      }
    })->UseRealTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  const char* testing_lib = EnvOr("POLYFFI_TESTING_LIB", POLYFFI_TESTING_LIB_PATH);
  TVMModuleHandle testing = nullptr;
  Check(TVMModLoadFromFile(testing_lib, "", &testing), testing_lib);
  TVMFunctionHandle nop = RequireGlobal("testing.nop");

  // Source and destination of the largest memcpy; the DLPack cases hand out the source.
  static Buffer src(kMaxElements * sizeof(float));
  static Buffer dst(kMaxElements * sizeof(float));
  VerifyDLPack(nop, static_cast<float*>(src.ptr));
  RegisterTransferCases(nop, static_cast<float*>(src.ptr), static_cast<float*>(dst.ptr));

  const char* digits_lib = EnvOr("DIGITS_MODEL_LIB", DIGITS_MODEL_LIB_PATH);
  TVMModuleHandle lib = nullptr;
  Check(TVMModLoadFromFile(digits_lib, "", &lib), digits_lib);
  // Already loaded by TVMModLoadFromFile: RTLD_NOLOAD only finds it, for the raw symbols.
  void* so = dlopen(digits_lib, RTLD_NOW | RTLD_NOLOAD);
  if (so == nullptr) Fail(std::string("dlopen(RTLD_NOLOAD) ") + digits_lib + ": " + dlerror());
  static Digits b1 = LoadDigits(lib, so, "graph_b1.json", 1);
  VerifyDigits(b1);
  RegisterDigitsPairs("digits", &b1);
  RegisterDigitsBreakdown(&b1);
  // The whole held-out set in one batch (graph.json): the same fixed executor cost, spread
  // over 359 samples' worth of kernel work.
  static Digits b359 = LoadDigits(lib, so, "graph.json", kHeldOut);
  VerifyDigits(b359);
  RegisterDigitsPairs("digits_b359", &b359);

  const int64_t max_n = kParallelSizes[std::size(kParallelSizes) - 1];
  static std::vector<uint32_t> values(static_cast<size_t>(max_n));
  for (int64_t i = 0; i < max_n; ++i) values[i] = static_cast<uint32_t>(i % 1000);
  RegisterParallelCases(values.data());

  const char* threads = std::getenv("TVM_NUM_THREADS");
  benchmark::AddCustomContext("TVM_NUM_THREADS", threads != nullptr ? threads : "(unset)");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
