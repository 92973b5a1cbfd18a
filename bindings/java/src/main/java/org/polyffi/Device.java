package org.polyffi;

/** A DLPack device: type (1 = CPU) and id. */
public record Device(int type, int id) {
  public static final int CPU = 1;

  public static Device cpu() {
    return new Device(CPU, 0);
  }

  public static Device cpu(int id) {
    return new Device(CPU, id);
  }

  long packed() {
    return (type & 0xffffffffL) | ((long) id << 32);
  }

  static Device unpack(long v) {
    return new Device((int) v, (int) (v >>> 32));
  }
}
