package org.polyffi;

/**
 * A Java function callable from C. Arguments arrive converted like return values (Long, Double,
 * Boolean, String, byte[], Function, ...); handles among them are valid during the call (use {@link
 * Handle#retain()} to keep one). {@link #release()} runs exactly once when the runtime drops its
 * last reference, on whatever thread does so.
 */
@FunctionalInterface
public interface Callback {
  Object invoke(Object... args) throws Exception;

  /** Called once when the native function made from this callback dies. */
  default void release() {}
}
