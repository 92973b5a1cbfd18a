// Helpers of the hardening tests: fixtures, small graphs and an executor driven through the C
// ABI only (tests/abitests helpers from c_api/tests/c_api_test_util.h).
#ifndef POLYFFI_TESTS_HARDENING_UTIL_H_
#define POLYFFI_TESTS_HARDENING_UTIL_H_

#include <gtest/gtest.h>
#include <polyffi/c_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "c_api_test_util.h"

namespace hardening {

using abitests::Arg;
using abitests::Call;
using abitests::CallV;
using abitests::FailsWith;
using abitests::Global;
using abitests::Ret;

inline std::string LibPath(const char* name) { return std::string(POLYFFI_LIB_DIR) + "/" + name; }

/*! \brief Loads a library module (owned); fails the test when it does not load. */
inline TVMModuleHandle LoadLib(const std::string& path) {
  TVMModuleHandle m = nullptr;
  EXPECT_EQ(TVMModLoadFromFile(path.c_str(), "", &m), 0) << abitests::LastError();
  return m;
}

/*! \brief The testing.* fixtures, loaded once per process. */
inline void LoadFixtures() {
  static TVMModuleHandle m = LoadLib(LibPath("libpolyffi_testing.so"));
  (void)m;
}

/*! \brief An owned float32/any-dtype CPU array. */
class Array {
 public:
  Array(std::vector<int64_t> shape, DLDataType dtype = {kDLFloat, 32, 1}) {
    EXPECT_EQ(TVMArrayAlloc(shape.data(), static_cast<int>(shape.size()), dtype.code, dtype.bits,
                            dtype.lanes, kDLCPU, 0, &h_),
              0)
        << abitests::LastError();
  }
  explicit Array(TVMArrayHandle adopt) : h_(adopt) {}
  Array(Array&& o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  Array(const Array&) = delete;
  ~Array() {
    if (h_ != nullptr) TVMArrayFree(h_);
  }
  TVMArrayHandle get() const { return h_; }
  void SetBytes(const void* data, size_t n) {
    EXPECT_EQ(TVMArrayCopyFromBytes(h_, const_cast<void*>(data), n), 0) << abitests::LastError();
  }
  std::vector<float> Floats() const {
    int64_t n = 1;
    for (int i = 0; i < h_->ndim; ++i) n *= h_->shape[i];
    std::vector<float> v(static_cast<size_t>(n));
    EXPECT_EQ(TVMArrayCopyToBytes(h_, v.data(), v.size() * sizeof(float)), 0);
    return v;
  }
  Arg arg() const { return abitests::Handle(h_, kTVMNDArrayHandle); }

 private:
  TVMArrayHandle h_ = nullptr;
};

/*! \brief A graph executor module and its functions, through the C ABI. */
class Executor {
 public:
  /*! \brief rc of tvm.graph_executor.create; the executor is usable when it is 0. */
  int Create(const std::string& graph, TVMModuleHandle lib) {
    Global create("tvm.graph_executor.create");
    Ret r =
        Call(create.get(), {abitests::Str(graph.c_str()), abitests::Handle(lib, kTVMModuleHandle),
                            abitests::Int(kDLCPU), abitests::Int(0)});
    error_ = r.error;
    if (r.rc == 0) mod_ = r.value.v_handle;
    return r.rc;
  }
  ~Executor() {
    if (mod_ != nullptr) TVMModFree(mod_);
  }
  const std::string& error() const { return error_; }
  Ret operator()(const char* name, const std::vector<Arg>& args = {}) const {
    TVMFunctionHandle f = nullptr;
    EXPECT_EQ(TVMModGetFunction(mod_, name, 0, &f), 0);
    EXPECT_NE(f, nullptr) << name;
    Ret r = CallV(f, args);
    TVMFuncFree(f);
    return r;
  }
  Ret LoadParams(const std::string& blob) const {
    TVMByteArray b{blob.data(), blob.size()};
    return (*this)("load_params", {abitests::Bytes(&b)});
  }
  TVMModuleHandle module() const { return mod_; }

 private:
  TVMModuleHandle mod_ = nullptr;
  std::string error_;
};

/*! \brief Text of TVM graph JSON with one input x (shape, dtype) and one op func(x) -> y. */
inline std::string OneOpGraph(const std::string& func, const std::string& shape,
                              const std::string& dtype = "float32") {
  return R"({"nodes": [{"op": "null", "name": "x", "inputs": []},
    {"op": "tvm_op", "name": "op", "attrs": {"func_name": ")" +
         func + R"(", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0"},
     "inputs": [[0, 0, 0]]}],
  "arg_nodes": [0], "heads": [[1, 0, 0]], "node_row_ptr": [0, 1, 2],
  "attrs": {"storage_id": ["list_int", [0, 1]],
            "shape": ["list_shape", [)" +
         shape + ", " + shape + R"(]],
            "dltype": ["list_str", [")" +
         dtype + "\", \"" + dtype + R"("]]}})";
}

/*! \brief TVM's params blob from (name, dtype, shape, bytes). */
struct Param {
  std::string name;
  DLDataType dtype;
  std::vector<int64_t> shape;
  std::string data;
};
inline std::string ParamsBlob(const std::vector<Param>& params) {
  std::string out;
  auto put = [&out](const auto& v) { out.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  put(uint64_t{0xF7E58D4F05049CB7ULL});
  put(uint64_t{0});
  put(static_cast<uint64_t>(params.size()));
  for (const Param& p : params) {
    put(static_cast<uint64_t>(p.name.size()));
    out += p.name;
  }
  put(static_cast<uint64_t>(params.size()));
  for (const Param& p : params) {
    put(uint64_t{0xDD5E40F096B4A13FULL});
    put(uint64_t{0});
    put(int32_t{kDLCPU});
    put(int32_t{0});
    put(static_cast<int32_t>(p.shape.size()));
    put(p.dtype.code);
    put(p.dtype.bits);
    put(p.dtype.lanes);
    for (int64_t d : p.shape) put(d);
    put(static_cast<int64_t>(p.data.size()));
    out += p.data;
  }
  return out;
}

}  // namespace hardening

#endif  // POLYFFI_TESTS_HARDENING_UTIL_H_
