package org.polyffi.bench;

import com.sun.jna.Callback;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;

/** JNA direct mapping of the same C functions. */
public final class Jna {
  private Jna() {}

  /** bench/baseline: nop and add3. */
  public static final class Baseline {
    static {
      Native.register(NativeLibrary.getInstance(BenchEnv.lib("bench_baseline")));
    }

    public static native void bench_baseline_nop();

    public static native long bench_baseline_add3(long a, long b, long c);
  }

  public interface LongFn extends Callback {
    long invoke(long i);
  }

  /** bench_call_n in libbench_jni.so: C calls a JNA callback n times. */
  public static final class Loop {
    static {
      Native.register(NativeLibrary.getInstance(BenchEnv.jniLib()));
    }

    public static native long bench_call_n(LongFn f, long n);
  }
}
