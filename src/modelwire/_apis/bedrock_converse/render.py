"""modelwire's events → Bedrock's ConverseStream, live; a final message → the Converse body.

References: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html
(the ``ConverseStreamOutput`` events: ``messageStart``; per block an optional
``contentBlockStart`` — tool use and tool results only —, ``contentBlockDelta``\\* and
``contentBlockStop``; ``messageStop`` with the ``stopReason``; ``metadata`` with usage
and metrics; an error member such as ``throttlingException`` in place of the rest) and
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html (the
body). Each event is one AWS event-stream message (``:event-type``, ``:content-type:
application/json``, ``:message-type: event``; an error is ``:message-type: exception``),
as :mod:`modelwire._wire.framing.eventstream` encodes it. The stream names neither the
model nor a response id, so ``request.model`` and ``response_id`` are not written.

Blocks follow one another, one open at a time, as Bedrock sends them, also when the
backend's blocks overlap (Chat Completions and Ollama end every block at the finish):
a text or reasoning block still open when another block starts is stopped with what it
holds (what comes for it later continues in a block of its own, with the next index),
and a block that starts while a tool call is open waits, with its events, until that
call ends (Bedrock never interleaves blocks, and a client may add each delta to
the block that started last).
A text block's citation deltas follow its text (``CitationsDelta`` supports the text
before it).
"""

from __future__ import annotations

import struct
import zlib
from typing import Any
from urllib.parse import unquote

import msgspec

from ..._wire.framing.eventstream import encode_event, encode_exception
from ...events import (
    BlockEvent,
    CitationEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    RestartEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from ...types import (
    AssistantMessage,
    Citation,
    ServerToolCall,
    ServerToolResult,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from .._common import block_as_text
from .._server.origin import Origin, seal
from .._server.reply import (
    THINKING_SIGNATURE,
    ErrorReply,
    arguments_object,
    arguments_text,
    compact_json,
    declared_tools,
    text_of,
)
from .._server.request import GatewayRequest
from .._server.wire import WireServer
from ._embed_render import EMBED_PATHS, render_embeddings
from .decode import EXCEPTION_STATUS
from .spec import (
    API_NAME,
    COMPLETE_SUFFIX,
    CONTENT_BLOCK_DELTA,
    CONTENT_BLOCK_START,
    CONTENT_BLOCK_STOP,
    CONTENT_TYPE,
    EXCEPTION_OF_KIND,
    EXCEPTION_OF_STATUS,
    FAILED_STOP_OF,
    FAILED_STOPS,
    IN_STREAM_EXCEPTION,
    MESSAGE_START,
    MESSAGE_STOP,
    METADATA,
    STOP_OF,
    STOP_REASONS,
    STREAM_SUFFIX,
    TOOL_ID_PREFIX,
)

__all__ = ["SERVER", "Renderer", "error_body", "message_body", "request_model", "stop_reason",
           "tool_results"]  # fmt: skip

_enc = msgspec.json.encode  # a str as json.dumps(ensure_ascii=False) writes it
_PRELUDE = struct.Struct(">II")
_UINT32 = struct.Struct(">I")
# Each event type's header section, taken from the encoder so the two cannot differ:
# a message is prelude (12 bytes) | headers | payload | CRC (4 bytes).
_HEADERS = {name: encode_event(name, b"")[12:-4] for name in (
    MESSAGE_START, CONTENT_BLOCK_START, CONTENT_BLOCK_DELTA, CONTENT_BLOCK_STOP,
    MESSAGE_STOP, METADATA)}  # fmt: skip
_DELTA_HEADERS = _HEADERS[CONTENT_BLOCK_DELTA]
_TEXT, _THINKING, _TOOL = b'"text":', b'"reasoningContent":{"text":', b'"toolUse":{"input":'
_CLOSE = {_TEXT: b"}}", _THINKING: b"}}}", _TOOL: b"}}}"}


def _message(headers: bytes, payload: bytes) -> bytes:
    """One event-stream message (what ``encode_event`` writes, without a dict per call)."""
    head = _PRELUDE.pack(16 + len(headers) + len(payload), len(headers))
    head += _UINT32.pack(zlib.crc32(head))
    crc = zlib.crc32(payload, zlib.crc32(headers, zlib.crc32(head)))
    return head + headers + payload + _UINT32.pack(crc)


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return _message(_HEADERS[name], compact_json(payload).encode())


# --------------------------------------------------------------------------- shared


def stop_reason(message: AssistantMessage) -> str:
    """Bedrock's own ``stopReason`` from a Bedrock backend, else the mapped one; a
    failure Bedrock says with a stop reason (a filter, the context window) says it."""
    # Only a Bedrock backend's own reason is Bedrock's to repeat.
    own = message.provider_stop_reason if message.api == API_NAME else None
    err = message.error
    if err is not None:
        if own is not None and own in FAILED_STOPS and FAILED_STOPS[own][0] == err.kind:
            return own
        failed = FAILED_STOP_OF.get(err.kind)
        if failed is not None:
            return failed
    if own is not None and own in STOP_REASONS:
        return own
    return STOP_OF.get(message.stop_reason or "stop", STOP_OF["stop"])


def _usage(u: Usage) -> dict[str, int]:
    # inputTokens excludes the cache reads and writes (as modelwire's Usage.input);
    # totalTokens counts them all.
    total = u.input + u.output + u.cache_read + u.cache_write
    return {"inputTokens": u.input, "outputTokens": u.output, "totalTokens": total,
            "cacheReadInputTokens": u.cache_read,
            "cacheWriteInputTokens": u.cache_write}  # fmt: skip


def _signature(block: ThinkingContent, origin: tuple[str, str, str]) -> str:
    """A Bedrock backend's signature (reasoning is always signed: a fixed opaque one
    when there is none), else the block's origin sealed, for the client to send back."""
    if origin[0] == API_NAME:
        return block.signature or THINKING_SIGNATURE
    return seal(Origin(*origin, block.signature, block.redacted))


def _citation(c: Citation, native: bool) -> dict[str, Any]:
    """A ``Citation`` (CitationsDelta): as a Bedrock backend sent it, else from its fields."""
    if native and c.raw is not None:
        value: dict[str, Any] = msgspec.json.decode(c.raw)
        return value
    out: dict[str, Any] = {}
    if c.title is not None:
        out["title"] = c.title
    if c.cited_text is not None:
        out["sourceContent"] = [{"text": c.cited_text}]
    if c.url is not None:
        out["location"] = {"web": {"url": c.url}}
    elif c.document is not None and c.document.isdigit():
        span = {"documentIndex": int(c.document), "start": c.start or 0, "end": c.end or 0}
        out["location"] = {"documentChar": span}
    return out


def _result_entries(block: ServerToolResult) -> list[Any]:
    # ToolResultBlockDelta entries ({"text"} | {"json"}): a list of them as is.
    r = block.result
    if isinstance(r, list) and all(isinstance(e, dict) and len(e) == 1 for e in r):
        return r
    return [{"text": r} if isinstance(r, str) else {"json": r}]


# --------------------------------------------------------------------------- stream


class Renderer:
    """One streamed answer's event-stream messages (a
    :class:`~modelwire._apis._server.request.StreamRenderer`)."""

    __slots__ = ("_backlog", "_call", "_cites", "_early", "_next", "_open", "_origin",
                 "_sent", "_started", "_wrote")  # fmt: skip

    def __init__(self, request: GatewayRequest, response_id: str) -> None:
        del request, response_id  # the stream names neither model nor id
        self._started = False
        self._next = 0  # the next contentBlockIndex: dense, in the order blocks start
        # The one open block: (content index, block index, delta prefix, kind), or None.
        self._open: tuple[int, int, bytes, bytes] | None = None
        self._call: int | None = None  # the open tool call's content index
        self._sent = 0  # argument characters the open call has sent
        self._wrote = False  # whether the open block has had a delta
        self._cites: list[Citation] = []  # the open text block's citations, sent at its stop
        self._early: dict[int, bytes] = {}  # blocks stopped before their end → their kind
        self._backlog: list[Event] = []  # events of blocks waiting for the open call
        self._origin: tuple[str, str, str] | None = None

    def feed(self, event: Event) -> bytes:
        ci: int | None = getattr(event, "content_index", None)
        if ci is not None and self._call not in (None, ci):
            self._backlog.append(event)
            return b""
        if isinstance(event, TextDeltaEvent):
            return self._delta(event, event.delta, _TEXT)
        if isinstance(event, ThinkingDeltaEvent):
            return self._delta(event, event.delta, _THINKING)
        if isinstance(event, ToolCallDeltaEvent):
            if self._open is None or self._open[0] != event.content_index:
                return b""  # a call is never stopped early: nothing to continue
            self._sent += len(event.delta)
            return self._write(event.delta)
        if isinstance(event, StartEvent):
            if self._started:
                return b""
            self._started = True
            return _event(MESSAGE_START, {"role": "assistant"})
        if isinstance(event, TextStartEvent | ThinkingStartEvent):
            out = self._stop_open(event, early=True)
            self._allot(
                event.content_index, _TEXT if isinstance(event, TextStartEvent) else _THINKING
            )
            return out
        if isinstance(event, TextEndEvent | ThinkingEndEvent):
            if self._open is None or self._open[0] != event.content_index:
                self._early.pop(event.content_index, None)
                return b""  # stopped early: sent
            return self._stop_open(event, event.content)
        if isinstance(event, ToolCallStartEvent):
            return self._tool_start(event)
        if isinstance(event, ToolCallEndEvent):
            return self._tool_end(event)
        if isinstance(event, CitationEvent):
            return self._citation(event)
        if isinstance(event, BlockEvent):
            return self._block(event)
        if isinstance(event, DoneEvent):
            return self._end(event.message)
        if isinstance(event, ErrorEvent):
            return self._failed(event.message)
        if isinstance(event, RestartEvent):
            # A Fallback starts over on its next model: what was sent stays, the next
            # model's blocks (content indexes from 0 again) take the next indexes.
            out = self._stop_open(event.message)
            self._early, self._backlog = {}, []
            self._call, self._origin = None, None
            return out
        return b""  # pragma: no cover - every event type is handled above

    # ---------------------------------------------------------------- blocks

    def _origin_of(self, source: Event | AssistantMessage) -> tuple[str, str, str]:
        o = self._origin
        if o is None:
            p = source if isinstance(source, AssistantMessage) else source.partial
            o = self._origin = (p.api, p.provider, p.model)
        return o

    def _allot(self, ci: int, kind: bytes) -> None:
        """Open a block for content ``ci`` (text and reasoning have no start event)."""
        i = self._next
        self._next += 1
        self._open = (ci, i, b'{"contentBlockIndex":%d,"delta":{' % i + kind, kind)
        self._wrote = False

    def _write(self, text: str) -> bytes:
        assert self._open is not None
        _, _, prefix, kind = self._open
        self._wrote = True
        return _message(_DELTA_HEADERS, prefix + _enc(text) + _CLOSE[kind])

    def _payload(self, i: int, delta: dict[str, Any]) -> bytes:
        return _event(CONTENT_BLOCK_DELTA, {"contentBlockIndex": i, "delta": delta})

    def _delta(self, event: TextDeltaEvent | ThinkingDeltaEvent, text: str, kind: bytes) -> bytes:
        ci = event.content_index
        if self._open is not None and self._open[0] == ci:
            return self._write(text)
        if self._early.get(ci) != kind or not text:
            return b""
        # More for a block stopped early: it continues in a block of its own.
        out = self._stop_open(event, early=True)
        self._allot(ci, kind)
        return out + self._write(text)

    def _citation(self, event: CitationEvent) -> bytes:
        ci = event.content_index
        out = b""
        if self._open is None or self._open[0] != ci:
            if self._early.get(ci) != _TEXT:
                return b""
            out = self._stop_open(event, early=True)
            self._allot(ci, _TEXT)
        self._cites.append(event.citation)
        return out

    def _stop_open(
        self, source: Event | AssistantMessage, block: object = None, *, early: bool = False
    ) -> bytes:
        """Stop the open block: a text block's citations, a reasoning block's signature
        (or redacted content) first. ``block``: the block as it ended (``None``: as
        ``source`` holds it); ``early``: before its end (more may come for it)."""
        if self._open is None:
            return b""
        ci, i, _, kind = self._open
        out = b""
        origin = self._origin_of(source)
        native = origin[0] == API_NAME
        if kind == _TEXT:
            out = b"".join(self._payload(i, {"citation": _citation(c, native)})
                           for c in self._cites)  # fmt: skip
            self._cites = []
        elif kind == _THINKING:
            if block is None:
                held = source if isinstance(source, AssistantMessage) else source.partial
                block = held.content[ci] if ci < len(held.content) else None
            if isinstance(block, ThinkingContent) and native and block.redacted:
                redacted = {"redactedContent": block.signature or ""}
                out = self._payload(i, {"reasoningContent": redacted})
            elif not self._wrote:
                # Reasoning opens with its text (a reader refuses a signature for a block
                # that never started): one with none, as another API's redacted
                # reasoning, has no form here. Not sent; its index is the next block's.
                self._next -= 1
                self._open = None
                if early:
                    self._early[ci] = kind
                return b""
            elif isinstance(block, ThinkingContent):
                signature = {"signature": _signature(block, origin)}
                out = self._payload(i, {"reasoningContent": signature})
        if early and kind != _TOOL:
            self._early[ci] = kind
        self._open = None
        return out + _event(CONTENT_BLOCK_STOP, {"contentBlockIndex": i})

    def _tool_start(self, event: ToolCallStartEvent) -> bytes:
        ci = event.content_index
        out = self._stop_open(event, early=True)
        block = event.partial.content[ci]
        call_id, name = (block.id, block.name) if isinstance(block, ToolCall) else ("", "")
        self._call, self._sent = ci, 0
        return out + self._start(ci, {"toolUse": {"toolUseId": call_id, "name": name}})

    def _start(self, ci: int, start: dict[str, Any]) -> bytes:
        """Open a block with a start event (tool use and tool results)."""
        self._allot(ci, _TOOL)
        return _event(CONTENT_BLOCK_START, {"contentBlockIndex": self._next - 1, "start": start})

    def _tool_end(self, event: ToolCallEndEvent) -> bytes:
        if self._call != event.content_index:
            return b""
        # What the deltas did not send (arguments that came whole, as Gemini's do).
        rest = arguments_text(event.tool_call)[self._sent :]
        out = (self._write(rest) if rest else b"") + self._stop_open(event, event.tool_call)
        return out + self._drain()

    def _drain(self) -> bytes:
        """The open call ended: the blocks that waited for it, in order."""
        self._call = None
        backlog, self._backlog = self._backlog, []
        return b"".join(self.feed(e) for e in backlog)

    def _block(self, event: BlockEvent) -> bytes:
        ci, block = event.content_index, event.content
        out = self._stop_open(event, early=True)
        if isinstance(block, ServerToolCall | ServerToolResult) and (
            self._origin_of(event)[0] == API_NAME
        ):
            if isinstance(block, ServerToolCall):
                start: dict[str, Any] = {"toolUse": {"toolUseId": block.id, "name": block.name,
                                                     "type": "server_tool_use"}}  # fmt: skip
                delta: dict[str, Any] = {"toolUse": {"input": compact_json(block.input)}}
            else:
                status = "error" if block.is_error else "success"
                result = {"toolUseId": block.tool_call_id, "status": status}
                if block.provider_type != "toolResult":
                    result["type"] = block.provider_type
                start, delta = {"toolResult": result}, {"toolResult": _result_entries(block)}
            out += self._start(ci, start)
            return out + self._payload(self._next - 1, delta) + self._stop_open(event, block)
        # Another API's provider-run block reads as text, as mw.handoff shows it; an
        # opaque item has no Converse form.
        text = block_as_text(block)
        if text is None:
            return out
        self._allot(ci, _TEXT)
        return out + self._write(text) + self._stop_open(event, block)

    # ---------------------------------------------------------------- the end

    def _end(self, message: AssistantMessage) -> bytes:
        out = self._stop_open(message)
        if self._backlog:
            out += self._drain() + self._stop_open(message)
        stop = {"stopReason": stop_reason(message)}
        # latencyMs is the model's time; a rendered answer reports 0, as the mock did.
        meta = {"usage": _usage(message.usage), "metrics": {"latencyMs": 0}}
        return out + _event(MESSAGE_STOP, stop) + _event(METADATA, meta)

    def _failed(self, message: AssistantMessage) -> bytes:
        err = message.error
        if err is not None and err.kind in FAILED_STOP_OF:
            # How Converse says a filter or a full context window: its stop reason.
            return self._end(message)
        if err is None:
            exception, text = IN_STREAM_EXCEPTION, "the response failed"
        elif message.api == API_NAME and err.code in EXCEPTION_STATUS:
            # A Bedrock backend's own exception, as it sent it (the decoder added its type).
            exception, text = err.code, err.message.removesuffix(f" ({err.code})")
        else:
            exception, text = EXCEPTION_OF_KIND.get(err.kind, IN_STREAM_EXCEPTION), err.message
        # Nothing after it: the client reads the stream as failed with that error.
        return encode_exception(exception, compact_json({"message": text}).encode())


# --------------------------------------------------------------------------- body


def _content(message: AssistantMessage) -> list[dict[str, Any]]:
    origin = (message.api, message.provider, message.model)
    native = message.api == API_NAME
    out: list[dict[str, Any]] = []
    for b in message.content:
        if isinstance(b, TextContent) and b.citations:
            cites = [_citation(c, native) for c in b.citations]
            out.append({"citationsContent": {"content": [{"text": b.text}], "citations": cites}})
        elif isinstance(b, TextContent):
            out.append({"text": b.text})
        elif isinstance(b, ThinkingContent) and native and b.redacted:
            out.append({"reasoningContent": {"redactedContent": b.signature or ""}})
        elif isinstance(b, ThinkingContent):
            out.append({"reasoningContent": {"reasoningText": {
                "text": b.thinking, "signature": _signature(b, origin)}}})  # fmt: skip
        elif isinstance(b, ToolCall):
            out.append({"toolUse": {"toolUseId": b.id, "name": b.name,
                                    "input": arguments_object(b)}})  # fmt: skip
        elif native and isinstance(b, ServerToolCall):
            out.append({"toolUse": {"toolUseId": b.id, "name": b.name, "input": b.input,
                                    "type": "server_tool_use"}})  # fmt: skip
        elif native and isinstance(b, ServerToolResult):
            result = {"toolUseId": b.tool_call_id, "content": _result_entries(b),
                      "status": "error" if b.is_error else "success"}  # fmt: skip
            out.append({"toolResult": result})
        else:
            text = block_as_text(b)
            if text is not None:
                out.append({"text": text})
    return out


def message_body(request: GatewayRequest, message: AssistantMessage, response_id: str) -> bytes:
    """The ``Converse`` answer: the message, stop reason, usage, metrics (the body
    names neither model nor id)."""
    return compact_json({
        "output": {"message": {"role": "assistant", "content": _content(message)}},
        "stopReason": stop_reason(message), "usage": _usage(message.usage),
        "metrics": {"latencyMs": 0},
    }).encode()  # fmt: skip


def tool_results(body: object) -> list[str]:
    """The ``content`` of every ``toolResult`` block of the messages."""
    found: list[str] = []
    for m in body.get("messages", []) if isinstance(body, dict) else []:
        content = m.get("content") if isinstance(m, dict) else None
        for part in content if isinstance(content, list) else []:
            result = part.get("toolResult") if isinstance(part, dict) else None
            if isinstance(result, dict):
                found.append(text_of(result.get("content")))
    return found


def request_model(path: str, body: object) -> str | None:
    """The model id, URL-encoded in the path: ``/model/{id}/converse-stream``."""
    p = path.split("?", 1)[0].rstrip("/")
    suffix = next((s for s in (STREAM_SUFFIX, COMPLETE_SUFFIX) if p.endswith(s)), None)
    if suffix is None or "/model/" not in p:
        return None
    return unquote(p[p.rindex("/model/") + len("/model/") : -len(suffix)]) or None


def _request_tools(body: object) -> list[tuple[str, dict[str, Any]]]:
    config = body.get("toolConfig") if isinstance(body, dict) else None
    tools = config.get("tools") if isinstance(config, dict) else None
    return declared_tools(tools, spec="toolSpec", name="name", schema="inputSchema.json")


def error_body(status: int, message: str, kind: str | None = None) -> ErrorReply:
    """``{"message"}`` with the error's type in ``x-amzn-ErrorType``, as AWS JSON
    protocols send it (botocore reads the type from that header)."""
    kind = kind or EXCEPTION_OF_STATUS.get(status, "InternalServerException")
    return ErrorReply(
        body={"message": message},
        headers={"x-amzn-ErrorType": f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/",
                 "x-amzn-RequestId": "00000000-0000-0000-0000-000000000000"},
    )  # fmt: skip


#: How a server speaks Converse (the mock server).
SERVER = WireServer(
    renderer=Renderer, message_body=message_body, tool_results=tool_results,
    request_model=request_model, content_type=CONTENT_TYPE,
    version_segment="",  # base_url is the runtime endpoint
    request_tools=_request_tools,
    streams=lambda path, body: True,  # the endpoint, not the body, says it
    complete_paths=("/model/{model}" + COMPLETE_SUFFIX,), error_body=error_body,
    tool_id_prefix=TOOL_ID_PREFIX,
    embed_paths=EMBED_PATHS, render_embeddings=render_embeddings,
)  # fmt: skip
