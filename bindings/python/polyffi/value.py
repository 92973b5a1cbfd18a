"""Values that cross the boundary: Device, DataType, Shape, objects and the Array / Map containers.

Scalar conversion (int, float, bool, str, bytes, None, ...) happens in the extension
(src/value.cc); this module holds the Python classes that returned objects are wrapped in.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Dict, Iterator, TypeVar

from . import _core

Device = _core.Device
DataType = _core.DataType

#: type key -> Python class used to wrap returned objects of that type.
_object_classes: Dict[str, type] = {}

C = TypeVar("C", bound=type)


def register_object(type_key: str) -> Callable[[C], C]:
    """Class decorator: wrap returned objects of ``type_key`` in this Object subclass."""

    def do_register(cls: C) -> C:
        if not (isinstance(cls, type) and issubclass(cls, _core.ObjectBase)):
            raise TypeError("register_object expects a subclass of polyffi.Object")
        _object_classes[type_key] = cls
        _core._clear_class_cache()
        return cls

    return do_register


def cpu(dev_id: int = 0) -> Device:
    """The CPU device."""
    return Device(1, dev_id)


def device(dev_type: Any, dev_id: int = 0) -> Device:
    """Device from a name ("cpu", "cuda", ...) or a DLPack device type number."""
    return Device(dev_type, dev_id)


_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


class Shape(tuple):
    """A shape: TVM's ``runtime.ShapeTuple`` (``ffi.Shape`` in TVM 0.27) as a tuple of ints.

    Every ShapeTuple a call returns arrives as a ``Shape``; being a tuple, it has ``len``,
    iteration, indexing and compares equal to a plain tuple of the same ints. To pass a shape,
    wrap it: ``f(Shape([2, 3]))``. A plain tuple or list keeps its meaning, a runtime ``Array``.
    Dimensions are ints in the int64 range (TypeError, OverflowError otherwise); slicing a
    Shape gives a plain tuple.
    """

    __slots__ = ()

    def __new__(cls, dims=()):
        items = []
        for d in dims:
            if isinstance(d, bool):
                raise TypeError("polyffi: Shape dimensions are ints, got bool")
            d = operator.index(d)  # TypeError for anything that is not an integer
            if not _INT64_MIN <= d <= _INT64_MAX:
                raise OverflowError(f"polyffi: Shape dimension {d} does not fit in int64")
            items.append(d)
        return super().__new__(cls, items)

    def __repr__(self) -> str:
        return f"Shape({list(self)!r})"


_core._set_shape_class(Shape)


class Object(_core.ObjectBase):
    """A reference to a runtime object (released when garbage collected or on ``release()``)."""

    __slots__ = ()


_funcs: Dict[str, Any] = {}


def _global(name: str):
    f = _funcs.get(name)
    if f is None:
        f = _core.get_global(name)
        if f is None:
            raise RuntimeError(f"polyffi: core global function {name} is missing")
        _funcs[name] = f
    return f


@register_object("Array")
class Array(Object, Sequence):
    """An immutable runtime array; behaves as a Sequence. ``Array([1, 2])`` builds one."""

    __slots__ = ()

    def __new__(cls, items=()):
        return _core.make_array(list(items))

    def __len__(self) -> int:
        return _global("runtime.ArraySize")(self)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self)
        i = index.__index__()
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"Array index {index} out of range for size {n}")
        return _global("runtime.ArrayGetItem")(self, i)

    def __iter__(self) -> Iterator[Any]:
        get = _global("runtime.ArrayGetItem")
        for i in range(len(self)):
            yield get(self, i)

    def __repr__(self) -> str:
        return f"Array({list(self)!r})"


@register_object("Map")
class Map(Object, Mapping):
    """An immutable runtime map; behaves as a Mapping. ``Map({"a": 1})`` builds one."""

    __slots__ = ()

    def __new__(cls, items=None):
        return _core.make_map(dict(items or {}))

    def __len__(self) -> int:
        return _global("runtime.MapSize")(self)

    def __getitem__(self, key):
        return _global("runtime.MapGetItem")(self, key)

    def __contains__(self, key) -> bool:
        try:
            return _global("runtime.MapCount")(self, key) != 0
        except TypeError:
            return False

    def _flat_items(self):
        return list(_global("runtime.MapItems")(self))

    def __iter__(self) -> Iterator[Any]:
        flat = self._flat_items()
        return iter(flat[0::2])

    def items(self):
        flat = self._flat_items()
        return list(zip(flat[0::2], flat[1::2]))

    def __repr__(self) -> str:
        return f"Map({dict(self.items())!r})"

    # Mapping defines __eq__ by content; keep the Mapping semantics for dict comparisons
    # and fall back to identity for other objects.
    def __eq__(self, other):
        if isinstance(other, Mapping) and not isinstance(other, _core.ObjectBase):
            return dict(self.items()) == dict(other.items())
        return _core.ObjectBase.__eq__(self, other)

    def __hash__(self):
        return _core.ObjectBase.__hash__(self)
