// Value conversion, JS <-> TVMValue, in one place.
//
// In: a safe-integer number is an int (-0 stays a float), any other number a float, a bigint an
// int64 (RangeError outside), ffi.float / ffi.int boxes force the code, booleans, strings (with
// embedded NUL: a runtime.String object), Buffer/ArrayBuffer -> bytes, TypedArray -> a DLTensor
// view, null/undefined -> null, JS function -> callback, ffi.Shape -> runtime.ShapeTuple, any
// other array -> runtime.Array, Map or plain object -> runtime.Map, Device, DataType, and every
// handle-carrying wrapper.
// Out: an int within +-(2^53-1) is a number, beyond it a bigint; bytes are a Buffer; a
// runtime.ShapeTuple is an ffi.Shape (an Array) of such numbers and bigints.
#include <polyffi/dtype_string.h>
#include <polyffi/type_code_name.h>

#include <cmath>
#include <cstring>

#include "common.h"

namespace polyffi_node {

const char* CodeName(int code) { return PolyffiTypeCodeName(code); }

// Throws the error for a failed shared helper (polyffi/binding_common.h) about `which`.
static napi_value ThrowGlobalFailure(napi_env env, Instance* inst, Global which,
                                     polyffi::binding::Failure failure) {
  using polyffi::binding::Failure;
  if (failure == Failure::kLookupFailed || failure == Failure::kCallFailed) {
    return ThrowLastError(env, inst);
  }
  if (failure == Failure::kMissing) {
    return ThrowFFIError(env, inst, "RuntimeError",
                         std::string("polyffi: core global function ") +
                             polyffi::binding::GlobalName(which) + " is missing");
  }
  if (which == Global::kArray || which == Global::kMap) {
    return ThrowFFIError(env, inst, "RuntimeError",
                         "polyffi: container constructor returned no object");
  }
  const bool bytes = which == Global::kStringBytes || which == Global::kShapeTupleBytes;
  return ThrowFFIError(env, inst, "RuntimeError",
                       std::string("polyffi: ") + polyffi::binding::GlobalName(which) +
                           (bytes ? " returned no bytes" : " returned no object"));
}

// ---- ArgPack ------------------------------------------------------------------------------------

char* ArgPack::Alloc(size_t n) {
  n = (n + 7) & ~size_t{7};
  if (small_used_ + n <= sizeof(small_)) {
    char* p = small_ + small_used_;
    small_used_ += n;
    return p;
  }
  auto& blocks = extra().blocks;
  blocks.emplace_back(new char[n]);
  return blocks.back().get();
}

void ArgPack::Release() {
  small_used_ = 0;
  if (extra_ == nullptr) return;
  auto& temps = extra_->temps;
  for (auto it = temps.rbegin(); it != temps.rend(); ++it) {
    if (it->kind == kTempRef) {
      napi_delete_reference(inst_->env, static_cast<napi_ref>(it->ptr));
    } else if (it->kind == kTempPin) {
      Unpin(static_cast<Ref*>(it->ptr));
    } else if (it->kind == kTempLive) {
      EndLiveCallback(static_cast<CallbackRes*>(it->ptr));
    } else {
      FreeHandle(it->ptr, it->kind);
    }
  }
  temps.clear();
  extra_->blocks.clear();
}

void ArgPack::KeepAlive(napi_env env, napi_value v) {
  if (!async_) return;
  napi_ref ref = nullptr;
  if (napi_create_reference(env, v, 1, &ref) == napi_ok) AddTemp(ref, kTempRef);
}

// A callback's result that cannot cross: every binding says "callback returned an unsupported".
static const char kUnsupportedReturn[] =
    "polyffi: callback returned an unsupported JavaScript value (";

bool ArgPack::SetSlow(napi_env env, napi_value v, TVMValue* out, int* code, bool for_return) {
  // Strings next (no napi_typeof for them): SetString reports -1 when v is not a string.
  int as_string = SetString(env, v, out, code);
  if (as_string >= 0) return as_string == 1;
  napi_valuetype t;
  napi_typeof(env, v, &t);
  switch (t) {
    case napi_boolean: {
      bool b;
      napi_get_value_bool(env, v, &b);
      out->v_int64 = b ? 1 : 0;
      *code = kTVMArgBool;
      return true;
    }
    case napi_undefined:
    case napi_null:
      out->v_handle = nullptr;
      *code = kTVMNullptr;
      return true;
    case napi_bigint: {
      bool lossless = false;
      napi_get_value_bigint_int64(env, v, &out->v_int64, &lossless);
      if (!lossless) {
        ThrowRange(env, for_return ? "polyffi: callback returned a bigint outside the int64 range"
                                   : "polyffi: bigint argument is outside the int64 range");
        return false;
      }
      *code = kTVMArgInt;
      return true;
    }
    case napi_function: {
      if (Ref* ref = RefOf(env, v)) {
        if (POLYFFI_UNLIKELY(ref->handle == nullptr)) {
          ThrowFFIError(env, inst_, "ValueError", "polyffi: PackedFunc used after dispose()");
          return false;
        }
        out->v_handle = ref->handle;
        *code = kTVMPackedFuncHandle;
        if (async_) {
          ++ref->pins;
          AddTemp(ref, kTempPin);
        }
        return true;
      }
      // A synchronous call's callback calls v itself while the call lasts (released first).
      CallbackRes* live = nullptr;
      TVMFunctionHandle f = CallbackFromJs(env, inst_, v, nullptr, async_ ? nullptr : &live);
      if (f == nullptr) return false;
      AddTemp(f, kTVMPackedFuncHandle);
      if (live != nullptr) AddTemp(live, kTempLive);
      out->v_handle = f;
      *code = kTVMPackedFuncHandle;
      return true;
    }
    case napi_object:
      return SetObject(env, v, out, code, for_return);
    case napi_external: {
      napi_get_value_external(env, v, &out->v_handle);
      *code = kTVMOpaqueHandle;
      return true;
    }
    default:
      ThrowType(env, for_return ? kUnsupportedReturn + std::string("a symbol)")
                                : "polyffi: cannot pass a symbol to a packed function");
      return false;
  }
}

int ArgPack::SetString(napi_env env, napi_value v, TVMValue* out, int* code) {
  size_t len = 0;
  char* buf;
  // Short strings: one UTF-8 pass straight into the inline buffer. A result within 4 bytes of
  // the end may have been cut short (before a multi-byte character), so then the exact length
  // is asked for and the string copied again.
  size_t room = sizeof(small_) - small_used_;
  if (room >= 64) {
    buf = small_ + small_used_;
    if (napi_get_value_string_utf8(env, v, buf, room, &len) != napi_ok) return -1;
    if (len + 5 <= room) {
      small_used_ += (len + 8) & ~size_t{7};
    } else {
      napi_get_value_string_utf8(env, v, nullptr, 0, &len);
      buf = Alloc(len + 1);
      napi_get_value_string_utf8(env, v, buf, len + 1, &len);
    }
  } else {
    if (napi_get_value_string_utf8(env, v, nullptr, 0, &len) != napi_ok) return -1;
    buf = Alloc(len + 1);
    napi_get_value_string_utf8(env, v, buf, len + 1, &len);
  }
  if (POLYFFI_LIKELY(std::memchr(buf, 0, len) == nullptr)) {
    out->v_str = buf;
    *code = kTVMStr;
    return 1;
  }
  // Embedded NUL: a length-carrying runtime.String object (docs/spec/abi.md section 6, objects
  // and containers).
  TVMByteArray arr{buf, len};
  TVMValue a;
  a.v_handle = &arr;
  int a_code = kTVMBytes;
  return MakeObject(env, Global::kString, &a, &a_code, 1, out, code) ? 1 : 0;
}

static bool InstanceOf(napi_env env, napi_value v, napi_ref cls) {
  bool r = false;
  return cls != nullptr && napi_instanceof(env, v, Get(env, cls), &r) == napi_ok && r;
}

bool ArgPack::SetTypedArray(napi_env env, napi_value v, TVMValue* out, int* code, bool for_return) {
  napi_typedarray_type type;
  size_t length = 0, offset = 0;
  void* data = nullptr;
  napi_value ab;
  napi_get_typedarray_info(env, v, &type, &length, &data, &ab, &offset);
  DLDataType dtype;
  if (!DTypeOfTypedArray(type, &dtype)) {
    ThrowType(env, "polyffi: this TypedArray has no DLPack element type");
    return false;
  }
  int64_t shape = static_cast<int64_t>(length);
  if (for_return) {
    // A callback's result outlives its frame: hand the runtime a copy it owns.
    DLTensor* arr = nullptr;
    if (TVMArrayAlloc(&shape, 1, dtype.code, dtype.bits, dtype.lanes, kDLCPU, 0, &arr) != 0 ||
        TVMArrayCopyFromBytes(arr, data, length * dtype.bits / 8) != 0) {
      if (arr != nullptr) TVMArrayFree(arr);
      ThrowLastError(env, inst_);
      return false;
    }
    AddTemp(arr, kTVMNDArrayHandle);
    out->v_handle = arr;
    *code = kTVMNDArrayHandle;
    return true;
  }
  auto* t = reinterpret_cast<DLTensor*>(Alloc(sizeof(DLTensor) + sizeof(int64_t)));
  auto* shape_slot = reinterpret_cast<int64_t*>(t + 1);
  *shape_slot = shape;
  t->data = data;
  t->device = DLDevice{kDLCPU, 0};
  t->ndim = 1;
  t->dtype = dtype;
  t->shape = shape_slot;
  t->strides = nullptr;
  t->byte_offset = 0;
  KeepAlive(env, v);
  out->v_handle = t;
  *code = kTVMDLTensorHandle;
  return true;
}

bool ArgPack::MakeObject(napi_env env, Global which, TVMValue* values, int* codes, int n,
                         TVMValue* out, int* code) {
  polyffi::binding::ObjectResult made = polyffi::binding::MakeObject(which, values, codes, n);
  if (made.failure != polyffi::binding::Failure::kNone) {
    ThrowGlobalFailure(env, inst_, which, made.failure);
    return false;
  }
  AddTemp(made.handle, kTVMObjectHandle);
  out->v_handle = made.handle;
  *code = kTVMObjectHandle;
  return true;
}

bool ArgPack::SetArray(napi_env env, napi_value v, TVMValue* out, int* code) {
  uint32_t n = 0;
  napi_get_array_length(env, v, &n);
  std::vector<napi_value> items(n);
  for (uint32_t i = 0; i < n; ++i) {
    if (!CheckStatus(env, napi_get_element(env, v, i, &items[i]))) return false;
  }
  ArgPack pack(inst_);
  if (!pack.SetAll(env, n, items.data())) return false;
  return MakeObject(env, Global::kArray, pack.values(), pack.codes(), pack.size(), out, code);
}

// An ffi.Shape: every element an integral number or a bigint in the int64 range.
bool ArgPack::SetShape(napi_env env, napi_value v, TVMValue* out, int* code) {
  uint32_t n = 0;
  napi_get_array_length(env, v, &n);
  std::vector<TVMValue> dims(n);
  std::vector<int> codes(n, kTVMArgInt);
  for (uint32_t i = 0; i < n; ++i) {
    napi_value item;
    if (!CheckStatus(env, napi_get_element(env, v, i, &item))) return false;
    napi_valuetype t;
    napi_typeof(env, item, &t);
    bool ok = false;
    if (t == napi_bigint) {
      napi_get_value_bigint_int64(env, item, &dims[i].v_int64, &ok);
    } else if (t == napi_number) {
      double d = 0;
      napi_get_value_double(env, item, &d);
      ok = d == std::trunc(d) && std::fabs(d) <= kMaxSafeInteger;
      dims[i].v_int64 = static_cast<int64_t>(d);
    }
    if (!ok) {
      ThrowType(env, "polyffi: Shape dimension " + std::to_string(i) +
                         " is not an integer in the int64 range (numbers up to 2^53-1, or bigint)");
      return false;
    }
  }
  return MakeObject(env, Global::kShapeTuple, dims.data(), codes.data(), static_cast<int>(n), out,
                    code);
}

// entries: a JS array [[k, v], ...]
bool ArgPack::SetMapEntries(napi_env env, napi_value entries, TVMValue* out, int* code) {
  uint32_t n = 0;
  napi_get_array_length(env, entries, &n);
  std::vector<napi_value> flat(2 * size_t{n});
  for (uint32_t i = 0; i < n; ++i) {
    napi_value pair;
    if (!CheckStatus(env, napi_get_element(env, entries, i, &pair)) ||
        !CheckStatus(env, napi_get_element(env, pair, 0, &flat[2 * i])) ||
        !CheckStatus(env, napi_get_element(env, pair, 1, &flat[2 * i + 1]))) {
      return false;
    }
  }
  ArgPack pack(inst_);
  if (!pack.SetAll(env, flat.size(), flat.data())) return false;
  return MakeObject(env, Global::kMap, pack.values(), pack.codes(), pack.size(), out, code);
}

bool ArgPack::SetPlainObject(napi_env env, napi_value v, TVMValue* out, int* code) {
  napi_value global, object, entries_fn, entries;
  napi_get_global(env, &global);
  napi_get_named_property(env, global, "Object", &object);
  napi_get_named_property(env, object, "entries", &entries_fn);
  if (!CheckStatus(env, napi_call_function(env, object, entries_fn, 1, &v, &entries))) return false;
  return SetMapEntries(env, entries, out, code);
}

bool ArgPack::SetObject(napi_env env, napi_value v, TVMValue* out, int* code, bool for_return) {
  if (Ref* ref = RefOf(env, v)) {
    if (POLYFFI_UNLIKELY(ref->handle == nullptr)) {
      ThrowFFIError(env, inst_, "ValueError", "polyffi: object used after dispose()");
      return false;
    }
    if (ref->code == kTVMDLTensorHandle && for_return) {
      ThrowFFIError(env, inst_, "ValueError",
                    "polyffi: a borrowed NDArray view cannot be returned from a callback");
      return false;
    }
    out->v_handle = ref->handle;
    *code = ref->code;
    if (async_) {
      ++ref->pins;
      AddTemp(ref, kTempPin);
    }
    return true;
  }
  bool is = false;
  napi_is_typedarray(env, v, &is);
  if (is) {
    if (InstanceOf(env, v, inst_->buffer_cls)) {
      void* data = nullptr;
      size_t len = 0;
      napi_get_buffer_info(env, v, &data, &len);
      auto* arr = reinterpret_cast<TVMByteArray*>(Alloc(sizeof(TVMByteArray)));
      arr->data = static_cast<const char*>(data);
      arr->size = len;
      KeepAlive(env, v);
      out->v_handle = arr;
      *code = kTVMBytes;
      return true;
    }
    return SetTypedArray(env, v, out, code, for_return);
  }
  napi_is_arraybuffer(env, v, &is);
  if (is) {
    void* data = nullptr;
    size_t len = 0;
    napi_get_arraybuffer_info(env, v, &data, &len);
    auto* arr = reinterpret_cast<TVMByteArray*>(Alloc(sizeof(TVMByteArray)));
    arr->data = static_cast<const char*>(data);
    arr->size = len;
    KeepAlive(env, v);
    out->v_handle = arr;
    *code = kTVMBytes;
    return true;
  }
  napi_is_array(env, v, &is);
  if (is) {
    if (InstanceOf(env, v, inst_->shape_cls)) return SetShape(env, v, out, code);
    return SetArray(env, v, out, code);
  }
  if (InstanceOf(env, v, inst_->float_cls) || InstanceOf(env, v, inst_->int_cls)) {
    bool is_float = InstanceOf(env, v, inst_->float_cls);
    napi_value inner;
    napi_get_named_property(env, v, "value", &inner);
    napi_valuetype t;
    napi_typeof(env, inner, &t);
    if (is_float) {
      double d = 0;
      if (t == napi_bigint) {
        bool lossless;
        int64_t i;
        napi_get_value_bigint_int64(env, inner, &i, &lossless);
        d = static_cast<double>(i);
      } else if (t != napi_number || napi_get_value_double(env, inner, &d) != napi_ok) {
        ThrowType(env, "polyffi: ffi.float() needs a number");
        return false;
      }
      out->v_float64 = d;
      *code = kTVMArgFloat;
      return true;
    }
    if (t == napi_bigint) return Set(env, inner, out, code);
    double d = 0;
    if (t != napi_number || napi_get_value_double(env, inner, &d) != napi_ok ||
        d != std::trunc(d) || std::fabs(d) > 9223372036854775807.0) {
      ThrowType(env, "polyffi: ffi.int() needs an integral number or a bigint");
      return false;
    }
    out->v_int64 = static_cast<int64_t>(d);
    *code = kTVMArgInt;
    return true;
  }
  if (InstanceOf(env, v, inst_->device_cls)) {
    napi_value a, b;
    int32_t type = 0, id = 0;
    napi_get_named_property(env, v, "deviceType", &a);
    napi_get_named_property(env, v, "deviceId", &b);
    napi_get_value_int32(env, a, &type);
    napi_get_value_int32(env, b, &id);
    out->v_device = DLDevice{static_cast<DLDeviceType>(type), id};
    *code = kDLDevice;
    return true;
  }
  if (InstanceOf(env, v, inst_->dtype_cls)) {
    napi_value s;
    if (!CheckStatus(env, napi_coerce_to_string(env, v, &s))) return false;
    char buf[64];
    size_t len = 0;
    napi_get_value_string_utf8(env, s, buf, sizeof(buf), &len);
    if (PolyffiDataTypeFromString(buf, &out->v_type) != 0) {
      ThrowFFIError(env, inst_, "ValueError", "polyffi: unknown dtype '" + std::string(buf) + "'");
      return false;
    }
    *code = kTVMDataType;
    return true;
  }
  if (InstanceOf(env, v, inst_->map_cls)) {
    napi_value global, array, from, entries;
    napi_get_global(env, &global);
    napi_get_named_property(env, global, "Array", &array);
    napi_get_named_property(env, array, "from", &from);
    if (!CheckStatus(env, napi_call_function(env, array, from, 1, &v, &entries))) return false;
    return SetMapEntries(env, entries, out, code);
  }
  // Only plain objects become maps; other class instances are a mistake worth reporting.
  napi_value proto, object_proto, global, object;
  napi_get_prototype(env, v, &proto);
  napi_get_global(env, &global);
  napi_get_named_property(env, global, "Object", &object);
  napi_get_named_property(env, object, "prototype", &object_proto);
  napi_valuetype pt;
  napi_typeof(env, proto, &pt);
  bool plain = pt == napi_null;
  if (!plain) napi_strict_equals(env, proto, object_proto, &plain);
  if (plain) return SetPlainObject(env, v, out, code);
  std::string name = "object";
  napi_value ctor, cname;
  if (napi_get_named_property(env, v, "constructor", &ctor) == napi_ok &&
      napi_get_named_property(env, ctor, "name", &cname) == napi_ok) {
    char buf[128];
    size_t len = 0;
    if (napi_get_value_string_utf8(env, cname, buf, sizeof(buf), &len) == napi_ok) name = buf;
  }
  ThrowType(env, for_return ? kUnsupportedReturn + ("a " + name + ")")
                            : "polyffi: cannot pass a " + name + " to a packed function");
  return false;
}

// ---- Out ----------------------------------------------------------------------------------------

static napi_value NumberOut(napi_env env, Instance* inst, napi_value num, bool is_float) {
  if (!inst->exact_numbers) return num;
  napi_value out = nullptr;
  napi_new_instance(env, Get(env, is_float ? inst->float_cls : inst->int_cls), 1, &num, &out);
  return out;
}

static napi_value IntOut(napi_env env, Instance* inst, int64_t i) {
  napi_value out;
  if (i >= -9007199254740991LL && i <= 9007199254740991LL) {
    napi_create_double(env, static_cast<double>(i), &out);
  } else {
    napi_create_bigint_int64(env, i, &out);
  }
  return NumberOut(env, inst, out, false);
}

// runtime.String object (owned) -> JS string; frees the object.
static napi_value StringObjectOut(napi_env env, Instance* inst, void* obj) {
  polyffi::binding::BytesResult text = polyffi::binding::StringObjectBytes(obj);
  TVMObjectFree(obj);
  if (text.failure != polyffi::binding::Failure::kNone) {
    return ThrowGlobalFailure(env, inst, Global::kStringBytes, text.failure);
  }
  napi_value out;
  napi_create_string_utf8(env, text.data, text.size, &out);
  return out;
}

// runtime.ShapeTuple object (owned) -> ffi.Shape, read in one call; frees the object.
static napi_value ShapeOut(napi_env env, Instance* inst, void* obj) {
  polyffi::binding::BytesResult dims = polyffi::binding::ShapeTupleObjectBytes(obj);
  TVMObjectFree(obj);
  if (dims.failure != polyffi::binding::Failure::kNone) {
    return ThrowGlobalFailure(env, inst, Global::kShapeTupleBytes, dims.failure);
  }
  size_t n = dims.size / sizeof(int64_t);
  napi_value out;
  if (!CheckStatus(env, napi_new_instance(env, Get(env, inst->shape_cls), 0, nullptr, &out))) {
    return nullptr;
  }
  for (size_t i = 0; i < n; ++i) {
    int64_t d = polyffi::binding::ShapeDim(dims, i);
    napi_value item;
    if (d >= -9007199254740991LL && d <= 9007199254740991LL) {
      napi_create_double(env, static_cast<double>(d), &item);
    } else {
      napi_create_bigint_int64(env, d, &item);
    }
    if (!CheckStatus(env, napi_set_element(env, out, static_cast<uint32_t>(i), item))) {
      return nullptr;
    }
  }
  return out;
}

napi_value FromTVM(napi_env env, Instance* inst, TVMValue v, int code) {
  napi_value out = nullptr;
  switch (code) {
    case kTVMArgInt:
    case kDLUInt:
      return IntOut(env, inst, v.v_int64);
    case kTVMArgFloat:
      napi_create_double(env, v.v_float64, &out);
      return NumberOut(env, inst, out, true);
    case kTVMArgBool:
      napi_get_boolean(env, v.v_int64 != 0, &out);
      return out;
    case kTVMNullptr:
      napi_get_null(env, &out);
      return out;
    case kTVMStr:
      napi_create_string_utf8(env, v.v_str, NAPI_AUTO_LENGTH, &out);
      return out;
    case kTVMBytes: {
      auto* arr = static_cast<TVMByteArray*>(v.v_handle);
      napi_create_buffer_copy(env, arr->size, arr->data, nullptr, &out);
      return out;
    }
    case kTVMDataType: {
      char buf[64];
      PolyffiDataTypeToString(v.v_type, buf, sizeof(buf));
      napi_value s;
      napi_create_string_utf8(env, buf, NAPI_AUTO_LENGTH, &s);
      napi_new_instance(env, Get(env, inst->dtype_cls), 1, &s, &out);
      return out;
    }
    case kDLDevice: {
      napi_value argv[2];
      napi_create_int32(env, v.v_device.device_type, &argv[0]);
      napi_create_int32(env, v.v_device.device_id, &argv[1]);
      napi_new_instance(env, Get(env, inst->device_cls), 2, argv, &out);
      return out;
    }
    case kTVMOpaqueHandle:
      if (v.v_handle == nullptr) {
        napi_get_null(env, &out);
      } else {
        napi_create_external(env, v.v_handle, nullptr, nullptr, &out);
      }
      return out;
    case kTVMObjectHandle: {
      unsigned tindex = 0;
      if (v.v_handle != nullptr && TVMObjectGetTypeIndex(v.v_handle, &tindex) == 0 &&
          static_cast<int64_t>(tindex) ==
              polyffi::binding::CachedTypeIndex(polyffi::binding::TypeKey::kString)) {
        return StringObjectOut(env, inst, v.v_handle);
      }
      if (v.v_handle != nullptr &&
          static_cast<int64_t>(tindex) ==
              polyffi::binding::CachedTypeIndex(polyffi::binding::TypeKey::kShapeTuple)) {
        return ShapeOut(env, inst, v.v_handle);
      }
      return WrapHandle(inst, v.v_handle, code);
    }
    case kTVMPackedFuncHandle:
      return MakePackedFunc(inst, v.v_handle);
    case kTVMModuleHandle:
    case kTVMNDArrayHandle:
      return WrapHandle(inst, v.v_handle, code);
    default:
      return ThrowFFIError(env, inst, "TypeError",
                           "polyffi: unsupported result type code " + std::to_string(code));
  }
}

napi_value FromDirectResult(napi_env env, Instance* inst, TVMValue v, int code) {
  // kDLUInt needs nothing here: FromTVM reads it as an int, which is what TVMFuncCall makes it.
  if (code != kTVMDataType) return FromTVM(env, inst, v, code);
  char buf[64];
  if (PolyffiDataTypeToString(v.v_type, buf, sizeof(buf)) != 0) {
    return ThrowFFIError(env, inst, "ValueError",
                         "polyffi: dtype (code " + std::to_string(v.v_type.code) + ", bits " +
                             std::to_string(v.v_type.bits) + ", lanes " +
                             std::to_string(v.v_type.lanes) +
                             ") has no string form that would read back as itself");
  }
  napi_value out;
  napi_create_string_utf8(env, buf, NAPI_AUTO_LENGTH, &out);
  return out;
}

napi_value FromCallbackArg(napi_env env, Instance* inst, TVMValue v, int code) {
  switch (code) {
    case kTVMObjectHandle:
    case kTVMModuleHandle:
    case kTVMPackedFuncHandle:
    case kTVMNDArrayHandle:
    case kTVMObjectRValueRefArg: {
      if (code != kTVMObjectRValueRefArg && v.v_handle == nullptr) {
        napi_value out;
        napi_get_null(env, &out);
        return out;
      }
      if (TVMCbArgToReturn(&v, &code) != 0) return ThrowLastError(env, inst);
      return FromTVM(env, inst, v, code);
    }
    case kTVMDLTensorHandle:
      // A view borrowed for the duration of the callback: detached after it (callback.cc).
      return WrapHandle(inst, v.v_handle, kTVMDLTensorHandle);
    default:
      return FromTVM(env, inst, v, code);
  }
}

}  // namespace polyffi_node
