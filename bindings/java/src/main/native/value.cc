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

// Throws the Java exception for a failed shared helper (polyffi/binding_common.h) about `which`.
static void ThrowGlobalFailure(JNIEnv* env, const polyffi::binding::BytesResult& r,
                               polyffi::binding::Global which) {
  using polyffi::binding::Failure;
  std::string name = polyffi::binding::GlobalName(which);
  if (r.failure == Failure::kLookupFailed || r.failure == Failure::kCallFailed) {
    ThrowLastError(env);
  } else if (r.failure == Failure::kMissing) {
    ThrowFFI(env, "ValueError", "Cannot find global function " + name);
  } else {
    ThrowFFI(env, "TypeError", name + " returned type code " + std::to_string(r.ret_code));
  }
}

// The text of a runtime.String object (borrowed: the caller frees it).
extern "C" JNIEXPORT jstring JNICALL Java_org_polyffi_Native_stringObjectValue(JNIEnv* env, jclass,
                                                                               jlong handle) {
  polyffi::binding::BytesResult text =
      polyffi::binding::StringObjectBytes(reinterpret_cast<void*>(handle));
  if (text.failure != polyffi::binding::Failure::kNone) {
    ThrowGlobalFailure(env, text, polyffi::binding::Global::kStringBytes);
    return nullptr;
  }
  return NewStringUtf8(env, text.data, text.size);
}

// The dimensions of a runtime.ShapeTuple object (borrowed: the caller frees it).
extern "C" JNIEXPORT jlongArray JNICALL Java_org_polyffi_Native_shapeTupleDims(JNIEnv* env, jclass,
                                                                               jlong handle) {
  polyffi::binding::BytesResult dims =
      polyffi::binding::ShapeTupleObjectBytes(reinterpret_cast<void*>(handle));
  if (dims.failure != polyffi::binding::Failure::kNone) {
    ThrowGlobalFailure(env, dims, polyffi::binding::Global::kShapeTupleBytes);
    return nullptr;
  }
  std::vector<jlong> values(dims.size / sizeof(int64_t));
  for (size_t i = 0; i < values.size(); ++i) values[i] = polyffi::binding::ShapeDim(dims, i);
  jsize n = static_cast<jsize>(values.size());
  jlongArray out = env->NewLongArray(n);
  if (out == nullptr) return nullptr;  // OutOfMemoryError pending
  env->SetLongArrayRegion(out, 0, n, values.data());
  return out;
}
