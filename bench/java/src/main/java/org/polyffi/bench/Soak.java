package org.polyffi.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.atomic.AtomicLong;
import org.polyffi.Callback;
import org.polyffi.Function;
import org.polyffi.Module;

/**
 * The soak: 10M calls on each path and 1M callback create/call/close cycles, printing resident
 * memory (VmRSS) and the fixtures' live objects as they go. Memory must stay flat and live objects
 * must come back to where they started; nothing here asserts, it prints what it saw.
 */
public final class Soak {
  private Soak() {}

  static long rssKb() throws IOException {
    for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
      if (line.startsWith("VmRSS:")) return Long.parseLong(line.replaceAll("[^0-9]", ""));
    }
    return -1;
  }

  static void row(String phase, long done, long live) throws IOException {
    System.out.printf("%-34s %10d %10d %8d%n", phase, done, rssKb(), live);
  }

  public static void main(String[] args) throws Exception {
    BenchEnv.init();
    long calls = args.length > 0 ? Long.parseLong(args[0]) : 10_000_000L;
    long cycles = args.length > 1 ? Long.parseLong(args[1]) : 1_000_000L;
    try (Module testing = Module.load(BenchEnv.lib("polyffi_testing"));
        Function add3 = Function.getGlobal("testing.add3");
        Function echo = Function.getGlobal("testing.echo");
        Function apply = Function.getGlobal("testing.apply");
        Function liveObjects = Function.getGlobal("testing.live_objects")) {
      System.out.printf("%-34s %10s %10s %8s%n", "phase", "done", "rss_kB", "live");
      long live0 = liveObjects.callLong();
      row("start", 0, live0);
      long acc = 0;
      for (long i = 1; i <= calls; i++) {
        acc += add3.callLong(i, 1, 2);
        if (i % (calls / 5) == 0) row("add3 fast path", i, liveObjects.callLong());
      }
      for (long i = 1; i <= calls; i++) {
        acc += (Long) add3.call(i, 1L, 2L);
        if (i % (calls / 5) == 0) row("add3 call(Object...)", i, liveObjects.callLong());
      }
      for (long i = 1; i <= calls; i++) {
        acc += ((String) echo.call("0123456789abcdef")).length();
        if (i % (calls / 5) == 0) row("echo 16-byte string", i, liveObjects.callLong());
      }
      AtomicLong created = new AtomicLong();
      AtomicLong released = new AtomicLong();
      for (long i = 1; i <= cycles; i++) {
        created.incrementAndGet();
        try (Function f =
            Function.convert(
                new Callback() {
                  @Override
                  public Object invoke(Object... a) {
                    return a[0];
                  }

                  @Override
                  public void release() {
                    released.incrementAndGet();
                  }
                })) {
          acc += (Long) apply.call(f, i);
        }
        if (i % (cycles / 5) == 0) row("callback create/call/close", i, liveObjects.callLong());
      }
      System.gc();
      row("end (after one GC)", calls * 3 + cycles, liveObjects.callLong());
      System.out.printf(
          "callbacks created %d, released %d; live objects start %d, end %d; checksum %d%n",
          created.get(), released.get(), live0, liveObjects.callLong(), acc);
    }
  }
}
