package org.polyffi;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** The "registry" part: namespaces of globals and typed proxies over them. */
public final class Registry {
  private Registry() {}

  /** Globals PREFIX.name as a namespace (not PREFIX.a.b); each function looked up once. */
  public static Namespace namespace(String prefix) {
    return new Namespace(prefix);
  }

  /** The functions under one prefix; functions are looked up once and kept. */
  public static final class Namespace implements AutoCloseable {
    private final String prefix;
    private final ConcurrentHashMap<String, Function> cache = new ConcurrentHashMap<>();

    Namespace(String prefix) {
      this.prefix = prefix;
    }

    public String prefix() {
      return prefix;
    }

    /** PREFIX.name; missing: FFIException of kind ValueError. Owned by the namespace. */
    public Function get(String name) {
      Function f = cache.get(name);
      if (f == null) f = cache.computeIfAbsent(name, n -> Function.getGlobal(prefix + "." + n));
      return f;
    }

    public Object call(String name, Object... args) {
      return get(name).call(args);
    }

    /** The names x of every global PREFIX.x (without dots in x). */
    public List<String> names() {
      List<String> out = new ArrayList<>();
      String p = prefix + ".";
      for (String g : Function.listGlobalNames()) {
        if (g.startsWith(p) && g.indexOf('.', p.length()) < 0) out.add(g.substring(p.length()));
      }
      out.sort(null);
      return out;
    }

    /** Closes the functions this namespace looked up. */
    @Override
    public void close() {
      cache.values().forEach(Function::close);
      cache.clear();
    }
  }

  /**
   * A proxy for iface whose method m calls PREFIX.m (looked up once, now: a missing one is an
   * FFIException of kind ValueError) and converts the result to m's return type. Calls whose
   * parameters and result are all long (or all double) take the primitive path. If iface extends
   * AutoCloseable, close() releases the functions; otherwise the Cleaner does.
   */
  public static <T> T bind(String prefix, Class<T> iface) {
    if (!iface.isInterface()) throw new IllegalArgumentException(iface + " is not an interface");
    Map<Method, Bound> table = new HashMap<>();
    List<Function> owned = new ArrayList<>();
    try {
      for (Method m : iface.getMethods()) {
        if (m.isDefault() || java.lang.reflect.Modifier.isStatic(m.getModifiers())) continue;
        if (m.getName().equals("close")
            && m.getParameterCount() == 0
            && AutoCloseable.class.isAssignableFrom(iface)) {
          continue; // close() releases the proxy's functions
        }
        Function f = Function.getGlobal(prefix + "." + m.getName());
        owned.add(f);
        table.put(m, new Bound(f, m));
      }
    } catch (RuntimeException e) {
      owned.forEach(Function::close);
      throw e;
    }
    InvocationHandler h = new Handler(prefix, table, owned);
    return iface.cast(Proxy.newProxyInstance(iface.getClassLoader(), new Class<?>[] {iface}, h));
  }

  private static final class Bound {
    final Function f;
    final Class<?> ret;
    final int fast; // 1: (long...) -> long, 2: (double...) -> double, 0: generic

    Bound(Function f, Method m) {
      this.f = f;
      this.ret = m.getReturnType();
      Class<?>[] ps = m.getParameterTypes();
      boolean allLong = ret == long.class, allDouble = ret == double.class;
      for (Class<?> p : ps) {
        allLong &= p == long.class;
        allDouble &= p == double.class;
      }
      fast = allLong && ps.length <= 4 ? 1 : allDouble && ps.length <= 3 && ps.length > 0 ? 2 : 0;
    }
  }

  private static final class Handler implements InvocationHandler {
    final String prefix;
    final Map<Method, Bound> table;
    final List<Function> owned;

    Handler(String prefix, Map<Method, Bound> table, List<Function> owned) {
      this.prefix = prefix;
      this.table = table;
      this.owned = owned;
    }

    @Override
    public Object invoke(Object proxy, Method m, Object[] args) throws Throwable {
      Bound b = table.get(m);
      if (b == null) {
        switch (m.getName()) {
          case "close":
            owned.forEach(Function::close);
            return null;
          case "toString":
            return "polyffi proxy for " + prefix + ".*";
          case "hashCode":
            return System.identityHashCode(proxy);
          case "equals":
            return proxy == args[0];
          default:
            throw new UnsupportedOperationException(m.toString());
        }
      }
      Object[] a = args == null ? new Object[0] : args;
      if (b.fast == 1) {
        switch (a.length) {
          case 0:
            return b.f.callLong();
          case 1:
            return b.f.callLong((Long) a[0]);
          case 2:
            return b.f.callLong((Long) a[0], (Long) a[1]);
          case 3:
            return b.f.callLong((Long) a[0], (Long) a[1], (Long) a[2]);
          default:
            return b.f.callLong((Long) a[0], (Long) a[1], (Long) a[2], (Long) a[3]);
        }
      }
      if (b.fast == 2) {
        switch (a.length) {
          case 1:
            return b.f.callDouble((Double) a[0]);
          case 2:
            return b.f.callDouble((Double) a[0], (Double) a[1]);
          default:
            return b.f.callDouble((Double) a[0], (Double) a[1], (Double) a[2]);
        }
      }
      return convert(b.f.call(a), b.ret, prefix + "." + m.getName());
    }
  }

  /** Converts a call's result to the declared return type; a mismatch is a TypeError. */
  static Object convert(Object r, Class<?> t, String who) {
    if (t == void.class || t == Void.class) {
      if (r instanceof AutoCloseable) closeQuietly((AutoCloseable) r);
      return null;
    }
    if (t == Object.class) return r;
    if (t == long.class || t == Long.class) {
      if (r instanceof Long) return r;
    } else if (t == int.class || t == Integer.class) {
      if (r instanceof Long) return Math.toIntExact((Long) r);
    } else if (t == double.class || t == Double.class) {
      if (r instanceof Double) return r;
      if (r instanceof Long) return ((Long) r).doubleValue();
    } else if (t == float.class || t == Float.class) {
      if (r instanceof Double) return ((Double) r).floatValue();
      if (r instanceof Long) return ((Long) r).floatValue();
    } else if (t == boolean.class || t == Boolean.class) {
      if (r instanceof Boolean) return r;
    } else if (t == String.class && r instanceof DataType) {
      return r.toString();
    } else if (r == null && !t.isPrimitive()) {
      return null;
    } else if (t.isInstance(r)) {
      return r;
    }
    throw new FFIException(
        "TypeError",
        who + " returned " + Function.describe(r) + ", which is not a " + t.getSimpleName());
  }

  private static void closeQuietly(AutoCloseable c) {
    try {
      c.close();
    } catch (Exception ignored) {
      // a handle's close does not throw
    }
  }
}
