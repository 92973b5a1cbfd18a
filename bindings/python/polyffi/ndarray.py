"""NDArray: runtime arrays, exchanged with numpy, torch and any DLPack producer without copying.

``nd.from_dlpack(x)`` and passing a numpy array / torch tensor as an argument are zero-copy;
``np.from_dlpack(nd)`` / ``torch.from_dlpack(nd)`` are zero-copy out. ``nd.array(obj)`` and
``NDArray.numpy()`` copy, like classic TVM.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from . import _core
from .value import DataType, Device, cpu


def _numpy():
    try:
        import numpy
    except ImportError as e:  # pragma: no cover - numpy is optional
        raise ImportError("polyffi: this operation needs numpy") from e
    return numpy


def _numpy_dtype(dtype: str):
    np = _numpy()
    if dtype == "bool":
        return np.bool_
    try:
        return np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"polyffi: dtype {dtype} has no numpy equivalent") from e


class NDArray(_core.NDArrayBase):
    """A runtime n-dimensional array. ``.shape``, ``.dtype``, ``.device``, ``.numpy()``."""

    __slots__ = ()

    def numpy(self):
        """A numpy copy of the array."""
        np = _numpy()
        out = np.empty(self.shape, dtype=_numpy_dtype(self.dtype))
        self._copy_to_buffer(out)
        return out

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    def copyfrom(self, source: Any) -> "NDArray":
        """Copy ``source`` (an NDArray, numpy array or nested list) into this array."""
        if isinstance(source, _core.NDArrayBase):
            self._copy_from_array(source)
            return self
        np = _numpy()
        arr = np.asarray(source, dtype=_numpy_dtype(self.dtype), order="C")
        if arr.shape != self.shape:
            raise ValueError(
                f"copyfrom: shape mismatch, array is {self.shape} but source is {arr.shape}")
        self._copy_from_buffer(arr)
        return self

    def copyto(self, target: Union["NDArray", Device]) -> "NDArray":
        """Copy into ``target`` (an NDArray) or into a new array on a device."""
        if isinstance(target, Device):
            out = empty(self.shape, self.dtype, target)
            out._copy_from_array(self)
            return out
        target._copy_from_array(self)
        return target

    def __repr__(self) -> str:
        if self.handle == 0:
            return "<NDArray (released)>"
        return f"<NDArray shape={self.shape} dtype={self.dtype} device={self.device}>"


def empty(shape: Union[int, Sequence[int]], dtype: Union[str, DataType] = "float32",
          device: Optional[Device] = None) -> NDArray:
    """A new uninitialized array."""
    if isinstance(shape, int):
        shape = (shape,)
    return _core.nd_empty(tuple(shape), DataType(dtype), device if device is not None else cpu())


def array(obj: Any, device: Optional[Device] = None) -> NDArray:
    """A new array holding a copy of ``obj`` (NDArray, numpy array, DLPack producer, list)."""
    if isinstance(obj, _core.NDArrayBase):
        out = empty(obj.shape, obj.dtype, device)
        out._copy_from_array(obj)
        return out
    np = _numpy()
    if hasattr(obj, "__dlpack__") and not isinstance(obj, np.ndarray):
        obj = np.from_dlpack(obj)
    arr = np.asarray(obj, order="C")
    dtype = "bool" if arr.dtype == np.bool_ else str(arr.dtype)
    out = empty(arr.shape, dtype, device)
    out._copy_from_buffer(arr)
    return out


def from_dlpack(x: Any) -> NDArray:
    """Wrap a DLPack producer (numpy, torch, ...) or a DLPack capsule without copying."""
    return _core.nd_from_dlpack(x)


__all__ = ["NDArray", "array", "empty", "from_dlpack"]
