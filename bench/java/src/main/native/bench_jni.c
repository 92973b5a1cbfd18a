/* Floors for the Java benchmarks: what a hand-written JNI binding of one fixed signature costs. */
#include <jni.h>
#include <polyffi/c_direct_api.h>
#include <polyffi/c_runtime_api.h>
#include <stdint.h>
#include <string.h>

void bench_baseline_nop(void);
int64_t bench_baseline_add3(int64_t a, int64_t b, int64_t c);

JNIEXPORT void JNICALL Java_org_polyffi_bench_PlainJni_nop(JNIEnv* env, jclass cls) {
  (void)env;
  (void)cls;
  bench_baseline_nop();
}

JNIEXPORT jlong JNICALL Java_org_polyffi_bench_PlainJni_add3(JNIEnv* env, jclass cls, jlong a,
                                                             jlong b, jlong c) {
  (void)env;
  (void)cls;
  return bench_baseline_add3(a, b, c);
}

/* The packed call alone: a plain JNI method that calls TVMFuncCall(fn, 3 ints), as a
 * hand-written JNI binding of one function would (no handle checks, no error text). */
JNIEXPORT jlong JNICALL Java_org_polyffi_bench_PlainJni_packedAdd3(JNIEnv* env, jclass cls,
                                                                   jlong fn, jlong a, jlong b,
                                                                   jlong c) {
  (void)env;
  (void)cls;
  TVMValue v[3];
  int codes[3] = {kTVMArgInt, kTVMArgInt, kTVMArgInt};
  v[0].v_int64 = a;
  v[1].v_int64 = b;
  v[2].v_int64 = c;
  TVMValue ret;
  int code;
  if (TVMFuncCall((TVMFunctionHandle)fn, v, codes, 3, &ret, &code) != 0) return -1;
  return ret.v_int64;
}

/* A String into C as UTF-8 and a new String back: the floor of a string echo. */
JNIEXPORT jstring JNICALL Java_org_polyffi_bench_PlainJni_echo(JNIEnv* env, jclass cls, jstring s) {
  (void)cls;
  char buf[256];
  jsize n = (*env)->GetStringUTFLength(env, s);
  if (n >= (jsize)sizeof(buf)) return NULL;
  (*env)->GetStringUTFRegion(env, s, 0, (*env)->GetStringLength(env, s), buf);
  buf[n] = '\0';
  return (*env)->NewStringUTF(env, buf);
}

/* C calls the static Java method PlainJni.callback(long) n times: the floor of a callback. */
JNIEXPORT jlong JNICALL Java_org_polyffi_bench_PlainJni_callbackLoop(JNIEnv* env, jclass cls,
                                                                     jlong n) {
  static jmethodID cb = NULL;
  if (cb == NULL) cb = (*env)->GetStaticMethodID(env, cls, "callback", "(J)J");
  jlong sum = 0;
  for (jlong i = 0; i < n; ++i) sum += (*env)->CallStaticLongMethod(env, cls, cb, i);
  return sum;
}

/* callbackLoop with the exception check after each upcall that any callback which must report
 * a Java exception pays (the floor of a correct callback). */
JNIEXPORT jlong JNICALL Java_org_polyffi_bench_PlainJni_callbackLoopChecked(JNIEnv* env, jclass cls,
                                                                            jlong n) {
  static jmethodID cb = NULL;
  if (cb == NULL) cb = (*env)->GetStaticMethodID(env, cls, "callback", "(J)J");
  jlong sum = 0;
  for (jlong i = 0; i < n; ++i) {
    sum += (*env)->CallStaticLongMethod(env, cls, cb, i);
    if ((*env)->ExceptionCheck(env)) return -1;
  }
  return sum;
}

JNIEXPORT jlongArray JNICALL Java_org_polyffi_bench_PlainJni_getDirect(JNIEnv* env, jclass cls,
                                                                       jlong fn) {
  (void)cls;
  TVMDirectCFunc func = NULL;
  void* res = NULL;
  if (TVMFuncGetDirect((TVMFunctionHandle)fn, &func, &res) != 0) return NULL;
  jlong pair[2] = {(jlong)(intptr_t)func, (jlong)(intptr_t)res};
  jlongArray out = (*env)->NewLongArray(env, 2);
  if (out != NULL) (*env)->SetLongArrayRegion(env, out, 0, 2, pair);
  return out;
}

/* The direct call alone: a plain JNI method calling a TVMFuncGetDirect (func, res) pair with
 * three ints, as a hand-written JNI binding of one direct function would. */
JNIEXPORT jlong JNICALL Java_org_polyffi_bench_PlainJni_directAdd3(JNIEnv* env, jclass cls,
                                                                   jlong func, jlong res, jlong a,
                                                                   jlong b, jlong c) {
  (void)env;
  (void)cls;
  TVMValue v[3];
  int codes[3] = {kTVMArgInt, kTVMArgInt, kTVMArgInt};
  v[0].v_int64 = a;
  v[1].v_int64 = b;
  v[2].v_int64 = c;
  TVMValue ret;
  ret.v_handle = NULL;
  int code = kTVMNullptr;
  if (((TVMDirectCFunc)func)((void*)res, v, codes, 3, &ret, &code) != 0) return -1;
  return ret.v_int64;
}

/* For JNA callbacks and FFM upcalls: calls f(i) for i in 0..n-1 and sums the results. */
__attribute__((visibility("default"))) int64_t bench_call_n(int64_t (*f)(int64_t), int64_t n) {
  int64_t sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += f(i);
  return sum;
}

/* Runs op.applyAsLong(n) (a java.util.function.LongUnaryOperator) and returns its result.
 * bench/java/instructions.sh counts instructions only inside this function (callgrind's
 * --toggle-collect), so the JVM's own threads (JIT compilers, GC) and start-up are not counted. */
JNIEXPORT jlong JNICALL Java_org_polyffi_bench_PlainJni_measured(JNIEnv* env, jclass cls,
                                                                 jobject op, jlong n) {
  (void)cls;
  jclass k = (*env)->GetObjectClass(env, op);
  jmethodID apply = (*env)->GetMethodID(env, k, "applyAsLong", "(J)J");
  (*env)->DeleteLocalRef(env, k);
  if (apply == NULL) return 0;
  return (*env)->CallLongMethod(env, op, apply, n);
}
