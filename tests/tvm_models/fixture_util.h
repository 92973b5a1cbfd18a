// What the tests over TVM-compiled fixtures share, over the C ABI alone: reading a fixture file,
// an owned call result (tensors, objects, functions and modules freed), a call that throws the
// last error's text, global lookup, Array access and a module's type key.
#ifndef POLYFFI_TESTS_TVM_MODELS_FIXTURE_UTIL_H_
#define POLYFFI_TESTS_TVM_MODELS_FIXTURE_UTIL_H_

#include <polyffi/c_runtime_api.h>
#include <polyffi/dtype_string.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fixture {

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

/*! \brief A file of raw little-endian float32 values (TVM's recorded logits and outputs). */
inline std::vector<float> ReadFloats(const std::string& path) {
  std::string b = ReadFile(path);
  std::vector<float> out(b.size() / 4);
  std::memcpy(out.data(), b.data(), out.size() * 4);
  return out;
}

inline std::string LastError() { return TVMGetLastError(); }

inline DLDataType ParseDType(const std::string& s) {
  DLDataType t;
  if (PolyffiDataTypeFromString(s.c_str(), &t) != 0) throw std::runtime_error("bad dtype " + s);
  return t;
}

/*! \brief An owned call result or argument: tensors, objects, functions and modules are freed. */
struct Val {
  TVMValue v{};
  int code = kTVMNullptr;
  Val() = default;
  Val(const Val&) = delete;
  Val& operator=(const Val&) = delete;
  Val(Val&& o) noexcept : v(o.v), code(o.code) { o.code = kTVMNullptr; }
  Val& operator=(Val&& o) noexcept {
    std::swap(v, o.v);
    std::swap(code, o.code);
    return *this;
  }
  ~Val() {
    if (code == kTVMNDArrayHandle) {
      TVMArrayFree(static_cast<TVMArrayHandle>(v.v_handle));
    } else if (code == kTVMObjectHandle || code == kTVMModuleHandle ||
               code == kTVMPackedFuncHandle) {
      TVMObjectFree(v.v_handle);
    }
  }
  DLTensor* tensor() const {
    return code == kTVMNDArrayHandle ? static_cast<DLTensor*>(v.v_handle) : nullptr;
  }
  /*! \brief A compact tensor's bytes, or a note saying the value is not a tensor. */
  std::string bytes() const {
    DLTensor* t = tensor();
    if (t == nullptr) return "<not a tensor: type code " + std::to_string(code) + ">";
    size_t n = (t->dtype.bits * t->dtype.lanes + 7) / 8;
    for (int i = 0; i < t->ndim; ++i) n *= static_cast<size_t>(t->shape[i]);
    return std::string(static_cast<const char*>(t->data) + t->byte_offset, n);
  }
};

/*! \brief Call f; throws the last error's text on failure. */
inline Val Call(TVMFunctionHandle f, std::vector<TVMValue> v, std::vector<int> c) {
  Val r;
  if (TVMFuncCall(f, v.data(), c.data(), static_cast<int>(v.size()), &r.v, &r.code) != 0) {
    throw std::runtime_error(LastError());
  }
  return r;
}

/*! \brief A registered global (not owned); throws when it is missing. */
inline TVMFunctionHandle Global(const char* name) {
  TVMFunctionHandle f = nullptr;
  TVMFuncGetGlobal(name, &f);
  if (f == nullptr) throw std::runtime_error(std::string("missing global ") + name);
  return f;
}

inline int64_t ArraySize(const Val& arr) {
  return Call(Global("runtime.ArraySize"), {arr.v}, {arr.code}).v.v_int64;
}

inline Val ArrayItem(const Val& arr, int64_t i) {
  TVMValue idx;
  idx.v_int64 = i;
  return Call(Global("runtime.ArrayGetItem"), {arr.v, idx}, {arr.code, kTVMArgInt});
}

/*! \brief A module's type key, or "" when it cannot be asked. */
inline std::string TypeKey(TVMModuleHandle m) {
  TVMValue v, rv;
  v.v_handle = m;
  int c = kTVMModuleHandle, rc;
  if (TVMFuncCall(Global("runtime.ModuleGetTypeKey"), &v, &c, 1, &rv, &rc) != 0) return "";
  return rv.v_str;
}

}  // namespace fixture

#define ASSERT_OK(call) ASSERT_EQ((call), 0) << ::fixture::LastError()

#endif  // POLYFFI_TESTS_TVM_MODELS_FIXTURE_UTIL_H_
