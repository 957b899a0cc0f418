"""modelwire's events → Chat Completions chunks, live; a final message → ``chat.completion``.

References: https://platform.openai.com/docs/api-reference/chat-streaming (the
``chat.completion.chunk`` object: a first delta with the role, ``content`` and
``tool_calls[index]`` fragments, a last choice with ``finish_reason``, with
``stream_options.include_usage`` a usage chunk whose ``choices`` is empty and
``usage: null`` on every other chunk, then ``data: [DONE]``) and
https://platform.openai.com/docs/api-reference/chat/object.

Each chunk is pre-encoded byte pieces around the one JSON-encoded value that
changes (a delta's text), so an event costs one string encode and a join.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from ...errors import AbortedError, error_class_for_kind
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
    ImageContent,
    ServerToolCall,
    ServerToolResult,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from .._common import block_as_text, citations_as_text, raw_or_json_arguments
from .._server.reply import role_tool_results
from .._server.request import GatewayRequest
from .._server.wire import WireServer
from ._carry import API, call_extra, needs_seal, thinking_entry
from ._embed_render import EMBED_PATHS, render_embeddings
from ._error_shape import error_object
from .spec import (
    CHUNK_OBJECT,
    COMPLETION_OBJECT,
    DONE,
    FILTERED_FINISH,
    FINISH_OF,
    ID_PREFIX,
    OWN_FINISH_REASONS,
)

__all__ = ["SERVER", "ChatRenderer", "finish_reason", "message_body", "render_models",
           "usage_object"]  # fmt: skip

_encode = msgspec.json.Encoder().encode
# Pre-encoded pieces of every chunk and of the stream's end.
_CHUNK_OBJECT = b',"object":' + _encode(CHUNK_OBJECT) + b',"created":'
_DONE = b"data: " + DONE.encode() + b"\n\n"


def finish_reason(message: AssistantMessage) -> str:
    if _filtered(message):
        return FILTERED_FINISH
    own = message.provider_stop_reason
    if message.api == API and own in OWN_FINISH_REASONS:
        return own
    return FINISH_OF.get(message.stop_reason or "stop", "stop")


def _filtered(message: AssistantMessage) -> bool:
    """Stopped by a content filter (or a refusal): this API says so with
    ``finish_reason: "content_filter"`` on a normal answer, not with an error."""
    return message.error is not None and message.error.kind == "content_filter"


def usage_object(u: Usage) -> dict[str, Any]:
    """Chat's ``usage``: ``prompt_tokens`` counts cached and cache-written tokens too
    (modelwire's ``Usage.input`` does not), ``cached_tokens`` the reads; the writes,
    which OpenAI does not report, as OpenRouter names them (``cache_write_tokens``)."""
    prompt = u.input + u.cache_read + u.cache_write
    return {
        "prompt_tokens": prompt, "completion_tokens": u.output,
        "total_tokens": prompt + u.output,
        "prompt_tokens_details": {"cached_tokens": u.cache_read,
                                  "cache_write_tokens": u.cache_write},
    }  # fmt: skip


def _annotation(c: Citation, span: tuple[int, int], same_api: bool) -> dict[str, Any] | None:
    """A ``url_citation`` annotation (``None``: the citation has no URL, no Chat form).
    A Chat backend's own annotation is passed as sent; another API's spans count in
    its own text, so the cited block's span in this message is given instead."""
    if same_api and c.raw:
        value = msgspec.json.decode(c.raw)
        if isinstance(value, dict) and value.get("type") == "url_citation":
            return value
    if not c.url:
        return None
    cite = {"url": c.url, "title": c.title or "", "start_index": span[0], "end_index": span[1]}
    return {"type": "url_citation", "url_citation": cite}


def _server_text(block: object) -> str:
    text = block_as_text(block)  # the handoff's wording for provider-run tools
    return f"{text}\n" if text else ""


def message_body(request: GatewayRequest, message: AssistantMessage, response_id: str) -> bytes:
    """The ``chat.completion`` object of a finished message."""
    seal = needs_seal(message.api)
    same = not seal
    texts: list[str] = []
    chars = 0
    thinking: list[str] = []
    details: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    for b in message.content:
        if isinstance(b, TextContent):
            start = chars
            texts.append(b.text)
            chars += len(b.text)
            other = []
            for c in b.citations:
                note = _annotation(c, (start, chars), same)
                if note is None:
                    other.append(c)
                else:
                    notes.append(note)
            if other:
                extra = citations_as_text(tuple(other))
                texts.append(extra)
                chars += len(extra)
        elif isinstance(b, ThinkingContent):
            if not b.redacted:
                thinking.append(b.thinking)
            if seal:
                entry = thinking_entry(message, b, len(details))
                details.append(entry)
                pending.append(entry)
        elif isinstance(b, ToolCall):
            call: dict[str, Any] = {
                "id": b.id,
                "type": "function",
                "function": {
                    "name": b.name,
                    "arguments": raw_or_json_arguments(b.raw_arguments, b.arguments),
                },
            }
            extra_content = call_extra(message, b, pending) if seal else None
            pending = []
            if extra_content is not None:
                call["extra_content"] = extra_content
            calls.append(call)
        elif isinstance(b, ServerToolCall | ServerToolResult | ImageContent):
            # A generated image has no Chat form: it reads as the streamed note does.
            text = _server_text(b)
            texts.append(text)
            chars += len(text)
    out: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None,
                           "refusal": None, "annotations": notes}  # fmt: skip
    if thinking:
        out["reasoning_content"] = "".join(thinking)
    if details:
        out["reasoning_details"] = details
    if calls:
        out["tool_calls"] = calls
    return _encode({
        "id": response_id, "object": COMPLETION_OBJECT, "created": int(time.time()),
        "model": message.response_model or request.model,
        "choices": [{"index": 0, "message": out, "logprobs": None,
                     "finish_reason": finish_reason(message)}],
        "usage": usage_object(message.usage),
    })  # fmt: skip


class ChatRenderer:
    """One streamed answer's chunks (a :class:`~modelwire.gateway._frontend.StreamRenderer`)."""

    __slots__ = ("_base", "_calls", "_chars", "_cites", "_details", "_head", "_message",
                 "_next_tool", "_notes", "_output", "_pending", "_request", "_response_id",
                 "_seal", "_spans", "_tail")  # fmt: skip

    def __init__(self, request: GatewayRequest, response_id: str) -> None:
        self._request = request
        self._response_id = response_id
        self._base = b""  # set at the first event: it names the model that answers
        self._head = b""
        # The usage chunk is sent only when asked for, and then every other chunk says
        # ``"usage": null`` (chat-streaming reference, ``stream_options``).
        self._tail = (b',"logprobs":null,"finish_reason":null}],"usage":null}\n\n'
                      if request.include_usage else b',"logprobs":null,"finish_reason":null}]}\n\n')  # fmt: skip
        self._message: AssistantMessage | None = None  # the stream's first snapshot
        self._seal = False
        # content index → (tool index, arguments prefix, characters sent, signature sent)
        self._calls: dict[int, tuple[int, bytes, int, bool]] = {}
        self._next_tool = 0
        self._pending: list[dict[str, Any]] = []  # sealed thinking for the next tool call
        self._details = 0
        self._chars = 0  # characters of content sent (citation spans count in them)
        self._spans: dict[int, tuple[int, int]] = {}  # text block → its span, once known
        self._cites: dict[int, list[Citation]] = {}  # open text block → citations pending
        self._notes: list[dict[str, Any]] = []  # annotations, sent in one delta at the end
        # With structured output asked for, a backend without a native form answers by
        # calling a tool the client never declared (modelwire's output tool): its
        # arguments are the answer, streamed as content, as the final message has it.
        self._output: frozenset[str] | None = (
            frozenset(t.name for t in request.context.tools or ())
            if "output" in request.options else None
        )  # fmt: skip

    def feed(self, event: Event) -> bytes:
        handler = _HANDLERS.get(type(event))
        return handler(self, event) if handler is not None else b""

    # ------------------------------------------------------------------ pieces

    def _open(self, message: AssistantMessage) -> bytes:
        """The first chunk (the role), once the stream's first snapshot names the model."""
        self._message = message
        self._seal = needs_seal(message.api)
        if self._base:
            return b""
        model = message.response_model or self._request.model
        self._base = b"".join((b'data: {"id":', _encode(self._response_id),
                               _CHUNK_OBJECT,
                               str(int(time.time())).encode(), b',"model":', _encode(model), b","))  # fmt: skip
        self._head = self._base + b'"choices":[{"index":0,"delta":'
        return self._head + b'{"role":"assistant","content":"","refusal":null}' + self._tail

    def _started(self, event: Event) -> bytes:
        return self._open(event.partial) if self._message is None else b""

    def _content(self, text: str) -> bytes:
        self._chars += len(text)
        return self._head + b'{"content":' + _encode(text) + b"}" + self._tail

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return self._head + _encode(delta) + self._tail

    # ------------------------------------------------------------------ events

    def _on_start(self, event: Event) -> bytes:
        return b""  # the model that answers is known at the next event

    def _on_text_start(self, event: TextStartEvent) -> bytes:
        out = self._started(event)
        self._spans[event.content_index] = (self._chars, -1)
        return out

    def _on_text(self, event: TextDeltaEvent) -> bytes:
        out = self._started(event)
        self._chars += len(event.delta)
        return out + self._head + b'{"content":' + _encode(event.delta) + b"}" + self._tail

    def _on_text_end(self, event: TextEndEvent) -> bytes:
        i = event.content_index
        start = self._spans.get(i, (self._chars, -1))[0]
        self._spans[i] = (start, self._chars)
        cites = self._cites.pop(i, None)
        return self._cite(cites, (start, self._chars)) if cites else b""

    def _cite(self, cites: list[Citation], span: tuple[int, int]) -> bytes:
        other = []
        for c in cites:
            note = _annotation(c, span, not self._seal)
            if note is None:
                other.append(c)
            else:
                self._notes.append(note)
        # A citation with no URL has no Chat form: its source follows as text.
        return self._content(citations_as_text(tuple(other))) if other else b""

    def _on_citation(self, event: CitationEvent) -> bytes:
        span = self._spans.get(event.content_index)
        if span is not None and span[1] >= 0:  # the block has ended: cite it now
            return self._cite([event.citation], span)
        self._cites.setdefault(event.content_index, []).append(event.citation)
        return b""

    def _on_thinking_start(self, event: ThinkingStartEvent) -> bytes:
        return self._started(event)

    def _on_thinking(self, event: ThinkingDeltaEvent) -> bytes:
        out = self._started(event)
        return (
            out + self._head + b'{"reasoning_content":' + _encode(event.delta) + b"}" + self._tail
        )

    def _on_thinking_end(self, event: ThinkingEndEvent) -> bytes:
        message = self._message
        if not self._seal or message is None:
            return b""
        entry = thinking_entry(message, event.content, self._details)
        self._details += 1
        self._pending.append(entry)
        return self._delta({"reasoning_details": [entry]})

    def _on_call_start(self, event: ToolCallStartEvent) -> bytes:
        out = self._started(event)
        message = event.partial
        block = message.content[event.content_index]
        assert isinstance(block, ToolCall)
        if self._output is not None and block.name not in self._output:
            self._calls[event.content_index] = (-1, b"", 0, True)  # the answer, as content
            return out
        k = self._next_tool
        self._next_tool += 1
        prefix = (
            self._head
            + b'{"tool_calls":[{"index":'
            + str(k).encode()
            + b',"function":{"arguments":'
        )
        signed = block.signature is not None
        self._calls[event.content_index] = (k, prefix, 0, signed)
        call: dict[str, Any] = {"index": k, "id": block.id, "type": "function",
                                "function": {"name": block.name, "arguments": ""}}  # fmt: skip
        if self._seal:
            extra = call_extra(message, block, self._pending)
            self._pending = []
            if extra is not None:
                call["extra_content"] = extra
        return out + self._delta({"tool_calls": [call]})

    def _on_call_delta(self, event: ToolCallDeltaEvent) -> bytes:
        k, prefix, sent, signed = self._calls[event.content_index]
        self._calls[event.content_index] = (k, prefix, sent + len(event.delta), signed)
        if k < 0:
            return self._content(event.delta)
        return prefix + _encode(event.delta) + b"}}]}" + self._tail

    def _on_call_end(self, event: ToolCallEndEvent) -> bytes:
        k, prefix, sent, signed = self._calls[event.content_index]
        call = event.tool_call
        raw = raw_or_json_arguments(call.raw_arguments, call.arguments)
        out = b""
        if k < 0:
            return self._content(raw[sent:]) if len(raw) > sent else out
        if len(raw) > sent:  # what the events did not stream (a call that came whole)
            out = prefix + _encode(raw[sent:]) + b"}}]}" + self._tail
        self._calls[event.content_index] = (k, prefix, len(raw), True)
        message = self._message
        if self._seal and message is not None and call.signature is not None and not signed:
            # A signature that came after the call's start: the SDK's accumulator merges
            # it into the call; ``function`` is there because the SDK's stream events
            # expect it on every tool-call fragment.
            extra = call_extra(message, call, [])
            fragment = {"index": k, "function": {"arguments": ""}, "extra_content": extra}
            out += self._delta({"tool_calls": [fragment]})
        return out

    def _on_block(self, event: BlockEvent) -> bytes:
        out = self._started(event)
        text = _server_text(event.content)
        return out + self._content(text) if text else out

    def _on_restart(self, event: RestartEvent) -> bytes:
        # The next model's events count content from 0 again: what was sent stays sent.
        self._message = None
        self._calls.clear()
        self._spans.clear()
        self._cites.clear()
        self._pending = []
        return b""

    def _on_done(self, event: DoneEvent) -> bytes:
        return self._finish(event.message)

    def _finish(self, message: AssistantMessage) -> bytes:
        out = [self._open(message) if self._message is None else b""]
        for i, cites in list(self._cites.items()):
            span = self._spans.get(i, (0, self._chars))
            out.append(self._cite(cites, (span[0], self._chars)))
        self._cites.clear()
        if self._notes:
            out.append(self._delta({"annotations": self._notes}))
        reason = finish_reason(message).encode()
        usage = b',"usage":null}\n\n' if self._request.include_usage else b"}\n\n"
        out.append(self._head + b'{},"logprobs":null,"finish_reason":"' + reason + b'"}]' + usage)
        if self._request.include_usage:
            out.append(self._base + b'"choices":[],"usage":' + _encode(usage_object(message.usage))
                       + b"}\n\n")  # fmt: skip
        out.append(_DONE)
        return b"".join(out)

    def _on_error(self, event: ErrorEvent) -> bytes:
        # The API's in-stream error: a data line holding an ``error`` object, and no
        # [DONE], so a client reads the stream as failed (the openai SDK raises APIError).
        info = event.message.error
        if _filtered(event.message):
            return self._finish(event.message)
        exc = (error_class_for_kind(info.kind)(info.message, code=info.code,
                                               retry_after=info.retry_after)
               if info is not None else AbortedError("the response was aborted"))  # fmt: skip
        _, body, _ = error_object(exc)
        return b"data: " + _encode({"error": body}) + b"\n\n"


_HANDLERS: dict[type, Callable[[ChatRenderer, Any], bytes]] = {
    StartEvent: ChatRenderer._on_start,
    TextStartEvent: ChatRenderer._on_text_start,
    TextDeltaEvent: ChatRenderer._on_text,
    TextEndEvent: ChatRenderer._on_text_end,
    CitationEvent: ChatRenderer._on_citation,
    ThinkingStartEvent: ChatRenderer._on_thinking_start,
    ThinkingDeltaEvent: ChatRenderer._on_thinking,
    ThinkingEndEvent: ChatRenderer._on_thinking_end,
    ToolCallStartEvent: ChatRenderer._on_call_start,
    ToolCallDeltaEvent: ChatRenderer._on_call_delta,
    ToolCallEndEvent: ChatRenderer._on_call_end,
    BlockEvent: ChatRenderer._on_block,
    RestartEvent: ChatRenderer._on_restart,
    DoneEvent: ChatRenderer._on_done,
    ErrorEvent: ChatRenderer._on_error,
}


def render_models(ids: Sequence[str]) -> dict[str, Any]:
    """``GET /v1/models`` (https://platform.openai.com/docs/api-reference/models/list)."""
    return {
        "object": "list",
        "data": [
            {"id": i, "object": "model", "created": 0, "owned_by": "modelwire-mock"} for i in ids
        ],
    }


def _include_usage(body: object) -> bool:
    """The usage-only chunk is sent only when the request asked for it with
    ``stream_options.include_usage`` (chat-streaming reference: "stream_options")."""
    options = body.get("stream_options") if isinstance(body, dict) else None
    return isinstance(options, dict) and options.get("include_usage") is True


#: How a server speaks Chat Completions (the gateway's front end and the mock server).
SERVER = WireServer(
    renderer=ChatRenderer, message_body=message_body, tool_results=role_tool_results,
    id_prefix=ID_PREFIX, include_usage=_include_usage, models_path="/models",
    render_models=render_models,
    embed_paths=EMBED_PATHS, render_embeddings=render_embeddings,
)  # fmt: skip
