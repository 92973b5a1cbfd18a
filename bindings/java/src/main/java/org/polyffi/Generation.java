package org.polyffi;

import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Flow;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

/**
 * One generation of a {@link LanguageModel}: the tokens as an {@link Iterator} (each hasNext that
 * has no token yet runs one step in the core: the prompt's prefill first, then a decode step) or as
 * a {@link Flow.Publisher} whose steps run on the binding's async executor. The core picks the
 * tokens, stops and frees the sequence; this class only calls its functions.
 *
 * <p>AutoCloseable: close() frees the generation's place in the model's KV cache at once (otherwise
 * when the object is collected). An error from a step (the KV cache being full) is an FFIException,
 * and the generation ends.
 */
public final class Generation implements Iterator<Token>, AutoCloseable {
  private final Module module;
  private final Function nextFn;
  private final Function finishReasonFn;
  private final Function logitsFn;
  private final Function promptTokensFn;
  private final Function completionTokensFn;
  private final Function closeFn;
  private final Function tokenTextFn;
  private final AtomicBoolean subscribed = new AtomicBoolean();

  // One step (or other call on the generation) at a time, also across threads: an async step
  // takes the permit on the caller's thread and its completion gives it back on the pool's. The
  // fields below are read and written only while holding it.
  private final Semaphore stepping = new Semaphore(1);
  private Token pending;
  private boolean done;
  private boolean closed;

  Generation(Module module, Function tokenTextFn) {
    this.module = module;
    this.tokenTextFn = tokenTextFn;
    this.nextFn = module.getFunction("next");
    this.finishReasonFn = module.getFunction("finish_reason");
    this.logitsFn = module.getFunction("logits");
    this.promptTokensFn = module.getFunction("prompt_tokens");
    this.completionTokensFn = module.getFunction("completion_tokens");
    this.closeFn = module.getFunction("close");
  }

  /** The module the core made ({@code polyffi.Generation}); owned by this object. */
  public Module module() {
    return module;
  }

  @Override
  public boolean hasNext() {
    stepping.acquireUninterruptibly();
    try {
      return fetch();
    } finally {
      stepping.release();
    }
  }

  @Override
  public Token next() {
    stepping.acquireUninterruptibly();
    try {
      if (!fetch()) throw new NoSuchElementException("the generation has finished");
      Token t = pending;
      pending = null;
      return t;
    } finally {
      stepping.release();
    }
  }

  /** Runs a step unless a token is waiting; whether one is. Holds the permit. */
  private boolean fetch() {
    if (pending != null) return true;
    if (done) return false;
    long id;
    try {
      id = nextFn.callLong();
    } catch (RuntimeException e) {
      done = true;
      throw e;
    }
    pending = token(id);
    return pending != null;
  }

  /** The token for an id next() returned, null (and done) for -1. Holds the permit. */
  private Token token(long id) {
    if (id < 0) {
      done = true;
      return null;
    }
    return new Token((int) id, (String) tokenTextFn.call(id));
  }

  /** "" while running, then "stop" (a stop token came) or "length" (maxTokens reached). */
  public String finishReason() {
    return open(() -> (String) finishReasonFn.call());
  }

  /** A copy of the logits the last token was chosen from (ValueError before the first token). */
  public float[] logits() {
    return open(
        () -> {
          try (NDArray a = (NDArray) logitsFn.call()) {
            return a.toFloatArray();
          }
        });
  }

  /** How many tokens the prompt has. */
  public int promptTokens() {
    return open(() -> (int) promptTokensFn.callLong());
  }

  /** How many tokens have been generated so far (a stop token not counted). */
  public int completionTokens() {
    return open(() -> (int) completionTokensFn.callLong());
  }

  /** f's result, called with the permit on an open generation. */
  private <T> T open(Supplier<T> f) {
    stepping.acquireUninterruptibly();
    try {
      if (closed) throw new IllegalStateException("the generation is closed");
      return f.get();
    } finally {
      stepping.release();
    }
  }

  /**
   * One step off the calling thread: the next token, or null when the generation has finished. A
   * token an earlier hasNext() fetched comes first.
   */
  private CompletableFuture<Token> stepAsync() {
    stepping.acquireUninterruptibly();
    boolean handedOver = false;
    try {
      if (pending != null) {
        Token t = pending;
        pending = null;
        return CompletableFuture.completedFuture(t);
      }
      if (done) return CompletableFuture.completedFuture(null);
      CompletableFuture<Token> f =
          nextFn
              .callAsync()
              .handle(
                  (r, e) -> {
                    try {
                      if (e != null) {
                        done = true;
                        throw e instanceof CompletionException
                            ? (CompletionException) e
                            : new CompletionException(e);
                      }
                      return token((Long) r);
                    } finally {
                      stepping.release();
                    }
                  });
      handedOver = true;
      return f;
    } finally {
      if (!handedOver) stepping.release();
    }
  }

  /**
   * The remaining tokens as a Flow publisher for one subscriber (a second one gets an
   * IllegalStateException through onError). Each step runs on the binding's async executor when the
   * subscriber has demand; request(n) with n &lt;= 0 ends it with an IllegalArgumentException.
   * onComplete comes after the last token (finishReason() then says why); cancel() closes this
   * generation once a step still running has finished.
   */
  public Flow.Publisher<Token> publisher() {
    return subscriber -> {
      if (!subscribed.compareAndSet(false, true)) {
        subscriber.onSubscribe(
            new Flow.Subscription() {
              @Override
              public void request(long n) {}

              @Override
              public void cancel() {}
            });
        subscriber.onError(
            new IllegalStateException("a generation's publisher takes one subscriber"));
        return;
      }
      Subscription s = new Subscription(subscriber);
      subscriber.onSubscribe(s);
    };
  }

  private final class Subscription implements Flow.Subscription {
    private final Flow.Subscriber<? super Token> subscriber;
    // Guarded by this.
    private long demand;
    private boolean running;
    private boolean finished;

    Subscription(Flow.Subscriber<? super Token> subscriber) {
      this.subscriber = subscriber;
    }

    @Override
    public void request(long n) {
      boolean bad;
      synchronized (this) {
        if (finished) return;
        bad = n <= 0;
        if (bad) {
          finished = true;
        } else {
          demand = demand + n < 0 ? Long.MAX_VALUE : demand + n;
        }
      }
      if (bad) {
        subscriber.onError(
            new IllegalArgumentException(
                "request(n) needs n > 0 (Reactive Streams 3.9), got " + n));
        return;
      }
      drain();
    }

    @Override
    public void cancel() {
      boolean closeNow;
      synchronized (this) {
        if (finished) return;
        finished = true;
        closeNow = !running;
      }
      if (closeNow) Generation.this.close();
    }

    /** Starts one step when there is demand and none is running. */
    private void drain() {
      synchronized (this) {
        if (running || finished || demand == 0) return;
        running = true;
      }
      CompletableFuture<Token> step;
      try {
        step = stepAsync();
      } catch (RuntimeException e) { // closed, or the executor refused the task
        step = CompletableFuture.failedFuture(e);
      }
      step.whenComplete(this::stepped);
    }

    private void stepped(Token t, Throwable e) {
      boolean cancelled;
      synchronized (this) {
        running = false;
        cancelled = finished;
        if (!cancelled && (e != null || t == null)) finished = true;
        if (!cancelled && t != null && e == null) demand--;
      }
      if (cancelled) {
        Generation.this.close();
      } else if (e != null) {
        subscriber.onError(
            e instanceof CompletionException && e.getCause() != null ? e.getCause() : e);
      } else if (t == null) {
        subscriber.onComplete();
      } else {
        subscriber.onNext(t);
        drain();
      }
    }
  }

  /** Frees the generation's sequence in the cache now; later steps find no token. Idempotent. */
  @Override
  public void close() {
    stepping.acquireUninterruptibly(); // after a step still running
    try {
      if (closed) return;
      closed = true;
      done = true;
      pending = null;
      closeFn.call();
    } finally {
      if (closed && !module.isClosed()) {
        nextFn.close();
        finishReasonFn.close();
        logitsFn.close();
        promptTokensFn.close();
        completionTokensFn.close();
        closeFn.close();
        tokenTextFn.close();
        module.close();
      }
      stepping.release();
    }
  }
}
