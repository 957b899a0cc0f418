"""The official ``anthropic`` SDK and pydantic-ai's ``AnthropicModel`` against the
gateway (uvicorn on loopback, in a thread), with backends of every wire API served by
one MockServer: streamed and not, tools and thinking round-tripped across two turns.
Each second backend request (recorded by the MockServer, in the backend's own API) is
checked for what the first answer gave the client: the thinking signature, the tool
call id and its arguments."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

import modelwire as mw
from modelwire._apis._server.origin import unseal
from modelwire.gateway import GatewayServer, hash_key
from modelwire.gateway._anthropic import FRONTEND
from modelwire.testing import APIS, MockServer, RecordedRequest, render

KEY = "sk-gw-anthropic-test-0123456789"
TOOLS = [{"name": "read", "description": "Read a file",
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}},
                           "required": ["path"]}}]  # fmt: skip
ARGS = {"path": "notes ü.txt", "lines": [1, 2]}
#: APIs whose calls have no ids on the wire: modelwire makes one up per response.
MADE_UP_IDS = ("google-generative-ai", "ollama-chat")


@pytest.fixture(scope="module")
def backend() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(scope="module")
def gateway(backend: MockServer) -> Iterator[GatewayServer]:
    """One gateway for the module: a model per wire API, each named by its API."""
    models: dict[str, Any] = {
        api: {"api": api, "id": f"mock-{api}", "base_url": backend.model(api).base_url,
              "reasoning": True} for api in APIS
    }  # fmt: skip
    # Bedrock sends reasoning to Claude model ids only, unless told this model takes it.
    models["bedrock-converse"]["compat"] = {"thinking": True}
    config = {"models": models, "keys": {"team": {"key_sha256": hash_key(KEY), "models": ["*"]}}}
    with GatewayServer(config, frontends=[FRONTEND]) as gw:
        yield gw


@pytest.fixture(autouse=True)
def fresh(backend: MockServer) -> Iterator[None]:
    """Each test scripts its own replies: none left over from a failed one."""
    yield
    with backend._lock:
        backend._replies.clear()


@pytest.fixture
def client(gateway: GatewayServer) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=gateway.base_url, api_key=KEY, max_retries=0,
                             timeout=60) as c:  # fmt: skip
        yield c


def sent(backend: MockServer, since: int) -> list[RecordedRequest]:
    return [r for r in backend.requests[since:] if r.api is not None]


def turn_one(api: str) -> mw.AssistantMessage:
    return mw.AssistantMessage(
        content=[
            mw.ThinkingContent(thinking="I should read the notes.", signature=f"sig-{api}"),
            mw.TextContent(text="Reading them."),
            mw.ToolCall(id=f"call_{api.replace('-', '_')}_1", name="read", arguments=ARGS,
                        raw_arguments=json.dumps(ARGS, ensure_ascii=False)),
        ],
        api="", provider="", model="", stop_reason="tool_use",
        usage=mw.Usage(input=30, output=12, cache_read=4, cache_write=2),
    )  # fmt: skip


def said_by(api: str, script: mw.AssistantMessage) -> mw.AssistantMessage:
    """What modelwire itself reads from the backend's bytes for ``script``."""
    return mw.replay(api, render(script, api)).message


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_a_text_answer(
    api: str, stream: bool, backend: MockServer, client: anthropic.Anthropic
) -> None:
    script = mw.AssistantMessage(
        content=[mw.TextContent(text="Grüße from the backend, 世界.")], api="", provider="",
        model="", stop_reason="stop", usage=mw.Usage(input=9, output=5, cache_read=3),
    )  # fmt: skip
    said = said_by(api, script)
    backend.add(script)
    since = len(backend.requests)
    kw: dict[str, Any] = {"model": api, "max_tokens": 300, "system": "Be brief.",
                          "messages": [{"role": "user", "content": "hello"}]}  # fmt: skip
    if stream:
        with client.messages.stream(**kw) as s:
            deltas = list(s.text_stream)
            message = s.get_final_message()
        assert "".join(deltas) == said.text and len(deltas) > 1
    else:
        message = client.messages.create(**kw)
    assert message.model == api and message.id.startswith("msg_")
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].text == said.text
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens == said.usage.input
    assert message.usage.output_tokens == said.usage.output
    assert message.usage.cache_read_input_tokens == said.usage.cache_read
    (request,) = sent(backend, since)
    assert request.api == api and "Be brief." in request.body.decode()


def backend_carries(api: str, request: RecordedRequest, call_id: str, sig: str | None) -> None:
    """The second backend request has, in its own API, what the first answer said:
    the call id and ``sig``, the backend's own thinking signature."""
    body = request.json()
    text = request.body.decode()
    assert call_id in text or api in MADE_UP_IDS, text
    if api in ("anthropic-messages", "bedrock-converse", "google-generative-ai"):
        assert sig and sig in text, text  # the provider's own signature, replayed
    elif api == "openai-responses":
        assert sig is not None
        item = json.loads(sig)
        assert any(isinstance(i, dict) and i.get("id") == item["id"] for i in body["input"]), text
    # The arguments go back as the same JSON value (an Anthropic client holds an object).
    found = _arguments(body)
    assert ARGS in found, found
    assert "file text" in text


def _arguments(value: Any) -> list[Any]:
    """Every tool-call arguments value in a request body, parsed when it is JSON text."""
    out: list[Any] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ("arguments", "input", "args"):
                out.append(json.loads(v) if isinstance(v, str) else v)
            out.extend(_arguments(v))
    elif isinstance(value, list):
        for v in value:
            out.extend(_arguments(v))
    return out


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_thinking_and_tools_across_two_turns(
    api: str, stream: bool, backend: MockServer, client: anthropic.Anthropic
) -> None:
    first = said_by(api, turn_one(api))
    backend.add(turn_one(api), "All read.")
    since = len(backend.requests)
    messages: list[Any] = [{"role": "user", "content": "read my notes"}]
    kw: dict[str, Any] = {"model": api, "max_tokens": 4000, "tools": TOOLS,
                          "thinking": {"type": "enabled", "budget_tokens": 2048}}  # fmt: skip
    if stream:
        with client.messages.stream(messages=messages, **kw) as s:
            answer = s.get_final_message()
    else:
        answer = client.messages.create(messages=messages, **kw)
    assert answer.stop_reason == "tool_use"
    assert [b.type for b in answer.content] == ["thinking", "text", "tool_use"]
    thinking, _, use = answer.content
    assert thinking.type == "thinking" and use.type == "tool_use"
    assert thinking.thinking == "I should read the notes."
    offline = first.content[0]
    assert isinstance(offline, mw.ThinkingContent)
    if api == "anthropic-messages":
        assert thinking.signature == f"sig-{api}"
        sig: str | None = thinking.signature
    else:  # another API's turn, sealed in the one field the client gives back
        origin = unseal(thinking.signature)
        assert origin is not None and origin.api == api and origin.model == f"mock-{api}"
        sig = origin.signature
        if api == "openai-responses":  # the item id names the live response: compare the rest
            assert sig is not None and offline.signature is not None
            assert json.loads(sig)["summary"] == json.loads(offline.signature)["summary"]
        else:
            assert sig == offline.signature
    assert use.id == first.tool_calls[0].id or api in MADE_UP_IDS
    assert (use.name, use.input) == ("read", ARGS)
    assert answer.usage.cache_creation_input_tokens == first.usage.cache_write

    messages += [
        {"role": "assistant", "content": [b.to_dict() for b in answer.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                      "content": "file text"}]},
    ]  # fmt: skip
    final = client.messages.create(messages=messages, **kw)
    assert final.content[0].type == "text" and final.content[0].text == "All read."
    requests = sent(backend, since)
    assert [r.api for r in requests] == [api, api]
    backend_carries(api, requests[1], use.id, sig)


def test_a_bad_request_is_the_apis_400(client: anthropic.Anthropic) -> None:
    wrong: Any = [{"role": "user", "content": [{"type": "text", "text": 5}]}]
    with pytest.raises(anthropic.BadRequestError) as info:
        client.messages.create(model="openai-chat", max_tokens=10, messages=wrong)
    assert "messages[0].content[0].text must be a string" in str(info.value)
    assert info.value.body["error"]["type"] == "invalid_request_error"


def test_a_passthrough_field_reaches_an_anthropic_backend_only(
    backend: MockServer, client: anthropic.Anthropic
) -> None:
    backend.add("stopped")
    since = len(backend.requests)
    client.messages.create(model="anthropic-messages", max_tokens=10, extra_body={"top_k": 3},
                           messages=[{"role": "user", "content": "hi"}])  # fmt: skip
    (request,) = sent(backend, since)
    assert request.json()["top_k"] == 3
    with pytest.raises(anthropic.BadRequestError) as info:
        client.messages.create(model="openai-chat", max_tokens=10, extra_body={"top_k": 3},
                               messages=[{"role": "user", "content": "hi"}])  # fmt: skip
    assert "top_k" in str(info.value)


def test_a_backend_failure_is_the_apis_typed_error(
    backend: MockServer, client: anthropic.Anthropic
) -> None:
    from modelwire.testing import error_reply

    # A Retry-After past modelwire's 60 s wait ends the call at once (no retry).
    backend.add(error_reply(429, "slow down", headers={"retry-after": "120"}))
    with pytest.raises(anthropic.RateLimitError) as info:
        client.messages.create(model="openai-chat", max_tokens=10,
                               messages=[{"role": "user", "content": "hi"}])  # fmt: skip
    assert info.value.body["error"]["type"] == "rate_limit_error"
    assert info.value.response.headers["retry-after"] == "120"


@pytest.mark.anyio
@pytest.mark.parametrize("streaming", [False, True], ids=["run", "run_stream"])
@pytest.mark.parametrize("api", APIS)
async def test_pydantic_ai_anthropic_model(
    api: str, streaming: bool, backend: MockServer, gateway: GatewayServer
) -> None:
    httpx2 = pytest.importorskip("httpx2")
    from pydantic_ai import Agent
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    call = mw.ToolCall(id="call_pa_1", name="read", arguments={"path": "a.txt"},
                       raw_arguments='{"path": "a.txt"}')  # fmt: skip
    backend.add(mw.AssistantMessage(content=[call], api="", provider="", model="",
                                    stop_reason="tool_use"), "Read it.")  # fmt: skip
    since = len(backend.requests)
    async with httpx2.AsyncClient(timeout=60) as http:
        provider = AnthropicProvider(base_url=gateway.base_url, api_key=KEY, http_client=http)
        agent = Agent(AnthropicModel(api, provider=provider))
        seen: list[str] = []

        @agent.tool_plain
        def read(path: str) -> str:
            """Read a file."""
            seen.append(path)
            return "file text"

        if streaming:
            async with agent.run_stream("read a.txt") as run:
                output = await run.get_output()
        else:
            output = (await agent.run("read a.txt")).output
    assert output == "Read it." and seen == ["a.txt"]
    requests = sent(backend, since)
    assert [r.api for r in requests] == [api, api]
    assert "file text" in requests[1].body.decode()
    assert {"path": "a.txt"} in _arguments(requests[1].json())


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_structured_output(
    api: str, stream: bool, backend: MockServer, client: anthropic.Anthropic
) -> None:
    """``output_config.format`` asks any backend for JSON of the schema, natively or
    by a forced tool, and the client gets the JSON as text."""
    from modelwire._apis._output_modes import output_mode
    from modelwire._client._output._plan import OUTPUT_TOOL

    schema = {"type": "object", "properties": {"city": {"type": "string"}},
              "required": ["city"], "additionalProperties": False}  # fmt: skip
    value = {"city": "Zürich"}
    route = mw.Model(id=f"mock-{api}", api=api, provider=api, base_url="http://127.0.0.1:9")
    if output_mode(route) == "tool":
        backend.add(mw.ToolCall(id="call_out_1", name=OUTPUT_TOOL, arguments=value))
    else:
        backend.add(json.dumps(value, ensure_ascii=False))
    kw: dict[str, Any] = {"model": api, "max_tokens": 200,
                          "messages": [{"role": "user", "content": "where?"}],
                          "extra_body": {"output_config": {"format": {
                              "type": "json_schema", "schema": schema}}}}  # fmt: skip
    if stream:
        with client.messages.stream(**kw) as s:
            message = s.get_final_message()
    else:
        message = client.messages.create(**kw)
    assert message.stop_reason == "end_turn"
    (block,) = message.content
    assert block.type == "text" and json.loads(block.text) == value
    assert "city" in backend.requests[-1].body.decode()  # the schema reached the backend


@pytest.mark.parametrize("api", APIS)
def test_a_backend_stream_cut_mid_answer_is_a_failure_for_the_client(
    api: str, backend: MockServer, client: anthropic.Anthropic
) -> None:
    from modelwire.testing import Reply

    full = render("a long answer " * 20, api)
    backend.add(Reply(message="a long answer " * 20, cut_after=len(full) // 2))
    seen: list[str] = []
    stream = client.messages.stream(model=api, max_tokens=100,
                                    messages=[{"role": "user", "content": "go"}])  # fmt: skip
    with pytest.raises(anthropic.APIStatusError) as info, stream as s:
        seen.extend(s.text_stream)
    assert seen, "the answer began before the cut"
    assert info.value.body["error"]["type"] == "api_error"
