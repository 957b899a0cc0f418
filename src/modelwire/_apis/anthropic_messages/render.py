"""modelwire's events and messages as Anthropic Messages responses.

Streaming (https://docs.anthropic.com/en/docs/build-with-claude/streaming):
``message_start``, ``ping``, per block ``content_block_start`` /
``content_block_delta``\\* / ``content_block_stop``, then ``message_delta`` (stop
reason, cumulative usage) and ``message_stop``; a failure after the answer began is
an ``error`` event and no ``message_stop``. Non-streaming: the ``message`` object
(https://docs.anthropic.com/en/api/messages).

Block indexes are the client's: dense, in the order blocks start (the SDK's
accumulator appends at ``content_block_start`` and indexes into that list), so a
block with no Anthropic form (another API's opaque item) takes no index. Hot
events (text, thinking and argument deltas) are one dict lookup of the block's
pre-encoded prefix, the JSON string of the delta and a constant suffix.

Blocks follow one another, one open at a time, as Anthropic sends them, also when
the backend's overlap (Chat Completions and Ollama end every block at the finish;
Chat interleaves parallel calls' arguments): a text or thinking block still open
when the next block starts is stopped with what it holds (what comes for it later
continues in a block of its own), and a block that starts while a tool call is
open waits, with its events, until that call ends (a call's input cannot be split).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ..._wire.request import OUTPUT_TOOL
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
    AssistantContent,
    AssistantMessage,
    Citation,
    ImageContent,
    ProviderItem,
    ServerToolCall,
    ServerToolResult,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from .._common import block_as_text
from .._server.origin import Origin, seal
from .._server.request import GatewayRequest
from .._server.wire import WireServer
from ._error_shape import error_body, in_stream_error
from .parse import API_NAME, request_model, request_tools, tool_results
from .spec import ID_PREFIX, RAW_PREDICT, REFUSAL, STOP_OF, STOP_REASONS, TOOL_ID_PREFIX

__all__ = ["SERVER", "Renderer", "message_body", "render_models", "stop_reason"]

_enc = msgspec.json.encode

_START = b'event: content_block_start\ndata: {"type":"content_block_start","index":'
_DELTA = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":'
_STOP_EV = b'event: content_block_stop\ndata: {"type":"content_block_stop","index":'
_TEXT_START = b',"content_block":{"type":"text","text":""}}\n\n'
_THINKING_START = b',"content_block":{"type":"thinking","thinking":"","signature":""}}\n\n'
_TEXT_DELTA = b',"delta":{"type":"text_delta","text":'
_THINKING_DELTA = b',"delta":{"type":"thinking_delta","thinking":'
_ARGS_DELTA = b',"delta":{"type":"input_json_delta","partial_json":'
_SIGNATURE_DELTA = b',"delta":{"type":"signature_delta","signature":'
_CITATION_DELTA = b',"delta":{"type":"citations_delta","citation":'
_END_DELTA = b"}}\n\n"
_END_STOP = b"}\n\n"
_PING = b'event: ping\ndata: {"type":"ping"}\n\n'
_MESSAGE_STOP = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'


def stop_reason(message: AssistantMessage) -> str:
    """The message's ``stop_reason`` as this API names it."""
    reason = message.stop_reason
    if reason is None or reason not in STOP_OF:  # failed: only a refusal is rendered as a stop
        return REFUSAL
    # A backend on this API: its own stop reason is sent when it means the same
    # (pause_turn, stop_sequence, model_context_window_exceeded…).
    given = message.provider_stop_reason
    if message.api == API_NAME and given is not None and STOP_REASONS.get(given) == reason:
        return given
    return STOP_OF[reason]


def _usage(u: Usage) -> bytes:
    # input_tokens excludes cache reads and writes, as modelwire's Usage.input does
    # (prompt-caching docs: total input = input + cache_creation + cache_read).
    return (b'{"input_tokens":%d,"cache_creation_input_tokens":%d,'
            b'"cache_read_input_tokens":%d,"output_tokens":%d}'
            % (u.input, u.cache_write, u.cache_read, u.output))  # fmt: skip


def _signature(block: ThinkingContent, api: str, provider: str, model: str) -> str | None:
    """The provider's own signature for a backend of this API, else the block's
    origin sealed (the client returns it untouched; :func:`unseal` restores it)."""
    if api == API_NAME:
        return block.signature
    return seal(Origin(api, provider, model, block.signature, block.redacted))


def _citation(c: Citation, native: bool) -> bytes:
    """As received from an Anthropic backend, else built from its fields: a web
    search location for a URL, a character location in a document otherwise
    (citations docs)."""
    if native and c.raw is not None:
        return c.raw.encode()
    if c.url is not None:
        return _enc({"type": "web_search_result_location", "url": c.url, "title": c.title,
                     "cited_text": c.cited_text or "", "encrypted_index": ""})  # fmt: skip
    index = int(c.document) if c.document is not None and c.document.isdigit() else 0
    return _enc({"type": "char_location", "cited_text": c.cited_text or "",
                 "document_index": index, "document_title": c.title,
                 "start_char_index": c.start or 0, "end_char_index": c.end or 0})  # fmt: skip


def _native_block(
    block: ServerToolCall | ServerToolResult | ProviderItem | ImageContent,
) -> bytes | None:
    """A provider-run block of this API as its JSON (as received when there is one);
    ``None`` for an image, which an assistant turn cannot hold (it reads as text)."""
    if isinstance(block, ImageContent):
        return None
    if isinstance(block, ProviderItem):
        return block.data.encode() if block.api == API_NAME else None
    if block.raw is not None:
        return block.raw.encode()
    if isinstance(block, ServerToolCall):
        return _enc({"type": block.provider_type, "id": block.id, "name": block.name,
                     "input": block.input})  # fmt: skip
    return _enc({"type": block.provider_type, "tool_use_id": block.tool_call_id,
                 "content": block.result})  # fmt: skip


def _tool_input(call: ToolCall) -> Any:
    raw = call.raw_arguments
    if raw is not None and raw.strip():
        try:
            if isinstance(msgspec.json.decode(raw), dict):
                return msgspec.Raw(raw.encode())  # the exact text the backend sent
        except msgspec.DecodeError:
            pass
    return call.arguments


class Renderer:
    """One streamed answer: :meth:`feed` each event, write what it returns."""

    __slots__ = ("_args", "_backlog", "_closed", "_delta", "_draining", "_early", "_head",
                 "_held", "_index", "_kind", "_next", "_open", "_origin", "_output",
                 "_started")  # fmt: skip

    def __init__(self, request: GatewayRequest, response_id: str) -> None:
        self._head = (
            b'event: message_start\ndata: {"type":"message_start","message":{"id":'
            + _enc(response_id) + b',"type":"message","role":"assistant","model":'
            + _enc(request.model)
            + b',"content":[],"stop_reason":null,"stop_sequence":null,"usage":'
        )  # fmt: skip
        self._started = False
        self._closed = False  # message_stop or error written: nothing more
        self._next = 0  # the next client block index
        self._index: dict[int, bytes] = {}  # content index → client index (encoded)
        self._delta: dict[int, bytes] = {}  # content index → its delta prefix
        self._open: dict[int, bytes] = {}  # started, not stopped
        self._args: set[int] = set()  # tool calls whose arguments were streamed
        self._kind: dict[int, bytes] = {}  # open content index → its delta kind
        self._early: dict[int, bytes] = {}  # stopped before their end → their delta kind
        self._held: set[int] = set()  # blocks waiting for an open tool call to end
        self._backlog: list[Event] = []  # their events, in order
        self._draining = False
        self._origin: tuple[str, str, str] | None = None  # api, provider, model
        # Structured output asked for by a forced tool (the backend's output mode):
        # that call's arguments are the answer, streamed as the text they are.
        self._output = "output" in request.options

    def feed(self, event: Event) -> bytes:
        """The bytes ``event`` becomes (``b""`` for events with no form here)."""
        t = type(event)
        if t is TextDeltaEvent or t is ThinkingDeltaEvent or t is ToolCallDeltaEvent:
            ev: Any = event
            prefix = self._delta.get(ev.content_index)
            if prefix is None:  # held, or its block was stopped early
                return self._late(ev)
            if t is ToolCallDeltaEvent:
                self._args.add(ev.content_index)
            return prefix + _enc(ev.delta) + _END_DELTA
        if self._closed:
            return b""
        if self._backlog or self._open:
            return self._ordered(event)
        return self._other(event)

    # ------------------------------------------------------- one block at a time

    def _ordered(self, event: Event) -> bytes:
        """``event`` while a block is open or others wait: held, or let through
        after the open block is stopped; then what waited, once nothing is open."""
        ci: int | None = getattr(event, "content_index", None)
        if ci is None:  # done, error, restart: everything that waited goes first
            out = b""
            while self._backlog:
                out += self._close_all() + self._drain()
            return out + self._other(event)
        if ci in self._held or (
            isinstance(event, CitationEvent) and self._open and ci not in self._open
        ):  # (a citation of a block stopped early opens its continuation: it waits)
            self._held.add(ci)
            self._backlog.append(event)
            return b""
        out = b""
        if ci not in self._open and isinstance(
            event, TextStartEvent | ThinkingStartEvent | ToolCallStartEvent | BlockEvent
        ):
            out = self._yield_open(event)
            if self._open:  # a tool call is open: wait for its end
                self._held.add(ci)
                self._backlog.append(event)
                return out
        out += self._other(event)
        if self._backlog and not self._open and not self._draining:
            while self._backlog and not self._open:
                out += self._drain()
        return out

    def _drain(self) -> bytes:
        events, self._backlog, self._held = self._backlog, [], set()
        self._draining = True
        try:
            return b"".join(self.feed(e) for e in events)
        finally:
            self._draining = False

    def _yield_open(self, event: Event) -> bytes:
        """Stop the open text or thinking block (another block starts); a tool call
        stays open."""
        out = b""
        for ci, kind in list(self._kind.items()):
            if ci not in self._open or kind == _ARGS_DELTA:
                continue
            block = event.partial.content[ci] if ci < len(event.partial.content) else None
            if kind == _THINKING_DELTA and isinstance(block, ThinkingContent):
                sig = _signature(block, *self._origin_of(event))
                if sig is not None:
                    out += _DELTA + self._index[ci] + _SIGNATURE_DELTA + _enc(sig) + _END_DELTA
            self._early[ci] = kind
            self._delta.pop(ci, None)
            del self._kind[ci]
            out += self._stop(ci)
        return out

    def _late(self, event: Any) -> bytes:
        """A delta for a held block (it waits too), or for a block stopped early:
        it continues in a new block of its kind, once nothing else is open."""
        ci = event.content_index
        if ci in self._held or (self._open and ci not in self._open):
            self._held.add(ci)
            self._backlog.append(event)
            return b""
        kind = self._early.pop(ci, None)
        if kind is None or not event.delta:
            return b""
        start = _TEXT_START if kind == _TEXT_DELTA else _THINKING_START
        i = self._allot(ci, kind)
        return _START + i + start + self._delta[ci] + _enc(event.delta) + _END_DELTA

    # ---------------------------------------------------------------- the rest

    def _begin(self, event: Event) -> bytes:
        if self._started:
            return b""
        self._started = True
        usage = event.partial.usage
        return self._head + _usage(usage) + b"}}\n\n" + _PING

    def _origin_of(self, event: Event) -> tuple[str, str, str]:
        o = self._origin
        if o is None:
            p = event.partial
            o = self._origin = (p.api, p.provider, p.model)
        return o

    def _allot(self, ci: int, delta: bytes | None) -> bytes:
        i = b"%d" % self._next
        self._next += 1
        self._index[ci] = i
        self._open[ci] = i
        if delta is not None:
            self._delta[ci] = _DELTA + i + delta
            self._kind[ci] = delta
        return i

    def _stop(self, ci: int) -> bytes:
        self._kind.pop(ci, None)
        i = self._open.pop(ci, None)
        return b"" if i is None else _STOP_EV + i + _END_STOP

    def _close_all(self) -> bytes:
        out = b"".join(_STOP_EV + i + _END_STOP for i in self._open.values())
        self._open.clear()
        self._kind.clear()
        return out

    def _other(self, event: Event) -> bytes:
        if isinstance(event, StartEvent):
            return b""
        out = self._begin(event)
        if isinstance(event, TextStartEvent):
            i = self._allot(event.content_index, _TEXT_DELTA)
            return out + _START + i + _TEXT_START
        if isinstance(event, TextEndEvent):
            return out + self._stop(event.content_index)
        if isinstance(event, ThinkingStartEvent):
            return out + self._thinking_start(event)
        if isinstance(event, ThinkingEndEvent):
            return out + self._thinking_end(event)
        if isinstance(event, ToolCallStartEvent):
            return out + self._tool_start(event)
        if isinstance(event, ToolCallEndEvent):
            ci = event.content_index
            if ci not in self._args and ci in self._open:
                # Arguments that came whole (no deltas): sent in one delta, exactly.
                call = event.tool_call
                raw = call.raw_arguments
                text = raw if raw is not None else _enc(call.arguments).decode()
                if text:
                    out += self._delta[ci] + _enc(text) + _END_DELTA
            return out + self._stop(ci)
        if isinstance(event, CitationEvent):
            ci = event.content_index
            at = self._open.get(ci)
            if at is None:
                if self._early.pop(ci, None) != _TEXT_DELTA:
                    return out
                # A citation for a text block stopped early: it opens the block's
                # continuation (the SDK appends citations_delta to a text block).
                at = self._allot(ci, _TEXT_DELTA)
                out += _START + at + _TEXT_START
            native = self._origin_of(event)[0] == API_NAME
            return (
                out + _DELTA + at + _CITATION_DELTA + _citation(event.citation, native) + _END_DELTA
            )
        if isinstance(event, BlockEvent):
            return out + self._block(event)
        if isinstance(event, DoneEvent):
            return out + self._end(event.message)
        if isinstance(event, ErrorEvent):
            return out + self._failed(event.message)
        if isinstance(event, RestartEvent):
            # A Fallback starts over on its next model: what was sent stays, the
            # next model's blocks follow with the next indexes.
            self._origin = None
            self._index, self._delta = {}, {}
            self._args = set()
            self._early = {}
            return out + self._close_all()
        return out  # pragma: no cover - every event type is handled above

    def _thinking_start(self, event: ThinkingStartEvent) -> bytes:
        ci = event.content_index
        api = self._origin_of(event)[0]
        block = event.partial.content[ci]
        if api == API_NAME and isinstance(block, ThinkingContent) and block.redacted:
            i = self._allot(ci, None)
            data = _enc(block.signature or "")
            return (_START + i + b',"content_block":{"type":"redacted_thinking","data":'
                    + data + b"}}\n\n")  # fmt: skip
        i = self._allot(ci, _THINKING_DELTA)
        return _START + i + _THINKING_START

    def _thinking_end(self, event: ThinkingEndEvent) -> bytes:
        ci = event.content_index
        if ci not in self._delta:  # redacted_thinking: whole in its start
            return self._stop(ci)
        if ci not in self._open:
            return b""
        sig = _signature(event.content, *self._origin_of(event))
        out = (
            b""
            if sig is None
            else _DELTA + self._index[ci] + _SIGNATURE_DELTA + _enc(sig) + _END_DELTA
        )
        return out + self._stop(ci)

    def _tool_start(self, event: ToolCallStartEvent) -> bytes:
        ci = event.content_index
        block = event.partial.content[ci]
        call_id, name = (block.id, block.name) if isinstance(block, ToolCall) else ("", "")
        if self._output and name == OUTPUT_TOOL:
            i = self._allot(ci, _TEXT_DELTA)
            self._kind[ci] = _ARGS_DELTA  # a call: not stopped before its end
            return _START + i + _TEXT_START
        i = self._allot(ci, _ARGS_DELTA)
        return (_START + i + b',"content_block":{"type":"tool_use","id":' + _enc(call_id)
                + b',"name":' + _enc(name) + b',"input":{}}}\n\n')  # fmt: skip

    def _block(self, event: BlockEvent) -> bytes:
        ci, block = event.content_index, event.content
        if self._origin_of(event)[0] == API_NAME:
            raw = _native_block(block)
            if raw is not None:
                i = self._allot(ci, None)
                return _START + i + b',"content_block":' + raw + b"}\n\n" + self._stop(ci)
        # Another API's provider-run block reads as text, as mw.handoff shows it.
        text = block_as_text(block)
        if text is None:
            return b""
        i = self._allot(ci, _TEXT_DELTA)
        return (_START + i + _TEXT_START + self._delta[ci] + _enc(text) + _END_DELTA
                + self._stop(ci))  # fmt: skip

    def _end(self, message: AssistantMessage) -> bytes:
        self._closed = True
        return (
            self._close_all()
            + b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":'
            + _enc(stop_reason(message)) + b',"stop_sequence":null},"usage":'
            + _usage(message.usage) + b"}\n\n" + _MESSAGE_STOP
        )  # fmt: skip

    def _failed(self, message: AssistantMessage) -> bytes:
        err = message.error
        if err is not None and err.kind == "content_filter":
            # A refusal is how this API says it: stop_reason "refusal" (stop-reasons docs).
            return self._end(message)
        self._closed = True
        kind = err.kind if err is not None else "server"
        text = err.message if err is not None else "the response failed"
        # No message_stop: the client must see the answer as broken.
        return in_stream_error(kind, text)


def _content(
    blocks: tuple[AssistantContent, ...], api: str, provider: str, model: str
) -> list[Any]:
    native = api == API_NAME
    out: list[Any] = []
    for b in blocks:
        if isinstance(b, TextContent):
            text: dict[str, Any] = {"type": "text", "text": b.text}
            if b.citations:
                text["citations"] = [msgspec.Raw(_citation(c, native)) for c in b.citations]
            out.append(text)
        elif isinstance(b, ThinkingContent):
            if native and b.redacted:
                out.append({"type": "redacted_thinking", "data": b.signature or ""})
            else:
                sig = _signature(b, api, provider, model)
                out.append({"type": "thinking", "thinking": b.thinking, "signature": sig or ""})
        elif isinstance(b, ToolCall):
            out.append({"type": "tool_use", "id": b.id, "name": b.name, "input": _tool_input(b)})
        else:
            raw = _native_block(b) if native else None
            if raw is not None:
                out.append(msgspec.Raw(raw))
            else:
                as_text = block_as_text(b)
                if as_text is not None:
                    out.append({"type": "text", "text": as_text})
    return out


def message_body(request: GatewayRequest, message: AssistantMessage, response_id: str) -> bytes:
    """The ``message`` object of a non-streamed answer."""
    content = _content(message.content, message.api, message.provider, message.model)
    return (
        b'{"id":' + _enc(response_id) + b',"type":"message","role":"assistant","model":'
        + _enc(request.model) + b',"content":' + _enc(content) + b',"stop_reason":'
        + _enc(stop_reason(message)) + b',"stop_sequence":null,"usage":'
        + _usage(message.usage) + b"}"
    )  # fmt: skip


def render_models(ids: Sequence[str]) -> dict[str, Any]:
    """``GET /v1/models`` as Anthropic lists them (https://docs.anthropic.com/en/api/models-list)."""
    data = [{"type": "model", "id": i, "display_name": i,
             "created_at": "2025-01-01T00:00:00Z"} for i in ids]  # fmt: skip
    return {
        "data": data,
        "has_more": False,
        "first_id": ids[0] if ids else None,
        "last_id": ids[-1] if ids else None,
    }


#: How a server speaks Messages (the gateway's front end and the mock server).
SERVER = WireServer(
    renderer=Renderer, message_body=message_body, tool_results=tool_results,
    id_prefix=ID_PREFIX, request_model=request_model,
    extra_paths=("/models/{model}" + RAW_PREDICT,), request_tools=request_tools,
    error_body=error_body, models_path="/models", render_models=render_models,
    models_header="anthropic-version", tool_id_prefix=TOOL_ID_PREFIX,
)  # fmt: skip
