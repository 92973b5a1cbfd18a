// The character tokenizer of a language model: token i is the i-th code point of a UTF-8 string.
#ifndef POLYFFI_CORE_LM_TOKENIZER_H_
#define POLYFFI_CORE_LM_TOKENIZER_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace polyffi {
namespace lm {

/*! \brief The code points of UTF-8 text; ValueError (naming what) for invalid UTF-8. */
std::vector<uint32_t> DecodeUtf8(const std::string& text, const char* what);
/*! \brief The UTF-8 bytes of one code point. */
std::string EncodeUtf8(uint32_t cp);

class CharTokenizer {
 public:
  /*! \brief ValueError when chars is not UTF-8 or holds a character twice. */
  explicit CharTokenizer(const std::string& chars);
  int64_t size() const { return static_cast<int64_t>(texts_.size()); }
  /*! \brief Token ids of text; ValueError naming the first character not in the vocabulary. */
  std::vector<int32_t> Encode(const std::string& text) const;
  /*! \brief The text of ids; ValueError for an id outside the vocabulary. */
  std::string Decode(const int32_t* ids, int64_t n) const;
  /*! \brief The text of one token; ValueError outside the vocabulary. */
  const std::string& TokenText(int64_t id) const;
  /*! \brief The id of a text that is exactly one token, or -1. */
  int32_t SingleToken(const std::string& text) const;

 private:
  std::vector<std::string> texts_;
  std::unordered_map<uint32_t, int32_t> ids_;
};

/*! \brief How a code point reads in an error message: 'x' (U+0078). */
std::string DescribeChar(uint32_t cp);

}  // namespace lm
}  // namespace polyffi
#endif  // POLYFFI_CORE_LM_TOKENIZER_H_
