package org.polyffi;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * TVM 0.27's runtime-library fixtures (tests/tvm_models/tvm027/runtime) through the Java binding:
 * relax models whose executables call TVM's runtime globals at run time (sort, argsort, top-k,
 * seeded random, unique, nonzero, tensor_to_shape, ...) or take Shape and int arguments, with two
 * symbolic dimensions, float16/int kernels, recursion and nested tuples. Every run's result must
 * equal what TVM 0.27's own runtime returned: tensors byte for byte, Shapes as {@code long[]} and
 * ints as {@code Long}, tuples as Lists, recursively.
 */
class Tvm027RuntimeTest {
  static final Path FIXTURES = TestEnv.repoRoot().resolve("tests/tvm_models/tvm027");
  static final Path RUNTIME = FIXTURES.resolve("runtime");

  static Stream<String> models() throws IOException {
    List<String> names = new ArrayList<>();
    JsonNode runtime = TvmModelsTest.json(FIXTURES.resolve("manifest.json")).get("runtime");
    if (runtime != null) runtime.fieldNames().forEachRemaining(names::add);
    names.sort(null);
    return names.stream();
  }

  static JsonNode io(String name) throws IOException {
    return TvmModelsTest.json(RUNTIME.resolve(name).resolve("io.json"));
  }

  static long[] dims(JsonNode desc) {
    JsonNode v = desc.get("value");
    long[] out = new long[v.size()];
    for (int i = 0; i < out.length; i++) out[i] = v.get(i).asLong();
    return out;
  }

  /** An argument as the VM takes it: an NDArray (added to owned), a long[] shape or a Long. */
  static Object argument(Path dir, JsonNode desc, List<NDArray> owned) throws IOException {
    switch (desc.get("kind").asText()) {
      case "tensor":
        {
          NDArray a =
              NDArray.empty(TvmModelsTest.shape(desc), DataType.parse(desc.get("dtype").asText()));
          owned.add(a);
          a.asByteBuffer().put(Files.readAllBytes(dir.resolve(desc.get("file").asText())));
          return a;
        }
      case "shape":
        return dims(desc);
      default:
        assertEquals("int", desc.get("kind").asText());
        return desc.get("value").asLong();
    }
  }

  static void check(Object got, JsonNode want, Path dir, String at) throws IOException {
    switch (want.get("kind").asText()) {
      case "tensor":
        assertInstanceOf(NDArray.class, got, at);
        TvmModelsTest.assertSameAsTvm(dir, want, (NDArray) got, at);
        break;
      case "shape":
        assertInstanceOf(long[].class, got, at + ": a shape is a long[]");
        assertArrayEquals(dims(want), (long[]) got, at);
        break;
      case "int":
        assertEquals(want.get("value").asLong(), got, at);
        break;
      default:
        assertEquals("tuple", want.get("kind").asText());
        assertInstanceOf(List.class, got, at + ": a tuple is a List");
        List<?> items = (List<?>) got;
        assertEquals(want.get("items").size(), items.size(), at + " tuple size");
        for (int i = 0; i < items.size(); i++) {
          check(items.get(i), want.get("items").get(i), dir, at + "[" + i + "]");
        }
    }
  }

  @Test
  void everyRuntimeFixtureIsListed() throws IOException {
    List<String> onDisk = new ArrayList<>();
    try (Stream<Path> dirs = Files.list(RUNTIME)) {
      dirs.filter(d -> Files.isRegularFile(d.resolve("io.json")))
          .forEach(d -> onDisk.add(d.getFileName().toString()));
    }
    onDisk.sort(null);
    assertFalse(onDisk.isEmpty());
    assertEquals(onDisk, models().toList());
  }

  @ParameterizedTest
  @MethodSource("models")
  void everyRunMatchesTvm(String name) throws Exception {
    JsonNode io = io(name);
    Path dir = RUNTIME.resolve(name);
    String function = io.get("function").asText();
    try (Module lib = Module.load(RUNTIME.resolve(io.get("library").asText()).toString());
        VirtualMachine vm = new VirtualMachine(lib, Device.cpu())) {
      int r = 0;
      for (JsonNode run : io.get("runs")) {
        List<NDArray> owned = new ArrayList<>();
        try {
          List<Object> args = new ArrayList<>();
          for (JsonNode d : run.get("inputs")) args.add(argument(dir, d, owned));
          String at = name + " run " + r++;
          Object out = vm.invoke(function, args.toArray());
          check(out, run.get("output"), dir, at);
          // Again on the same VM: the same result, the first one (still held) intact.
          Object again = vm.invoke(function, args.toArray());
          check(again, run.get("output"), dir, at + " (second call)");
          check(out, run.get("output"), dir, at + " (first result)");
          Tvm027ModelsTest.closeAll(out);
          Tvm027ModelsTest.closeAll(again);
        } finally {
          Tvm027ModelsTest.closeArrays(owned);
        }
      }
    }
  }

  @Test
  void aShapeParameterRefusesAListAndAnIntParameterAShape() throws Exception {
    if (models().noneMatch("shape_int_args"::equals)) return;
    JsonNode io = io("shape_int_args");
    Path dir = RUNTIME.resolve("shape_int_args");
    List<NDArray> owned = new ArrayList<>();
    try (Module lib = Module.load(RUNTIME.resolve(io.get("library").asText()).toString());
        VirtualMachine vm = new VirtualMachine(lib, Device.cpu())) {
      JsonNode in = io.get("runs").get(0).get("inputs");
      Object x = argument(dir, in.get(0), owned);
      long[] s = (long[]) argument(dir, in.get(1), owned);
      Object k = argument(dir, in.get(2), owned);
      List<Long> asList = new ArrayList<>();
      for (long d : s) asList.add(d);
      assertThrows(FFIException.class, () -> vm.invoke("forward", x, asList, k));
      assertThrows(FFIException.class, () -> vm.invoke("forward", x, s, s));
      Tvm027ModelsTest.closeAll(vm.invoke("forward", x, s, k));
    } finally {
      Tvm027ModelsTest.closeArrays(owned);
    }
  }
}
