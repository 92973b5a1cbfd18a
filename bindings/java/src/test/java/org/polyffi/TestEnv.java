package org.polyffi;

import java.nio.file.Path;
import java.nio.file.Paths;

/** Where the tests find the repository and its built fixtures (set by the pom's Surefire). */
final class TestEnv {
  private TestEnv() {}

  static Path repoRoot() {
    String p = System.getProperty("polyffi.repo.root");
    if (p == null) p = System.getenv("POLYFFI_REPO_ROOT");
    return Paths.get(p == null ? "../.." : p).toAbsolutePath().normalize();
  }

  static Path libDir() {
    String p = System.getenv("POLYFFI_TEST_LIB_DIR");
    if (p == null || p.isEmpty()) p = System.getProperty("polyffi.test.lib.dir");
    return p == null ? repoRoot().resolve("build/lib") : Paths.get(p).toAbsolutePath().normalize();
  }

  static String lib(String name) {
    return libDir().resolve("lib" + name + ".so").toString();
  }

  private static Module testing;

  /** Loads libpolyffi_testing.so once (its testing.* globals register on load). */
  static synchronized void loadFixtures() {
    if (testing == null) testing = Module.load(lib("polyffi_testing"));
  }

  static long liveObjects() {
    loadFixtures();
    try (Function f = Function.getGlobal("testing.live_objects")) {
      return f.callLong();
    }
  }
}
