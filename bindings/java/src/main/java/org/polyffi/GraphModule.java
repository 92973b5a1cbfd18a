package org.polyffi;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A compiled model run by the graph executor: what {@code tvm.graph_executor.create(graph_json,
 * lib, dev_type, dev_id)} returns, or what the factory of a library exported by TVM ({@code
 * lib.export_library("model.so")}) gives from {@code default(device)}:
 *
 * <pre>{@code
 * try (Module lib = Module.load("model.so");
 *     GraphModule gm = GraphModule.fromFactory(lib, Device.cpu())) { ... }
 * }</pre>
 *
 * <p>The stateful methods ({@link #setInput}, {@link #run}, {@link #getOutput}) are not
 * thread-safe. {@link #fromFactory} is backed by the core's model runner ({@code
 * polyffi.runner.graph}): {@link #infer} is stateless and thread-safe, and runs on an executor of
 * the runner's pool (the executors share the model's weights), so one GraphModule serves many
 * threads at once without a lock.
 */
public final class GraphModule implements AutoCloseable {
  private final Module module;

  /** The executor's functions, each looked up once. */
  private final Map<String, Function> functions = new ConcurrentHashMap<>();

  /** A model runner and its run function (replaced as a whole by loadParams). */
  private static final class Runner {
    final Module module;
    final Function run;
    final List<String> inputNames;

    Runner(Module module) {
      this.module = module;
      this.run = module.getFunction("run");
      this.inputNames = List.copyOf(VirtualMachine.strings(module, "input_names"));
    }

    void close() {
      run.close();
      module.close();
    }
  }

  private volatile Runner runner;
  private volatile boolean closed;

  /** Runners replaced by loadParams: calls may be in flight on them; closed with this. */
  private final List<Runner> retired = new ArrayList<>();

  /**
   * Wraps an executor module (this GraphModule takes ownership of it). A factory module (a library
   * exported by TVM, type key GraphExecutorFactory) is an FFIException of kind TypeError telling to
   * call its {@code default(device)} first (or use {@link #fromFactory}); the module then stays the
   * caller's.
   */
  public GraphModule(Module module) {
    Objects.requireNonNull(module, "module");
    String key = module.typeKey();
    if (FACTORY_KEYS.contains(key)) {
      throw new FFIException(
          "TypeError",
          "GraphModule(module): this is a "
              + key
              + " (a library exported by TVM), not a graph executor; pass"
              + " module.getFunction(\"default\").call(device), or use"
              + " GraphModule.fromFactory(module, device)");
    }
    this.module = module;
    try {
      for (String name : List.of("set_input", "run", "get_output")) fn(name);
    } catch (RuntimeException e) {
      closeFunctions();
      if (e instanceof FFIException && "AttributeError".equals(((FFIException) e).getKind())) {
        throw new FFIException(
            "TypeError",
            "GraphModule(module): a "
                + key
                + " module is not a graph executor ("
                + e.getMessage()
                + ")");
      }
      throw e;
    }
  }

  private static final Set<String> FACTORY_KEYS =
      Set.of("GraphExecutorFactory", "GraphRuntimeFactory");

  /** The executor's function name (AttributeError when it has none). */
  private Function fn(String name) {
    ensureOpen();
    Function f = functions.get(name);
    return f != null ? f : functions.computeIfAbsent(name, module::getFunction);
  }

  /**
   * The executor of a library exported by TVM: calls the factory's {@code default(device)} (the
   * params already set). The factory stays the caller's; closing it does not end the executor.
   */
  public static GraphModule fromFactory(Module factory, Device device) {
    Objects.requireNonNull(factory, "factory");
    Objects.requireNonNull(device, "device");
    try (Function make = factory.getFunction("default", false)) {
      if (make == null) {
        throw new FFIException(
            "AttributeError",
            "GraphModule.fromFactory: a "
                + factory.typeKey()
                + " module has no function 'default' (expected a GraphExecutorFactory loaded from"
                + " TVM's export_library)");
      }
    }
    return fromRunner(factory, (long) device.type(), (long) device.id());
  }

  /**
   * The three artifacts of an export (graph JSON, kernel library, params blob) over the core's
   * model runner, so {@link #infer} is available as with {@link #fromFactory}.
   */
  public static GraphModule fromParts(String graphJson, Module lib, byte[] params, Device device) {
    Objects.requireNonNull(graphJson, "graphJson");
    Objects.requireNonNull(lib, "lib");
    Objects.requireNonNull(device, "device");
    return fromRunner(graphJson, lib, params, (long) device.type(), (long) device.id());
  }

  /** A GraphModule over polyffi.runner.graph(args...) and the runner's own executor. */
  private static GraphModule fromRunner(Object... args) {
    Module made;
    try (Function f = Function.getGlobal("polyffi.runner.graph")) {
      made = (Module) f.call(args);
    }
    try (Function executor = made.getFunction("executor")) {
      Runner r = new Runner(made);
      GraphModule gm = wrap((Module) executor.call());
      gm.runner = r;
      return gm;
    } catch (RuntimeException e) {
      made.close();
      throw e;
    }
  }

  /** new GraphModule(m), or m closed when it is not an executor. */
  private static GraphModule wrap(Module m) {
    try {
      return new GraphModule(m);
    } catch (RuntimeException e) {
      m.close();
      throw e;
    }
  }

  /** Builds an executor for graphJson over the model library lib on device. */
  public static GraphModule create(String graphJson, Module lib, Device device) {
    try (Function create = Function.getGlobal("tvm.graph_executor.create")) {
      return wrap((Module) create.call(graphJson, lib, (long) device.type(), (long) device.id()));
    }
  }

  public Module module() {
    return module;
  }

  public void setInput(String name, NDArray value) {
    fn("set_input").call(name, value);
  }

  public void setInput(int index, NDArray value) {
    fn("set_input").call((long) index, value);
  }

  public void run() {
    fn("run").call();
  }

  /** A new array holding output index (the caller closes it). */
  public NDArray getOutput(int index) {
    return (NDArray) fn("get_output").call((long) index);
  }

  /** Copies output index into out; returns out. */
  public NDArray getOutput(int index, NDArray out) {
    Object r = fn("get_output").call((long) index, out);
    if (r instanceof AutoCloseable && r != out) ((NDArray) r).close();
    return out;
  }

  public int getNumOutputs() {
    return Math.toIntExact((Long) fn("get_num_outputs").call());
  }

  /** The index of input name, -1 when there is none. */
  public int getInputIndex(String name) {
    return Math.toIntExact((Long) fn("get_input_index").call(name));
  }

  /** Loads params into the executor; {@link #infer} takes them too (through a new runner). */
  public synchronized void loadParams(byte[] params) {
    fn("load_params").call((Object) params);
    Runner old = runner;
    if (old != null) {
      try (Function with = old.module.getFunction("with_params")) {
        runner = new Runner((Module) with.call((Object) params));
      }
      retired.add(old);
    }
  }

  /**
   * Runs the graph on inputs given by position (the graph's inputs that are not weights, in the
   * order of {@link #inputNames}) and returns every output as a new array (the caller closes them).
   * Stateless and thread-safe; needs a GraphModule from {@link #fromFactory}.
   */
  public List<NDArray> infer(NDArray... inputs) {
    return outputs(liveRunner().run.call((Object[]) inputs));
  }

  /** As {@link #infer(NDArray...)} with inputs by name. */
  public List<NDArray> infer(Map<String, NDArray> inputs) {
    Object[] args = new Object[2 * inputs.size()];
    int i = 0;
    for (Map.Entry<String, NDArray> e : inputs.entrySet()) {
      args[i++] = e.getKey();
      args[i++] = e.getValue();
    }
    return outputs(liveRunner().run.call(args));
  }

  /** The graph's inputs that are not weights: what {@link #infer} takes by position. */
  public List<String> inputNames() {
    return liveRunner().inputNames;
  }

  /** The core's model runner behind {@link #infer}, or null for a bare executor. */
  public Module runner() {
    Runner r = runner;
    return r == null ? null : r.module;
  }

  private Runner liveRunner() {
    ensureOpen();
    Runner r = runner;
    if (r == null) {
      throw new FFIException(
          "TypeError",
          "GraphModule.infer needs a GraphModule made by GraphModule.fromFactory (a bare executor"
              + " has no model runner)");
    }
    return r;
  }

  @SuppressWarnings("unchecked") // the runner returns an Array of arrays
  private static List<NDArray> outputs(Object r) {
    return (List<NDArray>) VirtualMachine.convertResult(r);
  }

  /** Use after close is an IllegalStateException naming this class, as for every handle. */
  private void ensureOpen() {
    if (closed) throw new IllegalStateException("GraphModule is closed");
  }

  @Override
  public synchronized void close() {
    closed = true;
    closeFunctions();
    module.close();
    Runner r = runner;
    if (r != null) r.close();
    for (Runner old : retired) old.close();
    retired.clear();
  }

  private void closeFunctions() {
    for (Function f : functions.values()) f.close();
    functions.clear();
  }
}
