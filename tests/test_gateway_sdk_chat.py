"""The official openai SDK and pydantic-ai, pointed at the gateway's Chat Completions
front-end, against MockServer backends of every wire API: two turns with thinking and
a tool call, streamed and not; the client gets what the backend said, and the second
backend request carries the thinking signatures, tool-call ids and raw arguments."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pydantic
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, ThinkingPart, ToolCallPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

import modelwire as mw
from modelwire._client._output._plan import OUTPUT_TOOL
from modelwire.gateway import GatewayServer, hash_key
from modelwire.testing import APIS, MockServer, RecordedRequest, Reply, render, tool_call
from modelwire.types import AssistantMessage, ThinkingContent, ToolCall, Usage

KEY = "sk-gw-chat-0123456789"
RAW = '{"dir":  "."}'  # spaced: a re-encoded copy would differ
TOOLS: list[Any] = [{"type": "function", "function": {
    "name": "ls", "description": "List a folder",
    "parameters": {"type": "object", "properties": {"dir": {"type": "string"}}}}}]  # fmt: skip
# Where the API's wire form carries a call's arguments as text, and has call ids.
TEXT_ARGUMENTS = {"openai-chat", "openai-responses"}
NO_IDS = {"ollama-chat"}
DOC = Path(__file__).resolve().parents[1] / "docs" / "gateway-chat.md"


def turn1(api: str) -> AssistantMessage:
    return AssistantMessage(
        content=[ThinkingContent(thinking="I will list the folder.", signature=f"sig-{api}"),
                 ToolCall(id="call_gw1", name="ls", arguments={"dir": "."}, raw_arguments=RAW,
                          signature=f"call-sig-{api}")],
        api="script", provider="script", model="script", stop_reason="tool_use",
        usage=Usage(input=10, output=5, cache_read=3, cache_write=2, total_tokens=20),
    )  # fmt: skip


#: Every body the backend sent, in order: what the backend said, exactly.
SENT: list[bytes] = []


@pytest.fixture(scope="module")
def backend() -> Iterator[MockServer]:
    with MockServer(on_request=lambda _, reply: SENT.append(reply.body)) as server:
        yield server


@pytest.fixture(scope="module")
def gateway(backend: MockServer) -> Iterator[GatewayServer]:
    models = {f"via-{api}": {"api": api, "id": "mock-model", "base_url": backend.model(api).base_url}
              for api in APIS}  # fmt: skip
    models["smart"] = models["via-anthropic-messages"]  # the name docs/gateway-chat.md asks for
    cfg = {"models": models, "keys": {"team": {"key_sha256": hash_key(KEY), "models": ["*"]}}}
    with GatewayServer(cfg) as gw:
        yield gw


@pytest.fixture
def client(gateway: GatewayServer, backend: MockServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=KEY, max_retries=0) as c:
        yield c
    assert backend.pending == 0  # every scripted reply was asked for


def said(api: str) -> AssistantMessage:
    """What the backend said last, as modelwire decodes the bytes it sent."""
    return mw.replay(api, [SENT[-1]]).message


def check_second_request(api: str, backend: MockServer, first: AssistantMessage,
                         ids: list[str], raw: list[str]) -> None:  # fmt: skip
    body = backend.last_request.body.decode()
    for sig in (b.signature for b in first.content if isinstance(b, ThinkingContent)):
        if sig is None or api == "openai-chat":
            continue  # a Chat thinking "signature" is the field it came in, not replayed
        # A Responses reasoning item is replayed as its item (its id names it).
        needle = json.loads(sig)["id"] if api == "openai-responses" else sig
        assert needle in body, f"thinking signature {needle!r} not replayed to {api}: {body}"
    for call in first.tool_calls:  # a Gemini thought signature, a Responses item id
        if call.signature is not None:
            assert call.signature in body, f"call signature {call.signature!r} not replayed"
    if api not in NO_IDS:
        for i in ids:
            assert i in body
    if api in TEXT_ARGUMENTS:
        for r in raw:
            assert json.dumps(r)[1:-1] in body  # the exact text, as a JSON string


def _create(client: openai.OpenAI, api: str, messages: list[Any], stream: bool) -> Any:
    """One answer, as a ``ChatCompletion`` (accumulated by the SDK when streamed)."""
    if not stream:
        return client.chat.completions.create(model=f"via-{api}", messages=messages, tools=TOOLS)
    state = ChatCompletionStreamState()
    chunks = client.chat.completions.create(model=f"via-{api}", messages=messages, tools=TOOLS,
                                            stream=True, stream_options={"include_usage": True})  # fmt: skip
    for chunk in chunks:
        state.handle_chunk(chunk)
    return state.get_final_completion()


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", APIS)
def test_openai_sdk_two_turns(
    client: openai.OpenAI, backend: MockServer, api: str, stream: bool
) -> None:
    backend.add(turn1(api), "Done: a b")
    messages: list[Any] = [{"role": "user", "content": "list the folder"}]
    done = _create(client, api, messages, stream)
    first = said(api)
    choice = done.choices[0]
    assert choice.finish_reason == "tool_calls"
    message = choice.message
    calls = message.tool_calls or []
    assert [c.function.name for c in calls] == ["ls"]
    assert [c.function.arguments for c in calls] == [c.raw_arguments for c in first.tool_calls]
    if api not in NO_IDS:
        assert [c.id for c in calls] == [c.id for c in first.tool_calls]
    thinking = "".join(b.thinking for b in first.content if isinstance(b, ThinkingContent))
    assert message.model_extra["reasoning_content"] == thinking
    u = first.usage
    assert done.usage.prompt_tokens == u.input + u.cache_read + u.cache_write
    assert done.usage.completion_tokens == u.output
    assert done.usage.prompt_tokens_details.cached_tokens == u.cache_read
    messages.append(message.model_dump(exclude_none=True, exclude={"parsed"}))
    messages.append({"role": "tool", "tool_call_id": calls[0].id, "content": "a b"})
    done = _create(client, api, messages, stream)
    assert done.choices[0].message.content == "Done: a b"
    assert done.choices[0].finish_reason == "stop"
    check_second_request(
        api, backend, first, [c.id for c in calls], [c.function.arguments for c in calls]
    )


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", APIS)
def test_pydantic_ai_agent_with_a_tool(gateway: GatewayServer, backend: MockServer, api: str,
                                       stream: bool) -> None:  # fmt: skip
    backend.add(turn1(api), "Done: a b")
    seen: list[str] = []

    async def run() -> tuple[str, list[ModelMessage]]:
        # The SDK client is closed by the test (its connections with it).
        async with openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=KEY) as oc:
            agent = Agent(OpenAIChatModel(f"via-{api}", provider=OpenAIProvider(openai_client=oc)))

            @agent.tool_plain
            def ls(dir: str) -> str:
                """List a folder."""
                seen.append(dir)
                return "a b"

            if not stream:
                result = await agent.run("list the folder")
                return result.output, result.all_messages()
            async with agent.run_stream("list the folder") as streamed:
                output = await streamed.get_output()
                return output, streamed.all_messages()

    output, history = asyncio.run(run())
    assert output == "Done: a b" and seen == ["."]
    assert backend.pending == 0
    first = mw.replay(api, [SENT[-2]]).message  # the backend's first answer
    # What the agent was told is what the backend said.
    answer = next(m for m in history if isinstance(m, ModelResponse))
    thought = [p.content for p in answer.parts if isinstance(p, ThinkingPart)]
    assert thought == [b.thinking for b in first.content if isinstance(b, ThinkingContent)]
    called = [(p.tool_name, p.args_as_dict()) for p in answer.parts if isinstance(p, ToolCallPart)]
    assert called == [(c.name, c.arguments) for c in first.tool_calls]
    ids = [c.id for c in first.tool_calls] if api not in NO_IDS else []
    # pydantic-ai sends back the arguments it parsed, so only the ids and signatures.
    check_second_request(api, backend, first, ids, [])
    body = backend.last_request.body.decode()
    if api in {"anthropic-messages", "bedrock-converse", "google-generative-ai"}:
        assert f"sig-{api}" in body  # rode on the call's extra_content through pydantic-ai


class Answer(pydantic.BaseModel):
    city: str
    people: int


def _answer(rec: RecordedRequest) -> Any:
    """The answer as the request asks for it: a call of modelwire's output tool where
    the backend's API has no native structured output, else the JSON text."""
    value = {"city": "Paris", "people": 2}
    if OUTPUT_TOOL.encode() in rec.body:
        return tool_call(OUTPUT_TOOL, value)
    return json.dumps(value)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", APIS)
def test_structured_output_parsed_by_the_sdk(
    client: openai.OpenAI, backend: MockServer, api: str, stream: bool
) -> None:
    backend.add(_answer)
    messages: list[Any] = [{"role": "user", "content": "Where, and how many?"}]
    if stream:
        with client.chat.completions.stream(model=f"via-{api}", messages=messages,
                                            response_format=Answer) as s:  # fmt: skip
            done = s.get_final_completion()
    else:
        done = client.chat.completions.parse(model=f"via-{api}", messages=messages,
                                             response_format=Answer)  # fmt: skip
    message = done.choices[0].message
    assert message.parsed == Answer(city="Paris", people=2)
    assert not message.tool_calls  # the output tool is modelwire's, not the client's
    assert done.choices[0].finish_reason == "stop"


def test_backend_failures_reach_the_sdk_typed(client: openai.OpenAI, backend: MockServer) -> None:
    # Longer than modelwire waits (60 s): the rate limit ends the call at once.
    backend.add(Reply(status=429, error="slow down", headers={"retry-after": "120"}))
    with pytest.raises(openai.RateLimitError) as limited:
        client.chat.completions.create(model="via-anthropic-messages",
                                       messages=[{"role": "user", "content": "x"}])  # fmt: skip
    assert limited.value.response.headers["retry-after"] == "120"
    body = render("partial answer that is cut", "anthropic-messages")
    backend.add(Reply(body=body[: len(body) - 40], content_type="text/event-stream"))
    stream = client.chat.completions.create(model="via-anthropic-messages", stream=True,
                                            messages=[{"role": "user", "content": "x"}])  # fmt: skip
    with pytest.raises(openai.APIError) as broken:
        for _ in stream:
            pass
    assert broken.value.code == "truncated_stream"


def test_bad_request_is_the_sdk_bad_request_with_the_path(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="via-openai-chat", messages=[
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}]}])  # fmt: skip
    assert info.value.param == "messages[0].content[0].image_url.url"
    assert "does not fetch URLs" in info.value.message
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "x"}])


def test_the_docs_example_runs_as_printed(gateway: GatewayServer, backend: MockServer,
                                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    (code,) = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    monkeypatch.setenv("GATEWAY_URL", gateway.base_url + "/v1")
    monkeypatch.setenv("GATEWAY_KEY", KEY)
    backend.add("Hello from the backend.")
    namespace: dict[str, Any] = {}
    exec(compile(code, str(DOC), "exec"), namespace)  # the doc block, exactly as printed
    assert namespace["reply"].choices[0].message.content == "Hello from the backend."
    assert backend.last_request.json()["model"] == "mock-model"
    assert os.environ["GATEWAY_KEY"] == KEY
