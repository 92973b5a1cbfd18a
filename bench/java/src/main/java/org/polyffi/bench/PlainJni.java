package org.polyffi.bench;

/** Hand-written JNI of fixed signatures: the floor. */
public final class PlainJni {
  private PlainJni() {}

  static {
    BenchEnv.init();
    System.load(BenchEnv.jniLib());
  }

  /** TVMFuncCall(fn, a, b, c) from a plain JNI method: JNI + the packed call, nothing else. */
  public static native long packedAdd3(long fn, long a, long b, long c);

  public static native void nop();

  public static native long add3(long a, long b, long c);

  public static native String echo(String s);

  /** C calls {@link #callback(long)} n times through CallStaticLongMethod; returns the sum. */
  public static native long callbackLoop(long n);

  /** callbackLoop plus the ExceptionCheck a correct callback needs after each upcall. */
  public static native long callbackLoopChecked(long n);

  /** TVMFuncGetDirect(fn) as {func, res}; directAdd3 calls that pair with 3 ints. */
  public static native long[] getDirect(long fn);

  public static native long directAdd3(long func, long res, long a, long b, long c);

  /**
   * op.applyAsLong(n) called from C: the one region bench/java/instructions.sh counts (callgrind
   * --toggle-collect on this native method).
   */
  public static native long measured(java.util.function.LongUnaryOperator op, long n);

  static long callback(long i) {
    return i;
  }
}
