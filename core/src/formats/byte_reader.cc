// Failures of the binary-format reader: each kind of failure has one message form, all
// ValueError (docs/abi-decisions.md, "Binary formats").
#include "formats/byte_reader.h"

#include "polyffi/error.h"

namespace polyffi {
namespace formats {

namespace {
std::string Prefix(const std::string& source) { return source.empty() ? "" : source + ": "; }
}  // namespace

void ByteReader::Fail(const std::string& msg) const {
  throw Error("ValueError", (source_.empty() ? format_ : source_) + ": " + msg);
}

void ByteReader::Truncated(uint64_t n, const char* what) const {
  Throw("ValueError", Prefix(source_), format_, " truncated reading ", what, " at offset ", pos_,
        " (need ", n, " bytes, ", size_ - pos_, " left)");
}

uint64_t ByteReader::Count(uint64_t min_item_bytes, const char* what) {
  size_t at = pos_;
  uint64_t n = Read<uint64_t>(what);
  if (n > remaining() / min_item_bytes) {
    Throw("ValueError", Prefix(source_), format_, " truncated: ", what, " at offset ", at,
          " announces ", n, " entries but only ", remaining(), " bytes are left");
  }
  return n;
}

void ByteReader::ExpectEnd(const char* after) const {
  if (!pull_ && pos_ != size_) {
    Fail(std::to_string(size_ - pos_) + " unexpected trailing bytes after " + after);
  }
}

const char* ByteReader::PullBytes(uint64_t n, const char* what) {
  if (n > static_cast<uint64_t>(INT64_MAX)) {
    Fail(std::string(what) + " announces " + std::to_string(n) + " bytes");
  }
  chunk_ = pull_(n, what);
  if (chunk_.size() != n) Fail(std::string("no bytes for ") + what);
  pos_ += n;
  return chunk_.data();
}

}  // namespace formats
}  // namespace polyffi
