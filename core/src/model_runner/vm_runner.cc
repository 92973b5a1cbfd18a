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
//   param_names(name)   the parameter names of VM function name, an Array of strings.
//   signature(name)     its parameters' names, dtypes and shapes, as JSON (signature.cc).
//   pool_size()         how many VMs the pool has made (diagnostics and tests).
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

 private:
  template <typename R>
  friend ObjectPtr<FunctionObj> model_runner::SharedFunction(R*, const std::string&, const char*);

 protected:
  ObjectPtr<FunctionObj> GetOwnFunction(const std::string& name) override {
    if (ObjectPtr<FunctionObj> f = SharedFunction(this, name, "vm")) return f;
    auto self = ObjectPtr<VMRunner>::Borrow(this);
    const std::string fname = "polyffi.VMRunner." + name;
    if (name == "param_names") {
      return MakeFunction(
          [self](const Args& args, RetValue* rv) {
            args.CheckArity(1);
            rv->SetObject(self->ParamNames(args.Str(0)));
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
