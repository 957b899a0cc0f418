"""A Chat Completions request body → :class:`GatewayRequest` (the inverse of
``modelwire._apis.openai_chat.encode``).

Reference: https://platform.openai.com/docs/api-reference/chat/create. The field
table (translated, passed through, refused, ignored) is in the package docstring.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import msgspec

from ...errors import ConfigurationError
from ...types import (
    AssistantContent,
    AssistantMessage,
    AudioContent,
    Context,
    DocumentContent,
    ImageContent,
    Message,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from .._server.fields import Tokens, arguments, body_fields, decode, schema
from .._server.origin import CLIENT_PROVIDER, Origin, unseal
from .._server.request import GatewayRequest, RequestError
from ._carry import API, FORMAT
from ._request_body import (
    Assistant,
    AudioPart,
    Detail,
    Developer,
    FilePart,
    ImagePart,
    NamedToolChoice,
    ResponseFormat,
    StreamOptions,
    System,
    TextPart,
    Tool,
    ToolCallIn,
    ToolMessage,
    User,
)
from ._request_body import Message as WireMessage

__all__ = ["parse"]

_POSITIVE = Tokens
_TEMPERATURE = Annotated[float, msgspec.Meta(ge=0, le=2)]
_EFFORT = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
_CHOICE = Literal["auto", "none", "required"] | NamedToolChoice

# Field name → decoder of its value (``null`` is the same as absent).
_DECODERS: dict[str, msgspec.json.Decoder[Any]] = {
    "model": msgspec.json.Decoder(str),
    "messages": msgspec.json.Decoder(list[WireMessage]),
    "stream": msgspec.json.Decoder(bool | None),
    "stream_options": msgspec.json.Decoder(StreamOptions | None),
    "max_tokens": msgspec.json.Decoder(_POSITIVE | None),
    "max_completion_tokens": msgspec.json.Decoder(_POSITIVE | None),
    "temperature": msgspec.json.Decoder(_TEMPERATURE | None),
    "tools": msgspec.json.Decoder(list[Tool] | None),
    "tool_choice": msgspec.json.Decoder(_CHOICE | None),
    "parallel_tool_calls": msgspec.json.Decoder(bool | None),
    "reasoning_effort": msgspec.json.Decoder(_EFFORT | None),
    "response_format": msgspec.json.Decoder(ResponseFormat | None),
    "prompt_cache_key": msgspec.json.Decoder(str | None),
    "n": msgspec.json.Decoder(_POSITIVE | None),
    "store": msgspec.json.Decoder(bool | None),
    "logprobs": msgspec.json.Decoder(bool | None),
}
#: Fields dropped because they change nothing a backend answers (end-user ids for
#: abuse monitoring, stored-completion metadata).
IGNORED = frozenset({"user", "safety_identifier", "metadata"})
#: Deprecated fields with a modelwire form under another name: refused, naming it.
_DEPRECATED = {"functions": "tools", "function_call": "tool_choice"}

_ATTACHED = re.compile(r"\[attached to the result of (.*) \(call (.*)\)\]", re.S)
_AUDIO = {"wav": "audio/wav", "mp3": "audio/mpeg"}
_ROLES = "system, developer, user, assistant or tool"
_CHOICES = {"role": _ROLES}


def parse(body: bytes, headers: Mapping[str, str]) -> GatewayRequest:
    """Decode a ``POST /v1/chat/completions`` body; :class:`RequestError` names the field."""
    top = body_fields(body)
    values: dict[str, Any] = {}
    passthrough: dict[str, Any] = {}
    for name, raw in top.items():
        decoder = _DECODERS.get(name)
        if decoder is not None:
            value = decode(raw, decoder, name, _CHOICES)
            if value is not None:
                values[name] = value
        elif name in _DEPRECATED:
            raise RequestError(
                f"{name} is deprecated and not translated by the gateway: "
                f"send {_DEPRECATED[name]} instead", param=name,
            )  # fmt: skip
        elif name not in IGNORED:
            passthrough[name] = msgspec.json.decode(raw)
    for required in ("model", "messages"):
        if required not in values:
            raise RequestError(f"{required} is missing", param=required)
    model: str = values["model"]
    if not model:
        raise RequestError("model must not be empty", param="model")
    if not values["messages"]:
        raise RequestError("messages must hold at least one message", param="messages")
    if values.get("n", 1) != 1:
        raise RequestError(
            f"n={values['n']} asks for several choices; the gateway answers with one: "
            "send n=1 (or omit it) and make several requests", param="n",
        )  # fmt: skip
    for flag in ("store", "logprobs"):
        if values.get(flag):  # true has an effect only a backend of this API has
            passthrough[flag] = True
    tools = _tools(values.get("tools"))
    context = _context(values["messages"], tools, model)
    options = _options(values, context, passthrough)
    stream = bool(values.get("stream", False))
    usage = stream and bool(getattr(values.get("stream_options"), "include_usage", False))
    asked = "reasoning_effort" if "reasoning" in options else None
    return GatewayRequest(model=model, context=context, options=options, stream=stream,
                          passthrough=passthrough, include_usage=usage,
                          reasoning_field=asked)  # fmt: skip


# --------------------------------------------------------------------------- options


def _options(
    values: dict[str, Any], context: Context, passthrough: dict[str, Any]
) -> dict[str, Any]:
    options: dict[str, Any] = {}
    limit = values.get("max_completion_tokens", values.get("max_tokens"))
    if limit is not None:
        options["max_tokens"] = limit
    if "temperature" in values:
        options["temperature"] = values["temperature"]
    if "parallel_tool_calls" in values:
        options["parallel_tool_calls"] = values["parallel_tool_calls"]
    effort = values.get("reasoning_effort")
    if effort is not None and effort != "none":  # "none": no reasoning level asked
        options["reasoning"] = effort
    if "prompt_cache_key" in values:
        options["session_id"] = values["prompt_cache_key"]
    choice = values.get("tool_choice")
    if choice is not None:
        options["tool_choice"] = _tool_choice(choice, context)
    fmt: ResponseFormat | None = values.get("response_format")
    if fmt is not None and fmt.type == "json_schema":
        options["output"] = _output(fmt)
    elif fmt is not None and fmt.type == "json_object":
        passthrough["response_format"] = {"type": "json_object"}
    return options


def _tool_choice(choice: str | NamedToolChoice, context: Context) -> str | dict[str, str]:
    names = [t.name for t in context.tools or ()]
    if isinstance(choice, str):
        if choice == "required" and not names:
            raise RequestError("tool_choice 'required' needs tools, but tools declares none",
                               param="tool_choice")  # fmt: skip
        return choice
    name = choice.function.name
    if name not in names:
        raise RequestError(
            f"tool_choice.function.name {name!r} is not a declared tool "
            f"(tools declares {', '.join(map(repr, names)) or 'none'})",
            param="tool_choice.function.name",
        )
    return {"name": name}


def _output(fmt: ResponseFormat) -> dict[str, Any]:
    spec = fmt.json_schema
    if spec is None:
        raise RequestError(
            "response_format.json_schema is missing", param="response_format.json_schema"
        )
    if spec.schema is None:
        raise RequestError("response_format.json_schema.schema is missing",
                           param="response_format.json_schema.schema")  # fmt: skip
    schema = dict(spec.schema)
    # modelwire names the schema by its title (the encoder's json_schema.name).
    if spec.name != "output" and "title" not in schema:
        schema["title"] = spec.name
    return schema


def _tools(tools: list[Tool] | None) -> tuple[ToolDefinition, ...] | None:
    if tools is None:
        return None
    out = []
    for i, t in enumerate(tools):
        fn = t.function
        if fn.parameters is not None:
            schema(fn.parameters, f"tools[{i}].function.parameters")
        params = (
            fn.parameters if fn.parameters is not None else {"type": "object", "properties": {}}
        )
        try:
            out.append(
                ToolDefinition(name=fn.name, description=fn.description or "", parameters=params)
            )
        except ConfigurationError as exc:
            raise RequestError(
                f"tools[{i}].function: {exc}", param=f"tools[{i}].function"
            ) from None
    return tuple(out)


# --------------------------------------------------------------------------- messages


def _context(
    messages: list[WireMessage], tools: tuple[ToolDefinition, ...] | None, model: str
) -> Context:
    system: list[str] = []
    out: list[Message] = []
    names: dict[str, str] = {}  # tool call id → tool name, for the tool messages
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        cls = m.__class__
        if cls is System or cls is Developer:
            # Those before the first turn are the system prompt; a later one stays in its
            # place (handoff rule 11 decides what each backend model gets).
            assert isinstance(m, System | Developer)
            text = m.content if isinstance(m.content, str) else _texts(m.content)
            if out:
                if text:
                    out.append(SystemMessage(content=text))
            else:
                system.append(text)
        elif cls is User:
            assert isinstance(m, User)
            if not m.content:  # backends refuse an empty turn (Anthropic: 400)
                raise RequestError(f"{where}.content must not be empty",
                                   param=f"{where}.content")  # fmt: skip
            if not _attach(m, out):
                out.append(UserMessage(content=_user_content(m.content, where)))
        elif cls is Assistant:
            assert isinstance(m, Assistant)
            message = _assistant(m, where, model)
            if not message.content:
                raise RequestError(f"{where} has no content, tool_calls or reasoning: send "
                                   "what the assistant said, or leave the turn out",
                                   param=where)  # fmt: skip
            for c in m.tool_calls or ():
                names[c.id] = c.function.name
            out.append(message)
        elif cls is ToolMessage:
            assert isinstance(m, ToolMessage)
            if not m.tool_call_id:
                raise RequestError(f"{where}.tool_call_id must not be empty",
                                   param=f"{where}.tool_call_id")  # fmt: skip
            if m.tool_call_id not in names:
                # The API's own rule: a tool message answers a tool_calls entry before it.
                raise RequestError(
                    f"{where}.tool_call_id {m.tool_call_id!r} answers no tool_calls entry of an "
                    "earlier assistant message", param=f"{where}.tool_call_id",
                )  # fmt: skip
            text = m.content if isinstance(m.content, str) else _texts(m.content)
            name = m.name if m.name is not None else names[m.tool_call_id]
            out.append(ToolResultMessage(tool_call_id=m.tool_call_id, tool_name=name, content=text))
        else:
            raise RequestError(f"{where} has the deprecated role 'function': send tool "
                               "messages (role 'tool', tool_call_id)", param=f"{where}.role")  # fmt: skip
    if not any(not isinstance(m, SystemMessage) for m in out):
        raise RequestError("messages holds only system or developer messages: send at least "
                           "one user message", param="messages")  # fmt: skip
    prompt = "\n\n".join(system) or None
    return Context(system_prompt=prompt, messages=tuple(out), tools=tools)


def _texts(parts: list[TextPart]) -> str:
    return "".join(p.text for p in parts)


def _data_url(url: str) -> tuple[str, str] | None:
    """``(mime, base64 data)`` of a ``data:<mime>;base64,<data>`` URL, else ``None``."""
    if not url.startswith("data:"):
        return None
    head, sep, data = url.partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    return head[5:].split(";", 1)[0], data


def _user_content(
    content: str | list[TextPart | ImagePart | AudioPart | FilePart], where: str
) -> str | tuple[UserContent, ...]:
    if isinstance(content, str):
        return content
    return tuple(_part(p, f"{where}.content[{j}]") for j, p in enumerate(content))


def _part(p: TextPart | ImagePart | AudioPart | FilePart, where: str) -> UserContent:
    if isinstance(p, TextPart):
        return TextContent(text=p.text)
    if isinstance(p, ImagePart):
        parsed = _data_url(p.image_url.url)
        if parsed is None or not parsed[0]:
            raise RequestError(
                f"{where}.image_url.url must be a data:<mime>;base64,<data> URL: the gateway "
                "passes images to every provider as data and does not fetch URLs; download "
                "the image and send it base64-encoded", param=f"{where}.image_url.url",
            )  # fmt: skip
        return ImageContent(data=parsed[1], mime_type=parsed[0])
    if isinstance(p, AudioPart):
        mime = _AUDIO.get(p.input_audio.format)
        if mime is None:
            raise RequestError(f"{where}.input_audio.format must be 'wav' or 'mp3', got "
                               f"{p.input_audio.format!r}", param=f"{where}.input_audio.format")  # fmt: skip
        return AudioContent(data=p.input_audio.data, mime_type=mime)
    f = p.file
    if f.file_id is not None:
        # Chat file parts are PDFs (https://platform.openai.com/docs/guides/pdf-files).
        return DocumentContent(mime_type="application/pdf", file_id=f.file_id, title=f.filename)
    if f.file_data is None:
        raise RequestError(f"{where}.file needs file_id or file_data", param=f"{where}.file")
    parsed = _data_url(f.file_data)
    mime, data = parsed if parsed is not None and parsed[0] else ("application/pdf", f.file_data)
    return DocumentContent(mime_type=mime, data=data, title=f.filename)


def _attach(m: User, out: list[Message]) -> bool:
    """The user message the encoder adds after a turn's tool messages to carry their
    images and documents (a tool message takes text only): its parts go back to
    their tool results. ``False`` when ``m`` is not one."""
    parts = m.content
    if isinstance(parts, str) or not parts or not isinstance(parts[0], TextPart):
        return False
    results: dict[str, int] = {}
    for k in range(len(out) - 1, -1, -1):
        prev = out[k]
        if not isinstance(prev, ToolResultMessage):
            break
        results[prev.tool_call_id] = k
    if not results:
        return False
    groups: list[tuple[int, list[UserContent]]] = []
    for p in parts:
        head = _ATTACHED.fullmatch(p.text) if isinstance(p, TextPart) else None
        if head is not None and head.group(2) in results:
            groups.append((results[head.group(2)], []))
        elif groups and not isinstance(p, TextPart):
            groups[-1][1].append(_part(p, "tool result attachment"))
        else:
            return False
    for k, blocks in groups:
        prev = out[k]
        assert isinstance(prev, ToolResultMessage)
        kept = tuple(b for b in prev.content if not (isinstance(b, TextContent) and not b.text))
        out[k] = msgspec.structs.replace(prev, content=(*kept, *blocks))
    return True


# --------------------------------------------------------------------------- assistant turns


def _assistant(m: Assistant, where: str, model: str) -> AssistantMessage:
    if m.function_call is not None:
        raise RequestError(f"{where}.function_call is deprecated: send tool_calls",
                           param=f"{where}.function_call")  # fmt: skip
    if m.audio is not None:
        raise RequestError(
            f"{where}.audio refers to audio the provider stored, which no other provider "
            "can read: send the turn's transcript as content", param=f"{where}.audio",
        )  # fmt: skip
    origin: Origin | None = None
    content: list[AssistantContent] = []
    # The thinking a call carries goes back right before that call (an interleaved
    # turn keeps its order); the turn's own entries that no call carries, first.
    per_call = [_call_entries(c) for c in m.tool_calls or ()]
    carried = {e.data for entries in per_call for e in entries}
    leading = [e for e in m.reasoning_details or () if e.data not in carried]
    origin = _thinking(leading, content, origin)
    if not content and not carried:
        # One source, in the Chat decoder's order; the field name is the block's
        # signature (as that decoder records it).
        details = "".join(e.text or "" for e in m.reasoning_details or ()
                          if e.type == "reasoning.text")  # fmt: skip
        for field, value in (("reasoning_content", m.reasoning_content),
                             ("reasoning", m.reasoning), ("reasoning_details", details)):  # fmt: skip
            if value:
                content.append(ThinkingContent(thinking=value, signature=field))
                break
    body = m.content
    if isinstance(body, list):
        body = "".join(p.text if isinstance(p, TextPart) else p.refusal for p in body)
    text = (body or "") + (m.refusal or "")
    if text:
        content.append(TextContent(text=text))
    for j, c in enumerate(m.tool_calls or ()):
        origin = _thinking(per_call[j], content, origin)
        call, found = _call(c, f"{where}.tool_calls[{j}]")
        origin = origin or found
        content.append(call)
    api, provider, mid = (origin.api, origin.provider, origin.model) if origin else (
        API, CLIENT_PROVIDER, model)  # fmt: skip
    # Every block is one of the assistant kinds: the tuple is passed as built.
    return AssistantMessage(content=tuple(content), api=api, provider=provider, model=mid,
                            stop_reason="tool_use" if m.tool_calls else "stop")  # fmt: skip


def _thinking(
    entries: list[Detail], content: list[AssistantContent], origin: Origin | None
) -> Origin | None:
    """Append the thinking blocks sealed in ``entries``; the first origin found."""
    for e in entries:
        found = unseal(e.data or "") if e.format == FORMAT else None
        if found is None:
            continue
        origin = origin or found
        text = "" if found.redacted else (e.text or "")
        content.append(ThinkingContent(thinking=text, signature=found.signature,
                                       redacted=found.redacted))  # fmt: skip
    return origin


def _call_entries(c: ToolCallIn) -> list[Detail]:
    carried = c.extra_content.modelwire if c.extra_content is not None else None
    return (carried.reasoning_details or []) if carried is not None else []


def _call(c: ToolCallIn, where: str) -> tuple[ToolCall, Origin | None]:
    if not c.id:
        raise RequestError(f"{where}.id must not be empty", param=f"{where}.id")
    raw = c.function.arguments
    parsed = arguments(raw, f"{where}.function.arguments")
    carried = c.extra_content.modelwire if c.extra_content is not None else None
    found = unseal(carried.signature) if carried is not None and carried.signature else None
    call = ToolCall(
        id=c.id, name=c.function.name, arguments=parsed,
        raw_arguments=raw if raw.strip() else None,
        signature=found.signature if found is not None else None,
    )  # fmt: skip
    return call, found
