package org.polyffi.examples.spark;

import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.TaskCompletionListener;

/**
 * The classification step: mapPartitions over (id, features) rows. Each task borrows a predictor
 * from its JVM's {@link ModelHolder}, copies up to a batch of rows into the predictor's direct
 * input buffer, runs the graph once per batch and emits (id, prediction). A row that is not 64
 * non-null floats fails the task with an {@link IllegalArgumentException} naming its id, before
 * anything reaches native code, so the executor and its model stay usable.
 */
public final class Classify implements MapPartitionsFunction<Row, Row> {
  private static final long serialVersionUID = 1L;

  public static final StructType OUTPUT =
      new StructType()
          .add("id", DataTypes.LongType, false)
          .add("prediction", DataTypes.IntegerType, false);

  private final ModelFiles files;

  public Classify(ModelFiles files) {
    this.files = files;
  }

  /** input must have the columns id (long) and features (array of float). */
  public static Dataset<Row> apply(Dataset<Row> input, ModelFiles files) {
    return input.select("id", "features").mapPartitions(new Classify(files), Encoders.row(OUTPUT));
  }

  @Override
  public Iterator<Row> call(Iterator<Row> rows) {
    if (!rows.hasNext()) return rows;
    ModelHolder holder = ModelHolder.get(files);
    ModelHolder.Predictor p = holder.borrow();
    TaskContext task = TaskContext.get();
    if (task != null) {
      // Back to the pool when the task ends, however it ends (done, failed, killed).
      task.addTaskCompletionListener((TaskCompletionListener) ctx -> holder.release(p));
    }
    return new Batches(rows, p);
  }

  /**
   * An array column's value as Spark hands it to a Row function: a Scala Seq when decoded from the
   * engine's rows, or the producer's own Java array or List when the optimizer passed an upstream
   * function's objects straight through.
   */
  static int sizeOf(Object f) {
    if (f instanceof scala.collection.Seq<?> s) return s.length();
    if (f instanceof List<?> l) return l.size();
    if (f instanceof Object[] a) return a.length;
    if (f instanceof float[] a) return a.length;
    throw new IllegalArgumentException(
        "digits-spark: features is a " + f.getClass().getName() + ", not an array");
  }

  static Object elementOf(Object f, int j) {
    if (f instanceof scala.collection.Seq<?> s) return s.apply(j);
    if (f instanceof List<?> l) return l.get(j);
    return ((Object[]) f)[j];
  }

  /** Feeds batches into the predictor lazily as Spark pulls output rows. */
  private static final class Batches implements Iterator<Row> {
    private final Iterator<Row> in;
    private final ModelHolder.Predictor p;
    private final long[] ids;
    private final int[] classes;
    private int filled;
    private int next;

    Batches(Iterator<Row> in, ModelHolder.Predictor p) {
      this.in = in;
      this.p = p;
      ids = new long[p.batch()];
      classes = new int[p.batch()];
    }

    @Override
    public boolean hasNext() {
      if (next < filled) return true;
      if (!in.hasNext()) return false;
      fill();
      return true;
    }

    @Override
    public Row next() {
      if (!hasNext()) throw new NoSuchElementException();
      Row r = RowFactory.create(ids[next], classes[next]);
      next++;
      return r;
    }

    private void fill() {
      java.nio.FloatBuffer buf = p.input();
      int n = 0;
      while (n < ids.length && in.hasNext()) {
        Row row = in.next();
        if (row.isNullAt(0)) {
          throw new IllegalArgumentException(
              "digits-spark: a row has a null id (after row index " + n + " of this batch)");
        }
        long id = row.getLong(0);
        if (row.isNullAt(1)) {
          throw new IllegalArgumentException("digits-spark: row id=" + id + ": features is null");
        }
        Object f = row.get(1);
        int size = sizeOf(f);
        if (size != ModelHolder.FEATURES) {
          throw new IllegalArgumentException(
              "digits-spark: row id="
                  + id
                  + ": features has "
                  + size
                  + " values, the model takes "
                  + ModelHolder.FEATURES);
        }
        int base = n * ModelHolder.FEATURES;
        if (f instanceof float[] fa) {
          for (int j = 0; j < ModelHolder.FEATURES; j++) buf.put(base + j, fa[j]);
        } else {
          for (int j = 0; j < ModelHolder.FEATURES; j++) {
            Object v = elementOf(f, j);
            if (v instanceof Float x) {
              buf.put(base + j, x);
            } else if (v == null) {
              throw new IllegalArgumentException(
                  "digits-spark: row id=" + id + ": features[" + j + "] is null");
            } else {
              throw new IllegalArgumentException(
                  "digits-spark: row id="
                      + id
                      + ": features["
                      + j
                      + "] is a "
                      + v.getClass().getSimpleName()
                      + ", the model takes float");
            }
          }
        }
        ids[n++] = id;
      }
      p.run(n, classes);
      filled = n;
      next = 0;
    }
  }
}
