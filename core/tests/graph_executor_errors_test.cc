// Tests of tvm.graph_executor.create's refusals, through the C ABI (and polyffi.hpp) only:
// malformed graphs, bad arguments and corrupt params blobs.
#include "graph_executor_test_util.h"

namespace graph_executor_test {
namespace {

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
            "ValueError: load_params: array 'c' has shape [2305843009213693952], whose byte "
            "size overflows");
}

TEST(GraphExecutorErrors, OverflowingGraphShape) {
  Json g = SmallGraph();
  g["attrs"]["shape"][1][1] = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_EQ(CreateError(g.dump()),
            "ValueError: array shape [1099511627776, 1099511627776] is negative or too large");
}

}  // namespace
}  // namespace graph_executor_test
