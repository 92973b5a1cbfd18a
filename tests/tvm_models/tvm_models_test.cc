// Models compiled by Apache TVM 0.18 (tests/tvm_models/tvm018, made by
// tools/tvm-fixtures/generate_tvm018.py) run through the C ABI alone and reproduce the outputs
// TVM's own runtime computed, bit for bit: the exported factory library, the three-artifact
// form, and plain TE kernel libraries (scalars, a parallel loop, a call back into a host
// global). Corrupt packed import blobs (built here from C) fail with errors naming the file.
#include <gtest/gtest.h>
#include <polyffi/c_runtime_api.h>
#include <polyffi/dtype_string.h>

#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

using Json = nlohmann::json;
const std::string kDir = TVM_MODELS_DIR;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

Json ReadJson(const std::string& path) { return Json::parse(ReadFile(path)); }

std::string LastError() { return TVMGetLastError(); }

#define ASSERT_OK(call) ASSERT_EQ((call), 0) << LastError()

DLDataType ParseDType(const std::string& s) {
  DLDataType t;
  if (PolyffiDataTypeFromString(s.c_str(), &t) != 0) throw std::runtime_error("bad dtype " + s);
  return t;
}

// An owned CPU array filled from (or compared with) a fixture's raw file.
class Array {
 public:
  explicit Array(const Json& desc) {
    std::vector<int64_t> shape = desc["shape"].get<std::vector<int64_t>>();
    DLDataType t = ParseDType(desc["dtype"]);
    if (TVMArrayAlloc(shape.data(), static_cast<int>(shape.size()), t.code, t.bits, t.lanes, kDLCPU,
                      0, &h_) != 0) {
      throw std::runtime_error(LastError());
    }
  }
  explicit Array(TVMArrayHandle adopt) : h_(adopt) {}
  Array(Array&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Array(const Array&) = delete;
  ~Array() {
    if (h_) TVMArrayFree(h_);
  }
  TVMArrayHandle get() const { return h_; }
  size_t nbytes() const {
    size_t n = (h_->dtype.bits * h_->dtype.lanes + 7) / 8;
    for (int i = 0; i < h_->ndim; ++i) n *= h_->shape[i];
    return n;
  }
  void Fill(const std::string& bytes) {
    ASSERT_EQ(bytes.size(), nbytes());
    ASSERT_OK(TVMArrayCopyFromBytes(h_, const_cast<char*>(bytes.data()), bytes.size()));
  }
  std::string Bytes() const {
    std::string out(nbytes(), '\0');
    EXPECT_EQ(TVMArrayCopyToBytes(h_, out.data(), out.size()), 0) << LastError();
    return out;
  }

 private:
  TVMArrayHandle h_ = nullptr;
};

// A packed call's result; owns the object it may hold.
struct Result {
  TVMValue v{};
  int code = kTVMNullptr;
  Result() = default;
  Result(Result&& o) noexcept : v(o.v), code(std::exchange(o.code, kTVMNullptr)) {}
  Result(const Result&) = delete;
  ~Result() {
    if (code == kTVMModuleHandle) TVMModFree(v.v_handle);
    if (code == kTVMPackedFuncHandle) TVMFuncFree(v.v_handle);
    if (code == kTVMObjectHandle) TVMObjectFree(v.v_handle);
    if (code == kTVMNDArrayHandle) TVMArrayFree(static_cast<TVMArrayHandle>(v.v_handle));
  }
};

struct Arg {
  TVMValue v;
  int code;
  static Arg Int(int64_t i) { return {{.v_int64 = i}, kTVMArgInt}; }
  static Arg Float(double d) { return {{.v_float64 = d}, kTVMArgFloat}; }
  static Arg Str(const std::string& s) { return {{.v_str = s.c_str()}, kTVMStr}; }
  static Arg Mod(void* m) { return {{.v_handle = m}, kTVMModuleHandle}; }
  static Arg Nd(const Array& a) { return {{.v_handle = a.get()}, kTVMNDArrayHandle}; }
  static Arg Dev(DLDevice d) {
    TVMValue v;
    v.v_device = d;
    return {v, kDLDevice};
  }
  static Arg Bytes(TVMByteArray* b) { return {{.v_handle = b}, kTVMBytes}; }
};

// Calls f(args...); EXPECTs success unless `fail` receives the error text.
Result Call(TVMFunctionHandle f, std::vector<Arg> args, std::string* fail = nullptr) {
  std::vector<TVMValue> v;
  std::vector<int> c;
  for (auto& a : args) v.push_back(a.v), c.push_back(a.code);
  Result r;
  int rc = TVMFuncCall(f, v.data(), c.data(), static_cast<int>(v.size()), &r.v, &r.code);
  if (fail != nullptr) {
    *fail = rc == 0 ? "" : LastError();
  } else {
    EXPECT_EQ(rc, 0) << LastError();
  }
  return r;
}

class Module {
 public:
  explicit Module(TVMModuleHandle h) : h_(h) {}
  static Module Load(const std::string& path) {
    TVMModuleHandle h = nullptr;
    EXPECT_EQ(TVMModLoadFromFile(path.c_str(), "", &h), 0) << LastError();
    return Module(h);
  }
  Module(Module&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Module(const Module&) = delete;
  ~Module() {
    if (h_) TVMModFree(h_);
  }
  TVMModuleHandle get() const { return h_; }
  // The function, or null when missing.
  TVMFunctionHandle Get(const std::string& name) const {
    TVMFunctionHandle f = nullptr;
    EXPECT_EQ(TVMModGetFunction(h_, name.c_str(), 0, &f), 0) << LastError();
    return f;
  }
  Result Call(const std::string& name, std::vector<Arg> args) const {
    TVMFunctionHandle f = Get(name);
    if (f == nullptr) {
      ADD_FAILURE() << "no function " << name;
      return Result();
    }
    Result r = ::Call(f, std::move(args));
    TVMFuncFree(f);
    return r;
  }

 private:
  TVMModuleHandle h_;
};

Result CallGlobal(const char* name, std::vector<Arg> args) {
  TVMFunctionHandle f = nullptr;
  EXPECT_EQ(TVMFuncGetGlobal(name, &f), 0);
  EXPECT_NE(f, nullptr) << name;
  Result r = Call(f, std::move(args));
  TVMFuncFree(f);
  return r;
}

std::string TypeKey(const Module& m) {
  Result r = CallGlobal("runtime.ModuleGetTypeKey", {Arg::Mod(m.get())});
  return r.code == kTVMStr ? r.v.v_str : "";
}

// Sets every input of a fixture, runs, and checks each output equals TVM's bit for bit.
void RunAndCompare(const Module& exec, const std::string& dir, const Json& io) {
  std::vector<Array> inputs;
  for (const auto& in : io["inputs"]) {
    inputs.emplace_back(in);
    inputs.back().Fill(ReadFile(dir + "/" + in["file"].get<std::string>()));
    exec.Call("set_input", {Arg::Str(in["name"]), Arg::Nd(inputs.back())});
  }
  exec.Call("run", {});
  Result n = exec.Call("get_num_outputs", {});
  ASSERT_EQ(n.v.v_int64, static_cast<int64_t>(io["outputs"].size()));
  for (size_t i = 0; i < io["outputs"].size(); ++i) {
    const Json& out = io["outputs"][i];
    Result got = exec.Call("get_output", {Arg::Int(static_cast<int64_t>(i))});
    ASSERT_EQ(got.code, kTVMNDArrayHandle);
    auto* t = static_cast<TVMArrayHandle>(got.v.v_handle);
    EXPECT_EQ(t->ndim, static_cast<int>(out["shape"].size()));
    Array view(t);
    got.code = kTVMNullptr;  // now owned by view
    EXPECT_TRUE(view.Bytes() == ReadFile(dir + "/" + out["file"].get<std::string>()))
        << "output " << i << " differs from TVM's";
  }
}

std::vector<std::string> GraphFixtures() {
  std::vector<std::string> names;
  const Json manifest = ReadJson(kDir + "/manifest.json");
  for (const auto& name : manifest["fixtures"]) {
    if (name != "te_kernels") names.push_back(name);
  }
  return names;
}

class TvmGraphModel : public ::testing::TestWithParam<std::string> {
 protected:
  std::string dir() const { return kDir + "/" + GetParam(); }
  Json io() const { return ReadJson(dir() + "/io.json"); }
};

TEST_P(TvmGraphModel, FactoryLibraryDefaultRunsLikeTvm) {
  Module lib = Module::Load(dir() + "/factory.so");
  ASSERT_NE(lib.get(), nullptr);
  EXPECT_EQ(TypeKey(lib), "GraphExecutorFactory");
  Result imports = CallGlobal("runtime.ModuleImportsSize", {Arg::Mod(lib.get())});
  EXPECT_EQ(imports.v.v_int64, 1);
  Result exec = lib.Call("default", {Arg::Dev({kDLCPU, 0})});
  ASSERT_EQ(exec.code, kTVMModuleHandle);
  exec.code = kTVMNullptr;  // owned by the Module below
  RunAndCompare(Module(exec.v.v_handle), dir(), io());
}

TEST_P(TvmGraphModel, EveryDefaultCallGivesAReadyExecutor) {
  Module lib = Module::Load(dir() + "/factory.so");
  for (int i = 0; i < 2; ++i) {
    Result exec = lib.Call("default", {Arg::Dev({kDLCPU, 0})});
    ASSERT_EQ(exec.code, kTVMModuleHandle);
    exec.code = kTVMNullptr;
    RunAndCompare(Module(exec.v.v_handle), dir(), io());
  }
}

TEST_P(TvmGraphModel, ThreeArtifactsRunLikeTvm) {
  Module kernels = Module::Load(dir() + "/kernels.so");
  std::string graph = ReadFile(dir() + "/graph.json");
  Result exec = CallGlobal("tvm.graph_executor.create", {Arg::Str(graph), Arg::Mod(kernels.get()),
                                                         Arg::Int(kDLCPU), Arg::Int(0)});
  ASSERT_EQ(exec.code, kTVMModuleHandle);
  exec.code = kTVMNullptr;
  Module ex(exec.v.v_handle);
  std::string params = ReadFile(dir() + "/params.bin");
  TVMByteArray b{params.data(), params.size()};
  ex.Call("load_params", {Arg::Bytes(&b)});
  RunAndCompare(ex, dir(), io());
}

TEST_P(TvmGraphModel, FactoryAccessorsMatchTheArtifacts) {
  Module lib = Module::Load(dir() + "/factory.so");
  Result json = lib.Call("get_graph_json", {});
  ASSERT_EQ(json.code, kTVMStr);
  EXPECT_EQ(std::string(json.v.v_str), ReadFile(dir() + "/graph.json"));
  Result params = lib.Call("get_graph_params", {});
  ASSERT_EQ(params.code, kTVMObjectHandle);
  Result size =
      CallGlobal("runtime.MapSize", {{{.v_handle = params.v.v_handle}, kTVMObjectHandle}});
  EXPECT_EQ(size.v.v_int64, static_cast<int64_t>(io()["params"].size()));
  // remove_params: the same graph and library, no params.
  Result bare = lib.Call("remove_params", {});
  ASSERT_EQ(bare.code, kTVMModuleHandle);
  bare.code = kTVMNullptr;
  Module stripped(bare.v.v_handle);
  EXPECT_EQ(TypeKey(stripped), "GraphExecutorFactory");
  Result none = stripped.Call("get_graph_params", {});
  Result zero = CallGlobal("runtime.MapSize", {{{.v_handle = none.v.v_handle}, kTVMObjectHandle}});
  EXPECT_EQ(zero.v.v_int64, 0);
}

TEST_P(TvmGraphModel, LoadingTwiceReturnsTheSameRoot) {
  Module a = Module::Load(dir() + "/factory.so");
  Module b = Module::Load(dir() + "/factory.so");
  EXPECT_EQ(a.get(), b.get());
}

// ---- TVM 0.18's other executor functions on TVM's models --------------------------------------

Arg ObjArg(void* h) { return {{.v_handle = h}, kTVMObjectHandle}; }

int64_t IntOf(const Result& r) {
  EXPECT_EQ(r.code, kTVMArgInt);
  return r.v.v_int64;
}

// A shape from get_*_info: a runtime.ShapeTuple where the runtime has that type, else an Array.
std::vector<int64_t> ShapeOf(void* obj) {
  unsigned index = 0;
  char* key = nullptr;
  EXPECT_EQ(TVMObjectGetTypeIndex(obj, &index), 0);
  EXPECT_EQ(TVMObjectTypeIndex2Key(index, &key), 0);
  bool tuple = std::string(key) == "runtime.ShapeTuple";
  std::vector<int64_t> out;
  int64_t n =
      IntOf(CallGlobal(tuple ? "runtime.GetShapeTupleSize" : "runtime.ArraySize", {ObjArg(obj)}));
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(IntOf(CallGlobal(tuple ? "runtime.GetShapeTupleElem" : "runtime.ArrayGetItem",
                                   {ObjArg(obj), Arg::Int(i)})));
  }
  return out;
}

using InfoMap = std::map<std::string, std::pair<std::vector<int64_t>, std::string>>;

// get_input_info / get_output_info as {name: (shape, dtype)}.
InfoMap InfoOf(const Module& exec, const char* fn) {
  Result info = exec.Call(fn, {});
  EXPECT_EQ(info.code, kTVMObjectHandle);
  Result shapes = CallGlobal("runtime.MapGetItem", {ObjArg(info.v.v_handle), Arg::Str("shape")});
  Result dtypes = CallGlobal("runtime.MapGetItem", {ObjArg(info.v.v_handle), Arg::Str("dtype")});
  Result items = CallGlobal("runtime.MapItems", {ObjArg(shapes.v.v_handle)});
  InfoMap out;
  int64_t n = IntOf(CallGlobal("runtime.ArraySize", {ObjArg(items.v.v_handle)}));
  for (int64_t i = 0; i < n; i += 2) {
    Result name = CallGlobal("runtime.ArrayGetItem", {ObjArg(items.v.v_handle), Arg::Int(i)});
    EXPECT_EQ(name.code, kTVMStr);
    std::string key = name.v.v_str;
    Result shape = CallGlobal("runtime.ArrayGetItem", {ObjArg(items.v.v_handle), Arg::Int(i + 1)});
    out[key].first = ShapeOf(shape.v.v_handle);
    Result dtype = CallGlobal("runtime.MapGetItem", {ObjArg(dtypes.v.v_handle), Arg::Str(key)});
    EXPECT_EQ(dtype.code, kTVMStr);
    out[key].second = dtype.v.v_str;
  }
  return out;
}

Module ThreeArtifactExecutor(const std::string& dir, const Module& kernels) {
  std::string graph = ReadFile(dir + "/graph.json");
  Result exec = CallGlobal("tvm.graph_executor.create", {Arg::Str(graph), Arg::Mod(kernels.get()),
                                                         Arg::Int(kDLCPU), Arg::Int(0)});
  EXPECT_EQ(exec.code, kTVMModuleHandle);
  exec.code = kTVMNullptr;
  return Module(exec.v.v_handle);
}

Module FactoryExecutor(const Module& lib) {
  Result exec = lib.Call("default", {Arg::Dev({kDLCPU, 0})});
  EXPECT_EQ(exec.code, kTVMModuleHandle);
  exec.code = kTVMNullptr;
  return Module(exec.v.v_handle);
}

// The values TVM 0.18's own runtime returns for multi_io_b1 (tvm.contrib.graph_executor on
// libtvm_runtime.so from the Maven artifact): get_input_info lists the param p0 until
// load_params names it; outputs are keyed by their nodes' names.
TEST(TvmExecutorFunctions, InfoOfMultiIoIsTvms) {
  const std::string dir = kDir + "/multi_io_b1";
  Module kernels = Module::Load(dir + "/kernels.so");
  Module ex = ThreeArtifactExecutor(dir, kernels);
  EXPECT_EQ(InfoOf(ex, "get_input_info"), (InfoMap{{"x", {{1, 8}, "float32"}},
                                                   {"idx", {{1, 8}, "int32"}},
                                                   {"z", {{1, 4}, "float64"}},
                                                   {"p0", {{8}, "float32"}}}));
  std::string params = ReadFile(dir + "/params.bin");
  TVMByteArray b{params.data(), params.size()};
  ex.Call("load_params", {Arg::Bytes(&b)});
  EXPECT_EQ(InfoOf(ex, "get_input_info"), (InfoMap{{"x", {{1, 8}, "float32"}},
                                                   {"idx", {{1, 8}, "int32"}},
                                                   {"z", {{1, 4}, "float64"}}}));
  EXPECT_EQ(InfoOf(ex, "get_output_info"),
            (InfoMap{{"tvmgen_default_fused_multiply_cast_add", {{1, 8}, "float32"}},
                     {"tvmgen_default_fused_multiply_sum", {{1}, "int32"}},
                     {"tvmgen_default_fused_multiply_add_sqrt", {{1, 4}, "float64"}}}));
  EXPECT_EQ(IntOf(ex.Call("get_num_inputs", {})), 4);
  // TVM returns None for an unknown name (GraphModule.set_input relies on it).
  Result none = ex.Call("get_input", {Arg::Str("nope")});
  EXPECT_EQ(none.code, kTVMNullptr);
  EXPECT_EQ(IntOf(ex.Call("get_output_index", {Arg::Str("tvmgen_default_fused_multiply_sum")})), 1);
}

TEST_P(TvmGraphModel, InfoAgreesWithTheFixture) {
  Module kernels = Module::Load(dir() + "/kernels.so");
  Module ex = ThreeArtifactExecutor(dir(), kernels);
  const Json io = this->io();
  InfoMap inputs;
  for (const auto& in : io["inputs"]) {
    inputs[in["name"]] = {in["shape"].get<std::vector<int64_t>>(), in["dtype"]};
  }
  EXPECT_EQ(InfoOf(ex, "get_input_info").size(), inputs.size() + io["params"].size());
  std::string params = ReadFile(dir() + "/params.bin");
  TVMByteArray b{params.data(), params.size()};
  ex.Call("load_params", {Arg::Bytes(&b)});
  EXPECT_EQ(InfoOf(ex, "get_input_info"), inputs);
  std::multiset<std::pair<std::vector<int64_t>, std::string>> want, got;
  for (const auto& out : io["outputs"]) {
    want.insert({out["shape"].get<std::vector<int64_t>>(), out["dtype"]});
  }
  for (const auto& [name, value] : InfoOf(ex, "get_output_info")) got.insert(value);
  EXPECT_EQ(got, want);
}

// Inputs and outputs lent with zero copy: the outputs land in the caller's arrays, bit for bit
// TVM's.
TEST_P(TvmGraphModel, ZeroCopyRunsLikeTvm) {
  Module lib = Module::Load(dir() + "/factory.so");
  Module ex = FactoryExecutor(lib);
  const Json io = this->io();
  std::vector<Array> inputs, outputs;
  for (const auto& in : io["inputs"]) {
    inputs.emplace_back(in);
    inputs.back().Fill(ReadFile(dir() + "/" + in["file"].get<std::string>()));
    ex.Call("set_input_zero_copy", {Arg::Str(in["name"]), Arg::Nd(inputs.back())});
  }
  for (size_t i = 0; i < io["outputs"].size(); ++i) {
    outputs.emplace_back(io["outputs"][i]);
    ex.Call("set_output_zero_copy", {Arg::Int(static_cast<int64_t>(i)), Arg::Nd(outputs.back())});
  }
  ex.Call("run", {});
  for (size_t i = 0; i < outputs.size(); ++i) {
    EXPECT_TRUE(outputs[i].Bytes() ==
                ReadFile(dir() + "/" + io["outputs"][i]["file"].get<std::string>()))
        << "output " << i << " differs from TVM's";
  }
}

TEST_P(TvmGraphModel, RunFromInputsLikeTvm) {
  Module lib = Module::Load(dir() + "/factory.so");
  Module ex = FactoryExecutor(lib);
  const Json io = this->io();
  std::vector<Array> inputs;
  std::vector<Arg> args = {Arg::Int(kDLCPU), Arg::Int(0)};
  std::vector<std::string> names;
  for (const auto& in : io["inputs"]) names.push_back(in["name"]);
  for (size_t i = 0; i < names.size(); ++i) {
    inputs.emplace_back(io["inputs"][i]);
    inputs.back().Fill(ReadFile(dir() + "/" + io["inputs"][i]["file"].get<std::string>()));
    args.push_back(Arg::Str(names[i]));
    args.push_back(Arg::Nd(inputs.back()));
  }
  Result outs = ex.Call("run_from_inputs", args);
  ASSERT_EQ(outs.code, kTVMObjectHandle);
  ASSERT_EQ(IntOf(CallGlobal("runtime.ArraySize", {ObjArg(outs.v.v_handle)})),
            static_cast<int64_t>(io["outputs"].size()));
  for (size_t i = 0; i < io["outputs"].size(); ++i) {
    Result item = CallGlobal("runtime.ArrayGetItem",
                             {ObjArg(outs.v.v_handle), Arg::Int(static_cast<int64_t>(i))});
    ASSERT_EQ(item.code, kTVMNDArrayHandle);
    item.code = kTVMNullptr;
    Array got(static_cast<TVMArrayHandle>(item.v.v_handle));
    EXPECT_TRUE(got.Bytes() == ReadFile(dir() + "/" + io["outputs"][i]["file"].get<std::string>()))
        << "output " << i << " differs from TVM's";
  }
}

// Two executors of the three-artifact form; the second takes the first's params by
// share_params (TVM's GraphModule.share_params) and computes TVM's outputs without loading any.
TEST_P(TvmGraphModel, ShareParamsRunsLikeTvm) {
  Module kernels = Module::Load(dir() + "/kernels.so");
  Module owner = ThreeArtifactExecutor(dir(), kernels);
  Module borrower = ThreeArtifactExecutor(dir(), kernels);
  std::string params = ReadFile(dir() + "/params.bin");
  TVMByteArray b{params.data(), params.size()};
  owner.Call("load_params", {Arg::Bytes(&b)});
  borrower.Call("share_params", {Arg::Mod(owner.get()), Arg::Bytes(&b)});
  const Json io = this->io();  // kept alive: the loop reads into it
  for (const auto& name : io["params"]) {
    Result mine = borrower.Call("get_input", {Arg::Str(name)});
    Result theirs = owner.Call("get_input", {Arg::Str(name)});
    ASSERT_EQ(mine.code, kTVMNDArrayHandle);
    EXPECT_EQ(static_cast<DLTensor*>(mine.v.v_handle)->data,
              static_cast<DLTensor*>(theirs.v.v_handle)->data)
        << name;
  }
  RunAndCompare(borrower, dir(), io);
}

INSTANTIATE_TEST_SUITE_P(Tvm018, TvmGraphModel, ::testing::ValuesIn(GraphFixtures()),
                         [](const auto& info) { return info.param; });

TEST(TvmFactory, DefaultRejectsNonDevices) {
  Module lib = Module::Load(kDir + "/digits_b1/factory.so");
  TVMFunctionHandle f = lib.Get("default");
  std::string err;
  Call(f, {}, &err);
  EXPECT_NE(err.find("expected at least one device"), std::string::npos) << err;
  Call(f, {Arg::Int(1)}, &err);
  EXPECT_NE(err.find("TypeError"), std::string::npos) << err;
  EXPECT_NE(err.find("Device"), std::string::npos) << err;
  TVMFuncFree(f);
}

// ---- plain TE kernels -----------------------------------------------------------------------

// polyffi_test.add_one(src, dst): the host function host_call.so reaches through
// __TVMBackendGetFuncFromEnv + __TVMFuncCall.
int AddOne(TVMValue* args, int* codes, int n, TVMRetValueHandle, void*) {
  if (n != 2 || (codes[0] != kTVMDLTensorHandle && codes[0] != kTVMNDArrayHandle)) {
    TVMAPISetLastError("TypeError: polyffi_test.add_one(src, dst) expects two arrays");
    return -1;
  }
  auto* src = static_cast<DLTensor*>(args[0].v_handle);
  auto* dst = static_cast<DLTensor*>(args[1].v_handle);
  for (int64_t i = 0; i < src->shape[0]; ++i) {
    static_cast<float*>(dst->data)[i] = static_cast<float*>(src->data)[i] + 1.0f;
  }
  return 0;
}

// Runs first: a library caches the host function it found (as TVM's generated code does).
TEST(TvmKernels, HostCallWithoutTheHostFunctionIsAClearError) {
  TVMFuncRemoveGlobal("polyffi_test.add_one");
  Module lib = Module::Load(kDir + "/te_kernels/host_call.so");
  Json shape = {{"shape", {64}}, {"dtype", "float32"}};
  Array a(shape), b(shape);
  TVMFunctionHandle f = lib.Get("host_call");
  std::string err;
  Call(f, {Arg::Nd(a), Arg::Nd(b)}, &err);
  EXPECT_NE(err.find("polyffi_test.add_one"), std::string::npos) << err;
  TVMFuncFree(f);
}

TEST(TvmKernels, EveryCaseMatchesTvm) {
  TVMFunctionHandle host = nullptr;
  ASSERT_OK(TVMFuncCreateFromCFunc(AddOne, nullptr, nullptr, &host));
  ASSERT_OK(TVMFuncRegisterGlobal("polyffi_test.add_one", host, 1));
  TVMFuncFree(host);
  const std::string dir = kDir + "/te_kernels";
  Json io = ReadJson(dir + "/io.json");
  ASSERT_EQ(io["cases"].size(), 3u);
  for (const auto& c : io["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    Module lib = Module::Load(dir + "/" + c["library"].get<std::string>());
    std::vector<Array> arrays;
    std::vector<Arg> args;
    arrays.reserve(c["args"].size() + 1);
    for (const auto& a : c["args"]) {
      if (a.contains("file")) {
        arrays.emplace_back(a);
        arrays.back().Fill(ReadFile(dir + "/" + a["file"].get<std::string>()));
        args.push_back(Arg::Nd(arrays.back()));
      } else if (a.contains("float")) {
        args.push_back(Arg::Float(a["float"]));
      } else {
        args.push_back(Arg::Int(a["int"]));
      }
    }
    arrays.emplace_back(c["output"]);
    args.push_back(Arg::Nd(arrays.back()));
    lib.Call(c["function"], args);
    EXPECT_TRUE(arrays.back().Bytes() ==
                ReadFile(dir + "/" + c["output"]["file"].get<std::string>()));
  }
  TVMFuncRemoveGlobal("polyffi_test.add_one");
}

TEST(TvmKernels, SingleFunctionLibraryHasAnEntry) {
  Module lib = Module::Load(kDir + "/te_kernels/vadd.so");
  TVMFunctionHandle f = lib.Get("__tvm_main__");
  EXPECT_NE(f, nullptr);
  if (f) TVMFuncFree(f);
}

// ---- corrupt packed import blobs (libraries built from tests/tvm_models/bad_blobs.c) ----------

struct BadBlob {
  const char* library;
  const char* expected;
};

class TvmBadBlob : public ::testing::TestWithParam<BadBlob> {};

TEST_P(TvmBadBlob, FailsWithAClearError) {
  const std::string path = std::string(TVM_BAD_BLOB_DIR) + "/lib" + GetParam().library + ".so";
  TVMModuleHandle h = nullptr;
  ASSERT_NE(TVMModLoadFromFile(path.c_str(), "", &h), 0);
  std::string err = LastError();
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find(GetParam().expected), std::string::npos) << err;
  // The failure repeats; it never leaves a half-made module behind.
  ASSERT_NE(TVMModLoadFromFile(path.c_str(), "", &h), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Blobs, TvmBadBlob,
    ::testing::Values(BadBlob{"blob_unknown_key", "no loader for it is registered"},
                      BadBlob{"blob_unknown_key", "'NoSuchModule'"},
                      BadBlob{"blob_truncated", "truncated"},
                      BadBlob{"blob_size_overflow", "announces"}, BadBlob{"blob_cycle", "cycle"},
                      BadBlob{"blob_bad_child", "imports module 5"},
                      BadBlob{"blob_factory_truncated", "GraphExecutorFactory"}),
    [](const auto& info) {
      return std::string(info.param.library) + "_" + std::to_string(info.index);
    });

}  // namespace
