// GraphExecutorFactory: the module TVM's export_library puts in a model library's packed import
// blob (graph JSON, the params, the module name), read by runtime.module.loadbinary_<key>.
//
// Its serialized form (TVM's GraphExecutorFactory::SaveToBinary): a string graph JSON, a u64
// param count, a string vector of names, that many arrays in TVM's NDArray format, and a string
// module name (read with formats/byte_reader.h and formats/ndarray_record.h); strings and vectors
// are u64-length prefixed. Functions, as TVM has them:
// `<module name>(device...)` (`default` for TVM's default name) returns a graph executor over
// the imported library with the params already set, plus get_graph_json, get_graph_params and
// remove_params. One deliberate difference: TVM drops the params after the first executor is
// made, so a second `default(dev)` has none; here every call gives a ready executor (one per
// thread is the usual way to serve a model from many threads).
#include <string>
#include <utility>
#include <vector>

#include "formats/byte_reader.h"
#include "formats/ndarray_object.h"
#include "polyffi/container.h"
#include "polyffi/error.h"
#include "polyffi/module.h"
#include "polyffi/ndarray.h"
#include "polyffi/registry.h"

namespace polyffi {
namespace {

using Params = std::vector<std::pair<std::string, ObjectPtr<NDArrayObj>>>;

/*! \brief A reader of a module's section through the read(n) -> bytes function of the blob. */
formats::ByteReader SectionReader(ObjectPtr<FunctionObj> read) {
  auto pull = [read = std::move(read)](uint64_t n, const char* what) {
    TVMValue v;
    v.v_int64 = static_cast<int64_t>(n);
    int code = kTVMArgInt;
    RetValue rv;
    read->Call(&v, &code, 1, &rv);
    if (rv.type_code() != kTVMBytes) {
      Throw("ValueError", "GraphExecutorFactory: the blob reader returned no bytes for ", what);
    }
    return rv.str();
  };
  return formats::ByteReader(std::move(pull), "GraphExecutorFactory", "section");
}

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
      values[2 + 2 * i].v_int64 = DeviceTypeOf(dev);  // any int32 bits: not read as the enum
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
  formats::ByteReader r = SectionReader(args.ObjAs<FunctionObj>(0));
  std::string graph_json = r.Str("the graph JSON");
  uint64_t count = r.Read<uint64_t>("the param count");
  uint64_t names = r.Read<uint64_t>("the param name count");
  if (names != count) {
    Throw("ValueError", "GraphExecutorFactory: ", count, " params but ", names, " names");
  }
  std::vector<std::string> keys;
  for (uint64_t i = 0; i < count; ++i) keys.push_back(r.Str("a param name"));
  Params params;
  for (const auto& key : keys) {
    params.emplace_back(key, formats::ReadNDArray(&r, "param '" + key + "'"));
  }
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
