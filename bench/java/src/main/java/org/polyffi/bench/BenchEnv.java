package org.polyffi.bench;

import java.nio.file.Path;
import java.nio.file.Paths;

/** Paths of the libraries the benchmarks load, from the repository around bench/java. */
public final class BenchEnv {
  private BenchEnv() {}

  /**
   * One libpolyffi for everyone: the binding loads build/lib/libpolyffi.so (the file
   * libbench_jni.so links), not the jar's copy, so there is one registry in the process.
   */
  public static void init() {
    if (System.getProperty("polyffi.library.path") == null) {
      System.setProperty("polyffi.library.path", repoRoot().resolve("build/lib").toString());
    }
  }

  public static Path repoRoot() {
    String p = System.getProperty("polyffi.root");
    if (p != null) return Paths.get(p);
    try {
      // .../bench/java/target/classes -> the repository
      Path classes =
          Paths.get(BenchEnv.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      return classes.getParent().getParent().getParent().getParent();
    } catch (java.net.URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  public static String lib(String name) {
    return repoRoot().resolve("build/lib/lib" + name + ".so").toString();
  }

  public static String jniLib() {
    return repoRoot().resolve("bench/java/target/native/out/libbench_jni.so").toString();
  }
}
