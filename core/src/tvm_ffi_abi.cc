// tvm-ffi ABI kernels (TVM >= 0.20) as ordinary functions, and the services their context
// slots point to. See docs/spec/tvm-formats.md part 2 sections 1 (kernel libraries) and 6 (what
// a runtime has to provide), and docs/abi-decisions.md.
//
// Direction 1, a caller of ours calls a kernel: classic TVMValue + type code arguments become
// TVMFFIAny values, the result cell is preset to None, and -1 turns the raised error (kind +
// message, set through TVMFFIErrorSetRaisedFromCStrParts) back into our Error. Tensors whose
// data is not 64-byte aligned are staged through an aligned copy and copied back.
// Direction 2, a kernel calls a host function (__TVMFFIFunctionCall on a handle it got from
// __TVMFFIEnvModLookupFromImports): TVMFFIAny arguments become classic values, our errors
// become raised errors and -1.
#include "polyffi/tvm_ffi_abi.h"

#include <dlfcn.h>
#include <polyffi/c_backend_api.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "polyffi/container.h"
#include "polyffi/ndarray.h"
#include "polyffi/registry.h"
#include "polyffi/thread_pool.h"

namespace polyffi {
namespace tvmffi {
namespace {

/*!
 * \brief A kernel whose library bound TVMFFIErrorSetRaisedFromCStrParts to another tvm-ffi
 *  runtime in the global scope (libtvm_ffi loaded RTLD_GLOBAL before us) raised its error
 *  there: fetch it through that runtime's own C API. False when there is none.
 */
bool TakeForeignRaised(std::string* kind, std::string* message) {
  using MoveFromRaised = void (*)(void** result);
  using DecRef = int (*)(void* obj);
  // Looked up each time (cold path): such a runtime may be loaded after us.
  auto move = reinterpret_cast<MoveFromRaised>(dlsym(RTLD_DEFAULT, "TVMFFIErrorMoveFromRaised"));
  auto decref = reinterpret_cast<DecRef>(dlsym(RTLD_DEFAULT, "TVMFFIObjectDecRef"));
  if (move == nullptr || decref == nullptr) return false;
  void* err = nullptr;
  move(&err);
  if (err == nullptr) return false;
  struct ByteArray {
    const char* data;
    size_t size;
  };
  // TVMFFIErrorCell after the object header: kind, message (then backtrace, updater).
  const auto* cell =
      reinterpret_cast<const ByteArray*>(static_cast<char*>(err) + kObjectHeaderBytes);
  kind->assign(cell[0].data, cell[0].size);
  message->assign(cell[1].data, cell[1].size);
  decref(err);
  return true;
}

/*! \brief After a kernel returned nonzero: throw what it raised. */
[[noreturn, gnu::cold]] void ThrowRaised(const std::string& name, int rc) {
  // What the kernel raised is the last error, marked (error.h).
  RaisedMark mark = TakeRaisedMark();
  if (mark == RaisedMark::kEnvError || rc == -2) {
    throw EnvErrorAlreadySet{LastErrorIsEnvError() ? GetLastError() : std::string()};
  }
  if (mark == RaisedMark::kError) throw Error::Parse(GetLastError());
  std::string kind, message;
  if (TakeForeignRaised(&kind, &message)) throw Error(std::move(kind), std::move(message));
  Throw("RuntimeError", "tvm-ffi function '", name, "' returned ", rc, " without raising an error");
}

// ---- Scalars, both ways (kernel arguments and results, host call arguments and results) -------

/*!
 * \brief A number, opaque handle, dtype or device as a tvm-ffi value (zero_padding and the
 *  value word already cleared); false for any other type code. A NULL handle is None, as
 *  tvm-ffi makes it.
 */
inline bool ScalarToFFI(TVMValue v, int code, Any* out) {
  static_assert(sizeof(TVMValue) == sizeof(out->v_int64), "one value word on both sides");
  int32_t index;
  switch (code) {
    case kTVMArgInt:
    case kDLUInt:
      index = kInt;
      break;
    case kTVMArgBool:
      index = kBool;
      v.v_int64 = v.v_int64 != 0;
      break;
    case kTVMArgFloat:
      index = kFloat;
      break;
    case kTVMNullptr:
      index = kNone;
      v.v_int64 = 0;
      break;
    case kTVMOpaqueHandle:
      index = v.v_handle ? kOpaquePtr : kNone;
      break;
    case kTVMDataType: {
      DLDataType t = v.v_type;
      v.v_int64 = 0;  // the word's other half stays zero
      v.v_type = t;
      index = kDataType;
      break;
    }
    case kDLDevice:
      index = kDevice;
      break;
    default:
      return false;
  }
  out->type_index = index;
  std::memcpy(&out->v_int64, &v, sizeof(v));
  return true;
}

/*!
 * \brief A tvm-ffi None, number, opaque handle, dtype, device, tensor pointer or C string as a
 *  classic value (NULL pointers: kTVMNullptr); false for any other type index.
 */
inline bool ScalarFromFFI(const Any& a, TVMValue* v, int* code) {
  switch (a.type_index) {
    case kNone:
      *code = kTVMNullptr;
      break;
    case kInt:
      *code = kTVMArgInt;
      break;
    case kBool:
      *code = kTVMArgBool;
      break;
    case kFloat:
      *code = kTVMArgFloat;
      break;
    case kOpaquePtr:
      *code = a.v_ptr ? kTVMOpaqueHandle : kTVMNullptr;
      break;
    case kDLTensorPtr:
      *code = a.v_ptr ? kTVMDLTensorHandle : kTVMNullptr;
      break;
    case kDataType:
      *code = kTVMDataType;
      break;
    case kDevice:
      *code = kDLDevice;
      break;
    case kRawStr:
      *code = a.v_c_str ? kTVMStr : kTVMNullptr;
      break;
    default:
      return false;
  }
  std::memcpy(v, &a.v_int64, sizeof(*v));
  if (*code == kTVMNullptr) {
    v->v_int64 = 0;
  } else if (*code == kTVMArgBool) {
    v->v_int64 = a.v_int64 != 0;
  } else if (*code == kTVMDataType) {
    v->v_int64 = 0;
    v->v_type = a.v_dtype;
  }
  return true;
}

// ---- Classic -> tvm-ffi (arguments of a kernel) --------------------------------------------

/*!
 * \brief Tensors handed to a kernel: the caller's DLTensor when it is already what a kernel
 *  assumes (64-byte aligned data, byte_offset 0), else a view folding the offset into data,
 *  and when data + offset is not aligned, a view of an aligned copy that is copied back.
 */
class Staging {
 public:
  explicit Staging(int num_args) : num_args_(num_args) {}
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  ~Staging() {
    for (Copy& c : copies_) Release(c);
  }

  /*! \brief What the kernel gets for t; inline for the common case (aligned, no offset). */
  DLTensor* Stage(DLTensor* t, int index, const std::string& name) {
    if (t == nullptr || t->data == nullptr ||
        (t->byte_offset == 0 && reinterpret_cast<uintptr_t>(t->data) % kKernelAlignment == 0)) {
      return t;
    }
    return StageSlow(t, index, name);
  }

  [[gnu::noinline]] DLTensor* StageSlow(DLTensor* t, int index, const std::string& name) {
    if (DeviceTypeOf(t->device) != kDLCPU) return t;
    uintptr_t addr = reinterpret_cast<uintptr_t>(t->data) + t->byte_offset;
    if (addr % kKernelAlignment == 0) {
      if (t->byte_offset == 0) return t;
      DLTensor* view = NewView(*t);
      view->data = reinterpret_cast<void*>(addr);
      view->byte_offset = 0;
      return view;
    }
    if (t->ndim < 0 || (t->ndim > 0 && t->shape == nullptr)) {
      Throw("ValueError", name, ": argument ", index, " is a tensor with ndim ", t->ndim,
            t->ndim < 0 ? "" : " and no shape");
    }
    if (!IsCompact(*t)) {
      Throw("ValueError", name, ": argument ", index, " is a strided tensor whose data is not ",
            kKernelAlignment, "-byte aligned; tvm-ffi kernels need aligned, compact tensors");
    }
    size_t bytes = CheckedBytes(t->shape, t->ndim, t->dtype);
    void* temp = nullptr;
    for (const Copy& c : copies_) {  // one copy per distinct buffer (in-place calls)
      if (c.caller == reinterpret_cast<void*>(addr) && c.bytes == bytes) temp = c.temp;
    }
    if (temp == nullptr) {
      Copy c{reinterpret_cast<void*>(addr), nullptr, bytes, bytes <= kPooledBytes};
      // Small and medium buffers come from the calling thread's workspace pool (64-byte
      // aligned, reused: no allocation and no fresh pages once warm); large ones are not kept.
      if (c.pooled) {
        c.temp = WorkspaceAlloc(std::max<size_t>(bytes, 1));
      } else {
        c.temp = std::aligned_alloc(
            kKernelAlignment, (bytes + kKernelAlignment - 1) / kKernelAlignment * kKernelAlignment);
        if (c.temp == nullptr) Throw("RuntimeError", "out of memory staging ", bytes, " bytes");
      }
      copies_.push_back(c);
      temp = c.temp;
      std::memcpy(temp, reinterpret_cast<void*>(addr), bytes);
    }
    DLTensor* view = NewView(*t);
    view->data = temp;
    view->byte_offset = 0;
    return view;
  }

  /*!
   * \brief Write back what the kernel changed (outputs are destination-passing). Unchanged
   *  buffers are not written, so read-only inputs stay untouched.
   */
  void CopyBack() {
    for (const Copy& c : copies_) {
      if (std::memcmp(c.caller, c.temp, c.bytes) != 0) std::memcpy(c.caller, c.temp, c.bytes);
    }
  }

 private:
  static constexpr size_t kPooledBytes = size_t{16} << 20;
  struct Copy {
    void* caller;
    void* temp;
    size_t bytes;
    bool pooled;
  };
  static void Release(const Copy& c) {
    if (c.pooled) {
      WorkspaceFree(c.temp);
    } else {
      std::free(c.temp);
    }
  }
  DLTensor* NewView(const DLTensor& t) {
    // At most one view per argument: reserved once, so earlier views never move.
    if (views_.capacity() == 0) views_.reserve(num_args_);
    views_.push_back(t);
    return &views_.back();
  }
  int num_args_;
  std::vector<Copy> copies_;
  std::vector<DLTensor> views_;
};

void ToKernelArg(TVMValue v, int code, int index, const std::string& name, Staging* staging,
                 Any* out) {
  out->zero_padding = 0;
  out->v_int64 = 0;
  switch (code) {  // tensors first: they are most of a kernel's arguments
    case kTVMDLTensorHandle:
    case kTVMNDArrayHandle:  // the handle of an NDArray is its DLTensor
      out->type_index = v.v_handle ? kDLTensorPtr : kNone;
      out->v_ptr = staging->Stage(static_cast<DLTensor*>(v.v_handle), index, name);
      return;
    case kTVMStr:
      out->type_index = v.v_str ? kRawStr : kNone;
      out->v_c_str = v.v_str;
      return;
    case kTVMBytes:  // TVMByteArray and TVMFFIByteArray are both {const char*, size_t}
      out->type_index = v.v_handle ? kByteArrayPtr : kNone;
      out->v_ptr = v.v_handle;
      return;
    case kTVMObjectHandle:
    case kTVMObjectRValueRefArg: {
      Object* obj = ObjectOfArg(v, code);
      if (obj == nullptr) {
        out->type_index = kNone;
        return;
      }
      if (obj->type_index() == TypeIndex::kNDArray) {
        out->type_index = kDLTensorPtr;
        out->v_ptr = staging->Stage(static_cast<NDArrayObj*>(obj)->handle(), index, name);
        return;
      }
      if (obj->type_index() == TypeIndex::kString) {
        out->type_index = kRawStr;
        out->v_c_str = static_cast<StringObj*>(obj)->data.c_str();
        return;
      }
      Throw("TypeError", name, ": argument ", index, " is a ", TypeIndex2Key(obj->type_index()),
            ", which a tvm-ffi kernel cannot take");
    }
    default:
      if (ScalarToFFI(v, code, out)) return;
      Throw("TypeError", name, ": argument ", index, " is a ", TypeCodeName(code),
            ", which a tvm-ffi kernel cannot take");
  }
}

/*! \brief A kernel's result cell back into ours (compiled kernels leave it None). */
void FromKernelResult(const Any& r, const std::string& name, RetValue* rv) {
  if (r.type_index == kNone) return rv->SetNull();  // what compiled kernels leave
  TVMValue v;
  int code;
  if (ScalarFromFFI(r, &v, &code)) return rv->SetFromC(v, code);
  switch (r.type_index) {
    case kSmallStr:
    case kSmallBytes: {
      size_t n = std::min<size_t>(r.zero_padding, sizeof(r.v_bytes));
      if (r.type_index == kSmallStr) return rv->SetStr(r.v_bytes, n);
      return rv->SetBytes(r.v_bytes, n);
    }
    default:
      // An object of another runtime: we could neither hold nor release it correctly.
      Throw("TypeError", "tvm-ffi function '", name, "' returned a value of type index ",
            r.type_index, ", which polyffi cannot take");
  }
}

class KernelFunction final : public FunctionObj {
 public:
  KernelFunction(SafeCall f, ObjectPtr<ModuleObj> owner, std::string name)
      : FunctionObj(Invoke), f_(f), owner_(std::move(owner)), name_(std::move(name)) {}

 private:
  static void Invoke(const FunctionObj* self, TVMValue* values, int* codes, int n, RetValue* rv) {
    auto* me = static_cast<const KernelFunction*>(self);
    constexpr int kInline = 8;
    Any inline_args[kInline];
    std::vector<Any> heap_args;
    Any* args = inline_args;
    if (n > kInline) {
      heap_args.resize(n);
      args = heap_args.data();
    }
    Staging staging(n);
    for (int i = 0; i < n; ++i) ToKernelArg(values[i], codes[i], i, me->name_, &staging, &args[i]);
    Any result;
    result.type_index = kNone;
    result.zero_padding = 0;
    result.v_int64 = 0;
    int rc = me->f_(nullptr, n > 0 ? args : nullptr, n, &result);
    staging.CopyBack();
    if (rc != 0) ThrowRaised(me->name_, rc);
    FromKernelResult(result, me->name_, rv);
  }
  SafeCall f_;
  ObjectPtr<ModuleObj> owner_;  // keeps the library (and its slots) alive
  std::string name_;
};

// ---- tvm-ffi -> classic (a kernel calling a host function) ---------------------------------

/*! \brief Storage for the converted arguments of one host call. */
struct HostArgs {
  std::vector<TVMValue> values;
  std::vector<int> codes;
  std::vector<std::unique_ptr<std::string>> strings;  // NUL-terminated copies
  std::vector<std::unique_ptr<TVMByteArray>> bytes;

  void Add(TVMValue v, int code) {
    values.push_back(v);
    codes.push_back(code);
  }
  void AddStr(const char* data, size_t n) {
    strings.push_back(std::make_unique<std::string>(data, n));
    TVMValue v;
    v.v_str = strings.back()->c_str();
    Add(v, kTVMStr);
  }
  void AddBytes(const char* data, size_t n) {
    strings.push_back(std::make_unique<std::string>(data, n));
    bytes.push_back(std::make_unique<TVMByteArray>());
    bytes.back()->data = strings.back()->data();
    bytes.back()->size = n;
    TVMValue v;
    v.v_handle = bytes.back().get();
    Add(v, kTVMBytes);
  }
};

void FromHostCallArg(const Any& a, int index, HostArgs* out) {
  TVMValue v;
  int code;
  if (ScalarFromFFI(a, &v, &code)) return out->Add(v, code);
  struct ByteArray {
    const char* data;
    size_t size;
  };
  switch (a.type_index) {
    case kByteArrayPtr: {
      auto* b = static_cast<const ByteArray*>(a.v_ptr);
      if (b == nullptr || (b->data == nullptr && b->size != 0)) {
        Throw("ValueError", "argument ", index, " is a NULL byte array");
      }
      return out->AddBytes(b->data, b->size);
    }
    case kSmallStr:
    case kSmallBytes: {
      size_t n = std::min<size_t>(a.zero_padding, sizeof(a.v_bytes));
      if (a.type_index == kSmallStr) return out->AddStr(a.v_bytes, n);
      return out->AddBytes(a.v_bytes, n);
    }
    case kStr:
    case kBytes:
    case kTensor: {
      if (a.v_ptr == nullptr) Throw("ValueError", "argument ", index, " is a NULL object");
      char* cell = static_cast<char*>(a.v_ptr) + kObjectHeaderBytes;
      if (a.type_index == kTensor) {
        v.v_handle = cell;  // the DLTensor follows the header
        return out->Add(v, kTVMDLTensorHandle);
      }
      auto* b = reinterpret_cast<const ByteArray*>(cell);
      if (a.type_index == kStr) return out->AddStr(b->data, b->size);
      return out->AddBytes(b->data, b->size);
    }
    default:
      Throw("TypeError", "argument ", index, " has tvm-ffi type index ", a.type_index,
            ", which polyffi functions cannot take");
  }
}

/*!
 * \brief What a host function returned, as a tvm-ffi value. The kernel never releases its
 *  result cell, so whatever the value points to (a string, an NDArray) is kept here, per
 *  thread, until the next host call on the thread.
 */
void ToHostCallResult(RetValue* rv, Any* out) {
  thread_local RetValue kept;
  out->zero_padding = 0;
  out->v_int64 = 0;
  TVMValue v = rv->value();
  if (ScalarToFFI(v, rv->type_code(), out)) return;
  switch (rv->type_code()) {
    case kTVMDLTensorHandle:
      out->type_index = kDLTensorPtr;
      out->v_ptr = v.v_handle;
      return;
    case kTVMStr:
      kept = std::move(*rv);
      out->type_index = kRawStr;
      out->v_c_str = kept.str().c_str();
      return;
    case kTVMNDArrayHandle:
      kept = std::move(*rv);
      out->type_index = kDLTensorPtr;
      out->v_ptr = static_cast<NDArrayObj*>(kept.object())->handle();
      return;
    default:
      Throw("TypeError", "a host function returned a ", TypeCodeName(rv->type_code()),
            " to a tvm-ffi kernel, which can only take numbers, handles, strings and tensors");
  }
}

/*! \brief Our error as a raised tvm-ffi error; the return code for the kernel. */
int RaiseCurrent() {
  int rc = SetLastErrorFromCurrentException();
  MarkLastErrorRaised(rc == -2 ? RaisedMark::kEnvError : RaisedMark::kError);
  return rc;
}

// ---- The context slots ---------------------------------------------------------------------

int FunctionCall(void* handle, Any* args, int32_t num_args, Any* result) {
  try {
    auto* f = static_cast<Object*>(handle);
    if (f == nullptr) Throw("ValueError", "__TVMFFIFunctionCall: function handle is NULL");
    if (f->type_index() != TypeIndex::kFunction) {
      Throw("TypeError", "__TVMFFIFunctionCall: handle is a ", TypeIndex2Key(f->type_index()),
            ", not a function");
    }
    if (num_args < 0 || (num_args > 0 && args == nullptr) || result == nullptr) {
      Throw("ValueError", "__TVMFFIFunctionCall: bad arguments (", num_args, " args)");
    }
    HostArgs host;
    host.values.reserve(num_args);
    host.codes.reserve(num_args);
    for (int32_t i = 0; i < num_args; ++i) FromHostCallArg(args[i], i, &host);
    RetValue rv;
    static_cast<FunctionObj*>(f)->Call(host.values.data(), host.codes.data(), num_args, &rv);
    ToHostCallResult(&rv, result);
    return 0;
  } catch (...) {
    return RaiseCurrent();
  }
}

int EnvModLookupFromImports(void* library_ctx, const char* name, void** out) {
  try {
    auto* m = static_cast<Object*>(library_ctx);
    if (m == nullptr || m->type_index() != TypeIndex::kModule) {
      Throw("ValueError", "__TVMFFIEnvModLookupFromImports: the library context is not a module");
    }
    if (name == nullptr || out == nullptr) {
      Throw("ValueError", "__TVMFFIEnvModLookupFromImports: name or out is NULL");
    }
    *out = static_cast<ModuleObj*>(m)->GetFuncFromImports(name);
    return 0;
  } catch (...) {
    return RaiseCurrent();
  }
}

int HandleInitOnce(void** handle, int (*init)(void** result)) {
  if (handle == nullptr || init == nullptr) {
    SetRaisedError("ValueError", "__TVMFFIHandleInitOnce: handle or init function is NULL");
    return -1;
  }
  if (__atomic_load_n(handle, __ATOMIC_ACQUIRE) != nullptr) return 0;
  // An init function may itself initialise another handle: one recursive lock for all.
  static std::recursive_mutex* mu = new std::recursive_mutex();
  std::lock_guard<std::recursive_mutex> lock(*mu);
  if (*handle != nullptr) return 0;
  void* result = nullptr;
  int rc = init(&result);
  if (rc != 0) return rc;
  if (result == nullptr) {
    SetRaisedError("RuntimeError", "__TVMFFIHandleInitOnce: the init function produced NULL");
    return -1;
  }
  __atomic_store_n(handle, result, __ATOMIC_RELEASE);
  return 0;
}

}  // namespace

const ContextSlot kContextSlots[] = {
    {"__TVMFFIFunctionCall", reinterpret_cast<void*>(&FunctionCall)},
    {"__TVMFFIErrorSetRaisedFromCStr", reinterpret_cast<void*>(&TVMFFIErrorSetRaisedFromCStr)},
    {"__TVMFFIEnvModLookupFromImports", reinterpret_cast<void*>(&EnvModLookupFromImports)},
    {"__TVMFFIHandleInitOnce", reinterpret_cast<void*>(&HandleInitOnce)},
    {nullptr, nullptr},
};

ObjectPtr<FunctionObj> WrapKernel(void* faddr, ObjectPtr<ModuleObj> owner, std::string name) {
  return MakeObject<KernelFunction>(reinterpret_cast<SafeCall>(faddr), std::move(owner),
                                    std::move(name));
}

void PromoteSelfToGlobalScope() {
  static std::once_flag once;
  std::call_once(once, [] {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&TVMFFIErrorSetRaisedFromCStrParts), &info) == 0 ||
        info.dli_fname == nullptr) {
      return;
    }
    // The handle is kept: libpolyffi must outlive every library bound to its symbols. For a
    // program linking the core statically, the main program is not found under its name
    // and nothing changes (its exported symbols are global already).
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
  });
}

}  // namespace tvmffi
}  // namespace polyffi
