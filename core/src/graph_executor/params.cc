// Parameter blobs in TVM's SaveParams format, and the runtime.*Params globals over them:
//   u64 0xF7E58D4F05049CB7, u64 reserved, names (u64 count, then u64 length + bytes each),
//   u64 array count, then per array: u64 0xDD5E40F096B4A13F, u64 reserved, DLDevice (CPU),
//   i32 ndim, DLDataType (u8 code, u8 bits, u16 lanes), i64 shape[ndim], i64 byte size, data.
// All little-endian. The format is read and written by formats/params_blob.h: a corrupt or
// truncated blob is a ValueError.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "formats/ndarray_object.h"
#include "formats/ndarray_record.h"
#include "formats/params_blob.h"
#include "polyffi/container.h"
#include "polyffi/error.h"
#include "polyffi/ndarray.h"
#include "polyffi/registry.h"

namespace polyffi {
namespace {

RetValue LoadParams(const std::string& blob) {
  formats::ParamsBlob params =
      formats::ReadParamsBlob(blob.data(), blob.size(), "runtime.LoadParams");
  auto map = MakeObject<MapObj>();
  for (size_t i = 0; i < params.names.size(); ++i) {
    RetValue key, value;
    key.SetStr(params.names[i]);
    value.SetObject(formats::NDArrayFromRecord(params.arrays[i]));
    map->Set(std::move(key), std::move(value));
  }
  RetValue out;
  out.SetObject(std::move(map));
  return out;
}

std::string SaveParams(const MapObj& map) {
  std::vector<std::string> names;
  for (const auto& kv : map.items) {
    const RetValue& k = kv.first;
    if (k.type_code() == kTVMStr) {
      names.push_back(k.str());
    } else if (k.object() && k.object()->type_index() == TypeIndex::kString) {
      names.push_back(static_cast<StringObj*>(k.object())->data);
    } else {
      Throw("TypeError", "SaveParams: parameter names must be strings but got ",
            TypeCodeName(k.type_code()));
    }
  }
  std::string out;
  formats::WriteParamsHeader(names, &out);
  for (const auto& kv : map.items) {
    const RetValue& v = kv.second;
    if (v.type_code() != kTVMNDArrayHandle) {
      Throw("TypeError", "SaveParams: parameter values must be NDArrays but got ",
            TypeCodeName(v.type_code()));
    }
    const DLTensor& t = static_cast<NDArrayObj*>(v.object())->tensor;
    if (DeviceTypeOf(t.device) != kDLCPU)
      Throw("ValueError", "SaveParams: can only save CPU arrays");
    formats::WriteNDArrayRecord(t, CompactBytes(t), &out);
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
