package org.polyffi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The shared conformance suite, one dynamic test per case. Honours
 * tests/conformance/capabilities/java.json (listed cases must fail and are reported as skipped),
 * writes build/conformance/java.json (directory: system property or env POLYFFI_CONFORMANCE_OUT)
 * and ends with the leak check on testing.live_objects().
 */
class ConformanceTest {
  static final ObjectMapper JSON =
      new ObjectMapper().enable(DeserializationFeature.USE_BIG_INTEGER_FOR_INTS);
  static final Path CONFORMANCE = TestEnv.repoRoot().resolve("tests/conformance");
  static final Map<String, String> RESULTS = new LinkedHashMap<>();
  static List<JsonNode> cases;
  static Map<String, String> unsupported;
  static long liveAtStart;

  @BeforeAll
  static void setUp() throws IOException {
    TestEnv.loadFixtures();
    cases = new ArrayList<>();
    List<Path> files = new ArrayList<>();
    try (DirectoryStream<Path> ds =
        Files.newDirectoryStream(CONFORMANCE.resolve("cases"), "*.json")) {
      ds.forEach(files::add);
    }
    files.sort(null);
    for (Path p : files) JSON.readTree(p.toFile()).get("cases").forEach(cases::add);
    unsupported = new LinkedHashMap<>();
    Path caps = CONFORMANCE.resolve("capabilities/java.json");
    if (Files.exists(caps)) {
      JSON.readTree(caps.toFile())
          .get("unsupported")
          .fields()
          .forEachRemaining(e -> unsupported.put(e.getKey(), e.getValue().asText()));
    }
    liveAtStart = TestEnv.liveObjects();
  }

  @TestFactory
  Stream<DynamicTest> conformance() {
    String libDir = TestEnv.libDir().toString();
    return cases.stream()
        .map(
            c ->
                DynamicTest.dynamicTest(
                    c.get("id").asText(),
                    () -> {
                      String id = c.get("id").asText();
                      String failure = ConformanceRunner.runCase(c, libDir);
                      String reason = unsupported.get(id);
                      if (reason != null) {
                        if (failure == null) {
                          RESULTS.put(id, "fail");
                          fail(id + " is listed as unsupported (" + reason + ") but now passes");
                        }
                        RESULTS.put(id, "skip");
                        Assumptions.abort("unsupported: " + reason);
                      }
                      RESULTS.put(id, failure == null ? "pass" : "fail");
                      if (failure != null) fail(failure);
                    }));
  }

  @AfterAll
  static void leakCheckAndResults() throws IOException, InterruptedException {
    String dir = System.getProperty("polyffi.conformance.out");
    if (dir == null || dir.isEmpty()) dir = System.getenv("POLYFFI_CONFORMANCE_OUT");
    Path out =
        dir == null || dir.isEmpty()
            ? TestEnv.repoRoot().resolve("build/conformance")
            : Paths.get(dir);
    Files.createDirectories(out);
    ObjectNode o = JSON.createObjectNode();
    for (JsonNode c : cases)
      o.put(c.get("id").asText(), RESULTS.getOrDefault(c.get("id").asText(), "fail"));
    Files.writeString(
        out.resolve("java.json"),
        JSON.writerWithDefaultPrettyPrinter().writeValueAsString(o) + "\n");
    try (Function join = Function.getGlobal("testing.join_release_threads")) {
      join.call();
    }
    long live = TestEnv.liveObjects();
    for (int i = 0; i < 50 && live != liveAtStart; i++) {
      System.gc();
      Thread.sleep(20);
      live = TestEnv.liveObjects();
    }
    assertEquals(liveAtStart, live, "testing.live_objects() after the suite");
  }
}
