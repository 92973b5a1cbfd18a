// Shared state and helpers of the JNI glue: the cached class / method / field IDs (looked up
// once in JNI_OnLoad), thread attachment, error conversion and UTF-8 <-> UTF-16.
#ifndef POLYFFI_JAVA_JNI_UTIL_H_
#define POLYFFI_JAVA_JNI_UTIL_H_

#include <jni.h>
#include <polyffi/c_runtime_api.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace polyffi_jni {

// Type codes as the Java side spells them (Values.java).
enum Code {
  kInt = 0,
  kUInt = 1,
  kFloat = 2,
  kOpaque = 3,
  kNull = 4,
  kDType = 5,
  kDevice = 6,
  kDLTensor = 7,
  kObject = 8,
  kModule = 9,
  kFunction = 10,
  kStr = 11,
  kBytes = 12,
  kNDArray = 13,
  kRValueRef = 14,
  kBool = 15
};

struct Globals {
  JavaVM* vm = nullptr;
  jclass object_class = nullptr;
  jclass string_class = nullptr;
  jclass errors_class = nullptr;
  jclass callbacks_class = nullptr;
  jclass frame_class = nullptr;
  jclass ffi_exception_class = nullptr;
  jclass illegal_state_class = nullptr;
  jclass illegal_argument_class = nullptr;
  jmethodID errors_from_native = nullptr;    // static Throwable fromNative(String)
  jmethodID callbacks_invoke4 = nullptr;     // static long invoke4(Callback, int, int, long x4)
  jmethodID callbacks_invoke1 = nullptr;     // static long invoke1(Callback, int, long)
  jmethodID callbacks_last_frame = nullptr;  // static Frame lastFrame()
  jmethodID callbacks_invoke_n =
      nullptr;  // static Frame invokeN(Callback, long[], int[], Object[])
  jmethodID callbacks_released = nullptr;      // static void released(Object)
  jmethodID callbacks_invoke_long = nullptr;   // static long invokeLong(int slot, long)
  jmethodID callbacks_release_long = nullptr;  // static void releaseLong(int slot)
  jmethodID callbacks_stash = nullptr;         // static String stash(Throwable)
  jmethodID ffi_exception_init = nullptr;      // FFIException(String kind, String message)
  jclass async_call_class = nullptr;
  jmethodID async_on_done = nullptr;                  // void onDone(int, long, int, Object, String)
  jmethodID future_complete_exceptionally = nullptr;  // boolean completeExceptionally(Throwable)
  jfieldID frame_ret_code = nullptr;
  jfieldID frame_ret_value = nullptr;
  jfieldID frame_ret_ref = nullptr;
  jfieldID frame_ret_owned = nullptr;
};

extern Globals g;

// The JNIEnv of this thread, attaching it (as a daemon) when the JVM does not know it; such a
// thread is detached when it ends (the core's async workers, which never end, stay attached:
// one attach per worker). nullptr when attaching failed.
JNIEnv* AttachedEnv();

// The JNIEnv of the Java native method this thread is inside, when that method set it with
// EnvScope (nullptr otherwise). A callback reached from such a call reads it instead of asking
// the JVM (GetEnv is ~65 instructions per callback); the pointer is valid exactly while the
// native method runs, which the scope guarantees, so a thread that is detached and attached
// again between calls can never see a stale one. __thread rather than thread_local: a plain
// pointer needs no per-access initialisation check (thread_local across translation units does).
// The default (dynamic) TLS model: the glue is dlopen'ed by the JVM, and static TLS room for
// late-loaded libraries is not something every host process leaves free. With TLS descriptors
// (CMakeLists.txt) a read is a few instructions and no call.
extern __thread JNIEnv* tl_env;

// Sets tl_env for the duration of one native method (nested calls restore the outer value).
class EnvScope {
 public:
  explicit EnvScope(JNIEnv* env) : prev_(tl_env) { tl_env = env; }
  ~EnvScope() { tl_env = prev_; }
  EnvScope(const EnvScope&) = delete;
  EnvScope& operator=(const EnvScope&) = delete;

 private:
  JNIEnv* prev_;
};

// This thread's JNIEnv for a callback: the enclosing native method's, else AttachedEnv().
inline JNIEnv* CallbackEnv() {
  JNIEnv* env = tl_env;
  return env != nullptr ? env : AttachedEnv();
}

// Throws the Java exception for a failed C call: the callback's own exception when it is the
// one that failed, else an FFIException with the kind of TVMGetLastError().
void ThrowLastError(JNIEnv* env);
void ThrowFFI(JNIEnv* env, const char* kind, const std::string& message);
void ThrowNew(JNIEnv* env, jclass cls, const std::string& message);

// Checks a C ABI status; on failure throws and returns false.
inline bool Check(JNIEnv* env, int rc) {
  if (rc == 0) return true;
  ThrowLastError(env);
  return false;
}

// Bump allocator for one call's strings: inline storage first, heap blocks beyond it.
class Arena {
 public:
  char* Alloc(size_t n) {
    if (used_ + n <= sizeof(inline_)) {
      char* p = inline_ + used_;
      used_ += n;
      return p;
    }
    blocks_.emplace_back(new char[n]);
    return blocks_.back().get();
  }

 private:
  char inline_[512];
  size_t used_ = 0;
  std::vector<std::unique_ptr<char[]>> blocks_;
};

// A Java String as NUL-terminated UTF-8 (standard UTF-8, not JNI's modified UTF-8).
const char* ToUtf8(JNIEnv* env, jstring s, Arena* arena, size_t* out_len = nullptr);
std::string ToUtf8String(JNIEnv* env, jstring s);
// UTF-8 bytes as a Java String; invalid sequences become U+FFFD.
jstring NewStringUtf8(JNIEnv* env, const char* data, size_t size);

// Releases an owned reference of the given type code (no-op for values and views).
void FreeByCode(int code, void* handle);

}  // namespace polyffi_jni

#endif  // POLYFFI_JAVA_JNI_UTIL_H_
