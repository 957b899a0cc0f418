"""``MockServer``: a real HTTP/1.1 server on loopback that plays scripted replies.

Real sockets and chunked bodies, so the whole client path (httpx, SSE, the
decoders, the assembler) runs as it does against a provider. Each request takes
the next reply; every request is recorded for assertions.

A reply is raw bytes, a :class:`Reply` (status, headers, body and faults), or a
*script* — text, a ``ToolCall``, content blocks or an ``AssistantMessage`` —
that the server renders in the wire format of the API the request path names.
Routing is by the exact path, version segment included, from each API's server side
(``/v1/chat/completions``, ``/api/chat``,
``/v1beta/models/{model}:streamGenerateContent``…; :mod:`modelwire.testing._routing`):
a request that does not ask for a stream (``"stream": false``, Gemini's
``:generateContent``, Bedrock's ``/converse``) gets the same reply as the one JSON
object the provider answers with, a ``GET`` of a model listing lists the server's
models, and a path no API serves is a 404 that consumes no reply.
A callable ``(RecordedRequest) -> reply`` decides when the request arrives, so
a reply can depend on what the client sent (e.g. a tool result). The providers' batch
endpoints are served too (:attr:`MockServer.batches`, :mod:`modelwire.testing._batches`).
"""

from __future__ import annotations

import itertools
import json
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler
from typing import Any, TypeAlias

import msgspec

from .._apis import DEFAULT_API, api_names, find_api, find_server
from .._apis._server.reply import ErrorReply, compact_json, model_in_body, openai_error
from .._apis._server.wire import WireServer
from ..errors import ConfigurationError
from ..types import AssistantMessage, Context, Model, ModelCost
from ._auto import auto_for_context, auto_for_request
from ._background import Backgrounds
from ._batches import MockBatches
from ._embed import embed_reply
from ._normal import Script, normalize
from ._render import render_reply, sse_body, unframed
from ._reply import Reply
from ._routing import Route, route, served_paths

__all__ = [
    "MockServer",
    "RecordedRequest",
    "Reply",
    "ReplyLike",
    "Responder",
    "auto_reply",
    "error_reply",
    "sse_body",
]

_DEFAULT_CONTENT_TYPE = "text/event-stream"


def _mock(api: str | None) -> WireServer | None:
    return find_server(api) if api is not None else None  # None: unknown, or no server side


class RecordedRequest(msgspec.Struct):
    """What the server received."""

    method: str
    """``POST`` or ``GET``."""
    path: str
    """The request target, query string included (``/v1/chat/completions``)."""
    headers: dict[str, str]
    """Request headers, names lower-cased."""
    body: bytes
    """The raw request body."""

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)

    def _body(self) -> object:
        try:
            return self.json() if self.body else None
        except ValueError:
            return None

    @property
    def route(self) -> Route | None:
        """The API this request is for and how it is answered (``None``: no API
        serves its method and path, and it was answered 404)."""
        return route(self.method, self.path, self.headers, self._body())

    @property
    def api(self) -> str | None:
        """The wire API the request belongs to (``None`` for a path no API serves)."""
        found = self.route
        return found.api if found is not None else None

    @property
    def stream(self) -> bool:
        """Whether the request asked for a stream (``False`` also for an unserved path)."""
        found = self.route
        return found is not None and found.kind == "stream"

    @property
    def model(self) -> str | None:
        """The model id the client asked for, as the request's API carries it (the
        body's ``model`` field, or a path segment: ``WireServer.request_model``)."""
        try:
            body = self.json()
        except ValueError:
            body = None
        server = _mock(self.api)
        if server is None:
            return model_in_body(self.path, body)
        return server.request_model(self.path, body)


#: A callable deciding the reply when a request arrives.
Responder: TypeAlias = Callable[[RecordedRequest], Any]
#: What a MockServer accepts as one reply: ``Reply``, raw ``bytes``, a script
#: (``str``, ``ToolCall``, content blocks, ``AssistantMessage``) or a ``Responder``.
ReplyLike: TypeAlias = Any


def error_reply(
    status: int,
    message: str,
    *,
    type: str | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """An HTTP error as the request's API sends it: OpenAI's ``{"error": {"message",
    "type", …}}``, Anthropic's ``{"type": "error", "error": {…}}`` with ``request-id``,
    Google's ``{"error": {"code", "message", "status"}}``, Ollama's ``{"error": "…"}``,
    Bedrock's ``{"message"}`` with ``x-amzn-ErrorType`` (each API's ``WireServer.error_body``).
    ``type`` is the provider's error type (default: the one it uses for ``status``);
    ``headers`` are added (``retry-after``…)."""
    return Reply(status=status, error=message, error_type=type, content_type="application/json",
                 headers=dict(headers or {}))  # fmt: skip


def auto_reply(source: Context | RecordedRequest) -> Script:
    """The automatic reply, as a reply for :class:`ScriptedModel` (given the ``Context``)
    or :class:`MockServer` (given the ``RecordedRequest``): one call to each declared
    tool with arguments valid against its schema; once tool results are back, a text
    naming them (``auto=True`` on either plays it for every call past the script)."""
    if isinstance(source, Context):
        return auto_for_context(source)
    if isinstance(source, RecordedRequest):
        return auto_for_request(source.api, source._body())
    raise ConfigurationError(f"auto_reply takes a Context or a RecordedRequest, not {source!r}")


def _error(mock: WireServer | None, status: int, message: str, kind: str | None) -> ErrorReply:
    make = mock.error_body if mock is not None else openai_error
    return make(status, message, kind)


def _failure_text(script: Any) -> str:
    error = script.error if isinstance(script, AssistantMessage) else None
    return error.message if error is not None else "the scripted reply failed"


def _coerce(item: Any) -> Reply | Responder:
    if isinstance(item, Reply):
        return item
    if callable(item):
        responder: Responder = item
        return responder
    if isinstance(item, bytes | bytearray):
        return Reply(body=bytes(item))
    return Reply(message=item)


class _Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024  # listen backlog: many concurrent clients (batch, bench)
    owner: MockServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (cancellation tests) is not a server error.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Each streamed event is written at once, as a provider's server writes it: with
    # Nagle's algorithm every small write after the first would wait for the client's
    # delayed ACK (~40 ms on Linux).
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle()

    do_POST = do_GET

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        owner = self.server.owner
        rec = RecordedRequest(method=self.command, path=self.path, body=body,
                              headers={k.lower(): v for k, v in self.headers.items()})  # fmt: skip
        reply = owner._answer(rec)
        if owner.on_request is not None:
            owner.on_request(rec, reply)
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
    """A loopback HTTP server playing ``replies`` in order. Use as a context manager;
    ``base_url`` ends in ``/v1``, and :meth:`model` builds a ``Model`` for any wire API
    pointing here (with its own version segment). Every request is recorded in
    :attr:`requests`; one to a path no API serves is answered 404 and consumes no
    reply, as does a model listing.

    Each reply is a :class:`Reply`, raw ``bytes``, a script (``str``,
    ``ToolCall``, content blocks, ``AssistantMessage``: rendered for the API
    of the request path) or a callable ``(RecordedRequest) -> reply``. When
    none is left the server answers 500 with a JSON error saying so.

    Args:
        replies: The replies, played in order, one per request.
        repeat_last: Keep answering with the last reply once it is reached.
        version_segment: The path segment ``base_url`` ends in.
        host: The loopback address to listen on.
        port: The port (``0``: a free one).
        on_request: Called with every request and the reply chosen for it.
        models: The model ids the listings (``GET /v1/models``…) name.
        auto: Once the replies run out, answer with :func:`auto_reply`.

    Example:
        ```python
        import modelwire as mw
        from modelwire.testing import MockServer, error_reply

        with MockServer(["Hello!", error_reply(429, "slow down")]) as server:
            print(mw.complete_sync(server.model(), "Hi").text)  # Hello!
            print(mw.complete_sync(server.model(), "Hi", max_retries=0).error.kind)  # rate_limit
        print(server.requests[0].json()["messages"])  # [{'role': 'user', 'content': 'Hi'}]
        ```
    """

    def __init__(
        self,
        replies: Iterable[ReplyLike] = (),
        *,
        repeat_last: bool = False,
        version_segment: str = "/v1",
        host: str = "127.0.0.1",
        port: int = 0,
        on_request: Callable[[RecordedRequest, Reply], None] | None = None,
        models: Iterable[str] = (),
        auto: bool = False,
    ) -> None:
        #: Called (on the server thread) with every request and the reply chosen for
        #: it — also the 500 "no reply left", a listing and the 404 for an unknown path.
        self.on_request = on_request
        #: The model ids the listings (``GET /v1/models``, ``/api/tags``…) name: those
        #: given, then each id :meth:`model` was asked for (``mock-model`` when none).
        self.models: list[str] = list(models)
        #: Once the replies run out, answer every call with the automatic reply
        #: (:func:`~modelwire.testing.auto_reply`: each declared tool once, then text).
        self.auto = auto
        self._replies: list[Reply | Responder] = [_coerce(r) for r in replies]
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.repeat_last = repeat_last
        self.version_segment = version_segment
        self.host = host
        self._port = port
        self._stall = threading.Event()
        #: Background responses (OpenAI Responses ``"background": true``), read again
        #: and cancelled by id; ``background.retrievals`` queues faults of the next
        #: streamed retrievals (:mod:`modelwire.testing._background`).
        self.background = Backgrounds()
        #: The providers' batch jobs (OpenAI, Anthropic, Gemini) and their controls.
        self.batches = MockBatches(self)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def add(self, *replies: ReplyLike) -> None:
        """Queue more replies."""
        with self._lock:
            self._replies.extend(_coerce(r) for r in replies)

    @property
    def pending(self) -> int:
        """How many queued replies are still unplayed."""
        with self._lock:
            return len(self._replies)

    @property
    def last_request(self) -> RecordedRequest:
        """The most recent request (``IndexError`` when none arrived yet)."""
        with self._lock:
            return self.requests[-1]

    def _answer(self, rec: RecordedRequest) -> Reply:
        """The reply for a request: a listing or a 404 without touching the script,
        else the next scripted reply rendered as the request asked."""
        found = rec.route
        picked = None if found is not None else (self.background.answer(rec.method, rec.path)
                                                 or self.batches.answer(rec, self.origin))  # fmt: skip
        if picked is not None:  # a background response, or a batch job's endpoint
            with self._lock:
                self.requests.append(rec)
            return Reply(**picked)
        if found is None or found.kind == "models":
            with self._lock:
                self.requests.append(rec)
            if found is None:
                return self._not_found(rec)
            mock = _mock(found.api)
            # Routed as a listing only when the API renders one (``_routing``).
            assert mock is not None and mock.render_models is not None
            ids = list(dict.fromkeys(self.models)) or ["mock-model"]
            body = compact_json(mock.render_models(ids))
            return Reply(body=body.encode(), content_type="application/json")
        if found.kind == "embed":  # the computed vectors, or a queued fault (._embed)
            return embed_reply(self, rec, found.api)
        reply = self._resolve(rec, self._next_reply(rec), found)
        self.background.remember(rec.method, rec.path, rec.body, reply)
        return reply

    def _not_found(self, rec: RecordedRequest) -> Reply:
        served = "; ".join(served_paths())
        message = (
            f"MockServer: no wire API serves {rec.method} {rec.path.split('?', 1)[0]!r} "
            f"(no scripted reply was used). Served: {served}"
        )
        error = openai_error(404, message)
        return Reply(status=404, body=compact_json(error.body).encode(),
                     content_type="application/json")  # fmt: skip

    def _resolve(
        self, rec: RecordedRequest, item: Reply | Responder, found: Route | None = None
    ) -> Reply:
        """Turn a queued item into the concrete ``Reply`` for this request."""
        found = found or rec.route
        if found is None:
            return self._not_found(rec)
        mock = _mock(found.api)
        try:
            if not isinstance(item, Reply):
                item = _coerce(item(rec))
                if not isinstance(item, Reply):
                    raise ConfigurationError("a responder must return a reply, not a callable")
            if item.error is not None:
                error = _error(mock, item.status, item.error, item.error_type)
                return msgspec.structs.replace(
                    item, body=compact_json(error.body).encode(), error=None,
                    headers={**error.headers, **item.headers},
                )  # fmt: skip
            if item.message is None:
                # A raw body left at the default media type gets its API's own
                # (application/x-ndjson on an NDJSON API's path).
                if mock is not None and item.content_type == _DEFAULT_CONTENT_TYPE:
                    return msgspec.structs.replace(item, content_type=mock.content_type)
                return item
            if mock is None:
                raise ConfigurationError(f"wire API {found.api!r} has no server side")
            model = rec.model or "mock-model"
            body = rec._body()
            rendered = render_reply(
                item.message, found.api, model=model,
                response_id=normalize(item.message).response_id or f"mock-{len(self.requests)}",
                piece_chars=item.piece_chars, include_usage=mock.include_usage(body),
            )  # fmt: skip
            if found.kind == "complete":
                if rendered.complete is None:  # a failing script: the API's HTTP error
                    error = _error(mock, 500, _failure_text(item.message), None)
                    return Reply(status=500, body=compact_json(error.body).encode(),
                                 headers={**error.headers, **item.headers},
                                 content_type="application/json")  # fmt: skip
                ctype = item.content_type
                if ctype == _DEFAULT_CONTENT_TYPE:
                    ctype = "application/json"
                return msgspec.structs.replace(
                    item, body=rendered.complete, message=None, content_type=ctype
                )
            sse_query = mock.sse_query
            query = rec.path.partition("?")[2].split("&")
            if sse_query is not None and sse_query not in query:
                # Gemini without alt=sse: the same responses as one JSON array.
                array = [
                    p for _, p in unframed(found.api, rendered.pieces) if not isinstance(p, str)
                ]
                return msgspec.structs.replace(
                    item, body=compact_json(array).encode(), message=None,
                    content_type="application/json",
                )  # fmt: skip
            pieces = rendered.pieces
            split = item.chunk_size is None and item.split_points is None and item.seed is None
            points = tuple(itertools.accumulate(len(f) for f in pieces)) if split else None
            # The API's media type, unless the script chose one (Reply.content_type).
            ctype = item.content_type
            if ctype == _DEFAULT_CONTENT_TYPE:
                ctype = mock.content_type
            return msgspec.structs.replace(
                item, body=b"".join(pieces), message=None, content_type=ctype,
                split_points=points if split else item.split_points,
            )  # fmt: skip
        except Exception as exc:  # a bad script must reach the test as an HTTP error
            error = _error(mock, 500, f"MockServer: the scripted reply failed: {exc}", None)
            return Reply(status=500, body=compact_json(error.body).encode(),
                         headers=dict(error.headers), content_type="application/json")  # fmt: skip

    def model(
        self,
        api: str = DEFAULT_API,
        id: str = "mock-model",
        *,
        provider: str = "mock",
        cost: ModelCost | None = None,
        **fields: Any,
    ) -> Model:
        """A :class:`~modelwire.types.Model` reaching this server through ``api``
        (its base URL ends in the API's own version segment, ``WireServer.version_segment``:
        ``/v1``, ``/v1beta``, or none for a server root). The provider ``mock`` has no
        API-key variable, so no key is needed.

        Args:
            api: The wire API to speak (default ``"openai-chat"``).
            id: The model id sent in requests (added to the listings' ids).
            provider: The model's provider name.
            cost: Prices, for tests of usage cost (default: free).
            **fields: Any other ``Model`` field (``context_window``, ``input``…).
        """
        mock = _mock(api)
        if mock is None:
            speaks = [n for n in api_names() if _mock(n) is not None]
            said = f"unknown api {api!r}" if find_api(api) is None else (
                f"wire API {api!r} has no server side")  # fmt: skip
            raise ConfigurationError(f"{said}; the MockServer speaks {', '.join(speaks)}")
        self.models.append(id)
        return Model(
            id=id, api=api, provider=provider, base_url=self.origin + mock.version_segment,
            cost=cost or ModelCost(), **fields,
        )  # fmt: skip

    def _next_reply(self, rec: RecordedRequest) -> Reply | Responder:
        with self._lock:
            self.requests.append(rec)
            if not self._replies:
                if self.auto:
                    return auto_reply
                return Reply(status=500, error="MockServer has no reply left")
            if len(self._replies) == 1 and self.repeat_last:
                return self._replies[0]
            return self._replies.pop(0)

    @property
    def port(self) -> int:
        assert self._server is not None, "the server is not started"
        return int(self._server.server_address[1])

    @property
    def origin(self) -> str:
        host = self.host if ":" not in self.host else f"[{self.host}]"
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        return self.origin + self.version_segment

    def start(self) -> MockServer:
        server = _Server((self.host, self._port), _Handler)
        server.owner = self
        self._server = server
        # A short poll interval: stop() waits for the serve loop to notice (at
        # most one interval), and tests start and stop many servers.
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
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
