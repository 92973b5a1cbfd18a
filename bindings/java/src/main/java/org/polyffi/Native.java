package org.polyffi;

import java.nio.ByteBuffer;

/** The JNI entry points of libpolyffi_jni; each is a thin shell over one or two C ABI calls. */
final class Native {
  private Native() {}

  static {
    Library.load();
  }

  // library
  static native int[] runtimeVersion();

  /** POLYFFI_ABI_DIGEST of the headers the glue was compiled against. */
  static native String builtAbiDigest();

  /** The loaded libpolyffi's ABI digest (TVMAPIGetAbiDigest). */
  static native String runtimeAbiDigest();

  static native String lastError();

  // function: generic path. slots is the address of a Values.Frame buffer: TVMValue[cap], then
  // int[cap] codes, then the result (value, code); refs holds the String / byte[] arguments.
  // str/bytes results are returned, everything else is left in the buffer.
  static native Object call(long fn, long slots, int cap, Object[] refs, int n);

  static native long address(ByteBuffer direct);

  // async calls on the core's pool (c_async_api.h). asyncSubmit converts like call, submits and
  // returns the call handle; the completion calls target.onDone(...) on a pool worker.
  static native long asyncSubmit(
      long fn, long slots, int cap, Object[] refs, int n, AsyncCall target);

  /** TVMAsyncCancel: 0 cancelled before start, 1 asked to stop, 2 already finished. */
  static native int asyncCancel(long call);

  static native void asyncFree(long call);

  /** TVMAsyncConfigure then TVMAsyncGetConfig: {numWorkers, queueLimit, queued}. */
  static native int[] asyncConfigure(int numWorkers, int queueLimit);

  // function: primitive fast paths (no boxing, no allocation; stack TVMValue arrays).
  /** TVMFuncGetDirect(fn): {func, resource}. */
  static native long[] getDirect(long fn);

  /** The (func, resource) pair of getDirect called with n int arguments; an int result. */
  static native long directL0(long func, long res);

  static native long directL1(long func, long res, long a);

  static native long directL2(long func, long res, long a, long b);

  static native long directL3(long func, long res, long a, long b, long c);

  static native long directL4(long func, long res, long a, long b, long c, long d);

  static native long callLN(long fn, long[] args);

  static native double callD1(long fn, double a);

  static native double callD2(long fn, double a, double b);

  static native double callD3(long fn, double a, double b, double c);

  static native double callDN(long fn, double[] args);

  static native void callV0(long fn);

  // handles
  static native void free(int code, long handle);

  static native long retain(int code, long handle);

  static native int objectTypeIndex(long handle);

  static native int typeKeyToIndex(String key);

  static native String typeIndexToKey(int index);

  /** The text of a runtime.String object (the handle stays the caller's). */
  static native String stringObjectValue(long handle);

  /** The dimensions of a runtime.ShapeTuple object (the handle stays the caller's). */
  static native long[] shapeTupleDims(long handle);

  // callback
  static native long createCallback(Callback cb);

  static native long createLongCallback(int slot);

  // registry
  static native long getGlobal(String name);

  static native void registerGlobal(String name, long fn, boolean override);

  static native String[] listGlobalNames();

  static native void removeGlobal(String name);

  static native long modLoad(String path, String format);

  static native long modGetFunction(long mod, String name, boolean queryImports);

  static native void modImport(long mod, long dep);

  // ndarray
  static native long ndEmpty(long[] shape, int dtype, long device);

  static native long ndFromBuffer(ByteBuffer buffer, int position, long[] shape, int dtype);

  static native long[] ndShape(long nd);

  static native int ndDtype(long nd);

  static native long ndDevice(long nd);

  static native ByteBuffer ndBuffer(long nd);

  static native void ndCopyFromArray(long nd, Object array, long nbytes);

  static native void ndCopyToArray(long nd, Object array, long nbytes);

  static native long ndByteSize(long nd);

  static native boolean ndIsAligned(long nd, long alignment);

  // value
  static native int dtypeParse(String s);

  static native String dtypeToString(int packed);
}
