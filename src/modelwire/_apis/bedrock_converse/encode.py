"""Outbound half of ``bedrock-converse``: a context and options → the ConverseStream
request body.

Reference: the Bedrock Runtime API reference, Converse ("Request Syntax",
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html) and
ConverseStream, and the ``bedrock-runtime`` service model in botocore.

Request (JSON): ``{"messages": [{"role", "content": [{"text"} | {"image": {"format",
"source": {"bytes": base64}}} | {"toolUse": {"toolUseId", "name", "input"}} |
{"toolResult": {"toolUseId", "content": [{"text"} | {"image"}], "status"}} |
{"reasoningContent": {"reasoningText": {"text", "signature"}} | {"redactedContent"}}
]}], "system": [{"text"}, {"cachePoint"}], "inferenceConfig": {"maxTokens",
"temperature"}, "toolConfig": {"tools": [{"toolSpec": {"name", "description",
"inputSchema": {"json"}}}], "toolChoice": {"auto"|"any": {}} | {"tool": {"name"}}},
"additionalModelRequestFields": {"thinking": {…}}}``. Roles alternate user /
assistant: tool results travel in a user turn, and consecutive turns of one role
are merged. Documents go as ``{"document": {"format", "name", "source": {"bytes"} |
{"s3Location": {"uri"}}}}`` and audio as ``{"audio": {"format", "source": {"bytes"}}}``;
what Bedrock sent — provider-run ``toolUse`` / ``toolResult`` blocks and
``citationsContent`` — goes back as received.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
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
    ProviderItem,
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
    merge_compat,
    raw_object,
    refuse_assistant_images,
    same_model,
    server_tool_objects,
)
from .._server.reply import arguments_object
from .spec import API_NAME

__all__ = ["RESERVED", "THINKING_BUDGETS", "BedrockCompat", "build_body", "encode_messages"]

#: Body fields modelwire sets; ``extra_body`` may add others (``guardrailConfig``,
#: ``performanceConfig``, ``requestMetadata``…) and merge into ``inferenceConfig``
#: (``topP``, ``stopSequences``) and ``additionalModelRequestFields`` (``top_k``).
RESERVED = frozenset({"messages", "system", "toolConfig", "modelId"})
_RESERVED_INFERENCE = frozenset({"maxTokens"})
#: ``budget_tokens`` per reasoning level for Claude's extended thinking, sent in
#: ``additionalModelRequestFields`` (Bedrock user guide, "Extended thinking"); the
#: minimum budget is 1024 and ``maxTokens`` must exceed it.
THINKING_BUDGETS: dict[str, int] = {"minimal": 1024, "low": 2048, "medium": 8192,
                                    "high": 16384, "xhigh": 32000}  # fmt: skip
_MIN_BUDGET = 1024
_MIN_ANSWER = 1024
#: ImageBlock ``format`` values (the API reference): the media type's subtype.
_IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg",
                  "image/gif": "gif", "image/webp": "webp"}  # fmt: skip
_CACHE_POINT = {"cachePoint": {"type": "default"}}


class BedrockCompat(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How one Bedrock model departs from the defaults (``Model.compat``)."""

    cache_points: bool = False
    """Send prompt-caching points (``cachePoint``) after the system prompt, after the
    tools and after the last user turn (Bedrock user guide, "Prompt caching"): only
    for models that support caching (Claude, Nova); others refuse the field."""
    thinking: bool | None = None
    """Whether a reasoning level is sent as Claude's ``thinking`` in
    ``additionalModelRequestFields``; ``None``: for ``anthropic.claude`` ids."""


def _compat(model: Model) -> BedrockCompat:
    from ..._catalog._records import compat_defaults

    base = compat_defaults(model, "bedrock-converse")
    return merge_compat("bedrock-converse", BedrockCompat, model.compat, base)


# --------------------------------------------------------------------------- request


def _image(block: ImageContent, where: str) -> dict[str, Any]:
    fmt = _IMAGE_FORMATS.get(block.mime_type.lower())
    if fmt is None:
        raise ConfigurationError(
            f"{where}.mime_type {block.mime_type!r} cannot be sent to Bedrock: it takes "
            "image/png, image/jpeg, image/gif or image/webp"
        )
    # A blob in Bedrock's JSON protocol is base64 text: ImageContent.data already is.
    return {"image": {"format": fmt, "source": {"bytes": block.data}}}


#: DocumentBlock ``format`` values (the API reference) by media type.
_DOCUMENT_FORMATS = {
    "application/pdf": "pdf", "text/csv": "csv", "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html", "text/plain": "txt", "text/markdown": "md",
}  # fmt: skip
#: AudioBlock ``format`` values (Nova 2 request schema) by media type.
_AUDIO_FORMATS = {
    "audio/mpeg": "mp3", "audio/mp3": "mp3", "audio/opus": "opus", "audio/wav": "wav",
    "audio/x-wav": "wav", "audio/wave": "wav", "audio/aac": "aac", "audio/flac": "flac",
    "audio/mp4": "mp4", "audio/ogg": "ogg", "audio/webm": "webm",
}  # fmt: skip
# DocumentBlock.name (API reference): alphanumerics, single whitespace characters,
# hyphens, parentheses and square brackets only, at most 200 characters.
_NAME_BAD = re.compile(r"[^A-Za-z0-9\-()\[\] ]+")
_NAME_MAX = 200


class _Names:
    """Document names of one request: Bedrock requires a name per document, allows
    only a few characters in it, and refuses two documents of the same name."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def name(self, title: str | None) -> str:
        base = " ".join(_NAME_BAD.sub(" ", title or "").split())[:_NAME_MAX].strip()
        base = base or f"document {len(self.used) + 1}"
        name, n = base, 1
        while name in self.used:
            n += 1
            tail = f" ({n})"
            name = base[: _NAME_MAX - len(tail)].rstrip() + tail
        self.used.add(name)
        return name


def _document(block: DocumentContent, where: str, names: _Names) -> dict[str, Any]:
    fmt = _DOCUMENT_FORMATS.get(block.mime_type.lower())
    if fmt is None:
        raise ConfigurationError(
            f"{where}.mime_type {block.mime_type!r} cannot be sent to Bedrock: a document "
            f"is one of {', '.join(sorted(_DOCUMENT_FORMATS))}"
        )
    source: dict[str, Any]
    if block.data is not None:
        source = {"bytes": block.data}
    else:
        uri = block.file_id if block.file_id is not None else block.url
        if uri is None or not uri.startswith("s3://"):
            raise ConfigurationError(
                f"{where} names its document by {'file_id' if block.file_id else 'url'} "
                f"{uri!r}; Bedrock reads documents from bytes (data=) or an S3 location "
                "(an s3:// URI) only"
            )
        source = {"s3Location": {"uri": uri}}
    return {"document": {"format": fmt, "name": names.name(block.title), "source": source}}


def _audio(block: AudioContent, where: str) -> dict[str, Any]:
    fmt = _AUDIO_FORMATS.get(block.mime_type.lower())
    if fmt is None:
        raise ConfigurationError(
            f"{where}.mime_type {block.mime_type!r} cannot be sent to Bedrock: audio is "
            f"one of {', '.join(sorted(set(_AUDIO_FORMATS)))}"
        )
    return {"audio": {"format": fmt, "source": {"bytes": block.data}}}


def _user_blocks(
    content: str | Sequence[object], where: str, names: _Names
) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    out: list[dict[str, Any]] = []
    for j, b in enumerate(content):
        at = f"{where}.content[{j}]"
        if isinstance(b, TextContent):
            if b.text:  # Bedrock refuses a blank text block
                out.append({"text": b.text})
        elif isinstance(b, ImageContent):
            out.append(_image(b, at))
        elif isinstance(b, DocumentContent):
            out.append(_document(b, at, names))
        elif isinstance(b, AudioContent):
            out.append(_audio(b, at))
    return out


def _result_blocks(msg: ToolResultMessage, where: str, names: _Names) -> list[dict[str, Any]]:
    # ToolResultContentBlock: text, json, image, document, video — no audio.
    content: list[dict[str, Any]] = [{"text": msg.text}] if msg.text else []
    for j, b in enumerate(msg.content):
        at = f"{where}.content[{j}]"
        if isinstance(b, ImageContent):
            content.append(_image(b, at))
        elif isinstance(b, DocumentContent):
            content.append(_document(b, at, names))
        elif isinstance(b, AudioContent):
            raise ConfigurationError(
                f"{at} is audio, which a Bedrock tool result cannot carry (text, JSON, "
                "images, documents and video only): send it in a user message"
            )
    return content


def _assistant_blocks(msg: AssistantMessage, model: Model, where: str) -> list[dict[str, Any]]:
    same = same_model(model, msg)
    # Blocks Bedrock sent (provider-run tools, citations) go back as received.
    ours = msg.api == "bedrock-converse"
    out: list[dict[str, Any]] = []
    for j, b in enumerate(msg.content):
        at = f"{where}.content[{j}]"
        if isinstance(b, TextContent):
            if ours and b.citations and all(c.raw is not None for c in b.citations):
                # CitationsContentBlock: the text and its citations, as Bedrock sent them.
                cites = [raw_object(c.raw, f"{at}.citations[{k}].raw")
                         for k, c in enumerate(b.citations)]  # fmt: skip
                out.append({"citationsContent": {"content": [{"text": b.text}],
                                                 "citations": cites}})  # fmt: skip
            elif b.text.strip():
                out.append({"text": b.text})
        elif isinstance(b, ThinkingContent):
            # Only this model's signed or redacted reasoning goes back (Claude needs it
            # before tool results); handoff already turned others' thinking into text.
            if not same:
                continue
            if b.redacted and b.signature:
                out.append({"reasoningContent": {"redactedContent": b.signature}})
            elif b.signature and b.thinking:
                out.append({"reasoningContent": {"reasoningText": {
                    "text": b.thinking, "signature": b.signature}}})  # fmt: skip
        elif isinstance(b, ToolCall):
            out.append({"toolUse": {"toolUseId": b.id, "name": b.name,
                                    "input": arguments_object(b)}})  # fmt: skip
        elif isinstance(b, ServerToolCall | ServerToolResult):
            if ours and b.raw is not None:
                out.append(raw_object(b.raw, f"{at}.raw"))  # type: ignore[arg-type]
            else:
                text = block_as_text(b)
                if text:
                    out.append({"text": text})
        elif isinstance(b, ProviderItem) and b.api == "bedrock-converse":
            out.append(raw_object(b.data, f"{at}.data"))  # type: ignore[arg-type]
        # another API's opaque item has no meaning here: not sent (handoff rules)
    return out


def _has_tool_blocks(context: Context) -> bool:
    return any(m.role == "tool_result" for m in context.messages) or any(
        isinstance(b, ToolCall)
        for m in context.messages
        if isinstance(m, AssistantMessage)
        for b in m.content
    )


def encode_messages(context: Context, model: Model, cache: bool = False) -> list[dict[str, Any]]:
    """The ``messages`` array for ``context`` (pure; the context is not changed)."""
    out: list[dict[str, Any]] = []
    names = _Names()

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return  # Bedrock refuses an empty content list
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)  # roles must alternate: merge
        else:
            out.append({"role": role, "content": blocks})

    for i, msg in enumerate(context.messages):
        where = f"messages[{i}]"
        if isinstance(msg, SystemMessage):
            continue  # its text is in ``system`` (Context.system_text)
        if isinstance(msg, UserMessage):
            add("user", _user_blocks(msg.content, where, names))
        elif isinstance(msg, AssistantMessage):
            if msg.stop_reason in ("error", "aborted"):
                continue  # a failed turn is not replayed (handoff rules)
            # Bedrock's Converse docs give image blocks for the user's turn only.
            refuse_assistant_images(msg, where, "bedrock-converse")
            add("assistant", _assistant_blocks(msg, model, where))
        else:
            content = _result_blocks(msg, where, names)
            add("user", [{"toolResult": {
                "toolUseId": msg.tool_call_id, "content": content or [{"text": ""}],
                "status": "error" if msg.is_error else "success"}}])  # fmt: skip
    if cache and out and out[-1]["role"] == "user":
        out[-1]["content"].append(dict(_CACHE_POINT))
    return out


def _tool_choice(tc: str | dict[str, Any] | None) -> dict[str, Any] | None:
    # ToolChoice is a union: auto, any (a call is required) or tool (this one).
    if tc == "required":
        return {"any": {}}
    if isinstance(tc, dict):
        return {"tool": {"name": tc["name"]}}
    if tc == "auto":
        return {"auto": {}}
    return None


def _thinking(
    model: Model, compat: BedrockCompat, level: str | None, max_tokens: int | None
) -> tuple[dict[str, Any] | None, int | None]:
    """Claude's ``thinking`` field and the ``maxTokens`` to send with it."""
    check_reasoning(model, level)
    if level is None:
        return None, max_tokens
    claude = compat.thinking
    if claude is None:
        claude = "anthropic.claude" in model.id
    if not claude:
        raise ConfigurationError(
            f"reasoning={level!r} cannot be sent to {model.id!r} on Bedrock: modelwire sends "
            "reasoning levels to Claude models only (their 'thinking' field); pass "
            "reasoning=None, or set compat={'thinking': True} if this model takes it"
        )
    budget = THINKING_BUDGETS[level]
    limit = max_tokens if max_tokens is not None else model.max_tokens
    if limit <= budget:
        # maxTokens counts thinking and answer together and must exceed the budget.
        budget = limit - _MIN_ANSWER
        if budget < _MIN_BUDGET:
            raise ConfigurationError(
                f"max_tokens={limit} leaves no room for thinking: Claude's thinking budget "
                f"is at least {_MIN_BUDGET} tokens plus {_MIN_ANSWER} for the answer; raise "
                "max_tokens or pass reasoning=None"
            )
    return {"type": "enabled", "budget_tokens": budget}, limit


def build_body(model: Model, context: Context, options: RequestOptions) -> dict[str, Any]:
    """The JSON body of one ConverseStream request."""
    compat = _compat(model)
    extra = dict(options.extra_body or {})
    check_extra_body(extra, RESERVED)
    server_tool_objects(options.server_tools, {}, API_NAME)  # it runs none: refused
    tc = options.tool_choice
    check_tool_choice(tc, context)
    body: dict[str, Any] = {
        "messages": encode_messages(context, model, compat.cache_points),
    }
    # One system prompt: system messages among the turns join it (Context.system_text).
    system = context.system_text
    if system:
        body["system"] = [{"text": system}]
        if compat.cache_points:
            body["system"].append(dict(_CACHE_POINT))
    thinking, max_tokens = _thinking(model, compat, options.reasoning, options.max_tokens)
    inference: dict[str, Any] = {}
    if max_tokens is not None:
        inference["maxTokens"] = max_tokens
    if options.temperature is not None:
        inference["temperature"] = options.temperature
    more = extra.pop("inferenceConfig", None)
    if more is not None:
        if not isinstance(more, dict):
            raise ConfigurationError(
                "extra_body['inferenceConfig'] must be a dict (topP, stopSequences, …)"
            )
        check_extra_body(more, _RESERVED_INFERENCE)
        inference.update(more)
    if inference:
        body["inferenceConfig"] = inference
    # ToolChoice has no "none": the tools are left out so no call can be made —
    # unless the history holds tool blocks, which Bedrock accepts only with a
    # toolConfig (a call then is a tool_call_protocol error, as for every API).
    if context.tools and (tc != "none" or _has_tool_blocks(context)):
        tools: list[dict[str, Any]] = [
            {"toolSpec": {"name": t.name, "description": t.description,
                          "inputSchema": {"json": t.parameters}}}
            for t in context.tools
        ]  # fmt: skip
        if compat.cache_points:
            tools.append(dict(_CACHE_POINT))
        config: dict[str, Any] = {"tools": tools}
        choice = _tool_choice(tc)
        if choice is not None:
            config["toolChoice"] = choice
        body["toolConfig"] = config
    fields = extra.pop("additionalModelRequestFields", None)
    if fields is not None and not isinstance(fields, dict):
        raise ConfigurationError("extra_body['additionalModelRequestFields'] must be a dict")
    if thinking is not None:
        if fields and "thinking" in fields:
            raise ConfigurationError(
                "extra_body['additionalModelRequestFields'] may not set 'thinking' when "
                "reasoning= is given: use one or the other"
            )
        fields = {"thinking": thinking, **(fields or {})}
    if fields:
        body["additionalModelRequestFields"] = fields
    body.update(extra)
    return body
