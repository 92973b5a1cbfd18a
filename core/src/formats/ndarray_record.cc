// TVM's NDArray record: one parser and one writer for every format that stores arrays.
#include "formats/ndarray_record.h"

#include <polyffi/dtype_string.h>

#include <cstddef>
#include <cstring>
#include <sstream>

namespace polyffi {
namespace formats {

std::string ShapeText(const int64_t* shape, int64_t ndim) {
  std::ostringstream os;
  os << "[";
  for (int64_t i = 0; i < ndim; ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

NDArrayRecord ReadNDArrayRecord(ByteReader* r, const std::string& what) {
  if (r->Read<uint64_t>("an array magic") != kNDArrayMagic) {
    r->Fail(what + " does not start with the NDArray magic");
  }
  r->Read<uint64_t>("an array's reserved word");
  int32_t device_type = r->Read<int32_t>("an array's device type");
  r->Read<int32_t>("an array's device id");
  int32_t ndim = r->Read<int32_t>("an array's ndim");
  NDArrayRecord rec;
  rec.dtype.code = r->Read<uint8_t>("an array's dtype");
  rec.dtype.bits = r->Read<uint8_t>("an array's dtype");
  rec.dtype.lanes = r->Read<uint16_t>("an array's dtype");
  // As TVM's NDArray::Load: arrays are stored from the CPU and loaded to it.
  if (device_type != kDLCPU) {
    r->Fail(what + " is stored from device type " + std::to_string(device_type) +
            "; only CPU arrays can be loaded");
  }
  if (ndim < 0 || ndim > kMaxNDim) {
    r->Fail(what + " has ndim " + std::to_string(ndim) + " (at most " + std::to_string(kMaxNDim) +
            ")");
  }
  rec.shape.resize(ndim);
  // Whole bytes per element (a bool, TVM's uint1, takes one), as TVM's GetDataSize; bounded
  // by PTRDIFF_MAX so that data + size stays a valid pointer difference.
  uint64_t expect = (static_cast<uint64_t>(rec.dtype.bits) * rec.dtype.lanes + 7) / 8;
  for (int32_t i = 0; i < ndim; ++i) {
    int64_t d = rec.shape[i] = r->Read<int64_t>("an array's shape");
    if (d < 0) r->Fail(what + " has a negative dimension " + std::to_string(d));
    if (__builtin_mul_overflow(expect, static_cast<uint64_t>(d), &expect) ||
        expect > static_cast<uint64_t>(PTRDIFF_MAX)) {
      r->Fail(what + " has shape " + ShapeText(rec.shape.data(), i + 1) +
              (i + 1 < ndim ? "..." : "") + ", whose byte size overflows");
    }
  }
  int64_t stored = r->Read<int64_t>("an array's byte size");
  if (stored < 0 || static_cast<uint64_t>(stored) != expect) {
    char dtype[32];
    PolyffiDataTypeToString(rec.dtype, dtype, sizeof(dtype));
    r->Fail(what + " announces " + std::to_string(stored) + " bytes but its shape " +
            ShapeText(rec.shape.data(), ndim) + " " + dtype + " needs " + std::to_string(expect));
  }
  rec.nbytes = static_cast<size_t>(expect);
  rec.data = r->Take(expect, "an array's data");  // truncation fails here, before any copy
  return rec;
}

namespace {
template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}
}  // namespace

void WriteNDArrayRecord(const DLTensor& t, size_t nbytes, std::string* out) {
  Put<uint64_t>(out, kNDArrayMagic);
  Put<uint64_t>(out, 0);
  int32_t device_type;  // the bits: a foreign producer's enum may hold any value
  std::memcpy(&device_type, &t.device.device_type, sizeof(device_type));
  Put<int32_t>(out, device_type);
  Put<int32_t>(out, t.device.device_id);
  Put<int32_t>(out, t.ndim);
  Put<uint8_t>(out, t.dtype.code);
  Put<uint8_t>(out, t.dtype.bits);
  Put<uint16_t>(out, t.dtype.lanes);
  for (int i = 0; i < t.ndim; ++i) Put<int64_t>(out, t.shape[i]);
  Put<int64_t>(out, static_cast<int64_t>(nbytes));
  out->append(static_cast<const char*>(t.data) + t.byte_offset, nbytes);
}

}  // namespace formats
}  // namespace polyffi
