"""Outbound half of ``ollama-chat``: a context and options → the ``/api/chat`` request body.

Reference: https://github.com/ollama/ollama/blob/main/docs/api.md ("Generate a chat
completion").

Request: ``{"model", "messages", "tools", "stream": true, "think", "options":
{"temperature", "num_predict"}}``; messages have ``role`` system/user/assistant/tool,
``images`` (base64, no ``data:`` prefix), assistant ``thinking`` and ``tool_calls``
(``{"function": {"name", "arguments": {…}}}`` — arguments are an object, not text),
and tool results ``{"role": "tool", "content", "tool_name"}``. Ollama matches results
by ``tool_name`` and order, so tool-call ids are never sent.

Input beyond text and images: Ollama's chat takes neither files nor audio, so a
document whose bytes are text (``text/*``, JSON, XML) is sent as its text, after its
title on a line of its own; any other document, and audio, is a ``ConfigurationError``
naming the block. Ollama runs no tools of its own: another API's provider-run tool
blocks become text the model can read, and opaque provider items are not sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
    UserMessage,
)
from .._common import (
    block_as_text,
    check_reasoning,
    check_tool_choice,
    document_text,
    refuse_assistant_images,
    server_tool_objects,
)
from .._server.reply import arguments_object
from ._output import add_output
from .spec import API_NAME, RESERVED, RESERVED_OPTIONS

__all__ = ["RESERVED", "build_body", "encode_messages"]


def _images(blocks: Sequence[object]) -> list[str]:
    return [b.data for b in blocks if isinstance(b, ImageContent)]


def _document_text(block: DocumentContent, where: str) -> str:
    text = document_text(block, where, "Ollama's chat", "text and images only")
    return f"{block.title}\n{text}" if block.title else text


def _text(blocks: Sequence[object], where: str) -> str:
    out = ""
    after_document = False
    for j, b in enumerate(blocks):
        if isinstance(b, TextContent):
            text, document = b.text, False
        elif isinstance(b, DocumentContent):
            text, document = _document_text(b, f"{where}.content[{j}]"), True
        elif isinstance(b, AudioContent):
            raise ConfigurationError(
                f"{where}.content[{j}] is audio, which Ollama's chat cannot take (text and "
                "images only): transcribe it and send the text"
            )
        else:
            continue  # images travel in ``images``
        if out and (document or after_document):
            out += "\n\n"  # a document is a paragraph of its own
        out += text
        after_document = document
    return out


def _assistant(msg: AssistantMessage) -> dict[str, Any] | None:
    pieces: list[str] = []
    for b in msg.content:
        if isinstance(b, TextContent):
            pieces.append(b.text)
        elif isinstance(b, ServerToolCall | ServerToolResult):
            # Ollama runs no tools itself: what another provider ran is shown as text.
            pieces.append(f"{block_as_text(b)}\n")
        # opaque provider items mean nothing to Ollama: not sent
    out: dict[str, Any] = {"role": "assistant", "content": "".join(pieces)}
    # Thinking reaches here only from this very model (handoff turns another
    # model's thinking into text); Ollama takes it back in ``thinking``.
    thinking = "".join(
        b.thinking for b in msg.content if isinstance(b, ThinkingContent) and not b.redacted
    )
    if thinking:
        out["thinking"] = thinking
    calls = [b for b in msg.content if isinstance(b, ToolCall)]
    if calls:
        out["tool_calls"] = [
            {"function": {"name": c.name, "arguments": arguments_object(c)}} for c in calls
        ]
    if not out["content"] and not thinking and not calls:
        return None  # an empty turn carries nothing
    return out


def encode_messages(context: Context) -> list[dict[str, Any]]:
    """The ``messages`` array for ``context`` (pure; the context is not changed)."""
    out: list[dict[str, Any]] = []
    if context.system_prompt:
        out.append({"role": "system", "content": context.system_prompt})
    for i, msg in enumerate(context.messages):
        if isinstance(msg, UserMessage):
            item: dict[str, Any] = {"role": "user"}
            if isinstance(msg.content, str):
                item["content"] = msg.content
            else:
                item["content"] = _text(msg.content, f"messages[{i}]")
                images = _images(msg.content)
                if images:
                    item["images"] = images
            out.append(item)
        elif isinstance(msg, SystemMessage):
            out.append({"role": "system", "content": msg.content})
        elif isinstance(msg, AssistantMessage):
            if msg.stop_reason in ("error", "aborted"):
                continue  # a failed turn is not replayed (handoff rules)
            refuse_assistant_images(msg, f"messages[{i}]", "ollama-chat")
            turn = _assistant(msg)
            if turn is not None:
                out.append(turn)
        else:
            result: dict[str, Any] = {"role": "tool", "tool_name": msg.tool_name,
                                      "content": _text(msg.content, f"messages[{i}]")}  # fmt: skip
            images = _images(msg.content)
            if images:
                result["images"] = images
            out.append(result)
    return out


def _think(model: Model, level: str | None) -> bool | str | None:
    """``think``: gpt-oss takes ``low``/``medium``/``high``; other thinking models
    only ``true`` (docs/api.md, "think")."""
    check_reasoning(model, level)
    if level is None:
        return None
    if model.id.startswith("gpt-oss") and level in ("low", "medium", "high"):
        return level
    return True


def build_body(model: Model, context: Context, options: RequestOptions) -> dict[str, Any]:
    """The JSON body of one streamed ``/api/chat`` request."""
    extra = dict(options.extra_body or {})
    check_extra_body(extra, RESERVED)
    server_tool_objects(options.server_tools, {}, API_NAME)  # it runs none: refused
    tc = options.tool_choice
    check_tool_choice(tc, context)
    if tc == "required" or isinstance(tc, dict):
        # /api/chat has no tool_choice: a forced call cannot be asked for.
        raise ConfigurationError(
            f"tool_choice={tc!r} cannot be sent to Ollama's /api/chat (it has no "
            "tool_choice); use 'auto', 'none' or None"
        )
    body: dict[str, Any] = {"model": model.id, "messages": encode_messages(context)}
    # tool_choice "none": the model is not shown the tools, so it cannot call one.
    if context.tools and tc != "none":
        body["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": t.parameters}}
            for t in context.tools
        ]  # fmt: skip
    body["stream"] = True
    think = _think(model, options.reasoning)
    if think is not None:
        body["think"] = think
    opts: dict[str, Any] = {}
    if options.temperature is not None:
        opts["temperature"] = options.temperature
    if options.max_tokens is not None:
        opts["num_predict"] = options.max_tokens
    more = extra.pop("options", None)
    if more is not None:
        if not isinstance(more, dict):
            raise ConfigurationError("extra_body['options'] must be a dict (num_ctx, top_p, …)")
        check_extra_body(more, RESERVED_OPTIONS)
        opts.update(more)
    if opts:
        body["options"] = opts
    add_output(body, options.output)  # format (structured output)
    body.update(extra)
    return body
