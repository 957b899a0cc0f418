"""One connection's HTTP/1.1 exchange: the request head written (RFC 9112 §3, §5),
the response parsed by httptools as it arrives — interim 1xx answers skipped, the body
framed by chunks, ``Content-Length`` or the connection's end (§6-7), ``gzip`` and
``deflate`` undone, keep-alive decided (§9.3) — and handed over as it comes, with TCP
flow control holding the server back while it is not read. The one module that
imports httptools."""

from __future__ import annotations

import asyncio
import re
import zlib
from typing import Any, cast
from urllib.parse import urlsplit

import httptools

from ..._version import __version__
from ...errors import StreamInterruptedError

__all__ = ["HIGH_WATER", "Connection", "Target", "request_head", "target"]

_USER_AGENT = f"modelwire/{__version__}"
#: What no header field may hold: a line break or a NUL would end it and start
#: another (RFC 9110 §5.5); a name holds no colon either.
_BAD_VALUE = re.compile("[\r\n\0]").search
_BAD_NAME = re.compile("[\r\n\0:]").search
#: Body bytes held unread before the socket stops being read (TCP flow control then
#: holds the server back); reading starts again when the reader takes them.
HIGH_WATER = 256 * 1024


# --------------------------------------------------------------------------- target


class Target:
    """What a request URL gives the connection: where to connect, what to write."""

    __slots__ = ("host", "host_header", "key", "path", "port", "tls")

    def __init__(self, url: str) -> None:
        u = urlsplit(url)
        scheme = u.scheme.lower()
        if scheme not in ("http", "https"):
            raise ValueError(f"the URL scheme must be http or https, got {u.scheme!r}")
        host = u.hostname
        if not host:
            raise ValueError("the URL has no host")
        port = u.port or (443 if scheme == "https" else 80)  # .port raises on a bad one
        if u.username is not None or u.password is not None:
            # aiohttp and httpx would send them as Basic auth; modelwire's own
            # requests carry their credentials in headers, so a userinfo is a mistake.
            raise ValueError("the URL carries a user or password")
        self.tls = scheme == "https"
        self.host = host
        self.port = port
        shown = f"[{host}]" if ":" in host else host
        default = 443 if self.tls else 80
        self.host_header = shown if port == default else f"{shown}:{port}"
        self.path = (u.path or "/") + (f"?{u.query}" if u.query else "")
        if any(c in self.path for c in " \r\n\0"):
            raise ValueError("the URL's path holds a space or a control character")
        self.key = (scheme, host, port)


_TARGETS: dict[str, Target] = {}


def target(url: str) -> Target:
    # A gateway or an agent sends to a handful of URLs: each is split once.
    t = _TARGETS.get(url)
    if t is None:
        t = Target(url)
        if len(_TARGETS) >= 256:
            _TARGETS.clear()
        _TARGETS[url] = t
    return t


def request_head(t: Target, headers: Any, length: int, method: str = "POST") -> bytes:
    """The request line and headers (RFC 9112 §3, §5): the call's headers as given,
    and what the others add when absent (``User-Agent``, ``Accept-Encoding``)."""
    lines = [f"{method} {t.path} HTTP/1.1\r\nHost: {t.host_header}\r\n"]
    agent = encoding = False
    for name, value in headers.items():
        low = name.lower()
        if low in ("host", "content-length", "transfer-encoding", "connection"):
            continue  # this transport frames the request itself
        if _BAD_NAME(name) or _BAD_VALUE(value):
            raise ValueError(f"the request header {name!r} holds a line break or a colon")
        agent = agent or low == "user-agent"
        encoding = encoding or low == "accept-encoding"
        lines.append(f"{name}: {value}\r\n")
    if not agent:
        lines.append(f"User-Agent: {_USER_AGENT}\r\n")
    if not encoding:
        lines.append("Accept-Encoding: gzip, deflate\r\n")
    lines.append(f"Content-Length: {length}\r\n\r\n")
    return "".join(lines).encode("latin-1")


# --------------------------------------------------------------------------- connection


def _undecodable(exc: zlib.error) -> StreamInterruptedError:
    return StreamInterruptedError(
        f"the response body does not decode as its content-encoding says ({exc})"
    )


class Connection(asyncio.Protocol):
    """One keep-alive connection: the response being read, parsed as it arrives."""

    def __init__(self, key: tuple[str, str, int], loop: asyncio.AbstractEventLoop) -> None:
        self.key = key
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.parser: Any = None  # httptools.HttpResponseParser, one per response
        self.status = 0
        self.headers: dict[str, str] = {}
        self.chunks: list[bytes] = []
        self.buffered = 0
        self.paused = False
        self.headed = False  # the final (non-1xx) head has arrived
        self.complete = False  # the whole response has arrived
        self.keep_alive = False
        self.until_close = False  # no framing: the body ends when the connection does
        self.interim = False  # inside a 1xx response
        self.decoder: _Decoder | None = None  # for a gzip or deflate body
        self.error: BaseException | None = None
        self.lost = False
        self.waiter: asyncio.Future[None] | None = None
        self.idle_since = 0.0

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, only alike.
        self.transport = cast("asyncio.Transport", transport)

    def data_received(self, data: bytes) -> None:
        if self.parser is None:
            # Bytes while no request is out: the server broke the protocol.
            self.error = StreamInterruptedError("the server sent bytes no request asked for")
            self._abort()
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self.error = StreamInterruptedError("the server switched protocols")
            self._abort()
        except httptools.HttpParserError as exc:
            # A callback's own failure (an undecodable body) was set where it arose.
            if self.error is None:
                self.error = StreamInterruptedError(f"the response is not valid HTTP/1.1 ({exc})")
            self._abort()
        # Flow control counts the bytes read, once per read (a decoded body adds what
        # it decodes to, in _coded_body): per chunk it would cost a Python call each.
        self.buffered += len(data)
        if self.buffered > HIGH_WATER and self.chunks and not self.paused and self.transport:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        return False  # the transport closes itself: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if not self.complete and self.error is None:
            if self.headed and self.until_close and exc is None:
                self._finish_body()  # the body's end is the connection's (RFC 9112 §6.3)
            elif self.parser is not None:
                self.error = exc or ConnectionResetError("the server closed the connection")
        self._wake()

    # httptools callbacks

    def on_message_begin(self) -> None:
        self.headers = {}

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.headed:
            return  # a chunked body's trailer (RFC 9112 §7.1.2): not the head's (RFC 9110 §6.5.1)
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        old = self.headers.get(key)
        self.headers[key] = text if old is None else f"{old}, {text}"  # RFC 9110 §5.3

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200:
            self.interim = True  # 100 Continue, 103 Early Hints: the answer follows
            return
        self.status = status
        self.headed = True
        h = self.headers
        self.until_close = (
            "content-length" not in h and "transfer-encoding" not in h and status not in (204, 304)
        )
        coding = h.get("content-encoding", "").strip().lower()
        if coding in ("gzip", "x-gzip", "deflate"):
            self.decoder = _Decoder(gzip=coding != "deflate")
        elif coding not in ("", "identity"):
            self.error = StreamInterruptedError(
                f"the response's content-encoding {coding!r} was not asked for "
                "(Accept-Encoding: gzip, deflate)"
            )
            raise ValueError(coding)  # stops the parser: feed_data raises
        self._wake()

    def on_body(self, body: bytes) -> None:
        # Called for every HTTP chunk (one per event on most servers): kept to an append.
        if self.decoder is None and not self.interim:
            self.chunks.append(body)
        elif not self.interim:
            self._coded_body(body)

    def _coded_body(self, body: bytes) -> None:
        assert self.decoder is not None
        try:
            body = self.decoder.decompress(body)
        except zlib.error as exc:
            self.error = _undecodable(exc)
            raise
        if body:
            self.chunks.append(body)
            self.buffered += len(body)

    def on_message_complete(self) -> None:
        if self.interim:
            self.interim = False
            return
        self.keep_alive = self.parser.should_keep_alive()
        self._finish_body()

    # the transport's side

    def _finish_body(self) -> None:
        decoder, self.decoder = self.decoder, None
        if decoder is not None:
            try:
                rest = decoder.flush()
            except zlib.error as exc:
                self.error = _undecodable(exc)
                return
            if rest:
                self.chunks.append(rest)
        self.complete = True

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _abort(self) -> None:
        if self.transport is not None:
            try:
                self.transport.abort()
            except RuntimeError:  # its loop is closed: nothing can run any more
                pass

    def begin(self) -> None:
        """A new response is expected on this connection."""
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers = {}
        self.chunks = []
        self.buffered = 0
        self.headed = self.complete = self.keep_alive = self.until_close = False
        self.interim = False
        self.decoder = None

    def take(self) -> bytes:
        """The body bytes received and not taken yet; a paused socket is read again."""
        chunks = self.chunks
        out = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        self.chunks = []
        self.buffered = 0
        if self.paused and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
        return out

    async def wait(self) -> None:
        """Until something arrives: bytes, the head, the end, or a failure."""
        waiter = self.waiter = self.loop.create_future()
        try:
            await waiter
        finally:
            self.waiter = None

    def reusable(self) -> bool:
        return (
            self.complete
            and self.keep_alive
            and not self.lost
            and self.error is None
            and self.transport is not None
            and not self.transport.is_closing()
        )


class _Decoder:
    """A gzip or deflate body undone as it arrives. ``deflate`` is zlib-wrapped (RFC
    9110 §8.4.1.2), yet some servers send it raw (RFC 1951): the first bytes tell."""

    __slots__ = ("_d", "_fed", "_first")

    def __init__(self, *, gzip: bool) -> None:
        self._d: Any = zlib.decompressobj(16 + zlib.MAX_WBITS) if gzip else None
        self._first = b""
        self._fed = False

    def decompress(self, data: bytes) -> bytes:
        self._fed = self._fed or bool(data)
        if self._d is None:
            data = self._first + data
            if len(data) < 2:
                self._first = data  # the zlib header is two bytes: a read may bring one
                return b""
            wrapped = (data[0] & 0x0F) == 8 and (data[0] << 8 | data[1]) % 31 == 0
            self._d = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        out: bytes = self._d.decompress(data)
        return out

    def flush(self) -> bytes:
        if not self._fed:
            return b""  # an empty body: no stream to end
        rest = b"" if self._d is None else bytes(self._d.flush())
        if self._d is None or not self._d.eof:
            # The body ended before its stream did (no gzip trailer, RFC 1952 §2.2):
            # cut, whatever the framing said, and its check never made.
            raise zlib.error("the compressed stream ends early")
        return rest
