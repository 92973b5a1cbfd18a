package org.polyffi;

import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/** A runtime module: a loaded library, a graph executor, ... AutoCloseable. */
public final class Module extends Handle {
  Module(long handle, boolean owned) {
    super(handle, Values.MODULE, owned);
  }

  /** Loads a module; the format is taken from the suffix (".so": a shared library). */
  public static Module load(String path) {
    return load(path, "");
  }

  /** Loads with an explicit format; a missing file is an FFIException of kind ValueError. */
  public static Module load(String path, String format) {
    Objects.requireNonNull(path, "path");
    return new Module(Native.modLoad(path, format == null ? "" : format), true);
  }

  /** The function; missing: FFIException of kind AttributeError. */
  public Function getFunction(String name) {
    Function f = getFunction(name, false);
    if (f == null) {
      throw new FFIException("AttributeError", "Module has no function '" + name + "'");
    }
    return f;
  }

  /** The function, also searched in imports when queryImports; null when missing. */
  public Function getFunction(String name, boolean queryImports) {
    Objects.requireNonNull(name, "name");
    long h = Native.modGetFunction(handle(), name, queryImports);
    Reference.reachabilityFence(this);
    return h == 0 ? null : new Function(h, true);
  }

  /** Makes dep an import of this module (this module keeps its own reference). */
  public void importModule(Module dep) {
    Native.modImport(handle(), dep.handle());
    Reference.reachabilityFence(this);
    Reference.reachabilityFence(dep);
  }

  /** The entry function named by the library's __tvm_main__. */
  public Function entryFunc() {
    return getFunction("__tvm_main__");
  }

  public String typeKey() {
    return (String) Values.builtin("runtime.ModuleGetTypeKey").call(this);
  }

  /**
   * The modules this one imports, in order (new references the caller closes). A library exported
   * by TVM loads as its GraphExecutorFactory, whose one import is the library itself.
   */
  public List<Module> imports() {
    long n = (Long) Values.builtin("runtime.ModuleImportsSize").call(this);
    List<Module> out = new ArrayList<>();
    Function get = Values.builtin("runtime.ModuleGetImport");
    for (long i = 0; i < n; i++) out.add((Module) get.call(this, i));
    return out;
  }

  @Override
  public Module retain() {
    return new Module(Native.retain(typeCode(), handle()), true);
  }
}
