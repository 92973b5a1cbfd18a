// NDArray records read into the core's arrays (formats/ndarray_record.h holds the parser).
#ifndef POLYFFI_CORE_FORMATS_NDARRAY_OBJECT_H_
#define POLYFFI_CORE_FORMATS_NDARRAY_OBJECT_H_

#include <cstring>
#include <string>

#include "formats/ndarray_record.h"
#include "polyffi/ndarray.h"

namespace polyffi {
namespace formats {

/*! \brief A record as a new CPU array (its dtype checked by the allocation). */
inline ObjectPtr<NDArrayObj> NDArrayFromRecord(const NDArrayRecord& rec) {
  auto arr = NDArrayObj::Empty(rec.shape, rec.dtype, DLDevice{kDLCPU, 0});
  if (rec.nbytes != 0) std::memcpy(arr->tensor.data, rec.data, rec.nbytes);
  return arr;
}

/*! \brief The next record as a new CPU array. */
inline ObjectPtr<NDArrayObj> ReadNDArray(ByteReader* r, const std::string& what) {
  return NDArrayFromRecord(ReadNDArrayRecord(r, what));
}

}  // namespace formats
}  // namespace polyffi
#endif  // POLYFFI_CORE_FORMATS_NDARRAY_OBJECT_H_
