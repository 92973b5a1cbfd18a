package org.polyffi;

import java.util.AbstractList;
import java.util.RandomAccess;

/** A runtime.Array, read through runtime.ArraySize / runtime.ArrayGetItem, as a List. */
public final class ArrayObject extends ObjectRef implements java.util.List<Object>, RandomAccess {
  private final View view = new View();

  ArrayObject(long handle, boolean owned) {
    super(handle, owned);
  }

  private final class View extends AbstractList<Object> {
    @Override
    public Object get(int i) {
      if (i < 0 || i >= size())
        throw new IndexOutOfBoundsException("index " + i + ", size " + size());
      return Values.builtin("runtime.ArrayGetItem").call(ArrayObject.this, (long) i);
    }

    @Override
    public int size() {
      return (int) Values.builtin("runtime.ArraySize").callLongObj(ArrayObject.this);
    }
  }

  @Override
  public ArrayObject retain() {
    return new ArrayObject(Native.retain(typeCode(), handle()), true);
  }

  // java.util.List, read-only, delegated to the view
  @Override
  public int size() {
    return view.size();
  }

  @Override
  public boolean isEmpty() {
    return view.isEmpty();
  }

  @Override
  public boolean contains(Object o) {
    return view.contains(o);
  }

  @Override
  public java.util.Iterator<Object> iterator() {
    return view.iterator();
  }

  @Override
  public Object[] toArray() {
    return view.toArray();
  }

  @Override
  public <T> T[] toArray(T[] a) {
    return view.toArray(a);
  }

  @Override
  public boolean add(Object e) {
    throw new UnsupportedOperationException("runtime.Array is immutable");
  }

  @Override
  public boolean remove(Object o) {
    throw new UnsupportedOperationException("runtime.Array is immutable");
  }

  @Override
  public boolean containsAll(java.util.Collection<?> c) {
    return view.containsAll(c);
  }

  @Override
  public boolean addAll(java.util.Collection<?> c) {
    throw new UnsupportedOperationException("runtime.Array is immutable");
  }

  @Override
  public boolean addAll(int index, java.util.Collection<?> c) {
    throw new UnsupportedOperationException("runtime.Array is immutable");
  }

  @Override
  public boolean removeAll(java.util.Collection<?> c) {
    throw new UnsupportedOperationException("runtime.Array is immutable");
  }

  @Override
  public boolean retainAll(java.util.Collection<?> c) {
    throw new UnsupportedOperationException("runtime.Array is immutable");
  }

  @Override
  public void clear() {
    throw new UnsupportedOperationException("runtime.Array is immutable");
  }

  @Override
  public Object get(int index) {
    return view.get(index);
  }

  @Override
  public Object set(int index, Object element) {
    throw new UnsupportedOperationException("runtime.Array is immutable");
  }

  @Override
  public void add(int index, Object element) {
    throw new UnsupportedOperationException("runtime.Array is immutable");
  }

  @Override
  public Object remove(int index) {
    throw new UnsupportedOperationException("runtime.Array is immutable");
  }

  @Override
  public int indexOf(Object o) {
    return view.indexOf(o);
  }

  @Override
  public int lastIndexOf(Object o) {
    return view.lastIndexOf(o);
  }

  @Override
  public java.util.ListIterator<Object> listIterator() {
    return view.listIterator();
  }

  @Override
  public java.util.ListIterator<Object> listIterator(int index) {
    return view.listIterator(index);
  }

  @Override
  public java.util.List<Object> subList(int from, int to) {
    return view.subList(from, to);
  }
}
