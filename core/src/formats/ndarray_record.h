// TVM's NDArray record, as every format we read stores arrays (params blobs, graph executor
// factory sections, relax VM constants): u64 magic 0xDD5E40F096B4A13F, u64 reserved, DLDevice
// (i32 type, i32 id), i32 ndim, DLDataType (u8 code, u8 bits, u16 lanes), i64 shape[ndim],
// i64 byte size, then the data. One parser, one set of limits.
//
// Free of the core's classes, like byte_reader.h.
#ifndef POLYFFI_CORE_FORMATS_NDARRAY_RECORD_H_
#define POLYFFI_CORE_FORMATS_NDARRAY_RECORD_H_

#include <polyffi/dlpack_compat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "formats/byte_reader.h"

namespace polyffi {
namespace formats {

constexpr uint64_t kNDArrayMagic = 0xDD5E40F096B4A13FULL;
/*! \brief The most dimensions a stored array may have (TVM's own arrays stay far below). */
constexpr int32_t kMaxNDim = 32;

/*! \brief One record, validated: a CPU array whose byte size matches its shape and dtype. */
struct NDArrayRecord {
  DLDataType dtype{};
  std::vector<int64_t> shape;
  const char* data = nullptr;  // into the reader's bytes (a stream's: until its next read)
  size_t nbytes = 0;
};

/*!
 * \brief Read and check one record; nothing is allocated for its data. `what` names the array
 *  in messages ("array 'w'", "constant 3").
 */
NDArrayRecord ReadNDArrayRecord(ByteReader* r, const std::string& what);

/*! \brief Append one record for a compact CPU array of nbytes bytes. */
void WriteNDArrayRecord(const DLTensor& t, size_t nbytes, std::string* out);

/*! \brief "[2, 3]" for messages. */
std::string ShapeText(const int64_t* shape, int64_t ndim);

}  // namespace formats
}  // namespace polyffi
#endif  // POLYFFI_CORE_FORMATS_NDARRAY_RECORD_H_
