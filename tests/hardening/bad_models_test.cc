// Bad model files: every one gives a clear error (a message naming the file, or the graph node /
// param / input, and what is wrong), never a crash. The base is the digits example model
// (examples/digits/model and libdigits_model.so); each test writes a damaged copy of one of its
// files to a temporary directory and loads that, as a user would.
//
// Libraries are loaded by path, so their errors name the file. Graph JSON and params reach the
// runtime as text and bytes (tvm.graph_executor.create, load_params), so their errors name what
// inside them is wrong: the node, the param, the entry.
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hardening_util.h"

namespace hardening {
namespace {

using abitests::Handle;
using abitests::Int;
using abitests::Str;
using Json = nlohmann::json;

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << path;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A temporary directory for the damaged copies, removed with its files at the end.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/polyffi_bad_models_XXXXXX";
    EXPECT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  ~TempDir() {
    for (const std::string& f : files_) unlink(f.c_str());
    rmdir(dir_.c_str());
  }
  std::string Write(const std::string& name, const std::string& bytes) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    files_.push_back(path);
    return path;
  }

 private:
  std::string dir_;
  std::vector<std::string> files_;
};

// rc and error of loading path as a module (the module, if any, is freed).
std::string LoadError(const std::string& path) {
  TVMModuleHandle m = nullptr;
  int rc = TVMModLoadFromFile(path.c_str(), "", &m);
  if (rc == 0) {
    TVMModFree(m);
    return "";
  }
  EXPECT_EQ(rc, -1);
  return abitests::LastError();
}

// ---- Libraries ----------------------------------------------------------------------------------

TEST(BadLibraries, ZeroByteFile) {
  TempDir tmp;
  std::string path = tmp.Write("model.so", "");
  std::string err = LoadError(path);
  EXPECT_EQ(abitests::ErrorKind(err), "RuntimeError") << err;
  EXPECT_NE(err.find("cannot load library '" + path + "'"), std::string::npos) << err;
  EXPECT_NE(err.find("file too short"), std::string::npos) << err;
}

TEST(BadLibraries, NotAnElfFile) {
  TempDir tmp;
  std::string path = tmp.Write("model.so", std::string(4096, 'x'));
  std::string err = LoadError(path);
  EXPECT_NE(err.find("cannot load library '" + path + "'"), std::string::npos) << err;
  EXPECT_NE(err.find("invalid ELF header"), std::string::npos) << err;
}

TEST(BadLibraries, MissingFileAndUnknownFormat) {
  std::string err = LoadError("/nonexistent/dir/model.so");
  EXPECT_EQ(err, "ValueError: cannot find file '/nonexistent/dir/model.so'");
  TempDir tmp;
  std::string path = tmp.Write("model.params", "not a module");
  err = LoadError(path);
  EXPECT_EQ(err, "ValueError: unknown module format 'params' for '" + path + "'");
}

#ifdef DIGITS_MODEL_LIB

TEST(BadLibraries, TruncatedAtSeveralLengths) {
  std::string lib = ReadFile(DIGITS_MODEL_LIB);
  ASSERT_GT(lib.size(), 8192u);
  TempDir tmp;
  int i = 0;
  for (size_t len : {size_t{16}, size_t{64}, size_t{1024}, lib.size() / 2, lib.size() - 64}) {
    SCOPED_TRACE(len);
    // A new name per copy: the loader keeps loaded libraries for the process, by path.
    std::string path = tmp.Write("truncated" + std::to_string(i++) + ".so", lib.substr(0, len));
    std::string err = LoadError(path);
    EXPECT_EQ(abitests::ErrorKind(err), "RuntimeError") << err;
    EXPECT_NE(err.find("cannot load library '" + path + "'"), std::string::npos) << err;
  }
}

// ---- The digits model and damaged copies of its files
// ---------------------------------------------

class DigitsModel : public ::testing::Test {
 protected:
  void SetUp() override {
    lib_ = LoadLib(DIGITS_MODEL_LIB);
    graph_ = Json::parse(ReadFile(std::string(DIGITS_MODEL_DIR) + "/graph_b1.json"));
    params_ = ReadFile(std::string(DIGITS_MODEL_DIR) + "/params.bin");
  }
  void TearDown() override { TVMModFree(lib_); }
  // Writes the graph to a file and creates the executor from that file's text, as a user does.
  int Create(Executor* ex, const Json& graph) {
    std::string path = tmp_.Write("graph" + std::to_string(n_++) + ".json", graph.dump(1));
    return ex->Create(ReadFile(path), lib_);
  }
  std::string CreateError(const Json& graph) {
    Executor ex;
    return Create(&ex, graph) == 0 ? "" : ex.error();
  }
  TVMModuleHandle lib_ = nullptr;
  Json graph_;
  std::string params_;
  TempDir tmp_;
  int n_ = 0;
};

TEST_F(DigitsModel, TheUndamagedModelRuns) {
  Executor ex;
  ASSERT_EQ(Create(&ex, graph_), 0) << ex.error();
  ASSERT_EQ(ex.LoadParams(params_).rc, 0);
  Array x({1, 64});
  std::vector<float> zeros(64, 0);
  x.SetBytes(zeros.data(), zeros.size() * sizeof(float));
  ASSERT_EQ(ex("set_input", {Str("data"), x.arg()}).rc, 0);
  Ret run = ex("run");
  ASSERT_EQ(run.rc, 0) << run.error;
  Ret out = ex("get_output", {Int(0)});
  ASSERT_EQ(out.rc, 0) << out.error;
  Array probs(static_cast<TVMArrayHandle>(out.value.v_handle));
  float total = 0;
  for (float p : probs.Floats()) total += p;
  EXPECT_NEAR(total, 1.0f, 1e-4);  // softmax output
}

TEST_F(DigitsModel, LibraryWithoutTvmSymbols) {
  // A valid shared library built for something else: it loads (plugins carry no TVM symbols
  // either), but has no kernels, so creating the executor names the first missing one.
  TVMModuleHandle other = LoadLib(LibPath("libpolyffi_test_not_tvm.so"));
  Executor ex;
  ASSERT_NE(ex.Create(graph_.dump(), other), 0);
  EXPECT_EQ(ex.error(),
            "KeyError: graph executor: function 'fused_dense_bias_relu' of node "
            "'fused_dense_bias_relu' is not in the library module");
  TVMModFree(other);
}

TEST_F(DigitsModel, ReferenceToAMissingNode) {
  Json g = graph_;
  g["nodes"][3]["inputs"][1] = {99, 0, 0};
  EXPECT_EQ(CreateError(g),
            "ValueError: graph JSON: node 'fused_dense_bias_relu' reads node 99, which does not "
            "precede it");
  g = graph_;
  g["nodes"][3]["inputs"][1] = {1, 3, 0};
  EXPECT_EQ(CreateError(g),
            "ValueError: graph JSON: node 'fused_dense_bias_relu' reads output 3 of 'p0', which "
            "has 1");
  g = graph_;
  g["heads"][0] = {7, 0, 0};
  EXPECT_EQ(CreateError(g), "ValueError: graph JSON: heads refers to a missing output [7,0,0]");
  g = graph_;
  g["arg_nodes"][1] = 3;
  EXPECT_EQ(CreateError(g), "ValueError: graph JSON: arg_nodes entry 3 is not a null (input) node");
}

TEST_F(DigitsModel, ReferenceToAMissingFunction) {
  Json g = graph_;
  g["nodes"][6]["attrs"]["func_name"] = "fused_dense_bias_sigmoid";
  EXPECT_EQ(CreateError(g),
            "KeyError: graph executor: function 'fused_dense_bias_sigmoid' of node "
            "'fused_dense_bias_softmax' is not in the library module");
}

TEST_F(DigitsModel, Cycles) {
  // Node 3 reads node 6, which reads node 3: a node may only read nodes before it.
  Json g = graph_;
  g["nodes"][3]["inputs"][0] = {6, 0, 0};
  EXPECT_EQ(CreateError(g),
            "ValueError: graph JSON: node 'fused_dense_bias_relu' reads node 6, which does not "
            "precede it");
  g = graph_;
  g["nodes"][3]["inputs"][0] = {3, 0, 0};  // reads itself
  EXPECT_EQ(CreateError(g),
            "ValueError: graph JSON: node 'fused_dense_bias_relu' reads node 3, which does not "
            "precede it");
}

TEST_F(DigitsModel, ShapesNotMatchingTheParams) {
  Json g = graph_;
  g["attrs"]["shape"][1][1] = {32, 63};  // p0, the first weight
  Executor ex;
  ASSERT_EQ(Create(&ex, g), 0) << ex.error();
  Ret r = ex.LoadParams(params_);
  EXPECT_TRUE(FailsWith(r.rc, "ValueError",
                        "load_params: param 'p0' is [32, 64] float32 but the graph expects "
                        "[32, 63] float32"));
  g = graph_;
  g["attrs"]["dltype"][1][2] = "float16";  // p1
  Executor ex2;
  ASSERT_EQ(Create(&ex2, g), 0) << ex2.error();
  r = ex2.LoadParams(params_);
  EXPECT_TRUE(FailsWith(r.rc, "ValueError",
                        "param 'p1' is [32] float32 but the graph expects [32] float16"));
}

TEST_F(DigitsModel, ParamsOfAnotherModel) {
  Executor ex;
  ASSERT_EQ(Create(&ex, graph_), 0) << ex.error();
  std::string other = ParamsBlob({{"conv1_weight", {kDLFloat, 32, 1}, {2}, std::string(8, '\0')},
                                  {"conv1_bias", {kDLFloat, 32, 1}, {1}, std::string(4, '\0')}});
  std::string path = tmp_.Write("other.params", other);
  Ret r = ex.LoadParams(ReadFile(path));
  EXPECT_TRUE(FailsWith(r.rc, "ValueError",
                        "load_params: none of the 2 params in the blob ('conv1_weight', "
                        "'conv1_bias') is an input of this graph"));
}

TEST_F(DigitsModel, TruncatedAndCorruptParams) {
  Executor ex;
  ASSERT_EQ(Create(&ex, graph_), 0) << ex.error();
  Ret r = ex.LoadParams(params_.substr(0, params_.size() / 2));
  EXPECT_TRUE(FailsWith(r.rc, "ValueError", "load_params: params blob truncated reading"));
  r = ex.LoadParams(std::string(64, '\7'));
  EXPECT_TRUE(FailsWith(r.rc, "ValueError", "load_params: not a TVM params blob"));
  r = ex.LoadParams("");
  EXPECT_TRUE(FailsWith(r.rc, "ValueError", "truncated reading header magic at offset 0"));
}

TEST_F(DigitsModel, OutputIndexOutOfRange) {
  Executor ex;
  ASSERT_EQ(Create(&ex, graph_), 0) << ex.error();
  Ret r = ex("get_output", {Int(1)});
  EXPECT_TRUE(FailsWith(r.rc, "IndexError", "get_output: output index 1 out of range [0, 1)"));
  r = ex("get_output", {Int(-1)});
  EXPECT_TRUE(FailsWith(r.rc, "IndexError", "output index -1 out of range"));
}

TEST_F(DigitsModel, SetInputWithWrongDtypeOrShape) {
  Executor ex;
  ASSERT_EQ(Create(&ex, graph_), 0) << ex.error();
  Array wrong_shape({1, 63});
  Ret r = ex("set_input", {Str("data"), wrong_shape.arg()});
  EXPECT_TRUE(FailsWith(r.rc, "ValueError",
                        "set_input: input 'data' expects [1, 64] float32 but got [1, 63] float32"));
  Array wrong_dtype({1, 64}, DLDataType{kDLInt, 32, 1});
  r = ex("set_input", {Str("data"), wrong_dtype.arg()});
  EXPECT_TRUE(FailsWith(r.rc, "ValueError", "expects [1, 64] float32 but got [1, 64] int32"));
  r = ex("set_input", {Str("image"), wrong_dtype.arg()});
  EXPECT_TRUE(FailsWith(r.rc, "KeyError", "set_input: the graph has no input named 'image'"));
  r = ex("set_input", {Int(5), wrong_dtype.arg()});
  EXPECT_TRUE(FailsWith(r.rc, "IndexError", "set_input: input index 5 out of range [0, 5)"));
}

TEST_F(DigitsModel, RunBeforeAllInputsAreSet) {
  Executor ex;
  ASSERT_EQ(Create(&ex, graph_), 0) << ex.error();
  Ret r = ex("run");
  EXPECT_TRUE(FailsWith(r.rc, "ValueError",
                        "run: 5 of the graph's 5 inputs have no value yet ('data', 'p0', 'p1', "
                        "'p2', 'p3'); set them with set_input or load_params first"));
  ASSERT_EQ(ex.LoadParams(params_).rc, 0);  // the weights, not the data
  r = ex("run");
  EXPECT_TRUE(
      FailsWith(r.rc, "ValueError", "run: 1 of the graph's 5 inputs have no value yet ('data')"));
  Array x({1, 64});
  std::vector<float> zeros(64, 0);
  x.SetBytes(zeros.data(), zeros.size() * sizeof(float));
  ASSERT_EQ(ex("set_input", {Str("data"), x.arg()}).rc, 0);
  r = ex("run");
  EXPECT_EQ(r.rc, 0) << r.error;
}

#endif  // DIGITS_MODEL_LIB

}  // namespace
}  // namespace hardening
