"""modelwire's own HTTP/1.1 transport for the async path: asyncio's protocol, the
response parsed by httptools (``_wire``, the one module that imports it), the
connections pooled per origin (``_pool``).

httptools (https://github.com/MagicStack/httptools) binds llhttp, Node.js's HTTP
parser, in C; uvicorn parses every request the gateway serves with it. The parsing
— the status line, headers, chunked and ``Content-Length`` framing (RFC 9112 §6-7),
interim 1xx responses, keep-alive (§9.3) — is its; what is written here is what is
left: one request head, a pool of keep-alive connections, handing the body over as
it arrives. That is the point of it: aiohttp's request and response objects cost
the gateway about 0.7 ms of its added time to the first byte over loopback, against
a client that does only this (``bench/bench_gateway.py``; bench/RESULTS.md).

A :class:`~modelwire._http.AsyncDriver` runs a :class:`~modelwire._call.Call` over
:class:`HttptoolsTransport` as over the httpx and aiohttp ones, the Call deciding
everything: per-phase timeouts (connect, idle — the wait for the head and each body
read, one timer per response: ``_deadline.ReadDeadline``), the total deadline,
redirects not followed, the status → error step, draining after the terminal event,
closing in every path. The same TLS context (:func:`modelwire._http.ssl_context`),
``gzip`` and ``deflate`` bodies undone (the only codings it asks for), no cookies.

What it does not do: proxies. A proxy the environment names for the URL
(``HTTP(S)_PROXY``, ``ALL_PROXY``, not excluded by ``NO_PROXY``) fails the call at
once, naming the transports that go through one — never a silent direct
connection. HTTP/2 is not spoken (neither do the others by default).

Without a pool of the caller's, the calls on one event loop share one
(:func:`pooled`), closed with the loop as aiohttp's session is.

Imported on first use (``transport="httptools"``, or the gateway's backend client),
never by ``import modelwire``: httptools comes with the ``gateway`` extra.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..._call import Drain, Failure, Head, Read, ReadError, Send
from ..._providers._status import origin
from ..._redact import error_text, redact, redact_url
from ...errors import ConnectError, RequestTimeoutError, StreamError, StreamInterruptedError
from .._deadline import DEADLINE_BEFORE, DEADLINE_READING, ReadDeadline
from .._proxy import env_proxy_url
from ._pool import Pool, pooled
from ._wire import Connection, Target, request_head, target

if TYPE_CHECKING:
    import ssl

__all__ = ["HttptoolsTransport", "Pool", "is_pool", "pooled"]


def is_pool(client: object) -> bool:
    """Whether ``client`` is a :class:`Pool` (a caller's ``http_client``)."""
    return isinstance(client, Pool)


# --------------------------------------------------------------------------- transport


class HttptoolsTransport:
    """The waiting half of :class:`modelwire._http.AsyncDriver` on modelwire's own
    HTTP/1.1 client: one response at a time, on the caller's :class:`Pool` or on the
    loop's pooled one."""

    __slots__ = ("_conn", "_deadline", "_idle", "_pool", "_secrets", "_ssl")

    def __init__(self, pool: Pool | None, ssl: Callable[[], ssl.SSLContext]) -> None:
        self._pool = pool
        self._ssl = ssl
        self._conn: Connection | None = None
        self._secrets: tuple[str, ...] = ()
        self._deadline = ReadDeadline()  # the head's and the body's waits
        self._idle: float | None = None

    async def send(self, i: Send) -> Head | Failure:
        self._deadline.cancel()
        if self._conn is not None:
            # Another attempt (a retry, the next model of a fallback): done with that one.
            self._release()
        r = i.request
        self._secrets = r.secrets
        try:
            t = target(r.url)
            head = request_head(t, r.headers, len(r.body), r.method)
        except (ValueError, UnicodeEncodeError) as exc:
            text = redact_url(redact(str(exc), r.secrets))
            return Failure(ConnectError(f"invalid request ({text})"), final=True)
        if env_proxy_url(t.key[0], t.host) is not None:
            return Failure(ConnectError(
                "a proxy is set for this URL in the environment (HTTP_PROXY, HTTPS_PROXY "
                "or ALL_PROXY) and transport='httptools' does not go through proxies: "
                "use transport='aiohttp' or 'httpx', or exclude the host with NO_PROXY"
            ), final=True)  # fmt: skip
        pool = self._pool
        if pool is None:
            pool = self._pool = await pooled()
        failure = await self._connect(i, pool, t)
        if failure is not None:
            return failure
        conn = self._conn
        assert conn is not None and conn.transport is not None
        conn.begin()
        conn.transport.write(head + r.body)
        self._idle = i.idle
        # The wait for the head is the response's first wait: the ReadDeadline's
        # timer (idle, total) serves it and every body read after it.
        while not conn.headed:
            failure = self._failed(conn, started=False, url=r.url)
            if failure is not None:
                return failure
            got = await self._wait(conn, i.remaining, before=True)
            if got is not None:
                return got
        return Head(conn.status, conn.headers)

    async def _connect(self, i: Send, pool: Pool, t: Target) -> Failure | None:
        conn = pool.reuse(t)
        if conn is not None:  # no wait, no timer
            self._conn = conn
            return None
        where = origin(f"{t.key[0]}://{t.host_header}")
        bound = [x for x in (i.connect, i.remaining) if x is not None]
        try:
            if bound:
                async with asyncio.timeout(min(bound)):
                    conn = await pool.acquire(t, self._ssl)
            else:
                conn = await pool.acquire(t, self._ssl)
        except TimeoutError:
            if i.remaining is not None and (i.connect is None or i.remaining <= i.connect):
                return Failure(RequestTimeoutError(DEADLINE_BEFORE), deadline=True)
            return Failure(
                RequestTimeoutError(f"connect timeout expired connecting to {where}"),
                timeout=True,
            )
        except (OSError, RuntimeError) as exc:
            text = error_text(exc, self._secrets)
            return Failure(ConnectError(f"could not connect to {where} ({text})"))
        self._conn = conn
        return None

    def _failed(self, conn: Connection, *, started: bool, url: str = "") -> Failure | None:
        exc = conn.error
        if exc is None and not conn.lost:
            return None
        cause = exc or ConnectionResetError("closed")
        if not started:
            # Nothing answered yet, whatever broke it (bytes that are no HTTP too): a
            # failed connection, retried as one, as on the other transports.
            own = isinstance(cause, StreamError)  # its words, without a type name
            text = redact(str(cause), self._secrets) if own else error_text(cause, self._secrets)
            to = f" to {origin(url)}" if url else ""
            return Failure(ConnectError(f"the connection{to} failed before a response ({text})"))
        if isinstance(cause, StreamError):
            return Failure(cause)
        text = error_text(cause, self._secrets)
        return Failure(
            StreamInterruptedError(
                f"the connection closed before the response body was complete ({text})"
            )
        )

    async def _wait(
        self, conn: Connection, remaining: float | None, *, before: bool
    ) -> Failure | None:
        deadline = self._deadline
        if not deadline.enter(remaining, self._idle):
            return Failure(RequestTimeoutError(DEADLINE_BEFORE if before else DEADLINE_READING),
                           deadline=True)  # fmt: skip
        try:
            await conn.wait()
        except asyncio.CancelledError:
            if deadline.fired():
                if deadline.expired:
                    return Failure(
                        RequestTimeoutError(DEADLINE_BEFORE if before else DEADLINE_READING),
                        deadline=True,
                    )  # fmt: skip
                return Failure(
                    RequestTimeoutError(f"idle timeout expired (no bytes for {self._idle:g} s)"),
                    timeout=True,
                )  # fmt: skip
            raise
        finally:
            deadline.exit()
        return None

    async def read(self, i: Read) -> bytes | Failure | None:
        conn = self._conn
        assert conn is not None
        while True:
            if conn.chunks:
                return conn.take()
            if conn.complete:
                return None
            failure = self._failed(conn, started=True)
            if failure is not None:
                return failure
            failed = await self._wait(conn, i.remaining, before=False)
            if failed is not None:
                return failed

    async def read_error(self, i: ReadError) -> bytes:
        conn = self._conn
        assert conn is not None
        buf = bytearray()
        try:
            async with asyncio.timeout(i.remaining):
                while len(buf) < i.limit:
                    if conn.chunks:
                        buf += conn.take()
                    elif conn.complete or conn.error is not None or conn.lost:
                        break
                    else:
                        await conn.wait()
        except TimeoutError:
            buf.clear()
        finally:
            self._release()
        return bytes(buf[: i.limit])

    async def drain(self, i: Drain) -> None:
        conn = self._conn
        if conn is None:
            return
        if conn.complete:
            conn.take()
            return  # read whole already (the usual case): no timer to set
        n = 0
        try:
            async with asyncio.timeout(i.seconds):
                while n <= i.max_bytes:
                    if conn.chunks:
                        n += len(conn.take())
                    elif conn.complete or conn.error is not None or conn.lost:
                        return
                    else:
                        await conn.wait()
        except TimeoutError:
            pass  # the connection is closed instead of reused

    async def close(self) -> None:
        self._deadline.cancel()
        self._release()

    def _release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and self._pool is not None:
            self._pool.release(conn)
