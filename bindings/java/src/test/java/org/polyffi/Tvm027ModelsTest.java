package org.polyffi;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Models compiled by Apache TVM 0.27 (tests/tvm_models/tvm027) through the Java binding. Kernel
 * libraries ({@code __tvm_ffi_<name>} functions) are called as module functions; relax VM
 * executables run through {@link VirtualMachine}. Every output must equal, byte for byte, what TVM
 * 0.27's own runtime computed, with inputs given as runtime NDArrays, as views of 64-byte-aligned
 * direct ByteBuffers (passed zero-copy) and of misaligned ones (copied first); bad calls give
 * FFIExceptions of the kinds TVM raised.
 */
class Tvm027ModelsTest {
  static final Path FIXTURES = TestEnv.repoRoot().resolve("tests/tvm_models/tvm027");
  static final Path KERNELS = FIXTURES.resolve("kernels");
  static final Path RELAX = FIXTURES.resolve("relax");

  static JsonNode manifest() throws IOException {
    return TvmModelsTest.json(FIXTURES.resolve("manifest.json"));
  }

  static JsonNode modelIo(String name) throws IOException {
    return TvmModelsTest.json(RELAX.resolve(name).resolve("io.json"));
  }

  static Stream<String> models() throws IOException {
    List<String> names = new ArrayList<>();
    manifest().get("relax").fieldNames().forEachRemaining(names::add);
    names.sort(null);
    return names.stream();
  }

  static byte[] read(Path dir, JsonNode desc) throws IOException {
    return Files.readAllBytes(dir.resolve(desc.get("file").asText()));
  }

  /** A direct buffer holding bytes, its data offset bytes past a 64-byte boundary. */
  static ByteBuffer hostBuffer(byte[] bytes, int offset) {
    ByteBuffer aligned = ByteBuffer.allocateDirect(bytes.length + 192).alignedSlice(64);
    aligned.position(offset);
    ByteBuffer b = aligned.slice().order(ByteOrder.nativeOrder());
    b.put(bytes).flip();
    return b;
  }

  /** A zero-copy array over a host buffer holding the file desc names. */
  static NDArray view(Path dir, JsonNode desc, int offset) throws IOException {
    NDArray a =
        NDArray.fromBuffer(
            hostBuffer(read(dir, desc), offset),
            TvmModelsTest.shape(desc),
            DataType.parse(desc.get("dtype").asText()));
    assertEquals(offset % 64 == 0, a.isAligned(64), "alignment of the test buffer");
    return a;
  }

  /** A runtime-allocated (aligned) array holding the file desc names. */
  static NDArray runtimeArray(Path dir, JsonNode desc) throws IOException {
    NDArray a =
        NDArray.empty(TvmModelsTest.shape(desc), DataType.parse(desc.get("dtype").asText()));
    a.asByteBuffer().put(read(dir, desc));
    return a;
  }

  static void assertTensor(Path dir, JsonNode desc, Object got, String what) throws IOException {
    assertInstanceOf(NDArray.class, got, what);
    TvmModelsTest.assertSameAsTvm(dir, desc, (NDArray) got, what);
  }

  static void closeAll(Object r) {
    if (r instanceof List) {
      for (Object x : (List<?>) r) closeAll(x);
    } else if (r instanceof NDArray) {
      ((NDArray) r).close();
    }
  }

  /** Compares a result with the run's outputs, then closes it unless keep. */
  static void checkResult(String name, JsonNode run, Object result, String what, boolean keep)
      throws IOException {
    Path dir = RELAX.resolve(name);
    JsonNode outputs = run.get("outputs");
    List<?> got;
    if (modelIo(name).get("tuple_output").asBoolean()) {
      assertInstanceOf(List.class, result, name + " " + what + ": a tuple gives a List");
      got = (List<?>) result;
    } else {
      got = List.of(result);
    }
    try {
      assertEquals(outputs.size(), got.size(), name + " " + what + ": outputs");
      for (int i = 0; i < got.size(); i++) {
        String w = name + " b" + run.get("batch") + " " + what + " output " + i;
        assertTensor(dir, outputs.get(i), got.get(i), w);
      }
    } finally {
      if (!keep) closeAll(result);
    }
  }

  static void checkResult(String name, JsonNode run, Object result, String what)
      throws IOException {
    checkResult(name, run, result, what, false);
  }

  static Object[] inputs(String name, JsonNode run, int offset, List<NDArray> owned)
      throws IOException {
    List<Object> args = new ArrayList<>();
    for (JsonNode d : run.get("inputs")) {
      NDArray a =
          offset < 0 ? runtimeArray(RELAX.resolve(name), d) : view(RELAX.resolve(name), d, offset);
      owned.add(a);
      args.add(a);
    }
    return args.toArray();
  }

  interface VmBody {
    void run(VirtualMachine vm, Module lib) throws Exception;
  }

  static void withVm(JsonNode run, VirtualMachine.Allocator alloc, VmBody body) throws Exception {
    try (Module lib = Module.load(RELAX.resolve(run.get("library").asText()).toString());
        VirtualMachine vm = new VirtualMachine(lib, Device.cpu(), alloc)) {
      body.run(vm, lib);
    }
  }

  static void withVm(JsonNode run, VmBody body) throws Exception {
    withVm(run, VirtualMachine.Allocator.POOLED, body);
  }

  static void closeArrays(List<NDArray> arrays) {
    for (NDArray a : arrays) a.close();
    arrays.clear();
  }

  @Test
  void manifestChecksumsMatchTheFiles() throws IOException, NoSuchAlgorithmException {
    JsonNode m = manifest();
    assertTrue(m.get("tvm_version").asText().startsWith("0.27"));
    int files = 0;
    for (Iterator<Map.Entry<String, JsonNode>> it = m.get("sha256").fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      String got =
          HexFormat.of().formatHex(md.digest(Files.readAllBytes(FIXTURES.resolve(e.getKey()))));
      assertEquals(e.getValue().asText(), got, e.getKey());
      files++;
    }
    assertTrue(files > 0);
    assertEquals(
        List.of("conv", "digits", "dyn_batch", "mlp_const", "mlp_params", "two_outputs"),
        models().toList());
  }

  // ---- kernels
  // -----------------------------------------------------------------------------------

  @Test
  void everyKernelMatchesTvmIncludingTheHostFunctionCall() throws Exception {
    JsonNode m = manifest();
    JsonNode io = TvmModelsTest.json(KERNELS.resolve("io.json"));
    String global = m.get("host_global").asText();
    List<Double> biases = new ArrayList<>();
    // The kernel resolves the global once and keeps it (as TVM's generated code does), so a
    // failure is switched on inside the same callback rather than by registering another one.
    RuntimeException[] failWith = {null};
    Function.register(
            global,
            args -> {
              if (failWith[0] != null) throw failWith[0];
              NDArray src = (NDArray) args[0];
              NDArray dst = (NDArray) args[1];
              double bias = (Double) args[2];
              biases.add(bias);
              float[] v = src.toFloatArray();
              for (int i = 0; i < v.length; i++) v[i] += (float) bias;
              dst.copyFrom(v);
              return null;
            },
            true)
        .close();
    try {
      List<String> libs = new ArrayList<>();
      for (JsonNode c : io.get("cases")) libs.add(c.get("library").asText());
      for (JsonNode k : m.get("kernels")) assertTrue(libs.contains(k.asText() + ".so"), k.asText());
      for (JsonNode c : io.get("cases")) {
        String name = c.get("name").asText();
        JsonNode outDesc = c.get("output");
        try (Module lib = Module.load(KERNELS.resolve(c.get("library").asText()).toString());
            Function f = lib.getFunction(c.get("function").asText())) {
          for (int form = 0; form < 2; form++) {
            List<NDArray> owned = new ArrayList<>();
            List<Object> args = new ArrayList<>();
            for (JsonNode a : c.get("args")) {
              if (a.has("file")) {
                NDArray t = form == 0 ? runtimeArray(KERNELS, a) : view(KERNELS, a, 0);
                owned.add(t);
                args.add(t);
              } else if (a.has("float")) {
                args.add(a.get("float").asDouble());
              } else {
                args.add(a.get("int").asLong());
              }
            }
            long[] shape = TvmModelsTest.shape(outDesc);
            DataType dt = DataType.parse(outDesc.get("dtype").asText());
            // Zero-filled output: the runtime's array, or a view of an aligned buffer (in place).
            byte[] zeros = new byte[read(KERNELS, outDesc).length];
            ByteBuffer outBuf = hostBuffer(zeros, 0);
            NDArray out =
                form == 0 ? NDArray.empty(shape, dt) : NDArray.fromBuffer(outBuf, shape, dt);
            if (form == 0) out.asByteBuffer().put(zeros);
            owned.add(out);
            args.add(out);
            try {
              assertNull(f.call(args.toArray()), name + ": a kernel returns None");
              TvmModelsTest.assertSameAsTvm(KERNELS, outDesc, out, name + " form " + form);
              if (form == 1) {
                byte[] inPlace = new byte[zeros.length];
                outBuf.duplicate().get(inPlace);
                assertArrayEquals(read(KERNELS, outDesc), inPlace, name + ": written in place");
              }
            } finally {
              closeArrays(owned);
            }
          }
        }
      }
      assertEquals(List.of(3.5, 3.5), biases);
      assertEquals(io.get("host_bias").asDouble(), biases.get(0));

      // A Java exception in the host global comes out of the kernel call as the same object.
      RuntimeException boom = new IllegalStateException("no bias today");
      failWith[0] = boom;
      try (Module lib = Module.load(KERNELS.resolve("callpacked.so").toString());
          Function f = lib.getFunction("callpacked");
          NDArray x = NDArray.empty(new long[] {64}, DataType.FLOAT32);
          NDArray y = NDArray.empty(new long[] {64}, DataType.FLOAT32)) {
        float[] ones = new float[64];
        java.util.Arrays.fill(ones, 1f);
        x.copyFrom(ones);
        RuntimeException e = assertThrows(RuntimeException.class, () -> f.call(x, y));
        assertSame(boom, e);
        failWith[0] = null;
        f.call(x, y);
        float[] want = new float[64];
        java.util.Arrays.fill(want, 4.5f);
        assertArrayEquals(want, y.toFloatArray());
      }
    } finally {
      Function.removeGlobal(global);
    }
  }

  @Test
  void singleFunctionLibraryHasMainAndTwoFuncsHasNot() {
    try (Module one = Module.load(KERNELS.resolve("elementwise.so").toString());
        Module two = Module.load(KERNELS.resolve("two_funcs.so").toString())) {
      Function main = one.getFunction("main", false);
      assertNotNull(main);
      main.close();
      two.getFunction("scale").close();
      two.getFunction("shift").close();
      assertNull(two.getFunction("main", false));
      FFIException e = assertThrows(FFIException.class, () -> two.getFunction("main"));
      assertEquals("AttributeError", e.getKind());
    }
  }

  @Test
  void kernelErrorsHaveTheKindsAndMessagesTvmRaised() throws IOException {
    JsonNode errors = TvmModelsTest.json(KERNELS.resolve("io.json")).get("errors");
    try (Module two = Module.load(KERNELS.resolve("two_funcs.so").toString());
        Function scale = two.getFunction("scale");
        Function shift = two.getFunction("shift");
        NDArray x4 = NDArray.empty(new long[] {4}, DataType.FLOAT32);
        NDArray i4 = NDArray.empty(new long[] {4}, DataType.parse("int32"));
        NDArray d4 = NDArray.empty(new long[] {4}, DataType.parse("float64"));
        NDArray x22 = NDArray.empty(new long[] {2, 2}, DataType.FLOAT32);
        NDArray x5 = NDArray.empty(new long[] {5}, DataType.FLOAT32)) {
      Map<String, Runnable> calls =
          Map.of(
              "scale_arity", () -> scale.call(x4, 2.0),
              "scale_dtype", () -> scale.call(d4, 2.0, x4),
              "scale_ndim", () -> scale.call(x22, 2.0, x4),
              "scale_shape", () -> scale.call(x4, 2.0, x5),
              "shift_float_for_int", () -> shift.call(i4, 1.5, i4),
              "scale_null_tensor", () -> scale.call(null, 2.0, x4));
      assertEquals(calls.size(), errors.size());
      for (Iterator<Map.Entry<String, JsonNode>> it = errors.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        Runnable call = calls.get(e.getKey());
        assertNotNull(call, e.getKey());
        FFIException err = assertThrows(FFIException.class, call::run, e.getKey());
        assertEquals(e.getValue().get("kind").asText(), err.getKind(), e.getKey());
        String msg = e.getValue().get("message").asText();
        assertTrue(err.getMessage().contains(msg), e.getKey() + ": " + err.getMessage());
      }
      x4.copyFrom(new float[] {1, 2, 3, 4});
      scale.call(x4, 2.5, x4);
      assertArrayEquals(new float[] {2.5f, 5f, 7.5f, 10f}, x4.toFloatArray());
    }
  }

  @Test
  void kernelGivenMisalignedViewsComputesCorrectlyOrRefusesClearly() {
    float[] a = new float[1000];
    for (int i = 0; i < a.length; i++) a[i] = i;
    ByteBuffer ab = ByteBuffer.allocate(4000).order(ByteOrder.nativeOrder());
    ab.asFloatBuffer().put(a);
    ByteBuffer bb = ByteBuffer.allocate(4000).order(ByteOrder.nativeOrder());
    for (int i = 0; i < 1000; i++) bb.putFloat(i * 4, 2f);
    try (Module lib = Module.load(KERNELS.resolve("elementwise.so").toString());
        Function f = lib.getFunction("elementwise")) {
      for (int offset : new int[] {4, 8, 16, 32}) {
        long[] shape = {1000};
        try (NDArray x =
                NDArray.fromBuffer(hostBuffer(ab.array(), offset), shape, DataType.FLOAT32);
            NDArray y =
                NDArray.fromBuffer(hostBuffer(bb.array(), offset), shape, DataType.FLOAT32);
            NDArray out = NDArray.empty(shape, DataType.FLOAT32)) {
          assertFalse(x.isAligned(64));
          try {
            f.call(x, y, out);
            float[] got = out.toFloatArray();
            for (int i = 0; i < 1000; i++) assertEquals(a[i] * 2 + 1, got[i], "offset " + offset);
          } catch (FFIException e) {
            assertTrue(e.getMessage().contains("align"), e.getMessage());
          }
        }
      }
    }
  }

  // ---- relax VM
  // ----------------------------------------------------------------------------------

  @ParameterizedTest
  @MethodSource("models")
  void everyRunMatchesTvmWithArraysAndAlignedAndMisalignedBuffers(String name) throws Exception {
    for (JsonNode run : modelIo(name).get("runs")) {
      withVm(
          run,
          (vm, lib) -> {
            assertEquals("relax.VMExecutable", lib.typeKey());
            List<Module> imports = lib.imports();
            try {
              assertEquals(1, imports.size());
              assertEquals("library", imports.get(0).typeKey());
            } finally {
              for (Module i : imports) i.close();
            }
            List<NDArray> owned = new ArrayList<>();
            try {
              checkResult(
                  name, run, vm.invoke("forward", inputs(name, run, -1, owned)), "NDArrays");
              closeArrays(owned);
              for (int offset : new int[] {0, 4, 16}) {
                Object[] args = inputs(name, run, offset, owned);
                checkResult(name, run, vm.invoke("forward", args), "buffers at +" + offset);
                closeArrays(owned);
              }
              // The module function itself (no staging): runtime arrays in.
              Object r = vm.getFunction("forward").call(inputs(name, run, -1, owned));
              if (modelIo(name).get("tuple_output").asBoolean()) {
                assertInstanceOf(ArrayObject.class, r);
                ((ArrayObject) r).close();
              } else {
                checkResult(name, run, r, "getFunction");
              }
            } finally {
              closeArrays(owned);
            }
          });
    }
  }

  @ParameterizedTest
  @MethodSource("models")
  void invokeAsyncMatchesTvm(String name) throws Exception {
    JsonNode io = modelIo(name);
    JsonNode run = io.get("runs").get(io.get("runs").size() - 1);
    withVm(
        run,
        (vm, lib) -> {
          List<NDArray> owned = new ArrayList<>();
          try {
            Object r = vm.invokeAsync("forward", inputs(name, run, 4, owned)).join();
            checkResult(name, run, r, "invokeAsync");
          } finally {
            closeArrays(owned);
          }
          assertThrows(FFIException.class, () -> vm.invokeAsync("backward"));
          CompletionException e =
              assertThrows(CompletionException.class, () -> vm.invokeAsync("forward").join());
          assertInstanceOf(FFIException.class, e.getCause());
        });
  }

  @Test
  void invokeTensorOfATupleResultIsATypeError() throws Exception {
    JsonNode io = modelIo("two_outputs");
    JsonNode run = io.get("runs").get(0);
    withVm(
        run,
        (vm, lib) -> {
          List<NDArray> owned = new ArrayList<>();
          try {
            Object[] args = inputs("two_outputs", run, 0, owned);
            FFIException e =
                assertThrows(FFIException.class, () -> vm.invokeTensor("forward", args));
            assertEquals("TypeError", e.getKind());
            assertTrue(e.getMessage().contains("not a tensor"), e.getMessage());
            // The VM is unaffected: the same call as a tuple gives both outputs.
            checkResult("two_outputs", run, vm.invoke("forward", args), "after invokeTensor");
          } finally {
            closeArrays(owned);
          }
        });
  }

  @ParameterizedTest
  @MethodSource("models")
  void resultsStayValidAfterTheNextCall(String name) throws Exception {
    JsonNode run = modelIo(name).get("runs").get(0);
    withVm(
        run,
        (vm, lib) -> {
          List<NDArray> owned = new ArrayList<>();
          try {
            Object first = vm.invoke("forward", inputs(name, run, 0, owned));
            closeArrays(owned);
            List<Object> halves = new ArrayList<>();
            for (JsonNode d : run.get("inputs")) {
              NDArray h = NDArray.empty(TvmModelsTest.shape(d), DataType.FLOAT32);
              float[] v = new float[(int) (h.byteSize() / 4)];
              java.util.Arrays.fill(v, 0.5f);
              h.copyFrom(v);
              owned.add(h);
              halves.add(h);
            }
            for (int i = 0; i < 3; i++) closeAll(vm.invoke("forward", halves.toArray()));
            checkResult(name, run, first, "first result after three more calls");
          } finally {
            closeArrays(owned);
          }
        });
  }

  @ParameterizedTest
  @MethodSource("models")
  void statefulApi(String name) throws Exception {
    JsonNode io = modelIo(name);
    JsonNode run = io.get("runs").get(io.get("runs").size() - 1);
    withVm(
        run,
        (vm, lib) -> {
          List<String> names = new ArrayList<>();
          for (JsonNode n : io.get("param_names")) names.add(n.asText());
          assertEquals(names, vm.paramNames("forward"));
          List<NDArray> owned = new ArrayList<>();
          vm.setInput("forward", inputs(name, run, 4, owned));
          closeArrays(owned); // set_input copied them
          vm.invokeStateful("forward");
          checkResult(name, run, vm.getOutputs("forward"), "stateful");
        });
  }

  @ParameterizedTest
  @MethodSource("models")
  void wrongShapeDtypeOrArityIsAClearError(String name) throws Exception {
    JsonNode io = modelIo(name);
    JsonNode run = io.get("runs").get(0);
    withVm(
        run,
        (vm, lib) -> {
          List<NDArray> owned = new ArrayList<>();
          try {
            Object[] good = inputs(name, run, 0, owned);
            String param = io.get("param_names").get(0).asText();
            long[] shape0 = TvmModelsTest.shape(run.get("inputs").get(0));
            long[] badShape = shape0.clone();
            for (int i = 1; i < badShape.length; i++) badShape[i]++;
            for (String error : new String[] {"wrong_shape", "wrong_dtype"}) {
              JsonNode tvm = io.get("errors").get(error);
              try (NDArray bad =
                  error.equals("wrong_shape")
                      ? NDArray.empty(badShape, DataType.FLOAT32)
                      : NDArray.empty(shape0, DataType.parse("float64"))) {
                Object[] args = good.clone();
                args[0] = bad;
                FFIException e =
                    assertThrows(FFIException.class, () -> vm.invoke("forward", args), error);
                assertEquals(tvm.get("kind").asText(), e.getKind(), e.getMessage());
                assertTrue(e.getMessage().contains("param=" + param), e.getMessage());
                if (error.equals("wrong_dtype")) {
                  assertTrue(
                      e.getMessage().contains("float64") && e.getMessage().contains("float32"),
                      e.getMessage());
                } else {
                  assertTrue(e.getMessage().contains("shape"), e.getMessage());
                }
              }
              checkResult(name, run, vm.invoke("forward", good), "after " + error);
            }
            int n = io.get("param_names").size();
            Object[] fewer = java.util.Arrays.copyOf(good, n - 1);
            FFIException e = assertThrows(FFIException.class, () -> vm.invoke("forward", fewer));
            assertTrue(e.getMessage().contains("expects " + n + " arguments"), e.getMessage());
            Object[] more = java.util.Arrays.copyOf(good, n + 1);
            more[n] = good[0];
            assertThrows(FFIException.class, () -> vm.invoke("forward", more));
            e = assertThrows(FFIException.class, () -> vm.invoke("backward", good));
            assertEquals("AttributeError", e.getKind());
            assertTrue(e.getMessage().contains("no function 'backward'"), e.getMessage());
            assertTrue(vm.hasFunction("forward"));
            assertFalse(vm.hasFunction("backward"));
          } finally {
            closeArrays(owned);
          }
        });
  }

  @Test
  void dynamicBatchRunsEveryBatchSizeOnOneVm() throws Exception {
    JsonNode io = modelIo("dyn_batch");
    withVm(
        io.get("runs").get(0),
        (vm, lib) -> {
          List<Object[]> kept = new ArrayList<>();
          for (int batch : new int[] {1, 7, 64, 7, 1}) {
            JsonNode run = null;
            for (JsonNode r : io.get("runs")) if (r.get("batch").asInt() == batch) run = r;
            assertNotNull(run, "batch " + batch);
            List<NDArray> owned = new ArrayList<>();
            Object y = vm.invoke("forward", inputs("dyn_batch", run, 0, owned));
            closeArrays(owned);
            checkResult("dyn_batch", run, y, "batch " + batch, true);
            kept.add(new Object[] {run, y});
          }
          for (Object[] k : kept) checkResult("dyn_batch", (JsonNode) k[0], k[1], "kept");
        });
  }

  @Test
  void oneVmSharedByThreadsGivesEveryThreadTvmsOutputs() throws Exception {
    JsonNode io = modelIo("dyn_batch");
    withVm(
        io.get("runs").get(0),
        (vm, lib) -> {
          java.util.concurrent.ExecutorService pool =
              java.util.concurrent.Executors.newFixedThreadPool(4);
          List<CompletableFuture<Void>> all = new ArrayList<>();
          for (int batch : new int[] {1, 7, 64, 7}) {
            JsonNode run = null;
            for (JsonNode r : io.get("runs")) if (r.get("batch").asInt() == batch) run = r;
            JsonNode theRun = run;
            all.add(
                CompletableFuture.runAsync(
                    () -> {
                      List<NDArray> owned = new ArrayList<>();
                      try {
                        Object[] args = inputs("dyn_batch", theRun, 0, owned);
                        for (int i = 0; i < 20; i++) {
                          checkResult("dyn_batch", theRun, vm.invoke("forward", args), "threads");
                        }
                      } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                      } finally {
                        closeArrays(owned);
                      }
                    },
                    pool));
          }
          try {
            CompletableFuture.allOf(all.toArray(new CompletableFuture[0])).join();
          } finally {
            pool.shutdown();
          }
        });
  }

  @Test
  void naiveAllocatorGivesTheSameOutputs() throws Exception {
    JsonNode run = null;
    for (JsonNode r : modelIo("conv").get("runs")) if (r.get("batch").asInt() == 16) run = r;
    JsonNode conv16 = run;
    withVm(
        conv16,
        VirtualMachine.Allocator.NAIVE,
        (vm, lib) -> {
          List<NDArray> owned = new ArrayList<>();
          try {
            NDArray y = vm.invokeTensor("forward", inputs("conv", conv16, 0, owned));
            checkResult("conv", conv16, y, "naive allocator");
          } finally {
            closeArrays(owned);
          }
        });
  }

  @Test
  void executableKernelsAreReachableThroughTheImports() {
    try (Module lib = Module.load(RELAX.resolve("two_outputs.so").toString());
        NDArray a = NDArray.of(new float[] {0, 1, 2, 3, 4, 5, 6, 7}, 1, 8);
        NDArray b = NDArray.of(new float[] {1, 1, 1, 1, 1, 1, 1, 1}, 1, 8);
        NDArray out = NDArray.empty(new long[] {1, 8}, DataType.FLOAT32)) {
      List<Module> imports = lib.imports();
      try (Function add = imports.get(0).getFunction("add")) {
        add.call(a, b, out);
      } finally {
        for (Module m : imports) m.close();
      }
      assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6, 7, 8}, out.toFloatArray());
    }
  }

  @Test
  void closedVirtualMachineSaysItIsTheVirtualMachine() {
    try (Module lib = Module.load(RELAX.resolve("mlp_const.so").toString())) {
      VirtualMachine vm = new VirtualMachine(lib, Device.cpu());
      vm.close();
      vm.close(); // idempotent, like every handle
      for (Executable use :
          List.<Executable>of(
              () -> vm.invoke("forward"),
              () -> vm.invokeAsync("forward"),
              () -> vm.getFunction("forward"),
              () -> vm.hasFunction("forward"),
              () -> vm.setInput("forward"),
              () -> vm.invokeStateful("forward"),
              () -> vm.getOutputs("forward"),
              () -> vm.paramNames("forward"))) {
        IllegalStateException e = assertThrows(IllegalStateException.class, use);
        assertEquals("VirtualMachine is closed", e.getMessage());
      }
    }
  }

  @Test
  void virtualMachineRejectsWhatIsNotAnExecutable() {
    try (Module kernels = Module.load(KERNELS.resolve("elementwise.so").toString())) {
      FFIException e =
          assertThrows(FFIException.class, () -> new VirtualMachine(kernels, Device.cpu()));
      assertEquals("TypeError", e.getKind());
      assertTrue(e.getMessage().contains("not a relax VM executable"), e.getMessage());
    }
    Path factory = TestEnv.repoRoot().resolve("tests/tvm_models/tvm018/digits_b1/factory.so");
    try (Module f = Module.load(factory.toString())) {
      FFIException e = assertThrows(FFIException.class, () -> new VirtualMachine(f, Device.cpu()));
      assertTrue(e.getMessage().contains("GraphModule"), e.getMessage());
    }
    assertThrows(NullPointerException.class, () -> new VirtualMachine(null, Device.cpu()));
    try (Module lib = Module.load(RELAX.resolve("mlp_const.so").toString());
        VirtualMachine vm = new VirtualMachine(lib, Device.cpu())) {
      ByteBuffer raw = ByteBuffer.allocateDirect(64);
      FFIException e = assertThrows(FFIException.class, () -> vm.invoke("forward", raw));
      assertTrue(e.getMessage().contains("NDArray.fromBuffer"), e.getMessage());
      // A 1-D array where (1, 16) goes: the VM's error names the mismatch.
      try (NDArray flat = NDArray.empty(new long[] {16}, DataType.FLOAT32);
          NDArray x = NDArray.empty(new long[] {1, 16}, DataType.FLOAT32)) {
        assertThrows(FFIException.class, () -> vm.invoke("forward", flat));
        x.copyFrom(new float[16]);
        try (NDArray y = vm.invokeTensor("forward", x)) {
          assertArrayEquals(new long[] {1, 10}, y.shape());
        }
      }
      assertThrows(FFIException.class, () -> vm.getFunction("backward"));
    }
  }

  @Test
  void digitsRelaxExportClassifiesLikeTheTrainingScript() throws Exception {
    Path model = TestEnv.repoRoot().resolve("examples/digits/model");
    JsonNode expected = TvmModelsTest.json(model.resolve("expected.json")).get("predictions");
    int rows = expected.size();
    byte[] x = Files.readAllBytes(model.resolve("test_x.bin"));
    assertEquals(rows * 64 * 4, x.length);
    ByteBuffer buf = hostBuffer(x, 0);
    try (Module lib = Module.load(RELAX.resolve("digits.so").toString());
        VirtualMachine vm = new VirtualMachine(lib, Device.cpu());
        NDArray all = NDArray.fromBuffer(buf, new long[] {rows, 64}, DataType.FLOAT32);
        NDArray probs = vm.invokeTensor("forward", all)) {
      float[] p = probs.toFloatArray();
      for (int r = 0; r < rows; r++) {
        assertEquals(expected.get(r).asInt(), argmax(p, r), "digit " + r);
      }
      for (int r = 0; r < rows; r += 37) {
        ByteBuffer row = buf.duplicate().position(r * 256).limit((r + 1) * 256).slice();
        try (NDArray one = NDArray.fromBuffer(row, new long[] {1, 64}, DataType.FLOAT32);
            NDArray q = vm.invokeTensor("forward", one)) {
          assertEquals(expected.get(r).asInt(), argmax(q.toFloatArray(), 0), "digit " + r);
        }
      }
    }
  }

  static int argmax(float[] p, int row) {
    int best = 0;
    for (int j = 1; j < 10; j++) if (p[row * 10 + j] > p[row * 10 + best]) best = j;
    return best;
  }
}
