package org.polyffi;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The "value" part: Java values to packed (value, type code) slots and back. The glue copies the
 * slots into stack TVMValue arrays; Strings and byte[] travel as references and are converted to
 * UTF-8 / TVMByteArray there.
 */
final class Values {
  private Values() {}

  static final int INT = 0,
      UINT = 1,
      FLOAT = 2,
      OPAQUE = 3,
      NULL = 4,
      DTYPE = 5,
      DEVICE = 6,
      DLTENSOR = 7,
      OBJECT = 8,
      MODULE = 9,
      FUNCTION = 10,
      STR = 11,
      BYTES = 12,
      NDARRAY = 13,
      RVALUE_REF = 14,
      BOOL = 15;

  /**
   * Argument slots of one call, one per nesting depth per thread, reused. The slots live in a
   * direct buffer the glue reads in place as TVMValue[cap] followed by int[cap] type codes and the
   * result (value, code): no JNI array copies on the call path.
   */
  static final class Frame {
    ByteBuffer buf;
    long addr;
    int cap;
    Object[] refs;
    boolean hasRefs;
    ArrayList<Handle> temps;

    Frame() {
      alloc(8);
    }

    private void alloc(int n) {
      cap = n;
      buf = ByteBuffer.allocateDirect(12 * n + 16).order(ByteOrder.nativeOrder());
      addr = Native.address(buf);
      refs = new Object[n];
    }

    void ensure(int n) {
      if (cap < n) alloc(Math.max(n, cap * 2));
    }

    void set(int i, long value, int code) {
      buf.putLong(8 * i, value);
      buf.putInt(8 * cap + 4 * i, code);
    }

    long retValue() {
      return buf.getLong(12 * cap);
    }

    int retCode() {
      return buf.getInt(12 * cap + 8);
    }

    void temp(Handle h) {
      if (temps == null) temps = new ArrayList<>(2);
      temps.add(h);
    }

    void clear() {
      if (hasRefs) {
        Arrays.fill(refs, null);
        hasRefs = false;
      }
      if (temps != null && !temps.isEmpty()) {
        for (Handle h : temps) h.close();
        temps.clear();
      }
    }
  }

  static final class Frames {
    Frame[] stack = new Frame[4];
    int depth;

    Frame push(int n) {
      if (depth == stack.length) stack = Arrays.copyOf(stack, depth * 2);
      Frame f = stack[depth];
      if (f == null) f = stack[depth] = new Frame();
      depth++;
      f.ensure(n);
      return f;
    }

    void pop(Frame f) {
      f.clear();
      depth--;
    }
  }

  static final ThreadLocal<Frames> FRAMES = ThreadLocal.withInitial(Frames::new);

  // ---- Java -> packed ---------------------------------------------------------------------

  /** Packs args[i] into slot i of f; unsupported types are a TypeError naming the argument. */
  static void pack(Frame f, int i, Object a) {
    if (a instanceof Long) {
      f.set(i, (Long) a, INT);
    } else if (a instanceof Integer || a instanceof Short || a instanceof Byte) {
      f.set(i, ((Number) a).longValue(), INT);
    } else if (a instanceof Double || a instanceof Float) {
      f.set(i, Double.doubleToRawLongBits(((Number) a).doubleValue()), FLOAT);
    } else if (a instanceof String) {
      String s = (String) a;
      if (s.indexOf('\0') >= 0) {
        // A string with NUL bytes travels as a runtime.String object (docs/spec/abi.md section 6,
        // objects and containers).
        Handle tmp = runtimeString(s);
        f.temp(tmp);
        f.set(i, tmp.handle(), OBJECT);
      } else {
        f.refs[i] = s;
        f.hasRefs = true;
        f.set(i, 0, STR);
      }
    } else if (a instanceof Boolean) {
      f.set(i, ((Boolean) a) ? 1 : 0, BOOL);
    } else if (a == null) {
      f.set(i, 0, NULL);
    } else if (a instanceof Handle) {
      Handle h = (Handle) a;
      f.set(i, h.handle(), h.typeCode());
    } else if (a instanceof byte[]) {
      f.refs[i] = a;
      f.hasRefs = true;
      f.set(i, 0, BYTES);
    } else if (a instanceof Device) {
      f.set(i, ((Device) a).packed(), DEVICE);
    } else if (a instanceof DataType) {
      f.set(i, ((DataType) a).packed(), DTYPE);
    } else if (a instanceof Callback || a instanceof LongCallback) {
      Function fn =
          a instanceof Callback
              ? Function.convert((Callback) a)
              : Function.convertLong((LongCallback) a);
      f.temp(fn);
      f.set(i, fn.handle(), FUNCTION);
    } else if (a instanceof List) {
      ArrayObject arr = toArray((List<?>) a);
      f.temp(arr);
      f.set(i, arr.handle(), OBJECT);
    } else if (a instanceof Map) {
      MapObject m = toMap((Map<?, ?>) a);
      f.temp(m);
      f.set(i, m.handle(), OBJECT);
    } else if (a instanceof long[]) {
      ObjectRef shape = shapeTuple((long[]) a);
      f.temp(shape);
      f.set(i, shape.handle(), OBJECT);
    } else if (a instanceof OpaqueHandle) {
      f.set(i, ((OpaqueHandle) a).address(), OPAQUE);
    } else {
      throw new FFIException(
          "TypeError",
          "argument "
              + i
              + ": unsupported Java type "
              + a.getClass().getName()
              + " (expected Long, Integer, Double, Boolean, String, byte[], long[] (a shape),"
              + " Device, DataType, Function, Module, NDArray, List, Map, Callback or null)");
    }
  }

  /** A runtime.String object holding s (kept as an object, not converted back). */
  static ObjectRef runtimeString(String s) {
    Function f = builtin("runtime.String");
    Frames frames = FRAMES.get();
    Frame fr = frames.push(1);
    try {
      fr.refs[0] = Utf8.encode(s);
      fr.hasRefs = true;
      fr.set(0, 0, BYTES);
      Native.call(f.handle(), fr.addr, fr.cap, fr.refs, 1);
      if (fr.retCode() != OBJECT) {
        throw new FFIException("TypeError", "runtime.String returned type code " + fr.retCode());
      }
      return new ObjectRef(fr.retValue(), true);
    } finally {
      frames.pop(fr);
    }
  }

  /** A long[] as a runtime.ShapeTuple object (kept as an object, not converted back). */
  static ObjectRef shapeTuple(long[] dims) {
    Function f = builtin("runtime.ShapeTuple");
    Frames frames = FRAMES.get();
    Frame fr = frames.push(dims.length);
    try {
      for (int i = 0; i < dims.length; i++) fr.set(i, dims[i], INT);
      Native.call(f.handle(), fr.addr, fr.cap, fr.refs, dims.length);
      if (fr.retCode() != OBJECT) {
        throw new FFIException(
            "TypeError", "runtime.ShapeTuple returned type code " + fr.retCode());
      }
      return new ObjectRef(fr.retValue(), true);
    } finally {
      frames.pop(fr);
    }
  }

  /** A Java List as a runtime.Array (items converted like arguments). */
  static ArrayObject toArray(List<?> items) {
    Object r = builtin("runtime.Array").call(items.toArray());
    return (ArrayObject) r;
  }

  /** A Java Map as a runtime.Map. */
  static MapObject toMap(Map<?, ?> m) {
    Object[] kv = new Object[m.size() * 2];
    int j = 0;
    for (Map.Entry<?, ?> e : m.entrySet()) {
      kv[j++] = e.getKey();
      kv[j++] = e.getValue();
    }
    return (MapObject) builtin("runtime.Map").call(kv);
  }

  // ---- packed -> Java ---------------------------------------------------------------------

  /** The result of Native.call: ref is the String / byte[] for those codes, else f holds it. */
  static Object result(Object ref, Frame f) {
    int code = f.retCode();
    if (code == STR || code == BYTES) return ref;
    return unpack(code, f.retValue(), true);
  }

  /** A value owned by the caller (owned = true) or borrowed for a callback (owned = false). */
  static Object unpack(int code, long v, boolean owned) {
    switch (code) {
      case INT:
      case UINT:
        return v;
      case FLOAT:
        return Double.longBitsToDouble(v);
      case BOOL:
        return v != 0;
      case NULL:
        return null;
      case DEVICE:
        return Device.unpack(v);
      case DTYPE:
        return DataType.unpack((int) v);
      case OPAQUE:
        return v == 0 ? null : new OpaqueHandle(v);
      case FUNCTION:
        return v == 0 ? null : new Function(v, owned);
      case MODULE:
        return v == 0 ? null : new Module(v, owned);
      case NDARRAY:
        return v == 0 ? null : new NDArray(v, NDARRAY, owned);
      case DLTENSOR:
        return v == 0 ? null : new NDArray(v, DLTENSOR, false);
      case OBJECT:
        return v == 0 ? null : wrapObject(v, owned);
      default:
        throw new FFIException("TypeError", "polyffi: unknown type code " + code);
    }
  }

  private static volatile int stringIndex = -2, arrayIndex = -2, mapIndex = -2, shapeIndex = -2;

  private static int index(String key) {
    try {
      return Native.typeKeyToIndex(key);
    } catch (FFIException e) {
      return -1;
    }
  }

  static Object wrapObject(long h, boolean owned) {
    if (shapeIndex == -2) {
      stringIndex = index("runtime.String");
      arrayIndex = index("Array"); // TVM's type keys of runtime.Array / runtime.Map objects
      mapIndex = index("Map");
      shapeIndex = index("runtime.ShapeTuple");
    }
    int t = Native.objectTypeIndex(h);
    if (t == stringIndex) {
      ObjectRef tmp = new ObjectRef(h, owned);
      try {
        return Native.stringObjectValue(tmp.handle());
      } finally {
        tmp.close();
      }
    }
    if (t == shapeIndex) {
      // A shape is its dimensions: a long[] (which passes back as a runtime.ShapeTuple).
      ObjectRef tmp = new ObjectRef(h, owned);
      try {
        return Native.shapeTupleDims(tmp.handle());
      } finally {
        tmp.close();
      }
    }
    if (t == arrayIndex) return new ArrayObject(h, owned);
    if (t == mapIndex) return new MapObject(h, owned);
    return new ObjectRef(h, owned);
  }

  // ---- the runtime's own helpers, looked up once ---------------------------------------------

  private static final ConcurrentHashMap<String, Function> BUILTINS = new ConcurrentHashMap<>();

  static Function builtin(String name) {
    Function f = BUILTINS.get(name);
    if (f == null) f = BUILTINS.computeIfAbsent(name, Function::getGlobal);
    return f;
  }
}
