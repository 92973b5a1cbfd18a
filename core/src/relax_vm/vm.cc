// The relax VM module ("relax.VirtualMachine") and its interpreter: docs/spec/tvm-formats.md
// part 2, sections 4.1 (module protocol) and 4.2 (semantics), as TVM 0.27's vm.cc behaves.
//
// Everything that can be done once is done in vm_initialization: the function pool is resolved
// (kernel library first, then the global registry), and every call argument that is not a
// register (immediates, constants, functions, %vm, %void) is turned into its TVMValue and type
// code, so a Call only copies those and reads its registers. Frames (register files and the
// argument arrays) are kept and reused from call to call. A VM is used by one caller at a time
// (a recursive lock: a kernel may call back into the same VM on its own thread).
#include <cstring>
#include <mutex>

#include "../stored_args.h"
#include "polyffi/async.h"
#include "polyffi/error.h"
#include "polyffi/registry.h"
#include "relax_vm.h"

namespace polyffi {
namespace relax_vm {

class VirtualMachine final : public ModuleObj {
 public:
  explicit VirtualMachine(ObjectPtr<ExecutableModule> exec)
      : exec_mod_(std::move(exec)), exec_(exec_mod_->exec().get()) {}
  ~VirtualMachine() override = default;
  std::string type_key() const override { return "relax.VirtualMachine"; }
  const Executable* executable() const { return exec_; }

  std::vector<DLDevice> devices;
  std::vector<Allocator*> allocators;

 protected:
  ObjectPtr<FunctionObj> GetOwnFunction(const std::string& name) override;

 private:
  struct PoolEntry {
    int64_t vm_func = -1;           // a bytecode function of the executable, or
    ObjectPtr<FunctionObj> packed;  // a kernel or a global function
    RetValue value;                 // what a function-index argument passes
  };
  struct Frame {
    std::vector<RetValue> regs;
    std::vector<TVMValue> values;
    std::vector<int> codes;
    std::vector<TVMByteArray> bytes;
  };
  /*! \brief Marks this VM as running on this thread (ContextVM checks the chain). */
  struct ActiveGuard {
    explicit ActiveGuard(VirtualMachine* vm) : vm(vm), prev(active) { active = this; }
    ~ActiveGuard() { active = prev; }
    VirtualMachine* vm;
    ActiveGuard* prev;
    static thread_local ActiveGuard* active;
  };
  friend VirtualMachine* ContextVM(const Args& args, int i);
  friend void InvokeClosureOn(VirtualMachine* vm, Object* callee, TVMValue* values, int* codes,
                              int n, RetValue* rv);

  void Init(const Args& args);
  void CheckInit() const {
    if (!initialized_) {
      Throw("RuntimeError", "the VM is not initialised: call vm_initialization first");
    }
  }
  int64_t FindFunction(const std::string& name) const {
    auto it = exec_->func_map.find(name);
    if (it == exec_->func_map.end()) Throw("ValueError", "Unknown function: ", name);
    return it->second;
  }
  const FuncInfo& LookupVMFuncInfo(const std::string& name) const {
    const FuncInfo& f = exec_->funcs[FindFunction(name)];
    return f;
  }
  /*! \brief Run bytecode function fidx on these arguments. */
  void InvokeBytecode(int64_t fidx, const TVMValue* values, const int* codes, int n, RetValue* rv);
  __attribute__((always_inline)) inline void RunCall(Frame* frame, const Instr& in);
  /*! \brief Call a function or closure (args, then the closure's bound arguments). */
  void InvokeClosure(Object* callee, TVMValue* values, int* codes, int n, RetValue* rv);
  /*! \brief Call from outside: lock, check, mark active. */
  template <typename F>
  void Entry(F body) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    CheckInit();
    ActiveGuard guard(this);
    body();
  }
  /*! \brief set_input/save_function: DLTensor views are copied into arrays of the VM. */
  void ConvertArg(TVMValue v, int code, RetValue* out);
  const RetValue& LookupOutput(const Args& args);
  ObjectPtr<ClosureObj> GetClosure(const std::string& name);

  ObjectPtr<ExecutableModule> exec_mod_;
  const Executable* exec_;
  std::recursive_mutex mu_;
  bool initialized_ = false;
  std::vector<PoolEntry> func_pool_;
  // Per argument of exec_->args: its value and code when it is not a plain register.
  std::vector<TVMValue> arg_values_;
  std::vector<int> arg_codes_;
  std::vector<std::unique_ptr<Frame>> frames_;
  size_t depth_ = 0;
  std::unordered_map<std::string, std::vector<RetValue>> inputs_;
  std::unordered_map<std::string, RetValue> outputs_;
  std::unordered_map<std::string, ObjectPtr<ClosureObj>> saved_;
};

thread_local VirtualMachine::ActiveGuard* VirtualMachine::ActiveGuard::active = nullptr;

namespace {
constexpr size_t kMaxDepth = 512;  // nested bytecode calls (recursion in the program)
}  // namespace

VirtualMachine* ContextVM(const Args& args, int i) {
  if (args.code(i) == kTVMOpaqueHandle) {
    void* p = args.value(i).v_handle;
    for (auto* g = VirtualMachine::ActiveGuard::active; g != nullptr; g = g->prev) {
      if (static_cast<void*>(g->vm) == p) return g->vm;
    }
  }
  Throw("ValueError", args.fname(), ": argument ", i,
        " must be the context of a VM running on this thread (the %vm register)");
}

void InvokeClosureOn(VirtualMachine* vm, Object* callee, TVMValue* values, int* codes, int n,
                     RetValue* rv) {
  vm->InvokeClosure(callee, values, codes, n, rv);
}

void VMDevice(VirtualMachine* vm, int64_t index, DLDevice* dev, Allocator** alloc) {
  int64_t n = static_cast<int64_t>(vm->devices.size());
  if (index == -1) index = n - 1;  // the host: always the last device
  if (index < 0 || index >= n) {
    Throw("ValueError", "device index ", index, " is out of the VM's ", n, " devices");
  }
  *dev = vm->devices[index];
  *alloc = vm->allocators[index];
}

ObjectPtr<ModuleObj> MakeVirtualMachine(ObjectPtr<ExecutableModule> exec) {
  return MakeObject<VirtualMachine>(std::move(exec));
}

const Executable* ExecutableOf(ModuleObj* vm) {
  if (vm == nullptr || vm->type_key() != "relax.VirtualMachine") return nullptr;
  return static_cast<VirtualMachine*>(vm)->executable();
}

void VirtualMachine::Init(const Args& args) {
  if (args.size() == 0 || args.size() % 3 != 0) {
    Throw("TypeError", args.fname(),
          ": expected (device_type, device_id, alloc_type) triples but got ", args.size(),
          " arguments");
  }
  std::vector<DLDevice> devs;
  std::vector<Allocator*> allocs;
  for (int i = 0; i < args.size(); i += 3) {
    int64_t type = args.Int(i), id = args.Int(i + 1), kind = args.Int(i + 2);
    if (type != kDLCPU) {
      Throw("ValueError", "device type ", type, " is not available (this runtime has CPU only)");
    }
    if (id != 0) Throw("ValueError", "CPU device id ", id, " does not exist (only 0)");
    devs.push_back(DLDevice{kDLCPU, 0});
    allocs.push_back(Allocator::Get(static_cast<int>(kind)));
  }
  // The function pool: kernels from the imports first, then the global registry.
  const size_t nf = exec_->funcs.size();
  std::vector<PoolEntry> pool(nf);
  std::vector<ObjectPtr<ModuleObj>> imports = exec_mod_->imports();
  for (size_t i = 0; i < nf; ++i) {
    const FuncInfo& info = exec_->funcs[i];
    PoolEntry& e = pool[i];
    if (info.kind == FuncInfo::kPackedFunc) {
      for (const auto& m : imports) {
        e.packed = m->GetFunction(info.name, true);
        if (e.packed) break;
      }
      if (!e.packed) e.packed = Registry::Global()->Get(info.name);
      if (!e.packed) {
        Throw("AttributeError", "cannot find function '", info.name,
              "' in the relax VM's kernel library or in the global registry");
      }
      e.value.SetObject(e.packed);
    } else if (info.kind == FuncInfo::kVMFunc) {
      e.vm_func = static_cast<int64_t>(i);
      auto clo = MakeObject<ClosureObj>();
      clo->func_name = info.name;
      clo->vm_func = e.vm_func;
      clo->exec = exec_mod_->exec();
      e.value.SetObject(std::move(clo));
    } else {
      Throw("RuntimeError", "function '", info.name,
            "' is a VM TIR function (compiled with exec_mode=\"compiled\"), which this runtime "
            "does not run; compile with exec_mode=\"bytecode\"");
    }
  }
  // Every non-register argument, once.
  const size_t na = exec_->args.size();
  std::vector<TVMValue> values(na);
  std::vector<int> codes(na);
  TVMByteArray unused;
  for (size_t k = 0; k < na; ++k) {
    const InstrArg& a = exec_->args[k];
    switch (a.kind) {
      case ArgKind::kRegister:
        if (a.value == kVMRegister) {
          values[k].v_handle = static_cast<void*>(this);
          codes[k] = kTVMOpaqueHandle;
        } else {  // %void, or a register filled at run time
          values[k].v_handle = nullptr;
          codes[k] = kTVMNullptr;
        }
        break;
      case ArgKind::kImmediate:
        values[k].v_int64 = a.value;
        codes[k] = kTVMArgInt;
        break;
      case ArgKind::kConstIdx:
        exec_->constants[a.value].AsArg(&values[k], &codes[k], &unused);
        break;
      case ArgKind::kFuncIdx:
        pool[a.value].value.AsArg(&values[k], &codes[k], &unused);
        break;
    }
  }
  devices = std::move(devs);
  allocators = std::move(allocs);
  func_pool_ = std::move(pool);
  arg_values_ = std::move(values);
  arg_codes_ = std::move(codes);
  initialized_ = true;
}

void VirtualMachine::InvokeBytecode(int64_t fidx, const TVMValue* values, const int* codes, int n,
                                    RetValue* rv) {
  const FuncInfo& f = exec_->funcs[fidx];
  if (n != f.num_args) {
    std::string names;
    for (size_t i = 0; i < f.param_names.size(); ++i) {
      names += (i ? ", " : " (") + f.param_names[i] + (i + 1 == f.param_names.size() ? ")" : "");
    }
    Throw("TypeError", "Invoking function ", f.name, " expects ", f.num_args, " arguments", names,
          ", but ", n, " arguments were provided.");
  }
  if (depth_ >= kMaxDepth) {
    Throw("RuntimeError", "relax VM: calls nested deeper than ", kMaxDepth, " in ", f.name);
  }
  if (frames_.size() <= depth_) frames_.push_back(std::make_unique<Frame>());
  Frame* frame = frames_[depth_].get();
  const size_t nreg = static_cast<size_t>(f.register_file_size);
  if (frame->regs.size() < nreg) frame->regs.resize(nreg);
  size_t nargs = std::max<size_t>(exec_->max_call_args, 1);
  if (frame->values.size() < nargs) {
    frame->values.resize(nargs);
    frame->codes.resize(nargs);
    frame->bytes.resize(nargs);
  }
  struct FrameGuard {
    VirtualMachine* vm;
    Frame* frame;
    size_t nreg;
    ~FrameGuard() {
      for (size_t i = 0; i < nreg; ++i) frame->regs[i].Clear();
      --vm->depth_;
    }
  } guard{this, frame, nreg};
  ++depth_;
  for (int i = 0; i < n; ++i) frame->regs[i].SetFromC(values[i], codes[i]);

  int64_t pc = f.start_instr;
  const int64_t end = f.end_instr;
  const Instr* instrs = exec_->instrs.data();
  while (true) {
    if (__builtin_expect(pc >= end, 0)) {
      Throw("RuntimeError", "relax VM: function ", f.name, " ran past its last instruction");
    }
    const Instr& in = instrs[pc];
    switch (in.op) {
      case Opcode::kCall:
        // A cancelled async call (polyffi/async.h) stops before its next call instruction.
        if (__builtin_expect(async::CancelRequested(), 0)) {
          Throw("CancelledError", "the async call was cancelled while it ran (relax VM, ", f.name,
                ")");
        }
        RunCall(frame, in);
        ++pc;
        break;
      case Opcode::kRet:
        if (in.a == kVMRegister) {
          rv->SetHandle(static_cast<void*>(this));
        } else if (in.a == kVoidRegister) {
          rv->SetNull();
        } else {
          *rv = std::move(frame->regs[in.a]);
        }
        return;
      case Opcode::kGoto:
        pc += in.a;
        break;
      case Opcode::kIf: {
        const RetValue& c = frame->regs[in.a];
        int code = c.type_code();
        if (code != kTVMArgInt && code != kTVMArgBool) {
          Throw("TypeError", "relax VM: the condition of an If in ", f.name,
                " must be an int or bool, got ", TypeCodeName(code));
        }
        pc += c.value().v_int64 != 0 ? 1 : in.b;
        break;
      }
    }
  }
}

inline void VirtualMachine::RunCall(Frame* frame, const Instr& in) {
  TVMValue* values = frame->values.data();
  int* codes = frame->codes.data();
  const int n = static_cast<int>(in.num_args);
  // Everything but the registers was prepared at initialisation; then the registers.
  if (n != 0) {
    std::memcpy(values, arg_values_.data() + in.arg_begin, n * sizeof(TVMValue));
    std::memcpy(codes, arg_codes_.data() + in.arg_begin, n * sizeof(int));
  }
  const RegPatch* p = exec_->patches.data() + in.patch_begin;
  const RegPatch* p_end = p + in.num_patches;
  for (; p != p_end; ++p) {
    const RetValue& r = frame->regs[p->reg];
    const int code = r.type_code();
    if (code == kTVMNDArrayHandle) {
      values[p->slot].v_handle = &static_cast<NDArrayObj*>(r.object())->tensor;
      codes[p->slot] = code;
    } else if (code == kTVMStr || code == kTVMBytes) {
      r.AsArg(&values[p->slot], &codes[p->slot], &frame->bytes[p->slot]);
    } else {
      values[p->slot] = r.value();
      codes[p->slot] = code;
    }
  }
  const PoolEntry& e = func_pool_[in.b];
  RetValue ret;
  if (e.vm_func >= 0) {
    InvokeBytecode(e.vm_func, values, codes, n, &ret);
  } else {
    e.packed->Call(values, codes, n, &ret);
  }
  if (in.a < kBeginSpecialReg) frame->regs[in.a] = std::move(ret);
}

void VirtualMachine::InvokeClosure(Object* callee, TVMValue* values, int* codes, int n,
                                   RetValue* rv) {
  if (callee != nullptr && callee->type_index() == TypeIndex::kFunction) {
    return static_cast<FunctionObj*>(callee)->Call(values, codes, n, rv);
  }
  if (callee == nullptr || callee->type_index() != ClosureObj::RuntimeTypeIndex()) {
    Throw("TypeError", "invoke_closure: expected a function or a VM closure");
  }
  auto* clo = static_cast<ClosureObj*>(callee);
  if (clo->vm_func >= 0 && clo->exec.get() != exec_) {
    Throw("ValueError", "invoke_closure: the closure of '", clo->func_name,
          "' belongs to another executable");
  }
  size_t total = static_cast<size_t>(n) + clo->bound_args.size();
  std::vector<TVMValue> v(values, values + n);
  std::vector<int> c(codes, codes + n);
  std::vector<TVMByteArray> bytes(clo->bound_args.size());
  v.resize(total);
  c.resize(total);
  for (size_t i = 0; i < clo->bound_args.size(); ++i) {
    clo->bound_args[i].AsArg(&v[n + i], &c[n + i], &bytes[i]);
  }
  RetValue result;
  if (clo->vm_func >= 0) {
    InvokeBytecode(clo->vm_func, v.data(), c.data(), static_cast<int>(total), &result);
  } else {
    clo->packed->Call(v.data(), c.data(), static_cast<int>(total), &result);
  }
  if (clo->include_return) *rv = std::move(result);
}

void VirtualMachine::ConvertArg(TVMValue v, int code, RetValue* out) {
  if (code == kTVMDLTensorHandle && v.v_handle != nullptr) {
    // A borrowed view: copy it into an array the VM owns (as TVM's set_input does); a strided
    // one is gathered, as TVM's frontends make it contiguous first.
    const DLTensor& src = *static_cast<DLTensor*>(v.v_handle);
    if (DeviceTypeOf(src.device) != kDLCPU && DeviceTypeOf(src.device) != kDLCUDAHost) {
      Throw("ValueError", "set_input: a tensor on device type ", DeviceTypeOf(src.device),
            " cannot be read by this CPU runtime");
    }
    size_t nbytes = CheckedBytes(src.shape, src.ndim, src.dtype);
    if (nbytes != 0 && src.data == nullptr) {
      Throw("ValueError", "set_input: a tensor of ", nbytes, " bytes has no data (NULL)");
    }
    auto dst = NDArrayObj::Empty(std::vector<int64_t>(src.shape, src.shape + src.ndim), src.dtype,
                                 devices[0]);
    CopyToCompact("set_input", src, dst->tensor.data);
    out->SetObject(std::move(dst));
    return;
  }
  out->SetFromC(v, code);
}

const RetValue& VirtualMachine::LookupOutput(const Args& args) {
  std::string name = args.Str(0);
  auto it = outputs_.find(name);
  if (it == outputs_.end()) {
    Throw("ValueError", "No output saved for call of \"", name,
          "\"; use `invoke_stateful` to call it first.");
  }
  const RetValue* obj = &it->second;
  for (int i = 1; i < args.size(); ++i) {
    Object* o = obj->object();
    if (o == nullptr || o->type_index() != TypeIndex::kArray) {
      Throw("ValueError", "Attempted to index into an object that is not an Array.");
    }
    auto* arr = static_cast<ArrayObj*>(o);
    int64_t index = args.Int(i);
    if (index < 0 || index >= static_cast<int64_t>(arr->items.size())) {
      Throw("IndexError", "Invalid index (", index, " >= ", arr->items.size(), ").");
    }
    obj = &arr->items[index];
  }
  return *obj;
}

ObjectPtr<ClosureObj> VirtualMachine::GetClosure(const std::string& name) {
  auto saved = saved_.find(name);
  if (saved != saved_.end()) return saved->second;
  int64_t fidx = FindFunction(name);
  if (exec_->funcs[fidx].kind != FuncInfo::kVMFunc) {
    Throw("ValueError", "'", name, "' is not a VM function of the executable");
  }
  auto clo = MakeObject<ClosureObj>();
  clo->func_name = name;
  clo->vm_func = fidx;
  clo->exec = exec_mod_->exec();
  return clo;
}

ObjectPtr<FunctionObj> VirtualMachine::GetOwnFunction(const std::string& name) {
  auto self = ObjectPtr<VirtualMachine>::Borrow(this);
  const std::string fname = "relax.VirtualMachine." + name;
  if (name == "vm_initialization") {
    return MakeFunction(
        [self](const Args& args, RetValue*) {
          std::lock_guard<std::recursive_mutex> lock(self->mu_);
          self->Init(args);
        },
        fname);
  }
  if (name == "invoke_stateful") {
    return MakeFunction(
        [self](const Args& args, RetValue*) {
          args.CheckArity(1);
          std::string fn = args.Str(0);
          self->Entry([&] {
            int64_t fidx = self->FindFunction(fn);
            auto in = self->inputs_.find(fn);
            if (in == self->inputs_.end()) {
              Throw("ValueError", "No inputs set for stateful call of ", fn,
                    "; use `set_input` first.");
            }
            StoredArgs a(in->second);
            RetValue out;
            self->InvokeClosure(self->func_pool_[fidx].value.object(), a.values.data(),
                                a.codes.data(), a.size(), &out);
            self->outputs_[fn] = std::move(out);
          });
        },
        fname);
  }
  if (name == "set_input") {
    return MakeFunction(
        [self](const Args& args, RetValue*) {
          args.CheckMinArity(1);
          std::string fn = args.Str(0);
          self->Entry([&] {
            const FuncInfo& f = self->LookupVMFuncInfo(fn);
            if (args.size() - 1 != f.num_args) {
              Throw("TypeError", "set_input: ", fn, " takes ", f.num_args, " arguments but ",
                    args.size() - 1, " were given");
            }
            std::vector<RetValue> in(args.size() - 1);
            for (int i = 1; i < args.size(); ++i) {
              self->ConvertArg(args.value(i), args.code(i), &in[i - 1]);
            }
            self->inputs_[fn] = std::move(in);
          });
        },
        fname);
  }
  // get_output(fn, index...) and get_output_arity(fn, index...): a stateful call's output, or
  // its tuple size (-1 for a single value).
  if (name == "get_output" || name == "get_output_arity") {
    const bool arity = name == "get_output_arity";
    return MakeFunction(
        [self, arity](const Args& args, RetValue* rv) {
          args.CheckMinArity(1);
          std::lock_guard<std::recursive_mutex> lock(self->mu_);
          const RetValue& out = self->LookupOutput(args);
          Object* o = out.object();
          const bool tuple = o != nullptr && o->type_index() == TypeIndex::kArray;
          if (arity) {
            return rv->SetInt(tuple ? static_cast<int64_t>(static_cast<ArrayObj*>(o)->items.size())
                                    : -1);
          }
          if (tuple) {
            Throw("ValueError",
                  "`get_output` cannot return a tuple for RPC compatibility. Please specify "
                  "another index argument.");
          }
          rv->CopyFrom(out);
        },
        fname);
  }
  if (name == "get_function_arity") {
    return MakeFunction(
        [self](const Args& args, RetValue* rv) {
          args.CheckArity(1);
          rv->SetInt(static_cast<int64_t>(self->LookupVMFuncInfo(args.Str(0)).param_names.size()));
        },
        fname);
  }
  if (name == "get_function_param_name") {
    return MakeFunction(
        [self](const Args& args, RetValue* rv) {
          args.CheckArity(2);
          std::string fn = args.Str(0);
          const FuncInfo& f = self->LookupVMFuncInfo(fn);
          int64_t i = args.Int(1);
          if (i < 0 || i >= static_cast<int64_t>(f.param_names.size())) {
            Throw("ValueError", "Invalid index for ", fn, " (", i, " out of ", f.param_names.size(),
                  ")");
          }
          rv->SetStr(f.param_names[i]);
        },
        fname);
  }
  if (name == "save_function") {
    return MakeFunction(
        [self](const Args& args, RetValue*) {
          args.CheckMinArity(3);
          std::string fn = args.Str(0), saved = args.Str(1);
          bool include_return = args.Bool(2);
          self->Entry([&] {
            ObjectPtr<ClosureObj> base = self->GetClosure(fn);
            // Bound arguments fill the function's last parameters: more than it takes could
            // never be called, and saving a closure onto its own name again and again would
            // otherwise grow it without limit (fuzz_globals long run).
            const size_t bound = base->bound_args.size() + static_cast<size_t>(args.size() - 3);
            if (base->vm_func >= 0 && base->exec != nullptr &&
                bound > static_cast<size_t>(base->exec->funcs[base->vm_func].num_args)) {
              Throw("ValueError", "save_function: ", bound, " arguments bound but '", fn,
                    "' takes ", base->exec->funcs[base->vm_func].num_args);
            }
            auto clo = MakeObject<ClosureObj>();
            clo->func_name = saved;
            clo->vm_func = base->vm_func;
            clo->exec = base->exec;
            clo->packed = base->packed;
            clo->include_return = include_return && base->include_return;
            clo->bound_args.resize(args.size() - 3);
            for (int i = 3; i < args.size(); ++i) {
              self->ConvertArg(args.value(i), args.code(i), &clo->bound_args[i - 3]);
            }
            for (const RetValue& b : base->bound_args) {
              clo->bound_args.emplace_back();
              clo->bound_args.back().CopyFrom(b);
            }
            self->saved_[saved] = std::move(clo);
          });
        },
        fname);
  }
  if (name == "invoke_closure") {
    return MakeFunction(
        [self](const Args& args, RetValue* rv) {
          args.CheckMinArity(1);
          Object* callee =
              IsObjectCode(args.code(0)) ? ObjectOfArg(args.value(0), args.code(0)) : nullptr;
          self->Entry([&] {
            self->InvokeClosure(callee, const_cast<TVMValue*>(args.values()) + 1,
                                const_cast<int*>(args.codes()) + 1, args.size() - 1, rv);
          });
        },
        fname);
  }
  // A saved closure or a bytecode function of the executable.
  ObjectPtr<ClosureObj> clo;
  {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    auto saved = saved_.find(name);
    if (saved != saved_.end()) {
      clo = saved->second;
    } else {
      auto it = exec_->func_map.find(name);
      if (it == exec_->func_map.end() || exec_->funcs[it->second].kind != FuncInfo::kVMFunc) {
        return nullptr;
      }
      int64_t fidx = it->second;
      return MakeFunction(
          [self, fidx](const Args& args, RetValue* rv) {
            self->Entry(
                [&] { self->InvokeBytecode(fidx, args.values(), args.codes(), args.size(), rv); });
          },
          fname);
    }
  }
  return MakeFunction(
      [self, clo](const Args& args, RetValue* rv) {
        self->Entry([&] {
          self->InvokeClosure(clo.get(), const_cast<TVMValue*>(args.values()),
                              const_cast<int*>(args.codes()), args.size(), rv);
        });
      },
      fname);
}

}  // namespace relax_vm
}  // namespace polyffi
