package org.polyffi;

import static org.junit.jupiter.api.Assertions.*;

import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class NDArrayTest {
  @BeforeAll
  static void fixtures() {
    TestEnv.loadFixtures();
  }

  @Test
  void writeFromCIsVisibleInTheDirectBuffer() {
    ByteBuffer in = ByteBuffer.allocateDirect(4 * 4).order(ByteOrder.nativeOrder());
    ByteBuffer out = ByteBuffer.allocateDirect(4 * 4).order(ByteOrder.nativeOrder());
    in.asFloatBuffer().put(new float[] {1, 2, 3, 4});
    try (Function addOne = Function.getGlobal("testing.nd_add_one");
        NDArray a = NDArray.fromBuffer(in, new long[] {2, 2}, DataType.FLOAT32);
        NDArray b = NDArray.fromBuffer(out, new long[] {2, 2}, DataType.FLOAT32)) {
      addOne.call(a, b);
      FloatBuffer f = out.asFloatBuffer();
      assertArrayEquals(
          new float[] {2, 3, 4, 5}, new float[] {f.get(0), f.get(1), f.get(2), f.get(3)});
      // and a write from Java is seen by C without a copy
      in.asFloatBuffer().put(0, 10f);
      try (Function sum = Function.getGlobal("testing.nd_sum")) {
        assertEquals(19.0, sum.call(a));
      }
      assertArrayEquals(new long[] {2, 2}, a.shape());
      assertEquals("float32", a.dtype().toString());
      assertEquals(Device.cpu(), a.device());
    }
  }

  @Test
  void fromBufferKeepsTheBufferReachable() throws InterruptedException {
    NDArray a;
    WeakReference<ByteBuffer> ref;
    {
      ByteBuffer buf = ByteBuffer.allocateDirect(8 * 4).order(ByteOrder.nativeOrder());
      for (int i = 0; i < 8; i++) buf.putFloat(4 * i, i);
      a = NDArray.fromBuffer(buf, new long[] {8}, DataType.FLOAT32);
      ref = new WeakReference<>(buf);
    }
    for (int i = 0; i < 5; i++) {
      System.gc();
      Thread.sleep(10);
    }
    assertNotNull(ref.get(), "the buffer behind a live NDArray was collected");
    try (Function sum = Function.getGlobal("testing.nd_sum")) {
      assertEquals(28.0, sum.call(a));
    }
    a.close();
  }

  @Test
  void asByteBufferIsAView() {
    try (NDArray a = NDArray.empty(new long[] {3}, DataType.FLOAT32);
        Function addOne = Function.getGlobal("testing.nd_add_one");
        NDArray b = NDArray.empty(new long[] {3}, DataType.FLOAT32)) {
      a.copyFrom(new float[] {1, 2, 3});
      addOne.call(a, b);
      FloatBuffer view = b.asByteBuffer().asFloatBuffer();
      assertEquals(4f, view.get(2));
      b.asByteBuffer().putFloat(0, 9f);
      assertArrayEquals(new float[] {9, 3, 4}, b.toFloatArray());
    }
  }

  @Test
  void primitiveCopies() {
    try (NDArray d = NDArray.empty(new long[] {2}, DataType.FLOAT64);
        NDArray i = NDArray.empty(new long[] {2}, DataType.INT64);
        NDArray u = NDArray.empty(new long[] {4}, DataType.UINT8)) {
      d.copyFrom(new double[] {1.5, -2});
      assertArrayEquals(new double[] {1.5, -2}, d.toDoubleArray());
      i.copyFrom(new long[] {Long.MAX_VALUE, 7});
      assertArrayEquals(new long[] {Long.MAX_VALUE, 7}, i.toLongArray());
      u.copyFrom(new byte[] {1, 2, 3, (byte) 255});
      assertArrayEquals(new byte[] {1, 2, 3, (byte) 255}, u.toByteArray());
      FFIException e = assertThrows(FFIException.class, () -> d.copyFrom(new double[3]));
      assertTrue(e.getMessage().contains("24") || e.getMessage().contains("16"), e.getMessage());
    }
  }

  @Test
  void heapBufferIsRejected() {
    ByteBuffer heap = ByteBuffer.allocate(16);
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> NDArray.fromBuffer(heap, new long[] {4}, DataType.FLOAT32));
    assertTrue(e.getMessage().contains("direct"), e.getMessage());
    ByteBuffer small = ByteBuffer.allocateDirect(8);
    assertThrows(
        IllegalArgumentException.class,
        () -> NDArray.fromBuffer(small, new long[] {4}, DataType.FLOAT32));
  }

  @Test
  void closedArrayThrows() {
    NDArray a = NDArray.empty(new long[] {2}, DataType.FLOAT32);
    a.close();
    assertThrows(IllegalStateException.class, a::shape);
    assertThrows(IllegalStateException.class, a::toFloatArray);
    try (Function sum = Function.getGlobal("testing.nd_sum")) {
      assertThrows(IllegalStateException.class, () -> sum.call(a));
    }
  }
}
