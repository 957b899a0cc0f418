"""``MockServer``: a real HTTP/1.1 server on loopback that plays scripted replies.

Real sockets and chunked bodies, so the whole client path (httpx, SSE, the
decoders, the assembler) runs as it does against a provider. Each request takes
the next :class:`Reply`; every request is recorded for assertions.
"""

from __future__ import annotations

import json
import random
import socket
import socketserver
import threading
import time
from collections.abc import Iterable, Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any

import msgspec

__all__ = ["MockServer", "RecordedRequest", "Reply"]


class Reply(msgspec.Struct, kw_only=True):
    """One scripted HTTP response.

    ``body`` is sent as a chunked body split by ``chunk_size`` (bytes per piece;
    ``1`` = every byte), or at ``split_points``, or randomly with ``seed``;
    ``delay`` seconds pass between pieces. ``cut_after`` closes the connection
    after that many body bytes without finishing the chunked body;
    ``stall_after`` stops sending (keeping the connection open) after that
    many bytes, for idle timeouts, for ``stall_seconds``.
    """

    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    content_type: str = "text/event-stream"
    chunk_size: int | None = None
    split_points: tuple[int, ...] | None = None
    seed: int | None = None
    delay: float = 0.0
    cut_after: int | None = None
    stall_after: int | None = None
    stall_seconds: float = 30.0

    def pieces(self) -> list[bytes]:
        body = self.body
        if self.split_points is not None:
            points = sorted({p for p in self.split_points if 0 < p < len(body)})
        elif self.chunk_size is not None:
            points = list(range(self.chunk_size, len(body), self.chunk_size))
        elif self.seed is not None:
            rng = random.Random(self.seed)
            k = rng.randint(0, min(len(body), 64))
            points = sorted(rng.sample(range(1, len(body)), k)) if len(body) > 1 else []
        else:
            points = []
        out, prev = [], 0
        for p in [*points, len(body)]:
            if p > prev:
                out.append(body[prev:p])
            prev = p
        return out


class RecordedRequest(msgspec.Struct):
    """What the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


class _Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: MockServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (cancellation tests) is not a server error.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        owner = self.server.owner
        rec = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        reply = owner._next_reply(rec)
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        for k, v in reply.headers.items():
            self.send_header(k, v)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = 0
        try:
            for piece in reply.pieces():
                if reply.cut_after is not None and sent + len(piece) >= reply.cut_after:
                    piece = piece[: reply.cut_after - sent]
                    if piece:
                        self._chunk(piece)
                    self._cut()
                    return
                if reply.stall_after is not None and sent + len(piece) > reply.stall_after:
                    head = piece[: reply.stall_after - sent]
                    if head:
                        self._chunk(head)
                    owner._stall.wait(reply.stall_seconds)
                    self._cut()
                    return
                self._chunk(piece)
                sent += len(piece)
                if reply.delay:
                    time.sleep(reply.delay)
            if reply.cut_after is not None and reply.cut_after >= sent:
                self._cut()
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _cut(self) -> None:
        self.wfile.flush()
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.close_connection = True


class MockServer:
    """A loopback HTTP server playing ``replies`` in order (the last one repeats
    when ``repeat_last``). Use as a context manager; ``base_url`` ends in ``/v1``
    (``/v1beta`` style paths work too: any path is accepted and recorded)."""

    def __init__(
        self,
        replies: Iterable[Reply | bytes] = (),
        *,
        repeat_last: bool = False,
        version_segment: str = "/v1",
    ) -> None:
        self._replies: list[Reply] = [r if isinstance(r, Reply) else Reply(body=r) for r in replies]
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.repeat_last = repeat_last
        self.version_segment = version_segment
        self._stall = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def add(self, *replies: Reply | bytes) -> None:
        """Queue more replies."""
        with self._lock:
            self._replies.extend(r if isinstance(r, Reply) else Reply(body=r) for r in replies)

    def _next_reply(self, rec: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(rec)
            if not self._replies:
                return Reply(
                    status=500,
                    content_type="application/json",
                    body=b'{"error":{"message":"MockServer has no reply left","type":"mock"}}',
                )
            if len(self._replies) == 1 and self.repeat_last:
                return self._replies[0]
            return self._replies.pop(0)

    @property
    def port(self) -> int:
        assert self._server is not None, "the server is not started"
        return int(self._server.server_address[1])

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return self.origin + self.version_segment

    def start(self) -> MockServer:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stall.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> MockServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def sse_body(payloads: Sequence[Any], *, done: bool = True, event_names: bool = False) -> bytes:
    """``data: <json>\\n\\n`` frames for ``payloads`` (dicts are JSON-encoded)."""
    out = []
    for p in payloads:
        data = p if isinstance(p, str) else json.dumps(p, ensure_ascii=False)
        if event_names and isinstance(p, dict) and "type" in p:
            out.append(f"event: {p['type']}\n")
        out.append(f"data: {data}\n\n")
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()
