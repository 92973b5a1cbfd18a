package org.polyffi.examples.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.polyffi.ArrayObject;
import org.polyffi.DataType;
import org.polyffi.Device;
import org.polyffi.FFIException;
import org.polyffi.Function;
import org.polyffi.GraphModule;
import org.polyffi.NDArray;
import org.polyffi.VirtualMachine;

/**
 * One model of the served folder, loaded once: a {@link GraphModule} (TVM 0.18 graph export, or the
 * three artifacts NAME.so + NAME.json + NAME.params) or a {@link VirtualMachine} (TVM 0.27 relax
 * executable, function {@code forward} or {@code main}), both over the core's model runners, whose
 * calls are stateless and thread-safe: request threads share one ServedModel.
 *
 * <p>Inputs and outputs (name, dtype, shape with -1 for a dynamic dimension) come from the runner's
 * {@code signature} query when the core has it; otherwise they are derived here (graph: the
 * executor's input and output storage; relax: the annotations TVM records in the executable's error
 * contexts). A relax function's outputs are not recorded in the executable: they come from running
 * it on zeros with every dynamic dimension at 1 and at 2 (a dimension that differs is -1).
 */
public final class ServedModel implements AutoCloseable {
  static final ObjectMapper JSON = new ObjectMapper();

  /** One input or output. */
  public static final class Spec {
    public final String name;
    public final String dtype;
    public final long[] shape;

    Spec(String name, String dtype, long[] shape) {
      this.name = name;
      this.dtype = dtype;
      this.shape = shape;
    }
  }

  public final String name;
  public final String platform;
  public final List<Spec> inputs;
  public final List<Spec> outputs;
  private final org.polyffi.Module lib;
  private final GraphModule graph;
  private final VirtualMachine vm;
  private final String function;

  /** The graph runner's stateless {@code run}, for {@link #inferAsync} (null for a VM). */
  private final Function graphRun;

  /** Loads path (a .so, or a folder of three artifacts) as name. */
  public static ServedModel load(String name, Path path) throws IOException {
    if (Files.isDirectory(path)) return loadParts(name, path);
    org.polyffi.Module lib = org.polyffi.Module.load(path.toString());
    try {
      if (lib.getFunction("vm_load_executable", false) != null) {
        return new ServedModel(name, lib, null, new VirtualMachine(lib, Device.cpu()));
      }
      if (lib.getFunction("default", true) != null) {
        return new ServedModel(name, lib, GraphModule.fromFactory(lib, Device.cpu()), null);
      }
      throw new FFIException(
          "TypeError",
          path
              + ": neither a TVM graph export (no 'default') nor a relax executable (no"
              + " 'vm_load_executable')");
    } catch (RuntimeException e) {
      lib.close();
      throw e;
    }
  }

  /** A folder holding graph.json, params.bin and one kernel library. */
  private static ServedModel loadParts(String name, Path dir) throws IOException {
    List<Path> libs;
    try (java.util.stream.Stream<Path> s = Files.list(dir)) {
      libs = s.filter(p -> p.getFileName().toString().endsWith(".so")).toList();
    }
    Path graphJson = dir.resolve("graph.json");
    Path params = dir.resolve("params.bin");
    if (libs.size() != 1 || !Files.isRegularFile(graphJson) || !Files.isRegularFile(params)) {
      throw new FFIException(
          "TypeError",
          dir
              + ": a model folder holds graph.json, params.bin and one kernel library (*.so); found"
              + " "
              + libs.size()
              + " libraries");
    }
    String json = Files.readString(graphJson);
    byte[] blob = Files.readAllBytes(params);
    org.polyffi.Module lib = org.polyffi.Module.load(libs.get(0).toString());
    try {
      return new ServedModel(name, lib, GraphModule.fromParts(json, lib, blob, Device.cpu()), null);
    } catch (RuntimeException e) {
      lib.close();
      throw e;
    }
  }

  private ServedModel(String name, org.polyffi.Module lib, GraphModule graph, VirtualMachine vm) {
    this.name = name;
    this.lib = lib;
    this.graph = graph;
    this.vm = vm;
    try {
      this.graphRun = graph != null ? graph.runner().getFunction("run") : null;
      if (graph != null) {
        this.function = null;
        this.platform = "tvm_graph_executor";
        List<Spec>[] sig = coreSignature(graph.runner().getFunction("signature", false));
        if (sig == null) sig = graphSignature(graph);
        this.inputs = sig[0];
        this.outputs = sig[1];
      } else {
        this.function =
            vm.hasFunction("main") ? "main" : vm.hasFunction("forward") ? "forward" : null;
        if (function == null) {
          throw new FFIException(
              "AttributeError", "the executable has neither a 'main' nor a 'forward' function");
        }
        this.platform = "tvm_relax_vm";
        List<Spec>[] sig = coreSignature(vm.runner().getFunction("signature", false), function);
        this.inputs = sig != null ? sig[0] : vmInputs(vm, lib, function);
        this.outputs =
            sig != null && sig[1] != null ? sig[1] : vmOutputsOrNone(vm, function, inputs);
      }
    } catch (RuntimeException | IOException e) {
      if (graph != null) graph.close();
      if (vm != null) vm.close();
      throw e instanceof RuntimeException
          ? (RuntimeException) e
          : new FFIException("ValueError", e.getMessage());
    }
  }

  /** Runs the model on one array per input (in the order of {@link #inputs}); thread-safe. */
  public List<NDArray> infer(NDArray[] arrays) {
    if (graph != null) return graph.infer(arrays);
    Object r = vm.invoke(function, (Object[]) arrays);
    List<NDArray> out = new ArrayList<>();
    flatten(r, out);
    return out;
  }

  /**
   * {@link #infer} on the core's async pool: the future completes on a pool worker with the outputs
   * (the caller closes them), or with the model's FFIException. The arrays stay referenced by the
   * call until it ends; the caller closes them once the future is done.
   */
  public CompletableFuture<List<NDArray>> inferAsync(NDArray[] arrays) {
    CompletableFuture<Object> call =
        graph != null
            ? graphRun.callAsync((Object[]) arrays)
            : vm.invokeAsync(function, (Object[]) arrays);
    return call.thenApply(
        r -> {
          List<NDArray> out = new ArrayList<>();
          if (r instanceof ArrayObject arr) {
            try (arr) {
              flatten(arr, out);
            }
          } else {
            flatten(r, out);
          }
          return out;
        });
  }

  private static void flatten(Object r, List<NDArray> out) {
    if (r instanceof NDArray) {
      out.add((NDArray) r);
    } else if (r instanceof List) {
      for (Object x : (List<?>) r) flatten(x, out);
    } else {
      for (NDArray a : out) a.close();
      String what = r == null ? "None" : r.getClass().getSimpleName();
      throw new FFIException("TypeError", "the model returned a " + what + ", not tensors");
    }
  }

  // ---- signatures -------------------------------------------------------------------------------

  private static Spec spec(JsonNode s) {
    JsonNode dtype = s.get("dtype");
    JsonNode shape = s.get("shape");
    if (dtype == null || dtype.isNull() || shape == null || !shape.isArray()) {
      throw new FFIException(
          "TypeError",
          "input '"
              + s.path("name").asText()
              + "' is not a tensor of known dtype and rank (only tensors are served)");
    }
    long[] dims = new long[shape.size()];
    for (int i = 0; i < dims.length; i++) dims[i] = shape.get(i).asLong();
    return new Spec(s.get("name").asText(), dtype.asText(), dims);
  }

  /** The runner's signature query (JSON), or null when the core has none. */
  @SuppressWarnings("unchecked")
  private static List<Spec>[] coreSignature(Function f, Object... args) throws IOException {
    if (f == null) return null;
    JsonNode sig;
    try (f) {
      sig = JSON.readTree((String) f.call(args));
    }
    List<Spec> in = new ArrayList<>();
    for (JsonNode s : sig.get("inputs")) in.add(spec(s));
    List<Spec> out = null; // null: the core does not know them
    JsonNode outs = sig.get("outputs");
    if (outs != null && outs.isArray()) {
      out = new ArrayList<>();
      for (JsonNode s : outs) out.add(spec(s));
    }
    return new List[] {in, out};
  }

  private static Spec of(String name, NDArray a) {
    try (a) {
      return new Spec(name, a.dtype().toString(), a.shape());
    }
  }

  @SuppressWarnings("unchecked")
  private static List<Spec>[] graphSignature(GraphModule g) {
    List<Spec> in = new ArrayList<>();
    try (Function getInput = g.module().getFunction("get_input")) {
      for (String n : g.inputNames()) in.add(of(n, (NDArray) getInput.call(n)));
    }
    List<Spec> out = new ArrayList<>();
    for (int i = 0; i < g.getNumOutputs(); i++) out.add(of("output_" + i, g.getOutput(i)));
    return new List[] {in, out};
  }

  /**
   * A relax function's parameters from the executable's stats: {@code ErrorContext(fn=forward,
   * loc=param[0], param=x, annotation=R.Tensor((n, 16), dtype="float32"))}.
   */
  static List<Spec> vmInputs(VirtualMachine vm, org.polyffi.Module lib, String function) {
    String stats;
    try (Function f = lib.getFunction("stats")) {
      stats = (String) f.call();
    }
    List<Spec> in = new ArrayList<>();
    List<String> names = vm.paramNames(function);
    for (int i = 0; i < names.size(); i++) {
      String key =
          "fn=" + function + ", loc=param[" + i + "], param=" + names.get(i) + ", annotation=";
      int at = stats.indexOf(key);
      Spec s =
          at < 0 ? null : parseTensorAnnotation(names.get(i), stats.substring(at + key.length()));
      if (s == null) {
        throw new FFIException(
            "TypeError",
            "input '"
                + names.get(i)
                + "' is not a tensor of known dtype and rank (only tensors are served)");
      }
      in.add(s);
    }
    return in;
  }

  /** {@code R.Tensor((1, n, 16), dtype="float32")...} as a Spec (-1 for n), or null. */
  static Spec parseTensorAnnotation(String name, String s) {
    if (!s.startsWith("R.Tensor((")) return null;
    int close = s.indexOf(')');
    String rest = s.substring(close + 1);
    if (close < 0 || !rest.startsWith(", dtype=\"")) return null;
    int end = rest.indexOf('"', 9);
    if (end < 0) return null;
    List<Long> dims = new ArrayList<>();
    for (String d : s.substring(10, close).split(",")) {
      d = d.trim();
      if (d.isEmpty()) continue;
      try {
        dims.add(Long.parseLong(d));
      } catch (NumberFormatException symbolic) {
        dims.add(-1L);
      }
    }
    return new Spec(
        name, rest.substring(9, end), dims.stream().mapToLong(Long::longValue).toArray());
  }

  private List<NDArray> probe(String function, List<Spec> inputs, long dynamic) {
    NDArray[] arrays = new NDArray[inputs.size()];
    try {
      for (int i = 0; i < arrays.length; i++) {
        Spec s = inputs.get(i);
        long[] shape = s.shape.clone();
        for (int d = 0; d < shape.length; d++) if (shape[d] < 0) shape[d] = dynamic;
        arrays[i] = NDArray.empty(shape, DataType.parse(s.dtype));
        ByteBuffer b = arrays[i].asByteBuffer();
        while (b.hasRemaining()) b.put((byte) 0);
      }
      return infer(arrays);
    } finally {
      for (NDArray a : arrays) if (a != null) a.close();
    }
  }

  /** The probed outputs, or none (unknown: metadata lists none, infer returns them all). */
  private List<Spec> vmOutputsOrNone(VirtualMachine vm, String function, List<Spec> inputs) {
    try {
      return vmOutputs(vm, function, inputs);
    } catch (RuntimeException e) {
      System.err.println(
          "polyffi-serve: " + name + ": outputs unknown (" + FFIException.textOf(e) + ")");
      return List.of();
    }
  }

  private List<Spec> vmOutputs(VirtualMachine vm, String function, List<Spec> inputs) {
    List<NDArray> one = probe(function, inputs, 1);
    boolean dynamic =
        inputs.stream().anyMatch(s -> java.util.Arrays.stream(s.shape).anyMatch(d -> d < 0));
    List<NDArray> two = dynamic ? probe(function, inputs, 2) : one;
    List<Spec> out = new ArrayList<>();
    try {
      for (int i = 0; i < one.size(); i++) {
        long[] a = one.get(i).shape();
        long[] b = two.get(i).shape();
        for (int d = 0; d < a.length; d++) if (a[d] != b[d]) a[d] = -1;
        out.add(new Spec("output_" + i, one.get(i).dtype().toString(), a));
      }
    } finally {
      for (NDArray a : one) a.close();
      if (two != one) for (NDArray a : two) a.close();
    }
    return out;
  }

  @Override
  public void close() {
    if (graphRun != null) graphRun.close();
    if (graph != null) graph.close();
    if (vm != null) vm.close();
    lib.close();
  }
}
