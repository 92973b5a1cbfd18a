package org.polyffi.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.*;

/** The JDK's Foreign Function & Memory API on the same C functions (JDK 22+ only). */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(
    value = 1,
    jvmArgsAppend = {"-Xms256m", "-Xmx256m", "--enable-native-access=ALL-UNNAMED"})
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
public class FfmBench {
  static final int N = 1_000_000;
  MethodHandle nop;
  MethodHandle add3;
  MethodHandle callN;
  MemorySegment upcall;
  long a = 1, b = 2, c = 3;

  static long identity(long i) {
    return i;
  }

  @Setup
  public void setUp() throws Exception {
    Linker linker = Linker.nativeLinker();
    Arena arena = Arena.global();
    SymbolLookup base =
        SymbolLookup.libraryLookup(java.nio.file.Path.of(BenchEnv.lib("bench_baseline")), arena);
    SymbolLookup jni = SymbolLookup.libraryLookup(java.nio.file.Path.of(BenchEnv.jniLib()), arena);
    nop =
        linker.downcallHandle(
            base.find("bench_baseline_nop").orElseThrow(), FunctionDescriptor.ofVoid());
    add3 =
        linker.downcallHandle(
            base.find("bench_baseline_add3").orElseThrow(),
            FunctionDescriptor.of(
                ValueLayout.JAVA_LONG,
                ValueLayout.JAVA_LONG,
                ValueLayout.JAVA_LONG,
                ValueLayout.JAVA_LONG));
    callN =
        linker.downcallHandle(
            jni.find("bench_call_n").orElseThrow(),
            FunctionDescriptor.of(
                ValueLayout.JAVA_LONG, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    MethodHandle target =
        MethodHandles.lookup()
            .findStatic(FfmBench.class, "identity", MethodType.methodType(long.class, long.class));
    upcall =
        linker.upcallStub(
            target, FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG), arena);
  }

  @Benchmark
  public void nop_ffm() throws Throwable {
    nop.invokeExact();
  }

  @Benchmark
  public long add3_ffm() throws Throwable {
    return (long) add3.invokeExact(a, b, c);
  }

  @Benchmark
  @OperationsPerInvocation(N)
  public long callback_ffm_upcall() throws Throwable {
    return (long) callN.invokeExact(upcall, (long) N);
  }
}
