#include "jni_util.h"

#include <polyffi/binding_common.h>
#include <pthread.h>

namespace polyffi_jni {

Globals g;
__thread JNIEnv* tl_env = nullptr;

namespace {

pthread_key_t g_detach_key;
pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

// Runs when a thread we attached ends: detach it so the JVM forgets it (no thread leak).
void DetachAtExit(void* vm) { static_cast<JavaVM*>(vm)->DetachCurrentThread(); }

void MakeKey() { pthread_key_create(&g_detach_key, DetachAtExit); }

}  // namespace

JNIEnv* AttachedEnv() {
  JNIEnv* env = nullptr;
  jint rc = g.vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_8);
  if (rc == JNI_OK) return env;
  if (rc != JNI_EDETACHED) return nullptr;
  // The core's async workers (named "polyffi-async" by the pool) live as long as the process and
  // stay attached; any other native thread is "polyffi-native" and detached when it ends.
  char os_name[16] = {0};
  pthread_getname_np(pthread_self(), os_name, sizeof(os_name));
  const bool pool_worker = std::strcmp(os_name, "polyffi-async") == 0;
  JavaVMAttachArgs args{JNI_VERSION_1_8,
                        const_cast<char*>(pool_worker ? "polyffi-async" : "polyffi-native"),
                        nullptr};
  if (g.vm->AttachCurrentThreadAsDaemon(reinterpret_cast<void**>(&env), &args) != JNI_OK) {
    return nullptr;
  }
  pthread_once(&g_key_once, MakeKey);
  pthread_setspecific(g_detach_key, g.vm);
  return env;
}

void ThrowNew(JNIEnv* env, jclass cls, const std::string& message) {
  env->ThrowNew(cls, message.c_str());
}

void ThrowFFI(JNIEnv* env, const char* kind, const std::string& message) {
  jstring k = NewStringUtf8(env, kind, std::strlen(kind));
  jstring m = NewStringUtf8(env, message.data(), message.size());
  if (k == nullptr || m == nullptr) return;  // OutOfMemoryError pending
  auto* e =
      static_cast<jthrowable>(env->NewObject(g.ffi_exception_class, g.ffi_exception_init, k, m));
  if (e != nullptr) env->Throw(e);
}

void ThrowLastError(JNIEnv* env) {
  const char* text = TVMGetLastError();
  if (text == nullptr) text = "TVMError: unknown error";
  jstring s = NewStringUtf8(env, text, std::strlen(text));
  if (s == nullptr) return;
  auto* t =
      static_cast<jthrowable>(env->CallStaticObjectMethod(g.errors_class, g.errors_from_native, s));
  env->DeleteLocalRef(s);
  if (t != nullptr && !env->ExceptionCheck()) env->Throw(t);
}

static size_t EncodeUtf8(const jchar* u, jsize n, char* out) {
  size_t j = 0;
  for (jsize i = 0; i < n; ++i) {
    uint32_t c = u[i];
    if (c >= 0xD800 && c <= 0xDBFF && i + 1 < n && u[i + 1] >= 0xDC00 && u[i + 1] <= 0xDFFF) {
      c = 0x10000 + ((c - 0xD800) << 10) + (u[i + 1] - 0xDC00);
      ++i;
    } else if (c >= 0xD800 && c <= 0xDFFF) {
      c = 0xFFFD;  // a lone surrogate has no UTF-8 form
    }
    if (c < 0x80) {
      out[j++] = static_cast<char>(c);
    } else if (c < 0x800) {
      out[j++] = static_cast<char>(0xC0 | (c >> 6));
      out[j++] = static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out[j++] = static_cast<char>(0xE0 | (c >> 12));
      out[j++] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out[j++] = static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out[j++] = static_cast<char>(0xF0 | (c >> 18));
      out[j++] = static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out[j++] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out[j++] = static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  out[j] = '\0';
  return j;
}

const char* ToUtf8(JNIEnv* env, jstring s, Arena* arena, size_t* out_len) {
  jsize n = env->GetStringLength(s);
  char* out = arena->Alloc(static_cast<size_t>(n) * 3 + 1);
  jchar small[256];
  std::unique_ptr<jchar[]> big;
  jchar* u = small;
  if (n > 256) {
    big.reset(new jchar[n]);
    u = big.get();
  }
  env->GetStringRegion(s, 0, n, u);
  size_t len = EncodeUtf8(u, n, out);
  if (out_len != nullptr) *out_len = len;
  return out;
}

std::string ToUtf8String(JNIEnv* env, jstring s) {
  Arena arena;
  size_t len = 0;
  const char* p = ToUtf8(env, s, &arena, &len);
  return std::string(p, len);
}

jstring NewStringUtf8(JNIEnv* env, const char* data, size_t size) {
  jchar small[256];
  std::unique_ptr<jchar[]> big;
  jchar* u = small;
  if (size > 256) {
    big.reset(new jchar[size]);
    u = big.get();
  }
  size_t j = 0;
  const auto* s = reinterpret_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size;) {
    uint32_t c = s[i];
    int extra = c < 0x80           ? 0
                : (c >> 5) == 0x6  ? 1
                : (c >> 4) == 0xE  ? 2
                : (c >> 3) == 0x1E ? 3
                                   : -1;
    uint32_t cp = extra > 0 ? (c & (0x3Fu >> extra)) : c;
    bool ok = extra >= 0 && i + static_cast<size_t>(extra) < size;
    for (int k = 1; ok && k <= extra; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (ok && ((extra == 1 && cp < 0x80) || (extra == 2 && cp < 0x800) ||
               (extra == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))) {
      ok = false;  // overlong, out of range or an encoded surrogate
    }
    if (!ok) {
      u[j++] = 0xFFFD;
      ++i;
      continue;
    }
    i += static_cast<size_t>(extra) + 1;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      u[j++] = static_cast<jchar>(0xD800 + (cp >> 10));
      u[j++] = static_cast<jchar>(0xDC00 + (cp & 0x3FF));
    } else {
      u[j++] = static_cast<jchar>(cp);
    }
  }
  return env->NewString(u, static_cast<jsize>(j));
}

void FreeByCode(int code, void* handle) { PolyffiFreeHandle(handle, code); }

}  // namespace polyffi_jni
