package org.polyffi.examples.digits;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;

/**
 * The digits classifier from the JVM, in batch: classifies examples/digits/model/test_x.bin and
 * prints accuracy, agreement with train.py and batch-1 latency. (Serving models over HTTP is {@link
 * org.polyffi.examples.Serve}, the Open Inference Protocol server.)
 *
 * <p>Options: --model-dir DIR --lib PATH, or --tvm-lib PATH (instead of --lib and the model's
 * graph/params: the batch-1 model as Apache TVM exported it, e.g.
 * tests/tvm_models/tvm018/digits_b1/factory.so). --batch is accepted for compatibility.
 */
public final class DigitsApp {
  static final ObjectMapper JSON = new ObjectMapper();

  private DigitsApp() {}

  // ---- command line ----------------------------------------------------------------------------

  static String opt(String[] args, String name, String dflt) {
    for (int i = 0; i + 1 < args.length; i++) if (args[i].equals(name)) return args[i + 1];
    return dflt;
  }

  static void batch(DigitsModel model, Path modelDir) throws Exception {
    byte[] x = Files.readAllBytes(modelDir.resolve("test_x.bin"));
    byte[] y = Files.readAllBytes(modelDir.resolve("test_y.bin"));
    JsonNode expected = JSON.readTree(modelDir.resolve("expected.json").toFile());
    int n = y.length / 4;
    ByteBuffer xb = ByteBuffer.wrap(x).order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer yb = ByteBuffer.wrap(y).order(ByteOrder.LITTLE_ENDIAN);
    float[][] rows = new float[n][DigitsModel.FEATURES];
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < DigitsModel.FEATURES; j++)
        rows[i][j] = xb.getFloat(4 * (DigitsModel.FEATURES * i + j));
    }
    int correct = 0;
    int agree = 0;
    long[] ns = new long[5 * n];
    float[][] one = new float[1][];
    for (int pass = 0; pass < 5; pass++) {
      for (int i = 0; i < n; i++) {
        one[0] = rows[i];
        long t0 = System.nanoTime();
        float[][] p = model.predict(one);
        ns[pass * n + i] = System.nanoTime() - t0;
        if (pass == 0) {
          int pred = DigitsModel.argmax(p[0]);
          correct += pred == yb.getInt(4 * i) ? 1 : 0;
          agree += pred == expected.get("predictions").get(i).asInt() ? 1 : 0;
        }
      }
    }
    Arrays.sort(ns);
    System.out.printf("samples:                 %d%n", n);
    System.out.printf(
        "accuracy:                %.2f %% (%d / %d)%n", 100.0 * correct / n, correct, n);
    System.out.printf("agreement with train.py: %d / %d%n", agree, n);
    System.out.printf(
        "batch-1 latency:         median %.2f us, p90 %.2f us (JVM, GraphModule.infer, 5 x"
            + " %d)%n",
        ns[ns.length / 2] / 1e3, ns[ns.length * 9 / 10] / 1e3, n);
    if (agree != n) throw new IllegalStateException("predictions differ from expected.json");
  }

  public static void main(String[] args) throws Exception {
    Path modelDir = Paths.get(opt(args, "--model-dir", "examples/digits/model"));
    Path lib = Paths.get(opt(args, "--lib", "build/lib/libdigits_model.so"));
    String tvmLib = opt(args, "--tvm-lib", null);
    DigitsModel model =
        tvmLib != null
            ? DigitsModel.fromTvmExport(Paths.get(tvmLib))
            : new DigitsModel(modelDir, lib);
    System.out.printf(
        "model:                   %s%n",
        tvmLib != null
            ? "exported by Apache TVM, " + tvmLib + " (GraphModule.fromFactory)"
            : "graph executor over " + lib);
    try (model) {
      batch(model, modelDir);
    }
  }
}
