"""``polyffi.nd``: array constructors (see :mod:`polyffi.ndarray`)."""

from .ndarray import NDArray, array, empty, from_dlpack

__all__ = ["NDArray", "array", "empty", "from_dlpack"]
