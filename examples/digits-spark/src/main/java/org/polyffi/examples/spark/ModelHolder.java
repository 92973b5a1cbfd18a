package org.polyffi.examples.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicInteger;
import org.polyffi.DataType;
import org.polyffi.Device;
import org.polyffi.GraphModule;
import org.polyffi.Module;
import org.polyffi.NDArray;

/**
 * The compiled model, loaded once per JVM (an executor, or the driver in local mode) on first use
 * and shared by every task thread of that JVM. Each task borrows a {@link Predictor} (its own graph
 * executor, input buffer and output array) from a pool that grows to the number of task threads
 * that ran at once; a shutdown hook closes everything when the JVM exits.
 */
public final class ModelHolder {
  public static final int FEATURES = 64;
  public static final int CLASSES = 10;

  private static final Map<ModelFiles, ModelHolder> HOLDERS = new ConcurrentHashMap<>();
  private static final Map<ModelFiles, AtomicInteger> LOADS = new ConcurrentHashMap<>();

  static {
    Runtime.getRuntime()
        .addShutdownHook(new Thread(ModelHolder::closeAll, "polyffi-model-holder-close"));
  }

  /** This JVM's holder for files, loading the model on first use (thread-safe). */
  public static ModelHolder get(ModelFiles files) {
    return HOLDERS.computeIfAbsent(files, ModelHolder::load);
  }

  /** How many times files' model was loaded in this JVM (once, however many jobs ran). */
  public static int loads(ModelFiles files) {
    AtomicInteger n = LOADS.get(files);
    return n == null ? 0 : n.get();
  }

  /** Closes and forgets files' holder (the next get loads it again). */
  public static void close(ModelFiles files) {
    ModelHolder h = HOLDERS.remove(files);
    if (h != null) h.close();
  }

  /** Closes every holder (the shutdown hook; tests). Borrowed predictors close on release. */
  public static void closeAll() {
    for (ModelHolder h : HOLDERS.values()) h.close();
    HOLDERS.clear();
  }

  private static ModelHolder load(ModelFiles files) {
    try {
      String graph = Files.readString(ModelFiles.local(files.graph()));
      byte[] params = Files.readAllBytes(ModelFiles.local(files.params()));
      Module lib = Module.load(ModelFiles.local(files.library()).toString());
      LOADS.computeIfAbsent(files, k -> new AtomicInteger()).incrementAndGet();
      return new ModelHolder(lib, graph, params);
    } catch (IOException e) {
      throw new UncheckedIOException("digits-spark: cannot read the model files", e);
    }
  }

  /** One graph executor with its batch input (a direct buffer) and output; one thread at a time. */
  public static final class Predictor implements AutoCloseable {
    final GraphModule graph;
    final int batch;
    final ByteBuffer inputBytes;
    final FloatBuffer input;
    final NDArray inputArray;
    final NDArray outputArray;
    final FloatBuffer output;

    Predictor(Module lib, String graphJson, byte[] params) {
      graph = GraphModule.create(graphJson, lib, Device.cpu());
      try {
        graph.loadParams(params);
        batch = batchOf(graph);
        inputBytes = ByteBuffer.allocateDirect(batch * FEATURES * 4).order(ByteOrder.nativeOrder());
        input = inputBytes.asFloatBuffer();
        inputArray = NDArray.fromBuffer(inputBytes, new long[] {batch, FEATURES}, DataType.FLOAT32);
        outputArray = NDArray.empty(new long[] {batch, CLASSES}, DataType.FLOAT32);
        output = outputArray.asByteBuffer().asFloatBuffer();
      } catch (RuntimeException e) {
        graph.close();
        throw e;
      }
    }

    /** The graph's batch: the first dimension of its input "data" (get_input gives its shape). */
    private static int batchOf(GraphModule g) {
      try (org.polyffi.Function getInput = g.module().getFunction("get_input");
          NDArray data = (NDArray) getInput.call("data")) {
        long[] shape = data.shape();
        if (shape.length != 2 || shape[1] != FEATURES) {
          throw new IllegalArgumentException(
              "digits-spark: the graph's input is "
                  + java.util.Arrays.toString(shape)
                  + ", expected [batch, "
                  + FEATURES
                  + "]");
        }
        return Math.toIntExact(shape[0]);
      }
    }

    /** Rows the graph takes per run. */
    public int batch() {
      return batch;
    }

    /** Where row r's 64 features go: input().put(r * 64 + j, value). */
    public FloatBuffer input() {
      return input;
    }

    /**
     * Runs the graph over the buffer's first rows rows (the rest of the batch is zeroed, so stale
     * rows of an earlier batch never count) and writes each row's class into classes.
     */
    public void run(int rows, int[] classes) {
      for (int i = rows * FEATURES; i < batch * FEATURES; i++) input.put(i, 0f);
      graph.setInput(0, inputArray);
      graph.run();
      graph.getOutput(0, outputArray);
      for (int r = 0; r < rows; r++) {
        int base = r * CLASSES;
        int best = 0;
        float bestP = output.get(base);
        for (int c = 1; c < CLASSES; c++) {
          float p = output.get(base + c);
          if (p > bestP) {
            bestP = p;
            best = c;
          }
        }
        classes[r] = best;
      }
    }

    @Override
    public void close() {
      inputArray.close();
      outputArray.close();
      graph.close();
    }
  }

  private final Module lib;
  private final String graphJson;
  private final byte[] params;
  private final ConcurrentLinkedDeque<Predictor> idle = new ConcurrentLinkedDeque<>();
  private final List<Predictor> all = new ArrayList<>();
  private int borrowed;
  private boolean closed;

  private ModelHolder(Module lib, String graphJson, byte[] params) {
    this.lib = lib;
    this.graphJson = graphJson;
    this.params = params;
  }

  /** An idle predictor, or a new one when every one is in use. Give it back with release. */
  public Predictor borrow() {
    Predictor p = idle.pollFirst();
    synchronized (this) {
      if (closed) {
        if (p != null) p.close();
        throw new IllegalStateException("digits-spark: the model was closed (JVM shutting down)");
      }
      borrowed++;
      if (p != null) return p;
    }
    try {
      Predictor fresh = new Predictor(lib, graphJson, params);
      synchronized (this) {
        all.add(fresh);
      }
      return fresh;
    } catch (RuntimeException e) {
      synchronized (this) {
        borrowed--;
      }
      throw e;
    }
  }

  /** Returns a predictor to the pool (closes it when the holder was closed meanwhile). */
  public void release(Predictor p) {
    synchronized (this) {
      borrowed--;
      if (closed) {
        p.close();
        if (borrowed == 0) lib.close();
        return;
      }
      idle.addFirst(p);
    }
  }

  /** Predictors created so far (at most the task threads that ran at once). */
  public synchronized int predictors() {
    return all.size();
  }

  /** Closes the idle predictors now, the borrowed ones when they come back, then the library. */
  public void close() {
    synchronized (this) {
      if (closed) return;
      closed = true;
      Predictor p;
      while ((p = idle.pollFirst()) != null) p.close();
      if (borrowed == 0) lib.close();
    }
  }
}
