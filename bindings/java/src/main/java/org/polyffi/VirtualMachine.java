package org.polyffi;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
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
 * <p>Calls run on the core's model runner ({@code polyffi.runner.vm}), which owns the VM protocol,
 * copies what TVM's kernels could not take as it is (misaligned or strided arrays) into compact
 * 64-byte-aligned arrays, and runs each call on a VM of its own pool. So {@link #invoke} is
 * stateless and thread-safe: many threads may share one VirtualMachine and run at once (the pool's
 * VMs share the executable's weights), without a lock. Arguments: NDArrays (including {@link
 * NDArray#fromBuffer} views of direct ByteBuffers); Lists become runtime Arrays (tuple parameters);
 * numbers, strings and the other values pass as in {@link Function#call}. Results: an {@link
 * NDArray}, or a {@code List} of results for a relax Tuple (the caller closes the arrays). A result
 * holds its own storage, so it stays valid after the next call. The stateful API ({@link
 * #setInput}, {@link #invokeStateful}) uses the runner's own VM, one caller at a time.
 */
public final class VirtualMachine implements AutoCloseable {
  /** The VM's storage allocator, as vm_initialization numbers them. */
  public enum Allocator {
    /** One aligned allocation per tensor (TVM's 1). */
    NAIVE,
    /** Freed buffers kept and reused by size (TVM's 2, its default). */
    POOLED
  }

  private final Module runner;
  private final Function run;
  private final Module module;
  private final Device device;
  private final Map<String, Function> functions = new ConcurrentHashMap<>();
  private volatile boolean closed;

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
    // The runner refuses a library that is not a relax VM executable (TypeError).
    Module made;
    try (Function make = Function.getGlobal("polyffi.runner.vm")) {
      String memoryCfg = allocator.name().toLowerCase(Locale.ROOT);
      made = (Module) make.call(lib, (long) device.type(), (long) device.id(), memoryCfg);
    }
    try {
      this.run = made.getFunction("run");
      try (Function vm = made.getFunction("vm")) {
        this.module = (Module) vm.call();
      }
    } catch (RuntimeException e) {
      made.close();
      throw e;
    }
    this.runner = made;
    this.device = device;
  }

  /** The core's model runner ({@code polyffi.runner.vm}): its run, pool_size, param_names. */
  public Module runner() {
    return runner;
  }

  /** The runner's own VM module (vm_load_executable()), for the stateful API and the rest. */
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
  public Function getFunction(String name) {
    Function f = lookup(name);
    if (f == null) {
      throw new FFIException(
          "AttributeError", "VirtualMachine: the executable has no function '" + name + "'");
    }
    return f;
  }

  /** Whether the executable has a function name. */
  public boolean hasFunction(String name) {
    return lookup(name) != null;
  }

  /** The VM module's function name, looked up once; null when it has none. */
  private Function lookup(String name) {
    Objects.requireNonNull(name, "name");
    ensureOpen();
    Function f = functions.get(name);
    return f != null ? f : functions.computeIfAbsent(name, n -> module.getFunction(n, false));
  }

  /** Runs VM function name (thread-safe): an NDArray, or a List of results for a tuple. */
  public Object invoke(String name, Object... args) {
    getFunction(name); // a missing name: AttributeError naming it
    return convertResult(run.call(runArgs(name, args)));
  }

  /** {@link #invoke} as an NDArray; an FFIException of kind TypeError for a tuple result. */
  public NDArray invokeTensor(String name, Object... args) {
    getFunction(name); // a missing name: AttributeError naming it
    Object r = run.call(runArgs(name, args));
    if (r instanceof NDArray) return (NDArray) r;
    if (r instanceof Handle) ((Handle) r).close(); // a tuple's Array releases its items with it
    throw new FFIException(
        "TypeError",
        "VirtualMachine: " + name + " returned " + Function.describe(r) + ", not a tensor");
  }

  /**
   * Runs {@link #invoke} on the core's worker pool, like {@link Function#callAsync(Object...)}:
   * concurrent calls run in parallel; {@code cancel(true)} stops a running call at its next VM
   * instruction.
   */
  public CompletableFuture<Object> invokeAsync(String name, Object... args) {
    getFunction(name); // a missing name fails now
    Object[] all;
    try {
      all = runArgs(name, args);
    } catch (FFIException e) {
      return CompletableFuture.failedFuture(e); // argument errors fail the future, as in callAsync
    }
    return run.submitAsync(all, VirtualMachine::convertResult);
  }

  /** Runs {@link #invoke} on executor. */
  public CompletableFuture<Object> invokeAsync(Executor executor, String name, Object... args) {
    getFunction(name); // a missing name fails now
    Object[] copy = args.clone();
    return CompletableFuture.supplyAsync(() -> invoke(name, copy), executor);
  }

  /** Stores the inputs of funcName for {@link #invokeStateful} (the VM copies them). */
  public void setInput(String funcName, Object... args) {
    callRunner("set_input", runArgs(funcName, args));
  }

  /** Runs funcName on the inputs given to {@link #setInput}. */
  public void invokeStateful(String funcName) {
    callRunner("invoke_stateful", funcName);
  }

  /** The result of the last {@link #invokeStateful} of funcName: an NDArray or a List. */
  public Object getOutputs(String funcName) {
    return convertResult(callRunner("get_outputs", funcName));
  }

  /** The parameter names of funcName, in order. */
  public List<String> paramNames(String funcName) {
    ensureOpen();
    return strings(runner, "param_names", funcName);
  }

  /** The runner's function fname (its stateful API runs on the runner's own VM). */
  private Object callRunner(String fname, Object... args) {
    ensureOpen();
    try (Function f = runner.getFunction(fname)) {
      return f.call(args);
    }
  }

  /** Use after close is an IllegalStateException naming this class, as for every handle. */
  private void ensureOpen() {
    if (closed) throw new IllegalStateException("VirtualMachine is closed");
  }

  @Override
  public synchronized void close() {
    closed = true;
    for (Function f : functions.values()) f.close();
    functions.clear();
    run.close();
    module.close();
    runner.close();
  }

  // ---- arguments and results ---------------------------------------------------------------

  /**
   * (name, args...): the arguments of the runner's run and of the VM's set_input. A ByteBuffer is a
   * TypeError pointing to NDArray.fromBuffer (it has no shape or dtype).
   */
  private static Object[] runArgs(String name, Object[] args) {
    Object[] all = new Object[args.length + 1];
    all[0] = name;
    for (int i = 0; i < args.length; i++) {
      if (args[i] instanceof ByteBuffer) {
        throw new FFIException(
            "TypeError",
            "VirtualMachine: a ByteBuffer has no shape or dtype; pass NDArray.fromBuffer(buffer,"
                + " shape, dtype)");
      }
      all[i + 1] = args[i];
    }
    return all;
  }

  /** module.fname(args...), an Array of strings, as a List. */
  static List<String> strings(Module module, String fname, Object... args) {
    List<String> out = new ArrayList<>();
    try (Function f = module.getFunction(fname)) {
      for (Object x : (List<?>) convertResult(f.call(args))) out.add((String) x);
    }
    return out;
  }

  /** An Array result becomes a List (recursively); the container is released. */
  static Object convertResult(Object r) {
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
}
