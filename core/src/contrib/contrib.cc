// Helpers shared by the runtime-library globals: see contrib.h.
#include "contrib.h"

#include <cmath>
#include <cstring>

#include "polyffi/error.h"

namespace polyffi {
namespace contrib {

DLTensor* CpuTensor(const Args& args, int i, const char* what) {
  int code = args.code(i);
  if (code != kTVMNDArrayHandle && code != kTVMDLTensorHandle) args.Mismatch(i, "Tensor");
  auto* t = static_cast<DLTensor*>(args.value(i).v_handle);
  if (t == nullptr) args.Mismatch(i, "Tensor");
  // A caller's DLTensor may be malformed: its sizes are checked before anything reads them
  // (ValueError for a negative ndim or dimension, or a byte size that overflows).
  CheckedBytes(t->shape, t->ndim, t->dtype);
  // An empty tensor passes that check whatever its other dimensions; the kernels still multiply
  // them (blocks before and after an axis), so their product must fit too.
  int64_t extent = 1;
  for (int d = 0; d < t->ndim; ++d) {
    if (t->shape[d] != 0 && __builtin_mul_overflow(extent, t->shape[d], &extent)) {
      Throw("ValueError", args.fname(), ": the ", what, "'s dimensions are too large");
    }
  }
  if (t->dtype.lanes != 1 || t->dtype.bits == 0 || (t->dtype.bits % 8 != 0 && t->dtype.bits != 1)) {
    Throw("ValueError", args.fname(), ": the ", what, " has dtype ", DataTypeName(t->dtype),
          ", which is not a one-lane dtype of whole bytes (or 1-bit bool)");
  }
  if (DeviceTypeOf(t->device) != kDLCPU) {
    Throw("ValueError", args.fname(), ": the ", what, " must be on the CPU (device type ",
          DeviceTypeOf(t->device), ")");
  }
  if (!IsCompact(*t)) {
    Throw("ValueError", args.fname(), ": the ", what, " must be compact (row-major contiguous)");
  }
  uintptr_t first = 0;
  if (t->data != nullptr &&
      __builtin_add_overflow(reinterpret_cast<uintptr_t>(t->data), t->byte_offset, &first)) {
    Throw("ValueError", args.fname(), ": the ", what, "'s byte_offset ", t->byte_offset,
          " wraps its data pointer");
  }
  if (t->data == nullptr && NumElements(t) != 0) {
    Throw("ValueError", args.fname(), ": the ", what, " has no data");
  }
  return t;
}

int64_t NumElements(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) {
    if (t->shape[i] < 0 || __builtin_mul_overflow(n, t->shape[i], &n)) {
      Throw("ValueError", "tensor shape has a negative dimension or too many elements");
    }
  }
  return n;
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    float v = std::ldexp(static_cast<float>(mant), -24);
    std::memcpy(&bits, &v, sizeof(bits));
    bits |= sign;
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) {  // infinity or NaN (a NaN keeps its top payload bits and stays quiet)
    return static_cast<uint16_t>(sign |
                                 (x > 0x7f800000u ? 0x7e00u | ((x >> 13) & 0x3ffu) : 0x7c00u));
  }
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: infinity
  if (x < 0x38800000u) {               // below 2^-14: a half subnormal or zero
    if (x < 0x33000000u) return sign;  // at most 2^-25: rounds to zero
    const uint32_t e = x >> 23;
    const uint32_t m = (x & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = (x - 0x38000000u) >> 13;  // exponent rebiased by 127 - 15, mantissa cut to 10
  const uint32_t rem = x & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;  // a carry may reach the exponent
  return static_cast<uint16_t>(sign | r);
}

}  // namespace contrib
}  // namespace polyffi
