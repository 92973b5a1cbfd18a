// The "registry" part: global functions and modules.
#include "jni_util.h"

using namespace polyffi_jni;

extern "C" JNIEXPORT jlong JNICALL Java_org_polyffi_Native_getGlobal(JNIEnv* env, jclass,
                                                                     jstring name) {
  Arena arena;
  TVMFunctionHandle out = nullptr;
  if (!Check(env, TVMFuncGetGlobal(ToUtf8(env, name, &arena), &out))) return 0;
  return reinterpret_cast<jlong>(out);
}

extern "C" JNIEXPORT void JNICALL Java_org_polyffi_Native_registerGlobal(JNIEnv* env, jclass,
                                                                         jstring name, jlong fn,
                                                                         jboolean override) {
  Arena arena;
  Check(env, TVMFuncRegisterGlobal(ToUtf8(env, name, &arena), reinterpret_cast<void*>(fn),
                                   override ? 1 : 0));
}

extern "C" JNIEXPORT jobjectArray JNICALL Java_org_polyffi_Native_listGlobalNames(JNIEnv* env,
                                                                                  jclass) {
  int size = 0;
  const char** names = nullptr;
  if (!Check(env, TVMFuncListGlobalNames(&size, &names))) return nullptr;
  // names are thread-local until the next API call: copy them all before anything else.
  std::vector<std::string> copy(names, names + size);
  jobjectArray out = env->NewObjectArray(size, g.string_class, nullptr);
  if (out == nullptr) return nullptr;
  for (int i = 0; i < size; ++i) {
    jstring s = NewStringUtf8(env, copy[i].data(), copy[i].size());
    if (s == nullptr) return nullptr;
    env->SetObjectArrayElement(out, i, s);
    env->DeleteLocalRef(s);
  }
  return out;
}

extern "C" JNIEXPORT void JNICALL Java_org_polyffi_Native_removeGlobal(JNIEnv* env, jclass,
                                                                       jstring name) {
  Arena arena;
  Check(env, TVMFuncRemoveGlobal(ToUtf8(env, name, &arena)));
}

extern "C" JNIEXPORT jlong JNICALL Java_org_polyffi_Native_modLoad(JNIEnv* env, jclass,
                                                                   jstring path, jstring format) {
  Arena arena;
  const char* p = ToUtf8(env, path, &arena);
  const char* f = ToUtf8(env, format, &arena);
  TVMModuleHandle out = nullptr;
  if (!Check(env, TVMModLoadFromFile(p, f, &out))) return 0;
  return reinterpret_cast<jlong>(out);
}

extern "C" JNIEXPORT jlong JNICALL Java_org_polyffi_Native_modGetFunction(JNIEnv* env, jclass,
                                                                          jlong mod, jstring name,
                                                                          jboolean query_imports) {
  Arena arena;
  TVMFunctionHandle out = nullptr;
  if (!Check(env, TVMModGetFunction(reinterpret_cast<void*>(mod), ToUtf8(env, name, &arena),
                                    query_imports ? 1 : 0, &out))) {
    return 0;
  }
  return reinterpret_cast<jlong>(out);
}

extern "C" JNIEXPORT void JNICALL Java_org_polyffi_Native_modImport(JNIEnv* env, jclass, jlong mod,
                                                                    jlong dep) {
  Check(env, TVMModImport(reinterpret_cast<void*>(mod), reinterpret_cast<void*>(dep)));
}
