package org.polyffi;

/** Any other runtime object (kTVMObjectHandle), kept by identity. */
public class ObjectRef extends Handle {
  ObjectRef(long handle, boolean owned) {
    super(handle, Values.OBJECT, owned);
  }

  /** The registered type key, e.g. "runtime.Array". */
  public String typeKey() {
    return Native.typeIndexToKey(Native.objectTypeIndex(handle()));
  }

  @Override
  public ObjectRef retain() {
    return new ObjectRef(Native.retain(typeCode(), handle()), true);
  }
}
