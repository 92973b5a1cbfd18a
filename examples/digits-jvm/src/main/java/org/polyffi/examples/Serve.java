package org.polyffi.examples;

import com.fasterxml.jackson.core.JsonProcessingException;
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
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.Stream;
import org.polyffi.DataType;
import org.polyffi.FFIException;
import org.polyffi.LanguageModel;
import org.polyffi.NDArray;
import org.polyffi.examples.serve.Completions;
import org.polyffi.examples.serve.ServedModel;
import org.polyffi.examples.serve.Tensors;

/**
 * An Open Inference Protocol (KServe v2) REST server over polyffi, serving every model of a folder
 * under its file's stem: {@code java org.polyffi.examples.Serve MODEL_DIR PORT} (port 0: a free
 * one). Prints {@code listening on 127.0.0.1:PORT} once ready and serves until killed.
 *
 * <pre>
 *   GET  /v2/health/live, /v2/health/ready      200 while serving
 *   GET  /v2                                     server metadata
 *   GET  /v2/models/NAME                         inputs and outputs: name, datatype, shape (-1: dynamic)
 *   GET  /v2/models/NAME/ready                   200 for a loaded model
 *   POST /v2/models/NAME/infer                   JSON tensors in and out (Triton's binary tensors in too)
 * </pre>
 *
 * (and /v2/models/NAME/versions/1/...). Errors are {"error": "..."}: 404 for an unknown model or
 * path, 400 for a bad request, with the binding's typed error text ({@code ValueError: ...}) when
 * the model refused the inputs. Request threads share each model (its runner's calls are stateless
 * and thread-safe).
 *
 * <p>Inference runs on the core's async pool: a request thread parses the request and submits the
 * model call ({@link ServedModel#inferAsync}), then is free; the response is written when the
 * call's future completes, on a request thread again. With {@code POLYFFI_SERVE_SYNC=1} the request
 * thread runs the model itself and waits for it (for comparison: bench/async/serve.sh).
 *
 * <p>Subdirectories holding lm-config.json are language models, served under OpenAI's completions
 * API ({@code GET /v1/models}, {@code POST /v1/completions}, streaming too): {@link Completions}.
 */
public final class Serve implements AutoCloseable {
  static final ObjectMapper JSON = new ObjectMapper();

  /** POLYFFI_SERVE_SYNC=1: models run on the request threads instead of the core's async pool. */
  static final boolean SYNC_INFER = "1".equals(System.getenv("POLYFFI_SERVE_SYNC"));

  /** A response: its JSON and, with Triton's binary tensor extension, the outputs' bytes. */
  record Reply(JsonNode json, byte[] blob) {
    Reply(JsonNode json) {
      this(json, null);
    }
  }

  /** Largest request body accepted. */
  static final int MAX_BODY = 256 << 20;

  /** A request that failed: its status and message. */
  static final class ApiError extends Exception {
    final int status;

    ApiError(int status, String message) {
      super(message, null, false, false);
      this.status = status;
    }
  }

  private final Map<String, ServedModel> models;
  private final Completions completions;
  private final HttpServer server;
  private final ExecutorService executor;

  public Serve(Map<String, ServedModel> models, int port, int threads) throws IOException {
    this(models, Map.of(), port, threads);
  }

  /** Also serves the language models lms (owned by the server from now on) under /v1. */
  public Serve(
      Map<String, ServedModel> models, Map<String, LanguageModel> lms, int port, int threads)
      throws IOException {
    // The JDK server writes headers and body separately: without TCP_NODELAY every keep-alive
    // response waits for the client's delayed ACK (~40 ms).
    if (System.getProperty("sun.net.httpserver.nodelay") == null) {
      System.setProperty("sun.net.httpserver.nodelay", "true");
    }
    this.models = models;
    this.completions = new Completions(lms);
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 256);
    executor = Executors.newFixedThreadPool(threads);
    server.setExecutor(executor);
    server.createContext("/", this::handle);
    server.start();
  }

  public int port() {
    return server.getAddress().getPort();
  }

  /** Every model of dir, by name; what cannot be served is reported on stderr and skipped. */
  public static Map<String, ServedModel> loadDir(Path dir) throws IOException {
    Map<String, ServedModel> models = new TreeMap<>();
    List<Path> entries;
    try (Stream<Path> s = Files.list(dir)) {
      entries = s.sorted().toList();
    }
    for (Path p : entries) {
      String file = p.getFileName().toString();
      String name;
      if (Files.isDirectory(p)) {
        if (!Files.isRegularFile(p.resolve("graph.json"))) continue;
        name = file;
      } else if (file.endsWith(".so")) {
        name = file.substring(0, file.length() - 3);
      } else {
        continue;
      }
      try {
        models.put(name, ServedModel.load(name, p));
      } catch (RuntimeException | IOException e) {
        System.err.println("polyffi-serve: skipping " + p + ": " + FFIException.textOf(e));
      }
    }
    return models;
  }

  // ---- HTTP -------------------------------------------------------------------------------------

  private static void reply(HttpExchange ex, int status, JsonNode body) throws IOException {
    byte[] bytes = JSON.writeValueAsBytes(body);
    ex.getResponseHeaders().set("Content-Type", "application/json");
    ex.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = ex.getResponseBody()) {
      out.write(bytes);
    }
  }

  private void handle(HttpExchange ex) throws IOException {
    String path = ex.getRequestURI().getPath();
    if (path.equals("/v1") || path.startsWith("/v1/")) {
      completions.handle(ex);
      return;
    }
    CompletableFuture<Reply> pending;
    try {
      pending = route(ex);
    } catch (ApiError | RuntimeException | Error e) {
      pending = CompletableFuture.failedFuture(e);
    } catch (IOException e) {
      ex.close();
      throw e;
    }
    if (pending.isDone()) {
      pending.whenComplete((r, err) -> send(ex, r, err)); // now, on this thread
    } else {
      // The model runs on the core's pool; its worker hands the response back to a request thread.
      pending.whenCompleteAsync((r, err) -> send(ex, r, err), executor);
    }
  }

  /** Writes r (or err's status and message) and ends the exchange. */
  private static void send(HttpExchange ex, Reply r, Throwable err) {
    try {
      if (err instanceof CompletionException && err.getCause() != null) err = err.getCause();
      if (err instanceof ApiError e) {
        reply(ex, e.status, JSON.createObjectNode().put("error", e.getMessage()));
      } else if (err != null) {
        reply(ex, 500, JSON.createObjectNode().put("error", FFIException.textOf(err)));
      } else if (r.blob() == null) {
        reply(ex, 200, r.json());
      } else {
        // Triton's binary tensor extension: the JSON, then the outputs' bytes.
        byte[] head = JSON.writeValueAsBytes(r.json());
        byte[] blob = r.blob();
        ex.getResponseHeaders().set("Content-Type", "application/octet-stream");
        ex.getResponseHeaders()
            .set("Inference-Header-Content-Length", Integer.toString(head.length));
        ex.sendResponseHeaders(200, head.length + (long) blob.length);
        try (OutputStream out = ex.getResponseBody()) {
          out.write(head);
          out.write(blob);
        }
      }
    } catch (IOException e) {
      // The client went away: nothing to tell it.
    } finally {
      ex.close();
    }
  }

  private static CompletableFuture<Reply> done(Reply r) {
    return CompletableFuture.completedFuture(r);
  }

  private CompletableFuture<Reply> route(HttpExchange ex) throws IOException, ApiError {
    String method = ex.getRequestMethod();
    String path = ex.getRequestURI().getPath();
    List<String> parts = new ArrayList<>(Arrays.asList(path.replaceAll("/+$", "").split("/")));
    if (!parts.isEmpty() && parts.get(0).isEmpty()) parts.remove(0);
    // v2/models/NAME/versions/V/... -> v2/models/NAME/...
    if (parts.size() >= 5 && parts.get(1).equals("models") && parts.get(3).equals("versions")) {
      if (!parts.get(4).equals("1")) {
        throw new ApiError(
            404, "unknown model version '" + parts.get(4) + "' (every model has version 1)");
      }
      parts.subList(3, 5).clear();
    }
    String route = String.join("/", parts);
    boolean get = method.equals("GET");
    if (get && (route.equals("v2/health/live") || route.equals("v2/health/ready"))) {
      return done(
          new Reply(JSON.createObjectNode().put(route.endsWith("live") ? "live" : "ready", true)));
    }
    if (get && route.equals("v2")) {
      ObjectNode m = JSON.createObjectNode().put("name", "polyffi-serve").put("version", "0.1.0");
      m.putArray("extensions").add("binary_tensor_data");
      return done(new Reply(m));
    }
    if (parts.size() >= 3 && parts.get(0).equals("v2") && parts.get(1).equals("models")) {
      ServedModel m = models.get(parts.get(2));
      if (m == null) throw new ApiError(404, "unknown model '" + parts.get(2) + "'");
      if (get && parts.size() == 3) return done(new Reply(metadata(m)));
      if (get && parts.size() == 4 && parts.get(3).equals("ready")) {
        return done(new Reply(JSON.createObjectNode().put("name", m.name).put("ready", true)));
      }
      if (method.equals("POST") && parts.size() == 4 && parts.get(3).equals("infer")) {
        return infer(m, ex);
      }
    }
    throw new ApiError(404, "no route " + method + " " + path);
  }

  private static ObjectNode spec(ServedModel.Spec s) {
    ObjectNode o = JSON.createObjectNode().put("name", s.name);
    String dt = Tensors.datatype(s.dtype);
    o.put("datatype", dt == null ? "BYTES" : dt);
    ArrayNode shape = o.putArray("shape");
    for (long d : s.shape) shape.add(d);
    return o;
  }

  static ObjectNode metadata(ServedModel m) {
    ObjectNode o = JSON.createObjectNode().put("name", m.name);
    o.putArray("versions").add("1");
    o.put("platform", m.platform);
    ArrayNode in = o.putArray("inputs");
    for (ServedModel.Spec s : m.inputs) in.add(spec(s));
    ArrayNode out = o.putArray("outputs");
    for (ServedModel.Spec s : m.outputs) out.add(spec(s));
    return o;
  }

  private static ApiError bad(String message) {
    return new ApiError(400, message);
  }

  private CompletableFuture<Reply> infer(ServedModel m, HttpExchange ex)
      throws IOException, ApiError {
    byte[] body;
    try (InputStream in = ex.getRequestBody()) {
      body = in.readNBytes(MAX_BODY + 1);
    }
    if (body.length > MAX_BODY) {
      throw new ApiError(413, "the request is larger than " + MAX_BODY + " bytes");
    }
    // Triton's binary tensor extension: the JSON first, then the tensors' bytes.
    int headLen = body.length;
    String h = ex.getRequestHeaders().getFirst("Inference-Header-Content-Length");
    if (h != null) {
      try {
        headLen = Integer.parseInt(h.trim());
      } catch (NumberFormatException e) {
        throw bad("Inference-Header-Content-Length is not a number");
      }
      if (headLen < 0 || headLen > body.length) {
        throw bad(
            "Inference-Header-Content-Length "
                + headLen
                + " does not fit the body ("
                + body.length
                + " bytes)");
      }
    }
    JsonNode request;
    try {
      request = JSON.readTree(body, 0, headLen);
    } catch (JsonProcessingException e) {
      throw bad("malformed inference request: " + e.getOriginalMessage());
    }
    if (request == null || !request.isObject()) throw bad("the request is not a JSON object");
    JsonNode inputs = request.get("inputs");
    if (inputs == null || !inputs.isArray()) throw bad("the request has no \"inputs\" array");
    // Triton's binary tensor extension: an output is sent as binary when it asks for it
    // ({"parameters": {"binary_data": true}}) or the request does ("binary_data_output").
    boolean allBinary = request.path("parameters").path("binary_data_output").asBoolean(false);
    // Outputs by name: their place in the metadata, or output_N when the metadata lists none
    // (a relax function whose outputs are unknown until it runs); null: all of them.
    List<Integer> wanted = null;
    List<Boolean> binary = new ArrayList<>();
    List<String> wantedNames = new ArrayList<>();
    JsonNode outs = request.get("outputs");
    if (outs != null && !outs.isNull()) {
      if (!outs.isArray()) throw bad("\"outputs\" is not an array");
      wanted = new ArrayList<>();
      for (JsonNode o : outs) {
        String name = o.path("name").asText();
        int i = indexOf(m.outputs, name);
        if (i < 0 && m.outputs.isEmpty() && name.matches("output_[0-9]{1,9}")) {
          i = Integer.parseInt(name.substring(7));
        }
        if (i < 0) throw bad("model '" + m.name + "' has no output '" + name + "'");
        wanted.add(i);
        wantedNames.add(name);
        binary.add(o.path("parameters").path("binary_data").asBoolean(allBinary));
      }
    }
    NDArray[] arrays = new NDArray[m.inputs.size()];
    CompletableFuture<List<NDArray>> call;
    try {
      int offset = headLen;
      for (JsonNode input : inputs) offset = readInput(m, input, body, offset, arrays);
      if (offset != body.length) {
        throw bad((body.length - offset) + " bytes of binary data that no input claims");
      }
      for (int i = 0; i < arrays.length; i++) {
        if (arrays[i] == null) throw bad("input '" + m.inputs.get(i).name + "' is missing");
      }
      if (SYNC_INFER) {
        try {
          call = CompletableFuture.completedFuture(m.infer(arrays));
        } catch (FFIException e) {
          call = CompletableFuture.failedFuture(e);
        }
      } else {
        call = m.inferAsync(arrays); // the inputs stay referenced by the call until it ends
      }
    } catch (ApiError | RuntimeException | Error e) {
      for (NDArray a : arrays) if (a != null) a.close();
      throw e;
    }
    List<Integer> want = wanted;
    return call.handle(
        (results, err) -> {
          for (NDArray a : arrays) if (a != null) a.close();
          if (err instanceof CompletionException && err.getCause() != null) err = err.getCause();
          try {
            if (err instanceof FFIException f) {
              // A full queue of the core's pool is 503 (retry later); a refusal of the model, 400.
              if (f.getKind().equals("QueueFullError")) throw new ApiError(503, f.getMessage());
              throw bad(f.getMessage());
            }
            if (err != null) throw new CompletionException(err);
            return respond(m, request, want, binary, wantedNames, allBinary, results);
          } catch (ApiError | IOException e) {
            throw new CompletionException(e);
          }
        });
  }

  /** The response to request from the model's outputs results (closed here). */
  private static Reply respond(
      ServedModel m,
      JsonNode request,
      List<Integer> wanted,
      List<Boolean> binary,
      List<String> wantedNames,
      boolean allBinary,
      List<NDArray> results)
      throws ApiError, IOException {
    try {
      ObjectNode response = JSON.createObjectNode().put("model_name", m.name);
      response.put("model_version", "1");
      JsonNode id = request.get("id");
      if (id != null && id.isTextual()) response.put("id", id.asText());
      ArrayNode out = response.putArray("outputs");
      java.io.ByteArrayOutputStream blob = new java.io.ByteArrayOutputStream();
      if (wanted == null) {
        wanted = new ArrayList<>();
        for (int i = 0; i < results.size(); i++) {
          wanted.add(i);
          binary.add(allBinary);
        }
      }
      for (int k = 0; k < wanted.size(); k++) {
        int i = wanted.get(k);
        if (i >= results.size()) {
          throw bad("model '" + m.name + "' has no output '" + wantedNames.get(k) + "'");
        }
        NDArray a = results.get(i);
        String datatype = Tensors.datatype(a.dtype().toString());
        String name = i < m.outputs.size() ? m.outputs.get(i).name : "output_" + i;
        ObjectNode o = out.addObject().put("name", name);
        o.put("datatype", datatype);
        ArrayNode shape = o.putArray("shape");
        for (long d : a.shape()) shape.add(d);
        ByteBuffer bytes = a.asByteBuffer();
        if (binary.get(k)) {
          // The array's memory is little-endian (x86-64, aarch64), as the protocol's bytes are.
          byte[] raw = new byte[bytes.remaining()];
          bytes.get(raw);
          blob.write(raw);
          o.putObject("parameters").put("binary_data_size", raw.length);
        } else {
          o.set("data", Tensors.toJson(bytes, datatype == null ? "" : datatype));
        }
      }
      return new Reply(response, blob.size() > 0 ? blob.toByteArray() : null);
    } finally {
      for (NDArray a : results) a.close();
    }
  }

  private static int indexOf(List<ServedModel.Spec> specs, String name) {
    for (int i = 0; i < specs.size(); i++) if (specs.get(i).name.equals(name)) return i;
    return -1;
  }

  /** Checks one input of a request and puts its array in place; returns the next binary offset. */
  private static int readInput(
      ServedModel m, JsonNode input, byte[] body, int offset, NDArray[] arrays) throws ApiError {
    String name = input.path("name").asText();
    int index = indexOf(m.inputs, name);
    if (index < 0) {
      List<String> names = new ArrayList<>();
      for (ServedModel.Spec s : m.inputs) names.add(s.name);
      throw bad(
          "model '"
              + m.name
              + "' has no input '"
              + name
              + "' (inputs: "
              + String.join(", ", names)
              + ")");
    }
    if (arrays[index] != null) throw bad("input '" + name + "' given twice");
    ServedModel.Spec spec = m.inputs.get(index);
    String want = Tensors.datatype(spec.dtype);
    String datatype = input.path("datatype").asText();
    if (!datatype.equals(want)) {
      throw bad("input '" + name + "' has datatype " + datatype + ", the model takes " + want);
    }
    // Only what JSON cannot say is checked here: a shape that fits the model's (rank and static
    // sizes) is the model's own check, whose typed error the client gets.
    JsonNode shapeNode = input.get("shape");
    long[] shape = null;
    if (shapeNode != null && shapeNode.isArray()) {
      shape = new long[shapeNode.size()];
      for (int d = 0; d < shape.length; d++) {
        JsonNode x = shapeNode.get(d);
        shape[d] = x.isIntegralNumber() ? x.asLong() : -1;
        if (shape[d] < 0) {
          shape = null;
          break;
        }
      }
    }
    if (shape == null) {
      throw bad("input '" + name + "' has shape " + shapeNode + ": not a list of sizes >= 0");
    }
    long count = 1;
    try {
      for (long d : shape) count = Math.multiplyExact(count, d);
    } catch (ArithmeticException e) {
      throw bad("input '" + name + "' has shape " + shapeNode + ": too many elements");
    }
    byte[] bytes;
    JsonNode binarySize = input.path("parameters").get("binary_data_size");
    if (binarySize != null) {
      if (!binarySize.isIntegralNumber()) {
        throw bad("input '" + name + "': binary_data_size is not a number");
      }
      long n = binarySize.asLong();
      if (n < 0 || n > body.length - offset) {
        throw bad("input '" + name + "': binary_data_size " + n + " is past the end of the body");
      }
      bytes = Arrays.copyOfRange(body, offset, offset + (int) n);
      offset += (int) n;
    } else if (input.has("data")) {
      try {
        bytes = Tensors.toBytes(input.get("data"), want);
      } catch (IllegalArgumentException e) {
        throw bad("input '" + name + "': " + e.getMessage());
      }
    } else {
      throw bad("input '" + name + "' has no data");
    }
    int size = Tensors.elementSize(want);
    if (size == 0 || bytes.length != count * size) {
      throw bad(
          "input '"
              + name
              + "' has "
              + (size == 0 ? bytes.length : bytes.length / size)
              + " elements of data, its shape "
              + Arrays.toString(shape)
              + " holds "
              + count);
    }
    NDArray a = NDArray.empty(shape, DataType.parse(spec.dtype));
    // Little-endian protocol bytes into the array's (native, little-endian) memory.
    a.asByteBuffer().put(ByteBuffer.wrap(bytes));
    arrays[index] = a;
    return offset;
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
    completions.close();
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: Serve MODEL_DIR PORT");
      System.exit(2);
    }
    Path dir = Paths.get(args[0]);
    int port = Integer.parseInt(args[1]);
    Map<String, ServedModel> models = loadDir(dir);
    Map<String, LanguageModel> lms = Completions.loadDir(dir);
    if (models.isEmpty() && lms.isEmpty()) {
      System.err.println("polyffi-serve: no model to serve in " + dir);
      System.exit(1);
    }
    for (ServedModel m : models.values()) {
      System.err.printf(
          "polyffi-serve: %s (%s): %d inputs, %d outputs%n",
          m.name, m.platform, m.inputs.size(), m.outputs.size());
    }
    for (String name : lms.keySet()) {
      System.err.printf("polyffi-serve: %s (language model, /v1/completions)%n", name);
    }
    int threads = Math.max(4, 2 * Runtime.getRuntime().availableProcessors());
    Serve serve = new Serve(models, lms, port, threads);
    System.out.println("listening on 127.0.0.1:" + serve.port());
    System.out.flush();
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  serve.close();
                  for (ServedModel m : models.values()) m.close();
                }));
  }
}
