"""The gateway's OpenAI Responses front-end, sans-IO (no app, no socket).

* parse: contexts encoded by modelwire's own Responses encoder parse back to the same
  context; the official SDK's request bodies (captured through an ``httpx2``
  MockTransport, so nothing leaves the process) parse to what they ask; bad requests
  are 400s naming the field path.
* render: scripted replies rendered in the bytes of every wire API, replayed into
  modelwire's events, fed to the renderer, and read back two ways — modelwire's own
  Responses decoder (same content, ids, raw arguments, usage, stop reason) and the
  official SDK (every event validated by its pydantic models, and its stream
  accumulator's final Response); the non-streamed body validated as the SDK's
  ``Response``.
* round trip: the SDK's output items sent back as the next request's input carry the
  backend's signatures back (sealed or the provider's own).
* errors: every modelwire error kind → the OpenAI status, type and code.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import msgspec
import openai
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.responses import Response, ResponseStreamEvent

import modelwire as mw
from modelwire._apis._server.origin import CLIENT_PROVIDER, adopt, unseal
from modelwire._apis.openai_responses import API as ENCODER
from modelwire._apis.openai_responses._output_items import is_generated
from modelwire._apis.openai_responses._server import citation
from modelwire._client._options import resolve_options
from modelwire.errors import (
    ConnectError,
    ContextOverflowError,
    InvalidRequestError,
    OverloadedError,
    RateLimitError,
    RequestTimeoutError,
    ServerError,
    StreamError,
)
from modelwire.events import Event
from modelwire.gateway._frontend import GatewayRequest, RequestError
from modelwire.gateway._responses import FRONTEND
from modelwire.testing import render
from modelwire.types import (
    AssistantMessage,
    AudioContent,
    Context,
    DocumentContent,
    ImageContent,
    Model,
    ServerToolCall,
    ServerToolResult,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
)

API = "openai-responses"
BACKENDS = [
    "openai-responses",
    "openai-chat",
    "anthropic-messages",
    "google-generative-ai",
    "ollama-chat",
    "bedrock-converse",
]
MODEL = Model(
    id="gpt-x",
    api=API,
    provider="openai",
    base_url="https://api.openai.com/v1",
    reasoning=True,
    input=("text", "image", "document", "audio"),
)
TOOLS = (
    ToolDefinition(
        name="read",
        description="Read a file",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}},
    ),
    ToolDefinition(name="ls", description="", parameters={"type": "object", "properties": {}}),
)
_stream_event: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(ResponseStreamEvent)


def encoded(ctx: Context, **kw: Any) -> bytes:
    """The body modelwire's own Responses encoder sends for ``ctx``."""
    options = resolve_options("openai", api_key="sk-test", **kw)
    return ENCODER.build_request(MODEL, ctx, options).body


def parse(body: dict[str, Any] | bytes) -> GatewayRequest:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return FRONTEND.parse(raw, {})


def refused(body: dict[str, Any] | bytes) -> RequestError:
    with pytest.raises(RequestError) as info:
        parse(body)
    assert info.value.status == 400
    return info.value


# --------------------------------------------------------------------------- parse: round trip


def _mine(**kw: Any) -> AssistantMessage:
    """An assistant turn of MODEL (its signatures are replayed to it)."""
    return AssistantMessage(api=API, provider="openai", model="gpt-x", **kw)


REASONING = '{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Plan."}],"encrypted_content":"gAAA=="}'
NOTE = '{"type":"url_citation","url":"https://e.com","title":"E","start_index":0,"end_index":4}'

CONTEXTS: dict[str, Context] = {
    "text": Context(system_prompt="Be brief.", messages=[UserMessage(content="hi")]),
    "parts": Context(
        messages=[
            UserMessage(
                content=[
                    TextContent(text="see"),
                    ImageContent(data="QUJD", mime_type="image/png"),
                    DocumentContent(mime_type="application/pdf", data="JVBE", title="spec.pdf"),
                    DocumentContent(mime_type="application/pdf", data="JVBE"),
                    DocumentContent(mime_type="application/pdf", file_id="file-1"),
                    DocumentContent(mime_type="application/pdf", url="https://e.com/a.pdf"),
                    AudioContent(data="UklG", mime_type="audio/wav"),
                ]
            )
        ]
    ),
    "tools": Context(
        system_prompt="Use tools.",
        tools=TOOLS,
        messages=[
            UserMessage(content="read a"),
            _mine(
                content=[
                    ThinkingContent(thinking="Plan.", signature=REASONING),
                    TextContent(text="Reading.", signature="msg_1"),
                    ToolCall(
                        id="call_1",
                        name="read",
                        arguments={"path": "a"},
                        raw_arguments='{ "path" : "a" }',
                        signature="fc_1",
                    ),
                    ToolCall(
                        id="call_2", name="ls", arguments={}, raw_arguments="{}", signature="fc_2"
                    ),
                ],
                stop_reason="tool_use",
            ),
            ToolResultMessage(
                tool_call_id="call_1", tool_name="read", content=[TextContent(text="A")]
            ),
            ToolResultMessage(
                tool_call_id="call_2",
                tool_name="ls",
                content=[
                    TextContent(text="listing"),
                    ImageContent(data="QUJD", mime_type="image/png"),
                ],
            ),
            _mine(
                content=[
                    TextContent(
                        text="Done",
                        signature='{"id":"msg_2","phase":"final_answer"}',
                        citations=[citation(json.loads(NOTE), NOTE)],
                    )
                ],
                stop_reason="stop",
            ),
            UserMessage(content="thanks"),
        ],
    ),
    "easy history": Context(
        messages=[
            UserMessage(content="hi"),
            AssistantMessage(
                api="anthropic-messages",
                provider="anthropic",
                model="claude",
                content=[TextContent(text="Hello!")],
                stop_reason="stop",
            ),
            UserMessage(content="bye"),
        ]
    ),
}


def _normalised(ctx: Context) -> Context:
    """``ctx`` as a Responses request can say it: a one-text-part user message is a
    string; another model's assistant turn is the client's, in this API."""
    out: list[Any] = []
    for m in ctx.messages:
        if isinstance(m, UserMessage) and not isinstance(m.content, str) and len(m.content) == 1:
            only = m.content[0]
            if isinstance(only, TextContent):
                m = msgspec.structs.replace(m, content=only.text)
        if isinstance(m, AssistantMessage) and m.provider != "openai":
            m = msgspec.structs.replace(m, api=API, provider="openai", model="gpt-x")
        out.append(m)
    return msgspec.structs.replace(ctx, messages=tuple(out))


def _same(a: Context, b: Context) -> None:
    # Timestamps are made at parse; everything else must match.
    def plain(ctx: Context) -> Any:
        value = msgspec.to_builtins(ctx)
        for m in value["messages"]:
            m.pop("timestamp", None)
            m.pop("usage", None)
        return value

    assert plain(a) == plain(b)


@pytest.mark.parametrize("name", sorted(CONTEXTS))
def test_parse_inverts_modelwires_encoder(name: str) -> None:
    ctx = CONTEXTS[name]
    req = parse(encoded(ctx))
    assert req.model == "gpt-x" and req.stream is True
    for m in req.context.messages:
        if isinstance(m, AssistantMessage):
            assert (m.api, m.provider, m.model) == (API, CLIENT_PROVIDER, "gpt-x")
    _same(adopt(req.context, MODEL), _normalised(ctx))


def test_parse_keeps_exact_raw_arguments_and_reasoning_bytes() -> None:
    req = parse(encoded(CONTEXTS["tools"]))
    turn = req.context.messages[1]
    assert isinstance(turn, AssistantMessage)
    thinking, _, call, _ = turn.content
    assert isinstance(thinking, ThinkingContent) and thinking.signature == REASONING
    assert isinstance(call, ToolCall) and call.raw_arguments == '{ "path" : "a" }'
    assert call.arguments == {"path": "a"}


def test_parse_options_from_encoder() -> None:
    ctx = msgspec.structs.replace(CONTEXTS["tools"], messages=CONTEXTS["tools"].messages[:1])
    body = encoded(
        ctx,
        max_tokens=300,
        temperature=0.5,
        tool_choice={"name": "read"},
        parallel_tool_calls=False,
        reasoning="high",
    )
    req = parse(body)
    assert req.options == {
        "max_tokens": 300,
        "temperature": 0.5,
        "tool_choice": {"name": "read"},
        "parallel_tool_calls": False,
        "reasoning": "high",
    }
    # store=false and include=[reasoning.encrypted_content] are the gateway's own way.
    assert req.passthrough == {}
    assert req.context.tools == TOOLS


# --------------------------------------------------------------------------- parse: the SDK


def sdk_body(**kw: Any) -> dict[str, Any]:
    """The body the official SDK sends for ``client.responses.create(**kw)``."""
    seen: list[bytes] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.content)
        return httpx2.Response(500, json={"error": {"message": "stop", "type": "server_error"}})

    client = openai.OpenAI(
        api_key="sk-test",
        base_url="http://gateway.invalid/v1",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    with pytest.raises(openai.InternalServerError):
        client.responses.create(**kw)
    body: dict[str, Any] = json.loads(seen[0])
    return body


def test_parse_sdk_request() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    body = sdk_body(
        model="smart",
        instructions="Be brief.",
        input=[
            {"role": "developer", "content": "Answer in JSON."},
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "hi"},
                    {"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/"},
                ],
            },
        ],
        tools=[
            {
                "type": "function",
                "name": "read",
                "description": "Read",
                "strict": True,
                "parameters": {"type": "object", "properties": {}},
            }
        ],
        tool_choice="required",
        reasoning={"effort": "low", "summary": "auto"},
        text={"format": {"type": "json_schema", "name": "A", "schema": schema, "strict": True}},
        include=["reasoning.encrypted_content"],
        store=False,
        max_output_tokens=64,
        metadata={"team": "a"},
        user="u1",
        top_p=0.9,
        stream=True,
    )
    req = parse(body)
    assert req.model == "smart" and req.stream
    assert req.context.system_prompt == "Be brief.\n\nAnswer in JSON."
    (user,) = req.context.messages
    assert isinstance(user, UserMessage) and not isinstance(user.content, str)
    assert user.content[1] == ImageContent(data="/9j/", mime_type="image/jpeg")
    assert req.context.tools == (
        ToolDefinition(
            name="read", description="Read", parameters={"type": "object", "properties": {}}
        ),
    )
    assert req.options == {
        "tool_choice": "required",
        "reasoning": "low",
        "output": schema,
        "max_tokens": 64,
    }
    assert req.passthrough == {"top_p": 0.9}
    assert req.echo["metadata"] == {"team": "a"} and req.echo["instructions"] == "Be brief."


def test_parse_prompt_cache_key_and_passthrough() -> None:
    req = parse(
        {
            "model": "m",
            "input": "hi",
            "prompt_cache_key": "s1",
            "service_tier": "flex",
            "include": ["reasoning.encrypted_content", "message.output_text.logprobs"],
            "text": {"verbosity": "low"},
            "truncation": "auto",
        }
    )
    assert req.options == {"session_id": "s1"}
    assert req.passthrough == {
        "service_tier": "flex",
        "truncation": "auto",
        "text": {"verbosity": "low"},
        "include": ["reasoning.encrypted_content", "message.output_text.logprobs"],
    }
    assert not req.stream
    assert req.context.messages[0] == UserMessage(
        content="hi", timestamp=req.context.messages[0].timestamp
    )


def test_parse_effort_none_is_no_level() -> None:
    assert parse({"model": "m", "input": "x", "reasoning": {"effort": "none"}}).options == {}


BAD: list[tuple[Any, str, str]] = [
    (b"{", "", "not valid JSON"),
    (b"[1]", "", "JSON object"),
    ({"input": "x"}, "model", "missing"),
    ({"model": 3, "input": "x"}, "model", "must be a string"),
    ({"model": "m"}, "input", "missing"),
    ({"model": "m", "input": 5}, "input", "must be a string or an array"),
    ({"model": "m", "input": [5]}, "input[0]", "must be an object"),
    ({"model": "m", "input": []}, "input", "holds no message"),
    ({"model": "m", "input": [{"role": "system", "content": "only"}]}, "input", "holds no message"),
    ({"model": "m", "input": [{"role": "user"}]}, "input[0].content", "missing"),
    (
        {"model": "m", "input": [{"role": "user", "content": [{"type": "input_text", "text": 1}]}]},
        "input[0].content[0].text",
        "must be a string",
    ),
    (
        {
            "model": "m",
            "input": [
                {
                    "role": "user",
                    "content": [{"type": "input_image", "image_url": "https://e.com/a.png"}],
                }
            ],
        },
        "input[0].content[0].image_url",
        "data: URL",
    ),
    (
        {"model": "m", "input": [{"role": "user", "content": [{"type": "input_video"}]}]},
        "input[0].content[0].type",
        "must be input_text",
    ),
    ({"model": "m", "input": [{"role": "robot", "content": "x"}]}, "input[0].role", "must be user"),
    (
        {"model": "m", "input": [{"type": "function_call", "call_id": "c", "name": "f"}]},
        "input[0].arguments",
        "missing",
    ),
    (
        {"model": "m", "input": [{"type": "function_call_output", "call_id": "c", "output": "x"}]},
        "input[0].call_id",
        "answers no function_call",
    ),
    (
        {"model": "m", "input": [{"type": "item_reference", "id": "msg_1"}]},
        "input[0]",
        "item_reference",
    ),
    ({"model": "m", "input": [{"type": "local_shell_call"}]}, "input[0].type", "not supported"),
    (
        {"model": "m", "input": [{"type": "reasoning", "summary": [{"text": 2}]}]},
        "input[0].summary[0].text",
        "must be a string",
    ),
    (
        {"model": "m", "input": "x", "max_output_tokens": 0},
        "max_output_tokens",
        "must be an integer >= 1",
    ),
    (
        {"model": "m", "input": "x", "max_output_tokens": "9"},
        "max_output_tokens",
        "must be an integer",
    ),
    ({"model": "m", "input": "x", "temperature": "hot"}, "temperature", "must be a number"),
    ({"model": "m", "input": "x", "temperature": -1}, "temperature", "must be a number >= 0"),
    ({"model": "m", "input": "x", "stream": "yes"}, "stream", "must be a boolean"),
    (
        {"model": "m", "input": "x", "tools": [{"type": "file_search"}]},
        "tools[0].type",
        "passes on web_search and code_interpreter",
    ),
    (
        {"model": "m", "input": "x", "tools": [{"type": "web_search"}, {"type": "web_search"}]},
        "tools[1].type",
        "declares a second web_search tool",
    ),
    ({"model": "m", "input": "x", "tools": [{"type": "function"}]}, "tools[0].name", "missing"),
    (
        {"model": "m", "input": "x", "tools": [{"type": "function", "name": "f", "parameters": 3}]},
        "tools[0].parameters",
        "must be an object",
    ),
    ({"model": "m", "input": "x", "tool_choice": "always"}, "tool_choice", "must be auto"),
    ({"model": "m", "input": "x", "tool_choice": "required"}, "tool_choice", "needs tools"),
    (
        {
            "model": "m",
            "input": "x",
            "tools": [{"type": "function", "name": "f"}],
            "tool_choice": {"type": "function", "name": "g"},
        },
        "tool_choice.name",
        "not a declared tool",
    ),
    (
        {"model": "m", "input": "x", "tool_choice": {"type": "web_search"}},
        "tool_choice.type",
        "not supported",
    ),
    (
        {"model": "m", "input": "x", "reasoning": {"effort": "max"}},
        "reasoning.effort",
        "must be none",
    ),
    (
        {"model": "m", "input": "x", "text": {"format": {"type": "json_schema"}}},
        "text.format.schema",
        "must be an object",
    ),
    (
        {"model": "m", "input": "x", "previous_response_id": "resp_1"},
        "previous_response_id",
        "keeps no",
    ),
    ({"model": "m", "input": "x", "background": True}, "background", "not supported"),
    ({"model": "m", "input": "x", "include": "all"}, "include", "must be an array"),
    ({"model": "m", "input": "x", "tools": {"type": "function"}}, "tools", "must be an array"),
    ({"model": "m", "input": "x", "reasoning": "high"}, "reasoning", "must be an object"),
    ({"model": "m", "input": "x", "text": "json"}, "text", "must be an object"),
    ({"model": "m", "input": "x", "metadata": [1]}, "metadata", "must be an object"),
    ({"model": "m", "input": "x", "user": 7}, "user", "must be a string"),
    ({"model": "m", "input": "x", "stream_options": True}, "stream_options", "must be an object"),
    ({"model": "m", "input": "x", "store": "no"}, "store", "must be a boolean"),
    (
        {
            "model": "m",
            "input": [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_audio", "input_audio": {"data": "x", "format": "ogg"}}
                    ],
                }
            ],
        },
        "input[0].content[0].input_audio.format",
        "wav or mp3",
    ),
]


@pytest.mark.parametrize(("body", "param", "says"), BAD, ids=[b[1] or repr(b[0])[:12] for b in BAD])
def test_bad_request_names_the_field(body: Any, param: str, says: str) -> None:
    err = refused(body)
    assert says in err.message
    if param:
        assert err.param == param and err.message.startswith(param)
    status, _, raw = FRONTEND.error(err)
    payload = json.loads(raw)
    assert status == 400
    assert payload["error"]["type"] == "invalid_request_error"
    assert payload["error"]["param"] == (param or None) and says in payload["error"]["message"]


# --------------------------------------------------------------------------- render


def events_for(script: Any, backend: str) -> list[Event]:
    """The events modelwire decodes from ``script`` as ``backend`` streams it."""
    return list(mw.replay(backend, [render(script, backend)], model=MockModel(backend)))


def MockModel(api: str) -> Model:
    return Model(id="backend-model", api=api, provider="mock", base_url="http://127.0.0.1:1/v1")


def rendered(
    events: list[Event], body: dict[str, Any] | None = None, rid: str = "resp_gw1"
) -> bytes:
    req = parse(body or {"model": "smart", "input": "hi", "stream": True})
    r = FRONTEND.renderer(req, rid)
    return b"".join(r.feed(e) for e in events)


def sse_payloads(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """The (event name, JSON payload) of every SSE event, split by hand."""
    out = []
    for block in data.decode().split("\n\n"):
        if not block.strip():
            continue
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def sdk_stream(data: bytes, **kw: Any) -> tuple[list[Any], Response]:
    """The SDK's own ``responses.stream`` over ``data``: its events and final Response."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=data, headers={"content-type": "text/event-stream"})

    client = openai.OpenAI(
        api_key="sk-test",
        base_url="http://gateway.invalid/v1",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    with client.responses.stream(model="smart", input="hi", **kw) as stream:
        events = list(stream)
        final = stream.get_final_response()
    return events, final


SCRIPT: list[Any] = [
    ThinkingContent(thinking="Let me see. The file is short.", signature="sig-1"),
    "Hello, wörld — a longer text of several pieces.",
    ToolCall(id="call_a1", name="read", arguments={"path": "a b"}, raw_arguments='{"path": "a b"}'),
    ToolCall(id="call_a2", name="ls", arguments={}, raw_arguments="{}"),
]


def _visible(message: AssistantMessage) -> list[Any]:
    out: list[Any] = []
    for b in message.content:
        if isinstance(b, TextContent):
            out.append(("text", b.text))
        elif isinstance(b, ThinkingContent):
            out.append(("thinking", b.thinking))
        elif isinstance(b, ToolCall):
            out.append(("call", b.id, b.name, b.raw_arguments, b.arguments))
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_render_decodes_back_with_modelwire(backend: str) -> None:
    script = SCRIPT if backend != "ollama-chat" else SCRIPT[1:]  # no thinking signature there
    events = events_for(
        AssistantMessage(
            content=[b if not isinstance(b, str) else TextContent(text=b) for b in script],
            api=backend,
            provider="mock",
            model="m",
            usage=Usage(input=11, output=7, cache_read=5, cache_write=3, total_tokens=26),
            stop_reason="tool_use",
        ),
        backend,
    )
    source = events[-1].message  # type: ignore[union-attr]
    data = rendered(events)
    back = mw.replay(API, [data]).message
    assert _visible(back) == _visible(source)
    assert back.stop_reason == source.stop_reason == "tool_use"
    u, v = back.usage, source.usage
    assert (u.input, u.output, u.cache_read, u.cache_write) == (
        v.input,
        v.output,
        v.cache_read,
        v.cache_write,
    )
    assert back.response_id == "resp_gw1"
    # Split anywhere, the same message.
    pieces = [data[i : i + 7] for i in range(0, len(data), 7)]
    assert _visible(mw.replay(API, pieces).message) == _visible(source)


@pytest.mark.parametrize("backend", BACKENDS)
def test_render_is_what_the_sdk_expects(backend: str) -> None:
    events = events_for(SCRIPT if backend != "ollama-chat" else SCRIPT[1:], backend)
    source = events[-1].message  # type: ignore[union-attr]
    data = rendered(events)
    payloads = sse_payloads(data)
    for name, payload in payloads:
        assert name == payload["type"]
        _stream_event.validate_python(payload)  # every field the SDK's models require
    assert [p["sequence_number"] for _, p in payloads] == list(range(len(payloads)))
    assert [n for n, _ in payloads][:2] == ["response.created", "response.in_progress"]
    assert payloads[-1][0] == "response.completed"
    _, final = sdk_stream(data)
    kinds = [(item.type, getattr(item, "call_id", None)) for item in final.output]
    want = [
        (
            {"thinking": "reasoning", "text": "message", "tool_call": "function_call"}[b.type],
            b.id if isinstance(b, ToolCall) else None,
        )
        for b in source.content
    ]
    assert kinds == want
    assert final.output_text == source.text
    calls = [i for i in final.output if i.type == "function_call"]
    assert [c.arguments for c in calls] == [b.raw_arguments for b in source.tool_calls]
    assert final.status == "completed" and final.usage is not None


def test_message_body_is_an_sdk_response() -> None:
    events = events_for(SCRIPT, "anthropic-messages")
    message = events[-1].message  # type: ignore[union-attr]
    req = parse({"model": "smart", "input": "hi", "metadata": {"k": "v"}, "temperature": 0.2})
    body = FRONTEND.message(req, message, "resp_2")
    resp = Response.model_validate_json(body)
    assert resp.id == "resp_2" and resp.model == "smart" and resp.status == "completed"
    assert resp.metadata == {"k": "v"} and resp.temperature == 0.2
    assert resp.output_text == message.text
    assert [i.type for i in resp.output] == [
        "reasoning",
        "message",
        "function_call",
        "function_call",
    ]
    # The same items the stream ends with.
    streamed = sse_payloads(rendered(events, rid="resp_2"))[-1][1]["response"]["output"]
    assert json.loads(body)["output"] == streamed


def test_usage_counts_cache_in_input_tokens() -> None:
    msg = AssistantMessage(
        content=[TextContent(text="ok")],
        api="anthropic-messages",
        provider="mock",
        model="m",
        stop_reason="stop",
        usage=Usage(input=10, output=4, cache_read=6, cache_write=2, total_tokens=22),
    )
    usage = json.loads(FRONTEND.message(parse({"model": "s", "input": "x"}), msg, "resp_u"))[
        "usage"
    ]
    assert (
        usage["input_tokens"] == 18 and usage["output_tokens"] == 4 and usage["total_tokens"] == 22
    )
    assert usage["input_tokens_details"] == {"cached_tokens": 6, "cache_write_tokens": 2}


def test_length_stop_is_response_incomplete() -> None:
    events = events_for(
        AssistantMessage(
            content=[TextContent(text="cut sh")],
            api="openai-chat",
            provider="mock",
            model="m",
            stop_reason="length",
        ),
        "openai-chat",
    )
    data = rendered(events)
    name, last = sse_payloads(data)[-1]
    assert name == "response.incomplete"
    assert last["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    assert mw.replay(API, [data]).message.stop_reason == "length"


def test_error_mid_stream_is_response_failed_and_nothing_after() -> None:
    body = render("Some text that will be cut off before the end", "anthropic-messages")
    events = list(mw.replay("anthropic-messages", [body[: len(body) // 2]]))
    assert events[-1].type == "error"
    data = rendered(events)
    names = [n for n, _ in sse_payloads(data)]
    assert names[-1] == "response.failed" and "response.completed" not in names
    failed = sse_payloads(data)[-1][1]
    _stream_event.validate_python(failed)
    assert failed["response"]["error"]["code"] == "server_error"
    back = mw.replay(API, [data]).message
    assert back.stop_reason == "error" and back.error is not None
    assert "truncated" in back.error.message or "ended" in back.error.message


def test_error_kinds_survive_the_stream() -> None:
    for exc, kind in [
        (RateLimitError("slow down"), "rate_limit"),
        (OverloadedError("busy"), "overloaded"),
        (ContextOverflowError("prompt is too long"), "context_overflow"),
    ]:
        msg = AssistantMessage(
            content=[],
            api="anthropic-messages",
            provider="mock",
            model="m",
            stop_reason="error",
            error=exc.to_info(),
        )
        r = FRONTEND.renderer(parse({"model": "s", "input": "x", "stream": True}), "resp_e")
        data = r.feed(mw.events.StartEvent(_partial=msg)) + r.feed(
            mw.events.ErrorEvent(reason="error", message=msg, _partial=msg)
        )
        assert r.feed(mw.events.StartEvent(_partial=msg)) == b""  # nothing after the end
        back = mw.replay(API, [data]).message
        assert back.error is not None and back.error.kind == kind


@pytest.mark.parametrize("backend", ["anthropic-messages", "openai-responses"])
def test_citations_are_annotations(backend: str) -> None:
    if backend == "openai-responses":
        cite = citation(json.loads(NOTE), NOTE)
    else:
        cite = mw.Citation(kind="url", url="https://e.com", title="E", cited_text="Hell")
    events = events_for([TextContent(text="Hello", citations=[cite])], backend)
    data = rendered(events)
    notes = [
        p["annotation"]
        for n, p in sse_payloads(data)
        if n == "response.output_text.annotation.added"
    ]
    assert [(a["type"], a["url"], a["title"]) for a in notes] == [
        ("url_citation", "https://e.com", "E")
    ]
    _, final = sdk_stream(data)
    assert final.output[0].type == "message"
    content = final.output[0].content[0]
    assert content.type == "output_text" and len(content.annotations) == 1
    back = mw.replay(API, [data]).message.content[0]
    assert isinstance(back, TextContent) and back.citations[0].url == "https://e.com"


def test_server_tool_blocks() -> None:
    call = ServerToolCall(
        id="ws_1", name="web_search", input={"query": "q"}, provider_type="web_search_call"
    )
    result = ServerToolResult(
        tool_call_id="ws_1",
        provider_type="web_search_call",
        name="web_search",
        result=[{"url": "https://e.com"}],
    )
    native = rendered(events_for([call, result, "Found."], "openai-responses"))
    items = [p["item"] for n, p in sse_payloads(native) if n == "response.output_item.done"]
    assert [i["type"] for i in items] == ["web_search_call", "message"]
    assert items[0]["id"] == "ws_1"
    back = mw.replay(API, [native]).message
    assert [b.type for b in back.content] == ["server_tool_call", "server_tool_result", "text"]
    # From Anthropic: the handoff's text, in message items.
    anth_call = ServerToolCall(
        id="srvtoolu_1", name="web_search", input={"query": "q"}, provider_type="server_tool_use"
    )
    anth_result = ServerToolResult(
        tool_call_id="srvtoolu_1",
        provider_type="web_search_tool_result",
        name="web_search",
        result=[{"url": "https://e.com"}],
    )
    foreign = rendered(events_for([anth_call, anth_result, "Found."], "anthropic-messages"))
    texts = [
        p["item"]["content"][0]["text"]
        for n, p in sse_payloads(foreign)
        if n == "response.output_item.done"
    ]
    assert texts[0].startswith("[web_search was run by the provider") and texts[-1] == "Found."
    sdk_stream(foreign)
    sdk_stream(native)


# --------------------------------------------------------------------------- round trip


def _second_turn(data: bytes, **kw: Any) -> GatewayRequest:
    """The next request a client makes with the SDK's final output items as input."""
    _, final = sdk_stream(data)
    items = [i.model_dump(exclude_none=True, mode="json") for i in final.output]
    outputs = [
        {"type": "function_call_output", "call_id": i["call_id"], "output": "ok"}
        for i in items
        if i["type"] == "function_call"
    ]
    body = sdk_body(
        model="smart",
        input=[{"role": "user", "content": "go"}, *items, *outputs],
        tools=[
            {"type": "function", "name": "read", "parameters": {"type": "object"}},
            {"type": "function", "name": "ls", "parameters": {"type": "object"}},
        ],
        include=["reasoning.encrypted_content"],
        store=False,
        **kw,
    )
    return parse(body)


@pytest.mark.parametrize("backend", BACKENDS)
def test_signatures_come_back_on_the_next_turn(backend: str) -> None:
    script = SCRIPT if backend != "ollama-chat" else SCRIPT[1:]
    events = events_for(script, backend)
    source = events[-1].message  # type: ignore[union-attr]
    req = _second_turn(rendered(events))
    _user, turn, *results = req.context.messages
    assert isinstance(turn, AssistantMessage)
    assert [type(r) for r in results] == [ToolResultMessage] * len(source.tool_calls)
    assert [r.tool_name for r in results if isinstance(r, ToolResultMessage)] == [
        c.name for c in source.tool_calls
    ]
    assert _visible(turn) == _visible(source)
    sigs = {type(b).__name__: getattr(b, "signature", None) for b in source.content}
    if backend == API:
        # The backend's own items came through unchanged; adopt() gives them back to it.
        assert (turn.api, turn.provider) == (API, CLIENT_PROVIDER)
        for a, b in zip(turn.content, source.content, strict=True):
            if isinstance(a, ThinkingContent):
                assert isinstance(b, ThinkingContent) and b.signature is not None
                assert json.loads(a.signature or "") == json.loads(b.signature)
            else:
                # An item id a server made up (the mock renders with the gateway's
                # renderer) carries nothing to give back: it returns as no signature.
                own = getattr(b, "signature", None)
                expected = None if own is not None and is_generated(own) else own
                assert getattr(a, "signature", None) == expected
    elif sigs.get("ThinkingContent"):
        # Another API's thinking signature, sealed and unsealed: the turn is the backend's.
        assert (turn.api, turn.provider, turn.model) == (backend, "mock", "backend-model")
        for a, b in zip(turn.content, source.content, strict=True):
            assert getattr(a, "signature", None) == getattr(b, "signature", None)
    else:
        assert (turn.api, turn.provider) == (API, CLIENT_PROVIDER)
        assert all(getattr(b, "signature", None) is None for b in turn.content)


def test_sealed_call_signature_travels_in_the_item_id() -> None:
    # A Gemini thought signature on a call with no thinking before it.
    call = ToolCall(id="c9", name="read", arguments={}, raw_arguments="{}", signature="gemini-sig")
    msg = AssistantMessage(
        content=[call],
        api="google-generative-ai",
        provider="google",
        model="gemini-3",
        stop_reason="tool_use",
    )
    body = json.loads(FRONTEND.message(parse({"model": "s", "input": "x"}), msg, "resp_g"))
    (item,) = body["output"]
    origin = unseal(item["id"])
    assert origin is not None and origin.signature == "gemini-sig"
    req = parse(
        {
            "model": "s",
            "input": [item, {"type": "function_call_output", "call_id": "c9", "output": "ok"}],
        }
    )
    turn = req.context.messages[0]
    assert isinstance(turn, AssistantMessage) and turn.api == "google-generative-ai"
    assert turn.content[0] == call


def test_redacted_thinking_round_trips() -> None:
    block = ThinkingContent(thinking="", signature="EncryptedBlob", redacted=True)
    msg = AssistantMessage(
        content=[block, TextContent(text="hi")],
        api="anthropic-messages",
        provider="anthropic",
        model="claude",
        stop_reason="stop",
    )
    body = json.loads(FRONTEND.message(parse({"model": "s", "input": "x"}), msg, "resp_r"))
    req = parse({"model": "s", "input": body["output"]})
    turn = req.context.messages[0]
    assert isinstance(turn, AssistantMessage) and turn.content[0] == block
    assert (turn.api, turn.provider, turn.model) == ("anthropic-messages", "anthropic", "claude")


# --------------------------------------------------------------------------- errors


ERRORS: list[tuple[StreamError, int, str]] = [
    (InvalidRequestError("bad"), 400, "invalid_request_error"),
    (ContextOverflowError("prompt is too long"), 400, "invalid_request_error"),
    (mw.errors.ContentFilterError("filtered"), 400, "invalid_request_error"),
    (mw.errors.AuthenticationError("who"), 401, "authentication_error"),
    (mw.errors.PermissionDeniedError("no"), 403, "permission_error"),
    (mw.errors.NotFoundError("none"), 404, "invalid_request_error"),
    (RateLimitError("slow", retry_after=2.5), 429, "rate_limit_error"),
    (OverloadedError("busy"), 503, "service_unavailable_error"),
    (RequestTimeoutError("late"), 504, "server_error"),
    (ConnectError("down"), 502, "server_error"),
    (ServerError("boom"), 502, "server_error"),
    (mw.errors.MalformedChunkError("bad chunk"), 502, "server_error"),
    (mw.errors.StreamInterruptedError("cut"), 502, "server_error"),
    (mw.errors.TruncatedStreamError("short"), 502, "server_error"),
    (mw.errors.ToolCallProtocolError("bad call"), 502, "server_error"),
    (mw.errors.OutputInvalidError("not the schema"), 502, "server_error"),
    (mw.errors.ProviderStreamError("in-band"), 502, "server_error"),
]


@pytest.mark.parametrize(("exc", "status", "type_"), ERRORS, ids=[e[0].kind for e in ERRORS])
def test_error_kinds(exc: StreamError, status: int, type_: str) -> None:
    got, headers, raw = FRONTEND.error(exc)
    err = json.loads(raw)["error"]
    assert (got, err["type"]) == (status, type_)
    assert err["message"] == str(exc) and set(err) == {"message", "type", "param", "code"}
    assert headers == ({"retry-after": "3"} if exc.retry_after else {})
    # modelwire's own client reads the body back as the same kind (a 502/504: server).
    from modelwire._providers._status import status_error

    again = status_error(got, raw, headers, ())
    assert again.kind == (exc.kind if status not in (502, 504) else "server")


def test_error_request_error_statuses() -> None:
    for status, kind, type_ in [
        (403, "permission", "permission_error"),
        (404, "not_found", "invalid_request_error"),
        (429, "rate_limit", "rate_limit_error"),
        (401, "authentication", "authentication_error"),
    ]:
        got, _, raw = FRONTEND.error(RequestError("no", status=status, kind=kind))
        assert got == status and json.loads(raw)["error"]["type"] == type_
    got, _, raw = FRONTEND.error(RequestError("no backend key", status=500, kind="server"))
    assert got == 500 and json.loads(raw)["error"]["type"] == "server_error"
    got, _, raw = FRONTEND.error(RequestError("store down", status=503, kind="overloaded"))
    assert got == 503 and json.loads(raw)["error"]["type"] == "service_unavailable_error"


def test_unknown_exception_says_nothing_of_its_text() -> None:
    status, _, raw = FRONTEND.error(RuntimeError("secret sk-live-123"))
    assert status == 500 and b"sk-live" not in raw


def test_frontend_identity() -> None:
    assert FRONTEND.api == API and FRONTEND.paths == ("/v1/responses", "/responses")


# --------------------------------------------------------------------------- items in turn


def _in_turn(data: bytes) -> bool:
    """Whether no item starts while a text or reasoning item is open (only function
    calls stay open across others, as the SDK allows), and events name open items."""
    open_: dict[int, str] = {}
    for name, p in sse_payloads(data):
        if name == "response.output_item.added":
            if any(k != "function_call" for k in open_.values()):
                return False
            open_[p["output_index"]] = p["item"]["type"]
        elif name == "response.output_item.done":
            if open_.pop(p["output_index"], None) is None and p["item"]["type"] in (
                "message",
                "reasoning",
                "function_call",
            ):
                return False
        elif "output_index" in p and p["output_index"] not in open_:
            return False
    return not open_


@pytest.mark.parametrize("backend", BACKENDS)
def test_items_follow_one_another(backend: str) -> None:
    # Chat Completions and Ollama end every block at the finish; the text and reasoning
    # items still come one after another, as OpenAI sends them.
    data = rendered(events_for(SCRIPT if backend != "ollama-chat" else SCRIPT[1:], backend))
    assert _in_turn(data)


def _chat_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def test_text_after_a_later_block_continues_in_a_new_item() -> None:
    call = {
        "index": 0,
        "id": "call_z",
        "type": "function",
        "function": {"name": "ls", "arguments": ""},
    }
    body = mw.testing.sse_body(
        [
            _chat_chunk({"role": "assistant", "reasoning_content": "Think"}),
            _chat_chunk({"content": "Hel"}),
            _chat_chunk({"tool_calls": [call]}),
            _chat_chunk({"content": "lo"}),
            _chat_chunk({"reasoning_content": " more"}),
            _chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
            _chat_chunk({}, "tool_calls"),
        ]
    )
    events = list(mw.replay("openai-chat", [body]))
    source = events[-1].message  # type: ignore[union-attr]
    assert source.text == "Hello"
    data = rendered(events)
    assert _in_turn(data)
    for _, payload in sse_payloads(data):
        _stream_event.validate_python(payload)
    _, final = sdk_stream(data)
    assert final.output_text == "Hello"
    assert [i.type for i in final.output] == [
        "reasoning",
        "message",
        "function_call",
        "message",
        "reasoning",
    ]
    back = mw.replay(API, [data]).message
    assert back.text == "Hello"
    thinking = [b.thinking for b in back.content if isinstance(b, ThinkingContent)]
    assert "".join(thinking) == "Think more"
    assert [c.raw_arguments for c in back.tool_calls] == ["{}"]


def test_a_call_signature_that_comes_as_it_ends_is_in_its_item_id() -> None:
    # Gemini sends a call's thought signature after the call started (in the stream).
    call = ToolCall(id="c7", name="read", arguments={"path": "a"}, raw_arguments='{"path":"a"}',
                    signature="gemini-call-sig")  # fmt: skip
    events = events_for([call], "google-generative-ai")
    starts = [e for e in events if e.type == "tool_call_start"]
    assert starts and getattr(starts[0].partial.content[0], "signature", 0) is None  # not yet
    data = rendered(events)
    for _, payload in sse_payloads(data):
        _stream_event.validate_python(payload)
    added = [p["item"] for n, p in sse_payloads(data) if n == "response.output_item.added"]
    done = [p["item"] for n, p in sse_payloads(data) if n == "response.output_item.done"]
    assert added[0]["id"] == done[0]["id"]  # clients key a call's events by its item id
    deltas = [p for n, p in sse_payloads(data) if n == "response.function_call_arguments.delta"]
    assert [d["item_id"] for d in deltas] == [done[0]["id"]]
    req = _second_turn(data)
    turn = req.context.messages[1]
    assert isinstance(turn, AssistantMessage) and turn.api == "google-generative-ai"
    assert turn.tool_calls[0].signature == "gemini-call-sig"
    assert turn.tool_calls[0].id == "c7"


def test_reasoning_without_summary_is_the_item_alone() -> None:
    item = '{"id":"rs_9","type":"reasoning","summary":[],"encrypted_content":"gAAA"}'
    events = events_for([ThinkingContent(thinking="", signature=item), "ok"], "openai-responses")
    data = rendered(events)
    names = [n for n, p in sse_payloads(data) if p.get("output_index") == 0]
    assert names == ["response.output_item.added", "response.output_item.done"]
    done = next(p["item"] for n, p in sse_payloads(data) if n == "response.output_item.done")
    sent = events[-1].message.content[0]  # type: ignore[union-attr]
    assert isinstance(sent, ThinkingContent) and done == json.loads(sent.signature or "")
    _, final = sdk_stream(data)
    assert final.output[0].type == "reasoning" and final.output[0].encrypted_content == "gAAA"


def test_sealed_items_of_one_message_are_one_turn() -> None:
    content: list[Any] = [
        ThinkingContent(thinking="Plan.", signature="g-think"),
        TextContent(text="Calling.", signature="g-text"),
        ToolCall(id="c1", name="read", arguments={}, raw_arguments="{}", signature="g-call"),
        ToolCall(id="c2", name="ls", arguments={}, raw_arguments="{}", signature="g-call-2"),
    ]
    msg = AssistantMessage(content=content, api="google-generative-ai", provider="google",
                           model="gemini-3", stop_reason="tool_use")  # fmt: skip
    body = json.loads(FRONTEND.message(parse({"model": "s", "input": "x"}), msg, "resp_1"))
    outputs = [{"type": "function_call_output", "call_id": c, "output": "ok"} for c in ("c1", "c2")]
    req = parse(
        {"model": "s", "input": [{"role": "user", "content": "go"}, *body["output"], *outputs]}
    )
    _, turn, *results = req.context.messages
    assert isinstance(turn, AssistantMessage) and len(results) == 2
    assert (turn.api, turn.provider, turn.model) == ("google-generative-ai", "google", "gemini-3")
    assert list(turn.content) == content


def test_restart_ends_the_open_items_and_keeps_the_next_models() -> None:
    # A Fallback with after_content="restart": the first model's stream broke after
    # content; the next model starts over at content index 0.
    body = render(["Partial answer that breaks", ToolCall(id="c0", name="ls", arguments={})],
                  "anthropic-messages")  # fmt: skip
    first = list(mw.replay("anthropic-messages", [body[: int(len(body) * 0.6)]]))
    broken = first[-1]
    assert broken.type == "error"
    restart = mw.events.RestartEvent(message=broken.message, _partial=broken.message)
    second = events_for(["The whole answer."], "openai-chat")[1:]  # without its start
    data = rendered([*first[:-1], restart, *second])
    assert _in_turn(data)
    for _, payload in sse_payloads(data):
        _stream_event.validate_python(payload)
    statuses = [
        p["item"]["status"] for n, p in sse_payloads(data) if n == "response.output_item.done"
    ]
    assert "incomplete" in statuses and statuses[-1] == "completed"
    _, final = sdk_stream(data)
    assert final.output_text == "The whole answer."
    assert mw.replay(API, [data]).message.text.endswith("The whole answer.")


# --------------------------------------------------------------------------- property


_text = st.text(st.characters(codec="utf-8"), max_size=12)
_id = st.from_regex(r"[A-Za-z0-9_]{1,10}", fullmatch=True)


@st.composite
def _conversations(draw: st.DrawFn) -> Context:
    """A conversation of user text, and assistant turns of MODEL with text, reasoning and
    calls (signatures of its own), each call answered."""
    messages: list[Any] = []
    n = 0
    for _ in range(draw(st.integers(1, 3))):
        messages.append(UserMessage(content=draw(_text) or "x"))
        blocks: list[Any] = []
        if draw(st.booleans()):
            summary = draw(_text)
            item = {"id": f"rs_{n}", "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": summary}] if summary else []}  # fmt: skip
            blocks.append(ThinkingContent(thinking=summary, signature=json.dumps(item)))
        if draw(st.booleans()):
            blocks.append(TextContent(text=draw(_text), signature=f"msg_{n}"))
        calls = []
        for _ in range(draw(st.integers(0, 2))):
            n += 1
            args = draw(st.dictionaries(_id, st.integers() | _text, max_size=2))
            raw = json.dumps(
                args, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 1]))
            )
            calls.append(ToolCall(id=f"call_{n}_{draw(_id)}", name=draw(st.sampled_from(["read", "ls"])),
                                  arguments=args, raw_arguments=raw, signature=f"fc_{n}"))  # fmt: skip
        blocks += calls
        n += 1
        if not blocks:
            continue
        messages.append(_mine(content=blocks, stop_reason="tool_use" if calls else "stop"))
        for c in calls:
            messages.append(ToolResultMessage(tool_call_id=c.id, tool_name=c.name,
                                              content=[TextContent(text=draw(_text))]))  # fmt: skip
    return Context(
        system_prompt=draw(st.none() | _text.filter(bool)), messages=messages, tools=TOOLS
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_conversations())
def test_parse_inverts_the_encoder_for_any_conversation(ctx: Context) -> None:
    req = parse(encoded(ctx))
    _same(adopt(req.context, MODEL), _normalised(ctx))
