"""Inbound half of ``ollama-chat``: the ``/api/chat`` NDJSON lines → normalized deltas.

Reference: https://github.com/ollama/ollama/blob/main/docs/api.md ("Generate a chat
completion") and https://ollama.com/blog/streaming-tool.

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
is accepted from another API (handoff: :attr:`OllamaChatAPI.handoff` is ``None``);
our ids fit every other API's rule (letters, digits, ``_``; 22 chars).
"""

from __future__ import annotations

import hashlib
import secrets

import msgspec

from ..._wire.deltas import (
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
from ..._wire.sse import Frame
from ...errors import MalformedChunkError, TruncatedStreamError
from .._codec import first_line_json
from .._common import Count, decode_json, decoder_for, in_band_error
from .spec import DONE_REASONS, FAILED_DONE_REASONS, SYNTHETIC_ID_PREFIX

__all__ = ["OllamaDecoder", "recognizes"]


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
        failed = FAILED_DONE_REASONS.get(reason or "")
        if failed is not None:
            kind, message = failed
            return Finish("error", reason, kind, message)
        # No reason or an unknown one is a normal end (forward compatible); the raw
        # value stays in ``provider_stop_reason``.
        return Finish(DONE_REASONS.get(reason or "stop", "stop"), reason)

    def end(self) -> list[Delta]:
        if not self._done:
            raise TruncatedStreamError(
                'the Ollama stream ended without a line with "done": true (the server '
                "stopped before finishing the answer); retry the request"
            )
        return [EndOfStream()]


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
