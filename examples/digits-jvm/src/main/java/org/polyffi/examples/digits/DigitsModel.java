package org.polyffi.examples.digits;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import org.polyffi.DataType;
import org.polyffi.Device;
import org.polyffi.GraphModule;
import org.polyffi.Module;
import org.polyffi.NDArray;

/**
 * The digits MLP (64 features -> 10 classes) through polyffi's graph executor: one model library,
 * and a pool of batch-1 executors, each with its own input and output arrays, so request threads
 * never share an executor.
 */
public final class DigitsModel implements AutoCloseable {
  public static final int FEATURES = 64;
  public static final int CLASSES = 10;

  /** One executor with its arrays; used by one thread at a time. */
  static final class Predictor implements AutoCloseable {
    final GraphModule graph;
    final NDArray input = NDArray.empty(new long[] {1, FEATURES}, DataType.FLOAT32);
    final NDArray output = NDArray.empty(new long[] {1, CLASSES}, DataType.FLOAT32);

    Predictor(String graphJson, Module lib, byte[] params) {
      graph = GraphModule.create(graphJson, lib, Device.cpu());
      graph.loadParams(params);
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
    String graph = Files.readString(modelDir.resolve("graph_b1.json"));
    byte[] params = Files.readAllBytes(modelDir.resolve("params.bin"));
    lib = Module.load(libPath.toString());
    pool = new ArrayBlockingQueue<>(poolSize);
    all = new Predictor[poolSize];
    for (int i = 0; i < poolSize; i++) {
      all[i] = new Predictor(graph, lib, params);
      pool.add(all[i]);
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
    for (Predictor p : all) p.close();
    lib.close();
  }
}
