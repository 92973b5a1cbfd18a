package org.polyffi;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class CallbackTest {
  @BeforeAll
  static void fixtures() {
    TestEnv.loadFixtures();
  }

  static final class Boom extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Boom(String m) {
      super(m);
    }
  }

  @Test
  void javaExceptionComesOutAsTheSameObject() {
    Boom boom = new Boom("custom failure");
    try (Function apply = Function.getGlobal("testing.apply");
        Function thrower =
            Function.convert(
                args -> {
                  throw boom;
                })) {
      Boom caught = assertThrows(Boom.class, () -> apply.call(thrower));
      assertSame(boom, caught);
      // ...with the callback's frames in its trace
      boolean lambdaFrame = false;
      for (StackTraceElement el : caught.getStackTrace()) {
        lambdaFrame |= el.getMethodName().contains("lambda");
      }
      assertTrue(lambdaFrame);
    }
  }

  @Test
  void exceptionCrossesCAsKindMessage() {
    try (Function catcher = Function.getGlobal("testing.call_and_catch");
        Function f =
            Function.convert(
                args -> {
                  throw new IllegalArgumentException("bad value\nsecond line");
                });
        Function g =
            Function.convert(
                args -> {
                  throw new FFIException("KeyError", "no such key");
                })) {
      assertEquals("ValueError: bad value", catcher.call(f));
      assertEquals("KeyError: no such key", catcher.call(g));
    }
  }

  @Test
  void exceptionThroughANativeThreadBecomesFFIException() {
    try (Function onThread = Function.getGlobal("testing.call_on_thread");
        Function f =
            Function.convert(
                args -> {
                  throw new IndexOutOfBoundsException("far away");
                })) {
      FFIException e = assertThrows(FFIException.class, () -> onThread.call(f));
      assertEquals("IndexError", e.getKind());
      assertEquals("far away", e.getErrorMessage());
    }
  }

  @Test
  void nestedCallbacksRethrowTheInnerObject() {
    IllegalStateException inner = new IllegalStateException("inner");
    try (Function apply = Function.getGlobal("testing.apply");
        Function in =
            Function.convert(
                a -> {
                  throw inner;
                });
        Function out = Function.convert(a -> apply.call(in))) {
      assertSame(inner, assertThrows(IllegalStateException.class, () -> apply.call(out)));
    }
  }

  @Test
  void staleErrorOfASwallowedCallbackIsNotRethrownLater() {
    try (Function catcher = Function.getGlobal("testing.call_and_catch");
        Function raise = Function.getGlobal("testing.raise_error");
        Function f =
            Function.convert(
                args -> {
                  throw new IllegalArgumentException("swallowed");
                })) {
      assertEquals("ValueError: swallowed", catcher.call(f));
      FFIException e = assertThrows(FFIException.class, () -> raise.call("RuntimeError", "fresh"));
      assertEquals("fresh", e.getErrorMessage());
    }
  }

  @Test
  void releaseRunsExactlyOnce() {
    AtomicInteger released = new AtomicInteger();
    Callback cb =
        new Callback() {
          @Override
          public Object invoke(Object... args) {
            return args.length;
          }

          @Override
          public void release() {
            released.incrementAndGet();
          }
        };
    Function f = Function.convert(cb);
    try (Function wrap = Function.getGlobal("testing.wrap_callback")) {
      Function w = (Function) wrap.call(f);
      f.close();
      assertEquals(0, released.get()); // the wrapper still holds it
      assertEquals(3L, w.call(1L, 2L, 3L));
      w.close();
      assertEquals(1, released.get());
      w.close();
      f.close();
      assertEquals(1, released.get());
    }
  }

  @Test
  void callbackArgumentsAndReturns() {
    try (Function apply = Function.getGlobal("testing.apply")) {
      Function echoArgs = Function.convert(args -> java.util.Arrays.asList(args));
      Object r =
          apply.call(echoArgs, 1L, 2.5, "s\0t", new byte[] {1, 2}, true, null, Device.cpu(2));
      assertEquals(
          java.util.Arrays.asList(1L, 2.5, "s\0t", null, true, null, new Device(1, 2)).size(),
          ((java.util.List<?>) r).size());
      java.util.List<?> l = (java.util.List<?>) r;
      assertEquals(1L, l.get(0));
      assertEquals(2.5, l.get(1));
      assertEquals("s\0t", l.get(2));
      assertArrayEquals(new byte[] {1, 2}, (byte[]) l.get(3));
      assertEquals(true, l.get(4));
      assertNull(l.get(5));
      assertEquals(new Device(1, 2), l.get(6));
      echoArgs.close();
      // a callback that returns a Java lambda: it becomes a function
      try (Function maker = Function.convert(args -> (Callback) xs -> (Long) xs[0] * 10)) {
        try (Function made = (Function) apply.call(maker)) {
          assertEquals(70L, made.call(7L));
        }
      }
      // handles passed in are borrowed: retain() keeps one beyond the call
      Function[] kept = new Function[1];
      Handle[] borrowed = new Handle[1];
      try (Function keeper =
              Function.convert(
                  args -> {
                    borrowed[0] = (Handle) args[0];
                    kept[0] = ((Function) args[0]).retain();
                    // callLong caches the borrowed function's direct pair for the call's length
                    return ((Function) args[0]).callLong(20, 1);
                  });
          Function add = Function.getGlobal("testing.add")) {
        assertEquals(21L, apply.call(keeper, add));
      }
      assertTrue(borrowed[0].isClosed());
      assertThrows(IllegalStateException.class, () -> ((Function) borrowed[0]).call(1L, 2L));
      // the cached pair went with the borrowed handle: no call through it after the callback
      assertThrows(IllegalStateException.class, () -> ((Function) borrowed[0]).callLong(1, 2));
      assertEquals(5L, kept[0].call(2L, 3L));
      kept[0].close();
    }
  }

  @Test
  void aBorrowedViewCannotBeReturned() {
    // A view a callback received (code DLTensor) dies with the call: returning it is a
    // ValueError, as in Python, Node and Rust, not a dangling array for the caller.
    try (Function apply = Function.getGlobal("testing.apply");
        NDArray owned = NDArray.empty(new long[] {2}, DataType.FLOAT64)) {
      NDArray view = new NDArray(owned.handle(), Values.DLTENSOR, false);
      try (Function f = Function.convert(args -> view)) {
        FFIException e = assertThrows(FFIException.class, () -> apply.call(f));
        assertEquals("ValueError", e.getKind());
        assertTrue(
            e.getMessage().endsWith("a borrowed NDArray view cannot be returned from a callback"),
            e.getMessage());
      }
    }
  }

  @Test
  void unsupportedReturnIsATypeError() {
    try (Function apply = Function.getGlobal("testing.apply");
        Function f = Function.convert(args -> new Object())) {
      FFIException e = assertThrows(FFIException.class, () -> apply.call(f));
      assertEquals("TypeError", e.getKind());
      assertTrue(e.getMessage().contains("java.lang.Object"), e.getMessage());
    }
  }

  @Test
  void longCallbackFastPath() {
    AtomicInteger released = new AtomicInteger();
    IllegalStateException boom = new IllegalStateException("long boom");
    LongCallback square =
        new LongCallback() {
          @Override
          public long invoke(long x) {
            if (x < 0) throw boom;
            return x * x;
          }

          @Override
          public void release() {
            released.incrementAndGet();
          }
        };
    try (Function callN = Function.getGlobal("testing.call_n");
        Function apply = Function.getGlobal("testing.apply");
        Function onThread = Function.getGlobal("testing.call_on_thread")) {
      try (Function f = Function.convertLong(square)) {
        assertEquals(285L, callN.call(f, 10L)); // 0 + 1 + 4 + ... + 81
        assertEquals(49L, apply.call(f, 7L));
        assertEquals(36L, onThread.call(f, 6L));
        assertSame(boom, assertThrows(IllegalStateException.class, () -> apply.call(f, -1L)));
        FFIException arity = assertThrows(FFIException.class, () -> apply.call(f, 1L, 2L));
        assertEquals("TypeError", arity.getKind());
        FFIException type = assertThrows(FFIException.class, () -> apply.call(f, "x"));
        assertTrue(type.getMessage().contains("argument 0 is str"), type.getMessage());
      }
      assertEquals(1, released.get());
      // a plain lambda passed as an argument becomes a function for the call
      assertEquals(45L, callN.call((LongCallback) x -> x, 10L));
    }
  }

  @Test
  void longCallbackSlotsAreReusedAndReleasedExactlyOnce() {
    // A LongCallback's function holds a slot number in Callbacks' table: slots must go back when
    // the runtime drops the function, be reused by later callbacks (which then call their own
    // code, not the old one's), and the table must grow past its first size.
    AtomicInteger released = new AtomicInteger();
    List<Function> fs = new ArrayList<>();
    try (Function apply = Function.getGlobal("testing.apply")) {
      for (int k = 0; k < 40; k++) {
        final long add = k;
        fs.add(
            Function.convertLong(
                new LongCallback() {
                  @Override
                  public long invoke(long x) {
                    return x + add;
                  }

                  @Override
                  public void release() {
                    released.incrementAndGet();
                  }
                }));
      }
      for (int k = 0; k < 40; k++) assertEquals(100L + k, apply.call(fs.get(k), 100L));
      for (int k = 0; k < 40; k += 2) fs.get(k).close(); // free every other slot
      assertEquals(20, released.get());
      int handedOut = Callbacks.longSlotsHandedOut();
      List<Function> again = new ArrayList<>();
      for (int k = 0; k < 20; k++) {
        final long mul = k + 2;
        again.add(Function.convertLong(x -> x * mul));
      }
      assertEquals(handedOut, Callbacks.longSlotsHandedOut()); // they took the freed slots
      for (int k = 0; k < 20; k++) assertEquals(10L * (k + 2), apply.call(again.get(k), 10L));
      for (int k = 1; k < 40; k += 2) assertEquals(100L + k, apply.call(fs.get(k), 100L));
      for (Function f : again) f.close();
    } finally {
      for (Function f : fs) f.close();
    }
    assertEquals(40, released.get());
  }

  @Test
  void longCallbackWritesEveryLongStraightIntoTheCallersSlot() {
    // LongCallback is a direct function: its result goes into the caller's slot without the
    // runtime's return staging. Called from Java (TVMFuncCall), from C (testing.apply) and
    // through the fast primitive path, every long arrives unchanged and as an int.
    try (Function apply = Function.getGlobal("testing.apply");
        Function identity = Function.convertLong(x -> x);
        Function negate = Function.convertLong(x -> -x)) {
      for (long v : new long[] {0, 1, -1, Long.MIN_VALUE, Long.MAX_VALUE, Callbacks.IN_FRAME}) {
        assertEquals(v, identity.callLong(v));
        assertEquals(v, identity.call(v));
        assertEquals(v, apply.call(identity, v));
        assertEquals(-v, negate.callLong(v));
      }
      assertEquals(1L, identity.call(true)); // a bool argument is an int to a LongCallback
      FFIException none = assertThrows(FFIException.class, identity::callLong);
      assertEquals("TypeError", none.getKind());
      assertTrue(none.getMessage().contains("got 0 argument(s)"), none.getMessage());
    }
  }

  @Test
  void everyLongResultRoundTripsIncludingTheFrameMarker() {
    try (Function apply = Function.getGlobal("testing.apply")) {
      for (long v : new long[] {0, -1, Long.MIN_VALUE, Long.MAX_VALUE, Callbacks.IN_FRAME}) {
        try (Function f = Function.convert(args -> v)) {
          assertEquals(v, apply.call(f));
        }
      }
      try (Function f = Function.convert(args -> 7)) { // Integer: through the frame
        assertEquals(7L, apply.call(f));
      }
    }
  }
}
