package org.polyffi;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Models compiled by Apache TVM 0.18 (tests/tvm_models/tvm018) through the Java binding: every
 * fixture in every form reproduces, byte for byte, the outputs TVM's own runtime computed. The
 * exported factory library through {@link GraphModule#fromFactory} and the one-line path {@code new
 * GraphModule(lib.default(cpu))}, the three-artifact form through {@code tvm.graph_executor.create}
 * + load_params, and plain TE kernels (scalars, a parallel loop, a call back into a Java global).
 * Inputs go in zero-copy from direct ByteBuffers.
 */
class TvmModelsTest {
  static final Path FIXTURES = TestEnv.repoRoot().resolve("tests/tvm_models/tvm018");
  static final ObjectMapper JSON = new ObjectMapper();

  static JsonNode json(Path p) throws IOException {
    return JSON.readTree(p.toFile());
  }

  static Stream<String> graphs() throws IOException {
    List<String> names = new ArrayList<>();
    for (JsonNode n : json(FIXTURES.resolve("manifest.json")).get("fixtures")) {
      if (!n.asText().equals("te_kernels")) names.add(n.asText());
    }
    return names.stream();
  }

  static long[] shape(JsonNode desc) {
    JsonNode s = desc.get("shape");
    long[] out = new long[s.size()];
    for (int i = 0; i < out.length; i++) out[i] = s.get(i).asLong();
    return out;
  }

  /** A file's bytes in a direct buffer (native order is little-endian, as TVM wrote them). */
  static ByteBuffer direct(byte[] bytes) {
    ByteBuffer b = ByteBuffer.allocateDirect(bytes.length).order(ByteOrder.nativeOrder());
    b.put(bytes).flip();
    return b;
  }

  /** A zero-copy array over the raw file named by desc (name, dtype, shape, file). */
  static NDArray tensor(Path dir, JsonNode desc) throws IOException {
    byte[] bytes = Files.readAllBytes(dir.resolve(desc.get("file").asText()));
    DataType dt = DataType.parse(desc.get("dtype").asText());
    long n = dt.byteSize();
    for (long d : shape(desc)) n *= d;
    assertEquals(n, bytes.length, desc.get("file").asText() + " size");
    return NDArray.fromBuffer(direct(bytes), shape(desc), dt);
  }

  static byte[] bytesOf(NDArray a) {
    ByteBuffer view = a.asByteBuffer();
    byte[] out = new byte[view.remaining()];
    view.get(out);
    return out;
  }

  static void assertSameAsTvm(Path dir, JsonNode desc, NDArray got, String what)
      throws IOException {
    assertEquals(desc.get("dtype").asText(), got.dtype().toString(), what + " dtype");
    assertArrayEquals(shape(desc), got.shape(), what + " shape");
    byte[] expected = Files.readAllBytes(dir.resolve(desc.get("file").asText()));
    assertArrayEquals(expected, bytesOf(got), what + " differs from TVM's output");
  }

  /** Sets every input, runs, and compares every output with TVM's bytes. */
  static void checkOutputs(GraphModule gm, Path dir) throws IOException {
    JsonNode io = json(dir.resolve("io.json"));
    List<NDArray> inputs = new ArrayList<>();
    try {
      for (JsonNode in : io.get("inputs")) {
        NDArray a = tensor(dir, in);
        inputs.add(a);
        gm.setInput(in.get("name").asText(), a);
      }
      gm.run();
      assertEquals(io.get("outputs").size(), gm.getNumOutputs());
      for (int i = 0; i < io.get("outputs").size(); i++) {
        try (NDArray out = gm.getOutput(i)) {
          assertSameAsTvm(dir, io.get("outputs").get(i), out, dir.getFileName() + " output " + i);
        }
      }
    } finally {
      for (NDArray a : inputs) a.close();
    }
  }

  @Test
  void manifestChecksumsMatchTheFiles() throws IOException, NoSuchAlgorithmException {
    JsonNode manifest = json(FIXTURES.resolve("manifest.json"));
    assertEquals("0.18.0", manifest.get("tvm_version").asText());
    int files = 0;
    for (Iterator<Map.Entry<String, JsonNode>> it = manifest.get("sha256").fields();
        it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      String got =
          HexFormat.of().formatHex(md.digest(Files.readAllBytes(FIXTURES.resolve(e.getKey()))));
      assertEquals(e.getValue().asText(), got, e.getKey());
      files++;
    }
    assertTrue(files > 0);
  }

  @ParameterizedTest
  @MethodSource("graphs")
  void factoryLibraryThroughGraphModule(String name) throws IOException {
    Path dir = FIXTURES.resolve(name);
    try (Module lib = Module.load(dir.resolve("factory.so").toString())) {
      assertEquals("GraphExecutorFactory", lib.typeKey());
      List<Module> imports = lib.imports();
      try {
        assertEquals(1, imports.size());
        assertEquals("library", imports.get(0).typeKey());
      } finally {
        for (Module m : imports) m.close();
      }
      try (GraphModule gm = GraphModule.fromFactory(lib, Device.cpu())) {
        checkOutputs(gm, dir);
      }
      // By the export's module name ("default" unless TVM was told another); a name the
      // factory does not have is an AttributeError naming it.
      try (GraphModule gm = GraphModule.fromFactory(lib, "default", Device.cpu())) {
        checkOutputs(gm, dir);
      }
      FFIException e =
          assertThrows(
              FFIException.class, () -> GraphModule.fromFactory(lib, "resnet", Device.cpu()));
      assertEquals("AttributeError", e.getKind());
      assertTrue(e.getMessage().contains("'resnet'"), e.getMessage());
    }
  }

  @Test
  void closedGraphModuleSaysItIsTheGraphModule() throws IOException {
    Path dir = FIXTURES.resolve("digits_b1");
    try (Module lib = Module.load(dir.resolve("factory.so").toString());
        NDArray x = NDArray.empty(new long[] {1, 64}, DataType.FLOAT32)) {
      GraphModule gm = GraphModule.fromFactory(lib, Device.cpu());
      gm.close();
      gm.close(); // idempotent, like every handle
      for (Executable use :
          List.<Executable>of(
              () -> gm.setInput("data", x),
              () -> gm.setInput(0, x),
              gm::run,
              () -> gm.getOutput(0),
              () -> gm.getOutput(0, x),
              gm::getNumOutputs,
              () -> gm.getInputIndex("data"),
              () -> gm.loadParams(new byte[0]),
              () -> gm.infer(x),
              () -> gm.infer(Map.of("data", x)),
              gm::inputNames)) {
        IllegalStateException e = assertThrows(IllegalStateException.class, use);
        assertEquals("GraphModule is closed", e.getMessage());
      }
    }
  }

  @ParameterizedTest
  @MethodSource("graphs")
  void factoryDefaultOneLinePath(String name) throws IOException {
    Path dir = FIXTURES.resolve(name);
    try (Module lib = Module.load(dir.resolve("factory.so").toString());
        Function make = lib.getFunction("default");
        GraphModule gm = new GraphModule((Module) make.call(Device.cpu()))) {
      checkOutputs(gm, dir);
      // Each default(dev) is ready to run (params set), here a second executor after the first.
      try (GraphModule again = GraphModule.fromFactory(lib, Device.cpu())) {
        checkOutputs(again, dir);
      }
    }
  }

  @ParameterizedTest
  @MethodSource("graphs")
  void threeArtifactsThroughGraphExecutorCreate(String name) throws IOException {
    Path dir = FIXTURES.resolve(name);
    try (Module lib = Module.load(dir.resolve("kernels.so").toString());
        GraphModule gm =
            GraphModule.create(Files.readString(dir.resolve("graph.json")), lib, Device.cpu())) {
      gm.loadParams(Files.readAllBytes(dir.resolve("params.bin")));
      checkOutputs(gm, dir);
    }
  }

  @Test
  void factoryAccessors() throws IOException {
    Path dir = FIXTURES.resolve("conv_b1");
    JsonNode io = json(dir.resolve("io.json"));
    try (Module lib = Module.load(dir.resolve("factory.so").toString());
        Function graphJson = lib.getFunction("get_graph_json");
        Function graphParams = lib.getFunction("get_graph_params");
        Function removeParams = lib.getFunction("remove_params")) {
      assertEquals(Files.readString(dir.resolve("graph.json")), graphJson.call());
      try (MapObject params = (MapObject) graphParams.call()) {
        List<String> keys = new ArrayList<>();
        for (Object k : params.keySet()) keys.add((String) k);
        keys.sort(null);
        List<String> expected = new ArrayList<>();
        for (JsonNode p : io.get("params")) expected.add(p.asText());
        assertEquals(expected, keys);
        for (Object v : params.values()) {
          assertInstanceOf(NDArray.class, v);
        }
      }
      try (Module bare = (Module) removeParams.call();
          Function bareParams = bare.getFunction("get_graph_params")) {
        assertEquals("GraphExecutorFactory", bare.typeKey());
        try (MapObject none = (MapObject) bareParams.call()) {
          assertEquals(0, none.size());
        }
      }
    }
  }

  @Test
  void graphModuleRejectsTheFactoryItself() {
    try (Module lib = Module.load(FIXTURES.resolve("digits_b1/factory.so").toString())) {
      FFIException e = assertThrows(FFIException.class, () -> new GraphModule(lib));
      assertEquals("TypeError", e.getKind());
      assertTrue(e.getMessage().contains("GraphExecutorFactory"), e.getMessage());
      assertTrue(e.getMessage().contains("default"), e.getMessage());
      // The factory stays usable (the failed constructor did not take it).
      assertEquals("GraphExecutorFactory", lib.typeKey());
    }
  }

  @Test
  void fromFactoryOnAPlainLibraryNamesWhatIsMissing() throws IOException {
    Path dir = FIXTURES.resolve("digits_b1");
    try (Module lib = Module.load(dir.resolve("kernels.so").toString())) {
      FFIException e =
          assertThrows(FFIException.class, () -> GraphModule.fromFactory(lib, Device.cpu()));
      assertEquals("AttributeError", e.getKind());
      assertTrue(e.getMessage().contains("'default'"), e.getMessage());
      // A kernel library is not an executor either.
      try (Module same = lib.retain()) {
        FFIException t = assertThrows(FFIException.class, () -> new GraphModule(same));
        assertEquals("TypeError", t.getKind());
        assertTrue(t.getMessage().contains("set_input"), t.getMessage());
      }
    }
  }

  @Test
  void digitsCompiledByTvmAgreesWithTheDemo() throws IOException {
    Path model = TestEnv.repoRoot().resolve("examples/digits/model");
    JsonNode expected = json(model.resolve("expected.json"));
    int n = expected.get("num_samples").asInt();
    byte[] x = Files.readAllBytes(model.resolve("test_x.bin"));
    assertEquals(n * 64 * 4, x.length);
    try (Module lib = Module.load(FIXTURES.resolve("digits_b359/factory.so").toString());
        GraphModule gm = GraphModule.fromFactory(lib, Device.cpu());
        NDArray in = NDArray.fromBuffer(direct(x), new long[] {n, 64}, DataType.FLOAT32)) {
      gm.setInput("data", in);
      gm.run();
      float[] probs;
      try (NDArray out = gm.getOutput(0)) {
        assertArrayEquals(new long[] {n, 10}, out.shape());
        probs = out.toFloatArray();
      }
      List<Integer> pred = new ArrayList<>();
      for (int i = 0; i < n; i++) pred.add(GraphModuleTest.argmax(probs, 10 * i, 10));
      List<Integer> want = new ArrayList<>();
      for (JsonNode p : expected.get("predictions")) want.add(p.asInt());
      assertEquals(want, pred);
    }
  }

  @Test
  void teKernelsMatchTvm() throws IOException {
    Path dir = FIXTURES.resolve("te_kernels");
    int[] hostCalls = {0};
    Function.register(
        "polyffi_test.add_one",
        args -> {
          NDArray src = (NDArray) args[0];
          NDArray dst = (NDArray) args[1];
          float[] v = src.toFloatArray();
          for (int i = 0; i < v.length; i++) v[i] += 1;
          dst.copyFrom(v);
          hostCalls[0]++;
          return null;
        },
        true);
    try {
      List<String> ran = new ArrayList<>();
      for (JsonNode c : json(dir.resolve("io.json")).get("cases")) {
        String name = c.get("name").asText();
        List<Object> args = new ArrayList<>();
        JsonNode outDesc = c.get("output");
        try (Module lib = Module.load(dir.resolve(c.get("library").asText()).toString());
            Function f = lib.getFunction(c.get("function").asText());
            NDArray out =
                NDArray.fromBuffer(
                    direct(new byte[Math.toIntExact(bytesNeeded(outDesc))]),
                    shape(outDesc),
                    DataType.parse(outDesc.get("dtype").asText()))) {
          for (JsonNode a : c.get("args")) {
            if (a.has("file")) args.add(tensor(dir, a));
            else if (a.has("float")) args.add(a.get("float").asDouble());
            else args.add(a.get("int").asLong());
          }
          args.add(out);
          f.call(args.toArray()); // out is written in place, zero-copy
          assertSameAsTvm(dir, outDesc, out, name);
          ran.add(name);
        } finally {
          for (Object a : args) if (a instanceof NDArray) ((NDArray) a).close();
        }
      }
      assertEquals(List.of("vadd", "scale_shift", "host_call"), ran);
      assertEquals(1, hostCalls[0], "host_call calls polyffi_test.add_one once");
    } finally {
      Function.removeGlobal("polyffi_test.add_one");
    }
    assertNull(Function.getGlobal("polyffi_test.add_one", true));
  }

  static long bytesNeeded(JsonNode desc) {
    long n = DataType.parse(desc.get("dtype").asText()).byteSize();
    for (long d : shape(desc)) n *= d;
    return n;
  }
}
