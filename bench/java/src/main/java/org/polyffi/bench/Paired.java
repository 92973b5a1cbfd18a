package org.polyffi.bench;

import java.util.Arrays;
import java.util.function.LongSupplier;
import org.polyffi.Function;
import org.polyffi.Module;

/**
 * Ratios that survive a loaded machine: each pair (ours, floor) is timed in alternating short
 * bursts, 31 rounds, and the median of the per-round ratios is printed beside the median ns of each
 * side. JMH (CallBench) gives the full table; this checks the three targets.
 */
public final class Paired {
  private Paired() {}

  static volatile long sink;

  /** ns per call of body, which runs `calls` calls and returns a checksum. */
  static double time(LongSupplier body, long calls) {
    long t0 = System.nanoTime();
    sink += body.getAsLong();
    return (System.nanoTime() - t0) / (double) calls;
  }

  static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s[s.length / 2];
  }

  static void pair(String name, LongSupplier ours, LongSupplier floor, long calls) {
    for (int i = 0; i < 3; i++) {
      time(ours, calls);
      time(floor, calls);
    }
    int rounds = 31;
    double[] a = new double[rounds];
    double[] b = new double[rounds];
    double[] r = new double[rounds];
    for (int i = 0; i < rounds; i++) {
      if ((i & 1) == 0) {
        a[i] = time(ours, calls);
        b[i] = time(floor, calls);
      } else {
        b[i] = time(floor, calls);
        a[i] = time(ours, calls);
      }
      r[i] = a[i] / b[i];
    }
    System.out.printf("%-58s %9.1f %9.1f %7.2fx%n", name, median(a), median(b), median(r));
  }

  public static void main(String[] args) {
    BenchEnv.init();
    long n = args.length > 0 ? Long.parseLong(args[0]) : 200_000;
    try (Module testing = Module.load(BenchEnv.lib("polyffi_testing"));
        Function nop = Function.getGlobal("testing.nop");
        Function add3 = Function.getGlobal("testing.add3");
        Function callN = Function.getGlobal("testing.call_n");
        Function longCb = Function.convertLong(x -> x);
        Function objCb = Function.convert(a -> a[0])) {
      long fn = add3.address();
      long[] pair = PlainJni.getDirect(fn);
      Jna.LongFn jnaCb = i -> i;
      System.out.printf(
          "%-58s %9s %9s %8s%n", "pair (ours vs floor)", "ours ns", "floor ns", "ratio");
      pair(
          "add3 fast path vs plain JNI add3",
          () -> {
            long s = 0;
            for (long i = 0; i < n; i++) s += add3.callLong(i, 2, 3);
            return s;
          },
          () -> {
            long s = 0;
            for (long i = 0; i < n; i++) s += PlainJni.add3(i, 2, 3);
            return s;
          },
          n);
      pair(
          "add3 fast path vs plain JNI calling TVMFuncCall",
          () -> {
            long s = 0;
            for (long i = 0; i < n; i++) s += add3.callLong(i, 2, 3);
            return s;
          },
          () -> {
            long s = 0;
            for (long i = 0; i < n; i++) s += PlainJni.packedAdd3(fn, i, 2, 3);
            return s;
          },
          n);
      pair(
          "add3 fast path vs plain JNI calling the direct pair",
          () -> {
            long s = 0;
            for (long i = 0; i < n; i++) s += add3.callLong(i, 2, 3);
            return s;
          },
          () -> {
            long s = 0;
            for (long i = 0; i < n; i++) s += PlainJni.directAdd3(pair[0], pair[1], i, 2, 3);
            return s;
          },
          n);
      pair(
          "nop fast path vs plain JNI nop",
          () -> {
            for (long i = 0; i < n; i++) nop.callVoid();
            return 0;
          },
          () -> {
            for (long i = 0; i < n; i++) PlainJni.nop();
            return 0;
          },
          n);
      pair(
          "add3 call(Object...) vs JNA direct add3",
          () -> {
            long s = 0;
            for (long i = 0; i < n; i++) s += (Long) add3.call(i, 2L, 3L);
            return s;
          },
          () -> {
            long s = 0;
            for (long i = 0; i < n; i++) s += Jna.Baseline.bench_baseline_add3(i, 2, 3);
            return s;
          },
          n);
      pair(
          "C->Java LongCallback (call_n) vs JNI CallStaticLongMethod",
          () -> (Long) callN.call(longCb, n),
          () -> PlainJni.callbackLoop(n),
          n);
      pair(
          "C->Java LongCallback (call_n) vs JNI loop + ExceptionCheck",
          () -> (Long) callN.call(longCb, n),
          () -> PlainJni.callbackLoopChecked(n),
          n);
      pair(
          "C->Java Callback(Object...) (call_n) vs JNI CallStaticLongMethod",
          () -> (Long) callN.call(objCb, n),
          () -> PlainJni.callbackLoop(n),
          n);
      pair(
          "C->Java LongCallback (call_n) vs JNA callback",
          () -> (Long) callN.call(longCb, n),
          () -> Jna.Loop.bench_call_n(jnaCb, n),
          n);
    }
  }
}
