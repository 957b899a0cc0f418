"""The gateway's Chat Completions front-end, without the app: parse is the inverse of
modelwire's own Chat encoder; what the renderer writes decodes to the backend's
answer through modelwire's own Chat decoder and through the openai SDK's chunk
models, stream parser and accumulator; errors have the API's status and shape."""

from __future__ import annotations

from typing import Any

import httpx2
import msgspec
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionMessageFunctionToolCall,
)

import modelwire as mw
from modelwire._apis._common import server_call_as_text
from modelwire._apis._server.origin import CLIENT_PROVIDER, SEAL_PREFIX
from modelwire._apis.openai_chat.encode import build_body
from modelwire._wire.request import OutputRequest, RequestOptions
from modelwire.errors import STREAM_ERROR_KINDS, error_class_for_kind
from modelwire.events import Event, RestartEvent
from modelwire.gateway._chat import FRONTEND
from modelwire.gateway._frontend import GatewayRequest, RequestError
from modelwire.testing import APIS, render
from modelwire.types import (
    AssistantMessage,
    AudioContent,
    Citation,
    Context,
    DocumentContent,
    ImageContent,
    Message,
    ServerToolCall,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
)

PNG = "iVBORw0KGgo="
MODEL = mw.Model(
    id="m", api="openai-chat", provider="openai", base_url="http://127.0.0.1:9/v1",
    reasoning=True, input=("text", "image", "document", "audio"),
    compat={"thinking_replay": "reasoning_content"},
)  # fmt: skip
TOOLS = [
    ToolDefinition(name="read", description="Read a file",
                   parameters={"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolDefinition(name="ls", description="", parameters={"type": "object", "properties": {}}),
]  # fmt: skip


def _zero(context: Context) -> Context:
    """``context`` with every timestamp 0 (parsing stamps messages with now)."""
    out: list[Message] = [msgspec.structs.replace(m, timestamp=0) for m in context.messages]
    return msgspec.structs.replace(context, messages=tuple(out))


def _client_turn(content: list[Any], calls: bool = False) -> AssistantMessage:
    return AssistantMessage(content=content, api="openai-chat", provider=CLIENT_PROVIDER,
                            model="m", stop_reason="tool_use" if calls else "stop", timestamp=0)  # fmt: skip


def _parse(body: dict[str, Any]) -> GatewayRequest:
    return FRONTEND.parse(msgspec.json.encode(body), {})


def _round_trip(context: Context, **options: Any) -> GatewayRequest:
    body = build_body(MODEL, context, RequestOptions(**options))
    req = _parse(body)
    assert _zero(req.context) == _zero(context)
    return req


# --------------------------------------------------------------------------- parse


def test_parse_inverts_the_encoder_for_text_images_documents_audio() -> None:
    context = Context(system_prompt="Be brief.", messages=[
        UserMessage(content="hi", timestamp=0),
        _client_turn([TextContent(text="Hello!")]),
        UserMessage(content=[
            TextContent(text="look"), ImageContent(data=PNG, mime_type="image/png"),
            DocumentContent(mime_type="application/pdf", data="JVBERi0=", title="a.pdf"),
            DocumentContent(mime_type="application/pdf", file_id="file-1"),
            AudioContent(data="UklGRg==", mime_type="audio/wav"),
        ], timestamp=0),
    ])  # fmt: skip
    req = _round_trip(context)
    assert req.stream is True and req.include_usage is True  # as the encoder asks
    assert req.passthrough == {} and req.model == "m"


def test_parse_inverts_the_encoder_for_thinking_tool_calls_and_results() -> None:
    context = Context(messages=[
        UserMessage(content="read a", timestamp=0),
        _client_turn([
            ThinkingContent(thinking="I should read.", signature="reasoning_content"),
            TextContent(text="Reading."),
            ToolCall(id="call_1", name="read", arguments={"path": "a"},
                     raw_arguments='{ "path" : "a" }'),
            ToolCall(id="call_2", name="ls", arguments={}, raw_arguments="{}"),
        ], calls=True),
        ToolResultMessage(tool_call_id="call_1", tool_name="read",
                          content=[TextContent(text="see"), ImageContent(data=PNG, mime_type="image/png")],
                          timestamp=0),
        ToolResultMessage(tool_call_id="call_2", tool_name="ls", content="a b", timestamp=0),
        UserMessage(content="thanks", timestamp=0),
    ], tools=TOOLS)  # fmt: skip
    req = _round_trip(context, max_tokens=100, temperature=0.5, tool_choice={"name": "read"},
                      parallel_tool_calls=False, reasoning="high", session_id="s1")  # fmt: skip
    assert dict(req.options) == {
        "max_tokens": 100, "temperature": 0.5, "tool_choice": {"name": "read"},
        "parallel_tool_calls": False, "reasoning": "high", "session_id": "s1",
    }  # fmt: skip
    calls = [b for b in req.context.messages[1].content if isinstance(b, ToolCall)]
    assert calls[0].raw_arguments == '{ "path" : "a" }'  # the exact text, not re-encoded


def test_parse_structured_output_and_stream_flags() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    out = OutputRequest(mode="native", name="Answer", schema=schema)
    body = build_body(MODEL, Context(messages=[UserMessage(content="x")]),
                      RequestOptions(output=out))  # fmt: skip
    req = _parse(body)
    assert req.options["output"] == {**schema, "title": "Answer"}  # the name is the title
    assert req.stream is True and req.include_usage is True
    req = _parse({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True})
    assert req.include_usage is False  # the usage chunk only when asked for


def test_parse_the_sdk_request_shapes() -> None:
    req = _parse({
        "model": "smart",
        "messages": [
            {"role": "developer", "content": [{"type": "text", "text": "Rules."}]},
            {"role": "system", "content": "More."},
            {"role": "user", "content": "hi", "name": "ann"},
            {"role": "assistant", "content": None, "refusal": None, "audio": None,
             "function_call": None, "annotations": [],
             "tool_calls": [{"id": "c1", "type": "function",
                             "function": {"name": "ls", "arguments": ""}}]},
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "ok"}]},
        ],
        "tools": [{"type": "function", "function": {"name": "ls", "strict": True}}],
        "tool_choice": "required", "max_tokens": 7, "reasoning_effort": "none",
        "user": "u1", "metadata": {"a": "b"}, "n": 1, "store": False,
        "top_p": 0.9, "seed": 3, "stop": ["x"], "response_format": {"type": "json_object"},
    })  # fmt: skip
    ctx = req.context
    assert ctx.system_prompt == "Rules.\n\nMore."
    assert ctx.tools == (ToolDefinition(name="ls", description="",
                                        parameters={"type": "object", "properties": {}}),)  # fmt: skip
    call = ctx.messages[1].content[0]
    assert isinstance(call, ToolCall) and call.raw_arguments is None and call.arguments == {}
    result = ctx.messages[2]
    assert isinstance(result, ToolResultMessage) and result.tool_name == "ls"
    assert result.text == "ok"
    assert dict(req.options) == {"max_tokens": 7, "tool_choice": "required"}
    assert dict(req.passthrough) == {"top_p": 0.9, "seed": 3, "stop": ["x"],
                                     "response_format": {"type": "json_object"}}  # fmt: skip


BAD: list[tuple[Any, str | None, str]] = [
    (b"[1]", None, "JSON object"),
    (b"{", None, "JSON object"),
    ({"messages": [{"role": "user", "content": "x"}]}, "model", "model is missing"),
    ({"model": "m"}, "messages", "messages is missing"),
    ({"model": "m", "messages": []}, "messages", "at least one"),
    ({"model": 3, "messages": []}, "model", "model must be a string"),
    (
        {"model": "m", "messages": [{"role": "bot", "content": "x"}]},
        "messages[0].role",
        "must be one of system",
    ),
    ({"model": "m", "messages": [{"role": "user"}]}, "messages[0].content", "is missing"),
    (
        {
            "model": "m",
            "messages": [
                {"role": "user", "content": "a"},
                {"role": "user", "content": [{"type": "text", "text": 5}]},
            ],
        },
        "messages[1].content[0].text",
        "messages[1].content[0].text must be a string",
    ),
    (
        {
            "model": "m",
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}],
                }
            ],
        },
        "messages[0].content[0].image_url.url",
        "does not fetch URLs",
    ),
    (
        {
            "model": "m",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_audio", "input_audio": {"data": "x", "format": "ogg"}}
                    ],
                }
            ],
        },
        "messages[0].content[0].input_audio.format",
        "'wav' or 'mp3'",
    ),
    (
        {"model": "m", "messages": [{"role": "user", "content": [{"type": "video"}]}]},
        "messages[0].content[0].type",
        "does not take",
    ),
    (
        {
            "model": "m",
            "messages": [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f"}}],
                }
            ],
        },
        "messages[0].tool_calls[0].function.arguments",
        "is missing",
    ),
    (
        {"model": "m", "messages": [{"role": "tool", "content": "x"}]},
        "messages[0].tool_call_id",
        "is missing",
    ),
    (
        {"model": "m", "messages": [{"role": "function", "name": "f", "content": "x"}]},
        "messages[0].role",
        "deprecated",
    ),
    (
        {"model": "m", "messages": [{"role": "assistant", "audio": {"id": "a1"}}]},
        "messages[0].audio",
        "transcript",
    ),
    ({"model": "m", "messages": [{"role": "user", "content": "x"}], "n": 2}, "n", "n=1"),
    (
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 3},
        "temperature",
        "<= 2",
    ),
    (
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": 0},
        "max_tokens",
        ">= 1",
    ),
    (
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": "yes"},
        "stream",
        "must be a boolean",
    ),
    (
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "tool_choice": "required"},
        "tool_choice",
        "needs tools",
    ),
    (
        {
            "model": "m",
            "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "function", "function": {"name": "a"}}],
            "tool_choice": {"type": "function", "function": {"name": "b"}},
        },
        "tool_choice.function.name",
        "not a declared tool",
    ),
    (
        {
            "model": "m",
            "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "custom", "custom": {"name": "a"}}],
        },
        "tools[0].type",
        "does not take",
    ),
    (
        {
            "model": "m",
            "messages": [{"role": "user", "content": "x"}],
            "tools": [
                {"type": "function", "function": {"name": "a", "parameters": {"$ref": "#/$defs/x"}}}
            ],
        },
        "tools[0].function",
        "tools[0].function",
    ),
    (
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "reasoning_effort": "max"},
        "reasoning_effort",
        "does not take",
    ),
    (
        {
            "model": "m",
            "messages": [{"role": "user", "content": "x"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "a"}},
        },
        "response_format.json_schema.schema",
        "is missing",
    ),
    (
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "functions": []},
        "functions",
        "send tools",
    ),
]


@pytest.mark.parametrize(("body", "param", "text"), BAD)
def test_bad_requests_are_400_naming_the_field(body: Any, param: str | None, text: str) -> None:
    data = body if isinstance(body, bytes) else msgspec.json.encode(body)
    with pytest.raises(RequestError) as info:
        FRONTEND.parse(data, {})
    err = info.value
    assert err.status == 400 and err.param == param and text in err.message
    status, _, out = FRONTEND.error(err)
    got = msgspec.json.decode(out)["error"]
    assert status == 400 and got["param"] == param and got["type"] == "invalid_request_error"
    assert got["message"] == err.message


# --------------------------------------------------------------------------- render

ANSWER = AssistantMessage(
    content=[
        ThinkingContent(thinking="Let me think about it.", signature="sig-1"),
        TextContent(text="Here is the answer, in pieces."),
        ToolCall(id="call_7", name="read", arguments={"path": "a b"},
                 raw_arguments='{"path":  "a b"}'),
        ToolCall(id="call_8", name="ls", arguments={}, raw_arguments="{}", signature="tsig-8"),
    ],
    api="x", provider="y", model="z", stop_reason="tool_use",
    usage=Usage(input=10, output=5, cache_read=3, cache_write=2, total_tokens=20),
)  # fmt: skip
REQ = GatewayRequest(model="smart", context=Context(), options={}, stream=True)


def _backend(api: str, script: Any = ANSWER) -> tuple[list[Event], AssistantMessage]:
    events = mw.replay(api, [render(script, api)], model=mw.Model(
        id="z", api=api, provider="mock", base_url="http://127.0.0.1:9/v1"))  # fmt: skip
    return list(events), events.message


def _feed(events: list[Event], req: GatewayRequest = REQ) -> bytes:
    renderer = FRONTEND.renderer(req, "chatcmpl-gw1")
    return b"".join(renderer.feed(e) for e in events)


def _payloads(body: bytes) -> list[bytes]:
    assert body.endswith(b"\n\n")
    out = []
    for event in body.split(b"\n\n")[:-1]:
        assert event.startswith(b"data: ")
        out.append(event[6:])
    return out


def _sdk_stream(body: bytes) -> list[ChatCompletionChunk]:
    """The chunks as the openai SDK's own SSE reader yields them."""
    resp = httpx2.Response(200, content=body, headers={"content-type": "text/event-stream"},
                           request=httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions"))  # fmt: skip
    client = openai.OpenAI(api_key="k", base_url="http://127.0.0.1:9/v1")
    return list(openai.Stream(cast_to=ChatCompletionChunk, response=resp, client=client))


@pytest.mark.parametrize("api", APIS)
def test_rendered_stream_decodes_to_the_backend_answer(api: str) -> None:
    events, backend = _backend(api)
    body = _feed(events, msgspec.structs.replace(REQ, include_usage=True))
    payloads = _payloads(body)
    assert payloads[-1] == b"[DONE]"
    # modelwire's own Chat decoder
    mine = mw.replay("openai-chat", [body]).message
    assert mine.stop_reason == "tool_use" and mine.response_id == "chatcmpl-gw1"
    assert mine.text == backend.text
    want_thinking = [b.thinking for b in backend.content if isinstance(b, ThinkingContent)]
    assert [b.thinking for b in mine.content if isinstance(b, ThinkingContent)] == want_thinking
    assert [(c.id, c.name, c.raw_arguments) for c in mine.tool_calls] == [
        (c.id, c.name, c.raw_arguments) for c in backend.tool_calls]  # fmt: skip
    u = backend.usage
    # Chat has no cache-write count of its own: modelwire's decoder reads it as input.
    assert (mine.usage.input, mine.usage.output, mine.usage.cache_read) == (
        u.input + u.cache_write, u.output, u.cache_read)  # fmt: skip
    # the openai SDK: its chunk model, its SSE reader and its accumulator
    chunks = _sdk_stream(body)
    assert len(chunks) == len(payloads) - 1
    for raw, chunk in zip(payloads, chunks, strict=False):
        assert chunk == ChatCompletionChunk.model_validate_json(raw)
    state = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(chunk)
    final = state.get_final_completion()
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content == backend.text
    calls = choice.message.tool_calls or []
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        (c.id, c.name, c.raw_arguments) for c in backend.tool_calls]  # fmt: skip
    assert (
        final.usage is not None
        and final.usage.prompt_tokens == u.input + u.cache_read + u.cache_write
    )
    assert final.usage.prompt_tokens_details is not None
    assert final.usage.prompt_tokens_details.cached_tokens == u.cache_read
    assert final.id == "chatcmpl-gw1" and final.model == (backend.response_model or "smart")
    # what the client sends back next turn is parsed to the backend's own turn
    sent = choice.message.model_dump(exclude_none=True, exclude={"parsed"})
    _check_turn(sent, backend)


def _check_turn(sent: dict[str, Any], backend: AssistantMessage) -> None:
    req = _parse({"model": "smart", "messages": [{"role": "user", "content": "q"}, sent]})
    turn = req.context.messages[1]
    assert isinstance(turn, AssistantMessage)
    thinking = [b for b in turn.content if isinstance(b, ThinkingContent)]
    want = [b for b in backend.content if isinstance(b, ThinkingContent)]
    assert [b.thinking for b in thinking] == [b.thinking for b in want]
    if backend.api == "openai-chat":
        assert (turn.api, turn.provider, turn.model) == ("openai-chat", CLIENT_PROVIDER, "smart")
        assert [b.signature for b in thinking] == ["reasoning_content"] * len(want)
    else:
        assert (turn.api, turn.provider, turn.model) == (
            backend.api,
            backend.provider,
            backend.model,
        )
        assert [b.signature for b in thinking] == [b.signature for b in want]
    got = [(c.id, c.raw_arguments, c.signature) for c in turn.tool_calls]
    expect_sig = backend.api != "openai-chat"
    assert got == [(c.id, c.raw_arguments, c.signature if expect_sig else None)
                   for c in backend.tool_calls]  # fmt: skip


@pytest.mark.parametrize("api", APIS)
def test_message_body_is_the_sdk_completion_and_parses_back(api: str) -> None:
    _, backend = _backend(api)
    body = FRONTEND.message(REQ, backend, "chatcmpl-gw2")
    done = ChatCompletion.model_validate_json(body)
    assert done.id == "chatcmpl-gw2" and done.object == "chat.completion"
    choice = done.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content == backend.text
    calls = choice.message.tool_calls or []
    assert all(isinstance(c, ChatCompletionMessageFunctionToolCall) for c in calls)
    assert [(c.id, c.function.arguments) for c in calls
            if isinstance(c, ChatCompletionMessageFunctionToolCall)] == [
        (c.id, c.raw_arguments) for c in backend.tool_calls]  # fmt: skip
    assert done.usage is not None and done.usage.completion_tokens == backend.usage.output
    sent = msgspec.json.decode(body)["choices"][0]["message"]
    _check_turn(sent, backend)
    if backend.api != "openai-chat":
        # A client that keeps only what rides on tool calls (pydantic-ai keeps a call's
        # extra_content) still sends the sealed thinking back.
        del sent["reasoning_details"]
        _check_turn(sent, backend)
        assert sent["tool_calls"][0]["extra_content"]["modelwire"]["reasoning_details"]


def test_stream_without_usage_asked_sends_no_usage_chunk() -> None:
    events, _ = _backend("anthropic-messages", "hi")
    payloads = _payloads(_feed(events, msgspec.structs.replace(REQ, include_usage=False)))
    assert all(b'"usage"' not in p for p in payloads)
    assert payloads[-2].endswith(b'"finish_reason":"stop"}]}') and payloads[-1] == b"[DONE]"
    first = msgspec.json.decode(payloads[0])
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": "", "refusal": None}


@pytest.mark.parametrize(
    ("api", "stop", "own", "want"),
    [
        ("anthropic-messages", "stop", "end_turn", "stop"),
        ("anthropic-messages", "length", "max_tokens", "length"),
        ("anthropic-messages", "tool_use", "tool_use", "tool_calls"),
        ("openai-chat", "tool_use", "stop", "stop"),  # the Chat backend's own reason, as sent
        ("openai-chat", "stop", "eos", "stop"),  # not one of the API's reasons: mapped
    ],
)
def test_finish_reasons(api: str, stop: Any, own: str, want: str) -> None:
    calls = [ToolCall(id="c1", name="ls", arguments={})] if stop == "tool_use" else []
    message = AssistantMessage(content=[TextContent(text="t"), *calls], api=api,
                               provider="p", model="m", stop_reason=stop,
                               provider_stop_reason=own)  # fmt: skip
    done = ChatCompletion.model_validate_json(FRONTEND.message(REQ, message, "c"))
    assert done.choices[0].finish_reason == want


def test_the_output_tool_streams_as_content() -> None:
    events, _ = _backend("anthropic-messages", [ToolCall(id="c1", name="final_result",
                                                         arguments={"a": 1})])  # fmt: skip
    req = msgspec.structs.replace(REQ, options={"output": {"type": "object"}})
    mine = mw.replay("openai-chat", [_feed(events, req)]).message
    assert mine.content == (TextContent(text='{"a":1}'),)
    # Without output asked for, the same call is the client's own.
    assert mw.replay("openai-chat", [_feed(events)]).message.tool_calls[0].name == "final_result"


def test_stream_from_the_chat_api_passes_its_own_fields() -> None:
    events, _ = _backend("openai-chat", ANSWER)
    body = _feed(events)
    assert SEAL_PREFIX.encode() not in body and b"reasoning_details" not in body
    assert b'"reasoning_content":' in body


def test_server_tool_blocks_and_citations_degrade_or_annotate() -> None:
    call = ServerToolCall(id="srv_1", name="web_search", input={"query": "q"},
                          provider_type="server_tool_use")  # fmt: skip
    cited = TextContent(text="Paris is the capital.", citations=[
        Citation(kind="url", url="https://a.example/p", title="A"),
        Citation(kind="document", document="0", cited_text="capital", title="Doc"),
    ])  # fmt: skip
    events, backend = _backend("anthropic-messages", [call, cited])
    body = _feed(events)
    final = ChatCompletionStreamState()
    for chunk in _sdk_stream(body):
        final.handle_chunk(chunk)
    message = final.get_final_completion().choices[0].message
    text = message.content or ""
    assert text.startswith(server_call_as_text(call)) and "Paris is the capital." in text
    assert '"capital"' in text  # the document citation, as the handoff shows sources
    deltas = [msgspec.json.decode(p)["choices"] for p in _payloads(body)[:-1]]
    notes = [c[0]["delta"]["annotations"] for c in deltas if c and "annotations" in c[0]["delta"]]
    ((note,),) = notes  # all in one delta: the SDK's accumulator cannot merge two
    assert note["url_citation"]["url"] == "https://a.example/p"
    span = text[note["url_citation"]["start_index"] : note["url_citation"]["end_index"]]
    assert span == "Paris is the capital."
    whole = ChatCompletion.model_validate_json(FRONTEND.message(REQ, backend, "c"))
    assert whole.choices[0].message.annotations is not None
    assert whole.choices[0].message.annotations[0].url_citation.url == "https://a.example/p"


def test_redacted_thinking_round_trips_sealed() -> None:
    turn = AssistantMessage(
        content=[ThinkingContent(thinking="", signature="opaque-data", redacted=True),
                 TextContent(text="ok")],
        api="anthropic-messages", provider="anthropic", model="claude-x", stop_reason="stop",
    )  # fmt: skip
    sent = msgspec.json.decode(FRONTEND.message(REQ, turn, "c"))["choices"][0]["message"]
    assert "reasoning_content" not in sent  # nothing readable to show
    req = _parse({"model": "smart", "messages": [{"role": "user", "content": "q"}, sent]})
    back = req.context.messages[1]
    assert isinstance(back, AssistantMessage)
    assert (back.api, back.provider, back.model) == ("anthropic-messages", "anthropic", "claude-x")
    assert back.content == (ThinkingContent(thinking="", signature="opaque-data", redacted=True),
                            TextContent(text="ok"))  # fmt: skip


def test_a_damaged_seal_is_plain_client_thinking() -> None:
    req = _parse({"model": "smart", "messages": [{"role": "assistant", "content": "a",
        "reasoning_content": "thought",
        "reasoning_details": [{"type": "reasoning.encrypted", "data": SEAL_PREFIX + "%%%",
                               "format": "modelwire-gateway-v1", "text": "x"}]}]})  # fmt: skip
    turn = req.context.messages[0]
    assert isinstance(turn, AssistantMessage) and turn.provider == CLIENT_PROVIDER
    assert turn.content[0] == ThinkingContent(thinking="thought", signature="reasoning_content")


def test_openrouter_reasoning_details_are_thinking() -> None:
    req = _parse({"model": "smart", "messages": [{"role": "assistant", "content": "a",
        "reasoning_details": [{"type": "reasoning.text", "text": "one, "},
                              {"type": "reasoning.summary", "summary": "s"},
                              {"type": "reasoning.text", "text": "two"}]}]})  # fmt: skip
    turn = req.context.messages[0]
    assert isinstance(turn, AssistantMessage)
    assert turn.content[0] == ThinkingContent(thinking="one, two", signature="reasoning_details")


def test_restart_continues_the_tool_indexes() -> None:
    first, _ = _backend("anthropic-messages", [ToolCall(id="call_a", name="ls", arguments={})])
    partial = first[-2].partial  # as the failed model's stream stood
    second, _ = _backend("openai-chat", [ToolCall(id="call_b", name="ls", arguments={"x": 1})])
    events = [*first[:-1], RestartEvent(message=partial), *second[1:]]
    state = ChatCompletionStreamState()
    for chunk in _sdk_stream(_feed(events)):
        state.handle_chunk(chunk)
    calls = state.get_final_completion().choices[0].message.tool_calls or []
    assert [(c.id, c.function.arguments) for c in calls] == [
        ("call_a", "{}"),
        ("call_b", '{"x":1}'),
    ]


def test_error_after_bytes_is_an_in_stream_error_without_done() -> None:
    body = render(ANSWER, "anthropic-messages")
    events = list(mw.replay("anthropic-messages", [body[: len(body) // 2]]))
    assert events[-1].type == "error"
    out = _feed(events)
    payloads = _payloads(out)
    assert b"[DONE]" not in payloads
    err = msgspec.json.decode(payloads[-1])["error"]
    assert err["type"] == "server_error" and err["code"] == "truncated_stream"
    with pytest.raises(openai.APIError) as info:
        _sdk_stream(out)
    assert info.value.code == "truncated_stream"


EXPECTED = {
    "invalid_request": 400, "context_overflow": 400, "content_filter": 400,
    "authentication": 401, "permission": 403, "not_found": 404, "rate_limit": 429,
    "overloaded": 503, "timeout": 504,
}  # fmt: skip
SDK_ERRORS: dict[int, type[openai.APIStatusError]] = {
    400: openai.BadRequestError, 401: openai.AuthenticationError, 403: openai.PermissionDeniedError,
    404: openai.NotFoundError, 429: openai.RateLimitError, 502: openai.InternalServerError,
    503: openai.InternalServerError, 504: openai.InternalServerError,
}  # fmt: skip


@pytest.mark.parametrize("kind", sorted(STREAM_ERROR_KINDS))
def test_every_error_kind_has_a_status_and_the_sdk_reads_it(kind: str) -> None:
    exc = error_class_for_kind(kind)("it failed", retry_after=2.5)
    status, headers, body = FRONTEND.error(exc)
    assert status == EXPECTED.get(kind, 502)
    assert headers == ({"retry-after": "3"} if kind == "rate_limit" else {})
    err = msgspec.json.decode(body)["error"]
    assert err["message"] == "it failed" and set(err) == {"message", "type", "param", "code"}
    client = openai.OpenAI(api_key="k", base_url="http://127.0.0.1:9/v1")
    resp = httpx2.Response(status, content=body, headers=headers,
                           request=httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions"))  # fmt: skip
    made = client._make_status_error_from_response(resp)
    assert isinstance(made, SDK_ERRORS[status]) and made.message.endswith(" - it failed")
    assert made.body == err  # the SDK keeps the error object as the body


def test_request_errors_and_unexpected_exceptions() -> None:
    status, _, body = FRONTEND.error(RequestError("no such model", status=404, kind="not_found",
                                                  param="model"))  # fmt: skip
    assert status == 404 and msgspec.json.decode(body)["error"]["param"] == "model"
    status, _, body = FRONTEND.error(RequestError("bad key", status=401, kind="authentication"))
    assert status == 401 and msgspec.json.decode(body)["error"]["type"] == "authentication_error"
    status, _, body = FRONTEND.error(KeyError("sk-secret"))
    assert status == 500 and b"sk-secret" not in body


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)  # fmt: skip
KNOWN = ["model", "messages", "stream", "stream_options", "max_tokens", "temperature", "tools",
         "tool_choice", "reasoning_effort", "response_format", "n", "top_p"]  # fmt: skip
PART_TYPES = ["text", "image_url", "input_audio", "file", "refusal", "x"]
ROLES = ["system", "developer", "user", "assistant", "tool", "function", "x"]
FIELDS = ["content", "tool_calls", "tool_call_id", "reasoning_content", "reasoning_details",
          "refusal", "name", "text", "image_url", "function", "id", "arguments"]  # fmt: skip


def _message() -> st.SearchStrategy[dict[str, Any]]:
    part = st.fixed_dictionaries({"type": st.sampled_from(PART_TYPES)},
                                 optional={f: JSON for f in FIELDS})  # fmt: skip
    return st.fixed_dictionaries(
        {"role": st.sampled_from(ROLES)},
        optional={"content": st.one_of(JSON, st.lists(part, max_size=3)),
                  **{f: JSON for f in FIELDS[1:]}},
    )  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(
    messages=st.lists(_message(), max_size=4),
    extra=st.dictionaries(st.sampled_from(KNOWN), JSON, max_size=3),
)
def test_any_body_is_a_request_or_a_400_naming_a_field(
    messages: list[dict[str, Any]], extra: dict[str, Any]
) -> None:
    body = {"model": "m", "messages": messages, **extra}
    try:
        req = FRONTEND.parse(msgspec.json.encode(body), {})
    except RequestError as exc:
        assert exc.status == 400 and exc.message
    else:
        assert req.model == body["model"] and isinstance(req.context, Context)
