"""Gemini as a mock server speaks it, and what a request carries back.

Reference: https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ...errors import ConfigurationError
from ...types import ServerToolCall, ServerToolResult, TextContent, ThinkingContent
from .._common import as_tool_call
from .._mock import MockError, MockFrame, ScriptedReply, arguments_object, split_text, text_of

__all__ = ["error_body", "render", "render_complete", "render_models", "tool_results"]


def tool_results(body: object) -> list[str]:
    """The ``response`` of every ``functionResponse`` part of the contents."""
    found: list[str] = []
    for c in body.get("contents", []) if isinstance(body, dict) else []:
        for part in c.get("parts", []) if isinstance(c, dict) else []:
            if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
                found.append(text_of(part["functionResponse"].get("response")))
    return found


def render(reply: ScriptedReply, model: str, rid: str, pc: int) -> list[MockFrame]:
    """The mock server's events for a scripted reply: code Gemini ran as its parts,
    citations and searches as ``groundingMetadata`` on the last chunk."""
    rid = rid or "mock-response"
    grounding = _grounding(reply)

    def frame_(parts: list[dict[str, Any]], finish: str | None = None) -> MockFrame:
        return (None, _response(reply, model, rid, parts, finish, grounding if finish else None))

    frames: list[MockFrame] = []
    for block in reply.content:
        signature = getattr(block, "signature", None)
        sig = {"thoughtSignature": signature} if signature else {}
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
        elif isinstance(block, ServerToolCall | ServerToolResult):
            part = _code_part(block)
            if part is not None:
                frames.append(frame_([part]))
        else:
            block = as_tool_call(block, "the google-generative-ai mock")
            # Gemini sends a whole call in one part; ``id`` is optional in the API.
            call = {"name": block.name, "args": arguments_object(block), "id": block.id}
            frames.append(frame_([{"functionCall": call, **sig}]))
    frames.append(frame_([{"text": ""}], _finish(reply)))
    return frames


def _code_part(block: ServerToolCall | ServerToolResult) -> dict[str, Any] | None:
    """An ``executableCode`` / ``codeExecutionResult`` part: the scripted one as Gemini
    sent it, else built from the block (``None``: a search, which is metadata)."""
    if block.provider_type == "groundingMetadata":
        return None
    if block.provider_type not in ("executableCode", "codeExecutionResult"):
        raise ConfigurationError(
            f"the google-generative-ai mock cannot carry a {block.provider_type} block: Gemini "
            "runs code (executableCode, codeExecutionResult) and searches (groundingMetadata)"
        )
    if block.raw is not None:
        part: dict[str, Any] = msgspec.json.decode(block.raw)
        return part
    if isinstance(block, ServerToolCall):
        return {"executableCode": {"language": "PYTHON", **block.input, "id": block.id}}
    result = block.result if isinstance(block.result, dict) else {"output": block.result}
    outcome = "OUTCOME_FAILED" if block.is_error else "OUTCOME_OK"
    return {"codeExecutionResult": {"outcome": outcome, **result, "id": block.tool_call_id}}


def _grounding(reply: ScriptedReply) -> dict[str, Any] | None:
    """``groundingMetadata`` for the script's searches and citations: a web chunk per
    citation, a support per citation whose segment is its span (UTF-8 bytes of the
    answer text, as Gemini counts) or, without one, its whole text block."""
    queries: list[str] = []
    chunks: list[dict[str, Any]] = []
    supports: list[dict[str, Any]] = []
    offset = 0
    for block in reply.content:
        if isinstance(block, ServerToolCall) and block.provider_type == "groundingMetadata":
            queries += [str(q) for q in block.input.get("queries", [])]
        if not isinstance(block, TextContent):
            continue
        size = len(block.text.encode())
        for c in block.citations:
            chunks.append({"web": {"uri": c.url or "", "title": c.title or ""}})
            start = c.start if c.start is not None else offset
            end = c.end if c.end is not None else offset + size
            segment: dict[str, Any] = {"startIndex": start, "endIndex": end}
            if c.cited_text is not None:
                segment["text"] = c.cited_text
            supports.append({"segment": segment, "groundingChunkIndices": [len(chunks) - 1]})
        offset += size
    if not (queries or chunks):
        return None
    out: dict[str, Any] = {}
    if queries:
        out["webSearchQueries"] = queries
    if chunks:
        out["groundingChunks"] = chunks
        out["groundingSupports"] = supports
    return out


def _finish(reply: ScriptedReply) -> str:
    # Gemini reports STOP for tool calls too; MAX_TOKENS when cut off.
    return "MAX_TOKENS" if reply.stop_reason == "length" else "STOP"


def _response(
    reply: ScriptedReply,
    model: str,
    rid: str,
    parts: list[dict[str, Any]],
    finish: str | None,
    grounding: dict[str, Any] | None = None,
) -> dict[str, Any]:
    u = reply.usage
    prompt = u.input + u.cache_read + u.cache_write
    cand: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    if grounding is not None:
        cand["groundingMetadata"] = grounding
    usage: dict[str, Any] = {"promptTokenCount": prompt, "totalTokenCount": prompt}
    if finish:
        usage = {"promptTokenCount": prompt, "candidatesTokenCount": u.output,
                 "totalTokenCount": prompt + u.output}  # fmt: skip
        if u.cache_read:
            usage["cachedContentTokenCount"] = u.cache_read
    return {"candidates": [cand], "usageMetadata": usage, "modelVersion": model,
            "responseId": rid}  # fmt: skip


def render_complete(reply: ScriptedReply, model: str, rid: str) -> dict[str, Any]:
    """The ``GenerateContentResponse`` of ``:generateContent``: one candidate holding
    every part (https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse)."""
    parts: list[dict[str, Any]] = []
    for block in reply.content:
        signature = getattr(block, "signature", None)
        sig = {"thoughtSignature": signature} if signature else {}
        if isinstance(block, ThinkingContent):
            parts.append({"text": block.thinking, "thought": True, **sig})
        elif isinstance(block, TextContent):
            parts.append({"text": block.text, **sig})
        elif isinstance(block, ServerToolCall | ServerToolResult):
            part = _code_part(block)
            if part is not None:
                parts.append(part)
        else:
            block = as_tool_call(block, "the google-generative-ai mock")
            call = {"name": block.name, "args": arguments_object(block), "id": block.id}
            parts.append({"functionCall": call, **sig})
    return _response(reply, model, rid or "mock-response", parts, _finish(reply),
                     _grounding(reply))  # fmt: skip


# google.rpc.Code names by HTTP status (https://ai.google.dev/gemini-api/docs/troubleshooting).
_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
           404: "NOT_FOUND", 409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED",
           500: "INTERNAL", 501: "UNIMPLEMENTED", 503: "UNAVAILABLE",
           504: "DEADLINE_EXCEEDED"}  # fmt: skip


def error_body(status: int, message: str, kind: str | None = None) -> MockError:
    """Google's ``{"error": {"code", "message", "status"}}``."""
    name = kind or _STATUS.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    return MockError(body={"error": {"code": status, "message": message, "status": name}})


def render_models(ids: Sequence[str]) -> dict[str, Any]:
    """``GET /v1beta/models`` (https://ai.google.dev/api/models#method:-models.list)."""
    return {"models": [{"name": f"models/{i}", "baseModelId": i, "version": "001",
                        "displayName": i, "inputTokenLimit": 1048576,
                        "outputTokenLimit": 65536,
                        "supportedGenerationMethods": ["generateContent",
                                                       "streamGenerateContent"]}
                       for i in ids]}  # fmt: skip
