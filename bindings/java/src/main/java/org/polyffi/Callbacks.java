package org.polyffi;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The "callback" part, Java side: the glue's trampoline calls invoke4 / invokeN with the packed
 * arguments and reads the result back from the thread's Frame.
 */
final class Callbacks {
  private Callbacks() {}

  /** What the trampoline reads after the call. code -1: ref is the error text. */
  static final class Frame {
    int retCode;
    long retValue;
    Object retRef;
    boolean retOwned;
    ArrayList<Handle> borrowed = new ArrayList<>(4);
  }

  private static final ThreadLocal<Frame> FRAME = ThreadLocal.withInitial(Frame::new);

  /**
   * invoke4's answer "the result is in this thread's Frame" (see lastFrame). Any other value is an
   * int result, returned without touching a thread-local or a field.
   */
  static final long IN_FRAME = 0x8000_0000_5EED_F00DL;

  static boolean isHandleCode(int c) {
    return c == Values.DLTENSOR
        || c == Values.OBJECT
        || c == Values.MODULE
        || c == Values.FUNCTION
        || c == Values.NDARRAY;
  }

  /**
   * Up to four arguments without strings or bytes; codes packed 8 bits each. Scalar arguments and a
   * Long result take no thread-local and no frame.
   */
  static long invoke4(Callback cb, int n, int codes, long a0, long a1, long a2, long a3) {
    boolean handles = false;
    for (int i = 0; i < n; i++) handles |= isHandleCode((codes >>> (8 * i)) & 0xff);
    List<Handle> borrowed = handles ? FRAME.get().borrowed : null;
    int mark = handles ? borrowed.size() : 0;
    try {
      Object[] args = new Object[n];
      if (n > 0) args[0] = arg(borrowed, codes & 0xff, a0);
      if (n > 1) args[1] = arg(borrowed, (codes >>> 8) & 0xff, a1);
      if (n > 2) args[2] = arg(borrowed, (codes >>> 16) & 0xff, a2);
      if (n > 3) args[3] = arg(borrowed, (codes >>> 24) & 0xff, a3);
      Object r = cb.invoke(args);
      if (r instanceof Long) {
        long v = (Long) r;
        if (v != IN_FRAME) return v;
      }
      packReturn(FRAME.get(), r);
    } catch (Throwable t) {
      fail(FRAME.get(), t);
    } finally {
      if (handles) release(borrowed, mark);
    }
    return IN_FRAME;
  }

  /** invoke4 for the most common shape, one argument: fewer JNI arguments to push. */
  static long invoke1(Callback cb, int code, long a0) {
    boolean handle = isHandleCode(code);
    List<Handle> borrowed = handle ? FRAME.get().borrowed : null;
    int mark = handle ? borrowed.size() : 0;
    try {
      Object r = cb.invoke(code == Values.INT ? Long.valueOf(a0) : arg(borrowed, code, a0));
      if (r instanceof Long) {
        long v = (Long) r;
        if (v != IN_FRAME) return v;
      }
      packReturn(FRAME.get(), r);
    } catch (Throwable t) {
      fail(FRAME.get(), t);
    } finally {
      if (handle) release(borrowed, mark);
    }
    return IN_FRAME;
  }

  /** The Frame invoke4 left its result in. */
  static Frame lastFrame() {
    return FRAME.get();
  }

  /** Any arguments: refs[i] holds the String / byte[] of str / bytes slots. */
  static Frame invokeN(Callback cb, long[] vals, int[] codes, Object[] refs) {
    Frame fr = FRAME.get();
    int n = codes.length;
    Object[] args = new Object[n];
    List<Handle> borrowed = fr.borrowed;
    int mark = borrowed.size();
    try {
      for (int i = 0; i < n; i++) {
        int c = codes[i];
        args[i] = (c == Values.STR || c == Values.BYTES) ? refs[i] : arg(borrowed, c, vals[i]);
      }
      Object r = cb.invoke(args);
      packReturn(fr, r);
    } catch (Throwable t) {
      fail(fr, t);
    } finally {
      release(borrowed, mark);
    }
    return fr;
  }

  /** The runtime dropped the function made from cb (the glue then deletes its reference). */
  static void released(Object cb) {
    try {
      if (cb instanceof Callback) ((Callback) cb).release();
      else ((LongCallback) cb).release();
    } catch (Throwable ignored) {
      // a finalizer has nobody to report to
    }
  }

  // ---- LongCallback: a slot number instead of a reference -----------------------------------
  //
  // The glue's function for a LongCallback holds the callback's slot in LONG_SLOTS, not a JNI
  // reference: the upcall invokeLong(slot, x) then has two primitive arguments, which the JVM
  // passes for less than a reference it must resolve (callgrind: 16 instructions per callback
  // less, the array read included). A slot is taken by createLong and given back, with
  // LongCallback.release(), when the runtime drops the function (releaseLong, its finalizer),
  // so no call can be in flight on a slot that is freed or reused. The array only grows; a
  // write to it is published by writing the volatile field again.

  private static volatile LongCallback[] longSlots = new LongCallback[16];
  private static int[] freeLongSlots = new int[16]; // guarded by SLOT_LOCK
  private static int freeLongCount; // guarded by SLOT_LOCK
  private static int usedLongSlots; // slots ever handed out; guarded by SLOT_LOCK
  private static final Object SLOT_LOCK = new Object();

  /** A new function calling cb through the LongCallback fast path (Native.createLongCallback). */
  static long createLong(LongCallback cb) {
    int slot;
    synchronized (SLOT_LOCK) {
      LongCallback[] t = longSlots;
      if (freeLongCount > 0) {
        slot = freeLongSlots[--freeLongCount];
      } else {
        slot = usedLongSlots++;
        if (slot == t.length) t = java.util.Arrays.copyOf(t, 2 * t.length);
      }
      t[slot] = cb;
      longSlots = t;
    }
    // On failure the glue has already run the finalizer, which gave the slot back.
    return Native.createLongCallback(slot);
  }

  /** The runtime dropped the function of this slot: free it, then cb.release(). */
  static void releaseLong(int slot) {
    LongCallback cb;
    synchronized (SLOT_LOCK) {
      LongCallback[] t = longSlots;
      cb = t[slot];
      t[slot] = null;
      longSlots = t;
      if (freeLongCount == freeLongSlots.length) {
        freeLongSlots = java.util.Arrays.copyOf(freeLongSlots, 2 * freeLongCount);
      }
      freeLongSlots[freeLongCount++] = slot;
    }
    released(cb);
  }

  /** The LongCallback fast path: exceptions propagate to the glue, which calls stash(). */
  static long invokeLong(int slot, long x) throws Exception {
    return longSlots[slot].invoke(x);
  }

  /** Slots ever handed out (for tests: a freed slot is reused before a new one is taken). */
  static int longSlotsHandedOut() {
    synchronized (SLOT_LOCK) {
      return usedLongSlots;
    }
  }

  /** Keeps t for this thread (Errors) and returns its "Kind: message" text for C. */
  static String stash(Throwable t) {
    try {
      return Errors.stash(t);
    } catch (Throwable again) {
      return "RuntimeError: polyffi: callback failed and its error could not be described";
    }
  }

  private static Object arg(List<Handle> borrowed, int code, long v) {
    Object o = Values.unpack(code, v, false);
    if (o instanceof Handle) borrowed.add((Handle) o); // borrowed != null: a handle code
    return o;
  }

  private static void release(List<Handle> borrowed, int mark) {
    for (int i = borrowed.size() - 1; i >= mark; i--) borrowed.remove(i).close();
  }

  private static void fail(Frame fr, Throwable t) {
    String text;
    try {
      text = Errors.stash(t);
    } catch (Throwable again) {
      text = "RuntimeError: polyffi: callback failed and its error could not be described";
    }
    fr.retCode = -1;
    fr.retRef = text;
    fr.retOwned = false;
  }

  /** Packs a callback's return value; a value that cannot cross is a TypeError. */
  static void packReturn(Frame fr, Object r) {
    fr.retOwned = false;
    fr.retRef = null;
    if (r instanceof Long || r instanceof Integer || r instanceof Short || r instanceof Byte) {
      fr.retValue = ((Number) r).longValue();
      fr.retCode = Values.INT;
    } else if (r == null) {
      fr.retValue = 0;
      fr.retCode = Values.NULL;
    } else if (r instanceof Double || r instanceof Float) {
      fr.retValue = Double.doubleToRawLongBits(((Number) r).doubleValue());
      fr.retCode = Values.FLOAT;
    } else if (r instanceof Boolean) {
      fr.retValue = ((Boolean) r) ? 1 : 0;
      fr.retCode = Values.BOOL;
    } else if (r instanceof String) {
      String s = (String) r;
      if (s.indexOf('\0') >= 0) {
        owned(fr, Values.runtimeString(s));
      } else {
        fr.retRef = s;
        fr.retCode = Values.STR;
      }
    } else if (r instanceof byte[]) {
      fr.retRef = r;
      fr.retCode = Values.BYTES;
    } else if (r instanceof Handle) {
      Handle h = (Handle) r;
      if (h.typeCode() == Values.DLTENSOR) {
        // A view the callback received: its DLTensor dies with the call (as Python, Node, Rust).
        throw new FFIException(
            "ValueError", "a borrowed NDArray view cannot be returned from a callback");
      }
      fr.retValue = h.handle();
      fr.retCode = h.typeCode();
      fr.retRef = h; // keeps it reachable until the glue has set the return
    } else if (r instanceof Device) {
      fr.retValue = ((Device) r).packed();
      fr.retCode = Values.DEVICE;
    } else if (r instanceof DataType) {
      fr.retValue = ((DataType) r).packed();
      fr.retCode = Values.DTYPE;
    } else if (r instanceof Callback) {
      owned(fr, Function.convert((Callback) r));
    } else if (r instanceof long[]) {
      owned(fr, Values.shapeTuple((long[]) r));
    } else if (r instanceof List) {
      owned(fr, Values.toArray((List<?>) r));
    } else if (r instanceof Map) {
      owned(fr, Values.toMap((Map<?, ?>) r));
    } else if (r instanceof OpaqueHandle) {
      fr.retValue = ((OpaqueHandle) r).address();
      fr.retCode = Values.OPAQUE;
    } else {
      throw new FFIException(
          "TypeError", "callback returned an unsupported Java type " + r.getClass().getName());
    }
  }

  private static void owned(Frame fr, Handle h) {
    int code = h.typeCode();
    fr.retValue = h.detach();
    fr.retCode = code;
    fr.retOwned = true;
  }
}
