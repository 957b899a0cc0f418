"""Cohere's v2 chat (``cohere-chat``): the request, the stream, the catalog, the mock.

The streams under tests/data/cohere-chat/ are written in the byte shapes of Cohere's
documentation and of published recordings (tests/data/cohere-chat/SOURCES.md says
which file follows which).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import modelwire as mw
from eventlist import final, plain, same_at_every_split
from modelwire._apis import get_api, server_routes
from modelwire._apis.cohere_chat import spec
from modelwire._client._options import resolve_options
from modelwire._wire.request import OutputRequest
from modelwire.testing import MockServer, Reply, render

API = "cohere-chat"
DATA = Path(__file__).parent / "data" / "cohere-chat"
FILES = sorted(p.name for p in DATA.glob("*.sse"))
TOOLS = (DATA / "tool-plan-parallel-calls.sse").read_bytes()
WEATHER = mw.ToolDefinition(name="get_weather", description="Weather", parameters={
    "type": "object", "properties": {"location": {"type": "string"}}})  # fmt: skip
READ = mw.ToolDefinition(name="read", description="Read a file", parameters={"type": "object"})
MODEL = mw.Model(id="command-a-03-2025", api=API, provider="cohere",
                 base_url="https://api.cohere.com/v2")  # fmt: skip
REASONER = mw.get_model("cohere", "command-a-reasoning-08-2025")


def replayed(name: str) -> mw.AssistantMessage:
    return final(mw.replay(API, (DATA / name).read_bytes()))


def body_of(ctx: mw.Context, model: mw.Model = MODEL, **kw: Any) -> dict[str, Any]:
    req = get_api(API).build_request(model, ctx, resolve_options("cohere", api_key="k", **kw))
    out: dict[str, Any] = json.loads(req.body)
    return out


def events(*payloads: dict[str, Any] | str) -> bytes:
    """SSE events as Cohere writes them (``event:`` line from the payload's type)."""
    out = b""
    for p in payloads:
        if isinstance(p, str):
            out += f"data: {p}\n\n".encode()
        else:
            out += f"event: {p.get('type')}\ndata: {json.dumps(p)}\n\n".encode()
    return out


START = {"id": "r-1", "type": "message-start", "delta": {"message": {
    "role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}}}  # fmt: skip
TEXT_START = {"type": "content-start", "index": 0,
              "delta": {"message": {"content": {"type": "text", "text": ""}}}}  # fmt: skip


def text_delta(text: Any, index: int = 0) -> dict[str, Any]:
    return {"type": "content-delta", "index": index,
            "delta": {"message": {"content": {"text": text}}}}  # fmt: skip


def end(reason: str = "COMPLETE", **delta: Any) -> dict[str, Any]:
    return {"type": "message-end", "delta": {"finish_reason": reason, **delta}}


# --------------------------------------------------------------------------- recorded streams


def test_text_whole() -> None:
    msg = replayed("text.sse")
    assert (msg.stop_reason, msg.provider_stop_reason, msg.api) == ("stop", "COMPLETE", API)
    assert msg.text == "Bonjour ! Je suis Command A, ravi de vous aider 🙂."
    assert msg.response_id == "5c1f0a2e-7b3d-4e8a-9c61-2f4d8e0b9a17"
    # billed_units is the usage (tokens counts what Cohere adds and does not bill).
    assert (msg.usage.input, msg.usage.output, msg.usage.cache_read) == (9, 14, 0)


def test_tool_plan_and_two_parallel_calls() -> None:
    evs = mw.replay(API, TOOLS)
    msg = final(evs)
    assert msg.stop_reason == "tool_use" and msg.provider_stop_reason == "TOOL_CALL"
    plan, first, second = msg.content
    # The plan is the text said before the calls: kept, and replayed as tool_plan.
    assert isinstance(plan, mw.TextContent)
    assert plan.text == "I will look up the weather in Paris and Tokyo."
    assert isinstance(first, mw.ToolCall) and isinstance(second, mw.ToolCall)
    assert (first.id, first.name, first.arguments) == (
        "get_weather_3v76fs3zjrgq", "get_weather", {"location": "Paris"})  # fmt: skip
    assert second.id == "get_weather_d41p5xnhmncp" and second.arguments == {"location": "Tokyo"}
    assert first.raw_arguments == '{\n    "location": "Paris"\n}'
    assert [e.type for e in evs].count("tool_call_end") == 2
    assert (msg.usage.input, msg.usage.output) == (50, 26)


def test_citations_of_a_grounded_answer() -> None:
    msg = replayed("rag-citations.sse")
    (block,) = msg.content
    assert isinstance(block, mw.TextContent) and msg.stop_reason == "stop"
    first, second = block.citations
    assert (first.kind, first.document, first.start, first.end, first.cited_text) == (
        "document", "harbor-record-1", 0, 10, "Dock Seven")  # fmt: skip
    assert block.text[first.start : first.end] == first.cited_text
    # A document source with a URL is a url citation; the title comes with it.
    assert (second.kind, second.url, second.title) == (
        "url", "https://harbor.example/schedule", "Harbor schedule")  # fmt: skip
    assert block.text[39:72] == second.cited_text
    raw = json.loads(first.raw or "")
    assert raw["type"] == "TEXT_CONTENT" and raw["sources"][0]["id"] == "harbor-record-1"


def test_max_tokens_thinking_error_and_truncation() -> None:
    cut = replayed("max-tokens.sse")
    assert (cut.stop_reason, cut.text, cut.usage.output) == ("length", "The ocean,", 3)
    thought = replayed("thinking.sse")
    thinking, text = thought.content
    assert isinstance(thinking, mw.ThinkingContent) and isinstance(text, mw.TextContent)
    assert thinking.thinking == "Okay, the user wants 2 - 5. That is -3."
    assert text.text == "2 - 5 = -3." and thought.stop_reason == "stop"
    failed = replayed("error-finish.sse")
    assert failed.stop_reason == "error" and failed.error is not None
    assert failed.error.kind == "provider_stream" and failed.text == "Le port"
    assert "internal server error" in failed.error.message and "ERROR" in failed.error.message
    assert failed.error.code == "ERROR"  # the finish reason
    truncated = replayed("truncated.sse")
    assert truncated.error is not None and truncated.error.kind == "truncated_stream"
    assert truncated.text == "Hello, wor"


@pytest.mark.parametrize("name", FILES)
def test_whole_byte_by_byte_and_every_split_give_the_same_events(name: str) -> None:
    same_at_every_split(API, (DATA / name).read_bytes())


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_splits_give_the_same_events(data: st.DataObject) -> None:
    body = (DATA / "rag-citations.sse").read_bytes()
    points = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=30)))
    chunks = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    assert plain(mw.replay(API, chunks)) == plain(mw.replay(API, body))


# --------------------------------------------------------------------------- the decoder's rules


@pytest.mark.parametrize("reason", sorted(spec.FINISH_REASONS))
def test_each_normal_finish_reason(reason: str) -> None:
    msg = final(mw.replay(API, events(START, TEXT_START, text_delta("hi"), end(reason))))
    if reason == "TOOL_CALL":  # TOOL_CALL without a call is a protocol violation
        assert msg.error is not None and msg.error.kind == "tool_call_protocol"
        return
    assert (msg.stop_reason, msg.provider_stop_reason) == (spec.FINISH_REASONS[reason], reason)


@pytest.mark.parametrize("reason", sorted(spec.FAILED_FINISH_REASONS))
def test_each_failed_finish_reason(reason: str) -> None:
    msg = final(mw.replay(API, events(START, end(reason))))
    assert msg.stop_reason == "error" and msg.error is not None
    assert msg.error.kind == spec.FAILED_FINISH_REASONS[reason][0]


def test_unknown_finish_reason_is_an_error_and_unknown_events_are_ignored() -> None:
    future = {"type": "debug", "index": "x", "delta": []}
    msg = final(mw.replay(API, events(START, future, TEXT_START, text_delta("a"), end("NEW"))))
    assert (
        msg.error is not None and msg.error.kind == "provider_stream" and "NEW" in msg.error.message
    )
    assert msg.text == "a"


def test_usage_falls_back_to_tokens_and_takes_whole_numbers_as_doubles() -> None:
    usage = {"tokens": {"input_tokens": 7.0, "output_tokens": 2}}
    msg = final(mw.replay(API, events(START, end(usage=usage))))
    assert (msg.usage.input, msg.usage.output, msg.usage.total_tokens) == (7, 2, 9)


def test_an_overflow_in_an_error_finish_is_context_overflow() -> None:
    error = "too many tokens: total number of tokens in the prompt cannot exceed 256000"
    msg = final(mw.replay(API, events(START, end("ERROR", error=error))))
    assert msg.error is not None and msg.error.kind == "context_overflow"


def test_content_delta_without_content_start_and_done_are_read() -> None:
    body = events(START, text_delta("hel"), text_delta("lo"), end(), "[DONE]")
    assert final(mw.replay(API, body)).text == "hello"


def test_tool_calls_as_a_one_element_array_are_read_too() -> None:
    call = {"id": "read_abc", "type": "function", "function": {"name": "read", "arguments": ""}}
    body = events(
        START,
        {"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": [call]}}},
        {"type": "tool-call-delta", "index": 0,
         "delta": {"message": {"tool_calls": [{"function": {"arguments": "{}"}}]}}},
        {"type": "tool-call-end", "index": 0},
        end("TOOL_CALL"),
    )  # fmt: skip
    msg = final(mw.replay(API, body))
    assert msg.tool_calls[0].name == "read" and msg.stop_reason == "tool_use"


BAD = {
    "message-start content an object": (
        {**START, "delta": {"message": {"content": {"type": "text"}}}},
        "delta.message.content must be an array",
    ),
    "text a number": (text_delta(5), "delta.message.content.text must be a string"),
    "negative index": (text_delta("x", -1), "index must be an integer >= 0"),
    "call without id": (
        {"type": "tool-call-start", "index": 0,
         "delta": {"message": {"tool_calls": {"function": {"name": "read"}}}}},
        "delta.message.tool_calls.id is missing",
    ),
    "sources not an array": (
        {"type": "citation-start", "index": 0,
         "delta": {"message": {"citations": {"start": 0, "end": 1, "sources": {}}}}},
        "delta.message.citations.sources must be an array",
    ),
    "plan missing": ({"type": "tool-plan-delta", "delta": {"message": {}}},
                     "delta.message.tool_plan is missing"),
    "finish_reason missing": ({"type": "message-end", "delta": {}},
                              "delta.finish_reason is missing"),
    "negative usage": (
        end(usage={"billed_units": {"input_tokens": -1}}),
        "delta.usage.billed_units.input_tokens must be a number >= 0",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_malformed_event_names_its_field_path(case: str) -> None:
    payload, says = BAD[case]
    msg = final(mw.replay(API, events(START, TEXT_START, text_delta("kept "), payload, end())))
    assert msg.error is not None and msg.error.kind == "malformed_chunk", msg.error
    assert says in msg.error.message
    assert msg.text == "kept "  # what came before is kept


def test_invalid_json_and_a_foreign_body() -> None:
    msg = final(mw.replay(API, events(START) + b"event: content-delta\ndata: {nope\n\n"))
    assert msg.error is not None and msg.error.kind == "malformed_chunk"
    # A Cohere body replayed as another API names cohere-chat, and the other way round.
    err = final(mw.replay("openai-chat", TOOLS)).error
    assert err is not None and "looks like cohere-chat output, not openai-chat" in err.message
    err = final(mw.replay(API, render("hi", "anthropic-messages"))).error
    assert (
        err is not None and "looks like anthropic-messages output, not cohere-chat" in err.message
    )


# --------------------------------------------------------------------------- the request

PNG = mw.ImageContent(data="iVBORw0KGgo=", mime_type="image/png")


def test_a_whole_conversation_is_encoded_exactly() -> None:
    turn = replayed("tool-plan-parallel-calls.sse")
    results = [mw.ToolResultMessage(tool_call_id=c.id, tool_name=c.name, is_error=False,
                                    content=[mw.TextContent(text=t)])
               for c, t in zip(turn.tool_calls, ["18C", "22C"], strict=True)]  # fmt: skip
    ctx = mw.Context(
        system_prompt="Be brief.",
        messages=[mw.UserMessage(content=[mw.TextContent(text="Weather?"), PNG]), turn, *results],
        tools=[WEATHER],
    )
    vision = mw.get_model("cohere", "command-a-vision-07-2025")
    body = body_of(ctx, vision, max_tokens=300, temperature=0.3,
                   extra_body={"seed": 7, "stop_sequences": ["END"]})  # fmt: skip
    call_0, call_1 = turn.tool_calls
    assert body == {
        "model": "command-a-vision-07-2025",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [
                {"type": "text", "text": "Weather?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ]},
            {"role": "assistant", "tool_plan": "I will look up the weather in Paris and Tokyo.",
             "tool_calls": [
                {"id": call_0.id, "type": "function", "function": {
                    "name": "get_weather", "arguments": '{\n    "location": "Paris"\n}'}},
                {"id": call_1.id, "type": "function", "function": {
                    "name": "get_weather", "arguments": '{\n    "location": "Tokyo"\n}'}},
             ]},
            {"role": "tool", "tool_call_id": call_0.id, "content": [{"type": "text", "text": "18C"}]},
            {"role": "tool", "tool_call_id": call_1.id, "content": [{"type": "text", "text": "22C"}]},
        ],
        "stream": True,
        "tools": [{"type": "function", "function": {
            "name": "get_weather", "description": "Weather", "parameters": WEATHER.parameters}}],
        "max_tokens": 300,
        "temperature": 0.3,
        "seed": 7,
        "stop_sequences": ["END"],
    }  # fmt: skip


def test_the_request_url_auth_and_purity() -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content="hi")])
    before = mw.to_json(ctx)
    req = get_api(API).build_request(MODEL, ctx, resolve_options("cohere", api_key="co-secret"))
    assert req.url == "https://api.cohere.com/v2/chat"
    assert req.headers["Authorization"] == "Bearer co-secret"
    assert req.headers["Accept"] == "text/event-stream" and "co-secret" in req.secrets
    assert b"co-secret" not in req.body and mw.to_json(ctx) == before
    assert json.loads(req.body) == {"model": MODEL.id, "messages": [
        {"role": "user", "content": "hi"}], "stream": True}  # fmt: skip
    assert server_routes()[API] == "/v2/chat"


def test_thinking_and_citations_go_back_to_cohere() -> None:
    thought = replayed("thinking.sse")
    cited = replayed("rag-citations.sse")
    ctx = mw.Context(messages=[mw.UserMessage(content="q"), thought, cited,
                               mw.UserMessage(content="more")])  # fmt: skip
    assistant_1, assistant_2 = body_of(ctx, REASONER)["messages"][1:3]
    assert assistant_1 == {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Okay, the user wants 2 - 5. That is -3."},
        {"type": "text", "text": "2 - 5 = -3."}]}  # fmt: skip
    (block,) = cited.content
    assert isinstance(block, mw.TextContent)
    assert assistant_2["content"] == [{"type": "text", "text": block.text}]
    # One Cohere citation per source was made: each object goes back once.
    assert assistant_2["citations"] == [json.loads(c.raw or "") for c in block.citations]


def test_another_apis_turn_is_replayed_without_its_thinking() -> None:
    turn = mw.AssistantMessage(content=[mw.ThinkingContent(thinking="hmm", signature="s"),
                                        mw.TextContent(text="Hi.")],
                               api="anthropic-messages", provider="anthropic", model="c",
                               stop_reason="stop")  # fmt: skip
    failed = mw.AssistantMessage(content=[mw.TextContent(text="half")], api=API,
                                 provider="cohere", model="m", stop_reason="error")  # fmt: skip
    ctx = mw.Context(messages=[mw.UserMessage(content="a"), turn, failed,
                               mw.UserMessage(content="b")])  # fmt: skip
    assert body_of(ctx)["messages"][1:] == [
        {"role": "assistant", "content": [{"type": "text", "text": "Hi."}]},
        {"role": "user", "content": "b"},
    ]


def test_tool_choice_as_cohere_supports_it() -> None:
    one = mw.Context(messages=[mw.UserMessage(content="x")], tools=[READ])
    two = mw.Context(messages=one.messages, tools=[READ, WEATHER])
    assert "tool_choice" not in body_of(two, tool_choice="auto")
    assert body_of(two, tool_choice="required")["tool_choice"] == "REQUIRED"
    none = body_of(two, tool_choice="none")
    assert none["tool_choice"] == "NONE" and len(none["tools"]) == 2
    # The only declared tool: REQUIRED forces that one.
    assert body_of(one, tool_choice={"name": "read"})["tool_choice"] == "REQUIRED"
    with pytest.raises(mw.ConfigurationError, match="cannot force one tool among several"):
        body_of(two, tool_choice={"name": "read"})
    with pytest.raises(mw.ConfigurationError, match="needs tools"):
        body_of(mw.Context(messages=one.messages), tool_choice="required")


def test_structured_output_and_reasoning() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    out = OutputRequest(mode="native", name="N", schema=schema)
    plain_ctx = mw.Context(messages=[mw.UserMessage(content="Generate a JSON")])
    opts = resolve_options("cohere", api_key="k", reasoning="high")
    opts = msgspec.structs.replace(opts, output=out)
    body = json.loads(get_api(API).build_request(REASONER, plain_ctx, opts).body)
    assert body["response_format"] == {"type": "json_object", "json_schema": schema}
    assert body["thinking"] == {"type": "enabled", "token_budget": spec.THINKING_BUDGETS["high"]}
    tooled = mw.Context(messages=plain_ctx.messages, tools=[READ])
    with pytest.raises(mw.ConfigurationError, match="cannot be combined with tools"):
        get_api(API).build_request(REASONER, tooled, opts)
    with pytest.raises(mw.ConfigurationError, match="does not support a reasoning level"):
        body_of(plain_ctx, reasoning="low")
    # Thinking can be turned off through extra_body; the fields modelwire sets cannot.
    off = body_of(plain_ctx, REASONER, extra_body={"thinking": {"type": "disabled"}})
    assert off["thinking"] == {"type": "disabled"}
    with pytest.raises(mw.ConfigurationError, match="extra_body may not override"):
        body_of(plain_ctx, extra_body={"tool_choice": "REQUIRED"})


def test_text_documents_become_request_documents() -> None:
    doc = mw.DocumentContent(mime_type="text/plain", title="Harbor",
                             data=base64.b64encode(b"Dock Seven").decode())  # fmt: skip
    model = msgspec.structs.replace(MODEL, input=("text", "document"))
    ctx = mw.Context(messages=[mw.UserMessage(content=[doc, mw.TextContent(text="Which dock?")])])
    body = body_of(ctx, model)
    assert body["documents"] == [{"id": "doc_0", "data": {"title": "Harbor", "text": "Dock Seven"}}]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Which dock?"}]}
    ]
    pdf = mw.DocumentContent(mime_type="application/pdf", data="JVBERi0=")
    with pytest.raises(
        mw.ConfigurationError, match=r"messages\[0\]\.content\[0\].*application/pdf"
    ):
        body_of(mw.Context(messages=[mw.UserMessage(content=[pdf])]), model)


# --------------------------------------------------------------------------- catalog and mock


def test_catalog_models_and_the_key_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from modelwire._catalog import env_vars, load_catalog, resolve_model

    assert API in load_catalog().apis
    ids = {m.id for m in mw.models("cohere")}
    assert {"command-a-03-2025", "command-a-reasoning-08-2025", "command-a-vision-07-2025",
            "command-r7b-12-2024", "command-r-plus-08-2024", "command-r-08-2024"} <= ids  # fmt: skip
    model = resolve_model("cohere/command-a-03-2025")
    assert (model.api, model.base_url, model.cost.input, model.cost.output) == (
        API, "https://api.cohere.com/v2", 2.5, 10.0)  # fmt: skip
    assert env_vars("cohere")[0] == "CO_API_KEY"
    assert (
        REASONER.reasoning and "image" in mw.get_model("cohere", "command-a-vision-07-2025").input
    )
    with pytest.raises(mw.errors.MissingAPIKeyError, match="CO_API_KEY"):
        mw.complete_sync("cohere/command-a-03-2025", "hi")
    with MockServer(["Salut."]) as srv:
        monkeypatch.setenv("CO_API_KEY", "co-from-env")
        msg = mw.complete_sync("cohere/command-r7b-12-2024", "hi", base_url=srv.origin + "/v2")
    assert msg.text == "Salut." and msg.provider == "cohere"
    assert srv.requests[0].headers["authorization"] == "Bearer co-from-env"


def test_the_mock_server_answers_cohere_chat_over_two_turns() -> None:
    script: list[Any] = ["I will read it.", mw.ToolCall(id="read_1", name="read",
                                                       arguments={"path": "a"})]  # fmt: skip
    ctx = mw.Context(messages=[mw.UserMessage(content="read a")], tools=[READ])
    with MockServer([script, "It says hi."]) as srv:
        model = srv.model(API, "command-a-03-2025")
        first = mw.complete_sync(model, ctx)
        result = mw.ToolResultMessage(tool_call_id="read_1", tool_name="read", is_error=False,
                                      content=[mw.TextContent(text="hi")])  # fmt: skip
        second = mw.complete_sync(model, mw.Context(messages=[*ctx.messages, first, result],
                                                    tools=[READ]))  # fmt: skip
    assert first.stop_reason == "tool_use" and first.text == "I will read it."
    assert second.text == "It says hi."
    rec = srv.requests[1]
    assert (rec.path, rec.api, rec.model) == ("/v2/chat", API, "command-a-03-2025")
    assert rec.json()["messages"][1]["tool_plan"] == "I will read it."
    from modelwire._cli.demo import tool_result_text

    assert tool_result_text(API, rec.json()) == "hi"


def test_the_mock_answers_without_stream_and_with_cohere_errors() -> None:
    with MockServer(["Hello.", Reply(status=401, error="invalid api token")]) as srv:
        whole = httpx.post(srv.origin + "/v2/chat", json={"model": "m", "messages": []}).json()
        failed = mw.complete_sync(srv.model(API), "hi", api_key="co-key-1", max_retries=0)
    assert whole["finish_reason"] == "COMPLETE" and whole["message"]["content"] == [
        {"type": "text", "text": "Hello."}]  # fmt: skip
    assert failed.error is not None and failed.error.kind == "authentication"
    assert "invalid api token" in failed.error.message


def test_render_of_thinking_and_citations_round_trips() -> None:
    cite = mw.Citation(kind="document", document="d1", cited_text="Hi", start=0, end=2)
    script: list[Any] = [mw.ThinkingContent(thinking="hmm"),
                         mw.TextContent(text="Hi there", citations=(cite,))]  # fmt: skip
    msg = final(mw.replay(API, render(script, API, piece_chars=3)))
    thinking, text = msg.content
    assert isinstance(thinking, mw.ThinkingContent) and thinking.thinking == "hmm"
    assert isinstance(text, mw.TextContent) and text.text == "Hi there"
    (back,) = text.citations
    assert (back.document, back.start, back.end, back.cited_text) == ("d1", 0, 2, "Hi")
