// Helpers of the graph executor's tests (graph_executor_test.cc, graph_executor_errors_test.cc):
// owned arrays, calls through the C ABI, kernels made here, a graph builder and an executor.
#ifndef POLYFFI_CORE_TESTS_GRAPH_EXECUTOR_TEST_UTIL_H_
#define POLYFFI_CORE_TESTS_GRAPH_EXECUTOR_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <polyffi/c_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <polyffi/polyffi.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace graph_executor_test {

using polyffi::Any;
using polyffi::Error;
using polyffi::Function;
using polyffi::ObjectRef;
using polyffi::PackedArgs;
using polyffi::RetValue;
using Json = nlohmann::json;

// ---- Helpers -----------------------------------------------------------------------------------

// An owned float32 CPU array.
class Array {
 public:
  Array(std::vector<int64_t> shape, DLDataType dtype = {kDLFloat, 32, 1}) {
    polyffi::CheckCall(TVMArrayAlloc(shape.data(), static_cast<int>(shape.size()), dtype.code,
                                     dtype.bits, dtype.lanes, kDLCPU, 0, &h_));
  }
  explicit Array(TVMArrayHandle adopt) : h_(adopt) {}
  static Array Of(std::vector<float> values, std::vector<int64_t> shape) {
    Array a(std::move(shape));
    a.Set(values);
    return a;
  }
  Array(Array&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Array& operator=(Array&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  Array(const Array&) = delete;
  ~Array() { TVMArrayFree(h_); }
  TVMArrayHandle get() const { return h_; }
  void Set(const std::vector<float>& v) {
    polyffi::CheckCall(
        TVMArrayCopyFromBytes(h_, const_cast<float*>(v.data()), v.size() * sizeof(float)));
  }
  std::vector<float> Get() const {
    int64_t n = 1;
    for (int i = 0; i < h_->ndim; ++i) n *= h_->shape[i];
    std::vector<float> v(n);
    polyffi::CheckCall(TVMArrayCopyToBytes(h_, v.data(), v.size() * sizeof(float)));
    return v;
  }

 private:
  TVMArrayHandle h_ = nullptr;
};

// One packed argument, with its type code.
struct Arg {
  Arg(int64_t i) { v.v_int64 = i, code = kTVMArgInt; }                // NOLINT: implicit on purpose
  Arg(int i) { v.v_int64 = i, code = kTVMArgInt; }                    // NOLINT
  Arg(const char* s) { v.v_str = s, code = kTVMStr; }                 // NOLINT
  Arg(const std::string& s) { v.v_str = s.c_str(), code = kTVMStr; }  // NOLINT
  Arg(const Array& a) { v.v_handle = a.get(), code = kTVMNDArrayHandle; }  // NOLINT
  Arg(TVMByteArray* b) { v.v_handle = b, code = kTVMBytes; }               // NOLINT
  Arg(double d) { v.v_float64 = d, code = kTVMArgFloat; }                  // NOLINT
  static Arg Module(void* h) {
    Arg a(0);
    a.v.v_handle = h, a.code = kTVMModuleHandle;
    return a;
  }
  TVMValue v;
  int code;
};

inline Any Call(const Function& f, std::vector<Arg> args) {
  std::vector<TVMValue> values;
  std::vector<int> codes;
  for (const Arg& a : args) values.push_back(a.v), codes.push_back(a.code);
  return f.CallPacked(values.data(), codes.data(), static_cast<int>(args.size()));
}

// Calls f and adopts the array it returns. (Any keeps an NDArray as its object handle, which
// has no public way back to the DLTensor, so arrays are taken from TVMFuncCall directly.)
inline Array CallArray(const Function& f, std::vector<Arg> args) {
  std::vector<TVMValue> values;
  std::vector<int> codes;
  for (const Arg& a : args) values.push_back(a.v), codes.push_back(a.code);
  TVMValue rv;
  int rc = kTVMNullptr;
  polyffi::CheckCall(
      TVMFuncCall(f.get(), values.data(), codes.data(), static_cast<int>(args.size()), &rv, &rc));
  if (rc != kTVMNDArrayHandle) throw Error("TypeError", "expected an array return");
  return Array(static_cast<TVMArrayHandle>(rv.v_handle));
}

// "Kind: message" of the error f throws, or "" when it does not throw.
inline std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.full();
  }
  return "";
}

inline float* Data(DLTensor* t) {
  return reinterpret_cast<float*>(static_cast<char*>(t->data) + t->byte_offset);
}

inline int64_t Size(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

// A kernel over DLTensor arguments: checks codes and arity, then runs body.
inline Function Kernel(int arity, std::function<void(std::vector<DLTensor*>&)> body) {
  return polyffi::MakePacked([arity, body](PackedArgs args, RetValue* rv) {
    if (args.size != arity) throw Error("ValueError", "kernel arity");
    std::vector<DLTensor*> t;
    for (int i = 0; i < args.size; ++i) {
      if (args.codes[i] != kTVMDLTensorHandle) throw Error("TypeError", "kernel wants DLTensor");
      t.push_back(static_cast<DLTensor*>(args.values[i].v_handle));
    }
    body(t);
    rv->Set(nullptr);
  });
}

inline Function Elementwise(float (*op)(float, float)) {
  return Kernel(3, [op](std::vector<DLTensor*>& t) {
    if (Size(t[0]) != Size(t[2]) || Size(t[1]) != Size(t[2])) {
      throw Error("ValueError", "elementwise: size mismatch");
    }
    for (int64_t i = 0; i < Size(t[2]); ++i) Data(t[2])[i] = op(Data(t[0])[i], Data(t[1])[i]);
  });
}

// The kernel library for the small graphs.
inline ObjectRef MakeLib() {
  Function add = Elementwise([](float a, float b) { return a + b; });
  Function mul = Elementwise([](float a, float b) { return a * b; });
  // Copies its input; fails unless the executor flattened every argument to 1-D.
  Function flat_copy = Kernel(2, [](std::vector<DLTensor*>& t) {
    if (t[0]->ndim != 1 || t[1]->ndim != 1) throw Error("ValueError", "not flattened");
    std::memcpy(Data(t[1]), Data(t[0]), Size(t[0]) * sizeof(float));
  });
  // Two outputs: the first and second half of its input.
  Function split = Kernel(3, [](std::vector<DLTensor*>& t) {
    int64_t half = Size(t[0]) / 2;
    std::memcpy(Data(t[1]), Data(t[0]), half * sizeof(float));
    std::memcpy(Data(t[2]), Data(t[0]) + half, half * sizeof(float));
  });
  Function fail = Kernel(2, [](std::vector<DLTensor*>&) {
    throw Error("AssertionError", "kernel refused its input");
  });
  Function make = Function::GetGlobalRequired("runtime.ModuleFromFunctions");
  Any lib = make("test.Kernels", "add", add, "mul", mul, "flat_copy", flat_copy, "split", split,
                 "fail", fail);
  return lib.as_object();
}

// Builds TVM graph JSON: nodes are added in order; each gets entries with shape/dtype/sid.
class GraphBuilder {
 public:
  int Input(const std::string& name, std::vector<int64_t> shape, int sid,
            const std::string& dtype = "float32") {
    nodes_.push_back({{"op", "null"}, {"name", name}, {"inputs", Json::array()}});
    args_.push_back(static_cast<int>(nodes_.size()) - 1);
    AddEntry(shape, sid, dtype);
    return static_cast<int>(nodes_.size()) - 1;
  }
  int Op(const std::string& func, std::vector<std::pair<int, int>> inputs,
         std::vector<std::pair<std::vector<int64_t>, int>> outputs, bool flatten = false) {
    Json in = Json::array();
    for (auto [nid, idx] : inputs) in.push_back({nid, idx, 0});
    nodes_.push_back({{"op", "tvm_op"},
                      {"name", func + "_" + std::to_string(nodes_.size())},
                      {"attrs",
                       {{"func_name", func},
                        {"num_inputs", std::to_string(inputs.size())},
                        {"num_outputs", std::to_string(outputs.size())},
                        {"flatten_data", flatten ? "1" : "0"}}},
                      {"inputs", in}});
    for (auto& [shape, sid] : outputs) AddEntry(shape, sid, "float32");
    return static_cast<int>(nodes_.size()) - 1;
  }
  void Head(int nid, int idx = 0) { heads_.push_back({nid, idx, 0}); }
  Json Build() const {
    Json row = Json::array();
    int acc = 0;
    row.push_back(0);
    for (const Json& n : nodes_) {
      acc += n["op"] == "null" ? 1 : std::stoi(n["attrs"]["num_outputs"].get<std::string>());
      row.push_back(acc);
    }
    return {{"nodes", nodes_},
            {"arg_nodes", args_},
            {"heads", heads_},
            {"node_row_ptr", row},
            {"attrs",
             {{"storage_id", {"list_int", sids_}},
              {"shape", {"list_shape", shapes_}},
              {"dltype", {"list_str", dtypes_}}}}};
  }

 private:
  void AddEntry(const std::vector<int64_t>& shape, int sid, const std::string& dtype) {
    shapes_.push_back(shape);
    sids_.push_back(sid);
    dtypes_.push_back(dtype);
  }
  Json nodes_ = Json::array(), heads_ = Json::array();
  std::vector<int> args_, sids_;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<std::string> dtypes_;
};

// x[4], c[4]: t1 = x + c; t2 = t1 * t1; t3 = t2 + c. t3 reuses t1's storage (t1 is dead by
// then), as TVM's planner would. Outputs: t3, t2.
inline Json SmallGraph() {
  GraphBuilder g;
  int x = g.Input("x", {4}, 0);
  int c = g.Input("c", {4}, 1);
  int t1 = g.Op("add", {{x, 0}, {c, 0}}, {{{4}, 2}});
  int t2 = g.Op("mul", {{t1, 0}, {t1, 0}}, {{{4}, 3}});
  int t3 = g.Op("add", {{t2, 0}, {c, 0}}, {{{4}, 2}});
  g.Head(t3);
  g.Head(t2);
  return g.Build();
}

// TVM's params blob.
inline std::string SaveParams(
    const std::vector<std::tuple<std::string, std::vector<int64_t>, std::vector<float>>>& params) {
  std::string out;
  auto put = [&out](const auto& v) { out.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  put(uint64_t{0xF7E58D4F05049CB7ULL});
  put(uint64_t{0});
  put(static_cast<uint64_t>(params.size()));
  for (const auto& [name, shape, data] : params) {
    put(static_cast<uint64_t>(name.size()));
    out += name;
  }
  put(static_cast<uint64_t>(params.size()));
  for (const auto& [name, shape, data] : params) {
    put(uint64_t{0xDD5E40F096B4A13FULL});
    put(uint64_t{0});
    put(int32_t{kDLCPU});
    put(int32_t{0});
    put(static_cast<int32_t>(shape.size()));
    put(uint8_t{kDLFloat});
    put(uint8_t{32});
    put(uint16_t{1});
    for (int64_t d : shape) put(d);
    put(static_cast<int64_t>(data.size() * sizeof(float)));
    out.append(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float));
  }
  return out;
}

// The executor module and its functions.
class Executor {
 public:
  Executor(const std::string& graph, const ObjectRef& lib, int dev_type = kDLCPU) {
    Function create = Function::GetGlobalRequired("tvm.graph_executor.create");
    Any m = Call(create, {graph, Arg::Module(lib.get()), dev_type, 0});
    EXPECT_EQ(m.type_code(), kTVMModuleHandle);
    mod_ = m.as_object();
  }
  Function F(const char* name) const {
    TVMFunctionHandle f = nullptr;
    polyffi::CheckCall(TVMModGetFunction(mod_.get(), name, 0, &f));
    EXPECT_NE(f, nullptr) << name;
    return Function::Adopt(f);
  }
  Any operator()(const char* name, std::vector<Arg> args = {}) const {
    return Call(F(name), std::move(args));
  }
  void LoadParams(const std::string& blob) const {
    TVMByteArray b{blob.data(), blob.size()};
    (*this)("load_params", {&b});
  }
  Array Output(int i) const { return CallArray(F("get_output"), {i}); }
  Array InputArray(Arg key) const { return CallArray(F("get_input"), {key}); }
  const ObjectRef& module() const { return mod_; }

 private:
  ObjectRef mod_;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << path;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// ---- End to end --------------------------------------------------------------------------------

}  // namespace graph_executor_test
#endif  // POLYFFI_CORE_TESTS_GRAPH_EXECUTOR_TEST_UTIL_H_
