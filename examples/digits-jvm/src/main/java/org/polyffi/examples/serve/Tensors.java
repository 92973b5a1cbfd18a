package org.polyffi.examples.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Tensors of the Open Inference Protocol: datatype names, and a tensor's JSON {@code data}
 * (row-major, flat or nested) to and from the little-endian bytes of an array.
 */
public final class Tensors {
  private Tensors() {}

  /** The protocol's datatype of a runtime dtype ({@code float32} -> {@code FP32}), or null. */
  public static String datatype(String dtype) {
    switch (dtype) {
      case "bool":
        return "BOOL";
      case "uint8":
        return "UINT8";
      case "uint16":
        return "UINT16";
      case "uint32":
        return "UINT32";
      case "uint64":
        return "UINT64";
      case "int8":
        return "INT8";
      case "int16":
        return "INT16";
      case "int32":
        return "INT32";
      case "int64":
        return "INT64";
      case "float16":
        return "FP16";
      case "float32":
        return "FP32";
      case "float64":
        return "FP64";
      case "bfloat16":
        return "BF16";
      default:
        return null;
    }
  }

  /** Bytes per element of a datatype JSON data can carry; 0 for one it cannot. */
  public static int elementSize(String datatype) {
    switch (datatype) {
      case "BOOL":
      case "UINT8":
      case "INT8":
        return 1;
      case "UINT16":
      case "INT16":
        return 2;
      case "UINT32":
      case "INT32":
      case "FP32":
        return 4;
      case "UINT64":
      case "INT64":
      case "FP64":
        return 8;
      default:
        return 0;
    }
  }

  private static void flatten(JsonNode data, java.util.List<JsonNode> out) {
    if (data.isArray()) {
      for (JsonNode x : data) flatten(x, out);
    } else {
      out.add(data);
    }
  }

  private static long integer(JsonNode v, int i, String datatype, long min, BigInteger max) {
    if (!v.isIntegralNumber()) throw bad(v, i, datatype);
    BigInteger x = v.bigIntegerValue();
    if (x.compareTo(BigInteger.valueOf(min)) < 0 || x.compareTo(max) > 0) throw bad(v, i, datatype);
    return x.longValue();
  }

  private static IllegalArgumentException bad(JsonNode v, int i, String datatype) {
    return new IllegalArgumentException(
        "data[" + i + "] = " + v + " is not a valid " + datatype + " value");
  }

  private static IllegalArgumentException outOfRange(JsonNode v, int i, String datatype) {
    return new IllegalArgumentException(
        "data[" + i + "] = " + v + " is out of the range of " + datatype);
  }

  /** The little-endian bytes of data as datatype; IllegalArgumentException naming a bad element. */
  public static byte[] toBytes(JsonNode data, String datatype) {
    int size = elementSize(datatype);
    if (size == 0) {
      throw new IllegalArgumentException("datatype " + datatype + " is not supported in JSON data");
    }
    java.util.List<JsonNode> items = new java.util.ArrayList<>();
    flatten(data, items);
    ByteBuffer b = ByteBuffer.allocate(items.size() * size).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < items.size(); i++) {
      JsonNode v = items.get(i);
      switch (datatype) {
        case "BOOL":
          if (!v.isBoolean()) throw bad(v, i, datatype);
          b.put((byte) (v.booleanValue() ? 1 : 0));
          break;
        case "UINT8":
          b.put((byte) integer(v, i, datatype, 0, BigInteger.valueOf(255)));
          break;
        case "INT8":
          b.put((byte) integer(v, i, datatype, -128, BigInteger.valueOf(127)));
          break;
        case "UINT16":
          b.putShort((short) integer(v, i, datatype, 0, BigInteger.valueOf(65535)));
          break;
        case "INT16":
          b.putShort((short) integer(v, i, datatype, -32768, BigInteger.valueOf(32767)));
          break;
        case "UINT32":
          b.putInt((int) integer(v, i, datatype, 0, BigInteger.valueOf(0xffffffffL)));
          break;
        case "INT32":
          b.putInt(
              (int)
                  integer(
                      v, i, datatype, Integer.MIN_VALUE, BigInteger.valueOf(Integer.MAX_VALUE)));
          break;
        case "UINT64":
          b.putLong(
              integer(v, i, datatype, 0, BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE)));
          break;
        case "INT64":
          b.putLong(integer(v, i, datatype, Long.MIN_VALUE, BigInteger.valueOf(Long.MAX_VALUE)));
          break;
        case "FP32":
          if (!v.isNumber()) throw bad(v, i, datatype);
          float f = (float) v.doubleValue();
          if (Float.isInfinite(f)) throw outOfRange(v, i, datatype);
          b.putFloat(f);
          break;
        default: // FP64
          if (!v.isNumber()) throw bad(v, i, datatype);
          if (Double.isInfinite(v.doubleValue())) throw outOfRange(v, i, datatype);
          b.putDouble(v.doubleValue());
          break;
      }
    }
    return b.array();
  }

  /** The elements of bytes (in native order: the array's memory) as a flat JSON array. */
  public static ArrayNode toJson(ByteBuffer bytes, String datatype) {
    ByteBuffer b = bytes.duplicate().order(ByteOrder.nativeOrder());
    ArrayNode out = JsonNodeFactory.instance.arrayNode();
    while (b.hasRemaining()) {
      switch (datatype) {
        case "BOOL":
          out.add(b.get() != 0);
          break;
        case "UINT8":
          out.add(b.get() & 0xff);
          break;
        case "INT8":
          out.add(b.get());
          break;
        case "UINT16":
          out.add(b.getShort() & 0xffff);
          break;
        case "INT16":
          out.add(b.getShort());
          break;
        case "UINT32":
          out.add(b.getInt() & 0xffffffffL);
          break;
        case "INT32":
          out.add(b.getInt());
          break;
        case "UINT64":
          out.add(new BigInteger(Long.toUnsignedString(b.getLong())));
          break;
        case "INT64":
          out.add(b.getLong());
          break;
        case "FP32":
          out.add(b.getFloat());
          break;
        case "FP64":
          out.add(b.getDouble());
          break;
        default:
          throw new IllegalArgumentException(
              "datatype " + datatype + " is not supported in JSON data");
      }
    }
    return out;
  }
}
