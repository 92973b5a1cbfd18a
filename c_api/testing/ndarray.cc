// testing.* fixtures that read and write NDArrays (kTVMNDArrayHandle or a borrowed DLTensor view).
#include <polyffi/dtype_string.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "fixture_util.h"

namespace polyffi_testing {
namespace {

using polyffi::Error;
using polyffi::TensorView;

std::string DTypeName(DLDataType t) {
  char buf[32];  // for messages: dtypes with no string form read "<dtype CODE:BITSxLANES>"
  PolyffiDataTypeToString(t, buf, sizeof(buf));
  return buf;
}

/*!
 * \brief Number of elements of a CPU tensor whose elements are stored contiguously in row-major
 *  order; ValueError otherwise (strides of size-1 dimensions do not matter, as in DLPack).
 */
int64_t CheckedNumel(const DLTensor* t, const char* who) {
  if (t == nullptr) throw Error("ValueError", std::string(who) + ": NULL tensor");
  int32_t device_type;  // read as bits: callers may send any int32 in this enum
  std::memcpy(&device_type, &t->device.device_type, sizeof(device_type));
  if (device_type != kDLCPU && device_type != kDLCUDAHost) {
    throw Error("ValueError", std::string(who) + ": tensor is not on the CPU (device_type " +
                                  std::to_string(device_type) + ")");
  }
  if (t->ndim < 0) throw Error("ValueError", std::string(who) + ": negative ndim");
  int64_t numel = 1;
  int64_t expected_stride = 1;
  for (int i = t->ndim - 1; i >= 0; --i) {
    int64_t extent = t->shape[i];
    if (extent < 0) throw Error("ValueError", std::string(who) + ": negative shape");
    if (t->strides != nullptr && extent != 1 && t->strides[i] != expected_stride) {
      throw Error("ValueError", std::string(who) + ": tensor is not contiguous");
    }
    numel = CheckedMul(numel, extent, who);
    expected_stride = CheckedMul(expected_stride, extent, who);
  }
  if (numel > 0 && t->data == nullptr) {
    throw Error("ValueError", std::string(who) + ": tensor has no data");
  }
  // data + byte_offset past the end of the address space is undefined (fuzz_globals long run).
  if (t->data != nullptr && t->byte_offset > UINTPTR_MAX - reinterpret_cast<uintptr_t>(t->data)) {
    throw Error("ValueError", std::string(who) + ": byte_offset " + std::to_string(t->byte_offset) +
                                  " wraps the data pointer");
  }
  return numel;
}

// An empty tensor may have NULL data and any byte_offset; offsetting NULL is undefined.
const char* DataStart(const DLTensor* t) {
  if (t->data == nullptr) return nullptr;
  return static_cast<const char*>(t->data) + t->byte_offset;
}

template <typename T>
double SumAs(const DLTensor* t, int64_t n) {
  // memcpy per element: byte_offset may leave the data unaligned for T.
  const char* p = DataStart(t);
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    T x;
    std::memcpy(&x, p + i * sizeof(T), sizeof(T));
    total += static_cast<double>(x);
  }
  return total;
}

// Any nonzero byte counts as true; loading such a byte as a C++ bool would be undefined.
double SumBool(const DLTensor* t, int64_t n) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(DataStart(t));
  double total = 0;
  for (int64_t i = 0; i < n; ++i) total += p[i] != 0 ? 1 : 0;
  return total;
}

TESTING_GLOBAL("testing.nd_sum",
               Typed(
                   [](TensorView nd) {
                     const DLTensor* t = nd.tensor;
                     int64_t n = CheckedNumel(t, "testing.nd_sum");
                     DLDataType d = t->dtype;
                     if (d.lanes == 1) {
                       if (d.code == kDLFloat && d.bits == 32) return SumAs<float>(t, n);
                       if (d.code == kDLFloat && d.bits == 64) return SumAs<double>(t, n);
                       if (d.code == kDLInt && d.bits == 32) return SumAs<int32_t>(t, n);
                       if (d.code == kDLInt && d.bits == 64) return SumAs<int64_t>(t, n);
                       if (d.code == kDLInt && d.bits == 8) return SumAs<int8_t>(t, n);
                       if (d.code == kDLUInt && d.bits == 8) return SumAs<uint8_t>(t, n);
                       // bool: classic TVM's uint1 and DLPack's kDLBool both store one byte each.
                       if ((d.code == kDLUInt && d.bits == 1) || (d.code == 6 && d.bits == 8)) {
                         return SumBool(t, n);
                       }
                     }
                     throw Error("TypeError", "testing.nd_sum: unsupported dtype " + DTypeName(d));
                   },
                   "testing.nd_sum"));

bool IsFloat32(DLDataType d) { return d.code == kDLFloat && d.bits == 32 && d.lanes == 1; }

TESTING_GLOBAL("testing.nd_add_one",
               Typed(
                   [](TensorView in, TensorView out) {
                     const char* who = "testing.nd_add_one";
                     int64_t n = CheckedNumel(in.tensor, who);
                     CheckedNumel(out.tensor, who);
                     const DLTensor* a = in.tensor;
                     const DLTensor* b = out.tensor;
                     if (!IsFloat32(a->dtype) || !IsFloat32(b->dtype)) {
                       throw Error("ValueError", std::string(who) + ": expected float32 but got " +
                                                     DTypeName(a->dtype) + " and " +
                                                     DTypeName(b->dtype));
                     }
                     bool same = a->ndim == b->ndim;
                     for (int i = 0; same && i < a->ndim; ++i) same = a->shape[i] == b->shape[i];
                     if (!same) throw Error("ValueError", std::string(who) + ": shapes differ");
                     const char* src = DataStart(a);
                     char* dst = const_cast<char*>(DataStart(b));
                     for (int64_t i = 0; i < n; ++i) {
                       float x;
                       std::memcpy(&x, src + i * sizeof(float), sizeof(float));
                       x += 1.0f;
                       std::memcpy(dst + i * sizeof(float), &x, sizeof(float));
                     }
                   },
                   "testing.nd_add_one"));

// Address of the first element, for zero-copy checks against the producer's own pointer.
TESTING_GLOBAL("testing.nd_data_ptr",
               Typed(
                   [](TensorView nd) {
                     if (nd.tensor == nullptr) {
                       throw Error("ValueError", "testing.nd_data_ptr: NULL tensor");
                     }
                     // Integer arithmetic: a NULL data pointer plus an offset is no pointer at all.
                     uintptr_t p = reinterpret_cast<uintptr_t>(nd.tensor->data) +
                                   static_cast<uintptr_t>(nd.tensor->byte_offset);
                     return static_cast<int64_t>(p);
                   },
                   "testing.nd_data_ptr"));

}  // namespace
}  // namespace polyffi_testing
