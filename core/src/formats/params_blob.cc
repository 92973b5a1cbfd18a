// TVM's params blob, read and written once for every caller.
#include "formats/params_blob.h"

#include <sstream>

namespace polyffi {
namespace formats {

ParamsBlob ReadParamsBlob(const char* data, size_t size, const std::string& source,
                          bool names_only) {
  ByteReader r(data, size, source, "params blob");
  uint64_t magic = r.Read<uint64_t>("header magic");
  if (magic != kParamsMagic) {
    std::ostringstream os;
    os << "not a TVM params blob: magic 0x" << std::hex << magic << ", expected 0x" << kParamsMagic;
    r.Fail(os.str());
  }
  r.Read<uint64_t>("header reserved");
  ParamsBlob blob;
  // Each name takes at least its 8-byte length: a corrupt count cannot reserve memory.
  blob.names.resize(r.Count(sizeof(uint64_t), "name count"));
  for (std::string& name : blob.names) name = r.Str("a name");
  uint64_t count = r.Read<uint64_t>("array count");
  if (count != blob.names.size()) {
    r.Fail("params blob has " + std::to_string(blob.names.size()) + " names but " +
           std::to_string(count) + " arrays");
  }
  if (names_only) return blob;
  blob.arrays.reserve(blob.names.size());
  for (const std::string& name : blob.names) {
    blob.arrays.push_back(ReadNDArrayRecord(&r, "array '" + name + "'"));
  }
  r.ExpectEnd("the last array");
  return blob;
}

void WriteParamsHeader(const std::vector<std::string>& names, std::string* out) {
  auto put = [out](uint64_t v) { out->append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  put(kParamsMagic);
  put(0);
  put(names.size());
  for (const std::string& name : names) {
    put(name.size());
    *out += name;
  }
  put(names.size());
}

}  // namespace formats
}  // namespace polyffi
