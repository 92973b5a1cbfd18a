package org.polyffi;

import java.util.List;
import java.util.Map;
import java.util.Objects;
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

  /** The core's model runner ({@code polyffi.runner.graph}) and its run, or null. */
  private final Module runner;

  private final Function infer;
  private volatile boolean closed;

  /**
   * Wraps an executor module (this GraphModule takes ownership of it). A factory module (a library
   * exported by TVM, type key GraphExecutorFactory) is an FFIException of kind TypeError telling to
   * call its {@code default(device)} first (or use {@link #fromFactory}), and so is a module that
   * is not a graph executor; the module then stays the caller's.
   */
  public GraphModule(Module module) {
    this(module, null);
  }

  private GraphModule(Module module, Module runner) {
    Objects.requireNonNull(module, "module");
    try (Function check = Function.getGlobal("polyffi.runner.check_graph_executor")) {
      check.call(module);
    }
    this.module = module;
    this.runner = runner;
    this.infer = runner == null ? null : runner.getFunction("run");
  }

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
    return fromFactory(factory, "default", device);
  }

  /** As {@link #fromFactory(Module, Device)} for a model exported under another module name. */
  public static GraphModule fromFactory(Module factory, String moduleName, Device device) {
    Objects.requireNonNull(factory, "factory");
    Objects.requireNonNull(device, "device");
    try (Function make = factory.getFunction(moduleName, false)) {
      if (make == null) {
        throw new FFIException(
            "AttributeError",
            "GraphModule.fromFactory: a "
                + factory.typeKey()
                + " module has no function '"
                + moduleName
                + "' (expected a GraphExecutorFactory loaded from TVM's export_library)");
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
      return new GraphModule((Module) executor.call(), made);
    } catch (RuntimeException e) {
      made.close();
      throw e;
    }
  }

  /** Builds an executor for graphJson over the model library lib on device. */
  public static GraphModule create(String graphJson, Module lib, Device device) {
    try (Function create = Function.getGlobal("tvm.graph_executor.create")) {
      return new GraphModule(
          (Module) create.call(graphJson, lib, (long) device.type(), (long) device.id()));
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

  /**
   * Loads params into the executor; {@link #infer} takes them too (the runner's load_params loads
   * its own executor and swaps its pool's weights; calls in flight finish on the old ones).
   */
  public void loadParams(byte[] params) {
    ensureOpen();
    try (Function load = (runner == null ? module : runner).getFunction("load_params")) {
      load.call((Object) params);
    }
  }

  /**
   * Runs the graph on inputs given by position (the graph's inputs that are not weights, in the
   * order of {@link #inputNames}) and returns every output as a new array (the caller closes them).
   * Stateless and thread-safe; needs a GraphModule from {@link #fromFactory}.
   */
  public List<NDArray> infer(NDArray... inputs) {
    return runInfer((Object[]) inputs);
  }

  /** As {@link #infer(NDArray...)} with inputs by name. */
  public List<NDArray> infer(Map<String, NDArray> inputs) {
    Object[] args = new Object[2 * inputs.size()];
    int i = 0;
    for (Map.Entry<String, NDArray> e : inputs.entrySet()) {
      args[i++] = e.getKey();
      args[i++] = e.getValue();
    }
    return runInfer(args);
  }

  /** The graph's inputs that are not weights: what {@link #infer} takes by position. */
  public List<String> inputNames() {
    return VirtualMachine.strings(liveRunner(), "input_names");
  }

  /** The core's model runner behind {@link #infer}, or null for a bare executor. */
  public Module runner() {
    return runner;
  }

  private Module liveRunner() {
    ensureOpen();
    if (runner == null) {
      throw new FFIException(
          "TypeError",
          "GraphModule.infer needs a GraphModule made by GraphModule.fromFactory (a bare executor"
              + " has no model runner)");
    }
    return runner;
  }

  @SuppressWarnings("unchecked") // the runner returns an Array of arrays
  private List<NDArray> runInfer(Object[] args) {
    liveRunner();
    return (List<NDArray>) VirtualMachine.convertResult(infer.call(args));
  }

  /** Use after close is an IllegalStateException naming this class, as for every handle. */
  private void ensureOpen() {
    if (closed) throw new IllegalStateException("GraphModule is closed");
  }

  @Override
  public synchronized void close() {
    closed = true;
    for (Function f : functions.values()) f.close();
    functions.clear();
    module.close();
    if (runner != null) {
      infer.close();
      runner.close();
    }
  }
}
