package org.polyffi;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.Future;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The language-model API over the TVM 0.27 tiny llama fixture (tests/tvm_models/tvm027/lm): the
 * tokens and logits TVM recorded, two generations interleaved, the core's seeded sampling, stop and
 * length endings, typed errors, the Flow publisher and four threads at once.
 */
class LanguageModelTest {
  static final Path DIR = TestEnv.repoRoot().resolve("tests/tvm_models/tvm027/lm");
  static JsonNode io;
  static LanguageModel lm;

  @BeforeAll
  static void load() throws IOException {
    io = TvmModelsTest.json(DIR.resolve("io.json"));
    lm = LanguageModel.load(DIR);
  }

  @AfterAll
  static void close() {
    if (lm != null) lm.close();
  }

  static int[] ints(JsonNode a) {
    int[] out = new int[a.size()];
    for (int i = 0; i < out.length; i++) out[i] = a.get(i).asInt();
    return out;
  }

  /** Row `row` of a raw little-endian float32 file of rows of width vocab. */
  static float[] row(String file, int row) throws IOException {
    int vocab = io.get("config").get("vocab_size").asInt();
    ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(DIR.resolve(file)));
    b.order(ByteOrder.LITTLE_ENDIAN);
    float[] out = new float[vocab];
    b.position(row * vocab * 4);
    b.asFloatBuffer().get(out);
    return out;
  }

  static int rows(String file) throws IOException {
    return (int) (Files.size(DIR.resolve(file)) / 4 / io.get("config").get("vocab_size").asInt());
  }

  static void assertClose(float[] want, float[] got, String what) {
    assertEquals(want.length, got.length, what + ": length");
    for (int i = 0; i < want.length; i++) {
      float tol = 1e-4f + 1e-4f * Math.abs(want[i]);
      if (Math.abs(want[i] - got[i]) > tol) {
        fail(what + "[" + i + "]: want " + want[i] + ", got " + got[i]);
      }
    }
  }

  static GenerateOptions greedy(int maxTokens) {
    return new GenerateOptions().temperature(0).maxTokens(maxTokens);
  }

  static int[] ids(List<Token> tokens) {
    return tokens.stream().mapToInt(Token::id).toArray();
  }

  static List<Token> drain(Generation g) {
    List<Token> out = new ArrayList<>();
    g.forEachRemaining(out::add);
    return out;
  }

  static FFIException ffiError(String kind, Executable e) {
    FFIException x = assertThrows(FFIException.class, e);
    assertEquals(kind, x.getKind(), x.getMessage());
    return x;
  }

  @Test
  void configDescribesTheModel() throws IOException {
    JsonNode c = TvmModelsTest.JSON.readTree(lm.config());
    assertEquals(96, c.get("vocab_size").asInt());
    assertEquals(4, c.get("kv_cache").get("max_batch_size").asInt());
    assertEquals("chars", c.get("tokenizer").get("kind").asText());
  }

  @Test
  void encodeDecodeAndTokenTextFollowTheCharacterVocabulary() {
    // id 0 is "\n", then the printable ASCII characters from ' ' (id 1) on.
    assertArrayEquals(new int[] {41, 70, 77, 77, 80, 1, 0}, lm.encode("Hello \n"));
    assertEquals("Hello \n", lm.decode(new int[] {41, 70, 77, 77, 80, 1, 0}));
    assertEquals("\n", lm.tokenText(0));
    assertEquals("~", lm.tokenText(95));
    assertEquals("", lm.decode(new int[0]));
  }

  @Test
  void greedyGivesTvmsTokensAndLogits() throws IOException {
    JsonNode g = io.get("greedy");
    int[] want = ints(g.get("tokens"));
    String prefill = g.get("prefill_logits").asText();
    try (Generation gen = lm.generate(ints(g.get("prompt")), greedy(want.length))) {
      assertEquals(g.get("prompt").size(), gen.promptTokens());
      assertEquals("", gen.finishReason());
      List<Integer> got = new ArrayList<>();
      int step = 0;
      while (gen.hasNext()) {
        Token t = gen.next();
        assertEquals(lm.tokenText(t.id()), t.text());
        got.add(t.id());
        if (step == 0) {
          assertClose(row(prefill, rows(prefill) - 1), gen.logits(), "prefill logits");
        } else if (step - 1 < g.get("decode_logits").size()) {
          assertClose(
              row(g.get("decode_logits").get(step - 1).asText(), 0),
              gen.logits(),
              "decode " + (step - 1) + " logits");
        }
        step++;
      }
      assertArrayEquals(want, got.stream().mapToInt(Integer::intValue).toArray());
      assertEquals("length", gen.finishReason());
      assertEquals(want.length, gen.completionTokens());
    }
  }

  @Test
  void twoInterleavedGenerationsEachGiveTheirTokens() {
    JsonNode two = io.get("two_sequences");
    int n = two.get("tokens").get(0).size();
    try (Generation a = lm.generate(ints(two.get("prompts").get(0)), greedy(n));
        Generation b = lm.generate(ints(two.get("prompts").get(1)), greedy(n))) {
      int[] ga = new int[n];
      int[] gb = new int[n];
      for (int i = 0; i < n; i++) {
        ga[i] = a.next().id();
        gb[i] = b.next().id();
      }
      assertFalse(a.hasNext());
      assertFalse(b.hasNext());
      assertArrayEquals(ints(two.get("tokens").get(0)), ga);
      assertArrayEquals(ints(two.get("tokens").get(1)), gb);
    }
  }

  @Test
  void seededSamplingGivesTheCoresRecordedTokens() throws IOException {
    JsonNode s = TvmModelsTest.json(DIR.resolve("sampled.json"));
    JsonNode o = s.get("options");
    GenerateOptions opts =
        new GenerateOptions()
            .temperature(o.get("temperature").asDouble())
            .topP(o.get("top_p").asDouble())
            .seed(o.get("seed").asLong())
            .maxTokens(o.get("max_tokens").asInt());
    try (Generation g = lm.generate(ints(s.get("prompt")), opts)) {
      assertArrayEquals(ints(s.get("tokens")), ids(drain(g)));
      assertEquals("length", g.finishReason());
    }
  }

  @Test
  void aStopTokenEndsTheGenerationAndIsNotReturned() {
    JsonNode g = io.get("greedy");
    int[] want = ints(g.get("tokens"));
    int[] prefix = Arrays.copyOf(want, 3);
    // By id, and by its text.
    try (Generation gen = lm.generate(ints(g.get("prompt")), greedy(13).stopTokenIds(want[3]))) {
      assertArrayEquals(prefix, ids(drain(gen)));
      assertEquals("stop", gen.finishReason());
    }
    String text = lm.tokenText(want[3]);
    try (Generation gen = lm.generate(ints(g.get("prompt")), greedy(13).stop(text))) {
      assertArrayEquals(prefix, ids(drain(gen)));
      assertEquals("stop", gen.finishReason());
      assertEquals(3, gen.completionTokens());
    }
  }

  @Test
  void maxTokensEndsWithLength() {
    try (Generation gen = lm.generate("Hello", greedy(3))) {
      assertEquals(3, drain(gen).size());
      assertEquals("length", gen.finishReason());
      assertThrows(java.util.NoSuchElementException.class, gen::next);
    }
  }

  @Test
  void aTextPromptIsEncodedByTheModel() {
    int[] prompt = ints(io.get("greedy").get("prompt"));
    String text = lm.decode(prompt);
    try (Generation a = lm.generate(text, greedy(5));
        Generation b = lm.generate(prompt, greedy(5))) {
      assertArrayEquals(ids(drain(b)), ids(drain(a)));
    }
  }

  @Test
  void badInputGivesTypedErrors() {
    ffiError("FileNotFoundError", () -> LanguageModel.load(DIR.resolve("no-such-dir")));
    FFIException e = ffiError("ValueError", () -> lm.encode("caf\u00e9"));
    assertTrue(e.getMessage().contains("U+00E9"), e.getMessage());
    ffiError("ValueError", () -> lm.decode(new int[] {96}));
    ffiError("ValueError", () -> lm.generate(""));
    ffiError("ValueError", () -> lm.generate(new int[] {0, 200}));
    ffiError("ValueError", () -> lm.generate("Hi", new GenerateOptions().maxTokens(-1)));
    ffiError("ValueError", () -> lm.generate("Hi", new GenerateOptions().stop("ab")));
    ffiError("ValueError", () -> lm.generate("Hi", new GenerateOptions().topP(0)));
    ffiError("ValueError", () -> new GenerateOptions().temperature(Double.NaN));
    ffiError("ValueError", () -> lm.generate("x".repeat(129)));
    try (Generation g = lm.generate("Hi", greedy(2))) {
      ffiError("ValueError", g::logits);
    }
  }

  @Test
  void oneGenerationMoreThanTheCacheHoldsIsARuntimeError() {
    List<Generation> alive = new ArrayList<>();
    try {
      for (int i = 0; i < 4; i++) alive.add(lm.generate("Hi", greedy(2)));
      FFIException e = ffiError("RuntimeError", () -> lm.generate("Hi", greedy(2)));
      assertTrue(e.getMessage().contains("too many concurrent generations"), e.getMessage());
      alive.remove(0).close(); // frees its place at once
      try (Generation g = lm.generate("Hi", greedy(2))) {
        assertEquals(2, drain(g).size());
      }
    } finally {
      alive.forEach(Generation::close);
    }
  }

  @Test
  void aGenerationOutlivesItsClosedModel() {
    JsonNode g = io.get("greedy");
    Generation gen;
    try (LanguageModel own = LanguageModel.load(DIR)) {
      gen = own.generate(ints(g.get("prompt")), greedy(13));
    }
    try (gen) {
      assertArrayEquals(ints(g.get("tokens")), ids(drain(gen)));
    }
  }

  @Test
  void aClosedGenerationHasNoMoreTokens() {
    Generation g = lm.generate("Hi", greedy(5));
    assertTrue(g.hasNext());
    g.close();
    g.close();
    assertFalse(g.hasNext());
    assertThrows(IllegalStateException.class, g::logits);
  }

  /** A subscriber that asks for `batch` tokens at a time and checks it never gets more. */
  static final class Collector implements Flow.Subscriber<Token> {
    final int batch;
    final List<Token> tokens = new ArrayList<>();
    final CompletableFuture<List<Token>> done = new CompletableFuture<>();
    Flow.Subscription subscription;
    long requested;
    Consumer<Collector> onToken = c -> {};

    Collector(int batch) {
      this.batch = batch;
    }

    @Override
    public synchronized void onSubscribe(Flow.Subscription s) {
      subscription = s;
      requested += batch;
      s.request(batch);
    }

    @Override
    public void onNext(Token t) {
      synchronized (this) {
        tokens.add(t);
        if (tokens.size() > requested) {
          done.completeExceptionally(new AssertionError("more tokens than requested"));
          return;
        }
        if (tokens.size() == requested) {
          requested += batch;
        } else {
          t = null;
        }
      }
      onToken.accept(this);
      if (t != null && !done.isDone()) subscription.request(batch);
    }

    @Override
    public void onError(Throwable e) {
      done.completeExceptionally(e);
    }

    @Override
    public synchronized void onComplete() {
      done.complete(new ArrayList<>(tokens));
    }
  }

  @Test
  void thePublisherGivesTheSameTokensOnDemand() {
    JsonNode g = io.get("greedy");
    int[] want = ints(g.get("tokens"));
    for (int batch : new int[] {1, 3, 100}) {
      try (Generation gen = lm.generate(ints(g.get("prompt")), greedy(want.length))) {
        Collector c = new Collector(batch);
        gen.publisher().subscribe(c);
        assertArrayEquals(want, ids(c.done.join()), "batch " + batch);
        assertEquals("length", gen.finishReason());
      }
    }
  }

  @Test
  void thePublisherContinuesAfterTheIterator() {
    JsonNode g = io.get("greedy");
    int[] want = ints(g.get("tokens"));
    try (Generation gen = lm.generate(ints(g.get("prompt")), greedy(want.length))) {
      int first = gen.next().id();
      assertTrue(gen.hasNext()); // fetched a token the publisher must give first
      Collector c = new Collector(2);
      gen.publisher().subscribe(c);
      List<Integer> got = new ArrayList<>(List.of(first));
      c.done.join().forEach(t -> got.add(t.id()));
      assertArrayEquals(want, got.stream().mapToInt(Integer::intValue).toArray());
    }
  }

  @Test
  void cancelClosesTheGeneration() {
    Generation gen = lm.generate("Hello", greedy(10));
    Collector c = new Collector(1);
    CompletableFuture<Void> cancelled = new CompletableFuture<>();
    c.onToken =
        x -> {
          if (x.tokens.size() == 2) {
            x.subscription.cancel();
            cancelled.complete(null);
          }
        };
    gen.publisher().subscribe(c);
    cancelled.join();
    // No step was running when onNext cancelled, so the generation is closed already and its
    // place in the cache is free: four more fit.
    assertTrue(gen.module().isClosed());
    assertEquals(2, c.tokens.size());
    assertFalse(c.done.isDone());
    List<Generation> alive = new ArrayList<>();
    try {
      for (int i = 0; i < 4; i++) alive.add(lm.generate("Hi", greedy(1)));
    } finally {
      alive.forEach(Generation::close);
    }
  }

  @Test
  void thePublisherRefusesASecondSubscriberAndBadDemand() {
    try (Generation gen = lm.generate("Hello", greedy(2))) {
      gen.publisher().subscribe(new Collector(1));
      Collector second = new Collector(1);
      gen.publisher().subscribe(second);
      Throwable e = assertThrows(Throwable.class, second.done::join).getCause();
      assertInstanceOf(IllegalStateException.class, e);
    }
    try (Generation gen = lm.generate("Hello", greedy(2))) {
      Collector zero = new Collector(0);
      gen.publisher().subscribe(zero);
      Throwable e = assertThrows(Throwable.class, zero.done::join).getCause();
      assertInstanceOf(IllegalArgumentException.class, e);
    }
  }

  @Test
  void fourThreadsAtOnceEachGetTheGreedyTokens() throws Exception {
    JsonNode g = io.get("greedy");
    int[] prompt = ints(g.get("prompt"));
    int[] want = ints(g.get("tokens"));
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<int[]>> runs = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        runs.add(
            pool.submit(
                () -> {
                  try (Generation gen = lm.generate(prompt, greedy(want.length))) {
                    return ids(drain(gen));
                  }
                }));
      }
      for (Future<int[]> r : runs) assertArrayEquals(want, r.get());
    } finally {
      pool.shutdownNow();
    }
  }
}
