// polyffi.lm: a language model (a TVM 0.27 relax executable with prefill/decode over a paged KV
// cache, its weights, a character tokenizer) and the generations running on it (docs/lm.md).
//
// One model owns one KV cache; every generation is a sequence in it, with an id the model hands
// out (0 .. max_batch_size-1) and takes back when the generation finishes, is closed or freed.
// Every call that touches the cache, the VM or a generation's state holds the model's mutex, so
// generations on several threads are safe (they take turns; a step is one forward).
#ifndef POLYFFI_CORE_LM_LANGUAGE_MODEL_H_
#define POLYFFI_CORE_LM_LANGUAGE_MODEL_H_

#include <cstdint>
#include <exception>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "../kv_cache/paged_kv_cache.h"
#include "config.h"
#include "polyffi/container.h"
#include "polyffi/module.h"
#include "polyffi/ndarray.h"
#include "tokenizer.h"

namespace polyffi {
namespace lm {

class Generation;

/*! \brief The options of one generation (every key of the JSON is optional). */
struct GenerationOptions {
  int64_t max_tokens = 16;
  double temperature = 1.0;  // below 1e-6: greedy (argmax, first maximum wins)
  double top_p = 1.0;
  uint64_t seed = 0;
  std::vector<int32_t> stop_token_ids;  // the config's, then stop's, then stop_token_ids
};

class LanguageModel final : public ModuleObj {
 public:
  /*! \brief Load a model directory (FileNotFoundError / ValueError, see config.h). */
  explicit LanguageModel(const std::string& dir);
  std::string type_key() const override { return "polyffi.LanguageModel"; }

  const Config& config() const { return cfg_; }
  const CharTokenizer& tokenizer() const { return tok_; }
  /*! \brief Parse options JSON; ValueError for an unknown key or a bad value. */
  GenerationOptions ParseOptions(const std::string& json) const;

  // ---- Under the model's lock (mu()) ----
  std::mutex& mu() { return mu_; }
  /*! \brief A free sequence id added to the cache; RuntimeError when all are in use. */
  int64_t AcquireSequence();
  /*! \brief Remove the sequence from the cache and free its id. */
  void ReleaseSequence(int64_t seq_id);
  /*!
   * \brief Append tokens to a sequence (prefill in chunks of prefill_chunk_size, or one decode
   *  step for a single token after the prompt) and return the logits of the last position.
   *  RuntimeError "the KV cache is full ..." when the pages are not there (nothing changes).
   */
  std::vector<float> Forward(int64_t seq_id, const int32_t* tokens, int64_t n, bool decode);
  /*!
   * \brief One decode step of several sequences in one call of the model's decode: the logits
   *  of each (the caller has checked that their pages fit, see DecodeFits).
   */
  std::vector<std::vector<float>> DecodeBatch(const std::vector<int64_t>& seq_ids,
                                              const std::vector<int32_t>& tokens);
  /*! \brief Pages one more token of seq_id takes (0 or 1), or -1 past max_total_seq_len. */
  int64_t DecodePages(int64_t seq_id) const;
  int64_t FreePages() const { return cache_->NumAvailablePages(); }
  /*! \brief The generations alive on this model (registered by Generation). */
  std::vector<Generation*>& live() { return live_; }
  /*! \brief Choose the next token from logits (copied; logits stay as they are). */
  int32_t Sample(const std::vector<float>& logits, double temperature, double top_p,
                 std::mt19937_64* rng);

 protected:
  ObjectPtr<FunctionObj> GetOwnFunction(const std::string& name) override;

 private:
  /*! \brief Logits of the last position, or of every position when all_rows. */
  std::vector<float> RunModel(FunctionObj* f, const int32_t* tokens, int64_t rows, int64_t cols,
                              bool all_rows);

  Config cfg_;
  CharTokenizer tok_;
  ObjectPtr<ModuleObj> lib_, vm_;
  ObjectPtr<FunctionObj> prefill_, decode_;
  ObjectPtr<kv_cache::PagedKVCacheObj> cache_;
  ObjectPtr<ArrayObj> params_;
  ObjectPtr<FunctionObj> softmax_, sample_top_p_;
  ObjectPtr<NDArrayObj> probs_;  // (1, V) scratch for sampling
  std::mutex mu_;
  std::vector<bool> seq_in_use_;
  std::vector<Generation*> live_;
};

/*! \brief One generation: a sequence of the model's cache and its sampling state. */
class Generation final : public ModuleObj {
 public:
  Generation(ObjectPtr<LanguageModel> model, std::vector<int32_t> prompt, GenerationOptions opts);
  ~Generation() override;
  std::string type_key() const override { return "polyffi.Generation"; }

  /*! \brief The next token id, or -1 when finished (see docs/lm.md). */
  int64_t Next();
  std::string FinishReason();
  std::vector<float> Logits();
  int64_t PromptTokens() const { return static_cast<int64_t>(prompt_.size()); }
  int64_t CompletionTokens();
  void Close();

 protected:
  ObjectPtr<FunctionObj> GetOwnFunction(const std::string& name) override;

 private:
  /*! \brief End the generation (lock held): free the sequence, keep logits and counts. */
  void Finish(const char* reason);
  /*!
   * \brief A decode step (lock held): this generation's token, and the same step for every other
   *  running generation of the model that has no step waiting, in one batched decode call; their
   *  tokens wait in pending_ until their own next().
   */
  int32_t DecodeStep();
  /*! \brief Whether this generation can take part in another's batched decode step. */
  bool WantsStep() const {
    return started_ && !finished_ && !has_pending_ && completion_ < opts_.max_tokens;
  }

  ObjectPtr<LanguageModel> model_;
  std::vector<int32_t> prompt_;
  GenerationOptions opts_;
  std::mt19937_64 rng_;
  int64_t seq_id_ = -1;
  bool started_ = false, finished_ = false;
  std::string finish_reason_;
  int32_t last_token_ = -1;
  int64_t completion_ = 0;
  std::vector<float> logits_;
  // A step decoded ahead in another generation's batch: its token and logits, or its error.
  bool has_pending_ = false;
  int32_t pending_token_ = -1;
  std::vector<float> pending_logits_;
  std::exception_ptr pending_error_;
};

}  // namespace lm
}  // namespace polyffi
#endif  // POLYFFI_CORE_LM_LANGUAGE_MODEL_H_
