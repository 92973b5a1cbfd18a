package org.polyffi.examples.digits;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.polyffi.DataType;
import org.polyffi.Device;
import org.polyffi.GraphModule;
import org.polyffi.Module;
import org.polyffi.NDArray;

/**
 * The digits MLP (64 features -> 10 classes) through polyffi's model runner: one model library and
 * one {@link GraphModule} whose {@link GraphModule#infer} is stateless and thread-safe, so request
 * threads share it without a pool or a lock (the runner gives each concurrent call an executor of
 * its own, sharing the weights). The library is either the repository's own (graph_b1.json +
 * params.bin + libdigits_model.so) or the model as Apache TVM exports it ({@link #fromTvmExport}:
 * one file, {@code lib.export_library("model.so")}).
 */
public final class DigitsModel implements AutoCloseable {
  public static final int FEATURES = 64;
  public static final int CLASSES = 10;

  private final Module lib;
  private final GraphModule graph;

  /** Loads modelDir/graph_b1.json and params.bin over the library at libPath. */
  public DigitsModel(Path modelDir, Path libPath) throws IOException {
    String json = Files.readString(modelDir.resolve("graph_b1.json"));
    byte[] params = Files.readAllBytes(modelDir.resolve("params.bin"));
    this.lib = Module.load(libPath.toString());
    GraphModule g;
    try {
      g = GraphModule.fromParts(json, lib, params, Device.cpu());
    } catch (RuntimeException e) {
      lib.close();
      throw e;
    }
    this.graph = g;
  }

  /**
   * The batch-1 model as Apache TVM exported it (a GraphExecutorFactory library, e.g.
   * tests/tvm_models/tvm018/digits_b1/factory.so).
   */
  public static DigitsModel fromTvmExport(Path factoryLib) {
    Module lib = Module.load(factoryLib.toString());
    try {
      return new DigitsModel(lib, GraphModule.fromFactory(lib, Device.cpu()));
    } catch (RuntimeException e) {
      lib.close();
      throw e;
    }
  }

  private DigitsModel(Module lib, GraphModule graph) {
    this.lib = lib;
    this.graph = graph;
  }

  /** Class probabilities of each row (rows of 64 floats); many threads may call it at once. */
  public float[][] predict(float[][] rows) {
    float[][] out = new float[rows.length][CLASSES];
    try (NDArray input = NDArray.empty(new long[] {1, FEATURES}, DataType.FLOAT32)) {
      for (int i = 0; i < rows.length; i++) {
        input.copyFrom(rows[i]);
        List<NDArray> outputs = graph.infer(input);
        try {
          outputs.get(0).copyTo(out[i]);
        } finally {
          for (NDArray o : outputs) o.close();
        }
      }
    }
    return out;
  }

  public static int argmax(float[] probs) {
    int best = 0;
    for (int j = 1; j < probs.length; j++) if (probs[j] > probs[best]) best = j;
    return best;
  }

  @Override
  public void close() {
    graph.close();
    lib.close();
  }
}
