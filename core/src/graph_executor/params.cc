// Parameter blobs in TVM's SaveParams format, and the runtime.*Params globals over them:
//   u64 0xF7E58D4F05049CB7, u64 reserved, names (u64 count, then u64 length + bytes each),
//   u64 array count, then per array: u64 0xDD5E40F096B4A13F, u64 reserved, DLDevice (CPU),
//   i32 ndim, DLDataType (u8 code, u8 bits, u16 lanes), i64 shape[ndim], i64 byte size, data.
// All little-endian. Reading is bounds-checked: a corrupt or truncated blob is an error.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "polyffi/container.h"
#include "polyffi/error.h"
#include "polyffi/ndarray.h"
#include "polyffi/registry.h"

namespace polyffi {
namespace {

constexpr uint64_t kParamsMagic = 0xF7E58D4F05049CB7ULL;
constexpr uint64_t kArrayMagic = 0xDD5E40F096B4A13FULL;

class Reader {
 public:
  Reader(const char* data, size_t size) : p_(data), end_(data + size) {}
  template <typename T>
  T Get(const char* what) {
    T v;
    Bytes(&v, sizeof(v), what);
    return v;
  }
  void Bytes(void* out, size_t n, const char* what) {
    if (static_cast<size_t>(end_ - p_) < n) {
      Throw("InternalError", "Invalid parameters file format: truncated while reading ", what);
    }
    std::memcpy(out, p_, n);
    p_ += n;
  }
  size_t left() const { return static_cast<size_t>(end_ - p_); }

 private:
  const char* p_;
  const char* end_;
};

ObjectPtr<NDArrayObj> ReadArray(Reader* r) {
  if (r->Get<uint64_t>("array header") != kArrayMagic) {
    Throw("InternalError", "Invalid DLTensor file format (bad array magic)");
  }
  r->Get<uint64_t>("array header");
  DLDevice dev;
  dev.device_type = static_cast<DLDeviceType>(r->Get<int32_t>("device"));
  dev.device_id = r->Get<int32_t>("device");
  if (DeviceTypeOf(dev) != kDLCPU) {
    Throw("InternalError", "Invalid DLTensor device: can only save as CPU tensor");
  }
  int32_t ndim = r->Get<int32_t>("ndim");
  DLDataType dtype;
  dtype.code = r->Get<uint8_t>("dtype");
  dtype.bits = r->Get<uint8_t>("dtype");
  dtype.lanes = r->Get<uint16_t>("dtype");
  // Each dimension takes 8 bytes of the blob: a bound on ndim before allocating for it.
  if (ndim < 0 || static_cast<size_t>(ndim) > r->left() / 8) {
    Throw("InternalError", "Invalid DLTensor file format: ndim ", ndim);
  }
  std::vector<int64_t> shape(ndim);
  for (auto& d : shape) d = r->Get<int64_t>("shape");
  size_t nbytes = CheckedBytes(shape.data(), ndim, dtype);
  int64_t stored = r->Get<int64_t>("data size");
  if (stored < 0 || static_cast<uint64_t>(stored) != nbytes) {
    Throw("InternalError", "Invalid DLTensor file format: data size ", stored,
          " but shape and dtype need ", nbytes);
  }
  // Checked before allocating: a corrupt shape cannot ask for more memory than the blob holds.
  if (nbytes > r->left()) {
    Throw("InternalError", "Invalid parameters file format: truncated while reading data");
  }
  auto arr = NDArrayObj::Empty(shape, dtype, dev);  // validates the dtype
  r->Bytes(arr->tensor.data, nbytes, "data");
  return arr;
}

RetValue LoadParams(const std::string& blob) {
  Reader r(blob.data(), blob.size());
  if (r.Get<uint64_t>("header") != kParamsMagic) {
    Throw("InternalError", "Invalid parameters file format");
  }
  r.Get<uint64_t>("header");
  uint64_t n = r.Get<uint64_t>("name count");
  if (n > r.left() / 8) Throw("InternalError", "Invalid parameters file format: ", n, " names");
  std::vector<std::string> names(n);
  for (auto& name : names) {
    uint64_t len = r.Get<uint64_t>("name length");
    if (len > r.left()) Throw("InternalError", "Invalid parameters file format: name length ", len);
    name.resize(len);
    r.Bytes(name.data(), len, "name");
  }
  uint64_t count = r.Get<uint64_t>("array count");
  if (count != n) {
    Throw("InternalError", "Invalid parameters file format: ", n, " names but ", count, " arrays");
  }
  auto map = MakeObject<MapObj>();
  for (const auto& name : names) {
    RetValue key, value;
    key.SetStr(name);
    value.SetObject(ReadArray(&r));
    map->Set(std::move(key), std::move(value));
  }
  RetValue out;
  out.SetObject(std::move(map));
  return out;
}

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

std::string SaveParams(const MapObj& map) {
  std::string out;
  Put<uint64_t>(&out, kParamsMagic);
  Put<uint64_t>(&out, 0);
  Put<uint64_t>(&out, map.items.size());
  for (const auto& kv : map.items) {
    const RetValue& k = kv.first;
    std::string name;
    if (k.type_code() == kTVMStr) {
      name = k.str();
    } else if (k.object() && k.object()->type_index() == TypeIndex::kString) {
      name = static_cast<StringObj*>(k.object())->data;
    } else {
      Throw("TypeError", "SaveParams: parameter names must be strings but got ",
            TypeCodeName(k.type_code()));
    }
    Put<uint64_t>(&out, name.size());
    out += name;
  }
  Put<uint64_t>(&out, map.items.size());
  for (const auto& kv : map.items) {
    const RetValue& v = kv.second;
    if (v.type_code() != kTVMNDArrayHandle) {
      Throw("TypeError", "SaveParams: parameter values must be NDArrays but got ",
            TypeCodeName(v.type_code()));
    }
    const DLTensor& t = static_cast<NDArrayObj*>(v.object())->tensor;
    if (DeviceTypeOf(t.device) != kDLCPU)
      Throw("ValueError", "SaveParams: can only save CPU arrays");
    size_t nbytes = CompactBytes(t);
    Put<uint64_t>(&out, kArrayMagic);
    Put<uint64_t>(&out, 0);
    Put<int32_t>(&out, DeviceTypeOf(t.device));
    Put<int32_t>(&out, t.device.device_id);
    Put<int32_t>(&out, t.ndim);
    Put<uint8_t>(&out, t.dtype.code);
    Put<uint8_t>(&out, t.dtype.bits);
    Put<uint16_t>(&out, t.dtype.lanes);
    for (int i = 0; i < t.ndim; ++i) Put<int64_t>(&out, t.shape[i]);
    Put<int64_t>(&out, static_cast<int64_t>(nbytes));
    out.append(static_cast<const char*>(t.data) + t.byte_offset, nbytes);
  }
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Throw("TVMError", "Unable to open file ", path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

}  // namespace

POLYFFI_CORE_GLOBAL("runtime.LoadParams", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  *rv = LoadParams(args.Str(0));
});

POLYFFI_CORE_GLOBAL("runtime.LoadParamsFromFile", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  *rv = LoadParams(ReadFile(args.Str(0)));
});

POLYFFI_CORE_GLOBAL("runtime.SaveParams", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  rv->SetBytes(SaveParams(*args.ObjAs<MapObj>(0)));
});

POLYFFI_CORE_GLOBAL("runtime.SaveParamsToFile", [](const Args& args, RetValue* rv) {
  args.CheckArity(2);
  std::string blob = SaveParams(*args.ObjAs<MapObj>(0));
  std::string path = args.Str(1);
  std::ofstream out(path, std::ios::binary);
  if (!out) Throw("TVMError", "Unable to open file ", path);
  out.write(blob.data(), static_cast<std::streamsize>(blob.size()));
  out.close();
  if (!out) Throw("TVMError", "Failed to write file ", path);
  rv->SetNull();
});

}  // namespace polyffi
