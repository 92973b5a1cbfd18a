package org.polyffi;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class FunctionTest {
  @BeforeAll
  static void fixtures() {
    TestEnv.loadFixtures();
  }

  static void awaitLive(long want) throws InterruptedException {
    long live = TestEnv.liveObjects();
    for (int i = 0; i < 100 && live != want; i++) {
      System.gc();
      Thread.sleep(20);
      live = TestEnv.liveObjects();
    }
    assertEquals(want, live, "testing.live_objects()");
  }

  @Test
  void tryWithResourcesReleasesTheFunction() throws InterruptedException {
    long before = TestEnv.liveObjects();
    try (Function make = Function.getGlobal("testing.return_closure");
        Function add5 = (Function) make.call(5L)) {
      assertEquals(before + 1, TestEnv.liveObjects());
      assertEquals(12L, add5.call(7L));
    }
    assertEquals(before, TestEnv.liveObjects()); // released at once, no GC involved
  }

  @Test
  void closeIsIdempotentAndUseAfterCloseThrows() {
    Function f = Function.getGlobal("testing.add");
    f.close();
    f.close();
    assertTrue(f.isClosed());
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> f.call(1L, 2L));
    assertTrue(e.getMessage().contains("closed"), e.getMessage());
    assertThrows(IllegalStateException.class, () -> f.callLong(1, 2));
    assertThrows(IllegalStateException.class, () -> f.callAsync(1L, 2L));
    assertThrows(IllegalStateException.class, () -> f.register("java.closed", true));
  }

  @Test
  void cleanerFreesWhatNobodyClosed() throws InterruptedException {
    long before = TestEnv.liveObjects();
    try (Function make = Function.getGlobal("testing.return_closure")) {
      for (int i = 0; i < 10; i++) assertEquals(i + 3L, ((Function) make.call(3L)).call((long) i));
    }
    // ten closures dropped without close(): the Cleaner gives them back after a GC
    awaitLive(before);
  }

  @Test
  void valuesRoundTrip() {
    try (Function echo = Function.getGlobal("testing.echo")) {
      assertEquals(Long.MIN_VALUE, echo.call(Long.MIN_VALUE));
      assertEquals(42L, echo.call(42)); // Integer in, Long out
      assertEquals(true, echo.call(true));
      assertEquals(-0.0, (Double) echo.call(-0.0), 0.0);
      assertEquals(
          Double.doubleToRawLongBits(-0.0), Double.doubleToRawLongBits((Double) echo.call(-0.0)));
      assertEquals("日本 😀", echo.call("日本 😀"));
      assertEquals("a\0b", echo.call("a\0b"));
      assertArrayEquals(
          new byte[] {0, 1, (byte) 0xff},
          (byte[]) echo.call((Object) new byte[] {0, 1, (byte) 0xff}));
      assertNull(echo.call((Object) null));
      assertEquals(new Device(1, 3), echo.call(new Device(1, 3)));
      assertEquals("int8x4", echo.call(DataType.parse("int8x4")));
    }
  }

  @Test
  void containersAreListsAndMaps() {
    try (Function echo = Function.getGlobal("testing.echo")) {
      Object a = echo.call(List.of(1L, "two", 3.5));
      assertTrue(a instanceof List);
      assertEquals(List.of(1L, "two", 3.5), List.copyOf((List<?>) a));
      Object m = echo.call(Map.of("a", 1L, "b", "x"));
      assertTrue(m instanceof Map);
      assertEquals(Map.of("a", 1L, "b", "x"), Map.copyOf((Map<?, ?>) m));
      assertEquals(1L, ((Map<?, ?>) m).get("a"));
      assertNull(((Map<?, ?>) m).get("zz"));
      ((Handle) a).close();
      ((Handle) m).close();
    }
  }

  @Test
  void primitiveFastPaths() {
    try (Function add3 = Function.getGlobal("testing.add3");
        Function sum = Function.getGlobal("testing.sum");
        Function add = Function.getGlobal("testing.add");
        Function echo = Function.getGlobal("testing.echo");
        Function nop = Function.getGlobal("testing.nop")) {
      assertEquals(6, add3.callLong(1, 2, 3));
      assertEquals(-3, add3.callLong(-1, -1, -1));
      assertEquals(15, sum.callLong(1, 2, 3, 4, 5));
      assertEquals(10, sum.callLong(1, 2, 3, 4));
      assertEquals(0, sum.callLong());
      assertEquals(9, add.callLong(4, 5));
      assertEquals(2.5, echo.callDouble(2.5));
      assertEquals(7.0, echo.callDouble(7)); // a double in, a double out
      nop.callVoid();
      FFIException e = assertThrows(FFIException.class, () -> add.callDouble(1.5, 2.0));
      assertEquals("TypeError", e.getKind());
      assertTrue(e.getMessage().contains("expected int but got float"), e.getMessage());
      FFIException notInt = assertThrows(FFIException.class, () -> nop.callLong());
      assertEquals("TypeError", notInt.getKind());
      assertTrue(
          notInt.getMessage().contains("expected an int result but got None"), notInt.getMessage());
    }
  }

  @Test
  void callLongThroughTheCachedDirectPair() {
    // callLong fetches TVMFuncGetDirect's pair once and calls it without TVMFuncCall's checks:
    // errors, non-int results and use after close must still come out as before.
    Function add3 = Function.getGlobal("testing.add3");
    try (Function echo = Function.getGlobal("testing.echo")) {
      for (long i = 0; i < 1000; i++) assertEquals(i + 5, add3.callLong(i, 2, 3));
      FFIException overflow =
          assertThrows(FFIException.class, () -> add3.callLong(Long.MAX_VALUE, 1, 0));
      assertTrue(overflow.getMessage().contains("testing.add3"), overflow.getMessage());
      assertEquals(6, add3.callLong(1, 2, 3)); // the failed call left nothing behind
      assertEquals(7, echo.callLong(7));
      FFIException arity = assertThrows(FFIException.class, () -> add3.callLong(1, 2));
      assertEquals("TypeError", arity.getKind());
    } finally {
      add3.close();
    }
    assertThrows(IllegalStateException.class, () -> add3.callLong(1, 2, 3));
  }

  @Test
  void callLongPairSeesRawResultCodes() {
    // Through the pair a result arrives with whatever type code the callee (or the runtime's
    // adapter for a classic callee) wrote: a dtype, raw or as its string, is not an int and must
    // be a TypeError, a bool is an int (0/1), and the generic call still reads both.
    try (Function dtype = Function.convert(a -> DataType.FLOAT32);
        Function truth = Function.convert(a -> (Long) a[0] > 0)) {
      FFIException e = assertThrows(FFIException.class, () -> dtype.callLong(1));
      assertEquals("TypeError", e.getKind());
      assertTrue(e.getMessage().contains("expected an int result but got"), e.getMessage());
      assertEquals("float32", String.valueOf(dtype.call(1L)));
      assertEquals(1, truth.callLong(5));
      assertEquals(0, truth.callLong(-5));
      assertEquals(Boolean.TRUE, truth.call(5L));
    }
  }

  @Test
  void registerListRemove() {
    try (Function f = Function.register("java.test.twice", args -> 2 * (Long) args[0], false)) {
      assertTrue(Function.listGlobalNames().contains("java.test.twice"));
      try (Function g = Function.getGlobal("java.test.twice")) {
        assertEquals(42L, g.call(21L));
      }
      FFIException dup =
          assertThrows(
              FFIException.class,
              () -> Function.register("java.test.twice", args -> 0L, false).close());
      assertTrue(dup.getMessage().contains("java.test.twice"), dup.getMessage());
      Function.removeGlobal("java.test.twice");
      Function.removeGlobal("java.test.twice"); // absent: fine
      assertNull(Function.getGlobal("java.test.twice", true));
      FFIException missing =
          assertThrows(FFIException.class, () -> Function.getGlobal("java.test.twice"));
      assertEquals("ValueError", missing.getKind());
    }
  }

  @Test
  void moduleFunctionsAndEntry() {
    try (Module m = Module.load(TestEnv.lib("polyffi_test_dso"))) {
      try (Function scale = m.getFunction("scale_i64")) {
        assertEquals(42L, scale.call(6L, 7L));
      }
      try (Function main = m.entryFunc()) {
        assertEquals(42L, main.call(6L, 7L));
      }
      assertNull(m.getFunction("nope", false));
      FFIException e = assertThrows(FFIException.class, () -> m.getFunction("nope"));
      assertEquals("AttributeError", e.getKind());
      assertFalse(m.typeKey().isEmpty());
    }
  }
}
