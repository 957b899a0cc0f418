"""How a driver performs a :class:`~modelwire._call.Call`'s intents: one table for
both drivers.

A transport performs the I/O intents of one response at a time — :class:`AsyncTransport`
for the async driver, :class:`SyncTransport` for the sync one, the same five methods,
awaited or not. The two intents that are no I/O of a transport (the request-time
credential step, the wait between attempts) are performed beside it, the same way in
both. :data:`STEPS` says which method performs which intent; :func:`async_steps` and
:func:`sync_steps` bind it for one call, so a driver's loop is one lookup per intent,
and ``Emit`` and ``Close`` — the two intents that end a driver's turn — are all it
handles itself. The sync and async twins differ only in waiting.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from .._call import Authorize, Drain, Failure, Head, Intent, Read, ReadError, Send, Sleep
from ..errors import StreamError
from ._auth import authorize_async, authorize_sync

__all__ = ["STEPS", "AsyncTransport", "SyncTransport", "async_steps", "sync_steps"]


class AsyncTransport(Protocol):
    """The waiting half of the async driver: one response at a time. Each method
    performs one intent of the :class:`~modelwire._call.Call` and returns its result."""

    async def send(self, i: Send) -> Head | Failure: ...
    async def read_error(self, i: ReadError) -> bytes: ...
    async def read(self, i: Read) -> bytes | Failure | None: ...
    async def drain(self, i: Drain) -> None: ...
    async def close(self) -> None: ...


class SyncTransport(Protocol):
    """The waiting half of the sync driver: :class:`AsyncTransport`, blocking, and
    :meth:`abort`, which unblocks a read in progress from any thread."""

    def send(self, i: Send) -> Head | Failure: ...
    def read_error(self, i: ReadError) -> bytes: ...
    def read(self, i: Read) -> bytes | Failure | None: ...
    def drain(self, i: Drain) -> None: ...
    def close(self) -> None: ...
    def abort(self) -> None: ...


#: Which performer method answers which intent (``Emit`` and ``Close`` end the
#: driver's turn and are its own).
STEPS: tuple[tuple[type[Intent], str], ...] = (
    (Read, "read"),
    (Send, "send"),
    (ReadError, "read_error"),
    (Drain, "drain"),
    (Authorize, "authorize"),
    (Sleep, "sleep"),
)


class _AsyncWaits:
    """The async performer of the intents that are no transport's I/O."""

    __slots__ = ()

    @staticmethod
    async def authorize(i: Authorize) -> object:
        try:
            return await authorize_async(i.request)
        except StreamError as exc:
            return Failure(exc)

    @staticmethod
    async def sleep(i: Sleep) -> None:
        await asyncio.sleep(i.seconds)


class _SyncWaits:
    """The blocking twin of :class:`_AsyncWaits`."""

    __slots__ = ()

    @staticmethod
    def authorize(i: Authorize) -> object:
        try:
            return authorize_sync(i.request)
        except StreamError as exc:
            return Failure(exc)

    @staticmethod
    def sleep(i: Sleep) -> None:
        time.sleep(i.seconds)


def _bind(transport: object, waits: object) -> dict[type[Intent], Callable[[Any], Any]]:
    return {
        kind: getattr(waits if name in ("authorize", "sleep") else transport, name)
        for kind, name in STEPS
    }


def async_steps(t: AsyncTransport) -> dict[type[Intent], Callable[[Any], Awaitable[object]]]:
    """:data:`STEPS` bound to ``t``: intent type → the coroutine function performing it."""
    return _bind(t, _AsyncWaits)


def sync_steps(t: SyncTransport) -> dict[type[Intent], Callable[[Any], object]]:
    """:data:`STEPS` bound to ``t``: intent type → the function performing it."""
    return _bind(t, _SyncWaits)
