// The `vm.builtin.*` globals relax executables call (docs/spec/tvm-formats.md part 2 section 4.3,
// the builtins the fixtures call), with TVM 0.27's arguments, results, error kinds and messages.
// They are ordinary registered globals: the VM resolves them by name like any function, so a user
// may add or replace one. Unlike TVM's, every index into the shape heap and every storage offset is
// checked.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <ostream>

#include "polyffi/error.h"
#include "polyffi/registry.h"
#include "relax_vm.h"

namespace polyffi {
namespace relax_vm {

ShapeObj* ShapeArg(const Args& args, int i) {
  if (args.code(i) != kTVMObjectHandle) return nullptr;
  auto* o = static_cast<Object*>(args.value(i).v_handle);
  if (o == nullptr || o->type_index() != ShapeObj::kTypeIndex) return nullptr;
  return static_cast<ShapeObj*>(o);
}

std::string ErrorContext(const Args& args, int i) {
  if (i >= args.size() || args.code(i) == kTVMNullptr) return "";
  return args.Str(i);
}

namespace {

DLDataType DTypeArg(const Args& args, int i) {
  if (args.code(i) == kTVMDataType) return args.value(i).v_type;
  return ParseDataType(args.Str(i));
}

const ShapeObj& ShapeOf(const Args& args, int i) {
  ShapeObj* s = ShapeArg(args, i);
  if (s == nullptr) args.Mismatch(i, "runtime.ShapeTuple");
  return *s;
}

/*! \brief The shape heap (an int64 vector) or None. */
struct Heap {
  int64_t* data = nullptr;
  int64_t size = 0;
  int64_t& At(int64_t reg, const char* fname) const {
    if (data == nullptr) Throw("ValueError", fname, ": a shape heap is needed but None was given");
    if (reg < 0 || reg >= size) {
      Throw("ValueError", fname, ": shape heap index ", reg, " is out of range [0, ", size, ")");
    }
    return data[reg];
  }
};

Heap HeapArg(const Args& args, int i) {
  Heap h;
  if (args.code(i) == kTVMNullptr) return h;
  DLTensor* t = TensorArg(args, i);
  if (t == nullptr) args.Mismatch(i, "shape heap tensor or None");
  if (t->ndim != 1 || t->dtype.code != kDLInt || t->dtype.bits != 64 || t->dtype.lanes != 1 ||
      !IsCompact(*t)) {
    Throw("TypeError", args.fname(), ": the shape heap must be a 1-D int64 tensor");
  }
  h.data = reinterpret_cast<int64_t*>(static_cast<char*>(t->data) + t->byte_offset);
  h.size = t->shape[0];
  return h;
}

/*!
 * \brief The error context argument, read only when an error is reported: the checks run on
 *  every call, and the context strings are long (a copy would cost an allocation each time).
 */
struct LazyContext {
  const Args& args;
  int index;
};
std::ostream& operator<<(std::ostream& os, const LazyContext& c) {
  return os << ErrorContext(c.args, c.index);
}

/*! \brief Args::Int with the common case (a plain int) inline: builtins read many of them. */
inline int64_t IntArg(const Args& args, int i) {
  if (args.code(i) == kTVMArgInt) return args.value(i).v_int64;
  return args.Int(i);
}

/*! \brief Whether argument i names the global memory scope (or none). */
bool IsGlobalScope(const Args& args, int i) {
  if (args.code(i) == kTVMNullptr) return true;
  if (args.code(i) == kTVMStr && args.value(i).v_str != nullptr) {
    const char* s = args.value(i).v_str;
    return s[0] == '\0' || std::strcmp(s, "global") == 0;
  }
  std::string scope = args.Str(i);
  return scope.empty() || scope == "global";
}

/*! \brief Reference or copy argument i into rv (the identity builtins). */
void ReturnArg(const Args& args, int i, RetValue* rv) { rv->SetFromC(args.value(i), args.code(i)); }

}  // namespace

// alloc_shape_heap(vm, size) -> int64[size] on the host.
POLYFFI_CORE_GLOBAL("vm.builtin.alloc_shape_heap", [](const Args& args, RetValue* rv) {
  args.CheckArity(2);
  VirtualMachine* vm = ContextVM(args, 0);
  DLDevice dev;
  Allocator* alloc;
  VMDevice(vm, -1, &dev, &alloc);
  int64_t size = IntArg(args, 1);
  // From the VM's allocator, like every other buffer of a call.
  DLDataType i64{kDLInt, 64, 1};
  size_t nbytes = CheckedBytes(&size, 1, i64);
  rv->SetObject(TensorInStorage(MakeObject<StorageObj>(alloc, nbytes, dev), 0, &size, 1, i64));
});

// match_shape(value, heap, ndim, (code, v) x ndim, err_ctx): codes 0 assert == v, 1 store to
// heap[v], 2 nothing, 3 assert == heap[v].
POLYFFI_CORE_GLOBAL("vm.builtin.match_shape", [](const Args& args, RetValue*) {
  args.CheckMinArity(3);
  const int64_t* shape;
  int64_t ndim;
  if (DLTensor* t = TensorArg(args, 0)) {
    shape = t->shape;
    ndim = t->ndim;
  } else if (ShapeObj* s = ShapeArg(args, 0)) {
    shape = s->data();
    ndim = s->ndim();
  } else {
    args.Mismatch(0, "Tensor or Shape");
  }
  Heap heap = HeapArg(args, 1);
  int64_t size = IntArg(args, 2);
  if (size < 0 || size > (args.size() - 3) / 2) {
    // Worded without computing 3 + 2 * size: a huge size overflows int64.
    Throw("TypeError", args.fname(), ": ", size, " dimensions need 3 + 2 * ", size,
          " arguments but got ", args.size());
  }
  const int ctx = static_cast<int>(3 + size * 2);
  if (ndim != size) {
    Throw("RuntimeError", ErrorContext(args, ctx), " match_cast shape size mismatch. Expected ",
          size, " dimensions but got ", ndim, " (input shape ", ShapeString(shape, ndim), ")");
  }
  for (int64_t i = 0; i < size; ++i) {
    int64_t code = IntArg(args, static_cast<int>(3 + i * 2));
    int64_t reg = IntArg(args, static_cast<int>(4 + i * 2));
    switch (code) {
      case 0:
        if (shape[i] != reg) {
          Throw("RuntimeError", ErrorContext(args, ctx), " match_cast error,  shape[", i,
                "] mismatch to specified constant. Expected ", reg, " but got ", shape[i],
                " (input shape ", ShapeString(shape, ndim), ")");
        }
        break;
      case 1:
        heap.At(reg, args.fname()) = shape[i];
        break;
      case 2:
        break;
      case 3:
        if (shape[i] != heap.At(reg, args.fname())) {
          Throw("RuntimeError", ErrorContext(args, ctx), " match_cast error,  shape[", i,
                "] mismatch to a previous populated value: expected ", heap.At(reg, args.fname()),
                " but got ", shape[i], " (shape ", ShapeString(shape, ndim), ")");
        }
        break;
      default:
        Throw("ValueError", args.fname(), ": unknown match shape code ", code);
    }
  }
});

// match_prim_value(value, heap, code, reg, err_ctx): match_shape for one integer.
POLYFFI_CORE_GLOBAL("vm.builtin.match_prim_value", [](const Args& args, RetValue*) {
  args.CheckMinArity(4);
  int64_t value = IntArg(args, 0);
  Heap heap = HeapArg(args, 1);
  int64_t code = IntArg(args, 2), reg = IntArg(args, 3);
  const LazyContext ctx{args, 4};
  switch (code) {
    case 0:
      if (value != reg) {
        Throw("RuntimeError", ctx,
              " match_cast error,  PrimExpr mismatch to specified constant:", " expected ", reg,
              " but got ", value);
      }
      break;
    case 1:
      heap.At(reg, args.fname()) = value;
      break;
    case 2:
      break;
    case 3:
      if (value != heap.At(reg, args.fname())) {
        Throw("RuntimeError", ctx, " match_cast error,  PrimExpr mismatch to a previous populated",
              " value. Expected ", heap.At(reg, args.fname()), " but got ", value);
      }
      break;
    default:
      Throw("ValueError", args.fname(), ": unknown match shape code ", code);
  }
});

// make_shape(heap, ndim, (code, v) x ndim) -> Shape; code 0 immediate, 1 heap[v].
POLYFFI_CORE_GLOBAL("vm.builtin.make_shape", [](const Args& args, RetValue* rv) {
  args.CheckMinArity(2);
  Heap heap = HeapArg(args, 0);
  int64_t size = IntArg(args, 1);
  if (size < 0 || size > (args.size() - 2) / 2) {
    Throw("TypeError", args.fname(), ": ", size, " dimensions need 2 + 2 * ", size,
          " arguments but got ", args.size());
  }
  auto shape = MakeObject<ShapeObj>(static_cast<size_t>(size));
  int64_t* dims = shape->data();
  for (int64_t i = 0; i < size; ++i) {
    int64_t code = IntArg(args, static_cast<int>(2 + i * 2));
    int64_t reg = IntArg(args, static_cast<int>(3 + i * 2));
    if (code == 0) {
      dims[i] = reg;
    } else if (code == 1) {
      dims[i] = heap.At(reg, args.fname());
    } else {
      Throw("ValueError", args.fname(), ": unknown make shape code ", code);
    }
  }
  rv->SetObject(std::move(shape));
});

// make_prim_value(heap, code, reg) -> int.
POLYFFI_CORE_GLOBAL("vm.builtin.make_prim_value", [](const Args& args, RetValue* rv) {
  args.CheckArity(3);
  Heap heap = HeapArg(args, 0);
  int64_t code = IntArg(args, 1), reg = IntArg(args, 2);
  if (code == 0) return rv->SetInt(reg);
  if (code == 1) return rv->SetInt(heap.At(reg, args.fname()));
  Throw("ValueError", args.fname(), ": unknown make shape code ", code);
});

// check_tensor_info(value, ndim, [dtype], err_ctx).
POLYFFI_CORE_GLOBAL("vm.builtin.check_tensor_info", [](const Args& args, RetValue*) {
  if (args.size() != 3) args.CheckArity(4);
  int64_t ndim = IntArg(args, 1);
  bool has_dtype = args.size() == 4 && args.code(2) != kTVMNullptr;
  const LazyContext ctx{args, args.size() - 1};
  DLTensor* t = TensorArg(args, 0);
  if (t == nullptr) {
    const char* got = TypeCodeName(args.code(0));
    std::string key;
    if (args.code(0) == kTVMObjectHandle && args.value(0).v_handle != nullptr) {
      key = TypeIndex2Key(static_cast<Object*>(args.value(0).v_handle)->type_index());
      got = key.c_str();
    }
    Throw("TypeError", ctx, " expect a Tensor but get ", got);
  }
  if (ndim != -1 && t->ndim != ndim) {
    Throw("ValueError", ctx, " expect Tensor with ndim ", ndim, " but get ", t->ndim);
  }
  if (has_dtype) {
    DLDataType want = DTypeArg(args, 2);
    if (want.code != t->dtype.code || want.bits != t->dtype.bits || want.lanes != t->dtype.lanes) {
      Throw("ValueError", ctx, " expect Tensor with dtype ", DataTypeName(want), " but get ",
            DataTypeName(t->dtype));
    }
  }
});

// check_shape_info(value, ndim, err_ctx).
POLYFFI_CORE_GLOBAL("vm.builtin.check_shape_info", [](const Args& args, RetValue*) {
  args.CheckArity(3);
  const LazyContext ctx{args, 2};
  ShapeObj* s = ShapeArg(args, 0);
  if (s == nullptr) Throw("TypeError", ctx, " expect a Shape but get ", TypeCodeName(args.code(0)));
  int64_t ndim = IntArg(args, 1);
  if (ndim != -1 && s->ndim() != ndim) {
    Throw("ValueError", ctx, " expect Shape with ndim ", ndim, " but get ", s->ndim());
  }
});

// check_prim_value_info(value, dtype, err_ctx): a number of the dtype's kind.
POLYFFI_CORE_GLOBAL("vm.builtin.check_prim_value_info", [](const Args& args, RetValue*) {
  args.CheckArity(3);
  const LazyContext ctx{args, 2};
  DLDataType t = DTypeArg(args, 1);
  int code = args.code(0);
  if (IsObjectCode(code) || code == kTVMStr || code == kTVMBytes) {
    Throw("TypeError", ctx, ", expected dtype ", DataTypeName(t), ", but received ",
          TypeCodeName(code));
  }
  bool ok;
  if (t.code == kDLBool || t.code == kDLInt || t.code == kDLUInt) {
    ok = code == kTVMArgInt || code == kTVMArgBool || code == kDLUInt;
  } else if (t.code == kDLFloat) {
    ok = code == kTVMArgFloat || code == kTVMArgInt || code == kTVMArgBool;
  } else if (t.code == kDLOpaqueHandle && !(t.bits == 0 && t.lanes == 0)) {
    ok = code == kTVMOpaqueHandle || code == kTVMNullptr;
  } else {
    Throw("TypeError", ctx, ", unsupported dtype ", DataTypeName(t));
  }
  if (!ok) {
    Throw("TypeError", ctx, ", expected dtype ", DataTypeName(t), ", but received ",
          TypeCodeName(code));
  }
});

// check_tuple_info(value, size, err_ctx).
POLYFFI_CORE_GLOBAL("vm.builtin.check_tuple_info", [](const Args& args, RetValue*) {
  args.CheckArity(3);
  const LazyContext ctx{args, 2};
  Object* o = IsObjectCode(args.code(0)) ? ObjectOfArg(args.value(0), args.code(0)) : nullptr;
  if (o == nullptr || o->type_index() != TypeIndex::kArray) {
    Throw("TypeError", ctx, " expect a Tuple but get ",
          o ? TypeIndex2Key(o->type_index()) : std::string(TypeCodeName(args.code(0))));
  }
  int64_t size = IntArg(args, 1);
  int64_t n = static_cast<int64_t>(static_cast<ArrayObj*>(o)->items.size());
  if (n != size) {
    Throw("ValueError", ctx, " expect a Tuple with ", size, " elements,  but get a Tuple with ", n,
          " elements.");
  }
});

// check_func_info(value, err_ctx).
POLYFFI_CORE_GLOBAL("vm.builtin.check_func_info", [](const Args& args, RetValue*) {
  args.CheckArity(2);
  Object* o = IsObjectCode(args.code(0)) ? ObjectOfArg(args.value(0), args.code(0)) : nullptr;
  if (o == nullptr || (o->type_index() != TypeIndex::kFunction &&
                       o->type_index() != ClosureObj::RuntimeTypeIndex())) {
    Throw("TypeError", ErrorContext(args, 1), " expect a Function but get ",
          o ? TypeIndex2Key(o->type_index()) : std::string(TypeCodeName(args.code(0))));
  }
});

// alloc_storage(vm, Shape, device_index, dtype_hint, scope) -> vm.Storage.
POLYFFI_CORE_GLOBAL("vm.builtin.alloc_storage", [](const Args& args, RetValue* rv) {
  args.CheckArity(5);
  VirtualMachine* vm = ContextVM(args, 0);
  const ShapeObj& shape = ShapeOf(args, 1);
  DLDevice dev;
  Allocator* alloc;
  VMDevice(vm, IntArg(args, 2), &dev, &alloc);
  DLDataType hint = DTypeArg(args, 3);
  if (!IsGlobalScope(args, 4)) {
    Throw("ValueError", args.fname(), ": memory scope '", args.Str(4),
          "' is not available on the CPU (only \"global\")");
  }
  size_t nbytes = CheckedBytes(shape.data(), static_cast<int>(shape.size()), hint);
  rv->SetObject(MakeObject<StorageObj>(alloc, nbytes, dev));
});

// alloc_tensor(storage, offset, Shape, dtype, [scope]) -> a tensor view into the storage.
POLYFFI_CORE_GLOBAL("vm.builtin.alloc_tensor", [](const Args& args, RetValue* rv) {
  if (args.size() != 4) args.CheckArity(5);
  Object* o =
      args.code(0) == kTVMObjectHandle ? static_cast<Object*>(args.value(0).v_handle) : nullptr;
  if (o == nullptr || o->type_index() != StorageObj::RuntimeTypeIndex()) {
    args.Mismatch(0, "vm.Storage");
  }
  auto storage = ObjectPtr<StorageObj>::Borrow(static_cast<StorageObj*>(o));
  int64_t offset = IntArg(args, 1);
  const ShapeObj& shape = ShapeOf(args, 2);
  DLDataType dtype = DTypeArg(args, 3);
  if (args.size() == 5 && !IsGlobalScope(args, 4)) {
    Throw("ValueError", args.fname(), ": memory scope '", args.Str(4),
          "' is not available on the CPU (only \"global\")");
  }
  rv->SetObject(
      TensorInStorage(storage, offset, shape.data(), static_cast<int>(shape.ndim()), dtype));
});

POLYFFI_CORE_GLOBAL("vm.builtin.null_value", [](const Args& args, RetValue* rv) {
  args.CheckArity(0);
  rv->SetNull();
});

POLYFFI_CORE_GLOBAL("vm.builtin.make_tuple", [](const Args& args, RetValue* rv) {
  auto arr = MakeObject<ArrayObj>();
  arr->items.resize(args.size());
  for (int i = 0; i < args.size(); ++i) arr->items[i].SetFromC(args.value(i), args.code(i));
  rv->SetObject(std::move(arr));
});

POLYFFI_CORE_GLOBAL("vm.builtin.tuple_getitem", [](const Args& args, RetValue* rv) {
  args.CheckArity(2);
  auto arr = args.ObjAs<ArrayObj>(0);
  int64_t i = IntArg(args, 1);
  int64_t n = static_cast<int64_t>(arr->items.size());
  if (i < 0 || i >= n) Throw("IndexError", "tuple index ", i, " out of range [0, ", n, ")");
  rv->CopyFrom(arr->items[i]);
});

POLYFFI_CORE_GLOBAL("vm.builtin.tuple_reset_item", [](const Args& args, RetValue*) {
  args.CheckArity(2);
  auto arr = args.ObjAs<ArrayObj>(0);
  int64_t i = IntArg(args, 1);
  int64_t n = static_cast<int64_t>(arr->items.size());
  if (i < 0 || i >= n) Throw("IndexError", "tuple index ", i, " out of range [0, ", n, ")");
  arr->items[i].SetNull();
});

// read_if_cond(cond) -> bool: an int/bool, or the first element of an integer tensor.
POLYFFI_CORE_GLOBAL("vm.builtin.read_if_cond", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  int code = args.code(0);
  if (code == kTVMArgInt || code == kTVMArgBool || code == kDLUInt) {
    return rv->SetBool(args.value(0).v_int64 != 0);
  }
  DLTensor* t = TensorArg(args, 0);
  if (t == nullptr) args.Mismatch(0, "bool or Tensor");
  if (t->dtype.code != kDLInt && t->dtype.code != kDLUInt && t->dtype.code != kDLBool) {
    Throw("TypeError", args.fname(), ": the condition tensor must be of an integer type, got ",
          DataTypeName(t->dtype));
  }
  if (CompactBytes(*t) == 0) Throw("ValueError", args.fname(), ": the condition tensor is empty");
  const uintptr_t base = reinterpret_cast<uintptr_t>(t->data);
  if (base == 0) Throw("ValueError", args.fname(), ": the condition tensor has no data (NULL)");
  if (base + t->byte_offset < base) {
    Throw("ValueError", args.fname(),
          ": the condition tensor's byte_offset wraps its data pointer");
  }
  const char* p = static_cast<const char*>(t->data) + t->byte_offset;
  const int bits = t->dtype.bits;
  if (bits != 1 && bits != 8 && bits != 16 && bits != 32 && bits != 64) {
    Throw("TypeError", args.fname(), ": unknown scalar int type ", DataTypeName(t->dtype));
  }
  // The first element is nonzero when any of its bytes is (a uint1 takes one byte).
  const size_t width = bits == 1 ? 1 : static_cast<size_t>(bits) / 8;
  rv->SetBool(std::any_of(p, p + width, [](char byte) { return byte != 0; }));
});

POLYFFI_CORE_GLOBAL("vm.builtin.copy", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  ReturnArg(args, 0, rv);
});

// Argument i as a tensor, or TVM's TypeError naming the builtin.
DLTensor* RequiredTensorArg(const Args& args, int i) {
  DLTensor* t = TensorArg(args, i);
  if (t == nullptr) {
    Throw("TypeError", args.fname(), " expects a Tensor or DLTensor*, but get ",
          TypeCodeName(args.code(i)));
  }
  return t;
}

POLYFFI_CORE_GLOBAL("vm.builtin.shape_of", [](const Args& args, RetValue* rv) {
  args.CheckArity(1);
  DLTensor* t = RequiredTensorArg(args, 0);
  rv->SetObject(MakeObject<ShapeObj>(t->shape, t->shape + t->ndim));
});

// reshape(tensor, Shape) -> a view (the tensor stays alive while the view lives).
POLYFFI_CORE_GLOBAL("vm.builtin.reshape", [](const Args& args, RetValue* rv) {
  args.CheckArity(2);
  DLTensor* t = RequiredTensorArg(args, 0);
  ObjectPtr<Object> owner;
  if (args.code(0) == kTVMNDArrayHandle) {
    owner = ObjectPtr<Object>::Borrow(NDArrayObj::FromHandle(t));
  }
  rv->SetObject(ReshapeView(*t, std::move(owner), ShapeOf(args, 1)));
});

// make_closure(closure, args...) -> a closure with args bound after the call's own arguments.
POLYFFI_CORE_GLOBAL("vm.builtin.make_closure", [](const Args& args, RetValue* rv) {
  args.CheckMinArity(1);
  Object* o =
      args.code(0) == kTVMObjectHandle ? static_cast<Object*>(args.value(0).v_handle) : nullptr;
  if (o == nullptr || o->type_index() != ClosureObj::RuntimeTypeIndex()) {
    args.Mismatch(0, "relax.vm.Closure");
  }
  auto* base = static_cast<ClosureObj*>(o);
  auto clo = MakeObject<ClosureObj>();
  clo->func_name = base->func_name;
  clo->vm_func = base->vm_func;
  clo->exec = base->exec;
  clo->packed = base->packed;
  clo->include_return = base->include_return;
  clo->bound_args.resize(args.size() - 1);
  for (int i = 1; i < args.size(); ++i) {
    clo->bound_args[i - 1].SetFromC(args.value(i), args.code(i));
  }
  for (const RetValue& b : base->bound_args) {
    clo->bound_args.emplace_back();
    clo->bound_args.back().CopyFrom(b);
  }
  rv->SetObject(std::move(clo));
});

// invoke_closure(vm, closure or function, args...).
POLYFFI_CORE_GLOBAL("vm.builtin.invoke_closure", [](const Args& args, RetValue* rv) {
  args.CheckMinArity(2);
  VirtualMachine* vm = ContextVM(args, 0);
  Object* callee = IsObjectCode(args.code(1)) ? ObjectOfArg(args.value(1), args.code(1)) : nullptr;
  InvokeClosureOn(vm, callee, const_cast<TVMValue*>(args.values()) + 2,
                  const_cast<int*>(args.codes()) + 2, args.size() - 2, rv);
});

// call_tir_dyn(func, args..., Shape): func(args..., shape[0], shape[1], ...).
POLYFFI_CORE_GLOBAL("vm.builtin.call_tir_dyn", [](const Args& args, RetValue* rv) {
  args.CheckMinArity(2);
  auto f = args.ObjAs<FunctionObj>(0);
  const ShapeObj& extra = ShapeOf(args, args.size() - 1);
  const int n = args.size() - 2;
  std::vector<TVMValue> v(args.values() + 1, args.values() + 1 + n);
  std::vector<int> c(args.codes() + 1, args.codes() + 1 + n);
  for (size_t i = 0; i < extra.size(); ++i) {
    TVMValue x;
    x.v_int64 = extra.data()[i];
    v.push_back(x);
    c.push_back(kTVMArgInt);
  }
  f->Call(v.data(), c.data(), static_cast<int>(v.size()), rv);
});

}  // namespace relax_vm
}  // namespace polyffi
