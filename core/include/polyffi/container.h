// Containers: String (length-carrying), Array, Map, ShapeTuple and ADT (tuples). Built and read
// through runtime.* globals.
#ifndef POLYFFI_CORE_CONTAINER_H_
#define POLYFFI_CORE_CONTAINER_H_

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

/*! \brief An immutable tuple of int64 (TVM's runtime.ShapeTuple: shapes of arrays). */
class ShapeTupleObj final : public Object {
 public:
  static constexpr uint32_t kTypeIndex = TypeIndex::kShapeTuple;
  explicit ShapeTupleObj(std::vector<int64_t> dims) : Object(kTypeIndex), data(std::move(dims)) {}
  std::vector<int64_t> data;
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
