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
import socket
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from .._call import Authorize, Close, Drain, Emit, Failure, Head, Intent, Read, ReadError, Send
from .._providers._status import MAX_RETRY_AFTER, status_error
from .._providers._status import origin as origin  # re-exported (tests, callers)
from .._redact import redact
from ..errors import StreamError
from ._auth import authorize_async, authorize_sync
from ._base import (
    aiohttp_installed,
    check_client,
    client_kind,
    httptools_installed,
    phases,
    read_failure,
    send_failure,
    ssl_context,
)
from ._httpx_async import HttpxAsyncTransport
from ._json import post_json_async, post_json_sync

if TYPE_CHECKING:
    from .._call import Call
    from ..events import Event

__all__ = [
    "MAX_RETRY_AFTER",
    "AsyncDriver",
    "AsyncTransport",
    "SyncDriver",
    "aiohttp_installed",
    "async_transport",
    "authorize_async",
    "authorize_sync",
    "check_client",
    "client_kind",
    "close_async_client",
    "httptools_installed",
    "pooled_async_client",
    "post_json_async",
    "post_json_sync",
    "redact",
    "ssl_context",
    "status_error",
]


# --------------------------------------------------------------------------- async


class AsyncTransport(Protocol):
    """The waiting half of :class:`AsyncDriver`: one response at a time. Each method
    performs one intent of the :class:`~modelwire._call.Call` and returns its result."""

    async def send(self, i: Send) -> Head | Failure: ...
    async def read_error(self, i: ReadError) -> bytes: ...
    async def read(self, i: Read) -> bytes | Failure | None: ...
    async def drain(self, i: Drain) -> None: ...
    async def close(self) -> None: ...


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

    __slots__ = ("_call", "_intent", "_interrupted", "_pending", "_t", "_waiting", "closed",
                 "final")  # fmt: skip

    def __init__(self, call: Call, client: object = None, transport: str = "auto") -> None:
        self._call = call
        self._t = async_transport(client, transport)
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
        call, t = self._call, self._t
        intent = self._intent
        if self.closed:
            return None
        if self._pending is not None:
            intent, self._pending = self._pending, None
        else:
            intent = call.first() if intent is None else call.send(None)  # after an Emit
        self._intent = intent
        self._waiting = asyncio.current_task()
        try:
            while True:
                if isinstance(intent, Read):
                    intent = call.send(await t.read(intent))
                elif isinstance(intent, Emit):
                    self._intent = intent
                    return intent.events
                elif isinstance(intent, Close):
                    await self._close()
                    return None
                elif isinstance(intent, Drain):
                    await t.drain(intent)
                    intent = call.send(None)
                elif isinstance(intent, Authorize):
                    try:
                        got: object = await authorize_async(intent.request)
                    except StreamError as exc:
                        got = Failure(exc)
                    intent = call.send(got)
                elif isinstance(intent, Send):
                    intent = call.send(await t.send(intent))
                    if until_answered and call.answered:
                        self._intent = self._pending = intent
                        return []
                elif isinstance(intent, ReadError):
                    intent = call.send(await t.read_error(intent))
                else:
                    await asyncio.sleep(intent.seconds)
                    intent = call.send(None)
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
    """Run a :class:`~modelwire._call.Call` in the calling thread over ``httpx.Client``
    (no event loop): :meth:`events` yields its batches of events.

    A blocked read cannot be cancelled as a task can, so the total deadline, the
    drain bound and :meth:`abort` all end a read by shutting the socket down from a
    timer or another thread (see :meth:`abort`).
    """

    def __init__(self, call: Call, client: httpx.Client | None) -> None:
        self._call = call
        self._client = client
        self._own: httpx.Client | None = None
        self._response: httpx.Response | None = None
        self._it: Iterator[bytes] | None = None  # see HttpxAsyncTransport
        self._secrets: tuple[str, ...] = ()
        self._timer: threading.Timer | None = None
        self._closed = False
        self._lock = threading.Lock()

    def events(self) -> Iterator[list[Event]]:
        call = self._call
        intent = call.first()
        try:
            while True:
                if isinstance(intent, Read):
                    intent = call.send(self._read(intent))
                elif isinstance(intent, Emit):
                    try:
                        yield intent.events
                    except GeneratorExit:
                        # The consumer closes this generator as soon as it takes the
                        # terminal event (the call goes on: drain, close) or when it
                        # goes away before it (the call is aborted).
                        self._finish(call.send(None) if call.ended else call.abort())
                        raise
                    intent = call.send(None)
                elif isinstance(intent, Close):
                    self._close()
                    return
                elif isinstance(intent, Drain):
                    self._drain(intent)
                    intent = call.send(None)
                elif isinstance(intent, Authorize):
                    try:
                        got: object = authorize_sync(intent.request)
                    except StreamError as exc:
                        got = Failure(exc)
                    intent = call.send(got)
                elif isinstance(intent, Send):
                    intent = call.send(self._send(intent))
                elif isinstance(intent, ReadError):
                    intent = call.send(self._read_error(intent))
                else:
                    time.sleep(intent.seconds)
                    intent = call.send(None)
        except BaseException:
            self._close()
            raise

    def _finish(self, intent: Intent) -> None:
        # Nobody takes events any more: only drain and close are left to do.
        while not isinstance(intent, Close):
            if isinstance(intent, Drain):
                self._drain(intent)
                intent = self._call.send(None)
            elif isinstance(intent, Emit):
                intent = self._call.send(None)
            else:
                intent = self._call.abort()
        self._close()

    def _send(self, i: Send) -> Head | Failure:
        # A blocking send cannot be wrapped in a deadline as a task can: each of its
        # phases (connect, write, waiting for the headers) has a timeout cut to what
        # is left of the total (``Send.connect``/``idle``).
        if self._response is not None:
            with self._lock:  # another attempt: the previous response is done with
                response, self._response = self._response, None
            response.close()
        client = self._client
        if client is None:
            client = self._client = self._own = httpx.Client(
                timeout=phases(i), verify=ssl_context()
            )
        r = i.request
        self._secrets = r.secrets
        req = client.build_request(
            "POST", r.url, headers=r.headers, content=r.body, timeout=phases(i)
        )
        try:
            response = client.send(req, stream=True)
        except httpx.HTTPError as exc:
            return send_failure(exc, r)
        with self._lock:
            self._response, self._it = response, None
        return Head(response.status_code, response.headers)

    def _read_error(self, i: ReadError) -> bytes:
        response = self._response
        assert response is not None
        end = None if i.remaining is None else time.monotonic() + i.remaining
        buf = bytearray()
        try:
            for chunk in response.iter_bytes():
                buf += chunk
                if len(buf) >= i.limit or (end is not None and time.monotonic() >= end):
                    break
        except httpx.HTTPError:
            pass
        finally:
            with self._lock:
                self._response = None
            response.close()
        return bytes(buf[: i.limit])

    def _iter(self) -> Iterator[bytes]:
        if self._it is None:
            assert self._response is not None
            self._it = self._response.iter_bytes()
        return self._it

    def _read(self, i: Read) -> bytes | Failure | None:
        it = self._it
        if it is None:
            it = self._iter()
            if i.remaining is not None:
                self._arm(i.remaining)  # the total deadline, once for the whole body
        try:
            return next(it)
        except StopIteration:
            return None
        except httpx.HTTPError as exc:
            return read_failure(exc, self._secrets)

    def _drain(self, i: Drain) -> None:
        # A server that stalls is cut off after ``i.seconds``.
        self._arm(i.seconds)
        n = 0
        try:
            for chunk in self._iter():
                n += len(chunk)
                if n > i.max_bytes:
                    break
        except (httpx.HTTPError, RuntimeError):
            pass
        finally:
            self._disarm()

    def _arm(self, seconds: float) -> None:
        self._disarm()
        timer = threading.Timer(max(seconds, 0.0), self.abort)
        timer.daemon = True
        self._timer = timer
        timer.start()

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def abort(self) -> None:
        """Unblock a read in progress, from any thread (``SyncAssistantMessageStream.abort``).

        Closing an httpx response from another thread neither is thread-safe nor
        wakes a thread blocked in ``recv``; shutting the socket down does both
        jobs: the read returns at once and the reading thread closes the
        response itself. httpx exposes the socket through the response's
        ``network_stream`` extension (httpx docs, "Extensions").
        """
        with self._lock:
            response = self._response
            if self._closed or response is None:
                return  # the connection may already serve another request
            stream = response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is None:
                response.close()
                return
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _close(self) -> None:
        self._disarm()
        with self._lock:
            self._closed = True
            response, self._response = self._response, None
        own, self._own = self._own, None
        try:
            if response is not None:
                response.close()
        finally:
            if own is not None:
                own.close()


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
