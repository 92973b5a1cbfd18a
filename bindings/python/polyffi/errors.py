"""Error kinds ("Kind: message") <-> Python exceptions.

A kind that names a Python builtin exception raises a class deriving from both that builtin and
:class:`FFIError`, so ``except ValueError`` and ``except polyffi.FFIError`` both catch it. Other
kinds raise the class registered with :func:`register_error`, or :class:`FFIError` itself.
"""

from __future__ import annotations

import builtins
import re
import threading
from typing import Callable, Dict, Optional, Type, TypeVar, Union, overload

_KIND_RE = re.compile(r"^([A-Za-z0-9_.]+): ?(.*)$", re.S)


class FFIError(RuntimeError):
    """Base class of every error coming out of polyffi; ``.kind`` holds the kind text."""

    kind: str = "TVMError"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "kind" not in cls.__dict__:
            cls.kind = cls.__name__

    def __str__(self) -> str:
        # KeyError's builtin __str__ quotes its argument; keep the runtime's message as is.
        if len(self.args) == 1 and isinstance(self.args[0], str):
            return self.args[0]
        return super().__str__()


class TVMError(FFIError):
    """The default kind of errors that carry none."""

    kind = "TVMError"


class InternalError(FFIError):
    """A bug inside the runtime."""

    kind = "InternalError"


class QueueFullError(FFIError):
    """An async call was refused: the core's queue holds its limit of calls waiting to start."""

    kind = "QueueFullError"


_lock = threading.Lock()
_registry: Dict[str, Type[BaseException]] = {"TVMError": TVMError, "InternalError": InternalError,
                                             "QueueFullError": QueueFullError}

E = TypeVar("E", bound=Type[BaseException])


def _builtin_class(kind: str) -> Optional[Type[BaseException]]:
    base = getattr(builtins, kind, None)
    if not (isinstance(base, type) and issubclass(base, Exception)):
        return None
    if base is RuntimeError:
        bases: tuple = (FFIError,)
    else:
        bases = (base, FFIError)
    try:
        cls = type(kind, bases, {"kind": kind, "__module__": "polyffi.errors",
                                 "__str__": FFIError.__str__})
    except TypeError:  # incompatible instance layout (e.g. OSError); keep the FFIError side
        cls = type(kind, (FFIError,), {"kind": kind, "__module__": "polyffi.errors"})
    return cls


def error_class(kind: str) -> Type[BaseException]:
    """The exception class raised for an error kind."""
    cls = _registry.get(kind)
    if cls is not None:
        return cls
    with _lock:
        cls = _registry.get(kind)
        if cls is None:
            cls = _builtin_class(kind) or FFIError
            if cls is not FFIError:
                _registry[kind] = cls
    return cls


@overload
def register_error(kind: str, cls: E) -> E: ...
@overload
def register_error(kind: Union[str, E, None] = None, cls: None = None) -> Callable[[E], E]: ...


def register_error(kind=None, cls=None):
    """Map an error kind to an exception class.

    ``register_error("MyKind", MyError)``, ``@register_error("MyKind")`` or ``@register_error``
    (the kind is then the class name). Callbacks raising an instance of a registered FFIError
    subclass report that kind.
    """
    if isinstance(kind, type):
        return register_error(kind.__name__, kind)

    def do_register(c):
        if not (isinstance(c, type) and issubclass(c, BaseException)):
            raise TypeError(f"register_error: {c!r} is not an exception class")
        name = kind if kind is not None else c.__name__
        if not _KIND_RE.match(name + ": "):
            raise ValueError(f"register_error: invalid kind {name!r}")
        if issubclass(c, FFIError) and "kind" not in c.__dict__:
            c.kind = name
        with _lock:
            _registry[name] = c
        return c

    if cls is not None:
        return do_register(cls)
    return do_register


def parse_error_text(text: str) -> tuple[str, str]:
    """Split "Kind: message" into (kind, message); kind defaults to TVMError."""
    m = _KIND_RE.match(text)
    if m is None:
        return "TVMError", text
    return m.group(1), m.group(2)


def _error_from_text(text: str) -> BaseException:
    """Called by the extension to build the exception for a runtime error text."""
    kind, message = parse_error_text(text)
    cls = error_class(kind)
    try:
        exc = cls(message)
    except Exception:  # a registered class with an unusual constructor
        exc = FFIError(message)
    try:
        exc.kind = kind
    except AttributeError:
        pass
    return exc
