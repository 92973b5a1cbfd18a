// Every relax model compiled by Apache TVM 0.27 (tests/tvm_models/tvm027/relax) through
// polyffi's relax VM, over the C ABI alone: the library loads as a `relax.VMExecutable` module,
// `vm_load_executable` + `vm_initialization(1, 0, 2)` as TVM's Python wrapper calls them, then
// `forward` on TVM's recorded inputs must give TVM's recorded outputs bit for bit (same kernels,
// same data). Also: tuple outputs as Arrays, dynamic batches, constants bound, outputs that stay
// valid after the next call, the stateful API, and TVM's error kinds and texts for bad inputs.
#include <gtest/gtest.h>
#include <polyffi/c_runtime_api.h>
#include <polyffi/dtype_string.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "fixture_util.h"

namespace {

using fixture::ArrayItem;
using fixture::ArraySize;
using fixture::Call;
using fixture::Global;
using fixture::LastError;
using fixture::ParseDType;
using fixture::ReadFile;
using fixture::TypeKey;
using fixture::Val;

using Json = nlohmann::json;
const std::string kDir = std::string(TVM027_DIR) + "/relax";

/*! \brief An owned NDArray. */
struct Array {
  TVMArrayHandle h = nullptr;
  Array(const std::vector<int64_t>& shape, DLDataType t) {
    EXPECT_EQ(TVMArrayAlloc(shape.data(), static_cast<int>(shape.size()), t.code, t.bits, t.lanes,
                            kDLCPU, 0, &h),
              0)
        << LastError();
  }
  Array(const Array&) = delete;
  ~Array() { TVMArrayFree(h); }
  size_t nbytes() const {
    size_t n = (h->dtype.bits * h->dtype.lanes + 7) / 8;
    for (int i = 0; i < h->ndim; ++i) n *= static_cast<size_t>(h->shape[i]);
    return n;
  }
  void Fill(const std::string& b) {
    ASSERT_EQ(b.size(), nbytes());
    std::memcpy(h->data, b.data(), b.size());
  }
};

/*! \brief A loaded library, its VM (initialised for the CPU, pooled) and `forward`. */
struct Model {
  TVMModuleHandle lib = nullptr, vm = nullptr;
  TVMFunctionHandle forward = nullptr;
  explicit Model(const std::string& path) {
    if (TVMModLoadFromFile(path.c_str(), "", &lib) != 0) throw std::runtime_error(LastError());
    vm = Func(lib, "vm_load_executable", {}, {}).v.v_handle;
    TVMValue init[3];
    init[0].v_int64 = kDLCPU, init[1].v_int64 = 0, init[2].v_int64 = 2;
    Func(vm, "vm_initialization", {init[0], init[1], init[2]},
         {kTVMArgInt, kTVMArgInt, kTVMArgInt});
    forward = Get(vm, "forward");
  }
  ~Model() {
    if (forward) TVMFuncFree(forward);
    if (vm) TVMModFree(vm);
    if (lib) TVMModFree(lib);
  }
  static TVMFunctionHandle Get(TVMModuleHandle m, const char* name) {
    TVMFunctionHandle f = nullptr;
    if (TVMModGetFunction(m, name, 0, &f) != 0 || f == nullptr) {
      throw std::runtime_error(std::string("no function ") + name);
    }
    return f;
  }
  /*! \brief Call m[name](args) and keep a module result's reference in the Val. */
  static Val Func(TVMModuleHandle m, const char* name, std::vector<TVMValue> v,
                  std::vector<int> c) {
    TVMFunctionHandle f = Get(m, name);
    Val r;
    int rc = TVMFuncCall(f, v.data(), c.data(), static_cast<int>(v.size()), &r.v, &r.code);
    TVMFuncFree(f);
    if (rc != 0) throw std::runtime_error(LastError());
    if (r.code == kTVMModuleHandle) {
      Val keep;
      keep.v = r.v;
      r.code = kTVMNullptr;  // the caller owns the module handle now
      return keep;
    }
    return r;
  }
};

struct FixtureRun {
  std::string library;
  std::vector<std::unique_ptr<Array>> inputs;
  std::vector<std::string> input_names;
  std::vector<std::string> outputs;  // expected bytes, one per tuple element
};

FixtureRun LoadRun(const std::string& model, const Json& run) {
  FixtureRun r;
  r.library = run["library"].get<std::string>();
  for (const Json& in : run["inputs"]) {
    auto a = std::make_unique<Array>(in["shape"].get<std::vector<int64_t>>(),
                                     ParseDType(in["dtype"].get<std::string>()));
    a->Fill(ReadFile(kDir + "/" + model + "/" + in["file"].get<std::string>()));
    r.inputs.push_back(std::move(a));
    r.input_names.push_back(in["name"].get<std::string>());
  }
  for (const Json& out : run["outputs"]) {
    r.outputs.push_back(ReadFile(kDir + "/" + model + "/" + out["file"].get<std::string>()));
  }
  return r;
}

Val Forward(const Model& m, const std::vector<DLTensor*>& args) {
  std::vector<TVMValue> v(args.size());
  std::vector<int> c(args.size(), kTVMNDArrayHandle);
  for (size_t i = 0; i < args.size(); ++i) v[i].v_handle = args[i];
  return Call(m.forward, v, c);
}

std::vector<DLTensor*> Handles(const FixtureRun& r) {
  std::vector<DLTensor*> out;
  for (const auto& a : r.inputs) out.push_back(a->h);
  return out;
}

/*! \brief The outputs of a result (one tensor, or each element of a tuple). */
void ExpectOutputs(const Val& out, const std::vector<std::string>& expected, bool tuple,
                   const std::string& what) {
  if (!tuple) {
    ASSERT_EQ(out.code, kTVMNDArrayHandle) << what;
    ASSERT_EQ(expected.size(), 1u);
    EXPECT_TRUE(out.bytes() == expected[0]) << what << ": output differs from TVM's";
    return;
  }
  ASSERT_EQ(out.code, kTVMObjectHandle) << what;
  ASSERT_EQ(ArraySize(out), static_cast<int64_t>(expected.size())) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    Val item = ArrayItem(out, static_cast<int64_t>(i));
    EXPECT_TRUE(item.bytes() == expected[i]) << what << ": output " << i << " differs from TVM's";
  }
}

std::vector<std::string> Models() {
  Json manifest = Json::parse(ReadFile(std::string(TVM027_DIR) + "/manifest.json"));
  std::vector<std::string> names;
  for (auto it = manifest["relax"].begin(); it != manifest["relax"].end(); ++it) {
    names.push_back(it.key());
  }
  return names;
}

Json Io(const std::string& model) { return Json::parse(ReadFile(kDir + "/" + model + "/io.json")); }

class Tvm027Relax : public ::testing::TestWithParam<std::string> {};

TEST_P(Tvm027Relax, MatchesTvmOutputsOnEveryRun) {
  const std::string model = GetParam();
  Json io = Io(model);
  bool tuple = io["tuple_output"].get<bool>();
  ASSERT_FALSE(io["runs"].empty());
  for (const Json& run : io["runs"]) {
    FixtureRun r = LoadRun(model, run);
    Model m(kDir + "/" + r.library);
    EXPECT_EQ(TypeKey(m.lib), "relax.VMExecutable");
    EXPECT_EQ(TypeKey(m.vm), "relax.VirtualMachine");
    std::string what = model + " batch " + std::to_string(run["batch"].get<int>());
    Val out = Forward(m, Handles(r));
    ExpectOutputs(out, r.outputs, tuple, what);
    // Again on the same VM (pooled storage reused): same results, first outputs untouched.
    Val again = Forward(m, Handles(r));
    ExpectOutputs(again, r.outputs, tuple, what + " (second call)");
    ExpectOutputs(out, r.outputs, tuple, what + " (first result after the second call)");
  }
}

TEST_P(Tvm027Relax, OutputsStayValidAfterCallsWithOtherInputs) {
  const std::string model = GetParam();
  Json io = Io(model);
  bool tuple = io["tuple_output"].get<bool>();
  FixtureRun r = LoadRun(model, io["runs"][0]);
  Model m(kDir + "/" + r.library);
  Val first = Forward(m, Handles(r));
  // Other inputs (zeros) in fresh arrays: results must differ, the first must not change.
  std::vector<std::unique_ptr<Array>> zeros;
  std::vector<DLTensor*> args;
  for (const auto& a : r.inputs) {
    zeros.push_back(std::make_unique<Array>(
        std::vector<int64_t>(a->h->shape, a->h->shape + a->h->ndim), a->h->dtype));
    std::memset(zeros.back()->h->data, 0, zeros.back()->nbytes());
    args.push_back(zeros.back()->h);
  }
  for (int i = 0; i < 3; ++i) Val other = Forward(m, args);
  ExpectOutputs(first, r.outputs, tuple, model + " first result after three other calls");
}

TEST_P(Tvm027Relax, StatefulApi) {
  const std::string model = GetParam();
  Json io = Io(model);
  bool tuple = io["tuple_output"].get<bool>();
  FixtureRun r = LoadRun(model, io["runs"][0]);
  Model m(kDir + "/" + r.library);
  std::vector<TVMValue> v(1 + r.inputs.size());
  std::vector<int> c(1 + r.inputs.size(), kTVMNDArrayHandle);
  v[0].v_str = "forward";
  c[0] = kTVMStr;
  // As DLTensor views: set_input copies them, so changing the arrays afterwards is harmless.
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    v[i + 1].v_handle = r.inputs[i]->h;
    c[i + 1] = kTVMDLTensorHandle;
  }
  Model::Func(m.vm, "set_input", v, c);
  std::vector<std::string> saved;
  for (const auto& a : r.inputs) {
    saved.emplace_back(static_cast<char*>(a->h->data), a->nbytes());
    std::memset(a->h->data, 0, a->nbytes());
  }
  TVMValue name;
  name.v_str = "forward";
  Model::Func(m.vm, "invoke_stateful", {name}, {kTVMStr});
  Val arity = Model::Func(m.vm, "get_output_arity", {name}, {kTVMStr});
  EXPECT_EQ(arity.v.v_int64, tuple ? static_cast<int64_t>(r.outputs.size()) : -1);
  if (tuple) {
    for (size_t i = 0; i < r.outputs.size(); ++i) {
      TVMValue idx;
      idx.v_int64 = static_cast<int64_t>(i);
      Val out = Model::Func(m.vm, "get_output", {name, idx}, {kTVMStr, kTVMArgInt});
      EXPECT_TRUE(out.bytes() == r.outputs[i]) << model << " get_output " << i;
    }
  } else {
    Val out = Model::Func(m.vm, "get_output", {name}, {kTVMStr});
    EXPECT_TRUE(out.bytes() == r.outputs[0]) << model << " get_output";
  }
  // Parameter names as the executable records them.
  Val arity_params = Model::Func(m.vm, "get_function_arity", {name}, {kTVMStr});
  const auto& params = io["param_names"];
  ASSERT_EQ(arity_params.v.v_int64, static_cast<int64_t>(params.size()));
  for (size_t i = 0; i < params.size(); ++i) {
    TVMValue idx;
    idx.v_int64 = static_cast<int64_t>(i);
    TVMFunctionHandle f = Model::Get(m.vm, "get_function_param_name");
    TVMValue args[2] = {name, idx}, rv;
    int codes[2] = {kTVMStr, kTVMArgInt}, rc;
    ASSERT_OK(TVMFuncCall(f, args, codes, 2, &rv, &rc));
    EXPECT_EQ(std::string(rv.v_str), params[i].get<std::string>());
    TVMFuncFree(f);
  }
}

/*! \brief TVM's message after its "Check failed: ... :" prefix (the part we must reproduce). */
std::string TvmMessageCore(const std::string& msg) {
  for (const char* start : {"ErrorContext(", "Invoking function"}) {
    size_t p = msg.find(start);
    if (p != std::string::npos) return msg.substr(p);
  }
  return msg;
}

TEST_P(Tvm027Relax, BadInputsGiveTvmsErrors) {
  const std::string model = GetParam();
  Json io = Io(model);
  FixtureRun r = LoadRun(model, io["runs"][0]);
  Model m(kDir + "/" + r.library);
  const Json& errors = io["errors"];
  auto input_index = [&](const std::string& name) {
    for (size_t i = 0; i < r.input_names.size(); ++i) {
      if (r.input_names[i] == name) return i;
    }
    throw std::runtime_error("no input " + name);
  };
  auto expect = [&](const std::vector<DLTensor*>& args, const Json& e, const std::string& kind) {
    try {
      Forward(m, args);
      ADD_FAILURE() << model << ": expected " << kind;
    } catch (const std::runtime_error& ex) {
      std::string got = ex.what();
      EXPECT_EQ(got.rfind(kind + ": ", 0), 0u) << got;
      std::string core = TvmMessageCore(e["message"].get<std::string>());
      // TVM's text, minus a final '.', which we follow with the values seen.
      if (!core.empty() && core.back() == '.') core.pop_back();
      EXPECT_NE(got.find(core), std::string::npos) << got << "\n  TVM: " << core;
    }
  };
  {
    // The input TVM's case names, with the dimension and value its message reports
    // ("Check failed: input_shape[i] == reg (GOT vs. WANT) : ... shape[K] mismatch ...").
    const Json& e = errors["wrong_shape"];
    size_t i = input_index(e["input"].get<std::string>());
    const std::string msg = e["message"].get<std::string>();
    size_t k = std::stoul(msg.substr(msg.find("shape[", msg.find("match_cast")) + 6));
    int64_t got = std::stoll(msg.substr(msg.find('(') + 1));
    std::vector<int64_t> shape(r.inputs[i]->h->shape, r.inputs[i]->h->shape + r.inputs[i]->h->ndim);
    ASSERT_LT(k, shape.size());
    shape[k] = got;
    Array bad(shape, r.inputs[i]->h->dtype);
    std::vector<DLTensor*> args = Handles(r);
    args[i] = bad.h;
    expect(args, e, e["kind"].get<std::string>());
  }
  {
    const Json& e = errors["wrong_dtype"];
    size_t i = input_index(e["input"].get<std::string>());
    Array bad(
        std::vector<int64_t>(r.inputs[i]->h->shape, r.inputs[i]->h->shape + r.inputs[i]->h->ndim),
        DLDataType{kDLFloat, 64, 1});
    std::vector<DLTensor*> args = Handles(r);
    args[i] = bad.h;
    expect(args, e, e["kind"].get<std::string>());
  }
  {
    // TVM raises InternalError for the arity; polyffi's arity errors are TypeErrors.
    std::vector<DLTensor*> args = Handles(r);
    args.pop_back();
    expect(args, errors["wrong_arity"], "TypeError");
  }
  // Still usable afterwards.
  Val out = Forward(m, Handles(r));
  ExpectOutputs(out, r.outputs, io["tuple_output"].get<bool>(), model + " after errors");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Tvm027Relax, ::testing::ValuesIn(Models()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(Tvm027RelaxVM, ExecutableQueriesItsKernelLibrary) {
  TVMModuleHandle lib = nullptr;
  ASSERT_OK(TVMModLoadFromFile((kDir + "/mlp_const.so").c_str(), "", &lib));
  TVMFunctionHandle f = nullptr;
  ASSERT_OK(TVMModGetFunction(lib, "matmul", 0, &f));
  EXPECT_EQ(f, nullptr);  // not the executable's own
  ASSERT_OK(TVMModGetFunction(lib, "matmul", 1, &f));
  EXPECT_NE(f, nullptr);  // the kernel, through the imports
  if (f) TVMFuncFree(f);
  TVMValue name, rv;
  int code = kTVMStr, rc;
  name.v_str = "forward";
  TVMFunctionHandle has = Model::Get(lib, "has_function");
  ASSERT_OK(TVMFuncCall(has, &name, &code, 1, &rv, &rc));
  EXPECT_EQ(rv.v_int64, 1);
  TVMFuncFree(has);
  TVMModFree(lib);
}

}  // namespace
