"""OpenAI Responses as a mock server speaks it, and what a request carries back.

Reference: https://platform.openai.com/docs/api-reference/responses-streaming
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Sequence
from typing import Any

from ...types import (
    AssistantContent,
    Citation,
    ProviderItem,
    ServerToolCall,
    ServerToolResult,
    TextContent,
    ThinkingContent,
    ToolCall,
)
from .._common import as_tool_call
from .._mock import MockFrame, ScriptedReply, arguments_text, prefixed, split_text, text_of
from ._server import SERVER_ITEMS
from .spec import INCOMPLETE_REASONS, ITEM_ID_PREFIXES, RESPONSE_ID_PREFIX, TERMINAL_EVENTS, Stop

__all__ = ["render", "render_complete", "tool_results"]


def tool_results(body: object) -> list[str]:
    """The ``output`` of every ``function_call_output`` input item."""
    if not isinstance(body, dict):
        return []
    return [text_of(i.get("output")) for i in body.get("input", [])
            if isinstance(i, dict) and i.get("type") == "function_call_output"]  # fmt: skip


def _reasoning_item(signature: str | None) -> dict[str, Any] | None:
    if not signature:
        return None
    try:
        item = json.loads(signature)
    except ValueError:
        return None
    return item if isinstance(item, dict) and item.get("type") == "reasoning" else None


def _response(
    rid: str,
    created: int,
    model: str,
    status: str,
    output: list[Any],
    usage: Any,
    incomplete: Any = None,
) -> dict[str, Any]:
    # Every field the Response object marks required
    # (https://platform.openai.com/docs/api-reference/responses/object).
    return {"id": rid, "object": "response", "created_at": created, "status": status,
            "error": None, "incomplete_details": incomplete, "instructions": None,
            "metadata": {}, "model": model, "output": output, "parallel_tool_calls": True,
            "temperature": None, "tool_choice": "auto", "tools": [], "top_p": None,
            "usage": usage}  # fmt: skip


def _usage(reply: ScriptedReply) -> dict[str, Any]:
    u = reply.usage
    prompt = u.input + u.cache_read + u.cache_write
    return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": u.cache_read,
                                                      "cache_write_tokens": u.cache_write},
            "output_tokens": u.output, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + u.output}  # fmt: skip


def render(reply: ScriptedReply, model: str, rid: str, pc: int) -> list[MockFrame]:
    """The mock server's events for a scripted reply."""
    rid = prefixed(RESPONSE_ID_PREFIX, rid or "mock")
    seq = itertools.count()
    created = int(time.time())
    frames: list[MockFrame] = []

    def ev(kind: str, **fields: Any) -> None:
        frames.append((kind, {"type": kind, "sequence_number": next(seq), **fields}))

    def response(status: str, output: list[Any], usage: Any, incomplete: Any = None) -> Any:
        return _response(rid, created, model, status, output, usage, incomplete)

    ev("response.created", response=response("in_progress", [], None))
    ev("response.in_progress", response=response("in_progress", [], None))
    output: list[Any] = []
    for oi, block in enumerate(_items(reply.content)):
        if isinstance(block, dict):
            # A provider-run or opaque item: added in progress, done as scripted.
            ev("response.output_item.added", output_index=oi,
               item={**block, "status": "in_progress"} if "status" in block else block)  # fmt: skip
            item = block
        elif isinstance(block, ThinkingContent):
            item = _reasoning(block, rid, oi)
            item_id = item["id"]
            ev("response.output_item.added", output_index=oi, item={**item, "summary": []})
            part = {"type": "summary_text", "text": ""}
            common = {"item_id": item_id, "output_index": oi, "summary_index": 0}
            ev("response.reasoning_summary_part.added", **common, part=part)
            for p in split_text(block.thinking, pc):
                ev("response.reasoning_summary_text.delta", **common, delta=p)
            ev("response.reasoning_summary_text.done", **common, text=block.thinking)
            done_part = {"type": "summary_text", "text": block.thinking}
            ev("response.reasoning_summary_part.done", **common, part=done_part)
        elif isinstance(block, TextContent):
            item = _message(block, rid, oi)
            item_id = item["id"]
            ev("response.output_item.added", output_index=oi,
               item={**item, "status": "in_progress", "content": []})  # fmt: skip
            common = {"item_id": item_id, "output_index": oi, "content_index": 0}
            empty = {"type": "output_text", "text": "", "annotations": []}
            ev("response.content_part.added", **common, part=empty)
            for p in split_text(block.text, pc):
                ev("response.output_text.delta", **common, delta=p, logprobs=[])
            for n, note in enumerate(item["content"][0]["annotations"]):
                ev("response.output_text.annotation.added", **common, annotation_index=n,
                   annotation=note)  # fmt: skip
            ev("response.output_text.done", **common, text=block.text, logprobs=[])
            ev("response.content_part.done", **common, part=item["content"][0])
        else:
            block = as_tool_call(block, "the openai-responses mock")
            item = _function_call(block, rid, oi)
            item_id = item["id"]
            args = item["arguments"]
            ev("response.output_item.added", output_index=oi,
               item={**item, "arguments": "", "status": "in_progress"})  # fmt: skip
            for p in split_text(args, pc):
                ev("response.function_call_arguments.delta", item_id=item_id,
                   output_index=oi, delta=p)  # fmt: skip
            ev("response.function_call_arguments.done", item_id=item_id, output_index=oi,
               name=block.name, arguments=args)  # fmt: skip
        ev("response.output_item.done", output_index=oi, item=item)
        output.append(item)
    status, incomplete = _ending(reply)
    ev(TERMINAL_EVENTS[status], response=response(status, output, _usage(reply), incomplete))
    return frames


def _ending(reply: ScriptedReply) -> tuple[str, dict[str, str] | None]:
    """The response's status and ``incomplete_details``: a stop the spec gives a
    reason (``length``) ends incomplete, any other completed."""
    why = INCOMPLETE_REASONS.get(Stop(reply.stop_reason))
    return ("completed", None) if why is None else ("incomplete", {"reason": why})


def _item_id(item_type: str, rid: str, oi: int) -> str:
    """The mock's id for output item ``oi`` (``msg_<response>_<n>``)."""
    return f"{ITEM_ID_PREFIXES[item_type]}_{rid}_{oi}"


def _reasoning(block: ThinkingContent, rid: str, oi: int) -> dict[str, Any]:
    # modelwire keeps a Responses reasoning item as JSON in the signature.
    item = _reasoning_item(block.signature) or {}
    item_id = str(item.get("id") or _item_id("reasoning", rid, oi))
    done_part = {"type": "summary_text", "text": block.thinking}
    return {**item, "id": item_id, "type": "reasoning", "summary": [done_part]}


def _annotation(c: Citation) -> dict[str, Any]:
    """The citation as the API sends it: its raw annotation, else one built from its
    fields (API reference, output_text.annotations)."""
    if c.raw:
        value = json.loads(c.raw)
        if isinstance(value, dict) and isinstance(value.get("type"), str):
            return value
    if c.kind == "file":
        return {"type": "file_citation", "file_id": c.document or "", "filename": c.title or "",
                "index": c.start or 0}  # fmt: skip
    return {"type": "url_citation", "url": c.url or "", "title": c.title or "",
            "start_index": c.start or 0, "end_index": c.end or 0}  # fmt: skip


def _server_item(call: ServerToolCall, result: ServerToolResult | None) -> dict[str, Any]:
    """A provider-run item: the call's raw item, else one built from the blocks."""
    if call.raw:
        value = json.loads(call.raw)
        if isinstance(value, dict):
            return value
    item: dict[str, Any] = {"id": call.id, "type": call.provider_type, "status": "completed"}
    if call.provider_type == "mcp_call":
        item.update(name=call.name, arguments=json.dumps(call.input), server_label="mock")
    elif call.provider_type == "web_search_call":
        item["action"] = dict(call.input)
    else:
        item.update(call.input)
    field = SERVER_ITEMS.get(call.provider_type, ("", None))[1]
    if result is not None and field is not None:
        if result.is_error:
            item["status"] = "failed"
        if field == "action.sources":
            item.setdefault("action", {})["sources"] = result.result
        else:
            item[field] = result.result
    return item


def _items(content: Sequence[AssistantContent]) -> list[Any]:
    """The output items of a script, in order: text, thinking and call blocks as they
    are, provider-run tools and opaque items as the item dicts to send (a result
    without raw of its own goes into its call's item)."""
    out: list[Any] = []
    skip: set[int] = set()
    for n, block in enumerate(content):
        if n in skip:
            continue
        if isinstance(block, ServerToolCall):
            nxt = content[n + 1] if n + 1 < len(content) else None
            result = None
            if isinstance(nxt, ServerToolResult) and nxt.tool_call_id == block.id and not nxt.raw:
                result = nxt
                skip.add(n + 1)
            out.append(_server_item(block, result))
        elif isinstance(block, ServerToolResult):
            if not block.raw:
                continue  # carried by its call's item, which came before
            out.append(json.loads(block.raw))
        elif isinstance(block, ProviderItem):
            out.append(block.value)
        else:
            out.append(block)
    return out


def _message(block: TextContent, rid: str, oi: int) -> dict[str, Any]:
    # The signature of a Responses text block is its message item id.
    full = {"type": "output_text", "text": block.text,
            "annotations": [_annotation(c) for c in block.citations]}  # fmt: skip
    return {"id": block.signature or _item_id("message", rid, oi), "type": "message",
            "status": "completed", "role": "assistant", "content": [full]}  # fmt: skip


def _function_call(block: ToolCall, rid: str, oi: int) -> dict[str, Any]:
    # ToolCall.id is the call_id; the signature keeps the item id.
    return {"type": "function_call", "id": block.signature or _item_id("function_call", rid, oi),
            "call_id": block.id, "name": block.name, "arguments": arguments_text(block),
            "status": "completed"}  # fmt: skip


def render_complete(reply: ScriptedReply, model: str, rid: str) -> dict[str, Any]:
    """The ``response`` object a request without ``"stream": true`` gets: the one the
    stream's ``response.completed`` (or ``response.incomplete``) carries."""
    rid = prefixed(RESPONSE_ID_PREFIX, rid or "mock")
    output: list[Any] = []
    for oi, block in enumerate(_items(reply.content)):
        if isinstance(block, dict):
            output.append(block)
        elif isinstance(block, ThinkingContent):
            output.append(_reasoning(block, rid, oi))
        elif isinstance(block, TextContent):
            output.append(_message(block, rid, oi))
        else:
            output.append(_function_call(as_tool_call(block, "the openai-responses mock"), rid, oi))
    status, incomplete = _ending(reply)
    return _response(rid, int(time.time()), model, status, output, _usage(reply), incomplete)
