"""HTTP transport: the only module that imports httpx (DESIGN §1, §5).

It sends one :class:`~modelwire.options.HTTPRequest`, retries before the first
byte only, maps statuses and httpx exceptions to :mod:`modelwire.errors`
(``raise … from exc`` in exactly this one place), enforces the connect / idle /
total timeouts, redacts secrets from every error text, and closes the response
in every path. After the stream's terminal event the rest of the body is
drained briefly so the connection can go back to the pool.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import random
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import msgspec

from .apis._common import is_context_overflow
from .errors import (
    AuthenticationError,
    ConnectError,
    ContextOverflowError,
    InvalidRequestError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderError,
    RateLimitError,
    RequestTimeoutError,
    ServerError,
    StreamError,
    StreamInterruptedError,
)
from .options import HTTPRequest, Timeout

__all__ = [
    "MAX_RETRY_AFTER",
    "AsyncBody",
    "SyncBody",
    "open_async",
    "open_sync",
    "pooled_async_client",
    "redact",
    "status_error",
]

#: ``Retry-After`` is honoured up to this many seconds; longer ends the call (DESIGN §2a).
MAX_RETRY_AFTER = 60.0
_RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
_ERROR_BODY_LIMIT = 64 * 1024
_DRAIN_BYTES = 64 * 1024
_DRAIN_SECONDS = 0.25
_BACKOFF_BASE = 0.5
_BACKOFF_CAP = 8.0


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with every secret replaced by ``[redacted]``: verbatim, and as
    ``repr`` shows it inside a str or bytes (h11 quotes an illegal header value
    as ``b'Bearer sk-…\\n'``)."""
    for s in secrets:
        if not s:
            continue
        for form in (s, repr(s)[1:-1], repr(s.encode())[2:-1]):
            if form in text:
                text = text.replace(form, "[redacted]")
    return text


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Building a context loads the CA bundle (about 0.1 s); without this cache
    # every call that brings no ``http_client`` would pay it again. One context
    # is safe to share between clients and threads.
    return httpx.create_ssl_context()


def _httpx_timeout(t: Timeout) -> httpx.Timeout:
    # httpx's read timeout is per read: exactly our idle timeout.
    return httpx.Timeout(connect=t.connect, read=t.idle, write=t.connect, pool=t.connect)


def _retry_after(headers: httpx.Headers) -> float | None:
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


class _ErrorBody(msgspec.Struct):
    error: Any = None
    message: str | None = None
    detail: Any = None


def _error_text(body: bytes) -> tuple[str, str | None]:
    """The provider's error message and type from an error body (OpenAI,
    Anthropic and Gemini all nest ``{"error": {"message", "type"|"status"}}``)."""
    text = body.decode("utf-8", "replace").strip()
    try:
        parsed = msgspec.json.decode(body, type=_ErrorBody)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return (text[:500] or "(empty body)"), None
    err = parsed.error
    if isinstance(err, dict):
        msg = err.get("message")
        typ = err.get("type") or err.get("status") or err.get("code")
        return (str(msg) if msg else text[:500]), (str(typ) if typ else None)
    if isinstance(err, str):
        return err, None
    if parsed.message:
        return parsed.message, None
    if isinstance(parsed.detail, str):
        return parsed.detail, None
    return text[:500] or "(empty body)", None


def _is_rate_limit(message: str, typ: str | None) -> bool:
    text = f"{message} {typ or ''}".lower()
    return "rate_limit" in text or "per minute" in text


def _is_bad_key(message: str, body: bytes) -> bool:
    return b"API_KEY_INVALID" in body or "API key not valid" in message


def status_error(
    status: int, body: bytes, headers: httpx.Headers, secrets: tuple[str, ...]
) -> ProviderError:
    """The typed error for an HTTP error status, message taken from the body."""
    message, typ = _error_text(body)
    message = redact(message, secrets)
    detail = f"HTTP {status}: {message}" + (f" ({typ})" if typ else "")
    retry_after = _retry_after(headers)
    cls: type[ProviderError]
    if status == 401 or (status == 400 and _is_bad_key(message, body)):
        # Gemini answers a bad key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
        cls = AuthenticationError
    elif status == 403:
        cls = PermissionDeniedError
    elif status == 404:
        cls = NotFoundError
    elif status == 429 or (status == 413 and _is_rate_limit(message, typ)):
        # Groq answers a tokens-per-minute limit with 413 "Request too large".
        cls = RateLimitError
        if typ and "quota" in typ.lower():
            detail += " — the account is out of quota; retrying will not help"
    elif status in (400, 413, 422):
        cls = ContextOverflowError if is_context_overflow(message) else InvalidRequestError
    elif status in (503, 529) or (typ and "overloaded" in typ.lower()):
        cls = OverloadedError
    elif status >= 500:
        cls = ServerError
    else:
        cls = InvalidRequestError
    return cls(detail, status=status, retry_after=retry_after)


def _map_exc(exc: Exception, secrets: tuple[str, ...], *, started: bool) -> StreamError:
    text = redact(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, secrets)
    if isinstance(exc, httpx.TimeoutException):
        what = "connect" if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout) else "idle"
        return RequestTimeoutError(f"{what} timeout expired ({text})")
    if isinstance(exc, httpx.ConnectError) and not started:
        return ConnectError(f"could not connect ({text})")
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return ConnectError(f"invalid URL ({text})")
    if isinstance(exc, httpx.HTTPError | OSError):
        if not started:
            return ConnectError(f"the connection failed before a response ({text})")
        return StreamInterruptedError(
            f"the connection closed before the response body was complete ({text})"
        )
    return StreamInterruptedError(text)


def _backoff(attempt: int, retry_after: float | None) -> float:
    if retry_after is not None:
        return float(retry_after)
    return float(min(_BACKOFF_CAP, _BACKOFF_BASE * 2.0**attempt)) * (0.5 + random.random() / 2)


def _check_retry_after(err: ProviderError) -> None:
    if err.retry_after is not None and err.retry_after > MAX_RETRY_AFTER:
        err.message += (
            f" — the provider asked to retry after {err.retry_after:.0f} s, longer than "
            f"modelwire waits ({MAX_RETRY_AFTER:.0f} s)"
        )
        err.args = (err.message,)
        raise err


def _build(
    client: httpx.AsyncClient | httpx.Client, request: HTTPRequest, t: Timeout
) -> httpx.Request:
    return client.build_request(
        "POST",
        request.url,
        headers=request.headers,
        content=request.body,
        timeout=_httpx_timeout(t),
    )


def _transport_retry(
    exc: Exception, secrets: tuple[str, ...], attempt: int, max_retries: int
) -> tuple[StreamError, float | None]:
    """The typed error for a failed send, and the delay before retrying it (``None``:
    do not retry — a timeout is not retried, the caller's budget is spent)."""
    err = _map_exc(exc, secrets, started=False)
    if attempt < max_retries and not isinstance(err, RequestTimeoutError):
        return err, _backoff(attempt, None)
    return err, None


def _status_retry(
    response: httpx.Response, body: bytes, secrets: tuple[str, ...], attempt: int, max_retries: int
) -> tuple[ProviderError, float | None]:
    """The typed error for an error status, and the delay before retrying (``None``:
    give up). A ``Retry-After`` longer than :data:`MAX_RETRY_AFTER` raises at once."""
    perr = status_error(response.status_code, body, response.headers, secrets)
    _check_retry_after(perr)
    if response.status_code in _RETRY_STATUSES and attempt < max_retries:
        return perr, _backoff(attempt, perr.retry_after)
    return perr, None


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
) -> AsyncBody:
    """Send ``request``; return the open 2xx body or raise a typed ``StreamError``.

    Retries (connect failures, 408/409/429/5xx/529) happen only here, before
    the first byte of a successful response is read.
    """
    own = None
    if client is None:
        own = client = httpx.AsyncClient(timeout=_httpx_timeout(timeout), verify=_ssl_context())
    deadline = time.monotonic() + timeout.total if timeout.total is not None else None
    secrets = request.secrets
    attempt = 0
    try:
        while True:
            try:
                req = _build(client, request, timeout)
                if deadline is not None:
                    async with asyncio.timeout(max(deadline - time.monotonic(), 0.001)):
                        response = await client.send(req, stream=True)
                else:
                    response = await client.send(req, stream=True)
            except TimeoutError:
                raise RequestTimeoutError("total timeout expired before the response") from None
            except httpx.HTTPError as exc:
                err, delay = _transport_retry(exc, secrets, attempt, max_retries)
                if delay is None:
                    raise err from exc
                await asyncio.sleep(delay)
                attempt += 1
                continue
            if response.status_code < 300:
                return AsyncBody(response, own, secrets, deadline)
            try:
                body = await _read_limited_async(response)
            finally:
                await response.aclose()
            perr, delay = _status_retry(response, body, secrets, attempt, max_retries)
            if delay is None:
                raise perr
            await asyncio.sleep(delay)
            attempt += 1
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
) -> SyncBody:
    """Synchronous :func:`open_async`."""
    own = None
    if client is None:
        own = client = httpx.Client(timeout=_httpx_timeout(timeout), verify=_ssl_context())
    deadline = time.monotonic() + timeout.total if timeout.total is not None else None
    secrets = request.secrets
    attempt = 0
    try:
        while True:
            try:
                req = _build(client, request, timeout)
                response = client.send(req, stream=True)
            except httpx.HTTPError as exc:
                err, delay = _transport_retry(exc, secrets, attempt, max_retries)
                if delay is None:
                    raise err from exc
                time.sleep(delay)
                attempt += 1
                continue
            if response.status_code < 300:
                return SyncBody(response, own, secrets, deadline)
            try:
                buf = bytearray()
                try:
                    for chunk in response.iter_bytes():
                        buf += chunk
                        if len(buf) >= _ERROR_BODY_LIMIT:
                            break
                except httpx.HTTPError:
                    pass
            finally:
                response.close()
            perr, delay = _status_retry(response, bytes(buf), secrets, attempt, max_retries)
            if delay is None:
                raise perr
            time.sleep(delay)
            attempt += 1
    except BaseException:
        if own is not None:
            own.close()
        raise


def pooled_async_client(max_connections: int) -> httpx.AsyncClient:
    """One shared client for many concurrent calls (``mw.batch``): a pool sized to
    the concurrency, so workers reuse connections instead of opening one each."""
    n = max(1, max_connections)
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    return httpx.AsyncClient(limits=limits, verify=_ssl_context())
