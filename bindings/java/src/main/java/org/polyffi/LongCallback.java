package org.polyffi;

/**
 * A Java function of one int (long) returning an int: the callback fast path. C calls it without
 * boxing or allocating; an exception thrown here crosses C like any callback's. {@link #release()}
 * runs once when the runtime drops the function.
 */
@FunctionalInterface
public interface LongCallback {
  long invoke(long x) throws Exception;

  default void release() {}
}
