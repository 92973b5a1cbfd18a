// Containers: String (length-carrying), Array and Map. Built and read through runtime.* globals.
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

}  // namespace polyffi
#endif  // POLYFFI_CORE_CONTAINER_H_
