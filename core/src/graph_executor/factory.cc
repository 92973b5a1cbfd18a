// GraphExecutorFactory: the module TVM's export_library puts in a model library's packed import
// blob (graph JSON, the params, the module name), read by runtime.module.loadbinary_<key>.
//
// Its serialized form (TVM's GraphExecutorFactory::SaveToBinary): a string graph JSON, a u64
// param count, a string vector of names, that many arrays in TVM's NDArray format, and a string
// module name; strings and vectors are u64-length prefixed. Functions, as TVM has them:
// `<module name>(device...)` (`default` for TVM's default name) returns a graph executor over
// the imported library with the params already set, plus get_graph_json, get_graph_params and
// remove_params. One deliberate difference: TVM drops the params after the first executor is
// made, so a second `default(dev)` has none; here every call gives a ready executor (one per
// thread is the usual way to serve a model from many threads).
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "polyffi/container.h"
#include "polyffi/error.h"
#include "polyffi/module.h"
#include "polyffi/ndarray.h"
#include "polyffi/registry.h"

namespace polyffi {
namespace {

constexpr uint64_t kNDArrayMagic = 0xDD5E40F096B4A13FULL;

using Params = std::vector<std::pair<std::string, ObjectPtr<NDArrayObj>>>;

/*! \brief Reads a module's section through the read(n) -> bytes function of the blob reader. */
class SectionReader {
 public:
  explicit SectionReader(ObjectPtr<FunctionObj> read) : read_(std::move(read)) {}

  std::string Bytes(uint64_t n, const char* what) {
    if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      Throw("ValueError", "GraphExecutorFactory: ", what, " announces ", n, " bytes");
    }
    TVMValue v;
    v.v_int64 = static_cast<int64_t>(n);
    int code = kTVMArgInt;
    RetValue rv;
    read_->Call(&v, &code, 1, &rv);
    if (rv.type_code() != kTVMBytes || rv.str().size() != n) {
      Throw("ValueError", "GraphExecutorFactory: the blob reader returned no bytes for ", what);
    }
    return rv.str();
  }
  template <typename T>
  T Pod(const char* what) {
    std::string b = Bytes(sizeof(T), what);
    T v;
    std::memcpy(&v, b.data(), sizeof(T));
    return v;
  }
  std::string Str(const char* what) { return Bytes(Pod<uint64_t>(what), what); }

  /*! \brief One array in TVM's NDArray format, validated before anything is allocated. */
  ObjectPtr<NDArrayObj> Array(const std::string& name) {
    const std::string what = "param '" + name + "'";
    if (Pod<uint64_t>("an array magic") != kNDArrayMagic) {
      Throw("ValueError", "GraphExecutorFactory: ", what, " does not start with the NDArray magic");
    }
    Pod<uint64_t>("an array's reserved word");
    Pod<int32_t>("an array's device type");  // params are loaded to the CPU, as in TVM
    Pod<int32_t>("an array's device id");
    int32_t ndim = Pod<int32_t>("an array's ndim");
    if (ndim < 0 || ndim > 32) {
      Throw("ValueError", "GraphExecutorFactory: ", what, " has invalid ndim ", ndim);
    }
    DLDataType dtype;
    dtype.code = Pod<uint8_t>("an array's dtype");
    dtype.bits = Pod<uint8_t>("an array's dtype");
    dtype.lanes = Pod<uint16_t>("an array's dtype");
    std::vector<int64_t> shape(ndim);
    uint64_t count = 1;
    for (auto& d : shape) {
      d = Pod<int64_t>("an array's shape");
      if (d < 0 || __builtin_mul_overflow(count, static_cast<uint64_t>(d), &count)) {
        Throw("ValueError", "GraphExecutorFactory: ", what, " has an invalid shape");
      }
    }
    uint64_t expected = 0;
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(ElementBytes(dtype)), &expected)) {
      Throw("ValueError", "GraphExecutorFactory: ", what, " is too large");
    }
    int64_t nbytes = Pod<int64_t>("an array's byte size");
    if (nbytes < 0 || static_cast<uint64_t>(nbytes) != expected) {
      Throw("ValueError", "GraphExecutorFactory: ", what, " announces ", nbytes,
            " bytes but its shape and dtype need ", expected);
    }
    std::string data = Bytes(expected, "an array's data");  // truncation fails here
    auto arr = NDArrayObj::Empty(shape, dtype, DLDevice{kDLCPU, 0});
    if (expected != 0) std::memcpy(arr->tensor.data, data.data(), expected);
    return arr;
  }

 private:
  ObjectPtr<FunctionObj> read_;
};

/*! \brief A function of the executor module (AttributeError when it has none). */
ObjectPtr<FunctionObj> ExecutorFunction(ModuleObj* mod, const char* name) {
  ObjectPtr<FunctionObj> f = mod->GetFunction(name, false);
  if (!f) Throw("AttributeError", "graph executor has no function '", name, "'");
  return f;
}

class GraphExecutorFactory final : public ModuleObj {
 public:
  GraphExecutorFactory(std::string graph_json, Params params, std::string module_name)
      : graph_json_(std::move(graph_json)),
        params_(std::move(params)),
        module_name_(std::move(module_name)) {}
  std::string type_key() const override { return "GraphExecutorFactory"; }

 protected:
  ObjectPtr<FunctionObj> GetOwnFunction(const std::string& name) override {
    // Each function keeps the factory (and so its library) alive.
    auto self = ObjectPtr<GraphExecutorFactory>::Borrow(this);
    if (name == module_name_) {
      return MakeFunction([self](const Args& args, RetValue* rv) { self->Create(args, rv); },
                          module_name_);
    }
    if (name == "get_graph_json") {
      return MakeFunction(
          [self](const Args& args, RetValue* rv) {
            args.CheckArity(0);
            rv->SetStr(self->graph_json_);
          },
          name);
    }
    if (name == "get_graph_params") {
      return MakeFunction(
          [self](const Args& args, RetValue* rv) {
            args.CheckArity(0);
            auto map = MakeObject<MapObj>();
            for (const auto& [key, arr] : self->params_) {
              RetValue k, v;
              k.SetStr(key);
              v.SetObject(arr);
              map->Set(std::move(k), std::move(v));
            }
            rv->SetObject(std::move(map));
          },
          name);
    }
    if (name == "remove_params") {
      return MakeFunction(
          [self](const Args& args, RetValue* rv) {
            args.CheckArity(0);
            auto copy =
                MakeObject<GraphExecutorFactory>(self->graph_json_, Params(), self->module_name_);
            for (auto& dep : self->imports()) copy->Import(dep);
            rv->SetObject(std::move(copy));
          },
          name);
    }
    return nullptr;
  }

 private:
  // <module name>(device...): tvm.graph_executor.create over the library, then the params.
  void Create(const Args& args, RetValue* rv) {
    if (args.size() < 1) {
      Throw("TypeError", module_name_, ": expected at least one device but got none");
    }
    auto deps = imports();
    if (deps.empty()) Throw("ValueError", "GraphExecutorFactory has no library imported");
    auto create = Registry::Global()->Get("tvm.graph_executor.create");
    if (!create) Throw("AttributeError", "tvm.graph_executor.create is not registered");

    std::vector<TVMValue> values(2 + 2 * args.size());
    std::vector<int> codes(values.size());
    values[0].v_str = graph_json_.c_str();
    codes[0] = kTVMStr;
    values[1].v_handle = deps[0].get();
    codes[1] = kTVMModuleHandle;
    for (int i = 0; i < args.size(); ++i) {
      if (args.code(i) != kDLDevice) args.Mismatch(i, "Device");
      DLDevice dev = args.value(i).v_device;
      values[2 + 2 * i].v_int64 = dev.device_type;
      values[3 + 2 * i].v_int64 = dev.device_id;
      codes[2 + 2 * i] = codes[3 + 2 * i] = kTVMArgInt;
    }
    RetValue made;
    create->Call(values.data(), codes.data(), static_cast<int>(values.size()), &made);
    Object* obj = made.object();
    if (obj == nullptr || obj->type_index() != TypeIndex::kModule) {
      Throw("TypeError", "tvm.graph_executor.create did not return a module");
    }
    auto* exec = static_cast<ModuleObj*>(obj);
    ObjectPtr<FunctionObj> input_index = ExecutorFunction(exec, "get_input_index");
    ObjectPtr<FunctionObj> set_input = ExecutorFunction(exec, "set_input");
    // As TVM's SetParams: every param that names a graph input is copied in; others (folded
    // out of the graph) are skipped. set_input checks each one's shape and dtype.
    for (const auto& [key, arr] : params_) {
      TVMValue v[2];
      int c[2] = {kTVMStr, kTVMNDArrayHandle};
      v[0].v_str = key.c_str();
      RetValue index;
      input_index->Call(v, c, 1, &index);
      if (index.type_code() != kTVMArgInt || index.value().v_int64 < 0) continue;
      v[1].v_handle = arr->handle();
      RetValue ignored;
      set_input->Call(v, c, 2, &ignored);
    }
    *rv = std::move(made);
  }

  std::string graph_json_;
  Params params_;
  std::string module_name_;
};

ObjectPtr<ModuleObj> LoadFactory(const Args& args) {
  args.CheckArity(1);
  SectionReader r(args.ObjAs<FunctionObj>(0));
  std::string graph_json = r.Str("the graph JSON");
  uint64_t count = r.Pod<uint64_t>("the param count");
  uint64_t names = r.Pod<uint64_t>("the param name count");
  if (names != count) {
    Throw("ValueError", "GraphExecutorFactory: ", count, " params but ", names, " names");
  }
  std::vector<std::string> keys;
  for (uint64_t i = 0; i < count; ++i) keys.push_back(r.Str("a param name"));
  Params params;
  for (const auto& key : keys) params.emplace_back(key, r.Array(key));
  std::string module_name = r.Str("the module name");
  return MakeObject<GraphExecutorFactory>(std::move(graph_json), std::move(params),
                                          std::move(module_name));
}

POLYFFI_CORE_GLOBAL("runtime.module.loadbinary_GraphExecutorFactory",
                    [](const Args& args, RetValue* rv) { rv->SetObject(LoadFactory(args)); });
// The name TVM used before the graph runtime became the graph executor (TVM <= 0.7).
POLYFFI_CORE_GLOBAL("runtime.module.loadbinary_GraphRuntimeFactory",
                    [](const Args& args, RetValue* rv) { rv->SetObject(LoadFactory(args)); });

// tvm.graph_executor_factory.create(graph_json, lib, module_name, name0, array0, ...), as TVM
// registers it: a factory made in memory, importing lib.
POLYFFI_CORE_GLOBAL("tvm.graph_executor_factory.create", [](const Args& args, RetValue* rv) {
  args.CheckMinArity(3);
  if ((args.size() - 3) % 2 != 0) {
    Throw("TypeError", args.fname(), ": expected name/array pairs after the module name");
  }
  Params params;
  for (int i = 3; i < args.size(); i += 2) {
    params.emplace_back(args.Str(i), args.ObjAs<NDArrayObj>(i + 1));
  }
  auto factory = MakeObject<GraphExecutorFactory>(args.Str(0), std::move(params), args.Str(2));
  factory->Import(args.ObjAs<ModuleObj>(1));
  rv->SetObject(std::move(factory));
});

}  // namespace
}  // namespace polyffi
