"""A Responses request body → :class:`~modelwire.gateway._frontend.GatewayRequest`.

The inverse of modelwire's own encoder for the API
(:mod:`modelwire._apis.openai_responses`), over the request reference
(https://platform.openai.com/docs/api-reference/responses/create); the field table is
in the package docstring, the ``input`` items are :mod:`._input`'s.

The top level is decoded as ``{name: raw JSON}`` (one msgspec pass that keeps each
field's bytes), so every known field is decoded by a typed decoder and every other
one is passed through untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import msgspec

from ...types import Context, ServerTool, ToolDefinition
from .._server.fields import Tokens, body_fields
from .._server.fields import schema as _schema
from .._server.reply import text_of
from .._server.request import GatewayRequest
from ._parse_checks import as_list as _list
from ._parse_checks import as_object as _obj
from ._parse_checks import decode as _decode
from ._parse_checks import fail as _fail
from ._parse_checks import string as _str
from ._parse_input import conversation as _conversation
from .spec import API_NAME

__all__ = ["parse", "tool_results"]


def tool_results(body: object) -> list[str]:
    """The ``output`` of every ``function_call_output`` input item."""
    if not isinstance(body, dict):
        return []
    return [text_of(i.get("output")) for i in body.get("input", [])
            if isinstance(i, dict) and i.get("type") == "function_call_output"]  # fmt: skip


_input = msgspec.json.Decoder(str | list[msgspec.Raw])
_any = msgspec.json.Decoder()
_LEVELS = frozenset({"minimal", "low", "medium", "high", "xhigh"})

#: Fields the Response object repeats from the request (API reference, "The response
#: object"); kept in ``GatewayRequest.echo`` as the client sent them.
_ECHOED = frozenset({
    "instructions", "metadata", "max_output_tokens", "parallel_tool_calls", "temperature",
    "tool_choice", "tools", "top_p", "text", "reasoning", "truncation", "user",
    "service_tier", "store", "max_tool_calls", "top_logprobs", "prompt_cache_key",
    "safety_identifier", "background",
})  # fmt: skip

#: Fields refused whatever the backend: they need state the gateway does not keep.
_REFUSED = {
    "previous_response_id": "the gateway keeps no responses: send the whole conversation "
    "in input (with store=false and include=['reasoning.encrypted_content'])",
    "conversation": "the gateway keeps no conversations: send the whole conversation in input",
}

# --------------------------------------------------------------------------- the body


def parse(body: bytes, headers: Mapping[str, str]) -> GatewayRequest:
    """Decode a ``POST /v1/responses`` body; :class:`RequestError` (400, with the
    field path in ``param``) when it is wrong."""
    fields = body_fields(body)
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
    namespaces: dict[str, str] = {}
    server: list[tuple[str, ServerTool]] = []
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
            tools, namespaces = _tools(_list(echo[name], name), server)
        elif name == "tool_choice":
            options["tool_choice"] = _tool_choice(echo[name])
        elif name == "reasoning":
            level = _reasoning(_obj(echo[name], name))
            if level is not None:
                options["reasoning"] = level
        elif name == "text":
            text_obj = _obj(echo[name], name)
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
            _obj(echo[name], name)
        elif name in ("user", "safety_identifier"):
            _decode(raw, _STR, name)  # ignored (user is echoed)
        elif name == "client_metadata":
            # Codex CLI's tags of its own session, like metadata: nothing a model reads.
            _decode(raw, _DICT, name)
        elif name == "stream_options":
            _decode(raw, _DICT, name)  # include_obfuscation: the gateway sends none
        else:
            passthrough[name] = _any.decode(raw)
    _check_choice(options.get("tool_choice"), tools)
    value = _decode(raw_input, _input, "input")
    messages, leading = _conversation(value, model)
    if not messages:
        raise _fail("input", "holds no message: send at least one user message")
    system.extend(leading)
    context = Context(
        system_prompt="\n\n".join(system) if system else None,
        messages=tuple(messages),
        tools=tools,
    )
    return GatewayRequest(
        model=model, context=context, options=options, stream=stream,
        passthrough=passthrough, echo=echo, namespaces=namespaces, server_tools=tuple(server),
        reasoning_field="reasoning.effort" if "reasoning" in options else None,
    )  # fmt: skip


_STR = msgspec.json.Decoder(str)
_STR_OR_LIST = msgspec.json.Decoder(str | list[Any])
_BOOL = msgspec.json.Decoder(bool)
_COUNT = msgspec.json.Decoder(Tokens)
_FLOAT = msgspec.json.Decoder(Annotated[float, msgspec.Meta(ge=0)])
_DICT = msgspec.json.Decoder(dict[str, Any])
_STR_LIST = msgspec.json.Decoder(list[str])


#: The provider-run tool types the gateway passes on, by modelwire's neutral name.
_SERVER_TOOLS = {
    "web_search": "web_search",
    "web_search_preview": "web_search",
    "code_interpreter": "code_execution",
}


def _tools(
    values: list[Any], server: list[tuple[str, ServerTool]]
) -> tuple[tuple[ToolDefinition, ...], dict[str, str]]:
    """The function tools, those of ``namespace`` tools flattened into them, and the
    namespace of each flattened one by its name; provider-run tools (web search, code
    interpreter) go to ``server``, each kept as the client wrote it.

    A ``namespace`` tool groups function tools under a name (Codex CLI sends its MCP
    servers' tools so); a call of one of them is a ``function_call`` item with the
    tool's own ``name`` and the group's ``namespace``
    (https://platform.openai.com/docs/api-reference/responses/create#responses-create-tools).
    A backend of any API has no groups: it gets each tool under its own name, so two
    tools of one name are refused, and its calls go back with their namespace."""
    out: list[ToolDefinition] = []
    namespaces: dict[str, str] = {}
    where: dict[str, str] = {}
    for i, value in enumerate(values):
        path = f"tools[{i}]"
        tool = _obj(value, path)
        kind = tool.get("type")
        if kind == "namespace":
            group = _str(tool, "name", path)
            assert group is not None
            inner = _list(tool.get("tools"), f"{path}.tools")
            for j, member in enumerate(inner):
                at = f"{path}.tools[{j}]"
                if _obj(member, at).get("type") != "function":
                    raise _fail(f"{at}.type", f"{member.get('type')!r} is not supported by this "
                                "gateway in a namespace: it translates function tools only")  # fmt: skip
                out.append(_function(member, at, where))
                namespaces[out[-1].name] = group
            continue
        if kind in _SERVER_TOOLS:
            name = _SERVER_TOOLS[kind]
            if any(t.name == name for _, t in server):
                raise _fail(f"{path}.type", f"declares a second {name} tool")
            server.append((f"{path}.type", ServerTool(name, options=tool, api=API_NAME)))
            continue
        if kind != "function":
            raise _fail(
                f"{path}.type",
                f"{kind!r} is not supported by this gateway: it translates function tools "
                "(and namespace groups of them) and passes on web_search and "
                "code_interpreter; leave it out",
            )
        out.append(_function(tool, path, where))
    return tuple(out), namespaces


def _function(tool: dict[str, Any], path: str, where: dict[str, str]) -> ToolDefinition:
    name = _str(tool, "name", path)
    assert name is not None
    if name in where:
        raise _fail(f"{path}.name", f"{name!r} is also the name of {where[name]}: a backend "
                    "tells tools apart by their name only")  # fmt: skip
    where[name] = path
    description = _str(tool, "description", path, required=False) or ""
    params = tool.get("parameters")
    if params is None:
        params = {"type": "object", "properties": {}}
    parameters = _obj(params, f"{path}.parameters")
    _schema(parameters, f"{path}.parameters")
    return ToolDefinition(name=name, description=description, parameters=parameters)


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
