"""Bedrock ConverseStream as the mock server speaks it, and what a request carries back.

The frames are the events of ``_decode`` in the order Bedrock sends them
(messageStart, blocks, messageStop, metadata); ``encode_frames`` puts each in an
AWS event-stream message (``modelwire._wire.framing.eventstream``). A frame named
``exception:<type>`` becomes an exception message (the in-band error of a script).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ...types import Citation, ServerToolCall, ServerToolResult, TextContent, ThinkingContent
from .._common import as_tool_call
from .._mock import (
    THINKING_SIGNATURE,
    MockError,
    MockFrame,
    ScriptedReply,
    arguments_object,
    arguments_text,
    compact_json,
    split_text,
    text_of,
)
from .spec import STOP_OF

__all__ = ["encode_frames", "error_body", "render", "render_complete", "tool_results"]


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
            # Reasoning is always signed; without a scripted signature, a fixed opaque one.
            sig = block.signature or THINKING_SIGNATURE
            frames.append(delta(i, {"reasoningContent": {"signature": sig}}))
        elif isinstance(block, TextContent):
            frames += [delta(i, {"text": p}) for p in split_text(block.text, pc)]
            # A citation delta follows the text it supports (CitationsDelta).
            frames += [delta(i, {"citation": _citation(c)}) for c in block.citations]
        elif isinstance(block, ServerToolCall):
            frames.append(("contentBlockStart", {"contentBlockIndex": i, "start": {"toolUse": {
                "toolUseId": block.id, "name": block.name, "type": "server_tool_use"}}}))  # fmt: skip
            frames += [delta(i, {"toolUse": {"input": p}})
                       for p in split_text(compact_json(block.input), pc)]  # fmt: skip
        elif isinstance(block, ServerToolResult):
            start: dict[str, Any] = {"toolUseId": block.tool_call_id,
                                     "status": "error" if block.is_error else "success"}  # fmt: skip
            if block.provider_type != "toolResult":
                start["type"] = block.provider_type
            frames.append(("contentBlockStart", {"contentBlockIndex": i,
                                                 "start": {"toolResult": start}}))  # fmt: skip
            frames.append(delta(i, {"toolResult": _result_entries(block)}))
        else:
            block = as_tool_call(block, "the bedrock-converse mock")
            frames.append(("contentBlockStart", {"contentBlockIndex": i, "start": {
                "toolUse": {"toolUseId": block.id, "name": block.name}}}))  # fmt: skip
            frames += [delta(i, {"toolUse": {"input": p}})
                       for p in split_text(arguments_text(block), pc)]  # fmt: skip
        frames.append(("contentBlockStop", {"contentBlockIndex": i}))
    frames.append(("messageStop", {"stopReason": STOP_OF[reply.stop_reason]}))
    frames.append(("metadata", {"usage": _usage(reply), "metrics": {"latencyMs": 0}}))
    return frames


def _citation(c: Citation) -> dict[str, Any]:
    """A citation delta: the scripted one as Bedrock sent it, else built from its fields."""
    if c.raw is not None:
        value: dict[str, Any] = msgspec.json.decode(c.raw)
        return value
    out: dict[str, Any] = {}
    if c.title is not None:
        out["title"] = c.title
    if c.cited_text is not None:
        out["sourceContent"] = [{"text": c.cited_text}]
    if c.url is not None:
        out["location"] = {"web": {"url": c.url}}
    elif c.document is not None and c.document.isdigit():
        span = {"documentIndex": int(c.document), "start": c.start or 0, "end": c.end or 0}
        out["location"] = {"documentChar": span}
    return out


def _result_entries(block: ServerToolResult) -> list[Any]:
    # ToolResultBlockDelta entries ({"text"} | {"json"}): a scripted list of them as is.
    r = block.result
    if isinstance(r, list) and all(isinstance(e, dict) and len(e) == 1 for e in r):
        return r
    return [{"text": r} if isinstance(r, str) else {"json": r}]


def _usage(reply: ScriptedReply) -> dict[str, int]:
    u = reply.usage
    return {"inputTokens": u.input, "outputTokens": u.output,
            "totalTokens": u.input + u.output + u.cache_read + u.cache_write,
            "cacheReadInputTokens": u.cache_read, "cacheWriteInputTokens": u.cache_write}  # fmt: skip


def render_complete(reply: ScriptedReply, model: str, rid: str) -> dict[str, Any]:
    """The ``/converse`` answer: the whole message, stop reason, usage, metrics
    (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html)."""
    content: list[dict[str, Any]] = []
    for block in reply.content:
        if isinstance(block, ThinkingContent) and block.redacted:
            content.append({"reasoningContent": {"redactedContent": block.signature or ""}})
        elif isinstance(block, ThinkingContent):
            content.append({"reasoningContent": {"reasoningText": {
                "text": block.thinking, "signature": block.signature or THINKING_SIGNATURE}}})  # fmt: skip
        elif isinstance(block, TextContent) and block.citations:
            content.append({"citationsContent": {"content": [{"text": block.text}],
                            "citations": [_citation(c) for c in block.citations]}})  # fmt: skip
        elif isinstance(block, TextContent):
            content.append({"text": block.text})
        elif isinstance(block, ServerToolCall):
            content.append({"toolUse": {"toolUseId": block.id, "name": block.name,
                                        "input": block.input, "type": "server_tool_use"}})  # fmt: skip
        elif isinstance(block, ServerToolResult):
            result: dict[str, Any] = {"toolUseId": block.tool_call_id,
                                      "content": _result_entries(block),
                                      "status": "error" if block.is_error else "success"}  # fmt: skip
            content.append({"toolResult": result})
        else:
            block = as_tool_call(block, "the bedrock-converse mock")
            content.append({"toolUse": {"toolUseId": block.id, "name": block.name,
                                        "input": arguments_object(block)}})  # fmt: skip
    return {"output": {"message": {"role": "assistant", "content": content}},
            "stopReason": STOP_OF[reply.stop_reason], "usage": _usage(reply),
            "metrics": {"latencyMs": 0}}  # fmt: skip


# The exception each status stands for in the Bedrock Runtime reference ("Errors").
_ERRORS = {400: "ValidationException", 403: "AccessDeniedException",
           404: "ResourceNotFoundException", 408: "ModelTimeoutException",
           424: "ModelErrorException", 429: "ThrottlingException",
           503: "ServiceUnavailableException"}  # fmt: skip


def error_body(status: int, message: str, kind: str | None = None) -> MockError:
    """``{"message"}`` with the error's type in ``x-amzn-ErrorType``, as AWS JSON
    protocols send it (botocore reads the type from that header)."""
    kind = kind or _ERRORS.get(status, "InternalServerException")
    return MockError(
        body={"message": message},
        headers={"x-amzn-ErrorType": f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/",
                 "x-amzn-RequestId": "00000000-0000-0000-0000-000000000000"},
    )  # fmt: skip


def encode_frames(frames: Sequence[MockFrame]) -> list[bytes]:
    """Each frame as one AWS event-stream message."""
    from ..._wire.framing.eventstream import encode_event, encode_exception

    out: list[bytes] = []
    for name, payload in frames:
        data = (payload if isinstance(payload, str) else compact_json(payload)).encode()
        if name and name.startswith("exception:"):
            out.append(encode_exception(name.partition(":")[2], data))
        else:
            out.append(encode_event(name or "message", data))
    return out
