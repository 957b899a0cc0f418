"""Anthropic Messages as a mock server speaks it, and what a request carries back.

Reference: https://docs.anthropic.com/en/docs/build-with-claude/streaming
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ...errors import ConfigurationError
from ...types import (
    AssistantContent,
    Citation,
    ProviderItem,
    ServerToolCall,
    ServerToolResult,
    TextContent,
    ThinkingContent,
)
from .._common import as_tool_call
from .._mock import (
    THINKING_SIGNATURE,
    MockError,
    MockFrame,
    ScriptedReply,
    arguments_object,
    arguments_text,
    compact_json,
    prefixed,
    split_text,
    text_of,
)
from ._whole import API_NAME
from .spec import ID_PREFIX, STOP_OF, STOP_REASONS

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


def _cite(c: Citation) -> str:
    """A citation as the API sends it: as received when it came from this API, else
    built from its fields (a web search location for a URL, a character location in
    a document otherwise; citations docs)."""
    if c.raw is not None:
        return c.raw
    if c.url is not None:
        return compact_json({"type": "web_search_result_location", "url": c.url,
                             "title": c.title, "cited_text": c.cited_text or "",
                             "encrypted_index": "mock"})  # fmt: skip
    index = int(c.document) if c.document is not None and c.document.isdigit() else 0
    return compact_json({"type": "char_location", "cited_text": c.cited_text or "",
                         "document_index": index, "document_title": c.title,
                         "start_char_index": c.start or 0, "end_char_index": c.end or 0})  # fmt: skip


def _whole(block: ServerToolCall | ServerToolResult | ProviderItem) -> str:
    """The block's JSON as the API sends it: as received when there is one."""
    if isinstance(block, ProviderItem):
        if block.api != API_NAME:
            raise ConfigurationError(
                f"the anthropic-messages mock cannot carry an item of {block.api} "
                f"({block.provider_type})"
            )
        return block.data
    if block.raw is not None:
        return block.raw
    if isinstance(block, ServerToolCall):
        return compact_json({"type": block.provider_type, "id": block.id, "name": block.name,
                             "input": block.input})  # fmt: skip
    return compact_json({"type": block.provider_type, "tool_use_id": block.tool_call_id,
                         "content": block.result})  # fmt: skip


def _start_frame(index: int, block: dict[str, Any] | str) -> MockFrame:
    # A block given as JSON text (as received) is spliced in byte for byte.
    if isinstance(block, dict):
        return ("content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block})  # fmt: skip
    return ("content_block_start",
            f'{{"type":"content_block_start","index":{index},"content_block":{block}}}')  # fmt: skip


def _delta_frame(index: int, body: dict[str, Any] | str) -> MockFrame:
    if isinstance(body, dict):
        return ("content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": body})  # fmt: skip
    return ("content_block_delta",
            f'{{"type":"content_block_delta","index":{index},"delta":{body}}}')  # fmt: skip


def _server_call_frames(i: int, block: ServerToolCall, pc: int) -> list[MockFrame]:
    # server_tool_use streams like tool_use: an empty input in the start, then
    # input_json_delta pieces (streaming docs, web search example).
    obj = msgspec.json.decode(_whole(block))
    if not isinstance(obj, dict):
        raise ConfigurationError("ServerToolCall.raw must be a JSON object")
    inputs = obj.get("input")
    obj["input"] = {}
    frames = [_start_frame(i, obj)]
    if inputs:
        frames += [_delta_frame(i, {"type": "input_json_delta", "partial_json": p})
                   for p in split_text(compact_json(inputs), pc)]  # fmt: skip
    return frames


def _block_frames(i: int, block: AssistantContent, pc: int) -> list[MockFrame]:
    if isinstance(block, ThinkingContent) and block.redacted:
        return [_start_frame(i, {"type": "redacted_thinking", "data": block.signature or ""})]
    if isinstance(block, ThinkingContent):
        frames = [_start_frame(i, {"type": "thinking", "thinking": "", "signature": ""})]
        frames += [_delta_frame(i, {"type": "thinking_delta", "thinking": p})
                   for p in split_text(block.thinking, pc)]  # fmt: skip
        # Every thinking block is signed; without a scripted one, a fixed opaque value.
        sig = block.signature or THINKING_SIGNATURE
        frames.append(_delta_frame(i, {"type": "signature_delta", "signature": sig}))
        return frames
    if isinstance(block, TextContent):
        start: dict[str, Any] = {"type": "text", "text": ""}
        if block.citations:
            start = {"citations": [], **start}  # as the API starts a cited block
        frames = [_start_frame(i, start)]
        # Each citation ahead of the text it supports, as the API streams them.
        frames += [_delta_frame(i, f'{{"type":"citations_delta","citation":{_cite(c)}}}')
                   for c in block.citations]  # fmt: skip
        frames += [_delta_frame(i, {"type": "text_delta", "text": p})
                   for p in split_text(block.text, pc)]  # fmt: skip
        return frames
    if isinstance(block, ServerToolCall):
        return _server_call_frames(i, block, pc)
    if isinstance(block, ServerToolResult | ProviderItem):
        return [_start_frame(i, _whole(block))]  # sent whole in its start
    call = as_tool_call(block, "the anthropic-messages mock")
    frames = [_start_frame(i, {"type": "tool_use", "id": call.id, "name": call.name, "input": {}})]
    frames += [_delta_frame(i, {"type": "input_json_delta", "partial_json": p})
               for p in split_text(arguments_text(call), pc)]  # fmt: skip
    return frames


def render(reply: ScriptedReply, model: str, rid: str, pc: int) -> list[MockFrame]:
    """The mock server's events for a scripted reply."""
    rid = prefixed(ID_PREFIX, rid or "mock")
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
    for i, block in enumerate(reply.content):
        frames += _block_frames(i, block, pc)
        frames.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    stop = _stop_reason(reply)
    frames.append(("message_delta", {"type": "message_delta",
                   "delta": {"stop_reason": stop, "stop_sequence": None},
                   "usage": {**usage, "output_tokens": u.output}}))  # fmt: skip
    frames.append(("message_stop", {"type": "message_stop"}))
    return frames


def _stop_reason(reply: ScriptedReply) -> str:
    # A scripted provider stop reason is sent when it means what the script's stop
    # reason means here (pause_turn and compaction are stops, like end_turn).
    given = reply.provider_stop_reason
    if given is not None and STOP_REASONS.get(given) == reply.stop_reason:
        return given
    return STOP_OF[reply.stop_reason]


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
            text: dict[str, Any] = {"type": "text", "text": block.text}
            if block.citations:
                text["citations"] = [msgspec.json.decode(_cite(c)) for c in block.citations]
            content.append(text)
        elif isinstance(block, ServerToolCall | ServerToolResult | ProviderItem):
            content.append(msgspec.json.decode(_whole(block)))
        else:
            block = as_tool_call(block, "the anthropic-messages mock")
            content.append({"type": "tool_use", "id": block.id, "name": block.name,
                            "input": arguments_object(block)})  # fmt: skip
    u = reply.usage
    return {"id": prefixed(ID_PREFIX, rid or "mock"), "type": "message", "role": "assistant",
            "model": model, "content": content, "stop_reason": _stop_reason(reply),
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
