// LanguageModel and Generation (language_model.h).
#include "language_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "../formats/tensor_cache_dir.h"
#include "../model_runner/model_runner.h"
#include "polyffi/error.h"
#include "polyffi/registry.h"

namespace polyffi {
namespace lm {
namespace {

using Json = nlohmann::json;

using model_runner::CallWith;

ObjectPtr<FunctionObj> NeedFunction(ModuleObj* m, const char* name, const std::string& lib) {
  ObjectPtr<FunctionObj> f = m->GetFunction(name, false);
  if (!f) {
    Throw("ValueError", "polyffi.lm.load: the model library ", lib, " has no function ", name,
          " (a language model needs prefill, decode and create_paged_kv_cache)");
  }
  return f;
}

ObjectPtr<FunctionObj> NeedGlobal(const char* name) {
  ObjectPtr<FunctionObj> f = Registry::Global()->Get(name);
  if (!f) Throw("RuntimeError", "polyffi.lm: the global ", name, " is not registered");
  return f;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// LanguageModel

LanguageModel::LanguageModel(const std::string& dir)
    : cfg_(ReadConfig(dir)), tok_(cfg_.tokenizer_chars) {
  const KVCacheConfig& kv = cfg_.kv_cache;
  // The relax VM over the library, as TVM's relax.VirtualMachine(lib, cpu) makes it.
  lib_ = LoadModuleFromFile(cfg_.model_lib, "");
  ObjectPtr<FunctionObj> load = lib_->GetFunction("vm_load_executable", true);
  if (!load) {
    Throw("ValueError", "polyffi.lm.load: ", cfg_.model_lib,
          " is not a relax VM executable (no vm_load_executable)");
  }
  vm_ = model_runner::LoadVMExecutable(load.get());
  if (!vm_) {
    Throw("ValueError", "polyffi.lm.load: vm_load_executable of ", cfg_.model_lib,
          " did not return a module");
  }
  if (!model_runner::InitializeVM(vm_.get(), {kDLCPU, 0, 2 /* pooled allocator */})) {
    NeedFunction(vm_.get(), "vm_initialization", cfg_.model_lib);  // throws: there is none
  }
  prefill_ = NeedFunction(vm_.get(), "prefill", cfg_.model_lib);
  decode_ = NeedFunction(vm_.get(), "decode", cfg_.model_lib);

  // The cache, made by the model itself (its kernels and layer geometry).
  {
    ObjectPtr<FunctionObj> create =
        NeedFunction(vm_.get(), "create_paged_kv_cache", cfg_.model_lib);
    const int64_t args[5] = {kv.max_batch_size, kv.max_total_seq_len, kv.prefill_chunk_size,
                             kv.page_size, kv.support_sliding_window};
    std::vector<ObjectPtr<ShapeTupleObj>> shapes;
    std::vector<TVMValue> v(5);
    std::vector<int> c(5, kTVMObjectHandle);
    for (int i = 0; i < 5; ++i) {
      shapes.push_back(MakeObject<ShapeTupleObj>(std::vector<int64_t>{args[i]}));
      v[i].v_handle = static_cast<Object*>(shapes.back().get());
    }
    RetValue made;
    CallWith(create.get(), &v, &c, &made);
    Object* o = made.object();
    if (o == nullptr || o->type_index() != kv_cache::PagedKVCacheObj::RuntimeTypeIndex()) {
      Throw("ValueError", "polyffi.lm.load: create_paged_kv_cache of ", cfg_.model_lib,
            " did not return a paged KV cache");
    }
    cache_ =
        ObjectPtr<kv_cache::PagedKVCacheObj>::Borrow(static_cast<kv_cache::PagedKVCacheObj*>(o));
  }

  // The weights, in the order the model takes them.
  auto records = formats::LoadTensorCacheDir(cfg_.weights);
  params_ = MakeObject<ArrayObj>();
  if (cfg_.params.empty()) {
    for (auto& r : records) {
      params_->items.emplace_back();
      params_->items.back().SetObject(std::move(r.second));
    }
  } else {
    for (const std::string& name : cfg_.params) {
      auto it = std::find_if(records.begin(), records.end(),
                             [&](const auto& r) { return r.first == name; });
      if (it == records.end()) {
        Throw("ValueError", cfg_.dir, "/lm-config.json: params names \"", name,
              "\", which the tensor cache ", cfg_.weights, " does not hold");
      }
      params_->items.emplace_back();
      params_->items.back().SetObject(it->second);
    }
  }

  softmax_ = NeedGlobal("vm.builtin.apply_softmax_with_temperature");
  sample_top_p_ = NeedGlobal("vm.builtin.sample_top_p_from_prob");
  probs_ =
      NDArrayObj::Empty({1, cfg_.vocab_size}, DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0});
  seq_in_use_.assign(static_cast<size_t>(kv.max_batch_size), false);
}

GenerationOptions LanguageModel::ParseOptions(const std::string& text) const {
  GenerationOptions o;
  o.stop_token_ids = cfg_.stop_token_ids;
  if (text.empty()) return o;
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) Throw("ValueError", "generate: the options are not valid JSON");
  if (j.is_null()) return o;
  if (!j.is_object()) Throw("ValueError", "generate: the options must be a JSON object");
  auto fail = [](const std::string& key, const std::string& what) {
    Throw("ValueError", "generate: option ", key, " ", what);
  };
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const Json& v = it.value();
    if (key == "max_tokens") {
      if (!v.is_number_integer()) fail(key, "must be an integer");
      if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{1} << 62)
        fail(key, "is too large");
      o.max_tokens = v.get<int64_t>();
      if (o.max_tokens < 0) fail(key, "must not be negative, got " + std::to_string(o.max_tokens));
    } else if (key == "temperature") {
      if (!v.is_number()) fail(key, "must be a number");
      o.temperature = v.get<double>();
      if (!(o.temperature >= 0) || !std::isfinite(o.temperature)) {
        fail(key, "must be a finite number >= 0");
      }
    } else if (key == "top_p") {
      if (!v.is_number()) fail(key, "must be a number");
      o.top_p = v.get<double>();
      if (!(o.top_p > 0 && o.top_p <= 1)) fail(key, "must be in (0, 1]");
    } else if (key == "seed") {
      if (!v.is_number_integer()) fail(key, "must be an integer");
      if (v.is_number_unsigned()) {
        o.seed = v.get<uint64_t>();
      } else {
        const int64_t s = v.get<int64_t>();
        if (s < 0) fail(key, "must not be negative");
        o.seed = static_cast<uint64_t>(s);
      }
    } else if (key == "stop") {
      std::vector<std::string> stops;
      if (v.is_string()) {
        stops.push_back(v.get<std::string>());
      } else if (v.is_array()) {
        for (const Json& s : v) {
          if (!s.is_string()) fail(key, "must be a list of strings");
          stops.push_back(s.get<std::string>());
        }
      } else {
        fail(key, "must be a list of strings");
      }
      for (const std::string& s : stops) {
        int32_t id = tok_.SingleToken(s);
        if (id < 0) {
          fail(key, "\"" + s + "\" is not exactly one token of the vocabulary");
        }
        o.stop_token_ids.push_back(id);
      }
    } else if (key == "stop_token_ids") {
      if (!v.is_array()) fail(key, "must be a list of token ids");
      for (const Json& s : v) {
        if (!s.is_number_integer()) fail(key, "must be a list of token ids");
        if (s.is_number_unsigned()
                ? s.get<uint64_t>() >= static_cast<uint64_t>(cfg_.vocab_size)
                : (s.get<int64_t>() < 0 || s.get<int64_t>() >= cfg_.vocab_size)) {
          fail(key, "holds " + s.dump() + ", outside the vocabulary [0, " +
                        std::to_string(cfg_.vocab_size) + ")");
        }
        o.stop_token_ids.push_back(static_cast<int32_t>(s.get<int64_t>()));
      }
    } else {
      Throw("ValueError", "generate: unknown option \"", key,
            "\" (known: max_tokens, temperature, top_p, seed, stop, stop_token_ids)");
    }
  }
  return o;
}

int64_t LanguageModel::AcquireSequence() {
  for (size_t i = 0; i < seq_in_use_.size(); ++i) {
    if (!seq_in_use_[i]) {
      cache_->AddSequence(static_cast<int64_t>(i));
      seq_in_use_[i] = true;
      return static_cast<int64_t>(i);
    }
  }
  Throw("RuntimeError", "too many concurrent generations: the model allows ", seq_in_use_.size(),
        " (kv_cache.max_batch_size); close or finish one first");
}

void LanguageModel::ReleaseSequence(int64_t seq_id) {
  if (seq_id < 0 || static_cast<size_t>(seq_id) >= seq_in_use_.size() || !seq_in_use_[seq_id]) {
    return;
  }
  cache_->RemoveSequence(seq_id);
  seq_in_use_[seq_id] = false;
}

std::vector<float> LanguageModel::RunModel(FunctionObj* f, const int32_t* tokens, int64_t rows,
                                           int64_t cols, bool all_rows) {
  ObjectPtr<NDArrayObj> in =
      NDArrayObj::Empty({rows, cols}, DLDataType{kDLInt, 32, 1}, DLDevice{kDLCPU, 0});
  std::memcpy(in->tensor.data, tokens, static_cast<size_t>(rows * cols) * sizeof(int32_t));
  std::vector<TVMValue> v(3);
  v[0].v_handle = in->handle();
  v[1].v_handle = static_cast<Object*>(cache_.get());
  v[2].v_handle = static_cast<Object*>(params_.get());
  std::vector<int> c = {kTVMNDArrayHandle, kTVMObjectHandle, kTVMObjectHandle};
  RetValue out;
  CallWith(f, &v, &c, &out);
  if (out.type_code() != kTVMNDArrayHandle || out.object() == nullptr) {
    Throw("ValueError", "polyffi.lm: the model's ", f == prefill_.get() ? "prefill" : "decode",
          " returned no tensor (expected logits)");
  }
  const DLTensor& t = static_cast<NDArrayObj*>(out.object())->tensor;
  const int64_t positions = rows * cols;
  if (t.dtype.code != kDLFloat || t.dtype.bits != 32 || t.dtype.lanes != 1 || t.ndim != 3 ||
      t.shape[0] * t.shape[1] != positions || t.shape[2] != cfg_.vocab_size || !IsCompact(t)) {
    Throw("ValueError", "polyffi.lm: the model's logits are not float32 (", rows, ", ", cols, ", ",
          cfg_.vocab_size, ") (is vocab_size right?)");
  }
  const float* p = reinterpret_cast<const float*>(static_cast<const char*>(t.data) + t.byte_offset);
  return std::vector<float>(p + (all_rows ? 0 : (positions - 1) * cfg_.vocab_size),
                            p + positions * cfg_.vocab_size);
}

std::vector<float> LanguageModel::Forward(int64_t seq_id, const int32_t* tokens, int64_t n,
                                          bool decode) {
  const int64_t page = cfg_.kv_cache.page_size;
  const int64_t len = cache_->SequenceLength(seq_id);
  const int64_t need = (len + n + page - 1) / page - (len + page - 1) / page;
  if (need > cache_->NumAvailablePages() || len + n > cfg_.kv_cache.max_total_seq_len) {
    Throw("RuntimeError", "the KV cache is full: sequence ", seq_id, " has ", len,
          " tokens and needs ", n, " more (", cache_->NumAvailablePages(), " free pages of ", page,
          " tokens, max_total_seq_len ", cfg_.kv_cache.max_total_seq_len, ")");
  }
  std::vector<float> last;
  const int64_t chunk = decode ? 1 : cfg_.kv_cache.prefill_chunk_size;
  for (int64_t done = 0; done < n; done += chunk) {
    const int64_t m = std::min(chunk, n - done);
    cache_->BeginForward(&seq_id, &m, 1);
    last = RunModel(decode ? decode_.get() : prefill_.get(), tokens + done, 1, m, false);
    cache_->EndForward();
  }
  return last;
}

int64_t LanguageModel::DecodePages(int64_t seq_id) const {
  const int64_t len = cache_->SequenceLength(seq_id);
  if (len + 1 > cfg_.kv_cache.max_total_seq_len) return -1;
  return len % cfg_.kv_cache.page_size == 0 ? 1 : 0;
}

std::vector<std::vector<float>> LanguageModel::DecodeBatch(const std::vector<int64_t>& seq_ids,
                                                           const std::vector<int32_t>& tokens) {
  const auto b = static_cast<int64_t>(seq_ids.size());
  const std::vector<int64_t> ones(seq_ids.size(), 1);
  cache_->BeginForward(seq_ids.data(), ones.data(), b);
  std::vector<float> all = RunModel(decode_.get(), tokens.data(), b, 1, true);
  cache_->EndForward();
  std::vector<std::vector<float>> rows;
  const auto v = static_cast<size_t>(cfg_.vocab_size);
  for (size_t i = 0; i < seq_ids.size(); ++i) {
    rows.emplace_back(all.begin() + i * v, all.begin() + (i + 1) * v);
  }
  return rows;
}

int32_t LanguageModel::Sample(const std::vector<float>& logits, double temperature, double top_p,
                              std::mt19937_64* rng) {
  if (temperature < 1e-6) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  std::memcpy(probs_->tensor.data, logits.data(), logits.size() * sizeof(float));
  const double uniform = std::uniform_real_distribution<double>(0.0, 1.0)(*rng);
  std::vector<TVMValue> v(2);
  std::vector<int> c = {kTVMNDArrayHandle, kTVMArgFloat};
  v[0].v_handle = probs_->handle();
  v[1].v_float64 = temperature;
  RetValue ignored;
  CallWith(softmax_.get(), &v, &c, &ignored);
  v.resize(3);
  c = {kTVMNDArrayHandle, kTVMArgFloat, kTVMArgFloat};
  v[1].v_float64 = top_p;
  v[2].v_float64 = uniform;
  RetValue token;
  CallWith(sample_top_p_.get(), &v, &c, &token);
  const int64_t id = token.value().v_int64;
  if (token.type_code() != kTVMArgInt || id < 0 || id >= cfg_.vocab_size) {
    Throw("RuntimeError", "polyffi.lm: sampling returned no token of the vocabulary");
  }
  return static_cast<int32_t>(id);
}

// ---------------------------------------------------------------------------------------------
// Generation

Generation::Generation(ObjectPtr<LanguageModel> model, std::vector<int32_t> prompt,
                       GenerationOptions opts)
    : model_(std::move(model)),
      prompt_(std::move(prompt)),
      opts_(std::move(opts)),
      rng_(opts_.seed) {
  if (prompt_.empty()) Throw("ValueError", "generate: the prompt is empty");
  const int64_t vocab = model_->config().vocab_size;
  for (size_t i = 0; i < prompt_.size(); ++i) {
    if (prompt_[i] < 0 || prompt_[i] >= vocab) {
      Throw("ValueError", "generate: prompt token ", prompt_[i], " at ", i,
            " is outside the vocabulary [0, ", vocab, ")");
    }
  }
  const int64_t cap = model_->config().kv_cache.max_total_seq_len;
  if (static_cast<int64_t>(prompt_.size()) > cap) {
    Throw("ValueError", "generate: the prompt has ", prompt_.size(),
          " tokens, more than the KV cache holds for one sequence (max_total_seq_len ", cap, ")");
  }
  std::lock_guard<std::mutex> lock(model_->mu());
  seq_id_ = model_->AcquireSequence();
  model_->live().push_back(this);
}

Generation::~Generation() {
  try {
    std::lock_guard<std::mutex> lock(model_->mu());
    auto& live = model_->live();
    live.erase(std::remove(live.begin(), live.end(), this), live.end());
    model_->ReleaseSequence(seq_id_);
  } catch (...) {  // the sequence is ours and known to the cache: nothing to report
  }
}

void Generation::Finish(const char* reason) {
  finished_ = true;
  finish_reason_ = reason;
  const int64_t id = seq_id_;
  seq_id_ = -1;
  model_->ReleaseSequence(id);
}

int64_t Generation::Next() {
  std::lock_guard<std::mutex> lock(model_->mu());
  if (finished_) return -1;
  if (completion_ >= opts_.max_tokens) {
    Finish("length");
    return -1;
  }
  int32_t token = -1;
  try {
    if (has_pending_) {  // decoded ahead in another generation's batch
      has_pending_ = false;
      if (pending_error_) std::rethrow_exception(std::exchange(pending_error_, nullptr));
      logits_ = std::move(pending_logits_);
      token = pending_token_;
    } else if (!started_) {
      logits_ =
          model_->Forward(seq_id_, prompt_.data(), static_cast<int64_t>(prompt_.size()), false);
      started_ = true;
      token = model_->Sample(logits_, opts_.temperature, opts_.top_p, &rng_);
    } else {
      token = DecodeStep();
    }
  } catch (...) {
    // Out of cache, or a model error part way through a forward: the sequence's cached state can
    // no longer be continued, so the generation ends (and its sequence is freed).
    Finish("length");
    throw;
  }
  if (std::find(opts_.stop_token_ids.begin(), opts_.stop_token_ids.end(), token) !=
      opts_.stop_token_ids.end()) {
    Finish("stop");
    return -1;
  }
  last_token_ = token;
  ++completion_;
  return token;
}

int32_t Generation::DecodeStep() {
  // This generation first; when it does not fit, Forward says the cache is full.
  std::vector<Generation*> batch = {this};
  int64_t free = model_->FreePages() - model_->DecodePages(seq_id_);
  if (model_->DecodePages(seq_id_) >= 0 && free >= 0) {
    for (Generation* g : model_->live()) {
      if (g == this || !g->WantsStep()) continue;
      const int64_t need = model_->DecodePages(g->seq_id_);
      if (need < 0 || need > free) continue;
      free -= need;
      batch.push_back(g);
    }
  }
  if (batch.size() == 1) {
    logits_ = model_->Forward(seq_id_, &last_token_, 1, true);
    return model_->Sample(logits_, opts_.temperature, opts_.top_p, &rng_);
  }
  std::vector<int64_t> ids;
  std::vector<int32_t> tokens;
  for (Generation* g : batch) {
    ids.push_back(g->seq_id_);
    tokens.push_back(g->last_token_);
  }
  std::vector<std::vector<float>> rows;
  try {
    rows = model_->DecodeBatch(ids, tokens);
  } catch (...) {
    // The step failed for every sequence in it: the others see the error at their next().
    for (size_t i = 1; i < batch.size(); ++i) {
      batch[i]->has_pending_ = true;
      batch[i]->pending_error_ = std::current_exception();
    }
    throw;
  }
  for (size_t i = 1; i < batch.size(); ++i) {
    Generation* g = batch[i];
    g->has_pending_ = true;
    g->pending_logits_ = std::move(rows[i]);
    try {
      g->pending_token_ =
          model_->Sample(g->pending_logits_, g->opts_.temperature, g->opts_.top_p, &g->rng_);
    } catch (...) {
      g->pending_error_ = std::current_exception();
    }
  }
  logits_ = std::move(rows[0]);
  return model_->Sample(logits_, opts_.temperature, opts_.top_p, &rng_);
}

std::string Generation::FinishReason() {
  std::lock_guard<std::mutex> lock(model_->mu());
  return finish_reason_;
}

std::vector<float> Generation::Logits() {
  std::lock_guard<std::mutex> lock(model_->mu());
  if (logits_.empty()) {
    Throw("ValueError", "logits: no token has been generated yet (call next() first)");
  }
  return logits_;
}

int64_t Generation::CompletionTokens() {
  std::lock_guard<std::mutex> lock(model_->mu());
  return completion_;
}

void Generation::Close() {
  std::lock_guard<std::mutex> lock(model_->mu());
  if (finished_) return;
  finished_ = true;
  const int64_t id = seq_id_;
  seq_id_ = -1;
  model_->ReleaseSequence(id);
}

}  // namespace lm
}  // namespace polyffi
