// NDArray allocation, DLPack exchange and the globals bindings use to reach the object.
#include "polyffi/ndarray.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "polyffi/error.h"
#include "polyffi/registry.h"

namespace polyffi {

size_t ElementBytes(DLDataType t) {
  size_t bits = static_cast<size_t>(t.bits) * t.lanes;
  return (bits + 7) / 8;
}

bool IsCompact(const DLTensor& t) {
  if (t.strides == nullptr) return true;
  int64_t expected = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expected) return false;
    // Shapes whose product overflows are refused elsewhere; here they are simply not compact.
    if (__builtin_mul_overflow(expected, t.shape[i], &expected)) return false;
  }
  return true;
}

void CopyToCompact(const char* what, const DLTensor& src, void* dst) {
  size_t nbytes = CheckedBytes(src.shape, src.ndim, src.dtype);
  if (nbytes == 0) return;
  if (src.data == nullptr) Throw("ValueError", what, ": the array's data is NULL");
  const char* base = static_cast<const char*>(src.data) + src.byte_offset;
  if (IsCompact(src)) {
    std::memcpy(dst, base, nbytes);
    return;
  }
  // One element per step in row-major order; each element is whole bytes (bool: one byte).
  size_t elem = ElementBytes(src.dtype);
  if (src.dtype.lanes != 1 && elem * 8 != static_cast<size_t>(src.dtype.bits) * src.dtype.lanes) {
    Throw("ValueError", what, ": a strided array of sub-byte vector elements cannot be copied");
  }
  std::vector<int64_t> index(src.ndim, 0);
  const size_t count = nbytes / elem;
  char* out = static_cast<char*>(dst);
  for (size_t k = 0; k < count; ++k) {
    int64_t offset = 0;
    for (int i = 0; i < src.ndim; ++i) offset += index[i] * src.strides[i];
    std::memcpy(out + k * elem, base + offset * static_cast<int64_t>(elem), elem);
    for (int i = src.ndim - 1; i >= 0 && ++index[i] == src.shape[i]; --i) index[i] = 0;
  }
}

size_t CheckedBytes(const int64_t* shape, int ndim, DLDataType t) {
  // Bounded by PTRDIFF_MAX so that data + byte_offset + size stays a valid pointer difference.
  if (ndim < 0) Throw("ValueError", "negative ndim ", ndim);
  uint64_t n = ElementBytes(t);
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] < 0) Throw("ValueError", "negative dimension ", shape[i], " in shape");
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(shape[i]), &n) || n > PTRDIFF_MAX) {
      Throw("ValueError", "array shape is too large: its byte size overflows");
    }
  }
  return static_cast<size_t>(n);
}

size_t CompactBytes(const DLTensor& t) {
  if (!IsCompact(t)) {
    Throw("ValueError", "the array is not contiguous (strided arrays are not supported here)");
  }
  return CheckedBytes(t.shape, t.ndim, t.dtype);
}

namespace {

void CheckDataType(DLDataType t) {
  bool int_ok = (t.code == kDLInt || t.code == kDLUInt) &&
                (t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64);
  bool float_ok = t.code == kDLFloat && (t.bits == 16 || t.bits == 32 || t.bits == 64);
  bool other_ok = (t.code == kDLUInt && t.bits == 1) || (t.code == kDLBfloat && t.bits == 16) ||
                  (t.code == kDLBool && t.bits == 8) || (t.code == kDLOpaqueHandle && t.bits == 64);
  bool ok = t.lanes >= 1 && (int_ok || float_ok || other_ok);
  if (!ok) {
    Throw("ValueError", "unsupported dtype (code ", int(t.code), ", bits ", int(t.bits), ", lanes ",
          t.lanes, ")");
  }
}

}  // namespace

// The Object header precedes the DLTensor; the C handle is the DLTensor's address.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
NDArrayObj* NDArrayObj::FromHandle(DLTensor* handle) {
  return reinterpret_cast<NDArrayObj*>(reinterpret_cast<char*>(handle) -
                                       offsetof(NDArrayObj, tensor));
}
#pragma GCC diagnostic pop

ObjectPtr<NDArrayObj> NDArrayObj::Empty(const std::vector<int64_t>& shape, DLDataType dtype,
                                        DLDevice dev) {
  if (DeviceTypeOf(dev) != kDLCPU && DeviceTypeOf(dev) != kDLCUDAHost) {
    Throw("ValueError", "device type ", DeviceTypeOf(dev),
          " is not available (this runtime has CPU only)");
  }
  CheckDataType(dtype);
  size_t nbytes = CheckedBytes(shape.data(), static_cast<int>(shape.size()), dtype);
  auto arr = ObjectPtr<NDArrayObj>::Adopt(new NDArrayObj());
  // 64-byte alignment, and never a zero-sized request so data is never NULL (nbytes is at most
  // PTRDIFF_MAX, so rounding up cannot wrap).
  size_t alloc = (std::max<size_t>(nbytes, 1) + 63) / 64 * 64;
  arr->owned_data_ = std::aligned_alloc(64, alloc);
  if (arr->owned_data_ == nullptr)
    Throw("RuntimeError", "out of memory allocating ", nbytes, " bytes");
  arr->shape_ = shape;
  arr->tensor.data = arr->owned_data_;
  arr->tensor.device = dev;
  arr->tensor.ndim = static_cast<int>(shape.size());
  arr->tensor.dtype = dtype;
  arr->tensor.shape = arr->shape_.data();
  arr->tensor.strides = nullptr;
  arr->tensor.byte_offset = 0;
  return arr;
}

ObjectPtr<NDArrayObj> NDArrayObj::View(void* data, const int64_t* shape, int ndim, DLDataType dtype,
                                       DLDevice dev, ObjectPtr<Object> owner) {
  auto arr = ObjectPtr<NDArrayObj>::Adopt(new NDArrayObj());
  if (ndim <= kInlineDims) {
    std::copy(shape, shape + ndim, arr->inline_shape_);
    arr->tensor.shape = arr->inline_shape_;
  } else {
    arr->shape_.assign(shape, shape + ndim);
    arr->tensor.shape = arr->shape_.data();
  }
  arr->owner_ = std::move(owner);
  arr->tensor.data = data;
  arr->tensor.device = dev;
  arr->tensor.ndim = ndim;
  arr->tensor.dtype = dtype;
  arr->tensor.strides = nullptr;
  arr->tensor.byte_offset = 0;
  return arr;
}

ObjectPtr<NDArrayObj> NDArrayObj::View(ObjectPtr<NDArrayObj> base,
                                       const std::vector<int64_t>& shape, DLDataType dtype,
                                       uint64_t relative_byte_offset) {
  if (!base) Throw("ValueError", "cannot create a view of a null array");
  CheckDataType(dtype);
  const DLTensor& b = base->tensor;
  size_t base_size = CompactBytes(b);
  size_t view_size = CheckedBytes(shape.data(), static_cast<int>(shape.size()), dtype);
  if (relative_byte_offset > base_size || view_size > base_size - relative_byte_offset) {
    std::ostringstream os;
    os << "View with shape [";
    for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
    os << "] would have a size of " << view_size << " bytes.  This would occupy bytes "
       << relative_byte_offset << " <= i_byte < " << relative_byte_offset + view_size
       << " within the backing array.  However, the NDArray being viewed only contains "
       << base_size << " bytes";
    throw Error("ValueError", os.str());
  }
  auto arr = ObjectPtr<NDArrayObj>::Adopt(new NDArrayObj());
  arr->shape_ = shape;
  arr->tensor.data = b.data;
  arr->tensor.device = b.device;
  arr->tensor.ndim = static_cast<int>(shape.size());
  arr->tensor.dtype = dtype;
  arr->tensor.shape = arr->shape_.data();
  arr->tensor.strides = nullptr;
  arr->tensor.byte_offset = b.byte_offset + relative_byte_offset;
  arr->owner_ = std::move(base);  // the array the view's memory belongs to
  return arr;
}

ObjectPtr<NDArrayObj> NDArrayObj::FromDLPack(DLManagedTensor* managed) {
  if (managed == nullptr) Throw("ValueError", "DLManagedTensor is NULL");
  const DLTensor& t = managed->dl_tensor;
  if (t.ndim < 0 || (t.ndim > 0 && t.shape == nullptr)) {
    Throw("ValueError", "DLPack tensor has an invalid shape");
  }
  // Everything later copies trust these: the device (only host memory can be read here), the
  // dtype's width, and a byte size that neither overflows nor wraps with the offset.
  if (DeviceTypeOf(t.device) != kDLCPU && DeviceTypeOf(t.device) != kDLCUDAHost) {
    Throw("ValueError", "DLPack tensor is on device type ", DeviceTypeOf(t.device),
          ", but this runtime reads host memory only");
  }
  if (t.dtype.bits == 0 || t.dtype.lanes == 0) {
    Throw("ValueError", "DLPack tensor has an invalid dtype (code ", int(t.dtype.code), ", bits ",
          int(t.dtype.bits), ", lanes ", int(t.dtype.lanes), ")");
  }
  size_t nbytes = CheckedBytes(t.shape, t.ndim, t.dtype);
  if (t.byte_offset > static_cast<uint64_t>(PTRDIFF_MAX) - nbytes) {
    Throw("ValueError", "DLPack tensor's byte_offset ", t.byte_offset, " is too large");
  }
  if (t.data == nullptr && nbytes != 0) Throw("ValueError", "DLPack tensor has NULL data");
  if (!IsCompact(t)) {
    Throw("ValueError",
          "DLPack tensor is not contiguous; only compact row-major tensors are accepted "
          "(make it contiguous first)");
  }
  auto arr = ObjectPtr<NDArrayObj>::Adopt(new NDArrayObj());
  arr->shape_.assign(t.shape, t.shape + t.ndim);
  arr->tensor = t;
  arr->tensor.shape = arr->shape_.data();
  arr->tensor.strides = nullptr;  // compact: equivalent to the producer's strides
  arr->producer_ = managed;       // set last: nothing above may throw after taking ownership
  return arr;
}

NDArrayObj::~NDArrayObj() {
  if (producer_ != nullptr && producer_->deleter != nullptr) producer_->deleter(producer_);
  std::free(owned_data_);
}

namespace {

struct ExportContext {
  DLManagedTensor managed;
  ObjectPtr<NDArrayObj> owner;
};

void DeleteExport(DLManagedTensor* self) { delete static_cast<ExportContext*>(self->manager_ctx); }

}  // namespace

DLManagedTensor* NDArrayObj::ToDLPack() {
  auto* ctx = new ExportContext{DLManagedTensor{}, ObjectPtr<NDArrayObj>::Borrow(this)};
  ctx->managed.dl_tensor = tensor;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = DeleteExport;
  return &ctx->managed;
}

POLYFFI_CORE_GLOBAL("runtime.NDArrayObjectHandle", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  // Only an owned NDArray handle has an object around it; a bare DLTensor view does not.
  if (args.code(0) != kTVMNDArrayHandle || args.value(0).v_handle == nullptr) {
    args.Mismatch(0, "NDArray");
  }
  rv->SetHandle(NDArrayObj::FromHandle(static_cast<DLTensor*>(args.value(0).v_handle)));
});

}  // namespace polyffi
