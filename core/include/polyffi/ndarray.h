// NDArray: an object owning a DLTensor (allocated here, or a DLPack producer's).
#ifndef POLYFFI_CORE_NDARRAY_H_
#define POLYFFI_CORE_NDARRAY_H_

#include <polyffi/dlpack_compat.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "polyffi/object.h"

namespace polyffi {

class NDArrayObj final : public Object {
 public:
  static constexpr uint32_t kTypeIndex = TypeIndex::kNDArray;
  /*! \brief Allocate a contiguous CPU array, 64-byte aligned. */
  static ObjectPtr<NDArrayObj> Empty(const std::vector<int64_t>& shape, DLDataType dtype,
                                     DLDevice dev);
  /*!
   * \brief A compact view of memory that owner keeps alive (a VM storage, another array):
   *  no copy, no DLPack context. The caller vouches for data, shape and dtype.
   */
  static ObjectPtr<NDArrayObj> View(void* data, const int64_t* shape, int ndim, DLDataType dtype,
                                    DLDevice dev, ObjectPtr<Object> owner);
  /*! \brief Take a DLPack tensor (its deleter runs exactly once, when this dies). */
  static ObjectPtr<NDArrayObj> FromDLPack(DLManagedTensor* managed);
  /*!
   * \brief A view of base's memory with another shape and dtype, relative_byte_offset bytes in
   *  (TVM's NDArray::CreateView); keeps base alive. ValueError when it does not fit in base.
   */
  static ObjectPtr<NDArrayObj> View(ObjectPtr<NDArrayObj> base, const std::vector<int64_t>& shape,
                                    DLDataType dtype, uint64_t relative_byte_offset);
  /*! \brief Export as DLPack; the result keeps this alive until its deleter runs. */
  DLManagedTensor* ToDLPack();

  /*! \brief The handle that crosses the ABI is &tensor. */
  DLTensor* handle() { return &tensor; }
  static NDArrayObj* FromHandle(DLTensor* handle);

  ~NDArrayObj() override;

  DLTensor tensor;

 private:
  NDArrayObj() : Object(kTypeIndex), tensor{} {}
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  void* owned_data_ = nullptr;           // allocated here
  DLManagedTensor* producer_ = nullptr;  // from DLPack
  ObjectPtr<Object> owner_;              // a view's owner (View)
  static constexpr int kInlineDims = 4;  // a view's shape up to this rank needs no allocation
  int64_t inline_shape_[kInlineDims];
};

/*!
 * \brief A device's type as the int32 it is on the wire. DLDeviceType is an enum whose values
 *  foreign producers and C callers may set to anything; loading such a value through the enum
 *  type is undefined in C++, so the runtime reads the bits instead.
 */
inline int32_t DeviceTypeOf(const DLDevice& d) {
  int32_t v;
  static_assert(sizeof(d.device_type) == sizeof(v), "DLDeviceType is 32 bits");
  std::memcpy(&v, &d.device_type, sizeof(v));
  return v;
}

/*! \brief Bytes of one element (storage: float16 = 2, bool = 1), lanes included. */
size_t ElementBytes(DLDataType t);
/*!
 * \brief Bytes of a compact tensor of this shape and dtype; ValueError for a negative dimension
 *  or a size that overflows (or exceeds PTRDIFF_MAX).
 */
size_t CheckedBytes(const int64_t* shape, int ndim, DLDataType t);
/*! \brief Bytes of a tensor's data; ValueError if it is not compact (row-major contiguous). */
size_t CompactBytes(const DLTensor& t);
bool IsCompact(const DLTensor& t);
/*!
 * \brief Copies src's elements (host memory, compact or strided) row-major into dst, which holds
 *  CheckedBytes(src.shape, src.ndim, src.dtype) bytes: what TVM's frontends do with a strided
 *  array (numpy's ascontiguousarray) before a copy. The caller has checked src's shape; a
 *  strided tensor whose elements are not whole bytes, or NULL data, is a ValueError naming what.
 */
void CopyToCompact(const char* what, const DLTensor& src, void* dst);

}  // namespace polyffi
#endif  // POLYFFI_CORE_NDARRAY_H_
