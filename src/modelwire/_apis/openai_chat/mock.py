"""OpenAI Chat Completions as a mock server speaks it, and what a request carries back.

Reference: https://platform.openai.com/docs/api-reference/chat-streaming/streaming
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from typing import Any

from ..._catalog._records import tool_id_override
from ...types import Citation, Model, TextContent, ThinkingContent
from .._codec import IdRule
from .._common import as_tool_call
from .._mock import MockFrame, ScriptedReply, arguments_text, prefixed, split_text
from .spec import CHUNK_OBJECT, COMPLETION_OBJECT, DONE, FINISH_OF, ID_PREFIX

__all__ = ["CHAT_ID_RULE", "adapt", "render", "render_complete", "render_models", "tool_id_rule"]

#: OpenAI refuses ``tool_calls[].id`` longer than 40 characters.
CHAT_ID_RULE = IdRule(re.compile(r".{1,40}", re.S), None, 40)


def tool_id_rule(model: Model) -> IdRule:
    """OpenAI's rule, unless the provider record is stricter (Mistral's compatible
    API wants exactly 9 letters and digits: ``tool_ids`` in its record)."""
    own = tool_id_override(model, "openai-chat")
    if own is None:
        return CHAT_ID_RULE
    bad = re.compile(own.bad) if own.bad is not None else None
    return IdRule(re.compile(own.valid), bad, own.max_len, exact=own.exact)


def render(reply: ScriptedReply, model: str, rid: str, pc: int) -> list[MockFrame]:
    """``data: <chunk>`` events … ``data: [DONE]`` (the mock server's bytes)."""
    rid = prefixed(ID_PREFIX, rid or "mock")
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> MockFrame:
        return (None, {
            "id": rid, "object": CHUNK_OBJECT, "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        })  # fmt: skip

    frames: list[MockFrame] = [chunk({"role": "assistant", "content": ""})]
    tool_index = 0
    for block in reply.content:
        if isinstance(block, TextContent):
            frames += [chunk({"content": p}) for p in split_text(block.text, pc)]
            if block.citations:
                frames.append(chunk({"annotations": [_annotation(c) for c in block.citations]}))
        elif isinstance(block, ThinkingContent):
            # DeepSeek's field; the adapter reads reasoning_content first.
            frames += [chunk({"reasoning_content": p}) for p in split_text(block.thinking, pc)]
        else:
            block = as_tool_call(block, "the openai-chat mock")
            frames.append(chunk({"tool_calls": [{
                "index": tool_index, "id": block.id, "type": "function",
                "function": {"name": block.name, "arguments": ""},
            }]}))  # fmt: skip
            for p in split_text(arguments_text(block), pc):
                frames.append(
                    chunk({"tool_calls": [{"index": tool_index, "function": {"arguments": p}}]})
                )
            tool_index += 1
    frames.append(chunk({}, FINISH_OF[reply.stop_reason]))
    frames.append((None, {
        "id": rid, "object": CHUNK_OBJECT, "created": created, "model": model,
        "choices": [], "usage": _usage(reply),
    }))  # fmt: skip
    frames.append((None, DONE))
    return frames


def _annotation(c: Citation) -> dict[str, Any]:
    """A citation as ``delta.annotations`` carries it (OpenAI search models, OpenRouter):
    its raw annotation when it is one, else a ``url_citation`` built from its fields."""
    if c.raw:
        value = json.loads(c.raw)
        if isinstance(value, dict) and value.get("type") == "url_citation":
            return value
    cite: dict[str, Any] = {"url": c.url or "", "title": c.title or ""}
    if c.cited_text is not None:
        cite["content"] = c.cited_text
    if c.start is not None and c.end is not None:
        cite.update(start_index=c.start, end_index=c.end)
    return {"type": "url_citation", "url_citation": cite}


def _usage(reply: ScriptedReply) -> dict[str, Any]:
    u = reply.usage
    # Chat reports no cache writes: they count as ordinary prompt tokens.
    prompt = u.input + u.cache_read + u.cache_write
    return {"prompt_tokens": prompt, "completion_tokens": u.output,
            "total_tokens": prompt + u.output,
            "prompt_tokens_details": {"cached_tokens": u.cache_read}}  # fmt: skip


def adapt(frames: list[MockFrame], body: object) -> list[MockFrame]:
    """The usage-only chunk (``choices: []``) only when the request asked for it with
    ``stream_options.include_usage`` (chat-streaming reference: "stream_options")."""
    options = body.get("stream_options") if isinstance(body, dict) else None
    if isinstance(options, dict) and options.get("include_usage") is True:
        return frames
    return [f for f in frames if not (isinstance(f[1], dict) and f[1].get("choices") == [])]


def render_complete(reply: ScriptedReply, model: str, rid: str) -> dict[str, Any]:
    """The ``chat.completion`` object a request without ``"stream": true`` gets
    (https://platform.openai.com/docs/api-reference/chat/object)."""
    text = "".join(b.text for b in reply.content if isinstance(b, TextContent))
    thinking = "".join(b.thinking for b in reply.content if isinstance(b, ThinkingContent))
    calls = [{"id": b.id, "type": "function",
              "function": {"name": b.name, "arguments": arguments_text(b)}}
             for b in (as_tool_call(c, "the openai-chat mock") for c in reply.content
                       if not isinstance(c, TextContent | ThinkingContent))]  # fmt: skip
    message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None}
    if calls:
        message["tool_calls"] = calls
    if thinking:
        message["reasoning_content"] = thinking  # DeepSeek's field, as the stream sends it
    return {
        "id": prefixed(ID_PREFIX, rid or "mock"), "object": COMPLETION_OBJECT,
        "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": FINISH_OF[reply.stop_reason]}],
        "usage": _usage(reply),
    }  # fmt: skip


def render_models(ids: Sequence[str]) -> dict[str, Any]:
    """``GET /v1/models`` (https://platform.openai.com/docs/api-reference/models/list)."""
    return {
        "object": "list",
        "data": [
            {"id": i, "object": "model", "created": 0, "owned_by": "modelwire-mock"} for i in ids
        ],
    }
