// The model directory of a language model (docs/lm.md): lm-config.json, read and checked.
#ifndef POLYFFI_CORE_LM_CONFIG_H_
#define POLYFFI_CORE_LM_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

namespace polyffi {
namespace lm {

/*! \brief The five arguments of the model's create_paged_kv_cache, in its order. */
struct KVCacheConfig {
  int64_t max_batch_size = 0;
  int64_t max_total_seq_len = 0;
  int64_t prefill_chunk_size = 0;
  int64_t page_size = 0;
  int64_t support_sliding_window = 0;
};

struct Config {
  std::string dir;                  // the model directory as given
  std::string model_lib;            // absolute or relative to the working directory (dir joined)
  std::string weights;              // the tensor-cache directory (dir joined)
  std::vector<std::string> params;  // empty: the cache's record order
  int64_t vocab_size = 0;
  KVCacheConfig kv_cache;
  std::string tokenizer_kind;   // "chars"
  std::string tokenizer_chars;  // UTF-8, one token per code point
  std::vector<int32_t> stop_token_ids;

  /*! \brief The parsed configuration as JSON (what the module's config() returns). */
  std::string ToJson() const;
};

/*!
 * \brief Read dir/lm-config.json. FileNotFoundError when the directory, the file or a file it
 *  names is missing; ValueError naming the field when the JSON is malformed or a value is wrong.
 */
Config ReadConfig(const std::string& dir);

}  // namespace lm
}  // namespace polyffi
#endif  // POLYFFI_CORE_LM_CONFIG_H_
