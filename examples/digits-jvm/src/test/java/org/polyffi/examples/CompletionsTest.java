package org.polyffi.examples;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.polyffi.LanguageModel;

/**
 * The server's OpenAI completions API over the TVM 0.27 tiny llama fixture, linked into the served
 * folder as tiny_llama: the model list, TVM's greedy tokens as text, the same text streamed one
 * event per token, the core's seeded sampling, stop, and OpenAI-shaped 4xx errors.
 */
class CompletionsTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final Path LM =
      Paths.get(System.getProperty("polyffi.root", "../.."))
          .resolve("tests/tvm_models/tvm027/lm")
          .toAbsolutePath();

  @TempDir static Path dir;
  static Serve serve;
  static HttpClient http;
  static JsonNode io;
  static JsonNode sampled;

  @BeforeAll
  static void start() throws Exception {
    Files.createSymbolicLink(dir.resolve("tiny_llama"), LM);
    Map<String, LanguageModel> lms = org.polyffi.examples.serve.Completions.loadDir(dir);
    assertEquals(List.of("tiny_llama"), List.copyOf(lms.keySet()));
    serve = new Serve(Serve.loadDir(dir), lms, 0, 6);
    http = HttpClient.newHttpClient();
    io = JSON.readTree(LM.resolve("io.json").toFile());
    sampled = JSON.readTree(LM.resolve("sampled.json").toFile());
  }

  @AfterAll
  static void stop() {
    if (serve != null) serve.close();
  }

  /** The fixture's vocabulary: "\n", then the printable ASCII characters. */
  static String text(JsonNode ids) {
    StringBuilder b = new StringBuilder();
    for (JsonNode id : ids) b.append(id.asInt() == 0 ? '\n' : (char) (31 + id.asInt()));
    return b.toString();
  }

  static HttpResponse<String> send(String method, String path, String body) throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + serve.port() + path))
            .timeout(java.time.Duration.ofSeconds(60));
    b =
        body == null
            ? b.method(method, HttpRequest.BodyPublishers.noBody())
            : b.method(method, HttpRequest.BodyPublishers.ofString(body));
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  static JsonNode complete(ObjectNode request) throws Exception {
    HttpResponse<String> r = send("POST", "/v1/completions", JSON.writeValueAsString(request));
    assertEquals(200, r.statusCode(), r.body());
    assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("application/json"));
    return JSON.readTree(r.body());
  }

  static ObjectNode greedy() {
    ObjectNode r = JSON.createObjectNode().put("model", "tiny_llama");
    r.put("prompt", text(io.get("greedy").get("prompt")));
    return r.put("max_tokens", io.get("greedy").get("tokens").size()).put("temperature", 0);
  }

  static JsonNode error(int status, String body) throws Exception {
    HttpResponse<String> r = send("POST", "/v1/completions", body);
    assertEquals(status, r.statusCode(), r.body());
    JsonNode e = JSON.readTree(r.body()).get("error");
    assertEquals("invalid_request_error", e.get("type").asText());
    assertTrue(e.get("param").isNull());
    assertTrue(e.get("code").isNull());
    return e;
  }

  @Test
  void modelsListsTheLanguageModel() throws Exception {
    HttpResponse<String> r = send("GET", "/v1/models", null);
    assertEquals(200, r.statusCode());
    assertEquals(
        JSON.readTree(
            "{\"object\":\"list\",\"data\":[{\"id\":\"tiny_llama\",\"object\":\"model\","
                + "\"created\":0,\"owned_by\":\"polyffi\"}]}"),
        JSON.readTree(r.body()));
  }

  @Test
  void greedyCompletionIsTvmsTokensAsText() throws Exception {
    JsonNode r = complete(greedy());
    assertTrue(r.get("id").asText().startsWith("cmpl-"));
    assertEquals("text_completion", r.get("object").asText());
    assertEquals("tiny_llama", r.get("model").asText());
    assertTrue(r.get("created").asLong() > 0);
    JsonNode c = r.get("choices").get(0);
    assertEquals(0, c.get("index").asInt());
    assertEquals(text(io.get("greedy").get("tokens")), c.get("text").asText());
    assertTrue(c.get("logprobs").isNull());
    assertEquals("length", c.get("finish_reason").asText());
    assertEquals(19, r.get("usage").get("prompt_tokens").asInt());
    assertEquals(13, r.get("usage").get("completion_tokens").asInt());
    assertEquals(32, r.get("usage").get("total_tokens").asInt());
  }

  @Test
  void streamingSendsOneEventPerTokenThenTheFinishReasonThenDone() throws Exception {
    HttpResponse<String> r =
        send("POST", "/v1/completions", JSON.writeValueAsString(greedy().put("stream", true)));
    assertEquals(200, r.statusCode(), r.body());
    assertEquals("text/event-stream", r.headers().firstValue("Content-Type").orElse(""));
    String[] events = r.body().split("\n\n", -1);
    int n = io.get("greedy").get("tokens").size();
    assertEquals(n + 3, events.length, r.body()); // tokens, finish, [DONE], "" after the last
    assertEquals("data: [DONE]", events[n + 1]);
    assertEquals("", events[n + 2]);
    StringBuilder text = new StringBuilder();
    String id = null;
    for (int i = 0; i <= n; i++) {
      assertTrue(events[i].startsWith("data: "), events[i]);
      JsonNode e = JSON.readTree(events[i].substring(6));
      assertEquals("text_completion", e.get("object").asText());
      if (id == null) id = e.get("id").asText();
      assertEquals(id, e.get("id").asText());
      JsonNode c = e.get("choices").get(0);
      if (i < n) {
        assertEquals(1, c.get("text").asText().length());
        assertTrue(c.get("finish_reason").isNull());
        text.append(c.get("text").asText());
      } else {
        assertEquals("", c.get("text").asText());
        assertEquals("length", c.get("finish_reason").asText());
      }
    }
    assertEquals(text(io.get("greedy").get("tokens")), text.toString());
  }

  @Test
  void seededSamplingIsTheCoresRecordedTokens() throws Exception {
    JsonNode o = sampled.get("options");
    ObjectNode req = JSON.createObjectNode().put("model", "tiny_llama");
    req.put("prompt", text(sampled.get("prompt")));
    req.put("max_tokens", o.get("max_tokens").asInt())
        .put("temperature", o.get("temperature").asDouble())
        .put("top_p", o.get("top_p").asDouble())
        .put("seed", o.get("seed").asLong());
    JsonNode c = complete(req).get("choices").get(0);
    assertEquals(text(sampled.get("tokens")), c.get("text").asText());
  }

  @Test
  void stopEndsTheCompletionWithoutTheStopText() throws Exception {
    String want = text(io.get("greedy").get("tokens"));
    ObjectNode req = greedy();
    req.putArray("stop").add(want.substring(3, 4));
    JsonNode c = complete(req).get("choices").get(0);
    assertEquals(want.substring(0, 3), c.get("text").asText());
    assertEquals("stop", c.get("finish_reason").asText());
    // A single string too.
    JsonNode c2 = complete(greedy().put("stop", want.substring(3, 4))).get("choices").get(0);
    assertEquals(want.substring(0, 3), c2.get("text").asText());
  }

  @Test
  void badRequestsAreOpenAiErrorsAndTheServerKeepsServing() throws Exception {
    error(400, "{bad json");
    error(400, "[1]");
    error(400, "{\"prompt\":\"x\"}");
    error(404, "{\"model\":\"nope\",\"prompt\":\"x\"}");
    String m =
        error(400, "{\"model\":\"tiny_llama\",\"prompt\":\"caf\\u00e9\"}").get("message").asText();
    assertTrue(m.contains("U+00E9"), m);
    error(400, "{\"model\":\"tiny_llama\",\"prompt\":\"x\",\"n\":2}");
    error(400, "{\"model\":\"tiny_llama\",\"prompt\":\"x\",\"best_of\":3}");
    error(400, "{\"model\":\"tiny_llama\",\"prompt\":\"x\",\"max_tokens\":-1}");
    error(400, "{\"model\":\"tiny_llama\",\"prompt\":\"x\",\"max_tokens\":128}");
    error(400, "{\"model\":\"tiny_llama\",\"prompt\":\"x\",\"temperature\":\"hot\"}");
    error(400, "{\"model\":\"tiny_llama\",\"prompt\":\"x\",\"stop\":\"ab\"}");
    error(400, "{\"model\":\"tiny_llama\",\"prompt\":\"\"}");
    error(400, "{\"model\":\"tiny_llama\",\"prompt\":\"" + "x".repeat(129) + "\"}");
    assertEquals(404, send("GET", "/v1/nothing", null).statusCode());
    // Ignored OpenAI fields, and n = 1, are fine.
    JsonNode ok = complete(greedy().put("n", 1).put("user", "someone").put("echo", false));
    assertEquals(
        text(io.get("greedy").get("tokens")), ok.get("choices").get(0).get("text").asText());
  }

  @Test
  void moreClientsThanGenerationPlacesWaitTheirTurn() throws Exception {
    String want = text(io.get("greedy").get("tokens"));
    ExecutorService pool = Executors.newFixedThreadPool(6);
    try {
      List<Future<JsonNode>> runs = new ArrayList<>();
      for (int i = 0; i < 6; i++) runs.add(pool.submit(() -> complete(greedy())));
      List<String> texts = new ArrayList<>();
      for (Future<JsonNode> r : runs) texts.add(r.get().get("choices").get(0).get("text").asText());
      assertEquals(List.of(want), texts.stream().distinct().collect(Collectors.toList()));
    } finally {
      pool.shutdownNow();
    }
  }
}
