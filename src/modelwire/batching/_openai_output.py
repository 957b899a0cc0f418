"""Result lines in the OpenAI Batch API output format (``--output-format openai``).

One line per request, as the Batch API writes its output file
(https://platform.openai.com/docs/api-reference/batch/request-output)::

    {"id": "batch_req_…", "custom_id": "…",
     "response": {"status_code": 200, "request_id": "…", "body": {…}} | null,
     "error": null | {"code": "…", "message": "…"}}

``body`` is what the API would have answered without streaming: a ``response``
object for a ``/v1/responses`` line, a ``chat.completion`` object for any other. A provider's HTTP error
is a ``response`` with its status and an ``{"error": {...}}`` body; a failure with
no status (timeout, broken stream…) is ``error``, ``response`` null.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..types import AssistantMessage, TextContent, ToolCall
from ._input import BatchRequest

__all__ = ["openai_line"]

_FINISH = {"stop": "stop", "length": "length", "tool_use": "tool_calls"}


def _id(prefix: str, custom_id: str) -> str:
    # Stable across a resume: the same custom_id gets the same line id.
    return prefix + hashlib.sha256(custom_id.encode()).hexdigest()[:24]


def _text(message: AssistantMessage) -> str:
    return "".join(b.text for b in message.content if isinstance(b, TextContent))


def _calls(message: AssistantMessage) -> list[ToolCall]:
    return [b for b in message.content if isinstance(b, ToolCall)]


def _chat_body(message: AssistantMessage, record: dict[str, Any]) -> dict[str, Any]:
    usage = record["usage"]
    prompt = usage["input"] + usage["cache_read"] + usage["cache_write"]
    out: dict[str, Any] = {"role": "assistant", "content": _text(message) or None}
    calls = _calls(message)
    if calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": c.raw_arguments or "{}"}}
            for c in calls
        ]  # fmt: skip
    return {
        "id": message.response_id or _id("chatcmpl-", record["custom_id"]),
        "object": "chat.completion",
        "created": message.timestamp // 1000,
        "model": message.model,
        "choices": [
            {
                "index": 0,
                "message": out,
                "finish_reason": _FINISH.get(message.stop_reason or "stop", "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": usage["output"],
            "total_tokens": prompt + usage["output"],
        },
    }


def _responses_body(message: AssistantMessage, record: dict[str, Any]) -> dict[str, Any]:
    usage = record["usage"]
    prompt = usage["input"] + usage["cache_read"] + usage["cache_write"]
    output: list[dict[str, Any]] = []
    text = _text(message)
    if text:
        output.append({"type": "message", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]})  # fmt: skip
    for c in _calls(message):
        output.append({"type": "function_call", "call_id": c.id, "name": c.name,
                       "arguments": c.raw_arguments or "{}", "status": "completed"})  # fmt: skip
    return {
        "id": message.response_id or _id("resp_", record["custom_id"]),
        "object": "response",
        "created_at": message.timestamp // 1000,
        "status": "incomplete" if message.stop_reason == "length" else "completed",
        "model": message.model,
        "output": output,
        "usage": {
            "input_tokens": prompt,
            "output_tokens": usage["output"],
            "total_tokens": prompt + usage["output"],
        },
    }


def openai_line(req: BatchRequest, message: AssistantMessage, record: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """The Batch API output line for ``record`` (a result built by the runner)."""
    line: dict[str, Any] = {"id": _id("batch_req_", req.custom_id), "custom_id": req.custom_id}
    err = message.error
    if record["ok"]:
        body = (
            _responses_body(message, record)
            if req.url == "/v1/responses"
            else _chat_body(message, record)
        )
        line["response"] = {"status_code": 200, "request_id": message.response_id, "body": body}
        line["error"] = None
    elif err is not None and err.status is not None:
        line["response"] = {
            "status_code": err.status,
            "request_id": err.request_id,
            "body": {"error": {"message": err.message, "type": err.kind, "code": err.code}},
        }
        line["error"] = None
    else:
        line["response"] = None
        line["error"] = {
            "code": err.kind if err else "provider_stream",
            "message": err.message if err else "the response failed",
        }
    return line
