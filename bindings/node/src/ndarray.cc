// NDArrays: allocation, zero-copy views over TypedArrays/Buffers (DLPack in), zero-copy
// TypedArrays over arrays (DLPack out), metadata and copies.
#include <polyffi/dtype_string.h>

#include <cstring>

#include "common.h"

namespace polyffi_node {

static DLTensor* TensorArg(const Napi::CallbackInfo& info, size_t i) {
  Ref* ref = i < info.Length() ? RefOf(info.Env(), info[i]) : nullptr;
  if (ref == nullptr || (ref->code != kTVMNDArrayHandle && ref->code != kTVMDLTensorHandle)) {
    Napi::TypeError::New(info.Env(), "polyffi: expected an NDArray").ThrowAsJavaScriptException();
    return nullptr;
  }
  if (ref->handle == nullptr) {
    ThrowFFIError(info.Env(), GetInstance(info.Env()), "ValueError",
                  "polyffi: NDArray used after dispose()");
    return nullptr;
  }
  return static_cast<DLTensor*>(ref->handle);
}

static bool ParseDType(const Napi::Value& v, DLDataType* out) {
  if (!v.IsString()) return false;
  std::string s = v.As<Napi::String>().Utf8Value();
  return PolyffiDataTypeFromString(s.c_str(), out) == 0;
}

static bool ShapeArg(const Napi::Value& v, std::vector<int64_t>* shape) {
  if (!v.IsArray()) return false;
  Napi::Array a = v.As<Napi::Array>();
  for (uint32_t i = 0; i < a.Length(); ++i) {
    Napi::Value d = a.Get(i);
    if (!d.IsNumber()) return false;
    double x = d.As<Napi::Number>().DoubleValue();
    if (x < 0 || x != static_cast<double>(static_cast<int64_t>(x))) return false;
    shape->push_back(static_cast<int64_t>(x));
  }
  return true;
}

static size_t NumBytes(const DLTensor* t) {
  size_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= static_cast<size_t>(t->shape[i]);
  return n * ((t->dtype.bits * t->dtype.lanes + 7) / 8);
}

// empty(shape, dtype, deviceType, deviceId)
static Napi::Value Empty(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<int64_t> shape;
  DLDataType dtype;
  if (info.Length() < 2 || !ShapeArg(info[0], &shape)) {
    Napi::TypeError::New(env, "polyffi: shape must be an array of non-negative integers")
        .ThrowAsJavaScriptException();
    return Napi::Value();
  }
  if (!ParseDType(info[1], &dtype)) {
    return Napi::Value(
        env, ThrowFFIError(env, GetInstance(env), "ValueError",
                           "polyffi: unknown dtype '" + info[1].ToString().Utf8Value() + "'"));
  }
  int dev_type = info.Length() > 2 ? info[2].ToNumber().Int32Value() : kDLCPU;
  int dev_id = info.Length() > 3 ? info[3].ToNumber().Int32Value() : 0;
  DLTensor* out = nullptr;
  Instance* inst = GetInstance(env);
  if (TVMArrayAlloc(shape.data(), static_cast<int>(shape.size()), dtype.code, dtype.bits,
                    dtype.lanes, dev_type, dev_id, &out) != 0) {
    return Napi::Value(env, ThrowLastError(env, inst));
  }
  return Napi::Value(env, WrapHandle(inst, out, kTVMNDArrayHandle));
}

struct ViewContext {
  std::shared_ptr<EnvState> state;
  napi_env env;
  napi_ref source;  // the TypedArray / Buffer whose memory the array uses
  std::vector<int64_t> shape;
  DLManagedTensor managed;
};

static void ViewDeleter(DLManagedTensor* self) {
  auto* ctx = static_cast<ViewContext*>(self->manager_ctx);
  ReleaseRefAnywhere(ctx->state, ctx->env, ctx->source);
  delete ctx;
}

bool DTypeOfTypedArray(napi_typedarray_type t, DLDataType* out) {
  switch (t) {
    case napi_int8_array:
      *out = {kDLInt, 8, 1};
      return true;
    case napi_uint8_array:
    case napi_uint8_clamped_array:
      *out = {kDLUInt, 8, 1};
      return true;
    case napi_int16_array:
      *out = {kDLInt, 16, 1};
      return true;
    case napi_uint16_array:
      *out = {kDLUInt, 16, 1};
      return true;
    case napi_int32_array:
      *out = {kDLInt, 32, 1};
      return true;
    case napi_uint32_array:
      *out = {kDLUInt, 32, 1};
      return true;
    case napi_float32_array:
      *out = {kDLFloat, 32, 1};
      return true;
    case napi_float64_array:
      *out = {kDLFloat, 64, 1};
      return true;
    case napi_bigint64_array:
      *out = {kDLInt, 64, 1};
      return true;
    case napi_biguint64_array:
      *out = {kDLUInt, 64, 1};
      return true;
    default:
      return false;
  }
}

// fromTypedArray(typedArray, shape | undefined, dtype | undefined): a view, no copy.
static Napi::Value FromTypedArray(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Instance* inst = GetInstance(env);
  if (info.Length() < 1 || !info[0].IsTypedArray()) {
    Napi::TypeError::New(env, "polyffi: nd.array() needs a TypedArray or Buffer")
        .ThrowAsJavaScriptException();
    return Napi::Value();
  }
  napi_typedarray_type type;
  size_t length = 0, offset = 0;
  void* data = nullptr;
  napi_value ab;
  napi_get_typedarray_info(env, info[0], &type, &length, &data, &ab, &offset);
  DLDataType dtype;
  DTypeOfTypedArray(type, &dtype);
  size_t nbytes = length * Napi::TypedArray(env, info[0]).ElementSize();
  if (info.Length() > 2 && !info[2].IsUndefined() && !ParseDType(info[2], &dtype)) {
    return Napi::Value(
        env, ThrowFFIError(env, inst, "ValueError",
                           "polyffi: unknown dtype '" + info[2].ToString().Utf8Value() + "'"));
  }
  size_t item = (dtype.bits * dtype.lanes + 7) / 8;
  auto ctx = std::make_unique<ViewContext>();
  if (info.Length() > 1 && !info[1].IsUndefined()) {
    if (!ShapeArg(info[1], &ctx->shape)) {
      Napi::TypeError::New(env, "polyffi: shape must be an array of non-negative integers")
          .ThrowAsJavaScriptException();
      return Napi::Value();
    }
  } else {
    ctx->shape.push_back(static_cast<int64_t>(nbytes / item));
  }
  size_t count = 1;
  for (int64_t d : ctx->shape) count *= static_cast<size_t>(d);
  if (count * item != nbytes) {
    return Napi::Value(
        env, ThrowFFIError(env, inst, "ValueError",
                           "polyffi: shape and dtype need " + std::to_string(count * item) +
                               " bytes but the " + "array has " + std::to_string(nbytes)));
  }
  ctx->state = inst->state;
  ctx->env = env;
  napi_create_reference(env, info[0], 1, &ctx->source);
  DLTensor& t = ctx->managed.dl_tensor;
  t.data = data;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = static_cast<int>(ctx->shape.size());
  t.dtype = dtype;
  t.shape = ctx->shape.data();
  t.strides = nullptr;
  t.byte_offset = 0;
  ctx->managed.manager_ctx = ctx.get();
  ctx->managed.deleter = ViewDeleter;
  DLTensor* out = nullptr;
  if (TVMArrayFromDLPack(&ctx->managed, &out) != 0) {
    napi_delete_reference(env, ctx->source);
    return Napi::Value(env, ThrowLastError(env, inst));
  }
  ctx.release();  // the array owns it now; ViewDeleter frees it
  return Napi::Value(env, WrapHandle(inst, out, kTVMNDArrayHandle));
}

// info(nd) -> [shape, dtype, deviceType, deviceId]
static Napi::Value Info(const Napi::CallbackInfo& info) {
  DLTensor* t = TensorArg(info, 0);
  if (t == nullptr) return Napi::Value();
  Napi::Env env = info.Env();
  Napi::Array shape = Napi::Array::New(env, t->ndim);
  for (int i = 0; i < t->ndim; ++i) {
    shape.Set(static_cast<uint32_t>(i), Napi::Number::New(env, static_cast<double>(t->shape[i])));
  }
  char buf[64];
  PolyffiDataTypeToString(t->dtype, buf, sizeof(buf));
  Napi::Array out = Napi::Array::New(env, 4);
  out.Set(0u, shape);
  out.Set(1u, Napi::String::New(env, buf));
  out.Set(2u, Napi::Number::New(env, t->device.device_type));
  out.Set(3u, Napi::Number::New(env, t->device.device_id));
  return out;
}

static napi_typedarray_type TypedArrayTypeOf(DLDataType d, size_t* item) {
  *item = (d.bits * d.lanes + 7) / 8;
  if (d.lanes == 1) {
    if (d.code == kDLFloat && d.bits == 32) return napi_float32_array;
    if (d.code == kDLFloat && d.bits == 64) return napi_float64_array;
    if (d.code == kDLInt && d.bits == 8) return napi_int8_array;
    if (d.code == kDLInt && d.bits == 16) return napi_int16_array;
    if (d.code == kDLInt && d.bits == 32) return napi_int32_array;
    if (d.code == kDLInt && d.bits == 64) return napi_bigint64_array;
    if (d.code == kDLUInt && d.bits == 16) return napi_uint16_array;
    if (d.code == kDLUInt && d.bits == 32) return napi_uint32_array;
    if (d.code == kDLUInt && d.bits == 64) return napi_biguint64_array;
    if ((d.code == kDLFloat || d.code == kDLBfloat) && d.bits == 16) return napi_uint16_array;
  }
  *item = 1;
  return napi_uint8_array;  // uint8, bool and anything without a TypedArray of its own: bytes
}

static void ExportFinalize(napi_env, void*, void* hint) {
  TVMDLManagedTensorCallDeleter(static_cast<DLManagedTensor*>(hint));
}

// toTypedArray(nd): shares the array's memory (keeps the array alive); a borrowed view is copied.
static Napi::Value ToTypedArray(const Napi::CallbackInfo& info) {
  DLTensor* t = TensorArg(info, 0);
  if (t == nullptr) return Napi::Value();
  Napi::Env env = info.Env();
  Ref* ref = RefOf(env, info[0]);
  if (t->device.device_type != kDLCPU) {
    return Napi::Value(env, ThrowFFIError(env, GetInstance(env), "ValueError",
                                          "polyffi: toTypedArray() needs a CPU array"));
  }
  size_t item = 1;
  napi_typedarray_type type = TypedArrayTypeOf(t->dtype, &item);
  size_t nbytes = NumBytes(t);
  napi_value ab, out;
  if (ref->code == kTVMDLTensorHandle) {
    void* dst = nullptr;
    napi_create_arraybuffer(env, nbytes, &dst, &ab);
    if (nbytes > 0) std::memcpy(dst, static_cast<char*>(t->data) + t->byte_offset, nbytes);
  } else {
    DLManagedTensor* managed = nullptr;
    if (TVMArrayToDLPack(t, &managed) != 0) {
      return Napi::Value(env, ThrowLastError(env, GetInstance(env)));
    }
    char* data = static_cast<char*>(managed->dl_tensor.data) + managed->dl_tensor.byte_offset;
    if (nbytes == 0) {
      TVMDLManagedTensorCallDeleter(managed);
      napi_create_arraybuffer(env, 0, nullptr, &ab);
    } else if (napi_create_external_arraybuffer(env, data, nbytes, ExportFinalize, managed, &ab) !=
               napi_ok) {
      TVMDLManagedTensorCallDeleter(managed);
      CheckStatus(env, napi_generic_failure);
      return Napi::Value();
    }
  }
  napi_create_typedarray(env, type, nbytes / item, ab, 0, &out);
  return Napi::Value(env, out);
}

// copyFrom(nd, typedArrayOrBuffer): bytes in; sizes must match.
static Napi::Value CopyFrom(const Napi::CallbackInfo& info) {
  DLTensor* t = TensorArg(info, 0);
  if (t == nullptr) return Napi::Value();
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[1].IsTypedArray()) {
    Napi::TypeError::New(env, "polyffi: copyFrom() needs a TypedArray or Buffer")
        .ThrowAsJavaScriptException();
    return Napi::Value();
  }
  Napi::TypedArray src = info[1].As<Napi::TypedArray>();
  char* data = static_cast<char*>(src.ArrayBuffer().Data()) + src.ByteOffset();
  if (TVMArrayCopyFromBytes(t, data, src.ByteLength()) != 0) {
    return Napi::Value(env, ThrowLastError(env, GetInstance(env)));
  }
  return Napi::Value();
}

// toBuffer(nd): a copy of the bytes.
static Napi::Value ToBuffer(const Napi::CallbackInfo& info) {
  DLTensor* t = TensorArg(info, 0);
  if (t == nullptr) return Napi::Value();
  Napi::Env env = info.Env();
  size_t nbytes = NumBytes(t);
  Napi::Buffer<char> out = Napi::Buffer<char>::New(env, nbytes);
  if (nbytes > 0 && TVMArrayCopyToBytes(t, out.Data(), nbytes) != 0) {
    return Napi::Value(env, ThrowLastError(env, GetInstance(env)));
  }
  return out;
}

// isAligned(ndOrTypedArray, alignment): whether the data (data + byte_offset of an array, the
// first element of a TypedArray) starts on an `alignment`-byte boundary and an array is compact
// (a diagnostic for tests: the core's model runner stages misaligned VM inputs itself).
static Napi::Value IsAligned(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[1].IsNumber()) {
    Napi::TypeError::New(env, "polyffi: isAligned(array, alignment)").ThrowAsJavaScriptException();
    return Napi::Value();
  }
  int64_t align = info[1].As<Napi::Number>().Int64Value();
  if (align <= 0) {
    Napi::RangeError::New(env, "polyffi: alignment must be positive").ThrowAsJavaScriptException();
    return Napi::Value();
  }
  uintptr_t addr = 0;
  bool compact = true;
  if (info[0].IsTypedArray()) {
    Napi::TypedArray ta = info[0].As<Napi::TypedArray>();
    addr =
        reinterpret_cast<uintptr_t>(static_cast<char*>(ta.ArrayBuffer().Data()) + ta.ByteOffset());
  } else {
    DLTensor* t = TensorArg(info, 0);
    if (t == nullptr) return Napi::Value();
    addr = reinterpret_cast<uintptr_t>(t->data) + static_cast<uintptr_t>(t->byte_offset);
    if (t->strides != nullptr) {
      int64_t expected = 1;
      for (int i = t->ndim - 1; i >= 0; --i) {
        if (t->shape[i] != 1 && t->strides[i] != expected) compact = false;
        expected *= t->shape[i];
      }
    }
  }
  return Napi::Boolean::New(env, compact && addr % static_cast<uintptr_t>(align) == 0);
}

void InitNDArray(Napi::Env env, Napi::Object exports) {
  exports.Set("ndEmpty", Napi::Function::New(env, Empty, "ndEmpty"));
  exports.Set("ndFromTypedArray", Napi::Function::New(env, FromTypedArray, "ndFromTypedArray"));
  exports.Set("ndInfo", Napi::Function::New(env, Info, "ndInfo"));
  exports.Set("ndToTypedArray", Napi::Function::New(env, ToTypedArray, "ndToTypedArray"));
  exports.Set("ndCopyFrom", Napi::Function::New(env, CopyFrom, "ndCopyFrom"));
  exports.Set("ndToBuffer", Napi::Function::New(env, ToBuffer, "ndToBuffer"));
  exports.Set("isAligned", Napi::Function::New(env, IsAligned, "isAligned"));
}

}  // namespace polyffi_node
