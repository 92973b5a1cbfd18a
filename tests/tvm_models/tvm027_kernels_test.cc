// Kernel libraries compiled by Apache TVM 0.27 (tvm-ffi ABI, tests/tvm_models/tvm027/kernels)
// through the C ABI alone: every kernel reproduces TVM's own outputs bit for bit, TVM's error
// kinds and messages come back unchanged, a kernel calls a host global registered through
// TVMFuncRegisterGlobal, misaligned and offset tensors are staged (docs/abi-decisions.md), and
// the loader refuses what it cannot serve. Hand-made libraries (ffi_libs.c) cover the
// `__tvm_ffi__library_bin` reader's contract: ffi.Module.load_from_bytes.<kind>(bytes).
#include <gtest/gtest.h>
#include <polyffi/c_runtime_api.h>
#include <polyffi/dtype_string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fixture_util.h"

namespace {

using fixture::LastError;
using fixture::ParseDType;
using fixture::ReadFile;
using fixture::TypeKey;

using Json = nlohmann::json;
const std::string kDir = std::string(TVM027_DIR) + "/kernels";
const std::string kRelaxDir = std::string(TVM027_DIR) + "/relax";
const std::string kLibDir = FFI_LIB_DIR;

size_t Bytes(const std::vector<int64_t>& shape, DLDataType t) {
  size_t n = (t.bits * t.lanes + 7) / 8;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

// A CPU tensor in memory we place ourselves: `offset` bytes past a 64-byte boundary, reached
// either through data (as a DLTensor handle) or through byte_offset.
class Buffer {
 public:
  Buffer(std::vector<int64_t> shape, DLDataType t, size_t offset = 0, bool via_byte_offset = false)
      : shape_(std::move(shape)) {
    size_t n = Bytes(shape_, t);
    base_ = static_cast<char*>(std::aligned_alloc(64, (n + offset + 64) / 64 * 64 + 64));
    std::memset(base_, 0, n + offset);
    t_.data = via_byte_offset ? base_ : base_ + offset;
    t_.byte_offset = via_byte_offset ? offset : 0;
    t_.device = {kDLCPU, 0};
    t_.ndim = static_cast<int>(shape_.size());
    t_.dtype = t;
    t_.shape = shape_.data();
    t_.strides = nullptr;
    nbytes_ = n;
    offset_ = offset;
  }
  Buffer(const Buffer&) = delete;
  ~Buffer() { std::free(base_); }
  DLTensor* get() { return &t_; }
  char* bytes() { return base_ + offset_; }
  std::string str() const { return std::string(base_ + offset_, nbytes_); }
  void Fill(const std::string& b) {
    ASSERT_EQ(b.size(), nbytes_);
    std::memcpy(base_ + offset_, b.data(), b.size());
  }

 private:
  std::vector<int64_t> shape_;
  char* base_;
  DLTensor t_{};
  size_t nbytes_ = 0;
  size_t offset_ = 0;
};

struct Arg {
  TVMValue v;
  int code;
  static Arg Int(int64_t i) { return {{.v_int64 = i}, kTVMArgInt}; }
  static Arg Float(double d) { return {{.v_float64 = d}, kTVMArgFloat}; }
  static Arg Tensor(DLTensor* t) { return {{.v_handle = t}, kTVMDLTensorHandle}; }
  static Arg Nd(TVMArrayHandle t) { return {{.v_handle = t}, kTVMNDArrayHandle}; }
  static Arg Null() { return {{.v_handle = nullptr}, kTVMNullptr}; }
  static Arg Str(const char* s) { return {{.v_str = s}, kTVMStr}; }
  static Arg Mod(void* m) { return {{.v_handle = m}, kTVMModuleHandle}; }
};

// Calls f; returns "" on success, else the error text.
std::string Call(TVMFunctionHandle f, const std::vector<Arg>& args, TVMValue* ret = nullptr,
                 int* ret_code = nullptr) {
  std::vector<TVMValue> v;
  std::vector<int> c;
  for (const auto& a : args) v.push_back(a.v), c.push_back(a.code);
  TVMValue r;
  int rc_code = kTVMNullptr;
  int rc = TVMFuncCall(f, v.data(), c.data(), static_cast<int>(v.size()), ret ? ret : &r,
                       ret_code ? ret_code : &rc_code);
  return rc == 0 ? "" : LastError();
}

class Module {
 public:
  explicit Module(const std::string& path) {
    EXPECT_EQ(TVMModLoadFromFile(path.c_str(), "", &h_), 0) << LastError();
  }
  Module(const Module&) = delete;
  ~Module() {
    for (auto f : funcs_) TVMFuncFree(f);
    if (h_) TVMModFree(h_);
  }
  TVMModuleHandle get() const { return h_; }
  // The function (freed with the module), or null when missing.
  TVMFunctionHandle Get(const std::string& name, int query_imports = 0) {
    TVMFunctionHandle f = nullptr;
    EXPECT_EQ(TVMModGetFunction(h_, name.c_str(), query_imports, &f), 0) << LastError();
    if (f) funcs_.push_back(f);
    return f;
  }

 private:
  TVMModuleHandle h_ = nullptr;
  std::vector<TVMFunctionHandle> funcs_;
};

// ---- the host global callpacked.so calls: polyffi_test.add_bias(src, dst, bias) -------------

std::atomic<int> g_add_bias_calls{0};
std::atomic<bool> g_add_bias_fails{false};

int AddBias(TVMValue* args, int* codes, int n, TVMRetValueHandle, void*) {
  g_add_bias_calls++;
  if (g_add_bias_fails) {
    TVMAPISetLastError("ValueError: add_bias was told to fail");
    return -1;
  }
  if (n != 3 || codes[0] != kTVMDLTensorHandle || codes[1] != kTVMDLTensorHandle ||
      codes[2] != kTVMArgFloat) {
    TVMAPISetLastError("TypeError: add_bias(src: tensor, dst: tensor, bias: float)");
    return -1;
  }
  auto* src = static_cast<DLTensor*>(args[0].v_handle);
  auto* dst = static_cast<DLTensor*>(args[1].v_handle);
  for (int64_t i = 0; i < src->shape[0]; ++i) {
    static_cast<float*>(dst->data)[i] =
        static_cast<float*>(src->data)[i] + static_cast<float>(args[2].v_float64);
  }
  return 0;
}

void RegisterAddBias() {
  TVMFunctionHandle host = nullptr;
  ASSERT_OK(TVMFuncCreateFromCFunc(AddBias, nullptr, nullptr, &host));
  ASSERT_OK(TVMFuncRegisterGlobal("polyffi_test.add_bias", host, 1));
  TVMFuncFree(host);
}

Json Io() { return Json::parse(ReadFile(kDir + "/io.json")); }

// Runs one io.json case with the tensors `offset` bytes off alignment; returns the output.
std::string RunCase(const Json& c, size_t offset, bool via_byte_offset, std::string* err) {
  Module lib(kDir + "/" + c["library"].get<std::string>());
  TVMFunctionHandle f = lib.Get(c["function"]);
  if (f == nullptr) {
    *err = "no function";
    return "";
  }
  std::vector<std::unique_ptr<Buffer>> bufs;
  std::vector<Arg> args;
  for (const auto& a : c["args"]) {
    if (a.contains("file")) {
      bufs.push_back(std::make_unique<Buffer>(a["shape"].get<std::vector<int64_t>>(),
                                              ParseDType(a["dtype"]), offset, via_byte_offset));
      bufs.back()->Fill(ReadFile(kDir + "/" + a["file"].get<std::string>()));
      args.push_back(Arg::Tensor(bufs.back()->get()));
    } else if (a.contains("float")) {
      args.push_back(Arg::Float(a["float"]));
    } else {
      args.push_back(Arg::Int(a["int"]));
    }
  }
  const Json& o = c["output"];
  Buffer out(o["shape"].get<std::vector<int64_t>>(), ParseDType(o["dtype"]), offset,
             via_byte_offset);
  args.push_back(Arg::Tensor(out.get()));
  *err = Call(f, args);
  return out.str();
}

// ---- every kernel, TVM's outputs ------------------------------------------------------------

// First in the file: the library caches the host function once found, so the missing case
// must be seen before any test registers it. After registering, the same library works.
TEST(Tvm027Kernels, HostCallWithoutTheHostGlobalIsAClearErrorThenWorks) {
  TVMFuncRemoveGlobal("polyffi_test.add_bias");
  Json io = Io();
  const Json* c = nullptr;
  for (const auto& k : io["cases"]) {
    if (k["name"] == "callpacked") c = &k;
  }
  ASSERT_NE(c, nullptr);
  std::string err;
  RunCase(*c, 0, false, &err);
  EXPECT_NE(err.find("polyffi_test.add_bias"), std::string::npos) << err;
  EXPECT_EQ(err.rfind("AttributeError: ", 0), 0u) << err;
  RegisterAddBias();
  std::string out = RunCase(*c, 0, false, &err);
  EXPECT_EQ(err, "");
  EXPECT_TRUE(out == ReadFile(kDir + "/" + (*c)["output"]["file"].get<std::string>()));
}

TEST(Tvm027Kernels, EveryCaseMatchesTvm) {
  RegisterAddBias();
  Json io = Io();
  ASSERT_EQ(io["cases"].size(), 6u);
  int before = g_add_bias_calls;
  for (const auto& c : io["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    std::string err;
    std::string out = RunCase(c, 0, false, &err);
    ASSERT_EQ(err, "");
    EXPECT_TRUE(out == ReadFile(kDir + "/" + c["output"]["file"].get<std::string>()));
  }
  EXPECT_EQ(g_add_bias_calls - before, 1);  // callpacked reached the host global once
}

// NDArrays (kTVMNDArrayHandle) as well as plain DLTensor handles.
TEST(Tvm027Kernels, NDArrayArguments) {
  Module lib(kDir + "/two_funcs.so");
  TVMFunctionHandle scale = lib.Get("scale");
  ASSERT_NE(scale, nullptr);
  int64_t shape[1] = {333};
  TVMArrayHandle x = nullptr, y = nullptr;
  ASSERT_OK(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &x));
  ASSERT_OK(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &y));
  std::string in = ReadFile(kDir + "/scale_arg0.bin");
  ASSERT_OK(TVMArrayCopyFromBytes(x, in.data(), in.size()));
  EXPECT_EQ(Call(scale, {Arg::Nd(x), Arg::Float(2.5), Arg::Nd(y)}), "");
  std::string out(in.size(), '\0');
  ASSERT_OK(TVMArrayCopyToBytes(y, out.data(), out.size()));
  EXPECT_TRUE(out == ReadFile(kDir + "/scale_out.bin"));
  // An int for the float scalar is accepted, as TVM accepts it.
  EXPECT_EQ(Call(scale, {Arg::Nd(x), Arg::Int(2), Arg::Nd(y)}), "");
  EXPECT_EQ(static_cast<float*>(y->data)[5], static_cast<float*>(x->data)[5] * 2.0f);
  TVMArrayFree(x);
  TVMArrayFree(y);
}

TEST(Tvm027Kernels, FunctionNamesFollowTheFfiPrefixRule) {
  Module single(kDir + "/elementwise.so");
  EXPECT_NE(single.Get("elementwise"), nullptr);
  EXPECT_NE(single.Get("main"), nullptr);  // the weak __tvm_ffi_main
  EXPECT_EQ(single.Get("__tvm_ffi_main"), nullptr);
  EXPECT_EQ(single.Get("__truncsfhf2"), nullptr);  // fp16 helper, not a kernel
  EXPECT_EQ(single.Get("__tvm_main__"), nullptr);  // the classic entry does not exist here
  Module two(kDir + "/two_funcs.so");
  EXPECT_NE(two.Get("scale"), nullptr);
  EXPECT_NE(two.Get("shift"), nullptr);
  EXPECT_EQ(two.Get("main"), nullptr);  // two functions: no main
  EXPECT_EQ(two.Get("nope"), nullptr);
  // A kernel library's root is the library itself.
  const char* key = nullptr;
  TVMFunctionHandle type_key = nullptr;
  ASSERT_OK(TVMFuncGetGlobal("runtime.ModuleGetTypeKey", &type_key));
  TVMValue r;
  int code = 0;
  ASSERT_EQ(Call(type_key, {Arg::Mod(two.get())}, &r, &code), "");
  ASSERT_EQ(code, kTVMStr);
  key = r.v_str;
  EXPECT_STREQ(key, "library");
}

// Threads racing on first use: the kernel's host-function handle is initialised once
// (__TVMFFIHandleInitOnce), and staged (misaligned) calls and raised errors stay per thread.
TEST(Tvm027Threads, ConcurrentCallsFromFirstUse) {
  RegisterAddBias();
  Module callpacked(kDir + "/callpacked.so");
  Module two(kDir + "/two_funcs.so");
  TVMFunctionHandle host_call = callpacked.Get("callpacked");
  TVMFunctionHandle scale = two.Get("scale");
  ASSERT_TRUE(host_call && scale);
  const std::string in = ReadFile(kDir + "/scale_arg0.bin");
  const std::string expected = ReadFile(kDir + "/scale_out.bin");
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      DLDataType f32 = ParseDType("float32");
      for (int i = 0; i < 50; ++i) {
        Buffer a({64}, f32), c({64}, f32);
        for (int k = 0; k < 64; ++k) reinterpret_cast<float*>(a.bytes())[k] = float(t + k);
        if (Call(host_call, {Arg::Tensor(a.get()), Arg::Tensor(c.get())}) != "" ||
            reinterpret_cast<float*>(c.bytes())[9] != float(t + 9) + 3.5f) {
          failures++;
        }
        Buffer x({333}, f32, 4 * (1 + (t + i) % 15)), y({333}, f32, 8);
        x.Fill(in);
        if (Call(scale, {Arg::Tensor(x.get()), Arg::Float(2.5), Arg::Tensor(y.get())}) != "" ||
            y.str() != expected) {
          failures++;
        }
        std::string err = Call(scale, {Arg::Tensor(x.get()), Arg::Float(2.5)});
        if (err.rfind("TypeError: Expected 3 arguments", 0) != 0) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, 0);
}

// ---- TVM's errors ---------------------------------------------------------------------------

TEST(Tvm027Kernels, ErrorsCarryTvmsKindAndMessage) {
  Json errors = Io()["errors"];
  ASSERT_EQ(errors.size(), 6u);
  Module lib(kDir + "/two_funcs.so");
  TVMFunctionHandle scale = lib.Get("scale");
  TVMFunctionHandle shift = lib.Get("shift");
  ASSERT_TRUE(scale && shift);
  DLDataType f32 = ParseDType("float32"), f64 = ParseDType("float64"), i32 = ParseDType("int32");
  Buffer x({8}, f32), y({8}, f32), x64({8}, f64), x2d({2, 4}, f32), y9({9}, f32);
  Buffer xi({8}, i32), yi({8}, i32);
  auto expect = [&](const char* key, const std::string& got) {
    const Json& e = errors[key];
    EXPECT_EQ(got, e["kind"].get<std::string>() + ": " + e["message"].get<std::string>()) << key;
  };
  expect("scale_arity", Call(scale, {Arg::Tensor(x.get()), Arg::Float(1.0)}));
  expect("scale_dtype",
         Call(scale, {Arg::Tensor(x64.get()), Arg::Float(1.0), Arg::Tensor(y.get())}));
  expect("scale_ndim",
         Call(scale, {Arg::Tensor(x2d.get()), Arg::Float(1.0), Arg::Tensor(y.get())}));
  expect("scale_shape",
         Call(scale, {Arg::Tensor(x.get()), Arg::Float(1.0), Arg::Tensor(y9.get())}));
  expect("shift_float_for_int",
         Call(shift, {Arg::Tensor(xi.get()), Arg::Float(1.5), Arg::Tensor(yi.get())}));
  expect("scale_null_tensor", Call(scale, {Arg::Null(), Arg::Float(1.0), Arg::Tensor(y.get())}));
  // A NULL DLTensor handle is None too.
  expect("scale_null_tensor",
         Call(scale, {Arg::Tensor(nullptr), Arg::Float(1.0), Arg::Tensor(y.get())}));
  // What has no tvm-ffi form is refused before the kernel runs.
  std::string err = Call(scale, {Arg::Mod(lib.get()), Arg::Float(1.0), Arg::Tensor(y.get())});
  EXPECT_EQ(err.rfind("TypeError: scale: argument 0 is a", 0), 0u) << err;
  // After all of that the kernel still works, and the error slot is clean.
  EXPECT_EQ(Call(scale, {Arg::Tensor(x.get()), Arg::Float(1.0), Arg::Tensor(y.get())}), "");
}

TEST(Tvm027Kernels, HostErrorsPropagateThroughTheKernel) {
  RegisterAddBias();
  Module lib(kDir + "/callpacked.so");
  TVMFunctionHandle f = lib.Get("callpacked");
  ASSERT_NE(f, nullptr);
  Buffer a({64}, ParseDType("float32")), c({64}, ParseDType("float32"));
  g_add_bias_fails = true;
  std::string err = Call(f, {Arg::Tensor(a.get()), Arg::Tensor(c.get())});
  g_add_bias_fails = false;
  EXPECT_EQ(err, "ValueError: add_bias was told to fail");
  EXPECT_EQ(Call(f, {Arg::Tensor(a.get()), Arg::Tensor(c.get())}), "");
  EXPECT_EQ(reinterpret_cast<float*>(c.bytes())[7], 3.5f);
}

// ---- alignment (docs/abi-decisions.md): staged through an aligned copy ---------------------

class Tvm027Unaligned : public ::testing::TestWithParam<std::pair<size_t, bool>> {};

TEST_P(Tvm027Unaligned, EveryCaseMatchesTvm) {
  RegisterAddBias();
  const Json io = Io();  // kept alive: a range-for over Io()["cases"] would outlive it
  for (const auto& c : io["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    std::string err;
    std::string out = RunCase(c, GetParam().first, GetParam().second, &err);
    ASSERT_EQ(err, "");
    EXPECT_TRUE(out == ReadFile(kDir + "/" + c["output"]["file"].get<std::string>()));
  }
}

INSTANTIATE_TEST_SUITE_P(Offsets, Tvm027Unaligned,
                         ::testing::Values(std::make_pair(4, false), std::make_pair(8, false),
                                           std::make_pair(16, false), std::make_pair(4, true),
                                           std::make_pair(64, true), std::make_pair(128, true)),
                         [](const auto& info) {
                           return std::to_string(info.param.first) +
                                  (info.param.second ? "_byte_offset" : "_data");
                         });

// Unchanged inputs are not written back: a read-only, misaligned input works.
TEST(Tvm027Kernels, ReadOnlyMisalignedInputIsNeverWritten) {
  Module lib(kDir + "/two_funcs.so");
  TVMFunctionHandle scale = lib.Get("scale");
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::string in = ReadFile(kDir + "/scale_arg0.bin");
  ASSERT_LT(in.size() + 4, page);
  void* mem = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  std::memcpy(static_cast<char*>(mem) + 4, in.data(), in.size());
  ASSERT_EQ(mprotect(mem, page, PROT_READ), 0);
  int64_t shape[1] = {333};
  DLTensor x{static_cast<char*>(mem) + 4, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
  Buffer y({333}, ParseDType("float32"), 4);
  EXPECT_EQ(Call(scale, {Arg::Tensor(&x), Arg::Float(2.5), Arg::Tensor(y.get())}), "");
  EXPECT_TRUE(y.str() == ReadFile(kDir + "/scale_out.bin"));
  munmap(mem, page);
}

// The same misaligned buffer as input and output (in place) behaves like TVM's aligned call.
TEST(Tvm027Kernels, InPlaceOnAMisalignedBuffer) {
  Module lib(kDir + "/two_funcs.so");
  TVMFunctionHandle scale = lib.Get("scale");
  Buffer x({333}, ParseDType("float32"), 12);
  x.Fill(ReadFile(kDir + "/scale_arg0.bin"));
  EXPECT_EQ(Call(scale, {Arg::Tensor(x.get()), Arg::Float(2.5), Arg::Tensor(x.get())}), "");
  EXPECT_TRUE(x.str() == ReadFile(kDir + "/scale_out.bin"));
}

TEST(Tvm027Kernels, MisalignedStridedTensorIsRefused) {
  Module lib(kDir + "/parallel.so");
  TVMFunctionHandle f = lib.Get("parallel");
  Buffer x({37, 64}, ParseDType("float64"), 8), y({37, 64}, ParseDType("float64"));
  int64_t strides[2] = {1, 37};  // column-major: not compact
  x.get()->strides = strides;
  std::string err = Call(f, {Arg::Tensor(x.get()), Arg::Tensor(y.get())});
  EXPECT_EQ(err.rfind("ValueError: parallel: argument 0 is a strided tensor", 0), 0u) << err;
}

// ---- loader refusals and the library_bin reader (ffi_libs.c) --------------------------------

std::string LoadError(const std::string& path) {
  TVMModuleHandle h = nullptr;
  if (TVMModLoadFromFile(path.c_str(), "", &h) == 0) {
    TVMModFree(h);
    return "";
  }
  return LastError();
}

TEST(Tvm027Loader, RefusesASlotItCannotFill) {
  std::string path = kLibDir + "/libffi_unknown_slot.so";
  std::string err = LoadError(path);
  EXPECT_NE(err.find("__TVMFFIEnvTensorAlloc"), std::string::npos) << err;
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_EQ(LoadError(path), err);  // refused again, not half loaded
}

TEST(Tvm027Loader, RefusesAnImportItDoesNotProvide) {
  std::string err = LoadError(kLibDir + "/libffi_unknown_import.so");
  EXPECT_NE(err.find("TVMFFIFunctionGetGlobal"), std::string::npos) << err;
}

// A task of a parallel loop raising on a pool thread: the kernel's caller gets the error.
TEST(Tvm027Loader, ErrorRaisedInAParallelTaskReachesTheCaller) {
  Module lib(kLibDir + "/libffi_parallel_raise.so");
  TVMFunctionHandle f = lib.Get("parallel_raise");
  ASSERT_NE(f, nullptr);
  for (int i = 0; i < 3; ++i) {
    std::string err = Call(f, {});
    EXPECT_TRUE(err == "ValueError: task N refused" || err == "ValueError: task 0 refused") << err;
  }
}

// polyffi_test.echo modules: the loader receives exactly one argument, the bytes.
int EchoLoader(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void*) {
  if (n != 1 || codes[0] != kTVMBytes) {
    TVMAPISetLastError("TypeError: load_from_bytes takes one bytes argument");
    return -1;
  }
  auto* b = static_cast<TVMByteArray*>(args[0].v_handle);
  // runtime.ModuleFromFunctions("polyffi_test.echo", "payload", <() -> the bytes as str>)
  std::string* payload = new std::string(b->data, b->size);
  TVMFunctionHandle get = nullptr;
  auto body = [](TVMValue*, int*, int, TVMRetValueHandle r, void* res) {
    TVMValue v;
    v.v_str = static_cast<std::string*>(res)->c_str();
    int code = kTVMStr;
    return TVMCFuncSetReturn(r, &v, &code, 1);
  };
  if (TVMFuncCreateFromCFunc(
          body, payload, [](void* p) { delete static_cast<std::string*>(p); }, &get) != 0) {
    return -1;
  }
  TVMFunctionHandle make = nullptr;
  TVMFuncGetGlobal("runtime.ModuleFromFunctions", &make);
  TVMValue a[3];
  int c[3] = {kTVMStr, kTVMStr, kTVMPackedFuncHandle};
  a[0].v_str = "polyffi_test.echo";
  a[1].v_str = "payload";
  a[2].v_handle = get;
  TVMValue rv;
  int rc_code = 0;
  int rc = TVMFuncCall(make, a, c, 3, &rv, &rc_code);
  TVMFuncFree(get);
  if (rc != 0) return -1;
  rc = TVMCFuncSetReturn(ret, &rv, &rc_code, 1);
  TVMModFree(rv.v_handle);
  return rc;
}

void RegisterEcho() {
  TVMFunctionHandle f = nullptr;
  ASSERT_OK(TVMFuncCreateFromCFunc(EchoLoader, nullptr, nullptr, &f));
  ASSERT_OK(TVMFuncRegisterGlobal("ffi.Module.load_from_bytes.polyffi_test.echo", f, 1));
  TVMFuncFree(f);
}

std::vector<TVMModuleHandle> Imports(TVMModuleHandle m) {
  TVMFunctionHandle size = nullptr, get = nullptr;
  TVMFuncGetGlobal("runtime.ModuleImportsSize", &size);
  TVMFuncGetGlobal("runtime.ModuleGetImport", &get);
  TVMValue r;
  int code = 0;
  EXPECT_EQ(Call(size, {Arg::Mod(m)}, &r, &code), "");
  std::vector<TVMModuleHandle> out;
  for (int64_t i = 0; i < r.v_int64; ++i) {
    TVMValue m2;
    int c2 = 0;
    EXPECT_EQ(Call(get, {Arg::Mod(m), Arg::Int(i)}, &m2, &c2), "");
    out.push_back(m2.v_handle);
  }
  return out;
}

std::string Payload(TVMModuleHandle m) {
  TVMFunctionHandle f = nullptr;
  EXPECT_EQ(TVMModGetFunction(m, "payload", 0, &f), 0);
  if (f == nullptr) return "<none>";
  TVMValue r;
  int code = 0;
  EXPECT_EQ(Call(f, {}, &r, &code), "");
  TVMFuncFree(f);
  return r.v_str;
}

TEST(Tvm027LibraryBin, TreeRootIsModuleZeroAndImportsFollowTheCsr) {
  RegisterEcho();
  Module root(kLibDir + "/libffi_bin_tree.so");
  ASSERT_NE(root.get(), nullptr);
  EXPECT_EQ(TypeKey(root.get()), "polyffi_test.echo");
  EXPECT_EQ(Payload(root.get()), "abc");
  std::vector<TVMModuleHandle> imports = Imports(root.get());
  ASSERT_EQ(imports.size(), 2u);
  EXPECT_EQ(TypeKey(imports[0]), "library");
  EXPECT_EQ(TypeKey(imports[1]), "polyffi_test.echo");
  EXPECT_EQ(Payload(imports[1]), "de");
  std::vector<TVMModuleHandle> inner = Imports(imports[1]);
  ASSERT_EQ(inner.size(), 1u);
  EXPECT_EQ(inner[0], imports[0]);  // one library module, imported twice
  // The kernel is reachable from the root through the imports, as TVM's Executable finds it.
  EXPECT_NE(root.Get("answer", 1), nullptr);
  EXPECT_EQ(root.Get("answer", 0), nullptr);
  for (auto m : inner) TVMModFree(m);
  for (auto m : imports) TVMModFree(m);
}

struct BadBin {
  const char* library;
  const char* expected;
};
class Tvm027BadLibraryBin : public ::testing::TestWithParam<BadBin> {};

TEST_P(Tvm027BadLibraryBin, FailsWithAClearError) {
  RegisterEcho();
  const std::string path = kLibDir + "/lib" + GetParam().library + ".so";
  std::string err = LoadError(path);
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find(GetParam().expected), std::string::npos) << err;
  EXPECT_EQ(LoadError(path), err);
}

INSTANTIATE_TEST_SUITE_P(
    Blobs, Tvm027BadLibraryBin,
    ::testing::Values(BadBin{"ffi_bin_no_loader", "kind 'no.such.kind'"},
                      BadBin{"ffi_bin_no_loader", "ffi.Module.load_from_bytes.no.such.kind"},
                      BadBin{"ffi_bin_truncated", "truncated"}, BadBin{"ffi_bin_cycle", "cycle"},
                      BadBin{"ffi_bin_bad_child", "imports module 7 of 1"},
                      BadBin{"ffi_bin_size_overflow", "announces 1000000 bytes"}),
    [](const auto& info) {
      return std::string(info.param.library) + "_" + std::to_string(info.index);
    });

// The relax fixtures: the root is the relax.VMExecutable, loaded by its registered loader
// (the relax VM's); without one the error names the kind and the loader it looked for.
TEST(Tvm027LibraryBin, RelaxFixtureRootIsTheExecutable) {
  TVMFunctionHandle loader = nullptr;
  ASSERT_OK(TVMFuncGetGlobal("ffi.Module.load_from_bytes.relax.VMExecutable", &loader));
  const std::string path = kRelaxDir + "/mlp_params.so";
  if (loader == nullptr) {
    std::string err = LoadError(path);
    EXPECT_NE(err.find("'relax.VMExecutable'"), std::string::npos) << err;
    EXPECT_NE(err.find("ffi.Module.load_from_bytes.relax.VMExecutable"), std::string::npos) << err;
    return;
  }
  TVMFuncFree(loader);
  Module root(path);
  EXPECT_EQ(TypeKey(root.get()), "relax.VMExecutable");
  std::vector<TVMModuleHandle> imports = Imports(root.get());
  ASSERT_EQ(imports.size(), 1u);
  EXPECT_EQ(TypeKey(imports[0]), "library");
  TVMModFree(imports[0]);
}

}  // namespace
