package org.polyffi;

import static org.junit.jupiter.api.Assertions.*;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

class LibraryTest {
  @Test
  void versionsAgree() {
    assertEquals(Library.version(), Library.runtimeVersion());
    assertEquals("linux-x86_64", Library.platform());
    assertNotNull(Library.loadedFrom());
  }

  @Test
  void handshakeNamesBothVersions() {
    UnsatisfiedLinkError e =
        assertThrows(UnsatisfiedLinkError.class, () -> Library.checkVersion("1.2.0", "0.1.0"));
    assertTrue(
        e.getMessage().contains("1.2.0") && e.getMessage().contains("0.1.0"), e.getMessage());
    Library.checkVersion("0.1.0", "0.9.3"); // same major: fine
  }

  @Test
  void abiDigestIsTheHeadersOne() throws Exception {
    String header =
        Files.readString(TestEnv.repoRoot().resolve("c_api/include/polyffi/c_runtime_api.h"));
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile("(?m)^#define POLYFFI_ABI_DIGEST \"([0-9a-f]{64})\"$")
            .matcher(header);
    assertTrue(m.find(), "no POLYFFI_ABI_DIGEST in c_runtime_api.h");
    assertEquals(m.group(1), Native.builtAbiDigest());
    assertEquals(m.group(1), Native.runtimeAbiDigest());
    UnsatisfiedLinkError e =
        assertThrows(UnsatisfiedLinkError.class, () -> Library.checkAbiDigest("aa", "bb", "0.1.0"));
    assertTrue(e.getMessage().contains("aa") && e.getMessage().contains("bb"), e.getMessage());
  }

  /**
   * A child JVM loading a libpolyffi with another ABI digest (build/lib/abi_variant: every export
   * the same, the digest not) beside the real glue: refused with both digests, not a crash.
   */
  @Test
  void libraryWithAnotherAbiDigestIsRefused() throws Exception {
    Path variant = TestEnv.libDir().resolve("abi_variant").resolve(Library.CORE);
    assertTrue(Files.isRegularFile(variant), variant + " not built");
    Path glue = Path.of(Library.loadedFrom(), Library.GLUE);
    org.junit.jupiter.api.Assumptions.assumeTrue(Files.isRegularFile(glue), "glue not beside core");
    Path dir = Files.createTempDirectory("polyffi-abi-variant");
    Files.copy(variant, dir.resolve(Library.CORE));
    Files.copy(glue, dir.resolve(Library.GLUE));
    String classes =
        Path.of(Library.class.getProtectionDomain().getCodeSource().getLocation().toURI())
            .toString();
    Path probe =
        Path.of(LoadProbe.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Dpolyffi.library.path=" + dir);
    cmd.add("-cp");
    cmd.add(classes + File.pathSeparator + probe);
    cmd.add("org.polyffi.LoadProbe");
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    assertEquals(3, p.waitFor(), out);
    String digest = Native.builtAbiDigest();
    assertTrue(out.contains("polyffi: ABI mismatch"), out);
    assertTrue(out.contains("ABI digest " + digest + ","), out);
    assertTrue(out.contains("ABI digest variant-for-tests-" + digest), out);
  }

  /** A JVM whose classpath has the classes but no packed natives, and a wrong user path. */
  @Test
  void loadFailureNamesPlatformAndEveryPathTried() throws Exception {
    Path classes = Files.createTempDirectory("polyffi-classes");
    Path src = Path.of(Library.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    try (Stream<Path> files = Files.walk(src.resolve("org"))) {
      for (Path p : (Iterable<Path>) files::iterator) {
        Path to = classes.resolve(src.relativize(p).toString());
        if (Files.isDirectory(p)) Files.createDirectories(to);
        else Files.copy(p, to);
      }
    }
    Path probe =
        Path.of(LoadProbe.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Dpolyffi.library.path=/nonexistent/dir");
    cmd.add("-Djava.library.path=/also/nonexistent");
    cmd.add("-cp");
    cmd.add(classes + File.pathSeparator + probe);
    cmd.add("org.polyffi.LoadProbe");
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    assertEquals(3, p.waitFor(), out);
    assertTrue(out.contains("linux-x86_64"), out);
    assertTrue(out.contains("/nonexistent/dir"), out);
    assertTrue(out.contains("jar resource"), out);
    assertTrue(out.contains("/also/nonexistent"), out);
  }

  /** The glue exports what the JVM looks up and nothing else (`nm` from binutils). */
  @Test
  void glueExportsOnlyJniSymbols() throws Exception {
    Path glue = Path.of(Library.loadedFrom(), Library.GLUE);
    org.junit.jupiter.api.Assumptions.assumeTrue(Files.isRegularFile(glue), "glue not beside core");
    Process p;
    try {
      p = new ProcessBuilder("nm", "-D", "--defined-only", glue.toString()).start();
    } catch (java.io.IOException e) {
      org.junit.jupiter.api.Assumptions.abort("nm is not installed");
      return;
    }
    List<String> unexpected = new ArrayList<>();
    for (String line : new String(p.getInputStream().readAllBytes()).split("\n")) {
      String[] f = line.trim().split("\\s+");
      String sym = f[f.length - 1];
      if (!sym.isEmpty()
          && !sym.equals("JNI_OnLoad")
          && !sym.startsWith("Java_org_polyffi_Native_")) {
        unexpected.add(sym);
      }
    }
    assertEquals(0, p.waitFor());
    assertEquals(List.of(), unexpected);
  }
}
