"""Inbound half of ``cohere-chat``: the v2 chat stream's events → normalized deltas.

Reference: https://docs.cohere.com/reference/chat-stream and
https://docs.cohere.com/docs/streaming. Every payload carries its ``type`` (also the
SSE ``event:`` line); the shapes differ by type, so each type has its own struct
(a tagged union) and a field is checked where it is read:

* ``message-start``: ``id`` and ``delta.message`` with ``role`` and *arrays*
  ``content: []``, ``tool_calls: []``, ``citations: []``;
* ``content-start`` / ``content-delta`` / ``content-end``: ``index`` and
  ``delta.message.content`` an *object*, ``{"type": "text"|"thinking", "text"|"thinking"}``;
* ``tool-plan-delta``: ``delta.message.tool_plan`` text, read as the text said
  before the calls (replayed as ``tool_plan``, see ``encode``);
* ``tool-call-start`` / ``-delta`` / ``-end``: ``index`` and ``delta.message.tool_calls``
  an object ``{"id", "type": "function", "function": {"name", "arguments"}}``,
  arguments streamed as text;
* ``citation-start`` / ``citation-end``: ``delta.message.citations`` an object
  ``{"start", "end", "text", "sources": [...], "type"}``;
* ``message-end``: ``delta.finish_reason``, ``delta.error`` and ``delta.usage``
  (``billed_units`` and ``tokens``, each ``{"input_tokens", "output_tokens"}``).

A real stream then sends ``data: [DONE]``: the end, as is the end of the body after
``message-end``. A body without ``message-end`` is ``truncated_stream``.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeAlias

import msgspec

from ..._wire.deltas import (
    BlockEnd,
    BlockStart,
    CitationDelta,
    Delta,
    EndOfStream,
    Finish,
    ResponseMeta,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UsageUpdate,
)
from ..._wire.sse import Frame
from ...errors import (
    MalformedChunkError,
    StreamError,
    TruncatedStreamError,
    error_class_for_kind,
)
from ...types import Citation
from .._codec import first_sse_json
from .._common import Count, decode_json, decoder_for, is_context_overflow
from .spec import (
    CITATION_SOURCE_KINDS,
    CONTENT_KINDS,
    DONE,
    EVENTS,
    FAILED_FINISH_REASONS,
    FINISH_REASONS,
)

__all__ = ["CohereDecoder", "citations_of", "recognizes"]

#: Token counts: non-negative numbers (the reference types them as doubles).
Tokens = Annotated[float, msgspec.Meta(ge=0)]


class _S(msgspec.Struct, gc=False, tag_field="type"):
    pass


# ------------------------------------------------------------------ message-start


class _StartMessage(msgspec.Struct, gc=False):
    role: str | None = None
    # Arrays here (empty in every recorded stream), objects in the later events.
    content: list[Any] | None = None
    tool_plan: str | None = None
    tool_calls: list[Any] | None = None
    citations: list[Any] | None = None


class _StartDelta(msgspec.Struct, gc=False):
    message: _StartMessage | None = None


class _MessageStart(_S, tag="message-start"):
    id: str | None = None
    delta: _StartDelta | None = None


# ------------------------------------------------------------------ content


class _Content(msgspec.Struct, gc=False):
    type: str | None = None
    text: str | None = None
    thinking: str | None = None


class _ContentMessage(msgspec.Struct, gc=False):
    content: _Content | None = None


class _ContentDelta(msgspec.Struct, gc=False):
    message: _ContentMessage | None = None


class _ContentStart(_S, tag="content-start"):
    index: Count = 0
    delta: _ContentDelta | None = None


class _ContentPiece(_S, tag="content-delta"):
    index: Count = 0
    delta: _ContentDelta | None = None


class _ContentEnd(_S, tag="content-end"):
    index: Count = 0


# ------------------------------------------------------------------ tool plan and calls


class _PlanMessage(msgspec.Struct, gc=False):
    tool_plan: str | None = None


class _PlanDelta(msgspec.Struct, gc=False):
    message: _PlanMessage | None = None


class _ToolPlanDelta(_S, tag="tool-plan-delta"):
    delta: _PlanDelta | None = None


class _Function(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | None = None


class _Call(msgspec.Struct, gc=False):
    id: str | None = None
    type: str | None = None
    function: _Function | None = None


class _CallMessage(msgspec.Struct, gc=False):
    # An object in every recorded stream; a one-element array is read the same way.
    tool_calls: _Call | list[_Call] | None = None


class _CallDelta(msgspec.Struct, gc=False):
    message: _CallMessage | None = None


class _ToolCallStart(_S, tag="tool-call-start"):
    index: Count = 0
    delta: _CallDelta | None = None


class _ToolCallPiece(_S, tag="tool-call-delta"):
    index: Count = 0
    delta: _CallDelta | None = None


class _ToolCallEnd(_S, tag="tool-call-end"):
    index: Count = 0


# ------------------------------------------------------------------ citations


class _CiteMessage(msgspec.Struct, gc=False):
    # Kept as received (an object, or an array of them): what is replayed to Cohere.
    citations: msgspec.Raw = msgspec.Raw()


class _CiteDelta(msgspec.Struct, gc=False):
    message: _CiteMessage | None = None


class _CitationStart(_S, tag="citation-start"):
    index: Count = 0
    delta: _CiteDelta | None = None


class _CitationEnd(_S, tag="citation-end"):
    index: Count = 0


class _Source(msgspec.Struct, gc=False):
    type: str | None = None
    id: str | None = None
    document: dict[str, Any] | None = None
    tool_output: dict[str, Any] | None = None


class _Cite(msgspec.Struct, gc=False):
    start: Count | None = None
    end: Count | None = None
    text: str | None = None
    sources: list[_Source] | None = None
    type: str | None = None
    content_index: Count | None = None


# ------------------------------------------------------------------ message-end


class _Counts(msgspec.Struct, gc=False):
    input_tokens: Tokens | None = None
    output_tokens: Tokens | None = None


class _Usage(msgspec.Struct, gc=False):
    billed_units: _Counts | None = None
    tokens: _Counts | None = None
    cached_tokens: Tokens | None = None


class _EndDelta(msgspec.Struct, gc=False):
    finish_reason: str | None = None
    error: str | None = None
    usage: _Usage | None = None


class _MessageEnd(_S, tag="message-end"):
    id: str | None = None
    delta: _EndDelta | None = None


_Event: TypeAlias = (
    _MessageStart | _ContentStart | _ContentPiece | _ContentEnd | _ToolPlanDelta
    | _ToolCallStart | _ToolCallPiece | _ToolCallEnd | _CitationStart | _CitationEnd
    | _MessageEnd
)  # fmt: skip


class _Head(msgspec.Struct, gc=False):
    type: Any = None


# A union is not a ``type[T]`` to mypy: the decoder is built directly.
_event_decoder: msgspec.json.Decoder[_Event] = msgspec.json.Decoder(_Event)
_decode_event = _event_decoder.decode
_head_decoder = decoder_for(_Head)
_cite_decoder = decoder_for(_Cite)
_cites_decoder = decoder_for(list[msgspec.Raw])
_PLAN_KEY = ("plan",)


def _count(value: float | None) -> int | None:
    return None if value is None else int(value)


def citations_of(raw: bytes, where: str) -> list[Citation]:
    """A Cohere citation object as modelwire citations: one per source (a
    citation may rest on several), each keeping the whole object as ``raw``."""
    c = decode_json(raw, _cite_decoder, "chunk", f"{where}.")
    text = raw.decode("utf-8")
    sources = c.sources or [_Source()]
    out: list[Citation] = []
    for s in sources:
        doc = s.document or {}
        url, title = doc.get("url"), doc.get("title")
        kind = CITATION_SOURCE_KINDS.get(s.type or "", "other")
        if kind == "document" and isinstance(url, str) and url.startswith(("https://", "http://")):
            kind = "url"
        out.append(Citation(
            kind=kind, url=url if isinstance(url, str) else None,
            title=title if isinstance(title, str) else None, cited_text=c.text,
            document=s.id, start=c.start, end=c.end, raw=text,
        ))  # fmt: skip
    return out


def _missing(path: str) -> MalformedChunkError:
    return MalformedChunkError(f"malformed chunk: {path} is missing")


class CohereDecoder:
    """Per-response decoder: SSE events → deltas. Content blocks are keyed
    ``("content", index)``, tool calls ``("tool", index)``, the tool plan ``("plan",)``."""

    __slots__ = ("_ended", "_kinds", "_text_key")

    def __init__(self) -> None:
        self._ended = False
        # content index → "text" | "thinking" | "" (a content type added later: ignored)
        self._kinds: dict[int, str] = {}
        self._text_key: tuple[Any, ...] | None = None  # the text block citations attach to

    def decode(self, frame: Frame) -> list[Delta]:
        data = frame.data
        try:
            ev = _decode_event(data)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return self._fallback(data)
        if isinstance(ev, _ContentPiece):
            return self._content_delta(ev)
        if isinstance(ev, _ToolCallPiece):
            call = self._call(ev.delta, "tool-call-delta")
            fn = call.function or _Function()
            return [ToolCallDelta(("tool", ev.index), None, None, fn.arguments or "")]
        if isinstance(ev, _ToolPlanDelta):
            plan = ev.delta.message.tool_plan if ev.delta and ev.delta.message else None
            if plan is None:
                raise _missing("delta.message.tool_plan")
            self._text_key = _PLAN_KEY
            return [TextDelta(_PLAN_KEY, plan)] if plan else []
        if isinstance(ev, _ContentStart):
            return self._content_start(ev)
        if isinstance(ev, _ContentEnd):
            return [BlockEnd(("content", ev.index))]
        if isinstance(ev, _ToolCallStart):
            call = self._call(ev.delta, "tool-call-start")
            fn = call.function or _Function()
            if not call.id or not fn.name:
                raise _missing(
                    "delta.message.tool_calls." + ("id" if not call.id else "function.name")
                )
            return [ToolCallDelta(("tool", ev.index), call.id, fn.name, fn.arguments or "")]
        if isinstance(ev, _ToolCallEnd):
            return [BlockEnd(("tool", ev.index))]
        if isinstance(ev, _CitationStart):
            return self._citation(ev)
        if isinstance(ev, _MessageStart):
            return [ResponseMeta(response_id=ev.id)]
        if isinstance(ev, _MessageEnd):
            return self._message_end(ev)
        return []  # citation-end: the citation came whole in its start

    def _fallback(self, data: bytes) -> list[Delta]:
        """A payload that is not one of the known events: the ``[DONE]`` after
        ``message-end``, or an event type added later (ignored); else the error
        naming the field path."""
        if data.strip() == DONE.encode():
            # The terminal signal after message-end; before it, the stream is cut.
            return [EndOfStream()] if self._ended else []
        head = decode_json(data, _head_decoder)
        if head.type is None:
            raise _missing("type")
        if not isinstance(head.type, str):
            raise MalformedChunkError("malformed chunk: type must be a string")
        if head.type not in EVENTS:
            return []  # forward compatible (debug events, types added later)
        decode_json(data, _event_decoder)  # raises with the field path
        raise AssertionError("unreachable")  # pragma: no cover

    def _content_start(self, ev: _ContentStart) -> list[Delta]:
        content = ev.delta.message.content if ev.delta and ev.delta.message else None
        if content is None:
            raise _missing("delta.message.content")
        kind = CONTENT_KINDS.get(content.type or "")
        if kind is None:
            self._kinds[ev.index] = ""  # a content type added later: ignored, deltas too
            return []
        key = ("content", ev.index)
        self._kinds[ev.index] = kind
        out: list[Delta] = [BlockStart(key, kind)]
        if kind == "text":
            self._text_key = key
            if content.text:
                out.append(TextDelta(key, content.text))
        elif content.thinking:
            out.append(ThinkingDelta(key, content.thinking))
        return out

    def _content_delta(self, ev: _ContentPiece) -> list[Delta]:
        content = ev.delta.message.content if ev.delta and ev.delta.message else None
        if content is None:
            raise _missing("delta.message.content")
        i = ev.index
        kind = self._kinds.get(i)
        if kind == "":
            return []
        if kind is None:
            if content.text is None and content.thinking is None:
                return []
            # No content-start (not seen from Cohere, sent by look-alike servers):
            # the field present says the kind.
            kind = self._kinds[i] = "text" if content.text is not None else "thinking"
        key = ("content", i)
        if kind == "text":
            if content.text is None:
                raise _missing("delta.message.content.text")
            self._text_key = key
            return [TextDelta(key, content.text)]
        if content.thinking is None:
            raise _missing("delta.message.content.thinking")
        return [ThinkingDelta(key, content.thinking)]

    def _call(self, delta: _CallDelta | None, what: str) -> _Call:
        calls = delta.message.tool_calls if delta and delta.message else None
        if isinstance(calls, list):
            if len(calls) != 1:
                raise MalformedChunkError(
                    f"malformed chunk: delta.message.tool_calls of a {what} must hold one "
                    f"call (got {len(calls)})"
                )
            calls = calls[0]
        if calls is None:
            raise _missing("delta.message.tool_calls")
        return calls

    def _citation(self, ev: _CitationStart) -> list[Delta]:
        raw = ev.delta.message.citations if ev.delta and ev.delta.message else msgspec.Raw()
        if not raw:
            raise _missing("delta.message.citations")
        where = "delta.message.citations"
        key = self._text_key or ("content", 0)
        if not bytes(raw).lstrip().startswith(b"["):
            return [CitationDelta(key, c) for c in citations_of(bytes(raw), where)]
        items = decode_json(raw, _cites_decoder, "chunk", f"{where}.")
        return [CitationDelta(key, c) for n, item in enumerate(items)
                for c in citations_of(bytes(item), f"{where}[{n}]")]  # fmt: skip

    def _message_end(self, ev: _MessageEnd) -> list[Delta]:
        d = ev.delta
        if d is None:
            raise _missing("delta")
        reason = d.finish_reason
        if reason is None:
            raise _missing("delta.finish_reason")
        out: list[Delta] = []
        u = d.usage
        if u is not None:
            # What Cohere bills (billed_units) is the usage: tokens also counts what
            # Cohere adds itself and does not bill (pricing docs, "billed" tokens).
            counts = u.billed_units or u.tokens
            if counts is not None:
                out.append(UsageUpdate(input=_count(counts.input_tokens),
                                       output=_count(counts.output_tokens)))  # fmt: skip
        if d.error and reason not in FINISH_REASONS:
            # The provider's own text may quote a secret: raised, so the pipeline
            # redacts it (a Finish's text would reach the trace as it is).
            raise _failure(reason, d.error)
        out.append(_finish(reason))
        # The stream ends at the [DONE] that follows, or at the end of the body.
        self._ended = True
        return out

    def end(self) -> list[Delta]:
        if not self._ended:
            raise TruncatedStreamError(
                "the Cohere stream ended without message-end (the response may be incomplete)"
            )
        return [EndOfStream()]


def _failed(reason: str) -> tuple[str, str]:
    return FAILED_FINISH_REASONS.get(
        reason, ("provider_stream", f"Cohere ended with an unknown finish_reason {reason!r}")
    )


def _finish(reason: str) -> Finish:
    stop = FINISH_REASONS.get(reason)
    if stop is not None:
        return Finish(stop, reason)
    kind, text = _failed(reason)
    return Finish("error", reason, kind, f"{text} (finish_reason {reason})")


def _failure(reason: str, error: str) -> StreamError:
    """A failed generation with Cohere's error text (``delta.error``)."""
    kind, text = _failed(reason)
    if kind == "provider_stream" and is_context_overflow(error):
        kind = "context_overflow"
    cls = error_class_for_kind(kind)
    assert issubclass(cls, StreamError)
    return cls(f"{text}: {error} (finish_reason {reason})", code=reason)


def recognizes(payload: bytes) -> bool:
    """A Cohere v2 body: its first SSE payload is one of its events, and a
    ``message-start`` carries ``delta.message`` as Cohere sends it."""
    obj = first_sse_json(payload)
    if not isinstance(obj, dict):
        return False
    t = obj.get("type")
    if not isinstance(t, str) or t not in EVENTS:
        return False
    if t != "message-start":
        return True
    delta = obj.get("delta")
    return isinstance(delta, dict) and isinstance(delta.get("message"), dict)
