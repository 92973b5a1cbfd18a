package org.polyffi.examples.spark;

import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Objects;
import org.apache.spark.SparkFiles;
import org.apache.spark.sql.SparkSession;

/**
 * The three artifacts of the compiled model as they travel with a job: the names under which they
 * were shipped ({@code --files} or {@code SparkContext.addFile}). Executors resolve them with
 * {@link SparkFiles#get}; the record itself is what tasks carry.
 */
public record ModelFiles(String graph, String params, String library) implements Serializable {
  public static final String GRAPH = "graph.json";
  public static final String PARAMS = "params.bin";
  public static final String LIBRARY = "libdigits_model.so";

  public ModelFiles {
    Objects.requireNonNull(graph, "graph");
    Objects.requireNonNull(params, "params");
    Objects.requireNonNull(library, "library");
  }

  /** The default names (what {@link #ship} and {@code --files} of the repository's files give). */
  public static ModelFiles defaults() {
    return new ModelFiles(GRAPH, PARAMS, LIBRARY);
  }

  /**
   * Adds modelDir/graph.json, modelDir/params.bin and the model library to the job's files
   * (SparkContext.addFile: every executor fetches them into its work directory).
   */
  public static ModelFiles ship(SparkSession spark, Path modelDir, Path library) {
    Path graph = modelDir.resolve(GRAPH);
    Path params = modelDir.resolve(PARAMS);
    for (Path p : new Path[] {graph, params, library}) {
      if (!Files.isRegularFile(p)) {
        throw new IllegalArgumentException("digits-spark: model file " + p + " does not exist");
      }
    }
    spark.sparkContext().addFile(graph.toAbsolutePath().toString());
    spark.sparkContext().addFile(params.toAbsolutePath().toString());
    spark.sparkContext().addFile(library.toAbsolutePath().toString());
    return new ModelFiles(GRAPH, PARAMS, library.getFileName().toString());
  }

  /** Where this JVM's copy of a shipped file is (call inside a task, or on the driver). */
  static Path local(String name) {
    Path p = Paths.get(SparkFiles.get(name));
    if (!Files.isRegularFile(p)) {
      throw new IllegalStateException(
          "digits-spark: the job's file "
              + name
              + " is not at "
              + p
              + " (ship it with --files or SparkContext.addFile)");
    }
    return p;
  }
}
