"""Python callables -> runtime functions.

The trampoline and finalizer live in the extension (src/callback.cc): they take the GIL on any
thread, turn exceptions into "Kind: message" errors (re-raised as the same object when they come
back out on this thread) and never touch an interpreter that is shutting down.
"""

from __future__ import annotations

from typing import Callable

from . import _core
from .function import PackedFunc


def convert(f: Callable) -> PackedFunc:
    """Wrap a Python callable as a PackedFunc (a PackedFunc is returned unchanged)."""
    return _core.convert(f)


__all__ = ["convert"]
