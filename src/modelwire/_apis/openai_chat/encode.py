"""OpenAI Chat Completions: the request body (pure; the context is never changed).

Reference: https://platform.openai.com/docs/api-reference/chat/create
"""

from __future__ import annotations

import re
from typing import Any

from ..._catalog._records import tool_id_override
from ..._wire.request import RequestOptions, check_extra_body
from ...errors import ConfigurationError
from ...types import (
    AssistantMessage,
    AudioContent,
    Context,
    DocumentContent,
    ImageContent,
    Model,
    ServerToolCall,
    ServerToolResult,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from .._codec import IdRule
from .._common import (
    block_as_text,
    check_reasoning,
    check_tool_choice,
    raw_or_json_arguments,
    refuse_assistant_images,
    same_model,
    server_tool_objects,
    with_sources,
)
from ._compat import ChatCompat, detect_compat
from ._input import audio_format, data_url, filename
from ._output import add_output
from .spec import API_NAME

__all__ = ["CHAT_ID_RULE", "RESERVED", "build_body", "encode_messages", "tool_id_rule"]

#: OpenAI refuses ``tool_calls[].id`` longer than 40 characters.
CHAT_ID_RULE = IdRule(re.compile(r".{1,40}", re.S), None, 40)


def tool_id_rule(model: Model) -> IdRule:
    """The tool-call ids a model accepts back: OpenAI's rule, unless the provider record
    is stricter (Mistral's compatible API wants exactly 9 letters and digits:
    ``tool_ids`` in its record)."""
    own = tool_id_override(model, "openai-chat")
    if own is None:
        return CHAT_ID_RULE
    bad = re.compile(own.bad) if own.bad is not None else None
    return IdRule(re.compile(own.valid), bad, own.max_len, exact=own.exact)


# --------------------------------------------------------------------------- outbound

RESERVED = frozenset(
    {
        "model",
        "messages",
        "stream",
        "stream_options",
        "max_tokens",
        "max_completion_tokens",
        "tools",
        "tool_choice",
    }
)


def _part(b: UserContent, where: str) -> dict[str, Any]:
    """One content part of a user message (API reference, "User message": text,
    image_url, input_audio and file parts)."""
    if isinstance(b, TextContent):
        return {"type": "text", "text": b.text}
    if isinstance(b, ImageContent):
        return {"type": "image_url", "image_url": {"url": data_url(b.mime_type, b.data)}}
    if isinstance(b, AudioContent):
        return {"type": "input_audio",
                "input_audio": {"data": b.data, "format": audio_format(b, where)}}  # fmt: skip
    assert isinstance(b, DocumentContent)
    if b.file_id is not None:
        return {"type": "file", "file": {"file_id": b.file_id}}
    if b.data is None:
        raise ConfigurationError(
            f"{where} is a document given by URL, which Chat Completions cannot fetch "
            "(its file parts take file_data or file_id): download it and pass data=, "
            "or upload it and pass file_id="
        )
    return {"type": "file",
            "file": {"filename": filename(b), "file_data": data_url(b.mime_type, b.data)}}  # fmt: skip


def _user_content(msg: UserMessage, i: int) -> str | list[dict[str, Any]]:
    if isinstance(msg.content, str):
        return msg.content
    if all(isinstance(b, TextContent) for b in msg.content):
        return "".join(b.text for b in msg.content if isinstance(b, TextContent))
    return [_part(b, f"messages[{i}].content[{j}]") for j, b in enumerate(msg.content)]


# Reasoning fields a server accepts back on an assistant message, by the name it
# streamed them under (the decoder records that name as the block's signature).
_REPLAY_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")


def _thinking_field(msg: AssistantMessage, model: Model | None) -> str:
    """The field to replay thinking in: the one it arrived in when the message
    comes from this very model (handoff rule), else ``reasoning_content``."""
    if model is not None and same_model(model, msg):
        for b in msg.content:
            if isinstance(b, ThinkingContent) and b.signature in _REPLAY_FIELDS:
                return b.signature
    return "reasoning_content"


def _assistant(
    msg: AssistantMessage, compat: ChatCompat, model: Model | None = None
) -> dict[str, Any] | None:
    same = model is not None and same_model(model, msg)
    # Provider-run tools and their results have no Chat form: they become text where
    # they stood, as do the sources another API cited (``_common.with_sources``); opaque provider
    # items carry nothing a Chat model can use and are left out.
    text = "".join(
        (b.text if same else with_sources(b.text, b.citations))
        if isinstance(b, TextContent)
        else f"{block_as_text(b)}\n"
        for b in msg.content
        if isinstance(b, TextContent | ServerToolCall | ServerToolResult)
    )
    thinking = "".join(
        b.thinking for b in msg.content if isinstance(b, ThinkingContent) and not b.redacted
    )
    calls = [b for b in msg.content if isinstance(b, ToolCall)]
    out: dict[str, Any] = {"role": "assistant"}
    if thinking and compat.thinking_replay == "text":
        text = f"<thinking>\n{thinking}\n</thinking>\n{text}" if text else thinking
    out["content"] = text if text else None
    if thinking and compat.thinking_replay == "reasoning_content":
        out[_thinking_field(msg, model)] = thinking
    if calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": raw_or_json_arguments(c.raw_arguments, c.arguments),
                },
            }
            for c in calls
        ]
    if out["content"] is None and not calls:
        return None  # nothing a server would accept; an empty turn carries no information
    return out


def _tool_result(msg: ToolResultMessage, compat: ChatCompat) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "tool", "tool_call_id": msg.tool_call_id}
    if compat.tool_result_name:
        out["name"] = msg.tool_name
    out["content"] = msg.text
    return out


def _attachments(msg: ToolResultMessage, i: int) -> list[dict[str, Any]]:
    """The images, documents and audio of a tool result as user content parts: a tool
    message takes text only (API reference, "Tool message"), so they follow the tool
    messages of the turn in one user message that says which call they came from."""
    parts = [
        _part(b, f"messages[{i}].content[{j}]")
        for j, b in enumerate(msg.content)
        if not isinstance(b, TextContent)
    ]
    if not parts:
        return []
    head = f"[attached to the result of {msg.tool_name} (call {msg.tool_call_id})]"
    return [{"type": "text", "text": head}, *parts]


def encode_messages(
    context: Context, compat: ChatCompat, model: Model | None = None
) -> list[dict[str, Any]]:
    """The ``messages`` array for ``context`` (pure; the context is not changed).

    ``model`` is the target: thinking it produced itself goes back in the field
    it came in."""
    messages: list[dict[str, Any]] = []
    if context.system_prompt:
        messages.append({"role": compat.system_role, "content": context.system_prompt})
    attached: list[dict[str, Any]] = []  # tool-result attachments waiting for their turn's end

    def flush() -> None:
        if attached:
            messages.append({"role": "user", "content": list(attached)})
            attached.clear()

    for i, msg in enumerate(context.messages):
        if isinstance(msg, ToolResultMessage):
            messages.append(_tool_result(msg, compat))
            attached.extend(_attachments(msg, i))
            continue
        flush()
        if isinstance(msg, UserMessage):
            messages.append({"role": "user", "content": _user_content(msg, i)})
        elif isinstance(msg, SystemMessage):
            # In place (the client folded it into the system prompt for a model that
            # does not take system messages among the turns).
            messages.append({"role": compat.system_role, "content": msg.content})
        elif isinstance(msg, AssistantMessage):
            if msg.stop_reason in ("error", "aborted"):
                continue  # a failed turn is not replayed (handoff rules)
            # An assistant message's content is text and refusals only.
            refuse_assistant_images(msg, f"messages[{i}]", "openai-chat")
            item = _assistant(msg, compat, model)
            if item is not None:
                messages.append(item)
    flush()
    return messages


def _tool_choice(tc: str | dict[str, Any] | None) -> Any:
    if isinstance(tc, dict):
        return {"type": "function", "function": {"name": tc["name"]}}
    return tc


def build_body(model: Model, context: Context, options: RequestOptions) -> dict[str, Any]:
    """The JSON body of one streamed Chat Completions request."""
    compat = detect_compat(model)
    check_extra_body(options.extra_body, RESERVED)
    server_tool_objects(options.server_tools, {}, API_NAME)  # it runs none: refused
    check_tool_choice(options.tool_choice, context)
    body: dict[str, Any] = {
        "model": model.id,
        "messages": encode_messages(context, compat, model),
        "stream": True,
    }
    if compat.stream_options:
        body["stream_options"] = {"include_usage": True}
    if options.max_tokens is not None:
        body[compat.max_tokens_field] = options.max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if context.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in context.tools
        ]
    elif compat.empty_tools:
        body["tools"] = []
    if options.tool_choice is not None:
        body["tool_choice"] = _tool_choice(options.tool_choice)
    if options.parallel_tool_calls is not None and context.tools:
        body["parallel_tool_calls"] = options.parallel_tool_calls
    if compat.store is not None:
        body["store"] = compat.store
    check_reasoning(model, options.reasoning)
    if options.reasoning is not None:
        effort = (compat.reasoning_effort_map or {}).get(options.reasoning, options.reasoning)
        if compat.reasoning_style == "reasoning_effort":
            body["reasoning_effort"] = effort
        elif compat.reasoning_style == "openrouter":
            body["reasoning"] = {"effort": effort}
        elif compat.reasoning_style == "enable_thinking":
            body["enable_thinking"] = True
        elif compat.reasoning_style == "zai":
            body["thinking"] = {"type": "enabled"}
    if options.session_id and (model.provider == "openai" or "api.openai.com" in model.url_root):
        body["prompt_cache_key"] = options.session_id
    add_output(body, options.output)  # response_format (structured output)
    if options.extra_body:
        body.update(options.extra_body)
    return body
