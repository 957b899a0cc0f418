"""Bedrock ConverseStream events → normalized deltas.

Reference: the ConverseStream API reference
(https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html,
"Response Syntax") and the ``ConverseStreamOutput`` union of botocore's
``bedrock-runtime`` service model. Each AWS event-stream message is one frame
(:class:`~modelwire._wire.framing.eventstream.EventStreamDecoder`): ``frame.event`` is the
``:event-type`` header, ``frame.data`` the JSON payload::

    messageStart        {"role": "assistant"}
    contentBlockStart   {"contentBlockIndex", "start": {"toolUse": {"toolUseId", "name",
                         "type"}} | {"toolResult": {"toolUseId", "type", "status"}}}
    contentBlockDelta   {"contentBlockIndex", "delta": {"text"} | {"toolUse": {"input"}}
                         | {"toolResult": [{"text"} | {"json"}]} | {"citation": {"title",
                         "source", "sourceContent": [{"text"}], "location": {…}}}
                         | {"reasoningContent": {"text"} | {"signature"} | {"redactedContent"}}}
    contentBlockStop    {"contentBlockIndex"}
    messageStop         {"stopReason", "additionalModelResponseFields"}
    metadata            {"usage": {"inputTokens", "outputTokens", "totalTokens",
                         "cacheReadInputTokens", "cacheWriteInputTokens"},
                         "metrics": {"latencyMs"}}

Text and reasoning blocks have no ``contentBlockStart`` (only tool use and tool
results do): the first delta of an index opens its block.

Built-in tools that Bedrock runs itself (Amazon Nova's ``nova_grounding`` and
``nova_code_interpreter``, "Using built-in tools" in the Nova user guide) arrive as a
``toolUse`` whose start says ``"type": "server_tool_use"``, followed by a
``toolResult`` block: they become :class:`~modelwire.types.ServerToolCall` and
:class:`~modelwire.types.ServerToolResult` at ``contentBlockStop`` — never client
calls, so the stop reason is what Bedrock said. Their ``raw`` is the block as the
``Converse`` request takes it back (the ``ContentBlock`` union), its input and
result entries byte for byte. A ``citation`` delta is one
:class:`~modelwire.types.Citation` of the text block at its index; its ``raw`` is
the delta's JSON, which is a ``Citation`` of a ``citationsContent`` block as sent. ``metadata`` follows ``messageStop``, so
the stream ends at ``metadata`` (or at the end of the body after ``messageStop``);
a body without ``messageStop`` is ``truncated_stream``. Exceptions arrive in band as
``:message-type: exception`` messages (the framing names them
``exception:<type>``) with ``{"message": …}`` and become typed errors.

``inputTokens`` excludes the cache reads and writes, which Bedrock counts
separately (as Anthropic does), so it maps to ``Usage.input`` directly.
"""

from __future__ import annotations

import zlib
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
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UsageUpdate,
)
from ..._wire.sse import Frame
from ..._wire.sse._frames import Run, frames_of, run_values
from ...errors import MalformedChunkError, ProviderStreamError, StreamError, TruncatedStreamError
from ...types import Citation, ServerToolCall, ServerToolResult
from .._common import Count, decode_json, decoder_for, dumps, in_band_error
from .spec import FAILED_STOPS, STOP_REASONS

__all__ = ["EXCEPTION_STATUS", "BedrockDecoder", "exception_error", "recognizes"]


class _ToolUseStart(msgspec.Struct, gc=False):
    toolUseId: str
    name: str
    type: str | None = None  # "server_tool_use": Bedrock runs it (ToolUseBlockStart)


class _ToolResultStart(msgspec.Struct, gc=False):
    toolUseId: str
    type: str | None = None
    status: str | None = None  # "success" | "error"


class _Start(msgspec.Struct, gc=False):
    toolUse: _ToolUseStart | None = None
    toolResult: _ToolResultStart | None = None


class _BlockStart(msgspec.Struct, gc=False):
    contentBlockIndex: Count
    start: _Start


class _ToolUseDelta(msgspec.Struct, gc=False):
    input: str


class _Reasoning(msgspec.Struct, gc=False):
    text: str | None = None
    signature: str | None = None
    redactedContent: str | None = None  # a blob: base64 in JSON


class _Delta(msgspec.Struct, gc=False):
    text: str | None = None
    toolUse: _ToolUseDelta | None = None
    reasoningContent: _Reasoning | None = None
    # Kept verbatim: the raw entries and citation are what is replayed.
    toolResult: list[msgspec.Raw] | None = None
    citation: msgspec.Raw = msgspec.Raw()  # empty: absent


class _SourceText(msgspec.Struct, gc=False):
    text: str | None = None


class _Web(msgspec.Struct, gc=False):
    url: str | None = None
    domain: str | None = None


class _DocumentSpan(msgspec.Struct, gc=False):
    documentIndex: Count | None = None
    start: Count | None = None
    end: Count | None = None


class _Location(msgspec.Struct, gc=False):
    web: _Web | None = None
    documentChar: _DocumentSpan | None = None
    documentPage: _DocumentSpan | None = None
    documentChunk: _DocumentSpan | None = None


class _Citation(msgspec.Struct, gc=False):
    """CitationsDelta (API reference): one citation of the text block it is sent in."""

    title: str | None = None
    source: str | None = None
    sourceContent: list[_SourceText] | None = None
    location: _Location | None = None


class _ResultEntry(msgspec.Struct, gc=False):
    text: str | None = None
    json: Any = msgspec.UNSET


class _ServerBlock:
    """A provider-run tool call or result while its deltas arrive."""

    __slots__ = ("id", "name", "pieces", "result", "status", "type")

    def __init__(self, id: str, name: str | None, type: str | None, result: bool) -> None:
        self.id = id
        self.name = name
        self.type = type
        self.result = result
        self.status: str | None = None
        self.pieces: list[bytes] = []  # input text (a call) or raw entries (a result)


class _BlockDelta(msgspec.Struct, gc=False):
    contentBlockIndex: Count
    delta: _Delta


class _BlockStop(msgspec.Struct, gc=False):
    contentBlockIndex: Count


class _MessageStop(msgspec.Struct, gc=False):
    stopReason: str


class _Usage(msgspec.Struct, gc=False):
    inputTokens: Count | None = None
    outputTokens: Count | None = None
    totalTokens: Count | None = None
    cacheReadInputTokens: Count | None = None
    cacheWriteInputTokens: Count | None = None


class _Metadata(msgspec.Struct, gc=False):
    usage: _Usage | None = None


class _Exception(msgspec.Struct, gc=False):
    message: str | None = None
    Message: str | None = None  # some AWS services capitalise it


_start = decoder_for(_BlockStart)
_delta = decoder_for(_BlockDelta)
_delta_lines = _delta.decode_lines
_stop = decoder_for(_BlockStop)
_message_stop = decoder_for(_MessageStop)
_metadata = decoder_for(_Metadata)
_exception = decoder_for(_Exception)
_citation = decoder_for(_Citation)
_entry = decoder_for(_ResultEntry)
_any = decoder_for(Any)

#: The HTTP status AWS gives each ConverseStream exception (the service model's
#: ``httpStatusCode``): what decides its kind, as for an HTTP error.
EXCEPTION_STATUS: dict[str, int | None] = {
    "throttlingException": 429,
    "serviceUnavailableException": 503,
    "internalServerException": 500,
    "modelTimeoutException": 408,
    "validationException": 400,
    "accessDeniedException": 403,
    "resourceNotFoundException": 404,
    "modelNotReadyException": 429,
    "modelStreamErrorException": None,  # the model failed mid-stream: provider_stream
}


def exception_error(exception_type: str, message: str) -> StreamError:
    """The typed error for an in-band exception (``throttlingException`` → rate_limit…)."""
    status = EXCEPTION_STATUS.get(exception_type)
    if status == 408:
        return in_band_error(message, type_=exception_type, status=500)
    return in_band_error(message, type_=exception_type, status=status)


class BedrockDecoder:
    """Per-response decoder: ConverseStream event-stream frames → deltas."""

    __slots__ = ("_finished", "_names", "_redacted", "_server")

    def __init__(self) -> None:
        self._finished = False
        self._redacted: set[int] = set()
        self._server: dict[int, _ServerBlock] = {}  # open provider-run blocks by index
        self._names: dict[str, str] = {}  # provider-run call id -> tool name

    # The pipeline may hand decode_batch a ``Run`` (frames joined, one decode_lines).
    takes_runs = True

    def decode_batch(self, frames: list[Frame], out: list[Delta]) -> None:
        """:meth:`decode` of each frame of one read, appended to ``out`` (one call per
        read: the pipeline's batched hand-off). A ``contentBlockDelta`` is mapped here
        (a text delta inline); every other frame goes through :meth:`decode`. A frame
        that fails adds nothing to ``out``. A :class:`Run` of ``contentBlockDelta``
        frames is decoded in one ``decode_lines`` call; when that fails, or yields
        another number of values, or the run is of another event, its frames are
        decoded one by one (so an error names the field as it always does)."""
        decode, append, decode_delta = self.decode, out.append, _delta.decode
        for frame in frames:
            if frame.__class__ is Run:
                chunks = (
                    run_values(frame, _delta_lines) if frame.event == "contentBlockDelta" else None
                )
                if chunks is None:
                    self.decode_batch(frames_of(frame), out)
                    continue
                for chunk in chunks:
                    text = chunk.delta.text
                    if text is not None:
                        append(TextDelta(chunk.contentBlockIndex, text))
                    else:
                        out += self._delta(chunk)
                continue
            if frame.event != "contentBlockDelta":
                out += decode(frame)
                continue
            try:
                chunk = decode_delta(frame.data)
            except (msgspec.ValidationError, msgspec.DecodeError):
                out += decode(frame)  # raises, naming the field
                continue
            text = chunk.delta.text
            if text is not None:
                append(TextDelta(chunk.contentBlockIndex, text))
            else:
                out += self._delta(chunk)

    def decode(self, frame: Frame) -> list[Delta]:
        name = frame.event
        data = frame.data
        if name == "contentBlockDelta":
            return self._delta(decode_json(data, _delta, "contentBlockDelta"))
        if name == "contentBlockStart":
            start = decode_json(data, _start, "contentBlockStart")
            i = start.contentBlockIndex
            use = start.start.toolUse
            if use is None:
                res = start.start.toolResult
                if res is not None:
                    if not res.toolUseId:
                        raise MalformedChunkError(
                            "malformed contentBlockStart: start.toolResult.toolUseId must "
                            "not be empty"
                        )
                    block = _ServerBlock(res.toolUseId, self._names.get(res.toolUseId),
                                         res.type, result=True)  # fmt: skip
                    block.status = res.status
                    self._server[i] = block
                return []  # a start of a kind this version does not know (forward compatible)
            if not use.toolUseId or not use.name:
                raise MalformedChunkError(
                    "malformed contentBlockStart: start.toolUse.toolUseId and "
                    "start.toolUse.name must not be empty"
                )
            if use.type == "server_tool_use":
                self._server[i] = _ServerBlock(use.toolUseId, use.name, use.type, result=False)
                self._names[use.toolUseId] = use.name
                return []
            return [ToolCallDelta(i, use.toolUseId, use.name, "")]
        if name == "contentBlockStop":
            i = decode_json(data, _stop, "contentBlockStop").contentBlockIndex
            server = self._server.pop(i, None)
            if server is not None:
                return [BlockComplete(i, _server_block(server))]
            return [BlockEnd(i)]
        if name == "messageStop":
            stop = decode_json(data, _message_stop, "messageStop")
            self._finished = True
            return [self._finish(stop.stopReason)]
        if name == "metadata":
            usage = decode_json(data, _metadata, "metadata").usage
            out: list[Delta] = []
            if usage is not None:
                out.append(UsageUpdate(input=usage.inputTokens, output=usage.outputTokens,
                                       cache_read=usage.cacheReadInputTokens,
                                       cache_write=usage.cacheWriteInputTokens))  # fmt: skip
            if self._finished:
                self._check_closed()
                out.append(EndOfStream())  # metadata is the last event after messageStop
            return out
        if name.startswith("exception:"):
            exc = decode_json(data, _exception, "exception") if data.strip() else _Exception()
            kind = name.partition(":")[2]
            return self._raise(exception_error(kind, exc.message or exc.Message or kind))
        if name.startswith("error:"):
            text = data.decode()  # the framing checked the UTF-8
            raise ProviderStreamError(f"Bedrock stream error {name.partition(':')[2]}: {text}")
        return []  # messageStart and unknown events (forward compatible)

    @staticmethod
    def _raise(error: StreamError) -> list[Delta]:
        raise error

    def _delta(self, chunk: _BlockDelta) -> list[Delta]:
        i = chunk.contentBlockIndex
        d = chunk.delta
        if d.text is not None:
            return [TextDelta(i, d.text)]
        server = self._server.get(i) if self._server else None
        if server is not None:
            return self._server_delta(server, d)
        if d.toolUse is not None:
            return [ToolCallDelta(i, arguments=d.toolUse.input)]
        if d.citation:
            return [CitationDelta(i, _citation_of(d.citation))]
        r = d.reasoningContent
        if r is None:
            return []  # delta kinds unknown today (forward compatible)
        if r.text is not None:
            return [ThinkingDelta(i, r.text)]
        if r.signature is not None:
            return [BlockSignature(i, r.signature, append=True)]
        if r.redactedContent is not None:
            # Encrypted reasoning: kept whole so it can be sent back to the same model.
            if i in self._redacted:
                return [BlockSignature(i, r.redactedContent, append=True)]
            self._redacted.add(i)
            return [BlockStart(i, "thinking", signature=r.redactedContent, redacted=True)]
        return []

    @staticmethod
    def _server_delta(server: _ServerBlock, d: _Delta) -> list[Delta]:
        if server.result:
            if d.toolResult is not None:
                server.pieces.extend(bytes(e) for e in d.toolResult)
        elif d.toolUse is not None:
            server.pieces.append(d.toolUse.input.encode())
        return []

    @staticmethod
    def _finish(reason: str) -> Finish:
        failed = FAILED_STOPS.get(reason)
        if failed is not None:
            return Finish("error", reason, failed[0], f"{failed[1]} (stopReason {reason!r})")
        # An unknown reason is a normal end (forward compatible); the raw value is kept.
        return Finish(STOP_REASONS.get(reason, "stop"), reason)

    def _check_closed(self) -> None:
        # A provider-run block is only complete at its contentBlockStop.
        if self._server:
            raise TruncatedStreamError(
                f"the Bedrock stream ended inside the provider-run tool block "
                f"{min(self._server)} (no contentBlockStop); retry the request"
            )

    def end(self) -> list[Delta]:
        self._check_closed()
        if not self._finished:
            raise TruncatedStreamError(
                "the Bedrock stream ended without a messageStop event (the server stopped "
                "before finishing the answer); retry the request"
            )
        return [EndOfStream()]


def _server_block(b: _ServerBlock) -> ServerToolCall | ServerToolResult:
    """The whole block at ``contentBlockStop``, with ``raw`` the ``ContentBlock`` the
    request takes back: its input text and result entries exactly as received."""
    if not b.result:
        text = b"".join(b.pieces)
        raw_input = text if text.strip() else b"{}"
        value = decode_json(raw_input, _any, "contentBlockDelta")
        if not isinstance(value, dict):
            raise MalformedChunkError(
                f"malformed contentBlockDelta: delta.toolUse.input of the provider-run tool "
                f"call {b.id!r} must be a JSON object (got {type(value).__name__})"
            )
        body = {"toolUseId": b.id, "name": b.name, "input": msgspec.Raw(raw_input),
                "type": b.type}  # fmt: skip
        raw = dumps({"toolUse": body}).decode()
        assert b.name is not None  # a call's start names its tool
        return ServerToolCall(id=b.id, name=b.name, input=value, provider_type="server_tool_use",
                              raw=raw)  # fmt: skip
    entries: list[Any] = []
    for k, piece in enumerate(b.pieces):
        e = decode_json(piece, _entry, "contentBlockDelta", f"delta.toolResult[{k}].")
        if e.text is not None:
            entries.append({"text": e.text})
        elif e.json is not msgspec.UNSET:
            entries.append({"json": e.json})
        else:
            entries.append(msgspec.json.decode(piece))  # a kind unknown today: as sent
    result: dict[str, Any] = {"toolUseId": b.id,
                              "content": [msgspec.Raw(p) for p in b.pieces]}  # fmt: skip
    if b.status is not None:
        result["status"] = b.status
    if b.type is not None:
        result["type"] = b.type
    return ServerToolResult(
        tool_call_id=b.id,
        provider_type=b.type or "toolResult",
        result=entries,
        is_error=b.status == "error",
        name=b.name,
        raw=dumps({"toolResult": result}).decode(),
    )


def _citation_of(raw: msgspec.Raw) -> Citation:
    c = decode_json(raw, _citation, "contentBlockDelta", "delta.citation.")
    loc = c.location
    text = "".join(s.text or "" for s in c.sourceContent or ()) or None
    raw_text = bytes(raw).decode()
    if loc is not None and loc.web is not None:
        return Citation(kind="url", url=loc.web.url, title=c.title, cited_text=text,
                        document=c.source, raw=raw_text)  # fmt: skip
    span = None
    if loc is not None:
        span = loc.documentChar or loc.documentPage or loc.documentChunk
    if span is not None:
        doc = str(span.documentIndex) if span.documentIndex is not None else c.source
        return Citation(kind="document", title=c.title, cited_text=text, document=doc,
                        start=span.start, end=span.end, raw=raw_text)  # fmt: skip
    return Citation(kind="other", title=c.title, cited_text=text, document=c.source,
                    raw=raw_text)  # fmt: skip


def recognizes(payload: bytes) -> bool:
    """An AWS event stream: the first 12 bytes are a message prelude (total length,
    headers length, CRC32 of the two) whose checksum holds — no text body passes."""
    if len(payload) < 12:
        return False
    total = int.from_bytes(payload[:4], "big")
    headers = int.from_bytes(payload[4:8], "big")
    return (
        total >= 16
        and headers <= total - 16
        and zlib.crc32(payload[:8]) == int.from_bytes(payload[8:12], "big")
    )
