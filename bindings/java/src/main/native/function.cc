// The "function" part: TVMFuncCall from Java. The generic path unpacks the slots Values.java
// filled; the primitive paths put jlong / jdouble straight into stack TVMValue arrays.
#include <polyffi/c_async_api.h>
#include <polyffi/c_direct_api.h>
#include <polyffi/type_code_name.h>

#include "jni_util.h"

using namespace polyffi_jni;

namespace {

constexpr int kInlineArgs = 8;

// Storage for one call's arguments: stack arrays up to kInlineArgs, heap beyond.
struct ArgStorage {
  TVMValue inline_vals[kInlineArgs];
  int inline_codes[kInlineArgs];
  TVMByteArray inline_bytes[kInlineArgs];
  std::vector<TVMValue> heap_vals;
  std::vector<int> heap_codes;
  std::vector<TVMByteArray> heap_bytes;
  TVMValue* vals = inline_vals;
  int* codes = inline_codes;
  TVMByteArray* bytes = inline_bytes;

  explicit ArgStorage(int n) {
    if (n > kInlineArgs) {
      heap_vals.resize(n);
      heap_codes.resize(n);
      heap_bytes.resize(n);
      vals = heap_vals.data();
      codes = heap_codes.data();
      bytes = heap_bytes.data();
    }
  }
};

// A result the fast path cannot return: release it (no leak) and report a TypeError.
void WrongResult(JNIEnv* env, const char* want, TVMValue ret, int code) {
  FreeByCode(code, ret.v_handle);
  ThrowFFI(env, "TypeError",
           std::string("expected ") + want + " result but got " + PolyffiTypeCodeName(code));
}

jlong LongResult(JNIEnv* env, int rc, TVMValue ret, int code) {
  if (rc != 0) {
    ThrowLastError(env);
    return 0;
  }
  if (code == kTVMArgInt || code == kDLUInt || code == kTVMArgBool) return ret.v_int64;
  WrongResult(env, "an int", ret, code);
  return 0;
}

jdouble DoubleResult(JNIEnv* env, int rc, TVMValue ret, int code) {
  if (rc != 0) {
    ThrowLastError(env);
    return 0;
  }
  if (code == kTVMArgFloat) return ret.v_float64;
  if (code == kTVMArgInt || code == kDLUInt || code == kTVMArgBool) {
    return static_cast<jdouble>(ret.v_int64);
  }
  WrongResult(env, "a float", ret, code);
  return 0;
}

// A direct int call's outcome other than "returned 0 with an int": a uint or bool result (taken
// as is), an error or a result of another type (thrown). Out of line and without the caller's
// JNIEnv, which it asks the JVM for (the thread is inside a native method, so this is GetEnv):
// the hot path then keeps nothing alive across the call and tests one word.
[[gnu::noinline]] jlong DirectLongRest(int rc, TVMValue ret, int code) {
  if (rc == 0 && (code == kDLUInt || code == kTVMArgBool)) return ret.v_int64;
  return LongResult(AttachedEnv(), rc, ret, code);
}

// n ints through a TVMFuncGetDirect pair: the slot is pre-set to None as the protocol asks.
// Success with an int result is rc == 0 and code == kTVMArgInt (0): one OR and one test.
static_assert(kTVMArgInt == 0, "the fast test below relies on kTVMArgInt being 0");
template <int N>
jlong DirectLongs(jlong fn, jlong res, const jlong (&a)[N]) {
  TVMValue vals[N > 0 ? N : 1];
  int codes[N > 0 ? N : 1];
  for (int i = 0; i < N; ++i) {
    vals[i].v_int64 = a[i];
    codes[i] = kTVMArgInt;
  }
  TVMValue ret;
  ret.v_handle = nullptr;
  int code = kTVMNullptr;
  int rc = reinterpret_cast<TVMDirectCFunc>(fn)(reinterpret_cast<void*>(res), vals, codes, N, &ret,
                                                &code);
  if (__builtin_expect((rc | code) == 0, 1)) return ret.v_int64;
  return DirectLongRest(rc, ret, code);
}

template <int N>
jdouble CallDoubles(JNIEnv* env, jlong fn, const jdouble (&a)[N]) {
  TVMValue vals[N];
  int codes[N];
  for (int i = 0; i < N; ++i) {
    vals[i].v_float64 = a[i];
    codes[i] = kTVMArgFloat;
  }
  TVMValue ret;
  int code = kTVMNullptr;
  int rc = TVMFuncCall(reinterpret_cast<void*>(fn), vals, codes, N, &ret, &code);
  return DoubleResult(env, rc, ret, code);
}

// Fills the str / bytes slots of a frame from refs (UTF-8 and TVMByteArray in arena / bytes).
void FillStrings(JNIEnv* env, TVMValue* vals, const int* codes, jobjectArray refs, int n,
                 Arena* arena, TVMByteArray* inline_bytes, std::vector<TVMByteArray>* heap_bytes) {
  TVMByteArray* bytes = inline_bytes;
  if (n > kInlineArgs) {
    heap_bytes->resize(n);
    bytes = heap_bytes->data();
  }
  for (int i = 0; i < n; ++i) {
    int c = codes[i];
    if (c == kStr) {
      auto* s = static_cast<jstring>(env->GetObjectArrayElement(refs, i));
      vals[i].v_str = ToUtf8(env, s, arena);
      env->DeleteLocalRef(s);
    } else if (c == kBytes) {
      auto* b = static_cast<jbyteArray>(env->GetObjectArrayElement(refs, i));
      jsize len = env->GetArrayLength(b);
      char* data = arena->Alloc(static_cast<size_t>(len) + 1);
      env->GetByteArrayRegion(b, 0, len, reinterpret_cast<jbyte*>(data));
      env->DeleteLocalRef(b);
      bytes[i].data = data;
      bytes[i].size = static_cast<size_t>(len);
      vals[i].v_handle = &bytes[i];
    }
  }
}

}  // namespace

extern "C" JNIEXPORT jlong JNICALL Java_org_polyffi_Native_address(JNIEnv* env, jclass,
                                                                   jobject buffer) {
  return reinterpret_cast<jlong>(env->GetDirectBufferAddress(buffer));
}

// The generic call. slots: the frame's direct buffer, TVMValue[cap] then int[cap] codes then
// the result slot; the values are used in place (str / bytes slots are filled in here).
extern "C" JNIEXPORT jobject JNICALL Java_org_polyffi_Native_call(JNIEnv* env, jclass, jlong fn,
                                                                  jlong slots, jint cap,
                                                                  jobjectArray refs, jint n) {
  auto* base = reinterpret_cast<char*>(slots);
  auto* vals = reinterpret_cast<TVMValue*>(base);
  auto* codes = reinterpret_cast<int*>(base + 8 * static_cast<size_t>(cap));
  auto* out = reinterpret_cast<jlong*>(base + 12 * static_cast<size_t>(cap));
  EnvScope scope(env);  // callbacks the callee makes on this thread use env (no GetEnv)
  Arena arena;
  TVMByteArray inline_bytes[kInlineArgs];
  std::vector<TVMByteArray> heap_bytes;
  FillStrings(env, vals, codes, refs, n, &arena, inline_bytes, &heap_bytes);
  TVMValue ret;
  int code = kTVMNullptr;
  if (TVMFuncCall(reinterpret_cast<void*>(fn), vals, codes, n, &ret, &code) != 0) {
    ThrowLastError(env);
    return nullptr;
  }
  out[0] = ret.v_int64;
  out[1] = code;
  jobject result = nullptr;
  if (code == kTVMStr) {
    result = NewStringUtf8(env, ret.v_str, std::strlen(ret.v_str));
  } else if (code == kTVMBytes) {
    auto* arr = static_cast<TVMByteArray*>(ret.v_handle);
    jbyteArray b = env->NewByteArray(static_cast<jsize>(arr->size));
    if (b != nullptr) {
      env->SetByteArrayRegion(b, 0, static_cast<jsize>(arr->size),
                              reinterpret_cast<const jbyte*>(arr->data));
    }
    result = b;
  } else if (code == kTVMDataType) {
    out[0] = static_cast<jlong>(ret.v_type.code | (ret.v_type.bits << 8) |
                                (static_cast<uint32_t>(ret.v_type.lanes) << 16));
  }
  return result;
}

extern "C" JNIEXPORT jlong JNICALL Java_org_polyffi_Native_callLN(JNIEnv* env, jclass, jlong fn,
                                                                  jlongArray jargs) {
  jsize n = env->GetArrayLength(jargs);
  ArgStorage args(n);
  env->GetLongArrayRegion(jargs, 0, n, reinterpret_cast<jlong*>(args.vals));
  for (int i = 0; i < n; ++i) args.codes[i] = kTVMArgInt;
  TVMValue ret;
  int code = kTVMNullptr;
  int rc = TVMFuncCall(reinterpret_cast<void*>(fn), args.vals, args.codes, n, &ret, &code);
  return LongResult(env, rc, ret, code);
}

extern "C" JNIEXPORT jlongArray JNICALL Java_org_polyffi_Native_getDirect(JNIEnv* env, jclass,
                                                                          jlong fn) {
  TVMDirectCFunc func = nullptr;
  void* res = nullptr;
  if (!Check(env, TVMFuncGetDirect(reinterpret_cast<void*>(fn), &func, &res))) return nullptr;
  jlong pair[2] = {reinterpret_cast<jlong>(func), reinterpret_cast<jlong>(res)};
  jlongArray out = env->NewLongArray(2);
  if (out != nullptr) env->SetLongArrayRegion(out, 0, 2, pair);
  return out;
}

extern "C" JNIEXPORT jlong JNICALL Java_org_polyffi_Native_directL0(JNIEnv*, jclass, jlong fn,
                                                                    jlong res) {
  TVMValue ret;
  ret.v_handle = nullptr;
  int code = kTVMNullptr;
  int rc = reinterpret_cast<TVMDirectCFunc>(fn)(reinterpret_cast<void*>(res), nullptr, nullptr, 0,
                                                &ret, &code);
  if (__builtin_expect((rc | code) == 0, 1)) return ret.v_int64;
  return DirectLongRest(rc, ret, code);
}

extern "C" JNIEXPORT jlong JNICALL Java_org_polyffi_Native_directL1(JNIEnv*, jclass, jlong fn,
                                                                    jlong res, jlong a) {
  return DirectLongs<1>(fn, res, {a});
}

extern "C" JNIEXPORT jlong JNICALL Java_org_polyffi_Native_directL2(JNIEnv*, jclass, jlong fn,
                                                                    jlong res, jlong a, jlong b) {
  return DirectLongs<2>(fn, res, {a, b});
}

extern "C" JNIEXPORT jlong JNICALL Java_org_polyffi_Native_directL3(JNIEnv*, jclass, jlong fn,
                                                                    jlong res, jlong a, jlong b,
                                                                    jlong c) {
  return DirectLongs<3>(fn, res, {a, b, c});
}

extern "C" JNIEXPORT jlong JNICALL Java_org_polyffi_Native_directL4(JNIEnv*, jclass, jlong fn,
                                                                    jlong res, jlong a, jlong b,
                                                                    jlong c, jlong d) {
  return DirectLongs<4>(fn, res, {a, b, c, d});
}

extern "C" JNIEXPORT jdouble JNICALL Java_org_polyffi_Native_callD1(JNIEnv* env, jclass, jlong fn,
                                                                    jdouble a) {
  return CallDoubles<1>(env, fn, {a});
}

extern "C" JNIEXPORT jdouble JNICALL Java_org_polyffi_Native_callD2(JNIEnv* env, jclass, jlong fn,
                                                                    jdouble a, jdouble b) {
  return CallDoubles<2>(env, fn, {a, b});
}

extern "C" JNIEXPORT jdouble JNICALL Java_org_polyffi_Native_callD3(JNIEnv* env, jclass, jlong fn,
                                                                    jdouble a, jdouble b,
                                                                    jdouble c) {
  return CallDoubles<3>(env, fn, {a, b, c});
}

extern "C" JNIEXPORT jdouble JNICALL Java_org_polyffi_Native_callDN(JNIEnv* env, jclass, jlong fn,
                                                                    jdoubleArray jargs) {
  jsize n = env->GetArrayLength(jargs);
  ArgStorage args(n);
  env->GetDoubleArrayRegion(jargs, 0, n, reinterpret_cast<jdouble*>(args.vals));
  for (int i = 0; i < n; ++i) args.codes[i] = kTVMArgFloat;
  TVMValue ret;
  int code = kTVMNullptr;
  int rc = TVMFuncCall(reinterpret_cast<void*>(fn), args.vals, args.codes, n, &ret, &code);
  return DoubleResult(env, rc, ret, code);
}

extern "C" JNIEXPORT void JNICALL Java_org_polyffi_Native_callV0(JNIEnv* env, jclass, jlong fn) {
  TVMValue ret;
  int code = kTVMNullptr;
  if (TVMFuncCall(reinterpret_cast<void*>(fn), nullptr, nullptr, 0, &ret, &code) != 0) {
    ThrowLastError(env);
    return;
  }
  FreeByCode(code, ret.v_handle);
}

// ---- async calls on the core's pool ----------------------------------------------------------

namespace {

bool IsObjectCode(int code) {
  return code == kTVMPackedFuncHandle || code == kTVMModuleHandle || code == kTVMNDArrayHandle ||
         code == kTVMObjectHandle;
}

// The completion, on a pool worker: attach it to the JVM (once per worker; AttachedEnv caches
// it as a daemon) and hand the result to AsyncCall.onDone, which owns an object result.
void OnAsyncDone(int status, TVMValue* ret, int code, void* resource) {
  auto target = static_cast<jobject>(resource);
  JNIEnv* env = AttachedEnv();
  if (env == nullptr) {  // no JVM to report to (shutting down): release what we would hand over
    if (status == kTVMAsyncReturned && IsObjectCode(code)) FreeByCode(code, ret->v_handle);
    return;
  }
  jlong value = 0;
  jobject ref = nullptr;
  jstring error = nullptr;
  if (status == kTVMAsyncReturned) {
    if (code == kTVMStr) {
      ref = NewStringUtf8(env, ret->v_str, std::strlen(ret->v_str));
    } else if (code == kTVMBytes) {
      auto* arr = static_cast<TVMByteArray*>(ret->v_handle);
      jbyteArray b = env->NewByteArray(static_cast<jsize>(arr->size));
      if (b != nullptr) {
        env->SetByteArrayRegion(b, 0, static_cast<jsize>(arr->size),
                                reinterpret_cast<const jbyte*>(arr->data));
      }
      ref = b;
    } else if (code == kTVMDataType) {
      value = static_cast<jlong>(ret->v_type.code | (ret->v_type.bits << 8) |
                                 (static_cast<uint32_t>(ret->v_type.lanes) << 16));
    } else {
      value = ret->v_int64;
    }
  } else {
    const char* text = TVMGetLastError();
    if (text == nullptr) text = "TVMError: unknown error";
    error = NewStringUtf8(env, text, std::strlen(text));
  }
  if (env->ExceptionCheck()) {  // out of memory converting: report that instead of the result
    jthrowable t = env->ExceptionOccurred();
    env->ExceptionClear();
    if (status == kTVMAsyncReturned && IsObjectCode(code)) FreeByCode(code, ret->v_handle);
    env->CallBooleanMethod(target, g.future_complete_exceptionally, t);
  } else {
    env->CallVoidMethod(target, g.async_on_done, static_cast<jint>(status), value,
                        static_cast<jint>(code), ref, error);
  }
  if (env->ExceptionCheck()) env->ExceptionClear();  // onDone catches its own; nothing stays
  if (ref != nullptr) env->DeleteLocalRef(ref);
  if (error != nullptr) env->DeleteLocalRef(error);
  env->DeleteGlobalRef(target);
}

}  // namespace

extern "C" JNIEXPORT jlong JNICALL Java_org_polyffi_Native_asyncSubmit(JNIEnv* env, jclass,
                                                                       jlong fn, jlong slots,
                                                                       jint cap, jobjectArray refs,
                                                                       jint n, jobject target) {
  auto* base = reinterpret_cast<char*>(slots);
  auto* vals = reinterpret_cast<TVMValue*>(base);
  auto* codes = reinterpret_cast<int*>(base + 8 * static_cast<size_t>(cap));
  Arena arena;
  TVMByteArray inline_bytes[kInlineArgs];
  std::vector<TVMByteArray> heap_bytes;
  // Strings and bytes are copied by TVMAsyncSubmit, so the arena may go when it returns.
  FillStrings(env, vals, codes, refs, n, &arena, inline_bytes, &heap_bytes);
  if (env->ExceptionCheck()) return 0;
  jobject global = env->NewGlobalRef(target);
  if (global == nullptr) return 0;
  TVMAsyncCallHandle call = nullptr;
  if (TVMAsyncSubmit(reinterpret_cast<void*>(fn), vals, codes, n, OnAsyncDone, global, &call) !=
      0) {
    env->DeleteGlobalRef(global);  // nothing was queued: done is never called
    ThrowLastError(env);
    return 0;
  }
  return reinterpret_cast<jlong>(call);
}

extern "C" JNIEXPORT jint JNICALL Java_org_polyffi_Native_asyncCancel(JNIEnv* env, jclass,
                                                                      jlong call) {
  int state = 0;
  if (!Check(env, TVMAsyncCancel(reinterpret_cast<TVMAsyncCallHandle>(call), &state))) return 0;
  return state;
}

extern "C" JNIEXPORT void JNICALL Java_org_polyffi_Native_asyncFree(JNIEnv*, jclass, jlong call) {
  TVMAsyncFree(reinterpret_cast<TVMAsyncCallHandle>(call));
}

extern "C" JNIEXPORT jintArray JNICALL Java_org_polyffi_Native_asyncConfigure(JNIEnv* env, jclass,
                                                                              jint workers,
                                                                              jint limit) {
  int v[3] = {0, 0, 0};
  if (!Check(env, TVMAsyncConfigure(workers, limit)) ||
      !Check(env, TVMAsyncGetConfig(&v[0], &v[1], &v[2]))) {
    return nullptr;
  }
  jintArray out = env->NewIntArray(3);
  if (out != nullptr) env->SetIntArrayRegion(out, 0, 3, reinterpret_cast<jint*>(v));
  return out;
}
