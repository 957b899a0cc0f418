"""HTTP transport: the one module that imports httpx (DESIGN §1, §5).

It sends one :class:`~modelwire._options.HTTPRequest`, retries before the first
byte only, maps statuses and httpx exceptions to :mod:`modelwire.errors`
(``raise … from exc`` in exactly this one place), enforces the connect / idle /
total timeouts, redacts secrets from every error text, and closes the response
in every path. Every retry decision — what to retry, how long to wait, what is
left of the total deadline — is taken by :class:`~modelwire._retry.RetryPolicy`,
the same for the async and the sync loop, which differ only in how they wait.
After the stream's terminal event the rest of the body is drained briefly so the
connection can go back to the pool. :func:`check_client` is how the client checks
a caller's ``http_client`` without importing httpx itself.

The pure parts live beside it and are re-exported here: the status → typed error
mapping (:func:`status_error`, :func:`origin`) in ``modelwire._http_status`` and
the request-time credential step (:func:`authorize_async`, :func:`authorize_sync`)
in ``modelwire._http_auth``; neither imports httpx.

The provider request is the only traffic that goes through here. Two other
places do I/O, both for credentials and both optional extras: ``modelwire.cloud.aws``
(botocore reads the AWS credential chain, which may call the instance metadata
service) and ``modelwire.cloud.google`` (google-auth refreshes ADC tokens over
its own ``requests`` transport). ``modelwire.testing`` serves loopback HTTP with
the standard library (``asyncio`` streams), not httpx.
"""

from __future__ import annotations

import asyncio
import functools
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TypeAlias

import httpx

from ._http_auth import authorize_async, authorize_sync
from ._http_status import origin as origin  # re-exported (tests, callers)
from ._http_status import status_error
from ._options import HTTPRequest, Timeout
from ._redact import head, redact
from ._retry import MAX_RETRY_AFTER, RetryPolicy
from .errors import (
    ConfigurationError,
    ConnectError,
    ProviderStreamError,
    RequestTimeoutError,
    StreamError,
    StreamInterruptedError,
)

__all__ = [
    "MAX_RETRY_AFTER",
    "AsyncBody",
    "OnRetry",
    "SyncBody",
    "authorize_async",
    "authorize_sync",
    "check_client",
    "open_async",
    "open_sync",
    "pooled_async_client",
    "redact",
    "status_error",
]

_ERROR_BODY_LIMIT = 64 * 1024
_DRAIN_BYTES = 64 * 1024
_DRAIN_SECONDS = 0.25
#: How much of a non-event-stream 200 body its error quotes.
_EXCERPT_CHARS = 200

#: Called once per retry: (1-based number of the attempt that failed, its HTTP status
#: or ``None`` for a transport error, the error kind, seconds waited before the next).
OnRetry: TypeAlias = Callable[[int, int | None, str, float], None]


def check_client(client: object, *, sync: bool) -> None:
    """Refuse an ``http_client`` of the wrong kind before any request: ``stream()``
    and ``complete()`` need an ``httpx.AsyncClient``, their sync twins an
    ``httpx.Client`` (the one waits on the event loop, the other blocks)."""
    if sync and not isinstance(client, httpx.Client):
        raise ConfigurationError("http_client for stream_sync() must be an httpx.Client")
    if not sync and not isinstance(client, httpx.AsyncClient):
        raise ConfigurationError("http_client for stream()/complete() must be an httpx.AsyncClient")


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Building a context loads the CA bundle (about 0.1 s); without this cache
    # every call that brings no ``http_client`` would pay it again. One context
    # is safe to share between clients and threads.
    return httpx.create_ssl_context()


def _httpx_timeout(t: Timeout, policy: RetryPolicy | None = None) -> httpx.Timeout:
    # httpx's read timeout is per read: exactly our idle timeout. Each phase is cut
    # to what is left of the total deadline, so that waiting for the connection or
    # for the response headers cannot outlast ``Timeout(total=…)`` either.
    if policy is None:
        return httpx.Timeout(connect=t.connect, read=t.idle, write=t.connect, pool=t.connect)
    connect = policy.bound(t.connect)
    return httpx.Timeout(connect=connect, read=policy.bound(t.idle), write=connect, pool=connect)


def _map_exc(
    exc: Exception, secrets: tuple[str, ...], *, started: bool, url: str = ""
) -> StreamError:
    text = redact(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, secrets)
    # Naming the server a connection failed to reach says what to fix (a local
    # server not running, a wrong base_url); only its origin, never a query string.
    to = f" to {origin(url)}" if url else ""
    if isinstance(exc, httpx.TimeoutException):
        if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
            return RequestTimeoutError(f"connect timeout expired connecting{to} ({text})")
        return RequestTimeoutError(f"idle timeout expired ({text})")
    if isinstance(exc, httpx.ConnectError) and not started:
        return ConnectError(f"could not connect{to} ({text})")
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return ConnectError(f"invalid URL ({text})")
    if isinstance(exc, httpx.HTTPError | OSError):
        if not started:
            return ConnectError(f"the connection{to} failed before a response ({text})")
        return StreamInterruptedError(
            f"the connection closed before the response body was complete ({text})"
        )
    return StreamInterruptedError(text)


def _build(
    client: httpx.AsyncClient | httpx.Client,
    request: HTTPRequest,
    t: Timeout,
    policy: RetryPolicy,
) -> httpx.Request:
    return client.build_request(
        "POST",
        request.url,
        headers=request.headers,
        content=request.body,
        timeout=_httpx_timeout(t, policy),
    )


def _send_failed(exc: httpx.HTTPError, request: HTTPRequest, policy: RetryPolicy) -> StreamError:
    """The typed error for a send that failed before any response."""
    left = policy.remaining()
    if isinstance(exc, httpx.TimeoutException) and left is not None and left < 0.01:
        # The phase timeout was cut to the deadline (``_httpx_timeout``): the
        # whole call's budget, not the connect/idle one, is what ran out.
        return policy.total_timeout("before the response")
    return _map_exc(exc, request.secrets, started=False, url=request.url)


def _no_retry(exc: httpx.HTTPError) -> bool:
    # An unusable URL fails the same way every time.
    return isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL)


def _media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def _unexpected_type(request: HTTPRequest, response: httpx.Response) -> str | None:
    """The response's content type when it is not the one the request asked for
    (``Accept: text/event-stream`` for every wire API): an HTML or JSON page from
    a proxy or gateway, sent with ``200``, is not the stream."""
    accept = next((v for k, v in request.headers.items() if k.lower() == "accept"), "")
    wanted = _media_type(accept.split(",", 1)[0])
    got = response.headers.get("content-type")
    if not wanted or "*" in wanted or got is None:
        return None
    return None if _media_type(got) == wanted else got


def _wrong_type_error(
    request: HTTPRequest, response: httpx.Response, content_type: str, body: bytes
) -> ProviderStreamError:
    # Redacted before the cut (redact.head), so the cut never leaves a piece of a key.
    excerpt = head(
        " ".join(body.decode("utf-8", "replace").split()), _EXCERPT_CHARS, request.secrets
    )
    accept = next((v for k, v in request.headers.items() if k.lower() == "accept"), "")
    message = (
        f"HTTP {response.status_code} with content type {content_type!r} instead of "
        f"{_media_type(accept)!r}: {origin(request.url)} answered with a page, not the "
        f"stream (a proxy, gateway or wrong base_url?); the body begins: "
        f"{excerpt or '(empty)'!r}"
    )
    return ProviderStreamError(redact(message, request.secrets), status=response.status_code)


# --------------------------------------------------------------------------- async


class AsyncBody:
    """An open streaming response: iterate raw byte chunks, then ``aclose()``."""

    def __init__(
        self,
        response: httpx.Response,
        client: httpx.AsyncClient | None,
        secrets: tuple[str, ...],
        deadline: float | None,
    ) -> None:
        self.response = response
        self._own_client = client
        self._secrets = secrets
        self._deadline = deadline
        self.bytes_read = 0
        # Decoded bytes (``aiter_bytes``), not the raw body: providers may send
        # the event stream with ``Content-Encoding: gzip`` (Anthropic does). One
        # iterator serves ``chunks`` and ``drain``: httpx refuses a second one.
        self._it: AsyncIterator[bytes] | None = None

    def _iter(self) -> AsyncIterator[bytes]:
        if self._it is None:
            self._it = self.response.aiter_bytes()
        return self._it

    async def chunks(self) -> AsyncIterator[bytes]:
        it = self._iter()
        while True:
            try:
                if self._deadline is not None:
                    remaining = self._deadline - time.monotonic()
                    if remaining <= 0:
                        raise RequestTimeoutError("total timeout expired")
                    async with asyncio.timeout(remaining):
                        chunk = await anext(it)
                else:
                    chunk = await anext(it)
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise RequestTimeoutError("total timeout expired while reading") from None
            except httpx.HTTPError as exc:
                if self._deadline is not None and time.monotonic() >= self._deadline:
                    # The per-read timeout was cut to the deadline (``_httpx_timeout``).
                    raise RequestTimeoutError("total timeout expired while reading") from exc
                raise _map_exc(exc, self._secrets, started=True) from exc
            self.bytes_read += len(chunk)
            yield chunk

    async def drain(self) -> None:
        """Read the rest of the body briefly so the connection can be reused."""
        try:
            async with asyncio.timeout(_DRAIN_SECONDS):
                n = 0
                async for chunk in self._iter():
                    n += len(chunk)
                    if n > _DRAIN_BYTES:
                        break
        except (TimeoutError, httpx.HTTPError, RuntimeError):
            pass

    async def aclose(self) -> None:
        try:
            await self.response.aclose()
        finally:
            if self._own_client is not None:
                await self._own_client.aclose()


async def open_async(
    request: HTTPRequest,
    *,
    timeout: Timeout,
    max_retries: int,
    client: httpx.AsyncClient | None = None,
    on_retry: OnRetry | None = None,
) -> AsyncBody:
    """Send ``request``; return the open 2xx body or raise a typed ``StreamError``.

    Retries (connect failures, 408/409/429/5xx/529) happen only here, before the
    first byte of a successful response is read; :class:`~modelwire._retry.RetryPolicy`
    takes every decision and :func:`open_sync` asks it the same questions.
    """
    own = None
    if client is None:
        own = client = httpx.AsyncClient(timeout=_httpx_timeout(timeout), verify=_ssl_context())
    policy = RetryPolicy(timeout, max_retries)
    try:
        while True:
            err: StreamError
            if policy.expired():
                raise policy.total_timeout("before the response")
            try:
                async with asyncio.timeout(policy.remaining()):
                    response = await client.send(
                        _build(client, request, timeout, policy), stream=True
                    )
            except TimeoutError:
                raise policy.total_timeout("before the response") from None
            except httpx.HTTPError as exc:
                err = _send_failed(exc, request, policy)
                if _no_retry(exc):
                    raise err from exc
                response = None
            if response is not None:
                if response.status_code < 300:
                    wrong = _unexpected_type(request, response)
                    if wrong is None:
                        return AsyncBody(response, own, request.secrets, policy.deadline)
                try:
                    async with asyncio.timeout(policy.remaining()):
                        body = await _read_limited_async(response)
                except TimeoutError:
                    body = b""
                finally:
                    await response.aclose()
                if response.status_code < 300:
                    raise _wrong_type_error(request, response, wrong or "", body)
                err = status_error(response.status_code, body, response.headers, request.secrets)
            wait = policy.next_wait(err)  # raises ``err`` when there is no next attempt
            if on_retry is not None:
                on_retry(policy.attempts, err.status, err.kind, wait)
            await asyncio.sleep(wait)
    except BaseException:
        if own is not None:
            await own.aclose()
        raise


async def _read_limited_async(response: httpx.Response) -> bytes:
    buf = bytearray()
    try:
        async for chunk in response.aiter_bytes():
            buf += chunk
            if len(buf) >= _ERROR_BODY_LIMIT:
                break
    except httpx.HTTPError:
        pass
    return bytes(buf[:_ERROR_BODY_LIMIT])


# --------------------------------------------------------------------------- sync


class SyncBody:
    """The synchronous twin of :class:`AsyncBody` (``httpx.Client``, no event loop).

    A blocked read cannot be cancelled as a task can, so the total deadline, the
    drain bound and :meth:`abort` all end a read by shutting the socket down
    from a timer or another thread (see :meth:`abort`).
    """

    def __init__(
        self,
        response: httpx.Response,
        client: httpx.Client | None,
        secrets: tuple[str, ...],
        deadline: float | None,
    ) -> None:
        self.response = response
        self._own_client = client
        self._secrets = secrets
        self._deadline = deadline
        self.bytes_read = 0
        self._it: Iterator[bytes] | None = None  # see AsyncBody
        self._timer: threading.Timer | None = None
        self._closed = False
        self._lock = threading.Lock()

    def _iter(self) -> Iterator[bytes]:
        if self._it is None:
            self._it = self.response.iter_bytes()
        return self._it

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

    def _expired(self) -> bool:
        return self._deadline is not None and time.monotonic() >= self._deadline

    def chunks(self) -> Iterator[bytes]:
        it = self._iter()
        if self._deadline is not None:
            self._arm(self._deadline - time.monotonic())
        try:
            while True:
                if self._expired():
                    raise RequestTimeoutError("total timeout expired while reading")
                try:
                    chunk = next(it)
                except StopIteration:
                    return
                except httpx.HTTPError as exc:
                    if self._expired():  # the deadline timer shut the socket
                        raise RequestTimeoutError("total timeout expired while reading") from exc
                    raise _map_exc(exc, self._secrets, started=True) from exc
                self.bytes_read += len(chunk)
                yield chunk
        finally:
            self._disarm()

    def drain(self) -> None:
        """Read the rest of the body briefly so the connection can be reused;
        a server that stalls is cut off after ``_DRAIN_SECONDS``."""
        self._arm(_DRAIN_SECONDS)
        n = 0
        try:
            for chunk in self._iter():
                n += len(chunk)
                if n > _DRAIN_BYTES:
                    break
        except (httpx.HTTPError, RuntimeError):
            pass
        finally:
            self._disarm()

    def abort(self) -> None:
        """Unblock a read in progress, from any thread (``SyncAssistantMessageStream.abort``).

        Closing an httpx response from another thread neither is thread-safe nor
        wakes a thread blocked in ``recv``; shutting the socket down does both
        jobs: the read returns at once and the reading thread closes the
        response itself. httpx exposes the socket through the response's
        ``network_stream`` extension (httpx docs, "Extensions").
        """
        with self._lock:
            if self._closed:
                return  # the connection may already serve another request
            stream = self.response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is None:
                self.response.close()
                return
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self._disarm()
        with self._lock:
            self._closed = True
        try:
            self.response.close()
        finally:
            if self._own_client is not None:
                self._own_client.close()


def open_sync(
    request: HTTPRequest,
    *,
    timeout: Timeout,
    max_retries: int,
    client: httpx.Client | None = None,
    on_retry: OnRetry | None = None,
) -> SyncBody:
    """Synchronous :func:`open_async`: the same policy, only the waiting differs.

    A blocking send cannot be wrapped in a deadline as a task can, so each of its
    phases (connect, write, waiting for the headers) gets a timeout cut to what is
    left of the total (``_httpx_timeout``).
    """
    own = None
    if client is None:
        own = client = httpx.Client(timeout=_httpx_timeout(timeout), verify=_ssl_context())
    policy = RetryPolicy(timeout, max_retries)
    try:
        while True:
            err: StreamError
            if policy.expired():
                raise policy.total_timeout("before the response")
            try:
                response = client.send(_build(client, request, timeout, policy), stream=True)
            except httpx.HTTPError as exc:
                err = _send_failed(exc, request, policy)
                if _no_retry(exc):
                    raise err from exc
                response = None
            if response is not None:
                if response.status_code < 300:
                    wrong = _unexpected_type(request, response)
                    if wrong is None:
                        return SyncBody(response, own, request.secrets, policy.deadline)
                try:
                    body = _read_limited_sync(response, policy)
                finally:
                    response.close()
                if response.status_code < 300:
                    raise _wrong_type_error(request, response, wrong or "", body)
                err = status_error(response.status_code, body, response.headers, request.secrets)
            wait = policy.next_wait(err)  # raises ``err`` when there is no next attempt
            if on_retry is not None:
                on_retry(policy.attempts, err.status, err.kind, wait)
            time.sleep(wait)
    except BaseException:
        if own is not None:
            own.close()
        raise


def _read_limited_sync(response: httpx.Response, policy: RetryPolicy) -> bytes:
    buf = bytearray()
    try:
        for chunk in response.iter_bytes():
            buf += chunk
            if len(buf) >= _ERROR_BODY_LIMIT or policy.expired():
                break
    except httpx.HTTPError:
        pass
    return bytes(buf[:_ERROR_BODY_LIMIT])


def pooled_async_client(max_connections: int) -> httpx.AsyncClient:
    """One shared client for many concurrent calls (``mw.batch``): a pool sized to
    the concurrency, so workers reuse connections instead of opening one each."""
    n = max(1, max_connections)
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    return httpx.AsyncClient(limits=limits, verify=_ssl_context())
