package org.polyffi;

/**
 * A compiled model run by the graph executor (what {@code tvm.graph_executor.create(graph_json,
 * lib, dev_type, dev_id)} returns). Not thread-safe: use one per thread or a pool.
 */
public final class GraphModule implements AutoCloseable {
  private final Module module;
  private final Function setInput;
  private final Function run;
  private final Function getOutput;
  private final Function getNumOutputs;
  private final Function getInputIndex;
  private final Function loadParams;

  /** Wraps an executor module (this GraphModule takes ownership of it). */
  public GraphModule(Module module) {
    this.module = module;
    setInput = module.getFunction("set_input");
    run = module.getFunction("run");
    getOutput = module.getFunction("get_output");
    getNumOutputs = module.getFunction("get_num_outputs");
    getInputIndex = module.getFunction("get_input_index", false);
    loadParams = module.getFunction("load_params");
  }

  /** Builds an executor for graphJson over the model library lib on device. */
  public static GraphModule create(String graphJson, Module lib, Device device) {
    try (Function create = Function.getGlobal("tvm.graph_executor.create")) {
      Object m = create.call(graphJson, lib, (long) device.type(), (long) device.id());
      if (!(m instanceof Module)) {
        throw new FFIException(
            "TypeError", "tvm.graph_executor.create returned " + Function.describe(m));
      }
      return new GraphModule((Module) m);
    }
  }

  public Module module() {
    return module;
  }

  public void setInput(String name, NDArray value) {
    setInput.call(name, value);
  }

  public void setInput(int index, NDArray value) {
    setInput.call((long) index, value);
  }

  public void run() {
    run.call();
  }

  /** A new array holding output index (the caller closes it). */
  public NDArray getOutput(int index) {
    return (NDArray) getOutput.call((long) index);
  }

  /** Copies output index into out; returns out. */
  public NDArray getOutput(int index, NDArray out) {
    Object r = getOutput.call((long) index, out);
    if (r instanceof AutoCloseable && r != out) ((NDArray) r).close();
    return out;
  }

  public int getNumOutputs() {
    return Math.toIntExact((Long) getNumOutputs.call());
  }

  /** The index of input name, -1 when there is none. */
  public int getInputIndex(String name) {
    if (getInputIndex == null) throw new FFIException("AttributeError", "no get_input_index");
    return Math.toIntExact((Long) getInputIndex.call(name));
  }

  public void loadParams(byte[] params) {
    loadParams.call((Object) params);
  }

  @Override
  public void close() {
    setInput.close();
    run.close();
    getOutput.close();
    getNumOutputs.close();
    if (getInputIndex != null) getInputIndex.close();
    loadParams.close();
    module.close();
  }
}
