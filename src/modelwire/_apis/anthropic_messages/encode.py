"""Outbound half of ``anthropic-messages``: a context and options → the Messages request body.

References (Anthropic API docs, platform.claude.com/docs): the request,
``/en/api/messages/create`` (``model``, ``messages``, ``system``, ``max_tokens``,
``tools``, ``tool_choice``, ``thinking``, ``output_config``, ``temperature``);
extended and adaptive thinking, ``/en/docs/build-with-claude/extended-thinking``,
``/en/docs/build-with-claude/adaptive-thinking`` and
``/en/docs/build-with-claude/effort``; prompt caching,
``/en/docs/build-with-claude/prompt-caching``; the tool-use, PDF-support, citations
and Files API docs for ``tool_use``/``tool_result`` and ``document`` blocks; the tool
search tool, ``/en/agents-and-tools/tool-use/tool-search-tool``, for ``defer_loading``.

Compat flags (``Model(compat={...})``, :class:`AnthropicCompat`) cover servers and
models that differ: the thinking mode, effort and budget tables, the
interleaved-thinking beta, and bearer authentication for proxies.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Literal

import msgspec

from ..._wire.request import RequestOptions, check_extra_body
from ...errors import ConfigurationError
from ...types import (
    AssistantMessage,
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
    ToolDefinition,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from .._common import (
    as_image,
    as_tool_call,
    check_reasoning,
    check_tool_choice,
    citations_as_text,
    merge_compat,
    raw_object,
    refuse_assistant_images,
    same_model,
    server_tool_objects,
)
from ._output import add_output
from ._whole import API_NAME
from .spec import SERVER_TOOLS

__all__ = [
    "ADAPTIVE_EFFORTS",
    "RESERVED",
    "THINKING_BUDGETS",
    "TOOL_SEARCH",
    "AnthropicCompat",
    "build_body",
    "detect_compat",
    "encode_messages",
    "uses_adaptive_thinking",
]

#: ``budget_tokens`` per reasoning level. The API's minimum budget is 1024.
THINKING_BUDGETS: dict[str, int] = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384,
                                    "xhigh": 32000}  # fmt: skip
#: ``output_config.effort`` per reasoning level for adaptive thinking. The 4.6
#: models accept low/medium/high/max ("xhigh" came later), so xhigh → max.
ADAPTIVE_EFFORTS: dict[str, str] = {"minimal": "low", "low": "low", "medium": "medium",
                                    "high": "high", "xhigh": "max"}  # fmt: skip
_MIN_BUDGET = 1024
#: Room left for the answer when ``max_tokens`` must be capped below budget + answer.
_MIN_ANSWER = 1024


# --------------------------------------------------------------------------- compat


class AnthropicCompat(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How one model or server departs from the defaults of this adapter."""

    thinking: Literal["enabled", "adaptive"] | None = None
    """Thinking mode for a reasoning level: ``enabled`` (``budget_tokens``) or
    ``adaptive`` (``effort``); ``None`` picks by model id (:func:`uses_adaptive_thinking`)."""
    thinking_budgets: dict[str, int] | None = None
    """Overrides of :data:`THINKING_BUDGETS` by level."""
    efforts: dict[str, str] | None = None
    """Overrides of :data:`ADAPTIVE_EFFORTS` by level (e.g. ``{"xhigh": "xhigh"}``)."""
    interleaved_thinking: bool | None = None
    """Send the interleaved-thinking beta with budget thinking and tools; ``None``:
    for Claude 4 and later model ids only."""
    auth: Literal["x-api-key", "bearer"] = "x-api-key"
    """Where the key goes: ``x-api-key`` (Anthropic) or ``Authorization: Bearer``
    (some proxies and gateways)."""


def detect_compat(model: Model) -> AnthropicCompat:
    """The provider record's defaults overridden by ``model.compat``; unknown flags
    are refused."""
    from ..._catalog._records import compat_defaults

    base = compat_defaults(model, "anthropic-messages")
    if not model.compat and not base:
        return AnthropicCompat()
    return merge_compat("anthropic-messages", AnthropicCompat, model.compat, base)


# "claude-<family>-<major>[-<minor>]" anywhere in the id (also Bedrock/Vertex ids
# such as "anthropic.claude-opus-4-6-v1"). A minor has one or two digits, so the
# date of "claude-sonnet-4-20250514" is not read as a minor version.
_FAMILY_VERSION = re.compile(r"claude-(?:opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?(?!\d)")


def claude_version(model_id: str) -> tuple[int, int] | None:
    m = _FAMILY_VERSION.search(model_id.lower())
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2) or 0)


def uses_adaptive_thinking(model: Model, compat: AnthropicCompat | None = None) -> bool:
    """Whether a reasoning level is sent as adaptive thinking + effort.

    The rule: ``compat["thinking"]`` decides when set; otherwise Claude
    Opus/Sonnet/Haiku 4.6 and later (``claude-opus-4-6``, ``claude-sonnet-4-6``,
    ``claude-opus-4-7``, ``claude-sonnet-5``…) use adaptive thinking, on which
    ``budget_tokens`` is deprecated or refused (adaptive-thinking docs); older
    and unrecognised ids use ``budget_tokens``.
    """
    compat = compat or detect_compat(model)
    if compat.thinking is not None:
        return compat.thinking == "adaptive"
    version = claude_version(model.id)
    return version is not None and version >= (4, 6)


# --------------------------------------------------------------------------- outbound

#: ``extra_body`` may not override these (they are built from options and context).
RESERVED = frozenset(
    {"model", "messages", "system", "stream", "max_tokens", "tools", "tool_choice"}
)
# Tool ids must match ^[a-zA-Z0-9_-]+$ (Messages API reference, tool_use.id).
_VALID_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_INVALID_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def _tool_id(call_id: str) -> str:
    """An id Anthropic accepts; ids from other providers (``fc_1|call_2``) are
    rewritten deterministically, the same way for a ``tool_use`` and its result."""
    if _VALID_ID.fullmatch(call_id):
        return call_id
    return _INVALID_ID_CHARS.sub("_", call_id)[:64] or "tool"


def _image(block: ImageContent) -> dict[str, Any]:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": block.mime_type, "data": block.data},
    }


def _document(block: DocumentContent) -> dict[str, Any]:
    """A ``document`` block (PDF-support and citations docs): a PDF as base64, plain
    text as a ``text`` source (the API wants the text itself), a URL, or a Files API
    ``file_id``."""
    source: dict[str, Any]
    if block.url is not None:
        source = {"type": "url", "url": block.url}
    elif block.file_id is not None:
        source = {"type": "file", "file_id": block.file_id}
    elif block.mime_type == "text/plain":
        try:
            text = base64.b64decode(block.data or "", validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise ConfigurationError(
                "a text/plain DocumentContent for anthropic-messages must hold base64 "
                "of UTF-8 text in data="
            ) from None
        source = {"type": "text", "media_type": "text/plain", "data": text}
    else:
        source = {"type": "base64", "media_type": block.mime_type, "data": block.data}
    out: dict[str, Any] = {"type": "document", "source": source}
    if block.title is not None:
        out["title"] = block.title
    return out


def _user_blocks(content: str | tuple[UserContent, ...]) -> list[dict[str, Any]]:
    # The API refuses empty text blocks ("text content blocks must be non-empty").
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for b in content:
        if isinstance(b, TextContent):
            if b.text:
                blocks.append({"type": "text", "text": b.text})
        elif isinstance(b, DocumentContent):
            blocks.append(_document(b))
        else:
            blocks.append(_image(as_image(b, "an anthropic-messages request")))
    return blocks


def _tool_result(msg: ToolResultMessage) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": _tool_id(msg.tool_call_id)}
    content = _user_blocks(msg.content)
    if content:
        block["content"] = content
    block["is_error"] = msg.is_error
    return block


def _tool_input(call: ToolCall) -> dict[str, Any]:
    # Replay what the provider sent (raw_arguments); ``input`` must be an object.
    raw = call.raw_arguments
    if raw is not None and raw.strip():
        try:
            value = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            value = None
        if isinstance(value, dict):
            return value
    return dict(call.arguments)


def _thinking_block(
    model: Model, msg: AssistantMessage, b: ThinkingContent
) -> dict[str, Any] | None:
    """The handoff rule, in one place: signatures and redacted thinking go back only
    to the provider+API+model that made them; otherwise thinking becomes plain text
    and redacted thinking is dropped."""
    if same_model(model, msg) and b.signature:
        if b.redacted:
            return {"type": "redacted_thinking", "data": b.signature}
        return {"type": "thinking", "thinking": b.thinking, "signature": b.signature}
    if b.redacted or not b.thinking:
        return None
    return {"type": "text", "text": f"<thinking>\n{b.thinking}\n</thinking>"}


def _verbatim(raw: str | None) -> msgspec.Raw | None:
    return msgspec.Raw(raw.encode()) if raw is not None else None


def _text_block(b: TextContent, same_api: bool) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": b.text}
    if same_api and b.citations:
        # Citations go back as received (web search: their encrypted_index is what
        # the API checks); mw.handoff turns other APIs' citations into text, and a
        # hand-built one (no raw object to send) becomes text here the same way.
        cites = [c for c in (_verbatim(c.raw) for c in b.citations) if c is not None]
        if cites:
            block["citations"] = cites
        built = tuple(c for c in b.citations if c.raw is None)
        if built:
            block["text"] = b.text + citations_as_text(built)
    return block


def _server_block(
    b: ServerToolCall | ServerToolResult | ProviderItem, same_api: bool
) -> msgspec.Raw | dict[str, Any] | None:
    """A provider-run tool block or an opaque item, as received (byte for byte) when
    this API sent it; a hand-built one from its fields. Another API's blocks reach
    here only without ``mw.handoff`` (which turns them into text): refused."""
    if isinstance(b, ProviderItem):
        return msgspec.Raw(b.data.encode()) if b.api == API_NAME else None
    if not same_api:
        raise ConfigurationError(
            f"an anthropic-messages request cannot carry a {b.type} block from another "
            "API; pass the context through mw.handoff(context, model) first"
        )
    raw = _verbatim(b.raw)
    if raw is not None:
        return raw
    if isinstance(b, ServerToolCall):
        return {"type": b.provider_type, "id": _tool_id(b.id), "name": b.name, "input": b.input}
    return {"type": b.provider_type, "tool_use_id": _tool_id(b.tool_call_id), "content": b.result}


def _assistant_blocks(model: Model, msg: AssistantMessage) -> list[Any]:
    blocks: list[Any] = []
    same_api = msg.api == API_NAME
    for b in msg.content:
        if isinstance(b, TextContent):
            if b.text:
                blocks.append(_text_block(b, same_api))
        elif isinstance(b, ThinkingContent):
            block = _thinking_block(model, msg, b)
            if block is not None:
                blocks.append(block)
        elif isinstance(b, ServerToolCall | ServerToolResult | ProviderItem):
            server = _server_block(b, same_api)
            if server is not None:
                blocks.append(server)
        else:
            b = as_tool_call(b, "an anthropic-messages request")
            use: dict[str, Any] = {
                "type": "tool_use",
                "id": _tool_id(b.id),
                "name": b.name,
                "input": _tool_input(b),
            }
            if same_api and b.signature is not None:
                # A call made by code execution names it in ``caller``, which goes back
                # with the call as received ("Programmatic tool calling",
                # https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/programmatic-tool-calling).
                use["caller"] = raw_object(b.signature, "a tool call's signature (its caller)")
            blocks.append(use)
    return blocks


def encode_messages(model: Model, context: Context, *, cache: bool) -> list[dict[str, Any]]:
    """The ``messages`` array (pure: nothing in ``context`` is changed); the text of a
    system message that cannot stay among them is in :func:`build_body`'s ``system``."""
    return _encode_messages(model, context, cache=cache)[0]


def _encode_messages(
    model: Model, context: Context, *, cache: bool
) -> tuple[list[dict[str, Any]], list[str]]:
    """The ``messages`` array, and the text of the system messages that go to the
    top-level ``system`` instead.

    Roles alternate: consecutive messages of one role are merged, so consecutive
    tool results become one user message of ``tool_result`` blocks (the API wants
    all results of one turn in the next user message). Failed or aborted assistant
    turns are not replayed. With ``cache``, the last user block gets
    ``cache_control`` so the whole prefix is cached for the next turn.
    """
    messages: list[dict[str, Any]] = []

    def add(role: str, blocks: list[Any]) -> None:
        if not blocks:
            return
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})

    for i, msg in enumerate(context.messages):
        if isinstance(msg, UserMessage):
            add("user", _user_blocks(msg.content))
        elif isinstance(msg, ToolResultMessage):
            add("user", [_tool_result(msg)])
        elif isinstance(msg, SystemMessage):
            add("system", [{"type": "text", "text": msg.content}])
        elif msg.stop_reason not in ("error", "aborted"):
            # An assistant turn holds text, thinking and tool blocks, never an image.
            refuse_assistant_images(msg, f"messages[{i}]", "anthropic-messages")
            add("assistant", _assistant_blocks(model, msg))
    messages, folded = _place_system(messages)
    for m in messages:
        # "tool_result blocks must come first" in their user message (tool-use docs);
        # a user text merged in before them moves after them (stable order).
        blocks = m["content"]
        if m["role"] == "user" and len(blocks) > 1:
            results = [b for b in blocks if b["type"] == "tool_result"]
            if results and blocks[: len(results)] != results:
                m["content"] = results + [b for b in blocks if b["type"] != "tool_result"]
    if cache:
        for m in reversed(messages):
            if m["role"] == "user":
                m["content"][-1] = {**m["content"][-1], "cache_control": {"type": "ephemeral"}}
                break
    return messages, folded


def _place_system(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """System messages (consecutive ones merged) kept where the API takes them — right
    after a user turn or an assistant turn ending in a server tool call, and last or
    before an assistant turn (mid-conversation system messages, "Placement rules":
    https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages);
    any other goes to the top-level ``system`` (its text returned), and the turns it
    stood between are merged again."""
    kept: list[dict[str, Any]] = []
    folded: list[str] = []
    for k, m in enumerate(messages):
        if m["role"] == "system":
            prev = kept[-1] if kept else None
            after = prev is not None and (
                prev["role"] == "user"
                or (
                    prev["role"] == "assistant" and prev["content"][-1]["type"] == "server_tool_use"
                )
            )
            following = messages[k + 1]["role"] if k + 1 < len(messages) else None
            if after and following in (None, "assistant"):
                kept.append(m)
            else:
                folded.extend(b["text"] for b in m["content"])
        elif kept and kept[-1]["role"] == m["role"]:
            kept[-1]["content"].extend(m["content"])
        else:
            kept.append(m)
    return kept, folded


def _system(context: Context, cache: bool, folded: list[str]) -> str | list[dict[str, Any]] | None:
    text = "\n\n".join([p for p in (context.system_prompt, *folded) if p])
    if not text:
        return None
    if cache:
        cache_control = {"type": "ephemeral"}
        return [{"type": "text", "text": text, "cache_control": cache_control}]
    return text


def _tool_choice(
    context: Context, options: RequestOptions, thinking: bool
) -> dict[str, Any] | None:
    tc = options.tool_choice
    check_tool_choice(tc, context)
    names = {t.name for t in context.tools or ()}
    if thinking and (tc == "required" or isinstance(tc, dict)):
        # Extended thinking docs: with thinking only tool_choice auto or none is allowed.
        raise ConfigurationError(
            'tool_choice "required" or {"name": ...} cannot be combined with reasoning '
            "on Anthropic (thinking allows only auto or none); pass reasoning=None"
        )
    if not names:
        return None  # "auto"/"none" without tools: nothing to choose from
    choice: dict[str, Any]
    if tc == "none":
        return {"type": "none"}
    if tc == "required":
        choice = {"type": "any"}
    elif isinstance(tc, dict):
        choice = {"type": "tool", "name": tc["name"]}
    elif tc == "auto" or options.parallel_tool_calls is False:
        choice = {"type": "auto"}
    else:
        return None
    if options.parallel_tool_calls is False:
        choice["disable_parallel_tool_use"] = True
    return choice


def _thinking(
    model: Model, options: RequestOptions, compat: AnthropicCompat
) -> tuple[int, dict[str, Any]]:
    """``max_tokens`` and the thinking fields of the body.

    Without a reasoning level: ``max_tokens`` is the option, else
    ``model.max_tokens`` (the API requires it). Adaptive models get
    ``thinking: {"type": "adaptive"}`` and ``output_config.effort``. Others get
    ``thinking: {"type": "enabled", "budget_tokens": b}``; the budget counts
    against ``max_tokens`` and must stay below it, so a ``max_tokens`` that does
    not exceed the budget is raised by the budget (the answer keeps its room),
    capped at the model's limit (the larger of ``model.max_tokens`` and the
    option), where the budget shrinks to leave 1024 tokens for the answer.
    """
    requested = options.max_tokens if options.max_tokens is not None else model.max_tokens
    level = options.reasoning
    if level is None:
        return requested, {}
    check_reasoning(model, level)
    if uses_adaptive_thinking(model, compat):
        effort = {**ADAPTIVE_EFFORTS, **(compat.efforts or {})}[level]
        return requested, {"thinking": {"type": "adaptive"}, "output_config": {"effort": effort}}
    budget = {**THINKING_BUDGETS, **(compat.thinking_budgets or {})}[level]
    max_tokens = requested if requested > budget else requested + budget
    ceiling = max(model.max_tokens, requested)
    if max_tokens > ceiling:
        max_tokens = ceiling
        budget = min(budget, max_tokens - _MIN_ANSWER)
    if budget < _MIN_BUDGET:
        raise ConfigurationError(
            f"thinking budget {budget} is below the API minimum of {_MIN_BUDGET} tokens "
            f"(max_tokens {max_tokens} must hold the budget and an answer); raise max_tokens, "
            "fix compat thinking_budgets or pass reasoning=None"
        )
    return max_tokens, {"thinking": {"type": "enabled", "budget_tokens": budget}}


#: The server-side tool search Claude runs over the tools sent with ``defer_loading``
#: (tool search tool docs,
#: https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool):
#: the regex variant, where the model writes a Python ``re.search`` pattern. A request
#: with a deferred tool and no search tool is refused, and the search tool itself is
#: never deferred, so at least one tool stays loaded, as the API requires.
TOOL_SEARCH: dict[str, Any] = {"type": "tool_search_tool_regex_20251119",
                               "name": "tool_search_tool_regex"}  # fmt: skip


def _tool(t: ToolDefinition) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": t.name, "description": t.description,
                            "input_schema": t.parameters}  # fmt: skip
    if t.defer_loading:
        # Kept out of the model's context until its tool search returns a
        # ``tool_reference`` to it; the API then expands the definition in place.
        tool["defer_loading"] = True
    return tool


def uses_files(context: Context) -> bool:
    for msg in context.messages:
        if isinstance(msg, UserMessage | ToolResultMessage) and not isinstance(msg.content, str):
            if any(isinstance(b, DocumentContent) and b.file_id for b in msg.content):
                return True
    return False


def build_body(model: Model, context: Context, options: RequestOptions) -> dict[str, Any]:
    """The JSON body (pure); ``ConfigurationError`` for impossible options."""
    compat = detect_compat(model)
    check_extra_body(options.extra_body, RESERVED)
    max_tokens, thinking = _thinking(model, options, compat)
    body: dict[str, Any] = {"model": model.id, "max_tokens": max_tokens, "stream": True}
    messages, folded = _encode_messages(model, context, cache=options.cache)
    system = _system(context, options.cache, folded)
    if system is not None:
        body["system"] = system
    body["messages"] = messages
    if context.tools:
        body["tools"] = [_tool(t) for t in context.tools]
    if options.server_tools:
        body.setdefault("tools", []).extend(
            server_tool_objects(options.server_tools, SERVER_TOOLS, API_NAME)
        )
    if any(t.defer_loading for t in context.tools or ()):
        body["tools"].append(dict(TOOL_SEARCH))
    choice = _tool_choice(context, options, bool(thinking))
    if choice is not None:
        body["tool_choice"] = choice
    body.update(thinking)
    # "Thinking isn't compatible with temperature or top_k modifications"
    # (extended-thinking docs): the temperature is dropped when thinking is on.
    if options.temperature is not None and not thinking:
        body["temperature"] = options.temperature
    add_output(body, options.output)  # output_config.format (structured output)
    if options.extra_body:
        body.update(options.extra_body)
    return body
