package org.polyffi.examples.spark;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;
import java.util.List;
import java.util.TreeSet;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The job in local[2] (driver = the one executor JVM, two task threads), one SparkSession for all
 * checks because Spark starts slowly. Every prediction is compared with the C demo's.
 */
class DigitsSparkTest {
  static final Path MODEL = Paths.get(System.getProperty("digits.model.dir", "../digits/model"));
  static final Path LIB =
      Paths.get(System.getProperty("digits.model.lib", "../../build/lib/libdigits_model.so"));
  static final Path WORK =
      Paths.get(System.getProperty("digits.work.dir", "target/spark-test")).toAbsolutePath();

  static SparkSession spark;
  static ModelFiles files;
  static float[][] test;
  static int[] expected;
  static TreeSet<String> jvms;

  @BeforeAll
  static void start() throws Exception {
    Files.createDirectories(WORK);
    spark =
        SparkSession.builder()
            .master("local[2]")
            .appName("digits-spark test")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate();
    files = ModelFiles.ship(spark, MODEL, LIB);
    test = Digits.testRows(MODEL);
    expected = Digits.expected(MODEL);
    jvms = DigitsSpark.executorJvms(spark);
  }

  @AfterAll
  static void stop() {
    if (spark != null) spark.stop();
  }

  /** Asserts a good job still runs on the same JVMs with the same loaded model. */
  static void stillHealthy() {
    Digits.Check c =
        Digits.check(Classify.apply(Digits.table(spark, test, 1000, 2), files), expected);
    assertTrue(c.ok(1000), c.toString());
    assertEquals(jvms, DigitsSpark.executorJvms(spark));
    assertEquals(1, ModelHolder.loads(files));
  }

  static String failure(Dataset<Row> table) {
    Exception e = assertThrows(Exception.class, () -> Classify.apply(table, files).count());
    assertEquals("org.apache.spark.SparkException", e.getClass().getName(), e.toString());
    return e.getMessage();
  }

  static Dataset<Row> withRow(long id, Object features) {
    return Digits.table(spark, test, 1500, 2)
        .union(spark.createDataFrame(List.of(RowFactory.create(id, features)), Digits.INPUT));
  }

  @Test
  void parquetInPredictionsOutEveryOneTheCDemos() throws Exception {
    String in = WORK.resolve("in.parquet").toString();
    String out = WORK.resolve("out.parquet").toString();
    // 3000 rows = 8 full batches of 359 + a partial one per partition.
    Digits.write(spark, MODEL, 3000, 3, in);
    assertEquals(3000, spark.read().parquet(in).count());
    Classify.apply(spark.read().parquet(in), files).write().mode("overwrite").parquet(out);
    Digits.Check c = Digits.check(spark.read().parquet(out), expected);
    assertTrue(c.ok(3000), c.toString());
    assertEquals(0, c.mismatches());
    assertEquals(1, ModelHolder.loads(files));
    int pool = ModelHolder.get(files).predictors();
    assertTrue(pool >= 1 && pool <= 2, "predictors: " + pool + " for 2 task threads");
  }

  @Test
  void emptyAndTinyPartitions() {
    // 3 rows over 5 partitions: two partitions are empty and borrow nothing.
    Digits.Check c = Digits.check(Classify.apply(Digits.table(spark, test, 3, 5), files), expected);
    assertTrue(c.ok(3), c.toString());
  }

  @Test
  void wrongLengthRowFailsTheJobNamingTheRow() {
    Float[] shortRow = new Float[63];
    Arrays.fill(shortRow, 0.25f);
    String msg = failure(withRow(900_001L, shortRow));
    assertTrue(
        msg.contains("digits-spark: row id=900001: features has 63 values, the model takes 64"),
        msg);
    Float[] longRow = new Float[65];
    Arrays.fill(longRow, 0.25f);
    msg = failure(withRow(900_002L, longRow));
    assertTrue(msg.contains("row id=900002: features has 65 values"), msg);
    stillHealthy();
  }

  @Test
  void nullRowAndNullValueFailTheJobNamingTheRow() {
    String msg = failure(withRow(900_003L, null));
    assertTrue(msg.contains("digits-spark: row id=900003: features is null"), msg);
    Float[] holey = new Float[64];
    Arrays.fill(holey, 0.5f);
    holey[17] = null;
    msg = failure(withRow(900_004L, holey));
    assertTrue(msg.contains("digits-spark: row id=900004: features[17] is null"), msg);
    stillHealthy();
  }

  @Test
  void badRowWrittenToParquetFailsTooAndNothingIsCommitted() throws Exception {
    String in = WORK.resolve("bad.parquet").toString();
    String out = WORK.resolve("bad-out.parquet").toString();
    Float[] shortRow = new Float[10];
    Arrays.fill(shortRow, 1f);
    withRow(900_005L, shortRow).write().mode("overwrite").parquet(in);
    Exception e =
        assertThrows(
            Exception.class,
            () ->
                Classify.apply(spark.read().parquet(in), files)
                    .write()
                    .mode("overwrite")
                    .parquet(out));
    assertTrue(
        String.valueOf(e.getMessage()).contains("row id=900005: features has 10 values")
            || String.valueOf(e.getCause()).contains("row id=900005: features has 10 values"),
        e.toString());
    assertFalse(Files.exists(Paths.get(out, "_SUCCESS")), "a failed job must not commit");
    stillHealthy();
  }

  @Test
  void missingModelFileIsAClearError() {
    ModelFiles missing = new ModelFiles("graph.json", "params.bin", "no_such_model.so");
    Exception e =
        assertThrows(
            Exception.class,
            () -> Classify.apply(Digits.table(spark, test, 10, 1), missing).count());
    assertTrue(
        e.getMessage().contains("the job's file no_such_model.so is not at"), e.getMessage());
    stillHealthy();
  }

  @Test
  void holderClosesIdleAndReturnedPredictors() throws Exception {
    // A second copy of the library under its own name: its own holder, closed here.
    Path copy = WORK.resolve("libdigits_model_copy.so");
    Files.copy(LIB, copy, StandardCopyOption.REPLACE_EXISTING);
    spark.sparkContext().addFile(copy.toString());
    ModelFiles other = new ModelFiles(files.graph(), files.params(), "libdigits_model_copy.so");
    Digits.Check c =
        Digits.check(Classify.apply(Digits.table(spark, test, 800, 2), other), expected);
    assertTrue(c.ok(800), c.toString());
    ModelHolder h = ModelHolder.get(other);
    ModelHolder.Predictor busy = h.borrow();
    ModelHolder.close(other); // idle ones close now, busy one when it comes back
    h.release(busy);
    assertThrows(IllegalStateException.class, h::borrow);
    assertEquals(1, ModelHolder.loads(other));
    // A new job loads it afresh.
    c = Digits.check(Classify.apply(Digits.table(spark, test, 400, 2), other), expected);
    assertTrue(c.ok(400), c.toString());
    assertEquals(2, ModelHolder.loads(other));
    ModelHolder.close(other);
  }
}
