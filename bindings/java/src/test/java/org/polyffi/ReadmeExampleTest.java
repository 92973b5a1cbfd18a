package org.polyffi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The README's "Java in ten lines", run, and checked to be the very lines the README shows. */
class ReadmeExampleTest {
  @Test
  void readmeExampleRuns() {
    // README:begin
    try (Module lib = Module.load(TestEnv.lib("polyffi_testing")); // registers testing.*
        Function add = Function.getGlobal("testing.add");
        Function twice = Function.register("demo.twice", args -> 2 * (Long) args[0], true);
        Function apply = Function.getGlobal("testing.apply");
        NDArray ones = NDArray.of(new float[] {1, 1, 1, 1}, 4)) {
      assert add.callLong(1, 2) == 3; // primitive fast path: no boxing
      assert apply.call(twice, 21L).equals(42L); // C++ calls back into Java
      assert Registry.namespace("testing").call("nd_sum", ones).equals(4.0);
    } // add.call(1.5, 2) throws FFIException: getKind() "TypeError", naming argument 0
    // README:end
    Function.removeGlobal("demo.twice");
    boolean asserts = false;
    assert asserts = true;
    assertTrue(asserts, "run with -ea (Surefire's default) so the asserts above are checked");
  }

  @Test
  void readmeShowsTheseLines() throws IOException {
    List<String> readme = Files.readAllLines(TestEnv.repoRoot().resolve("README.md"));
    int start = readme.indexOf("## Java in ten lines");
    List<String> shown = new ArrayList<>();
    boolean in = false;
    for (String line : readme.subList(start, readme.size())) {
      if (line.equals("```java")) {
        in = true;
      } else if (in && line.equals("```")) {
        break;
      } else if (in && !line.startsWith("import ") && !line.isEmpty()) {
        shown.add(line);
      }
    }
    List<String> src =
        Files.readAllLines(
            TestEnv.repoRoot()
                .resolve("bindings/java/src/test/java/org/polyffi/ReadmeExampleTest.java"));
    List<String> tested = new ArrayList<>();
    boolean on = false;
    for (String line : src) {
      if (line.trim().equals("// README:begin")) {
        on = true;
      } else if (line.trim().equals("// README:end")) {
        break;
      } else if (on) {
        tested.add(
            line.substring(4)
                .replace(
                    "TestEnv.lib(\"polyffi_testing\")", "\"build/lib/libpolyffi_testing.so\""));
      }
    }
    assertEquals(tested, shown);
  }
}
