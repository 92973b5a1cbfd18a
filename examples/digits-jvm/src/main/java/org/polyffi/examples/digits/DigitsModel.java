package org.polyffi.examples.digits;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.function.Function;
import org.polyffi.DataType;
import org.polyffi.Device;
import org.polyffi.GraphModule;
import org.polyffi.Module;
import org.polyffi.NDArray;

/**
 * The digits MLP (64 features -> 10 classes) through polyffi's graph executor: one model library,
 * and a pool of batch-1 executors, each with its own input and output arrays, so request threads
 * never share an executor. The library is either the repository's own (graph_b1.json + params.bin +
 * libdigits_model.so) or the model as Apache TVM exports it ({@link #fromTvmExport}: one file,
 * {@code lib.export_library("model.so")}).
 */
public final class DigitsModel implements AutoCloseable {
  public static final int FEATURES = 64;
  public static final int CLASSES = 10;

  /** One executor with its arrays; used by one thread at a time. */
  static final class Predictor implements AutoCloseable {
    final GraphModule graph;
    final NDArray input = NDArray.empty(new long[] {1, FEATURES}, DataType.FLOAT32);
    final NDArray output = NDArray.empty(new long[] {1, CLASSES}, DataType.FLOAT32);

    Predictor(GraphModule graph) {
      this.graph = graph;
    }

    void predict(float[] row, float[] probs) {
      input.copyFrom(row);
      graph.setInput(0, input);
      graph.run();
      graph.getOutput(0, output).copyTo(probs);
    }

    @Override
    public void close() {
      input.close();
      output.close();
      graph.close();
    }
  }

  private final Module lib;
  private final BlockingQueue<Predictor> pool;
  private final Predictor[] all;

  /**
   * Loads modelDir/graph_b1.json and params.bin over the library at libPath, poolSize executors.
   */
  public DigitsModel(Path modelDir, Path libPath, int poolSize) throws IOException {
    this(executorsFrom(modelDir), Module.load(libPath.toString()), poolSize);
  }

  private static Function<Module, GraphModule> executorsFrom(Path modelDir) throws IOException {
    String graph = Files.readString(modelDir.resolve("graph_b1.json"));
    byte[] params = Files.readAllBytes(modelDir.resolve("params.bin"));
    return lib -> {
      GraphModule g = GraphModule.create(graph, lib, Device.cpu());
      g.loadParams(params);
      return g;
    };
  }

  /**
   * The batch-1 model as Apache TVM exported it (a GraphExecutorFactory library, e.g.
   * tests/tvm_models/tvm018/digits_b1/factory.so): each executor is the factory's default(cpu).
   */
  public static DigitsModel fromTvmExport(Path factoryLib, int poolSize) {
    return new DigitsModel(
        lib -> GraphModule.fromFactory(lib, Device.cpu()),
        Module.load(factoryLib.toString()),
        poolSize);
  }

  private DigitsModel(Function<Module, GraphModule> mk, Module lib, int poolSize) {
    this.lib = lib;
    pool = new ArrayBlockingQueue<>(poolSize);
    all = new Predictor[poolSize];
    try {
      for (int i = 0; i < poolSize; i++) {
        all[i] = new Predictor(mk.apply(lib));
        pool.add(all[i]);
      }
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  /** Class probabilities of each row (rows of 64 floats). */
  public float[][] predict(float[][] rows) throws InterruptedException {
    float[][] out = new float[rows.length][CLASSES];
    Predictor p = pool.take();
    try {
      for (int i = 0; i < rows.length; i++) p.predict(rows[i], out[i]);
    } finally {
      pool.add(p);
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
    for (Predictor p : all) if (p != null) p.close();
    lib.close();
  }
}
