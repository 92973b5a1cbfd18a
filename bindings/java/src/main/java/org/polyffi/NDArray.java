package org.polyffi;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * An n-dimensional array (DLTensor). {@link #fromBuffer} wraps a direct ByteBuffer without copying
 * and keeps the buffer reachable while the array lives (also while C holds it); {@link
 * #asByteBuffer()} views a CPU array's memory without copying.
 */
public final class NDArray extends Handle {
  NDArray(long handle, int code, boolean owned) {
    super(handle, code, owned);
  }

  public static NDArray empty(long[] shape, DataType dtype) {
    return empty(shape, dtype, Device.cpu());
  }

  public static NDArray empty(long[] shape, DataType dtype, Device device) {
    return new NDArray(
        Native.ndEmpty(shape.clone(), dtype.packed(), device.packed()), Values.NDARRAY, true);
  }

  /**
   * A CPU array over buffer's memory from its position on (zero-copy). The buffer must be direct
   * and hold at least the array's bytes; a heap buffer is an IllegalArgumentException.
   */
  public static NDArray fromBuffer(ByteBuffer buffer, long[] shape, DataType dtype) {
    Objects.requireNonNull(buffer, "buffer");
    if (!buffer.isDirect()) {
      throw new IllegalArgumentException(
          "NDArray.fromBuffer needs a direct ByteBuffer (ByteBuffer.allocateDirect), got a heap"
              + " buffer");
    }
    long n = dtype.byteSize();
    for (long d : shape) {
      if (d < 0) throw new IllegalArgumentException("negative dimension " + d);
      n *= d;
    }
    if (n > buffer.remaining()) {
      throw new IllegalArgumentException(
          "buffer has " + buffer.remaining() + " bytes left, the array needs " + n);
    }
    // The glue's DLPack deleter holds a global reference to the buffer until the array dies.
    NDArray a =
        new NDArray(
            Native.ndFromBuffer(buffer, buffer.position(), shape.clone(), dtype.packed()),
            Values.NDARRAY,
            true);
    a.state.keepAlive = buffer;
    return a;
  }

  /** A float32 array holding a copy of data with the given shape. */
  public static NDArray of(float[] data, long... shape) {
    NDArray a = empty(shape, DataType.FLOAT32);
    a.copyFrom(data);
    return a;
  }

  public long[] shape() {
    long[] s = Native.ndShape(handle());
    Reference.reachabilityFence(this);
    return s;
  }

  public DataType dtype() {
    DataType t = DataType.unpack(Native.ndDtype(handle()));
    Reference.reachabilityFence(this);
    return t;
  }

  public Device device() {
    Device d = Device.unpack(Native.ndDevice(handle()));
    Reference.reachabilityFence(this);
    return d;
  }

  /** Bytes of the whole array. */
  public long byteSize() {
    long n = Native.ndByteSize(handle());
    Reference.reachabilityFence(this);
    return n;
  }

  /**
   * The array's memory as a direct ByteBuffer in native byte order, without copying. The buffer is
   * valid only while this array is open.
   */
  public ByteBuffer asByteBuffer() {
    ByteBuffer b = Native.ndBuffer(handle());
    Reference.reachabilityFence(this);
    return b.order(ByteOrder.nativeOrder());
  }

  private void copyIn(Object array, long elementBytes, long length) {
    Native.ndCopyFromArray(handle(), array, elementBytes * length);
    Reference.reachabilityFence(this);
  }

  private void copyOut(Object array, long elementBytes, long length) {
    Native.ndCopyToArray(handle(), array, elementBytes * length);
    Reference.reachabilityFence(this);
  }

  public void copyFrom(float[] src) {
    copyIn(src, 4, src.length);
  }

  public void copyFrom(double[] src) {
    copyIn(src, 8, src.length);
  }

  public void copyFrom(byte[] src) {
    copyIn(src, 1, src.length);
  }

  public void copyFrom(short[] src) {
    copyIn(src, 2, src.length);
  }

  public void copyFrom(int[] src) {
    copyIn(src, 4, src.length);
  }

  public void copyFrom(long[] src) {
    copyIn(src, 8, src.length);
  }

  private int count(int elementBytes) {
    long n = byteSize();
    if (n % elementBytes != 0) {
      throw new FFIException(
          "ValueError",
          "array of " + n + " bytes is not a whole number of " + elementBytes + "-byte elements");
    }
    return Math.toIntExact(n / elementBytes);
  }

  public float[] toFloatArray() {
    float[] a = new float[count(4)];
    copyOut(a, 4, a.length);
    return a;
  }

  public double[] toDoubleArray() {
    double[] a = new double[count(8)];
    copyOut(a, 8, a.length);
    return a;
  }

  public byte[] toByteArray() {
    byte[] a = new byte[count(1)];
    copyOut(a, 1, a.length);
    return a;
  }

  public short[] toShortArray() {
    short[] a = new short[count(2)];
    copyOut(a, 2, a.length);
    return a;
  }

  public int[] toIntArray() {
    int[] a = new int[count(4)];
    copyOut(a, 4, a.length);
    return a;
  }

  public long[] toLongArray() {
    long[] a = new long[count(8)];
    copyOut(a, 8, a.length);
    return a;
  }

  /** Copies into dst (same size); returns dst. */
  public float[] copyTo(float[] dst) {
    copyOut(dst, 4, dst.length);
    return dst;
  }

  /**
   * Whether the array is compact and its data starts on an {@code alignment}-byte boundary (the
   * kernels TVM compiles assume 64; {@link VirtualMachine} copies arrays that are not).
   */
  public boolean isAligned(long alignment) {
    boolean b = Native.ndIsAligned(handle(), alignment);
    Reference.reachabilityFence(this);
    return b;
  }

  @Override
  public NDArray retain() {
    return new NDArray(Native.retain(typeCode(), handle()), Values.NDARRAY, true);
  }
}
