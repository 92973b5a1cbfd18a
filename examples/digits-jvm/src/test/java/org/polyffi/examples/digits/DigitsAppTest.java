package org.polyffi.examples.digits;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Starts the server on 127.0.0.1 with a free port and sends it real HTTP requests. */
class DigitsAppTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final Path MODEL = Paths.get(System.getProperty("digits.model.dir", "../digits/model"));
  static final Path LIB =
      Paths.get(System.getProperty("digits.model.lib", "../../build/lib/libdigits_model.so"));
  static DigitsModel model;
  static DigitsApp app;
  static HttpClient http;
  static float[][] rows;
  static int[] expected;

  @BeforeAll
  static void start() throws Exception {
    model = new DigitsModel(MODEL, LIB);
    app = new DigitsApp(model, "127.0.0.1", 0, 8);
    http = HttpClient.newHttpClient();
    byte[] x = Files.readAllBytes(MODEL.resolve("test_x.bin"));
    ByteBuffer xb = ByteBuffer.wrap(x).order(ByteOrder.LITTLE_ENDIAN);
    JsonNode exp = JSON.readTree(MODEL.resolve("expected.json").toFile());
    int n = exp.get("num_samples").asInt();
    rows = new float[n][64];
    expected = new int[n];
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < 64; j++) rows[i][j] = xb.getFloat(4 * (64 * i + j));
      expected[i] = exp.get("predictions").get(i).asInt();
    }
  }

  @AfterAll
  static void stop() {
    app.close();
    model.close();
  }

  static HttpResponse<String> send(String method, String path, String body) throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + app.port() + path))
            .timeout(java.time.Duration.ofSeconds(30));
    b =
        body == null
            ? b.method(method, HttpRequest.BodyPublishers.noBody())
            : b.method(method, HttpRequest.BodyPublishers.ofString(body))
                .header("Content-Type", "application/json");
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  static String batch(int from, int to) throws Exception {
    float[][] part = new float[to - from][];
    System.arraycopy(rows, from, part, 0, to - from);
    return JSON.writeValueAsString(java.util.Map.of("inputs", part));
  }

  @Test
  void health() throws Exception {
    HttpResponse<String> r = send("GET", "/health", null);
    assertEquals(200, r.statusCode());
    JsonNode body = JSON.readTree(r.body());
    assertEquals("ok", body.get("status").asText());
    assertEquals("0.1.0", body.get("polyffi").asText());
  }

  @Test
  void predictionsMatchTheCDemo() throws Exception {
    int n = rows.length;
    for (int from = 0; from < n; from += 100) {
      int to = Math.min(n, from + 100);
      HttpResponse<String> r = send("POST", "/predict", batch(from, to));
      assertEquals(200, r.statusCode(), r.body());
      JsonNode body = JSON.readTree(r.body());
      assertEquals(to - from, body.get("predictions").size());
      for (int i = from; i < to; i++) {
        assertEquals(expected[i], body.get("predictions").get(i - from).asInt(), "sample " + i);
        JsonNode p = body.get("probabilities").get(i - from);
        assertEquals(10, p.size());
        double s = 0;
        for (JsonNode v : p) s += v.asDouble();
        assertEquals(1.0, s, 1e-4);
      }
    }
  }

  @Test
  void manyClientsAtOnce() throws Exception {
    ExecutorService clients = Executors.newFixedThreadPool(8);
    try {
      List<Future<Integer>> done = new ArrayList<>();
      for (int c = 0; c < 8; c++) {
        final int start = c * 40;
        done.add(
            clients.submit(
                () -> {
                  int ok = 0;
                  for (int k = 0; k < 5; k++) {
                    int from = start + k * 8;
                    JsonNode body =
                        JSON.readTree(send("POST", "/predict", batch(from, from + 8)).body());
                    for (int i = 0; i < 8; i++)
                      ok += body.get("predictions").get(i).asInt() == expected[from + i] ? 1 : 0;
                  }
                  return ok;
                }));
      }
      for (Future<Integer> f : done) assertEquals(40, f.get(60, TimeUnit.SECONDS));
    } finally {
      clients.shutdownNow();
    }
  }

  @Test
  void badInputGets4xx() throws Exception {
    assertEquals(400, send("POST", "/predict", "not json").statusCode());
    assertEquals(400, send("POST", "/predict", "{}").statusCode());
    assertEquals(400, send("POST", "/predict", "{\"inputs\": []}").statusCode());
    assertEquals(400, send("POST", "/predict", "{\"inputs\": [[1, 2, 3]]}").statusCode());
    HttpResponse<String> strRow =
        send("POST", "/predict", "{\"inputs\": [[" + "\"a\",".repeat(63) + "\"a\"]]}");
    assertEquals(400, strRow.statusCode());
    assertTrue(
        JSON.readTree(strRow.body()).get("error").asText().contains("column 0"), strRow.body());
    assertEquals(405, send("GET", "/predict", null).statusCode());
    assertEquals(404, send("GET", "/nothing", null).statusCode());
    // the server still answers after all that
    assertEquals(200, send("POST", "/predict", batch(0, 1)).statusCode());
  }
}
