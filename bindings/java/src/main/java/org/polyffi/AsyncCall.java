package org.polyffi;

import java.util.concurrent.CompletableFuture;
import java.util.function.UnaryOperator;

/**
 * A call submitted to the core's worker pool (one per process, shared by every binding): the future
 * {@link Function#callAsync(Object...)} and {@link VirtualMachine#invokeAsync(String, Object...)}
 * return. The glue's completion, on a pool worker attached to the JVM, calls {@link #onDone};
 * dependent stages without an executor of their own run there too.
 *
 * <p>{@code cancel(true)} cancels the core call: one not yet started never runs, a running model
 * stops at its next check (between graph nodes, VM instructions). {@code cancel(false)} only
 * completes the future; the call runs on and its result is released.
 */
final class AsyncCall extends CompletableFuture<Object> {
  private final UnaryOperator<Object> convert;
  private Object keepAlive; // the arguments: borrowed views stay reachable until the call ends
  private long call; // the core's call handle, 0 once released; guarded by this
  private boolean done; // guarded by this

  AsyncCall(Object keepAlive, UnaryOperator<Object> convert) {
    this.keepAlive = keepAlive;
    this.convert = convert;
  }

  /** Records the call handle TVMAsyncSubmit returned (the completion may already have run). */
  synchronized void submitted(long handle) {
    if (done) {
      Native.asyncFree(handle);
    } else {
      call = handle;
    }
  }

  /**
   * The completion, from the glue on the pool worker. status: 0 returned (value / code, or ref for
   * a String or byte[] result); otherwise error holds "Kind: message". Never throws: the worker has
   * nowhere to report to.
   */
  void onDone(int status, long value, int code, Object ref, String error) {
    synchronized (this) {
      done = true;
      if (call != 0) {
        Native.asyncFree(call);
        call = 0;
      }
      keepAlive = null;
    }
    if (status != 0) {
      completeExceptionally(Errors.fromNative(error));
      return;
    }
    Object result = null;
    try {
      result = code == Values.STR || code == Values.BYTES ? ref : Values.unpack(code, value, true);
      result = convert == null ? result : convert.apply(result);
    } catch (Throwable t) {
      closeQuietly(result);
      completeExceptionally(t);
      return;
    }
    if (!complete(result)) closeQuietly(result); // cancelled meanwhile: nobody will take it
  }

  @Override
  public boolean cancel(boolean mayInterruptIfRunning) {
    if (mayInterruptIfRunning) {
      synchronized (this) {
        if (call != 0) Native.asyncCancel(call);
      }
    }
    return super.cancel(mayInterruptIfRunning);
  }

  private static void closeQuietly(Object r) {
    if (r instanceof AutoCloseable) {
      try {
        ((AutoCloseable) r).close();
      } catch (Exception ignored) {
        // a release failure has no caller to go to
      }
    } else if (r instanceof java.util.List) {
      for (Object x : (java.util.List<?>) r) closeQuietly(x);
    }
  }
}
