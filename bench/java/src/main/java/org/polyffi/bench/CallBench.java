package org.polyffi.bench;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.*;
import org.polyffi.Function;
import org.polyffi.Module;

/**
 * The call path side by side: polyffi (primitive fast path and call(Object...)), plain JNI of the
 * same signature, JNA direct mapping. Results in ns/op; callbacks are per callback.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(
    value = 1,
    jvmArgsAppend = {"-Xms256m", "-Xmx256m"})
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
public class CallBench {
  static final int N = 1_000_000;
  static final String S16 = "0123456789abcdef";

  Module testing;
  Function nop;
  Function add3;
  Function echo;
  Function callN;
  Function javaCallback;
  Function javaLongCallback;
  Jna.LongFn jnaCallback;
  long a = 1, b = 2, c = 3;

  @Setup
  public void setUp() {
    BenchEnv.init();
    testing = Module.load(BenchEnv.lib("polyffi_testing"));
    nop = Function.getGlobal("testing.nop");
    add3 = Function.getGlobal("testing.add3");
    echo = Function.getGlobal("testing.echo");
    callN = Function.getGlobal("testing.call_n");
    javaCallback = Function.convert(args -> args[0]);
    javaLongCallback = Function.convertLong(x -> x);
    jnaCallback = i -> i;
    if (add3.callLong(1, 2, 3) != 6 || (Long) callN.call(javaCallback, 4L) != 6) {
      throw new IllegalStateException("fixtures misbehave");
    }
  }

  @TearDown
  public void tearDown() {
    javaCallback.close();
    javaLongCallback.close();
    callN.close();
    echo.close();
    add3.close();
    nop.close();
  }

  // ---- nop --------------------------------------------------------------------------------
  @Benchmark
  public void nop_polyffi_fast() {
    nop.callVoid();
  }

  @Benchmark
  public Object nop_polyffi_call() {
    return nop.call();
  }

  @Benchmark
  public void nop_jni() {
    PlainJni.nop();
  }

  @Benchmark
  public void nop_jna_direct() {
    Jna.Baseline.bench_baseline_nop();
  }

  // ---- add3(1, 2, 3) ------------------------------------------------------------------------
  @Benchmark
  public long add3_polyffi_fast() {
    return add3.callLong(a, b, c);
  }

  @Benchmark
  public Object add3_polyffi_call() {
    return add3.call(a, b, c);
  }

  @Benchmark
  public long add3_jni() {
    return PlainJni.add3(a, b, c);
  }

  @Benchmark
  public long add3_jni_TVMFuncCall() {
    return PlainJni.packedAdd3(add3.address(), a, b, c);
  }

  @Benchmark
  public long add3_jna_direct() {
    return Jna.Baseline.bench_baseline_add3(a, b, c);
  }

  // ---- 16-byte string echo ------------------------------------------------------------------
  @Benchmark
  public Object echo16_polyffi_call() {
    return echo.call(S16);
  }

  @Benchmark
  public String echo16_jni() {
    return PlainJni.echo(S16);
  }

  // ---- C calls Java N times -----------------------------------------------------------------
  @Benchmark
  @OperationsPerInvocation(N)
  public Object callback_polyffi() {
    return callN.call(javaCallback, (long) N);
  }

  @Benchmark
  @OperationsPerInvocation(N)
  public Object callback_polyffi_long() {
    return callN.call(javaLongCallback, (long) N);
  }

  @Benchmark
  @OperationsPerInvocation(N)
  public long callback_jni_CallStaticLongMethod() {
    return PlainJni.callbackLoop(N);
  }

  @Benchmark
  @OperationsPerInvocation(N)
  public long callback_jna() {
    return Jna.Loop.bench_call_n(jnaCallback, N);
  }

  // ---- global lookup (and release) ----------------------------------------------------------
  @Benchmark
  public long getGlobal_polyffi() {
    try (Function f = Function.getGlobal("testing.add3")) {
      return f.address();
    }
  }
}
