// The runtime-library fixtures compiled by Apache TVM 0.27 (tests/tvm_models/tvm027/runtime):
// relax models whose executables call TVM's runtime globals at run time (contrib sort/argsort/
// top-k, seeded random, relax.run.unique / nonzero, tensor_to_shape, shape_to_tensor) or use
// Shape and int arguments, two symbolic dimensions, float16/int kernels, recursion and nested
// tuples. Over the C ABI alone, every run's result must equal what TVM's own runtime returned:
// tensors bit for bit (dtype, shape and bytes), Shapes and ints by value, tuples recursively.
#include <gtest/gtest.h>
#include <polyffi/c_runtime_api.h>
#include <polyffi/dtype_string.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fixture_util.h"

namespace {

using fixture::Call;
using fixture::Global;
using fixture::LastError;
using fixture::ReadFile;
using fixture::Val;

using Json = nlohmann::json;
const std::string kDir = std::string(TVM027_DIR) + "/runtime";

int64_t IntCall(const char* global, const Val& obj, int64_t* index = nullptr) {
  std::vector<TVMValue> v{obj.v};
  std::vector<int> c{obj.code};
  if (index != nullptr) {
    TVMValue i;
    i.v_int64 = *index;
    v.push_back(i);
    c.push_back(kTVMArgInt);
  }
  return Call(Global(global), v, c).v.v_int64;
}

Val MakeTensor(const Json& in, const std::string& dir) {
  DLDataType t;
  if (PolyffiDataTypeFromString(in["dtype"].get<std::string>().c_str(), &t) != 0) {
    throw std::runtime_error("bad dtype");
  }
  std::vector<int64_t> shape = in["shape"].get<std::vector<int64_t>>();
  Val r;
  TVMArrayHandle h;
  if (TVMArrayAlloc(shape.data(), static_cast<int>(shape.size()), t.code, t.bits, t.lanes, kDLCPU,
                    0, &h) != 0) {
    throw std::runtime_error(LastError());
  }
  r.v.v_handle = h;
  r.code = kTVMNDArrayHandle;
  std::string bytes = ReadFile(dir + "/" + in["file"].get<std::string>());
  size_t n = (t.bits * t.lanes + 7) / 8;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  if (bytes.size() != n) throw std::runtime_error("fixture size mismatch");
  if (n != 0) std::memcpy(h->data, bytes.data(), n);
  return r;
}

Val MakeShape(const std::vector<int64_t>& dims) {
  std::vector<TVMValue> v(dims.size());
  std::vector<int> c(dims.size(), kTVMArgInt);
  for (size_t i = 0; i < dims.size(); ++i) v[i].v_int64 = dims[i];
  return Call(Global("runtime.ShapeTuple"), v, c);
}

/*! \brief Whether a result equals TVM's recorded one (failures name the path inside it). */
void ExpectEqual(const Val& got, const Json& want, const std::string& dir, const std::string& at) {
  const std::string kind = want["kind"].get<std::string>();
  if (kind == "tensor") {
    ASSERT_EQ(got.code, kTVMNDArrayHandle) << at << ": not a tensor";
    auto* t = static_cast<DLTensor*>(got.v.v_handle);
    char name[64];
    ASSERT_EQ(PolyffiDataTypeToString(t->dtype, name, sizeof(name)), 0);
    EXPECT_EQ(std::string(name), want["dtype"].get<std::string>()) << at;
    EXPECT_EQ(std::vector<int64_t>(t->shape, t->shape + t->ndim),
              want["shape"].get<std::vector<int64_t>>())
        << at;
    std::string bytes = ReadFile(dir + "/" + want["file"].get<std::string>());
    size_t n = (t->dtype.bits * t->dtype.lanes + 7) / 8;
    for (int i = 0; i < t->ndim; ++i) n *= static_cast<size_t>(t->shape[i]);
    ASSERT_EQ(n, bytes.size()) << at;
    EXPECT_TRUE(n == 0 ||
                std::memcmp(static_cast<char*>(t->data) + t->byte_offset, bytes.data(), n) == 0)
        << at << ": tensor differs from TVM's";
  } else if (kind == "shape") {
    ASSERT_EQ(got.code, kTVMObjectHandle) << at << ": not an object";
    std::vector<int64_t> dims;
    int64_t size = IntCall("runtime.GetShapeTupleSize", got);
    for (int64_t i = 0; i < size; ++i)
      dims.push_back(IntCall("runtime.GetShapeTupleElem", got, &i));
    EXPECT_EQ(dims, want["value"].get<std::vector<int64_t>>()) << at;
  } else if (kind == "int") {
    ASSERT_EQ(got.code, kTVMArgInt) << at;
    EXPECT_EQ(got.v.v_int64, want["value"].get<int64_t>()) << at;
  } else {
    ASSERT_EQ(kind, "tuple");
    ASSERT_EQ(got.code, kTVMObjectHandle) << at << ": not a tuple";
    const Json& items = want["items"];
    ASSERT_EQ(IntCall("runtime.ArraySize", got), static_cast<int64_t>(items.size())) << at;
    for (size_t i = 0; i < items.size(); ++i) {
      TVMValue v[2];
      v[0] = got.v;
      v[1].v_int64 = static_cast<int64_t>(i);
      Val item = Call(Global("runtime.ArrayGetItem"), {v[0], v[1]}, {got.code, kTVMArgInt});
      ExpectEqual(item, items[i], dir, at + "[" + std::to_string(i) + "]");
    }
  }
}

/*! \brief A loaded library, its VM (CPU, pooled allocator) and `forward`. */
struct Model {
  Val lib, vm;
  TVMFunctionHandle forward = nullptr;
  explicit Model(const std::string& path) {
    if (TVMModLoadFromFile(path.c_str(), "", &lib.v.v_handle) != 0) {
      throw std::runtime_error(LastError());
    }
    lib.code = kTVMModuleHandle;
    vm = ModCall(lib, "vm_load_executable", {}, {});
    TVMValue init[3];
    init[0].v_int64 = kDLCPU, init[1].v_int64 = 0, init[2].v_int64 = 2;
    ModCall(vm, "vm_initialization", {init[0], init[1], init[2]},
            {kTVMArgInt, kTVMArgInt, kTVMArgInt});
    if (TVMModGetFunction(vm.v.v_handle, "forward", 0, &forward) != 0 || forward == nullptr) {
      throw std::runtime_error("no forward");
    }
  }
  ~Model() {
    if (forward) TVMFuncFree(forward);
  }
  static Val ModCall(const Val& m, const char* name, std::vector<TVMValue> v, std::vector<int> c) {
    TVMFunctionHandle f = nullptr;
    if (TVMModGetFunction(m.v.v_handle, name, 0, &f) != 0 || f == nullptr) {
      throw std::runtime_error(std::string("no function ") + name);
    }
    Val r;
    int rc = TVMFuncCall(f, v.data(), c.data(), static_cast<int>(v.size()), &r.v, &r.code);
    TVMFuncFree(f);
    if (rc != 0) throw std::runtime_error(LastError());
    return r;
  }
};

std::vector<std::string> Models() {
  Json manifest = Json::parse(ReadFile(std::string(TVM027_DIR) + "/manifest.json"));
  std::vector<std::string> names;
  for (auto it = manifest["runtime"].begin(); it != manifest["runtime"].end(); ++it) {
    names.push_back(it.key());
  }
  return names;
}

class Tvm027Runtime : public ::testing::TestWithParam<std::string> {};

TEST_P(Tvm027Runtime, MatchesTvmOnEveryRun) {
  const std::string model = GetParam();
  const std::string dir = kDir + "/" + model;
  Json io = Json::parse(ReadFile(dir + "/io.json"));
  Model m(kDir + "/" + io["library"].get<std::string>());
  ASSERT_FALSE(io["runs"].empty());
  int r = 0;
  for (const Json& run : io["runs"]) {
    std::vector<Val> keep;
    std::vector<TVMValue> v;
    std::vector<int> c;
    for (const Json& in : run["inputs"]) {
      const std::string kind = in["kind"].get<std::string>();
      if (kind == "tensor") {
        keep.push_back(MakeTensor(in, dir));
      } else if (kind == "shape") {
        keep.push_back(MakeShape(in["value"].get<std::vector<int64_t>>()));
      } else {
        Val i;
        i.v.v_int64 = in["value"].get<int64_t>();
        i.code = kTVMArgInt;
        keep.push_back(std::move(i));
      }
      v.push_back(keep.back().v);
      c.push_back(keep.back().code);
    }
    const std::string at = model + " run " + std::to_string(r++);
    Val out = Call(m.forward, v, c);
    ExpectEqual(out, run["output"], dir, at);
    // Again on the same VM after the idle pooled buffers went back to the system: the same
    // result, the first one (its storage still in use) untouched.
    Call(Global("vm.builtin.memory_manager.clear"), {}, {});
    Val again = Call(m.forward, v, c);
    ExpectEqual(again, run["output"], dir, at + " (second call)");
    ExpectEqual(out, run["output"], dir, at + " (first result after the second call)");
  }
}

TEST_P(Tvm027Runtime, EveryGlobalTheExecutableCallsIsRegistered) {
  const std::string model = GetParam();
  Json io = Json::parse(ReadFile(kDir + "/" + model + "/io.json"));
  for (const Json& g : io["globals"]) {
    const std::string name = g.get<std::string>();
    if (name.rfind("vm.builtin.", 0) != 0 && name.rfind("tvm.contrib.", 0) != 0 &&
        name.rfind("relax.run.", 0) != 0) {
      continue;  // a kernel of the library or a VM function
    }
    TVMFunctionHandle f = nullptr;
    EXPECT_EQ(TVMFuncGetGlobal(name.c_str(), &f), 0);
    EXPECT_NE(f, nullptr) << model << " calls " << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Tvm027Runtime, ::testing::ValuesIn(Models()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
