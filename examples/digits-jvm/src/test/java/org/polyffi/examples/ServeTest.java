package org.polyffi.examples;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.polyffi.examples.serve.ServedModel;

/**
 * Starts the Open Inference Protocol server on 127.0.0.1 (a free port) over a folder holding a TVM
 * 0.18 graph export, TVM 0.27 relax executables and the digits model's three artifacts, and drives
 * it over HTTP: metadata, inference checked against the outputs TVM computed for the fixtures, the
 * digits predictions of train.py, typed 4xx errors, and many clients at once.
 */
class ServeTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final Path ROOT = Paths.get(System.getProperty("polyffi.root", "../.."));
  static final Path TVM018 = ROOT.resolve("tests/tvm_models/tvm018");
  static final Path RELAX = ROOT.resolve("tests/tvm_models/tvm027/relax");
  static final Path DIGITS = ROOT.resolve("examples/digits/model");

  @TempDir static Path dir;
  static Map<String, ServedModel> models;
  static Serve serve;
  static HttpClient http;

  @BeforeAll
  static void start() throws Exception {
    Files.createSymbolicLink(
        dir.resolve("conv_b1.so"), TVM018.resolve("conv_b1/factory.so").toAbsolutePath());
    Files.createSymbolicLink(
        dir.resolve("multi_io_b1.so"), TVM018.resolve("multi_io_b1/factory.so").toAbsolutePath());
    for (String m : new String[] {"dyn_batch", "two_outputs", "mlp_params", "digits"}) {
      Files.createSymbolicLink(dir.resolve(m + ".so"), RELAX.resolve(m + ".so").toAbsolutePath());
    }
    Path b1 = Files.createDirectory(dir.resolve("digits_b1"));
    Files.createSymbolicLink(
        b1.resolve("libdigits_model.so"),
        Paths.get(System.getProperty("digits.model.lib", "../../build/lib/libdigits_model.so"))
            .toAbsolutePath());
    Files.createSymbolicLink(
        b1.resolve("graph.json"), DIGITS.resolve("graph_b1.json").toAbsolutePath());
    Files.createSymbolicLink(
        b1.resolve("params.bin"), DIGITS.resolve("params.bin").toAbsolutePath());
    // not a model: two kernel libraries in one folder
    Path two = Files.createDirectory(dir.resolve("conv_b16"));
    for (String f : new String[] {"factory.so", "kernels.so", "graph.json", "params.bin"}) {
      Files.createSymbolicLink(two.resolve(f), TVM018.resolve("conv_b16/" + f).toAbsolutePath());
    }
    Files.writeString(dir.resolve("notes.txt"), "not a model");
    Files.writeString(dir.resolve("broken.so"), "not a library either");
    models = Serve.loadDir(dir);
    serve = new Serve(models, 0, 8);
    http = HttpClient.newHttpClient();
  }

  @AfterAll
  static void stop() {
    serve.close();
    for (ServedModel m : models.values()) m.close();
  }

  static HttpResponse<String> send(String method, String path, String body) throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + serve.port() + path))
            .timeout(java.time.Duration.ofSeconds(60));
    b =
        body == null
            ? b.method(method, HttpRequest.BodyPublishers.noBody())
            : b.method(method, HttpRequest.BodyPublishers.ofString(body))
                .header("Content-Type", "application/json");
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  static JsonNode ok(HttpResponse<String> r) throws Exception {
    assertEquals(200, r.statusCode(), r.body());
    return JSON.readTree(r.body());
  }

  static String error(int status, HttpResponse<String> r) throws Exception {
    assertEquals(status, r.statusCode(), r.body());
    return JSON.readTree(r.body()).get("error").asText();
  }

  static ByteBuffer le(Path p) throws Exception {
    return ByteBuffer.wrap(Files.readAllBytes(p)).order(ByteOrder.LITTLE_ENDIAN);
  }

  static ArrayNode floats(Path p) throws Exception {
    ByteBuffer b = le(p);
    ArrayNode a = JSON.createArrayNode();
    while (b.hasRemaining()) a.add(b.getFloat());
    return a;
  }

  static ObjectNode input(String name, String datatype, long[] shape, JsonNode data) {
    ObjectNode o = JSON.createObjectNode().put("name", name).put("datatype", datatype);
    ArrayNode s = o.putArray("shape");
    for (long d : shape) s.add(d);
    o.set("data", data);
    return o;
  }

  static String request(ObjectNode... inputs) throws Exception {
    ObjectNode r = JSON.createObjectNode();
    ArrayNode in = r.putArray("inputs");
    for (ObjectNode i : inputs) in.add(i);
    return JSON.writeValueAsString(r);
  }

  static void assertClose(JsonNode want, JsonNode got, double tol) {
    assertEquals(want.size(), got.size());
    for (int i = 0; i < want.size(); i++) {
      assertEquals(want.get(i).asDouble(), got.get(i).asDouble(), tol, "element " + i);
    }
  }

  @Test
  void healthAndMetadata() throws Exception {
    assertEquals(200, send("GET", "/v2/health/live", null).statusCode());
    assertEquals(200, send("GET", "/v2/health/ready", null).statusCode());
    assertEquals(
        List.of(
            "conv_b1",
            "digits",
            "digits_b1",
            "dyn_batch",
            "mlp_params",
            "multi_io_b1",
            "two_outputs"),
        new ArrayList<>(models.keySet()));
    JsonNode conv = ok(send("GET", "/v2/models/conv_b1", null));
    assertEquals("conv_b1", conv.get("name").asText());
    assertEquals(
        "[{\"name\":\"data\",\"datatype\":\"FP32\",\"shape\":[1,3,16,16]}]",
        conv.get("inputs").toString());
    assertEquals(
        "[{\"name\":\"output_0\",\"datatype\":\"FP32\",\"shape\":[1,10]}]",
        conv.get("outputs").toString());
    JsonNode multi = ok(send("GET", "/v2/models/multi_io_b1", null));
    assertEquals(
        "[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,8]},"
            + "{\"name\":\"idx\",\"datatype\":\"INT32\",\"shape\":[1,8]},"
            + "{\"name\":\"z\",\"datatype\":\"FP64\",\"shape\":[1,4]}]",
        multi.get("inputs").toString());
    assertEquals("INT32", multi.get("outputs").get(1).get("datatype").asText());
    JsonNode dyn = ok(send("GET", "/v2/models/dyn_batch", null));
    assertEquals(
        "[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[-1,16]}]", dyn.get("inputs").toString());
    assertEquals(
        "[{\"name\":\"output_0\",\"datatype\":\"FP32\",\"shape\":[-1,10]}]",
        dyn.get("outputs").toString());
    JsonNode mlp = ok(send("GET", "/v2/models/mlp_params/versions/1", null));
    assertEquals(5, mlp.get("inputs").size());
    assertEquals("fc1.weight", mlp.get("inputs").get(1).get("name").asText());
    assertEquals(
        "[{\"name\":\"output_0\",\"datatype\":\"FP32\",\"shape\":[1,8]},"
            + "{\"name\":\"output_1\",\"datatype\":\"FP32\",\"shape\":[1]}]",
        ok(send("GET", "/v2/models/two_outputs", null)).get("outputs").toString());
    assertEquals(
        "[{\"name\":\"data\",\"datatype\":\"FP32\",\"shape\":[1,64]}]",
        ok(send("GET", "/v2/models/digits_b1", null)).get("inputs").toString());
    assertEquals(
        "[{\"name\":\"data\",\"datatype\":\"FP32\",\"shape\":[-1,64]}]",
        ok(send("GET", "/v2/models/digits", null)).get("inputs").toString());
    assertTrue(ok(send("GET", "/v2/models/digits/ready", null)).get("ready").asBoolean());
    assertEquals(404, send("GET", "/v2/models/conv_b16", null).statusCode());
    assertEquals(404, send("GET", "/v2/models/broken", null).statusCode());
  }

  @Test
  void inferMatchesWhatTvmComputed() throws Exception {
    JsonNode r =
        ok(
            send(
                "POST",
                "/v2/models/conv_b1/infer",
                request(
                    input(
                        "data",
                        "FP32",
                        new long[] {1, 3, 16, 16},
                        floats(TVM018.resolve("conv_b1/input_data.bin"))))));
    assertEquals("[1,10]", r.get("outputs").get(0).get("shape").toString());
    assertClose(
        floats(TVM018.resolve("conv_b1/output_0.bin")), r.get("outputs").get(0).get("data"), 1e-5);

    // a dynamic batch of 7
    r =
        ok(
            send(
                "POST",
                "/v2/models/dyn_batch/infer",
                request(
                    input(
                        "x",
                        "FP32",
                        new long[] {7, 16},
                        floats(RELAX.resolve("dyn_batch/b7_input_x.bin"))))));
    assertEquals("[7,10]", r.get("outputs").get(0).get("shape").toString());
    assertClose(
        floats(RELAX.resolve("dyn_batch/b7_output_0.bin")),
        r.get("outputs").get(0).get("data"),
        1e-5);

    // int32 and float64 tensors, by JSON
    ArrayNode idx = JSON.createArrayNode();
    ByteBuffer ib = le(TVM018.resolve("multi_io_b1/input_idx.bin"));
    while (ib.hasRemaining()) idx.add(ib.getInt());
    ArrayNode z = JSON.createArrayNode();
    ByteBuffer zb = le(TVM018.resolve("multi_io_b1/input_z.bin"));
    while (zb.hasRemaining()) z.add(zb.getDouble());
    r =
        ok(
            send(
                "POST",
                "/v2/models/multi_io_b1/infer",
                request(
                    input("z", "FP64", new long[] {1, 4}, z),
                    input("idx", "INT32", new long[] {1, 8}, idx),
                    input(
                        "x",
                        "FP32",
                        new long[] {1, 8},
                        floats(TVM018.resolve("multi_io_b1/input_x.bin"))))));
    assertEquals(
        le(TVM018.resolve("multi_io_b1/output_1.bin")).getInt(),
        r.get("outputs").get(1).get("data").get(0).asInt());
    ByteBuffer o2 = le(TVM018.resolve("multi_io_b1/output_2.bin"));
    for (int i = 0; i < 4; i++) {
      assertEquals(o2.getDouble(), r.get("outputs").get(2).get("data").get(i).asDouble(), 1e-12);
    }

    // one output of two, the request id echoed
    ObjectNode two =
        (ObjectNode)
            JSON.readTree(
                request(
                    input(
                        "a",
                        "FP32",
                        new long[] {1, 8},
                        floats(RELAX.resolve("two_outputs/b1_input_a.bin"))),
                    input(
                        "b",
                        "FP32",
                        new long[] {1, 8},
                        floats(RELAX.resolve("two_outputs/b1_input_b.bin")))));
    two.put("id", "req-42");
    two.putArray("outputs").addObject().put("name", "output_1");
    r = ok(send("POST", "/v2/models/two_outputs/infer", JSON.writeValueAsString(two)));
    assertEquals("req-42", r.get("id").asText());
    assertEquals(1, r.get("outputs").size());
    assertEquals("output_1", r.get("outputs").get(0).get("name").asText());
    assertClose(
        floats(RELAX.resolve("two_outputs/b1_output_1.bin")),
        r.get("outputs").get(0).get("data"),
        1e-4);
  }

  @Test
  void binaryTensors() throws Exception {
    byte[] data = Files.readAllBytes(TVM018.resolve("conv_b1/input_data.bin"));
    String url = "http://127.0.0.1:" + serve.port() + "/v2/models/conv_b1/infer";
    for (String extra :
        new String[] {
          ",\"outputs\":[{\"name\":\"output_0\",\"parameters\":{\"binary_data\":true}}]",
          ",\"parameters\":{\"binary_data_output\":true}",
          "" // JSON out, after binary ones: nothing of theirs carries over
        }) {
      String head =
          "{\"inputs\":[{\"name\":\"data\",\"datatype\":\"FP32\",\"shape\":[1,3,16,16],"
              + "\"parameters\":{\"binary_data_size\":"
              + data.length
              + "}}]"
              + extra
              + "}";
      ByteArrayOutputStream body = new ByteArrayOutputStream();
      byte[] h = head.getBytes(StandardCharsets.UTF_8);
      body.write(h);
      body.write(data);
      HttpRequest req =
          HttpRequest.newBuilder(URI.create(url))
              .header("Inference-Header-Content-Length", Integer.toString(h.length))
              .POST(HttpRequest.BodyPublishers.ofByteArray(body.toByteArray()))
              .build();
      HttpResponse<byte[]> r = http.send(req, HttpResponse.BodyHandlers.ofByteArray());
      assertEquals(200, r.statusCode(), extra);
      JsonNode want = floats(TVM018.resolve("conv_b1/output_0.bin"));
      if (extra.isEmpty()) {
        assertClose(want, JSON.readTree(r.body()).get("outputs").get(0).get("data"), 1e-5);
        continue;
      }
      int n = Integer.parseInt(r.headers().firstValue("Inference-Header-Content-Length").get());
      JsonNode json = JSON.readTree(r.body(), 0, n);
      assertEquals(
          40, json.get("outputs").get(0).get("parameters").get("binary_data_size").asInt());
      assertNull(json.get("outputs").get(0).get("data"));
      ByteBuffer out = ByteBuffer.wrap(r.body(), n, 40).order(ByteOrder.LITTLE_ENDIAN);
      for (int i = 0; i < 10; i++) assertEquals(want.get(i).asDouble(), out.getFloat(), 1e-5);
    }
    // bytes no input claims
    String head =
        "{\"inputs\":[{\"name\":\"data\",\"datatype\":\"FP32\",\"shape\":[1,3,16,16],"
            + "\"parameters\":{\"binary_data_size\":"
            + data.length
            + "}}]}";
    byte[] h = head.getBytes(StandardCharsets.UTF_8);
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.write(h);
    body.write(data);
    body.write(new byte[4]);
    HttpRequest req =
        HttpRequest.newBuilder(URI.create(url))
            .header("Inference-Header-Content-Length", Integer.toString(h.length))
            .POST(HttpRequest.BodyPublishers.ofByteArray(body.toByteArray()))
            .build();
    HttpResponse<String> r = http.send(req, HttpResponse.BodyHandlers.ofString());
    assertEquals("4 bytes of binary data that no input claims", error(400, r));
  }

  @Test
  void digitsAgreeWithTrainPy() throws Exception {
    JsonNode exp = JSON.readTree(DIGITS.resolve("expected.json").toFile());
    int n = exp.get("num_samples").asInt();
    JsonNode r =
        ok(
            send(
                "POST",
                "/v2/models/digits/infer",
                request(
                    input(
                        "data",
                        "FP32",
                        new long[] {n, 64},
                        floats(DIGITS.resolve("test_x.bin"))))));
    JsonNode probs = r.get("outputs").get(0).get("data");
    assertEquals(n * 10, probs.size());
    for (int i = 0; i < n; i++) {
      int best = 0;
      for (int j = 1; j < 10; j++) {
        if (probs.get(10 * i + j).asDouble() > probs.get(10 * i + best).asDouble()) best = j;
      }
      assertEquals(exp.get("predictions").get(i).asInt(), best, "sample " + i);
    }
  }

  @Test
  void badRequestsGetTypedErrorsAndTheServerGoesOn() throws Exception {
    String conv = "/v2/models/conv_b1/infer";
    assertTrue(
        error(400, send("POST", conv, "{\"inputs\": [")).startsWith("malformed inference request"));
    assertTrue(error(400, send("POST", conv, "{}")).contains("\"inputs\""));
    // A shape the model does not take: the binding's typed error.
    ArrayNode half = JSON.createArrayNode();
    for (int i = 0; i < 384; i++) half.add(0.5);
    String e =
        error(
            400,
            send("POST", conv, request(input("data", "FP32", new long[] {1, 3, 16, 8}, half))));
    assertTrue(e.startsWith("ValueError: ") && e.contains("expects [1, 3, 16, 16]"), e);
    ArrayNode nine = JSON.createArrayNode();
    for (int i = 0; i < 9; i++) nine.add(0.5);
    e =
        error(
            400,
            send(
                "POST",
                "/v2/models/two_outputs/infer",
                request(
                    input("a", "FP32", new long[] {1, 9}, nine),
                    input("b", "FP32", new long[] {1, 9}, nine))));
    assertTrue(e.split(":")[0].endsWith("Error") && e.contains("match_cast"), e);
    assertEquals(
        "input 'data' has shape [1,-3]: not a list of sizes >= 0",
        error(
            400,
            send(
                "POST",
                conv,
                request(input("data", "FP32", new long[] {1, -3}, JSON.createArrayNode())))));
    assertEquals(
        "input 'data' has datatype INT64, the model takes FP32",
        error(
            400,
            send(
                "POST",
                conv,
                request(
                    input("data", "INT64", new long[] {1, 3, 16, 16}, JSON.createArrayNode())))));
    assertEquals(
        "input 'data' has 2 elements of data, its shape [1, 3, 16, 16] holds 768",
        error(
            400,
            send(
                "POST",
                conv,
                request(
                    input(
                        "data",
                        "FP32",
                        new long[] {1, 3, 16, 16},
                        JSON.createArrayNode().add(1).add(2))))));
    assertEquals(
        "input 'data': data[1] = \"x\" is not a valid FP32 value",
        error(
            400,
            send(
                "POST",
                conv,
                request(
                    input(
                        "data",
                        "FP32",
                        new long[] {1, 3, 16, 16},
                        JSON.createArrayNode().add(1).add("x"))))));
    assertEquals(
        "model 'conv_b1' has no input 'dta' (inputs: data)",
        error(
            400,
            send(
                "POST",
                conv,
                request(input("dta", "FP32", new long[] {1, 3, 16, 16}, JSON.createArrayNode())))));
    assertEquals(
        "input 'b' is missing",
        error(
            400,
            send(
                "POST",
                "/v2/models/two_outputs/infer",
                request(
                    input(
                        "a",
                        "FP32",
                        new long[] {1, 8},
                        floats(RELAX.resolve("two_outputs/b1_input_a.bin")))))));
    assertEquals(
        "input 'data' has shape [4294967296,4294967296]: too many elements",
        error(
            400,
            send(
                "POST",
                conv,
                request(
                    input(
                        "data",
                        "FP32",
                        new long[] {1L << 32, 1L << 32},
                        JSON.createArrayNode())))));
    assertEquals(
        "input 'data': data[0] = 1.0E39 is out of the range of FP32",
        error(
            400,
            send(
                "POST",
                conv,
                request(
                    input("data", "FP32", new long[] {1, 1}, JSON.createArrayNode().add(1e39))))));
    assertEquals("unknown model 'nope'", error(404, send("POST", "/v2/models/nope/infer", "{}")));
    assertEquals("unknown model 'nope'", error(404, send("GET", "/v2/models/nope", null)));
    assertEquals(404, send("GET", "/v2/models/conv_b1/versions/2", null).statusCode());
    assertEquals(404, send("GET", "/nothing", null).statusCode());
    // still serving
    ok(send("GET", "/v2/health/ready", null));
    healthAndMetadata();
  }

  @Test
  void manyClientsAtOnce() throws Exception {
    ByteBuffer xb = le(DIGITS.resolve("test_x.bin"));
    JsonNode exp = JSON.readTree(DIGITS.resolve("expected.json").toFile());
    ExecutorService clients = Executors.newFixedThreadPool(8);
    try {
      List<Future<Integer>> done = new ArrayList<>();
      for (int c = 0; c < 8; c++) {
        final int start = c * 40;
        done.add(
            clients.submit(
                () -> {
                  int ok = 0;
                  for (int k = 0; k < 10; k++) {
                    int from = start + k;
                    ArrayNode row = JSON.createArrayNode();
                    for (int j = 0; j < 64; j++) row.add(xb.getFloat(4 * (64 * from + j)));
                    JsonNode p =
                        ok(send(
                                "POST",
                                "/v2/models/digits_b1/infer",
                                request(input("data", "FP32", new long[] {1, 64}, row))))
                            .get("outputs")
                            .get(0)
                            .get("data");
                    int best = 0;
                    for (int j = 1; j < 10; j++) {
                      if (p.get(j).asDouble() > p.get(best).asDouble()) best = j;
                    }
                    ok += best == exp.get("predictions").get(from).asInt() ? 1 : 0;
                  }
                  return ok;
                }));
      }
      for (Future<Integer> f : done) assertEquals(10, f.get(120, TimeUnit.SECONDS));
    } finally {
      clients.shutdownNow();
    }
  }
}
