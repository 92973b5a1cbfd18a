package org.polyffi;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Shapes as values: a runtime.ShapeTuple is a long[] both ways. */
class ShapeTest {
  @BeforeAll
  static void fixtures() {
    TestEnv.loadFixtures();
  }

  static Object call(String name, Object... args) {
    try (Function f = Function.getGlobal(name)) {
      return f.call(args);
    }
  }

  @Test
  void aLongArrayRoundTripsAsAShape() {
    long[][] cases = {
      {2, 3}, {}, {Long.MAX_VALUE, Long.MIN_VALUE, 0, -1}, {1, 2, 3, 4, 5, 6, 7, 8, 9},
    };
    for (long[] dims : cases) {
      Object out = call("testing.echo", (Object) dims);
      assertTrue(out instanceof long[], "a long[] comes back");
      assertArrayEquals(dims, (long[]) out);
    }
    assertEquals("Object", call("testing.return_type", (Object) new long[] {1}));
  }

  @Test
  void shapesMadeAndReadByTheCore() {
    assertArrayEquals(
        new long[] {1, -2, 65536}, (long[]) call("runtime.ShapeTuple", 1L, -2L, 65536L));
    assertArrayEquals(new long[] {}, (long[]) call("runtime.ShapeTuple"));
    long[] s = {5, 6, 7};
    assertEquals(3L, call("runtime.GetShapeTupleSize", (Object) s));
    assertEquals(7L, call("runtime.GetShapeTupleElem", s, 2L));
    try (NDArray x = NDArray.empty(new long[] {2, 3}, DataType.parse("int32"))) {
      x.copyFrom(new int[] {1, 2, 3, 4, 5, 6});
      assertArrayEquals(new long[] {2, 3}, (long[]) call("vm.builtin.shape_of", x));
      try (NDArray y = (NDArray) call("vm.builtin.reshape", x, new long[] {3, 2})) {
        assertArrayEquals(new long[] {3, 2}, y.shape());
        assertArrayEquals(new int[] {1, 2, 3, 4, 5, 6}, y.toIntArray());
      }
    }
  }

  @Test
  void aListStaysAnArray() {
    FFIException e =
        assertThrows(FFIException.class, () -> call("runtime.GetShapeTupleSize", List.of(1L, 2L)));
    assertEquals("TypeError", e.getKind());
  }

  @Test
  void shapesInsideContainersAndThroughAJavaCallback() {
    try (ArrayObject arr = (ArrayObject) call("runtime.Array", new long[] {1, 2}, new long[] {})) {
      assertArrayEquals(new long[] {1, 2}, (long[]) arr.get(0));
      assertArrayEquals(new long[] {}, (long[]) arr.get(1));
    }
    AtomicReference<Object> seen = new AtomicReference<>();
    Callback identity =
        args -> {
          seen.set(args[0]);
          return args[0];
        };
    Object out = call("testing.apply", identity, new long[] {3, 4});
    assertArrayEquals(new long[] {3, 4}, (long[]) seen.get());
    assertArrayEquals(new long[] {3, 4}, (long[]) out);
    Callback make = args -> new long[] {9, 8};
    assertArrayEquals(new long[] {9, 8}, (long[]) call("testing.apply", make));
  }

  @Test
  void shapeBytesIsOneCallInNativeOrder() {
    byte[] raw = (byte[]) call("runtime.ShapeTupleBytes", (Object) new long[] {1, 258, -1});
    ByteBuffer want = ByteBuffer.allocate(24).order(ByteOrder.nativeOrder());
    want.putLong(1).putLong(258).putLong(-1);
    assertArrayEquals(want.array(), raw);
  }
}
