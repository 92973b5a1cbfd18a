package org.polyffi;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * A relax VM executable (what TVM 0.2x's {@code export_library} writes), run by function name.
 * Built on the executable module's own protocol, as {@code tvm.relax.VirtualMachine} does it:
 * {@code lib["vm_load_executable"]()}, then {@code vm_initialization(device_type, device_id,
 * allocator)}:
 *
 * <pre>{@code
 * try (Module lib = Module.load("model.so");
 *     VirtualMachine vm = new VirtualMachine(lib, Device.cpu());
 *     NDArray x = NDArray.fromBuffer(buffer, new long[] {1, 16}, DataType.FLOAT32);
 *     NDArray y = (NDArray) vm.invoke("forward", x)) { ... }
 * }</pre>
 *
 * <p>Arguments: NDArrays (including {@link NDArray#fromBuffer} views of direct ByteBuffers) pass
 * zero-copy when their data is compact and 64-byte aligned ({@code ByteBuffer.allocateDirect(n +
 * 64).alignedSlice(64)} gives such a buffer), and are otherwise copied into a new aligned array for
 * the call: the kernels TVM compiles assume 64-byte-aligned buffers without checking. Lists become
 * runtime Arrays (tuple parameters); numbers, strings and the other values pass as in {@link
 * Function#call}. Results: an {@link NDArray}, or a {@code List} of results for a relax Tuple (the
 * caller closes the arrays). A result holds its own storage, so it stays valid after the next call.
 *
 * <p>Calls from several threads are safe and run one at a time (the VM's own lock); for parallel
 * inference use one VM per thread (each made from the same library has its own state).
 */
public final class VirtualMachine implements AutoCloseable {
  /** The alignment TVM's compiled kernels assume of every tensor's data. */
  public static final int KERNEL_ALIGNMENT = 64;

  /** The VM's storage allocator, as vm_initialization numbers them. */
  public enum Allocator {
    /** One aligned allocation per tensor (TVM's 1). */
    NAIVE(1),
    /** Freed buffers kept and reused by size (TVM's 2, its default). */
    POOLED(2);

    final long code;

    Allocator(long code) {
      this.code = code;
    }
  }

  private final Module module;
  private final Device device;
  private final Map<String, Function> functions = new HashMap<>();

  /** A VM for the executable lib on device with the pooled allocator (TVM's default). */
  public VirtualMachine(Module lib, Device device) {
    this(lib, device, Allocator.POOLED);
  }

  /**
   * A VM for the executable lib on device. For a device other than the CPU, the CPU is added as the
   * last device (shape computations run there), as TVM's wrapper does. The library stays the
   * caller's: the VM keeps what it needs alive by itself.
   */
  public VirtualMachine(Module lib, Device device, Allocator allocator) {
    Objects.requireNonNull(lib, "lib");
    Objects.requireNonNull(device, "device");
    Objects.requireNonNull(allocator, "allocator");
    Function load = lib.getFunction("vm_load_executable", false);
    if (load == null) {
      String key = lib.typeKey();
      String hint =
          key.startsWith("GraphExecutor") || key.startsWith("GraphRuntime")
              ? "; a TVM 0.18 graph export goes to GraphModule.fromFactory"
              : "";
      throw new FFIException(
          "TypeError",
          "VirtualMachine: a "
              + key
              + " module is not a relax VM executable (it has no vm_load_executable)"
              + hint);
    }
    Object m;
    try (load) {
      m = load.call();
    }
    if (!(m instanceof Module)) {
      if (m instanceof Handle) ((Handle) m).close();
      throw new FFIException(
          "TypeError", "vm_load_executable() returned " + Function.describe(m) + ", not a module");
    }
    Module vm = (Module) m;
    try (Function init = vm.getFunction("vm_initialization")) {
      if (device.type() == Device.CPU) {
        init.call((long) device.type(), (long) device.id(), allocator.code);
      } else {
        init.call(
            (long) device.type(),
            (long) device.id(),
            allocator.code,
            (long) Device.CPU,
            0L,
            allocator.code);
      }
    } catch (RuntimeException e) {
      vm.close();
      throw e;
    }
    this.module = vm;
    this.device = device;
  }

  /** The VM module (the executable's vm_load_executable()), for its other functions. */
  public Module module() {
    return module;
  }

  public Device device() {
    return device;
  }

  /**
   * The VM module's function {@code name} ({@code vm["name"]}), looked up once and owned by this VM
   * (do not close it): plain packed calls, without the argument staging or result conversion of
   * {@link #invoke}. A missing name is an FFIException of kind AttributeError naming it.
   */
  public synchronized Function getFunction(String name) {
    Objects.requireNonNull(name, "name");
    Function f = functions.get(name);
    if (f == null) {
      f = module.getFunction(name, false);
      if (f == null) {
        throw new FFIException(
            "AttributeError", "VirtualMachine: the executable has no function '" + name + "'");
      }
      functions.put(name, f);
    }
    return f;
  }

  /** Whether the executable has a function name. */
  public synchronized boolean hasFunction(String name) {
    if (functions.containsKey(name)) return true;
    Function f = module.getFunction(name, false);
    if (f == null) return false;
    functions.put(name, f);
    return true;
  }

  /** Runs VM function name: an NDArray, or a List of results for a tuple. */
  public Object invoke(String name, Object... args) {
    return callStaged(getFunction(name), args);
  }

  /** {@link #invoke} as an NDArray; an FFIException of kind TypeError for a tuple result. */
  public NDArray invokeTensor(String name, Object... args) {
    Object r = invoke(name, args);
    if (r instanceof NDArray) return (NDArray) r;
    closeAll(r);
    throw new FFIException(
        "TypeError",
        "VirtualMachine: " + name + " returned " + Function.describe(r) + ", not a tensor");
  }

  /**
   * Runs {@link #invoke} on the pool {@link Function#callAsync(Object...)} uses (daemon threads
   * meant for blocking native calls, not the common ForkJoin pool).
   */
  public CompletableFuture<Object> invokeAsync(String name, Object... args) {
    return invokeAsync(Function.defaultExecutor(), name, args);
  }

  /** Runs {@link #invoke} on executor. */
  public CompletableFuture<Object> invokeAsync(Executor executor, String name, Object... args) {
    Function f = getFunction(name); // a missing name fails now
    Object[] copy = args.clone();
    return CompletableFuture.supplyAsync(() -> callStaged(f, copy), executor);
  }

  /** Stores the inputs of funcName for {@link #invokeStateful} (the VM copies them). */
  public void setInput(String funcName, Object... args) {
    Object[] all = new Object[args.length + 1];
    all[0] = funcName;
    System.arraycopy(args, 0, all, 1, args.length);
    closeAll(callStaged(getFunction("set_input"), all));
  }

  /** Runs funcName on the inputs given to {@link #setInput}. */
  public void invokeStateful(String funcName) {
    closeAll(getFunction("invoke_stateful").call(funcName));
  }

  /** The result of the last {@link #invokeStateful} of funcName: an NDArray or a List. */
  public Object getOutputs(String funcName) {
    return outputAt(funcName, new ArrayList<>());
  }

  private Object outputAt(String funcName, List<Long> index) {
    Object[] args = new Object[index.size() + 1];
    args[0] = funcName;
    for (int i = 0; i < index.size(); i++) args[i + 1] = index.get(i);
    long n = (Long) getFunction("get_output_arity").call(args);
    if (n < 0) return convertResult(getFunction("get_output").call(args));
    List<Object> out = new ArrayList<>();
    for (long i = 0; i < n; i++) {
      index.add(i);
      out.add(outputAt(funcName, index));
      index.remove(index.size() - 1);
    }
    return out;
  }

  /** The parameter names of funcName, in order. */
  public List<String> paramNames(String funcName) {
    long n = (Long) getFunction("get_function_arity").call(funcName);
    Function get = getFunction("get_function_param_name");
    List<String> out = new ArrayList<>();
    for (long i = 0; i < n; i++) out.add((String) get.call(funcName, i));
    return out;
  }

  @Override
  public synchronized void close() {
    for (Function f : functions.values()) f.close();
    functions.clear();
    module.close();
  }

  // ---- argument staging and results -------------------------------------------------------------

  private static Object callStaged(Function f, Object[] args) {
    List<NDArray> temps = new ArrayList<>();
    try {
      Object[] staged = new Object[args.length];
      for (int i = 0; i < args.length; i++) staged[i] = stage(args[i], temps);
      return convertResult(f.call(staged));
    } finally {
      for (NDArray t : temps) t.close();
    }
  }

  /** The value passed for a; arrays made for the call go to temps (closed after it). */
  static Object stage(Object a, List<NDArray> temps) {
    if (a instanceof NDArray) {
      NDArray arr = (NDArray) a;
      if (arr.device().type() != Device.CPU || arr.isAligned(KERNEL_ALIGNMENT)) return arr;
      NDArray copy = NDArray.empty(arr.shape(), arr.dtype(), arr.device());
      temps.add(copy);
      copyCompact(arr, copy);
      return copy;
    }
    if (a instanceof ByteBuffer) {
      throw new FFIException(
          "TypeError",
          "VirtualMachine: a ByteBuffer has no shape or dtype; pass NDArray.fromBuffer(buffer,"
              + " shape, dtype)");
    }
    if (a instanceof List && !(a instanceof ArrayObject)) {
      List<?> in = (List<?>) a;
      List<Object> out = new ArrayList<>(in.size());
      for (Object x : in) out.add(stage(x, temps));
      return out;
    }
    return a;
  }

  /** Copies src into the new compact array dst (same shape and dtype). */
  private static void copyCompact(NDArray src, NDArray dst) {
    ByteBuffer from;
    try {
      from = src.asByteBuffer();
    } catch (IllegalStateException strided) {
      throw new FFIException(
          "ValueError",
          "VirtualMachine: a strided array is not supported; pass a compact (row-major) one");
    }
    dst.asByteBuffer().put(from);
  }

  /** An Array result becomes a List (recursively); the container is released. */
  private static Object convertResult(Object r) {
    if (r instanceof ArrayObject) {
      ArrayObject arr = (ArrayObject) r;
      try {
        List<Object> out = new ArrayList<>(arr.size());
        for (Object x : arr) out.add(convertResult(x));
        return out;
      } finally {
        arr.close();
      }
    }
    return r;
  }

  private static void closeAll(Object r) {
    if (r instanceof List) {
      for (Object x : (List<?>) r) closeAll(x);
    } else if (r instanceof AutoCloseable && !(r instanceof Function)) {
      try {
        ((AutoCloseable) r).close();
      } catch (Exception ignored) {
        // closing a native handle does not throw
      }
    }
  }
}
