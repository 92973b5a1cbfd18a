package org.polyffi;

import java.nio.file.Path;
import java.util.Objects;

/**
 * A language model directory (lm-config.json, the compiled model library and its weights) loaded by
 * the core ({@code polyffi.lm.load}). Tokenizing, sampling and the KV cache are the core's; this
 * class only calls its functions. Thread-safe: the core serialises calls on one model, so
 * generations may run on several threads at once (up to the cache's max_batch_size alive).
 *
 * <pre>{@code
 * try (LanguageModel lm = LanguageModel.load(Path.of("tiny_llama"));
 *     Generation g = lm.generate("Hello", new GenerateOptions().maxTokens(8).temperature(0))) {
 *   while (g.hasNext()) System.out.print(g.next().text());
 * }
 * }</pre>
 *
 * Errors are FFIExceptions with the core's kind: FileNotFoundError or ValueError from load,
 * ValueError for text outside the vocabulary, bad options or prompts.
 */
public final class LanguageModel implements AutoCloseable {
  private final Module module;
  private final Function configFn;
  private final Function encodeFn;
  private final Function decodeFn;
  private final Function tokenTextFn;
  private final Function generateFn;

  private LanguageModel(Module module) {
    this.module = module;
    this.configFn = module.getFunction("config");
    this.encodeFn = module.getFunction("encode");
    this.decodeFn = module.getFunction("decode");
    this.tokenTextFn = module.getFunction("token_text");
    this.generateFn = module.getFunction("generate");
  }

  /** Loads the model directory dir (the one holding lm-config.json). */
  public static LanguageModel load(Path dir) {
    Objects.requireNonNull(dir, "dir");
    Module m = (Module) Values.builtin("polyffi.lm.load").call(dir.toString());
    try {
      return new LanguageModel(m);
    } catch (RuntimeException e) {
      m.close();
      throw e;
    }
  }

  /** The module the core made ({@code polyffi.LanguageModel}); owned by this object. */
  public Module module() {
    return module;
  }

  /** The parsed configuration as JSON: vocab_size, kv_cache, tokenizer kind, stop_token_ids. */
  public String config() {
    return (String) configFn.call();
  }

  /** The token ids of text; a character outside the vocabulary is a ValueError naming it. */
  public int[] encode(String text) {
    Objects.requireNonNull(text, "text");
    try (NDArray ids = (NDArray) encodeFn.call(text)) {
      return ids.toIntArray();
    }
  }

  /** The text of token ids; an id outside the vocabulary is a ValueError. */
  public String decode(int[] tokens) {
    try (NDArray ids = ids(tokens)) {
      return (String) decodeFn.call(ids);
    }
  }

  /** The text of one token. */
  public String tokenText(int id) {
    return (String) tokenTextFn.call((long) id);
  }

  /** Generates from prompt text with the core's default options. */
  public Generation generate(String prompt) {
    return generate(prompt, null);
  }

  /** Generates from prompt text (encoded by the model's tokenizer). */
  public Generation generate(String prompt, GenerateOptions options) {
    Objects.requireNonNull(prompt, "prompt");
    return start(prompt, options);
  }

  /** Generates from prompt token ids with the core's default options. */
  public Generation generate(int[] prompt) {
    return generate(prompt, null);
  }

  /** Generates from prompt token ids. */
  public Generation generate(int[] prompt, GenerateOptions options) {
    try (NDArray ids = ids(prompt)) {
      return start(ids, options);
    }
  }

  private Generation start(Object prompt, GenerateOptions options) {
    String json = options == null ? "{}" : options.toJson();
    Module g = (Module) generateFn.call(prompt, json);
    try {
      return new Generation(g, tokenTextFn.retain());
    } catch (RuntimeException e) {
      g.close();
      throw e;
    }
  }

  private static NDArray ids(int[] tokens) {
    Objects.requireNonNull(tokens, "tokens");
    NDArray a = NDArray.empty(new long[] {tokens.length}, DataType.INT32);
    if (tokens.length > 0) a.copyFrom(tokens);
    return a;
  }

  /**
   * Releases this object's reference to the model; generations still open keep what they need alive
   * in the core. Idempotent.
   */
  @Override
  public void close() {
    configFn.close();
    encodeFn.close();
    decodeFn.close();
    tokenTextFn.close();
    generateFn.close();
    module.close();
  }
}
