"""Gemini as a mock server speaks it, and what a request carries back.

Reference: https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent
"""

from __future__ import annotations

from typing import Any

from ...types import TextContent, ThinkingContent
from .._mock import MockFrame, ScriptedReply, arguments_object, split_text, text_of

__all__ = ["render", "tool_results"]


def tool_results(body: object) -> list[str]:
    """The ``response`` of every ``functionResponse`` part of the contents."""
    found: list[str] = []
    for c in body.get("contents", []) if isinstance(body, dict) else []:
        for part in c.get("parts", []) if isinstance(c, dict) else []:
            if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
                found.append(text_of(part["functionResponse"].get("response")))
    return found


def render(reply: ScriptedReply, model: str, rid: str, pc: int) -> list[MockFrame]:
    """The mock server's events for a scripted reply."""
    rid = rid or "mock-response"
    u = reply.usage
    prompt = u.input + u.cache_read + u.cache_write

    def frame_(parts: list[dict[str, Any]], finish: str | None = None) -> MockFrame:
        cand: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            cand["finishReason"] = finish
        usage: dict[str, Any] = {"promptTokenCount": prompt, "totalTokenCount": prompt}
        if finish:
            usage = {"promptTokenCount": prompt, "candidatesTokenCount": u.output,
                     "totalTokenCount": prompt + u.output}  # fmt: skip
            if u.cache_read:
                usage["cachedContentTokenCount"] = u.cache_read
        return (None, {"candidates": [cand], "usageMetadata": usage, "modelVersion": model,
                       "responseId": rid})  # fmt: skip

    frames: list[MockFrame] = []
    for block in reply.content:
        sig = {"thoughtSignature": block.signature} if block.signature else {}
        if isinstance(block, ThinkingContent):
            pieces = split_text(block.thinking, pc)
            for k, p in enumerate(pieces):
                # Gemini puts the signature on the last part of a thought.
                extra = sig if k == len(pieces) - 1 else {}
                frames.append(frame_([{"text": p, "thought": True, **extra}]))
        elif isinstance(block, TextContent):
            pieces = split_text(block.text, pc)
            for k, p in enumerate(pieces):
                extra = sig if k == len(pieces) - 1 else {}
                frames.append(frame_([{"text": p, **extra}]))
        else:
            # Gemini sends a whole call in one part; ``id`` is optional in the API.
            call = {"name": block.name, "args": arguments_object(block), "id": block.id}
            frames.append(frame_([{"functionCall": call, **sig}]))
    # Gemini reports STOP for tool calls too; MAX_TOKENS when cut off.
    finish = "MAX_TOKENS" if reply.stop_reason == "length" else "STOP"
    frames.append(frame_([{"text": ""}], finish))
    return frames
