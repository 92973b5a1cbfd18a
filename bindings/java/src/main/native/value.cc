// The "value" part: handles as objects (free, retain, type index) beside the packing done in
// function.cc and callback.cc.
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
