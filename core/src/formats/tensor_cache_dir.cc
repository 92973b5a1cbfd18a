// A tensor-cache directory's index and shards: see tensor_cache_dir.h.
#include "formats/tensor_cache_dir.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "formats/byte_reader.h"
#include "formats/ndarray_record.h"
#include "polyffi/error.h"
#include "polyffi/value.h"

namespace polyffi {
namespace formats {
namespace {

using nlohmann::json;

/*! \brief The whole file, or false when it cannot be opened. */
bool ReadWholeFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream os;
  os << in.rdbuf();
  if (in.bad()) return false;
  *out = os.str();
  return true;
}

class Index {
 public:
  explicit Index(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void Fail(const std::string& msg) const {
    throw Error("ValueError", file_ + ": " + msg);
  }

  const json& Field(const json& obj, const char* key, const std::string& where) const {
    if (!obj.is_object()) Fail(where + " is not a JSON object");
    auto it = obj.find(key);
    if (it == obj.end()) Fail(where + " has no \"" + key + "\"");
    return *it;
  }
  std::string String(const json& obj, const char* key, const std::string& where) const {
    const json& v = Field(obj, key, where);
    if (!v.is_string()) Fail(where + "'s \"" + key + "\" is not a string");
    return v.get<std::string>();
  }
  int64_t NonNegative(const json& obj, const char* key, const std::string& where) const {
    const json& v = Field(obj, key, where);
    if (v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) {
      return static_cast<int64_t>(v.get<uint64_t>());
    }
    if (v.is_number_integer() && v.get<int64_t>() >= 0) return v.get<int64_t>();
    Fail(where + "'s \"" + key + "\" is not a non-negative integer: " + v.dump());
  }
  const json& Array(const json& obj, const char* key, const std::string& where) const {
    const json& v = Field(obj, key, where);
    if (!v.is_array()) Fail(where + "'s \"" + key + "\" is not an array");
    return v;
  }

 private:
  std::string file_;
};

/*! \brief A shard path stays inside the cache directory: relative, with no ".." component. */
bool InsideDirectory(const std::string& rel) {
  if (rel.empty() || rel[0] == '/') return false;
  size_t start = 0;
  while (start <= rel.size()) {
    size_t end = rel.find('/', start);
    if (end == std::string::npos) end = rel.size();
    if (rel.compare(start, end - start, "..") == 0 && end - start == 2) return false;
    start = end + 1;
  }
  return true;
}

/*! \brief One parameter of a shard, read through the shard's ByteReader. */
ObjectPtr<NDArrayObj> LoadParam(const Index& index, const json& rec, const std::string& where,
                                const std::string& shard_bytes, const std::string& shard_path,
                                std::string* name) {
  *name = index.String(rec, "name", where);
  const std::string what = where + " ('" + *name + "')";
  const json& shape_json = index.Array(rec, "shape", what);
  if (shape_json.size() > static_cast<size_t>(kMaxNDim)) {
    index.Fail(what + " has ndim " + std::to_string(shape_json.size()) + " (at most " +
               std::to_string(kMaxNDim) + ")");
  }
  std::vector<int64_t> shape;
  for (const json& d : shape_json) {
    if (!(d.is_number_integer() &&
          (d.is_number_unsigned() ? d.get<uint64_t>() <= INT64_MAX : d.get<int64_t>() >= 0))) {
      index.Fail(what + " has a shape entry that is not a non-negative integer: " + d.dump());
    }
    shape.push_back(d.get<int64_t>());
  }
  const std::string dtype_text = index.String(rec, "dtype", what);
  DLDataType dtype{};
  try {
    dtype = ParseDataType(dtype_text);
  } catch (const Error& e) {
    index.Fail(what + ": " + e.message());
  }
  if (dtype.lanes != 1 || dtype.bits == 0 || dtype.bits % 8 != 0) {
    index.Fail(what + " has dtype " + dtype_text + ", which is not one lane of whole bytes");
  }
  size_t array_bytes = 0;
  try {
    array_bytes = CheckedBytes(shape.data(), static_cast<int>(shape.size()), dtype);
  } catch (const Error&) {
    index.Fail(what + " has shape " + ShapeText(shape.data(), shape.size()) + " " + dtype_text +
               ", whose byte size overflows");
  }
  const std::string format = index.String(rec, "format", what);
  const int64_t nbytes = index.NonNegative(rec, "nbytes", what);
  const int64_t offset = index.NonNegative(rec, "byteOffset", what);
  const bool bf16 = format == "f32-to-bf16" && dtype.code == kDLFloat && dtype.bits == 32;
  const uint64_t stored = bf16 ? array_bytes / 2 : array_bytes;
  if (static_cast<uint64_t>(nbytes) != stored) {
    index.Fail(what + " announces " + std::to_string(nbytes) + " bytes but its shape " +
               ShapeText(shape.data(), shape.size()) + " " + dtype_text + " (format " + format +
               ") needs " + std::to_string(stored));
  }
  if (static_cast<uint64_t>(offset) > shard_bytes.size()) {
    index.Fail(what + " starts at byteOffset " + std::to_string(offset) + ", past the end of " +
               shard_path + " (" + std::to_string(shard_bytes.size()) + " bytes)");
  }
  ByteReader r(shard_bytes.data() + offset, shard_bytes.size() - offset, shard_path,
               "tensor-cache shard");
  const char* src = r.Take(static_cast<uint64_t>(nbytes), what.c_str());
  ObjectPtr<NDArrayObj> arr = NDArrayObj::Empty(shape, dtype, DLDevice{kDLCPU, 0});
  auto* dst = static_cast<char*>(arr->tensor.data);
  if (bf16) {
    for (uint64_t i = 0; i < stored / 2; ++i) {
      uint16_t half;
      std::memcpy(&half, src + 2 * i, 2);
      const uint32_t bits = static_cast<uint32_t>(half) << 16;
      std::memcpy(dst + 4 * i, &bits, 4);
    }
  } else if (nbytes != 0) {
    std::memcpy(dst, src, static_cast<size_t>(nbytes));
  }
  return arr;
}

}  // namespace

std::vector<std::pair<std::string, ObjectPtr<NDArrayObj>>> LoadTensorCacheDir(
    const std::string& dir) {
  std::string index_path = dir + "/tensor-cache.json", text;
  if (!ReadWholeFile(index_path, &text)) {
    const std::string legacy = dir + "/ndarray-cache.json";
    if (!ReadWholeFile(legacy, &text)) {
      Throw("ValueError", "tensor_cache.load: cannot read ", index_path, " (nor ", legacy, ")");
    }
    index_path = legacy;
  }
  const Index index(index_path);
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) index.Fail("not valid JSON");
  if (!root.is_object()) index.Fail("the index is not a JSON object");
  const json& shards = index.Array(root, "records", "the index");
  std::vector<std::pair<std::string, ObjectPtr<NDArrayObj>>> params;
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string where = "shard " + std::to_string(s);
    const json& shard = shards[s];
    const std::string data_path = index.String(shard, "dataPath", where);
    if (!InsideDirectory(data_path)) {
      index.Fail(where + "'s dataPath '" + data_path + "' leaves the cache directory");
    }
    const std::string format = index.String(shard, "format", where);
    if (format != "raw-shard") {
      index.Fail(where + " has format '" + format + "': only raw-shard is supported");
    }
    const int64_t nbytes = index.NonNegative(shard, "nbytes", where);
    const json& records = index.Array(shard, "records", where);
    const std::string shard_path = dir + "/" + data_path;
    std::string bytes;
    if (!ReadWholeFile(shard_path, &bytes)) {
      index.Fail(where + "'s file " + shard_path + " cannot be read");
    }
    if (bytes.size() != static_cast<uint64_t>(nbytes)) {
      index.Fail(where + "'s file " + shard_path + " has " + std::to_string(bytes.size()) +
                 " bytes, the index announces " + std::to_string(nbytes) +
                 " (a corrupt or incomplete download)");
    }
    for (size_t i = 0; i < records.size(); ++i) {
      std::string name;
      ObjectPtr<NDArrayObj> arr = LoadParam(
          index, records[i], where + " parameter " + std::to_string(i), bytes, shard_path, &name);
      params.emplace_back(std::move(name), std::move(arr));
    }
  }
  return params;
}

}  // namespace formats
}  // namespace polyffi
