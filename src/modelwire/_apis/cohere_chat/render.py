"""modelwire's events → Cohere's v2 chat stream, live; a final message → the chat response.

References: https://docs.cohere.com/v2/reference/chat-stream (the events, each an SSE
``event:`` line naming its ``type`` and a ``data:`` line),
https://docs.cohere.com/v2/docs/streaming (their order),
https://docs.cohere.com/docs/rag-streaming (``citation-start`` / ``citation-end``),
https://docs.cohere.com/v2/reference/chat (the whole response).
The shapes and key order are those of the recorded streams in
``tests/data/cohere-chat`` (see its ``SOURCES.md``).

A stream is ``message-start``; per thinking or text block ``content-start``,
``content-delta``\\* and ``content-end`` (numbered by ``index``, in the order blocks
start); per call ``tool-call-start``, ``tool-call-delta``\\* (arguments as text) and
``tool-call-end`` (numbered apart); per citation ``citation-start`` (the whole
citation) and ``citation-end`` (numbered apart again); then ``message-end`` with the
finish reason and usage, and ``data: [DONE]`` as recorded streams end. A failure is
``message-end`` with ``finish_reason: ERROR`` (``TIMEOUT``… when the error's kind has
its own) and the error's text, and nothing after.

The text a turn says before it calls tools is Cohere's *tool plan*
(``tool-plan-delta``, no index, no start or end), the rest is content. Which one a
text is becomes known only when a call starts or the answer ends: when the request
declares tools (or when there is no client conversation: a script rendered on its
own), text that may still be a plan is held, with what follows it, until then. A
client's request that declares no tools rules calls out: its text streams live.
"""

from __future__ import annotations

from typing import Any

import msgspec

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
from ...types import AssistantMessage, Citation, TextContent, ThinkingContent, ToolCall, Usage
from .._common import block_as_text
from .._server.reply import ErrorReply, arguments_text, role_tool_results
from .._server.request import GatewayRequest
from .._server.wire import WireServer
from ._embed_render import EMBED_PATHS, render_embeddings
from .spec import (
    API_NAME,
    DONE,
    ERROR_FINISH,
    ERROR_STATUSES,
    EVENTS,
    FAILED_FINISH_REASONS,
    FINISH_OF,
    FINISH_REASONS,
    MOCK_ID,
    TOOL_ID_PREFIX,
    VERSION_SEGMENT,
)

__all__ = ["SERVER", "Renderer", "error_body", "finish_reason", "message_body", "usage_object"]

_enc = msgspec.json.encode


def _name(kind: str) -> bytes:
    """An event type, checked against the spec's table (a typo cannot reach the wire)."""
    if kind not in EVENTS:  # pragma: no cover - a programming error, caught at import
        raise ValueError(f"{kind!r} is not a Cohere chat stream event")
    return kind.encode()


def _head(kind: str) -> bytes:
    """An event of ``kind`` up to its ``type``: the SSE ``event:`` line names it too."""
    return b"event: " + _name(kind) + b'\ndata: {"type":"' + _name(kind) + b'"'


# message-start alone has its id before its type (as recorded); it announces an empty
# message, with arrays, as every recording has them.
_START = b"event: " + _name("message-start") + b'\ndata: {"id":'
_EMPTY = (b',"type":"' + _name("message-start") + b'","delta":{"message":{"role":"assistant",'
          b'"content":[],"tool_plan":"","tool_calls":[],"citations":[]}}}\n\n')  # fmt: skip
_CONTENT_START = _head("content-start") + b',"index":'
_CONTENT_DELTA = _head("content-delta") + b',"index":'
_CONTENT_END = _head("content-end") + b',"index":'
_PLAN_DELTA = _head("tool-plan-delta") + b',"delta":{"message":{"tool_plan":'
_CALL_START = _head("tool-call-start") + b',"index":'
_CALL_DELTA = _head("tool-call-delta") + b',"index":'
_CALL_END = _head("tool-call-end") + b',"index":'
_CITE_START = _head("citation-start") + b',"index":'
_CITE_END = _head("citation-end") + b',"index":'
_MESSAGE_END = _head("message-end") + b',"delta":{"finish_reason":'
_DONE = b"data: " + DONE.encode() + b"\n\n"
_TEXT_START = b',"delta":{"message":{"content":{"type":"text","text":""}}}}\n\n'
_THINKING_START = b',"delta":{"message":{"content":{"type":"thinking","thinking":""}}}}\n\n'
_TEXT_PIECE = b',"delta":{"message":{"content":{"text":'
_THINKING_PIECE = b',"delta":{"message":{"content":{"thinking":'
_ARGS_PIECE = b',"delta":{"message":{"tool_calls":{"function":{"arguments":'
_END_CONTENT = b"}}}}\n\n"
_END_PLAN = b"}}}\n\n"
_END_ARGS = b"}}}}}\n\n"
_END = b"}\n\n"


def finish_reason(message: AssistantMessage) -> str:
    """The ``finish_reason`` for ``message``: a Cohere backend's own when it means
    the same stop (``STOP_SEQUENCE``), else the stop reason's."""
    reason = message.stop_reason
    given = message.provider_stop_reason
    if message.api == API_NAME and given is not None and FINISH_REASONS.get(given) == reason:
        return given
    return FINISH_OF.get(reason or "", ERROR_FINISH)


def usage_object(u: Usage) -> bytes:
    """``usage``: ``billed_units`` (what modelwire's decoder reads) and ``tokens`` alike.
    Cohere's counts have no cache split, so every prompt token is an input token;
    ``cached_tokens`` says how many of them were read from the cache."""
    prompt = u.input + u.cache_read + u.cache_write
    counts = b'{"input_tokens":%d,"output_tokens":%d}' % (prompt, u.output)
    return (b'{"billed_units":' + counts + b',"tokens":' + counts
            + b',"cached_tokens":%d}' % u.cache_read)  # fmt: skip


def _citation(c: Citation, text_len: int, native: bool) -> bytes:
    """A citation object: a Cohere backend's as received, else built from its fields
    as a document source (``{start, end, text, sources, type}``, rag-streaming docs)."""
    if native and c.raw is not None:
        return c.raw.encode()
    doc_id = c.document or "doc_0"
    document: dict[str, Any] = {"id": doc_id}
    if c.title is not None:
        document["title"] = c.title
    if c.url is not None:
        document["url"] = c.url
    return _enc({"start": c.start or 0, "end": c.end if c.end is not None else text_len,
                 "text": c.cited_text or "",
                 "sources": [{"type": "document", "id": doc_id, "document": document}],
                 "type": "TEXT_CONTENT"})  # fmt: skip


def _plans(content: tuple[Any, ...]) -> set[int]:
    """The text blocks said before the first tool call of a turn that calls tools."""
    first = next((i for i, b in enumerate(content) if isinstance(b, ToolCall)), None)
    if first is None:
        return set()
    return {i for i in range(first) if isinstance(content[i], TextContent)}


def message_body(request: GatewayRequest, message: AssistantMessage, response_id: str) -> bytes:
    """The chat response to a request without ``"stream": true``: ``id``,
    ``finish_reason``, ``message`` (``content``, ``tool_plan``, ``tool_calls``,
    ``citations``, each only when there is one) and ``usage``."""
    native = message.api == API_NAME
    plans = _plans(message.content)
    content: list[Any] = []
    plan: list[str] = []
    calls: list[Any] = []
    cites: dict[bytes, None] = {}
    for i, b in enumerate(message.content):
        if isinstance(b, ThinkingContent):
            content.append({"type": "thinking", "thinking": b.thinking})
        elif isinstance(b, TextContent):
            if i in plans:
                plan.append(b.text)
            else:
                content.append({"type": "text", "text": b.text})
            cites.update(dict.fromkeys(_citation(c, len(b.text), native) for c in b.citations))
        elif isinstance(b, ToolCall):
            fn = {"name": b.name, "arguments": arguments_text(b)}
            calls.append({"id": b.id, "type": "function", "function": fn})
        else:  # Cohere runs no tools itself: another API's provider-run tool as text
            text = block_as_text(b)
            if text is not None:
                content.append({"type": "text", "text": text})
    out: dict[str, Any] = {"role": "assistant"}
    if content:
        out["content"] = content
    if plan:
        out["tool_plan"] = "".join(plan)
    if calls:
        out["tool_calls"] = calls
    if cites:
        out["citations"] = [msgspec.Raw(c) for c in cites]
    return (b'{"id":' + _enc(response_id or MOCK_ID) + b',"finish_reason":'
            + _enc(finish_reason(message)) + b',"message":' + _enc(out) + b',"usage":'
            + usage_object(message.usage) + b"}")  # fmt: skip


class Renderer:
    """One streamed answer: :meth:`feed` each event, write what it returns."""

    __slots__ = ("_called", "_cited", "_cites", "_content", "_held", "_index", "_may_call",
                 "_next_cite", "_open", "_piece", "_plan", "_rid", "_sent",
                 "_tools")  # fmt: skip

    def __init__(self, request: GatewayRequest, response_id: str) -> None:
        self._rid = _enc(response_id or MOCK_ID)
        # A tool plan needs a call to follow, and a call a declared tool: a client's
        # request (it has messages) without tools, or with tool_choice none, rules calls
        # out. With no conversation (a script rendered on its own) anything may come.
        ctx = request.context
        self._may_call = (bool(ctx.tools) or not ctx.messages) and (
            request.options.get("tool_choice") != "none"
        )
        self._called = False  # a call has started: text after it is content
        self._held: list[Event] | None = None  # events waiting to know what a text is
        self._plan: set[int] = set()  # content index of text sent as the tool plan
        self._content = 0  # the next content-start index
        self._tools = 0  # the next tool-call index
        self._next_cite = 0  # the next citation index
        self._index: dict[int, bytes] = {}  # content index → its wire index (encoded)
        # content index → the head and the end of its delta events
        self._piece: dict[int, tuple[bytes, bytes]] = {}
        self._open: dict[int, bytes] = {}  # content index → the end event still owed
        self._sent: set[int] = set()  # calls whose arguments came as deltas
        # open text → its citations (and whether a Cohere backend sent them), sent at
        # its end, after the text they cite, as Cohere streams them
        self._cites: dict[int, list[tuple[Citation, bool]]] = {}
        self._cited: dict[int, set[bytes]] = {}  # text → the citations sent for it

    def feed(self, event: Event) -> bytes:
        """The bytes ``event`` becomes (``b""`` for events with no form here)."""
        t = type(event)
        if self._held is not None:
            if t is ToolCallStartEvent:
                return self._release(plan=True) + self._handle(event)
            if t is DoneEvent or t is ErrorEvent or t is RestartEvent:
                return self._release(plan=False) + self._handle(event)
            self._held.append(event)
            return b""
        if t is TextDeltaEvent or t is ThinkingDeltaEvent:
            ev: Any = event
            piece = self._piece.get(ev.content_index)
            if piece is None or not ev.delta:
                return b""
            return piece[0] + _enc(ev.delta) + piece[1]
        if t is ToolCallDeltaEvent:
            return self._arguments(event)  # type: ignore[arg-type]
        if t is TextStartEvent and self._may_call and not self._called:
            self._held = [event]  # a plan if a call follows, else content
            return b""
        return self._handle(event)

    def _release(self, *, plan: bool) -> bytes:
        held, self._held = self._held or [], None
        if plan:
            self._called = True
            self._plan.update(e.content_index for e in held if type(e) is TextStartEvent)
        return b"".join(self._handle(e) for e in held)

    def _handle(self, event: Event) -> bytes:
        if isinstance(event, TextDeltaEvent | ThinkingDeltaEvent | ToolCallDeltaEvent):
            return self.feed(event)  # (only while a held backlog is released)
        if isinstance(event, StartEvent):
            return _START + self._rid + _EMPTY
        if isinstance(event, TextStartEvent | ThinkingStartEvent):
            return self._start(event)
        if isinstance(event, TextEndEvent):
            return self._text_end(event.content_index, len(event.content.text))
        if isinstance(event, ThinkingEndEvent):
            return self._end(event.content_index)
        if isinstance(event, ToolCallStartEvent):
            return self._call_start(event)
        if isinstance(event, ToolCallEndEvent):
            return self._call_end(event)
        if isinstance(event, CitationEvent):
            return self._citation(event)
        if isinstance(event, BlockEvent):
            return self._block(event)
        if isinstance(event, DoneEvent):
            m = event.message
            return (self._close_all(m) + _MESSAGE_END + _enc(finish_reason(m)) + b',"usage":'
                    + usage_object(m.usage) + b"}}\n\n" + _DONE)  # fmt: skip
        if isinstance(event, ErrorEvent):
            # Cohere's in-stream failure (chat-stream reference, message-end's
            # ``delta.error``): a text, no type or code, so the finish reason says
            # what it can (a timeout, a filter, the context limit).
            err = event.message.error
            text = err.message if err is not None else "the response was aborted"
            kind = err.kind if err is not None else ""
            reason = next((r for r, (k, _) in FAILED_FINISH_REASONS.items() if k == kind),
                          ERROR_FINISH)  # fmt: skip
            return (_MESSAGE_END + _enc(reason) + b',"error":' + _enc(text)
                    + b"}}\n\n")  # fmt: skip
        if isinstance(event, RestartEvent):
            # A Fallback starts over on its next model, from content index 0: what was
            # sent stays sent, the next model's blocks take the next indexes.
            out = self._close_all(event.message)
            self._index, self._piece, self._plan = {}, {}, set()
            self._sent, self._cited = set(), {}
            self._called = False
            return out
        return b""  # pragma: no cover - every event type is handled above

    def _start(self, event: TextStartEvent | ThinkingStartEvent) -> bytes:
        ci = event.content_index
        text = isinstance(event, TextStartEvent)
        if text:
            self._cites[ci] = []
        if ci in self._plan:  # the plan has no index, start or end
            self._piece[ci] = (_PLAN_DELTA, _END_PLAN)
            return b""
        i = self._index[ci] = b"%d" % self._content
        self._content += 1
        self._piece[ci] = (_CONTENT_DELTA + i + (_TEXT_PIECE if text else _THINKING_PIECE),
                           _END_CONTENT)  # fmt: skip
        self._open[ci] = _CONTENT_END + i + _END
        return _CONTENT_START + i + (_TEXT_START if text else _THINKING_START)

    def _end(self, ci: int) -> bytes:
        self._piece.pop(ci, None)
        return self._open.pop(ci, b"")

    def _text_end(self, ci: int, text_len: int) -> bytes:
        return self._cite(ci, self._cites.pop(ci, []), text_len) + self._end(ci)

    def _cite(self, ci: int, cites: list[tuple[Citation, bool]], text_len: int) -> bytes:
        out = b""
        sent = self._cited.setdefault(ci, set())
        for c, native in cites:
            body = _citation(c, text_len, native)
            if body in sent:  # a Cohere citation with several sources: several Citations
                continue
            sent.add(body)
            k = b"%d" % self._next_cite
            self._next_cite += 1
            out += (_CITE_START + k + b',"delta":{"message":{"citations":' + body + _END_PLAN
                    + _CITE_END + k + _END)  # fmt: skip
        return out

    def _citation(self, event: CitationEvent) -> bytes:
        ci = event.content_index
        partial = event.partial
        cite = (event.citation, partial.api == API_NAME)
        block = partial.content[ci] if ci < len(partial.content) else None
        text = block.text if isinstance(block, TextContent) else ""
        pending = self._cites.get(ci)
        if pending is not None and not text:
            # Before any of its text (as Anthropic sends them, and scripts): sent at the
            # text's end, since Cohere sends a citation after the text it cites.
            pending.append(cite)
            return b""
        return self._cite(ci, [cite], len(text))

    def _call_start(self, event: ToolCallStartEvent) -> bytes:
        ci = event.content_index
        block = event.partial.content[ci]
        if not isinstance(block, ToolCall):  # pragma: no cover - the assembler's invariant
            return b""
        self._called = True
        i = self._index[ci] = b"%d" % self._tools
        self._tools += 1
        self._open[ci] = _CALL_END + i + _END
        call = {"id": block.id, "type": "function",
                "function": {"name": block.name, "arguments": ""}}  # fmt: skip
        return _CALL_START + i + b',"delta":{"message":{"tool_calls":' + _enc(call) + _END_PLAN

    def _arguments(self, event: ToolCallDeltaEvent) -> bytes:
        ci = event.content_index
        i = self._index.get(ci)
        if i is None or not event.delta:
            return b""
        self._sent.add(ci)
        return _CALL_DELTA + i + _ARGS_PIECE + _enc(event.delta) + _END_ARGS

    def _call_end(self, event: ToolCallEndEvent) -> bytes:
        ci = event.content_index
        i = self._index.get(ci)
        if i is None or ci not in self._open:
            return b""
        out = b""
        if ci not in self._sent:  # arguments that came whole: one delta
            text = arguments_text(event.tool_call)
            out = _CALL_DELTA + i + _ARGS_PIECE + _enc(text) + _END_ARGS
        return out + self._end(ci)

    def _block(self, event: BlockEvent) -> bytes:
        # Cohere runs no tools itself: another API's provider-run tool reads as text,
        # as mw.handoff shows it; an opaque item has no Cohere form.
        text = block_as_text(event.content)
        if text is None:
            return b""
        i = b"%d" % self._content
        self._content += 1
        return (_CONTENT_START + i + _TEXT_START + _CONTENT_DELTA + i + _TEXT_PIECE + _enc(text)
                + _END_CONTENT + _CONTENT_END + i + _END)  # fmt: skip

    def _close_all(self, message: AssistantMessage) -> bytes:
        """End what is still open (a backend that never ended a block)."""
        out = b""
        for ci in sorted(self._open.keys() | self._cites.keys()):
            block = message.content[ci] if ci < len(message.content) else None
            size = len(block.text) if isinstance(block, TextContent) else 0
            out += self._cite(ci, self._cites.pop(ci, []), size) + self._end(ci)
        return out


def error_body(status: int, message: str, kind: str | None = None) -> ErrorReply:
    """``{"id", "message"}``, Cohere's error body (errors reference); the text is the
    given one, Cohere's own wording for the status when there is none."""
    return ErrorReply(body={"id": MOCK_ID, "message": message or ERROR_STATUSES.get(status, "")})


#: How a server speaks Cohere's v2 chat (the mock server).
SERVER = WireServer(
    renderer=Renderer, message_body=message_body, tool_results=role_tool_results,
    version_segment=VERSION_SEGMENT, error_body=error_body, tool_id_prefix=TOOL_ID_PREFIX,
    # message-end's error is a bare text: no type or code says "overloaded".
    in_band_kind="provider_stream",
    embed_paths=EMBED_PATHS, render_embeddings=render_embeddings,
)  # fmt: skip
