package org.polyffi;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;

/**
 * The "library" part: finds and loads libpolyffi and the JNI glue, then checks the runtime's
 * version and ABI digest. Order: system property {@code polyffi.library.path} or env {@code
 * POLYFFI_LIBRARY_PATH} (a directory holding libpolyffi.so, or that file), then the libraries
 * packed in the jar under native/&lt;os&gt;-&lt;arch&gt;/ (extracted once to a versioned cache
 * directory), then {@code java.library.path}.
 */
public final class Library {
  private Library() {}

  static final String CORE = System.mapLibraryName("polyffi");
  static final String GLUE = System.mapLibraryName("polyffi_jni");
  private static final Properties PROPS = loadProperties();
  private static boolean loaded;
  private static String loadedFrom;

  /** This binding's version (the pom's). */
  public static String version() {
    return PROPS.getProperty("version", "0.0.0");
  }

  /** The loaded runtime's version, "major.minor.patch". */
  public static String runtimeVersion() {
    int[] v = Native.runtimeVersion();
    return v[0] + "." + v[1] + "." + v[2];
  }

  /** Where the native libraries were loaded from. */
  public static synchronized String loadedFrom() {
    load();
    return loadedFrom;
  }

  /** "linux-x86_64" style name of this platform, as the jar's native/ folders use. */
  public static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    String o =
        os.startsWith("linux")
            ? "linux"
            : os.startsWith("mac")
                ? "macos"
                : os.startsWith("windows") ? "windows" : os.replaceAll("[^a-z0-9]", "");
    String a =
        arch.equals("amd64") || arch.equals("x86_64")
            ? "x86_64"
            : arch.equals("aarch64") || arch.equals("arm64") ? "aarch64" : arch;
    return o + "-" + a;
  }

  static synchronized void load() {
    if (loaded) return;
    List<String> tried = new ArrayList<>();
    String user = System.getProperty("polyffi.library.path");
    String userFrom = "system property polyffi.library.path";
    if (user == null || user.isEmpty()) {
      user = System.getenv("POLYFFI_LIBRARY_PATH");
      userFrom = "env POLYFFI_LIBRARY_PATH";
    }
    boolean ok = false;
    if (user != null && !user.isEmpty()) {
      File f = new File(user);
      File dir = f.isDirectory() ? f : f.getAbsoluteFile().getParentFile();
      File core = f.isDirectory() ? new File(dir, CORE) : f;
      ok = tryLoad(tried, userFrom, core, new File(dir, GLUE), true);
    }
    if (!ok) ok = loadFromJar(tried);
    if (!ok) {
      try {
        System.loadLibrary("polyffi");
        System.loadLibrary("polyffi_jni");
        loadedFrom = "java.library.path";
        ok = true;
      } catch (UnsatisfiedLinkError e) {
        tried.add(
            "java.library.path ("
                + System.getProperty("java.library.path")
                + "): "
                + e.getMessage());
      }
    }
    if (!ok) {
      throw new UnsatisfiedLinkError(
          "polyffi: cannot load the native libraries for "
              + platform()
              + " (os.name="
              + System.getProperty("os.name")
              + ", os.arch="
              + System.getProperty("os.arch")
              + "); tried:\n  "
              + String.join("\n  ", tried));
    }
    checkVersion(version(), runtimeVersion());
    checkAbiDigest(Native.builtAbiDigest(), Native.runtimeAbiDigest(), runtimeVersion());
    loaded = true;
  }

  /**
   * The ABI handshake: the digest of the C declarations and struct layouts the glue was built
   * against must be the loaded libpolyffi's. Throws UnsatisfiedLinkError naming both digests.
   */
  static void checkAbiDigest(String built, String runtime, String runtimeVersion) {
    if (!built.equals(runtime)) {
      throw new UnsatisfiedLinkError(
          "polyffi: ABI mismatch: the Java binding was built against libpolyffi "
              + version()
              + " with ABI digest "
              + built
              + ", but the loaded libpolyffi "
              + runtimeVersion
              + " has ABI digest "
              + runtime);
    }
  }

  /**
   * The handshake: the runtime's major version must be the binding's. Throws UnsatisfiedLinkError
   * naming both versions.
   */
  static void checkVersion(String binding, String runtime) {
    String bm = binding.split("\\.", 2)[0];
    String rm = runtime.split("\\.", 2)[0];
    if (!bm.equals(rm)) {
      throw new UnsatisfiedLinkError(
          "polyffi: version mismatch: the Java binding is "
              + binding
              + " but the loaded libpolyffi is "
              + runtime
              + " (major versions must match)");
    }
  }

  private static boolean tryLoad(
      List<String> tried, String from, File core, File glue, boolean glueFromJarIfAbsent) {
    if (!core.isFile()) {
      tried.add(from + ": " + core + " (no such file)");
      return false;
    }
    try {
      System.load(core.getAbsolutePath());
    } catch (UnsatisfiedLinkError e) {
      tried.add(from + ": " + core + ": " + e.getMessage());
      return false;
    }
    if (!glue.isFile() && glueFromJarIfAbsent) {
      Path dir = extractJar(tried);
      if (dir == null) return false;
      glue = dir.resolve(GLUE).toFile();
    }
    try {
      System.load(glue.getAbsolutePath());
    } catch (UnsatisfiedLinkError e) {
      tried.add(from + ": " + glue + ": " + e.getMessage());
      return false;
    }
    loadedFrom = core.getAbsoluteFile().getParent();
    return true;
  }

  private static boolean loadFromJar(List<String> tried) {
    Path dir = extractJar(tried);
    if (dir == null) return false;
    return tryLoad(tried, "jar", dir.resolve(CORE).toFile(), dir.resolve(GLUE).toFile(), false);
  }

  /** Extracts native/<platform>/ from the jar once into ~/.cache/polyffi/<version>-<hash>. */
  private static Path extractJar(List<String> tried) {
    String base = "/native/" + platform() + "/";
    byte[] core;
    byte[] glue;
    try {
      core = resource(base + CORE);
      glue = resource(base + GLUE);
    } catch (IOException e) {
      tried.add("jar resource " + base + ": " + e.getMessage());
      return null;
    }
    if (core == null || glue == null) {
      tried.add("jar resource " + base + CORE + " / " + GLUE + " (not in the jar)");
      return null;
    }
    try {
      Path root = cacheRoot();
      Path dir = root.resolve(version() + "-" + digest(core, glue));
      Files.createDirectories(dir);
      write(dir.resolve(CORE), core);
      write(dir.resolve(GLUE), glue);
      return dir;
    } catch (IOException | UncheckedIOException e) {
      tried.add("extracting " + base + " to the cache: " + e.getMessage());
      return null;
    }
  }

  private static Path cacheRoot() {
    String prop = System.getProperty("polyffi.cache.dir");
    if (prop != null && !prop.isEmpty()) return Paths.get(prop);
    String xdg = System.getenv("XDG_CACHE_HOME");
    if (xdg != null && !xdg.isEmpty()) return Paths.get(xdg, "polyffi");
    String home = System.getProperty("user.home");
    if (home != null && Files.isWritable(Paths.get(home)))
      return Paths.get(home, ".cache", "polyffi");
    return Paths.get(
        System.getProperty("java.io.tmpdir"), "polyffi-" + System.getProperty("user.name"));
  }

  /** Writes once: an existing file of the same size (content-addressed directory) is kept. */
  private static void write(Path target, byte[] data) throws IOException {
    if (Files.isRegularFile(target) && Files.size(target) == data.length) return;
    Path tmp = Files.createTempFile(target.getParent(), target.getFileName().toString(), ".tmp");
    try {
      Files.write(tmp, data);
      try {
        Files.move(
            tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
      }
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  private static byte[] resource(String name) throws IOException {
    try (InputStream in = Library.class.getResourceAsStream(name)) {
      return in == null ? null : in.readAllBytes();
    }
  }

  private static String digest(byte[] a, byte[] b) {
    try {
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      md.update(a);
      md.update(b);
      StringBuilder sb = new StringBuilder();
      byte[] d = md.digest();
      for (int i = 0; i < 8; i++) sb.append(String.format("%02x", d[i]));
      return sb.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static Properties loadProperties() {
    Properties p = new Properties();
    try (InputStream in = Library.class.getResourceAsStream("polyffi.properties")) {
      if (in != null) p.load(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return p;
  }
}
