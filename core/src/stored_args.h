// Stored values (RetValue) laid out as the C arguments of one call.
#ifndef POLYFFI_CORE_STORED_ARGS_H_
#define POLYFFI_CORE_STORED_ARGS_H_

#include <vector>

#include "polyffi/value.h"

namespace polyffi {

/*!
 * \brief The C view (RetValue::AsArg) of each stored value, in order: borrowed, so valid while
 *  the items live and are unchanged.
 */
struct StoredArgs {
  explicit StoredArgs(const std::vector<RetValue>& items)
      : values(items.size()), codes(items.size()), bytes(items.size()) {
    for (size_t i = 0; i < items.size(); ++i) items[i].AsArg(&values[i], &codes[i], &bytes[i]);
  }
  int size() const { return static_cast<int>(values.size()); }

  std::vector<TVMValue> values;
  std::vector<int> codes;
  std::vector<TVMByteArray> bytes;  // the TVMByteArray a bytes value points at
};

}  // namespace polyffi
#endif  // POLYFFI_CORE_STORED_ARGS_H_
