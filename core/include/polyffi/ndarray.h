// NDArray: an object owning a DLTensor (allocated here, or a DLPack producer's).
#ifndef POLYFFI_CORE_NDARRAY_H_
#define POLYFFI_CORE_NDARRAY_H_

#include <polyffi/dlpack_compat.h>

#include <cstddef>
#include <vector>

#include "polyffi/object.h"

namespace polyffi {

class NDArrayObj final : public Object {
 public:
  static constexpr uint32_t kTypeIndex = TypeIndex::kNDArray;
  /*! \brief Allocate a contiguous CPU array, 64-byte aligned. */
  static ObjectPtr<NDArrayObj> Empty(const std::vector<int64_t>& shape, DLDataType dtype,
                                     DLDevice dev);
  /*! \brief Take a DLPack tensor (its deleter runs exactly once, when this dies). */
  static ObjectPtr<NDArrayObj> FromDLPack(DLManagedTensor* managed);
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
};

/*! \brief Bytes of one element (storage: float16 = 2, bool = 1), lanes included. */
size_t ElementBytes(DLDataType t);
/*! \brief Bytes of a tensor's data; ValueError if it is not compact (row-major contiguous). */
size_t CompactBytes(const DLTensor& t);
bool IsCompact(const DLTensor& t);

}  // namespace polyffi
#endif  // POLYFFI_CORE_NDARRAY_H_
