"""The gateway's Anthropic Messages front-end, without the app.

Parsing is checked as the inverse of modelwire's own ``anthropic-messages`` encoder
(encode a context, parse the body, encode again: the same body) and on the request
shapes the official ``anthropic`` SDK sends. Rendering is differential: scripted
replies of every backend wire API are decoded by modelwire, rendered here, then
decoded again by modelwire's own Anthropic decoder and by the SDK's event models and
stream accumulator; both must agree with what the backend said.
"""

from __future__ import annotations

import base64
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import msgspec
import pydantic
import pytest
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import Message, RawMessageStreamEvent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import modelwire as mw
from modelwire import errors
from modelwire._apis._server.origin import CLIENT_PROVIDER, adopt, unseal
from modelwire._apis.anthropic_messages import API
from modelwire._client._options import resolve_options
from modelwire.gateway._anthropic import FRONTEND
from modelwire.gateway._frontend import GatewayRequest, RequestError
from modelwire.testing import APIS, render, tool_call

API_NAME = "anthropic-messages"
DATA = Path(__file__).resolve().parent / "data" / "anthropic"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-not-really").decode()
PDF = base64.b64encode(b"%PDF-1.4 synthetic").decode()
EVENTS = pydantic.TypeAdapter(RawMessageStreamEvent)


def claude(model_id: str = "claude-sonnet-4-5") -> mw.Model:
    return mw.Model(
        id=model_id, api=API_NAME, provider="anthropic", base_url="http://127.0.0.1:9/v1",
        reasoning=True, max_tokens=64_000, input=("text", "image", "document"),
    )  # fmt: skip


def encode(model: mw.Model, context: mw.Context, **options: Any) -> dict[str, Any]:
    body: dict[str, Any] = API.build_body(model, context, resolve_options("local", **options))
    return body


def parse(body: dict[str, Any] | bytes) -> GatewayRequest:
    data = body if isinstance(body, bytes) else msgspec.json.encode(body)
    return FRONTEND.parse(data, {})


def plain(value: Any) -> Any:
    """JSON data with timestamps left out (a parsed turn is stamped when parsed)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if k != "timestamp"}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


# --------------------------------------------------------------------------- parse

SIGNED = mw.AssistantMessage(
    content=[
        mw.ThinkingContent(thinking="The user wants the file.", signature="sig-AAA"),
        mw.TextContent(text="Reading it."),
        mw.ToolCall(
            id="toolu_01",
            name="read",
            arguments={"path": "a b.txt"},
            raw_arguments='{"path":"a b.txt"}',
        ),
        mw.ToolCall(
            id="toolu_02", name="read", arguments={"path": "c"}, raw_arguments='{"path":"c"}'
        ),
    ],
    api=API_NAME,
    provider="anthropic",
    model="claude-sonnet-4-5",
    stop_reason="tool_use",
)
READ = mw.ToolDefinition(
    name="read", description="Read a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}},
                "required": ["path"]},
)  # fmt: skip
CONTEXTS = {
    "text": mw.Context(system_prompt="Be brief.", messages=[mw.UserMessage(content="hi")]),
    "media": mw.Context(
        messages=[
            mw.UserMessage(
                content=[
                    mw.TextContent(text="Look:"),
                    mw.ImageContent(data=PNG, mime_type="image/png"),
                    mw.DocumentContent(mime_type="application/pdf", data=PDF, title="Spec"),
                    mw.DocumentContent(
                        mime_type="text/plain", data=base64.b64encode("Grüße".encode()).decode()
                    ),
                    mw.DocumentContent(
                        mime_type="application/pdf", url="https://example.com/a.pdf"
                    ),
                    mw.DocumentContent(mime_type="application/pdf", file_id="file_011"),
                ]
            )
        ]
    ),
    "tools": mw.Context(
        system_prompt="Use tools.",
        messages=[
            mw.UserMessage(content="read a b.txt and c"),
            SIGNED,
            mw.ToolResultMessage(tool_call_id="toolu_01", tool_name="read", content="AAA"),
            mw.ToolResultMessage(
                tool_call_id="toolu_02",
                tool_name="read",
                is_error=True,
                content=[
                    mw.TextContent(text="no such file"),
                    mw.ImageContent(data=PNG, mime_type="image/png"),
                ],
            ),
            mw.UserMessage(content="and now?"),
        ],
        tools=[READ],
    ),
    "redacted": mw.Context(
        messages=[
            mw.UserMessage(content="think"),
            mw.AssistantMessage(
                content=[
                    mw.ThinkingContent(thinking="", signature="ENCRYPTED", redacted=True),
                    mw.TextContent(text="done"),
                ],
                api=API_NAME,
                provider="anthropic",
                model="claude-sonnet-4-5",
                stop_reason="stop",
            ),
            mw.UserMessage(content="again"),
        ]
    ),
}


@pytest.mark.parametrize("name", sorted(CONTEXTS))
@pytest.mark.parametrize("cache", [True, False])
def test_parse_inverts_the_encoder(name: str, cache: bool) -> None:
    model = claude()
    context = CONTEXTS[name]
    body = encode(model, context, cache=cache, max_tokens=1000)
    req = parse(body)
    assert req.model == model.id and req.stream is True and req.passthrough == {}
    assert req.options["cache"] is cache and req.options["max_tokens"] == 1000
    # Unsealed assistant turns are the client's until adopt() gives them to the backend.
    turns = [m for m in req.context.messages if isinstance(m, mw.AssistantMessage)]
    assert all(m.provider == CLIENT_PROVIDER and m.api == API_NAME for m in turns)
    adopted = adopt(req.context, model)
    assert encode(model, adopted, **req.options) == body
    # A str user content comes back as the one text block the encoder made of it.
    want = [
        msgspec.structs.replace(m, content=(mw.TextContent(text=m.content),))
        if isinstance(m, mw.UserMessage) and isinstance(m.content, str) else m
        for m in context.messages
    ]  # fmt: skip
    assert plain(json.loads(mw.to_json(adopted))) == plain(
        json.loads(mw.to_json(msgspec.structs.replace(context, messages=tuple(want))))
    )


@pytest.mark.parametrize(
    ("options", "want"),
    [
        ({"reasoning": "minimal"}, "minimal"),
        ({"reasoning": "low"}, "low"),
        ({"reasoning": "medium"}, "medium"),
        ({"reasoning": "high"}, "high"),
        ({"reasoning": "xhigh"}, "xhigh"),
    ],
)
def test_parse_inverts_thinking_budgets(options: dict[str, Any], want: str) -> None:
    model = claude()
    body = encode(model, CONTEXTS["text"], **options)
    req = parse(body)
    assert req.options["reasoning"] == want
    assert encode(model, req.context, **req.options) == body


@pytest.mark.parametrize("level", ["low", "medium", "high", "xhigh"])
def test_parse_inverts_adaptive_effort(level: str) -> None:
    model = claude("claude-opus-4-6")
    body = encode(model, CONTEXTS["text"], reasoning=level)
    assert body["thinking"] == {"type": "adaptive"}
    req = parse(body)
    assert req.options["reasoning"] == level
    assert encode(model, req.context, **req.options) == body


@pytest.mark.parametrize(
    ("options", "choice"),
    [
        ({"tool_choice": "auto"}, {"type": "auto"}),
        ({"tool_choice": "required"}, {"type": "any"}),
        ({"tool_choice": "none"}, {"type": "none"}),
        ({"tool_choice": {"name": "read"}}, {"type": "tool", "name": "read"}),
        ({"parallel_tool_calls": False}, {"type": "auto", "disable_parallel_tool_use": True}),
        (
            {"tool_choice": "required", "parallel_tool_calls": False},
            {"type": "any", "disable_parallel_tool_use": True},
        ),
    ],
)
def test_parse_inverts_tool_choice(options: dict[str, Any], choice: dict[str, Any]) -> None:
    model = claude()
    body = encode(model, CONTEXTS["tools"], temperature=0.5, **options)
    assert body["tool_choice"] == choice and body["temperature"] == 0.5
    req = parse(body)
    assert encode(model, adopt(req.context, model), **req.options) == body


def test_parse_keeps_citations_and_server_blocks_byte_for_byte() -> None:
    """An assistant turn an Anthropic backend answered with web search and
    citations goes back exactly as received."""
    body = (DATA / "server-tools-citations-pause.sse").read_bytes()
    answer = mw.replay(API_NAME, body, model=claude()).message
    model = claude()
    context = mw.Context(messages=[mw.UserMessage(content="weather?"), answer,
                                   mw.UserMessage(content="go on")])  # fmt: skip
    sent = encode(model, context)
    req = parse(sent)
    turn = req.context.messages[1]
    assert isinstance(turn, mw.AssistantMessage)
    assert [type(b) for b in turn.content] == [type(b) for b in answer.content]
    assert encode(model, adopt(req.context, model)) == sent


def test_parse_keeps_the_exact_tool_input_text() -> None:
    raw = '{ "path" : "x",\n "n": 1.50 }'
    body = (
        b'{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"go"},'
        b'{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read","input":'
        + raw.encode()
        + b"}]},"
        b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}'
    )
    req = parse(body)
    call = req.context.messages[1]
    assert isinstance(call, mw.AssistantMessage)
    assert call.tool_calls[0].raw_arguments == raw
    assert call.tool_calls[0].arguments == {"path": "x", "n": 1.5}
    result = req.context.messages[2]
    assert isinstance(result, mw.ToolResultMessage) and result.tool_name == "read"


def test_parse_unseals_a_signature_into_its_origin() -> None:
    """A thinking block an OpenAI Responses backend produced comes back, through an
    Anthropic client, as that backend's turn with its own opaque data."""
    script = mw.AssistantMessage(
        content=[mw.ThinkingContent(thinking="plan", signature=None), mw.TextContent(text="ok")],
        api="openai-responses", provider="openai", model="gpt-5", stop_reason="stop",
    )  # fmt: skip
    events = mw.replay("openai-responses", render(script, "openai-responses"),
                       model=mw.Model(id="gpt-5", api="openai-responses", provider="openai",
                                      base_url="http://127.0.0.1:9/v1"))  # fmt: skip
    sent = events.message
    wire = render_events(events)
    answer = sdk_message(wire)
    turn = {"role": "assistant", "content": [b.to_dict() for b in answer.content]}
    req = parse({"model": "smart", "max_tokens": 50, "messages": [
        {"role": "user", "content": "hi"}, turn, {"role": "user", "content": "more"}]})  # fmt: skip
    got = req.context.messages[1]
    assert isinstance(got, mw.AssistantMessage)
    assert (got.api, got.provider, got.model) == ("openai-responses", "openai", "gpt-5")
    thinking = got.content[0]
    assert isinstance(thinking, mw.ThinkingContent) and thinking.thinking == "plan"
    original = sent.content[0]
    assert isinstance(original, mw.ThinkingContent)
    assert thinking.signature == original.signature and thinking.signature


def test_parse_of_the_fields_beyond_the_encoder() -> None:
    body = {
        "model": "smart", "max_tokens": 20, "stream": False,
        "system": [{"type": "text", "text": "A."}, {"type": "text", "text": "B.",
                                                     "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "hi"}],
        "metadata": {"user_id": "u-1"},
        "stop_sequences": ["END"], "top_k": 5, "top_p": 0.9,
        "thinking": {"type": "enabled", "budget_tokens": 5000},
        "output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}},
    }  # fmt: skip
    req = parse(body)
    assert req.context.system_prompt == "A.\nB." and req.stream is False
    assert req.options["cache"] is True and req.options["reasoning"] == "low"
    assert req.options["output"] == {"type": "object"}
    assert req.passthrough == {"stop_sequences": ["END"], "top_k": 5, "top_p": 0.9}
    tool = {"name": "t", "input_schema": {"type": "object"}}
    plain_tools = {**body, "system": "A.", "tools": [tool]}
    assert parse(plain_tools).options["cache"] is False
    marked = [tool, {**tool, "name": "u", "cache_control": {"type": "ephemeral"}}]
    assert parse({**plain_tools, "tools": marked}).options["cache"] is True
    assert parse(plain_tools).options["cache"] is False  # the tool cache keeps which one
    beta = parse({**body, "output_config": None,
                  "output_format": {"type": "json_schema", "schema": {"type": "array"}}})  # fmt: skip
    assert beta.options["output"] == {"type": "array"}
    assert parse({**body, "thinking": {"type": "disabled"}}).options.get("reasoning") is None


def sdk_request(call: Any) -> bytes:
    """The body the official SDK sends for ``call(client)``."""
    seen: list[bytes] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.content)
        return httpx2.Response(200, json={
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}})  # fmt: skip

    with anthropic.Anthropic(api_key="gw-test", base_url="http://127.0.0.1:9",
                             http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
                             max_retries=0) as client:  # fmt: skip
        call(client)
    return seen[0]


def test_parse_of_the_sdk_request_shapes() -> None:
    body = sdk_request(lambda c: c.messages.create(
        model="smart", max_tokens=2048, system="sys",
        thinking={"type": "enabled", "budget_tokens": 1024},
        tools=[{"name": "read", "description": "Read", "input_schema": {
            "type": "object", "properties": {"path": {"type": "string"}}}}],
        tool_choice={"type": "auto", "disable_parallel_tool_use": True},
        messages=[
            {"role": "user", "content": [
                {"type": "text", "text": "see", "cache_control": {"type": "ephemeral"}},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": PNG}}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig1"},
                {"type": "tool_use", "id": "toolu_9", "name": "read", "input": {"path": "x"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_9", "content": [
                    {"type": "text", "text": "file"}]},
                {"type": "text", "text": "thanks"}]},
        ],
    ))  # fmt: skip
    req = parse(body)
    m = req.context.messages
    assert [type(x).__name__ for x in m] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "UserMessage",
    ]
    assert req.options == {"max_tokens": 2048, "cache": True, "reasoning": "minimal",
                           "tool_choice": "auto", "parallel_tool_calls": False}  # fmt: skip
    turn = m[1]
    assert isinstance(turn, mw.AssistantMessage)
    assert turn.content[0] == mw.ThinkingContent(thinking="hmm", signature="sig1")
    assert turn.tool_calls[0].raw_arguments == '{"path":"x"}'
    assert req.context.tools is not None and req.context.tools[0].name == "read"


def base(**kw: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m", "max_tokens": 10,
                            "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip
    body.update(kw)
    return body


def user(*blocks: Any) -> dict[str, Any]:
    return base(messages=[{"role": "user", "content": list(blocks)}])


BAD = [
    (b"[1]", "must be a JSON object"),
    (b"{", "not valid JSON"),
    ({"max_tokens": 1, "messages": []}, "model is missing"),
    ({"model": "m", "messages": []}, "max_tokens is missing"),
    ({"model": "m", "max_tokens": 1}, "messages is missing"),
    (base(max_tokens=0), "max_tokens must be an integer >= 1"),
    (base(messages=[]), "messages must not be empty"),
    (base(max_tokens="9"), "max_tokens must be an integer"),
    (base(model=3), "model must be a string"),
    (base(stream="yes"), "stream must be a boolean"),
    (base(temperature="hot"), "temperature must be a number"),
    (base(messages=[{"role": "system", "content": "x"}]), "messages holds only system messages"),
    (base(messages=[{"role": "user"}]), "messages[0].content is missing"),
    (base(messages=[{"role": "user", "content": 5}]), "messages[0].content must be"),
    (user({"type": "text", "text": 5}), "messages[0].content[0].text must be a string"),
    (user({"type": "text", "text": "a"}, {"type": "text"}), "messages[0].content[1].text is missing"),
    (user({"text": "x"}), "messages[0].content[0].type is missing"),
    (user({"type": "image", "source": {"type": "url", "url": "https://x/a.png"}}),
     "messages[0].content[0].source.type 'url': the gateway forwards images as base64"),
    (user({"type": "image", "source": {"type": "base64", "data": PNG}}),
     "messages[0].content[0].source.media_type is missing"),
    (user({"type": "document", "source": {"type": "content", "content": []}}),
     "messages[0].content[0].source.type 'content' cannot be forwarded"),
    (user({"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                          "data": PDF}, "context": "c"}),
     "messages[0].content[0].context cannot be forwarded"),
    (user({"type": "document", "source": {"type": "url"}}),
     "messages[0].content[0].source: a url source needs url"),
    (user({"type": "search_result", "source": "s", "title": "t", "content": []}),
     "messages[0].content[0].type 'search_result' is not a user content block"),
    (user({"type": "tool_result", "tool_use_id": "nope", "content": "x"}),
     "messages[0].content[0].tool_use_id 'nope' answers no tool_use"),
    (base(messages=[{"role": "assistant", "content": [{"type": "tool_use", "id": "t",
                                                       "name": "n", "input": [1]}]}]),
     "messages[0].content[0].input must be an object"),
    (base(messages=[{"role": "assistant", "content": [{"type": "thinking", "thinking": "x"}]}]),
     "messages[0].content[0].signature is missing"),
    (base(messages=[{"role": "assistant", "content": [{"type": "tool_use", "name": "n",
                                                       "input": {}}]}]),
     "messages[0].content[0].id is missing"),
    (base(tools=[{"name": "t"}]), "tools[0].input_schema is missing"),
    (base(tools=[{"type": "memory_20250818", "name": "memory"}]),
     "tools[0].type 'memory_20250818' is an Anthropic server tool the gateway does not pass on"),
    (base(tools=[{"type": "web_search_20250305", "name": "web_search"},
                 {"type": "web_search_20260209", "name": "web_search"}]),
     "tools[1].type declares a second web_search tool"),
    (base(tools=[{"name": "", "input_schema": {"type": "object"}}]), "tools[0]:"),
    (base(tool_choice={"type": "tool"}), "tool_choice.name is missing"),
    (base(tool_choice={"type": "tool", "name": "x"}), "tool_choice.name 'x' is not one of tools"),
    (base(tool_choice={"type": "sometimes"}), "tool_choice.type"),
    (base(thinking={"type": "enabled"}), "thinking.budget_tokens is missing"),
    (base(thinking={"type": "enabled", "budget_tokens": 100}), "thinking.budget_tokens must be >= 1024"),
    (base(system=[{"type": "image"}]), "system"),
    (base(output_config={"format": {"type": "json_schema"}}), "output_config.format.schema is missing"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "message"), BAD, ids=[m for _, m in BAD])
def test_bad_requests_name_the_field(body: dict[str, Any] | bytes, message: str) -> None:
    with pytest.raises(RequestError) as info:
        parse(body)
    err = info.value
    assert err.status == 400 and err.kind == "invalid_request"
    assert message in err.message
    if err.param is not None:  # the path the message names
        assert err.message.startswith(err.param) or f" {err.param}" in err.message
    status, headers, data = FRONTEND.error(err)
    assert status == 400 and headers == {}
    assert json.loads(data) == {"type": "error", "error": {"type": "invalid_request_error",
                                                           "message": err.message}}  # fmt: skip


# --------------------------------------------------------------------------- render


def backend(api: str) -> mw.Model:
    return mw.Model(id=f"{api}-model", api=api, provider=f"{api}-provider",
                    base_url="http://127.0.0.1:9/v1")  # fmt: skip


def gateway_request(model: str = "smart") -> GatewayRequest:
    return GatewayRequest(model=model, context=mw.Context(), options={}, stream=True)


def render_events(events: list[mw.events.Event], model: str = "smart") -> bytes:
    renderer = FRONTEND.renderer(gateway_request(model), "msg_gw_1")
    return b"".join(renderer.feed(e) for e in events)


def sse(body: bytes) -> Iterator[tuple[str, dict[str, Any]]]:
    decoder = mw.SSEDecoder()
    for ev in [*decoder.feed(body), *decoder.end()]:
        yield ev.event, json.loads(ev.data)


def sdk_message(body: bytes, *, strict: bool = True) -> Any:
    """The SDK's own reading of a stream: every event validated by its model (the
    SSE event name is the payload's type) and folded by its accumulator; not
    ``strict``: folded as the SDK's stream does (unvalidated, ``construct``)."""
    snapshot: Any = None
    bufs: dict[int, bytes] = {}
    for name, data in sse(body):
        assert name == data["type"]
        if name != "ping":  # a keep-alive, not in the SDK's event union
            event: Any = EVENTS.validate_python(data) if strict else data
            snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=bufs)
    return snapshot


SCRIPTS: dict[str, Any] = {
    "text": mw.AssistantMessage(
        content=[mw.TextContent(text="Grüße, 世界! " * 3)],
        api="x",
        provider="x",
        model="x",
        usage=mw.Usage(input=11, output=7, cache_read=5, cache_write=3),
        stop_reason="stop",
    ),
    "thinking": mw.AssistantMessage(
        content=[
            mw.ThinkingContent(thinking="Let me think.", signature="sig-XYZ"),
            mw.TextContent(text="42"),
        ],
        api="x",
        provider="x",
        model="x",
        usage=mw.Usage(input=3, output=9),
        stop_reason="stop",
    ),
    "tools": [
        "Reading both.",
        tool_call("read", {"path": "a.txt", "opts": {"n": [1, 2]}}, id="call_a1"),
        tool_call("read", {"path": "b ü.txt"}, id="call_b2"),
    ],
    "length": mw.AssistantMessage(
        content=[mw.TextContent(text="cut")],
        api="x",
        provider="x",
        model="x",
        stop_reason="length",
    ),
}
# What each backend API's mock can say (Chat and Ollama carry no thinking signature,
# Bedrock no cache write, …): compared only where the backend's own replay has it.


@pytest.mark.parametrize("script", sorted(SCRIPTS))
@pytest.mark.parametrize("api", APIS)
def test_render_is_what_the_backend_said(api: str, script: str) -> None:
    events = mw.replay(api, render(SCRIPTS[script], api), model=backend(api))
    said = events.message
    assert said.stop_reason in ("stop", "tool_use", "length"), said.error
    wire = render_events(events)
    # modelwire's own Anthropic decoder reads the same answer back.
    back = mw.replay(API_NAME, wire).message
    assert back.stop_reason == said.stop_reason and back.error is None
    assert back.usage.input == said.usage.input and back.usage.output == said.usage.output
    assert back.usage.cache_read == said.usage.cache_read
    assert back.usage.cache_write == said.usage.cache_write
    assert back.response_id == "msg_gw_1" and back.response_model == "smart"
    assert len(back.content) == len(said.content)
    for got, want in zip(back.content, said.content, strict=True):
        assert type(got) is type(want)
        if isinstance(want, mw.ToolCall):
            assert isinstance(got, mw.ToolCall)
            assert (got.id, got.name, got.raw_arguments) == (want.id, want.name, want.raw_arguments)
            assert got.arguments == want.arguments
        elif isinstance(want, mw.ThinkingContent):
            assert isinstance(got, mw.ThinkingContent) and got.thinking == want.thinking
            if api == API_NAME:
                assert got.signature == want.signature
            else:
                origin = unseal(got.signature or "")
                assert origin is not None and origin.signature == want.signature
                assert (origin.api, origin.provider, origin.model) == (
                    api,
                    f"{api}-provider",
                    f"{api}-model",
                )
        else:
            assert isinstance(got, mw.TextContent) and isinstance(want, mw.TextContent)
            # A text block's own signature (a Responses message id) has no field here.
            assert (got.text, got.citations) == (want.text, want.citations)
            if api == API_NAME:
                assert got == want
    # The SDK's accumulator agrees, and so does the non-streamed message object.
    for msg in (sdk_message(wire), Message.model_validate_json(
            FRONTEND.message(gateway_request(), said, "msg_gw_1"))):  # fmt: skip
        assert msg.id == "msg_gw_1" and msg.model == "smart"
        assert msg.stop_reason == {"stop": "end_turn", "length": "max_tokens",
                                   "tool_use": "tool_use"}[said.stop_reason]  # fmt: skip
        assert msg.usage.input_tokens == said.usage.input
        assert msg.usage.output_tokens == said.usage.output
        assert msg.usage.cache_read_input_tokens == said.usage.cache_read
        assert msg.usage.cache_creation_input_tokens == said.usage.cache_write
        assert [b.type for b in msg.content] == [
            {"text": "text", "thinking": "thinking", "tool_call": "tool_use"}[b.type]
            for b in said.content
        ]
        for block, want in zip(msg.content, said.content, strict=True):
            if isinstance(want, mw.ToolCall):
                assert (block.id, block.name, block.input) == (want.id, want.name, want.arguments)
            elif isinstance(want, mw.TextContent):
                assert block.text == want.text
            elif isinstance(want, mw.ThinkingContent):
                assert block.thinking == want.thinking and block.signature


def test_render_of_a_native_answer_keeps_blocks_citations_and_pause_turn() -> None:
    body = (DATA / "server-tools-citations-pause.sse").read_bytes()
    events = mw.replay(API_NAME, body, model=claude())
    said = events.message
    wire = render_events(events)
    back = mw.replay(API_NAME, wire, model=claude()).message
    assert back.content == said.content
    assert back.provider_stop_reason == said.provider_stop_reason == "pause_turn"

    # Server-tool results start as the backend sent them (their input assembled
    # from its deltas for a call), so a client gets exactly what the backend said.
    def starts(stream: bytes) -> list[dict[str, Any]]:
        return [d["content_block"] for n, d in sse(stream) if n == "content_block_start"]

    sent = {b["type"]: b for b in starts(body) if b["type"].endswith("_tool_result")}
    assert sent and all(sent[b["type"]] == b for b in starts(wire) if b["type"] in sent)
    with warnings.catch_warnings():
        # The fixture's web_fetch_tool_error content is newer than this SDK's models:
        # its accumulator warns while folding it (the backend's bytes, not ours).
        warnings.simplefilter("ignore", UserWarning)
        sdk = sdk_message(wire, strict=False)
    assert sdk.stop_reason == "pause_turn"
    whole = json.loads(FRONTEND.message(gateway_request(), said, "msg_gw_1"))
    folded = [b.model_dump(mode="json", exclude_unset=True, warnings=False) for b in sdk.content]
    assert whole["content"] == folded


def test_render_degrades_another_apis_server_blocks_to_text() -> None:
    call = mw.ServerToolCall(id="ws_1", name="web_search", input={"query": "q"},
                             provider_type="web_search_call")  # fmt: skip
    result = mw.ServerToolResult(tool_call_id="ws_1", provider_type="web_search_result",
                                 result={"hits": 1}, name="web_search")  # fmt: skip
    msg = mw.AssistantMessage(content=[call, result, mw.TextContent(text="found")],
                              api="openai-responses", provider="openai", model="gpt-5",
                              stop_reason="stop")  # fmt: skip
    whole = Message.model_validate_json(FRONTEND.message(gateway_request(), msg, "msg_1"))
    assert [b.type for b in whole.content] == ["text", "text", "text"]
    assert "web_search was run by the provider" in whole.content[0].text
    assert "web_search result" in whole.content[1].text


def test_a_refusal_is_rendered_as_the_refusal_stop_reason() -> None:
    body = (DATA / "refusal.sse").read_bytes()
    events = mw.replay(API_NAME, body, model=claude())
    assert events.message.error is not None and events.message.error.kind == "content_filter"
    wire = render_events(events)
    assert sdk_message(wire).stop_reason == "refusal"
    back = mw.replay(API_NAME, wire).message
    assert back.error is not None and back.error.kind == "content_filter"
    assert back.text == events.message.text


@pytest.mark.parametrize("api", APIS)
def test_a_broken_backend_stream_ends_with_an_error_event(api: str) -> None:
    full = render(SCRIPTS["tools"], api)
    events = mw.replay(api, full[: len(full) * 2 // 3], model=backend(api))
    assert isinstance(events.terminal, mw.events.ErrorEvent)
    wire = render_events(events)
    names = [name for name, _ in sse(wire)]
    assert names[0] == "message_start" and names[-1] == "error"
    assert "message_stop" not in names and "message_delta" not in names
    back = mw.replay(API_NAME, wire).message
    assert back.stop_reason == "error" and back.error is not None
    with pytest.raises(anthropic.APIStatusError):
        for _ in anthropic_stream(wire):
            pass


def anthropic_stream(body: bytes) -> Iterator[Any]:
    """The SDK's own stream reader over ``body`` (it raises on an ``error`` event)."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=body, headers={"content-type": "text/event-stream"})

    client = anthropic.Anthropic(api_key="gw-test", base_url="http://127.0.0.1:9",
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
                                 max_retries=0)  # fmt: skip
    with client, client.messages.stream(model="smart", max_tokens=5,
                                        messages=[{"role": "user", "content": "x"}]) as s:  # fmt: skip
        yield from s


def test_the_sdk_stream_helper_reads_a_rendered_stream() -> None:
    events = mw.replay("openai-chat", render(SCRIPTS["tools"], "openai-chat"),
                       model=backend("openai-chat"))  # fmt: skip
    wire = render_events(events)
    kinds = [e.type for e in anthropic_stream(wire)]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert "input_json" in kinds and "text" in kinds


def test_message_renders_the_provider_stop_reason_only_for_its_own_api() -> None:
    said = mw.AssistantMessage(content=[mw.TextContent(text="x")], api=API_NAME,
                               provider="anthropic", model="c", stop_reason="stop",
                               provider_stop_reason="stop_sequence")  # fmt: skip
    whole = Message.model_validate_json(FRONTEND.message(gateway_request(), said, "m1"))
    assert whole.stop_reason == "stop_sequence"
    other = msgspec.structs.replace(said, api="openai-chat")
    assert Message.model_validate_json(
        FRONTEND.message(gateway_request(), other, "m1")).stop_reason == "end_turn"  # fmt: skip


# --------------------------------------------------------------------------- errors

ERRORS = [
    (errors.InvalidRequestError("bad"), 400, "invalid_request_error", anthropic.BadRequestError),
    (errors.ContextOverflowError("long"), 400, "invalid_request_error", anthropic.BadRequestError),
    (errors.AuthenticationError("who"), 401, "authentication_error", anthropic.AuthenticationError),
    (errors.PermissionDeniedError("no"), 403, "permission_error", anthropic.PermissionDeniedError),
    (errors.NotFoundError("gone"), 404, "not_found_error", anthropic.NotFoundError),
    (errors.RateLimitError("slow", retry_after=2.5), 429, "rate_limit_error",
     anthropic.RateLimitError),
    (errors.OverloadedError("busy"), 529, "overloaded_error", anthropic.OverloadedError),
    (errors.RequestTimeoutError("late"), 504, "timeout_error", anthropic.GatewayTimeoutError),
    (errors.ServerError("boom", status=500), 502, "api_error", anthropic.InternalServerError),
    (errors.ConnectError("refused"), 502, "api_error", anthropic.InternalServerError),
    (errors.TruncatedStreamError("cut"), 502, "api_error", anthropic.InternalServerError),
    (errors.MalformedChunkError("bad chunk"), 502, "api_error", anthropic.InternalServerError),
    (errors.ProviderStreamError("in-band"), 502, "api_error", anthropic.InternalServerError),
    (RequestError("key", status=401, kind="authentication"), 401, "authentication_error",
     anthropic.AuthenticationError),
    (RequestError("model", status=404, kind="not_found"), 404, "not_found_error",
     anthropic.NotFoundError),
    (RequestError("quota", status=429, kind="rate_limit"), 429, "rate_limit_error",
     anthropic.RateLimitError),
    (RuntimeError("secret detail sk-ant-XXXX"), 500, "api_error", anthropic.InternalServerError),
]  # fmt: skip


@pytest.mark.parametrize(("exc", "status", "type_", "sdk_class"), ERRORS,
                         ids=[type(e[0]).__name__ + str(e[1]) for e in ERRORS])  # fmt: skip
def test_errors_in_the_apis_shape(
    exc: BaseException, status: int, type_: str, sdk_class: type[Exception]
) -> None:
    got_status, headers, body = FRONTEND.error(exc)
    assert got_status == status
    data = json.loads(body)
    assert data["type"] == "error" and data["error"]["type"] == type_
    if isinstance(exc, RuntimeError):
        assert "sk-ant" not in data["error"]["message"]
    else:
        assert data["error"]["message"] == str(exc)
    if isinstance(exc, errors.RateLimitError):
        assert headers == {"retry-after": "3"}
    else:
        assert headers == {}
    with pytest.raises(sdk_class) as info:
        sdk_request_against(status, headers, body)
    assert isinstance(info.value, anthropic.APIStatusError)
    assert info.value.status_code == status


def sdk_request_against(status: int, headers: dict[str, str], body: bytes) -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(status, content=body,
                              headers={"content-type": "application/json", **headers})  # fmt: skip

    with anthropic.Anthropic(api_key="gw-test", base_url="http://127.0.0.1:9",
                             http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
                             max_retries=0) as client:  # fmt: skip
        client.messages.create(model="smart", max_tokens=5,
                               messages=[{"role": "user", "content": "x"}])  # fmt: skip


def test_interleaved_blocks_keep_their_indexes() -> None:
    """Chat parallel calls interleaved with text (provider indexes 4, 2): the blocks
    come one at a time, as Anthropic sends them, and both readers rebuild the same
    content."""
    body = (
        Path(__file__).resolve().parents[1] / "docs" / "examples" / "interleaved.sse"
    ).read_bytes()
    events = mw.replay("openai-chat", body, model=backend("openai-chat"))
    said = events.message
    wire = render_events(events)
    deltas = [d["index"] for n, d in sse(wire) if n == "content_block_delta"]
    assert deltas == sorted(deltas)  # a block's deltas before the next block's
    back = mw.replay(API_NAME, wire).message
    assert [(c.id, c.raw_arguments) for c in back.tool_calls] == [
        (c.id, c.raw_arguments) for c in said.tool_calls
    ]
    assert back.text == said.text
    sdk = sdk_message(wire)
    assert [b.type for b in sdk.content] == ["tool_use", "text", "tool_use"]
    assert [b.input for b in sdk.content if b.type == "tool_use"] == [
        c.arguments for c in said.tool_calls
    ]


def test_citations_of_another_api_are_built_as_this_apis_locations() -> None:
    cites = [
        mw.Citation(kind="url", url="https://example.com/a", title="A", cited_text="a fact"),
        mw.Citation(kind="document", document="1", cited_text="b", start=3, end=9),
    ]
    script = [mw.TextContent(text="A cited answer.", citations=cites)]
    api = "openai-responses"
    events = mw.replay(api, render(script, api), model=backend(api))
    got = [c for b in events.message.content if isinstance(b, mw.TextContent) for c in b.citations]
    assert got and got[0].url == "https://example.com/a"
    wire = render_events(events)
    back = mw.replay(API_NAME, wire).message
    (text,) = back.content
    assert isinstance(text, mw.TextContent) and text.text == "A cited answer."
    # A file citation is a location in a document here; an empty title is none;
    # cited_text is a string here ("" for none).
    kind = {"url": "url", "file": "document", "document": "document"}
    assert [(c.kind, c.url, c.title or None, c.cited_text or None) for c in text.citations] == [
        (kind[c.kind], c.url, c.title or None, c.cited_text) for c in got
    ]
    assert [c.kind for c in got] == ["url", "file"]  # Responses cites a document as a file
    sdk = sdk_message(wire)
    assert [c.type for c in sdk.content[0].citations] == [
        "web_search_result_location" if c.url is not None else "char_location" for c in got
    ]


def test_a_fallback_restart_continues_with_the_next_indexes() -> None:
    """After a restart the next model's blocks follow what was already sent (a
    client cannot take bytes back): open blocks are stopped, indexes go on."""
    first = mw.replay("openai-chat", render("partial answer that", "openai-chat"))
    cut = [e for e in first if not isinstance(e, mw.events.DoneEvent | mw.events.TextEndEvent)]
    second = mw.replay("anthropic-messages", render(SCRIPTS["tools"], "anthropic-messages"))
    restart = mw.events.RestartEvent(message=first.message)
    wire = render_events([*cut, restart, *second[1:]])
    sdk = sdk_message(wire)
    assert [b.type for b in sdk.content] == ["text", "text", "tool_use", "tool_use"]
    assert sdk.content[0].text == "partial answer that"
    back = mw.replay(API_NAME, wire).message
    assert back.stop_reason == "tool_use"
    assert [c.id for c in back.tool_calls] == [c.id for c in second.message.tool_calls]


def test_message_builds_citation_locations_the_sdk_accepts() -> None:
    cites = [
        mw.Citation(kind="url", url="https://example.com/a", title="A", cited_text="a fact"),
        mw.Citation(kind="document", document="1", cited_text="b", start=3, end=9),
    ]
    msg = mw.AssistantMessage(content=[mw.TextContent(text="cited", citations=cites)],
                              api="google-generative-ai", provider="g", model="m",
                              stop_reason="stop")  # fmt: skip
    whole = Message.model_validate_json(FRONTEND.message(gateway_request(), msg, "m1"))
    block = whole.content[0]
    assert block.type == "text" and block.citations is not None
    web, doc = block.citations
    assert web.type == "web_search_result_location" and web.url == "https://example.com/a"
    assert doc.type == "char_location" and doc.document_index == 1
    assert (doc.start_char_index, doc.end_char_index, doc.cited_text) == (3, 9, "b")


_TEXT = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=40)
_ARGS = st.dictionaries(st.text(max_size=8), st.one_of(_TEXT, st.integers(), st.booleans()),
                        max_size=4)  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    api=st.sampled_from(APIS),
    blocks=st.lists(st.one_of(_TEXT, _ARGS), min_size=1, max_size=4),
    pieces=st.integers(1, 9),
)
def test_any_answer_reads_back_the_same(api: str, blocks: list[Any], pieces: int) -> None:
    """Any mix of text and tool calls from any backend API: modelwire's Anthropic
    decoder and the SDK read back the backend's text, call ids and arguments."""
    script = [b if isinstance(b, str) else tool_call("fn", b, id=f"call_{i}")
              for i, b in enumerate(blocks)]  # fmt: skip
    events = mw.replay(api, render(script, api, piece_chars=pieces), model=backend(api))
    said = events.message
    wire = render_events(events)
    back = mw.replay(API_NAME, wire).message
    assert back.stop_reason == said.stop_reason
    assert back.text == said.text
    assert [(c.name, c.arguments, c.raw_arguments) for c in back.tool_calls] == [
        (c.name, c.arguments, c.raw_arguments) for c in said.tool_calls
    ]
    sdk = sdk_message(wire)
    assert "".join(b.text for b in sdk.content if b.type == "text") == said.text
    assert [b.input for b in sdk.content if b.type == "tool_use"] == [
        c.arguments for c in said.tool_calls
    ]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (user({"type": "text", "text": 5}), "messages[0].content[0].text"),
        (base(max_tokens=0), "max_tokens"),
        ({"model": "m", "messages": []}, "max_tokens"),
        (base(tool_choice={"type": "tool"}), "tool_choice.name"),
        (
            user({"type": "image", "source": {"type": "url", "url": "https://x/a.png"}}),
            "messages[0].content[0].source.type",
        ),
    ],
)
def test_a_bad_request_names_its_field_in_param(body: dict[str, Any], param: str) -> None:
    with pytest.raises(RequestError) as info:
        parse(body)
    assert info.value.param == param
