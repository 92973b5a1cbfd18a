// Fuzz target: the tensor-cache directory reader (vm.builtin.tensor_cache.load, MLC-LLM's
// weight format: a tensor-cache.json index and binary shards beside it).
//
// Input: the index text, then up to three shards (params_shard_<i>.bin), each a
// FuzzedDataProvider random-length string; the shard count is the input's last byte. They are
// written to a directory of this process and loaded. Properties: a refusal is a "Kind: message"
// error and leaves the cache empty; an accepted directory's parameters are all readable arrays
// whose byte size is what their shape and dtype need.
#include <fuzzer/FuzzedDataProvider.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_common.h"

namespace {

const char* const kFiles[] = {"tensor-cache.json", "params_shard_0.bin", "params_shard_1.bin",
                              "params_shard_2.bin"};

std::string& DirPath() {
  static std::string dir;
  return dir;
}

/*! \brief The directory's files and the directory itself go when the fuzzer exits. */
void RemoveDir() {
  for (const char* f : kFiles) ::unlink((DirPath() + "/" + f).c_str());
  ::rmdir(DirPath().c_str());
}

const std::string& Dir() {
  if (DirPath().empty()) {
    DirPath() = "/tmp/polyffi_fuzz_tensor_cache_" + std::to_string(::getpid());
    FUZZ_CHECK(::mkdir(DirPath().c_str(), 0700) == 0 || errno == EEXIST);
    std::atexit(RemoveDir);
  }
  return DirPath();
}

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  FUZZ_CHECK(out.good());
}

int Call(const char* name, std::vector<TVMValue> v, std::vector<int> c, TVMValue* rv, int* rc) {
  return TVMFuncCall(fuzz::Global(name), v.data(), c.data(), static_cast<int>(v.size()), rv, rc);
}

/*! \brief The parameter names the index mentions (any "name" string of the JSON text). */
std::vector<std::string> Names(const std::string& index) {
  std::vector<std::string> names;
  const std::string key = "\"name\"";
  for (size_t at = index.find(key); at != std::string::npos; at = index.find(key, at + 1)) {
    size_t q = index.find('"', index.find(':', at + key.size()));
    if (q == std::string::npos) break;
    size_t e = index.find('"', q + 1);
    if (e == std::string::npos) break;
    names.push_back(index.substr(q + 1, e - q - 1));
  }
  return names;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const int shards = in.ConsumeIntegralInRange<int>(0, 3);
  const std::string dir = Dir();
  const std::string index = in.ConsumeRandomLengthString();
  Write(dir + "/tensor-cache.json", index);
  for (int i = 0; i < 3; ++i) {
    const std::string path = dir + "/" + kFiles[i + 1];
    if (i < shards) {
      Write(path, in.ConsumeRandomLengthString());
    } else {
      ::unlink(path.c_str());
    }
  }
  TVMValue rv;
  int rc = 0;
  TVMValue v[3];
  v[0].v_str = dir.c_str();
  v[1].v_int64 = kDLCPU;
  v[2].v_int64 = 0;
  const int r = Call("vm.builtin.tensor_cache.load", {v[0], v[1], v[2]},
                     {kTVMStr, kTVMArgInt, kTVMArgInt}, &rv, &rc);
  if (r != 0) fuzz::CheckFailure(r);
  // Whatever the index names: absent after a refusal, a readable array after a load.
  for (const std::string& name : Names(index)) {
    TVMValue nv;
    nv.v_str = name.c_str();
    FUZZ_CHECK(Call("vm.builtin.tensor_cache.get", {nv}, {kTVMStr}, &rv, &rc) == 0);
    if (r != 0) FUZZ_CHECK(rc == kTVMNullptr);
    if (rc != kTVMNDArrayHandle) continue;
    auto* t = static_cast<TVMArrayHandle>(rv.v_handle);
    size_t n = (static_cast<size_t>(t->dtype.bits) * t->dtype.lanes + 7) / 8;
    for (int d = 0; d < t->ndim; ++d) n *= static_cast<size_t>(t->shape[d]);
    std::vector<char> out(n);
    FUZZ_CHECK(TVMArrayCopyToBytes(t, out.data(), out.size()) == 0);
    fuzz::ReleaseReturn(rv, rc);
  }
  FUZZ_CHECK(Call("vm.builtin.tensor_cache.clear", {}, {}, &rv, &rc) == 0);
  return 0;
}
