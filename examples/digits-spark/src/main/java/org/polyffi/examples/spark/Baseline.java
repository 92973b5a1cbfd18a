package org.polyffi.examples.spark;

import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Map;
import org.polyffi.Module;

/**
 * The single-process reference: the same batches through the same predictor in one JVM, no Spark.
 * Rows come from memory (the test set repeated), so this is the model's cost plus the copy into the
 * direct buffer: the floor a Spark executor core can approach.
 */
final class Baseline {
  private Baseline() {}

  static void run(Map<String, String> a) throws Exception {
    Path dir = Paths.get(DigitsSpark.need(a, "model-dir"));
    Path lib = Paths.get(DigitsSpark.need(a, "model-lib"));
    long rows = Long.parseLong(DigitsSpark.need(a, "rows"));
    int runs = Integer.parseInt(a.getOrDefault("runs", "5"));
    float[][] test = Digits.testRows(dir);
    int[] expected = Digits.expected(dir);
    try (Module m = Module.load(lib.toString());
        ModelHolder.Predictor p =
            new ModelHolder.Predictor(
                m,
                Files.readString(dir.resolve("graph.json")),
                Files.readAllBytes(dir.resolve("params.bin")))) {
      int b = p.batch();
      int[] classes = new int[b];
      double[] nsPerRow = new double[runs];
      for (int r = 0; r < runs; r++) {
        long mismatches = 0;
        long t0 = System.nanoTime();
        FloatBuffer in = p.input();
        for (long start = 0; start < rows; start += b) {
          int n = (int) Math.min(b, rows - start);
          for (int i = 0; i < n; i++)
            in.put(i * ModelHolder.FEATURES, test[(int) ((start + i) % test.length)]);
          p.run(n, classes);
          for (int i = 0; i < n; i++) {
            if (classes[i] != expected[(int) ((start + i) % test.length)]) mismatches++;
          }
        }
        nsPerRow[r] = (System.nanoTime() - t0) / (double) rows;
        if (mismatches != 0) {
          throw new IllegalStateException(mismatches + " predictions differ from the C demo's");
        }
      }
      double[] s = nsPerRow.clone();
      Arrays.sort(s);
      double med = s[runs / 2];
      System.out.printf(
          "baseline: %d rows x %d runs, batch %d, ns/row %s%n",
          rows, runs, b, Arrays.toString(Arrays.stream(nsPerRow).mapToLong(Math::round).toArray()));
      System.out.printf(
          "RESULT baseline_rows=%d median_ns_per_row=%.1f rows_per_s=%.0f%n", rows, med, 1e9 / med);
    }
  }
}
