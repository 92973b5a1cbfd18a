// The "ndarray" part: arrays allocated by the runtime, arrays over direct ByteBuffers (DLPack,
// zero-copy: the deleter holds a global reference to the buffer), views and copies.
#include "jni_util.h"

using namespace polyffi_jni;

namespace {

DLDataType Unpack(jint packed) {
  DLDataType t;
  t.code = static_cast<uint8_t>(packed & 0xff);
  t.bits = static_cast<uint8_t>((packed >> 8) & 0xff);
  t.lanes = static_cast<uint16_t>((static_cast<uint32_t>(packed) >> 16) & 0xffff);
  return t;
}

int64_t ByteSize(const DLTensor* t) {
  int64_t n = (t->dtype.bits * t->dtype.lanes + 7) / 8;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

bool Compact(const DLTensor* t) {
  if (t->strides == nullptr) return true;
  int64_t expect = 1;
  for (int i = t->ndim - 1; i >= 0; --i) {
    if (t->shape[i] != 1 && t->strides[i] != expect) return false;
    expect *= t->shape[i];
  }
  return true;
}

struct BufferTensor {
  jobject buffer;  // global reference: the ByteBuffer stays reachable while C holds the array
  std::vector<int64_t> shape;
  DLManagedTensor managed;
};

void DeleteBufferTensor(DLManagedTensor* self) {
  auto* ctx = static_cast<BufferTensor*>(self->manager_ctx);
  JNIEnv* env = AttachedEnv();
  if (env != nullptr) env->DeleteGlobalRef(ctx->buffer);
  delete ctx;
}

DLTensor* Tensor(jlong h) { return reinterpret_cast<DLTensor*>(h); }

}  // namespace

extern "C" JNIEXPORT jlong JNICALL Java_org_polyffi_Native_ndEmpty(JNIEnv* env, jclass,
                                                                   jlongArray jshape, jint dtype,
                                                                   jlong device) {
  jsize ndim = env->GetArrayLength(jshape);
  std::vector<int64_t> shape(ndim);
  env->GetLongArrayRegion(jshape, 0, ndim, reinterpret_cast<jlong*>(shape.data()));
  DLDataType t = Unpack(dtype);
  TVMArrayHandle out = nullptr;
  int dev_type = static_cast<int>(device & 0xffffffff);
  int dev_id = static_cast<int>(device >> 32);
  if (!Check(env,
             TVMArrayAlloc(shape.data(), ndim, t.code, t.bits, t.lanes, dev_type, dev_id, &out))) {
    return 0;
  }
  return reinterpret_cast<jlong>(out);
}

extern "C" JNIEXPORT jlong JNICALL Java_org_polyffi_Native_ndFromBuffer(
    JNIEnv* env, jclass, jobject buffer, jint position, jlongArray jshape, jint dtype) {
  auto* base = static_cast<char*>(env->GetDirectBufferAddress(buffer));
  if (base == nullptr) {
    ThrowNew(env, g.illegal_argument_class, "NDArray.fromBuffer needs a direct ByteBuffer");
    return 0;
  }
  auto* ctx = new BufferTensor();
  jsize ndim = env->GetArrayLength(jshape);
  ctx->shape.resize(ndim);
  env->GetLongArrayRegion(jshape, 0, ndim, reinterpret_cast<jlong*>(ctx->shape.data()));
  ctx->buffer = env->NewGlobalRef(buffer);
  DLTensor& t = ctx->managed.dl_tensor;
  t.data = base + position;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = ndim;
  t.dtype = Unpack(dtype);
  t.shape = ctx->shape.data();
  t.strides = nullptr;
  t.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = DeleteBufferTensor;
  TVMArrayHandle out = nullptr;
  if (TVMArrayFromDLPack(&ctx->managed, &out) != 0) {
    env->DeleteGlobalRef(ctx->buffer);
    delete ctx;
    ThrowLastError(env);
    return 0;
  }
  return reinterpret_cast<jlong>(out);
}

extern "C" JNIEXPORT jlongArray JNICALL Java_org_polyffi_Native_ndShape(JNIEnv* env, jclass,
                                                                        jlong h) {
  DLTensor* t = Tensor(h);
  jlongArray out = env->NewLongArray(t->ndim);
  if (out != nullptr) {
    env->SetLongArrayRegion(out, 0, t->ndim, reinterpret_cast<const jlong*>(t->shape));
  }
  return out;
}

extern "C" JNIEXPORT jint JNICALL Java_org_polyffi_Native_ndDtype(JNIEnv*, jclass, jlong h) {
  DLDataType d = Tensor(h)->dtype;
  return static_cast<jint>(d.code | (d.bits << 8) | (static_cast<uint32_t>(d.lanes) << 16));
}

extern "C" JNIEXPORT jlong JNICALL Java_org_polyffi_Native_ndDevice(JNIEnv*, jclass, jlong h) {
  DLDevice d = Tensor(h)->device;
  return (static_cast<jlong>(d.device_type) & 0xffffffff) | (static_cast<jlong>(d.device_id) << 32);
}

extern "C" JNIEXPORT jlong JNICALL Java_org_polyffi_Native_ndByteSize(JNIEnv*, jclass, jlong h) {
  return ByteSize(Tensor(h));
}

extern "C" JNIEXPORT jobject JNICALL Java_org_polyffi_Native_ndBuffer(JNIEnv* env, jclass,
                                                                      jlong h) {
  DLTensor* t = Tensor(h);
  if (t->device.device_type != kDLCPU && t->device.device_type != kDLCUDAHost) {
    ThrowNew(env, g.illegal_state_class, "asByteBuffer needs an array in host memory");
    return nullptr;
  }
  if (!Compact(t)) {
    ThrowNew(env, g.illegal_state_class, "asByteBuffer needs a compact (row-major) array");
    return nullptr;
  }
  return env->NewDirectByteBuffer(static_cast<char*>(t->data) + t->byte_offset, ByteSize(t));
}

extern "C" JNIEXPORT void JNICALL Java_org_polyffi_Native_ndCopyFromArray(JNIEnv* env, jclass,
                                                                          jlong h, jobject array,
                                                                          jlong nbytes) {
  void* p = env->GetPrimitiveArrayCritical(static_cast<jarray>(array), nullptr);
  if (p == nullptr) return;
  int rc = TVMArrayCopyFromBytes(Tensor(h), p, static_cast<size_t>(nbytes));
  env->ReleasePrimitiveArrayCritical(static_cast<jarray>(array), p, JNI_ABORT);
  Check(env, rc);
}

extern "C" JNIEXPORT void JNICALL Java_org_polyffi_Native_ndCopyToArray(JNIEnv* env, jclass,
                                                                        jlong h, jobject array,
                                                                        jlong nbytes) {
  void* p = env->GetPrimitiveArrayCritical(static_cast<jarray>(array), nullptr);
  if (p == nullptr) return;
  int rc = TVMArrayCopyToBytes(Tensor(h), p, static_cast<size_t>(nbytes));
  env->ReleasePrimitiveArrayCritical(static_cast<jarray>(array), p, 0);
  Check(env, rc);
}

// Whether the array is compact and its data (data + byte_offset) starts on an alignment-byte
// boundary: the kernels TVM compiles assume 64-byte-aligned data; VirtualMachine copies the rest.
extern "C" JNIEXPORT jboolean JNICALL Java_org_polyffi_Native_ndIsAligned(JNIEnv*, jclass, jlong h,
                                                                          jlong alignment) {
  DLTensor* t = Tensor(h);
  if (alignment <= 0 || !Compact(t)) return JNI_FALSE;
  auto addr = reinterpret_cast<uintptr_t>(t->data) + static_cast<uintptr_t>(t->byte_offset);
  return addr % static_cast<uintptr_t>(alignment) == 0 ? JNI_TRUE : JNI_FALSE;
}
