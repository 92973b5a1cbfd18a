// The "library" part: JNI_OnLoad caches every class, method and field the glue uses, once.
#include <polyffi/dtype_string.h>

#include "jni_util.h"

using namespace polyffi_jni;

namespace {

jclass GlobalClass(JNIEnv* env, const char* name) {
  jclass local = env->FindClass(name);
  if (local == nullptr) return nullptr;
  auto* global = static_cast<jclass>(env->NewGlobalRef(local));
  env->DeleteLocalRef(local);
  return global;
}

}  // namespace

extern "C" JNIEXPORT jint JNI_OnLoad(JavaVM* vm, void*) {
  JNIEnv* env = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
  g.vm = vm;
  g.object_class = GlobalClass(env, "java/lang/Object");
  g.string_class = GlobalClass(env, "java/lang/String");
  g.errors_class = GlobalClass(env, "org/polyffi/Errors");
  g.callbacks_class = GlobalClass(env, "org/polyffi/Callbacks");
  g.frame_class = GlobalClass(env, "org/polyffi/Callbacks$Frame");
  g.ffi_exception_class = GlobalClass(env, "org/polyffi/FFIException");
  g.illegal_state_class = GlobalClass(env, "java/lang/IllegalStateException");
  g.illegal_argument_class = GlobalClass(env, "java/lang/IllegalArgumentException");
  g.async_call_class = GlobalClass(env, "org/polyffi/AsyncCall");
  if (!g.object_class || !g.string_class || !g.errors_class || !g.callbacks_class ||
      !g.frame_class || !g.ffi_exception_class || !g.illegal_state_class ||
      !g.illegal_argument_class || !g.async_call_class) {
    return JNI_ERR;
  }
  g.async_on_done =
      env->GetMethodID(g.async_call_class, "onDone", "(IJILjava/lang/Object;Ljava/lang/String;)V");
  g.future_complete_exceptionally =
      env->GetMethodID(g.async_call_class, "completeExceptionally", "(Ljava/lang/Throwable;)Z");
  g.errors_from_native = env->GetStaticMethodID(g.errors_class, "fromNative",
                                                "(Ljava/lang/String;)Ljava/lang/Throwable;");
  g.callbacks_invoke4 =
      env->GetStaticMethodID(g.callbacks_class, "invoke4", "(Lorg/polyffi/Callback;IIJJJJ)J");
  g.callbacks_invoke1 =
      env->GetStaticMethodID(g.callbacks_class, "invoke1", "(Lorg/polyffi/Callback;IJ)J");
  g.callbacks_last_frame =
      env->GetStaticMethodID(g.callbacks_class, "lastFrame", "()Lorg/polyffi/Callbacks$Frame;");
  g.callbacks_invoke_n = env->GetStaticMethodID(
      g.callbacks_class, "invokeN",
      "(Lorg/polyffi/Callback;[J[I[Ljava/lang/Object;)Lorg/polyffi/Callbacks$Frame;");
  g.callbacks_released =
      env->GetStaticMethodID(g.callbacks_class, "released", "(Ljava/lang/Object;)V");
  g.callbacks_invoke_long = env->GetStaticMethodID(g.callbacks_class, "invokeLong", "(IJ)J");
  g.callbacks_release_long = env->GetStaticMethodID(g.callbacks_class, "releaseLong", "(I)V");
  g.callbacks_stash = env->GetStaticMethodID(g.callbacks_class, "stash",
                                             "(Ljava/lang/Throwable;)Ljava/lang/String;");
  g.ffi_exception_init =
      env->GetMethodID(g.ffi_exception_class, "<init>", "(Ljava/lang/String;Ljava/lang/String;)V");
  g.frame_ret_code = env->GetFieldID(g.frame_class, "retCode", "I");
  g.frame_ret_value = env->GetFieldID(g.frame_class, "retValue", "J");
  g.frame_ret_ref = env->GetFieldID(g.frame_class, "retRef", "Ljava/lang/Object;");
  g.frame_ret_owned = env->GetFieldID(g.frame_class, "retOwned", "Z");
  if (!g.errors_from_native || !g.callbacks_invoke4 || !g.callbacks_last_frame ||
      !g.callbacks_invoke1 || !g.callbacks_invoke_n || !g.callbacks_released ||
      !g.callbacks_invoke_long || !g.callbacks_release_long || !g.callbacks_stash ||
      !g.ffi_exception_init || !g.frame_ret_code || !g.frame_ret_value || !g.frame_ret_ref ||
      !g.frame_ret_owned || !g.async_on_done || !g.future_complete_exceptionally) {
    return JNI_ERR;
  }
  return JNI_VERSION_1_8;
}

extern "C" JNIEXPORT jintArray JNICALL Java_org_polyffi_Native_runtimeVersion(JNIEnv* env, jclass) {
  int v[3] = {0, 0, 0};
  if (!Check(env, TVMAPIGetVersion(&v[0], &v[1], &v[2]))) return nullptr;
  jintArray out = env->NewIntArray(3);
  if (out != nullptr) env->SetIntArrayRegion(out, 0, 3, reinterpret_cast<jint*>(v));
  return out;
}

extern "C" JNIEXPORT jstring JNICALL Java_org_polyffi_Native_builtAbiDigest(JNIEnv* env, jclass) {
  return env->NewStringUTF(POLYFFI_ABI_DIGEST);
}

extern "C" JNIEXPORT jstring JNICALL Java_org_polyffi_Native_runtimeAbiDigest(JNIEnv* env, jclass) {
  const char* digest = nullptr;
  if (!Check(env, TVMAPIGetAbiDigest(&digest))) return nullptr;
  return env->NewStringUTF(digest);
}

extern "C" JNIEXPORT jstring JNICALL Java_org_polyffi_Native_lastError(JNIEnv* env, jclass) {
  const char* text = TVMGetLastError();
  return text == nullptr ? nullptr : NewStringUtf8(env, text, std::strlen(text));
}

extern "C" JNIEXPORT jint JNICALL Java_org_polyffi_Native_dtypeParse(JNIEnv* env, jclass,
                                                                     jstring s) {
  if (s == nullptr) {
    ThrowFFI(env, "ValueError", "dtype is null");
    return 0;
  }
  std::string text = ToUtf8String(env, s);
  DLDataType t;
  if (PolyffiDataTypeFromString(text.c_str(), &t) != 0) {
    ThrowFFI(env, "ValueError", "unknown dtype '" + text + "'");
    return 0;
  }
  return static_cast<jint>(t.code | (t.bits << 8) | (static_cast<uint32_t>(t.lanes) << 16));
}

extern "C" JNIEXPORT jstring JNICALL Java_org_polyffi_Native_dtypeToString(JNIEnv* env, jclass,
                                                                           jint packed) {
  DLDataType t;
  t.code = static_cast<uint8_t>(packed & 0xff);
  t.bits = static_cast<uint8_t>((packed >> 8) & 0xff);
  t.lanes = static_cast<uint16_t>((static_cast<uint32_t>(packed) >> 16) & 0xffff);
  char buf[64];
  PolyffiDataTypeToString(t, buf, sizeof(buf));
  return NewStringUtf8(env, buf, std::strlen(buf));
}
