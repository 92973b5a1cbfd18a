package org.polyffi;

import java.lang.ref.Reference;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.UnaryOperator;

/**
 * A packed function (TVM's PackedFunc). AutoCloseable; close() is idempotent; use after close
 * throws IllegalStateException; a Cleaner frees what nobody closed.
 *
 * <p>{@link #call(Object...)} converts any supported Java value. The primitive paths ({@link
 * #callLong(long, long, long)}, {@link #callDouble(double)}, ...) pass longs / doubles straight
 * into a stack TVMValue array in the glue: no boxing, no allocation per call.
 *
 * <p>Closing a Function while another thread is inside a call on it is a programming error.
 */
public final class Function extends Handle {
  Function(long handle, boolean owned) {
    super(handle, Values.FUNCTION, owned);
  }

  // ---- registry ------------------------------------------------------------------------------

  /** The global function; missing: FFIException of kind ValueError. */
  public static Function getGlobal(String name) {
    Function f = getGlobal(name, true);
    if (f == null) throw new FFIException("ValueError", "Cannot find global function " + name);
    return f;
  }

  /** The global function, or null when missing and allowMissing. */
  public static Function getGlobal(String name, boolean allowMissing) {
    Objects.requireNonNull(name, "name");
    long h = Native.getGlobal(name);
    if (h == 0) {
      if (allowMissing) return null;
      throw new FFIException("ValueError", "Cannot find global function " + name);
    }
    return new Function(h, true);
  }

  /** A function that calls cb; the runtime's finalizer calls cb.release() exactly once. */
  public static Function convert(Callback cb) {
    Objects.requireNonNull(cb, "cb");
    return new Function(Native.createCallback(cb), true);
  }

  /**
   * A function that calls cb with one int argument: the callback fast path (no boxing, no
   * allocation per call). Other arguments are a TypeError.
   */
  public static Function convertLong(LongCallback cb) {
    Objects.requireNonNull(cb, "cb");
    return new Function(Callbacks.createLong(cb), true);
  }

  /** Registers cb as a global function; returns the function (the caller closes it). */
  public static Function register(String name, Callback cb, boolean override) {
    Function f = convert(cb);
    try {
      f.register(name, override);
    } catch (RuntimeException e) {
      f.close();
      throw e;
    }
    return f;
  }

  /** Registers this function under name (the registry keeps its own reference). */
  public void register(String name, boolean override) {
    Objects.requireNonNull(name, "name");
    Native.registerGlobal(name, handle(), override);
    Reference.reachabilityFence(this);
  }

  public static List<String> listGlobalNames() {
    return Arrays.asList(Native.listGlobalNames());
  }

  /** Removes a global; an absent name is not an error. */
  public static void removeGlobal(String name) {
    Native.removeGlobal(Objects.requireNonNull(name, "name"));
  }

  // ---- calls ---------------------------------------------------------------------------------

  /** Calls with converted arguments; returns Long, Double, Boolean, String, byte[], ... */
  public Object call(Object... args) {
    long h = handle();
    int n = args.length;
    Values.Frames frames = Values.FRAMES.get();
    Values.Frame f = frames.push(n);
    try {
      for (int i = 0; i < n; i++) Values.pack(f, i, args[i]);
      Object ref = Native.call(h, f.addr, f.cap, f.refs, n);
      return Values.result(ref, f);
    } finally {
      frames.pop(f);
      Reference.reachabilityFence(this);
    }
  }

  /** call(args) as a long (TypeError unless the result is an int). */
  long callLongObj(Object... args) {
    Object r = call(args);
    if (r instanceof Long) return (Long) r;
    throw new FFIException("TypeError", "expected int but got " + describe(r));
  }

  static String describe(Object r) {
    return r == null ? "None" : r.getClass().getSimpleName();
  }

  /**
   * Submits call(args) to the core's worker pool (one per process, shared by every binding): the
   * arguments are converted now, the call runs on a pool worker and completes the future there. A
   * full queue fails the future with an FFIException of kind QueueFullError; {@code cancel(true)}
   * cancels the call (see {@link AsyncCall}).
   */
  public CompletableFuture<Object> callAsync(Object... args) {
    return submitAsync(args.clone(), null);
  }

  /** Runs call(args) on the given executor instead of the core's pool. */
  public CompletableFuture<Object> callAsync(Executor executor, Object... args) {
    handle(); // fail now, not in the future, when already closed
    Object[] copy = args.clone();
    return CompletableFuture.supplyAsync(() -> call(copy), executor);
  }

  /** callAsync with the result passed through convert on the worker (which owns it). */
  CompletableFuture<Object> submitAsync(Object[] args, UnaryOperator<Object> convert) {
    long h = handle(); // fail now, not in the future, when already closed
    AsyncCall future = new AsyncCall(args, convert);
    int n = args.length;
    Values.Frames frames = Values.FRAMES.get();
    Values.Frame f = frames.push(n);
    try {
      for (int i = 0; i < n; i++) Values.pack(f, i, args[i]);
      // The pool copies strings and bytes and retains handles: the frame's temporaries may go.
      future.submitted(Native.asyncSubmit(h, f.addr, f.cap, f.refs, n, future));
    } catch (RuntimeException e) {
      future.completeExceptionally(e);
    } finally {
      frames.pop(f);
      Reference.reachabilityFence(this);
    }
    return future;
  }

  /** The core's async pool: worker count and queue limit, and the calls waiting now. */
  public record AsyncPool(int numWorkers, int queueLimit, int queued) {}

  /**
   * Sizes the core's async pool: numWorkers before the first async call, queueLimit at any time; 0
   * keeps a setting. Negative: FFIException of kind ValueError.
   */
  public static AsyncPool configureAsync(int numWorkers, int queueLimit) {
    int[] v = Native.asyncConfigure(numWorkers, queueLimit);
    return new AsyncPool(v[0], v[1], v[2]);
  }

  // ---- primitive fast paths: ints in, int out (bool results are 0/1) -------------------------

  // TVMFuncGetDirect's (function, resource) pair for this handle, fetched by the first callLong:
  // callLong calls the pair itself, without TVMFuncCall's checks of the handle and the arrays.
  // directFn is also callLong's open check: 0 until the first call and again once the handle is
  // released (close, detach: released() below), so a call on a closed Function goes to
  // fetchDirect, whose handle() throws IllegalStateException. Both writes happen under the
  // state's lock, which the release of the handle takes too, so a fetch racing a close cannot
  // leave a pair behind. directRes is written before the volatile directFn, so a thread that
  // sees directFn also sees directRes.
  private long directRes;
  private volatile long directFn;

  private long fetchDirect() {
    synchronized (state) {
      long[] pair = Native.getDirect(handle());
      directRes = pair[1];
      directFn = pair[0];
      return pair[0];
    }
  }

  @Override
  void released() {
    synchronized (state) {
      directFn = 0;
    }
  }

  public long callLong() {
    long f = directFn;
    if (f == 0) f = fetchDirect();
    long r = Native.directL0(f, directRes);
    Reference.reachabilityFence(this);
    return r;
  }

  public long callLong(long a) {
    long f = directFn;
    if (f == 0) f = fetchDirect();
    long r = Native.directL1(f, directRes, a);
    Reference.reachabilityFence(this);
    return r;
  }

  public long callLong(long a, long b) {
    long f = directFn;
    if (f == 0) f = fetchDirect();
    long r = Native.directL2(f, directRes, a, b);
    Reference.reachabilityFence(this);
    return r;
  }

  public long callLong(long a, long b, long c) {
    long f = directFn;
    if (f == 0) f = fetchDirect();
    long r = Native.directL3(f, directRes, a, b, c);
    Reference.reachabilityFence(this);
    return r;
  }

  public long callLong(long a, long b, long c, long d) {
    long f = directFn;
    if (f == 0) f = fetchDirect();
    long r = Native.directL4(f, directRes, a, b, c, d);
    Reference.reachabilityFence(this);
    return r;
  }

  public long callLong(long... args) {
    long r = Native.callLN(handle(), args);
    Reference.reachabilityFence(this);
    return r;
  }

  // floats in, float out (an int result is widened)

  public double callDouble(double a) {
    double r = Native.callD1(handle(), a);
    Reference.reachabilityFence(this);
    return r;
  }

  public double callDouble(double a, double b) {
    double r = Native.callD2(handle(), a, b);
    Reference.reachabilityFence(this);
    return r;
  }

  public double callDouble(double a, double b, double c) {
    double r = Native.callD3(handle(), a, b, c);
    Reference.reachabilityFence(this);
    return r;
  }

  public double callDouble(double... args) {
    double r = Native.callDN(handle(), args);
    Reference.reachabilityFence(this);
    return r;
  }

  /** No arguments, result ignored. */
  public void callVoid() {
    Native.callV0(handle());
    Reference.reachabilityFence(this);
  }

  @Override
  public Function retain() {
    return new Function(Native.retain(typeCode(), handle()), true);
  }
}
