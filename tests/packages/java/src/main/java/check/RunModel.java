package check;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.polyffi.DataType;
import org.polyffi.Device;
import org.polyffi.GraphModule;
import org.polyffi.Module;
import org.polyffi.NDArray;

/**
 * A JVM consumer of org.polyffi:polyffi from dist/maven (ci/test-packages.sh): runs the
 * TVM-exported graph model given as the first argument, compares output 0 byte for byte with what
 * TVM's runtime recorded, and checks that the libpolyffi.so mapped into this process was extracted
 * from the jar, not taken from a build tree.
 */
public final class RunModel {
  private RunModel() {}

  public static void main(String[] args) throws Exception {
    Path model = Path.of(args[0]);
    byte[] input = Files.readAllBytes(model.resolve("input_data.bin"));
    byte[] want = Files.readAllBytes(model.resolve("output_0.bin"));
    byte[] got;
    try (Module lib = Module.load(model.resolve("factory.so").toString());
        GraphModule gm = GraphModule.fromFactory(lib, Device.cpu());
        NDArray x = NDArray.empty(new long[] {1, input.length / 4}, DataType.FLOAT32)) {
      x.copyFrom(input);
      gm.setInput("data", x);
      gm.run();
      try (NDArray y = gm.getOutput(0)) {
        got = y.toByteArray();
      }
    }
    if (!Arrays.equals(got, want)) {
      throw new AssertionError("output 0 differs from TVM's output_0.bin");
    }
    String lib = null;
    for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
      int at = line.indexOf('/');
      if (at >= 0 && line.endsWith("/libpolyffi.so")) {
        lib = Path.of(line.substring(at)).toRealPath().toString();
        break;
      }
    }
    // Library extracts the jar's native/<platform>/ into polyffi.cache.dir (set by the script):
    // the mapped library must be that file, with the bytes of the jar's copy.
    Path cache = Path.of(System.getProperty("polyffi.cache.dir")).toRealPath();
    String from = org.polyffi.Library.loadedFrom();
    String resource = "/native/" + org.polyffi.Library.platform() + "/libpolyffi.so";
    byte[] packed;
    try (var in = org.polyffi.Library.class.getResourceAsStream(resource)) {
      packed = in == null ? null : in.readAllBytes();
    }
    if (lib == null
        || !Path.of(lib).startsWith(cache)
        || packed == null
        || !Arrays.equals(packed, Files.readAllBytes(Path.of(lib)))) {
      throw new AssertionError(
          "libpolyffi " + lib + " (loaded from " + from + ") is not the jar's " + resource);
    }
    System.out.println(
        "RunModel: output equals TVM's ("
            + want.length
            + " bytes); libpolyffi "
            + lib
            + " (the jar's "
            + resource
            + ")");
  }
}
