"""Outbound half of ``cohere-chat``: a context and options → the v2 chat request body.

Reference: https://docs.cohere.com/reference/chat-stream (``messages``, ``tools``,
``tool_choice``, ``documents``, ``response_format``, ``thinking``, ``max_tokens``,
``temperature``); tool use: https://docs.cohere.com/docs/tool-use-overview; images:
https://docs.cohere.com/docs/image-inputs; reasoning: https://docs.cohere.com/docs/reasoning.

Messages: ``system``; ``user`` with a string, or ``text`` and ``image_url`` parts (an
image as a data URL); ``assistant`` with ``content`` parts (``text``, and ``thinking``
replayed to Cohere itself), or — on a turn that calls tools — ``tool_plan`` (the text
said before the calls: what the decoder reads a ``tool-plan-delta`` into),
``tool_calls`` (``{"id", "type": "function", "function": {"name", "arguments"}}``,
arguments as text) and the ``citations`` received; a tool result is ``{"role":
"tool", "tool_call_id", "content": [{"type": "text", "text"}]}``. A text document
(``text/*``, JSON…) goes to the request's ``documents`` (``{"id", "data": {"title",
"text"}}``): Cohere grounds its answer on them and cites them by ``id``.
"""

from __future__ import annotations

from typing import Any

import msgspec

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
    UserMessage,
)
from .._common import (
    block_as_text,
    check_reasoning,
    check_tool_choice,
    citations_as_text,
    document_text,
    raw_or_json_arguments,
    refuse_assistant_images,
    server_tool_objects,
)
from .spec import API_NAME, THINKING_BUDGETS, TOOL_CHOICE

__all__ = ["RESERVED", "build_body", "encode_messages"]

#: Body fields modelwire sets; ``extra_body`` may add the others (``seed``,
#: ``stop_sequences``, ``p``, ``k``, ``safety_mode``, ``citation_options``,
#: ``thinking`` to disable reasoning…).
RESERVED = frozenset({"model", "messages", "stream", "max_tokens", "tools", "tool_choice",
                      "response_format"})  # fmt: skip


class _Documents:
    """The request's ``documents``, collected from the messages in order."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def add(self, block: DocumentContent, where: str) -> None:
        text = document_text(block, where, "Cohere's chat", "its documents are text")
        data: dict[str, Any] = {"title": block.title} if block.title else {}
        data["text"] = text
        # Ids are what a citation names (Citation.document): stable, by position.
        self.items.append({"id": f"doc_{len(self.items)}", "data": data})


def _image(block: ImageContent) -> dict[str, Any]:
    return {
        "type": "image_url",
        "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"},
    }


def _user(msg: UserMessage, where: str, docs: _Documents) -> dict[str, Any] | None:
    if isinstance(msg.content, str):
        return {"role": "user", "content": msg.content}
    parts: list[dict[str, Any]] = []
    for j, b in enumerate(msg.content):
        if isinstance(b, TextContent):
            if b.text:
                parts.append({"type": "text", "text": b.text})
        elif isinstance(b, ImageContent):
            parts.append(_image(b))
        elif isinstance(b, DocumentContent):
            docs.add(b, f"{where}.content[{j}]")
        else:
            kind = "audio" if isinstance(b, AudioContent) else type(b).__name__
            raise ConfigurationError(
                f"{where}.content[{j}] is {kind}, which Cohere's chat cannot take "
                "(text, images and text documents only)"
            )
    return {"role": "user", "content": parts} if parts else None


def _tool_result(msg: ToolResultMessage, where: str, docs: _Documents) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for j, b in enumerate(msg.content):
        if isinstance(b, TextContent):
            parts.append({"type": "text", "text": b.text})
        elif isinstance(b, DocumentContent):
            docs.add(b, f"{where}.content[{j}]")
        else:
            raise ConfigurationError(
                f"{where}.content[{j}] is {getattr(b, 'type', 'a block')}: a Cohere tool "
                "result carries text and documents only"
            )
    if not parts:
        parts.append({"type": "text", "text": ""})
    return {"role": "tool", "tool_call_id": msg.tool_call_id, "content": parts}


def _assistant(msg: AssistantMessage) -> dict[str, Any] | None:
    same_api = msg.api == API_NAME
    text: list[str] = []
    thinking: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    raw_cites: list[str] = []
    for b in msg.content:
        if isinstance(b, TextContent):
            text.append(b.text)
            if b.citations:
                built = tuple(c for c in b.citations if c.raw is None or not same_api)
                if built:
                    text.append(citations_as_text(built))
                raw_cites += [c.raw for c in b.citations if c.raw is not None and same_api]
        elif isinstance(b, ThinkingContent):
            # Thinking goes back to Cohere as it came (assistant content of type
            # thinking); mw.handoff turns another model's thinking into text first.
            if same_api and not b.redacted and b.thinking:
                thinking.append({"type": "thinking", "thinking": b.thinking})
        elif isinstance(b, ToolCall):
            calls.append({"id": b.id, "type": "function", "function": {
                "name": b.name, "arguments": raw_or_json_arguments(b.raw_arguments, b.arguments)}})  # fmt: skip
        elif isinstance(b, ServerToolCall | ServerToolResult):
            # Cohere runs no tools itself: what another provider ran is shown as text.
            text.append(f"{block_as_text(b)}\n")
        # opaque provider items mean nothing to Cohere: not sent
    joined = "".join(text)
    out: dict[str, Any] = {"role": "assistant"}
    if calls:
        # The text of a turn that calls tools is its plan (tool-plan-delta).
        if joined:
            out["tool_plan"] = joined
        if thinking:
            out["content"] = thinking
        out["tool_calls"] = calls
    else:
        content = [*thinking, *([{"type": "text", "text": joined}] if joined else [])]
        if not content:
            return None  # an empty turn carries nothing
        out["content"] = content
    cites = list(dict.fromkeys(raw_cites))  # one citation object per source was made
    if cites:
        out["citations"] = [msgspec.Raw(c.encode()) for c in cites]
    return out


def encode_messages(context: Context) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ``messages`` array and the ``documents`` for ``context`` (pure)."""
    docs = _Documents()
    out: list[dict[str, Any]] = []
    if context.system_prompt:
        out.append({"role": "system", "content": context.system_prompt})
    for i, msg in enumerate(context.messages):
        where = f"messages[{i}]"
        item: dict[str, Any] | None
        if isinstance(msg, UserMessage):
            item = _user(msg, where, docs)
        elif isinstance(msg, ToolResultMessage):
            item = _tool_result(msg, where, docs)
        elif isinstance(msg, SystemMessage):
            item = {"role": "system", "content": msg.content}
        elif msg.stop_reason in ("error", "aborted"):
            continue  # a failed turn is not replayed (handoff rules)
        else:
            refuse_assistant_images(msg, where, "cohere-chat")
            item = _assistant(msg)
        if item is not None:
            out.append(item)
    return out, docs.items


def _tool_choice(context: Context, options: RequestOptions) -> str | None:
    tc = options.tool_choice
    check_tool_choice(tc, context)
    names = [t.name for t in context.tools or ()]
    if not names or tc is None or tc == "auto":
        return None  # Cohere's default is auto; without tools nothing to choose from
    if isinstance(tc, dict):
        if names != [tc["name"]]:
            raise ConfigurationError(
                f"tool_choice={tc!r} cannot be sent to Cohere: its tool_choice is REQUIRED "
                "or NONE and cannot force one tool among several (declare only that tool, "
                "or use 'required')"
            )
        return TOOL_CHOICE["required"]  # the only tool: required means that one
    return TOOL_CHOICE[tc]


def _thinking(model: Model, options: RequestOptions) -> dict[str, Any] | None:
    level = options.reasoning
    check_reasoning(model, level)
    if level is None:
        return None  # the model's default (reasoning models think unless disabled)
    return {"type": "enabled", "token_budget": THINKING_BUDGETS[level]}


def _response_format(options: RequestOptions, context: Context) -> dict[str, Any] | None:
    output = options.output
    if output is None or output.mode != "native":
        return None
    if context.tools:
        # "not supported when used in combination with the documents or tools
        # parameters" (chat reference, response_format).
        raise ConfigurationError(
            "Cohere's response_format cannot be combined with tools: use output_mode='tool'"
        )
    return {"type": "json_object", "json_schema": output.schema}


def build_body(model: Model, context: Context, options: RequestOptions) -> dict[str, Any]:
    """The JSON body of one streamed ``/v2/chat`` request (pure)."""
    check_extra_body(options.extra_body, RESERVED)
    server_tool_objects(options.server_tools, {}, API_NAME)  # it runs none: refused
    messages, documents = encode_messages(context)
    body: dict[str, Any] = {"model": model.id, "messages": messages, "stream": True}
    if context.tools:
        body["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": t.parameters}}
            for t in context.tools
        ]  # fmt: skip
    choice = _tool_choice(context, options)
    if choice is not None:
        body["tool_choice"] = choice
    if documents:
        body["documents"] = documents
    fmt = _response_format(options, context)
    if fmt is not None:
        if documents:
            raise ConfigurationError(
                "Cohere's response_format cannot be combined with documents: send the "
                "document's text as TextContent or use output_mode='tool'"
            )
        body["response_format"] = fmt
    thinking = _thinking(model, options)
    if thinking is not None:
        body["thinking"] = thinking
    if options.max_tokens is not None:
        body["max_tokens"] = options.max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    # parallel_tool_calls, session_id and cache have no Cohere field: Cohere decides
    # parallel calls itself and caches prompts on its own.
    if options.extra_body:
        body.update(options.extra_body)
    return body
