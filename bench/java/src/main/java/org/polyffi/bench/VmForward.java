package org.polyffi.bench;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.polyffi.DataType;
import org.polyffi.Device;
import org.polyffi.Module;
import org.polyffi.NDArray;
import org.polyffi.VirtualMachine;

/**
 * Latency of a TVM 0.27 relax model's forward through {@link VirtualMachine} (the Java binding),
 * for the three ways inputs arrive: runtime NDArrays (passed as they are), views of 64-byte-aligned
 * direct buffers (zero-copy) and of misaligned ones (copied into aligned arrays per call).
 * bench/models/vm_bindings.sh runs it beside the C driver and the Rust and Node ones.
 *
 * <p>usage: VmForward RUN_DIR IO_TXT [min_ms] -> one JSON line (median ns per forward).
 */
public final class VmForward {
  private VmForward() {}

  interface Body {
    void run();
  }

  static double medianNs(double minMs, Body f) {
    long iters = 1;
    for (; ; ) {
      long t = System.nanoTime();
      for (long i = 0; i < iters; i++) f.run();
      double dt = System.nanoTime() - t;
      if (dt > minMs * 1e6 / 4) {
        iters = (long) (iters * (minMs * 1e6 / dt)) + 1;
        break;
      }
      iters *= 4;
    }
    double[] per = new double[9];
    for (int r = 0; r < per.length; r++) {
      long t = System.nanoTime();
      for (long i = 0; i < iters; i++) f.run();
      per[r] = (double) (System.nanoTime() - t) / iters;
    }
    Arrays.sort(per);
    return per[4];
  }

  static void release(Object r) {
    if (r instanceof List) {
      for (Object x : (List<?>) r) release(x);
    } else if (r instanceof NDArray) {
      ((NDArray) r).close();
    }
  }

  static ByteBuffer host(byte[] bytes, int offset) {
    ByteBuffer b = ByteBuffer.allocateDirect(bytes.length + 192).alignedSlice(64);
    b.position(offset);
    ByteBuffer s = b.slice().order(ByteOrder.nativeOrder());
    s.put(bytes).flip();
    return s;
  }

  public static void main(String[] args) throws IOException {
    BenchEnv.init();
    Path dir = Paths.get(args[0]);
    double minMs = args.length > 2 ? Double.parseDouble(args[2]) : 200;
    String library = null;
    List<long[]> shapes = new ArrayList<>();
    List<byte[]> inputs = new ArrayList<>();
    List<byte[]> outputs = new ArrayList<>();
    for (String line : Files.readAllLines(dir.resolve(args[1]))) {
      String[] w = line.trim().split("\\s+");
      if (w[0].equals("library")) library = w[1];
      if (w[0].equals("input")) {
        if (!w[2].equals("2") || !w[3].equals("32"))
          throw new IllegalStateException("float32 only");
        int ndim = Integer.parseInt(w[4]);
        long[] shape = new long[ndim];
        for (int i = 0; i < ndim; i++) shape[i] = Long.parseLong(w[5 + i]);
        shapes.add(shape);
        inputs.add(Files.readAllBytes(dir.resolve(w[5 + ndim])));
      }
      if (w[0].equals("output")) outputs.add(Files.readAllBytes(dir.resolve(w[3])));
    }
    try (Module lib = Module.load(dir.resolve("..").resolve(library).toString());
        VirtualMachine vm = new VirtualMachine(lib, Device.cpu())) {
      Map<String, Object[]> forms = new LinkedHashMap<>();
      Object[] arrays = new Object[inputs.size()];
      Object[] aligned = new Object[inputs.size()];
      Object[] misaligned = new Object[inputs.size()];
      for (int i = 0; i < inputs.size(); i++) {
        NDArray a = NDArray.empty(shapes.get(i), DataType.FLOAT32);
        a.asByteBuffer().put(inputs.get(i));
        arrays[i] = a;
        aligned[i] = NDArray.fromBuffer(host(inputs.get(i), 0), shapes.get(i), DataType.FLOAT32);
        misaligned[i] = NDArray.fromBuffer(host(inputs.get(i), 4), shapes.get(i), DataType.FLOAT32);
      }
      forms.put("ndarray_ns", arrays);
      forms.put("aligned_view_ns", aligned);
      forms.put("misaligned_view_ns", misaligned);
      StringBuilder row = new StringBuilder("{\"binding\": \"java\"");
      for (Map.Entry<String, Object[]> e : forms.entrySet()) {
        Object[] a = e.getValue();
        Object got = vm.invoke("forward", a);
        List<?> outs = got instanceof List ? (List<?>) got : List.of(got);
        for (int k = 0; k < outs.size(); k++) {
          ByteBuffer b = ((NDArray) outs.get(k)).asByteBuffer();
          byte[] bytes = new byte[b.remaining()];
          b.get(bytes);
          if (!Arrays.equals(bytes, outputs.get(k))) {
            throw new IllegalStateException(e.getKey() + ": output differs from TVM's");
          }
        }
        release(got);
        for (int i = 0; i < 2000; i++) release(vm.invoke("forward", a)); // JIT warm-up
        double ns = medianNs(minMs, () -> release(vm.invoke("forward", a)));
        row.append(String.format(", \"%s\": %.1f", e.getKey(), ns));
      }
      System.out.println(row.append("}"));
      for (Object[] a : forms.values()) for (Object x : a) ((NDArray) x).close();
    }
  }
}
