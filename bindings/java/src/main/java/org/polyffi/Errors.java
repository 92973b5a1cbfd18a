package org.polyffi;

/**
 * The "errors" part: native error text to Java exceptions. A Java exception thrown inside a
 * callback is kept per thread while it crosses C as {@code Kind: message}; when the outer call on
 * the same thread fails with that very text, the original object is thrown again.
 */
final class Errors {
  private Errors() {}

  private static final class Pending {
    final Throwable error;
    final String firstLine;

    Pending(Throwable error, String firstLine) {
      this.error = error;
      this.firstLine = firstLine;
    }
  }

  private static final ThreadLocal<Pending> PENDING = new ThreadLocal<>();

  /** Keeps t for this thread and returns the text to hand to C. */
  static String stash(Throwable t) {
    String text = FFIException.textOf(t);
    PENDING.set(new Pending(t, text));
    return text;
  }

  /** Called by the glue when a call failed: the stashed exception or a new FFIException. */
  static Throwable fromNative(String text) {
    Pending p = PENDING.get();
    if (p != null) {
      PENDING.remove();
      String first = text.split("\n", 2)[0];
      if (first.equals(p.firstLine)) return p.error;
    }
    return new FFIException(text);
  }

  /** Drops what a swallowed callback error left on this thread. */
  static void clearPending() {
    PENDING.remove();
  }
}
