// Helpers shared by the runtime-library globals (contrib sort/random, the VM's data-dependent
// builtins): checked tensor arguments on the CPU and IEEE half-precision conversions.
#ifndef POLYFFI_CORE_CONTRIB_CONTRIB_H_
#define POLYFFI_CORE_CONTRIB_CONTRIB_H_

#include <cstdint>
#include <string>

#include "polyffi/ndarray.h"
#include "polyffi/value.h"

namespace polyffi {
namespace contrib {

/*!
 * \brief The tensor at argument i (an NDArray or a DLTensor*): TypeError for anything else,
 *  ValueError unless it is compact on the CPU. TVM's own kernels read data without checking;
 *  these globals refuse what they cannot read.
 */
DLTensor* CpuTensor(const Args& args, int i, const char* what);
/*! \brief The first element's address (data + byte_offset; NULL for a tensor without data). */
inline char* DataOf(const DLTensor* t) {
  return t->data == nullptr ? nullptr : static_cast<char*>(t->data) + t->byte_offset;
}
/*! \brief Number of elements (the shape was validated by whoever made the tensor). */
int64_t NumElements(const DLTensor* t);
/*! \brief Whether t has exactly this code/bits with one lane. */
inline bool Is(DLDataType t, int code, int bits) {
  return t.code == code && t.bits == bits && t.lanes == 1;
}

/*! \brief IEEE binary16 bits to float (exact). */
float HalfToFloat(uint16_t h);
/*! \brief float to IEEE binary16 bits, rounding to nearest even (NaN stays NaN). */
uint16_t FloatToHalf(float f);

}  // namespace contrib
}  // namespace polyffi
#endif  // POLYFFI_CORE_CONTRIB_CONTRIB_H_
