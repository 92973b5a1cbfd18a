package org.polyffi.examples.spark;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;

/**
 * The application. Subcommands:
 *
 * <pre>
 *   generate --model-dir D --rows N [--partitions P] --out T       Parquet table (id, features)
 *   classify --in T --out P (--model-dir D --model-lib L | --expected-dir D) [--runs R]
 *            [--expect-rows N] [--bad-input] [--wait-executors N]                         predictions, checked
 *   baseline --model-dir D --model-lib L --rows N [--runs R]         one JVM, no Spark
 * </pre>
 *
 * The master comes from spark-submit (spark.master), else --master (default local[2]). Without
 * --model-dir the model files must have been shipped with --files (graph.json, params.bin,
 * libdigits_model.so).
 */
public final class DigitsSpark {
  private DigitsSpark() {}

  public static void main(String[] argv) throws Exception {
    if (argv.length == 0) usage("no subcommand");
    Map<String, String> a = options(Arrays.copyOfRange(argv, 1, argv.length));
    switch (argv[0]) {
      case "generate" -> generate(a);
      case "classify" -> System.exit(classify(a) ? 0 : 1);
      case "baseline" -> Baseline.run(a);
      default -> usage("unknown subcommand " + argv[0]);
    }
  }

  static void usage(String why) {
    System.err.println(
        "digits-spark: "
            + why
            + "\nusage: generate|classify|baseline --option value ... (see DigitsSpark's javadoc)");
    System.exit(2);
  }

  static Map<String, String> options(String[] args) {
    Map<String, String> m = new HashMap<>();
    for (int i = 0; i < args.length; i++) {
      if (!args[i].startsWith("--")) usage("unexpected argument " + args[i]);
      String k = args[i].substring(2);
      if (k.equals("bad-input")) {
        m.put(k, "true");
      } else {
        if (i + 1 >= args.length) usage("--" + k + " needs a value");
        m.put(k, args[++i]);
      }
    }
    return m;
  }

  static String need(Map<String, String> a, String k) {
    String v = a.get(k);
    if (v == null) usage("--" + k + " is required");
    return v;
  }

  static SparkSession session(Map<String, String> a, String name) {
    SparkSession.Builder b = SparkSession.builder().appName(name);
    if (System.getProperty("spark.master") == null) b.master(a.getOrDefault("master", "local[2]"));
    return b.getOrCreate();
  }

  static void generate(Map<String, String> a) throws Exception {
    long rows = Long.parseLong(need(a, "rows"));
    int parts = Integer.parseInt(a.getOrDefault("partitions", "4"));
    try (SparkSession spark = session(a, "digits-spark generate")) {
      long t0 = System.nanoTime();
      Digits.write(spark, Paths.get(need(a, "model-dir")), rows, parts, need(a, "out"));
      System.out.printf(
          "generate: %d rows in %d partitions -> %s (%.1f s)%n",
          rows, parts, a.get("out"), (System.nanoTime() - t0) / 1e9);
    }
  }

  /** Classifies, checks, prints rows/s; false when a check failed. */
  static boolean classify(Map<String, String> a) throws Exception {
    String in = need(a, "in");
    String out = need(a, "out");
    int runs = Integer.parseInt(a.getOrDefault("runs", "1"));
    try (SparkSession spark = session(a, "digits-spark classify")) {
      ModelFiles files =
          a.containsKey("model-dir")
              ? ModelFiles.ship(
                  spark, Paths.get(a.get("model-dir")), Paths.get(need(a, "model-lib")))
              : ModelFiles.defaults();
      // expected.json (the C demo's classes) is read on the driver, from --model-dir or, when
      // the model travelled with --files, from --expected-dir.
      Path expectedDir =
          Paths.get(a.containsKey("model-dir") ? a.get("model-dir") : need(a, "expected-dir"));
      int[] expected = Digits.expected(expectedDir);
      waitForExecutors(spark, Integer.parseInt(a.getOrDefault("wait-executors", "0")));
      long rows = spark.read().parquet(in).count();
      int executors = spark.sparkContext().statusTracker().getExecutorInfos().length - 1;
      System.out.printf(
          "classify: %d rows, master %s, %d executor(s), %d default parallelism%n",
          rows,
          spark.sparkContext().master(),
          executors,
          spark.sparkContext().defaultParallelism());
      List<Double> rates = new ArrayList<>();
      for (int r = 0; r < runs; r++) {
        long t0 = System.nanoTime();
        Classify.apply(spark.read().parquet(in), files).write().mode("overwrite").parquet(out);
        double s = (System.nanoTime() - t0) / 1e9;
        rates.add(rows / s);
        System.out.printf(
            "classify: run %d: %.2f s, %.0f rows/s, %.2f us/row%n",
            r + 1, s, rows / s, 1e6 * s / rows);
      }
      // Run 1 is the cold start (model load on each executor, JIT): the median is over the rest.
      List<Double> warm = new ArrayList<>(rates.subList(rates.size() > 1 ? 1 : 0, rates.size()));
      warm.sort(null);
      System.out.printf(
          "RESULT rows=%d executors=%d runs=%d median_rows_per_s=%.0f (warm runs)%n",
          rows, executors, runs, warm.get(warm.size() / 2));
      Digits.Check c = Digits.check(spark.read().parquet(out), expected);
      long want = Long.parseLong(a.getOrDefault("expect-rows", Long.toString(rows)));
      boolean ok = c.ok(want);
      System.out.println("check: " + c + (ok ? " -> OK" : " -> FAILED"));
      if (a.containsKey("bad-input")) ok &= badInput(spark, files, expectedDir, expected);
      return ok;
    }
  }

  /** Waits (at most 120 s) until n executors have registered (a standalone cluster). */
  static void waitForExecutors(SparkSession spark, int n) throws InterruptedException {
    long deadline = System.nanoTime() + 120_000_000_000L;
    while (spark.sparkContext().statusTracker().getExecutorInfos().length - 1 < n) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("digits-spark: fewer than " + n + " executors after 120 s");
      }
      Thread.sleep(200);
    }
  }

  /** "executorId:pid" of every executor JVM that ran one of many small tasks. */
  public static TreeSet<String> executorJvms(SparkSession spark) {
    int parts = Math.max(8, 4 * spark.sparkContext().defaultParallelism());
    MapPartitionsFunction<Long, String> who =
        ids ->
            List.of(SparkEnv.get().executorId() + ":" + ProcessHandle.current().pid()).iterator();
    return new TreeSet<>(
        spark
            .range(0, parts, 1, parts)
            .mapPartitions(who, Encoders.STRING())
            .distinct()
            .collectAsList());
  }

  /**
   * Runs the job over tables with a short row and a null row: each must fail naming the row id;
   * afterwards the same executor JVMs must still be there and classify correctly.
   */
  static boolean badInput(SparkSession spark, ModelFiles files, Path modelDir, int[] expected)
      throws Exception {
    float[][] test = Digits.testRows(modelDir);
    TreeSet<String> before = executorJvms(spark);
    boolean ok = true;
    Object[][] bad = {
      {5_000_017L, new Float[63], "features has 63 values"},
      {5_000_018L, null, "features is null"},
    };
    for (Object[] b : bad) {
      if (b[1] != null) Arrays.fill((Float[]) b[1], 0.5f);
      Dataset<Row> table =
          Digits.table(spark, test, 2000, 2)
              .union(spark.createDataFrame(List.of(RowFactory.create(b[0], b[1])), Digits.INPUT));
      String msg;
      try {
        Classify.apply(table, files).count();
        msg = "(no error)";
      } catch (Exception e) { // a SparkException, thrown through Scala undeclared
        msg = e.getClass().getName() + ": " + e.getMessage();
      }
      boolean named = msg.contains("row id=" + b[0] + ": " + b[2]);
      ok &= named;
      String line = msg.lines().filter(l -> l.contains("digits-spark:")).findFirst().orElse(msg);
      System.out.println(
          "bad input: " + (named ? "failed as expected: " : "WRONG: ") + line.trim());
    }
    Digits.Check c =
        Digits.check(Classify.apply(Digits.table(spark, test, 3000, 4), files), expected);
    TreeSet<String> after = executorJvms(spark);
    System.out.println(
        "bad input: executor JVMs before "
            + before
            + ", after "
            + after
            + "; a good job afterwards: "
            + c);
    return ok && c.ok(3000) && before.containsAll(after);
  }
}
