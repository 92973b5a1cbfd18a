package org.polyffi;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntConsumer;
import org.junit.jupiter.api.Test;

/**
 * Soak of the Java binding: callbacks converted, called through the runtime and closed; global
 * lookups; NDArray round trips (float[] in, float[] out); runs of TVM 0.18's digits model. Each
 * phase runs {@code polyffi.soak.cycles} iterations (default 20,000: the CI run); after a warm-up
 * (the first fifth) the resident set may grow by at most {@code polyffi.soak.bound.mib} (default 4)
 * over the rest, and the runtime's live objects (runtime.LiveObjectCount) must be back at the end
 * where they were after the warm-up. The long run: {@code mvn test -Dtest=SoakTest
 * -Dpolyffi.soak.cycles=1000000 -Dpolyffi.soak.bound.mib=8}.
 *
 * <p>The phases run in a child JVM with a fixed, pre-touched heap ({@code -Xms128m -Xmx128m
 * -XX:+AlwaysPreTouch}): otherwise the heap's pages are touched lazily as garbage accumulates
 * between collections (tens of MiB over a million cycles, given back later), which is the JVM's
 * business and hides what a native leak would add.
 */
class SoakTest {
  @Test
  void memoryAndLiveObjectsStayFlat() throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(List.of("-Xms128m", "-Xmx128m", "-XX:+AlwaysPreTouch"));
    for (String p :
        List.of(
            "polyffi.soak.cycles",
            "polyffi.soak.bound.mib",
            "polyffi.repo.root",
            "polyffi.test.lib.dir",
            "polyffi.library.path")) {
      if (System.getProperty(p) != null) cmd.add("-D" + p + "=" + System.getProperty(p));
    }
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(SoakTest.class.getName());
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    System.out.print(out);
    assertEquals(0, p.waitFor(), out);
    assertTrue(out.contains("soak: ok"), out);
  }

  public static void main(String[] args) throws Exception {
    SoakTest soak = new SoakTest();
    soak.run();
    System.out.println(soak.failures.isEmpty() ? "soak: ok" : "soak: FAILED " + soak.failures);
    System.exit(soak.failures.isEmpty() ? 0 : 1);
  }

  private static long rssKiB() throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
      if (line.startsWith("VmRSS:")) return Long.parseLong(line.replaceAll("[^0-9]", ""));
    }
    return -1;
  }

  private final int cycles = Integer.getInteger("polyffi.soak.cycles", 20000);
  private final long boundKiB =
      (long) (Double.parseDouble(System.getProperty("polyffi.soak.bound.mib", "4")) * 1024);
  private final List<String> failures = new ArrayList<>();
  private Function live;

  private long live() {
    return live.callLong();
  }

  private void phase(String name, IntConsumer body) throws IOException {
    int warm = cycles / 5;
    long t0 = System.nanoTime();
    for (int i = 0; i < warm; i++) body.accept(i);
    System.gc();
    long liveBefore = live();
    long before = rssKiB();
    for (int i = warm; i < cycles; i++) body.accept(i);
    System.gc();
    long after = rssKiB();
    long liveAfter = live();
    boolean ok = after - before <= boundKiB && liveAfter == liveBefore;
    System.out.printf(
        "%-44s %9d  %7.2f s  RSS %d KiB -> %d KiB (%+d KiB after warm-up), live objects %d -> %d"
            + " %s%n",
        name,
        cycles,
        (System.nanoTime() - t0) / 1e9,
        before,
        after,
        after - before,
        liveBefore,
        liveAfter,
        ok ? "ok" : "GROWS");
    if (!ok) failures.add(name);
  }

  private void run() throws Exception {
    TestEnv.loadFixtures();
    live = Function.getGlobal("runtime.LiveObjectCount");
    try (Function apply = Function.getGlobal("testing.apply")) {
      phase(
          "callback convert/call through runtime/close",
          i -> {
            try (Function f = Function.convert(args -> (Long) args[0] * 2)) {
              assertEquals(2L * i, apply.call(f, (long) i));
            }
          });
    }
    phase(
        "global lookup/call/close (testing.add)",
        i -> {
          try (Function f = Function.getGlobal("testing.add")) {
            assertEquals(i + 1L, f.callLong(i, 1));
          }
        });
    float[] src = new float[64];
    for (int k = 0; k < 64; k++) src[k] = k;
    phase(
        "NDArray round trip (float[] in, float[] out)",
        i -> {
          try (NDArray a = NDArray.of(src, 64)) {
            assertEquals(63.0f, a.toFloatArray()[63]);
          }
        });
    Path dir = TestEnv.repoRoot().resolve("tests/tvm_models/tvm018/digits_b1");
    float[] input = floats(Files.readAllBytes(dir.resolve("input_data.bin")));
    float[] expected = floats(Files.readAllBytes(dir.resolve("output_0.bin")));
    try (Module lib = Module.load(dir.resolve("factory.so").toString());
        Function make = lib.getFunction("default");
        Module exec = (Module) make.call(Device.cpu());
        Function setInput = exec.getFunction("set_input");
        Function run = exec.getFunction("run");
        Function getOutput = exec.getFunction("get_output");
        NDArray x = NDArray.of(input, 1, 64)) {
      phase(
          "model run (digits: set_input/run/get_output)",
          i -> {
            setInput.call("data", x);
            run.callVoid();
            try (NDArray y = (NDArray) getOutput.call(0L)) {
              if (i == 0) assertArrayEquals(expected, y.toFloatArray(), 1e-5f);
            }
          });
    }
    live.close();
  }

  private static float[] floats(byte[] bytes) {
    ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    float[] out = new float[bytes.length / 4];
    b.asFloatBuffer().get(out);
    return out;
  }
}
