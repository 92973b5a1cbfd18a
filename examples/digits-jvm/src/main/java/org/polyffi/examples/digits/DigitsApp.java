package org.polyffi.examples.digits;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.polyffi.Library;

/**
 * The digits classifier from the JVM. Two modes:
 *
 * <pre>
 *   serve: POST /predict {"inputs": [[64 floats], ...]} -> {"predictions": [...], "probabilities": [[10 floats], ...]}
 *          GET /health -> {"status": "ok", ...}
 *   batch: classify examples/digits/model/test_x.bin, print accuracy, agreement and latency
 * </pre>
 *
 * Options: --model-dir DIR --lib PATH --host H --port N (0: any free port) --threads N --batch
 * --tvm-lib PATH (instead of --lib and the model's graph/params: the batch-1 model as Apache TVM
 * exported it, e.g. tests/tvm_models/tvm018/digits_b1/factory.so)
 */
public final class DigitsApp implements AutoCloseable {
  static final int MAX_ROWS = 1024;
  static final ObjectMapper JSON = new ObjectMapper();

  private final DigitsModel model;
  private final HttpServer server;
  private final ExecutorService executor;

  public DigitsApp(DigitsModel model, String host, int port, int threads) throws IOException {
    // The JDK server writes headers and body separately: without TCP_NODELAY every keep-alive
    // response waits for the client's delayed ACK (~40 ms).
    if (System.getProperty("sun.net.httpserver.nodelay") == null) {
      System.setProperty("sun.net.httpserver.nodelay", "true");
    }
    this.model = model;
    server = HttpServer.create(new InetSocketAddress(host, port), 128);
    executor = Executors.newFixedThreadPool(threads);
    server.setExecutor(executor);
    server.createContext("/predict", this::predict);
    server.createContext("/health", this::health);
    server.createContext(
        "/", ex -> reply(ex, 404, error("no such path: " + ex.getRequestURI().getPath())));
    server.start();
  }

  public int port() {
    return server.getAddress().getPort();
  }

  static ObjectNode error(String message) {
    return JSON.createObjectNode().put("error", message);
  }

  static void reply(HttpExchange ex, int status, JsonNode body) throws IOException {
    byte[] bytes = JSON.writeValueAsBytes(body);
    ex.getResponseHeaders().set("Content-Type", "application/json");
    ex.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = ex.getResponseBody()) {
      out.write(bytes);
    }
  }

  private void health(HttpExchange ex) throws IOException {
    if (!ex.getRequestMethod().equals("GET")) {
      reply(ex, 405, error("use GET"));
      return;
    }
    reply(
        ex,
        200,
        JSON.createObjectNode()
            .put("status", "ok")
            .put("model", "digits")
            .put("polyffi", Library.runtimeVersion()));
  }

  /** Rows of the request, or null after replying 4xx. */
  static float[][] parseRows(HttpExchange ex) throws IOException {
    JsonNode body;
    try (InputStream in = ex.getRequestBody()) {
      body = JSON.readTree(in);
    } catch (IOException e) {
      reply(ex, 400, error("body is not JSON: " + e.getMessage().split("\n", 2)[0]));
      return null;
    }
    JsonNode inputs = body == null ? null : body.get("inputs");
    if (inputs == null || !inputs.isArray()) {
      reply(ex, 400, error("expected {\"inputs\": [[64 numbers], ...]}"));
      return null;
    }
    if (inputs.size() == 0 || inputs.size() > MAX_ROWS) {
      reply(
          ex,
          inputs.size() == 0 ? 400 : 413,
          error("inputs must hold 1 to " + MAX_ROWS + " rows, got " + inputs.size()));
      return null;
    }
    float[][] rows = new float[inputs.size()][DigitsModel.FEATURES];
    for (int i = 0; i < rows.length; i++) {
      JsonNode row = inputs.get(i);
      if (!row.isArray() || row.size() != DigitsModel.FEATURES) {
        reply(
            ex,
            400,
            error("row " + i + " must be an array of " + DigitsModel.FEATURES + " numbers"));
        return null;
      }
      for (int j = 0; j < DigitsModel.FEATURES; j++) {
        JsonNode v = row.get(j);
        if (!v.isNumber() || !Double.isFinite(v.asDouble())) {
          reply(ex, 400, error("row " + i + ", column " + j + " is not a finite number"));
          return null;
        }
        rows[i][j] = (float) v.asDouble();
      }
    }
    return rows;
  }

  private void predict(HttpExchange ex) throws IOException {
    try {
      if (!ex.getRequestMethod().equals("POST")) {
        reply(ex, 405, error("use POST"));
        return;
      }
      float[][] rows = parseRows(ex);
      if (rows == null) return;
      float[][] probs = model.predict(rows);
      ObjectNode out = JSON.createObjectNode();
      ArrayNode preds = out.putArray("predictions");
      ArrayNode ps = out.putArray("probabilities");
      for (float[] p : probs) {
        preds.add(DigitsModel.argmax(p));
        ArrayNode row = ps.addArray();
        for (float v : p) row.add(v);
      }
      reply(ex, 200, out);
    } catch (RuntimeException e) {
      reply(ex, 500, error(e.toString()));
    }
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }

  // ---- command line ---------------------------------------------------------------------------

  static String opt(String[] args, String name, String dflt) {
    for (int i = 0; i + 1 < args.length; i++) if (args[i].equals(name)) return args[i + 1];
    return dflt;
  }

  static void batch(DigitsModel model, Path modelDir) throws Exception {
    byte[] x = Files.readAllBytes(modelDir.resolve("test_x.bin"));
    byte[] y = Files.readAllBytes(modelDir.resolve("test_y.bin"));
    JsonNode expected = JSON.readTree(modelDir.resolve("expected.json").toFile());
    int n = y.length / 4;
    ByteBuffer xb = ByteBuffer.wrap(x).order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer yb = ByteBuffer.wrap(y).order(ByteOrder.LITTLE_ENDIAN);
    float[][] rows = new float[n][DigitsModel.FEATURES];
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < DigitsModel.FEATURES; j++)
        rows[i][j] = xb.getFloat(4 * (DigitsModel.FEATURES * i + j));
    }
    int correct = 0;
    int agree = 0;
    long[] ns = new long[5 * n];
    float[][] one = new float[1][];
    for (int pass = 0; pass < 5; pass++) {
      for (int i = 0; i < n; i++) {
        one[0] = rows[i];
        long t0 = System.nanoTime();
        float[][] p = model.predict(one);
        ns[pass * n + i] = System.nanoTime() - t0;
        if (pass == 0) {
          int pred = DigitsModel.argmax(p[0]);
          correct += pred == yb.getInt(4 * i) ? 1 : 0;
          agree += pred == expected.get("predictions").get(i).asInt() ? 1 : 0;
        }
      }
    }
    Arrays.sort(ns);
    System.out.printf("samples:                 %d%n", n);
    System.out.printf(
        "accuracy:                %.2f %% (%d / %d)%n", 100.0 * correct / n, correct, n);
    System.out.printf("agreement with train.py: %d / %d%n", agree, n);
    System.out.printf(
        "batch-1 latency:         median %.2f us, p90 %.2f us (JVM, GraphModule.infer, 5 x"
            + " %d)%n",
        ns[ns.length / 2] / 1e3, ns[ns.length * 9 / 10] / 1e3, n);
    if (agree != n) throw new IllegalStateException("predictions differ from expected.json");
  }

  public static void main(String[] args) throws Exception {
    Path modelDir = Paths.get(opt(args, "--model-dir", "examples/digits/model"));
    Path lib = Paths.get(opt(args, "--lib", "build/lib/libdigits_model.so"));
    int threads = Integer.parseInt(opt(args, "--threads", "8"));
    String tvmLib = opt(args, "--tvm-lib", null);
    DigitsModel model =
        tvmLib != null
            ? DigitsModel.fromTvmExport(Paths.get(tvmLib))
            : new DigitsModel(modelDir, lib);
    if (Arrays.asList(args).contains("--batch")) {
      System.out.printf(
          "model:                   %s%n",
          tvmLib != null
              ? "exported by Apache TVM, " + tvmLib + " (GraphModule.fromFactory)"
              : "graph executor over " + lib);
      try (model) {
        batch(model, modelDir);
      }
      return;
    }
    DigitsApp app =
        new DigitsApp(
            model,
            opt(args, "--host", "127.0.0.1"),
            Integer.parseInt(opt(args, "--port", "8080")),
            threads);
    System.out.println(
        "digits-jvm listening on http://"
            + opt(args, "--host", "127.0.0.1")
            + ":"
            + app.port()
            + " (POST /predict, GET /health), "
            + threads
            + " threads");
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  app.close();
                  model.close();
                }));
  }
}
