// Fuzz target: DLPack import (TVMArrayFromDLPack) with random ndim, shape, strides,
// byte_offset, dtype and device, then what a caller does with an imported array: copy it out,
// copy into it, sum it through testing.nd_sum, export it again (TVMArrayToDLPack) and free it.
//
// The harness never lies about memory: data always points to a buffer as large as the tensor
// it describes claims (when that claim is valid and at most 1 MiB; otherwise data points to a
// 64-byte buffer and the runtime must refuse the tensor or never read it). Properties:
// an accepted tensor has non-negative dims, a byte size that does not overflow and host
// memory; the deleter runs exactly once on success (when the array dies) and never on failure.
//
// Only the unversioned DLManagedTensor crosses the C ABI (TVMArrayFromDLPack); the versioned
// DLPack 1.0 form is unwrapped by the Python binding before it reaches the runtime.
#include <fuzzer/FuzzedDataProvider.h>
#include <polyffi/dlpack_compat.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_common.h"

namespace {

struct Producer {
  DLManagedTensor managed;
  std::vector<int64_t> shape, strides;
  std::vector<char> buffer;
  int deleted = 0;
};

void Delete(DLManagedTensor* self) { static_cast<Producer*>(self->manager_ctx)->deleted++; }

// The byte size a valid tensor claims (compact, row-major), or false when the claim is
// invalid or overflows: the runtime must refuse those.
bool ClaimedBytes(const DLTensor& t, uint64_t* out) {
  if (t.ndim < 0 || t.dtype.bits == 0 || t.dtype.lanes == 0) return false;
  uint64_t n = (uint64_t{t.dtype.bits} * t.dtype.lanes + 7) / 8;
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] < 0) return false;
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(t.shape[i]), &n)) return false;
  }
  if (n > static_cast<uint64_t>(PTRDIFF_MAX)) return false;
  *out = n;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static TVMFunctionHandle nd_sum = fuzz::Global("testing.nd_sum");
  FuzzedDataProvider in(data, size);
  Producer p;
  DLTensor& t = p.managed.dl_tensor;
  t.ndim = in.ConsumeBool() ? in.ConsumeIntegralInRange<int>(0, 6)
                            : in.ConsumeIntegralInRange<int>(-2, 40);
  size_t dims = t.ndim > 0 ? static_cast<size_t>(t.ndim) : 0;
  for (size_t i = 0; i < dims; ++i) {
    p.shape.push_back(in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(0, 9)
                                       : in.ConsumeIntegral<int64_t>());
  }
  t.shape = p.shape.data();
  if (in.ConsumeBool()) {
    // Strides: compact ones (which must be accepted) or random ones.
    bool compact = in.ConsumeBool();
    p.strides.resize(dims);
    int64_t s = 1;
    for (size_t i = dims; i-- > 0;) {
      p.strides[i] = compact ? s : in.ConsumeIntegralInRange<int64_t>(-4, 64);
      if (__builtin_mul_overflow(s, p.shape[i], &s)) s = 1;
    }
    t.strides = p.strides.data();
  } else {
    t.strides = nullptr;
  }
  const uint8_t codes[] = {kDLInt, kDLUInt, kDLFloat, kDLOpaqueHandle, kDLBfloat, 5, kDLBool, 200};
  t.dtype.code = in.ConsumeBool() ? codes[in.ConsumeIntegralInRange<int>(0, 7)]
                                  : in.ConsumeIntegral<uint8_t>();
  t.dtype.bits = in.ConsumeBool() ? static_cast<uint8_t>(8 << in.ConsumeIntegralInRange<int>(0, 3))
                                  : in.ConsumeIntegral<uint8_t>();
  t.dtype.lanes = in.ConsumeBool() ? 1 : in.ConsumeIntegral<uint16_t>();
  // Any int32, as a foreign producer may write; stored and read as bits (not through the enum).
  int32_t device_type = in.ConsumeBool() ? kDLCPU : in.ConsumeIntegral<int32_t>();
  std::memcpy(&t.device.device_type, &device_type, sizeof(device_type));
  t.device.device_id = in.ConsumeIntegralInRange<int32_t>(0, 3);
  t.byte_offset = in.ConsumeBool() ? in.ConsumeIntegralInRange<uint64_t>(0, 64)
                                   : in.ConsumeIntegral<uint64_t>();

  uint64_t nbytes = 0;
  bool valid_claim = ClaimedBytes(t, &nbytes);
  uint64_t need = 0;
  bool backed = valid_claim && !__builtin_add_overflow(nbytes, t.byte_offset, &need) &&
                need <= (uint64_t{1} << 20);
  p.buffer.resize(backed ? need : 64);
  for (size_t i = 0; i < p.buffer.size(); ++i) p.buffer[i] = static_cast<char>(i * 37);
  t.data = in.ConsumeIntegralInRange<int>(0, 15) == 0 ? nullptr : p.buffer.data();
  p.managed.manager_ctx = &p;
  p.managed.deleter = Delete;

  TVMArrayHandle a = nullptr;
  int r = TVMArrayFromDLPack(&p.managed, &a);
  if (r != 0) {
    fuzz::CheckFailure(r);
    FUZZ_CHECK(p.deleted == 0);  // failure leaves the tensor with its producer
    return 0;
  }
  // Accepted: the claim was valid, the memory is host memory, data is there if needed.
  FUZZ_CHECK(valid_claim);
  FUZZ_CHECK(device_type == kDLCPU || device_type == kDLCUDAHost);
  FUZZ_CHECK(nbytes == 0 || t.data != nullptr);
  FUZZ_CHECK(a->ndim == t.ndim);
  for (int i = 0; i < a->ndim; ++i) FUZZ_CHECK(a->shape[i] == t.shape[i]);
  if (backed) {
    std::vector<char> out(nbytes);
    FUZZ_CHECK(TVMArrayCopyToBytes(a, out.data(), out.size()) == 0);
    FUZZ_CHECK(nbytes == 0 ||
               std::memcmp(out.data(), p.buffer.data() + t.byte_offset, nbytes) == 0);
    FUZZ_CHECK(TVMArrayCopyFromBytes(a, out.data(), out.size()) == 0);
    TVMValue v;
    v.v_handle = a;
    int code = kTVMNDArrayHandle;
    TVMValue rv;
    int rc = 0;
    int sr = TVMFuncCall(nd_sum, &v, &code, 1, &rv, &rc);
    if (sr != 0) fuzz::CheckFailure(sr);
  }
  DLManagedTensor* exported = nullptr;
  FUZZ_CHECK(TVMArrayToDLPack(a, &exported) == 0 && exported != nullptr);
  FUZZ_CHECK(exported->dl_tensor.ndim == t.ndim);
  FUZZ_CHECK(TVMArrayFree(a) == 0);
  FUZZ_CHECK(p.deleted == 0);  // the export still holds the array
  TVMDLManagedTensorCallDeleter(exported);
  FUZZ_CHECK(p.deleted == 1);
  return 0;
}
