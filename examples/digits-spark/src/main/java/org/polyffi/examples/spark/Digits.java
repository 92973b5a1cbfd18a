package org.polyffi.examples.spark;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/** The digits test set (examples/digits/model) and the tables made from it. */
public final class Digits {
  public static final StructType INPUT =
      new StructType()
          .add("id", DataTypes.LongType, false)
          .add("features", DataTypes.createArrayType(DataTypes.FloatType, true), true);

  private Digits() {}

  /** test_x.bin: the held-out rows, float32 [n, 64], little-endian. */
  public static float[][] testRows(Path modelDir) throws IOException {
    byte[] x = Files.readAllBytes(modelDir.resolve("test_x.bin"));
    int n = x.length / (4 * ModelHolder.FEATURES);
    if (n == 0 || n * 4 * ModelHolder.FEATURES != x.length) {
      throw new IOException(modelDir.resolve("test_x.bin") + " is not float32 [n, 64]");
    }
    ByteBuffer b = ByteBuffer.wrap(x).order(ByteOrder.LITTLE_ENDIAN);
    float[][] rows = new float[n][ModelHolder.FEATURES];
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < ModelHolder.FEATURES; j++) rows[i][j] = b.getFloat();
    }
    return rows;
  }

  /**
   * The predictions list of expected.json: what the C demo (build/bin/digits_demo, which fails on
   * any difference) and train.py predict for each held-out row.
   */
  public static int[] expected(Path modelDir) throws IOException {
    String json = Files.readString(modelDir.resolve("expected.json"));
    Matcher m = Pattern.compile("\"predictions\"\\s*:\\s*\\[([^\\]]*)\\]").matcher(json);
    if (!m.find()) throw new IOException("expected.json has no predictions list");
    List<Integer> out = new ArrayList<>();
    for (String s : m.group(1).split(",")) out.add(Integer.parseInt(s.trim()));
    return out.stream().mapToInt(Integer::intValue).toArray();
  }

  /** rows rows: row id i holds test row i % n, spread over partitions partitions. */
  public static Dataset<Row> table(SparkSession spark, float[][] test, long rows, int partitions) {
    return spark.range(0, rows, 1, partitions).mapPartitions(new Repeat(test), Encoders.row(INPUT));
  }

  private static final class Repeat implements MapPartitionsFunction<Long, Row> {
    private static final long serialVersionUID = 1L;
    private final float[][] test;

    Repeat(float[][] test) {
      this.test = test;
    }

    @Override
    public Iterator<Row> call(Iterator<Long> ids) {
      return new Iterator<>() {
        @Override
        public boolean hasNext() {
          return ids.hasNext();
        }

        @Override
        public Row next() {
          long id = ids.next();
          float[] src = test[(int) (id % test.length)];
          Float[] f = new Float[src.length];
          for (int j = 0; j < src.length; j++) f[j] = src[j];
          return RowFactory.create(id, f);
        }
      };
    }
  }

  /** Writes table(...) as Parquet at path (overwriting). */
  public static void write(
      SparkSession spark, Path modelDir, long rows, int partitions, String path)
      throws IOException {
    table(spark, testRows(modelDir), rows, partitions).write().mode("overwrite").parquet(path);
  }

  /** What a check of the predictions found. */
  public record Check(
      long rows, long distinctIds, long minId, long maxId, long mismatches, List<String> examples) {
    /** Every id 0..expectedRows-1 exactly once, every prediction the C demo's. */
    public boolean ok(long expectedRows) {
      return rows == expectedRows
          && distinctIds == expectedRows
          && minId == 0
          && maxId == expectedRows - 1
          && mismatches == 0;
    }

    @Override
    public String toString() {
      return rows
          + " rows, "
          + distinctIds
          + " distinct ids in ["
          + minId
          + ", "
          + maxId
          + "], "
          + mismatches
          + " predictions differ from the C demo's"
          + (examples.isEmpty() ? "" : " (e.g. " + String.join("; ", examples) + ")");
    }
  }

  /** Compares predictions (id, prediction) with expected[id % expected.length]. */
  public static Check check(Dataset<Row> predictions, int[] expected) {
    Dataset<Row> bad =
        predictions.filter(
            (org.apache.spark.api.java.function.FilterFunction<Row>)
                r -> r.getInt(1) != expected[(int) (r.getLong(0) % expected.length)]);
    Row agg =
        predictions
            .agg(
                org.apache.spark.sql.functions.count("id"),
                org.apache.spark.sql.functions.countDistinct("id"),
                org.apache.spark.sql.functions.min("id"),
                org.apache.spark.sql.functions.max("id"))
            .first();
    long mismatches = bad.count();
    List<String> examples = new ArrayList<>();
    for (Row r : bad.limit(3).collectAsList()) {
      examples.add(
          "id "
              + r.getLong(0)
              + ": "
              + r.getInt(1)
              + " vs "
              + expected[(int) (r.getLong(0) % expected.length)]);
    }
    long rows = agg.getLong(0);
    return new Check(
        rows,
        agg.getLong(1),
        rows == 0 ? -1 : agg.getLong(2),
        rows == 0 ? -1 : agg.getLong(3),
        mismatches,
        examples);
  }
}
