// The relax virtual machine (TVM 0.27's `relax.VMExecutable` / `relax.VirtualMachine`): internal
// declarations shared by the executable loader, the interpreter, storage and the builtins.
//
// Formats and semantics: docs/spec/tvm-formats.md part 2, sections 3 and 4, checked against
// TVM 0.27's runtime. Everything read from an executable is validated when it is loaded, so the
// interpreter runs on decoded instructions whose register, constant and function indices and
// jump targets are known to be in range.
#ifndef POLYFFI_CORE_RELAX_VM_RELAX_VM_H_
#define POLYFFI_CORE_RELAX_VM_RELAX_VM_H_

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "polyffi/container.h"
#include "polyffi/function.h"
#include "polyffi/module.h"
#include "polyffi/ndarray.h"
#include "polyffi/value.h"

namespace polyffi {
namespace relax_vm {

// ---- Objects ----

/*! \brief A shape: the core's ShapeTuple (runtime.ShapeTuple; ffi.Shape in TVM 0.27). */
using ShapeObj = ShapeTupleObj;

/*! \brief Where a storage's bytes come from and go back to (pooled or plain). */
class Allocator {
 public:
  enum Kind { kNaive = 1, kPooled = 2 };
  /*! \brief The process-wide allocator of a kind (never destroyed). */
  static Allocator* Get(int kind);
  virtual ~Allocator() = default;
  /*! \brief At least nbytes, 64-byte aligned; *actual gets the size to hand back to Free. */
  virtual void* Alloc(size_t nbytes, size_t* actual) = 0;
  virtual void Free(void* p, size_t actual) = 0;
  /*! \brief Give idle buffers back to the system (vm.builtin.memory_manager.clear). */
  virtual void Clear() {}
};

/*! \brief A buffer from an allocator (TVM's vm.Storage); tensors are views into it. */
class StorageObj final : public Object {
 public:
  static uint32_t RuntimeTypeIndex();
  StorageObj(Allocator* alloc, size_t nbytes, DLDevice dev);
  ~StorageObj() override;
  void* data = nullptr;
  size_t size = 0;  // usable bytes (the request)
  DLDevice device;

 private:
  Allocator* alloc_;
  size_t actual_ = 0;
};

/*! \brief A tensor of shape/dtype at byte offset in storage; keeps the storage alive. */
ObjectPtr<NDArrayObj> TensorInStorage(const ObjectPtr<StorageObj>& storage, int64_t offset,
                                      const int64_t* shape, int ndim, DLDataType dtype);
/*! \brief A view of t with a new shape (same element count); keeps owner (if any) alive. */
ObjectPtr<NDArrayObj> ReshapeView(const DLTensor& t, ObjectPtr<Object> owner,
                                  const ShapeObj& shape);

struct Executable;

/*! \brief A closure: a VM function, or a packed function with bound trailing arguments. */
class ClosureObj final : public Object {
 public:
  static uint32_t RuntimeTypeIndex();
  ClosureObj() : Object(RuntimeTypeIndex()) {}
  std::string func_name;
  int64_t vm_func = -1;                           // a VM function of the executable, or
  std::shared_ptr<const struct Executable> exec;  // (the executable vm_func indexes)
  ObjectPtr<FunctionObj> packed;                  // a packed function,
  std::vector<RetValue> bound_args;               // called with these appended
  bool include_return = true;                     // false: the result is dropped (save_function)
};

// ---- Executable ----

constexpr int64_t kBeginSpecialReg = int64_t{1} << 54;
constexpr int64_t kVoidRegister = kBeginSpecialReg;
constexpr int64_t kVMRegister = kBeginSpecialReg + 1;

enum class Opcode : uint8_t { kCall = 1, kRet = 2, kGoto = 3, kIf = 4 };
enum class ArgKind : uint8_t { kRegister = 0, kImmediate = 1, kConstIdx = 2, kFuncIdx = 3 };

struct FuncInfo {
  enum Kind : int32_t { kPackedFunc = 0, kVMFunc = 1, kVMTIRFunc = 2 };
  int32_t kind = kPackedFunc;
  std::string name;
  int64_t start_instr = 0;
  int64_t end_instr = 0;
  int64_t num_args = 0;
  int64_t register_file_size = 0;
  std::vector<std::string> param_names;
};

struct InstrArg {
  ArgKind kind;
  int64_t value;
};

/*! \brief One decoded instruction. */
struct Instr {
  Opcode op;
  int64_t a = 0;  // Call: dst; Ret: result register; Goto: pc offset; If: cond register
  int64_t b = 0;  // Call: function index; If: false offset
  uint32_t num_args = 0;
  uint32_t arg_begin = 0;    // Call: first argument in Executable::args
  uint32_t patch_begin = 0;  // Call: its register arguments in Executable::patches
  uint32_t num_patches = 0;
};

/*! \brief A Call argument read from a register at run time: argument slot <- register. */
struct RegPatch {
  uint32_t slot;
  int64_t reg;
};

/*! \brief A loaded executable: the tables of the blob plus the decoded, validated code. */
struct Executable {
  std::vector<FuncInfo> funcs;
  std::unordered_map<std::string, int64_t> func_map;
  std::vector<std::pair<int64_t, std::string>> memory_scopes;
  /*! \brief Tensors (NDArray), Shapes (ShapeObj), strings, ints, floats, dtypes. */
  std::vector<RetValue> constants;
  std::vector<int64_t> instr_offset;
  std::vector<int64_t> instr_data;
  std::vector<Instr> instrs;
  std::vector<InstrArg> args;
  std::vector<RegPatch> patches;
  size_t max_call_args = 0;

  /*! \brief Parse and validate a blob (bounds-checked: a bad blob is a ValueError). */
  static std::shared_ptr<const Executable> Load(const char* data, size_t size);
  std::string Stats() const;
  std::string AsText() const;
};

class VirtualMachine;

/*! \brief The module of kind "relax.VMExecutable"; its imports are the kernel libraries. */
class ExecutableModule final : public ModuleObj {
 public:
  explicit ExecutableModule(std::shared_ptr<const Executable> exec) : exec_(std::move(exec)) {}
  std::string type_key() const override { return "relax.VMExecutable"; }
  const std::shared_ptr<const Executable>& exec() const { return exec_; }

 protected:
  ObjectPtr<FunctionObj> GetOwnFunction(const std::string& name) override;

 private:
  std::shared_ptr<const Executable> exec_;
};

/*! \brief Create the VM module ("relax.VirtualMachine") over an executable module. */
ObjectPtr<ModuleObj> MakeVirtualMachine(ObjectPtr<ExecutableModule> exec);
/*! \brief The executable a VM module runs, or null when vm is not a "relax.VirtualMachine". */
const Executable* ExecutableOf(ModuleObj* vm);

/*!
 * \brief The VM a builtin was handed as its context argument (the %vm register): it must be a
 *  VM running on this thread, so a stray pointer is an error rather than a crash.
 */
VirtualMachine* ContextVM(const Args& args, int i);
/*! \brief Call a function or VM closure on a VM (args, then the closure's bound arguments). */
void InvokeClosureOn(VirtualMachine* vm, Object* callee, TVMValue* values, int* codes, int n,
                     RetValue* rv);
/*! \brief A device of a VM by index (-1: the host, the last device) and its allocator. */
void VMDevice(VirtualMachine* vm, int64_t index, DLDevice* dev, Allocator** alloc);

// ---- Argument helpers shared by the builtins and the VM ----

/*! \brief The DLTensor of an NDArray or DLTensor handle argument, or null. */
inline DLTensor* TensorArg(const Args& args, int i) {
  int c = args.code(i);
  if (c == kTVMNDArrayHandle || c == kTVMDLTensorHandle) {
    return static_cast<DLTensor*>(args.value(i).v_handle);
  }
  return nullptr;
}
/*! \brief The ShapeObj at argument i, or null. */
ShapeObj* ShapeArg(const Args& args, int i);
/*! \brief The error context string at argument i (None gives ""). */
std::string ErrorContext(const Args& args, int i);
std::string ShapeString(const int64_t* shape, int64_t ndim);

}  // namespace relax_vm
}  // namespace polyffi
#endif  // POLYFFI_CORE_RELAX_VM_RELAX_VM_H_
