package org.polyffi;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Function;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The core's model runner through the Java binding: one loaded model shared by 8 threads. {@link
 * VirtualMachine#invoke} and {@link GraphModule#infer} are stateless and run on the runner's pool
 * (sharing the weights): every thread must get exactly the outputs one thread gets.
 */
class ModelRunnerTest {
  static final int THREADS = 8;
  static final int ROUNDS = 20;
  static final Path TVM018 = TestEnv.repoRoot().resolve("tests/tvm_models/tvm018");

  /** The inputs of descs read from dir, float32 ones scaled by 1 + k/8 (runtime arrays). */
  static List<NDArray> variant(Path dir, JsonNode descs, int k) throws IOException {
    List<NDArray> out = new ArrayList<>();
    for (JsonNode d : descs) {
      NDArray a = Tvm027ModelsTest.runtimeArray(dir, d);
      if (d.get("dtype").asText().equals("float32")) {
        ByteBuffer b = a.asByteBuffer().order(ByteOrder.nativeOrder());
        for (int i = 0; i < b.capacity(); i += 4) b.putFloat(i, b.getFloat(i) * (1 + k / 8f));
      }
      out.add(a);
    }
    return out;
  }

  static List<byte[]> bytesOf(List<NDArray> outs) {
    List<byte[]> b = new ArrayList<>();
    for (NDArray o : outs) {
      ByteBuffer buf = o.asByteBuffer();
      byte[] x = new byte[buf.remaining()];
      buf.get(x);
      b.add(x);
      o.close();
    }
    return b;
  }

  static boolean same(List<byte[]> a, List<byte[]> b) {
    if (a.size() != b.size()) return false;
    for (int i = 0; i < a.size(); i++) if (!Arrays.equals(a.get(i), b.get(i))) return false;
    return true;
  }

  /** call on 6 variants from one thread, then from 8 threads at once: the same bytes. */
  static void concurrentEqualsSerial(
      List<List<NDArray>> cases, Function<List<NDArray>, List<NDArray>> call) throws Exception {
    List<List<byte[]>> expected = new ArrayList<>();
    for (List<NDArray> c : cases) expected.add(bytesOf(call.apply(c)));
    assertFalse(same(expected.get(0), expected.get(1)), "the variants really differ");
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try {
      List<Future<Integer>> results = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        final int thread = t;
        results.add(
            pool.submit(
                () -> {
                  int bad = 0;
                  for (int r = 0; r < ROUNDS; r++) {
                    int k = (thread + r) % cases.size();
                    if (!same(bytesOf(call.apply(cases.get(k))), expected.get(k))) bad++;
                  }
                  return bad;
                }));
      }
      int mismatches = 0;
      for (Future<Integer> f : results) mismatches += f.get();
      assertEquals(0, mismatches);
    } finally {
      pool.shutdown();
      for (List<NDArray> c : cases) for (NDArray a : c) a.close();
    }
  }

  static long poolSize(Module runner) {
    try (org.polyffi.Function f = runner.getFunction("pool_size")) {
      return f.callLong();
    }
  }

  @SuppressWarnings("unchecked")
  static List<NDArray> asList(Object r) {
    if (r instanceof NDArray) return List.of((NDArray) r);
    return (List<NDArray>) r;
  }

  @ParameterizedTest
  @ValueSource(strings = {"digits", "two_outputs", "mlp_params"})
  void virtualMachineEightThreadsEqualOneThread(String name) throws Exception {
    Path dir = Tvm027ModelsTest.RELAX.resolve(name);
    JsonNode run = Tvm027ModelsTest.modelIo(name).get("runs").get(0);
    List<List<NDArray>> cases = new ArrayList<>();
    for (int k = 0; k < 6; k++) cases.add(variant(dir, run.get("inputs"), k));
    try (Module lib =
            Module.load(Tvm027ModelsTest.RELAX.resolve(run.get("library").asText()).toString());
        VirtualMachine vm = new VirtualMachine(lib, Device.cpu())) {
      concurrentEqualsSerial(cases, c -> asList(vm.invoke("forward", c.toArray())));
      long n = poolSize(vm.runner());
      assertTrue(n >= 1 && n <= THREADS, "pool of " + n);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"digits_b1", "multi_io_b1"})
  void graphModuleEightThreadsEqualOneThread(String name) throws Exception {
    Path dir = TVM018.resolve(name);
    JsonNode io = TvmModelsTest.json(dir.resolve("io.json"));
    List<String> names = new ArrayList<>();
    for (JsonNode d : io.get("inputs")) names.add(d.get("name").asText());
    List<List<NDArray>> cases = new ArrayList<>();
    for (int k = 0; k < 6; k++) cases.add(variant(dir, io.get("inputs"), k));
    try (Module lib = Module.load(dir.resolve("factory.so").toString());
        GraphModule gm = GraphModule.fromFactory(lib, Device.cpu())) {
      assertEquals(names, gm.inputNames());
      // By name: the same outputs as by position.
      Map<String, NDArray> named = new LinkedHashMap<>();
      for (int i = 0; i < names.size(); i++) named.put(names.get(i), cases.get(0).get(i));
      assertTrue(
          same(bytesOf(gm.infer(named)), bytesOf(gm.infer(cases.get(0).toArray(new NDArray[0])))));
      concurrentEqualsSerial(cases, c -> gm.infer(c.toArray(new NDArray[0])));
      long n = poolSize(gm.runner());
      assertTrue(n >= 1 && n <= THREADS, "pool of " + n);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"multi_io_b1"})
  void inferErrorsAreTyped(String name) {
    Path dir = TVM018.resolve(name);
    try (Module lib = Module.load(dir.resolve("factory.so").toString());
        GraphModule gm = GraphModule.fromFactory(lib, Device.cpu());
        NDArray x = NDArray.empty(new long[] {1, 8}, DataType.FLOAT32)) {
      FFIException e = assertThrows(FFIException.class, () -> gm.infer(x));
      assertEquals("TypeError", e.getKind());
      assertTrue(e.getMessage().contains("takes 3 inputs"), e.getMessage());
      Module executor;
      try (org.polyffi.Function make = lib.getFunction("default")) {
        executor = (Module) make.call(Device.cpu());
      }
      try (GraphModule bare = new GraphModule(executor)) {
        FFIException b = assertThrows(FFIException.class, () -> bare.infer(x));
        assertEquals("TypeError", b.getKind());
        assertTrue(b.getMessage().contains("fromFactory"), b.getMessage());
      }
    }
  }
}
