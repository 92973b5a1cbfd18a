// lm-config.json: every field checked, every refusal a typed error naming the file and the field.
#include "config.h"

#include <sys/stat.h>

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "polyffi/error.h"
#include "tokenizer.h"

namespace polyffi {
namespace lm {
namespace {

using Json = nlohmann::json;

bool IsDir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool Exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}
std::string Join(const std::string& dir, const std::string& rel) {
  if (!rel.empty() && rel[0] == '/') return rel;
  return dir + "/" + rel;
}

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}
  [[noreturn]] void Fail(const std::string& field, const std::string& what) const {
    Throw("ValueError", file_, ": ", field, " ", what);
  }
  const Json& Field(const Json& obj, const char* key, const std::string& path) const {
    auto it = obj.find(key);
    if (it == obj.end()) Fail(path, "is missing");
    return *it;
  }
  std::string Str(const Json& v, const std::string& path) const {
    if (!v.is_string()) Fail(path, "must be a string");
    return v.get<std::string>();
  }
  int64_t Int(const Json& v, const std::string& path, int64_t lo, int64_t hi) const {
    if (!v.is_number_integer()) Fail(path, "must be an integer");
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) {
      Fail(path, "must be at most " + std::to_string(hi));
    }
    int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) {
      Fail(path, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                     std::to_string(x));
    }
    return x;
  }

 private:
  std::string file_;
};

}  // namespace

Config ReadConfig(const std::string& dir) {
  if (dir.empty()) Throw("ValueError", "polyffi.lm.load: the model directory is empty");
  if (!IsDir(dir)) {
    Throw("FileNotFoundError", "polyffi.lm.load: the model directory ", dir, " does not exist");
  }
  const std::string file = dir + "/lm-config.json";
  std::ifstream in(file, std::ios::binary);
  if (!in) Throw("FileNotFoundError", "polyffi.lm.load: ", file, " does not exist");
  std::stringstream ss;
  ss << in.rdbuf();
  Json j = Json::parse(ss.str(), nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
  if (j.is_discarded()) Throw("ValueError", file, ": not valid JSON");
  if (!j.is_object()) Throw("ValueError", file, ": must hold a JSON object");

  Reader r(file);
  static const char* kKeys[] = {"model_lib", "weights",   "params",        "vocab_size",
                                "kv_cache",  "tokenizer", "stop_token_ids"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const char* k : kKeys) known = known || it.key() == k;
    if (!known) r.Fail("\"" + it.key() + "\"", "is not a known field");
  }
  Config c;
  c.dir = dir;
  c.model_lib = Join(dir, r.Str(r.Field(j, "model_lib", "model_lib"), "model_lib"));
  c.weights = Join(dir, r.Str(r.Field(j, "weights", "weights"), "weights"));
  if (auto it = j.find("params"); it != j.end()) {
    if (!it->is_array()) r.Fail("params", "must be a list of strings");
    for (size_t i = 0; i < it->size(); ++i) {
      c.params.push_back(r.Str((*it)[i], "params[" + std::to_string(i) + "]"));
    }
  }
  constexpr int64_t kMaxInt = std::numeric_limits<int32_t>::max();
  c.vocab_size = r.Int(r.Field(j, "vocab_size", "vocab_size"), "vocab_size", 1, kMaxInt);

  const Json& kv = r.Field(j, "kv_cache", "kv_cache");
  if (!kv.is_object()) r.Fail("kv_cache", "must be an object");
  for (auto it = kv.begin(); it != kv.end(); ++it) {
    const std::string& k = it.key();
    if (k != "max_batch_size" && k != "max_total_seq_len" && k != "prefill_chunk_size" &&
        k != "page_size" && k != "support_sliding_window") {
      r.Fail("kv_cache.\"" + k + "\"", "is not a known field");
    }
  }
  auto kv_int = [&](const char* key, int64_t lo, int64_t hi) {
    return r.Int(r.Field(kv, key, std::string("kv_cache.") + key), std::string("kv_cache.") + key,
                 lo, hi);
  };
  c.kv_cache.max_batch_size = kv_int("max_batch_size", 1, 1 << 16);
  c.kv_cache.max_total_seq_len = kv_int("max_total_seq_len", 1, kMaxInt);
  c.kv_cache.prefill_chunk_size = kv_int("prefill_chunk_size", 1, kMaxInt);
  c.kv_cache.page_size = kv_int("page_size", 1, 1 << 20);
  if (kv.contains("support_sliding_window")) {
    c.kv_cache.support_sliding_window = kv_int("support_sliding_window", 0, 0);
  }

  const Json& tok = r.Field(j, "tokenizer", "tokenizer");
  if (!tok.is_object()) r.Fail("tokenizer", "must be an object");
  c.tokenizer_kind = r.Str(r.Field(tok, "kind", "tokenizer.kind"), "tokenizer.kind");
  if (c.tokenizer_kind != "chars") {
    r.Fail("tokenizer.kind",
           "must be \"chars\" (the only tokenizer), got \"" + c.tokenizer_kind + "\"");
  }
  c.tokenizer_chars = r.Str(r.Field(tok, "chars", "tokenizer.chars"), "tokenizer.chars");
  const size_t nchars = DecodeUtf8(c.tokenizer_chars, "tokenizer.chars").size();
  if (static_cast<int64_t>(nchars) != c.vocab_size) {
    r.Fail("tokenizer.chars", "has " + std::to_string(nchars) + " characters but vocab_size is " +
                                  std::to_string(c.vocab_size));
  }
  if (auto it = j.find("stop_token_ids"); it != j.end()) {
    if (!it->is_array()) r.Fail("stop_token_ids", "must be a list of token ids");
    for (size_t i = 0; i < it->size(); ++i) {
      c.stop_token_ids.push_back(static_cast<int32_t>(
          r.Int((*it)[i], "stop_token_ids[" + std::to_string(i) + "]", 0, c.vocab_size - 1)));
    }
  }
  if (!Exists(c.model_lib)) {
    Throw("FileNotFoundError", file, ": model_lib ", c.model_lib, " does not exist");
  }
  if (!IsDir(c.weights)) {
    Throw("FileNotFoundError", file, ": weights ", c.weights, " is not a directory");
  }
  if (!Exists(c.weights + "/tensor-cache.json") && !Exists(c.weights + "/ndarray-cache.json")) {
    Throw("FileNotFoundError", file, ": weights ", c.weights,
          " holds neither tensor-cache.json nor ndarray-cache.json");
  }
  return c;
}

std::string Config::ToJson() const {
  Json j;
  j["vocab_size"] = vocab_size;
  j["kv_cache"] = {{"max_batch_size", kv_cache.max_batch_size},
                   {"max_total_seq_len", kv_cache.max_total_seq_len},
                   {"prefill_chunk_size", kv_cache.prefill_chunk_size},
                   {"page_size", kv_cache.page_size},
                   {"support_sliding_window", kv_cache.support_sliding_window}};
  j["tokenizer"] = {{"kind", tokenizer_kind}, {"chars", tokenizer_chars}};
  j["stop_token_ids"] = stop_token_ids;
  return j.dump();
}

}  // namespace lm
}  // namespace polyffi
