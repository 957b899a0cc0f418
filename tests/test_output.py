"""Structured output (``output=``): the native request field of every wire API as the
mock server receives it, the forced-tool and prompted modes, every schema kind, every
failure mode as ``output_invalid``, partial objects while streaming, and the string
model / prompt conveniences."""

from __future__ import annotations

import dataclasses
import itertools
import json
from typing import Any, TypedDict

import msgspec
import pydantic
import pytest

import modelwire as mw
from modelwire.testing import MockServer, Reply, sse_body

pytestmark = pytest.mark.anyio

ANSWER = '{"name": "Paris", "population": 2100000}'


class City(pydantic.BaseModel):
    name: str
    population: int


class CityStruct(msgspec.Struct):
    name: str
    population: int


@dataclasses.dataclass
class CityData:
    name: str
    population: int


class CityDict(TypedDict):
    name: str
    population: int


CITY_SCHEMA: dict[str, Any] = {
    "title": "City",
    "type": "object",
    "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["name", "population"],
}

NATIVE_APIS = [
    "openai-chat",
    "openai-responses",
    "anthropic-messages",
    "google-generative-ai",
    "ollama-chat",
]


def _native_field(api: str, body: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema the request carried in ``api``'s native field."""
    if api == "openai-chat":
        rf = body["response_format"]
        assert rf["type"] == "json_schema" and rf["json_schema"]["name"].startswith("City")
        assert rf["json_schema"]["strict"] is True
        schema: dict[str, Any] = rf["json_schema"]["schema"]
        return schema
    if api == "openai-responses":
        fmt = body["text"]["format"]
        assert (
            fmt["type"] == "json_schema"
            and fmt["name"].startswith("City")
            and fmt["strict"] is True
        )
        return dict(fmt["schema"])
    if api == "anthropic-messages":
        fmt = body["output_config"]["format"]
        assert fmt["type"] == "json_schema"
        return dict(fmt["schema"])
    if api == "google-generative-ai":
        gen = body["generationConfig"]
        assert gen["responseMimeType"] == "application/json"
        return dict(gen["responseJsonSchema"])
    assert api == "ollama-chat"
    return dict(body["format"])


@pytest.mark.parametrize("api", NATIVE_APIS)
def test_native_field_on_the_wire_and_parsed_value(api: str) -> None:
    with MockServer([ANSWER]) as srv:
        msg = mw.complete_sync(srv.model(api=api), "Largest city of France?", output=City,
                               output_mode="native", api_key="k")  # fmt: skip
        body = srv.last_request.json()
    schema = _native_field(api, body)
    assert schema["properties"]["population"]["type"] == "integer"
    assert schema["required"] == ["name", "population"]
    if api in ("openai-chat", "openai-responses", "anthropic-messages"):
        assert schema["additionalProperties"] is False  # strict / closed objects
    # No synthetic tool in the native mode.
    assert "final_result" not in json.dumps(body)
    assert msg.stop_reason == "stop" and msg.error is None
    assert msg.parsed == City(name="Paris", population=2100000)
    assert isinstance(msg.parsed, City)


@pytest.mark.parametrize("api", NATIVE_APIS)
async def test_native_field_async(api: str) -> None:
    with MockServer([ANSWER]) as srv:
        msg = await mw.complete(srv.model(api=api), "?", output=CityStruct, output_mode="native",
                                api_key="k")  # fmt: skip
        body = srv.last_request.json()
    assert _native_field(api, body)["properties"]["name"] == {"type": "string"}
    assert msg.parsed == CityStruct(name="Paris", population=2100000)


def test_strict_only_where_the_schema_allows_it() -> None:
    class Maybe(pydantic.BaseModel):
        name: str
        population: int | None = None  # optional: no strict form

    with MockServer(['{"name": "Paris"}']) as srv:
        msg = mw.complete_sync(srv.model(), "?", output=Maybe, output_mode="native")
        spec = srv.last_request.json()["response_format"]["json_schema"]
    assert "strict" not in spec
    assert "additionalProperties" not in spec["schema"]  # sent as given
    assert msg.parsed == Maybe(name="Paris")


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (City, City(name="Paris", population=2100000)),
        (CityStruct, CityStruct(name="Paris", population=2100000)),
        (CityData, CityData(name="Paris", population=2100000)),
        (CityDict, {"name": "Paris", "population": 2100000}),
        (CITY_SCHEMA, {"name": "Paris", "population": 2100000}),
    ],
    ids=["pydantic", "struct", "dataclass", "typeddict", "json-schema"],
)
@pytest.mark.parametrize("mode", ["native", "tool", "prompted"])
def test_every_schema_kind_in_every_mode(output: Any, expected: Any, mode: str) -> None:
    reply: Any = ANSWER
    if mode == "tool":
        reply = mw.ToolCall(id="c1", name="final_result", arguments=json.loads(ANSWER))
    with MockServer([reply]) as srv:
        msg = mw.complete_sync(srv.model(), "?", output=output, output_mode=mode)  # type: ignore[arg-type]
        body = srv.last_request.json()
    assert msg.error is None, msg.error
    assert msg.parsed == expected and type(msg.parsed) is type(expected)
    if mode == "tool":
        (tool,) = body["tools"]
        assert tool["function"]["name"] == "final_result"
        assert tool["function"]["parameters"]["properties"]["population"]["type"] == "integer"
        assert body["tool_choice"] == {"type": "function", "function": {"name": "final_result"}}
    if mode == "prompted":
        system = body["messages"][0]
        assert system["role"] in ("system", "developer")
        assert '"population"' in system["content"] and "JSON Schema" in system["content"]
        assert "response_format" not in body and "tools" not in body


def test_a_non_object_output_is_wrapped_and_unwrapped() -> None:
    with MockServer(['{"result": [1, 2, 3]}']) as srv:
        msg = mw.complete_sync(srv.model(), "?", output=list[int], output_mode="native")
        schema = srv.last_request.json()["response_format"]["json_schema"]["schema"]
    assert schema["type"] == "object" and schema["required"] == ["result"]
    assert schema["properties"]["result"]["type"] == "array"
    assert msg.parsed == [1, 2, 3]


def test_prompted_output_in_a_code_fence_is_read() -> None:
    with MockServer(["```json\n" + ANSWER + "\n```"]) as srv:
        msg = mw.complete_sync(srv.model(), "?", output=City, output_mode="prompted")
    assert msg.parsed.population == 2100000


# --------------------------------------------------------------------------- tool mode


@pytest.mark.parametrize("api", ["bedrock-converse", "anthropic-messages", "openai-chat"])
def test_tool_mode_never_leaks_the_answer_tool_as_a_call(api: str) -> None:
    call = mw.ToolCall(id="c1", name="final_result", arguments=json.loads(ANSWER))
    with MockServer([call]) as srv:
        s = mw.stream_sync(srv.model(api=api), "?", output=City, output_mode="tool")
        events = list(s)
        body = srv.last_request.json()
    msg = s.result()
    assert events[-1].type == "done" and events[-1].reason == "stop"
    assert msg.stop_reason == "stop" and msg.tool_calls == ()
    assert json.loads(msg.text) == json.loads(ANSWER)  # the arguments, as text
    assert msg.parsed == City(name="Paris", population=2100000)
    if api == "bedrock-converse":
        assert body["toolConfig"]["toolChoice"] == {"tool": {"name": "final_result"}}
    elif api == "anthropic-messages":
        assert body["tool_choice"] == {"type": "tool", "name": "final_result"}


def test_bedrock_defaults_to_the_forced_tool_and_refuses_native() -> None:
    call = mw.ToolCall(id="c1", name="final_result", arguments=json.loads(ANSWER))
    with MockServer([call]) as srv:
        model = srv.model(api="bedrock-converse")
        msg = mw.complete_sync(model, "?", output=City, api_key="k")
        assert srv.last_request.json()["toolConfig"]["toolChoice"]["tool"]["name"] == (
            "final_result"
        )
        with pytest.raises(mw.ConfigurationError, match="no native structured output"):
            mw.stream_sync(model, "?", output=City, output_mode="native", api_key="k")
    assert msg.parsed.name == "Paris"


def test_ollama_cannot_force_the_answer_tool() -> None:
    with MockServer() as srv, pytest.raises(mw.ConfigurationError, match="cannot force"):
        mw.stream_sync(srv.model(api="ollama-chat"), "?", output=City, output_mode="tool")


def test_tool_mode_with_the_callers_tools_requires_a_call_and_keeps_theirs() -> None:
    weather = mw.ToolDefinition(name="weather", description="d", parameters={"type": "object"})
    ctx = mw.Context(messages=[mw.UserMessage(content="?")], tools=[weather])
    with MockServer([mw.ToolCall(id="c1", name="weather", arguments={})]) as srv:
        msg = mw.complete_sync(srv.model(), ctx, output=City, output_mode="tool")
        body = srv.last_request.json()
    assert body["tool_choice"] == "required"
    assert [t["function"]["name"] for t in body["tools"]] == ["weather", "final_result"]
    assert msg.stop_reason == "tool_use" and [c.name for c in msg.tool_calls] == ["weather"]
    with pytest.raises(mw.errors.OutputInvalidError, match="called tools"):
        _ = msg.parsed


def test_a_tool_named_like_the_answer_tool_is_refused() -> None:
    clash = mw.ToolDefinition(name="final_result", description="d", parameters={"type": "object"})
    ctx = mw.Context(messages=[mw.UserMessage(content="?")], tools=[clash])
    with MockServer() as srv, pytest.raises(mw.ConfigurationError, match="final_result"):
        mw.stream_sync(srv.model(), ctx, output=City, output_mode="tool")


# --------------------------------------------------------------------------- failures


def _chat(content: str, finish: str = "stop", refusal: str | None = None) -> bytes:
    delta: dict[str, Any] = {"role": "assistant", "content": content}
    if refusal is not None:
        delta = {"role": "assistant", "refusal": refusal}
    chunk = {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    end = {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    return sse_body([chunk, end])


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (_chat('{"name": "Paris", "population": "many"}'), r"\$\.population: .*integer"),
        (_chat('{"population": 1}'), r"\$\.name: Field required"),
        (_chat("Paris, about two million"), r"\$: the output is not valid JSON"),
        (_chat(""), "no output"),
        (_chat('{"name": "Par', finish="length"), "token limit"),
        (_chat("", refusal="I can't help with that."), "not valid JSON"),
    ],
    ids=["wrong-type", "missing-field", "not-json", "empty", "length", "refusal"],
)
def test_invalid_output_ends_with_output_invalid(body: bytes, match: str) -> None:
    with MockServer([Reply(body=body)]) as srv:
        s = mw.stream_sync(srv.model(), "?", output=City, output_mode="native")
        events = list(s)
    msg = s.result()
    last = events[-1]
    assert last.type == "error" and last.message is msg
    assert msg.stop_reason == "error" and msg.error is not None
    assert msg.error.kind == "output_invalid"
    assert msg.error.message.count("City") >= 1 or "token limit" in match
    with pytest.raises(mw.errors.OutputInvalidError, match=match):
        msg.raise_for_error()
    with pytest.raises(mw.errors.OutputInvalidError, match=match):
        _ = msg.parsed
    # All content received is kept (a refusal is text, DESIGN §2a).
    assert msg.text == body_text(body)


def body_text(body: bytes) -> str:
    text = ""
    for line in body.decode().splitlines():
        if line.startswith("data: {"):
            delta = json.loads(line[6:])["choices"][0]["delta"]
            text += (delta.get("content") or "") + (delta.get("refusal") or "")
    return text


def test_a_json_schema_dict_names_every_failing_path() -> None:
    bad = '{"name": 3, "population": "x"}'
    with MockServer([bad]) as srv:
        msg = mw.complete_sync(srv.model(), "?", output=CITY_SCHEMA, output_mode="native")
    assert msg.error is not None and msg.error.kind == "output_invalid"
    assert "$.name" in msg.error.message and "$.population" in msg.error.message


def test_a_failed_request_raises_its_own_error_from_parsed() -> None:
    with MockServer([Reply(error="slow down", status=429)]) as srv:
        msg = mw.complete_sync(srv.model(), "?", output=City, max_retries=0)
    assert msg.error is not None and msg.error.kind == "rate_limit"
    with pytest.raises(mw.errors.RateLimitError):
        _ = msg.parsed


def test_parsed_without_output_and_after_a_json_round_trip() -> None:
    with MockServer([ANSWER, ANSWER]) as srv:
        plain = mw.complete_sync(srv.model(), "?")
        with_output = mw.complete_sync(srv.model(), "?", output=City)
    with pytest.raises(mw.ConfigurationError, match="output="):
        _ = plain.parsed
    assert with_output.parsed.name == "Paris"
    # The value is not part of the message's JSON: the round trip equals the message.
    back = mw.from_json(mw.to_json(with_output), mw.AssistantMessage)
    assert back == with_output and repr(with_output).startswith("AssistantMessage(")
    with pytest.raises(mw.ConfigurationError):
        _ = back.parsed


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"output": 42}, "output must be"),
        ({"output": City, "output_mode": "json"}, "output_mode must be"),
        ({"output_mode": "tool"}, "needs output="),
        ({"output": {"type": "object", "properties": 3}}, "output="),
    ],
)
def test_caller_mistakes_raise_before_any_request(kwargs: dict[str, Any], match: str) -> None:
    with MockServer() as srv:
        with pytest.raises(mw.ConfigurationError, match=match):
            mw.stream_sync(srv.model(), "?", **kwargs)
        assert srv.requests == []


# --------------------------------------------------------------------------- default mode


@pytest.mark.parametrize(
    ("provider", "model_id", "mode"),
    [
        ("openai", "gpt-4.1-mini", "native"),
        ("openai", "gpt-5", "native"),
        ("anthropic", "claude-sonnet-4-5", "native"),
        ("vertex-anthropic", "claude-sonnet-4-5@20250929", "tool"),
        ("google", "gemini-2.5-flash", "native"),
        ("google", "gemini-2.0-flash", "tool"),
        ("deepseek", "deepseek-chat", "tool"),
        ("amazon-bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0", "tool"),
        ("ollama", "llama3.2", "native"),
    ],
)
def test_the_default_mode_follows_the_catalog(provider: str, model_id: str, mode: str) -> None:
    from modelwire._apis._output_modes import output_mode

    assert output_mode(mw.get_model(provider, model_id)) == mode


def test_a_custom_api_defaults_to_the_prompted_mode() -> None:
    from modelwire.testing import ScriptedModel

    scripted = ScriptedModel([ANSWER])
    msg = mw.complete_sync(scripted.model, "?", output=City)
    assert msg.parsed.population == 2100000
    assert "JSON Schema" in (scripted.contexts[-1].system_prompt or "")


# --------------------------------------------------------------------------- partial output


def test_partial_objects_while_streaming_sync() -> None:
    with MockServer([Reply(message=ANSWER, piece_chars=4)]) as srv:
        s = mw.stream_sync(srv.model(), "?", output=City, output_mode="native")
        seen = []
        for ev in s:
            if ev.type == "text_delta":
                seen.append(s.partial_output)
    assert len(seen) > 5
    assert all(isinstance(v, dict) for v in seen[1:])
    assert seen[-1] == {"name": "Paris", "population": 2100000}
    # Grows monotonically: each partial object is a prefix of the next one's keys.
    keys = [list(v) for v in seen if isinstance(v, dict)]
    assert all(a == b[: len(a)] for a, b in itertools.pairwise(keys))
    assert any(v.get("name") not in (None, "Paris") for v in seen if isinstance(v, dict))
    assert s.result().parsed.name == "Paris"


async def test_partial_objects_while_streaming_in_tool_mode() -> None:
    call = mw.ToolCall(id="c1", name="final_result", arguments=json.loads(ANSWER))
    with MockServer([Reply(message=call, piece_chars=4)]) as srv:
        s = mw.stream(srv.model(), "?", output=City, output_mode="tool")
        assert s.partial_output is None
        seen = [s.partial_output async for ev in s if ev.type == "tool_call_delta"]
    assert seen and seen[-1] == json.loads(ANSWER)
    assert any(v != seen[-1] for v in seen)  # partial before complete
    assert (await s.result()).parsed.population == 2100000


# --------------------------------------------------------------------------- five lines


def test_a_model_string_and_a_prompt_string() -> None:
    with MockServer([ANSWER]) as srv:
        msg = mw.complete_sync("openai/gpt-4.1-mini", "hi", base_url=srv.base_url, api_key="k")
        req = srv.last_request
    assert req.path == "/v1/chat/completions" or req.path == "/v1/responses"
    body = req.json()
    assert body["model"] == "gpt-4.1-mini"
    assert msg.model == "gpt-4.1-mini" and msg.provider == "openai"


def test_an_unknown_id_with_base_url_is_a_model_of_the_providers_api() -> None:
    with MockServer(["ok"]) as srv:
        msg = mw.complete_sync("anthropic/claude-next", "hi", base_url=srv.base_url, api_key="k")
        assert srv.last_request.path == "/v1/messages"
    assert msg.api == "anthropic-messages" and msg.model == "claude-next" and msg.text == "ok"
    with pytest.raises(mw.ConfigurationError, match="unknown model"):
        mw.stream_sync("anthropic/claude-next", "hi", api_key="k")


def test_base_url_overrides_the_models() -> None:
    with MockServer(["ok"]) as srv:
        far = mw.Model(id="m", api="openai-chat", provider="local", base_url="http://10.0.0.1/v1")
        msg = mw.complete_sync(far, "hi", base_url=srv.base_url + "/")
        assert srv.last_request.path == "/v1/chat/completions"
    assert msg.text == "ok"
    with pytest.raises(mw.ConfigurationError, match="base_url"):
        mw.stream_sync(far, "hi", base_url="ftp://x")


# --------------------------------------------------------------------------- agent


def _user_texts(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


async def test_the_agent_feeds_invalid_output_back_and_retries() -> None:
    bad = '{"name": "Paris", "population": "lots"}'
    with MockServer([bad, ANSWER]) as srv:
        agent = mw.Agent(srv.model(), output=City)
        run = await agent.run("Largest city of France?")
        second = srv.requests[1].json()
    assert run.stop_reason == "stop" and run.final.parsed == City(name="Paris", population=2100000)
    feedback = _user_texts(second)[-1]
    assert bad in feedback and "$.population" in feedback and "Answer again" in feedback
    kinds = [m.error.kind if isinstance(m, mw.AssistantMessage) and m.error else None
             for m in run.messages]  # fmt: skip
    assert kinds.count("output_invalid") == 1


@pytest.mark.parametrize("retries", [0, 2])
def test_the_agent_retries_at_most_output_retries_times(retries: int) -> None:
    with MockServer(["not json"], repeat_last=True) as srv:
        agent = mw.Agent(srv.model(), output=City, output_mode="native", output_retries=retries)
        run = agent.run_sync("?")
        assert len(srv.requests) == retries + 1
    assert run.stop_reason == "error"
    assert run.final.error is not None and run.final.error.kind == "output_invalid"
    with pytest.raises(mw.errors.OutputInvalidError):
        _ = run.final.parsed


def test_output_retries_is_checked() -> None:
    with pytest.raises(mw.ConfigurationError, match="output_retries"):
        mw.Agent(mw.Model(id="m", api="openai-chat", provider="local", base_url="http://x/v1"),
                 output_retries=-1)  # fmt: skip


def test_the_agent_in_tool_mode_runs_only_the_callers_tools() -> None:
    ran: list[str] = []

    @mw.tool
    def population(city: str) -> int:
        """Population of a city."""
        ran.append(city)
        return 2100000

    replies = [
        mw.ToolCall(id="c1", name="population", arguments={"city": "Paris"}),
        mw.ToolCall(id="c2", name="final_result", arguments=json.loads(ANSWER)),
    ]
    with MockServer(replies) as srv:
        agent = mw.Agent(srv.model(), tools=[population], output=City, output_mode="tool")
        run = agent.run_sync("Largest city of France?")
        bodies = [r.json() for r in srv.requests]
    assert ran == ["Paris"]
    assert all(b["tool_choice"] == "required" for b in bodies)
    assert run.final.parsed.population == 2100000 and run.stop_reason == "stop"
    names = [c.name for m in run.messages if isinstance(m, mw.AssistantMessage)
             for c in m.tool_calls]  # fmt: skip
    assert names == ["population"]  # the answer tool never stays a call
    results = [m.tool_name for m in run.messages if isinstance(m, mw.ToolResultMessage)]
    assert results == ["population"]


def test_the_agent_takes_a_model_string() -> None:
    with MockServer(["hi"]) as srv:
        agent = mw.Agent("openai/gpt-4.1-mini", base_url=srv.base_url, api_key="k")
        run = agent.run_sync("hello")
        assert srv.last_request.json()["model"] == "gpt-4.1-mini"
    assert run.final.text == "hi"
