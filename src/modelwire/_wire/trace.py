"""The trace records and the tracer that emits them, beside the layers that use them
(the pipeline, the call, the transports). :mod:`modelwire.trace` is their public face
and documents them."""

from __future__ import annotations

import time
import warnings
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeAlias

import msgspec

from .._redact import StreamRedactor, is_credential_header, redact, redact_url
from ..types import AssistantMessage, Context
from .sse._readcut import ReadCut, ReadPosition

if TYPE_CHECKING:
    from ..errors import StreamError
    from ..events import Event
    from ..types import Model
    from .deltas import Delta
    from .request import HTTPRequest
    from .sse import Frame

__all__ = [
    "ContextTrace",
    "DeltaTrace",
    "EndTrace",
    "ErrorTrace",
    "EventTrace",
    "FallbackTrace",
    "MessageTrace",
    "ReadCut",
    "ReadTrace",
    "RequestTrace",
    "ResponseTrace",
    "RetryTrace",
    "SSETrace",
    "TraceLog",
    "TraceObserver",
    "TraceRecord",
    "Tracer",
    "check_observer",
]

#: The layer an error arose in.
ErrorLayer: TypeAlias = Literal["http", "sse", "decode", "assemble", "caller"]

_HIDDEN_RESPONSE_HEADERS = frozenset({"set-cookie"})
_NO_KEY: Any = object()


class TraceRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One item of one layer. ``id`` is unique within the call; ``parent`` is the id
    of the record this one came from (``None`` at the top)."""

    layer: ClassVar[str] = ""
    id: str
    """This record's id, e.g. ``"sse-4"`` (``"context"``, ``"request"``… for the
    one-per-call layers)."""
    parent: str | None = None
    """The id of the record it came from (an SSE event's read, a delta's SSE event…)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON (``layer``, ``id``, ``parent`` first)."""
        out: dict[str, Any] = {"layer": self.layer, "id": self.id, "parent": self.parent}
        for name in self.__struct_fields__:
            if name not in out:
                out[name] = _plain(getattr(self, name))
        return out


class ContextTrace(TraceRecord, frozen=True):
    """The conversation the call was made with, as the caller gave it."""

    layer: ClassVar[str] = "context"
    api: str
    """The wire API (``model.api``)."""
    provider: str
    """``model.provider``."""
    model: str
    """``model.id``."""
    context: Context
    """The context passed to ``stream``/``complete``."""
    handoff: tuple[str, ...] = ()
    """What replaying the context to this model leaves out, one note each (an opaque
    ``ProviderItem`` of another API: ``mw.handoff`` drops it)."""
    operation: str = "chat"
    """The GenAI operation: ``chat``, or ``embeddings`` (``mw.embed``: the context is
    its inputs, one per line)."""


class RequestTrace(TraceRecord, frozen=True):
    """The HTTP request the wire API built, secrets replaced by ``[redacted]``."""

    layer: ClassVar[str] = "request"
    method: str
    """Always ``POST``."""
    url: str
    """The endpoint URL."""
    headers: dict[str, str]
    """Request headers; credential headers read ``[redacted]`` (or ``Bearer [redacted]``)."""
    body: Any
    """The JSON body, parsed (the text itself if it is not JSON)."""
    size: int
    """Body size in bytes."""


class ResponseTrace(TraceRecord, frozen=True):
    """The status line and headers of a successful (2xx) response."""

    layer: ClassVar[str] = "response"
    status: int
    """HTTP status code."""
    headers: dict[str, str]
    """Response headers (names lower-cased; ``set-cookie`` hidden)."""


class RetryTrace(TraceRecord, frozen=True):
    """An attempt failed before the first byte and will be retried (DESIGN §2a: retries
    happen before the first byte only); emitted once per retry, before the wait."""

    layer: ClassVar[str] = "retry"
    attempt: int
    """1-based number of the attempt that just failed."""
    status: int | None
    """Its HTTP status; ``None`` for a transport error (connection refused…)."""
    kind: str
    """The error kind that caused the retry (``rate_limit``, ``server``, ``connect``…)."""
    wait: float
    """Seconds slept before the next attempt."""


class FallbackTrace(TraceRecord, frozen=True):
    """A :class:`~modelwire.Fallback` moved on from the failed ``provider``/``model`` to
    ``next_provider``/``next_model`` (``restart``: after content, with a ``restart``
    event); emitted by the failed model's tracer, before the next one's records."""

    layer: ClassVar[str] = "fallback"
    attempt: int
    """1-based position of the model that failed in the fallback list."""
    provider: str
    model: str
    kind: str
    """The error kind that made it move on (``overloaded``, ``rate_limit``…)."""
    message: str
    """The error's text (redacted)."""
    next_provider: str
    next_model: str
    restart: bool


class ReadTrace(TraceRecord, frozen=True):
    """One network read (or one chunk given to ``replay``)."""

    layer: ClassVar[str] = "read"
    n: int
    """1 for the first read."""
    size: int
    """Bytes in this read."""
    offset: int
    """Bytes of the body before this read."""
    cut: ReadCut
    """Where the body stood when this read ended (see :data:`ReadCut`)."""
    utf8: tuple[int, int] | None
    """For a ``utf8`` cut: bytes of the character received, and bytes it needs."""
    in_string: bool | None
    """For a cut inside a ``data:`` line: whether it fell inside a JSON string
    (``None`` when not known)."""
    pending: int
    """Bytes of the line still waiting for its line break."""
    data: bytes
    """The bytes read (an API key the server echoed shows as ``[redacted]``)."""
    elapsed_ms: float | None = None
    """Milliseconds since the call started (live calls only)."""

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        # Bytes as text: what a person can read; a cut character shows as \\xNN.
        out["data"] = self.data.decode("utf-8", "backslashreplace")
        return out


class EndTrace(TraceRecord, frozen=True):
    """The HTTP body (or the replayed input) is complete."""

    layer: ClassVar[str] = "eof"
    size: int
    """Total body bytes."""
    reads: int
    """Number of reads."""
    cut: ReadCut
    """Where the body ended; anything but ``None`` means mid-event (``truncated_stream``)."""
    pending: int
    """Bytes of an unfinished last line."""


class SSETrace(TraceRecord, frozen=True):
    """One dispatched Server-Sent Event (``parent``: the read that completed it)."""

    layer: ClassVar[str] = "sse"
    event: str
    """The SSE event type (``"message"`` when the block had no ``event:`` line)."""
    data: str
    """The ``data`` payload, as the provider sent it (secrets redacted)."""
    sse_id: str = ""
    """The last event id in effect (``""`` if never set)."""
    retry: int | None = None
    """A ``retry`` field in this event, if any."""


class DeltaTrace(TraceRecord, frozen=True):
    """One normalized delta a wire API produced from an SSE payload."""

    layer: ClassVar[str] = "delta"
    delta: Delta
    """The delta (:mod:`modelwire._wire.deltas`)."""
    key: Any = None
    """The provider's key for the block (``"text"``, ``("tool", 4)``, a block index, an
    item id…); ``None`` for deltas without one (finish, usage, end of stream)."""
    content_index: int | None = None
    """The content index the assembler maps ``key`` to."""

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["delta"] = {"type": type(self.delta).__name__, **_plain(self.delta)}
        return out


class EventTrace(TraceRecord, frozen=True):
    """One model event (``parent``: the delta, or the error, that produced it)."""

    layer: ClassVar[str] = "event"
    event: Event
    """The event, as the stream yields it."""
    content_index: int | None = None
    """The event's ``content_index`` (``None`` for ``start``/``done``/``error``)."""

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["event"] = self.event.to_dict()
        return out


class ErrorTrace(TraceRecord, frozen=True):
    """A failure, recorded at the layer where it arose; the ``error`` event follows."""

    layer: ClassVar[str] = "error"
    at: ErrorLayer
    """``http`` (status, connection, timeout), ``sse`` (framing, UTF-8, size, a body
    ending mid-event), ``decode`` (a payload the wire API rejected, or a missing
    terminal signal), ``assemble`` (tool-call protocol, finish rules) or ``caller``
    (aborted)."""
    kind: str
    """The error kind (``malformed_chunk``, ``stream_interrupted``…)."""
    message: str
    """The error text (names the field path for ``malformed_chunk``)."""
    payload: str | None = None
    """The SSE payload that failed to decode (``at="decode"``)."""
    offset: int = 0
    """Body bytes received when the error arose (where a cut stream stopped)."""
    status: int | None = None
    """The HTTP status, for an error status."""


class MessageTrace(TraceRecord, frozen=True):
    """The final assistant message (``parent``: the terminal event)."""

    layer: ClassVar[str] = "message"
    message: AssistantMessage
    """The message, as ``await s.result()`` returns it."""


class TraceObserver(Protocol):
    """What ``trace=`` takes: called once per record, in order."""

    def __call__(self, record: TraceRecord, /) -> None: ...


class TraceLog:
    """A ready observer that keeps every record: ``records`` (in order).

    Pass one as ``trace=`` to see what every layer did with one call (the context
    and request sent, the network reads, SSE events, deltas, events, the final
    message, errors where they arose), e.g. to find where a provider's answer went
    wrong.

    Example:
        ```python
        import modelwire as mw
        from modelwire.testing import MockServer

        log = mw.TraceLog()
        with MockServer(["Hello!"]) as server:
            mw.complete_sync(server.model(), "Hi", trace=log)
        print(sorted({record.layer for record in log.records}))
        # ['context', 'delta', 'event', 'message', 'read', 'request', 'response', 'sse']
        print(log.of("event")[0].event.type)  # start
        ```
    """

    def __init__(self) -> None:
        self.records: list[TraceRecord] = []

    def __call__(self, record: TraceRecord, /) -> None:
        self.records.append(record)

    def of(self, layer: str) -> list[TraceRecord]:
        """The records of one layer (``"sse"``, ``"delta"``…).

        Args:
            layer: The layer's name, a :class:`TraceRecord` ``layer`` value.

        Returns:
            Its records, in order.
        """
        return [r for r in self.records if r.layer == layer]


def check_observer(trace: object) -> TraceObserver | None:
    """``trace`` if it is ``None`` or callable; a ``ConfigurationError`` otherwise."""
    if trace is None or callable(trace):
        return trace
    from ..errors import ConfigurationError

    raise ConfigurationError(
        f"trace must be a callable taking a trace record, got {type(trace).__name__}"
    )


def _plain(value: Any) -> Any:
    if isinstance(value, TraceRecord):
        return value.to_dict()
    try:
        return msgspec.to_builtins(value)
    except TypeError:
        return repr(value)


# --------------------------------------------------------------------------- tracer


class Tracer:
    """Turns the steps of one call into records for an observer.

    The observer hooks of one call: :class:`~modelwire._wire.pipeline.Pipeline` calls it at
    every step of its one loop, :class:`~modelwire._call.Call` for retries and the
    response, the client for the context and the request. It
    keeps what the records need and the layers do not: ids, the byte offset, the
    unfinished line (to say where a read ended), and the provider key → content
    index mapping, learnt from the events each delta produced.
    """

    def __init__(
        self, observer: TraceObserver, *, secrets: tuple[str, ...] = (), clock: bool = False
    ) -> None:
        self.observer: TraceObserver | None = observer
        self.secrets = tuple(s for s in secrets if s)
        self._reads = StreamRedactor(self.secrets) if self.secrets else None
        self._t0 = time.monotonic() if clock else None
        self._n: dict[str, int] = {}
        self._ci: dict[Hashable, int] = {}
        self.offset = 0
        self.reads = 0
        # The top record (request when live) and the latest position in the body:
        # the parents of the start event and of an error from the HTTP layer.
        self.origin: str | None = None
        self.last: str | None = None
        self._pos = ReadPosition()
        self._body_parent: str | None = None
        # Where a failure would arise right now (layer, parent id, payload), kept
        # up to date by the pipeline's trace hooks; and the parent of the next deltas.
        self.fault: tuple[ErrorLayer, str | None, str | None] = ("http", None, None)
        self.delta_parent: str | None = None

    # ------------------------------------------------------------------ plumbing

    def add_secrets(self, secrets: tuple[str, ...]) -> None:
        """Redact these too (credentials added when the request was sent); called
        before the first network read, so the read redactor starts afresh."""
        self.secrets = (*self.secrets, *(s for s in secrets if s))
        self._reads = StreamRedactor(self.secrets) if self.secrets else None

    def emit(self, record: TraceRecord) -> None:
        obs = self.observer
        if obs is None:
            return
        try:
            obs(record)
        except Exception as exc:
            # Telemetry must never break the call it observes.
            self.observer = None
            warnings.warn(
                f"the trace observer raised {exc!r}; it is detached for the rest of this call",
                RuntimeWarning,
                stacklevel=2,
            )

    def _id(self, layer: str) -> str:
        n = self._n.get(layer, 0) + 1
        self._n[layer] = n
        return f"{layer}-{n}"

    def redact(self, text: str) -> str:
        return redact(text, self.secrets) if self.secrets else text

    # ------------------------------------------------------------------ call

    def context(
        self,
        model: Model,
        context: Context,
        handoff: tuple[str, ...] = (),
        operation: str = "chat",
    ) -> None:
        """The call's conversation; ``handoff`` says what the handoff to ``model``
        leaves out (the client works it out); ``operation``: ``chat`` or ``embeddings``."""
        self.emit(ContextTrace(id="context", api=model.api, provider=model.provider,
                               model=model.id, context=context, handoff=handoff,
                               operation=operation))  # fmt: skip
        self.origin = "context"

    def request(self, request: HTTPRequest) -> None:
        headers = {}
        for k, v in request.headers.items():
            shown = self.redact(v)
            if is_credential_header(k) and "[redacted]" not in shown:
                shown = "[redacted]"
            headers[k] = shown
        text = self.redact(request.body.decode("utf-8", "replace"))
        try:
            body: Any = msgspec.json.decode(text)
        except msgspec.DecodeError:
            body = text
        self.emit(RequestTrace(id="request", parent=self.origin, method=request.method,
                               url=redact_url(self.redact(request.url)), headers=headers, body=body,
                               size=len(request.body)))  # fmt: skip
        self.origin = self.last = "request"

    def response(self, status: int, headers: Sequence[tuple[str, str]]) -> None:
        shown = {k.lower(): self.redact(v) for k, v in headers
                 if k.lower() not in _HIDDEN_RESPONSE_HEADERS}  # fmt: skip
        self.emit(ResponseTrace(id="response", parent=self.origin, status=status, headers=shown))
        self.last = self._body_parent = "response"

    def retry(self, attempt: int, status: int | None, kind: str, wait: float) -> None:
        """A failed attempt that will be retried after ``wait`` seconds."""
        self.emit(RetryTrace(id=f"retry-{attempt}", parent="request", attempt=attempt,
                             status=status, kind=kind, wait=wait))  # fmt: skip

    def fallback(self, n: int, failed: Model, kind: str, text: str, nxt: Model, *, restart: bool) -> None:  # fmt: skip
        """A fallback moves on from ``failed`` (its ``n``-th model) to ``nxt``."""
        self.emit(FallbackTrace(id=f"fallback-{n}", parent=self.last, attempt=n, kind=kind,
                                provider=failed.provider, model=failed.id, message=self.redact(text),
                                next_provider=nxt.provider, next_model=nxt.id, restart=restart))  # fmt: skip

    # ------------------------------------------------------------------ bytes

    def read(self, data: bytes) -> str:
        """Record one read; returns its id (the parent of the events it completes)."""
        rid = self._id("read")
        self.reads += 1
        offset = self.offset
        self.offset += len(data)
        self._pos.track(data, offset == 0)
        cut, utf8, in_string = self._pos.where()
        elapsed = None if self._t0 is None else (time.monotonic() - self._t0) * 1000.0
        # A key a server echoes may be split over reads: the redactor remembers the
        # end of the reads before (modelwire._redact, the one rule).
        shown = self._reads.feed(data) if self._reads is not None else data
        self.emit(ReadTrace(id=rid, parent=self._body_parent, n=self.reads,
                            size=len(data), offset=offset, cut=cut, utf8=utf8,
                            in_string=in_string, pending=self._pos.pending_n, data=shown,
                            elapsed_ms=elapsed))  # fmt: skip
        self.last = rid
        return rid

    def eof(self) -> str:
        cut, _, _ = self._pos.where()
        self.emit(EndTrace(id="eof", parent=self.last, size=self.offset, reads=self.reads,
                           cut=cut, pending=self._pos.pending_n))  # fmt: skip
        self.last = "eof"
        return "eof"

    # ------------------------------------------------------------------ layers

    def sse(self, ev: Frame, parent: str | None, sse_id: str = "", retry: int | None = None) -> str:
        sid = self._id("sse")
        data = self.redact(ev.data.decode())  # the framing checked the UTF-8
        self.emit(SSETrace(id=sid, parent=parent, event=ev.event, data=data,
                           sse_id=sse_id, retry=retry))  # fmt: skip
        return sid

    def delta(self, d: Delta, parent: str | None, events: Sequence[Event]) -> str:
        """Record a delta and the events it produced; returns the delta's id."""
        did = self._id("delta")
        key = getattr(d, "key", _NO_KEY)
        ci: int | None = None
        if key is not _NO_KEY:
            for ev in events:
                c = getattr(ev, "content_index", None)
                if c is not None:
                    ci = self._ci[key] = c
                    break
            else:
                ci = self._ci.get(key)
        self.emit(DeltaTrace(id=did, parent=parent, delta=d,
                             key=None if key is _NO_KEY else key, content_index=ci))  # fmt: skip
        self.events(events, did)
        return did

    def events(self, events: Sequence[Event], parent: str | None) -> None:
        for ev in events:
            eid = self._id("event")
            self.emit(EventTrace(id=eid, parent=parent, event=ev,
                                 content_index=getattr(ev, "content_index", None)))  # fmt: skip
            message = getattr(ev, "message", None)
            if isinstance(message, AssistantMessage):
                self.emit(MessageTrace(id="message", parent=eid, message=message))

    def error(
        self, exc: StreamError, at: ErrorLayer, parent: str | None, payload: str | None = None
    ) -> str:
        eid = self._id("error")
        self.emit(ErrorTrace(id=eid, parent=parent, at=at, kind=exc.kind, message=exc.message,
                             payload=None if payload is None else self.redact(payload),
                             offset=self.offset, status=exc.status))  # fmt: skip
        return eid
