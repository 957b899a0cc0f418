"""OpenAI Responses as a mock server speaks it, and what a request carries back.

Reference: https://platform.openai.com/docs/api-reference/responses-streaming
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

from ...types import TextContent, ThinkingContent
from .._mock import MockFrame, ScriptedReply, arguments_text, split_text, text_of

__all__ = ["render", "tool_results"]


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


def render(reply: ScriptedReply, model: str, rid: str, pc: int) -> list[MockFrame]:
    """The mock server's events for a scripted reply."""
    rid = rid or "resp_mock"
    seq = itertools.count()
    created = int(time.time())
    frames: list[MockFrame] = []

    def ev(kind: str, **fields: Any) -> None:
        frames.append((kind, {"type": kind, "sequence_number": next(seq), **fields}))

    def response(status: str, output: list[Any], usage: Any, incomplete: Any = None) -> Any:
        return {"id": rid, "object": "response", "created_at": created, "status": status,
                "error": None, "incomplete_details": incomplete, "model": model,
                "output": output, "usage": usage}  # fmt: skip

    ev("response.created", response=response("in_progress", [], None))
    ev("response.in_progress", response=response("in_progress", [], None))
    output: list[Any] = []
    for oi, block in enumerate(reply.content):
        if isinstance(block, ThinkingContent):
            # modelwire keeps a Responses reasoning item as JSON in the signature.
            item = _reasoning_item(block.signature) or {}
            item_id = str(item.get("id") or f"rs_{rid}_{oi}")
            item = {**item, "id": item_id, "type": "reasoning", "summary": []}
            ev("response.output_item.added", output_index=oi, item=item)
            part = {"type": "summary_text", "text": ""}
            common = {"item_id": item_id, "output_index": oi, "summary_index": 0}
            ev("response.reasoning_summary_part.added", **common, part=part)
            for p in split_text(block.thinking, pc):
                ev("response.reasoning_summary_text.delta", **common, delta=p)
            ev("response.reasoning_summary_text.done", **common, text=block.thinking)
            done_part = {"type": "summary_text", "text": block.thinking}
            ev("response.reasoning_summary_part.done", **common, part=done_part)
            item = {**item, "summary": [done_part]}
        elif isinstance(block, TextContent):
            # The signature of a Responses text block is its message item id.
            item_id = block.signature or f"msg_{rid}_{oi}"
            item = {"id": item_id, "type": "message", "status": "in_progress",
                    "role": "assistant", "content": []}  # fmt: skip
            ev("response.output_item.added", output_index=oi, item=item)
            common = {"item_id": item_id, "output_index": oi, "content_index": 0}
            empty = {"type": "output_text", "text": "", "annotations": []}
            ev("response.content_part.added", **common, part=empty)
            for p in split_text(block.text, pc):
                ev("response.output_text.delta", **common, delta=p, logprobs=[])
            ev("response.output_text.done", **common, text=block.text, logprobs=[])
            full = {"type": "output_text", "text": block.text, "annotations": []}
            ev("response.content_part.done", **common, part=full)
            item = {**item, "status": "completed", "content": [full]}
        else:
            # ToolCall.id is the call_id; the signature keeps the item id.
            item_id = block.signature or f"fc_{rid}_{oi}"
            args = arguments_text(block)
            item = {"type": "function_call", "id": item_id, "call_id": block.id,
                    "name": block.name, "arguments": "", "status": "in_progress"}  # fmt: skip
            ev("response.output_item.added", output_index=oi, item=item)
            for p in split_text(args, pc):
                ev("response.function_call_arguments.delta", item_id=item_id,
                   output_index=oi, delta=p)  # fmt: skip
            ev("response.function_call_arguments.done", item_id=item_id, output_index=oi,
               arguments=args)  # fmt: skip
            item = {**item, "arguments": args, "status": "completed"}
        ev("response.output_item.done", output_index=oi, item=item)
        output.append(item)
    u = reply.usage
    prompt = u.input + u.cache_read + u.cache_write
    usage = {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": u.cache_read},
             "output_tokens": u.output, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": prompt + u.output}  # fmt: skip
    if reply.stop_reason == "length":
        # A cut-off response ends ``response.incomplete`` (reason max_output_tokens).
        ev("response.incomplete", response=response(
            "incomplete", output, usage, {"reason": "max_output_tokens"}))  # fmt: skip
    else:
        ev("response.completed", response=response("completed", output, usage))
    return frames
