// The VM's tensor builtins beyond memory and shapes (TVM 0.27 runtime semantics and error kinds):
//   vm.builtin.tensor_to_shape(t)          a 1-D int16/32/64 tensor's values as a Shape
//   vm.builtin.ensure_zero_offset(t)       t, or a tensor of the same data with byte_offset 0
//   vm.builtin.to_device(t, type, id, [scope])   a copy on a device (the CPU only here)
//   relax.run.shape_to_tensor(shape)       a Shape's values as a 1-D int64 tensor
//   vm.builtin.memory_manager.clear()      idle pooled buffers back to the system
// TVM 0.27 registers relax.run.* in its Python package (numpy); polyffi has them in the core
// so a model runs without Python.
#include <cstring>
#include <string>
#include <vector>

#include "../contrib/contrib.h"
#include "polyffi/error.h"
#include "polyffi/registry.h"
#include "relax_vm.h"

namespace polyffi {
namespace relax_vm {
namespace {

using contrib::DataOf;

/*! \brief The NDArray at argument i (retained); TypeError for anything else. */
ObjectPtr<NDArrayObj> NDArrayArg(const Args& args, int i) {
  if (args.code(i) != kTVMNDArrayHandle || args.value(i).v_handle == nullptr) {
    args.Mismatch(i, "Tensor");
  }
  return ObjectPtr<NDArrayObj>::Borrow(
      NDArrayObj::FromHandle(static_cast<DLTensor*>(args.value(i).v_handle)));
}

/*! \brief A new compact CPU tensor holding a copy of t (t compact, on the CPU). */
ObjectPtr<NDArrayObj> CompactCopy(const Args& args, const DLTensor& t) {
  if (DeviceTypeOf(t.device) != kDLCPU) {
    Throw("ValueError", args.fname(), ": the tensor is not on the CPU (device type ",
          DeviceTypeOf(t.device), ")");
  }
  size_t nbytes = CompactBytes(t);  // ValueError unless compact
  auto out = NDArrayObj::Empty(std::vector<int64_t>(t.shape, t.shape + t.ndim), t.dtype,
                               DLDevice{kDLCPU, 0});
  if (nbytes != 0) std::memcpy(out->tensor.data, DataOf(&t), nbytes);
  return out;
}

}  // namespace

POLYFFI_CORE_GLOBAL("vm.builtin.tensor_to_shape", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  DLTensor* t = contrib::CpuTensor(args, 0, "tensor");
  if (t->ndim != 1) {
    Throw("InternalError", "Check failed: (arr->ndim == 1) is false: ", args.fname(),
          " needs a 1-D tensor (", t->ndim, " vs. 1)");
  }
  if (t->dtype.code != kDLInt) {
    Throw("InternalError", "Check failed: (arr->dtype.code == kDLInt) is false: ", args.fname(),
          " needs an integer tensor, got ", DataTypeName(t->dtype));
  }
  const int bits = t->dtype.bits;
  if (t->dtype.lanes != 1 || (bits != 16 && bits != 32 && bits != 64)) {
    Throw("InternalError", "Unknown scalar int type: ", DataTypeName(t->dtype));
  }
  const int64_t n = t->shape[0];
  auto shape = MakeObject<ShapeObj>(static_cast<size_t>(n));
  const char* p = DataOf(t);
  for (int64_t i = 0; i < n; ++i) {
    int64_t v;
    if (bits == 16) {
      int16_t x;
      std::memcpy(&x, p + 2 * i, 2);
      v = x;
    } else if (bits == 32) {
      int32_t x;
      std::memcpy(&x, p + 4 * i, 4);
      v = x;
    } else {
      std::memcpy(&v, p + 8 * i, 8);
    }
    shape->data()[i] = v;
  }
  rv->SetObject(std::move(shape));
});

// The same data at byte_offset 0: a view when the offset keeps TVM's 64-byte alignment, else a
// compact copy.
POLYFFI_CORE_GLOBAL("vm.builtin.ensure_zero_offset", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  ObjectPtr<NDArrayObj> arr = NDArrayArg(args, 0);
  const DLTensor& t = arr->tensor;
  if (t.byte_offset == 0) return rv->SetObject(std::move(arr));
  if (t.byte_offset % 64 == 0 && IsCompact(t)) {
    void* data = static_cast<char*>(t.data) + t.byte_offset;
    auto owner = ObjectPtr<Object>::Borrow(arr.get());
    return rv->SetObject(
        NDArrayObj::View(data, t.shape, t.ndim, t.dtype, t.device, std::move(owner)));
  }
  rv->SetObject(CompactCopy(args, t));
});

POLYFFI_CORE_GLOBAL("vm.builtin.to_device", [](const Args& args, RetValue* rv) {
  if (args.size() != 3) args.CheckArity(4);
  ObjectPtr<NDArrayObj> arr = NDArrayArg(args, 0);
  const int64_t dev_type = args.Int(1), dev_id = args.Int(2);
  if (dev_type != kDLCPU || dev_id != 0) {
    Throw("ValueError", args.fname(), ": device (", dev_type, ", ", dev_id,
          ") is not available: polyffi runs on the CPU (device type 1, id 0) only");
  }
  if (args.size() == 4 && args.code(3) != kTVMNullptr) {
    std::string scope = args.Str(3);
    if (!scope.empty() && scope != "global") {
      Throw("ValueError", args.fname(), ": memory scope '", scope,
            "' is not available on the CPU (only \"global\")");
    }
  }
  rv->SetObject(CompactCopy(args, arr->tensor));
});

// As TVM's Python (tvm.runtime.tensor of a list of ints): int64, and for an empty shape the
// float64 numpy makes of an empty list.
POLYFFI_CORE_GLOBAL("relax.run.shape_to_tensor", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  ShapeObj* s = ShapeArg(args, 0);
  if (s == nullptr) args.Mismatch(0, "ffi.Shape");
  const int64_t n = s->ndim();
  DLDataType dtype = n == 0 ? DLDataType{kDLFloat, 64, 1} : DLDataType{kDLInt, 64, 1};
  auto out = NDArrayObj::Empty({n}, dtype, DLDevice{kDLCPU, 0});
  if (n != 0) std::memcpy(out->tensor.data, s->data(), static_cast<size_t>(n) * 8);
  rv->SetObject(std::move(out));
});

// memory_manager.clear(): the pooled allocator's idle buffers go back to the system (storages
// in use are untouched and return to the pool when released).
POLYFFI_CORE_GLOBAL("vm.builtin.memory_manager.clear", [](const Args& args, RetValue*) {
  args.CheckArity(0);
  Allocator::Get(Allocator::kNaive)->Clear();
  Allocator::Get(Allocator::kPooled)->Clear();
});

// check_string_info(value, err_ctx): the value must be a string.
POLYFFI_CORE_GLOBAL("vm.builtin.check_string_info", [](const Args& args, RetValue*) {
  args.CheckArity(2);
  if (args.code(0) != kTVMStr) {
    Throw("TypeError", ErrorContext(args, 1), " expect a String but get ",
          TypeCodeName(args.code(0)));
  }
});

}  // namespace relax_vm
}  // namespace polyffi
