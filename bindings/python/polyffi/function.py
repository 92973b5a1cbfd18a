"""The PackedFunc wrapper. Calls go straight through the extension's vectorcall path."""

from __future__ import annotations

from . import _core

#: A runtime function. ``f(*args)``; positional arguments only; ``f.release()`` frees it now.
PackedFunc = _core.PackedFunc

__all__ = ["PackedFunc"]
