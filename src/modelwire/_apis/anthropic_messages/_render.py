"""Anthropic Messages as a mock server speaks it, and what a request carries back.

Reference: https://docs.anthropic.com/en/docs/build-with-claude/streaming
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...types import TextContent, ThinkingContent
from .._common import as_tool_call
from .._mock import (
    THINKING_SIGNATURE,
    MockError,
    MockFrame,
    ScriptedReply,
    arguments_object,
    arguments_text,
    prefixed,
    split_text,
    text_of,
)

__all__ = ["error_body", "render", "render_complete", "render_models", "tool_results"]


def tool_results(body: object) -> list[str]:
    """The ``content`` of every ``tool_result`` block of the messages."""
    found: list[str] = []
    for m in body.get("messages", []) if isinstance(body, dict) else []:
        content = m.get("content") if isinstance(m, dict) else None
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "tool_result":
                found.append(text_of(part.get("content")))
    return found


def render(reply: ScriptedReply, model: str, rid: str, pc: int) -> list[MockFrame]:
    """The mock server's events for a scripted reply."""
    rid = prefixed("msg_", rid or "mock")
    u = reply.usage
    usage = {"input_tokens": u.input, "cache_creation_input_tokens": u.cache_write,
             "cache_read_input_tokens": u.cache_read}  # fmt: skip
    frames: list[MockFrame] = [
        ("message_start", {"type": "message_start", "message": {
            "id": rid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 1},
        }}),
        ("ping", {"type": "ping"}),
    ]  # fmt: skip

    def delta(index: int, body: dict[str, Any]) -> MockFrame:
        return ("content_block_delta", {"type": "content_block_delta", "index": index,
                                        "delta": body})  # fmt: skip

    for i, block in enumerate(reply.content):
        start: dict[str, Any]
        deltas: list[MockFrame] = []
        if isinstance(block, ThinkingContent) and block.redacted:
            start = {"type": "redacted_thinking", "data": block.signature or ""}
        elif isinstance(block, ThinkingContent):
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [delta(i, {"type": "thinking_delta", "thinking": p})
                      for p in split_text(block.thinking, pc)]  # fmt: skip
            # Every thinking block is signed; without a scripted one, a fixed opaque value.
            sig = block.signature or THINKING_SIGNATURE
            deltas.append(delta(i, {"type": "signature_delta", "signature": sig}))
        elif isinstance(block, TextContent):
            start = {"type": "text", "text": ""}
            deltas = [delta(i, {"type": "text_delta", "text": p})
                      for p in split_text(block.text, pc)]  # fmt: skip
        else:
            block = as_tool_call(block, "the anthropic-messages mock")
            start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
            deltas = [delta(i, {"type": "input_json_delta", "partial_json": p})
                      for p in split_text(arguments_text(block), pc)]  # fmt: skip
        frames.append(("content_block_start", {"type": "content_block_start", "index": i,
                                               "content_block": start}))  # fmt: skip
        frames += deltas
        frames.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    stop = _STOP[reply.stop_reason]
    frames.append(("message_delta", {"type": "message_delta",
                   "delta": {"stop_reason": stop, "stop_sequence": None},
                   "usage": {**usage, "output_tokens": u.output}}))  # fmt: skip
    frames.append(("message_stop", {"type": "message_stop"}))
    return frames


_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_use": "tool_use"}


def render_complete(reply: ScriptedReply, model: str, rid: str) -> dict[str, Any]:
    """The ``message`` object a request without ``"stream": true`` gets
    (https://docs.anthropic.com/en/api/messages)."""
    content: list[dict[str, Any]] = []
    for block in reply.content:
        if isinstance(block, ThinkingContent) and block.redacted:
            content.append({"type": "redacted_thinking", "data": block.signature or ""})
        elif isinstance(block, ThinkingContent):
            content.append({"type": "thinking", "thinking": block.thinking,
                            "signature": block.signature or THINKING_SIGNATURE})  # fmt: skip
        elif isinstance(block, TextContent):
            content.append({"type": "text", "text": block.text})
        else:
            block = as_tool_call(block, "the anthropic-messages mock")
            content.append({"type": "tool_use", "id": block.id, "name": block.name,
                            "input": arguments_object(block)})  # fmt: skip
    u = reply.usage
    return {"id": prefixed("msg_", rid or "mock"), "type": "message", "role": "assistant",
            "model": model, "content": content, "stop_reason": _STOP[reply.stop_reason],
            "stop_sequence": None,
            "usage": {"input_tokens": u.input, "output_tokens": u.output,
                      "cache_creation_input_tokens": u.cache_write,
                      "cache_read_input_tokens": u.cache_read}}  # fmt: skip


_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                429: "rate_limit_error", 529: "overloaded_error"}  # fmt: skip


def error_body(status: int, message: str, kind: str | None = None) -> MockError:
    """``{"type": "error", "error": {"type", "message"}}`` and the ``request-id``
    header (https://docs.anthropic.com/en/api/errors)."""
    kind = kind or _ERROR_TYPES.get(status, "api_error")
    return MockError(
        body={"type": "error", "error": {"type": kind, "message": message},
              "request_id": "req_mock"},
        headers={"request-id": "req_mock"},
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
