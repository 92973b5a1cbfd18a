"""The PackedFunc wrapper. Calls go straight through the extension's vectorcall path.

``await f.call_async(*args)`` runs the call on the core's worker pool (one per process, shared
with every binding): the event loop stays free, the GIL is not held while the call runs, and the
arguments stay referenced until it ends. The result comes back on the loop through
``loop.call_soon_threadsafe``. Cancelling the awaiting task cancels a call that has not started
(it never runs); a call that has started is asked to stop (the graph executor and the relax VM
stop at their next check with a CancelledError; other functions run to the end) and its result is
discarded: the CancelledError's message says which of the two happened.
"""

from __future__ import annotations

import asyncio
from typing import Any, Tuple

from . import _core

#: A runtime function. ``f(*args)``; positional arguments only; ``f.release()`` frees it now.
PackedFunc = _core.PackedFunc

_RETURNED = 0
_CANCELLED_BEFORE_START = 0
_CANCEL_REQUESTED = 1


def _resolve(fut: asyncio.Future, status: int, value: Any) -> None:
    if fut.done():  # cancelled meanwhile
        return
    if status == _RETURNED:
        fut.set_result(value)
    else:
        fut.set_exception(value)


async def call_async(f: PackedFunc, *args: Any) -> Any:
    """``await call_async(f, *args)``: f(*args) on the core's worker pool (``f.call_async``)."""
    loop = asyncio.get_running_loop()
    fut = loop.create_future()

    def done(status: int, value: Any) -> None:  # on a pool worker, GIL held
        try:
            loop.call_soon_threadsafe(_resolve, fut, status, value)
        except RuntimeError:  # the loop was closed before the call ended: nobody waits
            pass

    call = _core.async_submit(f, args, done)
    try:
        return await fut
    except asyncio.CancelledError:
        if not fut.cancelled():
            raise
        state = _core.async_cancel(call)
        if state == _CANCELLED_BEFORE_START:
            raise asyncio.CancelledError(
                "polyffi: the call was cancelled before it started") from None
        if state == _CANCEL_REQUESTED:
            raise asyncio.CancelledError(
                "polyffi: the call had already started; it was asked to stop and its result "
                "is discarded") from None
        raise


def configure_async(num_workers: int = 0, queue_limit: int = 0) -> Tuple[int, int, int]:
    """Size the core's async pool (0 leaves a value as it is): workers apply before the first
    async call only. Returns (num_workers, queue_limit, calls queued now). A submit beyond the
    queue limit raises :class:`polyffi.QueueFullError`."""
    return _core.async_configure(num_workers, queue_limit)


__all__ = ["PackedFunc", "call_async", "configure_async"]

