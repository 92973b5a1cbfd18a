// Containers: String (length-carrying), Array, Map, ShapeTuple and ADT (tuples). Built and read
// through runtime.* globals.
#ifndef POLYFFI_CORE_CONTAINER_H_
#define POLYFFI_CORE_CONTAINER_H_

#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "polyffi/object.h"
#include "polyffi/value.h"

namespace polyffi {

class StringObj final : public Object {
 public:
  static constexpr uint32_t kTypeIndex = TypeIndex::kString;
  explicit StringObj(std::string s) : Object(kTypeIndex), data(std::move(s)) {}
  std::string data;
};

class ArrayObj final : public Object {
 public:
  static constexpr uint32_t kTypeIndex = TypeIndex::kArray;
  ArrayObj() : Object(kTypeIndex) {}
  std::vector<RetValue> items;
};

class MapObj final : public Object {
 public:
  static constexpr uint32_t kTypeIndex = TypeIndex::kMap;
  MapObj() : Object(kTypeIndex) {}
  /*! \brief Insert or replace; keys compare by value (str, int, float, bool) or identity. */
  void Set(RetValue key, RetValue value);
  /*! \brief Index of the key in items, or -1. */
  int64_t Find(const RetValue& key) const;
  std::vector<std::pair<RetValue, RetValue>> items;  // insertion order

 private:
  static std::string KeyOf(const RetValue& key);
  std::unordered_map<std::string, size_t> index_;
};

/*!
 * \brief A tuple of int64 (TVM's runtime.ShapeTuple, ffi.Shape in TVM 0.27): shapes of arrays,
 *  made by runtime.ShapeTuple and by the relax VM. Shapes up to kInline dimensions need no
 *  allocation. Immutable once shared.
 */
class ShapeTupleObj final : public Object {
 public:
  static constexpr uint32_t kTypeIndex = TypeIndex::kShapeTuple;
  /*! \brief n dimensions, uninitialised. */
  explicit ShapeTupleObj(size_t n) : Object(kTypeIndex), size_(n) {
    if (n <= kInline) {
      data_ = inline_;
    } else {
      heap_.resize(n);
      data_ = heap_.data();
    }
  }
  ShapeTupleObj(const int64_t* begin, const int64_t* end)
      : ShapeTupleObj(static_cast<size_t>(end - begin)) {
    std::copy(begin, end, data_);
  }
  explicit ShapeTupleObj(const std::vector<int64_t>& dims)
      : ShapeTupleObj(dims.data(), dims.data() + dims.size()) {}
  ShapeTupleObj(const ShapeTupleObj&) = delete;
  ShapeTupleObj& operator=(const ShapeTupleObj&) = delete;

  int64_t* data() { return data_; }
  const int64_t* data() const { return data_; }
  size_t size() const { return size_; }
  int64_t ndim() const { return static_cast<int64_t>(size_); }
  std::vector<int64_t> ToVector() const { return std::vector<int64_t>(data_, data_ + size_); }

 private:
  static constexpr size_t kInline = 6;
  int64_t* data_;
  size_t size_;
  int64_t inline_[kInline];
  std::vector<int64_t> heap_;
};

/*! \brief An algebraic data type value: a tag and fields (runtime.Tuple is tag 0). */
class ADTObj final : public Object {
 public:
  static constexpr uint32_t kTypeIndex = TypeIndex::kADT;
  explicit ADTObj(int32_t t) : Object(kTypeIndex), tag(t) {}
  int32_t tag;
  std::vector<RetValue> fields;
};

}  // namespace polyffi
#endif  // POLYFFI_CORE_CONTAINER_H_
