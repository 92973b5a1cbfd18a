package org.polyffi.examples.serve;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.Semaphore;
import java.util.stream.Stream;
import org.polyffi.FFIException;
import org.polyffi.GenerateOptions;
import org.polyffi.Generation;
import org.polyffi.LanguageModel;

/**
 * OpenAI's completions API over the language models of the served folder (each subdirectory holding
 * lm-config.json, served under the subdirectory's name):
 *
 * <pre>
 *   GET  /v1/models        the language models
 *   POST /v1/completions   {"model", "prompt", "max_tokens", "temperature", "top_p", "seed",
 *                          "stop", "stream"}; other OpenAI fields are ignored, but n and best_of
 *                          must be 1
 * </pre>
 *
 * With {@code "stream": true} the answer is server-sent events, one per token written and flushed
 * as the token is generated, then one with the finish reason, then {@code data: [DONE]}. Errors are
 * OpenAI's error object: 400 for a bad request (the core's ValueError text when the model refused
 * it, or the prompt plus max_tokens is longer than the model's context), 404 for an unknown model
 * or route, 503 when the model failed at run time (its KV cache full of other requests' tokens); an
 * error after a stream has started is sent as a last event before [DONE]. Requests wait for one of
 * the model's max_batch_size generation places rather than fail.
 */
public final class Completions implements AutoCloseable {
  static final ObjectMapper JSON = new ObjectMapper();
  static final int MAX_BODY = 1 << 20;

  /** One served language model and the generation places its KV cache has. */
  private record Served(LanguageModel lm, Semaphore places, int context) {}

  /** OpenAI's default max_tokens for completions. */
  static final int DEFAULT_MAX_TOKENS = 16;

  private final Map<String, Served> models = new TreeMap<>();

  /** A request that failed: status, OpenAI error type and message. */
  static final class ApiError extends Exception {
    private static final long serialVersionUID = 1L;
    final int status;
    final String type;

    ApiError(int status, String type, String message) {
      super(message, null, false, false);
      this.status = status;
      this.type = type;
    }
  }

  private static ApiError bad(String message) {
    return new ApiError(400, "invalid_request_error", message);
  }

  /** Takes ownership of the models (closed by close()). */
  public Completions(Map<String, LanguageModel> lms) throws IOException {
    for (Map.Entry<String, LanguageModel> e : lms.entrySet()) {
      JsonNode config = JSON.readTree(e.getValue().config());
      int places = config.path("kv_cache").path("max_batch_size").asInt(1);
      int context = config.path("kv_cache").path("max_total_seq_len").asInt(Integer.MAX_VALUE);
      models.put(
          e.getKey(), new Served(e.getValue(), new Semaphore(Math.max(1, places), true), context));
    }
  }

  /** The language models of dir (subdirectories holding lm-config.json); failures are skipped. */
  public static Map<String, LanguageModel> loadDir(Path dir) throws IOException {
    Map<String, LanguageModel> out = new TreeMap<>();
    List<Path> entries;
    try (Stream<Path> s = Files.list(dir)) {
      entries = s.sorted().toList();
    }
    for (Path p : entries) {
      if (!Files.isRegularFile(p.resolve("lm-config.json"))) continue;
      try {
        out.put(p.getFileName().toString(), LanguageModel.load(p));
      } catch (RuntimeException e) {
        System.err.println("polyffi-serve: skipping " + p + ": " + FFIException.textOf(e));
      }
    }
    return out;
  }

  public List<String> names() {
    return new ArrayList<>(models.keySet());
  }

  /** Answers a request under /v1 and closes the exchange. */
  public void handle(HttpExchange ex) throws IOException {
    try {
      String path = ex.getRequestURI().getPath().replaceAll("/+$", "");
      String method = ex.getRequestMethod();
      if (path.equals("/v1/models") && method.equals("GET")) {
        reply(ex, 200, modelList());
      } else if (path.equals("/v1/completions") && method.equals("POST")) {
        complete(ex);
      } else {
        throw new ApiError(404, "invalid_request_error", "no route " + method + " " + path);
      }
    } catch (ApiError e) {
      reply(ex, e.status, error(e.type, e.getMessage()));
    } catch (RuntimeException | Error e) {
      reply(ex, 500, error("server_error", FFIException.textOf(e)));
    } finally {
      ex.close();
    }
  }

  private ObjectNode modelList() {
    ObjectNode o = JSON.createObjectNode().put("object", "list");
    var data = o.putArray("data");
    for (String name : models.keySet()) {
      data.addObject()
          .put("id", name)
          .put("object", "model")
          .put("created", 0)
          .put("owned_by", "polyffi");
    }
    return o;
  }

  static ObjectNode error(String type, String message) {
    ObjectNode o = JSON.createObjectNode();
    o.putObject("error").put("message", message).put("type", type).putNull("param").putNull("code");
    return o;
  }

  private static void reply(HttpExchange ex, int status, JsonNode body) throws IOException {
    byte[] bytes = JSON.writeValueAsBytes(body);
    ex.getResponseHeaders().set("Content-Type", "application/json");
    ex.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = ex.getResponseBody()) {
      out.write(bytes);
    }
  }

  /** A completion request, checked. */
  private record Request(
      String model, String prompt, GenerateOptions options, int maxTokens, boolean stream) {}

  static Request parse(byte[] body) throws ApiError {
    JsonNode r;
    try {
      r = JSON.readTree(body);
    } catch (JsonProcessingException e) {
      throw bad("the request is not valid JSON: " + e.getOriginalMessage());
    } catch (IOException e) { // reading a byte array: not reached, but declared
      throw bad("the request could not be read: " + e.getMessage());
    }
    if (r == null || !r.isObject()) throw bad("the request is not a JSON object");
    JsonNode model = r.get("model");
    if (model == null || !model.isTextual()) throw bad("\"model\" must be a string");
    JsonNode prompt = r.get("prompt");
    if (prompt == null || !prompt.isTextual()) throw bad("\"prompt\" must be a string");
    for (String one : new String[] {"n", "best_of"}) {
      JsonNode v = given(r, one);
      if (v != null && !(v.isIntegralNumber() && v.asLong() == 1)) {
        throw bad("\"" + one + "\" must be 1 (one choice per request), got " + v);
      }
    }
    GenerateOptions o = new GenerateOptions();
    JsonNode v;
    int maxTokens = DEFAULT_MAX_TOKENS;
    if ((v = given(r, "max_tokens")) != null) {
      if (!v.isIntegralNumber() || !v.canConvertToInt()) {
        throw bad("\"max_tokens\" must be an integer, got " + v);
      }
      maxTokens = v.asInt();
    }
    o.maxTokens(maxTokens);
    if ((v = given(r, "temperature")) != null) o.temperature(number(v, "temperature"));
    if ((v = given(r, "top_p")) != null) o.topP(number(v, "top_p"));
    if ((v = given(r, "seed")) != null) {
      if (!v.isIntegralNumber() || !v.canConvertToLong()) {
        throw bad("\"seed\" must be an integer, got " + v);
      }
      o.seed(v.asLong());
    }
    if ((v = given(r, "stop")) != null) {
      List<String> stop = new ArrayList<>();
      if (v.isTextual()) {
        stop.add(v.asText());
      } else if (v.isArray()) {
        for (JsonNode s : v) {
          if (!s.isTextual()) throw bad("\"stop\" must be a string or a list of strings");
          stop.add(s.asText());
        }
      } else {
        throw bad("\"stop\" must be a string or a list of strings");
      }
      o.stop(stop.toArray(new String[0]));
    }
    boolean stream = false;
    if ((v = given(r, "stream")) != null) {
      if (!v.isBoolean()) throw bad("\"stream\" must be true or false, got " + v);
      stream = v.asBoolean();
    }
    return new Request(model.asText(), prompt.asText(), o, maxTokens, stream);
  }

  /** The field's value, null when absent or JSON null (the default applies). */
  private static JsonNode given(JsonNode r, String name) {
    JsonNode v = r.get(name);
    return v == null || v.isNull() ? null : v;
  }

  private static double number(JsonNode v, String name) throws ApiError {
    if (!v.isNumber() || !Double.isFinite(v.asDouble())) {
      throw bad("\"" + name + "\" must be a finite number, got " + v);
    }
    return v.asDouble();
  }

  private void complete(HttpExchange ex) throws IOException, ApiError {
    byte[] body;
    try (InputStream in = ex.getRequestBody()) {
      body = in.readNBytes(MAX_BODY + 1);
    }
    if (body.length > MAX_BODY) {
      throw new ApiError(413, "invalid_request_error", "the request is larger than " + MAX_BODY);
    }
    Request req = parse(body);
    Served m = models.get(req.model());
    if (m == null) {
      throw new ApiError(
          404, "invalid_request_error", "the model '" + req.model() + "' does not exist");
    }
    m.places().acquireUninterruptibly();
    try (Generation g = start(m.lm(), req)) {
      // A request that cannot fit in the cache even alone is the client's error, said up front
      // rather than as the cache running full part way.
      if ((long) g.promptTokens() + req.maxTokens() > m.context()) {
        throw bad(
            "the prompt ("
                + g.promptTokens()
                + " tokens) plus max_tokens ("
                + req.maxTokens()
                + ") is more than the model's context of "
                + m.context()
                + " tokens");
      }
      String id = "cmpl-" + UUID.randomUUID().toString().replace("-", "");
      long created = System.currentTimeMillis() / 1000;
      // The first step (the prompt's prefill) before any byte is sent: its error is a status.
      step(g);
      if (req.stream()) {
        stream(ex, g, id, created, req.model());
      } else {
        StringBuilder text = new StringBuilder();
        while (step(g)) text.append(g.next().text());
        ObjectNode o = chunk(id, created, req.model());
        o.withArray("choices")
            .addObject()
            .put("index", 0)
            .put("text", text.toString())
            .putNull("logprobs")
            .put("finish_reason", g.finishReason());
        int prompt = g.promptTokens();
        int completion = g.completionTokens();
        o.putObject("usage")
            .put("prompt_tokens", prompt)
            .put("completion_tokens", completion)
            .put("total_tokens", prompt + completion);
        reply(ex, 200, o);
      }
    } finally {
      m.places().release();
    }
  }

  private static Generation start(LanguageModel lm, Request req) throws ApiError {
    try {
      return lm.generate(req.prompt(), req.options());
    } catch (FFIException e) {
      throw e.getKind().equals("ValueError") ? bad(e.getMessage()) : unavailable(e);
    }
  }

  /** g.hasNext(), with the model's run-time error (its KV cache full) as a 503. */
  private static boolean step(Generation g) throws ApiError {
    try {
      return g.hasNext();
    } catch (FFIException e) {
      throw unavailable(e);
    }
  }

  private static ApiError unavailable(FFIException e) {
    return new ApiError(503, "server_error", e.getMessage());
  }

  private static ObjectNode chunk(String id, long created, String model) {
    return JSON.createObjectNode()
        .put("id", id)
        .put("object", "text_completion")
        .put("created", created)
        .put("model", model);
  }

  private static ObjectNode event(
      String id, long created, String model, String text, String finishReason) {
    ObjectNode o = chunk(id, created, model);
    ObjectNode c = o.withArray("choices").addObject().put("index", 0).put("text", text);
    c.putNull("logprobs");
    if (finishReason == null) {
      c.putNull("finish_reason");
    } else {
      c.put("finish_reason", finishReason);
    }
    return o;
  }

  /** Server-sent events, one per token, each flushed as it is generated. */
  private static void stream(HttpExchange ex, Generation g, String id, long created, String model)
      throws IOException {
    ex.getResponseHeaders().set("Content-Type", "text/event-stream");
    ex.getResponseHeaders().set("Cache-Control", "no-cache");
    ex.sendResponseHeaders(200, 0); // chunked
    try (OutputStream out = ex.getResponseBody()) {
      try {
        while (g.hasNext()) {
          send(out, event(id, created, model, g.next().text(), null));
        }
        send(out, event(id, created, model, "", g.finishReason()));
      } catch (FFIException e) {
        send(out, error("server_error", e.getMessage()));
      }
      out.write("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
      out.flush();
    }
  }

  private static void send(OutputStream out, JsonNode event) throws IOException {
    out.write("data: ".getBytes(StandardCharsets.UTF_8));
    out.write(JSON.writeValueAsBytes(event));
    out.write("\n\n".getBytes(StandardCharsets.UTF_8));
    out.flush();
  }

  @Override
  public void close() {
    for (Served m : models.values()) m.lm().close();
  }
}
