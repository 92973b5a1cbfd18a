package org.polyffi;

/** A DLPack data type (code, bits, lanes), spelled like TVM: "float32", "int8x4", "bool". */
public final class DataType {
  public static final DataType FLOAT32 = new DataType(2, 32, 1);
  public static final DataType FLOAT64 = new DataType(2, 64, 1);
  public static final DataType INT32 = new DataType(0, 32, 1);
  public static final DataType INT64 = new DataType(0, 64, 1);
  public static final DataType UINT8 = new DataType(1, 8, 1);

  private final int code;
  private final int bits;
  private final int lanes;

  public DataType(int code, int bits, int lanes) {
    this.code = code & 0xff;
    this.bits = bits & 0xff;
    this.lanes = lanes & 0xffff;
  }

  /** Parses the TVM spelling; an unknown one is an FFIException of kind ValueError. */
  public static DataType parse(String s) {
    return unpack(Native.dtypeParse(s));
  }

  public int code() {
    return code;
  }

  public int bits() {
    return bits;
  }

  public int lanes() {
    return lanes;
  }

  /** Bytes of one element (all lanes). */
  public int byteSize() {
    return (bits * lanes + 7) / 8;
  }

  int packed() {
    return code | (bits << 8) | (lanes << 16);
  }

  static DataType unpack(int v) {
    return new DataType(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xffff);
  }

  @Override
  public String toString() {
    return Native.dtypeToString(packed());
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof DataType && ((DataType) o).packed() == packed();
  }

  @Override
  public int hashCode() {
    return packed();
  }
}
