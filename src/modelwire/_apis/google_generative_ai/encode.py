"""Outbound half of ``google-generative-ai``: a context and options → the
``generateContent`` request body, and the model's resource name in the URL path.

References: https://ai.google.dev/api/generate-content (``contents``, ``Content``,
``Part``, ``FunctionCall``, ``FunctionResponse``, ``systemInstruction``, ``tools``,
``toolConfig``, ``generationConfig``); function calling,
https://ai.google.dev/gemini-api/docs/function-calling; thinking,
https://ai.google.dev/gemini-api/docs/thinking (``thinkingBudget`` for 2.5 models,
``thinkingLevel`` for Gemini 3, ``includeThoughts``); thought signatures,
https://ai.google.dev/gemini-api/docs/thought-signatures; documents, audio and files,
https://ai.google.dev/gemini-api/docs/document-processing,
https://ai.google.dev/gemini-api/docs/audio and https://ai.google.dev/gemini-api/docs/files
(``inlineData`` for base64 bytes, ``fileData`` with ``fileUri`` for a Files API URI or
a URL).

Replay: the code Gemini ran and its result go back as the parts it sent (``raw``; their
``thoughtSignature`` only to the same model), and an image the model generated as its
``inlineData`` part. Grounding (the ``google_search`` block,
citations) is response metadata that Gemini takes no part for: the text goes back, the
metadata does not. Another API's provider-run tool blocks become text the model can read;
another API's opaque items are not sent. Tool schemas are reduced by :mod:`._schema`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from ..._url import path_segment
from ..._wire.assemble import parse_arguments
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
    UserContent,
    UserMessage,
)
from .._common import (
    as_tool_call,
    block_as_text,
    check_reasoning,
    check_tool_choice,
    merge_compat,
    raw_object,
    same_model,
)
from ._output import add_output
from ._schema import gemini_schema
from .decode import SYNTHETIC_ID_PREFIX
from .spec import API_NAME, SERVER_TOOLS

__all__ = [
    "RESERVED",
    "SKIP_SIGNATURE",
    "GoogleCompat",
    "build_body",
    "detect_compat",
    "encode_contents",
    "model_resource",
    "replay_signatures",
]

#: The value the thought-signatures guide documents (FAQ) for function calls whose
#: real signature is unavailable, e.g. history from another model: Gemini 3
#: otherwise rejects unsigned calls of the current turn with a 400.
SKIP_SIGNATURE = "skip_thought_signature_validator"


# --------------------------------------------------------------------------- compat


class GoogleCompat(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How a reasoning level and signatures are sent; detected from the model id,
    overridable with ``Model(compat={...})``."""

    thinking: Literal["level", "budget"] = "budget"
    """``thinkingLevel`` (Gemini 3 and later) or ``thinkingBudget`` (Gemini 2.5)."""
    minimal_level: Literal["minimal", "low"] = "minimal"
    """The level sent for ``reasoning="minimal"`` (Gemini 3 Pro accepts only low/high)."""
    budget_min: int = 128
    """Budget for ``minimal`` (2.5 Pro's floor is 128, Flash-Lite's 512)."""
    budget_max: int = 24576
    """Budget for ``high``/``xhigh`` (2.5 Pro allows 32768, Flash 24576)."""
    signature_fallback: bool = False
    """Send :data:`SKIP_SIGNATURE` on unsigned function calls of the current turn
    (Gemini 3 validates their signatures)."""


_VERSION = re.compile(r"gemini-(\d+)")


def detect_compat(model: Model) -> GoogleCompat:
    """Defaults from the model id (``gemini-3…`` → levels and the signature
    fallback; ``…-pro``/``…-flash-lite`` → their budget ranges) over the provider
    record's, then ``model.compat``."""
    from ..._catalog._records import compat_defaults

    mid = model.id.lower().rsplit("/", 1)[-1]
    m = _VERSION.search(mid)
    base: dict[str, Any] = compat_defaults(model, "google-generative-ai")
    if m is not None and int(m.group(1)) >= 3:
        base["thinking"] = "level"
        base["signature_fallback"] = True
        if "-pro" in mid:
            base["minimal_level"] = "low"
    elif "-pro" in mid:
        base["budget_max"] = 32768
    elif "flash-lite" in mid:
        base["budget_min"] = 512
    return merge_compat("google-generative-ai", GoogleCompat, model.compat, base)


# --------------------------------------------------------------------------- outbound

# Body fields modelwire controls (and their snake_case spellings, which the REST
# API also accepts); ``generationConfig`` is merged instead, minus maxOutputTokens.
RESERVED = frozenset({"model", "stream", "contents", "tools", "toolConfig", "tool_config",
                      "systemInstruction", "system_instruction"})  # fmt: skip
_GEN_RESERVED = frozenset({"maxOutputTokens", "max_output_tokens"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:\-]{0,63}")  # FunctionDeclaration.name
_LEVELS = {"low": "low", "medium": "medium", "high": "high", "xhigh": "high"}
_BUDGETS = {"low": 2048, "medium": 8192}


def replay_signatures(model: Model, message: AssistantMessage) -> bool:
    """The handoff rule, in one place: thought signatures, thought parts and
    provider call ids go back only to the provider, API and model that made them."""
    return same_model(model, message)


def _args_object(call: ToolCall) -> dict[str, Any]:
    # Replay what the model sent (``raw_arguments``); Gemini wants an object.
    if call.raw_arguments is not None and call.raw_arguments.strip():
        parsed = parse_arguments(call.raw_arguments)
        if parsed is not None:
            return parsed
    return call.arguments


def _media_part(block: ImageContent | DocumentContent | AudioContent) -> list[dict[str, Any]]:
    """``inlineData`` for base64 bytes, ``fileData`` for a Files API URI or a URL (Part,
    API reference); a document's title goes as a text part just before it, since a
    Gemini part has no title of its own."""
    if isinstance(block, DocumentContent):
        uri = block.file_id if block.file_id is not None else block.url
        part = (
            {"inlineData": {"mimeType": block.mime_type, "data": block.data}}
            if uri is None
            else {"fileData": {"mimeType": block.mime_type, "fileUri": uri}}
        )
        return [{"text": block.title}, part] if block.title else [part]
    return [{"inlineData": {"mimeType": block.mime_type, "data": block.data}}]


def _user_parts(content: str | tuple[UserContent, ...]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    parts: list[dict[str, Any]] = []
    for b in content:
        if isinstance(b, TextContent):
            if b.text:  # Gemini rejects empty text parts
                parts.append({"text": b.text})
        else:
            parts.extend(_media_part(b))
    return parts


def _replayed_part(raw: str | None, where: str, sign: bool) -> Any:
    # A part Gemini sent, byte for byte; its thoughtSignature belongs to that model only.
    part = raw_object(raw, where)
    if sign or '"thoughtSignature"' not in (raw or ""):
        return part
    value = msgspec.json.decode(part)
    value.pop("thoughtSignature", None)
    return value


def _model_parts(
    msg: AssistantMessage,
    model: Model,
    compat: GoogleCompat,
    current: bool,
    sent_ids: set[str],
    where: str,
) -> list[Any]:
    sign = replay_signatures(model, msg)
    ours = msg.api == "google-generative-ai"  # parts Gemini sent go back as they were
    parts: list[Any] = []
    for j, b in enumerate(msg.content):
        part: dict[str, Any]
        if isinstance(b, TextContent):
            if not b.text:
                continue
            part = {"text": b.text}
        elif isinstance(b, ThinkingContent):
            if b.redacted or not b.thinking:
                continue  # nothing readable to send (Gemini never sends redacted thinking)
            if sign:
                part = {"text": b.thinking, "thought": True}
            else:
                # Another model's reasoning is context, not Gemini's own thought.
                part = {"text": f"<thinking>\n{b.thinking}\n</thinking>"}
        elif isinstance(b, ServerToolCall | ServerToolResult | ProviderItem):
            if isinstance(b, ProviderItem):
                if b.api == "google-generative-ai":
                    parts.append(_replayed_part(b.data, f"{where}.content[{j}].data", sign))
                continue  # another API's opaque item means nothing here: not sent
            if ours:
                if b.provider_type != "groundingMetadata":
                    parts.append(_replayed_part(b.raw, f"{where}.content[{j}].raw", sign))
                continue  # grounding: response metadata, no part carries it back
            text = block_as_text(b)
            if text:
                parts.append({"text": text})
            continue
        elif isinstance(b, ImageContent):
            # An image the model generated goes back as the part it came in
            # (https://ai.google.dev/gemini-api/docs/image-generation: multi-turn
            # editing replays the model's image parts with their thoughtSignature).
            part = {"inlineData": {"mimeType": b.mime_type, "data": b.data}}
        else:
            b = as_tool_call(b, "a google-generative-ai request")
            call: dict[str, Any] = {"name": b.name, "args": _args_object(b)}
            if sign and b.id and not b.id.startswith(SYNTHETIC_ID_PREFIX):
                call["id"] = b.id
                sent_ids.add(b.id)
            part = {"functionCall": call}
            if not (sign and b.signature) and current and compat.signature_fallback:
                part["thoughtSignature"] = SKIP_SIGNATURE
        if sign and b.signature:
            part["thoughtSignature"] = b.signature
        parts.append(part)
    return parts


def _result_parts(msg: ToolResultMessage, sent_ids: set[str]) -> list[dict[str, Any]]:
    # ``response`` is free-form; "output" and "error" are the keys the API
    # reference names for a result and a failure (FunctionResponse.response).
    response = {("error" if msg.is_error else "output"): msg.text}
    fr: dict[str, Any] = {"name": msg.tool_name, "response": response}
    if msg.tool_call_id in sent_ids:
        fr["id"] = msg.tool_call_id
    parts: list[dict[str, Any]] = [{"functionResponse": fr}]
    for b in msg.content:
        if not isinstance(b, TextContent):
            parts.extend(_media_part(b))  # images, documents, audio: parts after the response
    return parts


def encode_contents(context: Context, model: Model, compat: GoogleCompat) -> list[dict[str, Any]]:
    """The ``contents`` array (pure): roles ``user``/``model``, consecutive turns of
    one role merged (so parallel tool results form one user turn)."""
    messages = context.messages
    # A turn starts at a user message (thought-signatures guide, "turns and steps");
    # Gemini 3 validates the signatures of the current turn only.
    last_user = max((i for i, m in enumerate(messages) if isinstance(m, UserMessage)), default=-1)
    contents: list[dict[str, Any]] = []
    sent_ids: set[str] = set()
    for i, msg in enumerate(messages):
        if isinstance(msg, SystemMessage):
            continue  # its text is in systemInstruction (Context.system_text)
        if isinstance(msg, UserMessage):
            role, parts = "user", _user_parts(msg.content)
        elif isinstance(msg, AssistantMessage):
            if msg.stop_reason in ("error", "aborted"):
                continue  # a failed turn is not replayed (handoff rules)
            role, parts = (
                "model",
                _model_parts(msg, model, compat, i > last_user, sent_ids, f"messages[{i}]"),
            )
        else:
            role, parts = "user", _result_parts(msg, sent_ids)
        if not parts:
            continue
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    return contents


def _tools(context: Context) -> list[dict[str, Any]] | None:
    if not context.tools:
        return None
    decls: list[dict[str, Any]] = []
    for i, tool in enumerate(context.tools):
        if not _NAME.fullmatch(tool.name):
            raise ConfigurationError(
                f"tools[{i}].name {tool.name!r} is not a valid Gemini function name "
                "(letters, digits, _ . : -, starting with a letter or _, at most 64)"
            )
        decl: dict[str, Any] = {"name": tool.name, "description": tool.description}
        params = gemini_schema(tool.parameters)
        if params.get("type", "object") != "object":
            raise ConfigurationError(f"tools[{i}] ({tool.name}).parameters must describe an object")
        if params.get("properties"):
            params["type"] = "object"
            decl["parameters"] = params
        decls.append(decl)  # no properties: a function without arguments
    return [{"functionDeclarations": decls}]


def _tool_config(tc: str | dict[str, Any] | None, context: Context) -> dict[str, Any] | None:
    # FunctionCallingConfig.mode: AUTO, ANY (must call), NONE; allowedFunctionNames with ANY.
    check_tool_choice(tc, context)
    if tc is None or not context.tools:
        return None
    if isinstance(tc, dict):
        config: dict[str, Any] = {"mode": "ANY", "allowedFunctionNames": [tc["name"]]}
    else:
        config = {"mode": {"auto": "AUTO", "required": "ANY", "none": "NONE"}[tc]}
    return {"functionCallingConfig": config}


def _thinking(level: str, compat: GoogleCompat) -> dict[str, Any]:
    if compat.thinking == "level":
        value = compat.minimal_level if level == "minimal" else _LEVELS[level]
        return {"thinkingLevel": value, "includeThoughts": True}
    if level == "minimal":
        budget = compat.budget_min
    elif level in _BUDGETS:
        budget = min(max(_BUDGETS[level], compat.budget_min), compat.budget_max)
    else:
        budget = compat.budget_max
    return {"thinkingBudget": budget, "includeThoughts": True}


def model_resource(model_id: str) -> str:
    """The Gemini API resource name of ``model_id``, encoded for the URL path: the
    method is ``POST /v1beta/{model=models/*}:streamGenerateContent`` (also
    ``tunedModels/*``), so ``gemini-2.5-flash`` and ``models/gemini-2.5-flash`` are
    ``models/gemini-2.5-flash`` and ``tunedModels/my-model`` stays itself. What
    follows the collection is one segment: a ``/``, ``:``, ``?`` or ``#`` in it is
    data, and ``.`` / ``..`` are refused (ai.google.dev/api/generate-content)."""
    collection, name = "models", model_id
    for prefix in _COLLECTIONS:
        if isinstance(model_id, str) and model_id.startswith(prefix + "/"):
            collection, name = prefix, model_id[len(prefix) + 1 :]
            break
    return f"{collection}/{path_segment(name, 'the Gemini model id (Model.id)')}"


_COLLECTIONS = ("models", "tunedModels")


def build_body(model: Model, context: Context, options: RequestOptions) -> dict[str, Any]:
    """The JSON body of one ``streamGenerateContent`` request (pure)."""
    compat = detect_compat(model)
    extra = dict(options.extra_body or {})
    check_extra_body(extra, RESERVED)
    contents = encode_contents(context, model, compat)
    if not contents:
        raise ConfigurationError("the Context has no message to send (Gemini needs one)")
    body: dict[str, Any] = {"contents": contents}
    # Gemini has one system instruction: system messages among the turns join it.
    system = context.system_text
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    tools = _tools(context)
    for i, tool in enumerate(options.server_tools):
        field = SERVER_TOOLS.get(tool.name)
        if field is None:
            raise ConfigurationError(
                f"server_tools[{i}]: {API_NAME} has no provider-run {tool.name} tool "
                f"(it has {', '.join(SERVER_TOOLS)})"
            )
        # The options are the field's own object (``googleSearch: {timeRangeFilter…}``).
        own = tool.options if tool.api in (None, API_NAME) else None
        tools = [*(tools or ()), {field: dict(own or {})}]
    if tools is not None:
        body["tools"] = tools
    tool_config = _tool_config(options.tool_choice, context)
    if tool_config is not None:
        body["toolConfig"] = tool_config
    # ``parallel_tool_calls``, ``session_id`` and ``cache`` have no Gemini
    # counterpart (caching is implicit), so they are not sent.
    gen: dict[str, Any] = {}
    if options.max_tokens is not None:
        gen["maxOutputTokens"] = options.max_tokens
    if options.temperature is not None:
        gen["temperature"] = options.temperature
    check_reasoning(model, options.reasoning)
    if options.reasoning is not None:
        gen["thinkingConfig"] = _thinking(options.reasoning, compat)
    for key in ("generationConfig", "generation_config"):
        more = extra.pop(key, None)
        if more is None:
            continue
        if not isinstance(more, Mapping):
            raise ConfigurationError(f"extra_body[{key!r}] must be a dict")
        check_extra_body(more, _GEN_RESERVED)
        gen.update(more)
    if gen:
        body["generationConfig"] = gen
    add_output(body, options.output)  # responseJsonSchema (structured output)
    body.update(extra)
    return body
