"""HTTP transport: the one module that imports httpx (DESIGN §1, §5).

The two drivers of a :class:`~modelwire._call.Call`: :class:`AsyncDriver` (asyncio,
pulled by the stream's consumer in its own task, over a transport: ``aiohttp`` when
installed, else ``httpx.AsyncClient`` (``_httpx_async``)) and :class:`SyncDriver`
(blocking ``httpx.Client``). The aiohttp transport lives in
``modelwire._http._aiohttp`` (the one module that imports aiohttp, on first use);
:func:`async_transport` picks one by the ``transport`` option and ``http_client``. The Call
takes every decision — authorize, send, retry, the total deadline, the status →
error step, drain after the terminal event, close in every path, redaction; a
driver only performs its intents and waits. Here httpx exceptions are mapped to
:mod:`modelwire.errors` (in exactly this one place), per-phase timeouts are given to
httpx, a wait is bounded by the deadline (a task timeout — over the body's reads one
timer per response, ``_deadline`` — or in the sync driver a timer that shuts the
socket down), and responses and owned clients are closed.
:func:`check_client` is how the client checks a caller's ``http_client`` without
importing httpx itself.

The pure parts live beside it and are re-exported here: the status → typed error
mapping (:func:`status_error`, :func:`origin`) in ``modelwire._providers._status`` and
the request-time credential step (:func:`authorize_async`, :func:`authorize_sync`)
in ``modelwire._http._auth``; neither imports httpx.

The provider request is the only traffic that goes through here. Two other
places do I/O, both for credentials and both optional extras: ``modelwire.cloud.aws``
(botocore reads the AWS credential chain, which may call the instance metadata
service) and ``modelwire.cloud.google`` (google-auth refreshes ADC tokens over
its own ``requests`` transport). ``modelwire.testing`` serves loopback HTTP with
the standard library (``asyncio`` streams), not httpx.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx

from .._call import Close, Drain, Emit, Intent, Send
from .._providers._status import MAX_RETRY_AFTER, status_error
from .._providers._status import origin as origin  # re-exported (tests, callers)
from .._redact import redact
from ._auth import authorize_async, authorize_sync
from ._base import (
    aiohttp_installed,
    check_client,
    client_kind,
    httptools_installed,
    ssl_context,
)
from ._httpx_async import HttpxAsyncTransport
from ._httpx_sync import HttpxSyncTransport
from ._steps import AsyncTransport, SyncTransport, async_steps, sync_steps

if TYPE_CHECKING:
    from .._call import Call
    from ..events import Event

__all__ = [
    "MAX_RETRY_AFTER",
    "AsyncDriver",
    "AsyncTransport",
    "SyncDriver",
    "SyncTransport",
    "aiohttp_installed",
    "async_transport",
    "authorize_async",
    "authorize_sync",
    "check_client",
    "client_kind",
    "close_async_client",
    "httptools_installed",
    "pooled_async_client",
    "redact",
    "ssl_context",
    "status_error",
]


# --------------------------------------------------------------------------- async


def async_transport(client: object, transport: str = "auto") -> AsyncTransport:
    """The transport for one async call: the caller's client's own kind, else
    ``transport`` (``"auto"``: aiohttp when installed, else httpx; ``"httptools"``:
    ``modelwire._http._httptools``); checked by :func:`check_client` beforehand."""
    kind = client_kind(client) if client is not None else ""
    if kind == "httpx":
        return HttpxAsyncTransport(client, ssl_context)  # type: ignore[arg-type]
    if kind == "httptools" or (client is None and transport == "httptools"):
        # Imported by its full name: ``from .. import`` a package runs importlib's
        # Python-level ``_handle_fromlist`` on every call (once per request).
        import modelwire._http._httptools as httptools_transport

        return httptools_transport.HttptoolsTransport(client, ssl_context)  # type: ignore[arg-type]
    if client is None and (transport == "httpx" or not aiohttp_installed()):
        return HttpxAsyncTransport(None, ssl_context)
    from ._aiohttp import AiohttpTransport

    return AiohttpTransport(client, ssl_context)  # type: ignore[arg-type]


class AsyncDriver:
    """Run a :class:`~modelwire._call.Call` on the event loop, pulled by its consumer:
    :meth:`next` performs the call's intents up to its next batch of events, in the
    consumer's own task — the async twin of :class:`SyncDriver.events`, with no task
    or queue of its own between the socket and the consumer.

    An abort ends the call from where it is: :meth:`aclose` when the consumer is
    between batches; :meth:`interrupt` when it waits inside :meth:`next` (the wait is
    cancelled, as ``asyncio.timeout`` cancels it, and :meth:`next` returns the aborted
    terminal); a cancelled consumer task aborts too, the terminal kept in
    :attr:`final` for whoever reads the stream next. After the terminal event,
    :meth:`finish` drains the rest of the body (bounded) and closes.
    """

    __slots__ = ("_call", "_intent", "_interrupted", "_pending", "_steps", "_t", "_waiting",
                 "closed", "final")  # fmt: skip

    def __init__(self, call: Call, client: object = None, transport: str = "auto") -> None:
        self._call = call
        self._t = async_transport(client, transport)
        self._steps = async_steps(self._t)
        self._intent: Intent | None = None  # the last one performed (None: not started)
        self._pending: Intent | None = None  # the next one, when next() stopped before it
        self._waiting: asyncio.Task[Any] | None = None  # the task waiting in next()
        self._interrupted = False
        #: Whether the call is over (Close performed).
        self.closed = False
        #: The aborted terminal a cancellation built, for the stream to deliver.
        self.final: list[Event] = []

    @property
    def answered(self) -> bool:
        """Whether a response is being read (``Call.answered``)."""
        return self._call.answered

    async def next(self, until_answered: bool = False) -> list[Event] | None:
        """The next batch of events; ``None`` once the call is over. ``until_answered``:
        ``[]`` as soon as a response head is accepted (``Call.answered``), before its
        body is read (the next call reads it)."""
        call = self._call
        intent = self._intent
        if self.closed:
            return None
        if self._pending is not None:
            intent, self._pending = self._pending, None
        else:
            intent = call.first() if intent is None else call.send(None)  # after an Emit
        self._intent = intent
        self._waiting = asyncio.current_task()
        steps = self._steps
        try:
            while True:
                kind = type(intent)
                if kind is Emit:
                    self._intent = intent
                    return intent.events  # type: ignore[union-attr]
                if kind is Close:
                    await self._close()
                    return None
                intent = call.send(await steps[kind](intent))
                if kind is Send and until_answered and call.answered:
                    self._intent = self._pending = intent
                    return []
        except asyncio.CancelledError:
            task, self._waiting = self._waiting, None
            ours = self._interrupted
            self._interrupted = False
            events = await self._abort()
            if ours and task is not None and task.uncancel() == 0:
                return events  # only the interrupt: the consumer goes on
            self.final = events  # a cancelled consumer: its stream delivers them
            raise
        except Exception:
            await self._close()
            raise
        finally:
            self._waiting = None

    def interrupt(self) -> bool:
        """Cancel the wait of a consumer inside :meth:`next` (which then returns the
        aborted terminal); ``False`` when none waits. Call it on the loop's thread."""
        task = self._waiting
        if task is None or task.done():
            return False
        self._interrupted = True
        task.cancel()
        return True

    async def aclose(self) -> list[Event]:
        """Abort the call between batches and close, without draining: the aborted
        terminal, ``[]`` once the call had ended (its connection is not reused)."""
        if self.closed:
            return []
        return await self._abort()

    async def finish(self) -> None:
        """The rest after the terminal event: drain (bounded) and close."""
        intent = self._intent
        if self.closed or intent is None:
            return
        call, t = self._call, self._t
        try:
            intent = call.send(None) if isinstance(intent, Emit) else call.abort()
            while not isinstance(intent, Close):
                if isinstance(intent, Drain):
                    await t.drain(intent)
                    intent = call.send(None)
                elif isinstance(intent, Emit):
                    intent = call.send(None)
                else:
                    intent = call.abort()
        finally:
            await self._close()

    def abort_events(self) -> list[Event]:
        """The aborted terminal built from what was received (the call's)."""
        return self._call.abort_events()

    def fail_events(self, exc: BaseException) -> list[Event]:
        """The terminal for an unexpected failure, redacted (the call's)."""
        return self._call.fail_events(exc)

    async def _abort(self) -> list[Event]:
        call = self._call
        events: list[Event] = []
        try:
            if self._intent is None:
                return events  # never started: nothing sent, nothing to close
            intent = call.abort()
            if isinstance(intent, Emit):
                events = intent.events
                intent = call.send(None)  # ``intent`` is Close
        finally:
            await self._close()
        return events

    async def _close(self) -> None:
        self.closed = True
        self._intent = Close()
        await self._t.close()


# --------------------------------------------------------------------------- sync


class SyncDriver:
    """Run a :class:`~modelwire._call.Call` in the calling thread over a blocking
    transport (``httpx.Client``, no event loop): :meth:`events` yields its batches of
    events — the twin of :class:`AsyncDriver`, performing the same intents by the same
    table (:data:`~modelwire._http._steps.STEPS`), blocking instead of awaiting."""

    def __init__(self, call: Call, client: httpx.Client | None) -> None:
        self._call = call
        self._t = HttpxSyncTransport(client, ssl_context)
        self._steps = sync_steps(self._t)

    def events(self) -> Iterator[list[Event]]:
        call, steps = self._call, self._steps
        intent = call.first()
        try:
            while True:
                kind = type(intent)
                if kind is Emit:
                    try:
                        yield intent.events  # type: ignore[union-attr]
                    except GeneratorExit:
                        # The consumer closes this generator as soon as it takes the
                        # terminal event (the call goes on: drain, close) or when it
                        # goes away before it (the call is aborted).
                        self._finish(call.send(None) if call.ended else call.abort())
                        raise
                    intent = call.send(None)
                elif kind is Close:
                    self._t.close()
                    return
                else:
                    intent = call.send(steps[kind](intent))
        except BaseException:
            self._t.close()
            raise

    def _finish(self, intent: Intent) -> None:
        # Nobody takes events any more: only drain and close are left to do.
        while not isinstance(intent, Close):
            if isinstance(intent, Drain):
                self._t.drain(intent)
                intent = self._call.send(None)
            elif isinstance(intent, Emit):
                intent = self._call.send(None)
            else:
                intent = self._call.abort()
        self._t.close()

    def abort(self) -> None:
        """Unblock a read in progress, from any thread (``SyncAssistantMessageStream.abort``):
        the transport shuts its socket down (:meth:`HttpxSyncTransport.abort`)."""
        self._t.abort()


def pooled_async_client(max_connections: int, transport: str = "httpx") -> Any:
    """One shared client for many concurrent calls (``mw.batch``, the gateway): a pool
    sized to the concurrency, so workers reuse connections instead of opening one
    each; an ``aiohttp.ClientSession`` for ``transport="auto"`` when aiohttp is
    installed (called on the loop that will use it), the httptools transport's
    ``Pool`` for ``transport="httptools"``, else an ``httpx.AsyncClient``."""
    n = max(1, max_connections)
    if transport == "httptools":
        from ._httptools import Pool

        return Pool(n)
    if transport == "auto" and aiohttp_installed():
        from ._aiohttp import capped_session

        return capped_session(n)
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    return httpx.AsyncClient(limits=limits, verify=ssl_context())


async def close_async_client(client: Any) -> None:
    """Close a client :func:`pooled_async_client` made, of any kind."""
    await (client.aclose() if isinstance(client, httpx.AsyncClient) else client.close())
