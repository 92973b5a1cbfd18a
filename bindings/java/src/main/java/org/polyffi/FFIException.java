package org.polyffi;

import java.util.NoSuchElementException;

/**
 * An error from polyffi or from native code behind it. {@link #getKind()} is the kind of the error
 * text's first line ({@code Kind: message}), {@code TVMError} when the text names none.
 */
public class FFIException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final String kind;
  private final String errorMessage;

  /** From a native error text, {@code Kind: message} optionally followed by a traceback. */
  public FFIException(String text) {
    super(text);
    String first = text == null ? "" : text.split("\n", 2)[0];
    int colon = first.indexOf(": ");
    if (colon > 0 && first.substring(0, colon).matches("[A-Za-z0-9_.]+")) {
      kind = first.substring(0, colon);
      errorMessage = first.substring(colon + 2);
    } else {
      kind = "TVMError";
      errorMessage = first;
    }
  }

  /** An error of the given kind, as a Java callback may throw one to name its kind. */
  public FFIException(String kind, String message) {
    super(kind + ": " + message);
    this.kind = kind;
    this.errorMessage = message;
  }

  /** The kind: "ValueError", "TypeError", ..., or any other kind text the raiser used. */
  public String getKind() {
    return kind;
  }

  /** The first line of the text without its kind. */
  public String getErrorMessage() {
    return errorMessage;
  }

  /**
   * The kind a Java exception has when it crosses into C: an FFIException keeps its own;
   * IllegalArgumentException is ValueError, ClassCastException TypeError, IndexOutOfBoundsException
   * IndexError, NoSuchElementException KeyError, UnsupportedOperationException NotImplementedError,
   * AssertionError AssertionError, a plain RuntimeException RuntimeError; any other is its simple
   * class name.
   */
  public static String kindOf(Throwable t) {
    if (t instanceof FFIException) return ((FFIException) t).getKind();
    if (t instanceof IllegalArgumentException) return "ValueError";
    if (t instanceof ClassCastException) return "TypeError";
    if (t instanceof IndexOutOfBoundsException) return "IndexError";
    if (t instanceof NoSuchElementException) return "KeyError";
    if (t instanceof UnsupportedOperationException) return "NotImplementedError";
    if (t instanceof AssertionError) return "AssertionError";
    if (t.getClass() == RuntimeException.class) return "RuntimeError";
    return t.getClass().getSimpleName().replace('$', '.');
  }

  /** The first line of a Java exception as it crosses C: {@code Kind: message}. */
  public static String textOf(Throwable t) {
    String msg;
    if (t instanceof FFIException) {
      msg = ((FFIException) t).getErrorMessage();
    } else {
      msg = t.getMessage() == null ? t.getClass().getName() : t.getMessage();
    }
    return kindOf(t) + ": " + msg.split("\n", 2)[0];
  }
}
