package org.polyffi;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Iterator;
import java.util.Set;

/** A runtime.Map, read through runtime.MapSize / MapGetItem / MapCount / MapItems, as a Map. */
public final class MapObject extends ObjectRef implements java.util.Map<Object, Object> {
  private final View view = new View();

  MapObject(long handle, boolean owned) {
    super(handle, owned);
  }

  private final class View extends AbstractMap<Object, Object> {
    @Override
    public Set<Entry<Object, Object>> entrySet() {
      return new AbstractSet<>() {
        @Override
        public Iterator<Entry<Object, Object>> iterator() {
          // runtime.MapItems: a flat Array k0, v0, k1, v1, ...
          ArrayObject flat = (ArrayObject) Values.builtin("runtime.MapItems").call(MapObject.this);
          java.util.List<Entry<Object, Object>> out = new java.util.ArrayList<>();
          try {
            for (int i = 0; i + 1 < flat.size(); i += 2) {
              out.add(new SimpleImmutableEntry<>(flat.get(i), flat.get(i + 1)));
            }
          } finally {
            flat.close();
          }
          return out.iterator();
        }

        @Override
        public int size() {
          return MapObject.this.size();
        }
      };
    }
  }

  @Override
  public MapObject retain() {
    return new MapObject(Native.retain(typeCode(), handle()), true);
  }

  @Override
  public int size() {
    return (int) Values.builtin("runtime.MapSize").callLongObj(this);
  }

  @Override
  public boolean isEmpty() {
    return size() == 0;
  }

  @Override
  public boolean containsKey(Object key) {
    return Values.builtin("runtime.MapCount").callLongObj(this, key) != 0;
  }

  @Override
  public Object get(Object key) {
    return containsKey(key) ? Values.builtin("runtime.MapGetItem").call(this, key) : null;
  }

  @Override
  public boolean containsValue(Object value) {
    return view.containsValue(value);
  }

  @Override
  public Object put(Object key, Object value) {
    throw new UnsupportedOperationException("runtime.Map is immutable");
  }

  @Override
  public Object remove(Object key) {
    throw new UnsupportedOperationException("runtime.Map is immutable");
  }

  @Override
  public void putAll(java.util.Map<?, ?> m) {
    throw new UnsupportedOperationException("runtime.Map is immutable");
  }

  @Override
  public void clear() {
    throw new UnsupportedOperationException("runtime.Map is immutable");
  }

  @Override
  public Set<Object> keySet() {
    return view.keySet();
  }

  @Override
  public java.util.Collection<Object> values() {
    return view.values();
  }

  @Override
  public Set<Entry<Object, Object>> entrySet() {
    return view.entrySet();
  }
}
