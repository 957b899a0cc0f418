"""The official openai SDK (``client.responses``) and pydantic-ai's
``OpenAIResponsesModel`` pointed at the gateway over loopback, with MockServer
backends of every wire API, streaming and not: thinking, text and tool calls come
back as the backend said them, and on the second turn — the output items sent back
in ``input`` with ``include=["reasoning.encrypted_content"]`` and ``store=False`` —
the backend's recorded request carries its thinking signature, the tool call ids
and the exact raw arguments. One MockServer and one gateway serve the whole module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

import modelwire as mw
from modelwire.gateway import GatewayServer, hash_key
from modelwire.testing import MockServer, RecordedRequest, Reply
from modelwire.types import AssistantMessage, TextContent, ThinkingContent, ToolCall, Usage

KEY = "sk-gw-responses-0123456789"
BACKENDS = [
    "openai-responses", "openai-chat", "anthropic-messages", "google-generative-ai",
    "ollama-chat", "bedrock-converse",
]  # fmt: skip
#: Backends whose thinking carries a signature that must come back (Chat and Ollama
#: have none: their thinking is text only).
SIGNED = {"openai-responses", "anthropic-messages", "google-generative-ai", "bedrock-converse"}
#: Backends whose calls carry a signature of their own (a Gemini thought signature).
CALL_SIGNED = {"google-generative-ai": "call-sig-gemini"}
#: Backends that keep the arguments as text (the others send the parsed object).
RAW_ARGS = {"openai-responses", "openai-chat"}
RAW = '{"path": "docs/a b.md",  "n": 2}'
TOOLS = [{"type": "function", "name": "read", "description": "Read a file",
          "parameters": {"type": "object", "properties": {"path": {"type": "string"},
                                                          "n": {"type": "integer"}}}}]  # fmt: skip


@pytest.fixture(scope="module")
def backend() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(scope="module")
def gateway(backend: MockServer) -> Iterator[GatewayServer]:
    models = {
        api: {"api": api, "id": f"mock-{api}", "base_url": backend.model(api).base_url,
              "reasoning": True}
        for api in BACKENDS
    }  # fmt: skip
    models["smart"] = dict(models["anthropic-messages"])  # the docs' example names it
    # Names pydantic-ai knows as OpenAI reasoning models, so it asks for and sends back
    # encrypted reasoning (its model profile), served by Anthropic and Gemini backends.
    models["gpt-5-anthropic-messages"] = dict(models["anthropic-messages"])
    models["gpt-5-google-generative-ai"] = dict(models["google-generative-ai"])
    cfg = {"models": models, "keys": {"team": {"key_sha256": hash_key(KEY), "models": ["*"]}}}
    with GatewayServer(cfg) as gw:
        yield gw


@pytest.fixture(scope="module")
def client(gateway: GatewayServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=KEY, max_retries=0) as c:
        yield c


def first_turn(api: str, call_id: str, *, text: bool = True) -> AssistantMessage:
    content: list[Any] = [
        ThinkingContent(thinking="The user wants a file. Read it.", signature=f"sig-{api}"),
        TextContent(text="Reading it now."),
        ToolCall(
            id=call_id,
            name="read",
            arguments=json.loads(RAW),
            raw_arguments=RAW,
            signature=CALL_SIGNED.get(api),
        ),
    ]
    if not text:
        del content[1]
    return AssistantMessage(content=content, api="", provider="", model="", stop_reason="tool_use",
                            usage=Usage(input=30, output=12, cache_read=8, total_tokens=50))  # fmt: skip


def backend_request(server: MockServer) -> RecordedRequest:
    posts = [r for r in server.requests if r.method == "POST"]
    return posts[-1]


def _items_of(response: Any) -> list[dict[str, Any]]:
    return [i.model_dump(exclude_none=True, mode="json") for i in response.output]


@pytest.mark.parametrize("streaming", [False, True], ids=["create", "stream"])
@pytest.mark.parametrize("api", BACKENDS)
def test_two_turns_with_tools_and_thinking(
    api: str, streaming: bool, backend: MockServer, client: openai.OpenAI
) -> None:
    call_id = f"call_{api.replace('-', '_')}_{int(streaming)}"
    backend.add(Reply(message=first_turn(api, call_id)), Reply(message="The file says hello."))
    first_input: list[Any] = [{"role": "user", "content": "Read docs/a b.md"}]
    common: dict[str, Any] = {"model": api, "tools": TOOLS, "store": False,
                              "include": ["reasoning.encrypted_content"],
                              "instructions": "Be brief."}  # fmt: skip
    if streaming:
        with client.responses.stream(input=first_input, **common) as stream:
            kinds = [e.type for e in stream]
            response = stream.get_final_response()
        assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
        assert "response.output_text.delta" in kinds
        assert "response.function_call_arguments.delta" in kinds
    else:
        response = client.responses.create(input=first_input, **common)
    assert response.status == "completed" and response.model == api
    assert response.output_text == "Reading it now."
    items = _items_of(response)
    types = [i["type"] for i in items]
    assert types == ["reasoning", "message", "function_call"]
    reasoning, _, call = items
    assert reasoning["summary"][0]["text"] == "The user wants a file. Read it."
    if api == "ollama-chat":
        call_id = call["call_id"]  # Ollama has no call ids: modelwire's decoder gives one
    assert (call["call_id"], call["name"]) == (call_id, "read")
    if api in RAW_ARGS:
        assert call["arguments"] == RAW  # the backend's exact text
    else:
        assert json.loads(call["arguments"]) == json.loads(RAW)  # its API sends an object
    assert response.usage is not None
    assert response.usage.input_tokens == 38 and response.usage.output_tokens == 12
    if api != "ollama-chat":  # Ollama reports no cache reads
        assert response.usage.input_tokens_details.cached_tokens == 8

    # The second turn: everything back, plus the tool's output.
    second_input = [*first_input, *items,
                    {"type": "function_call_output", "call_id": call_id, "output": "hello"}]  # fmt: skip
    if streaming:
        with client.responses.stream(input=second_input, **common) as stream:
            list(stream)
            final = stream.get_final_response()
    else:
        final = client.responses.create(input=second_input, **common)
    assert final.output_text == "The file says hello."
    sent = backend_request(backend)
    text = sent.body.decode()
    assert "Reading it now." in text and "hello" in text
    if api in SIGNED:
        # The backend's own thinking signature went back to it.
        if api == "openai-responses":
            body = sent.json()
            kinds = [i.get("type") for i in body["input"]]
            assert "reasoning" in kinds, kinds
        else:
            assert f"sig-{api}" in text
    if api in CALL_SIGNED:
        assert CALL_SIGNED[api] in text  # the call's own signature, back on the call
    # The first answer went back as one assistant turn.
    turns = {"google-generative-ai": ("contents", "model"), "anthropic-messages": ("messages", "assistant"),
             "bedrock-converse": ("messages", "assistant")}  # fmt: skip
    if api in turns:
        field, role = turns[api]
        assert [m["role"] for m in sent.json()[field]].count(role) == 1
    if api not in ("google-generative-ai", "ollama-chat"):
        assert call_id in text  # the call id (Gemini and Ollama have none on the wire)
    if api in RAW_ARGS:
        assert json.dumps(RAW) in text  # the exact argument text, as a JSON string
    else:
        assert "docs/a b.md" in text


def test_stream_create_events_are_typed(client: openai.OpenAI, backend: MockServer) -> None:
    backend.add(Reply(message="Hi there, a streamed answer."))
    events = list(client.responses.create(model="anthropic-messages", input="hi", stream=True))
    names = [e.type for e in events]
    assert names[:2] == ["response.created", "response.in_progress"]
    assert names[-1] == "response.completed"
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == (
        "Hi there, a streamed answer."
    )
    assert [e.sequence_number for e in events] == list(range(len(events)))


def test_backend_failure_is_an_openai_error(client: openai.OpenAI, backend: MockServer) -> None:
    backend.add(Reply(status=429, error="slow down", headers={"retry-after": "120"}))
    with pytest.raises(openai.RateLimitError) as info:
        client.responses.create(model="anthropic-messages", input="hi")
    assert info.value.response.headers.get("retry-after") == "120"
    assert info.value.body is not None


def test_bad_request_is_a_400_with_the_path(client: openai.OpenAI) -> None:
    bad: Any = [{"role": "user", "content": [{"type": "input_text", "text": 5}]}]
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model="openai-chat", input=bad)
    assert info.value.param == "input[0].content[0].text"
    assert "must be a string" in info.value.message


def test_passthrough_field_refused_for_another_api(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model="anthropic-messages", input="hi", top_p=0.5)
    assert info.value.param == "top_p"


def test_mid_stream_failure_is_response_failed(client: openai.OpenAI, backend: MockServer) -> None:
    body = mw.testing.render("A text that the backend never finishes sending", "anthropic-messages")
    backend.add(Reply(body=body[: len(body) // 2]))
    with client.responses.stream(model="anthropic-messages", input="hi") as stream:
        names = [e.type for e in stream]
    assert names[-1] == "response.failed" and "response.completed" not in names


@pytest.mark.parametrize("streaming", [False, True], ids=["run", "run_stream"])
@pytest.mark.parametrize("api", ["anthropic-messages", "google-generative-ai"])
def test_pydantic_ai_responses_model(
    api: str, streaming: bool, gateway: GatewayServer, backend: MockServer
) -> None:
    pytest.importorskip("pydantic_ai")
    httpx2 = pytest.importorskip("httpx2")
    import anyio
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    seen: list[str] = []

    async def main() -> str:
        async with httpx2.AsyncClient() as http:
            provider = OpenAIProvider(
                base_url=gateway.base_url + "/v1", api_key=KEY, http_client=http
            )
            agent = Agent(OpenAIResponsesModel(f"gpt-5-{api}", provider=provider))

            @agent.tool_plain
            def read(path: str, n: int) -> str:
                """Read a file."""
                seen.append(f"{path}:{n}")
                return "hello"

            # No text before the call when streaming: pydantic-ai's run_stream takes the
            # first text it sees as the output.
            turn = first_turn(api, "toolu_pa1", text=not streaming)
            backend.add(Reply(message=turn),
                        Reply(message="It says hello."))  # fmt: skip
            if streaming:
                async with agent.run_stream("read docs/a b.md") as run:
                    return str(await run.get_output())
            result = await agent.run("read docs/a b.md")
            return str(result.output)

    assert anyio.run(main) == "It says hello."
    assert seen == ["docs/a b.md:2"]
    text = backend_request(backend).body.decode()
    assert f"sig-{api}" in text  # the thinking signature, back to the backend that made it
    if api in CALL_SIGNED:
        assert CALL_SIGNED[api] in text
    if api == "anthropic-messages":
        assert "toolu_pa1" in text


DOC = Path(__file__).resolve().parents[1] / "docs" / "gateway-responses.md"


def test_the_docs_example_runs(gateway: GatewayServer, backend: MockServer) -> None:
    """docs/gateway-responses.md's python block, as printed, against this gateway."""
    blocks = re.findall(r"^```python\n(.*?)^```\n", DOC.read_text(encoding="utf-8"), re.M | re.S)
    assert len(blocks) == 1
    backend.add(Reply(message="Hello from the backend."))
    code = blocks[0].replace("http://127.0.0.1:8000", gateway.base_url).replace("sk-gw-…", KEY)
    namespace: dict[str, Any] = {}
    try:
        exec(compile(code, str(DOC), "exec"), namespace)
    finally:
        if "client" in namespace:
            namespace["client"].close()  # the example's client, closed for the test run
    assert namespace["response"].output_text == "Hello from the backend."


SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
          "additionalProperties": False}  # fmt: skip


@pytest.mark.parametrize("streaming", [False, True], ids=["create", "stream"])
@pytest.mark.parametrize("api", ["openai-chat", "anthropic-messages", "bedrock-converse"])
def test_structured_output(
    api: str, streaming: bool, client: openai.OpenAI, backend: MockServer
) -> None:
    from modelwire._apis._output_modes import output_mode
    from modelwire.testing import tool_call

    mode = output_mode(mw.Model(id=f"mock-{api}", api=api, provider=api, base_url="http://x/v1"))
    # A backend without a native field answers with the forced answer tool; the client,
    # which declared no tool, gets the answer as text all the same.
    answer: Any = tool_call("final_result", {"a": 1}) if mode == "tool" else '{"a":1}'
    backend.add(Reply(message=answer))
    fmt: Any = {"format": {"type": "json_schema", "name": "A", "schema": SCHEMA, "strict": True}}
    response: Any
    if streaming:
        with client.responses.stream(model=api, input="give a", text=fmt) as stream:
            list(stream)
            response = stream.get_final_response()
    else:
        response = client.responses.create(model=api, input="give a", text=fmt)
    assert [i.type for i in response.output] == ["message"]
    assert json.loads(response.output_text) == {"a": 1}
    sent = backend_request(backend).json()
    assert ("final_result" in json.dumps(sent)) == (mode == "tool")
