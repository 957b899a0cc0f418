"""Inbound half of the ``anthropic-messages`` API: stream events → normalized deltas.

Reference: the streaming page of the Anthropic docs
(``/en/docs/build-with-claude/streaming``), see the package docstring.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..._wire.deltas import (
    BlockComplete,
    BlockEnd,
    BlockSignature,
    BlockStart,
    CitationDelta,
    Delta,
    EndOfStream,
    Finish,
    ResponseMeta,
    TextDelta,
    ThinkingDelta,
    ToolCallArguments,
    ToolCallDelta,
    UsageUpdate,
)
from ..._wire.sse import Frame
from ..._wire.sse._frames import Run, frames_of, run_values
from ...errors import MalformedChunkError, TruncatedStreamError
from .._codec import first_sse_json
from .._common import Count, decode_json, decoder_for, dumps, in_band_error
from ._whole import WHOLE, Whole, citation, whole_kind
from .spec import EVENTS, REFUSAL, STOP_REASONS

__all__ = ["AnthropicDecoder", "recognizes"]


# --------------------------------------------------------------------------- inbound
# Typed schemas for the fields used only: unknown fields are ignored, so
# ``service_tier``, ``cache_creation``, ``iterations``, ``context_management``,
# ``container``, ``caller``… never break a stream.


class _Usage(msgspec.Struct, gc=False):
    # input_tokens already excludes cache reads and writes (prompt-caching docs:
    # "total input tokens = input_tokens + cache_creation + cache_read").
    input_tokens: Count | None = None
    output_tokens: Count | None = None
    cache_read_input_tokens: Count | None = None
    cache_creation_input_tokens: Count | None = None


class _Message(msgspec.Struct, gc=False):
    id: str | None = None
    model: str | None = None
    usage: _Usage | None = None
    # Programmatic tool calling (code execution calling client tools) may send
    # blocks already complete, and the stop_reason, in ``message_start`` itself,
    # sometimes followed by nothing but ``message_stop``. Blocks stay raw: only
    # the kinds modelwire surfaces are validated (``_start_content``).
    content: list[msgspec.Raw] | None = None
    stop_reason: str | None = None


class _Block(msgspec.Struct, gc=False):
    type: str
    id: str | None = None
    name: str | None = None
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    data: str | None = None
    input: Any = None
    # A text block may start with its citations (``[]`` while streaming, whole in
    # message_start content); each is kept exactly as received.
    citations: list[msgspec.Raw] | None = None
    # Programmatic tool calling: the code execution that made a client tool call
    # (empty: absent), kept as received as the call's signature to go back with it.
    caller: msgspec.Raw = msgspec.Raw()


class _Caller(msgspec.Struct, gc=False):
    type: str | None = None


class _Delta(msgspec.Struct, gc=False):
    # One shape for both ``content_block_delta.delta`` (typed) and
    # ``message_delta.delta`` (stop_reason).
    type: str | None = None
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    partial_json: str | None = None
    stop_reason: str | None = None
    # citations_delta, kept as received (msgspec has no ``Raw | None``: empty = absent).
    citation: msgspec.Raw = msgspec.Raw()
    content: str | None = None  # compaction_delta: summary text to append
    encrypted_content: str | None = None  # compaction_delta: replaces the earlier value


class _Error(msgspec.Struct, gc=False):
    type: str | None = None
    message: str | None = None


class _Event(msgspec.Struct, gc=False):
    type: str
    index: Count | None = None
    message: _Message | None = None
    content_block: _Block | None = None
    delta: _Delta | None = None
    usage: _Usage | None = None
    error: _Error | None = None
    request_id: str | None = None  # on an error event, as on an error response


class _Loose(msgspec.Struct, gc=False):
    # Second look at a payload that failed typed validation: only the tags.
    type: Any = None
    index: Any = None
    content_block: Any = None
    delta: Any = None


class _Head(msgspec.Struct, gc=False):
    type: str


class _RawStart(msgspec.Struct, gc=False):
    # content_block_start of a block kept whole: its bytes exactly as received.
    index: Count
    content_block: msgspec.Raw


_head_decoder = decoder_for(_Head)
_caller_decoder = decoder_for(_Caller)
_block_decoder = decoder_for(_Block)
_event_decoder = decoder_for(_Event)
_decode_event = _event_decoder.decode
_event_lines = _event_decoder.decode_lines
_loose_decoder = decoder_for(_Loose)
_raw_start_decoder = decoder_for(_RawStart)
# Block types that stream into content. Every other block is kept whole
# (_whole_kind): provider-run tool calls and results, and everything else —
# compaction, container_upload, types added later — as an opaque ProviderItem.
_BLOCK_KINDS = {"text": "text", "thinking": "thinking", "redacted_thinking": "thinking",
                "tool_use": "tool"}  # fmt: skip
# Delta type → the block kind it belongs to; others (types added later) are ignored.
_DELTA_KINDS = {"text_delta": "text", "thinking_delta": "thinking",
                "signature_delta": "thinking", "input_json_delta": "tool",
                "citations_delta": "text", "compaction_delta": "item"}  # fmt: skip


def _caller(raw: msgspec.Raw) -> str | None:
    """A tool call's ``caller`` as received, when code execution made the call; a
    direct call (``{"type": "direct"}``, the default when absent) keeps none, as does
    a shape this version does not know (ignored, like any unknown field)."""
    if not raw:
        return None
    try:
        kind = _caller_decoder.decode(bytes(raw)).type
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    return None if kind == "direct" else bytes(raw).decode()


def _usage(u: _Usage) -> UsageUpdate:
    # Counts are cumulative; a null/absent count leaves the earlier value.
    return UsageUpdate(
        u.input_tokens, u.output_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens
    )


def _finish(reason: str) -> Finish:
    stop = STOP_REASONS.get(reason)
    if stop is not None:
        return Finish(stop, reason)
    if reason == REFUSAL:  # DESIGN §2a: a refusal is a content_filter error
        text = "the model declined to respond (stop_reason refusal)"
        return Finish("error", reason, "content_filter", text)
    text = f"the provider stopped with an unknown stop_reason {reason!r}"
    return Finish("error", reason, "provider_stream", text)


def _missing(path: str) -> MalformedChunkError:
    return MalformedChunkError(f"malformed chunk: {path} is missing")


class AnthropicDecoder:
    """Per-response decoder: SSE events → normalized deltas keyed by block ``index``."""

    __slots__ = ("_kinds", "_n_start", "_names", "_pending_input", "_stopped",
                 "_streamed_input", "_whole")  # fmt: skip

    def __init__(self) -> None:
        self._n_start = 0  # blocks message_start carried (indexes 0…n-1)
        self._kinds: dict[int, str] = {}
        self._stopped: set[int] = set()
        # tool_use input given whole in content_block_start (not streamed).
        self._pending_input: dict[int, str] = {}
        self._streamed_input: set[int] = set()
        self._whole: dict[int, Whole] = {}  # open blocks kept whole, by index
        self._names: dict[str, str] = {}  # server call id → tool name (for its result)

    def decode(self, frame: Frame) -> list[Delta]:
        data = frame.data
        try:
            ev = _decode_event(data)
        except (msgspec.ValidationError, msgspec.DecodeError):
            handled = self._fallback(data)
            if handled is not None:
                return handled
            decode_json(data, _event_decoder)  # raises MalformedChunkError with the field path
            raise  # pragma: no cover - decode_json raised already
        t = ev.type
        if t == "content_block_delta":
            # The hot path (nearly every event of a stream): a well-formed text,
            # thinking or tool-input delta to an open block of its kind is handled
            # inline; everything else, errors included, by _block_delta.
            d = ev.delta
            i = ev.index
            if i is not None and d is not None and i not in self._stopped:
                dt = d.type
                if dt == "text_delta":
                    if d.text is not None and self._kinds.get(i) == "text":
                        return [TextDelta(i, d.text)]
                elif dt == "input_json_delta":
                    pj = d.partial_json
                    if pj is not None and self._kinds.get(i) == "tool":
                        if pj:
                            self._streamed_input.add(i)
                        return [ToolCallDelta(i, None, None, pj)]
                elif dt == "thinking_delta":
                    if d.thinking is not None and self._kinds.get(i) == "thinking":
                        return [ThinkingDelta(i, d.thinking)]
            return self._block_delta(ev)
        if t == "content_block_start":
            return self._block_start(ev, data)
        if t == "content_block_stop":
            return self._block_stop(ev)
        if t == "message_start":
            msg = ev.message
            if msg is None:
                raise _missing("message")
            out: list[Delta] = [ResponseMeta(msg.id, msg.model)]
            if msg.content:
                self._start_content(msg.content, out)
            if msg.stop_reason is not None:
                # A later message_delta's stop_reason wins (the last Finish does).
                out.append(_finish(msg.stop_reason))
            if msg.usage is not None:
                out.append(_usage(msg.usage))
            return out
        if t == "message_delta":
            return self._message_delta(ev)
        if t == "message_stop":
            return [EndOfStream()]
        if t == "error":
            err = ev.error or _Error()
            message = err.message or "the provider reported an error"
            raise in_band_error(message, type_=err.type, request_id=ev.request_id)
        return []  # ping, and event types added after this adapter was written

    # The pipeline may hand decode_batch a ``Run`` (frames joined, one decode_lines).
    takes_runs = True

    def decode_batch(self, frames: list[Frame], out: list[Delta]) -> None:
        """:meth:`decode` of each frame of one read, appended to ``out`` (one call per
        read: the pipeline's batched hand-off). A text, thinking or tool-input delta to
        an open block of its kind is mapped here, as :meth:`decode`'s hot path does;
        every other frame (a few per stream) is handed to :meth:`decode`, which decodes
        it again. A frame that fails adds nothing to ``out``. A :class:`Run` is decoded
        in one ``decode_lines`` call; when that fails, or yields another number of
        events than the run has frames, its frames are decoded one by one."""
        decode, append = self.decode, out.append
        # Mutated in place, never replaced.
        kinds, stopped, streamed = self._kinds, self._stopped, self._streamed_input
        evs: list[_Event] | tuple[_Event] | None
        for frame in frames:
            parts: list[Frame] | None = None
            if frame.__class__ is Run:
                evs = run_values(frame, _event_lines)
                if evs is None:
                    self.decode_batch(frames_of(frame), out)
                    continue
            else:
                try:
                    evs = (_decode_event(frame.data),)
                except (msgspec.ValidationError, msgspec.DecodeError):
                    out += decode(frame)  # the fallback, or the error with the field path
                    continue
            for n, ev in enumerate(evs):
                if ev.type == "content_block_delta":
                    d = ev.delta
                    i = ev.index
                    if i is not None and d is not None and i not in stopped:
                        dt = d.type
                        if dt == "text_delta":
                            if d.text is not None and kinds.get(i) == "text":
                                append(TextDelta(i, d.text))
                                continue
                        elif dt == "input_json_delta":
                            pj = d.partial_json
                            if pj is not None and kinds.get(i) == "tool":
                                if pj and i not in streamed:
                                    streamed.add(i)
                                append(ToolCallDelta(i, None, None, pj))
                                continue
                        elif dt == "thinking_delta":
                            if d.thinking is not None and kinds.get(i) == "thinking":
                                append(ThinkingDelta(i, d.thinking))
                                continue
                if frame.__class__ is Run:
                    if parts is None:
                        parts = frames_of(frame)
                    out += decode(parts[n])
                else:
                    out += decode(frame)

    def _fallback(self, data: bytes) -> list[Delta] | None:
        """A payload that failed typed validation but is fine anyway: an unknown
        event or delta type whose fields clash with ours (ignored), or the start of a
        block kept whole whose fields do (kept). ``None``: a real error."""
        try:
            loose = _loose_decoder.decode(data)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return None
        t = loose.type
        if not isinstance(t, str):
            return None
        if t not in EVENTS:
            return []
        if t == "content_block_start" and isinstance(loose.content_block, dict):
            block_type = loose.content_block.get("type")
            if not isinstance(block_type, str) or block_type in _BLOCK_KINDS:
                return None
            start = decode_json(data, _raw_start_decoder)
            return self._open_whole(start.index, block_type, bytes(start.content_block),
                                    "content_block")  # fmt: skip
        if t == "content_block_delta" and isinstance(loose.delta, dict):
            return [] if loose.delta.get("type") not in _DELTA_KINDS else None
        return None

    def _index(self, ev: _Event) -> int:
        if ev.index is None:
            raise _missing("index")
        return ev.index

    def _start_content(self, content: list[msgspec.Raw], out: list[Delta]) -> None:
        """Blocks already complete in ``message_start``: block ``k`` of ``content``
        is content index ``k`` of the message (the streaming docs: ``index`` is the
        block's position in the final ``content``), so blocks streamed after them
        carry the next indexes and keep their order."""
        self._n_start = len(content)
        for k, raw in enumerate(content):
            where = f"message.content[{k}]"
            head = decode_json(raw, _head_decoder, "message_start", f"{where}.")
            if head.type not in _BLOCK_KINDS:
                # server_tool_use, code_execution_tool_result… kept whole.
                out.extend(self._open_whole(k, head.type, bytes(raw), where, "message_start"))
            else:
                block = decode_json(raw, _block_decoder, "message_start", f"{where}.")
                out.extend(self._open_block(k, block, where, "message_start"))
            out.extend(self._stop_block(k))

    def _block_start(self, ev: _Event, data: bytes) -> list[Delta]:
        i = self._index(ev)
        block = ev.content_block
        if block is None:
            raise _missing("content_block")
        if block.type not in _BLOCK_KINDS:
            raw = decode_json(data, _raw_start_decoder).content_block
            return self._open_whole(i, block.type, bytes(raw), "content_block")
        return self._open_block(i, block, "content_block")

    def _claim(self, i: int) -> None:
        if i in self._kinds:
            where_from = " in message_start" if i < self._n_start else ""
            raise MalformedChunkError(
                f"malformed chunk: content_block_start for index {i}, which already "
                f"started{where_from}"
            )

    def _open_block(self, i: int, block: _Block, where: str, what: str = "chunk") -> list[Delta]:
        self._claim(i)
        kind = _BLOCK_KINDS[block.type]
        self._kinds[i] = kind
        if kind == "text":
            out: list[Delta] = [BlockStart(i, "text")]
            for k, raw in enumerate(block.citations or ()):
                out.append(CitationDelta(i, citation(raw, f"{where}.citations[{k}]", what)))
            if block.text:
                out.append(TextDelta(i, block.text))
            return out
        if kind == "thinking":
            if block.type == "redacted_thinking":
                # The encrypted reasoning is kept as the block's signature.
                if block.data is None:
                    raise _missing(f"{where}.data")
                return [BlockStart(i, "thinking", signature=block.data, redacted=True)]
            out = [BlockStart(i, "thinking", signature=block.signature or None)]
            if block.thinking:
                out.append(ThinkingDelta(i, block.thinking))
            return out
        if block.input is not None and not isinstance(block.input, dict):
            raise MalformedChunkError(
                f"malformed chunk: {where}.input must be an object "
                f"(got {type(block.input).__name__})"
            )
        if block.input:
            self._pending_input[i] = dumps(block.input).decode()
        caller = _caller(block.caller)
        return [BlockStart(i, "tool_call", id=block.id, name=block.name, signature=caller)]

    def _open_whole(
        self, i: int, block_type: str, raw: bytes, where: str, what: str = "chunk"
    ) -> list[Delta]:
        """A block kept whole: validated now, emitted at its stop (when its deltas —
        a server call's streamed input, a compaction summary — are in)."""
        self._claim(i)
        kind = whole_kind(block_type)
        self._kinds[i] = kind
        self._whole[i] = Whole(kind, block_type, raw, where, what, self._names)
        return []

    def _block_delta(self, ev: _Event) -> list[Delta]:
        i = self._index(ev)
        d = ev.delta
        if d is None:
            raise _missing("delta")
        kind = self._kinds.get(i)
        if kind is None or i in self._stopped:
            state = "never started" if kind is None else "already stopped"
            raise MalformedChunkError(
                f"malformed chunk: content_block_delta for index {i}, which {state}"
            )
        dt = d.type
        if dt is None:
            raise _missing("delta.type")
        want = _DELTA_KINDS.get(dt)
        if want is None:
            return []  # delta types added later
        if kind in WHOLE:
            return self._whole_delta(i, d, dt)
        if want != kind:
            raise MalformedChunkError(
                f"malformed chunk: delta.type {dt!r} sent for block {i}, a {kind} block"
            )
        if dt == "text_delta":
            if d.text is None:
                raise _missing("delta.text")
            return [TextDelta(i, d.text)]
        if dt == "citations_delta":
            if not d.citation:
                raise _missing("delta.citation")
            return [CitationDelta(i, citation(d.citation, "delta.citation"))]
        if dt == "thinking_delta":
            if d.thinking is None:
                raise _missing("delta.thinking")
            return [ThinkingDelta(i, d.thinking)]
        if dt == "signature_delta":
            if d.signature is None:
                raise _missing("delta.signature")
            # The signature arrives whole, just before content_block_stop.
            return [BlockSignature(i, d.signature)]
        if d.partial_json is None:
            raise _missing("delta.partial_json")
        if d.partial_json:
            self._streamed_input.add(i)
        return [ToolCallDelta(i, None, None, d.partial_json)]

    def _whole_delta(self, i: int, d: _Delta, dt: str) -> list[Delta]:
        w = self._whole[i]
        if dt == "input_json_delta" and w.kind != "result":
            # A server call's input (and that of a block type added later) streams.
            if d.partial_json is None:
                raise _missing("delta.partial_json")
            w.parts.append(d.partial_json)
            return []
        if dt == "compaction_delta" and w.kind == "item":
            # The summary streams in pieces; encrypted_content replaces the earlier one.
            if d.content is not None:
                w.summary.append(d.content)
            if d.encrypted_content is not None:
                w.encrypted = d.encrypted_content
            return []
        if w.kind == "item":
            return []  # a block type added later: kept as it started, its deltas unknown
        raise MalformedChunkError(
            f"malformed chunk: delta.type {dt!r} sent for block {i}, a {w.type} block"
        )

    def _block_stop(self, ev: _Event) -> list[Delta]:
        return self._stop_block(self._index(ev))

    def _stop_block(self, i: int) -> list[Delta]:
        kind = self._kinds.get(i)
        if kind is None or i in self._stopped:
            state = "never started" if kind is None else "already stopped"
            raise MalformedChunkError(
                f"malformed chunk: content_block_stop for index {i}, which {state}"
            )
        self._stopped.add(i)
        if kind in WHOLE:
            return [BlockComplete(i, self._whole.pop(i).complete(i, self._names))]
        pending = self._pending_input.pop(i, None)
        if pending is not None and i not in self._streamed_input:
            return [ToolCallArguments(i, pending), BlockEnd(i)]
        return [BlockEnd(i)]

    def _message_delta(self, ev: _Event) -> list[Delta]:
        out: list[Delta] = []
        reason = ev.delta.stop_reason if ev.delta is not None else None
        if reason is not None:
            out.append(_finish(reason))
        if ev.usage is not None:
            out.append(_usage(ev.usage))
        return out

    def end(self) -> list[Delta]:
        # Only reached when message_stop never arrived (it ends the stream in decode).
        raise TruncatedStreamError(
            "the stream ended without message_stop (the response may be incomplete)"
        )


def recognizes(payload: bytes) -> bool:
    """A Messages body: its first SSE payload's ``type`` is a Messages stream event
    (``error`` excepted: the Responses API has one too)."""
    obj = first_sse_json(payload)
    t = obj.get("type") if isinstance(obj, dict) else None
    return isinstance(t, str) and t != "error" and t in EVENTS
