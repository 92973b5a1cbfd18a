package org.polyffi;

import java.lang.ref.Cleaner;
import java.util.concurrent.ThreadFactory;

/**
 * A reference to a native object (function, module, array, object). close() releases it and is
 * idempotent; use after close throws IllegalStateException; a Cleaner releases what nobody closed
 * once the wrapper is unreachable. Handles passed into a callback are borrowed: valid during the
 * call only (take your own reference with {@link #retain()}).
 */
public abstract class Handle implements AutoCloseable {
  private static final ThreadFactory DAEMON =
      r -> {
        Thread t = new Thread(r, "polyffi-cleaner");
        t.setDaemon(true);
        return t;
      };
  static final Cleaner CLEANER = Cleaner.create(DAEMON);

  /** The part the Cleaner keeps: it must not refer to the wrapper. */
  static final class State implements Runnable {
    volatile long handle;
    final int code;
    final boolean owned;
    volatile Object keepAlive; // e.g. the ByteBuffer behind a zero-copy NDArray

    State(long handle, int code, boolean owned) {
      this.handle = handle;
      this.code = code;
      this.owned = owned;
    }

    @Override
    public void run() {
      long h;
      synchronized (this) {
        h = handle;
        handle = 0;
      }
      if (h != 0 && owned) Native.free(code, h);
      keepAlive = null;
    }
  }

  final State state;
  private final Cleaner.Cleanable cleanable;

  Handle(long handle, int code, boolean owned) {
    state = new State(handle, code, owned);
    cleanable = owned ? CLEANER.register(this, state) : null;
  }

  /** The raw handle; IllegalStateException once closed. */
  final long handle() {
    long h = state.handle;
    if (h == 0) throw new IllegalStateException(getClass().getSimpleName() + " is closed");
    return h;
  }

  /** The raw C handle (for interop with other C code); 0 once closed. */
  public final long address() {
    return state.handle;
  }

  final int typeCode() {
    return state.code;
  }

  public final boolean isClosed() {
    return state.handle == 0;
  }

  /** Whether this wrapper owns its reference (false for borrowed callback arguments). */
  public final boolean isOwned() {
    return state.owned;
  }

  /** Releases the native reference now; calling it again does nothing. */
  @Override
  public void close() {
    if (cleanable != null) {
      cleanable.clean();
    } else {
      state.handle = 0; // a borrowed view: nothing to free
    }
    released();
  }

  /**
   * Called after close() or detach() has set the handle to 0: a subclass drops what it cached from
   * the handle (Function: its direct pair). Not called by the Cleaner (nobody can call an
   * unreachable wrapper).
   */
  void released() {}

  /** Hands the reference over to C (no free here any more); returns it. */
  final long detach() {
    long h;
    synchronized (state) {
      h = state.handle;
      state.handle = 0;
    }
    if (cleanable != null) cleanable.clean(); // handle is 0: only unregisters
    released();
    return h;
  }

  /** A new owned reference of the same native value (for keeping a borrowed argument). */
  abstract Handle retain();

  @Override
  public String toString() {
    return getClass().getSimpleName() + "(0x" + Long.toHexString(state.handle) + ")";
  }

  /** Same native object (identity of handles). */
  @Override
  public boolean equals(Object o) {
    return o instanceof Handle && ((Handle) o).state.handle == state.handle && state.handle != 0;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(state.handle);
  }
}
