// polyffi.lm over the C ABI on the TVM 0.27 fixture (tests/tvm_models/tvm027/lm, whose
// lm-config.json makes it a model directory): greedy generation gives TVM's recorded tokens and
// logits, interleaved generations give TVM's two-sequence run, stop tokens and max_tokens end a
// generation as documented (docs/lm.md), seeded sampling is reproducible and equals sampled.json,
// four threads generating at once each get TVM's tokens, and bad input is a typed error.
//
// sampled.json is what this test records: POLYFFI_LM_WRITE_SAMPLED=1 rewrites it from the core's
// current output (and the test then checks it like any other run).
#include <gtest/gtest.h>
#include <polyffi/c_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "fixture_util.h"

namespace {

namespace fs = std::filesystem;
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

TVMValue Str(const std::string& s) {
  TVMValue v;
  v.v_str = s.c_str();
  return v;
}

/*! \brief Call module function name on args; throws the error text. */
Val CallMod(const Val& mod, const char* name, std::vector<TVMValue> v = {},
            std::vector<int> c = {}) {
  TVMFunctionHandle f = nullptr;
  if (TVMModGetFunction(mod.v.v_handle, name, 0, &f) != 0 || f == nullptr) {
    throw std::runtime_error(std::string("no function ") + name);
  }
  Val r;
  int err = TVMFuncCall(f, v.data(), c.data(), static_cast<int>(v.size()), &r.v, &r.code);
  std::string text = err != 0 ? LastError() : "";
  TVMFuncFree(f);
  if (err != 0) throw std::runtime_error(text);
  return r;
}

Val Load(const std::string& dir) { return Call(Global("polyffi.lm.load"), {Str(dir)}, {kTVMStr}); }

Val IntArray(const std::vector<int>& ids) {
  Val r;
  int64_t n = static_cast<int64_t>(ids.size());
  TVMArrayHandle h = nullptr;
  if (TVMArrayAlloc(&n, 1, kDLInt, 32, 1, kDLCPU, 0, &h) != 0)
    throw std::runtime_error(LastError());
  r.v.v_handle = h;
  r.code = kTVMNDArrayHandle;
  for (size_t i = 0; i < ids.size(); ++i) static_cast<int32_t*>(h->data)[i] = ids[i];
  return r;
}

Val Generate(const Val& lm, const std::vector<int>& prompt, const std::string& options) {
  Val p = IntArray(prompt);
  return CallMod(lm, "generate", {p.v, Str(options)}, {p.code, kTVMStr});
}
Val Generate(const Val& lm, const std::string& prompt, const std::string& options) {
  return CallMod(lm, "generate", {Str(prompt), Str(options)}, {kTVMStr, kTVMStr});
}
int64_t Next(const Val& g) { return CallMod(g, "next").v.v_int64; }
std::string StrOf(const Val& g, const char* name) {
  Val r = CallMod(g, name);
  if (r.code != kTVMStr) throw std::runtime_error(std::string(name) + " returned no string");
  return r.v.v_str;
}
std::vector<float> Logits(const Val& g) {
  Val r = CallMod(g, "logits");
  DLTensor* t = r.tensor();
  if (t == nullptr || t->ndim != 1) throw std::runtime_error("logits: not a 1-d tensor");
  const float* p = reinterpret_cast<const float*>(static_cast<char*>(t->data) + t->byte_offset);
  return std::vector<float>(p, p + t->shape[0]);
}
/*! \brief Every token until next() gives -1. */
std::vector<int> Drain(const Val& g) {
  std::vector<int> out;
  for (int64_t t; (t = Next(g)) >= 0;) out.push_back(static_cast<int>(t));
  return out;
}

void ExpectClose(const std::vector<float>& got, const float* want, size_t n,
                 const std::string& what) {
  ASSERT_EQ(got.size(), n) << what;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_LE(std::fabs(got[i] - want[i]), 1e-4f + 1e-4f * std::fabs(want[i]))
        << what << " element " << i;
  }
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no error>";
}
#define EXPECT_ERROR(expr, text) \
  EXPECT_NE(ErrorOf([&] { expr; }).find(text), std::string::npos) << ErrorOf([&] { expr; })

std::vector<int> Ints(const Json& j) { return j.get<std::vector<int>>(); }

/*! \brief A copy of the fixture directory to spoil (removed at the end of the test). */
struct TempModel {
  fs::path dir;
  TempModel() {
    std::string tmpl = (fs::temp_directory_path() / "polyffi-lm-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir = tmpl;
    for (const char* f : {"lm-config.json", "tiny_llama.so"}) fs::copy(kDir + "/" + f, dir / f);
    fs::copy(kDir + "/params", dir / "params");
  }
  ~TempModel() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  void Write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name, std::ios::binary | std::ios::trunc) << text;
  }
};

class Lm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    io_ = new Json(Json::parse(ReadFile(kDir + "/io.json")));
    lm_ = new Val(Load(kDir));
  }
  static void TearDownTestSuite() {
    delete lm_;
    delete io_;
  }
  static Json* io_;
  static Val* lm_;
};
Json* Lm::io_ = nullptr;
Val* Lm::lm_ = nullptr;

TEST_F(Lm, GreedyEqualsTvm) {
  const Json& g = (*io_)["greedy"];
  const std::vector<int> prompt = Ints(g["prompt"]);
  const int64_t vocab = (*io_)["config"]["vocab_size"];
  Val gen = Generate(*lm_, prompt, R"({"temperature": 0, "max_tokens": 13})");
  EXPECT_EQ(fixture::TypeKey(gen.v.v_handle), "polyffi.Generation");
  EXPECT_ERROR(Logits(gen), "ValueError: logits: no token");
  EXPECT_EQ(StrOf(gen, "finish_reason"), "");
  std::vector<int> tokens;
  const std::vector<float> prefill = ReadFloats(g["prefill_logits"]);
  for (int step = 0; step < 13; ++step) {
    int64_t t = Next(gen);
    ASSERT_GE(t, 0) << "step " << step;
    tokens.push_back(static_cast<int>(t));
    if (step == 0) {
      ExpectClose(Logits(gen), prefill.data() + prefill.size() - vocab, vocab, "prefill");
    } else {
      std::vector<float> want = ReadFloats(g["decode_logits"][step - 1]);
      ExpectClose(Logits(gen), want.data(), want.size(), "step " + std::to_string(step));
    }
    EXPECT_EQ(StrOf(gen, "finish_reason"), "");
  }
  EXPECT_EQ(tokens, Ints(g["tokens"]));
  EXPECT_EQ(Next(gen), -1);
  EXPECT_EQ(StrOf(gen, "finish_reason"), "length");
  EXPECT_EQ(Next(gen), -1);
  EXPECT_EQ(CallMod(gen, "prompt_tokens").v.v_int64, static_cast<int64_t>(prompt.size()));
  EXPECT_EQ(CallMod(gen, "completion_tokens").v.v_int64, 13);
}

// Interleaved generations are decoded together: the first next() of a step decodes every
// running generation in one batched call, the others take their waiting token. The tokens and
// logits are TVM's batched run's, and bit for bit those of a generation running alone.
TEST_F(Lm, TwoInterleavedGenerationsEqualTvm) {
  const Json& t = (*io_)["two_sequences"];
  const int64_t vocab = (*io_)["config"]["vocab_size"];
  ASSERT_EQ(Ints(t["prompts"][1]), Ints((*io_)["greedy"]["prompt"]));
  std::vector<std::vector<float>> alone;
  {
    Val g = Generate(*lm_, Ints(t["prompts"][1]), R"({"temperature": 0, "max_tokens": 13})");
    for (int step = 0; step < 13; ++step) {
      Next(g);
      alone.push_back(Logits(g));
    }
  }
  Val a = Generate(*lm_, Ints(t["prompts"][0]), R"({"temperature": 0, "max_tokens": 13})");
  Val b = Generate(*lm_, Ints(t["prompts"][1]), R"({"temperature": 0, "max_tokens": 13})");
  std::vector<int> ta, tb;
  for (int step = 0; step < 13; ++step) {
    ta.push_back(static_cast<int>(Next(a)));
    tb.push_back(static_cast<int>(Next(b)));
    EXPECT_EQ(Logits(b), alone[step]) << "step " << step;
    if (step > 0) {
      std::vector<float> want = ReadFloats(t["decode_logits"][step - 1]);  // (2, 1, V)
      ExpectClose(Logits(a), want.data(), vocab, "a, step " + std::to_string(step));
      ExpectClose(Logits(b), want.data() + vocab, vocab, "b, step " + std::to_string(step));
    }
  }
  EXPECT_EQ(ta, Ints(t["tokens"][0]));
  EXPECT_EQ(tb, Ints(t["tokens"][1]));
  EXPECT_EQ(Next(a), -1);
  EXPECT_EQ(Next(b), -1);
}

// A generation decoded ahead in another's batch keeps its own logits() until its next(); a stop
// token found ahead ends it at its own next(); closing it drops the waiting step.
TEST_F(Lm, DecodedAheadKeepsPerGenerationState) {
  const Json& g = (*io_)["greedy"];
  const std::vector<int> want = Ints(g["tokens"]);  // 15, 79, 82, 34, ...
  Val a = Generate(*lm_, Ints(g["prompt"]), R"({"temperature": 0, "max_tokens": 13})");
  Val b = Generate(*lm_, Ints(g["prompt"]), R"({"temperature": 0, "stop_token_ids": [79]})");
  Val c = Generate(*lm_, Ints(g["prompt"]), R"({"temperature": 0})");
  EXPECT_EQ(Next(a), want[0]);
  EXPECT_EQ(Next(b), want[0]);
  EXPECT_EQ(Next(c), want[0]);
  const std::vector<float> b_first = Logits(b);
  EXPECT_EQ(Next(a), want[1]);    // decodes b and c ahead
  EXPECT_EQ(Logits(b), b_first);  // b's own logits until its next()
  CallMod(c, "close");
  EXPECT_EQ(Next(c), -1);
  EXPECT_EQ(Next(b), -1);  // 79 was decoded ahead: a stop token
  EXPECT_EQ(StrOf(b, "finish_reason"), "stop");
  EXPECT_EQ(CallMod(b, "completion_tokens").v.v_int64, 1);
  std::vector<int> rest = Drain(a);
  EXPECT_EQ(rest, std::vector<int>(want.begin() + 2, want.end()));
}

TEST_F(Lm, PromptAsTextAndTokenizer) {
  const std::vector<int> prompt = Ints((*io_)["greedy"]["prompt"]);
  Val ids = IntArray(prompt);
  const std::string text = CallMod(*lm_, "decode", {ids.v}, {ids.code}).v.v_str;
  ASSERT_EQ(text.size(), prompt.size());
  for (size_t i = 0; i < prompt.size(); ++i) {
    EXPECT_EQ(text[i], prompt[i] == 0 ? '\n' : static_cast<char>(31 + prompt[i]));
  }
  Val enc = CallMod(*lm_, "encode", {Str(text)}, {kTVMStr});
  ASSERT_EQ(enc.tensor()->ndim, 1);
  ASSERT_EQ(enc.tensor()->shape[0], static_cast<int64_t>(prompt.size()));
  for (size_t i = 0; i < prompt.size(); ++i) {
    EXPECT_EQ(static_cast<int32_t*>(enc.tensor()->data)[i], prompt[i]);
  }
  // The same generation from the text.
  Val gen = Generate(*lm_, text, R"({"temperature": 0, "max_tokens": 13})");
  EXPECT_EQ(Drain(gen), Ints((*io_)["greedy"]["tokens"]));

  TVMValue id;
  id.v_int64 = 34;
  EXPECT_EQ(std::string(CallMod(*lm_, "token_text", {id}, {kTVMArgInt}).v.v_str), "A");
  id.v_int64 = 0;
  EXPECT_EQ(std::string(CallMod(*lm_, "token_text", {id}, {kTVMArgInt}).v.v_str), "\n");
  id.v_int64 = 96;
  EXPECT_ERROR(CallMod(*lm_, "token_text", {id}, {kTVMArgInt}),
               "ValueError: token id 96 is outside the vocabulary [0, 96)");
  Val bad = IntArray({1, -1});
  EXPECT_ERROR(CallMod(*lm_, "decode", {bad.v}, {bad.code}), "ValueError: token id -1");
  EXPECT_ERROR(CallMod(*lm_, "encode", {Str("caf\xc3\xa9")}, {kTVMStr}),
               "ValueError: the character '\xc3\xa9' (U+00E9) is not in the vocabulary");
  EXPECT_ERROR(CallMod(*lm_, "encode", {Str("a\tb")}, {kTVMStr}),
               "ValueError: the character U+0009 is not in the vocabulary");
  EXPECT_ERROR(CallMod(*lm_, "encode", {Str("\xff")}, {kTVMStr}),
               "ValueError: encode: invalid UTF-8");

  Json cfg = Json::parse(StrOf(*lm_, "config"));
  EXPECT_EQ(cfg["vocab_size"], 96);
  EXPECT_EQ(cfg["kv_cache"]["max_batch_size"], 4);
  EXPECT_EQ(cfg["kv_cache"]["prefill_chunk_size"], 64);
  EXPECT_EQ(cfg["tokenizer"]["kind"], "chars");
  EXPECT_EQ(cfg["tokenizer"]["chars"].get<std::string>().size(), 96u);
  EXPECT_EQ(cfg["stop_token_ids"], Json::array());
  EXPECT_EQ(fixture::TypeKey(lm_->v.v_handle), "polyffi.LanguageModel");
}

TEST_F(Lm, StopTokenEndsWithStopAndIsNotReturned) {
  const Json& g = (*io_)["greedy"];
  const std::vector<int> want = Ints(g["tokens"]);  // 15, 79, 82, 34 ('A'), ...
  ASSERT_EQ(want[3], 34);
  for (const char* opts :
       {R"({"temperature": 0, "stop_token_ids": [34]})", R"({"temperature": 0, "stop": ["A"]})",
        R"({"temperature": 0, "stop": ["z", "A"], "max_tokens": 100})"}) {
    Val gen = Generate(*lm_, Ints(g["prompt"]), opts);
    EXPECT_EQ(Drain(gen), std::vector<int>(want.begin(), want.begin() + 3)) << opts;
    EXPECT_EQ(StrOf(gen, "finish_reason"), "stop") << opts;
    EXPECT_EQ(CallMod(gen, "completion_tokens").v.v_int64, 3) << opts;
    EXPECT_EQ(Next(gen), -1);
  }
}

TEST_F(Lm, MaxTokensEndsWithLength) {
  const Json& g = (*io_)["greedy"];
  const std::vector<int> want = Ints(g["tokens"]);
  Val gen = Generate(*lm_, Ints(g["prompt"]), R"({"temperature": 0, "max_tokens": 5})");
  EXPECT_EQ(Drain(gen), std::vector<int>(want.begin(), want.begin() + 5));
  EXPECT_EQ(StrOf(gen, "finish_reason"), "length");
  Val none = Generate(*lm_, Ints(g["prompt"]), R"({"max_tokens": 0})");
  EXPECT_EQ(Next(none), -1);
  EXPECT_EQ(StrOf(none, "finish_reason"), "length");
  EXPECT_EQ(CallMod(none, "completion_tokens").v.v_int64, 0);
  // The default is 16 tokens.
  Val dflt = Generate(*lm_, Ints(g["prompt"]), "{}");
  EXPECT_EQ(Drain(dflt).size(), 16u);
  EXPECT_EQ(StrOf(dflt, "finish_reason"), "length");
}

TEST_F(Lm, SeededSamplingIsReproducibleAndEqualsSampledJson) {
  const std::string opts = R"({"temperature": 0.8, "top_p": 0.9, "seed": 7, "max_tokens": 20})";
  const std::vector<int> prompt = Ints((*io_)["greedy"]["prompt"]);
  std::vector<int> first = Drain(Generate(*lm_, prompt, opts));
  std::vector<int> second = Drain(Generate(*lm_, prompt, opts));
  ASSERT_EQ(first.size(), 20u);
  EXPECT_EQ(first, second);
  // Sampling is not greedy decoding in disguise, and another seed draws another sequence.
  EXPECT_NE(first, std::vector<int>(Ints((*io_)["greedy"]["tokens"])));
  std::vector<int> other = Drain(
      Generate(*lm_, prompt, R"({"temperature": 0.8, "top_p": 0.9, "seed": 8, "max_tokens": 20})"));
  EXPECT_NE(first, other);

  const std::string path = kDir + "/sampled.json";
  const char* write = std::getenv("POLYFFI_LM_WRITE_SAMPLED");
  if (write != nullptr && std::string(write) == "1") {
    Json j = {{"prompt", prompt},
              {"options", Json::parse(opts)},
              {"tokens", first},
              {"generator", "tests/tvm_models/lm_test.cc (POLYFFI_LM_WRITE_SAMPLED=1)"}};
    std::ofstream(path, std::ios::trunc) << j.dump(1) << "\n";
  }
  Json recorded = Json::parse(ReadFile(path));
  EXPECT_EQ(recorded["options"], Json::parse(opts));
  EXPECT_EQ(Ints(recorded["prompt"]), prompt);
  EXPECT_EQ(Ints(recorded["tokens"]), first);

  // Three seeded generations stepped in turn (decoded in batches) draw the same tokens (three
  // 39-token sequences fill the fixture's 9 pages).
  std::vector<Val> gens;
  for (int i = 0; i < 3; ++i) gens.push_back(Generate(*lm_, prompt, opts));
  std::vector<std::vector<int>> got(3);
  for (int step = 0; step < 20; ++step) {
    for (int i = 0; i < 3; ++i) got[i].push_back(static_cast<int>(Next(gens[i])));
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(got[i], first) << "generation " << i;
}

TEST_F(Lm, FourThreadsGenerateAtOnce) {
  const Json& g = (*io_)["greedy"];
  const std::vector<int> prompt = Ints(g["prompt"]), want = Ints(g["tokens"]);
  std::vector<std::vector<int>> got(4);
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      try {
        Val gen = Generate(*lm_, prompt, R"({"temperature": 0, "max_tokens": 13})");
        got[i] = Drain(gen);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(errors[i], "") << "thread " << i;
    EXPECT_EQ(got[i], want) << "thread " << i;
  }
}

TEST_F(Lm, GenerationErrors) {
  const std::vector<int> prompt = Ints((*io_)["greedy"]["prompt"]);
  EXPECT_ERROR(Generate(*lm_, prompt, R"({"temprature": 0})"),
               "ValueError: generate: unknown option \"temprature\"");
  EXPECT_ERROR(Generate(*lm_, prompt, "{"), "ValueError: generate: the options are not valid JSON");
  EXPECT_ERROR(Generate(*lm_, prompt, "[1]"), "ValueError: generate: the options must be a JSON");
  EXPECT_ERROR(Generate(*lm_, prompt, R"({"max_tokens": -1})"),
               "ValueError: generate: option max_tokens must not be negative");
  EXPECT_ERROR(Generate(*lm_, prompt, R"({"top_p": 0})"), "ValueError: generate: option top_p");
  EXPECT_ERROR(Generate(*lm_, prompt, R"({"temperature": -1})"),
               "ValueError: generate: option temperature");
  EXPECT_ERROR(Generate(*lm_, prompt, R"({"stop": ["ab"]})"),
               "ValueError: generate: option stop \"ab\" is not exactly one token");
  EXPECT_ERROR(Generate(*lm_, prompt, R"({"stop_token_ids": [96]})"),
               "ValueError: generate: option stop_token_ids holds 96");
  EXPECT_ERROR(Generate(*lm_, std::vector<int>{}, "{}"),
               "ValueError: generate: the prompt is empty");
  EXPECT_ERROR(Generate(*lm_, std::string(), "{}"), "ValueError: generate: the prompt is empty");
  EXPECT_ERROR(Generate(*lm_, std::vector<int>{1, 96}, "{}"),
               "ValueError: generate: prompt token 96 at 1 is outside the vocabulary");
  EXPECT_ERROR(Generate(*lm_, std::string("h\xc3\xa9"), "{}"),
               "ValueError: the character '\xc3\xa9' (U+00E9) is not in the vocabulary");
  EXPECT_ERROR(Generate(*lm_, std::vector<int>(129, 5), "{}"),
               "ValueError: generate: the prompt has 129 tokens, more than the KV cache holds");

  // At most max_batch_size (4) generations alive at once; closing one frees its place.
  {
    std::vector<Val> alive;
    for (int i = 0; i < 4; ++i) alive.push_back(Generate(*lm_, prompt, "{}"));
    EXPECT_ERROR(Generate(*lm_, prompt, "{}"), "RuntimeError: too many concurrent generations");
    CallMod(alive[1], "close");
    EXPECT_EQ(Next(alive[1]), -1);
    Val again = Generate(*lm_, prompt, R"({"temperature": 0, "max_tokens": 13})");
    EXPECT_EQ(Drain(again), Ints((*io_)["greedy"]["tokens"]));
    // A finished generation gave its sequence back: another one fits.
    Val more = Generate(*lm_, prompt, "{}");
  }

  // The cache full (9 pages of 16 tokens): two 64-token prompts take 8 pages, a third prompt of
  // 32 tokens cannot get its 2 pages. next() says so and the generation ends; the others go on.
  {
    Val a = Generate(*lm_, std::vector<int>(64, 7), R"({"temperature": 0})");
    Val b = Generate(*lm_, std::vector<int>(64, 8), R"({"temperature": 0})");
    EXPECT_GE(Next(a), 0);
    EXPECT_GE(Next(b), 0);
    Val c = Generate(*lm_, std::vector<int>(32, 9), R"({"temperature": 0})");
    EXPECT_ERROR(Next(c), "RuntimeError: the KV cache is full");
    EXPECT_EQ(Next(c), -1);
    EXPECT_EQ(StrOf(c, "finish_reason"), "length");
    EXPECT_GE(Next(a), 0);
  }
  // Everything above was given back: TVM's tokens again.
  Val gen = Generate(*lm_, prompt, R"({"temperature": 0, "max_tokens": 13})");
  EXPECT_EQ(Drain(gen), Ints((*io_)["greedy"]["tokens"]));
}

// A prompt longer than prefill_chunk_size is prefilled in chunks (here 8 + 8 + 3 tokens): the
// same tokens and logits as TVM's one-shot prefill.
TEST(LmChunks, ChunkedPrefillEqualsTvm) {
  const Json io = Json::parse(ReadFile(kDir + "/io.json"));
  const Json& g = io["greedy"];
  TempModel m;
  Json cfg = Json::parse(ReadFile(kDir + "/lm-config.json"));
  cfg["kv_cache"]["prefill_chunk_size"] = 8;
  m.Write("lm-config.json", cfg.dump());
  Val lm = Load(m.dir.string());
  Val gen = Generate(lm, Ints(g["prompt"]), R"({"temperature": 0, "max_tokens": 13})");
  ASSERT_EQ(Next(gen), Ints(g["tokens"])[0]);
  const std::vector<float> prefill = ReadFloats(g["prefill_logits"]);
  ExpectClose(Logits(gen), prefill.data() + prefill.size() - 96, 96, "chunked prefill");
  std::vector<int> rest = Drain(gen);
  rest.insert(rest.begin(), Ints(g["tokens"])[0]);
  EXPECT_EQ(rest, Ints(g["tokens"]));
}

// The config's stop_token_ids apply to every generation; a generation's own add to them.
TEST(LmChunks, ConfigStopTokens) {
  const Json io = Json::parse(ReadFile(kDir + "/io.json"));
  const Json& g = io["greedy"];
  const std::vector<int> want = Ints(g["tokens"]);  // 15, 79, 82, 34, ...
  TempModel m;
  Json cfg = Json::parse(ReadFile(kDir + "/lm-config.json"));
  cfg["stop_token_ids"] = {34};
  m.Write("lm-config.json", cfg.dump());
  Val lm = Load(m.dir.string());
  EXPECT_EQ(Json::parse(StrOf(lm, "config"))["stop_token_ids"], Json::array({34}));
  Val a = Generate(lm, Ints(g["prompt"]), R"({"temperature": 0})");
  EXPECT_EQ(Drain(a), std::vector<int>(want.begin(), want.begin() + 3));
  EXPECT_EQ(StrOf(a, "finish_reason"), "stop");
  Val b = Generate(lm, Ints(g["prompt"]), R"({"temperature": 0, "stop_token_ids": [82]})");
  EXPECT_EQ(Drain(b), std::vector<int>(want.begin(), want.begin() + 2));
  EXPECT_EQ(StrOf(b, "finish_reason"), "stop");
}

TEST(LmLoad, Errors) {
  EXPECT_ERROR(Load("/nonexistent/polyffi-lm"),
               "FileNotFoundError: polyffi.lm.load: the model directory /nonexistent/polyffi-lm "
               "does not exist");
  {
    TempModel m;
    fs::remove(m.dir / "lm-config.json");
    EXPECT_ERROR(Load(m.dir.string()), "FileNotFoundError: polyffi.lm.load: ");
  }
  {
    TempModel m;
    m.Write("lm-config.json", "{\"model_lib\": ");
    EXPECT_ERROR(Load(m.dir.string()), "lm-config.json: not valid JSON");
    EXPECT_NE(ErrorOf([&] { Load(m.dir.string()); }).rfind("ValueError: ", 0), std::string::npos);
  }
  Json cfg = Json::parse(ReadFile(kDir + "/lm-config.json"));
  auto spoiled = [&](const std::function<void(Json&)>& edit) {
    TempModel m;
    Json j = cfg;
    edit(j);
    m.Write("lm-config.json", j.dump());
    return ErrorOf([&] { Load(m.dir.string()); });
  };
  EXPECT_NE(spoiled([](Json& j) { j.erase("vocab_size"); }).find("ValueError: "),
            std::string::npos);
  EXPECT_NE(spoiled([](Json& j) { j.erase("vocab_size"); }).find("vocab_size is missing"),
            std::string::npos);
  EXPECT_NE(
      spoiled([](Json& j) { j["vocab_size"] = 95; }).find("has 96 characters but vocab_size is 95"),
      std::string::npos);
  EXPECT_NE(spoiled([](Json& j) {
              j["kv_cache"]["page_size"] = "16";
            }).find("kv_cache.page_size must be an integer"),
            std::string::npos);
  EXPECT_NE(spoiled([](Json& j) { j["tokenizer"]["kind"] = "bpe"; }).find("tokenizer.kind must be"),
            std::string::npos);
  EXPECT_NE(spoiled([](Json& j) { j["extra"] = 1; }).find("\"extra\" is not a known field"),
            std::string::npos);
  EXPECT_NE(spoiled([](Json& j) { j["params"][0] = "nope"; }).find("params names \"nope\""),
            std::string::npos);
  EXPECT_NE(spoiled([](Json& j) { j["model_lib"] = "missing.so"; }).find("FileNotFoundError: "),
            std::string::npos);
  EXPECT_NE(spoiled([](Json& j) { j["weights"] = "nowhere"; }).find("FileNotFoundError: "),
            std::string::npos);
  EXPECT_NE(spoiled([](Json& j) { j["stop_token_ids"] = {96}; }).find("stop_token_ids[0]"),
            std::string::npos);
  {
    // A truncated shard.
    TempModel m;
    fs::path shard = m.dir / "params" / "params_shard_0.bin";
    fs::resize_file(shard, fs::file_size(shard) - 100);
    std::string e = ErrorOf([&] { Load(m.dir.string()); });
    EXPECT_EQ(e.rfind("ValueError: ", 0), 0u) << e;
    EXPECT_NE(e.find("params_shard_0.bin"), std::string::npos) << e;
  }
  {
    // A working copy loads and generates (the spoiling above is what failed).
    TempModel m;
    Val lm = Load(m.dir.string());
    Val gen = Generate(lm, std::vector<int>{3, 17, 42}, R"({"max_tokens": 2})");
    EXPECT_EQ(Drain(gen).size(), 2u);
  }
}

}  // namespace
