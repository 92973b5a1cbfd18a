// The runners' `signature`: what a model takes and returns (names, dtypes, shapes), as JSON, for
// servers that describe a model to their clients (the Open Inference Protocol's model metadata).
//
//   {"inputs": [{"name": "data", "dtype": "float32", "shape": [1, 64]}, ...],
//    "outputs": [{"name": "output_0", "dtype": "float32", "shape": [1, 10]}, ...]}
//
// A graph model's come from its executor: the storage of each input and output (static shapes).
// A relax VM function's inputs come from the checks TVM compiles at the top of the function:
// vm.builtin.check_tensor_info(param, ndim, dtype) and vm.builtin.match_shape(param, heap, ndim,
// (code, value)...) where code 0 is a constant dimension and every other code a symbolic one
// (-1). A parameter without those checks has "dtype": null and "shape": null. The executable
// records nothing about the result, so a VM signature's "outputs" is null.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model_runner.h"
#include "polyffi/error.h"
#include "polyffi/ndarray.h"
#include "relax_vm/relax_vm.h"

namespace polyffi {
namespace model_runner {
namespace {

nlohmann::json TensorInfo(const std::string& name, const RetValue& v, const char* what) {
  if (v.type_code() != kTVMNDArrayHandle && v.type_code() != kTVMDLTensorHandle) {
    Throw("TypeError", what, " is not an array");
  }
  // A returned NDArray is held as its object; a DLTensor handle is the tensor itself.
  const DLTensor* t = v.type_code() == kTVMNDArrayHandle
                          ? static_cast<NDArrayObj*>(v.object())->handle()
                          : static_cast<const DLTensor*>(v.value().v_handle);
  nlohmann::json shape = nlohmann::json::array();
  for (int i = 0; i < t->ndim; ++i) shape.push_back(t->shape[i]);
  return {{"name", name}, {"dtype", DataTypeName(t->dtype)}, {"shape", shape}};
}

RetValue CallOn(ModuleObj* m, const char* fn, std::vector<TVMValue> values,
                std::vector<int> codes) {
  ObjectPtr<FunctionObj> f = m->GetFunction(fn, false);
  if (!f) Throw("AttributeError", "the executor has no function '", fn, "'");
  RetValue rv;
  CallWith(f.get(), &values, &codes, &rv);
  return rv;
}

// An integer argument of a call: an immediate, or an int constant. False for anything else.
bool IntOf(const relax_vm::Executable& exec, const relax_vm::InstrArg& a, int64_t* out) {
  if (a.kind == relax_vm::ArgKind::kImmediate) {
    *out = a.value;
    return true;
  }
  if (a.kind == relax_vm::ArgKind::kConstIdx && a.value >= 0 &&
      static_cast<size_t>(a.value) < exec.constants.size() &&
      exec.constants[a.value].type_code() == kTVMArgInt) {
    *out = exec.constants[a.value].value().v_int64;
    return true;
  }
  return false;
}

// The dtype a constant argument names ("" when it names none).
std::string DTypeOf(const relax_vm::Executable& exec, const relax_vm::InstrArg& a) {
  if (a.kind != relax_vm::ArgKind::kConstIdx || a.value < 0 ||
      static_cast<size_t>(a.value) >= exec.constants.size()) {
    return "";
  }
  const RetValue& c = exec.constants[a.value];
  if (c.type_code() == kTVMDataType) return DataTypeName(c.value().v_type);
  if (c.type_code() == kTVMStr) return c.str();
  return "";
}

}  // namespace

std::string GraphSignature(ModuleObj* executor, const std::vector<std::string>& inputs,
                           int64_t num_outputs) {
  nlohmann::json in = nlohmann::json::array(), out = nlohmann::json::array();
  for (const std::string& name : inputs) {
    TVMValue v;
    v.v_str = name.c_str();
    in.push_back(TensorInfo(name, CallOn(executor, "get_input", {v}, {kTVMStr}), "get_input"));
  }
  for (int64_t i = 0; i < num_outputs; ++i) {
    TVMValue v;
    v.v_int64 = i;
    out.push_back(TensorInfo("output_" + std::to_string(i),
                             CallOn(executor, "get_output", {v}, {kTVMArgInt}), "get_output"));
  }
  return nlohmann::json{{"inputs", in}, {"outputs", out}}.dump();
}

std::string VMSignature(ModuleObj* vm, const std::string& fn,
                        const std::vector<std::string>& param_names) {
  using relax_vm::ArgKind;
  using relax_vm::FuncInfo;
  const relax_vm::Executable* exec = relax_vm::ExecutableOf(vm);
  if (exec == nullptr) Throw("TypeError", "signature: the runner's VM is not a relax VM");
  auto it = exec->func_map.find(fn);
  if (it == exec->func_map.end() || exec->funcs[it->second].kind != FuncInfo::kVMFunc) {
    Throw("AttributeError", "signature: the executable has no VM function '", fn, "'");
  }
  const FuncInfo& f = exec->funcs[it->second];
  const int64_t n = f.num_args;
  std::vector<std::string> dtypes(n);
  std::vector<int64_t> ndims(n, -1);
  std::vector<std::vector<int64_t>> dims(n);
  std::vector<bool> matched(n, false);
  for (int64_t pc = f.start_instr; pc < f.end_instr; ++pc) {
    const relax_vm::Instr& in = exec->instrs[pc];
    if (in.op != relax_vm::Opcode::kCall || in.num_args < 3 || in.b < 0 ||
        static_cast<size_t>(in.b) >= exec->funcs.size()) {
      continue;
    }
    const relax_vm::InstrArg* a = &exec->args[in.arg_begin];
    if (a[0].kind != ArgKind::kRegister || a[0].value < 0 || a[0].value >= n) continue;
    const int64_t p = a[0].value;
    const std::string& callee = exec->funcs[in.b].name;
    int64_t k = 0;
    if (callee == "vm.builtin.check_tensor_info" && dtypes[p].empty()) {
      if (IntOf(*exec, a[1], &k)) ndims[p] = k;
      if (in.num_args == 4) dtypes[p] = DTypeOf(*exec, a[2]);
    } else if (callee == "vm.builtin.match_shape" && !matched[p] && IntOf(*exec, a[2], &k) &&
               k >= 0 && 3 + 2 * static_cast<uint64_t>(k) <= in.num_args) {
      matched[p] = true;
      for (int64_t d = 0; d < k; ++d) {
        int64_t code = -1, value = -1;
        IntOf(*exec, a[3 + 2 * d], &code);
        IntOf(*exec, a[4 + 2 * d], &value);
        dims[p].push_back(code == 0 ? value : -1);
      }
    }
  }
  nlohmann::json in = nlohmann::json::array();
  for (int64_t p = 0; p < n; ++p) {
    nlohmann::json shape = nullptr;
    if (matched[p]) {
      shape = dims[p];
    } else if (ndims[p] >= 0) {
      shape = std::vector<int64_t>(ndims[p], -1);
    }
    nlohmann::json dtype = nullptr;
    if (!dtypes[p].empty()) dtype = dtypes[p];
    std::string name =
        static_cast<size_t>(p) < param_names.size() ? param_names[p] : "arg" + std::to_string(p);
    in.push_back({{"name", name}, {"dtype", dtype}, {"shape", shape}});
  }
  return nlohmann::json{{"inputs", in}, {"outputs", nullptr}}.dump();
}

}  // namespace model_runner
}  // namespace polyffi
