"""modelwire's events → Ollama's ``/api/chat`` NDJSON stream, live; a final message → the
one object a request with ``"stream": false`` gets.

Reference: https://github.com/ollama/ollama/blob/main/docs/api.md ("Generate a chat
completion": the streamed lines and the final one, "List Local Models", "Errors") and
https://ollama.com/blog/streaming-tool (tool calls inside a stream).

Every line is one JSON object ending in ``\\n``: ``{"model", "created_at", "message":
{"role": "assistant", "content", …}, "done": false}``, one per text or thinking piece
(``content`` / ``thinking``) and one per tool call (``tool_calls``, the call whole:
arguments are an object, so a call is written when it ends). The last line has
``"done": true``, ``done_reason`` and the counts (``prompt_eval_count`` /
``eval_count``, durations zero). A failure is an ``{"error": "…"}`` line.

Ollama has no response id, no tool-call ids (matched by name and order), no
citations and no signatures: those are not written. It runs no tools itself, so
another API's provider-run tool blocks are written as text, as :mod:`.encode` shows
them to Ollama; an opaque provider item has no form here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from ...events import (
    BlockEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallEndEvent,
)
from ...types import AssistantMessage, TextContent, ThinkingContent, ToolCall
from .._common import block_as_text
from .._server.reply import ErrorReply, arguments_object, compact_json, role_tool_results
from .._server.request import GatewayRequest
from .._server.wire import WireServer
from ._embed_render import EMBED_PATHS, render_embeddings
from .spec import (
    API_NAME,
    CONTENT_TYPE,
    DONE_REASON_OF,
    DONE_REASONS,
    MODELS_PATH,
    VERSION_SEGMENT,
)

__all__ = [
    "SERVER",
    "Renderer",
    "done_reason",
    "error_body",
    "message_body",
    "render_models",
    "streams",
]

_enc = msgspec.json.encode

# Pre-encoded pieces of a line, around the one value that changes.
_MESSAGE = b'","message":{"role":"assistant","content":'
_MORE = b'},"done":false}\n'
_THINKING = b'"","thinking":'
_CALLS = b'"","tool_calls":['


def done_reason(message: AssistantMessage) -> str:
    """The ``done_reason`` for ``message``: an Ollama backend's own when it means the
    same end, else the stop reason's (a turn that calls tools ends with ``stop``)."""
    mapped = DONE_REASON_OF.get(message.stop_reason or "stop", "stop")
    own = message.provider_stop_reason
    if (
        message.api == API_NAME
        and own is not None
        and DONE_REASONS.get(own) == DONE_REASONS[mapped]
    ):
        return own
    return mapped


def _final(message: AssistantMessage) -> bytes:
    """The last line's fields after ``done``: the reason and the counts. Ollama
    reports no cache reads or writes: every prompt token counts as input."""
    u = message.usage
    return (b',"done_reason":' + _enc(done_reason(message))
            + b',"total_duration":0,"load_duration":0,"prompt_eval_count":%d'
              b',"prompt_eval_duration":0,"eval_count":%d,"eval_duration":0}'
            % (u.input + u.cache_read + u.cache_write, u.output))  # fmt: skip


def _stamp(ns: int) -> bytes:
    """``created_at``: RFC 3339 in UTC with nanoseconds, as Ollama writes it."""
    secs, frac = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)).encode() + b".%09dZ" % frac


def _call(call: ToolCall) -> bytes:
    """One ``tool_calls`` entry: no id (Ollama matches results by name and order)."""
    entry = {"function": {"name": call.name, "arguments": arguments_object(call)}}
    return compact_json(entry).encode()


def _server_text(block: object) -> str:
    text = block_as_text(block)  # the handoff's wording for provider-run tools
    return f"{text}\n" if text else ""


def message_body(request: GatewayRequest, message: AssistantMessage, response_id: str) -> bytes:
    """The chat response to ``"stream": false``: the whole message (``content``,
    ``thinking`` and ``tool_calls`` when there are some) and the last line's fields."""
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[bytes] = []
    for b in message.content:
        if isinstance(b, TextContent):
            texts.append(b.text)
        elif isinstance(b, ThinkingContent):
            thinking.append(b.thinking)
        elif isinstance(b, ToolCall):
            calls.append(_call(b))
        else:
            texts.append(_server_text(b))
    out = (b'{"model":' + _enc(request.model) + b',"created_at":"' + _stamp(time.time_ns())
           + _MESSAGE + _enc("".join(texts)))  # fmt: skip
    reasoning = "".join(thinking)
    if reasoning:  # (redacted thinking has no text to show)
        out += b',"thinking":' + _enc(reasoning)
    if calls:
        out += b',"tool_calls":[' + b",".join(calls) + b"]"
    return out + b'},"done":true' + _final(message)


class Renderer:
    """One streamed answer: :meth:`feed` each event, write what it returns."""

    __slots__ = ("_head", "_n", "_t0")

    def __init__(self, request: GatewayRequest, response_id: str) -> None:
        # ``response_id`` is not written: Ollama's responses have none.
        self._head = b'{"model":' + _enc(request.model) + b',"created_at":"'
        self._t0 = time.time_ns()
        self._n = 0

    def feed(self, event: Event) -> bytes:
        """The bytes ``event`` becomes (``b""`` for events with no form here)."""
        handler = _HANDLERS.get(type(event))
        return handler(self, event) if handler is not None else b""

    def _line(self, message: bytes) -> bytes:
        # created_at one nanosecond apart: unique per line, and the decoder's tool-call
        # ids (a hash of the model and the first created_at) unique per response.
        self._n += 1
        return self._head + _stamp(self._t0 + self._n) + _MESSAGE + message

    def _on_text(self, event: TextDeltaEvent) -> bytes:
        return self._line(_enc(event.delta) + _MORE) if event.delta else b""

    def _on_thinking(self, event: ThinkingDeltaEvent) -> bytes:
        return self._line(_THINKING + _enc(event.delta) + _MORE) if event.delta else b""

    def _on_call_end(self, event: ToolCallEndEvent) -> bytes:
        return self._line(_CALLS + _call(event.tool_call) + b"]" + _MORE)

    def _on_block(self, event: BlockEvent) -> bytes:
        text = _server_text(event.content)
        return self._line(_enc(text) + _MORE) if text else b""

    def _on_done(self, event: DoneEvent) -> bytes:
        return self._line(b'""},"done":true' + _final(event.message) + b"\n")

    def _on_error(self, event: ErrorEvent) -> bytes:
        # Ollama's in-stream error: a line with a bare text, no type or code
        # (api.md, "Errors"); nothing follows it.
        err = event.message.error
        text = err.message if err is not None else "the response was aborted"
        return b'{"error":' + _enc(text) + b"}\n"


# Starts, ends and tool-call deltas have no line of their own (a call is written whole
# at its end); citations have no Ollama form; a restart needs nothing closed.
_HANDLERS: dict[type, Callable[[Renderer, Any], bytes]] = {
    TextDeltaEvent: Renderer._on_text,
    ThinkingDeltaEvent: Renderer._on_thinking,
    ToolCallEndEvent: Renderer._on_call_end,
    BlockEvent: Renderer._on_block,
    DoneEvent: Renderer._on_done,
    ErrorEvent: Renderer._on_error,
}


def streams(path: str, body: object) -> bool:
    """/api/chat streams unless the body says ``"stream": false`` (api.md, "Generate a
    chat completion": ``stream`` defaults to true)."""
    return not (isinstance(body, dict) and body.get("stream") is False)


def error_body(status: int, message: str, kind: str | None = None) -> ErrorReply:
    """An HTTP error: Ollama's are ``{"error": "<text>"}``, no type to carry (api.md,
    "Errors")."""
    return ErrorReply(body={"error": message})


def render_models(ids: Sequence[str]) -> dict[str, Any]:
    """``GET /api/tags`` (api.md, "List Local Models")."""
    return {"models": [{"name": i, "model": i, "modified_at": "2025-01-01T00:00:00Z",
                        "size": 0, "digest": "0" * 64,
                        "details": {"format": "gguf", "family": "mock", "families": ["mock"],
                                    "parameter_size": "0B", "quantization_level": "Q4_0"}}
                       for i in ids]}  # fmt: skip


#: How a server speaks Ollama's chat (the mock server; a gateway front end could too).
SERVER = WireServer(
    renderer=Renderer, message_body=message_body, tool_results=role_tool_results,
    content_type=CONTENT_TYPE, version_segment=VERSION_SEGMENT,  # the server root
    streams=streams, error_body=error_body, models_path=MODELS_PATH,
    render_models=render_models,
    # The {"error": …} line is a bare text: no type or code says "overloaded".
    in_band_kind="provider_stream",
    embed_paths=EMBED_PATHS, render_embeddings=render_embeddings,
)  # fmt: skip
