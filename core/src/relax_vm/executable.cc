// Loading a relax VM executable (`relax.VMExecutable`, TVM 0.27, version "0.14") and the
// executable module's own functions. The layout is in docs/spec/tvm-formats.md part 2
// section 3 (the relax VM executable): header, function table, memory scopes (V2 magic), constant
// pool, code. Every read is bounds-checked (formats/byte_reader.h; tensor constants:
// formats/ndarray_record.h) and every index the code holds is validated here, once, so a corrupt
// blob is a ValueError and the interpreter never meets an out-of-range register, constant,
// function or jump target.
#include <cstring>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "formats/byte_reader.h"
#include "formats/ndarray_object.h"
#include "polyffi/error.h"
#include "polyffi/registry.h"
#include "relax_vm.h"

namespace polyffi {
namespace relax_vm {
namespace {

constexpr uint64_t kMagicV1 = 0xD225DE2F4214151DULL;
constexpr uint64_t kMagicV2 = 0xD225DE2F4214151EULL;
const char kVersion[] = "0.14";
// Bounds on what a blob may ask for, so a corrupt count cannot make the loader (or a later
// call) allocate without limit. Real executables are far below these.
constexpr int64_t kMaxRegisters = int64_t{1} << 20;

// tvm-ffi type indices of constant-pool entries.
enum : int32_t {
  kConstInt = 1,
  kConstFloat = 3,
  kConstDataType = 5,
  kConstStr = 65,
  kConstShape = 69,
  kConstTensor = 70,
};

using formats::ByteReader;

[[noreturn]] void Corrupt(const std::string& msg) {
  Throw("ValueError", "relax VM executable: ", msg);
}

int64_t SignExtend56(int64_t word) {
  return static_cast<int64_t>(static_cast<uint64_t>(word) << 8) >> 8;
}

std::string RegName(int64_t r) {
  if (r == kVoidRegister) return "%void";
  if (r == kVMRegister) return "%vm";
  return "%" + std::to_string(r);
}

}  // namespace

std::string ShapeString(const int64_t* shape, int64_t ndim) {
  return formats::ShapeText(shape, ndim);
}

std::shared_ptr<const Executable> Executable::Load(const char* data, size_t size) {
  auto exec = std::make_shared<Executable>();
  ByteReader r(data, size, "", "relax VM executable");
  uint64_t magic = r.Read<uint64_t>("header");
  if (magic != kMagicV1 && magic != kMagicV2) {
    Corrupt("bad magic number (not a relax VM executable)");
  }
  std::string version = r.Str("version");
  if (version != kVersion) {
    Corrupt("version '" + version.substr(0, 32) + "' is not supported (this runtime reads " +
            kVersion + ", as written by TVM 0.27)");
  }

  // Function table. Each entry is at least 4 + 8 * 6 bytes.
  uint64_t nfuncs = r.Count(52, "function table");
  exec->funcs.resize(nfuncs);
  for (uint64_t i = 0; i < nfuncs; ++i) {
    FuncInfo& f = exec->funcs[i];
    f.kind = r.Read<int32_t>("function kind");
    f.name = r.Str("function name");
    f.start_instr = r.Read<int64_t>("function start");
    f.end_instr = r.Read<int64_t>("function end");
    f.num_args = r.Read<int64_t>("function arity");
    f.register_file_size = r.Read<int64_t>("function register count");
    uint64_t nparams = r.Count(sizeof(uint64_t), "parameter names");
    f.param_names.reserve(nparams);
    for (uint64_t j = 0; j < nparams; ++j) f.param_names.push_back(r.Str("parameter name"));
    if (f.kind != FuncInfo::kPackedFunc && f.kind != FuncInfo::kVMFunc &&
        f.kind != FuncInfo::kVMTIRFunc) {
      Corrupt("function " + std::to_string(i) + " has unknown kind " + std::to_string(f.kind));
    }
    exec->func_map[f.name] = static_cast<int64_t>(i);
  }

  if (magic == kMagicV2) {
    uint64_t nscopes = r.Count(16, "memory scopes");
    for (uint64_t i = 0; i < nscopes; ++i) {
      int64_t idx = r.Read<int64_t>("memory scope index");
      exec->memory_scopes.emplace_back(idx, r.Str("memory scope"));
    }
  }

  // Constant pool: each entry at least its 4-byte type index plus 8 bytes.
  uint64_t nconst = r.Count(12, "constant pool");
  exec->constants.resize(nconst);
  for (uint64_t i = 0; i < nconst; ++i) {
    RetValue& c = exec->constants[i];
    int32_t type = r.Read<int32_t>("constant type");
    switch (type) {
      case kConstTensor:
        c.SetObject(formats::ReadNDArray(&r, "constant " + std::to_string(i)));
        break;
      case kConstShape: {
        std::vector<int64_t> dims = r.I64Vector("shape constant");
        c.SetObject(MakeObject<ShapeObj>(dims.data(), dims.data() + dims.size()));
        break;
      }
      case kConstStr:
        c.SetStr(r.Str("string constant"));
        break;
      case kConstInt:
        c.SetInt(r.Read<int64_t>("int constant"));
        break;
      case kConstFloat:
        c.SetFloat(r.Read<double>("float constant"));
        break;
      case kConstDataType: {
        DLDataType t;
        t.code = r.Read<uint8_t>("dtype constant");
        t.bits = r.Read<uint8_t>("dtype constant");
        t.lanes = r.Read<uint16_t>("dtype constant");
        c.SetDataType(t);
        break;
      }
      default:
        Corrupt("constant " + std::to_string(i) + " has unsupported type index " +
                std::to_string(type));
    }
  }

  exec->instr_offset = r.I64Vector("instruction offsets");
  exec->instr_data = r.I64Vector("instruction data");

  // Decode every instruction; operands must lie inside instr_data.
  const std::vector<int64_t>& w = exec->instr_data;
  const int64_t nwords = static_cast<int64_t>(w.size());
  const int64_t ninstr = static_cast<int64_t>(exec->instr_offset.size());
  exec->instrs.resize(ninstr);
  const int64_t nconst_total = static_cast<int64_t>(exec->constants.size());
  const int64_t nfunc_total = static_cast<int64_t>(exec->funcs.size());
  for (int64_t pc = 0; pc < ninstr; ++pc) {
    int64_t off = exec->instr_offset[pc];
    auto need = [&](int64_t words) {
      if (off < 0 || off >= nwords || words > nwords - off) {
        Corrupt("instruction " + std::to_string(pc) + " at word " + std::to_string(off) +
                " runs past the end of the code (" + std::to_string(nwords) + " words)");
      }
    };
    need(1);
    Instr& in = exec->instrs[pc];
    switch (w[off]) {
      case static_cast<int64_t>(Opcode::kCall): {
        need(4);
        in.op = Opcode::kCall;
        in.a = w[off + 1];
        in.b = w[off + 2];
        int64_t nargs = w[off + 3];
        if (nargs < 0 || nargs > nwords - off - 4 || nargs > INT32_MAX) {
          Corrupt("instruction " + std::to_string(pc) + " has " + std::to_string(nargs) +
                  " arguments, past the end of the code");
        }
        in.num_args = static_cast<uint32_t>(nargs);
        if (exec->args.size() + nargs > UINT32_MAX) Corrupt("too many call arguments");
        in.arg_begin = static_cast<uint32_t>(exec->args.size());
        for (int64_t k = 0; k < nargs; ++k) {
          int64_t word = w[off + 4 + k];
          uint8_t kind = static_cast<uint8_t>(static_cast<uint64_t>(word) >> 56);
          if (kind > static_cast<uint8_t>(ArgKind::kFuncIdx)) {
            Corrupt("instruction " + std::to_string(pc) + " argument " + std::to_string(k) +
                    " has unknown kind " + std::to_string(kind));
          }
          InstrArg arg{static_cast<ArgKind>(kind), SignExtend56(word)};
          // Constant and function indices do not depend on the function an instruction is in,
          // so they are checked for every instruction (the VM resolves them all at init).
          int64_t limit = arg.kind == ArgKind::kConstIdx  ? nconst_total
                          : arg.kind == ArgKind::kFuncIdx ? nfunc_total
                                                          : -1;
          if (limit >= 0 && (arg.value < 0 || arg.value >= limit)) {
            Corrupt("instruction " + std::to_string(pc) + " uses " +
                    (arg.kind == ArgKind::kConstIdx ? "constant " : "function ") +
                    std::to_string(arg.value) + " of " + std::to_string(limit));
          }
          exec->args.push_back(arg);
        }
        in.patch_begin = static_cast<uint32_t>(exec->patches.size());
        for (int64_t k = 0; k < nargs; ++k) {
          const InstrArg& arg = exec->args[in.arg_begin + k];
          if (arg.kind == ArgKind::kRegister && arg.value >= 0 && arg.value < kBeginSpecialReg) {
            exec->patches.push_back(RegPatch{static_cast<uint32_t>(k), arg.value});
          }
        }
        in.num_patches = static_cast<uint32_t>(exec->patches.size() - in.patch_begin);
        if (in.b < 0 || in.b >= nfunc_total) {
          Corrupt("instruction " + std::to_string(pc) + " calls function " + std::to_string(in.b) +
                  " of " + std::to_string(nfunc_total));
        }
        exec->max_call_args = std::max<size_t>(exec->max_call_args, nargs);
        break;
      }
      case static_cast<int64_t>(Opcode::kRet):
        need(2);
        in.op = Opcode::kRet;
        in.a = w[off + 1];
        break;
      case static_cast<int64_t>(Opcode::kGoto):
        need(2);
        in.op = Opcode::kGoto;
        in.a = w[off + 1];
        break;
      case static_cast<int64_t>(Opcode::kIf):
        need(3);
        in.op = Opcode::kIf;
        in.a = w[off + 1];
        in.b = w[off + 2];
        break;
      default:
        Corrupt("instruction " + std::to_string(pc) + " has unknown opcode " +
                std::to_string(w[off]));
    }
  }

  // Each bytecode function: its range, registers, and every index its instructions use.
  for (const FuncInfo& f : exec->funcs) {
    if (f.kind != FuncInfo::kVMFunc) continue;
    const std::string who = "function '" + f.name.substr(0, 64) + "'";
    if (f.start_instr < 0 || f.start_instr > f.end_instr || f.end_instr > ninstr) {
      Corrupt(who + " spans instructions [" + std::to_string(f.start_instr) + ", " +
              std::to_string(f.end_instr) + ") outside [0, " + std::to_string(ninstr) + ")");
    }
    if (f.num_args < 0 || f.register_file_size < f.num_args ||
        f.register_file_size > kMaxRegisters) {
      Corrupt(who + " has " + std::to_string(f.num_args) + " arguments and " +
              std::to_string(f.register_file_size) + " registers");
    }
    const int64_t nreg = f.register_file_size;
    auto check_reg = [&](int64_t pc, int64_t reg, bool special_ok, const char* what) {
      bool ok =
          (reg >= 0 && reg < nreg) || (special_ok && (reg == kVoidRegister || reg == kVMRegister));
      if (!ok) {
        Corrupt(who + " instruction " + std::to_string(pc) + ": " + what + " register " +
                std::to_string(reg) + " is out of range (" + std::to_string(nreg) + " registers)");
      }
    };
    auto check_target = [&](int64_t pc, int64_t offset) {
      int64_t target;
      if (__builtin_add_overflow(pc, offset, &target) || target < f.start_instr ||
          target >= f.end_instr) {
        Corrupt(who + " instruction " + std::to_string(pc) + " jumps by " + std::to_string(offset) +
                " out of the function");
      }
    };
    for (int64_t pc = f.start_instr; pc < f.end_instr; ++pc) {
      const Instr& in = exec->instrs[pc];
      switch (in.op) {
        case Opcode::kCall: {
          if (in.a < kBeginSpecialReg) check_reg(pc, in.a, false, "destination");
          for (uint32_t k = 0; k < in.num_args; ++k) {
            const InstrArg& arg = exec->args[in.arg_begin + k];
            switch (arg.kind) {
              case ArgKind::kRegister:
                check_reg(pc, arg.value, true, "argument");
                break;
              case ArgKind::kConstIdx:  // checked for every instruction above
              case ArgKind::kFuncIdx:
              case ArgKind::kImmediate:
                break;
            }
          }
          break;
        }
        case Opcode::kRet:
          check_reg(pc, in.a, true, "result");
          break;
        case Opcode::kGoto:
          // TVM emits only forward jumps (relax has no loops; repetition is recursion, which
          // the VM bounds): a backward or zero jump could only make the VM spin forever.
          if (in.a <= 0) {
            Corrupt(who + " instruction " + std::to_string(pc) + " jumps by " +
                    std::to_string(in.a) + " (only forward jumps are valid)");
          }
          check_target(pc, in.a);
          break;
        case Opcode::kIf:
          check_reg(pc, in.a, false, "condition");
          if (in.b <= 1) {
            Corrupt(who + " instruction " + std::to_string(pc) + " has false offset " +
                    std::to_string(in.b));
          }
          check_target(pc, in.b);
          check_target(pc, 1);
          break;
      }
    }
  }
  return exec;
}

std::string Executable::Stats() const {
  std::ostringstream os;
  os << "Relax VM executable statistics:\n  Constant pool (# " << constants.size() << "): [";
  for (size_t i = 0; i < constants.size(); ++i) {
    const RetValue& c = constants[i];
    if (i) os << ", ";
    if (c.type_code() == kTVMNDArrayHandle) {
      const DLTensor& t = static_cast<NDArrayObj*>(c.object())->tensor;
      if (t.ndim == 0) {
        os << "scalar";
      } else {
        os << ShapeString(t.shape, t.ndim);
      }
    } else if (c.type_code() == kTVMObjectHandle) {
      const auto* d = static_cast<ShapeObj*>(c.object());
      os << "shapetuple" << ShapeString(d->data(), d->ndim());
    } else if (c.type_code() == kTVMStr) {
      os << "\"" << c.str() << "\"";
    } else if (c.type_code() == kTVMArgInt) {
      os << c.value().v_int64;
    } else if (c.type_code() == kTVMArgFloat) {
      os << c.value().v_float64;
    } else if (c.type_code() == kTVMDataType) {
      DLDataType t = c.value().v_type;
      try {
        os << DataTypeString(t);
      } catch (const Error&) {
        os << "dtype(" << int(t.code) << ", " << int(t.bits) << ", " << t.lanes << ")";
      }
    }
  }
  os << "]\n  Globals (#" << funcs.size() << "): [";
  for (size_t i = 0; i < funcs.size(); ++i) os << (i ? ", " : "") << funcs[i].name;
  os << "]\n";
  return os.str();
}

std::string Executable::AsText() const {
  auto fname = [&](int64_t i) {
    return i >= 0 && i < static_cast<int64_t>(funcs.size())
               ? funcs[i].name
               : "unknown_func_index(" + std::to_string(i) + ")";
  };
  std::ostringstream os;
  for (const FuncInfo& f : funcs) {
    if (f.kind == FuncInfo::kPackedFunc) {
      os << "@" << f.name << " packed_func;\n\n";
      continue;
    }
    if (f.kind == FuncInfo::kVMTIRFunc) {
      os << "@" << f.name << " num_inputs=" << f.num_args << " vm_tir_func;\n\n";
      continue;
    }
    os << "@" << f.name << ":\n";
    for (int64_t pc = f.start_instr; pc < f.end_instr; ++pc) {
      const Instr& in = instrs[pc];
      os << "  ";
      switch (in.op) {
        case Opcode::kCall: {
          std::ostringstream a;
          for (uint32_t k = 0; k < in.num_args; ++k) {
            const InstrArg& arg = args[in.arg_begin + k];
            if (k) a << ", ";
            switch (arg.kind) {
              case ArgKind::kRegister:
                a << RegName(arg.value);
                break;
              case ArgKind::kImmediate:
                a << "i" << arg.value;
                break;
              case ArgKind::kConstIdx:
                a << "c[" << arg.value << "]";
                break;
              case ArgKind::kFuncIdx:
                a << "f[" << fname(arg.value) << "]";
                break;
            }
          }
          os << std::setw(6) << std::left << "call" << std::setw(16) << std::left << fname(in.b)
             << " in: " << std::setw(12) << std::left << a.str() << " dst: " << RegName(in.a)
             << "\n";
          break;
        }
        case Opcode::kRet:
          os << std::setw(6) << std::left << "ret " << RegName(in.a) << "\n";
          break;
        case Opcode::kGoto:
          os << std::setw(6) << std::left << "goto" << in.a << "\n";
          break;
        case Opcode::kIf:
          os << std::setw(6) << std::left << "If" << RegName(in.a) << ", " << in.b << "\n";
          break;
      }
    }
    os << "\n";
  }
  return os.str();
}

ObjectPtr<FunctionObj> ExecutableModule::GetOwnFunction(const std::string& name) {
  auto self = ObjectPtr<ExecutableModule>::Borrow(this);
  if (name == "vm_load_executable") {
    return MakeFunction(
        [self](const Args& args, RetValue* rv) {
          args.CheckArity(0);
          rv->SetObject(MakeVirtualMachine(self));
        },
        "relax.VMExecutable.vm_load_executable");
  }
  if (name == "has_function") {
    return MakeFunction(
        [self](const Args& args, RetValue* rv) {
          args.CheckArity(1);
          rv->SetBool(self->exec()->func_map.count(args.Str(0)) != 0);
        },
        "relax.VMExecutable.has_function");
  }
  // stats() and as_text(): the executable described as text.
  std::string (Executable::*text)() const = name == "stats"     ? &Executable::Stats
                                            : name == "as_text" ? &Executable::AsText
                                                                : nullptr;
  if (text != nullptr) {
    return MakeFunction(
        [self, text](const Args& args, RetValue* rv) {
          args.CheckArity(0);
          rv->SetStr((self->exec().get()->*text)());
        },
        "relax.VMExecutable." + name);
  }
  return nullptr;
}

// ffi.Module.load_from_bytes.relax.VMExecutable(bytes) -> Module: the loader the library_bin
// reader calls for a "relax.VMExecutable" entry (it then imports the kernel library into it).
POLYFFI_CORE_GLOBAL("ffi.Module.load_from_bytes.relax.VMExecutable", [](const Args& args,
                                                                        RetValue* rv) {
  args.CheckArity(1);
  if (args.code(0) != kTVMBytes && args.code(0) != kTVMStr) {
    args.Mismatch(0, "bytes");
  }
  std::string blob = args.Str(0);
  rv->SetObject(MakeObject<ExecutableModule>(Executable::Load(blob.data(), blob.size())));
});

// ffi.Module.load_from_file.relax.VMExecutable(path): an executable saved on its own.
POLYFFI_CORE_GLOBAL("ffi.Module.load_from_file.relax.VMExecutable", [](const Args& args,
                                                                       RetValue* rv) {
  if (args.size() != 1) args.CheckArity(2);
  std::string path = args.Str(0);
  std::ifstream in(path, std::ios::binary);
  if (!in) Throw("ValueError", "cannot open '", path, "'");
  std::string blob((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  rv->SetObject(MakeObject<ExecutableModule>(Executable::Load(blob.data(), blob.size())));
});

}  // namespace relax_vm
}  // namespace polyffi
