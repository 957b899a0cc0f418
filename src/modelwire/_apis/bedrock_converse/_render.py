"""Bedrock ConverseStream as the mock server speaks it, and what a request carries back.

The frames are the events of ``_decode`` in the order Bedrock sends them
(messageStart, blocks, messageStop, metadata); ``encode_frames`` puts each in an
AWS event-stream message (``modelwire._framing.eventstream``). A frame named
``exception:<type>`` becomes an exception message (the in-band error of a script).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...types import TextContent, ThinkingContent
from .._mock import MockFrame, ScriptedReply, arguments_text, compact_json, split_text, text_of

__all__ = ["encode_frames", "render", "tool_results"]


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


def render(reply: ScriptedReply, model: str, rid: str, pc: int) -> list[MockFrame]:
    """The events for a scripted reply (``model`` and ``rid`` are not sent: the
    stream names neither)."""
    frames: list[MockFrame] = [("messageStart", {"role": "assistant"})]

    def delta(i: int, body: dict[str, Any]) -> MockFrame:
        return ("contentBlockDelta", {"contentBlockIndex": i, "delta": body})

    for i, block in enumerate(reply.content):
        if isinstance(block, ThinkingContent) and block.redacted:
            frames.append(
                delta(i, {"reasoningContent": {"redactedContent": block.signature or ""}})
            )
        elif isinstance(block, ThinkingContent):
            frames += [delta(i, {"reasoningContent": {"text": p}})
                       for p in split_text(block.thinking, pc)]  # fmt: skip
            if block.signature:
                frames.append(delta(i, {"reasoningContent": {"signature": block.signature}}))
        elif isinstance(block, TextContent):
            frames += [delta(i, {"text": p}) for p in split_text(block.text, pc)]
        else:
            frames.append(("contentBlockStart", {"contentBlockIndex": i, "start": {
                "toolUse": {"toolUseId": block.id, "name": block.name}}}))  # fmt: skip
            frames += [delta(i, {"toolUse": {"input": p}})
                       for p in split_text(arguments_text(block), pc)]  # fmt: skip
        frames.append(("contentBlockStop", {"contentBlockIndex": i}))
    stop = {"stop": "end_turn", "length": "max_tokens", "tool_use": "tool_use"}[reply.stop_reason]
    frames.append(("messageStop", {"stopReason": stop}))
    u = reply.usage
    frames.append(("metadata", {"usage": {
        "inputTokens": u.input, "outputTokens": u.output,
        "totalTokens": u.input + u.output + u.cache_read + u.cache_write,
        "cacheReadInputTokens": u.cache_read, "cacheWriteInputTokens": u.cache_write,
    }, "metrics": {"latencyMs": 0}}))  # fmt: skip
    return frames


def encode_frames(frames: Sequence[MockFrame]) -> list[bytes]:
    """Each frame as one AWS event-stream message."""
    from ..._framing.eventstream import encode_event, encode_exception

    out: list[bytes] = []
    for name, payload in frames:
        data = (payload if isinstance(payload, str) else compact_json(payload)).encode()
        if name and name.startswith("exception:"):
            out.append(encode_exception(name.partition(":")[2], data))
        else:
            out.append(encode_event(name or "message", data))
    return out
