// Tests of tvm.graph_executor.create, through the C ABI (and polyffi.hpp) only.
//
// Small graphs run with kernels made here (a runtime.ModuleFromFunctions module of packed
// functions), so every error path can be reached on purpose; the digits model runs with the
// real libdigits_model.so and must reproduce train.py's predictions.
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

namespace {

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

Any Call(const Function& f, std::vector<Arg> args) {
  std::vector<TVMValue> values;
  std::vector<int> codes;
  for (const Arg& a : args) values.push_back(a.v), codes.push_back(a.code);
  return f.CallPacked(values.data(), codes.data(), static_cast<int>(args.size()));
}

// Calls f and adopts the array it returns. (Any keeps an NDArray as its object handle, which
// has no public way back to the DLTensor, so arrays are taken from TVMFuncCall directly.)
Array CallArray(const Function& f, std::vector<Arg> args) {
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
std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.full();
  }
  return "";
}

float* Data(DLTensor* t) {
  return reinterpret_cast<float*>(static_cast<char*>(t->data) + t->byte_offset);
}

int64_t Size(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

// A kernel over DLTensor arguments: checks codes and arity, then runs body.
Function Kernel(int arity, std::function<void(std::vector<DLTensor*>&)> body) {
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

Function Elementwise(float (*op)(float, float)) {
  return Kernel(3, [op](std::vector<DLTensor*>& t) {
    if (Size(t[0]) != Size(t[2]) || Size(t[1]) != Size(t[2])) {
      throw Error("ValueError", "elementwise: size mismatch");
    }
    for (int64_t i = 0; i < Size(t[2]); ++i) Data(t[2])[i] = op(Data(t[0])[i], Data(t[1])[i]);
  });
}

// The kernel library for the small graphs.
ObjectRef MakeLib() {
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
Json SmallGraph() {
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
std::string SaveParams(
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

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << path;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// ---- End to end --------------------------------------------------------------------------------

TEST(GraphExecutor, SmallGraphRunsWithSharedStorage) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  EXPECT_EQ(ex("get_num_inputs").as_int(), 2);
  EXPECT_EQ(ex("get_num_outputs").as_int(), 2);
  EXPECT_EQ(ex("get_input_index", {"c"}).as_int(), 1);
  EXPECT_EQ(ex("get_input_index", {"nope"}).as_int(), -1);
  Array x = Array::Of({1, 2, 3, 4}, {4});
  Array c = Array::Of({0.5f, 0.5f, 0.5f, 0.5f}, {4});
  ex("set_input", {"x", x});
  ex("set_input", {1, c});
  ex("run");
  EXPECT_EQ(ex.Output(0).Get(), (std::vector<float>{2.75f, 6.75f, 12.75f, 20.75f}));
  EXPECT_EQ(ex.Output(1).Get(), (std::vector<float>{2.25f, 6.25f, 12.25f, 20.25f}));
  // A second run with new input overwrites everything (no stale values from the shared slot).
  x.Set({0, 0, 0, 0});
  ex("set_input", {0, x});
  ex("run");
  EXPECT_EQ(ex.Output(0).Get(), (std::vector<float>{0.75f, 0.75f, 0.75f, 0.75f}));
}

TEST(GraphExecutor, GetOutputCopiesIntoGivenArray) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  ex("set_input", {"x", Array::Of({1, 1, 1, 1}, {4})});
  ex("set_input", {"c", Array::Of({1, 1, 1, 1}, {4})});
  ex("run");
  Array out({4});
  Any r = ex("get_output", {1, out});
  EXPECT_TRUE(r.is_none());
  EXPECT_EQ(out.Get(), (std::vector<float>{4, 4, 4, 4}));
}

TEST(GraphExecutor, GetOutputReturnsNewArrayThatOutlivesTheExecutor) {
  ObjectRef lib = MakeLib();
  Array held(TVMArrayHandle{nullptr});
  {
    Executor ex(SmallGraph().dump(), lib);
    ex("set_input", {"x", Array::Of({1, 2, 3, 4}, {4})});
    ex("set_input", {"c", Array::Of({0, 0, 0, 0}, {4})});
    ex("run");
    held = ex.Output(1);
    ex("set_input", {"x", Array::Of({9, 9, 9, 9}, {4})});
    ex("run");  // Must not change the array already handed out.
  }
  EXPECT_EQ(held.Get(), (std::vector<float>{1, 4, 9, 16}));
}

TEST(GraphExecutor, GetInputIsTheExecutorsStorage) {
  ObjectRef lib = MakeLib();
  Array input(TVMArrayHandle{nullptr});
  {
    Executor ex(SmallGraph().dump(), lib);
    ex("set_input", {"x", Array::Of({1, 2, 3, 4}, {4})});
    ex("set_input", {"c", Array::Of({0, 0, 0, 0}, {4})});
    input = ex.InputArray("x");
    EXPECT_EQ(input.Get(), (std::vector<float>{1, 2, 3, 4}));
    // Writing through the returned array feeds the next run, as in TVM.
    input.Set({3, 3, 3, 3});
    ex("run");
    EXPECT_EQ(ex.Output(1).Get(), (std::vector<float>{9, 9, 9, 9}));
  }
  // The view keeps its storage alive after the executor is gone.
  EXPECT_EQ(input.Get(), (std::vector<float>{3, 3, 3, 3}));
}

TEST(GraphExecutor, LoadParamsSetsInputsAndSkipsUnknownNames) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  ex.LoadParams(SaveParams({{"folded_away", {2}, {7, 7}}, {"c", {4}, {1, 2, 3, 4}}}));
  ex("set_input", {"x", Array::Of({0, 0, 0, 0}, {4})});
  ex("run");
  // t1 = c, t2 = c*c, t3 = c*c + c.
  EXPECT_EQ(ex.Output(0).Get(), (std::vector<float>{2, 6, 12, 20}));
}

TEST(GraphExecutor, FlattenDataPassesOneDimensionalTensors) {
  ObjectRef lib = MakeLib();
  GraphBuilder g;
  int x = g.Input("x", {2, 3}, 0);
  int y = g.Op("flat_copy", {{x, 0}}, {{{2, 3}, 1}}, /*flatten=*/true);
  g.Head(y);
  Executor ex(g.Build().dump(), lib);
  ex("set_input", {0, Array::Of({1, 2, 3, 4, 5, 6}, {2, 3})});
  ex("run");
  Array out = ex.Output(0);
  EXPECT_EQ(out.get()->ndim, 2);  // Outputs keep the graph's shape.
  EXPECT_EQ(out.Get(), (std::vector<float>{1, 2, 3, 4, 5, 6}));

  GraphBuilder unflat;  // Without flatten_data the kernel sees [2, 3] and refuses.
  x = unflat.Input("x", {2, 3}, 0);
  unflat.Head(unflat.Op("flat_copy", {{x, 0}}, {{{2, 3}, 1}}));
  Executor ex2(unflat.Build().dump(), lib);
  ex2("set_input", {0, Array::Of({1, 2, 3, 4, 5, 6}, {2, 3})});
  EXPECT_EQ(ErrorOf([&] { ex2("run"); }), "ValueError: not flattened");
}

TEST(GraphExecutor, MultiOutputNode) {
  ObjectRef lib = MakeLib();
  GraphBuilder g;
  int x = g.Input("x", {4}, 0);
  int s = g.Op("split", {{x, 0}}, {{{2}, 1}, {{2}, 2}});
  int m = g.Op("mul", {{s, 0}, {s, 1}}, {{{2}, 3}});
  g.Head(m);
  g.Head(s, 1);
  Executor ex(g.Build().dump(), lib);
  ex("set_input", {"x", Array::Of({1, 2, 3, 4}, {4})});
  ex("run");
  EXPECT_EQ(ex.Output(0).Get(), (std::vector<float>{3, 8}));
  EXPECT_EQ(ex.Output(1).Get(), (std::vector<float>{3, 4}));
}

TEST(GraphExecutor, KernelErrorPropagatesFromRun) {
  ObjectRef lib = MakeLib();
  GraphBuilder g;
  int x = g.Input("x", {2}, 0);
  g.Head(g.Op("fail", {{x, 0}}, {{{2}, 1}}));
  Executor ex(g.Build().dump(), lib);
  ex("set_input", {"x", Array::Of({1, 2}, {2})});
  EXPECT_EQ(ErrorOf([&] { ex("run"); }), "AssertionError: kernel refused its input");
}

// ---- TVM 0.18's other executor functions -------------------------------------------------------

// A shape from get_*_info: a runtime.ShapeTuple where the runtime has that type, else an Array.
std::vector<int64_t> ShapeOf(const ObjectRef& obj) {
  bool tuple = obj.type_key() == "runtime.ShapeTuple";
  Function size =
      Function::GetGlobalRequired(tuple ? "runtime.GetShapeTupleSize" : "runtime.ArraySize");
  Function item =
      Function::GetGlobalRequired(tuple ? "runtime.GetShapeTupleElem" : "runtime.ArrayGetItem");
  std::vector<int64_t> out;
  int64_t n = size(obj).as_int();
  for (int64_t i = 0; i < n; ++i) out.push_back(item(obj, i).as_int());
  return out;
}

// get_input_info / get_output_info as {name: (shape, dtype)}.
std::map<std::string, std::pair<std::vector<int64_t>, std::string>> Info(const Any& info) {
  Function get = Function::GetGlobalRequired("runtime.MapGetItem");
  Function items = Function::GetGlobalRequired("runtime.MapItems");
  Function size = Function::GetGlobalRequired("runtime.ArraySize");
  Function at = Function::GetGlobalRequired("runtime.ArrayGetItem");
  Any shapes = get(info.as_object(), "shape");
  Any dtypes = get(info.as_object(), "dtype");
  std::map<std::string, std::pair<std::vector<int64_t>, std::string>> out;
  Any flat = items(shapes.as_object());
  for (int64_t i = 0; i < size(flat.as_object()).as_int(); i += 2) {
    std::string name = at(flat.as_object(), i).as_str();
    out[name].first = ShapeOf(at(flat.as_object(), i + 1).as_object());
    out[name].second = get(dtypes.as_object(), name).as_str();
  }
  EXPECT_EQ(size(items(dtypes.as_object()).as_object()).as_int(),
            2 * static_cast<int64_t>(out.size()));
  return out;
}

using InfoMap = std::map<std::string, std::pair<std::vector<int64_t>, std::string>>;

TEST(ExecutorFunctions, InfoListsInputsLoadParamsHasNotNamed) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  EXPECT_EQ(Info(ex("get_input_info")),
            (InfoMap{{"x", {{4}, "float32"}}, {"c", {{4}, "float32"}}}));
  // As TVM: every name of a loaded blob counts as a param, in the graph or not.
  ex.LoadParams(SaveParams({{"c", {4}, {1, 2, 3, 4}}, {"folded_away", {1}, {0}}}));
  EXPECT_EQ(Info(ex("get_input_info")), (InfoMap{{"x", {{4}, "float32"}}}));
  // Outputs by their nodes' names: t3 is "add_4", t2 "mul_3".
  EXPECT_EQ(Info(ex("get_output_info")),
            (InfoMap{{"add_4", {{4}, "float32"}}, {"mul_3", {{4}, "float32"}}}));
  EXPECT_EQ(ErrorOf([&] { ex("get_input_info", {1}); }),
            "TypeError: GraphExecutor.get_input_info: expected 0 arguments but got 1");
}

TEST(ExecutorFunctions, GetInputOfAnUnknownNameIsNone) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  EXPECT_TRUE(ex("get_input", {"nope"}).is_none());
  EXPECT_EQ(ex.InputArray("c").get()->shape[0], 4);
  EXPECT_EQ(ErrorOf([&] { ex("get_input", {7}); }),
            "IndexError: get_input: input index 7 out of range [0, 2)");
}

TEST(ExecutorFunctions, OutputsByName) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  EXPECT_EQ(ex("get_output_index", {"add_4"}).as_int(), 0);
  EXPECT_EQ(ex("get_output_index", {"mul_3"}).as_int(), 1);
  EXPECT_EQ(ex("get_output_index", {"x"}).as_int(), -1);
  EXPECT_EQ(ErrorOf([&] { ex("get_output_index", {1}); }),
            "TypeError: get_output_index: argument 0 expected str but got int");
  ex("set_input", {"x", Array::Of({1, 2, 3, 4}, {4})});
  ex("set_input", {"c", Array::Of({0.5f, 0.5f, 0.5f, 0.5f}, {4})});
  ex("run");
  Array by_name = CallArray(ex.F("get_output"), {"mul_3"});
  EXPECT_EQ(by_name.Get(), ex.Output(1).Get());
}

TEST(ExecutorFunctions, InputZeroCopyReadsTheCallersMemory) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  {
    Array x = Array::Of({1, 2, 3, 4}, {4});
    ex("set_input_zero_copy", {"x", x});
    ex("set_input", {"c", Array::Of({0.5f, 0.5f, 0.5f, 0.5f}, {4})});
    ex("run");
    EXPECT_EQ(ex.Output(0).Get(), (std::vector<float>{2.75f, 6.75f, 12.75f, 20.75f}));
    // Changing the caller's array (no set_input) changes the next run.
    x.Set({0, 0, 0, 0});
    ex("run");
    EXPECT_EQ(ex.Output(0).Get(), (std::vector<float>{0.75f, 0.75f, 0.75f, 0.75f}));
    // get_input returns an array over the same memory; set_input writes into it.
    EXPECT_EQ(ex.InputArray("x").get()->data, x.get()->data);
    ex("set_input", {"x", Array::Of({1, 1, 1, 1}, {4})});
    EXPECT_EQ(x.Get(), (std::vector<float>{1, 1, 1, 1}));
  }
  // The caller's handle is gone; the executor still holds the array it reads.
  ex("run");
  EXPECT_EQ(ex.Output(1).Get(), (std::vector<float>{2.25f, 2.25f, 2.25f, 2.25f}));
}

TEST(ExecutorFunctions, OutputZeroCopyWritesTheCallersMemory) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  Array t3({4}), t2({4});
  ex("set_output_zero_copy", {0, t3});
  ex("set_output_zero_copy", {"mul_3:1", t2});  // TVM's "name:index" key
  ex("set_input", {"x", Array::Of({1, 2, 3, 4}, {4})});
  ex("set_input", {"c", Array::Of({0.5f, 0.5f, 0.5f, 0.5f}, {4})});
  ex("run");
  EXPECT_EQ(t3.Get(), (std::vector<float>{2.75f, 6.75f, 12.75f, 20.75f}));
  EXPECT_EQ(t2.Get(), (std::vector<float>{2.25f, 6.25f, 12.25f, 20.25f}));
  EXPECT_EQ(ex.Output(0).Get(), t3.Get());
}

TEST(ExecutorFunctions, ZeroCopyFollowsSharedStorageAndFlattening) {
  ObjectRef lib = MakeLib();
  // x[2, 2] -> __nop (a reshape to [4] sharing x's storage) -> flat_copy (flattened) -> y[4];
  // y -> __nop (a reshape to [2, 2] sharing y's storage) is the output.
  GraphBuilder g;
  int x = g.Input("x", {2, 2}, 0);
  int r = g.Op("__nop", {{x, 0}}, {{{4}, 0}});
  int y = g.Op("flat_copy", {{r, 0}}, {{{4}, 1}}, /*flatten=*/true);
  int out = g.Op("__nop", {{y, 0}}, {{{2, 2}, 1}});
  g.Head(out);
  Executor ex(g.Build().dump(), lib);
  Array in = Array::Of({1, 2, 3, 4}, {2, 2});
  Array result({2, 2});
  ex("set_input_zero_copy", {0, in});
  ex("set_output_zero_copy", {0, result});
  ex("run");
  EXPECT_EQ(result.Get(), (std::vector<float>{1, 2, 3, 4}));
  in.Set({5, 6, 7, 8});
  ex("run");
  EXPECT_EQ(result.Get(), (std::vector<float>{5, 6, 7, 8}));
}

TEST(ExecutorFunctions, ZeroCopyRefusesArraysThatDoNotFit) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  EXPECT_EQ(ErrorOf([&] {
              ex("set_input_zero_copy", {"x", Array::Of({1, 2}, {2})});
            }),
            "ValueError: set_input_zero_copy: input 'x' expects [4] float32 but got [2] float32");
  Array ints({4}, DLDataType{kDLInt, 32, 1});
  EXPECT_EQ(ErrorOf([&] {
              ex("set_output_zero_copy", {1, ints});
            }),
            "ValueError: set_output_zero_copy: output 1 expects [4] float32 but got [4] int32");
  // A view 4 bytes into an array is not 64-byte aligned.
  Array big({8});
  DLTensor view = *big.get();
  int64_t four = 4;
  view.shape = &four;
  view.byte_offset = 4;
  Arg misaligned(0);
  misaligned.v.v_handle = &view, misaligned.code = kTVMDLTensorHandle;
  EXPECT_EQ(ErrorOf([&] {
              ex("set_input_zero_copy", {"x", misaligned});
            }),
            "ValueError: set_input_zero_copy: input 'x': the array's data must be 64-byte "
            "aligned (and not NULL)");
  view.byte_offset = 0;  // an aligned view is lent as is
  ex("set_input_zero_copy", {"x", misaligned});
  EXPECT_EQ(ErrorOf([&] {
              ex("set_input_zero_copy", {"nope", big});
            }),
            "KeyError: set_input_zero_copy: the graph has no input named 'nope'");
  EXPECT_EQ(ErrorOf([&] {
              ex("set_output_zero_copy", {"nope", big});
            }),
            "KeyError: set_output_zero_copy: the graph has no output named 'nope'");
  EXPECT_EQ(ErrorOf([&] {
              ex("set_output_zero_copy", {2, big});
            }),
            "IndexError: set_output_zero_copy: output index 2 out of range [0, 2)");
  EXPECT_EQ(ErrorOf([&] {
              ex("set_input_zero_copy", {"x", 1.5});
            }),
            "TypeError: set_input_zero_copy: expected an array but got float");
}

TEST(ExecutorFunctions, ShareParamsUsesTheOtherExecutorsArrays) {
  ObjectRef lib = MakeLib();
  Executor a(SmallGraph().dump(), lib);
  Executor b(SmallGraph().dump(), lib);
  std::string blob = SaveParams({{"c", {4}, {1, 2, 3, 4}}, {"folded_away", {1}, {0}}});
  a.LoadParams(blob);
  TVMByteArray bytes{blob.data(), blob.size()};
  b("share_params", {Arg::Module(a.module().get()), &bytes});
  EXPECT_EQ(b.InputArray("c").get()->data, a.InputArray("c").get()->data);
  b("set_input", {"x", Array::Of({0, 0, 0, 0}, {4})});
  b("run");  // c counts as set in b
  EXPECT_EQ(b.Output(0).Get(), (std::vector<float>{2, 6, 12, 20}));
  // New params loaded into a are what b computes with.
  a.LoadParams(SaveParams({{"c", {4}, {1, 1, 1, 1}}}));
  b("run");
  EXPECT_EQ(b.Output(0).Get(), (std::vector<float>{2, 2, 2, 2}));
}

TEST(ExecutorFunctions, ShareParamsRefusesBadArguments) {
  ObjectRef lib = MakeLib();
  Executor a(SmallGraph().dump(), lib);
  Executor b(SmallGraph().dump(), lib);
  std::string blob = SaveParams({{"c", {4}, {1, 2, 3, 4}}});
  TVMByteArray bytes{blob.data(), blob.size()};
  EXPECT_EQ(ErrorOf([&] {
              b("share_params", {Arg::Module(lib.get()), &bytes});
            }),
            "TypeError: share_params: argument 0 expected a GraphExecutor module but got Module");
  EXPECT_EQ(ErrorOf([&] {
              b("share_params", {1, &bytes});
            }),
            "TypeError: share_params: argument 0 expected a GraphExecutor module but got int");
  EXPECT_EQ(ErrorOf([&] {
              b("share_params", {Arg::Module(a.module().get()), "c"});
            }),
            "TypeError: share_params: argument 1 expected bytes but got str");
  std::string junk = "not a params blob at all";
  TVMByteArray junk_bytes{junk.data(), junk.size()};
  EXPECT_EQ(ErrorOf([&] {
              b("share_params", {Arg::Module(a.module().get()), &junk_bytes});
            }),
            "ValueError: share_params: not a TVM params blob");
  // An executor whose "c" has another shape cannot lend it.
  GraphBuilder g;
  int x = g.Input("x", {2}, 0);
  int c = g.Input("c", {2}, 1);
  g.Head(g.Op("add", {{x, 0}, {c, 0}}, {{{2}, 2}}));
  Executor other(g.Build().dump(), lib);
  EXPECT_EQ(ErrorOf([&] {
              b("share_params", {Arg::Module(other.module().get()), &bytes});
            }),
            "ValueError: share_params: input 'c' expects [4] float32 but got [2] float32");
  EXPECT_NE(b.InputArray("c").get()->data, other.InputArray("c").get()->data);  // unchanged
}

TEST(ExecutorFunctions, RunFromInputsReturnsEveryOutput) {
  ObjectRef lib = MakeLib();
  Executor ex(SmallGraph().dump(), lib);
  Array x = Array::Of({1, 2, 3, 4}, {4});
  Array c = Array::Of({0.5f, 0.5f, 0.5f, 0.5f}, {4});
  Any outs = ex("run_from_inputs", {kDLCPU, 0, "x", x, 1, c});
  Function size = Function::GetGlobalRequired("runtime.ArraySize");
  ASSERT_EQ(size(outs.as_object()).as_int(), 2);
  // Each item is a new array holding a copy of the output.
  Function item = Function::GetGlobalRequired("runtime.ArrayGetItem");
  TVMValue args[2];
  int codes[2] = {kTVMObjectHandle, kTVMArgInt};
  args[0].v_handle = outs.as_object().get();
  args[1].v_int64 = 1;
  TVMValue rv;
  int rc = kTVMNullptr;
  ASSERT_EQ(TVMFuncCall(item.get(), args, codes, 2, &rv, &rc), 0) << TVMGetLastError();
  ASSERT_EQ(rc, kTVMNDArrayHandle);
  Array second(static_cast<TVMArrayHandle>(rv.v_handle));
  EXPECT_EQ(second.Get(), (std::vector<float>{2.25f, 6.25f, 12.25f, 20.25f}));
  EXPECT_EQ(ErrorOf([&] {
              ex("run_from_inputs", {kDLCPU, 0, "x"});
            }),
            "TypeError: run_from_inputs: expected a device type, a device id and key/array "
            "pairs, got 3 arguments");
  EXPECT_EQ(ErrorOf([&] {
              ex("run_from_inputs", {kDLCPU, 0, "nope", x});
            }),
            "KeyError: run_from_inputs: the graph has no input named 'nope'");
  EXPECT_EQ(ErrorOf([&] {
              ex("run_from_inputs", {2, 0});
            }),
            "ValueError: run_from_inputs: device type 2 is not available (this runtime has CPU "
            "only)");
}

// A host exception object raised in a kernel comes out of run() as the same object.
int RaiseHostException(TVMValue*, int*, int, TVMRetValueHandle, void* resource) {
  TVMAPISetLastPythonError(resource);
  return -1;
}

TEST(ExecutorFunctions, HostExceptionOfAKernelCrossesRun) {
  int host_exception = 0;  // stands for a PyObject*; no hooks: held borrowed
  TVMFunctionHandle raise = nullptr;
  ASSERT_EQ(TVMFuncCreateFromCFunc(RaiseHostException, &host_exception, nullptr, &raise), 0);
  Function make = Function::GetGlobalRequired("runtime.ModuleFromFunctions");
  Any lib = make("test.Raise", "raise", Function::Adopt(raise));
  GraphBuilder g;
  int x = g.Input("x", {2}, 0);
  g.Head(g.Op("raise", {{x, 0}}, {{{2}, 1}}));
  Executor ex(g.Build().dump(), lib.as_object());
  ex("set_input", {"x", Array::Of({1, 2}, {2})});
  Function run = ex.F("run");
  TVMValue rv;
  int rc = kTVMNullptr;
  EXPECT_EQ(TVMFuncCall(run.get(), nullptr, nullptr, 0, &rv, &rc), -1);
  EXPECT_EQ(TVMGetLastPythonError(), &host_exception);
  TVMDropLastPythonError();
  EXPECT_EQ(TVMGetLastPythonError(), nullptr);
}

// ---- The digits model --------------------------------------------------------------------------

ObjectRef LoadDigitsLib() {
  TVMModuleHandle h = nullptr;
  polyffi::CheckCall(TVMModLoadFromFile(DIGITS_MODEL_LIB, "", &h));
  return ObjectRef::Adopt(h);
}

TEST(DigitsModel, ReproducesTrainingScriptPredictions) {
  const std::string dir = DIGITS_MODEL_DIR;
  ObjectRef lib = LoadDigitsLib();
  Executor ex(ReadFile(dir + "/graph.json"), lib);
  ex.LoadParams(ReadFile(dir + "/params.bin"));
  Json expected = Json::parse(ReadFile(dir + "/expected.json"));
  const std::vector<int> pred = expected["predictions"].get<std::vector<int>>();
  const int64_t n = static_cast<int64_t>(pred.size());
  std::string xs = ReadFile(dir + "/test_x.bin");
  std::string ys = ReadFile(dir + "/test_y.bin");
  ASSERT_EQ(xs.size(), static_cast<size_t>(n * 64 * 4));
  ASSERT_EQ(ys.size(), static_cast<size_t>(n * 4));
  Array x({n, 64});
  polyffi::CheckCall(TVMArrayCopyFromBytes(x.get(), xs.data(), xs.size()));
  ex("set_input", {"data", x});
  ex("run");
  std::vector<float> probs = ex.Output(0).Get();
  int correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = probs.data() + i * 10;
    int best = static_cast<int>(std::max_element(row, row + 10) - row);
    EXPECT_EQ(best, pred[i]) << "sample " << i;
    int32_t label;
    std::memcpy(&label, ys.data() + i * 4, 4);
    correct += best == label;
  }
  EXPECT_DOUBLE_EQ(static_cast<double>(correct) / n, expected["accuracy"].get<double>());
}

TEST(DigitsModel, KernelShapeCheckReportsThroughTheErrorSlot) {
  // A graph whose first weight has 63 input features: the DSO's own check must fail the run
  // with its message, delivered through __TVMAPISetLastError.
  Json g = Json::parse(ReadFile(std::string(DIGITS_MODEL_DIR) + "/graph_b1.json"));
  g["attrs"]["shape"][1][1] = Json::array({32, 63});
  ObjectRef lib = LoadDigitsLib();
  Executor ex(g.dump(), lib);
  for (int i = 0; i < ex("get_num_inputs").as_int(); ++i) ex.InputArray(i);  // values don't matter
  EXPECT_EQ(ErrorOf([&] { ex("run"); }),
            "ValueError: fused_dense_bias_relu: weight has 63 input features but data has 64");
}

// ---- Errors: create ----------------------------------------------------------------------------

std::string CreateError(const std::string& graph) {
  ObjectRef lib = MakeLib();
  return ErrorOf([&] { Executor ex(graph, lib); });
}

TEST(GraphExecutorErrors, MalformedJson) {
  EXPECT_EQ(CreateError("{\"nodes\": [").rfind("ValueError: graph JSON does not parse", 0), 0u);
  EXPECT_EQ(CreateError("").rfind("ValueError: graph JSON does not parse", 0), 0u);
}

TEST(GraphExecutorErrors, StructurallyInvalidGraphs) {
  EXPECT_EQ(CreateError("[]"), "ValueError: graph JSON: the top level must be an object");
  Json g = SmallGraph();
  g.erase("heads");
  EXPECT_EQ(CreateError(g.dump()), "ValueError: graph JSON: missing \"heads\"");

  g = SmallGraph();
  g["nodes"][2]["inputs"][0] = {3, 0, 0};  // reads a node that comes later
  EXPECT_NE(CreateError(g.dump()).find("which does not precede it"), std::string::npos);

  g = SmallGraph();
  g["nodes"][2]["attrs"]["num_inputs"] = "3";
  EXPECT_NE(CreateError(g.dump()).find("declares num_inputs 3 but lists 2"), std::string::npos);

  g = SmallGraph();
  g["attrs"]["shape"] = {"list_shape", {{4}, {4}}};
  EXPECT_NE(CreateError(g.dump()).find("must each have 5 entries"), std::string::npos);

  g = SmallGraph();
  g["attrs"]["dltype"][1][0] = "complex64";
  EXPECT_EQ(CreateError(g.dump()), "ValueError: graph JSON: unsupported dtype 'complex64'");

  g = SmallGraph();
  g["attrs"]["shape"][1][0] = {"four"};
  EXPECT_EQ(
      CreateError(g.dump()),
      "ValueError: graph JSON: shape of entry 0 dimension 0 must be an integer, got \"four\"");
  g["attrs"]["shape"][1][0] = "four";
  EXPECT_EQ(CreateError(g.dump()), "ValueError: graph JSON: shape of entry 0 must be a list");

  g = SmallGraph();
  g["nodes"][2]["name"] = 7;  // a type error inside nlohmann is still the graph's
  EXPECT_EQ(CreateError(g.dump()).rfind("ValueError: graph JSON is malformed", 0), 0u);

  g = SmallGraph();
  g["nodes"][2]["op"] = "relay_op";
  EXPECT_NE(CreateError(g.dump()).find("unknown op type 'relay_op'"), std::string::npos);

  g = SmallGraph();
  g["node_row_ptr"] = {0, 1, 2};
  EXPECT_NE(CreateError(g.dump()).find("node_row_ptr must have 6 entries"), std::string::npos);
}

TEST(GraphExecutorErrors, OpMissingFromLibraryIsKeyErrorWithName) {
  Json g = SmallGraph();
  g["nodes"][3]["attrs"]["func_name"] = "fused_conv2d_not_here";
  EXPECT_EQ(CreateError(g.dump()),
            "KeyError: graph executor: function 'fused_conv2d_not_here' of node 'mul_3' is not "
            "in the library module");
}

TEST(GraphExecutorErrors, CreateArguments) {
  Function create = Function::GetGlobalRequired("tvm.graph_executor.create");
  ObjectRef lib = MakeLib();
  std::string graph = SmallGraph().dump();
  EXPECT_EQ(ErrorOf([&] {
              Call(create, {graph, "not a module", 1, 0});
            }),
            "TypeError: tvm.graph_executor.create: argument 1 (lib) expected Module but got str");
  EXPECT_EQ(ErrorOf([&] {
              Call(create, {graph, Arg::Module(lib.get())});
            }).rfind("TypeError: tvm.graph_executor.create", 0),
            0u);
  EXPECT_EQ(ErrorOf([&] { Executor ex(graph, lib, kDLCUDA); }),
            "ValueError: tvm.graph_executor.create: only CPU (device type 1) is supported, got "
            "device type 2");
}

// ---- Errors: inputs and outputs ----------------------------------------------------------------

class RunningExecutor : public ::testing::Test {
 protected:
  ObjectRef lib_ = MakeLib();
  Executor ex_{SmallGraph().dump(), lib_};
};

TEST_F(RunningExecutor, SetInputWrongShape) {
  EXPECT_EQ(ErrorOf([&] {
              ex_("set_input", {"x", Array::Of({1, 2, 3}, {3})});
            }),
            "ValueError: set_input: input 'x' expects [4] float32 but got [3] float32");
  EXPECT_EQ(ErrorOf([&] {
              ex_("set_input", {"x", Array::Of({1, 2, 3, 4}, {2, 2})});
            }),
            "ValueError: set_input: input 'x' expects [4] float32 but got [2, 2] float32");
}

TEST_F(RunningExecutor, SetInputWrongDtype) {
  Array ints({4}, DLDataType{kDLInt, 32, 1});
  EXPECT_EQ(ErrorOf([&] {
              ex_("set_input", {"x", ints});
            }),
            "ValueError: set_input: input 'x' expects [4] float32 but got [4] int32");
}

TEST_F(RunningExecutor, SetInputUnknownNameIsKeyError) {
  EXPECT_EQ(ErrorOf([&] {
              ex_("set_input", {"data", Array::Of({1, 2, 3, 4}, {4})});
            }),
            "KeyError: set_input: the graph has no input named 'data'");
}

TEST_F(RunningExecutor, BadIndicesAreIndexErrors) {
  Array a = Array::Of({1, 2, 3, 4}, {4});
  EXPECT_EQ(ErrorOf([&] {
              ex_("set_input", {2, a});
            }),
            "IndexError: set_input: input index 2 out of range [0, 2)");
  EXPECT_EQ(ErrorOf([&] {
              ex_("set_input", {-1, a});
            }),
            "IndexError: set_input: input index -1 out of range [0, 2)");
  EXPECT_EQ(ErrorOf([&] { ex_("get_input", {5}); }),
            "IndexError: get_input: input index 5 out of range [0, 2)");
  EXPECT_EQ(ErrorOf([&] { ex_("get_output", {2}); }),
            "IndexError: get_output: output index 2 out of range [0, 2)");
  EXPECT_EQ(ErrorOf([&] {
              ex_("get_output", {-1, a});
            }),
            "IndexError: get_output: output index -1 out of range [0, 2)");
}

TEST_F(RunningExecutor, WrongArgumentTypes) {
  EXPECT_EQ(ErrorOf([&] {
              ex_("set_input", {"x", 1.5});
            }),
            "TypeError: set_input: expected an array but got float");
  EXPECT_EQ(ErrorOf([&] {
              ex_("set_input", {2.0, Array::Of({1, 2, 3, 4}, {4})});
            }),
            "TypeError: set_input: input must be an int index or a str name, got float");
  // A str is an output name (TVM 0.18); a float is neither.
  EXPECT_EQ(ErrorOf([&] { ex_("get_output", {"0"}); }),
            "KeyError: get_output: the graph has no output named '0'");
  EXPECT_EQ(ErrorOf([&] { ex_("get_output", {0.5}); }),
            "TypeError: get_output: argument 0 expected int but got float");
  EXPECT_EQ(ErrorOf([&] { ex_("run", {1}); }),
            "TypeError: GraphExecutor.run: expected 0 arguments but got 1");
  EXPECT_EQ(ErrorOf([&] { ex_("load_params", {"text"}); }),
            "TypeError: load_params: expected bytes but got str");
}

TEST_F(RunningExecutor, GetOutputIntoWrongShapedArray) {
  ex_("set_input", {"x", Array::Of({1, 2, 3, 4}, {4})});
  ex_("set_input", {"c", Array::Of({1, 1, 1, 1}, {4})});
  ex_("run");
  Array wrong({2, 2});
  EXPECT_EQ(ErrorOf([&] {
              ex_("get_output", {0, wrong});
            }),
            "ValueError: get_output: output 0 expects [4] float32 but got [2, 2] float32");
  Array ints({4}, DLDataType{kDLInt, 32, 1});
  EXPECT_EQ(ErrorOf([&] {
              ex_("get_output", {0, ints});
            }),
            "ValueError: get_output: output 0 expects [4] float32 but got [4] int32");
}

// ---- Errors: params blob -----------------------------------------------------------------------

TEST_F(RunningExecutor, ParamsWrongMagic) {
  std::string blob = SaveParams({{"c", {4}, {1, 2, 3, 4}}});
  blob[0] ^= 0x01;
  EXPECT_EQ(ErrorOf([&] { ex_.LoadParams(blob); }),
            "ValueError: load_params: not a TVM params blob: magic 0xf7e58d4f05049cb6, expected "
            "0xf7e58d4f05049cb7");
  blob = SaveParams({{"c", {4}, {1, 2, 3, 4}}});
  blob[8 * 3 + 8 + 1 + 8] ^= 0x01;  // header, name "c", array count, then the array magic
  EXPECT_EQ(ErrorOf([&] { ex_.LoadParams(blob); }),
            "ValueError: load_params: array 'c' does not start with the NDArray magic");
}

TEST_F(RunningExecutor, ParamsTruncatedAtEveryLength) {
  const std::string blob = SaveParams({{"c", {4}, {1, 2, 3, 4}}, {"x", {4}, {5, 6, 7, 8}}});
  ex_.LoadParams(blob);  // the whole blob is fine
  for (size_t len = 0; len < blob.size(); ++len) {
    std::string err = ErrorOf([&] { ex_.LoadParams(blob.substr(0, len)); });
    EXPECT_EQ(err.rfind("ValueError: load_params: params blob truncated", 0), 0u)
        << "length " << len << ": " << err;
  }
  EXPECT_EQ(ErrorOf([&] { ex_.LoadParams(blob + "!"); }),
            "ValueError: load_params: 1 unexpected trailing bytes after the last array");
}

TEST_F(RunningExecutor, ParamsWithWrongShapeLeaveInputsUnchanged) {
  ex_.LoadParams(SaveParams({{"c", {4}, {1, 1, 1, 1}}}));
  std::string err = ErrorOf([&] {
    ex_.LoadParams(SaveParams({{"c", {4}, {9, 9, 9, 9}}, {"x", {2}, {1, 2}}}));
  });
  EXPECT_EQ(err,
            "ValueError: load_params: param 'x' is [2] float32 but the graph expects [4] "
            "float32");
  EXPECT_EQ(ex_.InputArray("c").Get(), (std::vector<float>{1, 1, 1, 1}));
}

TEST_F(RunningExecutor, ParamsWithInconsistentByteSize) {
  std::string blob = SaveParams({{"c", {4}, {1, 2, 3, 4}}});
  // The int64 data byte size sits right before the 16 data bytes.
  int64_t bad = 12;
  std::memcpy(&blob[blob.size() - 16 - 8], &bad, 8);
  EXPECT_EQ(ErrorOf([&] { ex_.LoadParams(blob); }),
            "ValueError: load_params: array 'c' announces 12 bytes but its shape [4] float32 "
            "needs 16");
}

TEST_F(RunningExecutor, ParamsWithOverflowingShape) {
  std::string blob = SaveParams({{"c", {4}, {1, 2, 3, 4}}});
  // The single int64 dimension sits before the byte size and the 16 data bytes.
  int64_t huge = int64_t{1} << 61;
  std::memcpy(&blob[blob.size() - 16 - 8 - 8], &huge, 8);
  EXPECT_EQ(ErrorOf([&] { ex_.LoadParams(blob); }),
            "ValueError: array shape [2305843009213693952] is negative or too large");
}

TEST(GraphExecutorErrors, OverflowingGraphShape) {
  Json g = SmallGraph();
  g["attrs"]["shape"][1][1] = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_EQ(CreateError(g.dump()),
            "ValueError: array shape [1099511627776, 1099511627776] is negative or too large");
}

}  // namespace
