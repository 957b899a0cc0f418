"""Anthropic Messages as a mock server speaks it, and what a request carries back.

Reference: https://docs.anthropic.com/en/docs/build-with-claude/streaming
"""

from __future__ import annotations

from typing import Any

from ...types import TextContent, ThinkingContent
from .._mock import MockFrame, ScriptedReply, arguments_text, split_text, text_of

__all__ = ["render", "tool_results"]


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
    rid = rid or "msg_mock"
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
            if block.signature:
                deltas.append(delta(i, {"type": "signature_delta", "signature": block.signature}))
        elif isinstance(block, TextContent):
            start = {"type": "text", "text": ""}
            deltas = [delta(i, {"type": "text_delta", "text": p})
                      for p in split_text(block.text, pc)]  # fmt: skip
        else:
            start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
            deltas = [delta(i, {"type": "input_json_delta", "partial_json": p})
                      for p in split_text(arguments_text(block), pc)]  # fmt: skip
        frames.append(("content_block_start", {"type": "content_block_start", "index": i,
                                               "content_block": start}))  # fmt: skip
        frames += deltas
        frames.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    stop = {"stop": "end_turn", "length": "max_tokens", "tool_use": "tool_use"}[reply.stop_reason]
    frames.append(("message_delta", {"type": "message_delta",
                   "delta": {"stop_reason": stop, "stop_sequence": None},
                   "usage": {**usage, "output_tokens": u.output}}))  # fmt: skip
    frames.append(("message_stop", {"type": "message_stop"}))
    return frames
