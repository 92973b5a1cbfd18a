// TVM's params blob (SaveParams): u64 magic 0xF7E58D4F05049CB7, u64 reserved, u64 name count,
// the names (u64 length + bytes each), u64 array count (equal to the name count), then one
// NDArray record per name. Read by runtime.LoadParams and by the graph executor's load_params
// and share_params. Free of the core's classes, like byte_reader.h.
#ifndef POLYFFI_CORE_FORMATS_PARAMS_BLOB_H_
#define POLYFFI_CORE_FORMATS_PARAMS_BLOB_H_

#include <cstdint>
#include <string>
#include <vector>

#include "formats/byte_reader.h"
#include "formats/ndarray_record.h"

namespace polyffi {
namespace formats {

constexpr uint64_t kParamsMagic = 0xF7E58D4F05049CB7ULL;

struct ParamsBlob {
  std::vector<std::string> names;
  std::vector<NDArrayRecord> arrays;  // one per name, pointing into the blob (none: names_only)
};

/*!
 * \brief Read a whole params blob, every record checked and no byte left over; with names_only,
 *  only the header, the names and the array count. source prefixes every message.
 */
ParamsBlob ReadParamsBlob(const char* data, size_t size, const std::string& source,
                          bool names_only = false);

/*! \brief The blob's header and names; the caller appends one record per name after it. */
void WriteParamsHeader(const std::vector<std::string>& names, std::string* out);

}  // namespace formats
}  // namespace polyffi
#endif  // POLYFFI_CORE_FORMATS_PARAMS_BLOB_H_
