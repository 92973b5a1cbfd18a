// The type table: keys, indices and parents. Guarded: types may be registered at any time.
#include "polyffi/object.h"

#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "polyffi/error.h"

namespace polyffi {
namespace {

struct TypeInfo {
  std::string key;
  uint32_t parent;
};

class TypeTable {
 public:
  static TypeTable* Global() {
    static TypeTable* table = new TypeTable();  // leaked: used until the very end of the process
    return table;
  }
  uint32_t Register(const std::string& key, uint32_t parent, uint32_t static_index) {
    std::unique_lock lock(mu_);
    auto it = by_key_.find(key);
    if (it != by_key_.end()) return it->second;
    uint32_t index = static_index;
    if (index == kNone) index = std::max<uint32_t>(TypeIndex::kDynamicBegin, infos_.size());
    if (infos_.size() <= index) infos_.resize(index + 1);
    infos_[index] = TypeInfo{key, parent};
    by_key_[key] = index;
    return index;
  }
  uint32_t Key2Index(const std::string& key) const {
    std::shared_lock lock(mu_);
    auto it = by_key_.find(key);
    if (it == by_key_.end()) Throw("KeyError", "unknown type key '", key, "'");
    return it->second;
  }
  std::string Index2Key(uint32_t index) const {
    std::shared_lock lock(mu_);
    if (index >= infos_.size() || infos_[index].key.empty()) {
      Throw("KeyError", "unknown type index ", index);
    }
    return infos_[index].key;
  }
  bool DerivedFrom(uint32_t child, uint32_t parent) const {
    std::shared_lock lock(mu_);
    for (uint32_t i = child; i < infos_.size() && !infos_[i].key.empty();) {
      if (i == parent) return true;
      if (i == TypeIndex::kObject) return false;
      i = infos_[i].parent;
    }
    return false;
  }
  static constexpr uint32_t kNone = ~0u;

 private:
  TypeTable() {
    // Reserve room for static indices so dynamic registration never moves their keys.
    infos_.reserve(1024);
    Register("runtime.Object", TypeIndex::kObject, TypeIndex::kObject);
    Register("runtime.Module", TypeIndex::kObject, TypeIndex::kModule);
    Register("runtime.NDArray", TypeIndex::kObject, TypeIndex::kNDArray);
    Register("runtime.String", TypeIndex::kObject, TypeIndex::kString);
    Register("Array", TypeIndex::kObject, TypeIndex::kArray);
    Register("Map", TypeIndex::kObject, TypeIndex::kMap);
    Register("runtime.ShapeTuple", TypeIndex::kObject, TypeIndex::kShapeTuple);
    Register("runtime.PackedFunc", TypeIndex::kObject, TypeIndex::kFunction);
    Register("runtime.ADT", TypeIndex::kObject, TypeIndex::kADT);
  }
  mutable std::shared_mutex mu_;
  std::vector<TypeInfo> infos_;
  std::unordered_map<std::string, uint32_t> by_key_;
};

}  // namespace

uint32_t RegisterTypeKey(const std::string& key, uint32_t parent_index) {
  return TypeTable::Global()->Register(key, parent_index, TypeTable::kNone);
}
uint32_t TypeKey2Index(const std::string& key) { return TypeTable::Global()->Key2Index(key); }
std::string TypeIndex2Key(uint32_t index) { return TypeTable::Global()->Index2Key(index); }
bool TypeDerivedFrom(uint32_t child, uint32_t parent) {
  return TypeTable::Global()->DerivedFrom(child, parent);
}
bool Object::IsInstance(uint32_t parent) const {
  return type_index_ == parent || parent == TypeIndex::kObject ||
         TypeDerivedFrom(type_index_, parent);
}

}  // namespace polyffi
