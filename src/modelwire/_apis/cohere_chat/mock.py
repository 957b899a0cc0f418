"""Cohere's v2 chat as the mock server speaks it: a scripted reply → the stream's
events (named SSE events, then ``data: [DONE]``, as recorded streams end), the whole
response of a request without ``"stream": true``, and Cohere's error bodies.

References: https://docs.cohere.com/reference/chat-stream,
https://docs.cohere.com/reference/chat and https://docs.cohere.com/reference/errors.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...types import AssistantContent, Citation, TextContent, ThinkingContent, ToolCall
from .._common import as_tool_call
from .._mock import MockError, MockFrame, ScriptedReply, arguments_text, compact_json, split_text
from .spec import API_NAME, DONE, ERROR_STATUSES, FINISH_OF, FINISH_REASONS

__all__ = ["error_body", "in_band_error", "render", "render_complete"]

_MOCK_ID = "7d4e1c52-0b6a-4c2e-9f0e-3a1b2c3d4e5f"  # Cohere's ids are UUIDs


def _cite(c: Citation, text_len: int) -> str:
    """A citation as Cohere sends it: as received when it came from Cohere, else built
    from its fields (a document source)."""
    if c.raw is not None:
        return c.raw
    document: dict[str, Any] = {"id": c.document or "doc_0"}
    if c.title is not None:
        document["title"] = c.title
    if c.url is not None:
        document["url"] = c.url
    return compact_json({"start": c.start or 0, "end": c.end if c.end is not None else text_len,
                         "text": c.cited_text or "", "sources": [{"type": "document",
                         "id": c.document or "doc_0", "document": document}],
                         "type": "TEXT_CONTENT"})  # fmt: skip


def _event(kind: str, **fields: Any) -> MockFrame:
    return (kind, {"type": kind, **fields})


def _content(index: int, content: dict[str, Any], kind: str = "content-delta") -> MockFrame:
    return _event(kind, index=index, delta={"message": {"content": content}})


def _plans(reply: ScriptedReply) -> set[int]:
    """The text blocks said before the first tool call of a reply that calls tools:
    Cohere streams them as its tool plan."""
    calls = [i for i, b in enumerate(reply.content) if isinstance(b, ToolCall)]
    if not calls:
        return set()
    return {i for i, b in enumerate(reply.content[: calls[0]]) if isinstance(b, TextContent)}


def _stop(reply: ScriptedReply) -> str:
    given = reply.provider_stop_reason
    if given is not None and FINISH_REASONS.get(given) == reply.stop_reason:
        return given
    return FINISH_OF[reply.stop_reason]


def _usage(reply: ScriptedReply) -> dict[str, Any]:
    # Cohere reports no cache split the decoder reads: every prompt token is input.
    u = reply.usage
    prompt = u.input + u.cache_read + u.cache_write
    counts = {"input_tokens": prompt, "output_tokens": u.output}
    return {"billed_units": counts, "tokens": dict(counts), "cached_tokens": u.cache_read}


def _block_frames(
    block: AssistantContent, n: dict[str, int], plan: bool, pc: int
) -> list[MockFrame]:
    if isinstance(block, ThinkingContent):
        i = n["content"]
        n["content"] += 1
        return [_content(i, {"type": "thinking", "thinking": ""}, "content-start"),
                *(_content(i, {"thinking": p}) for p in split_text(block.thinking, pc)),
                _event("content-end", index=i)]  # fmt: skip
    if isinstance(block, TextContent):
        i = n["content"]
        if plan:
            frames = [_event("tool-plan-delta", delta={"message": {"tool_plan": p}})
                      for p in split_text(block.text, pc)]  # fmt: skip
        else:
            n["content"] += 1
            frames = [_content(i, {"type": "text", "text": ""}, "content-start"),
                      *(_content(i, {"text": p}) for p in split_text(block.text, pc))]  # fmt: skip
        for c in dict.fromkeys(_cite(c, len(block.text)) for c in block.citations):
            k = n["citation"]
            n["citation"] += 1
            # Spliced in byte for byte (a citation received from Cohere is its raw JSON).
            frames.append(("citation-start", f'{{"type":"citation-start","index":{k},"delta":'
                           f'{{"message":{{"citations":{c}}}}}}}'))  # fmt: skip
            frames.append(_event("citation-end", index=k))
        if not plan:
            frames.append(_event("content-end", index=i))
        return frames
    call = as_tool_call(block, f"the {API_NAME} mock")
    k = n["tool"]
    n["tool"] += 1
    start = {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
    return [_event("tool-call-start", index=k, delta={"message": {"tool_calls": start}}),
            *(_event("tool-call-delta", index=k, delta={"message": {"tool_calls": {
                "function": {"arguments": p}}}}) for p in split_text(arguments_text(call), pc)),
            _event("tool-call-end", index=k)]  # fmt: skip


def render(reply: ScriptedReply, model: str, rid: str, pc: int) -> list[MockFrame]:
    """The events Cohere streams for a scripted reply (``model`` is not echoed: the
    stream carries no model)."""
    start = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [],
             "citations": []}  # fmt: skip
    # "id" first, as Cohere writes message-start.
    frames: list[MockFrame] = [("message-start", {"id": rid or _MOCK_ID, "type": "message-start",
                                                  "delta": {"message": start}})]  # fmt: skip
    plans = _plans(reply)
    n = {"content": 0, "tool": 0, "citation": 0}
    for j, block in enumerate(reply.content):
        frames += _block_frames(block, n, j in plans, pc)
    frames.append(_event("message-end", delta={"finish_reason": _stop(reply),
                                               "usage": _usage(reply)}))  # fmt: skip
    frames.append((None, DONE))
    return frames


def render_complete(reply: ScriptedReply, model: str, rid: str) -> dict[str, Any]:
    """The response to a request without ``"stream": true`` (chat reference)."""
    plans = _plans(reply)
    message: dict[str, Any] = {"role": "assistant"}
    content: list[dict[str, Any]] = []
    plan: list[str] = []
    calls: list[dict[str, Any]] = []
    cites: list[Any] = []
    for j, block in enumerate(reply.content):
        if isinstance(block, ThinkingContent):
            content.append({"type": "thinking", "thinking": block.thinking})
        elif isinstance(block, TextContent):
            if j in plans:
                plan.append(block.text)
            else:
                content.append({"type": "text", "text": block.text})
            cites += [msgspec.json.decode(_cite(c, len(block.text))) for c in block.citations]
        else:
            call = as_tool_call(block, f"the {API_NAME} mock")
            calls.append({"id": call.id, "type": "function", "function": {
                "name": call.name, "arguments": arguments_text(call)}})  # fmt: skip
    if content:
        message["content"] = content
    if plan:
        message["tool_plan"] = "".join(plan)
    if calls:
        message["tool_calls"] = calls
    if cites:
        message["citations"] = cites
    return {"id": rid or _MOCK_ID, "finish_reason": _stop(reply), "message": message,
            "usage": _usage(reply)}  # fmt: skip


def in_band_error(message: str) -> list[MockFrame]:
    """A generation that failed after the ``200``: ``message-end`` with
    ``finish_reason: ERROR`` and the error text (a string: no type or code)."""
    return [_event("message-end", delta={"finish_reason": "ERROR", "error": message})]


def error_body(status: int, message: str, kind: str | None = None) -> MockError:
    """``{"id", "message"}``, Cohere's error body (errors reference); the text is the
    scripted one, Cohere's own wording for the status when there is none."""
    return MockError(body={"id": _MOCK_ID, "message": message or ERROR_STATUSES.get(status, "")})
