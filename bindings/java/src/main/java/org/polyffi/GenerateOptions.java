package org.polyffi;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * How {@link LanguageModel#generate} samples, with fluent setters; what is not set takes the core's
 * default (maxTokens 16, temperature 1.0, topP 1.0, seed 0, no extra stops). The core checks the
 * values: a bad one is an FFIException of kind ValueError from generate.
 */
public final class GenerateOptions {
  private Integer maxTokens;
  private Double temperature;
  private Double topP;
  private Long seed;
  private List<String> stop;
  private List<Integer> stopTokenIds;

  public GenerateOptions() {}

  /** New options with nothing set. */
  public static GenerateOptions defaults() {
    return new GenerateOptions();
  }

  /** At most this many tokens (finish reason "length" when reached). */
  public GenerateOptions maxTokens(int n) {
    this.maxTokens = n;
    return this;
  }

  /** 0: greedy (argmax, first maximum wins); otherwise softmax temperature. */
  public GenerateOptions temperature(double t) {
    this.temperature = finite("temperature", t);
    return this;
  }

  /** Nucleus sampling: the smallest set of tokens whose probability reaches p, in (0, 1]. */
  public GenerateOptions topP(double p) {
    this.topP = finite("topP", p);
    return this;
  }

  /** Seed of the core's random generator: the same seed gives the same tokens in any binding. */
  public GenerateOptions seed(long seed) {
    this.seed = seed;
    return this;
  }

  /** Texts that end the generation; each must be exactly one token. Not returned. */
  public GenerateOptions stop(String... texts) {
    List<String> l = new ArrayList<>();
    for (String s : texts) l.add(Objects.requireNonNull(s, "stop text"));
    this.stop = l;
    return this;
  }

  /** Token ids that end the generation, added to the model's own; not returned. */
  public GenerateOptions stopTokenIds(int... ids) {
    List<Integer> l = new ArrayList<>();
    for (int id : ids) l.add(id);
    this.stopTokenIds = l;
    return this;
  }

  private static double finite(String name, double v) {
    // JSON has no NaN or infinity; say so here rather than as a parse error from the core.
    if (!Double.isFinite(v)) {
      throw new FFIException("ValueError", name + " must be a finite number, got " + v);
    }
    return v;
  }

  /** The options as the JSON object the core's generate takes (only the keys that are set). */
  String toJson() {
    StringBuilder b = new StringBuilder("{");
    if (maxTokens != null) key(b, "max_tokens").append(maxTokens);
    if (temperature != null) key(b, "temperature").append(temperature.doubleValue());
    if (topP != null) key(b, "top_p").append(topP.doubleValue());
    if (seed != null) key(b, "seed").append(seed.longValue());
    if (stop != null) {
      key(b, "stop").append('[');
      for (int i = 0; i < stop.size(); i++) {
        if (i > 0) b.append(',');
        quote(b, stop.get(i));
      }
      b.append(']');
    }
    if (stopTokenIds != null) {
      key(b, "stop_token_ids").append('[');
      for (int i = 0; i < stopTokenIds.size(); i++) {
        if (i > 0) b.append(',');
        b.append(stopTokenIds.get(i).intValue());
      }
      b.append(']');
    }
    return b.append('}').toString();
  }

  private static StringBuilder key(StringBuilder b, String name) {
    if (b.length() > 1) b.append(',');
    return b.append('"').append(name).append("\":");
  }

  static void quote(StringBuilder b, String s) {
    b.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    b.append('"');
  }

  @Override
  public String toString() {
    return "GenerateOptions" + toJson();
  }
}
