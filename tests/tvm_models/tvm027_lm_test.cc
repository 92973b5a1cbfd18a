// A small Llama-style decoder compiled by Apache TVM 0.27 with its paged KV cache
// (tests/tvm_models/tvm027/lm) through polyffi's relax VM and paged KV cache, over the C ABI:
// the cache comes from the model's own create_paged_kv_cache (TVM's argument list and compiled
// kernels), sequences are driven with the vm.builtin.kv_state_* globals, and greedy generation
// must give TVM's tokens exactly and its logits allclose (same kernels; the order of a few
// float sums may differ). Also: two sequences on one cache, fork + popn, and the errors (full
// cache, unknown and duplicate sequences) as typed errors that leave the cache usable.
#include <gtest/gtest.h>
#include <polyffi/c_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "fixture_util.h"

namespace {

using fixture::Call;
using fixture::Global;
using fixture::LastError;
using fixture::ReadFile;
using fixture::Val;

using Json = nlohmann::json;
const std::string kDir = TVM027_LM_DIR;

std::vector<float> ReadFloats(const std::string& name) {
  return fixture::ReadFloats(kDir + "/" + name);
}

TVMValue I(int64_t x) {
  TVMValue v;
  v.v_int64 = x;
  return v;
}

Val Shape(const std::vector<int64_t>& dims) {
  std::vector<TVMValue> v;
  for (int64_t d : dims) v.push_back(I(d));
  return Call(Global("runtime.ShapeTuple"), v, std::vector<int>(v.size(), kTVMArgInt));
}

Val NewArray(const std::vector<int64_t>& shape, DLDataType t) {
  Val r;
  TVMArrayHandle h = nullptr;
  if (TVMArrayAlloc(shape.data(), static_cast<int>(shape.size()), t.code, t.bits, t.lanes, kDLCPU,
                    0, &h) != 0) {
    throw std::runtime_error(LastError());
  }
  r.v.v_handle = h;
  r.code = kTVMNDArrayHandle;
  return r;
}

/*! \brief The model: library, VM, weights (a runtime.Array of tensors) and the kv_state_* globals.
 */
struct Model {
  Json io;
  Val lib, vm, params;
  TVMFunctionHandle prefill = nullptr, decode = nullptr, create = nullptr;
  int64_t vocab = 0;

  Model() {
    io = Json::parse(ReadFile(kDir + "/io.json"));
    vocab = io["config"]["vocab_size"].get<int64_t>();
    if (TVMModLoadFromFile((kDir + "/" + io["library"].get<std::string>()).c_str(), "",
                           &lib.v.v_handle) != 0) {
      throw std::runtime_error(LastError());
    }
    lib.code = kTVMModuleHandle;
    vm.v.v_handle = ModFunc(lib.v.v_handle, "vm_load_executable", {}, {});
    vm.code = kTVMModuleHandle;
    TVMValue init[3] = {I(kDLCPU), I(0), I(2)};
    TVMFunctionHandle f = Get(vm.v.v_handle, "vm_initialization");
    Val ignored = Call(f, {init[0], init[1], init[2]}, {kTVMArgInt, kTVMArgInt, kTVMArgInt});
    TVMFuncFree(f);
    prefill = Get(vm.v.v_handle, "prefill");
    decode = Get(vm.v.v_handle, "decode");
    create = Get(vm.v.v_handle, "create_paged_kv_cache");
    LoadParams();
  }
  ~Model() {
    for (TVMFunctionHandle f : {prefill, decode, create}) {
      if (f) TVMFuncFree(f);
    }
  }
  static TVMFunctionHandle Get(TVMModuleHandle m, const char* name) {
    TVMFunctionHandle f = nullptr;
    if (TVMModGetFunction(m, name, 0, &f) != 0 || f == nullptr) {
      throw std::runtime_error(std::string("no function ") + name);
    }
    return f;
  }
  static void* ModFunc(TVMModuleHandle m, const char* name, std::vector<TVMValue> v,
                       std::vector<int> c) {
    TVMFunctionHandle f = Get(m, name);
    TVMValue rv;
    int rc;
    int err = TVMFuncCall(f, v.data(), c.data(), static_cast<int>(v.size()), &rv, &rc);
    TVMFuncFree(f);
    if (err != 0) throw std::runtime_error(LastError());
    return rv.v_handle;
  }

  // The weights from the tensor-cache directory (raw float32 records in one shard), in the
  // order io.json lists them (the order prefill/decode take them).
  void LoadParams() {
    Json cache = Json::parse(ReadFile(kDir + "/params/tensor-cache.json"));
    std::vector<Val> arrays;
    for (const Json& p : io["params"]) {
      const std::string name = p["name"].get<std::string>();
      bool found = false;
      for (const Json& shard : cache["records"]) {
        for (const Json& rec : shard["records"]) {
          if (rec["name"] != name) continue;
          std::string data = ReadFile(kDir + "/params/" + shard["dataPath"].get<std::string>());
          Val a = NewArray(rec["shape"].get<std::vector<int64_t>>(), DLDataType{kDLFloat, 32, 1});
          const size_t off = rec["byteOffset"].get<size_t>(), n = rec["nbytes"].get<size_t>();
          if (off + n > data.size()) throw std::runtime_error("bad record " + name);
          std::memcpy(a.tensor()->data, data.data() + off, n);
          arrays.push_back(std::move(a));
          found = true;
        }
      }
      if (!found) throw std::runtime_error("no weight " + name);
    }
    std::vector<TVMValue> v;
    std::vector<int> c;
    for (const Val& a : arrays) {
      v.push_back(a.v);
      c.push_back(a.code);
    }
    params = Call(Global("runtime.Array"), v, c);
  }

  Val Cache(int64_t max_total_seq_len = -1, int64_t page_size = -1) {
    const Json& a = io["cache_args"];
    std::vector<int64_t> args = {a["max_batch_size"], a["max_total_seq_len"],
                                 a["prefill_chunk_size"], a["page_size"],
                                 a["support_sliding_window"]};
    if (max_total_seq_len > 0) args[1] = max_total_seq_len;
    if (page_size > 0) args[3] = page_size;
    std::vector<Val> shapes;
    std::vector<TVMValue> v;
    for (int64_t x : args) {
      shapes.push_back(Shape({x}));
      v.push_back(shapes.back().v);
    }
    return Call(create, v, std::vector<int>(v.size(), kTVMObjectHandle));
  }

  static void KV(const char* name, const Val& cache, std::vector<int64_t> ints) {
    std::vector<TVMValue> v = {cache.v};
    std::vector<int> c = {kTVMObjectHandle};
    for (int64_t x : ints) {
      v.push_back(I(x));
      c.push_back(kTVMArgInt);
    }
    Val r = Call(Global(name), v, c);
  }
  static void Begin(const Val& cache, const std::vector<int64_t>& ids,
                    const std::vector<int64_t>& lens) {
    Val s = Shape(ids), l = Shape(lens);
    Val r = Call(Global("vm.builtin.kv_state_begin_forward"), {cache.v, s.v, l.v},
                 {kTVMObjectHandle, kTVMObjectHandle, kTVMObjectHandle});
  }
  static void End(const Val& cache) {
    Val r = Call(Global("vm.builtin.kv_state_end_forward"), {cache.v}, {kTVMObjectHandle});
  }

  /*! \brief Logits (1, total, V) of a batched prefill. */
  std::vector<float> Prefill(const Val& cache, const std::vector<int64_t>& ids,
                             const std::vector<std::vector<int>>& prompts) {
    std::vector<int64_t> lens;
    std::vector<int32_t> tokens;
    for (const auto& p : prompts) {
      lens.push_back(static_cast<int64_t>(p.size()));
      tokens.insert(tokens.end(), p.begin(), p.end());
    }
    Begin(cache, ids, lens);
    Val in = NewArray({1, static_cast<int64_t>(tokens.size())}, DLDataType{kDLInt, 32, 1});
    std::memcpy(in.tensor()->data, tokens.data(), tokens.size() * 4);
    Val out = Call(prefill, {in.v, cache.v, params.v},
                   {kTVMNDArrayHandle, kTVMObjectHandle, kTVMObjectHandle});
    End(cache);
    return Floats(out, static_cast<int64_t>(tokens.size()));
  }
  /*! \brief Logits (B, 1, V) of one decode step. */
  std::vector<float> Decode(const Val& cache, const std::vector<int64_t>& ids,
                            const std::vector<int>& tokens) {
    Begin(cache, ids, std::vector<int64_t>(ids.size(), 1));
    Val in = NewArray({static_cast<int64_t>(tokens.size()), 1}, DLDataType{kDLInt, 32, 1});
    for (size_t i = 0; i < tokens.size(); ++i) {
      static_cast<int32_t*>(in.tensor()->data)[i] = tokens[i];
    }
    Val out = Call(decode, {in.v, cache.v, params.v},
                   {kTVMNDArrayHandle, kTVMObjectHandle, kTVMObjectHandle});
    End(cache);
    return Floats(out, static_cast<int64_t>(tokens.size()));
  }
  std::vector<float> Floats(const Val& out, int64_t rows) const {
    DLTensor* t = out.tensor();
    if (t == nullptr) throw std::runtime_error("the model returned no tensor");
    int64_t n = 1;
    for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
    if (n != rows * vocab) throw std::runtime_error("unexpected logits shape");
    const float* p =
        reinterpret_cast<const float*>(static_cast<const char*>(t->data) + t->byte_offset);
    return std::vector<float>(p, p + n);
  }
};

int Argmax(const std::vector<float>& logits, int64_t row, int64_t vocab) {
  auto b = logits.begin() + row * vocab;
  return static_cast<int>(std::max_element(b, b + vocab) - b);
}

void ExpectClose(const std::vector<float>& got, const std::vector<float>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  float worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float err = std::fabs(got[i] - want[i]);
    worst = std::max(worst, err);
    ASSERT_LE(err, 1e-4f + 1e-4f * std::fabs(want[i])) << what << " element " << i;
  }
}

std::vector<int> Ints(const Json& j) { return j.get<std::vector<int>>(); }

/*! \brief The error kind and text of a call expected to fail. */
std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no error>";
}

class Tvm027Lm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = new Model(); }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  static Model* model_;
};
Model* Tvm027Lm::model_ = nullptr;

TEST_F(Tvm027Lm, GreedyGenerationEqualsTvm) {
  Model& m = *model_;
  const Json& g = m.io["greedy"];
  Val cache = m.Cache();
  Model::KV("vm.builtin.kv_state_add_sequence", cache, {0});
  std::vector<float> logits = m.Prefill(cache, {0}, {Ints(g["prompt"])});
  ExpectClose(logits, ReadFloats(g["prefill_logits"]), "prefill");
  const int64_t n = static_cast<int64_t>(g["prompt"].size());
  std::vector<int> tokens = {Argmax(logits, n - 1, m.vocab)};
  for (int step = 0; step < g["steps"].get<int>(); ++step) {
    std::vector<float> lg = m.Decode(cache, {0}, {tokens.back()});
    ExpectClose(lg, ReadFloats(g["decode_logits"][step]), "decode step " + std::to_string(step));
    tokens.push_back(Argmax(lg, 0, m.vocab));
  }
  EXPECT_EQ(tokens, Ints(g["tokens"]));
}

// A prompt prefilled in two chunks: the second chunk attends to the first through the cached
// pages (paged prefill kernel, merged with the ragged one) and must give TVM's logits for those
// positions; the chunk boundary (10) falls inside the first page.
TEST_F(Tvm027Lm, ChunkedPrefillEqualsOnePrefill) {
  Model& m = *model_;
  const Json& g = m.io["greedy"];
  const std::vector<int> prompt = Ints(g["prompt"]);
  const std::vector<float> want = ReadFloats(g["prefill_logits"]);
  for (size_t cut : {size_t{10}, size_t{16}, size_t{1}}) {
    Val cache = m.Cache();
    Model::KV("vm.builtin.kv_state_add_sequence", cache, {0});
    std::vector<float> a =
        m.Prefill(cache, {0}, {std::vector<int>(prompt.begin(), prompt.begin() + cut)});
    std::vector<float> b =
        m.Prefill(cache, {0}, {std::vector<int>(prompt.begin() + cut, prompt.end())});
    a.insert(a.end(), b.begin(), b.end());
    ExpectClose(a, want, "prefill cut at " + std::to_string(cut));
  }
}

TEST_F(Tvm027Lm, TwoSequencesOnOneCache) {
  Model& m = *model_;
  const Json& t = m.io["two_sequences"];
  const std::vector<int64_t> ids = t["seq_ids"].get<std::vector<int64_t>>();
  Val cache = m.Cache();
  for (int64_t id : ids) Model::KV("vm.builtin.kv_state_add_sequence", cache, {id});
  std::vector<std::vector<int>> prompts = {Ints(t["prompts"][0]), Ints(t["prompts"][1])};
  std::vector<float> logits = m.Prefill(cache, ids, prompts);
  ExpectClose(logits, ReadFloats(t["prefill_logits"]), "prefill");
  const int64_t n0 = static_cast<int64_t>(prompts[0].size());
  const int64_t n = n0 + static_cast<int64_t>(prompts[1].size());
  std::vector<std::vector<int>> toks = {{Argmax(logits, n0 - 1, m.vocab)},
                                        {Argmax(logits, n - 1, m.vocab)}};
  for (int step = 0; step < t["steps"].get<int>(); ++step) {
    std::vector<float> lg = m.Decode(cache, ids, {toks[0].back(), toks[1].back()});
    ExpectClose(lg, ReadFloats(t["decode_logits"][step]), "decode step " + std::to_string(step));
    toks[0].push_back(Argmax(lg, 0, m.vocab));
    toks[1].push_back(Argmax(lg, 1, m.vocab));
  }
  EXPECT_EQ(toks[0], Ints(t["tokens"][0]));
  EXPECT_EQ(toks[1], Ints(t["tokens"][1]));

  // Removing one sequence gives its pages back and leaves the other decoding as before.
  TVMValue rv;
  int rc;
  TVMValue a = cache.v;
  int ac = kTVMObjectHandle;
  ASSERT_EQ(TVMFuncCall(Global("vm.builtin.attention_kv_cache_get_num_available_pages"), &a, &ac, 1,
                        &rv, &rc),
            0);
  const int64_t before = rv.v_int64;
  Model::KV("vm.builtin.kv_state_remove_sequence", cache, {ids[0]});
  ASSERT_EQ(TVMFuncCall(Global("vm.builtin.attention_kv_cache_get_num_available_pages"), &a, &ac, 1,
                        &rv, &rc),
            0);
  EXPECT_EQ(rv.v_int64, before + 2);  // 5 + 13 tokens of 16 per page: 2 pages
  ASSERT_EQ(TVMFuncCall(Global("vm.builtin.attention_kv_cache_get_total_sequence_length"), &a, &ac,
                        1, &rv, &rc),
            0);
  EXPECT_EQ(rv.v_int64, n - n0 + t["steps"].get<int64_t>());
}

TEST_F(Tvm027Lm, ForkAndPopN) {
  Model& m = *model_;
  const Json& f = m.io["fork"];
  Val cache = m.Cache();
  Model::KV("vm.builtin.kv_state_add_sequence", cache, {0});
  m.Prefill(cache, {0}, {Ints(f["prompt"])});
  Model::KV("vm.builtin.kv_state_fork_sequence", cache, {0, 1, -1});
  const int tok = f["token"].get<int>();
  std::vector<float> lg = m.Decode(cache, {0, 1}, {tok, tok});
  ExpectClose(lg, ReadFloats(f["decode_logits"]), "fork decode");
  for (int64_t i = 0; i < m.vocab; ++i) ASSERT_EQ(lg[i], lg[m.vocab + i]);
  // Pop the decoded token of the child and decode it again: the same logits.
  Model::KV("vm.builtin.kv_state_popn", cache, {1, 1});
  std::vector<float> again = m.Decode(cache, {1}, {tok});
  ExpectClose(again, std::vector<float>(lg.begin() + m.vocab, lg.end()), "after popn");
  // A fork in the middle of a page decodes like the parent did at that point.
  Model::KV("vm.builtin.kv_state_fork_sequence", cache, {0, 2, 5});
  Model::KV("vm.builtin.kv_state_add_sequence", cache, {3});
  std::vector<int> prompt = Ints(f["prompt"]);
  std::vector<float> p3 =
      m.Prefill(cache, {3}, {std::vector<int>(prompt.begin(), prompt.begin() + 6)});
  std::vector<float> d2 = m.Decode(cache, {2}, {prompt[5]});
  ExpectClose(d2, std::vector<float>(p3.end() - m.vocab, p3.end()), "mid-page fork");
}

TEST_F(Tvm027Lm, ErrorsAreTypedAndLeaveTheCacheUsable) {
  Model& m = *model_;
  Val cache = m.Cache();
  Model::KV("vm.builtin.kv_state_add_sequence", cache, {0});
  EXPECT_NE(ErrorOf([&] {
              Model::KV("vm.builtin.kv_state_add_sequence", cache, {0});
            }).find("ValueError: The sequence \"0\" is already in the KV cache."),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              Model::KV("vm.builtin.kv_state_remove_sequence", cache, {7});
            }).find("KeyError: The sequence \"7\" cannot be found in KV cache."),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              Model::Begin(cache, {7}, {1});
            }).find("KeyError: The sequence \"7\" cannot be found in KV cache."),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              Model::KV("vm.builtin.kv_state_popn", cache, {0, 1});
            }).find("ValueError: The sequence only has length 0"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              Model::KV("vm.builtin.kv_state_fork_sequence", cache, {7, 8, -1});
            }).find("KeyError: The parent sequence \"7\" cannot be found"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              Model::KV("vm.builtin.kv_state_fork_sequence", cache, {0, 1, 3});
            }).find("ValueError: The forked position 3"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf([&] { Model::Begin(cache, {0}, {0}); }).find("ValueError: Append with length 0"),
      std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              Model::Begin(cache, {0, 0}, {1, 1});
            }).find("ValueError"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { Model::Begin(cache, {0}, {65}); }).find("prefill_chunk_size"),
            std::string::npos);
  // Attention with no forward begun, through the model itself.
  EXPECT_NE(ErrorOf([&] {
              Val in = NewArray({1, 1}, DLDataType{kDLInt, 32, 1});
              static_cast<int32_t*>(in.tensor()->data)[0] = 1;
              Val out = Call(m.decode, {in.v, cache.v, m.params.v},
                             {kTVMNDArrayHandle, kTVMObjectHandle, kTVMObjectHandle});
            }).find("ValueError"),
            std::string::npos);
  // Not a cache.
  EXPECT_NE(ErrorOf([&] {
              Val s = Shape({1});
              Model::KV("vm.builtin.kv_state_add_sequence", s, {0});
            }).find("TypeError"),
            std::string::npos);

  // Bad configurations and argument lists at create.
  EXPECT_NE(ErrorOf([&] { m.Cache(-1, int64_t{1} << 40); }).find("ValueError: "),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { m.Cache(int64_t{1} << 62, 16); }).find("ValueError: "),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              Call(Global("vm.builtin.paged_attention_kv_cache_create"), {}, {});
            }).find("TypeError: "),
            std::string::npos);

  // A full cache (2 pages of 16): refused without a change, then usable for what fits.
  Val small = m.Cache(16, 16);
  Model::KV("vm.builtin.kv_state_add_sequence", small, {0});
  EXPECT_NE(ErrorOf([&] {
              Model::Begin(small, {0}, {40});
            }).find("ValueError: The KV cache is full. No page can be allocated"),
            std::string::npos);
  const Json& g = m.io["greedy"];
  std::vector<float> logits = m.Prefill(small, {0}, {Ints(g["prompt"])});  // 19 tokens: 2 pages
  ExpectClose(logits, ReadFloats(g["prefill_logits"]), "prefill after a refused forward");
  for (int i = 0; i < 13; ++i) m.Decode(small, {0}, {1});  // up to 32 tokens
  EXPECT_NE(ErrorOf([&] { m.Decode(small, {0}, {1}); }).find("The KV cache is full"),
            std::string::npos);
  Model::KV("vm.builtin.kv_state_popn", small, {0, 20});
  m.Decode(small, {0}, {1});  // fits again
}

}  // namespace
