// polyffi.runner.graph: a TVM graph model served by many threads at once (model_runner.h).
//
//   polyffi.runner.graph(factory, device_type, device_id)
//       factory: the GraphExecutorFactory of a TVM export (load_module("model.so")).
//   polyffi.runner.graph(graph_json, lib, params, device_type, device_id)
//       the three artifacts of an older export; params are a TVM params blob (bytes) or None.
//
// The weights are loaded once, into an executor of their own that never runs. Every executor of
// the pool is made by tvm.graph_executor.create and takes the weights by share_params (no copy),
// so N executors cost N times the activations, not N times the model.
//
// Functions of the runner module:
//   run(key0, array0, key1, array1, ...)  inputs by name (str) or index (int), or
//   run(array0, array1, ...)              inputs by position: the graph's inputs that are not
//                                         weights, in the graph's order (input_names());
//       set the inputs on an executor of the pool, run it, and return every output as a new array
//       (an Array), owned by the caller. Thread-safe. The executor copies the inputs into its own
//       storage, so misaligned or borrowed arrays are fine and may be reused at once.
//   input_names()   the names of the graph's inputs that are not weights, an Array of strings.
//   num_outputs()   how many outputs run returns.
//   signature()     the inputs' and outputs' names, dtypes and shapes, as JSON (signature.cc).
//   executor()      a graph executor of the runner's own, its weights set (a copy of them), for
//                   TVM's stateful API (set_input, run, get_output): one caller at a time.
//   pool_size()     how many executors the pool has made (diagnostics and tests).
//   load_params(params)  these weights (a TVM params blob) from now on, in place: loaded into
//                   executor() and into a new weights executor and pool for later run calls
//                   (calls in flight finish on the old ones); input_names() leaves out the inputs
//                   the blob names.
//   with_params(params)  a new runner of the same graph and library with these weights (a TVM
//                   params blob); this runner and the calls in flight on it are unchanged.
//
// polyffi.runner.check_graph_executor(module): the one check of every binding's GraphModule.
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "model_runner.h"
#include "polyffi/container.h"
#include "polyffi/error.h"
#include "polyffi/registry.h"

namespace polyffi {
namespace model_runner {
namespace {

ObjectPtr<FunctionObj> Global(const char* name) {
  ObjectPtr<FunctionObj> f = Registry::Global()->Get(name);
  if (!f) Throw("AttributeError", name, " is not registered");
  return f;
}

/*! \brief A module's own function (AttributeError naming what when it has none). */
ObjectPtr<FunctionObj> ModuleFunction(ModuleObj* m, const char* name, const char* what) {
  ObjectPtr<FunctionObj> f = m->GetFunction(name, false);
  if (!f) Throw("AttributeError", what, " has no function '", name, "'");
  return f;
}

/*! \brief The module a call returned (TypeError naming what otherwise). */
ObjectPtr<ModuleObj> AsModule(const RetValue& v, const char* what) {
  Object* o = v.object();
  if (o == nullptr || o->type_index() != TypeIndex::kModule) {
    Throw("TypeError", what, " did not return a module");
  }
  return ObjectPtr<ModuleObj>::Borrow(static_cast<ModuleObj*>(o));
}

/*! \brief The names of the graph's inputs in index order (arg_nodes), from the graph JSON. */
std::vector<std::string> GraphInputNames(const std::string& graph_json) {
  nlohmann::json g = nlohmann::json::parse(graph_json, nullptr, false);
  if (g.is_discarded() || !g.is_object() || !g.contains("nodes") || !g.contains("arg_nodes") ||
      !g["nodes"].is_array() || !g["arg_nodes"].is_array()) {
    Throw("ValueError", "polyffi.runner.graph: the graph JSON has no nodes or arg_nodes");
  }
  const auto& nodes = g["nodes"];
  std::vector<std::string> names;
  for (const auto& a : g["arg_nodes"]) {
    if (!a.is_number_unsigned() || a.get<uint64_t>() >= nodes.size() ||
        !nodes[a.get<size_t>()].is_object() || !nodes[a.get<size_t>()].contains("name") ||
        !nodes[a.get<size_t>()]["name"].is_string()) {
      Throw("ValueError", "polyffi.runner.graph: the graph JSON has a bad arg_nodes entry");
    }
    names.push_back(nodes[a.get<size_t>()]["name"].get<std::string>());
  }
  return names;
}

class GraphRunner final : public ModuleObj {
 public:
  GraphRunner(std::string graph_json, ObjectPtr<ModuleObj> lib, std::string params, DLDevice dev)
      : graph_json_(std::move(graph_json)),
        lib_(std::move(lib)),
        dev_(dev),
        create_(Global("tvm.graph_executor.create")),
        own_(Create()) {
    if (!params.empty()) LoadParams(own_.get(), params);
    model_ = MakeModel(std::move(params));
    RetValue n;
    std::vector<TVMValue> none;
    std::vector<int> no_codes;
    CallWith(ModuleFunction(own_.get(), "get_num_outputs", "the graph executor").get(), &none,
             &no_codes, &n);
    num_outputs_ = n.value().v_int64;
  }
  std::string type_key() const override { return "polyffi.GraphRunner"; }

 protected:
  ObjectPtr<FunctionObj> GetOwnFunction(const std::string& name) override {
    auto self = ObjectPtr<GraphRunner>::Borrow(this);
    const std::string fname = "polyffi.GraphRunner." + name;
    if (name == "run") {
      return MakeFunction([self](const Args& args, RetValue* rv) { self->Run(args, rv); }, fname);
    }
    if (name == "pool_size") {
      return Accessor(
          [self](RetValue* rv) { rv->SetInt(static_cast<int64_t>(self->Current()->pool->size())); },
          fname);
    }
    if (name == "executor") {
      return Accessor([self](RetValue* rv) { rv->SetObject(self->own_); }, fname);
    }
    if (name == "input_names") {
      return Accessor(
          [self](RetValue* rv) {
            std::shared_ptr<const Model> m = self->Current();
            auto arr = MakeObject<ArrayObj>();
            arr->items.resize(m->inputs.size());
            for (size_t i = 0; i < m->inputs.size(); ++i) arr->items[i].SetStr(m->inputs[i]);
            rv->SetObject(std::move(arr));
          },
          fname);
    }
    if (name == "num_outputs") {
      return Accessor([self](RetValue* rv) { rv->SetInt(self->num_outputs_); }, fname);
    }
    if (name == "signature") {
      return Accessor(
          [self](RetValue* rv) {
            rv->SetStr(
                GraphSignature(self->own_.get(), self->Current()->inputs, self->num_outputs_));
          },
          fname);
    }
    if (name == "with_params" || name == "load_params") {
      const bool in_place = name == "load_params";
      return MakeFunction(
          [self, in_place](const Args& args, RetValue* rv) {
            args.CheckArity(1);
            if (args.code(0) != kTVMBytes) args.Mismatch(0, "bytes");
            if (!in_place) {
              return rv->SetObject(
                  MakeObject<GraphRunner>(self->graph_json_, self->lib_, args.Str(0), self->dev_));
            }
            std::string params = args.Str(0);
            std::shared_ptr<Model> next = self->MakeModel(params);  // may throw: nothing changed
            LoadParams(self->own_.get(), params);
            std::lock_guard<std::mutex> lock(self->model_mu_);
            self->model_ = std::move(next);
          },
          fname);
    }
    return nullptr;
  }

 private:
  /*!
   * \brief The weights run uses: a params blob loaded into an executor that never runs, the pool
   *  whose executors share them, and the inputs run takes by position (those the blob does not
   *  name). load_params swaps in a new one; a call holds the one it started with.
   */
  struct Model {
    std::string params;  // a TVM params blob, or empty
    ObjectPtr<ModuleObj> weights;
    std::unique_ptr<ExecutorPool> pool;
    std::vector<std::string> inputs;
  };

  std::shared_ptr<const Model> Current() const {
    std::lock_guard<std::mutex> lock(model_mu_);
    return model_;
  }

  std::shared_ptr<Model> MakeModel(std::string params) const {
    auto m = std::make_shared<Model>();
    m->params = std::move(params);
    m->weights = Create();
    std::unordered_set<std::string> params_names;
    if (!m->params.empty()) {
      LoadParams(m->weights.get(), m->params);
      RetValue map;
      TVMByteArray b{m->params.data(), m->params.size()};
      std::vector<TVMValue> v(1);
      std::vector<int> c{kTVMBytes};
      v[0].v_handle = &b;
      CallWith(Global("runtime.LoadParams").get(), &v, &c, &map);
      Object* o = map.object();
      if (o != nullptr && o->type_index() == TypeIndex::kMap) {
        for (const auto& kv : static_cast<MapObj*>(o)->items) {
          if (kv.first.type_code() == kTVMStr) params_names.insert(kv.first.str());
        }
      }
    }
    for (std::string& name : GraphInputNames(graph_json_)) {
      if (params_names.count(name) == 0) m->inputs.push_back(std::move(name));
    }
    const Model* raw = m.get();
    m->pool = std::make_unique<ExecutorPool>([this, raw] { return MakeShared(*raw); });
    return m;
  }

  ObjectPtr<ModuleObj> Create() const {
    std::vector<TVMValue> v(4);
    std::vector<int> c{kTVMStr, kTVMModuleHandle, kTVMArgInt, kTVMArgInt};
    v[0].v_str = graph_json_.c_str();
    v[1].v_handle = lib_.get();
    v[2].v_int64 = dev_.device_type;
    v[3].v_int64 = dev_.device_id;
    RetValue made;
    CallWith(create_.get(), &v, &c, &made);
    return AsModule(made, "tvm.graph_executor.create");
  }

  static void LoadParams(ModuleObj* ex, const std::string& params) {
    TVMByteArray b{params.data(), params.size()};
    std::vector<TVMValue> v(1);
    std::vector<int> c{kTVMBytes};
    v[0].v_handle = &b;
    RetValue ignored;
    CallWith(ModuleFunction(ex, "load_params", "the graph executor").get(), &v, &c, &ignored);
  }

  /*! \brief A pool executor: its own activations, the weights executor's arrays. */
  ObjectPtr<ModuleObj> MakeShared(const Model& m) const {
    ObjectPtr<ModuleObj> ex = Create();
    if (!m.params.empty()) {
      TVMByteArray b{m.params.data(), m.params.size()};
      std::vector<TVMValue> v(2);
      std::vector<int> c{kTVMModuleHandle, kTVMBytes};
      v[0].v_handle = m.weights.get();
      v[1].v_handle = &b;
      RetValue ignored;
      CallWith(ModuleFunction(ex.get(), "share_params", "the graph executor").get(), &v, &c,
               &ignored);
    }
    return ex;
  }

  void Run(const Args& args, RetValue* rv) {
    std::shared_ptr<const Model> m = Current();
    const std::vector<std::string>& inputs = m->inputs;
    const int n = args.size();
    bool positional = n > 0 && args.code(0) != kTVMStr && args.code(0) != kTVMArgInt;
    std::vector<TVMValue> v;
    std::vector<int> c;
    v.reserve(2 + (positional ? 2 * n : n));
    c.reserve(v.capacity());
    v.push_back(TVMValue{});
    v.back().v_int64 = dev_.device_type;
    v.push_back(TVMValue{});
    v.back().v_int64 = dev_.device_id;
    c = {kTVMArgInt, kTVMArgInt};
    if (positional) {
      if (n != static_cast<int>(inputs.size())) {
        Throw("TypeError", "run: the graph takes ", inputs.size(), " inputs (", Join(inputs),
              ") but ", n, " were given");
      }
      for (int i = 0; i < n; ++i) {
        v.push_back(TVMValue{});
        v.back().v_str = inputs[i].c_str();
        c.push_back(kTVMStr);
        v.push_back(args.value(i));
        c.push_back(args.code(i));
      }
    } else {
      if (n % 2 != 0) {
        Throw("TypeError", "run: expected key/array pairs (or arrays by position) but got ", n,
              " arguments");
      }
      for (int i = 0; i < n; ++i) {
        v.push_back(args.value(i));
        c.push_back(args.code(i));
      }
    }
    Lease ex(m->pool.get());
    FunctionObj* f = ex->Function("run_from_inputs", "the graph executor");
    RetValue out;
    CallWith(f, &v, &c, &out);
    *rv = std::move(out);
  }

  static std::string Join(const std::vector<std::string>& names) {
    std::string s;
    for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
    return s;
  }

  std::string graph_json_;
  ObjectPtr<ModuleObj> lib_;
  DLDevice dev_;
  ObjectPtr<FunctionObj> create_;
  ObjectPtr<ModuleObj> own_;
  mutable std::mutex model_mu_;  // guards model_ (a pointer copy per call)
  std::shared_ptr<Model> model_;
  int64_t num_outputs_ = 0;
};

/*! \brief The parts of a GraphExecutorFactory: graph JSON, library, params blob. */
ObjectPtr<ModuleObj> FromFactory(const Args& args, ModuleObj* factory, DLDevice dev) {
  std::vector<TVMValue> none;
  std::vector<int> no_codes;
  auto get_json = factory->GetFunction("get_graph_json", false);
  auto get_params = factory->GetFunction("get_graph_params", false);
  if (!get_json || !get_params) {
    Throw("TypeError", args.fname(), ": a ", factory->type_key(),
          " module is not a GraphExecutorFactory (a library exported by TVM, which has "
          "'default'); a relax VM executable goes to polyffi.runner.vm");
  }
  auto imports = factory->imports();
  if (imports.empty()) Throw("ValueError", args.fname(), ": the factory has no library imported");
  RetValue json, params, blob;
  CallWith(get_json.get(), &none, &no_codes, &json);
  CallWith(get_params.get(), &none, &no_codes, &params);
  if (json.type_code() != kTVMStr) Throw("TypeError", "get_graph_json did not return a str");
  std::vector<TVMValue> v(1);
  std::vector<int> c(1);
  TVMByteArray scratch;
  params.AsArg(&v[0], &c[0], &scratch);
  CallWith(Global("runtime.SaveParams").get(), &v, &c, &blob);
  return MakeObject<GraphRunner>(json.str(), imports[0], blob.str(), dev);
}

// polyffi.runner.check_graph_executor(module): TypeError unless module is a graph executor (what
// tvm.graph_executor.create or a factory's default(device) returns), with one message for every
// binding's GraphModule: a factory is told to call default(device) first.
POLYFFI_CORE_GLOBAL("polyffi.runner.check_graph_executor", [](const Args& args, RetValue*) {
  args.CheckArity(1);
  ObjectPtr<ModuleObj> m = args.ObjAs<ModuleObj>(0);
  const bool runs = static_cast<bool>(m->GetFunction("run", false));
  if (!runs && m->GetFunction("default", false)) {
    Throw("TypeError", "GraphModule needs a graph executor, but this module is a ", m->type_key(),
          " (a library exported by TVM): call its default(device) first, or make the GraphModule "
          "from the factory (from_factory)");
  }
  if (!runs || !m->GetFunction("set_input", false) || !m->GetFunction("get_output", false)) {
    Throw("TypeError", "GraphModule needs a graph-executor module, not a ", m->type_key(),
          " module (it lacks set_input / run / get_output)");
  }
});

POLYFFI_CORE_GLOBAL("polyffi.runner.graph", [](const Args& args, RetValue* rv) {
  if (args.size() == 3) {
    DLDevice dev = CheckDevice(args.fname(), args.Int(1), args.Int(2));
    ObjectPtr<ModuleObj> factory = args.ObjAs<ModuleObj>(0);
    return rv->SetObject(FromFactory(args, factory.get(), dev));
  }
  if (args.size() != 5) {
    Throw("TypeError", args.fname(),
          ": expected (factory, device_type, device_id) or (graph_json, lib, params, "
          "device_type, device_id) but got ",
          args.size(), " arguments");
  }
  std::string json = args.Str(0);
  ObjectPtr<ModuleObj> lib = args.ObjAs<ModuleObj>(1);
  std::string params;
  if (args.code(2) == kTVMBytes) {
    params = args.Str(2);
  } else if (args.code(2) != kTVMNullptr) {
    args.Mismatch(2, "bytes or None");
  }
  DLDevice dev = CheckDevice(args.fname(), args.Int(3), args.Int(4));
  rv->SetObject(MakeObject<GraphRunner>(std::move(json), std::move(lib), std::move(params), dev));
});

}  // namespace
}  // namespace model_runner
}  // namespace polyffi
