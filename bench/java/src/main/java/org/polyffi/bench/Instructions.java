package org.polyffi.bench;

import org.polyffi.Function;
import org.polyffi.Module;

/**
 * One case of bench/java/instructions.sh: warms the case up (so the JIT has compiled it), then runs
 * it n more times and exits. instructions.sh runs this under callgrind for two values of n; the
 * difference of the two instruction counts divided by the difference of n is the cost of one call,
 * with JVM start-up, class loading and JIT compilation cancelled out.
 *
 * <p>usage: Instructions CASE N, CASE one of add3.polyffi, add3.jni, add3.packed, nop.polyffi,
 * add3.direct, nop.jni, callback.long, callback.object, callback.jni, callback.jnicheck.
 */
public final class Instructions {
  private Instructions() {}

  static volatile long sink;

  public static void main(String[] args) {
    if (args.length != 2) {
      throw new IllegalArgumentException("usage: Instructions CASE N");
    }
    BenchEnv.init();
    String name = args[0];
    long n = Long.parseLong(args[1]);
    try (Module testing = Module.load(BenchEnv.lib("polyffi_testing"));
        Function nop = Function.getGlobal("testing.nop");
        Function add3 = Function.getGlobal("testing.add3");
        Function callN = Function.getGlobal("testing.call_n");
        Function longCb = Function.convertLong(x -> x);
        Function objCb = Function.convert(a -> a[0])) {
      long fn = add3.address();
      long[] pair = PlainJni.getDirect(fn);
      java.util.function.LongUnaryOperator c;
      switch (name) {
        case "add3.polyffi":
          c =
              k -> {
                long s = 0;
                for (long i = 0; i < k; i++) s += add3.callLong(i, 2, 3);
                return s;
              };
          break;
        case "add3.jni":
          c =
              k -> {
                long s = 0;
                for (long i = 0; i < k; i++) s += PlainJni.add3(i, 2, 3);
                return s;
              };
          break;
        case "add3.packed":
          c =
              k -> {
                long s = 0;
                for (long i = 0; i < k; i++) s += PlainJni.packedAdd3(fn, i, 2, 3);
                return s;
              };
          break;
        case "add3.direct":
          c =
              k -> {
                long s = 0;
                for (long i = 0; i < k; i++) s += PlainJni.directAdd3(pair[0], pair[1], i, 2, 3);
                return s;
              };
          break;
        case "nop.polyffi":
          c =
              k -> {
                for (long i = 0; i < k; i++) nop.callVoid();
                return k;
              };
          break;
        case "nop.jni":
          c =
              k -> {
                for (long i = 0; i < k; i++) PlainJni.nop();
                return k;
              };
          break;
        case "callback.long":
          c = k -> (Long) callN.call(longCb, k);
          break;
        case "callback.object":
          c = k -> (Long) callN.call(objCb, k);
          break;
        case "callback.jni":
          c = PlainJni::callbackLoop;
          break;
        case "callback.jnicheck":
          c = PlainJni::callbackLoopChecked;
          break;
        default:
          throw new IllegalArgumentException("unknown case " + name);
      }
      // Warm-up in chunks, so the loop and what it calls are compiled (C2) before the counted run.
      for (int i = 0; i < 30; i++) sink += c.applyAsLong(2_000);
      long expect = name.startsWith("nop") ? n : sumOf(name, n);
      long got = PlainJni.measured(c, n);
      if (got != expect) {
        throw new IllegalStateException(name + ": got " + got + ", expected " + expect);
      }
    }
  }

  /** The checksum each case must return for n calls (so a broken case fails loudly). */
  static long sumOf(String name, long n) {
    long s = n * (n - 1) / 2; // sum of i for i < n
    return name.startsWith("add3") ? s + 5 * n : s;
  }
}
