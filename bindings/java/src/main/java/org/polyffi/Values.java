package org.polyffi;

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

  static final int INT = 0, UINT = 1, FLOAT = 2, OPAQUE = 3, NULL = 4, DTYPE = 5, DEVICE = 6,
      DLTENSOR = 7, OBJECT = 8, MODULE = 9, FUNCTION = 10, STR = 11, BYTES = 12, NDARRAY = 13,
      RVALUE_REF = 14, BOOL = 15;

  /** Argument slots of one call; one per nesting depth per thread, reused. */
  static final class Frame {
    long[] vals = new long[8];
    int[] codes = new int[8];
    Object[] refs = new Object[8];
    final long[] ret = new long[2];
    boolean hasRefs;
    ArrayList<Handle> temps;

    void ensure(int n) {
      if (vals.length < n) {
        int cap = Math.max(n, vals.length * 2);
        vals = new long[cap];
        codes = new int[cap];
        refs = new Object[cap];
      }
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
    long[] v = f.vals;
    int[] c = f.codes;
    if (a instanceof Long) {
      v[i] = (Long) a;
      c[i] = INT;
    } else if (a instanceof Integer || a instanceof Short || a instanceof Byte) {
      v[i] = ((Number) a).longValue();
      c[i] = INT;
    } else if (a instanceof Double || a instanceof Float) {
      v[i] = Double.doubleToRawLongBits(((Number) a).doubleValue());
      c[i] = FLOAT;
    } else if (a instanceof String) {
      String s = (String) a;
      if (s.indexOf('\0') >= 0) {
        // A string with NUL bytes travels as a runtime.String object (ABI.md section 6).
        Handle tmp = runtimeString(s);
        f.temp(tmp);
        v[i] = tmp.handle();
        c[i] = OBJECT;
      } else {
        f.refs[i] = s;
        f.hasRefs = true;
        c[i] = STR;
      }
    } else if (a instanceof Boolean) {
      v[i] = ((Boolean) a) ? 1 : 0;
      c[i] = BOOL;
    } else if (a == null) {
      v[i] = 0;
      c[i] = NULL;
    } else if (a instanceof Handle) {
      Handle h = (Handle) a;
      v[i] = h.handle();
      c[i] = h.typeCode();
    } else if (a instanceof byte[]) {
      f.refs[i] = a;
      f.hasRefs = true;
      c[i] = BYTES;
    } else if (a instanceof Device) {
      v[i] = ((Device) a).packed();
      c[i] = DEVICE;
    } else if (a instanceof DataType) {
      v[i] = ((DataType) a).packed();
      c[i] = DTYPE;
    } else if (a instanceof Callback) {
      Function fn = Function.convert((Callback) a);
      f.temp(fn);
      v[i] = fn.handle();
      c[i] = FUNCTION;
    } else if (a instanceof List) {
      ArrayObject arr = toArray((List<?>) a);
      f.temp(arr);
      v[i] = arr.handle();
      c[i] = OBJECT;
    } else if (a instanceof Map) {
      MapObject m = toMap((Map<?, ?>) a);
      f.temp(m);
      v[i] = m.handle();
      c[i] = OBJECT;
    } else if (a instanceof OpaqueHandle) {
      v[i] = ((OpaqueHandle) a).address();
      c[i] = OPAQUE;
    } else {
      throw new FFIException(
          "TypeError",
          "argument " + i + ": unsupported Java type " + a.getClass().getName()
              + " (expected Long, Integer, Double, Boolean, String, byte[], Device, DataType,"
              + " Function, Module, NDArray, List, Map, Callback or null)");
    }
  }

  /** A runtime.String object holding s (kept as an object, not converted back). */
  static ObjectRef runtimeString(String s) {
    Function f = builtin("runtime.String");
    Values.Frames frames = FRAMES.get();
    Frame fr = frames.push(1);
    try {
      fr.refs[0] = Utf8.encode(s);
      fr.hasRefs = true;
      fr.codes[0] = BYTES;
      Native.call(f.handle(), fr.vals, fr.codes, fr.refs, 1, fr.ret);
      if (fr.ret[1] != OBJECT) {
        throw new FFIException("TypeError", "runtime.String returned type code " + fr.ret[1]);
      }
      return new ObjectRef(fr.ret[0], true);
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

  /** The result of Native.call: ref is the String / byte[] for those codes, else ret holds it. */
  static Object result(Object ref, long[] ret) {
    int code = (int) ret[1];
    if (code == STR || code == BYTES) return ref;
    return unpack(code, ret[0], true);
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

  private static volatile int stringIndex = -2, arrayIndex = -2, mapIndex = -2;

  private static int index(String key) {
    try {
      return Native.typeKeyToIndex(key);
    } catch (FFIException e) {
      return -1;
    }
  }

  static Object wrapObject(long h, boolean owned) {
    if (stringIndex == -2) {
      stringIndex = index("runtime.String");
      arrayIndex = index("Array"); // TVM's type keys of runtime.Array / runtime.Map objects
      mapIndex = index("Map");
    }
    int t = Native.objectTypeIndex(h);
    if (t == stringIndex) {
      ObjectRef tmp = new ObjectRef(h, owned);
      try {
        Object bytes = builtin("runtime.StringBytes").call(tmp);
        return bytes instanceof byte[] ? Utf8.decode((byte[]) bytes) : bytes;
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
