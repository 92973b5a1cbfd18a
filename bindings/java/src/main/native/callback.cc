// The "callback" part: a Java Callback as a TVMPackedCFunc. The resource handle is a global
// reference to the Callback; the trampoline attaches native threads to the JVM, hands the
// arguments to Callbacks.invoke4 / invokeN and sets the return from the thread's Frame; the
// finalizer calls Callback.release() and deletes the global reference, exactly once. A
// LongCallback is a direct function (c_direct_api.h) whose resource is the callback's slot number
// in Callbacks (not a reference), and which writes its long into the caller's slot.
#include <polyffi/c_direct_api.h>
#include <polyffi/type_code_name.h>

#include "jni_util.h"

using namespace polyffi_jni;

namespace {

int Fail(const char* text) {
  TVMAPISetLastError(text);
  return -1;
}

// A Java exception pending after an upcall (thrown by a LongCallback, or an error such as
// OutOfMemoryError that escaped Callbacks' own catch): handed to Callbacks.stash, so it crosses C
// as "Kind: message" and the outer call can rethrow the same object; never left pending.
int FailPending(JNIEnv* env) {
  jthrowable t = env->ExceptionOccurred();
  env->ExceptionClear();
  if (t == nullptr) return Fail("RuntimeError: polyffi: the callback failed");
  auto* text =
      static_cast<jstring>(env->CallStaticObjectMethod(g.callbacks_class, g.callbacks_stash, t));
  if (env->ExceptionCheck() || text == nullptr) {
    env->ExceptionClear();
    TVMAPISetLastError("RuntimeError: polyffi: a Java error escaped the callback");
  } else {
    TVMAPISetLastError(ToUtf8String(env, text).c_str());
    env->DeleteLocalRef(text);
  }
  env->DeleteLocalRef(t);
  return -1;
}

// Callbacks.IN_FRAME: invoke4's "read the result from the frame".
constexpr jlong kInFrame = static_cast<jlong>(0x800000005EEDF00DULL);

bool Simple(int code) {
  switch (code) {
    case kTVMArgInt:
    case kDLUInt:
    case kTVMArgFloat:
    case kTVMArgBool:
    case kTVMNullptr:
    case kTVMOpaqueHandle:
    case kTVMDataType:
    case kDLDevice:
    case kTVMDLTensorHandle:
    case kTVMObjectHandle:
    case kTVMModuleHandle:
    case kTVMPackedFuncHandle:
    case kTVMNDArrayHandle:
      return true;
    default:
      return false;
  }
}

int Trampoline(TVMValue* args, int* type_codes, int num_args, TVMRetValueHandle ret,
               void* resource) {
  JNIEnv* env = CallbackEnv();
  if (env == nullptr) return Fail("RuntimeError: polyffi: cannot attach this thread to the JVM");
  auto cb = static_cast<jobject>(resource);
  // Argument i as the Java side expects it: rvalue references become plain (borrowed) objects.
  auto slot = [&](int i, int* code) -> jlong {
    *code = type_codes[i];
    if (*code == kTVMObjectRValueRefArg) {
      *code = kTVMObjectHandle;
      return reinterpret_cast<jlong>(*static_cast<void**>(args[i].v_handle));
    }
    return args[i].v_int64;
  };
  bool simple = num_args <= 4;
  for (int i = 0; i < num_args; ++i) {
    int c = type_codes[i];
    if (c == kTVMStr || c == kTVMBytes) {
      simple = false;
    } else if (!Simple(c) && c != kTVMObjectRValueRefArg) {
      std::string text = "TypeError: polyffi: callback argument " + std::to_string(i) +
                         " has unknown type code " + std::to_string(c);
      TVMAPISetLastError(text.c_str());
      return -1;
    }
  }
  // The simple path creates one local reference (the frame), deleted below; the general path
  // creates several and runs inside its own local frame.
  if (!simple && env->PushLocalFrame(16) != 0) return FailPending(env);
  auto done = [&]() {
    if (!simple) env->PopLocalFrame(nullptr);
  };
  jobject frame;
  if (simple) {
    jlong a[4] = {0, 0, 0, 0};
    jint packed = 0;
    for (int i = 0; i < num_args; ++i) {
      int c;
      a[i] = slot(i, &c);
      if (c == kTVMDataType) a[i] &= 0xffffffffLL;
      packed |= c << (8 * i);
    }
    jlong r = num_args == 1 ? env->CallStaticLongMethod(g.callbacks_class, g.callbacks_invoke1, cb,
                                                        packed, a[0])
                            : env->CallStaticLongMethod(g.callbacks_class, g.callbacks_invoke4, cb,
                                                        num_args, packed, a[0], a[1], a[2], a[3]);
    if (env->ExceptionCheck()) return FailPending(env);
    if (r != kInFrame) {  // an int result: nothing else to read
      TVMValue v;
      v.v_int64 = r;
      int code = kTVMArgInt;
      return TVMCFuncSetReturn(ret, &v, &code, 1) == 0 ? 0 : -1;
    }
    frame = env->CallStaticObjectMethod(g.callbacks_class, g.callbacks_last_frame);
  } else {
    jlongArray vals = env->NewLongArray(num_args);
    jintArray codes = env->NewIntArray(num_args);
    jobjectArray refs = env->NewObjectArray(num_args, g.object_class, nullptr);
    if (vals == nullptr || codes == nullptr || refs == nullptr) {
      int rc = FailPending(env);
      done();
      return rc;
    }
    std::vector<jlong> v(num_args);
    std::vector<jint> c(num_args);
    for (int i = 0; i < num_args; ++i) {
      int code;
      v[i] = slot(i, &code);
      if (code == kTVMDataType) v[i] &= 0xffffffffLL;
      c[i] = code;
      jobject ref = nullptr;
      if (code == kTVMStr) {
        const char* s = args[i].v_str;
        ref = NewStringUtf8(env, s, std::strlen(s));
      } else if (code == kTVMBytes) {
        auto* arr = static_cast<TVMByteArray*>(args[i].v_handle);
        jbyteArray b = env->NewByteArray(static_cast<jsize>(arr->size));
        if (b != nullptr) {
          env->SetByteArrayRegion(b, 0, static_cast<jsize>(arr->size),
                                  reinterpret_cast<const jbyte*>(arr->data));
        }
        ref = b;
      }
      if (env->ExceptionCheck()) {
        int rc = FailPending(env);
        done();
        return rc;
      }
      if (ref != nullptr) {
        env->SetObjectArrayElement(refs, i, ref);
        env->DeleteLocalRef(ref);
      }
    }
    env->SetLongArrayRegion(vals, 0, num_args, v.data());
    env->SetIntArrayRegion(codes, 0, num_args, c.data());
    frame =
        env->CallStaticObjectMethod(g.callbacks_class, g.callbacks_invoke_n, cb, vals, codes, refs);
  }
  if (env->ExceptionCheck() || frame == nullptr) {
    int rc = FailPending(env);
    done();
    return rc;
  }
  int code = env->GetIntField(frame, g.frame_ret_code);
  if (code == -1) {
    auto* text = static_cast<jstring>(env->GetObjectField(frame, g.frame_ret_ref));
    std::string t = text != nullptr ? ToUtf8String(env, text) : "RuntimeError: callback failed";
    TVMAPISetLastError(t.c_str());
    if (text != nullptr) env->DeleteLocalRef(text);
    env->DeleteLocalRef(frame);
    done();
    return -1;
  }
  TVMValue value;
  value.v_int64 = env->GetLongField(frame, g.frame_ret_value);
  Arena arena;
  TVMByteArray bytes;
  if (code == kTVMStr) {
    auto* s = static_cast<jstring>(env->GetObjectField(frame, g.frame_ret_ref));
    value.v_str = ToUtf8(env, s, &arena);
    env->DeleteLocalRef(s);
  } else if (code == kTVMBytes) {
    auto* b = static_cast<jbyteArray>(env->GetObjectField(frame, g.frame_ret_ref));
    jsize len = env->GetArrayLength(b);
    char* data = arena.Alloc(static_cast<size_t>(len) + 1);
    env->GetByteArrayRegion(b, 0, len, reinterpret_cast<jbyte*>(data));
    env->DeleteLocalRef(b);
    bytes.data = data;
    bytes.size = static_cast<size_t>(len);
    value.v_handle = &bytes;
  }
  bool scalar =
      code == kTVMArgInt || code == kTVMArgFloat || code == kTVMArgBool || code == kTVMNullptr;
  bool owned = !scalar && env->GetBooleanField(frame, g.frame_ret_owned);
  int rc = TVMCFuncSetReturn(ret, &value, &code, 1);
  if (owned) FreeByCode(code, value.v_handle);
  // The frame kept a returned Java value reachable until now; let it go.
  if (!scalar) env->SetObjectField(frame, g.frame_ret_ref, nullptr);
  env->DeleteLocalRef(frame);
  done();
  return rc == 0 ? 0 : -1;
}

// LongTrampoline's TypeError, out of line so the hot path builds no string.
// It takes the trampoline's own leading parameters, so the jump to it moves no registers.
[[gnu::cold, gnu::noipa]] int LongArgError(void*, const TVMValue*, const int* type_codes,
                                           int num_args) {
  std::string text = "TypeError: polyffi LongCallback expected 1 int argument but got " +
                     std::to_string(num_args) + " argument(s)";
  if (num_args >= 1)
    text += std::string(" (argument 0 is ") + PolyffiTypeCodeName(type_codes[0]) + ")";
  TVMAPISetLastError(text.c_str());
  return -1;
}

// A LongCallback function's resource: the callback's slot in Callbacks' table (a jint).
inline jint SlotOf(void* resource) {
  return static_cast<jint>(reinterpret_cast<intptr_t>(resource));
}

// The upcall of a LongCallback and its exception check. The slot's code is written before the
// upcall and its value right after it, before the check: on failure the caller ignores the slot
// (c_direct_api.h), and an int owns nothing. Only env and ret_val stay alive across the upcall.
inline int LongUpcall(JNIEnv* env, void* resource, jlong x, TVMValue* ret_val, int* ret_type_code) {
  *ret_type_code = kTVMArgInt;
  // The array form: no va_list to build (the varargs wrapper spills every argument register).
  jvalue jargs[2];
  jargs[0].i = SlotOf(resource);
  jargs[1].j = x;
  ret_val->v_int64 =
      env->functions->CallStaticLongMethodA(env, g.callbacks_class, g.callbacks_invoke_long, jargs);
  if (__builtin_expect(env->functions->ExceptionCheck(env), 0)) return FailPending(env);
  return 0;
}

// A LongCallback reached on a thread that is not inside one of our native methods (a native
// thread, an async worker): attach it, out of line so the hot path saves no registers for it.
[[gnu::noinline]] int LongTrampolineAttach(void* resource, jlong x, TVMValue* ret_val,
                                           int* ret_type_code) {
  JNIEnv* env = AttachedEnv();
  if (env == nullptr) return Fail("RuntimeError: polyffi: cannot attach this thread to the JVM");
  return LongUpcall(env, resource, x, ret_val, ret_type_code);
}

// The LongCallback fast path, a direct function (c_direct_api.h): one int in, one int written
// straight into the caller's slot (no TVMCFuncSetReturn, no boxing); an exception is handed to
// Callbacks.stash and crosses C as "Kind: message".
int LongTrampoline(void* resource, const TVMValue* args, const int* type_codes, int num_args,
                   TVMValue* ret_val, int* ret_type_code) {
  if (num_args != 1 ||
      (type_codes[0] != kTVMArgInt && type_codes[0] != kDLUInt && type_codes[0] != kTVMArgBool)) {
    return LongArgError(resource, args, type_codes, num_args);
  }
  JNIEnv* env = tl_env;  // set by the Java call this callback runs inside (EnvScope)
  if (__builtin_expect(env == nullptr, 0)) {
    return LongTrampolineAttach(resource, args[0].v_int64, ret_val, ret_type_code);
  }
  return LongUpcall(env, resource, args[0].v_int64, ret_val, ret_type_code);
}

void Finalizer(void* resource) {
  JNIEnv* env = AttachedEnv();
  if (env == nullptr) return;  // no JVM to hand it to: leaking one reference beats a crash
  auto cb = static_cast<jobject>(resource);
  jthrowable pending = env->ExceptionOccurred();
  if (pending != nullptr) env->ExceptionClear();
  env->CallStaticVoidMethod(g.callbacks_class, g.callbacks_released, cb);
  if (env->ExceptionCheck()) env->ExceptionClear();
  env->DeleteGlobalRef(cb);
  if (pending != nullptr) {
    env->Throw(pending);
    env->DeleteLocalRef(pending);
  }
}

}  // namespace

extern "C" JNIEXPORT jlong JNICALL Java_org_polyffi_Native_createCallback(JNIEnv* env, jclass,
                                                                          jobject cb) {
  jobject ref = env->NewGlobalRef(cb);
  if (ref == nullptr) return 0;
  TVMFunctionHandle out = nullptr;
  if (TVMFuncCreateFromCFunc(Trampoline, ref, Finalizer, &out) != 0) {
    ThrowLastError(env);  // the runtime already ran the finalizer: the reference is gone
    return 0;
  }
  return reinterpret_cast<jlong>(out);
}

// A LongCallback's finalizer: Callbacks.releaseLong frees its slot and calls release().
void LongFinalizer(void* resource) {
  JNIEnv* env = AttachedEnv();
  if (env == nullptr) return;  // no JVM to hand it to: leaking one slot beats a crash
  jthrowable pending = env->ExceptionOccurred();
  if (pending != nullptr) env->ExceptionClear();
  env->CallStaticVoidMethod(g.callbacks_class, g.callbacks_release_long, SlotOf(resource));
  if (env->ExceptionCheck()) env->ExceptionClear();
  if (pending != nullptr) {
    env->Throw(pending);
    env->DeleteLocalRef(pending);
  }
}

// A LongCallback's function: its resource is the callback's slot in Callbacks (no reference).
extern "C" JNIEXPORT jlong JNICALL Java_org_polyffi_Native_createLongCallback(JNIEnv* env, jclass,
                                                                              jint slot) {
  void* ref = reinterpret_cast<void*>(static_cast<intptr_t>(slot));
  TVMFunctionHandle out = nullptr;
  // Classic results (0 or -1, an int code): TVMFuncCall hands them on without a check of its own.
  if (TVMFuncCreateDirectEx(LongTrampoline, ref, LongFinalizer, TVM_DIRECT_CLASSIC_RESULTS, &out) !=
      0) {
    ThrowLastError(env);  // the runtime already ran the finalizer: the slot is free again
    return 0;
  }
  return reinterpret_cast<jlong>(out);
}
