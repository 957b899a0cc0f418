"""Reading a batch file: one request per JSONL line, validated before anything is sent.

Two line formats are accepted:

* modelwire's own: ``{"custom_id", "model": "provider/id", "context": <Context
  JSON> | "prompt": "text", "options": {...}}`` — ``options`` are the keyword
  options of ``mw.stream`` that make sense in a file (``max_tokens``,
  ``temperature``, ``reasoning``, ``tool_choice``, ``parallel_tool_calls``,
  ``extra_body``, ``timeout``, ``headers``, ``session_id``).
* the OpenAI Batch API input format — ``{"custom_id", "method": "POST", "url":
  "/v1/chat/completions" | "/v1/responses", "body": {...}}`` — so existing batch
  files run as they are
  (https://platform.openai.com/docs/api-reference/batch/request-input); a
  ``/v1/responses`` body goes out through the Responses API. ``body.model``
  without a provider prefix means ``openai/<model>``.

Every line becomes a :class:`BatchRequest`, or an :class:`InputProblem` naming
its line number; :func:`read_requests` collects them all so a bad file is
reported in one go.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

import msgspec

from .._apis import api_for_path
from .._call._fallback import Fallback
from ..errors import ConfigurationError, MissingAPIKeyError, ModelwireError
from ..types import (
    AssistantContent,
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserContent,
    UserMessage,
)

__all__ = [
    "BatchRequest",
    "InputProblem",
    "ModelResolver",
    "parse_line",
    "problems_error",
    "read_requests",
]

#: ``"provider/id"`` -> Model; raises ``ConfigurationError`` for an unknown model.
ModelResolver = Callable[[str], "Model | Fallback"]

#: ``options`` keys a native line may carry (the file-friendly ``mw.stream`` options).
OPTION_KEYS = frozenset(
    {
        "max_tokens",
        "temperature",
        "reasoning",
        "tool_choice",
        "parallel_tool_calls",
        "extra_body",
        "timeout",
        "headers",
        "session_id",
    }
)
_OPENAI_URLS = ("/v1/chat/completions", "/v1/responses")
_NATIVE_KEYS = frozenset({"custom_id", "model", "context", "prompt", "options"})
_OPENAI_KEYS = frozenset({"custom_id", "method", "url", "body"})
# Body fields mapped onto modelwire options; the rest travel as extra_body.
_OPENAI_MAPPED = frozenset(
    {
        "model",
        "messages",
        "tools",
        "tool_choice",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "parallel_tool_calls",
        "reasoning_effort",
        "stream",
        "stream_options",
    }
)


class BatchRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One validated line: what to send and where.

    What :func:`~modelwire.batching.load_requests` returns for each valid line, in
    either input format; the runner sends each with ``mw.stream``.
    """

    custom_id: str
    """The line's id, unique in the file; its result line carries it."""
    line: int
    """1-based line number in the input file."""
    model: Model
    """The model; in a local run also a ``mw.Fallback`` given in ``models=`` (which reads
    as its first model). Typed ``Model`` for the Ray wire format, which refuses one."""
    context: Context
    """The conversation to send (a ``prompt`` is one user message)."""
    options: dict[str, Any]
    """Keyword options for ``mw.stream``."""
    estimated_input_tokens: int
    """A rough prompt size (4 characters per token) for rate limits and cost caps."""
    url: str | None = None
    """The endpoint of an OpenAI Batch API line (``/v1/chat/completions``,
    ``/v1/responses``); ``None`` for modelwire's own format."""


class InputProblem(msgspec.Struct, frozen=True):
    """A line that cannot run: its 1-based number and what to fix.

    Listed in the ``ConfigurationError`` of an invalid input, or, with
    ``skip_invalid=True``, returned and counted (``BatchSummary.invalid``) while the
    valid lines run. ``str()`` gives ``line N: message``.
    """

    line: int
    """The 1-based line number in the input."""
    message: str
    """What is wrong with it and what to do."""

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


class _LineError(Exception):
    pass


def _expect(cond: bool, message: str) -> None:
    if not cond:
        raise _LineError(message)


def _text_parts(where: str, content: Any) -> tuple[UserContent, ...]:
    """OpenAI content (a string or a list of parts) as modelwire content blocks."""
    if isinstance(content, str):
        return (TextContent(text=content),)
    _expect(isinstance(content, list), f"{where} must be a string or a list of parts")
    out: list[UserContent] = []
    for i, part in enumerate(content):
        p = f"{where}[{i}]"
        _expect(isinstance(part, dict), f"{p} must be an object")
        kind = part.get("type")
        if kind == "text":
            _expect(isinstance(part.get("text"), str), f"{p}.text must be a string")
            out.append(TextContent(text=part["text"]))
        elif kind == "image_url":
            url: Any = (part.get("image_url") or {}).get("url")
            _expect(isinstance(url, str), f"{p}.image_url.url must be a string")
            # Only inline images: a batch must not make the runner fetch URLs.
            head, sep, data = url.partition(",")
            _expect(
                bool(sep) and head.startswith("data:") and head.endswith(";base64"),
                f"{p}.image_url.url must be a data:<mime>;base64,... URL",
            )
            try:
                base64.b64decode(data, validate=True)
            except ValueError:
                raise _LineError(f"{p}.image_url.url is not valid base64") from None
            out.append(ImageContent(data=data, mime_type=head[5:-7]))
        else:
            raise _LineError(f"{p}.type must be text or image_url, got {kind!r}")
    return tuple(out)


def _joined_text(where: str, content: Any) -> str:
    parts = _text_parts(where, content)
    _expect(all(isinstance(p, TextContent) for p in parts), f"{where} may hold only text")
    return "".join(p.text for p in parts if isinstance(p, TextContent))


def _openai_context(body: Mapping[str, Any], model: Model | Fallback) -> Context:
    """Chat Completions ``messages``/``tools`` as a modelwire Context."""
    messages: Any = body.get("messages")
    _expect(isinstance(messages, list) and bool(messages), "body.messages must be a non-empty list")
    system: list[str] = []
    out: list[Message] = []
    names: dict[str, str] = {}  # tool_call_id -> tool name, for tool results
    for i, m in enumerate(messages):
        where = f"body.messages[{i}]"
        _expect(isinstance(m, dict), f"{where} must be an object")
        role = m.get("role")
        if role in ("system", "developer"):
            system.append(_joined_text(f"{where}.content", m.get("content")))
        elif role == "user":
            c = m.get("content")
            out.append(UserMessage(content=c if isinstance(c, str) else _text_parts(f"{where}.content", c)))  # fmt: skip
        elif role == "assistant":
            blocks: list[AssistantContent] = []
            if m.get("content") is not None:
                blocks.append(TextContent(text=_joined_text(f"{where}.content", m["content"])))
            calls = m.get("tool_calls") or []
            _expect(isinstance(calls, list), f"{where}.tool_calls must be a list")
            for j, call in enumerate(calls):
                cw = f"{where}.tool_calls[{j}]"
                fn: Any = call.get("function") if isinstance(call, dict) else None
                _expect(isinstance(fn, dict), f"{cw}.function must be an object")
                _expect(isinstance(call.get("id"), str), f"{cw}.id must be a string")
                _expect(isinstance(fn.get("name"), str), f"{cw}.function.name must be a string")
                raw = fn.get("arguments", "{}")
                _expect(isinstance(raw, str), f"{cw}.function.arguments must be a JSON string")
                try:
                    args = msgspec.json.decode(raw)
                except msgspec.DecodeError:
                    raise _LineError(f"{cw}.function.arguments is not valid JSON") from None
                _expect(isinstance(args, dict), f"{cw}.function.arguments must be a JSON object")
                names[call["id"]] = fn["name"]
                blocks.append(ToolCall(id=call["id"], name=fn["name"], arguments=args,
                                       raw_arguments=raw))  # fmt: skip
            out.append(AssistantMessage(
                content=tuple(blocks), api=model.api, provider=model.provider, model=model.id,
                stop_reason="tool_use" if calls else "stop",
            ))  # fmt: skip
        elif role == "tool":
            call_id = m.get("tool_call_id")
            _expect(isinstance(call_id, str) and bool(call_id), f"{where}.tool_call_id must be a string")  # fmt: skip
            _expect(call_id in names, f"{where}.tool_call_id {call_id!r} answers no earlier tool call")  # fmt: skip
            out.append(ToolResultMessage(tool_call_id=call_id, tool_name=names[call_id],
                                         content=_text_parts(f"{where}.content", m.get("content"))))  # fmt: skip
        else:
            raise _LineError(f"{where}.role must be system, developer, user, assistant or tool, got {role!r}")  # fmt: skip
    tools: list[ToolDefinition] | None = None
    fn = None
    if body.get("tools") is not None:
        tools = _tool_definitions(body["tools"], nested=True)
    return Context(
        system_prompt="\n\n".join(system) or None,
        messages=tuple(out),
        tools=tuple(tools) if tools is not None else None,
    )


def _tool_definitions(value: Any, *, nested: bool) -> list[ToolDefinition]:
    """``body.tools`` of a Chat line (``nested``: ``{"type": "function", "function":
    {...}}``) or a Responses line (the function's fields beside ``type``)."""
    _expect(isinstance(value, list), "body.tools must be a list")
    tools = []
    shape = '"function": {...}' if nested else '"name": ...'
    for i, t in enumerate(value):
        fn = t.get("function") if nested and isinstance(t, dict) else t
        _expect(isinstance(t, dict) and t.get("type") == "function" and isinstance(fn, dict),
                f"body.tools[{i}] must be {{\"type\": \"function\", {shape}}}")  # fmt: skip
        assert isinstance(fn, dict)  # _expect raised otherwise
        where = f"body.tools[{i}].function.name" if nested else f"body.tools[{i}].name"
        _expect(isinstance(fn.get("name"), str), f"{where} must be a string")
        tools.append(ToolDefinition(
            name=fn["name"], description=fn.get("description") or "",
            parameters=fn.get("parameters") or {"type": "object", "properties": {}},
        ))  # fmt: skip
    return tools


def _openai_options(body: Mapping[str, Any]) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    mt = body.get("max_completion_tokens", body.get("max_tokens"))
    if mt is not None:
        opts["max_tokens"] = mt
    for key in ("temperature", "parallel_tool_calls"):
        if body.get(key) is not None:
            opts[key] = body[key]
    if body.get("reasoning_effort") is not None:
        opts["reasoning"] = body["reasoning_effort"]
    tc = body.get("tool_choice")
    if isinstance(tc, dict):
        name = (tc.get("function") or {}).get("name")
        _expect(isinstance(name, str), "body.tool_choice.function.name must be a string")
        opts["tool_choice"] = {"name": name}
    elif tc is not None:
        opts["tool_choice"] = tc
    extra = {k: v for k, v in body.items() if k not in _OPENAI_MAPPED}
    if extra:
        opts["extra_body"] = extra
    return opts


# Responses body fields mapped onto modelwire options; the rest travel as extra_body
# (https://platform.openai.com/docs/api-reference/responses/create).
_RESPONSES_MAPPED = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "max_output_tokens",
        "temperature",
        "parallel_tool_calls",
        "reasoning",
        "stream",
    }
)


def _responses_parts(where: str, content: Any) -> tuple[UserContent, ...]:
    """Responses content (a string or ``input_text``/``output_text``/``input_image``
    parts) as modelwire content blocks."""
    if isinstance(content, str):
        return (TextContent(text=content),)
    _expect(isinstance(content, list), f"{where} must be a string or a list of parts")
    out: list[UserContent] = []
    for i, part in enumerate(content):
        p = f"{where}[{i}]"
        _expect(isinstance(part, dict), f"{p} must be an object")
        kind = part.get("type")
        if kind in ("input_text", "output_text"):
            _expect(isinstance(part.get("text"), str), f"{p}.text must be a string")
            out.append(TextContent(text=part["text"]))
        elif kind == "input_image":
            url = part.get("image_url")
            _expect(isinstance(url, str), f"{p}.image_url must be a data:<mime>;base64,... URL")
            out.extend(_text_parts(p, [{"type": "image_url", "image_url": {"url": url}}]))
        else:
            raise _LineError(f"{p}.type must be input_text, output_text or input_image, got {kind!r}")  # fmt: skip
    return tuple(out)


def _responses_context(body: Mapping[str, Any], model: Model | Fallback) -> Context:
    """A Responses ``input`` (a string or a list of items), ``instructions`` and
    ``tools`` as a modelwire Context."""
    items: Any = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    _expect(isinstance(items, list) and bool(items), "body.input must be a string or a non-empty list")  # fmt: skip
    instructions = body.get("instructions")
    _expect(instructions is None or isinstance(instructions, str), "body.instructions must be a string")  # fmt: skip
    system: list[str] = [instructions] if instructions else []
    out: list[Message] = []
    names: dict[str, str] = {}
    for i, item in enumerate(items):
        where = f"body.input[{i}]"
        _expect(isinstance(item, dict), f"{where} must be an object")
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            parts = _responses_parts(f"{where}.content", item.get("content"))
            text_only = all(isinstance(p, TextContent) for p in parts)
            if role in ("system", "developer"):
                _expect(text_only, f"{where}.content may hold only text")
                system.append("".join(p.text for p in parts if isinstance(p, TextContent)))
            elif role == "user":
                out.append(UserMessage(content=parts))
            elif role == "assistant":
                _expect(text_only, f"{where}.content may hold only text")
                out.append(AssistantMessage(
                    content=tuple(p for p in parts if isinstance(p, TextContent)),
                    api=model.api, provider=model.provider, model=model.id, stop_reason="stop",
                ))  # fmt: skip
            else:
                raise _LineError(f"{where}.role must be system, developer, user or assistant, got {role!r}")  # fmt: skip
        elif kind == "function_call":
            call_id, fname, raw = item.get("call_id"), item.get("name"), item.get("arguments", "{}")
            _expect(isinstance(call_id, str) and bool(call_id), f"{where}.call_id must be a string")  # fmt: skip
            _expect(isinstance(fname, str), f"{where}.name must be a string")
            _expect(isinstance(raw, str), f"{where}.arguments must be a JSON string")
            try:
                args = msgspec.json.decode(raw)
            except msgspec.DecodeError:
                raise _LineError(f"{where}.arguments is not valid JSON") from None
            _expect(isinstance(args, dict), f"{where}.arguments must be a JSON object")
            names[call_id] = fname
            call = ToolCall(id=call_id, name=fname, arguments=args, raw_arguments=raw)
            out.append(AssistantMessage(content=(call,), api=model.api, provider=model.provider,
                                        model=model.id, stop_reason="tool_use"))  # fmt: skip
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            _expect(call_id in names, f"{where}.call_id {call_id!r} answers no earlier function_call")  # fmt: skip
            output = item.get("output")
            _expect(isinstance(output, str), f"{where}.output must be a string")
            out.append(ToolResultMessage(tool_call_id=call_id, tool_name=names[call_id],
                                         content=(TextContent(text=output),)))  # fmt: skip
        else:
            raise _LineError(f"{where}.type must be message, function_call or function_call_output, got {kind!r}")  # fmt: skip
    tools: list[ToolDefinition] | None = None
    if body.get("tools") is not None:
        tools = _tool_definitions(body["tools"], nested=False)
    return Context(
        system_prompt="\n\n".join(system) or None,
        messages=tuple(out),
        tools=tuple(tools) if tools is not None else None,
    )


def _responses_options(body: Mapping[str, Any]) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    if body.get("max_output_tokens") is not None:
        opts["max_tokens"] = body["max_output_tokens"]
    for key in ("temperature", "parallel_tool_calls"):
        if body.get(key) is not None:
            opts[key] = body[key]
    reasoning = body.get("reasoning")
    if reasoning is not None:
        _expect(isinstance(reasoning, dict), "body.reasoning must be an object")
        if reasoning.get("effort") is not None:
            opts["reasoning"] = reasoning["effort"]
    tc = body.get("tool_choice")
    if isinstance(tc, dict):
        _expect(isinstance(tc.get("name"), str), "body.tool_choice.name must be a string")
        opts["tool_choice"] = {"name": tc["name"]}
    elif tc is not None:
        opts["tool_choice"] = tc
    extra = {k: v for k, v in body.items() if k not in _RESPONSES_MAPPED}
    if extra:
        opts["extra_body"] = extra
    return opts


def _estimate_tokens(context: Context) -> int:
    # 4 characters per token is the usual rule of thumb; only used to pace
    # tokens/min and to bound the cost of requests not yet answered.
    return max(1, len(msgspec.json.encode(context)) // 4)


def parse_line(
    raw: bytes, line: int, resolve: ModelResolver, check: Callable[[BatchRequest], None] | None
) -> BatchRequest:
    """One input line as a request; ``_LineError``/``ModelwireError`` explain a bad one."""
    try:
        obj = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise _LineError(f"invalid JSON ({exc})") from None
    _expect(isinstance(obj, dict), "a line must be a JSON object")
    cid = obj.get("custom_id")
    _expect(isinstance(cid, str) and bool(cid), "custom_id must be a non-empty string")
    if "body" in obj or "url" in obj:
        unknown = set(obj) - _OPENAI_KEYS
        _expect(not unknown, f"unknown keys for an OpenAI Batch line: {', '.join(sorted(unknown))}")  # fmt: skip
        _expect(obj.get("method", "POST") == "POST", "method must be POST")
        url = obj.get("url")
        _expect(url in _OPENAI_URLS,
                "url must be /v1/chat/completions (a Chat Completions body) or /v1/responses "
                f"(a Responses body), got {url!r}")  # fmt: skip
        body = obj.get("body")
        _expect(isinstance(body, dict), "body must be an object")
        name = body.get("model")
        _expect(isinstance(name, str) and bool(name), "body.model must be a string")
        model = resolve(name if "/" in name else f"openai/{name}")
        if url == "/v1/responses":
            # The body is a Responses request: it goes out through the API that
            # serves that endpoint (the registry knows which).
            wire = api_for_path(url)
            assert wire is not None
            if not isinstance(model, Fallback):  # a Fallback's models keep their own APIs
                model = msgspec.structs.replace(model, api=wire)
            context = _responses_context(body, model)
            options = _responses_options(body)
        else:
            context = _openai_context(body, model)
            options = _openai_options(body)
    else:
        unknown = set(obj) - _NATIVE_KEYS
        _expect(not unknown, f"unknown keys: {', '.join(sorted(unknown))} (expected custom_id, model, context or prompt, options)")  # fmt: skip
        name = obj.get("model")
        _expect(isinstance(name, str) and bool(name), 'model must be a "provider/id" string')
        model = resolve(name)
        if "context" in obj:
            _expect("prompt" not in obj, "give either context or prompt, not both")
            try:
                context = msgspec.convert(obj["context"], Context)
            except msgspec.ValidationError as exc:
                raise _LineError(f"invalid context: {exc}".replace("`$", "`context")) from None
        else:
            _expect(isinstance(obj.get("prompt"), str), "give a context (modelwire Context JSON) or a prompt string")  # fmt: skip
            context = Context(messages=(UserMessage(content=obj["prompt"]),))
        options = obj.get("options") or {}
        _expect(isinstance(options, dict), "options must be an object")
        bad = set(options) - OPTION_KEYS
        _expect(not bad, f"unknown options: {', '.join(sorted(bad))} (allowed: {', '.join(sorted(OPTION_KEYS))})")  # fmt: skip
    req = BatchRequest(custom_id=cid, line=line, model=cast("Model", model), context=context,
                       options=dict(options), estimated_input_tokens=_estimate_tokens(context),
                       url=obj.get("url") if isinstance(obj.get("url"), str) else None)  # fmt: skip
    if check is not None:
        check(req)
    return req


def read_requests(
    lines: Iterable[bytes],
    resolve: ModelResolver,
    check: Callable[[BatchRequest], None] | None = None,
) -> tuple[list[BatchRequest], list[InputProblem]]:
    """Every line parsed: the good requests and every problem, with line numbers.

    Blank lines are skipped; a ``custom_id`` seen before is a problem on the
    later line (naming the first). ``check`` validates a request further (the
    runner builds the HTTP request once, so bad options fail here, not mid-run).
    """
    requests: list[BatchRequest] = []
    problems: list[InputProblem] = []
    first: dict[str, int] = {}
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            req = parse_line(raw, n, resolve, check)
        except MissingAPIKeyError:
            # A missing key is the run's problem, not the line's: said once, at once,
            # not repeated for every line of that provider.
            raise
        except (_LineError, ModelwireError) as exc:
            problems.append(InputProblem(n, str(exc)))
            continue
        except (ValueError, TypeError) as exc:  # a value type refused its field
            problems.append(InputProblem(n, str(exc)))
            continue
        if req.custom_id in first:
            problems.append(InputProblem(n, f"duplicate custom_id {req.custom_id!r} (first on line {first[req.custom_id]})"))  # fmt: skip
            continue
        first[req.custom_id] = n
        requests.append(req)
    return requests, problems


def problems_error(problems: list[InputProblem], path: str, limit: int = 20) -> ConfigurationError:
    """One error listing the bad lines (the first ``limit`` of them)."""
    shown = "; ".join(str(p) for p in problems[:limit])
    more = f"; … and {len(problems) - limit} more" if len(problems) > limit else ""
    return ConfigurationError(
        f"{path}: {len(problems)} invalid line(s), nothing was sent: {shown}{more} "
        "(fix them, or pass --skip-invalid / skip_invalid=True to run the valid lines)"
    )
