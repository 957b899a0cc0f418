"""Ollama's native chat API: ``POST {base_url}/api/chat``, newline-delimited JSON.

Reference: https://github.com/ollama/ollama/blob/main/docs/api.md ("Generate a chat
completion") and https://ollama.com/blog/streaming-tool. ``base_url`` is the server
root (``http://127.0.0.1:11434``, DESIGN §2b). This one module is the whole API: the
registry finds it by its name (``ollama-chat`` → ``modelwire._apis.ollama_chat``).

Request: ``{"model", "messages", "tools", "stream": true, "think", "options":
{"temperature", "num_predict"}}``; messages have ``role`` system/user/assistant/tool,
``images`` (base64, no ``data:`` prefix), assistant ``thinking`` and ``tool_calls``
(``{"function": {"name", "arguments": {…}}}`` — arguments are an object, not text),
and tool results ``{"role": "tool", "content", "tool_name"}``.

Input beyond text and images: Ollama's chat takes neither files nor audio, so a
document whose bytes are text (``text/*``, JSON, XML) is sent as its text, after its
title on a line of its own; any other document, and audio, is a ``ConfigurationError``
naming the block. Ollama runs no tools of its own: another API's provider-run tool
blocks become text the model can read, and opaque provider items are not sent.

Response: one JSON object per line (:class:`~modelwire._wire.framing.NDJSONDecoder`),
``{"model", "created_at", "message": {"role", "content", "thinking", "tool_calls"},
"done": false}``; the last has ``"done": true``, ``done_reason`` and the counts
``prompt_eval_count`` / ``eval_count``. An error arrives as an ``{"error": "…"}``
line. A body without a ``done: true`` line is ``truncated_stream``.

Tool calls arrive whole, one call per entry, and carry no id. The decoder makes one
up: ``ocall_<h>_<n>``, ``<h>`` a hash of the response's model and first
``created_at`` (nanosecond timestamps: unique per response, and the same bytes give
the same ids, so a replay is deterministic), ``<n>`` the call's position. Ollama
matches results by ``tool_name`` and order, so ids are never sent back and any id
is accepted from another API (handoff: :meth:`OllamaChatAPI.tool_id_rule` is
``None``); our ids fit every other API's rule (letters, digits, ``_``; 22 chars).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from .._wire.deltas import (
    BlockEnd,
    Delta,
    EndOfStream,
    Finish,
    ResponseMeta,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UsageUpdate,
)
from .._wire.request import HTTPRequest, RequestOptions, check_extra_body
from .._wire.sse import Frame
from ..errors import ConfigurationError, MalformedChunkError, TruncatedStreamError
from ..types import (
    AssistantMessage,
    AudioContent,
    Capabilities,
    Context,
    DocumentContent,
    ImageContent,
    Model,
    ServerToolCall,
    ServerToolResult,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
)
from ._codec import MockRendering, first_line_json
from ._common import (
    Count,
    as_tool_call,
    bearer_auth,
    block_as_text,
    check_context_values,
    check_reasoning,
    check_tool_choice,
    decode_json,
    decoder_for,
    http_request,
    in_band_error,
)
from ._mock import (
    MockError,
    MockFrame,
    ScriptedReply,
    arguments_object,
    compact_json,
    role_tool_results,
    split_text,
)
from ._ollama_output import add_output

if TYPE_CHECKING:
    from .._wire.framing import Framing
    from ._codec import WireCodec

__all__ = ["API", "RESERVED", "OllamaChatAPI", "OllamaDecoder"]

#: Body fields modelwire sets; ``extra_body`` may add others (``format``,
#: ``keep_alive``) and ``options`` entries (``num_ctx``, ``top_p``…).
RESERVED = frozenset({"model", "messages", "stream", "tools", "think"})
#: ``options`` entries set by the ``max_tokens`` option.
_RESERVED_OPTIONS = frozenset({"num_predict"})
#: Prefix of the ids the decoder makes up (Ollama's tool calls carry none).
SYNTHETIC_ID_PREFIX = "ocall_"

# --------------------------------------------------------------------------- request


def _images(blocks: Sequence[object]) -> list[str]:
    return [b.data for b in blocks if isinstance(b, ImageContent)]


#: Media types whose bytes are text, besides ``text/*``.
_TEXT_TYPES = frozenset({"application/json", "application/xml", "application/x-yaml",
                         "application/yaml", "application/csv"})  # fmt: skip


def _document_text(block: DocumentContent, where: str) -> str:
    mime = block.mime_type.lower().split(";", 1)[0].strip()
    if block.data is None or not (mime.startswith("text/") or mime in _TEXT_TYPES):
        raise ConfigurationError(
            f"{where} is a {block.mime_type} document"
            f"{'' if block.data is not None else ' given by url/file_id'}, which Ollama's "
            "chat cannot take (text and images only): send a text document's bytes "
            "(data=, a text/* type) or its text as TextContent"
        )
    try:
        text = base64.b64decode(block.data, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise ConfigurationError(
            f"{where}.data must be base64 of UTF-8 text to be sent to Ollama as text"
        ) from None
    return f"{block.title}\n{text}" if block.title else text


def _text(blocks: Sequence[object], where: str) -> str:
    out = ""
    after_document = False
    for j, b in enumerate(blocks):
        if isinstance(b, TextContent):
            text, document = b.text, False
        elif isinstance(b, DocumentContent):
            text, document = _document_text(b, f"{where}.content[{j}]"), True
        elif isinstance(b, AudioContent):
            raise ConfigurationError(
                f"{where}.content[{j}] is audio, which Ollama's chat cannot take (text and "
                "images only): transcribe it and send the text"
            )
        else:
            continue  # images travel in ``images``
        if out and (document or after_document):
            out += "\n\n"  # a document is a paragraph of its own
        out += text
        after_document = document
    return out


def _assistant(msg: AssistantMessage) -> dict[str, Any] | None:
    pieces: list[str] = []
    for b in msg.content:
        if isinstance(b, TextContent):
            pieces.append(b.text)
        elif isinstance(b, ServerToolCall | ServerToolResult):
            # Ollama runs no tools itself: what another provider ran is shown as text.
            pieces.append(f"{block_as_text(b)}\n")
        # opaque provider items mean nothing to Ollama: not sent
    out: dict[str, Any] = {"role": "assistant", "content": "".join(pieces)}
    # Thinking reaches here only from this very model (handoff turns another
    # model's thinking into text); Ollama takes it back in ``thinking``.
    thinking = "".join(
        b.thinking for b in msg.content if isinstance(b, ThinkingContent) and not b.redacted
    )
    if thinking:
        out["thinking"] = thinking
    calls = [b for b in msg.content if isinstance(b, ToolCall)]
    if calls:
        out["tool_calls"] = [
            {"function": {"name": c.name, "arguments": arguments_object(c)}} for c in calls
        ]
    if not out["content"] and not thinking and not calls:
        return None  # an empty turn carries nothing
    return out


def encode_messages(context: Context) -> list[dict[str, Any]]:
    """The ``messages`` array for ``context`` (pure; the context is not changed)."""
    out: list[dict[str, Any]] = []
    if context.system_prompt:
        out.append({"role": "system", "content": context.system_prompt})
    for i, msg in enumerate(context.messages):
        if isinstance(msg, UserMessage):
            item: dict[str, Any] = {"role": "user"}
            if isinstance(msg.content, str):
                item["content"] = msg.content
            else:
                item["content"] = _text(msg.content, f"messages[{i}]")
                images = _images(msg.content)
                if images:
                    item["images"] = images
            out.append(item)
        elif isinstance(msg, AssistantMessage):
            if msg.stop_reason in ("error", "aborted"):
                continue  # a failed turn is not replayed (handoff rules)
            turn = _assistant(msg)
            if turn is not None:
                out.append(turn)
        else:
            result: dict[str, Any] = {"role": "tool", "tool_name": msg.tool_name,
                                      "content": _text(msg.content, f"messages[{i}]")}  # fmt: skip
            images = _images(msg.content)
            if images:
                result["images"] = images
            out.append(result)
    return out


def _think(model: Model, level: str | None) -> bool | str | None:
    """``think``: gpt-oss takes ``low``/``medium``/``high``; other thinking models
    only ``true`` (docs/api.md, "think")."""
    check_reasoning(model, level)
    if level is None:
        return None
    if model.id.startswith("gpt-oss") and level in ("low", "medium", "high"):
        return level
    return True


def build_body(model: Model, context: Context, options: RequestOptions) -> dict[str, Any]:
    """The JSON body of one streamed ``/api/chat`` request."""
    extra = dict(options.extra_body or {})
    check_extra_body(extra, RESERVED)
    tc = options.tool_choice
    check_tool_choice(tc, context)
    if tc == "required" or isinstance(tc, dict):
        # /api/chat has no tool_choice: a forced call cannot be asked for.
        raise ConfigurationError(
            f"tool_choice={tc!r} cannot be sent to Ollama's /api/chat (it has no "
            "tool_choice); use 'auto', 'none' or None"
        )
    body: dict[str, Any] = {"model": model.id, "messages": encode_messages(context)}
    # tool_choice "none": the model is not shown the tools, so it cannot call one.
    if context.tools and tc != "none":
        body["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": t.parameters}}
            for t in context.tools
        ]  # fmt: skip
    body["stream"] = True
    think = _think(model, options.reasoning)
    if think is not None:
        body["think"] = think
    opts: dict[str, Any] = {}
    if options.temperature is not None:
        opts["temperature"] = options.temperature
    if options.max_tokens is not None:
        opts["num_predict"] = options.max_tokens
    more = extra.pop("options", None)
    if more is not None:
        if not isinstance(more, dict):
            raise ConfigurationError("extra_body['options'] must be a dict (num_ctx, top_p, …)")
        check_extra_body(more, _RESERVED_OPTIONS)
        opts.update(more)
    if opts:
        body["options"] = opts
    add_output(body, options.output)  # format (structured output)
    body.update(extra)
    return body


# --------------------------------------------------------------------------- response


class _Function(msgspec.Struct, gc=False):
    name: str
    # An object on the wire; kept raw so ``raw_arguments`` is the exact text sent.
    arguments: msgspec.Raw = msgspec.Raw(b"{}")


class _ToolCall(msgspec.Struct, gc=False):
    function: _Function
    id: str | None = None


class _Message(msgspec.Struct, gc=False):
    content: str = ""
    thinking: str | None = None
    tool_calls: list[_ToolCall] | None = None


class _Line(msgspec.Struct, gc=False):
    model: str | None = None
    created_at: str | None = None
    message: _Message | None = None
    done: bool = False
    done_reason: str | None = None
    prompt_eval_count: Count | None = None
    eval_count: Count | None = None
    error: str | None = None


_line_decoder = decoder_for(_Line)

_DONE: dict[str, Literal["stop", "length"]] = {"stop": "stop", "length": "length"}
# ``load``/``unload``: the server loaded or unloaded the model and generated nothing
# (docs/api.md, "Load a model"): not an answer.
_FAILED = {"load", "unload"}


class OllamaDecoder:
    """Per-response decoder: NDJSON lines → normalized deltas."""

    __slots__ = ("_calls", "_done", "_id_base", "_meta")

    def __init__(self) -> None:
        self._calls = 0
        self._done = False
        self._id_base: str | None = None
        self._meta = False

    def decode(self, frame: Frame) -> list[Delta]:
        data = frame.data
        if not self._meta and data.startswith((b"data:", b"event:", b":")):
            # A Server-Sent-Events body (an OpenAI-compatible /v1 endpoint?), not NDJSON.
            raise MalformedChunkError(
                "malformed line: the body is Server-Sent Events (it starts with "
                f"{data.split(b':', 1)[0].decode()!r}:), not Ollama's NDJSON: decode it with the API "
                "that sent it (e.g. api='openai-chat' for Ollama's /v1 endpoint)"
            )
        line = decode_json(data, _line_decoder, "line")
        if line.error is not None:
            raise in_band_error(line.error)
        out: list[Delta] = []
        if not self._meta:
            self._meta = True
            out.append(ResponseMeta(model=line.model))
            if self._id_base is None:
                seed = f"{line.model}\x00{line.created_at}" if line.created_at else None
                self._id_base = (
                    hashlib.sha256(seed.encode()).hexdigest()[:12] if seed else secrets.token_hex(6)
                )
        msg = line.message
        if msg is not None:
            if msg.thinking:
                out.append(ThinkingDelta("thinking", msg.thinking))
            if msg.content:
                out.append(TextDelta("text", msg.content))
            for i, call in enumerate(msg.tool_calls or ()):
                out.extend(self._call(call, i))
        if line.done:
            self._done = True
            out.append(UsageUpdate(input=line.prompt_eval_count, output=line.eval_count))
            out.append(self._finish(line.done_reason))
            out.append(EndOfStream())
        return out

    def _call(self, call: _ToolCall, i: int) -> list[Delta]:
        n = self._calls
        self._calls += 1
        key = ("tool", n)
        call_id = call.id or f"{SYNTHETIC_ID_PREFIX}{self._id_base}_{n}"
        if not call.function.name:
            raise MalformedChunkError(
                f"malformed line: message.tool_calls[{i}].function.name must not be empty"
            )
        raw = bytes(call.function.arguments).decode()
        return [ToolCallDelta(key, call_id, call.function.name, raw), BlockEnd(key)]

    def _finish(self, reason: str | None) -> Finish:
        if reason in _FAILED:
            return Finish("error", reason, "provider_stream",
                          f"Ollama {reason}ed the model and generated nothing "
                          f"(done_reason {reason!r})")  # fmt: skip
        # No reason or an unknown one is a normal end (forward compatible); the raw
        # value stays in ``provider_stop_reason``.
        return Finish(_DONE.get(reason or "stop", "stop"), reason)

    def end(self) -> list[Delta]:
        if not self._done:
            raise TruncatedStreamError(
                'the Ollama stream ended without a line with "done": true (the server '
                "stopped before finishing the answer); retry the request"
            )
        return [EndOfStream()]


# --------------------------------------------------------------------------- mock


def render(reply: ScriptedReply, model: str, rid: str, pc: int) -> list[MockFrame]:
    """The lines Ollama streams for a scripted reply (``rid`` is not sent: the API
    has no response id)."""
    t0 = time.time_ns()
    n = 0

    def line(message: dict[str, Any], **final: Any) -> MockFrame:
        nonlocal n
        n += 1
        # RFC 3339 with nanoseconds, as Ollama writes created_at; unique per response.
        secs, ns = divmod(t0 + n, 1_000_000_000)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{ns:09d}Z"
        return (None, {"model": model, "created_at": stamp,
                       "message": {"role": "assistant", "content": "", **message},
                       "done": bool(final), **final})  # fmt: skip

    frames: list[MockFrame] = []
    for block in reply.content:
        if isinstance(block, ThinkingContent):
            frames += [line({"thinking": p}) for p in split_text(block.thinking, pc)]
        elif isinstance(block, TextContent):
            frames += [line({"content": p}) for p in split_text(block.text, pc)]
        else:
            block = as_tool_call(block, "the ollama-chat mock")
            call = {"function": {"name": block.name, "arguments": arguments_object(block)}}
            frames.append(line({"tool_calls": [call]}))
    frames.append(line({}, **_final(reply)))
    return frames


def _final(reply: ScriptedReply) -> dict[str, Any]:
    u = reply.usage
    # Ollama reports no cache reads or writes: every prompt token counts as input.
    return {"done_reason": "length" if reply.stop_reason == "length" else "stop",
            "total_duration": 0, "load_duration": 0,
            "prompt_eval_count": u.input + u.cache_read + u.cache_write,
            "prompt_eval_duration": 0, "eval_count": u.output, "eval_duration": 0}  # fmt: skip


def render_complete(reply: ScriptedReply, model: str, rid: str) -> dict[str, Any]:
    """The one object ``"stream": false`` gets: the whole message and the final counts."""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(
        b.text for b in reply.content if isinstance(b, TextContent))}  # fmt: skip
    thinking = "".join(b.thinking for b in reply.content if isinstance(b, ThinkingContent))
    if thinking:
        message["thinking"] = thinking
    calls = [{"function": {"name": b.name, "arguments": arguments_object(b)}}
             for b in reply.content if isinstance(b, ToolCall)]  # fmt: skip
    if calls:
        message["tool_calls"] = calls
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime())
    return {"model": model, "created_at": stamp, "message": message, "done": True,
            **_final(reply)}  # fmt: skip


def _streams(path: str, body: object) -> bool:
    # /api/chat streams unless the body says "stream": false (api.md, "Generate a chat").
    return not (isinstance(body, dict) and body.get("stream") is False)


def _error_body(status: int, message: str, kind: str | None = None) -> MockError:
    # Ollama's errors are {"error": "<text>"}: no type to carry (api.md, "Errors").
    return MockError(body={"error": message})


def _render_models(ids: Sequence[str]) -> dict[str, Any]:
    # GET /api/tags (api.md, "List Local Models").
    return {"models": [{"name": i, "model": i, "modified_at": "2025-01-01T00:00:00Z",
                        "size": 0, "digest": "0" * 64,
                        "details": {"format": "gguf", "family": "mock", "families": ["mock"],
                                    "parameter_size": "0B", "quantization_level": "Q4_0"}}
                       for i in ids]}  # fmt: skip


# --------------------------------------------------------------------------- the API


def _encode_frames(frames: Sequence[MockFrame]) -> list[bytes]:
    # One JSON value per line, LF-terminated, as Ollama writes them.
    return [(p if isinstance(p, str) else compact_json(p)).encode() + b"\n" for _, p in frames]


def recognizes(payload: bytes) -> bool:
    """An Ollama ``/api/chat`` body: its first line is a JSON object with ``model``,
    ``created_at`` and ``message`` or ``done`` (api/chat reference)."""
    obj = first_line_json(payload)
    return (
        isinstance(obj, dict)
        and "model" in obj
        and "created_at" in obj
        and ("message" in obj or "done" in obj)
    )


def _in_band_error(message: str) -> list[MockFrame]:
    """Ollama's ``{"error": …}`` line: a bare text, with no type or code to say more."""
    return [(None, {"error": message})]


#: ``format`` takes a JSON schema (docs/api.md, "Structured outputs"); /api/chat has no
#: ``tool_choice``, so no tool call can be forced.
_CAPABILITIES = Capabilities(
    structured_output="schema", forced_tool_choice=False, late_call_signatures=False
)


class OllamaChatAPI:
    """The ``ollama-chat`` wire API."""

    name = "ollama-chat"
    endpoint = "/api/chat"
    mock = MockRendering(
        in_band_error=_in_band_error,
        in_band_kind="provider_stream",
        render=render,
        tool_results=role_tool_results,
        encode_frames=_encode_frames,
        content_type="application/x-ndjson",
        version_segment="",  # base_url is the server root
        render_complete=render_complete,
        streams=_streams,
        error_body=_error_body,
        models_path="/api/tags",
        render_models=_render_models,
    )
    handoff = None  # Ollama accepts any tool-call id
    counting = None  # /api/chat has no token-counting endpoint

    def capabilities(self, model: Model) -> Capabilities:
        return _CAPABILITIES

    def path(self, model_id: str) -> str:
        return self.endpoint

    def build_request(self, model: Model, context: Context, options: RequestOptions) -> HTTPRequest:
        check_context_values(context)
        return http_request(
            model,
            options,
            url=model.url_root + self.endpoint,
            body=build_body(model, context, options),
            defaults={"Content-Type": "application/json", "Accept": "application/x-ndjson"},
            # Local servers need no key; a proxy or ollama.com takes a bearer token.
            auth=bearer_auth,
        )

    def framing(self, max_event_bytes: int) -> Framing:
        from .._wire.framing.ndjson import NDJSONDecoder

        return NDJSONDecoder(max_event_bytes=max_event_bytes)

    def new_decoder(self, model: Model | None) -> OllamaDecoder:
        return OllamaDecoder()

    def recognizes(self, payload: bytes) -> bool:
        return recognizes(payload)


API = OllamaChatAPI()

if TYPE_CHECKING:
    _CODEC: WireCodec = API  # mypy --strict proves the API is a complete codec
