// The one bounds-checked reader of TVM's little-endian binary formats (params blobs, NDArray
// records, graph executor factory sections, relax VM executables, packed import blobs and
// tvm-ffi library bins). Every failure is a ValueError whose text names the source, the format,
// what was being read and the offset; the kinds of failure and the limits are listed in
// docs/abi-decisions.md ("Binary formats").
//
// Free of the core's classes (like env_api.h): the graph executor, written against the public C
// ABI, reads its params blobs with it too. The errors it throws are the core's polyffi::Error.
#ifndef POLYFFI_CORE_FORMATS_BYTE_READER_H_
#define POLYFFI_CORE_FORMATS_BYTE_READER_H_

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace polyffi {
namespace formats {

class ByteReader {
 public:
  /*! \brief Pulls exactly n more bytes of a stream (or throws): the reader of a section. */
  using Pull = std::function<std::string(uint64_t n, const char* what)>;

  /*!
   * \param source who reads, prefixed to every message ("load_params", a file name), or empty
   * \param format the format's name for truncation messages ("params blob")
   */
  ByteReader(const char* data, size_t size, std::string source, std::string format)
      : data_(data), size_(size), source_(std::move(source)), format_(std::move(format)) {}
  /*! \brief A stream read through pull; what it returns stays valid until the next Take. */
  ByteReader(Pull pull, std::string source, std::string format)
      : pull_(std::move(pull)), source_(std::move(source)), format_(std::move(format)) {}

  /*! \brief The next n bytes (truncation is an error). */
  const char* Take(uint64_t n, const char* what) {
    if (pull_) return PullBytes(n, what);
    if (n > size_ - pos_) Truncated(n, what);
    const char* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  template <typename T>
  T Read(const char* what) {
    T v;
    std::memcpy(&v, Take(sizeof(T), what), sizeof(T));
    return v;
  }
  /*! \brief A u64 count of items of at least min_item_bytes each: never more than fit. */
  uint64_t Count(uint64_t min_item_bytes, const char* what);
  /*! \brief A u64-length-prefixed byte string, as a pointer into the data. */
  const char* Bytes(uint64_t* n, const char* what) {
    *n = Read<uint64_t>(what);
    return Take(*n, what);
  }
  std::string Str(const char* what) {
    uint64_t n = 0;
    const char* p = Bytes(&n, what);
    return std::string(p, n);
  }
  /*! \brief A u64 count and that many u64 (or i64) items. */
  std::vector<uint64_t> U64Vector(const char* what) { return Vector<uint64_t>(what); }
  std::vector<int64_t> I64Vector(const char* what) { return Vector<int64_t>(what); }

  /*! \brief Bytes not read yet (a stream: as many as it may hold). */
  uint64_t remaining() const { return pull_ ? UINT64_MAX : size_ - pos_; }
  size_t pos() const { return pos_; }
  const std::string& source() const { return source_; }
  const std::string& format() const { return format_; }

  /*! \brief ValueError "source: msg" ("format: msg" without a source). */
  [[noreturn]] void Fail(const std::string& msg) const;
  /*! \brief Every byte must have been read ("N unexpected bytes after <after>"). */
  void ExpectEnd(const char* after) const;

 private:
  template <typename T>
  std::vector<T> Vector(const char* what) {
    uint64_t n = Count(sizeof(T), what);
    std::vector<T> v(n);
    if (n != 0) std::memcpy(v.data(), Take(n * sizeof(T), what), n * sizeof(T));
    return v;
  }
  const char* PullBytes(uint64_t n, const char* what);
  [[noreturn]] void Truncated(uint64_t n, const char* what) const;

  const char* data_ = nullptr;
  size_t size_ = 0;
  size_t pos_ = 0;
  Pull pull_;
  std::string chunk_;  // a stream's last bytes
  std::string source_;
  std::string format_;
};

}  // namespace formats
}  // namespace polyffi
#endif  // POLYFFI_CORE_FORMATS_BYTE_READER_H_
