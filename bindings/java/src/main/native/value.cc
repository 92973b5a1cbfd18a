// The "value" part: handles as objects (free, retain, type index, the text of a String and the
// dimensions of a ShapeTuple) beside the packing done in function.cc and callback.cc.
#include <polyffi/binding_common.h>

#include <string>
#include <vector>

#include "jni_util.h"

using namespace polyffi_jni;

extern "C" JNIEXPORT void JNICALL Java_org_polyffi_Native_free(JNIEnv*, jclass, jint code,
                                                               jlong handle) {
  FreeByCode(code, reinterpret_cast<void*>(handle));
}

extern "C" JNIEXPORT jlong JNICALL Java_org_polyffi_Native_retain(JNIEnv* env, jclass, jint code,
                                                                  jlong handle) {
  TVMValue v;
  v.v_handle = reinterpret_cast<void*>(handle);
  int c = code;
  if (!Check(env, TVMCbArgToReturn(&v, &c))) return 0;
  return reinterpret_cast<jlong>(v.v_handle);
}

extern "C" JNIEXPORT jint JNICALL Java_org_polyffi_Native_objectTypeIndex(JNIEnv* env, jclass,
                                                                          jlong handle) {
  unsigned index = 0;
  if (!Check(env, TVMObjectGetTypeIndex(reinterpret_cast<void*>(handle), &index))) return -1;
  return static_cast<jint>(index);
}

extern "C" JNIEXPORT jint JNICALL Java_org_polyffi_Native_typeKeyToIndex(JNIEnv* env, jclass,
                                                                         jstring key) {
  std::string k = ToUtf8String(env, key);
  unsigned index = 0;
  if (!Check(env, TVMObjectTypeKey2Index(k.c_str(), &index))) return -1;
  return static_cast<jint>(index);
}

extern "C" JNIEXPORT jstring JNICALL Java_org_polyffi_Native_typeIndexToKey(JNIEnv* env, jclass,
                                                                            jint index) {
  char* key = nullptr;
  if (!Check(env, TVMObjectTypeIndex2Key(static_cast<unsigned>(index), &key))) return nullptr;
  return NewStringUtf8(env, key, std::strlen(key));
}

namespace binding = polyffi::binding;

// The bytes of a String or ShapeTuple object (borrowed: the caller frees it), read through
// `which` (runtime.StringBytes or runtime.ShapeTupleBytes); false with a Java exception pending.
static bool ReadObjectBytes(JNIEnv* env, jlong handle, binding::Global which,
                            binding::BytesResult* r) {
  *r = binding::ObjectBytes(which, reinterpret_cast<void*>(handle),
                            which == binding::Global::kStringBytes);
  if (r->failure == binding::Failure::kNone) return true;
  std::string name = binding::GlobalName(which);
  if (r->failure == binding::Failure::kLookupFailed ||
      r->failure == binding::Failure::kCallFailed) {
    ThrowLastError(env);
  } else if (r->failure == binding::Failure::kMissing) {
    ThrowFFI(env, "ValueError", "Cannot find global function " + name);
  } else {
    ThrowFFI(env, "TypeError", name + " returned type code " + std::to_string(r->ret_code));
  }
  return false;
}

extern "C" JNIEXPORT jstring JNICALL Java_org_polyffi_Native_stringObjectValue(JNIEnv* env, jclass,
                                                                               jlong handle) {
  binding::BytesResult text;
  if (!ReadObjectBytes(env, handle, binding::Global::kStringBytes, &text)) return nullptr;
  return NewStringUtf8(env, text.data, text.size);
}

extern "C" JNIEXPORT jlongArray JNICALL Java_org_polyffi_Native_shapeTupleDims(JNIEnv* env, jclass,
                                                                               jlong handle) {
  binding::BytesResult dims;
  if (!ReadObjectBytes(env, handle, binding::Global::kShapeTupleBytes, &dims)) return nullptr;
  std::vector<jlong> values(dims.size / sizeof(int64_t));
  for (size_t i = 0; i < values.size(); ++i) values[i] = binding::ShapeDim(dims, i);
  jsize n = static_cast<jsize>(values.size());
  jlongArray out = env->NewLongArray(n);
  if (out == nullptr) return nullptr;  // OutOfMemoryError pending
  env->SetLongArrayRegion(out, 0, n, values.data());
  return out;
}
