// The graph executor's function table: the module tvm.graph_executor.create returns
// (set_input, run, get_output, load_params, share_params, ... as TVM names them), built with the
// core global runtime.ModuleFromFunctions.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph_executor/executor.h"

namespace polyffi {
namespace graph_executor {
namespace {

void CheckArity(const char* fn, PackedArgs args, int lo, int hi) {
  if (args.size < lo || args.size > hi) {
    std::string want =
        lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
    Throw("TypeError", std::string("GraphExecutor.") + fn + ": expected " + want +
                           " arguments but got " + std::to_string(args.size));
  }
}

int64_t IntArg(const char* fn, PackedArgs args, int i) {
  int c = args.codes[i];
  if (c != kTVMArgInt && c != kDLUInt && c != kTVMArgBool) {
    Throw("TypeError", std::string(fn) + ": argument " + std::to_string(i) +
                           " expected int but got " + TypeCodeName(c));
  }
  return args.values[i].v_int64;
}

// A module arrives as kTVMModuleHandle from TVM-style callers; a binding that only knows
// generic objects may pass kTVMObjectHandle, which is accepted when the object is a module.
bool IsModule(int code, void* handle) {
  if (handle == nullptr) return false;
  if (code == kTVMModuleHandle) return true;
  if (code != kTVMObjectHandle) return false;
  static const unsigned module_index = [] {
    unsigned t = ~0u;
    TVMObjectTypeKey2Index("runtime.Module", &t);
    return t;
  }();
  unsigned t = 0;
  int derived = 0;
  return TVMObjectGetTypeIndex(handle, &t) == 0 &&
         TVMObjectDerivedFrom(t, module_index, &derived) == 0 && derived != 0;
}

std::string StrArg(const char* fn, PackedArgs args, int i) {
  try {
    return args[i].as<std::string>();
  } catch (const Error&) {
    Throw("TypeError", std::string(fn) + ": argument " + std::to_string(i) +
                           " expected str but got " + TypeCodeName(args.codes[i]));
  }
}

std::string ModuleTypeKey(void* module) {
  static Function type_key = Function::GetGlobalRequired("runtime.ModuleGetTypeKey");
  TVMValue v;
  int c = kTVMModuleHandle;
  v.v_handle = module;
  Any key = type_key.CallPacked(&v, &c, 1);
  return key.type_code() == kTVMStr ? key.as_str() : std::string();
}

// A shape as TVM returns it: a runtime.ShapeTuple where the runtime registers that type,
// otherwise an Array of ints.
Any ShapeObject(const std::vector<int64_t>& shape) {
  static Function shape_tuple = Function::GetGlobal("runtime.ShapeTuple");
  static Function array = Function::GetGlobalRequired("runtime.Array");
  std::vector<TVMValue> values(shape.size());
  std::vector<int> codes(shape.size(), kTVMArgInt);
  for (size_t i = 0; i < shape.size(); ++i) values[i].v_int64 = shape[i];
  const Function& make = shape_tuple ? shape_tuple : array;
  return make.CallPacked(values.data(), codes.data(), static_cast<int>(values.size()));
}

// {"shape": {name: shape}, "dtype": {name: dtype string}}, TVM's get_input_info result.
template <typename InfoList>
Any InfoMap(const InfoList& info) {
  static Function map = Function::GetGlobalRequired("runtime.Map");
  std::vector<Any> shapes;  // owned until the map holds them
  std::vector<TVMValue> sv, dv;
  std::vector<int> sc, dc;
  for (const auto& item : info) {
    shapes.push_back(ShapeObject(*item.shape));
    TVMValue k, s, d;
    k.v_str = item.name.c_str();
    s.v_handle = shapes.back().as_object().get();
    d.v_str = item.dtype->c_str();
    sv.insert(sv.end(), {k, s});
    sc.insert(sc.end(), {kTVMStr, kTVMObjectHandle});
    dv.insert(dv.end(), {k, d});
    dc.insert(dc.end(), {kTVMStr, kTVMStr});
  }
  Any shape_map = map.CallPacked(sv.data(), sc.data(), static_cast<int>(sv.size()));
  Any dtype_map = map.CallPacked(dv.data(), dc.data(), static_cast<int>(dv.size()));
  return map("shape", shape_map.as_object(), "dtype", dtype_map.as_object());
}

// Returns an array with kTVMNDArrayHandle; the return slot takes its own reference.
void ReturnArray(RetValue* rv, TVMArrayHandle a) {
  TVMValue v;
  v.v_handle = a;
  rv->SetRaw(v, kTVMNDArrayHandle);
}

// fn(key, array) -> None, where set(fn, key, array) does the work.
template <typename Set>
Function KeyArrayFunction(const char* fn, Set set) {
  return MakeFromBody([fn, set](PackedArgs args, RetValue* rv) {
    CheckArity(fn, args, 2, 2);
    set(fn, args[0], args[1]);
    rv->Set(nullptr);
  });
}

Any MakeExecutorModule(std::shared_ptr<GraphExecutor> ex) {
  Function set_input = KeyArrayFunction("set_input", [ex](const char* fn, ArgValue k, ArgValue a) {
    ex->SetInput(ex->ResolveInput(fn, k), a);
  });
  Function run = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("run", args, 0, 0);
    ex->Run();
    rv->Set(nullptr);
  });
  Function get_output = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("get_output", args, 1, 2);
    int64_t index = args.codes[0] == kTVMStr ? ex->ResolveOutput("get_output", args[0])
                                             : IntArg("get_output", args, 0);
    if (args.size == 2) {
      ex->CopyOutputTo(index, args[1]);
      rv->Set(nullptr);
      return;
    }
    TVMArrayHandle out = ex->CopyOutput(index);
    // The return slot takes its own reference; ours is dropped whether or not that worked.
    try {
      ReturnArray(rv, out);
    } catch (...) {
      TVMArrayFree(out);
      throw;
    }
    TVMArrayFree(out);
  });
  Function get_input = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("get_input", args, 1, 1);
    // As TVM: an unknown name gives None (GraphModule.set_input relies on it); a bad index is
    // still an IndexError.
    if (args.codes[0] == kTVMStr && args.values[0].v_str != nullptr &&
        ex->InputIndex(args.values[0].v_str) < 0) {
      rv->Set(nullptr);
      return;
    }
    ReturnArray(rv, ex->InputForCaller(ex->ResolveInput("get_input", args[0])));
  });
  Function get_num_outputs = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("get_num_outputs", args, 0, 0);
    rv->Set(ex->num_outputs());
  });
  Function get_num_inputs = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("get_num_inputs", args, 0, 0);
    rv->Set(ex->num_inputs());
  });
  Function get_input_index = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("get_input_index", args, 1, 1);
    rv->Set(ex->InputIndex(args[0].as<std::string>()));
  });
  Function load_params = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("load_params", args, 1, 1);
    if (args.codes[0] != kTVMBytes) {
      Throw("TypeError",
            std::string("load_params: expected bytes but got ") + TypeCodeName(args.codes[0]));
    }
    auto* b = static_cast<TVMByteArray*>(args.values[0].v_handle);
    ex->LoadParams(b->data, b->size);
    rv->Set(nullptr);
  });
  Function get_output_index = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("get_output_index", args, 1, 1);
    rv->Set(ex->OutputIndex(StrArg("get_output_index", args, 0)));
  });
  Function get_input_info = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("get_input_info", args, 0, 0);
    rv->Set(InfoMap(ex->InputInfo()).as_object());
  });
  Function get_output_info = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("get_output_info", args, 0, 0);
    rv->Set(InfoMap(ex->OutputInfo()).as_object());
  });
  Function set_input_zero_copy =
      KeyArrayFunction("set_input_zero_copy", [ex](const char* fn, ArgValue k, ArgValue a) {
        ex->SetInputZeroCopy(ex->ResolveInput(fn, k), a);
      });
  Function set_output_zero_copy =
      KeyArrayFunction("set_output_zero_copy", [ex](const char* fn, ArgValue k, ArgValue a) {
        ex->SetOutputZeroCopy(ex->ResolveOutput(fn, k), a);
      });
  Function share_params = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    CheckArity("share_params", args, 2, 2);
    if (!IsModule(args.codes[0], args.values[0].v_handle) ||
        ModuleTypeKey(args.values[0].v_handle) != "GraphExecutor") {
      Throw("TypeError", std::string("share_params: argument 0 expected a GraphExecutor module "
                                     "but got ") +
                             TypeCodeName(args.codes[0]));
    }
    if (args.codes[1] != kTVMBytes) {
      Throw("TypeError", std::string("share_params: argument 1 expected bytes but got ") +
                             TypeCodeName(args.codes[1]));
    }
    auto* b = static_cast<TVMByteArray*>(args.values[1].v_handle);
    ex->ShareParams(args.values[0].v_handle, b->data, b->size);
    rv->Set(nullptr);
  });
  // run_from_inputs(dev_type, dev_id, key0, array0, ...): set, run, and return every output as a
  // new array on that (host) device.
  Function run_from_inputs = MakeFromBody([ex](PackedArgs args, RetValue* rv) {
    if (args.size < 2 || args.size % 2 != 0) {
      Throw("TypeError",
            "run_from_inputs: expected a device type, a device id and key/array "
            "pairs, got " +
                std::to_string(args.size) + " arguments");
    }
    int64_t dev_type = IntArg("run_from_inputs", args, 0);
    int64_t dev_id = IntArg("run_from_inputs", args, 1);
    if (dev_type != kDLCPU && dev_type != kDLCUDAHost) {
      Throw("ValueError", "run_from_inputs: device type " + std::to_string(dev_type) +
                              " is not available (this runtime has CPU only)");
    }
    for (int i = 2; i < args.size; i += 2) {
      ex->SetInput(ex->ResolveInput("run_from_inputs", args[i]), args[i + 1]);
    }
    ex->Run();
    OwnedHandles<TVMArrayHandle, TVMArrayFree> outs;
    DLDevice host{static_cast<DLDeviceType>(dev_type), static_cast<int32_t>(dev_id)};
    for (int i = 0; i < ex->num_outputs(); ++i) outs.items.push_back(ex->CopyOutput(i, host));
    std::vector<TVMValue> values(outs.items.size());
    std::vector<int> codes(outs.items.size(), kTVMNDArrayHandle);
    for (size_t i = 0; i < values.size(); ++i) values[i].v_handle = outs.items[i];
    static Function make_array = Function::GetGlobalRequired("runtime.Array");
    Any arr = make_array.CallPacked(values.data(), codes.data(), static_cast<int>(values.size()));
    rv->Set(arr.as_object());
  });
  Function make = Function::GetGlobalRequired("runtime.ModuleFromFunctions");
  return make("GraphExecutor", "set_input", set_input, "run", run, "get_output", get_output,
              "get_input", get_input, "get_num_outputs", get_num_outputs, "get_num_inputs",
              get_num_inputs, "get_input_index", get_input_index, "load_params", load_params,
              "get_output_index", get_output_index, "get_input_info", get_input_info,
              "get_output_info", get_output_info, "set_input_zero_copy", set_input_zero_copy,
              "set_output_zero_copy", set_output_zero_copy, "share_params", share_params,
              "run_from_inputs", run_from_inputs);
}

// tvm.graph_executor.create(graph_json, lib, dev_type, dev_id) -> Module
void Create(PackedArgs args, RetValue* rv) {
  // TVM passes (graph_json, lib, dev_type, dev_id[, dev_type, dev_id ...]).
  if (args.size < 4 || args.size % 2 != 0) {
    Throw("TypeError",
          "tvm.graph_executor.create(graph_json, lib, dev_type, dev_id): "
          "expected 4 arguments (or more device pairs) but got " +
              std::to_string(args.size));
  }
  std::string graph_json;
  try {
    graph_json = args[0].as<std::string>();
  } catch (const Error&) {
    Throw("TypeError", std::string("tvm.graph_executor.create: argument 0 (graph_json) "
                                   "expected str but got ") +
                           TypeCodeName(args.codes[0]));
  }
  if (!IsModule(args.codes[1], args.values[1].v_handle)) {
    Throw("TypeError", std::string("tvm.graph_executor.create: argument 1 (lib) expected "
                                   "Module but got ") +
                           TypeCodeName(args.codes[1]));
  }
  DLDevice dev{kDLCPU, 0};
  for (int i = 2; i < args.size; i += 2) {
    int64_t type = IntArg("tvm.graph_executor.create", args, i);
    int64_t id = IntArg("tvm.graph_executor.create", args, i + 1);
    if (type != kDLCPU) {
      Throw("ValueError",
            "tvm.graph_executor.create: only CPU (device type 1) is supported, "
            "got device type " +
                std::to_string(type));
    }
    if (i == 2) dev.device_id = static_cast<int32_t>(id);
  }
  auto ex = std::make_shared<GraphExecutor>(graph_json, args.values[1].v_handle, dev);
  rv->Set(MakeExecutorModule(std::move(ex)));
}

POLYFFI_REGISTER_GLOBAL("tvm.graph_executor.create").set_body_packed(Create);

}  // namespace
}  // namespace graph_executor
}  // namespace polyffi
