package org.polyffi;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Runs one case of tests/conformance/cases/*.json through the Java binding. Mirrors the C and
 * Python runners: the same tags, steps and checks, with the host callbacks of
 * docs/spec/conformance.md section 2 (host callbacks) written in Java.
 */
final class ConformanceRunner {
  /** A case did not behave as its file says. */
  static final class Failure extends AssertionError {
    private static final long serialVersionUID = 1L;

    Failure(String message) {
      super(message);
    }
  }

  // ---- Host callables -----------------------------------------------------------------------

  private static final ConcurrentHashMap<Integer, AtomicInteger> CREATED =
      new ConcurrentHashMap<>();
  private static final ConcurrentHashMap<Integer, AtomicInteger> RELEASED =
      new ConcurrentHashMap<>();
  private static volatile int currentCase;

  interface Impl {
    Object apply(Object[] args) throws Exception;
  }

  /** A host function of one case: counted alive until the runtime's finalizer releases it. */
  static final class HostCallable implements Callback {
    final String name;
    final Impl impl;
    final int serial;

    HostCallable(String name, Impl impl, int serial) {
      this.name = name;
      this.impl = impl;
      this.serial = serial;
      CREATED.computeIfAbsent(serial, k -> new AtomicInteger()).incrementAndGet();
    }

    @Override
    public Object invoke(Object... args) throws Exception {
      return impl.apply(args);
    }

    @Override
    public void release() {
      RELEASED.computeIfAbsent(serial, k -> new AtomicInteger()).incrementAndGet();
    }
  }

  static int hostLive(int serial) {
    int created = CREATED.getOrDefault(serial, new AtomicInteger()).get();
    int released = RELEASED.getOrDefault(serial, new AtomicInteger()).get();
    return created - released;
  }

  /** Live host callables of a case; unreachable wrappers are collected first when they differ. */
  static int hostLive(int serial, int want) throws InterruptedException {
    int live = hostLive(serial);
    for (int i = 0; i < 50 && live != want; i++) {
      System.gc();
      Thread.sleep(i < 5 ? 2 : 20);
      live = hostLive(serial);
    }
    return live;
  }

  private static long checkInt(String who, int i, Object x) {
    if (!(x instanceof Long)) {
      throw new FFIException(
          "TypeError", who + ": argument " + i + " expected int but got " + typeName(x));
    }
    return (Long) x;
  }

  private static Object hostAdd(Object[] args) {
    long s = 0;
    for (int i = 0; i < args.length; i++) s += checkInt("host.add", i, args[i]);
    return s;
  }

  private static Object hostConcat(Object[] args) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < args.length; i++) {
      Object a = args[i];
      if (a instanceof byte[]) a = new String((byte[]) a, java.nio.charset.StandardCharsets.UTF_8);
      if (!(a instanceof String)) {
        throw new FFIException(
            "TypeError", "host.concat: argument " + i + " expected str but got " + typeName(a));
      }
      sb.append((String) a);
    }
    return sb.toString();
  }

  private static Object hostIdentity(Object[] args) {
    if (args.length == 0) return null;
    if (args.length != 1) {
      throw new FFIException(
          "TypeError", "host.identity expected 1 argument but got " + args.length);
    }
    return args[0];
  }

  private static Object hostAdder(Object[] args) {
    if (args.length != 1) {
      throw new FFIException("TypeError", "host.adder expected 1 argument but got " + args.length);
    }
    long y = checkInt("host.adder", 0, args[0]);
    return new HostCallable(
        "host.adder.<closure>",
        xs -> {
          if (xs.length != 1) {
            throw new FFIException(
                "TypeError", "host.adder.<closure> expected 1 argument but got " + xs.length);
          }
          return checkInt("host.adder.<closure>", 0, xs[0]) + y;
        },
        currentCase);
  }

  private static final Map<String, Impl> HOSTS = new HashMap<>();

  static {
    HOSTS.put("host.add", ConformanceRunner::hostAdd);
    HOSTS.put("host.concat", ConformanceRunner::hostConcat);
    HOSTS.put("host.identity", ConformanceRunner::hostIdentity);
    HOSTS.put(
        "host.raise_value_error",
        a -> {
          throw new IllegalArgumentException("host boom");
        });
    HOSTS.put("host.return_none", a -> null);
    HOSTS.put("host.return_unsupported", a -> new Object());
    HOSTS.put("host.adder", ConformanceRunner::hostAdder);
    HOSTS.put(
        "host.call_echo",
        a -> {
          try (Function echo = Function.getGlobal("testing.echo")) {
            return echo.call(a);
          }
        });
  }

  // ---- Values -------------------------------------------------------------------------------

  static double parseFloat(JsonNode body) {
    if (body.isNumber()) return body.asDouble();
    switch (body.asText()) {
      case "nan":
        return Double.NaN;
      case "inf":
        return Double.POSITIVE_INFINITY;
      case "-inf":
        return Double.NEGATIVE_INFINITY;
      case "-0.0":
        return -0.0;
      default:
        throw new Failure("bad float " + body);
    }
  }

  static Map.Entry<String, JsonNode> tagOf(JsonNode tagged) {
    if (!tagged.isObject() || tagged.size() != 1) {
      throw new Failure("expected a tagged value with exactly one key, got " + tagged);
    }
    return tagged.fields().next();
  }

  static String stringOf(String tag, JsonNode body) {
    if (tag.equals("str")) return body.asText();
    return body.get(0).asText().repeat(body.get(1).asInt());
  }

  static byte[] hex(String s) {
    byte[] out = new byte[s.length() / 2];
    for (int i = 0; i < out.length; i++)
      out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
    return out;
  }

  static String toHex(byte[] b) {
    StringBuilder sb = new StringBuilder();
    for (byte x : b) sb.append(String.format("%02x", x));
    return sb.toString();
  }

  /** The row-major little-endian bytes of an ndarray tag. */
  static byte[] ndarrayBytes(JsonNode body) {
    String dtype = body.get("dtype").asText();
    DataType t = DataType.parse(dtype);
    JsonNode data = body.get("data");
    ByteBuffer b = ByteBuffer.allocate(t.byteSize() * data.size()).order(ByteOrder.LITTLE_ENDIAN);
    for (JsonNode e : data) {
      if (t.code() == 2) {
        double d = parseFloat(e);
        if (t.bits() == 32) b.putFloat((float) d);
        else if (t.bits() == 64) b.putDouble(d);
        else throw new Failure("unsupported float dtype " + dtype);
      } else {
        long v = e.asLong();
        switch (t.bits()) {
          case 8:
            b.put((byte) v);
            break;
          case 16:
            b.putShort((short) v);
            break;
          case 32:
            b.putInt((int) v);
            break;
          case 64:
            b.putLong(v);
            break;
          default:
            throw new Failure("unsupported dtype " + dtype);
        }
      }
    }
    return b.array();
  }

  static long[] shapeOf(JsonNode body) {
    JsonNode s = body.get("shape");
    long[] out = new long[s.size()];
    for (int i = 0; i < out.length; i++) out[i] = s.get(i).asLong();
    return out;
  }

  /** The C runner's TypeCodeName for the Java value a call returned. */
  static String typeName(Object v) {
    if (v == null) return "None";
    if (v instanceof Boolean) return "bool";
    if (v instanceof Long) return "int";
    if (v instanceof Double) return "float";
    if (v instanceof String) return "str";
    if (v instanceof byte[]) return "bytes";
    if (v instanceof Device) return "Device";
    if (v instanceof DataType) return "dtype";
    if (v instanceof Function) return "Function";
    if (v instanceof Module) return "Module";
    if (v instanceof NDArray) return "NDArray";
    if (v instanceof ObjectRef) return "Object";
    return v.getClass().getSimpleName();
  }

  /** The dimensions of a {"shape": [...]} tag, each an int64. */
  static long[] shapeDims(JsonNode body) {
    long[] dims = new long[body.size()];
    for (int i = 0; i < dims.length; i++) {
      if (!body.get(i).canConvertToLong()) throw new Failure("shape dimension out of range");
      dims[i] = body.get(i).asLong();
    }
    return dims;
  }

  static String describe(Object v) {
    String text;
    if (v instanceof byte[]) text = toHex((byte[]) v);
    else if (v instanceof long[]) text = Arrays.toString((long[]) v);
    else if (v instanceof Double)
      text = v + " (bits 0x" + Long.toHexString(Double.doubleToRawLongBits((Double) v)) + ")";
    else text = String.valueOf(v);
    if (text.length() > 200) text = text.substring(0, 200);
    return typeName(v) + " " + text;
  }

  /** Kind, message (first line without the kind) and full text of an exception. */
  static String[] errorParts(Throwable e) {
    String kind;
    String message;
    String full;
    if (e instanceof FFIException) {
      FFIException f = (FFIException) e;
      kind = f.getKind();
      message = f.getErrorMessage();
      full = f.getMessage();
    } else {
      kind = FFIException.kindOf(e);
      String m = e.getMessage() == null ? "" : e.getMessage();
      message = m.split("\n", 2)[0];
      full = kind + ": " + m;
    }
    return new String[] {kind, message, full};
  }

  // ---- One running case ---------------------------------------------------------------------

  final String libDir;
  final int serial;
  final Map<String, Object> vars = new LinkedHashMap<>();
  final List<Object> modules = new ArrayList<>();
  final List<String> registered = new ArrayList<>();
  final List<Object> temps = new ArrayList<>(); // released when the step ends

  ConformanceRunner(String libDir, int serial) {
    this.libDir = libDir;
    this.serial = serial;
  }

  <T> T temp(T v) {
    if (v instanceof AutoCloseable) temps.add(v);
    return v;
  }

  void keep(Object v) {
    temps.removeIf(t -> t == v);
  }

  static void close(Object v) {
    if (v instanceof Handle) ((Handle) v).close();
  }

  Object var(String name) {
    if (!vars.containsKey(name)) throw new Failure("variable " + name + " is not bound");
    return vars.get(name);
  }

  Module loadModule(String name) {
    return Module.load(libDir + "/lib" + name + ".so");
  }

  Module resolveModule(JsonNode ref) {
    Object m = ref.isTextual() ? temp(loadModule(ref.asText())) : build(ref);
    if (!(m instanceof Module)) throw new Failure("expected a module but got " + describe(m));
    return (Module) m;
  }

  Function moduleFunction(JsonNode spec, boolean required) {
    Module m = resolveModule(spec.get("module"));
    String name = spec.get("function").asText();
    boolean q = spec.has("query_imports") && spec.get("query_imports").asBoolean();
    Function f = temp(m.getFunction(name, q));
    if (f == null && required) throw new Failure("module has no function " + name);
    return f;
  }

  Object build(JsonNode tagged) {
    Map.Entry<String, JsonNode> e = tagOf(tagged);
    String tag = e.getKey();
    JsonNode body = e.getValue();
    switch (tag) {
      case "int":
        if (!body.canConvertToLong()) throw new Failure("int out of range: " + body);
        return body.asLong();
      case "float":
        return parseFloat(body);
      case "bool":
        return body.asBoolean();
      case "str":
      case "str_repeat":
        return stringOf(tag, body);
      case "bytes_hex":
        return hex(body.asText());
      case "null":
        return null;
      case "device":
        return new Device(body.get(0).asInt(), body.get(1).asInt());
      case "dtype":
        return DataType.parse(body.asText());
      case "host":
        {
          Impl impl = HOSTS.get(body.asText());
          if (impl == null) throw new Failure("unknown host function " + body.asText());
          return temp(Function.convert(new HostCallable(body.asText(), impl, serial)));
        }
      case "global":
        return temp(Function.getGlobal(body.asText()));
      case "var":
        return var(body.asText());
      case "module":
        return temp(loadModule(body.asText()));
      case "array":
        {
          List<Object> items = new ArrayList<>();
          for (JsonNode item : body) items.add(build(item));
          return temp(Values.toArray(items));
        }
      case "map":
        {
          Map<Object, Object> m = new LinkedHashMap<>();
          for (JsonNode kv : body) m.put(build(kv.get(0)), build(kv.get(1)));
          return temp(Values.toMap(m));
        }
      case "shape":
        return shapeDims(body);
      case "ndarray":
        {
          NDArray a =
              temp(NDArray.empty(shapeOf(body), DataType.parse(body.get("dtype").asText())));
          a.copyFrom(ndarrayBytes(body));
          return a;
        }
      default:
        throw new Failure("unknown value tag " + tag);
    }
  }

  // ---- checking -----------------------------------------------------------------------------

  void expect(JsonNode expect, Object actual, List<Object> args, String path) {
    Map.Entry<String, JsonNode> e = tagOf(expect);
    String tag = e.getKey();
    JsonNode body = e.getValue();
    String want = expect.toString();
    if (want.length() > 300) want = want.substring(0, 300);
    final String prefix = path + ": expected " + want + " but got " + describe(actual);
    java.util.function.Function<String, Failure> fail =
        why -> new Failure(prefix + (why.isEmpty() ? "" : " (" + why + ")"));
    java.util.function.Consumer<String> need =
        kind -> {
          if (!typeName(actual).equals(kind)) {
            throw fail.apply("type " + typeName(actual) + ", want " + kind);
          }
        };
    switch (tag) {
      case "int":
        need.accept("int");
        if ((Long) actual != body.asLong()) throw fail.apply("");
        break;
      case "bool":
        need.accept("bool");
        if ((Boolean) actual != body.asBoolean()) throw fail.apply("");
        break;
      case "float":
        need.accept("float");
        if (Double.doubleToRawLongBits((Double) actual)
            != Double.doubleToRawLongBits(parseFloat(body))) {
          throw fail.apply("bits differ");
        }
        break;
      case "str":
      case "str_repeat":
        need.accept("str");
        if (!actual.equals(stringOf(tag, body))) throw fail.apply("");
        break;
      case "bytes_hex":
        need.accept("bytes");
        if (!Arrays.equals((byte[]) actual, hex(body.asText()))) throw fail.apply("");
        break;
      case "null":
        need.accept("None");
        break;
      case "device":
        {
          need.accept("Device");
          Device d = (Device) actual;
          if (d.type() != body.get(0).asInt() || d.id() != body.get(1).asInt())
            throw fail.apply("");
          break;
        }
      case "dtype":
        need.accept("str"); // docs/abi-decisions.md: dtypes come back as their string form
        if (!actual.equals(body.asText())) throw fail.apply("");
        break;
      case "any":
        if (!typeName(actual).equals(body.asText())) throw fail.apply("");
        break;
      case "same_as_arg":
      case "var":
        {
          Object wantV;
          if (tag.equals("var")) {
            wantV = var(body.asText());
          } else {
            if (body.asInt() >= args.size()) throw new Failure(path + ": same_as_arg out of range");
            wantV = args.get(body.asInt());
          }
          if (!typeName(actual).equals(typeName(wantV))) {
            throw fail.apply("type differs from " + describe(wantV));
          }
          if (wantV instanceof Handle) {
            if (((Handle) actual).address() != ((Handle) wantV).address()) {
              throw fail.apply("not the same handle");
            }
          } else if (wantV instanceof Double) {
            if (Double.doubleToRawLongBits((Double) actual)
                != Double.doubleToRawLongBits((Double) wantV)) {
              throw fail.apply("");
            }
          } else if (wantV instanceof byte[]) {
            if (!Arrays.equals((byte[]) actual, (byte[]) wantV)) throw fail.apply("");
          } else if (wantV == null ? actual != null : !wantV.equals(actual)) {
            throw fail.apply("");
          }
          break;
        }
      case "array":
        {
          if (!(actual instanceof ArrayObject)) throw fail.apply("not an Array");
          ArrayObject a = (ArrayObject) actual;
          if (a.size() != body.size()) throw fail.apply("size " + a.size());
          for (int i = 0; i < body.size(); i++) {
            expect(body.get(i), temp(a.get(i)), args, path + "[" + i + "]");
          }
          break;
        }
      case "map":
        {
          if (!(actual instanceof MapObject)) throw fail.apply("not a Map");
          MapObject m = (MapObject) actual;
          if (m.size() != body.size()) throw fail.apply("size " + m.size());
          for (JsonNode kv : body) {
            Object key = build(kv.get(0));
            Object item;
            try {
              item = temp(Values.builtin("runtime.MapGetItem").call(m, key));
            } catch (RuntimeException ex) {
              throw fail.apply("looking up key " + kv.get(0) + ": " + ex);
            }
            expect(kv.get(1), item, args, path + "[" + kv.get(0) + "]");
          }
          break;
        }
      case "shape":
        {
          if (!(actual instanceof long[])) throw fail.apply("not a long[] shape");
          if (!Arrays.equals((long[]) actual, shapeDims(body))) {
            throw fail.apply("dimensions differ");
          }
          break;
        }
      case "ndarray":
        {
          if (!(actual instanceof NDArray)) throw fail.apply("not an NDArray");
          NDArray a = (NDArray) actual;
          if (!a.dtype().toString().equals(body.get("dtype").asText()))
            throw fail.apply("dtype differs");
          if (!Arrays.equals(a.shape(), shapeOf(body))) throw fail.apply("shape differs");
          byte[] got = a.toByteArray();
          if (!Arrays.equals(got, ndarrayBytes(body)))
            throw fail.apply("data differs: " + toHex(got));
          break;
        }
      default:
        throw new Failure(path + ": unknown expectation tag " + tag);
    }
  }

  static void expectError(JsonNode spec, Throwable e) {
    String[] p = errorParts(e);
    String why = null;
    if (spec.has("kind") && !p[0].equals(spec.get("kind").asText())) why = "kind";
    else if (spec.has("message") && !p[1].equals(spec.get("message").asText())) why = "message";
    else if (spec.has("contains") && !p[2].contains(spec.get("contains").asText())) why = "text";
    if (why != null) {
      throw new Failure(
          "expected error "
              + spec
              + " but got "
              + e.getClass().getSimpleName()
              + " '"
              + p[2]
              + "' ("
              + why
              + ")");
    }
  }

  // ---- steps --------------------------------------------------------------------------------

  /** The call, or with "async": true the binding's callAsync, waited for. */
  static Object callMaybeAsync(Function f, JsonNode step, Object[] args) {
    if (!step.path("async").asBoolean(false)) return f.call(args);
    try {
      return f.callAsync(args).join();
    } catch (CompletionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException) throw (RuntimeException) cause;
      if (cause instanceof Error) throw (Error) cause;
      throw e;
    }
  }

  void runCall(JsonNode step, Object function) {
    if (!(function instanceof Function))
      throw new Failure("callee is not a function: " + describe(function));
    List<Object> args = new ArrayList<>();
    for (JsonNode a : step.get("args")) args.add(build(a));
    Object result;
    try {
      result = temp(callMaybeAsync((Function) function, step, args.toArray()));
    } catch (RuntimeException | Error ex) {
      if (ex instanceof Failure) throw ex;
      if (step.has("expect_error")) {
        expectError(step.get("expect_error"), ex);
        return;
      }
      Failure f = new Failure("call failed: " + errorParts(ex)[2]);
      f.initCause(ex);
      throw f;
    }
    if (step.has("expect_error")) {
      throw new Failure(
          "expected error "
              + step.get("expect_error")
              + " but the call returned "
              + describe(result));
    }
    if (step.has("expect")) expect(step.get("expect"), result, args, "result");
    if (step.has("bind")) {
      keep(result);
      vars.put(step.get("bind").asText(), result);
    }
  }

  void runStep(JsonNode step) throws InterruptedException {
    if (step.has("call")) {
      runCall(step, temp(Function.getGlobal(step.get("call").asText())));
    } else if (step.has("call_value")) {
      runCall(step, build(step.get("call_value")));
    } else if (step.has("module_call")) {
      runCall(step, moduleFunction(step.get("module_call"), true));
    } else if (step.has("let")) {
      Object v = build(step.get("value"));
      keep(v);
      vars.put(step.get("let").asText(), v);
    } else if (step.has("release")) {
      String name = step.get("release").asText();
      if (!vars.containsKey(name)) throw new Failure("release of unbound variable " + name);
      close(vars.remove(name));
    } else if (step.has("register")) {
      String name = step.get("register").asText();
      Object f = build(step.get("value"));
      if (!(f instanceof Function)) throw new Failure("register needs a function");
      boolean override = step.has("override") && step.get("override").asBoolean();
      try {
        ((Function) f).register(name, override);
      } catch (RuntimeException ex) {
        if (!step.has("expect_error")) throw new Failure("register failed: " + ex);
        expectError(step.get("expect_error"), ex);
        return;
      }
      registered.add(name);
      if (step.has("expect_error")) throw new Failure("register " + name + " succeeded");
    } else if (step.has("remove")) {
      Function.removeGlobal(step.get("remove").asText());
    } else if (step.has("exists")) {
      Function f = temp(Function.getGlobal(step.get("exists").asText(), true));
      boolean found = f != null;
      if (found != step.get("expect").asBoolean()) {
        throw new Failure(
            "getGlobal(" + step.get("exists") + ") " + (found ? "found it" : "did not find it"));
      }
    } else if (step.has("listed")) {
      List<String> names = Function.listGlobalNames();
      boolean found = names.contains(step.get("listed").asText());
      if (found != step.get("expect").asBoolean()) {
        throw new Failure(
            "listGlobalNames "
                + (found ? "lists " : "does not list ")
                + step.get("listed")
                + " ("
                + names.size()
                + " names)");
      }
    } else if (step.has("host_live")) {
      closeTemps();
      int want = step.get("host_live").asInt();
      int live = hostLive(serial, want);
      if (live != want) throw new Failure("host callables alive: " + live + ", want " + want);
    } else if (step.has("load_module")) {
      Module m;
      try {
        m = loadModule(step.get("load_module").asText());
      } catch (RuntimeException ex) {
        if (!step.has("expect_error")) throw new Failure("load failed: " + ex);
        expectError(step.get("expect_error"), ex);
        return;
      }
      if (step.has("expect_error")) {
        m.close();
        throw new Failure("loading the module succeeded");
      }
      if (step.has("bind")) vars.put(step.get("bind").asText(), m);
      else modules.add(m);
    } else if (step.has("import")) {
      Module m = resolveModule(step.get("import").get("module"));
      Module dep = resolveModule(step.get("import").get("dep"));
      m.importModule(dep);
    } else if (step.has("module_get")) {
      Function f = moduleFunction(step.get("module_get"), false);
      if (step.has("expect") && (f != null) != step.get("expect").asBoolean()) {
        throw new Failure(
            "getFunction " + (f != null ? "found " : "did not find ") + step.get("module_get"));
      }
      if (step.has("bind")) {
        if (f == null) throw new Failure("module_get found nothing to bind");
        keep(f);
        vars.put(step.get("bind").asText(), f);
      }
    } else {
      throw new Failure("unknown step " + step);
    }
  }

  void closeTemps() {
    for (int i = temps.size() - 1; i >= 0; i--) close(temps.get(i));
    temps.clear();
  }

  void cleanup() {
    closeTemps();
    vars.values().forEach(ConformanceRunner::close);
    vars.clear();
    modules.forEach(ConformanceRunner::close);
    modules.clear();
    for (String name : registered) Function.removeGlobal(name);
    registered.clear();
  }

  private static final AtomicInteger SERIAL = new AtomicInteger();

  /** Runs one case; null when it passes, else the failure message. */
  static String runCase(JsonNode c, String libDir) throws InterruptedException {
    int serial = SERIAL.incrementAndGet();
    currentCase = serial;
    ConformanceRunner run = new ConformanceRunner(libDir, serial);
    boolean multi = c.has("steps");
    List<JsonNode> steps = new ArrayList<>();
    if (multi) c.get("steps").forEach(steps::add);
    else steps.add(c);
    String message = null;
    for (int i = 0; i < steps.size(); i++) {
      try {
        run.runStep(steps.get(i));
        run.closeTemps();
      } catch (RuntimeException | AssertionError ex) {
        message = (multi ? "step " + i + ": " : "") + ex.getMessage();
        break;
      }
    }
    run.cleanup();
    if (message == null) {
      int live = hostLive(serial, 0);
      if (live != 0) message = "after the case: " + live + " host callable(s) never finalized";
    }
    return message;
  }
}
