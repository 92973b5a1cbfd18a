// polyffi.runner.vm(lib, device_type, device_id[, memory_cfg]): a relax VM executable served by
// many threads at once (model_runner.h).
//
// The runner does what TVM's `relax.VirtualMachine` wrapper does for a caller, once and for every
// binding: `vm_load_executable` on the library, then `vm_initialization` with one
// (device_type, device_id, allocator) triple per device, the CPU last (the VM's host). Every VM
// of the pool is made that way over the same executable, so they share its constants (a model's
// bound weights) and the kernels; each has its own registers and frames.
//
// Functions of the runner module:
//   run(name, args...)  the VM function name on args, on a VM of the pool (thread-safe). Args
//                       are staged first: a DLTensor view (memory the caller owns) is copied into
//                       a compact, aligned array the call owns, and so is an NDArray whose data is
//                       not 64-byte aligned or not compact (TVM's kernels assume compact, aligned
//                       buffers without checking); Arrays are staged item by item. The result holds
//                       its own storage: it stays valid after later calls and never points into the
//                       caller's memory.
//   vm()                the runner's own VM for TVM's stateful API (set_input, invoke_stateful,
//                       get_output, save_function...): one caller at a time, as in TVM.
//   set_input(name, args...)  TVM's stateful API on the runner's own VM: its set_input.
//   set_input_named(name, n, p_0 .. p_{n-1}, key_0, value_0, ...)  set_input with n arguments by
//                       position and the rest by parameter name: TypeError naming unknown,
//                       repeated or missing parameters.
//   invoke_stateful(name)  the own VM's invoke_stateful.
//   get_outputs(name)   the result of the last invoke_stateful(name): an NDArray, or an Array
//                       (nested for nested tuples) built from get_output_arity / get_output.
//   param_names(name)   the parameter names of VM function name, an Array of strings.
//   signature(name)     its parameters' names, dtypes and shapes, as JSON (signature.cc).
//   pool_size()         how many VMs the pool has made (diagnostics and tests).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "../stored_args.h"
#include "model_runner.h"
#include "polyffi/container.h"
#include "polyffi/error.h"
#include "polyffi/ndarray.h"
#include "polyffi/registry.h"

namespace polyffi {
namespace model_runner {

ObjectPtr<ModuleObj> LoadVMExecutable(FunctionObj* load) {
  RetValue made;
  std::vector<TVMValue> none;
  std::vector<int> no_codes;
  CallWith(load, &none, &no_codes, &made);
  Object* o = made.object();
  if (o == nullptr || o->type_index() != TypeIndex::kModule) return nullptr;
  return ObjectPtr<ModuleObj>::Borrow(static_cast<ModuleObj*>(o));
}

bool InitializeVM(ModuleObj* vm, const std::vector<int64_t>& init) {
  ObjectPtr<FunctionObj> f = vm->GetFunction("vm_initialization", false);
  if (!f) return false;
  std::vector<TVMValue> values(init.size());
  std::vector<int> codes(init.size(), kTVMArgInt);
  for (size_t i = 0; i < init.size(); ++i) values[i].v_int64 = init[i];
  RetValue ignored;
  CallWith(f.get(), &values, &codes, &ignored);
  return true;
}
namespace {

constexpr uintptr_t kAlign = 64;

/*! \brief TVM's allocator kinds for vm_initialization: 1 naive, 2 pooled (TVM's default). */
int64_t AllocatorKind(const Args& args, int i) {
  if (args.size() <= i || args.code(i) == kTVMNullptr) return 2;
  if (args.code(i) == kTVMStr) {
    std::string s = args.Str(i);
    if (s == "naive") return 1;
    if (s == "pooled") return 2;
    Throw("ValueError", args.fname(),
          ": memory_cfg must be \"naive\" or \"pooled\" (the allocator), not \"", s, "\"");
  }
  int64_t k = args.Int(i);
  if (k != 1 && k != 2) {
    Throw("ValueError", args.fname(), ": allocator kind must be 1 (naive) or 2 (pooled), not ", k);
  }
  return k;
}

/*! \brief A compact copy of t (CPU, compact or strided) in a new 64-byte-aligned array. */
ObjectPtr<NDArrayObj> AlignedCopy(const DLTensor& t, int index) {
  int32_t dev = DeviceTypeOf(t.device);
  if (dev != kDLCPU && dev != kDLCUDAHost) {
    Throw("ValueError", "run: argument ", index, " is a tensor on device type ", dev,
          ", which this CPU runtime cannot read");
  }
  if (t.ndim < 0 || (t.ndim > 0 && t.shape == nullptr)) {
    Throw("ValueError", "run: argument ", index, " is a tensor without a valid shape");
  }
  size_t nbytes = CheckedBytes(t.shape, t.ndim, t.dtype);  // ValueError for a bad shape
  if (nbytes != 0 && t.data == nullptr) {
    Throw("ValueError", "run: argument ", index, " is a tensor with no data");
  }
  auto copy = NDArrayObj::Empty(std::vector<int64_t>(t.shape, t.shape + t.ndim), t.dtype,
                                DLDevice{kDLCPU, 0});
  if (nbytes == 0) return copy;
  CopyToCompact(("run: argument " + std::to_string(index)).c_str(), t, copy->tensor.data);
  return copy;
}

bool Aligned(const DLTensor& t) {
  return (reinterpret_cast<uintptr_t>(t.data) + t.byte_offset) % kAlign == 0;
}

/*! \brief The staged form of argument (v, code) into out (see the file comment). */
void Stage(TVMValue v, int code, int index, RetValue* out) {
  if (code == kTVMDLTensorHandle && v.v_handle != nullptr) {
    return out->SetObject(AlignedCopy(*static_cast<DLTensor*>(v.v_handle), index));
  }
  if (code == kTVMNDArrayHandle && v.v_handle != nullptr) {
    const DLTensor& t = *static_cast<DLTensor*>(v.v_handle);
    if (!Aligned(t) || !IsCompact(t)) return out->SetObject(AlignedCopy(t, index));
  }
  if (code == kTVMObjectHandle && v.v_handle != nullptr) {
    Object* o = ObjectOfArg(v, code);
    if (o->type_index() == TypeIndex::kArray) {
      auto* arr = static_cast<ArrayObj*>(o);
      ObjectPtr<ArrayObj> staged;
      for (size_t k = 0; k < arr->items.size(); ++k) {
        TVMValue iv;
        int ic;
        TVMByteArray scratch;
        arr->items[k].AsArg(&iv, &ic, &scratch);
        RetValue s;
        Stage(iv, ic, index, &s);
        bool changed = s.object() != arr->items[k].object() || ic == kTVMDLTensorHandle;
        if (changed && !staged) {
          staged = MakeObject<ArrayObj>();
          staged->items.resize(arr->items.size());
          for (size_t j = 0; j < k; ++j) staged->items[j].CopyFrom(arr->items[j]);
        }
        if (staged) staged->items[k] = std::move(s);
      }
      if (staged) return out->SetObject(std::move(staged));
    }
  }
  out->SetFromC(v, code);
}

class VMRunner final : public ModuleObj {
 public:
  VMRunner(ObjectPtr<FunctionObj> load, std::vector<int64_t> init)
      : load_(std::move(load)),
        init_(std::move(init)),
        pool_([this] { return MakeVM(); }),
        own_(MakeVM()) {}
  std::string type_key() const override { return "polyffi.VMRunner"; }

 protected:
  ObjectPtr<FunctionObj> GetOwnFunction(const std::string& name) override {
    auto self = ObjectPtr<VMRunner>::Borrow(this);
    const std::string fname = "polyffi.VMRunner." + name;
    if (name == "run") {
      return MakeFunction([self](const Args& args, RetValue* rv) { self->Run(args, rv); }, fname);
    }
    if (name == "pool_size") {
      return Accessor(
          [self](RetValue* rv) { rv->SetInt(static_cast<int64_t>(self->pool_.size())); }, fname);
    }
    if (name == "vm") return Accessor([self](RetValue* rv) { rv->SetObject(self->own_); }, fname);
    if (name == "param_names") {
      return MakeFunction(
          [self](const Args& args, RetValue* rv) {
            args.CheckArity(1);
            rv->SetObject(self->ParamNames(args.Str(0)));
          },
          fname);
    }
    if (name == "set_input" || name == "invoke_stateful") {
      return MakeFunction(
          [self, name](const Args& args, RetValue* rv) {
            args.CheckMinArity(1);
            std::vector<TVMValue> v(args.values(), args.values() + args.size());
            std::vector<int> c(args.codes(), args.codes() + args.size());
            CallWith(self->OwnFunction(name).get(), &v, &c, rv);
          },
          fname);
    }
    if (name == "set_input_named") {
      return MakeFunction([self](const Args& args, RetValue* rv) { self->SetInputNamed(args, rv); },
                          fname);
    }
    if (name == "get_outputs") {
      return MakeFunction(
          [self](const Args& args, RetValue* rv) {
            args.CheckArity(1);
            std::string fn = args.Str(0);
            self->Output(fn, {}, rv);
          },
          fname);
    }
    if (name == "signature") {
      return MakeFunction(
          [self](const Args& args, RetValue* rv) {
            args.CheckArity(1);
            std::string fn = args.Str(0);
            ObjectPtr<ArrayObj> params = self->ParamNames(fn);
            std::vector<std::string> names;
            for (const RetValue& v : params->items) {
              names.push_back(v.type_code() == kTVMStr ? v.str() : std::string());
            }
            rv->SetStr(VMSignature(self->own_.get(), fn, names));
          },
          fname);
    }
    return nullptr;
  }

 private:
  ObjectPtr<ModuleObj> MakeVM() const {
    ObjectPtr<ModuleObj> vm = LoadVMExecutable(load_.get());
    if (!vm) Throw("TypeError", "vm_load_executable did not return a module");
    if (!InitializeVM(vm.get(), init_)) Throw("TypeError", "the VM has no vm_initialization");
    return vm;
  }

  void Run(const Args& args, RetValue* rv) {
    args.CheckMinArity(1);
    std::string name = args.Str(0);
    const int n = args.size() - 1;
    std::vector<RetValue> staged(n);
    for (int i = 0; i < n; ++i) Stage(args.value(i + 1), args.code(i + 1), i, &staged[i]);
    StoredArgs c_args(staged);
    Lease vm(&pool_);
    FunctionObj* f = vm->Function(name, "the VM executable");
    RetValue result;
    CallWith(f, &c_args.values, &c_args.codes, &result);
    *rv = std::move(result);
  }

  ObjectPtr<FunctionObj> OwnFunction(const std::string& name) {
    ObjectPtr<FunctionObj> f = own_->GetFunction(name, false);
    if (!f) Throw("AttributeError", "the VM has no function '", name, "'");
    return f;
  }

  /*! \brief The output of fn at index (a path into nested tuples): an NDArray or an Array. */
  void Output(const std::string& fn, const std::vector<int64_t>& index, RetValue* rv) {
    std::vector<TVMValue> v(1 + index.size());
    std::vector<int> c(1 + index.size(), kTVMArgInt);
    v[0].v_str = fn.c_str();
    c[0] = kTVMStr;
    for (size_t i = 0; i < index.size(); ++i) v[1 + i].v_int64 = index[i];
    RetValue arity;
    CallWith(OwnFunction("get_output_arity").get(), &v, &c, &arity);
    if (arity.type_code() != kTVMArgInt)
      Throw("TypeError", "get_output_arity did not return an int");
    if (arity.value().v_int64 < 0) return CallWith(OwnFunction("get_output").get(), &v, &c, rv);
    auto arr = MakeObject<ArrayObj>();
    arr->items.resize(arity.value().v_int64);
    std::vector<int64_t> sub = index;
    sub.push_back(0);
    for (int64_t i = 0; i < arity.value().v_int64; ++i) {
      sub.back() = i;
      Output(fn, sub, &arr->items[i]);
    }
    rv->SetObject(std::move(arr));
  }

  /*! \brief set_input_named(name, n, positional..., key, value, ...): see the file comment. */
  void SetInputNamed(const Args& args, RetValue* rv) {
    const char* usage =
        "set_input_named: expected the function name, a count, that many positional values and "
        "key/value pairs";
    if (args.size() < 2 || args.code(1) != kTVMArgInt) Throw("TypeError", usage);
    const std::string fn = args.Str(0);
    const int64_t n = args.Int(1);
    if (n < 0 || n > args.size() - 2 || (args.size() - 2 - n) % 2 != 0) Throw("TypeError", usage);
    std::vector<std::string> names;
    ObjectPtr<ArrayObj> params = ParamNames(fn);
    for (const RetValue& p : params->items) {
      names.push_back(p.type_code() == kTVMStr ? p.str() : std::string());
    }
    std::vector<int> slot(names.size(), -1);  // per parameter: the argument that gives it
    for (int64_t i = 0; i < n && i < static_cast<int64_t>(slot.size()); ++i) slot[i] = 2 + i;
    std::vector<std::string> unknown, twice;
    for (int i = 2 + static_cast<int>(n); i < args.size(); i += 2) {
      if (args.code(i) != kTVMStr) Throw("TypeError", usage);
      std::string key = args.Str(i);
      auto it = std::find(names.begin(), names.end(), key);
      if (it == names.end()) {
        unknown.push_back(key);
      } else if (slot[it - names.begin()] >= 0) {
        twice.push_back(key);
      } else {
        slot[it - names.begin()] = i + 1;
      }
    }
    std::sort(unknown.begin(), unknown.end());
    if (!unknown.empty())
      Throw("TypeError", "set_input: ", fn, " has no parameter ", Join(unknown));
    if (!twice.empty()) Throw("TypeError", "set_input: parameter ", Join(twice), " given twice");
    std::vector<std::string> missing;
    for (size_t p = 0; p < slot.size(); ++p) {
      if (slot[p] < 0) missing.push_back(names[p]);
    }
    if (!missing.empty()) {
      Throw("TypeError", "set_input: missing parameter ", Join(missing));
    }
    // In parameter order; positional values beyond the parameters go last (the VM reports them).
    std::vector<TVMValue> v(1);
    std::vector<int> c{kTVMStr};
    v[0].v_str = fn.c_str();
    for (int a : slot) {
      v.push_back(args.value(a));
      c.push_back(args.code(a));
    }
    for (int64_t i = static_cast<int64_t>(slot.size()); i < n; ++i) {
      v.push_back(args.value(2 + i));
      c.push_back(args.code(2 + i));
    }
    CallWith(OwnFunction("set_input").get(), &v, &c, rv);
  }

  static std::string Join(const std::vector<std::string>& names) {
    std::string s;
    for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
    return s;
  }

  ObjectPtr<ArrayObj> ParamNames(const std::string& fn) {
    auto arity = own_->GetFunction("get_function_arity", false);
    auto param = own_->GetFunction("get_function_param_name", false);
    if (!arity || !param) Throw("TypeError", "the VM has no get_function_arity");
    std::vector<TVMValue> v(2);
    std::vector<int> c{kTVMStr, kTVMArgInt};
    v[0].v_str = fn.c_str();
    v.resize(1);
    c.resize(1);
    RetValue count;
    CallWith(arity.get(), &v, &c, &count);
    auto out = MakeObject<ArrayObj>();
    v.resize(2);
    c = {kTVMStr, kTVMArgInt};
    for (int64_t i = 0; i < count.value().v_int64; ++i) {
      v[1].v_int64 = i;
      RetValue name;
      CallWith(param.get(), &v, &c, &name);
      out->items.push_back(std::move(name));
    }
    return out;
  }

  ObjectPtr<FunctionObj> load_;
  std::vector<int64_t> init_;
  ExecutorPool pool_;
  ObjectPtr<ModuleObj> own_;
};

// polyffi.runner.vm(lib, device_type, device_id[, memory_cfg]) -> Module
POLYFFI_CORE_GLOBAL("polyffi.runner.vm", [](const Args& args, RetValue* rv) {
  if (args.size() < 3 || args.size() > 4) {
    Throw("TypeError", args.fname(),
          ": expected (lib, device_type, device_id[, memory_cfg]) but got ", args.size(),
          " arguments");
  }
  ObjectPtr<ModuleObj> lib = args.ObjAs<ModuleObj>(0);
  DLDevice dev = CheckDevice(args.fname(), args.Int(1), args.Int(2));
  int64_t alloc = AllocatorKind(args, 3);
  ObjectPtr<FunctionObj> load = lib->GetFunction("vm_load_executable", true);
  if (!load) {
    const std::string key = lib->type_key();
    const bool graph = key.rfind("GraphExecutor", 0) == 0 || key.rfind("GraphRuntime", 0) == 0;
    Throw("TypeError", args.fname(), ": a ", key,
          " module is not a relax VM executable (it has no vm_load_executable)",
          graph ? "; a TVM 0.18 graph export runs as a GraphModule (polyffi.runner.graph)" : "");
  }
  std::vector<int64_t> init{static_cast<int64_t>(dev.device_type), dev.device_id, alloc};
  // TVM's wrapper adds the CPU for host-side work when the device is another one.
  if (dev.device_type != kDLCPU) init.insert(init.end(), {kDLCPU, 0, alloc});
  rv->SetObject(MakeObject<VMRunner>(std::move(load), std::move(init)));
});

}  // namespace
}  // namespace model_runner
}  // namespace polyffi
