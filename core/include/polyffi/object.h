// Reference-counted objects and the type table.
#ifndef POLYFFI_CORE_OBJECT_H_
#define POLYFFI_CORE_OBJECT_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

namespace polyffi {

/*! \brief Static type indices; the values and keys are classic TVM's. */
struct TypeIndex {
  enum : uint32_t {
    kObject = 0,      // "runtime.Object"
    kModule = 1,      // "runtime.Module"
    kNDArray = 2,     // "runtime.NDArray"
    kString = 3,      // "runtime.String"
    kArray = 4,       // "Array"
    kMap = 5,         // "Map"
    kShapeTuple = 6,  // "runtime.ShapeTuple"
    kFunction = 7,    // "runtime.PackedFunc"
    kADT = 11,        // "runtime.ADT" (TVM 0.18's index)
    kDynamicBegin = 64,
  };
};

/*! \brief Live-object counters (live_objects.cc, read by runtime.LiveObjectCount): one per type
 *  index below kLiveObjectSlots; larger indices share the last slot. */
constexpr uint32_t kLiveObjectSlots = 128;
extern std::atomic<int64_t> g_live_objects[kLiveObjectSlots];
inline void CountLiveObject(uint32_t type_index, int64_t delta) {
  g_live_objects[type_index < kLiveObjectSlots ? type_index : kLiveObjectSlots - 1].fetch_add(
      delta, std::memory_order_relaxed);
}

/*!
 * \brief Base of every runtime object. Handles crossing the C ABI are Object* (an NDArray's is
 *  the DLTensor* inside it). The count starts at 1: whoever creates an object owns it.
 */
class Object {
 public:
  explicit Object(uint32_t type_index) : type_index_(type_index) { CountLiveObject(type_index, 1); }
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;
  virtual ~Object() { CountLiveObject(type_index_, -1); }

  uint32_t type_index() const { return type_index_; }
  int32_t use_count() const { return ref_count_.load(std::memory_order_relaxed); }
  void IncRef() { ref_count_.fetch_add(1, std::memory_order_relaxed); }
  void DecRef() {
    if (ref_count_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  bool IsInstance(uint32_t parent) const;

 private:
  uint32_t type_index_;
  std::atomic<int32_t> ref_count_{1};
};

/*! \brief An owning smart pointer to an Object subclass. */
template <typename T>
class ObjectPtr {
 public:
  ObjectPtr() = default;
  ObjectPtr(std::nullptr_t) {}  // NOLINT(runtime/explicit)
  /*! \brief Take over a reference the caller owns. */
  static ObjectPtr Adopt(T* p) { return ObjectPtr(p); }
  /*! \brief Add a reference to a borrowed pointer. */
  static ObjectPtr Borrow(T* p) {
    if (p) p->IncRef();
    return ObjectPtr(p);
  }
  ObjectPtr(const ObjectPtr& o) : p_(o.p_) {
    if (p_) p_->IncRef();
  }
  ObjectPtr(ObjectPtr&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  template <typename U>
  ObjectPtr(ObjectPtr<U>&& o) noexcept : p_(o.release()) {}  // NOLINT(runtime/explicit)
  ObjectPtr& operator=(ObjectPtr o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~ObjectPtr() {
    if (p_) p_->DecRef();
  }
  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  /*! \brief Give up the reference to the caller. */
  T* release() { return std::exchange(p_, nullptr); }

 private:
  explicit ObjectPtr(T* p) : p_(p) {}
  T* p_ = nullptr;
};

template <typename T, typename... Args>
ObjectPtr<T> MakeObject(Args&&... args) {
  return ObjectPtr<T>::Adopt(new T(std::forward<Args>(args)...));
}

// ---- Type table ----

/*! \brief Register (or find) a type key under a parent; returns its index. */
uint32_t RegisterTypeKey(const std::string& key, uint32_t parent_index);
/*! \brief Index of a type key; throws KeyError when unknown. */
uint32_t TypeKey2Index(const std::string& key);
/*! \brief Key of a type index; throws KeyError when unknown. */
std::string TypeIndex2Key(uint32_t index);
/*! \brief Whether child is parent or derives from it. */
bool TypeDerivedFrom(uint32_t child, uint32_t parent);

}  // namespace polyffi
#endif  // POLYFFI_CORE_OBJECT_H_
