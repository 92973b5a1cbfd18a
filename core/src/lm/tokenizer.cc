// The character tokenizer (tokenizer.h).
#include "tokenizer.h"

#include <cstdio>

#include "polyffi/error.h"

namespace polyffi {
namespace lm {

std::vector<uint32_t> DecodeUtf8(const std::string& text, const char* what) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char b = s[i];
    uint32_t cp;
    size_t len;
    if (b < 0x80) {
      cp = b, len = 1;
    } else if ((b & 0xE0) == 0xC0) {
      cp = b & 0x1F, len = 2;
    } else if ((b & 0xF0) == 0xE0) {
      cp = b & 0x0F, len = 3;
    } else if ((b & 0xF8) == 0xF0) {
      cp = b & 0x07, len = 4;
    } else {
      Throw("ValueError", what, ": invalid UTF-8 byte 0x", std::hex, static_cast<int>(b), std::dec,
            " at offset ", i);
    }
    if (i + len > n) Throw("ValueError", what, ": truncated UTF-8 sequence at offset ", i);
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) {
        Throw("ValueError", what, ": invalid UTF-8 continuation byte at offset ", i + k);
      }
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      Throw("ValueError", what, ": invalid UTF-8 sequence at offset ", i);
    }
    out.push_back(cp);
    i += len;
  }
  return out;
}

std::string EncodeUtf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

std::string DescribeChar(uint32_t cp) {
  char code[16];
  std::snprintf(code, sizeof(code), "U+%04X", static_cast<unsigned>(cp));
  if (cp < 0x20 || cp == 0x7F) return code;  // control characters: the code alone
  return "'" + EncodeUtf8(cp) + "' (" + code + ")";
}

CharTokenizer::CharTokenizer(const std::string& chars) {
  for (uint32_t cp : DecodeUtf8(chars, "tokenizer.chars")) {
    const auto id = static_cast<int32_t>(texts_.size());
    if (!ids_.emplace(cp, id).second) {
      Throw("ValueError", "tokenizer.chars: the character ", DescribeChar(cp), " appears twice");
    }
    texts_.push_back(EncodeUtf8(cp));
  }
}

std::vector<int32_t> CharTokenizer::Encode(const std::string& text) const {
  std::vector<int32_t> out;
  for (uint32_t cp : DecodeUtf8(text, "encode")) {
    auto it = ids_.find(cp);
    if (it == ids_.end()) {
      Throw("ValueError", "the character ", DescribeChar(cp), " is not in the vocabulary");
    }
    out.push_back(it->second);
  }
  return out;
}

std::string CharTokenizer::Decode(const int32_t* ids, int64_t n) const {
  std::string out;
  for (int64_t i = 0; i < n; ++i) out += TokenText(ids[i]);
  return out;
}

const std::string& CharTokenizer::TokenText(int64_t id) const {
  if (id < 0 || id >= size()) {
    Throw("ValueError", "token id ", id, " is outside the vocabulary [0, ", size(), ")");
  }
  return texts_[static_cast<size_t>(id)];
}

int32_t CharTokenizer::SingleToken(const std::string& text) const {
  std::vector<uint32_t> cps = DecodeUtf8(text, "stop");
  if (cps.size() != 1) return -1;
  auto it = ids_.find(cps[0]);
  return it == ids_.end() ? -1 : it->second;
}

}  // namespace lm
}  // namespace polyffi
