// The language-model sampling / penalty builtins and tensor-cache loading against what TVM 0.27's
// own runtime returned (tests/tvm_models/tvm027/sampling/cases.json and tensor_cache/, written by
// tools/tvm-fixtures/generate_sampling027.py), over the C ABI alone:
// - every recorded case: the int result, the new tensor or the tensor changed in place equal
//   TVM's bit for bit; a case TVM refused is refused with the same kind and message;
// - bad arguments (token ids outside the logits, an empty vocabulary, other dtypes) are typed
//   errors that leave the logits as they were;
// - vm.builtin.tensor_cache.load reads TVM's raw and f32-to-bf16 directories to TVM's arrays,
//   and every malformed directory is a ValueError naming the file that leaves the cache alone.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "fixture_util.h"

namespace {

using fixture::Global;
using fixture::ParseDType;
using fixture::ReadFile;
using fixture::Val;
using Json = nlohmann::json;
namespace fs = std::filesystem;
const std::string kDir = TVM027_DIR;

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string FromHex(const std::string& hex) {
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
  return out;
}

Val MakeTensor(const std::string& dtype, const std::vector<int64_t>& shape,
               const std::string& bytes) {
  DLDataType t = ParseDType(dtype);
  TVMArrayHandle h;
  if (TVMArrayAlloc(shape.data(), static_cast<int>(shape.size()), t.code, t.bits, t.lanes, kDLCPU,
                    0, &h) != 0) {
    throw std::runtime_error(fixture::LastError());
  }
  Val r;
  r.v.v_handle = h;
  r.code = kTVMNDArrayHandle;
  if (!bytes.empty() &&
      TVMArrayCopyFromBytes(h, const_cast<char*>(bytes.data()), bytes.size()) != 0) {
    throw std::runtime_error(fixture::LastError());
  }
  return r;
}

/*! \brief A compact tensor's bytes (an argument changed in place, a result). */
std::string Bytes(const DLTensor* t) {
  size_t n = (t->dtype.bits * t->dtype.lanes + 7) / 8;
  for (int i = 0; i < t->ndim; ++i) n *= static_cast<size_t>(t->shape[i]);
  std::string out(n, '\0');
  if (n != 0) std::memcpy(out.data(), static_cast<const char*>(t->data) + t->byte_offset, n);
  return out;
}

std::vector<int64_t> Shape(const DLTensor* t) { return {t->shape, t->shape + t->ndim}; }

/*! \brief Call a global; returns 0 or the error text ("Kind: message") in *error. */
int Call(const std::string& name, std::vector<TVMValue> v, std::vector<int> c, Val* out,
         std::string* error) {
  int rc = TVMFuncCall(Global(name.c_str()), v.data(), c.data(), static_cast<int>(v.size()),
                       &out->v, &out->code);
  if (rc != 0) *error = fixture::LastError();
  return rc;
}

TVMValue Float(double x) {
  TVMValue v;
  v.v_float64 = x;
  return v;
}
TVMValue Int(int64_t x) {
  TVMValue v;
  v.v_int64 = x;
  return v;
}
TVMValue Handle(const Val& t) { return t.v; }

class Sampling : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    doc_ = new Json(Json::parse(ReadFile(kDir + "/sampling/cases.json")));
  }
  static void TearDownTestSuite() {
    delete doc_;
    doc_ = nullptr;
  }
  static std::string Data(const Json& t) {
    return FromHex((*doc_)["data"][t["data"].get<size_t>()].get<std::string>());
  }
  static Json* doc_;
};
Json* Sampling::doc_ = nullptr;

// Every case TVM 0.27 recorded, with the tensors passed as NDArrays and, once more, as borrowed
// DLTensor*s (the two ways a driver hands them over).
TEST_F(Sampling, EqualsTvm027BitForBit) {
  const Json& cases = (*doc_)["cases"];
  ASSERT_GT(cases.size(), 700u);
  std::map<std::string, int> checked;
  for (int as_dltensor = 0; as_dltensor < 2; ++as_dltensor) {
    for (size_t k = 0; k < cases.size(); ++k) {
      const Json& c = cases[k];
      const std::string fn = c["function"].get<std::string>();
      const std::string at = fn + " case " + std::to_string(k);
      std::vector<Val> tensors;
      std::vector<TVMValue> values;
      std::vector<int> codes;
      for (const Json& a : c["args"]) {
        if (a.contains("float")) {
          values.push_back(Float(a["float"].get<double>()));
          codes.push_back(kTVMArgFloat);
          continue;
        }
        const Json& t = a["tensor"];
        tensors.push_back(MakeTensor(t["dtype"], t["shape"].get<std::vector<int64_t>>(), Data(t)));
        values.push_back(Handle(tensors.back()));
        codes.push_back(as_dltensor ? kTVMDLTensorHandle : kTVMNDArrayHandle);
      }
      Val ret;
      std::string error;
      int rc = Call(fn, values, codes, &ret, &error);
      if (c.contains("error")) {
        ASSERT_NE(rc, 0) << at << ": TVM refused it";
        const std::string want =
            c["error"]["kind"].get<std::string>() + ": " + c["error"]["message"].get<std::string>();
        EXPECT_EQ(error.substr(0, want.size()), want) << at;
        continue;
      }
      ASSERT_EQ(rc, 0) << at << ": " << error;
      if (c.contains("int")) {
        ASSERT_EQ(ret.code, kTVMArgInt) << at;
        EXPECT_EQ(ret.v.v_int64, c["int"].get<int64_t>()) << at;
      } else {
        const bool inplace = c.contains("inplace");
        const Json& want = inplace ? c["inplace"]["tensor"] : c["result"]["tensor"];
        const DLTensor* got = nullptr;
        if (inplace) {
          // The changed argument: the k-th tensor among the arguments.
          int arg = c["inplace"]["arg"].get<int>(), ti = 0;
          for (int i = 0; i < arg; ++i) ti += codes[i] != kTVMArgFloat;
          got = tensors[ti].tensor();
        } else {
          ASSERT_EQ(ret.code, kTVMNDArrayHandle) << at;
          got = ret.tensor();
        }
        char dtype[32];
        ASSERT_EQ(PolyffiDataTypeToString(got->dtype, dtype, sizeof(dtype)), 0);
        EXPECT_EQ(std::string(dtype), want["dtype"].get<std::string>()) << at;
        EXPECT_EQ(Shape(got), want["shape"].get<std::vector<int64_t>>()) << at;
        EXPECT_TRUE(Bytes(got) == Data(want)) << at << ": bytes differ from TVM 0.27's";
      }
      ++checked[fn];
    }
  }
  // Every builtin of the family was compared.
  EXPECT_EQ(checked.size(), 6u);
}

std::vector<float> Floats(const DLTensor* t) {
  std::string b = Bytes(t);
  std::vector<float> out(b.size() / 4);
  std::memcpy(out.data(), b.data(), b.size());
  return out;
}

Val F32(const std::vector<int64_t>& shape, const std::vector<float>& x) {
  return MakeTensor("float32", shape,
                    std::string(reinterpret_cast<const char*>(x.data()), x.size() * 4));
}
Val I32(const std::vector<int64_t>& shape, const std::vector<int32_t>& x) {
  return MakeTensor("int32", shape,
                    std::string(reinterpret_cast<const char*>(x.data()), x.size() * 4));
}

std::string ErrorOf(const std::string& fn, std::vector<TVMValue> v, std::vector<int> c) {
  Val ret;
  std::string error;
  if (Call(fn, std::move(v), std::move(c), &ret, &error) == 0) return "no error";
  return error;
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

TEST(SamplingErrors, PenaltyTokenOutsideLogitsLeavesThemAlone) {
  Val logits = F32({1, 4}, {1, -2, 3, 0.5});
  for (int32_t bad : {4, -1, 1 << 30}) {
    Val ids = I32({1, 3}, {0, 2, bad});
    Val freqs = I32({1, 3}, {1, 1, 1});
    std::string e =
        ErrorOf("vm.builtin.apply_repetition_penalty", {Handle(logits), Handle(ids), Float(2)},
                {kTVMNDArrayHandle, kTVMNDArrayHandle, kTVMArgFloat});
    EXPECT_TRUE(StartsWith(e, "ValueError: ")) << e;
    EXPECT_NE(e.find("token id " + std::to_string(bad)), std::string::npos) << e;
    e = ErrorOf(
        "vm.builtin.apply_presence_and_frequency_penalty",
        {Handle(logits), Handle(ids), Handle(freqs), Float(1), Float(1)},
        {kTVMNDArrayHandle, kTVMNDArrayHandle, kTVMNDArrayHandle, kTVMArgFloat, kTVMArgFloat});
    EXPECT_TRUE(StartsWith(e, "ValueError: ")) << e;
    EXPECT_EQ(Floats(logits.tensor()), (std::vector<float>{1, -2, 3, 0.5}));
  }
  // Fewer frequencies than token ids.
  Val ids = I32({1, 3}, {0, 1, 2});
  Val freqs = I32({2}, {1, 1});
  std::string e = ErrorOf(
      "vm.builtin.apply_presence_and_frequency_penalty",
      {Handle(logits), Handle(ids), Handle(freqs), Float(1), Float(1)},
      {kTVMNDArrayHandle, kTVMNDArrayHandle, kTVMNDArrayHandle, kTVMArgFloat, kTVMArgFloat});
  EXPECT_TRUE(StartsWith(e, "ValueError: ")) << e;
  EXPECT_EQ(Floats(logits.tensor()), (std::vector<float>{1, -2, 3, 0.5}));
}

TEST(SamplingErrors, BadDistributionsAreValueErrors) {
  Val empty = F32({1, 0}, {});
  Val scalar = F32({}, {1});
  Val two_rows = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  Val ids = I32({1, 3}, {0, 1, 2});
  for (const Val* t : {&empty, &scalar, &two_rows, &ids}) {
    std::string e = ErrorOf("vm.builtin.sample_top_p_from_logits",
                            {Handle(*t), Float(1), Float(0.9), Float(0.5)},
                            {kTVMNDArrayHandle, kTVMArgFloat, kTVMArgFloat, kTVMArgFloat});
    EXPECT_TRUE(StartsWith(e, "ValueError: vm.builtin.sample_top_p_from_logits")) << e;
    e = ErrorOf("vm.builtin.sample_top_p_from_prob", {Handle(*t), Float(0.9), Float(0.5)},
                {kTVMNDArrayHandle, kTVMArgFloat, kTVMArgFloat});
    EXPECT_TRUE(StartsWith(e, "ValueError: vm.builtin.sample_top_p_from_prob")) << e;
  }
  // A uniform sample of 1 or more is outside the distribution: TVM's own check.
  Val logits = F32({1, 3}, {1, 2, 3});
  std::string e =
      ErrorOf("vm.builtin.sample_top_p_from_logits", {Handle(logits), Float(1), Float(1), Float(2)},
              {kTVMNDArrayHandle, kTVMArgFloat, kTVMArgFloat, kTVMArgFloat});
  EXPECT_TRUE(StartsWith(e, "InternalError: Check failed")) << e;
  // multinomial: a 1-d prob, too few uniform samples, another dtype.
  Val u1 = F32({1, 1}, {0.5});
  Val flat = F32({3}, {0.2f, 0.3f, 0.5f});
  e = ErrorOf("vm.builtin.multinomial_from_uniform", {Handle(flat), Handle(u1)},
              {kTVMNDArrayHandle, kTVMNDArrayHandle});
  EXPECT_TRUE(StartsWith(e, "ValueError: ")) << e;
  e = ErrorOf("vm.builtin.multinomial_from_uniform", {Handle(two_rows), Handle(u1)},
              {kTVMNDArrayHandle, kTVMNDArrayHandle});
  EXPECT_TRUE(StartsWith(e, "ValueError: ")) << e;
  e = ErrorOf("vm.builtin.multinomial_from_uniform", {Handle(ids), Handle(u1)},
              {kTVMNDArrayHandle, kTVMNDArrayHandle});
  EXPECT_TRUE(StartsWith(e, "ValueError: ")) << e;
  // Not a tensor at all.
  e = ErrorOf("vm.builtin.apply_softmax_with_temperature", {Int(3), Float(1)},
              {kTVMArgInt, kTVMArgFloat});
  EXPECT_TRUE(StartsWith(e, "TypeError: ")) << e;
  e = ErrorOf("vm.builtin.apply_softmax_with_temperature", {Handle(scalar), Float(1)},
              {kTVMNDArrayHandle, kTVMArgFloat});
  EXPECT_TRUE(StartsWith(e, "ValueError: ")) << e;
}

// ------------------------------------------------------------------ tensor cache

std::string CacheGetBytes(const std::string& name, std::string* dtype,
                          std::vector<int64_t>* shape) {
  TVMValue v;
  v.v_str = name.c_str();
  Val ret;
  std::string error;
  if (Call("vm.builtin.tensor_cache.get", {v}, {kTVMStr}, &ret, &error) != 0) {
    throw std::runtime_error(error);
  }
  if (ret.code == kTVMNullptr) return "<missing>";
  if (ret.code != kTVMNDArrayHandle) throw std::runtime_error("get returned a non-tensor");
  char buf[32];
  PolyffiDataTypeToString(ret.tensor()->dtype, buf, sizeof(buf));
  *dtype = buf;
  *shape = Shape(ret.tensor());
  return Bytes(ret.tensor());
}

std::string Load(const std::string& dir, int64_t device_type = kDLCPU) {
  TVMValue p;
  p.v_str = dir.c_str();
  Val ret;
  std::string error;
  if (Call("vm.builtin.tensor_cache.load", {p, Int(device_type), Int(0)},
           {kTVMStr, kTVMArgInt, kTVMArgInt}, &ret, &error) != 0) {
    return error;
  }
  return "";
}

void Clear() {
  Val ret;
  std::string error;
  ASSERT_EQ(Call("vm.builtin.tensor_cache.clear", {}, {}, &ret, &error), 0) << error;
}

TEST(TensorCache, LoadsTvmDirectoriesToTvmArrays) {
  const Json expected = Json::parse(ReadFile(kDir + "/tensor_cache/expected.json"));
  ASSERT_EQ(expected.size(), 2u);
  for (const auto& [sub, params] : expected.items()) {
    Clear();
    ASSERT_EQ(Load(kDir + "/tensor_cache/" + sub), "") << sub;
    ASSERT_GT(params.size(), 8u);
    for (const auto& [name, want] : params.items()) {
      std::string dtype;
      std::vector<int64_t> shape;
      std::string got = CacheGetBytes(name, &dtype, &shape);
      EXPECT_EQ(dtype, want["dtype"].get<std::string>()) << sub << " " << name;
      EXPECT_EQ(shape, want["shape"].get<std::vector<int64_t>>()) << sub << " " << name;
      EXPECT_TRUE(got == FromHex(want["hex"].get<std::string>())) << sub << " " << name;
    }
  }
  Clear();
}

class TensorCacheDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("polyffi_tensor_cache_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::copy(kDir + "/tensor_cache/raw", dir_);
    index_ = Json::parse(ReadFile((dir_ / "tensor-cache.json").string()));
    Clear();
  }
  void TearDown() override {
    fs::remove_all(dir_);
    Clear();
  }
  void WriteIndex() { WriteFile((dir_ / "tensor-cache.json").string(), index_.dump()); }
  /*! \brief The load fails with a ValueError naming the file, and the cache stays empty. */
  void ExpectRefused(const std::string& needle, const std::string& file = "tensor-cache.json") {
    std::string e = Load(dir_.string());
    EXPECT_TRUE(StartsWith(e, "ValueError: ")) << e;
    EXPECT_NE(e.find(file), std::string::npos) << e;
    EXPECT_NE(e.find(needle), std::string::npos) << e;
    std::string dtype;
    std::vector<int64_t> shape;
    EXPECT_EQ(CacheGetBytes("embed.weight", &dtype, &shape), "<missing>");
  }
  Json& Param(int shard, int i) { return index_["records"][shard]["records"][i]; }
  fs::path dir_;
  Json index_;
};

TEST_F(TensorCacheDir, LegacyIndexName) {
  fs::rename(dir_ / "tensor-cache.json", dir_ / "ndarray-cache.json");
  ASSERT_EQ(Load(dir_.string()), "");
  std::string dtype;
  std::vector<int64_t> shape;
  EXPECT_NE(CacheGetBytes("embed.weight", &dtype, &shape), "<missing>");
}

TEST_F(TensorCacheDir, NoIndex) {
  fs::remove(dir_ / "tensor-cache.json");
  ExpectRefused("cannot read");
}

TEST_F(TensorCacheDir, MalformedJson) {
  WriteFile((dir_ / "tensor-cache.json").string(), "{\"records\": [ {\"dataPath\": ");
  ExpectRefused("not valid JSON");
  WriteFile((dir_ / "tensor-cache.json").string(), "[1, 2]");
  ExpectRefused("not a JSON object");
  index_["records"][0].erase("dataPath");
  WriteIndex();
  ExpectRefused("has no \"dataPath\"");
}

TEST_F(TensorCacheDir, WrongFieldTypes) {
  Param(0, 0)["shape"] = "64x16";
  WriteIndex();
  ExpectRefused("\"shape\" is not an array");
  Param(0, 0)["shape"] = Json::array({64, -16});
  WriteIndex();
  ExpectRefused("not a non-negative integer");
  Param(0, 0)["shape"] = Json::array({64, 16});
  Param(0, 0)["dtype"] = "float33";
  WriteIndex();
  ExpectRefused("float33");
  Param(0, 0)["dtype"] = "float32";
  Param(0, 0)["byteOffset"] = -4;
  WriteIndex();
  ExpectRefused("byteOffset");
}

TEST_F(TensorCacheDir, ShardOutOfRange) {
  // A parameter that runs past its shard's end, and one that starts past it.
  Param(2, 0)["byteOffset"] = index_["records"][2]["nbytes"].get<int64_t>() - 4;
  WriteIndex();
  ExpectRefused("truncated", "params_shard_2.bin");
  Param(2, 0)["byteOffset"] = 1 << 30;
  WriteIndex();
  ExpectRefused("past the end");
}

TEST_F(TensorCacheDir, ParamNbytesMismatch) {
  Param(0, 0)["nbytes"] = 4092;
  WriteIndex();
  ExpectRefused("announces 4092 bytes");
  Param(0, 0)["nbytes"] = 4096;
  Param(0, 0)["shape"] = Json::array({1LL << 40, 1LL << 40});
  WriteIndex();
  ExpectRefused("overflows");
}

TEST_F(TensorCacheDir, ShardSizeMismatch) {
  std::string shard = ReadFile((dir_ / "params_shard_1.bin").string());
  WriteFile((dir_ / "params_shard_1.bin").string(), shard.substr(0, shard.size() - 1));
  ExpectRefused("incomplete");
}

TEST_F(TensorCacheDir, MissingShard) {
  fs::remove(dir_ / "params_shard_2.bin");
  ExpectRefused("params_shard_2.bin cannot be read");
}

TEST_F(TensorCacheDir, ShardPathLeavesDirectory) {
  index_["records"][0]["dataPath"] = "../params_shard_0.bin";
  WriteIndex();
  ExpectRefused("leaves the cache directory");
  index_["records"][0]["dataPath"] = "/etc/passwd";
  WriteIndex();
  ExpectRefused("leaves the cache directory");
}

TEST_F(TensorCacheDir, UnsupportedShardFormatAndDevice) {
  index_["records"][0]["format"] = "zstd-shard";
  WriteIndex();
  ExpectRefused("only raw-shard");
  std::string e = Load(dir_.string(), /*device_type=*/2);
  EXPECT_TRUE(StartsWith(e, "ValueError: tensor_cache.load: only the CPU")) << e;
}

}  // namespace
