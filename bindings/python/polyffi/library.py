"""Finds and loads libpolyffi (through the compiled extension) and checks its version.

The extension ``polyffi._core`` links the copy of libpolyffi installed next to it (RPATH
``$ORIGIN``); its module init compares the runtime's major version with the one it was compiled
against and raises ImportError naming both.
"""

from __future__ import annotations

from . import _core

__version__: str = _core.__version__


def runtime_version() -> tuple[int, int, int]:
    """(major, minor, patch) reported by the loaded libpolyffi (TVMAPIGetVersion)."""
    return _core.api_version()


def check_version() -> None:
    """Raise ImportError unless the loaded runtime's major version is the compiled-in one."""
    major, minor, patch = runtime_version()
    if major != _core.VERSION_MAJOR:
        raise ImportError(
            f"polyffi: the loaded libpolyffi is {major}.{minor}.{patch} but the extension was "
            f"built for {__version__} (major {_core.VERSION_MAJOR})"
        )


check_version()
