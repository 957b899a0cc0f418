"""A Responses request body → :class:`~modelwire.gateway._frontend.GatewayRequest`.

The inverse of modelwire's own encoder for the API
(:mod:`modelwire._apis.openai_responses._encode`), over the request reference
(https://platform.openai.com/docs/api-reference/responses/create): ``instructions``
and leading ``system``/``developer`` messages are the system prompt, ``input`` items
are the conversation (consecutive output items — ``reasoning``, assistant
``message``, ``function_call``, provider-run items — are one assistant turn), function
tools are the tools. The field table is in the package docstring.

The top level is decoded as ``{name: raw JSON}`` (one msgspec pass that keeps each
field's bytes), so every known field is decoded by a typed decoder and every other
one is passed through untouched; a reasoning item's signature is its JSON exactly as
the client sent it, so a Responses backend gets it back byte for byte.
"""

from __future__ import annotations

import mimetypes
import re
from collections.abc import Mapping
from typing import Annotated, Any

import msgspec

from ...errors import MalformedChunkError
from ...types import (
    AssistantContent,
    AssistantMessage,
    AudioContent,
    Citation,
    Context,
    DocumentContent,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from .._frontend import GatewayRequest, RequestError
from .._origin import CLIENT_PROVIDER, Origin, unseal
from ._items import API, is_generated

__all__ = ["parse"]

_LEVELS = frozenset({"minimal", "low", "medium", "high", "xhigh"})
_fields = msgspec.json.Decoder(dict[str, msgspec.Raw])
_input = msgspec.json.Decoder(str | list[msgspec.Raw])
_any = msgspec.json.Decoder()
_encode = msgspec.json.Encoder().encode

#: Fields the Response object repeats from the request (API reference, "The response
#: object"); kept in ``GatewayRequest.echo`` as the client sent them.
_ECHOED = frozenset({
    "instructions", "metadata", "max_output_tokens", "parallel_tool_calls", "temperature",
    "tool_choice", "tools", "top_p", "text", "reasoning", "truncation", "user",
    "service_tier", "store", "max_tool_calls", "top_logprobs", "prompt_cache_key",
    "safety_identifier", "background",
})  # fmt: skip

#: Fields that change nothing a stateless gateway does (documented as ignored).
_IGNORED = frozenset({"store", "user", "stream_options", "safety_identifier", "metadata"})

#: Fields refused whatever the backend: they need state the gateway does not keep.
_REFUSED = {
    "previous_response_id": "the gateway keeps no responses: send the whole conversation "
    "in input (with store=false and include=['reasoning.encrypted_content'])",
    "conversation": "the gateway keeps no conversations: send the whole conversation in input",
}

_SERVER_ITEM_TYPES = frozenset({
    "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call",
    "mcp_call", "mcp_list_tools", "tool_search_call", "tool_search_output", "compaction",
})  # fmt: skip

_AUDIO_MIME = {"wav": "audio/wav", "mp3": "audio/mpeg"}
_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)", re.S)
# The ``filename`` modelwire's encoder makes up for an untitled document
# (``openai_chat._input.filename``): read back as no title.
_MADE_UP_NAME = re.compile(r"document\.(pdf|txt|md|csv|html|json|bin)")
_MSGSPEC_PATH = re.compile(r"^(.*) - at `\$(.*)`$", re.S)
_EXPECTED = re.compile(r"^Expected `(.+?)`, got `(.+?)`$")
_NAMES = {"str": "a string", "int": "an integer", "float": "a number", "bool": "a boolean",
          "object": "an object", "array": "an array", "null": "null"}  # fmt: skip


def _fail(path: str, problem: str) -> RequestError:
    return RequestError(f"{path} {problem}", param=path)


def _decode(raw: bytes, decoder: msgspec.json.Decoder[Any], path: str) -> Any:
    """Decode one field, a type error naming its path (``input[2].content``)."""
    try:
        return decoder.decode(raw)
    except msgspec.ValidationError as exc:
        text = str(exc)
        m = _MSGSPEC_PATH.match(text)
        where, what = (path + m.group(2), m.group(1)) if m else (path, text)
        e = _EXPECTED.match(what)
        if e:
            want = " or ".join(_NAMES.get(p.strip(), p.strip()) for p in e.group(1).split("|"))
            raise _fail(where, f"must be {want} (got {e.group(2)})") from None
        raise _fail(where, what) from None
    except msgspec.DecodeError as exc:  # pragma: no cover - the body was valid JSON
        raise _fail(path, f"is not valid JSON ({exc})") from None


def _str(obj: Mapping[str, Any], key: str, path: str, *, required: bool = True) -> str | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise _fail(f"{path}.{key}", "is missing")
        return None
    if not isinstance(value, str):
        raise _fail(f"{path}.{key}", f"must be a string (got {_kind(value)})")
    return value


def _obj(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, f"must be an object (got {_kind(value)})")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(path, f"must be an array (got {_kind(value)})")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    return {str: "str", int: "int", float: "float", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )


# --------------------------------------------------------------------------- the body


def parse(body: bytes, headers: Mapping[str, str]) -> GatewayRequest:
    """Decode a ``POST /v1/responses`` body; :class:`RequestError` (400, with the
    field path in ``param``) when it is wrong."""
    try:
        fields = _fields.decode(body)
    except msgspec.ValidationError:
        raise RequestError("the request body must be a JSON object") from None
    except msgspec.DecodeError as exc:
        raise RequestError(f"the request body is not valid JSON ({exc})") from None
    for name, why in _REFUSED.items():
        if name in fields and bytes(fields[name]) != b"null":
            raise _fail(name, f"is not supported by this gateway: {why}")
    raw_model = fields.get("model")
    if raw_model is None:
        raise _fail("model", "is missing")
    model = _decode(raw_model, _STR, "model")
    if not model:
        raise _fail("model", "must not be empty")
    raw_input = fields.get("input")
    if raw_input is None:
        raise _fail("input", "is missing (the gateway is stateless: send the conversation)")
    options: dict[str, Any] = {}
    passthrough: dict[str, Any] = {}
    echo: dict[str, Any] = {}
    stream = False
    system: list[str] = []
    tools: tuple[ToolDefinition, ...] | None = None
    for name, raw in fields.items():
        if name in ("model", "input"):
            continue
        if bytes(raw) == b"null":
            continue  # an explicit null is the field's default
        if name in _ECHOED:
            echo[name] = _any.decode(raw)
        if name == "stream":
            stream = _decode(raw, _BOOL, name)
        elif name == "instructions":
            text = _decode(raw, _STR_OR_LIST, name)
            if not isinstance(text, str):
                raise _fail(
                    name, "must be a string (input items as instructions are not supported)"
                )
            if text:
                system.append(text)
        elif name == "max_output_tokens":
            options["max_tokens"] = _decode(raw, _COUNT, name)
        elif name == "temperature":
            options["temperature"] = _decode(raw, _FLOAT, name)
        elif name == "parallel_tool_calls":
            options["parallel_tool_calls"] = _decode(raw, _BOOL, name)
        elif name == "tools":
            tools, extra = _tools(_decode(raw, _LIST, name))
            if extra is not None:
                raise _fail(
                    f"tools[{extra}]",
                    "is not a function tool: the gateway translates function tools only "
                    "(built-in tools such as web_search are not supported)",
                )
        elif name == "tool_choice":
            options["tool_choice"] = _tool_choice(_any.decode(raw))
        elif name == "reasoning":
            level = _reasoning(_decode(raw, _DICT, name))
            if level is not None:
                options["reasoning"] = level
        elif name == "text":
            text_obj = _decode(raw, _DICT, name)
            schema, other = _text(text_obj)
            if schema is not None:
                options["output"] = schema
            if other:
                passthrough[name] = text_obj
        elif name == "include":
            include = _decode(raw, _STR_LIST, name)
            if any(v != "reasoning.encrypted_content" for v in include):
                passthrough[name] = include
        elif name == "prompt_cache_key":
            options["session_id"] = _decode(raw, _STR, name)
        elif name == "background":
            if _decode(raw, _BOOL, name):
                raise _fail(name, "is not supported by this gateway: it answers in the request")
        elif name == "store":
            _decode(raw, _BOOL, name)  # the gateway stores nothing (ignored)
        elif name == "metadata":
            _decode(raw, _DICT, name)
        elif name in _IGNORED:
            pass
        else:
            passthrough[name] = _any.decode(raw)
    _check_choice(options.get("tool_choice"), tools)
    value = _decode(raw_input, _input, "input")
    messages, leading = _conversation(value, model)
    system.extend(leading)
    context = Context(
        system_prompt="\n\n".join(system) if system else None,
        messages=tuple(messages),
        tools=tools,
    )
    return GatewayRequest(
        model=model, context=context, options=options, stream=stream,
        passthrough=passthrough, echo=echo,
    )  # fmt: skip


_STR = msgspec.json.Decoder(str)
_STR_OR_LIST = msgspec.json.Decoder(str | list[Any])
_BOOL = msgspec.json.Decoder(bool)
_COUNT = msgspec.json.Decoder(Annotated[int, msgspec.Meta(ge=1)])
_FLOAT = msgspec.json.Decoder(Annotated[float, msgspec.Meta(ge=0)])
_LIST = msgspec.json.Decoder(list[Any])
_DICT = msgspec.json.Decoder(dict[str, Any])
_STR_LIST = msgspec.json.Decoder(list[str])


def _tools(values: list[Any]) -> tuple[tuple[ToolDefinition, ...], int | None]:
    """The function tools, and the index of the first tool of another type."""
    out: list[ToolDefinition] = []
    for i, value in enumerate(values):
        path = f"tools[{i}]"
        tool = _obj(value, path)
        if tool.get("type") != "function":
            return tuple(out), i
        name = _str(tool, "name", path)
        assert name is not None
        description = _str(tool, "description", path, required=False) or ""
        params = tool.get("parameters")
        if params is None:
            params = {"type": "object", "properties": {}}
        parameters = _obj(params, f"{path}.parameters")
        out.append(ToolDefinition(name=name, description=description, parameters=parameters))
    return tuple(out), None


def _tool_choice(value: Any) -> str | dict[str, Any]:
    if isinstance(value, str):
        if value not in ("auto", "none", "required"):
            raise _fail(
                "tool_choice", f"must be auto, none, required or a function (got {value!r})"
            )
        return value
    choice = _obj(value, "tool_choice")
    if choice.get("type") != "function":
        raise _fail(
            "tool_choice.type",
            f"{choice.get('type')!r} is not supported by this gateway: choose auto, none, "
            "required or {'type': 'function', 'name': ...}",
        )
    name = _str(choice, "name", "tool_choice")
    return {"name": name}


def _check_choice(
    choice: str | dict[str, Any] | None, tools: tuple[ToolDefinition, ...] | None
) -> None:
    """A choice no answer could satisfy is refused here, naming the field (modelwire
    would refuse it later, as a configuration error)."""
    if choice is None or choice in ("auto", "none"):
        return
    names = [t.name for t in tools or ()]
    if not names:
        raise _fail("tool_choice", f"{choice!r} needs tools, but the request declares none")
    if isinstance(choice, dict) and choice["name"] not in names:
        raise _fail("tool_choice.name", f"{choice['name']!r} is not a declared tool")


def _reasoning(value: dict[str, Any]) -> str | None:
    effort = value.get("effort")
    if effort is None or effort == "none":
        # "none": no reasoning (the default of a model without a level given).
        return None
    if effort not in _LEVELS:
        raise _fail(
            "reasoning.effort",
            f"must be none, minimal, low, medium, high or xhigh (got {effort!r})",
        )
    # ``summary`` / ``generate_summary``: the backend's own setting (ignored).
    return str(effort)


def _text(value: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
    """``text.format``'s JSON schema (structured output), and whether anything
    else is asked (passed through: ``verbosity``, ``json_object``)."""
    other = any(k != "format" for k in value)
    fmt = value.get("format")
    if fmt is None:
        return None, other
    fmt = _obj(fmt, "text.format")
    kind = fmt.get("type")
    if kind == "text":
        return None, other
    if kind == "json_schema":
        schema = _obj(fmt.get("schema"), "text.format.schema")
        return schema, other
    if kind == "json_object":
        return None, True
    raise _fail("text.format.type", f"must be text, json_schema or json_object (got {kind!r})")


# --------------------------------------------------------------------------- input items


class _Turn:
    """The assistant turn being collected from consecutive output items."""

    __slots__ = ("blocks", "origin")

    def __init__(self) -> None:
        self.blocks: list[AssistantContent] = []
        self.origin: Origin | None = None


def _conversation(value: str | list[msgspec.Raw], model: str) -> tuple[list[Message], list[str]]:
    """The messages of ``input``, and the system text of its leading
    ``system``/``developer`` messages."""
    if isinstance(value, str):
        return [UserMessage(content=value)], []
    messages: list[Message] = []
    leading: list[str] = []
    turn: _Turn | None = None
    names: dict[str, str] = {}  # call_id → tool name, for the outputs that answer them

    def close() -> None:
        nonlocal turn
        if turn is not None and turn.blocks:
            messages.append(_assistant(turn, model))
        turn = None

    for i, raw in enumerate(value):
        path = f"input[{i}]"
        item = _obj(_any.decode(raw), path)
        kind = item.get("type")
        if kind is None and "role" in item:
            kind = "message"
        if not isinstance(kind, str):
            raise _fail(f"{path}.type", "is missing" if kind is None else "must be a string")
        if kind == "message":
            role = _str(item, "role", path)
            if role in ("system", "developer"):
                if messages or turn is not None:
                    raise _fail(
                        f"{path}.role",
                        f"{role!r} after the conversation started is not supported: put "
                        "system text in instructions or in the first input items",
                    )
                leading.append(_plain_text(item.get("content"), f"{path}.content"))
                continue
            if role == "user":
                close()
                messages.append(UserMessage(content=_user_content(item.get("content"), path)))
                continue
            if role != "assistant":
                raise _fail(
                    f"{path}.role", f"must be user, assistant, system or developer (got {role!r})"
                )
            turn = _join(turn, close, _text_item(item, path))
        elif kind == "reasoning":
            turn = _join(turn, close, _reasoning_item(item, bytes(raw), path))
        elif kind == "function_call":
            call, origin = _call_item(item, path)
            names[call.id] = call.name
            turn = _join(turn, close, (call, origin))
        elif kind == "function_call_output":
            close()
            messages.append(_tool_output(item, path, names))
        elif kind in _SERVER_ITEM_TYPES:
            # A provider-run item the gateway streamed from a Responses backend: its
            # blocks, as modelwire's decoder makes them (replayed as received).
            from ..._apis.openai_responses._server import item_blocks

            try:
                blocks = item_blocks(bytes(raw), kind, "input item")
            except MalformedChunkError as exc:
                raise _fail(
                    path, str(exc).replace("malformed input item event: item.", "")
                ) from None
            for b in blocks:
                turn = _join(turn, close, (b, None))
        elif kind == "item_reference":
            raise _fail(
                path, "is an item_reference: the gateway keeps no items; send the item itself"
            )
        else:
            raise _fail(
                f"{path}.type",
                f"{kind!r} is not supported by this gateway (message, reasoning, function_call, "
                "function_call_output and provider-run tool items are)",
            )
    close()
    return messages, leading


def _join(turn: _Turn | None, close: Any, part: tuple[AssistantContent, Origin | None]) -> _Turn:
    block, origin = part
    if (
        turn is not None
        and origin is not None
        and turn.origin is not None
        and origin != turn.origin
    ):
        # Another origin's sealed item: a turn of its own.
        close()
        turn = None
    if turn is None:
        turn = _Turn()
    if origin is not None and turn.origin is None:
        turn.origin = origin
    turn.blocks.append(block)
    return turn


def _assistant(turn: _Turn, model: str) -> AssistantMessage:
    origin = turn.origin
    calls = any(isinstance(b, ToolCall) for b in turn.blocks)
    if origin is None:
        api, provider, model_id = API, CLIENT_PROVIDER, model
    else:
        api, provider, model_id = origin.api, origin.provider, origin.model
    return AssistantMessage(
        content=tuple(turn.blocks), api=api, provider=provider, model=model_id,
        stop_reason="tool_use" if calls else "stop",
    )  # fmt: skip


def _sealed(value: str | None) -> Origin | None:
    return unseal(value) if value else None


def _text_signature(item_id: str | None, phase: str | None) -> str | None:
    # The decoder's rule (``openai_responses._decode``): the id, or {"id", "phase"}.
    if not item_id:
        return None
    if phase is None:
        return item_id
    return _encode({"id": item_id, "phase": phase}).decode()


def _text_item(item: dict[str, Any], path: str) -> tuple[TextContent, Origin | None]:
    content = item.get("content")
    item_id = _str(item, "id", path, required=False)
    origin = _sealed(item_id)
    citations: tuple[Citation, ...] = ()
    if isinstance(content, str):
        text = content
    else:
        parts = _list(content, f"{path}.content")
        texts: list[str] = []
        cites: list[Citation] = []
        for j, part in enumerate(parts):
            ppath = f"{path}.content[{j}]"
            p = _obj(part, ppath)
            ptype = p.get("type")
            if ptype in ("output_text", "input_text"):
                texts.append(_str(p, "text", ppath) or "")
                notes = p.get("annotations")
                if notes is not None:
                    for k, note in enumerate(_list(notes, f"{ppath}.annotations")):
                        cites.append(_citation(_obj(note, f"{ppath}.annotations[{k}]")))
            elif ptype == "refusal":
                texts.append(_str(p, "refusal", ppath) or "")
            else:
                raise _fail(f"{ppath}.type", f"must be output_text or refusal (got {ptype!r})")
        text, citations = "".join(texts), tuple(cites)
    if origin is not None:
        signature = origin.signature
    elif item_id is None or is_generated(item_id):
        signature = None
    else:
        signature = _text_signature(item_id, _str(item, "phase", path, required=False))
    return TextContent(text=text, signature=signature, citations=citations), origin


def _citation(note: dict[str, Any]) -> Citation:
    from ..._apis.openai_responses._server import citation

    return citation(note, _encode(note).decode())


def _reasoning_item(
    item: dict[str, Any], raw: bytes, path: str
) -> tuple[ThinkingContent, Origin | None]:
    texts: list[str] = []
    for key in ("summary", "content"):
        parts = item.get(key)
        if parts is None:
            continue
        for j, part in enumerate(_list(parts, f"{path}.{key}")):
            p = _obj(part, f"{path}.{key}[{j}]")
            texts.append(_str(p, "text", f"{path}.{key}[{j}]") or "")
    thinking = "\n\n".join(t for t in texts if t)
    origin = _sealed(_str(item, "encrypted_content", path, required=False))
    if origin is not None:
        return (
            ThinkingContent(
                thinking=thinking, signature=origin.signature, redacted=origin.redacted
            ),
            origin,
        )
    item_id = _str(item, "id", path, required=False)
    if item_id is not None and is_generated(item_id):
        # A reasoning item the gateway made for a backend's thinking without a
        # signature: its text only.
        return ThinkingContent(thinking=thinking), None
    # The item itself, as the client sent it: what a Responses backend replays.
    return ThinkingContent(thinking=thinking, signature=raw.decode()), None


def _call_item(item: dict[str, Any], path: str) -> tuple[ToolCall, Origin | None]:
    call_id = _str(item, "call_id", path)
    name = _str(item, "name", path)
    arguments = _str(item, "arguments", path)
    assert call_id is not None and name is not None and arguments is not None
    item_id = _str(item, "id", path, required=False)
    origin = _sealed(item_id)
    if origin is not None:
        signature = origin.signature
    elif item_id is None or is_generated(item_id):
        signature = None
    else:
        signature = item_id
    try:
        args = msgspec.json.decode(arguments) if arguments.strip() else {}
    except msgspec.DecodeError:
        args = {}
    if not isinstance(args, dict):
        args = {}  # kept in raw_arguments, as the decoder keeps them
    call = ToolCall(
        id=call_id, name=name, arguments=args, raw_arguments=arguments, signature=signature
    )
    return call, origin


def _tool_output(item: dict[str, Any], path: str, names: dict[str, str]) -> ToolResultMessage:
    call_id = _str(item, "call_id", path)
    assert call_id is not None
    name = names.get(call_id)
    if name is None:
        raise _fail(
            f"{path}.call_id",
            f"{call_id!r} answers no function_call earlier in input: the gateway keeps no "
            "responses, so send the call before its output",
        )
    output = item.get("output")
    content: tuple[UserContent, ...]
    if isinstance(output, str):
        content = (TextContent(text=output),)
    else:
        parts = _list(output, f"{path}.output")
        content = tuple(_part(p, f"{path}.output[{j}]", audio=False) for j, p in enumerate(parts))
    return ToolResultMessage(tool_call_id=call_id, tool_name=name, content=content)


def _plain_text(content: Any, path: str) -> str:
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for j, part in enumerate(_list(content, path)):
        p = _obj(part, f"{path}[{j}]")
        if p.get("type") not in ("input_text", "output_text", "text"):
            raise _fail(f"{path}[{j}].type", "must be input_text in a system or developer message")
        texts.append(_str(p, "text", f"{path}[{j}]") or "")
    return "".join(texts)


def _user_content(content: Any, path: str) -> str | tuple[UserContent, ...]:
    if content is None:
        raise _fail(f"{path}.content", "is missing")
    if isinstance(content, str):
        return content
    parts = _list(content, f"{path}.content")
    blocks = tuple(_part(p, f"{path}.content[{j}]") for j, p in enumerate(parts))
    if len(blocks) == 1 and isinstance(blocks[0], TextContent):
        return blocks[0].text  # one text part reads as the plain string
    return blocks


def _part(value: Any, path: str, *, audio: bool = True) -> UserContent:
    """One input content part (API reference, "Input item list")."""
    p = _obj(value, path)
    kind = p.get("type")
    if kind == "input_text":
        text = _str(p, "text", path)
        assert text is not None
        return TextContent(text=text)
    if kind == "input_image":
        if p.get("file_id") is not None:
            raise _fail(f"{path}.file_id", "is not supported: send the image as a data: URL")
        url = _str(p, "image_url", path)
        assert url is not None
        m = _DATA_URL.fullmatch(url)
        if m is None:
            raise _fail(
                f"{path}.image_url",
                "must be a data: URL (data:image/png;base64,...): the gateway sends images "
                "to every backend as data; download the image and send its bytes",
            )
        return ImageContent(data=m.group(2), mime_type=m.group(1))
    if kind == "input_file":
        return _file(p, path)
    if kind == "input_audio" and audio:
        spec = _obj(p.get("input_audio"), f"{path}.input_audio")
        data = _str(spec, "data", f"{path}.input_audio")
        fmt = _str(spec, "format", f"{path}.input_audio")
        mime = _AUDIO_MIME.get(fmt or "")
        if mime is None:
            raise _fail(f"{path}.input_audio.format", f"must be wav or mp3 (got {fmt!r})")
        assert data is not None
        return AudioContent(data=data, mime_type=mime)
    want = "input_text, input_image or input_file" + (" or input_audio" if audio else "")
    raise _fail(f"{path}.type", f"must be {want} (got {kind!r})")


def _file(p: dict[str, Any], path: str) -> DocumentContent:
    name = _str(p, "filename", path, required=False)
    title = None if name is None or _MADE_UP_NAME.fullmatch(name) else name
    file_id = _str(p, "file_id", path, required=False)
    if file_id is not None:
        return DocumentContent(mime_type=_guess(name), file_id=file_id, title=title)
    url = _str(p, "file_url", path, required=False)
    if url is not None:
        return DocumentContent(mime_type=_guess(name or url), url=url, title=title)
    data = _str(p, "file_data", path, required=False)
    if data is None:
        raise _fail(path, "needs one of file_id, file_url or file_data")
    m = _DATA_URL.fullmatch(data)
    if m is None:
        raise _fail(f"{path}.file_data", "must be a data: URL (data:application/pdf;base64,...)")
    return DocumentContent(mime_type=m.group(1), data=m.group(2), title=title)


def _guess(name: str | None) -> str:
    """A document's MIME type from its name; PDF (what ``input_file`` takes) when unknown."""
    if name:
        guessed, _ = mimetypes.guess_type(name.split("?", 1)[0])
        if guessed:
            return guessed
    return "application/pdf"
