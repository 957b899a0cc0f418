"""An Anthropic Messages request body → a :class:`GatewayRequest`.

The inverse of :mod:`.encode` (``build_body``): the
fields of ``POST /v1/messages`` (https://docs.anthropic.com/en/api/messages) are
decoded with typed msgspec structs, one block at a time, so a wrong value is named
by its path (``messages[2].content[0].text must be a string``). The field table is
in the package docstring and ``docs/gateway-anthropic.md``.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any, TypeVar

import msgspec

from ...errors import ConfigurationError, MalformedChunkError
from ...types import (
    AssistantContent,
    AssistantMessage,
    Citation,
    Context,
    DocumentContent,
    ImageContent,
    Message,
    ProviderItem,
    ServerTool,
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
from .._server.fields import body_fields, decode, schema
from .._server.origin import CLIENT_PROVIDER, Origin, unseal
from .._server.reply import declared_tools, model_in_body, text_of
from .._server.request import GatewayRequest, RequestError
from ._request import (
    Document,
    Head,
    Image,
    OutputConfig,
    Redacted,
    Request,
    ServerCall,
    ServerResult,
    Source,
    SystemBlock,
    Text,
    Thinking,
    ThinkingBlock,
    Tool,
    ToolChoice,
    ToolHead,
    ToolResult,
    ToolUse,
)
from ._request import (
    Message as RequestMessage,
)
from ._whole import SERVER_CALLS, citation, whole_kind
from .spec import RAW_PREDICT

__all__ = ["API_NAME", "parse", "request_model", "request_tools", "tool_results"]


def request_model(path: str, body: object) -> str | None:
    """The model a request names: in the body, or in a Vertex AI path
    (``…/models/{id}:streamRawPredict``)."""
    target = path.split("?", 1)[0]
    if target.endswith(RAW_PREDICT):
        return target.rsplit("/models/", 1)[-1][: -len(RAW_PREDICT)] or None
    return model_in_body(path, body)


def tool_results(body: object) -> list[str]:
    """The ``content`` of every ``tool_result`` block of the messages."""
    found: list[str] = []
    for m in body.get("messages", []) if isinstance(body, dict) else []:
        content = m.get("content") if isinstance(m, dict) else None
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "tool_result":
                found.append(text_of(part.get("content")))
    return found


def request_tools(body: object) -> list[tuple[str, dict[str, Any]]]:
    """``(name, input_schema)`` of each tool the request declares."""
    tools = body.get("tools") if isinstance(body, dict) else None
    return declared_tools(tools, spec=None, name="name", schema="input_schema")


API_NAME = "anthropic-messages"
T = TypeVar("T")

_KNOWN = frozenset(Request.__struct_fields__)
# ``metadata.user_id`` only tags requests for abuse detection: harmless to drop.
_IGNORED = frozenset({"metadata", "context_management"})
_CHOICES = {"role": "user, assistant or system"}
_request = msgspec.json.Decoder(Request)
_decoders: dict[type[Any], msgspec.json.Decoder[Any]] = {}
_any = msgspec.json.Decoder()

#: ``thinking.budget_tokens`` → reasoning level: the largest level whose budget
#: (``THINKING_BUDGETS`` of the encoder) the request's budget reaches.
_LEVELS = (("xhigh", 32000), ("high", 16384), ("medium", 8192), ("low", 2048), ("minimal", 1024))
#: ``output_config.effort`` → reasoning level (the inverse of ``ADAPTIVE_EFFORTS``).
_EFFORTS = {"low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh", "max": "xhigh"}


#: Tool definitions by their request bytes: a client sends the same tools on every
#: turn, and checking a schema's ``$ref`` s is most of the cost of a parse. Values are
#: frozen and never changed by modelwire (encoding is pure, DESIGN §3 rule 9).
_TOOL_CACHE: dict[bytes, tuple[ToolDefinition, bool]] = {}
_TOOL_CACHE_SIZE = 1024


def _bad(message: str, param: str | None = None) -> RequestError:
    return RequestError(message, param=param)


def _typed(raw: msgspec.Raw | bytes, tp: type[T], where: str) -> T:
    dec = _decoders.get(tp)
    if dec is None:
        dec = _decoders[tp] = msgspec.json.Decoder(tp)
    value: T = decode(raw, dec, where, _CHOICES)
    return value


def parse(body: bytes, headers: Mapping[str, str]) -> GatewayRequest:
    """The request, or :class:`RequestError` (400) naming the field at fault.

    ``anthropic-version`` has one value; ``anthropic-beta`` is sent on to an Anthropic
    backend only (the fields passed through to it may need their betas, as
    ``context_management`` does), joined with those modelwire's encoder sets."""
    fields = body_fields(body)
    req = _typed(body, Request, "")
    passthrough = {
        k: _any.decode(v) for k, v in fields.items() if k not in _KNOWN and k not in _IGNORED
    }
    if not req.model:
        raise _bad("model must not be empty", "model")
    if not req.messages:
        raise _bad("messages must not be empty", "messages")
    server: list[tuple[str, ServerTool]] = []
    tools, tools_cached = _tools(req.tools or (), server)
    parser = _Conversation(req.model)
    messages = parser.messages(req.messages)
    if not any(m.role != "system" for m in messages):
        raise _bad("messages holds only system messages: send at least one user turn", "messages")
    cache = parser.cache or tools_cached or _system_cached(req.system)
    inert: dict[str, Any] = {}
    if "context_management" in fields:
        value = _any.decode(fields["context_management"])
        if value is not None:
            (inert if _clears_nothing(value) else passthrough)["context_management"] = value
    prompt = _system(req.system)
    try:
        context = Context(system_prompt=prompt, messages=messages, tools=tools)
    except ConfigurationError as exc:  # pragma: no cover - every field was checked above
        raise _bad(str(exc)) from None
    options: dict[str, Any] = {"max_tokens": req.max_tokens, "cache": cache}
    if req.temperature is not None:
        options["temperature"] = req.temperature
    options.update(_tool_choice(req.tool_choice, tools))
    reasoning = _reasoning(req.thinking, req.output_config)
    if reasoning is not None:
        options["reasoning"] = reasoning
    asked = "thinking" if req.thinking is not None else "output_config.effort"
    fmt = req.output_config.format if req.output_config is not None else None
    fmt = fmt or req.output_format
    if fmt is not None:
        options["output"] = fmt.schema
    return GatewayRequest(
        model=req.model, context=context, options=options, stream=req.stream,
        passthrough=passthrough, inert=inert, forward_headers=_betas(headers),
        reasoning_field=asked if reasoning is not None else None, server_tools=tuple(server),
    )  # fmt: skip


def _system(system: str | list[SystemBlock] | None) -> str | None:
    if system is None or isinstance(system, str):
        return system or None
    # Several blocks (prompt-caching breakpoints) become one prompt.
    return "\n".join(b.text for b in system) or None


def _betas(headers: Mapping[str, str]) -> dict[str, str]:
    """The client's ``anthropic-beta`` header, when it is a list of beta names."""
    value = headers.get("anthropic-beta")
    if not value or not _BETAS.fullmatch(value):
        return {}  # none, or not names: not sent on (Anthropic would refuse it anyway)
    return {"anthropic-beta": value}


_BETAS = re.compile(r"[A-Za-z0-9._-]+(?:\s*,\s*[A-Za-z0-9._-]+)*")


def _clears_nothing(value: Any) -> bool:
    """Whether ``context_management`` changes no answer: every edit is
    ``clear_thinking_20251015`` keeping all thinking turns (what Claude Code sends by
    default). https://docs.anthropic.com/en/docs/build-with-claude/context-editing"""
    edits = value.get("edits") if isinstance(value, dict) else None
    if not isinstance(edits, list) or set(value) - {"edits"}:
        return False
    return all(
        isinstance(e, dict) and e.get("type") == "clear_thinking_20251015"
        and e.get("keep") == "all" and set(e) <= {"type", "keep"}
        for e in edits
    )  # fmt: skip


def _system_cached(system: str | list[SystemBlock] | None) -> bool:
    return isinstance(system, list) and any(b.cache_control is not None for b in system)


#: Server tools the gateway passes on, by the prefix of their versioned type
#: (``web_search_20250305``…), with modelwire's neutral name.
_SERVER_TOOLS = (("web_search_", "web_search"), ("web_fetch_", "web_fetch"),
                 ("code_execution_", "code_execution"))  # fmt: skip


def _tools(
    raws: list[msgspec.Raw] | tuple[()], server: list[tuple[str, ServerTool]]
) -> tuple[tuple[ToolDefinition, ...] | None, bool]:
    """The client tools, and whether one set a cache breakpoint; server tools (web
    search, web fetch, code execution) go to ``server``, each kept as the client
    wrote it."""
    if not raws:
        return None, False
    out: list[ToolDefinition] = []
    cached = False
    for i, raw in enumerate(raws):
        key = bytes(raw)
        known = _TOOL_CACHE.get(key)
        if known is not None:
            out.append(known[0])
            cached = cached or known[1]
            continue
        where = f"tools[{i}]"
        kind = _typed(raw, ToolHead, where).type
        if kind not in (None, "custom"):
            name = next((n for p, n in _SERVER_TOOLS if kind.startswith(p)), None)
            if name is None:
                raise _bad(
                    f"{where}.type {kind!r} is an Anthropic server tool the gateway "
                    "does not pass on (it passes web_search, web_fetch and code_execution, "
                    "and translates client tools)",
                    f"{where}.type",
                )
            if any(t.name == name for _, t in server):
                raise _bad(f"{where}.type declares a second {name} tool", f"{where}.type")
            whole = _any.decode(raw)
            cached = cached or whole.get("cache_control") is not None
            server.append((f"{where}.type", ServerTool(name, options=whole, api=API_NAME)))
            continue
        tool = _typed(raw, Tool, where)
        schema(tool.input_schema, f"{where}.input_schema")
        try:
            definition = ToolDefinition(name=tool.name, description=tool.description,
                                        parameters=tool.input_schema)  # fmt: skip
        except ConfigurationError as exc:
            raise _bad(f"{where}: {exc}", where) from None
        if len(_TOOL_CACHE) >= _TOOL_CACHE_SIZE:
            _TOOL_CACHE.clear()
        marked = tool.cache_control is not None
        _TOOL_CACHE[key] = (definition, marked)
        cached = cached or marked
        out.append(definition)
    return tuple(out), cached


def _tool_choice(
    choice: ToolChoice | None, tools: tuple[ToolDefinition, ...] | None
) -> dict[str, Any]:
    if choice is None:
        return {}
    out: dict[str, Any] = {}
    if choice.type == "tool":
        if choice.name is None:
            raise _bad("tool_choice.name is missing (type tool)", "tool_choice.name")
        if choice.name not in {t.name for t in tools or ()}:
            raise _bad(f"tool_choice.name {choice.name!r} is not one of tools", "tool_choice.name")
        out["tool_choice"] = {"name": choice.name}
    else:
        out["tool_choice"] = {"auto": "auto", "any": "required", "none": "none"}[choice.type]
    if choice.disable_parallel_tool_use:
        out["parallel_tool_calls"] = False
    return out


def _reasoning(thinking: Thinking | None, config: OutputConfig | None) -> str | None:
    effort = config.effort if config is not None else None
    if thinking is None or thinking.type == "disabled":
        # Effort without thinking still asks for that much reasoning.
        return _EFFORTS[effort] if effort is not None and thinking is None else None
    if thinking.type == "adaptive":
        return _EFFORTS[effort] if effort is not None else "high"  # the API's default effort
    budget = thinking.budget_tokens
    if budget is None:
        raise _bad("thinking.budget_tokens is missing (type enabled)", "thinking.budget_tokens")
    for level, least in _LEVELS:
        if budget >= least:
            return level
    raise _bad("thinking.budget_tokens must be >= 1024", "thinking.budget_tokens")


class _Conversation:
    """Messages, with the tool names that ``tool_result`` blocks answer."""

    __slots__ = ("cache", "model", "names")

    def __init__(self, model: str) -> None:
        self.model = model
        self.names: dict[str, str] = {}  # tool_use id → tool name
        self.cache = False  # a cache_control breakpoint was set on some block

    def messages(self, messages: list[RequestMessage]) -> list[Message]:
        out: list[Message] = []
        for i, m in enumerate(messages):
            where = f"messages[{i}].content"
            if m.role == "system":
                # A mid-conversation system message (Claude Code sends them), kept in
                # its place: a backend model that takes them gets it there, any other
                # in its system prompt (handoff rule 11).
                # https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages
                out.append(SystemMessage(content=self._system_text(m.content, where)))
            elif m.role == "assistant":
                out.append(self._assistant(m.content, where))
            else:
                out.extend(self._user(m.content, where))
        return out

    def _system_text(self, content: str | list[msgspec.Raw], where: str) -> str:
        if isinstance(content, str):
            text = content
        else:
            parts = []
            for j, raw in enumerate(content):
                at = f"{where}[{j}]"
                if self._head(raw, at) != "text":
                    raise _bad(f"{at}.type must be text in a system message", f"{at}.type")
                parts.append(_typed(raw, Text, at).text)
            text = "\n".join(parts)
        if not text:
            raise _bad(f"{where} must not be empty", where)
        return text

    def _head(self, raw: msgspec.Raw, where: str) -> str:
        head = _typed(raw, Head, where)
        if head.cache_control is not None:
            self.cache = True
        return head.type

    # ----------------------------------------------------------------- user turns

    def _user(self, content: str | list[msgspec.Raw], where: str) -> list[Message]:
        """Tool results become ``ToolResultMessage`` s, the rest one ``UserMessage``
        after them (the encoder merges them back into one user turn)."""
        if not content:  # Anthropic's own API refuses an empty turn too
            raise _bad(f"{where} must not be empty", where)
        if isinstance(content, str):
            return [UserMessage(content=content)]
        results: list[Message] = []
        blocks: list[UserContent] = []
        for j, raw in enumerate(content):
            at = f"{where}[{j}]"
            t = self._head(raw, at)
            if t == "tool_result":
                results.append(self._tool_result(raw, at))
            else:
                blocks.append(self._user_block(t, raw, at))
        if blocks or not results:
            results.append(UserMessage(content=blocks))
        return results

    def _user_block(self, t: str, raw: msgspec.Raw, where: str) -> UserContent:
        if t == "text":
            return TextContent(text=_typed(raw, Text, where).text)
        if t == "image":
            return _image(_typed(raw, Image, where).source, f"{where}.source")
        if t == "document":
            return _document(_typed(raw, Document, where), where)
        raise _bad(
            f"{where}.type {t!r} is not a user content block the gateway forwards "
            "(text, image, document, tool_result)",
            f"{where}.type",
        )

    def _tool_result(self, raw: msgspec.Raw, where: str) -> ToolResultMessage:
        block = _typed(raw, ToolResult, where)
        name = self.names.get(block.tool_use_id)
        if name is None:
            raise _bad(
                f"{where}.tool_use_id {block.tool_use_id!r} answers no tool_use block of "
                "an earlier assistant turn",
                f"{where}.tool_use_id",
            )
        content: list[UserContent] = []
        if isinstance(block.content, str):
            if block.content:
                content.append(TextContent(text=block.content))
        else:
            for k, part in enumerate(block.content):
                at = f"{where}.content[{k}]"
                t = self._head(part, at)
                if t == "tool_result":
                    raise _bad(f"{at}.type 'tool_result' cannot be nested", f"{at}.type")
                content.append(self._user_block(t, part, at))
        return ToolResultMessage(tool_call_id=block.tool_use_id, tool_name=name,
                                 content=content, is_error=block.is_error)  # fmt: skip

    # ------------------------------------------------------------ assistant turns

    def _assistant(self, content: str | list[msgspec.Raw], where: str) -> AssistantMessage:
        """The turn; when a thinking block carries a sealed origin, the turn is that
        origin's (api/provider/model), so its signatures go back only there."""
        if isinstance(content, str):
            return self._finish([TextContent(text=content)] if content else [], None)
        blocks: list[AssistantContent] = []
        origin: Origin | None = None
        for j, raw in enumerate(content):
            at = f"{where}[{j}]"
            t = self._head(raw, at)
            if t == "text":
                text = _typed(raw, Text, at)
                cites = [_citation(c, f"{at}.citations[{k}]")
                         for k, c in enumerate(text.citations or ())]  # fmt: skip
                blocks.append(TextContent(text=text.text, citations=cites))
            elif t == "thinking" or t == "redacted_thinking":
                block, sealed = _thinking(t, raw, at)
                origin = origin or sealed
                blocks.append(block)
            elif t == "tool_use":
                blocks.append(self._tool_use(raw, at))
            else:
                blocks.append(self._whole(t, raw, at))
        return self._finish(blocks, origin)

    def _finish(self, blocks: list[AssistantContent], origin: Origin | None) -> AssistantMessage:
        calls = any(isinstance(b, ToolCall) for b in blocks)
        api, provider, model = (
            (origin.api, origin.provider, origin.model)
            if origin is not None else (API_NAME, CLIENT_PROVIDER, self.model)
        )  # fmt: skip
        return AssistantMessage(content=blocks, api=api, provider=provider, model=model,
                                stop_reason="tool_use" if calls else "stop")  # fmt: skip

    def _tool_use(self, raw: msgspec.Raw, where: str) -> ToolCall:
        block = _typed(raw, ToolUse, where)
        # The input object's exact text is kept: it is what a backend is sent back.
        text = bytes(block.input).decode("utf-8")
        try:
            value = msgspec.json.decode(block.input)
        except msgspec.DecodeError:  # pragma: no cover - Raw spans valid JSON
            value = None
        if not isinstance(value, dict):
            raise _bad(f"{where}.input must be an object", f"{where}.input")
        if not block.id:
            raise _bad(f"{where}.id must not be empty", f"{where}.id")
        self.names[block.id] = block.name
        return ToolCall(id=block.id, name=block.name, arguments=value, raw_arguments=text)

    def _whole(self, t: str, raw: msgspec.Raw, where: str) -> AssistantContent:
        """Server-tool blocks and other block types, kept byte for byte (replayed
        only to an Anthropic backend; ``mw.handoff`` turns them into text for others)."""
        text = bytes(raw).decode("utf-8")
        kind = whole_kind(t)
        if t in SERVER_CALLS:
            call = _typed(raw, ServerCall, where)
            self.names.setdefault(call.id, call.name)
            return ServerToolCall(id=call.id, name=call.name, input=call.input,
                                  provider_type=t, raw=text)  # fmt: skip
        if kind == "result":
            res = _typed(raw, ServerResult, where)
            failed = res.is_error
            if failed is None:
                ctype = res.content.get("type") if isinstance(res.content, dict) else None
                failed = isinstance(ctype, str) and ctype.endswith("_error")
            return ServerToolResult(tool_call_id=res.tool_use_id, provider_type=t,
                                    result=res.content, is_error=failed,
                                    name=self.names.get(res.tool_use_id), raw=text)  # fmt: skip
        return ProviderItem(api=API_NAME, provider_type=t, data=text)


def _citation(raw: msgspec.Raw, where: str) -> Citation:
    try:
        return citation(raw, where, "request")
    except MalformedChunkError as exc:
        raise _bad(str(exc).removeprefix("malformed request: "), where) from None


def _thinking(t: str, raw: msgspec.Raw, where: str) -> tuple[ThinkingContent, Origin | None]:
    if t == "redacted_thinking":
        data = _typed(raw, Redacted, where).data
        origin = unseal(data)
        if origin is None:
            return ThinkingContent(thinking="", signature=data, redacted=True), None
        return ThinkingContent(thinking="", signature=origin.signature,
                               redacted=origin.redacted), origin  # fmt: skip
    block = _typed(raw, ThinkingBlock, where)
    origin = unseal(block.signature)
    if origin is None:
        return ThinkingContent(thinking=block.thinking, signature=block.signature or None), None
    return ThinkingContent(thinking=block.thinking, signature=origin.signature,
                           redacted=origin.redacted), origin  # fmt: skip


def _image(source: Source, where: str) -> ImageContent:
    if source.type != "base64":
        raise _bad(
            f"{where}.type {source.type!r}: the gateway forwards images as base64 data "
            "only; send the image bytes in a base64 source",
            f"{where}.type",
        )
    if source.media_type is None or source.data is None:
        field = "media_type" if source.media_type is None else "data"
        raise _bad(f"{where}.{field} is missing", f"{where}.{field}")
    return ImageContent(data=source.data, mime_type=source.media_type)


def _document(doc: Document, where: str) -> DocumentContent:
    if doc.context is not None:
        raise _bad(f"{where}.context cannot be forwarded; put it in a text block",
                   f"{where}.context")  # fmt: skip
    if doc.citations is not None and doc.citations.get("enabled"):
        raise _bad(f"{where}.citations: per-document citation settings cannot be forwarded",
                   f"{where}.citations")  # fmt: skip
    s, at = doc.source, f"{where}.source"
    if s.type == "base64" and s.data is not None and s.media_type is not None:
        return DocumentContent(mime_type=s.media_type, data=s.data, title=doc.title)
    if s.type == "text" and s.data is not None:
        data = base64.b64encode(s.data.encode("utf-8")).decode("ascii")
        return DocumentContent(mime_type="text/plain", data=data, title=doc.title)
    if s.type == "url" and s.url is not None:
        return DocumentContent(mime_type="application/pdf", url=s.url, title=doc.title)
    if s.type == "file" and s.file_id is not None:
        return DocumentContent(mime_type="application/pdf", file_id=s.file_id, title=doc.title)
    if s.type in ("base64", "text", "url", "file"):
        need = {"base64": "data and media_type", "text": "data", "url": "url",
                "file": "file_id"}[s.type]  # fmt: skip
        raise _bad(f"{at}: a {s.type} source needs {need}", at)
    raise _bad(
        f"{at}.type {s.type!r} cannot be forwarded (base64, text, url or file sources only)",
        f"{at}.type",
    )
