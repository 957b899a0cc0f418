"""The official SDKs and pydantic-ai as clients of ``MockServer``, streaming and not.

Each client is pointed at a real loopback ``MockServer`` (no network) and must get
exactly the text, tool calls, usage and stop reason the script said, read through
the client's own API. Every body and event the server sent is also validated with
the SDK's own pydantic models in strict mode (botocore has no models: its service
model's shapes are walked instead), so a field the SDK marks required, or a value
of the wrong type, fails here even where the SDK's lenient parsing would let it by.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

import modelwire as mw
from modelwire.testing import MockServer, RecordedRequest, Reply

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
pydantic = pytest.importorskip("pydantic")

ARGS = {"path": "README.md", "lines": 3}
CALL = mw.ToolCall(id="call_abc123", name="read", arguments=ARGS,
                   raw_arguments=json.dumps(ARGS, separators=(",", ":")))  # fmt: skip
TEXT = "I will read it — 读取。"
USAGE = mw.Usage(input=21, output=9, total_tokens=30)


def tool_turn() -> mw.AssistantMessage:
    return mw.AssistantMessage(
        content=(mw.TextContent(text=TEXT), CALL), api="", provider="", model="",
        usage=USAGE, stop_reason="tool_use",
    )  # fmt: skip


def text_turn(text: str = "Done.", stop: Any = "stop") -> mw.AssistantMessage:
    return mw.AssistantMessage(
        content=(mw.TextContent(text=text),), api="", provider="", model="",
        usage=mw.Usage(input=40, output=2, total_tokens=42), stop_reason=stop,
    )  # fmt: skip


class Recorder:
    """Collects every reply body the server sent (``MockServer.on_request``)."""

    def __init__(self) -> None:
        self.sent: list[tuple[RecordedRequest, Reply]] = []

    def __call__(self, rec: RecordedRequest, reply: Reply) -> None:
        self.sent.append((rec, reply))

    def bodies(self) -> list[bytes]:
        return [r.body for _, r in self.sent]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def clients() -> Iterator[ExitStack]:
    """Closes every SDK client a test made (their pooled sockets, when it ends)."""
    with ExitStack() as stack:
        yield stack


def sse_data(body: bytes) -> list[bytes]:
    dec = mw.SSEDecoder()
    events = [*dec.feed(body), *dec.end()]
    return [e.data.encode() for e in events]


def strict(kind: Any, data: bytes) -> Any:
    """``data`` validated by the SDK's own type, strictly (no coercion)."""
    return pydantic.TypeAdapter(kind).validate_json(data, strict=True)


# --------------------------------------------------------------------------- openai: chat


def openai_client(srv: MockServer, clients: ExitStack) -> Any:
    client = openai.OpenAI(base_url=srv.base_url, api_key="sk-test", max_retries=0)
    return clients.enter_context(client)


TOOLS_OPENAI = [{"type": "function", "function": {"name": "read", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}}}}}]  # fmt: skip


def test_openai_chat_completion(recorder: Recorder, clients: ExitStack) -> None:
    from openai.types.chat import ChatCompletion

    with MockServer([tool_turn()], on_request=recorder) as srv:
        c = openai_client(srv, clients).chat.completions.create(
            model="gpt-x", messages=[{"role": "user", "content": "hi"}], tools=TOOLS_OPENAI
        )
    assert isinstance(c, ChatCompletion)
    choice = c.choices[0]
    assert choice.message.content == TEXT and choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls or []
    assert call.type == "function"
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
        "call_abc123", "read", ARGS)  # fmt: skip
    assert c.usage is not None
    assert (c.usage.prompt_tokens, c.usage.completion_tokens) == (21, 9)
    assert c.model == "gpt-x" and c.id.startswith("chatcmpl-")
    strict(ChatCompletion, recorder.bodies()[0])


def test_openai_chat_stream(recorder: Recorder, clients: ExitStack) -> None:
    from openai.types.chat import ChatCompletionChunk

    with MockServer([tool_turn(), text_turn()], on_request=recorder) as srv:
        client = openai_client(srv, clients)
        chunks = list(client.chat.completions.create(
            model="gpt-x", messages=[{"role": "user", "content": "hi"}], tools=TOOLS_OPENAI,
            stream=True, stream_options={"include_usage": True}))  # fmt: skip
        plain = list(client.chat.completions.create(
            model="gpt-x", messages=[{"role": "user", "content": "hi"}], stream=True))  # fmt: skip
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    args = "".join(tc.function.arguments or "" for c in chunks if c.choices
                   for tc in c.choices[0].delta.tool_calls or [] if tc.function)  # fmt: skip
    ids = [tc.id for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []
           if tc.id]  # fmt: skip
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert text == TEXT and json.loads(args) == ARGS and ids == ["call_abc123"]
    assert [f for f in finishes if f] == ["tool_calls"]
    usage = [c.usage for c in chunks if c.usage is not None]
    assert [(u.prompt_tokens, u.completion_tokens) for u in usage] == [(21, 9)]
    # Without stream_options.include_usage no usage chunk, as OpenAI streams it.
    assert all(c.usage is None for c in plain)
    assert "".join(c.choices[0].delta.content or "" for c in plain if c.choices) == "Done."
    for body in recorder.bodies():
        for data in sse_data(body):
            if data != b"[DONE]":
                strict(ChatCompletionChunk, data)


# --------------------------------------------------------------------------- openai: responses


def test_openai_responses_create(recorder: Recorder, clients: ExitStack) -> None:
    from openai.types.responses import Response

    with MockServer([tool_turn()], on_request=recorder) as srv:
        r = openai_client(srv, clients).responses.create(model="gpt-x", input="hi")
    assert isinstance(r, Response) and r.id.startswith("resp_") and r.status == "completed"
    assert r.output_text == TEXT
    calls = [o for o in r.output if o.type == "function_call"]
    assert [(c.call_id, c.name, json.loads(c.arguments)) for c in calls] == [
        ("call_abc123", "read", ARGS)]  # fmt: skip
    assert r.usage is not None and (r.usage.input_tokens, r.usage.output_tokens) == (21, 9)
    strict(Response, recorder.bodies()[0])


def test_openai_responses_stream(recorder: Recorder, clients: ExitStack) -> None:
    from openai.types.responses import ResponseStreamEvent

    with MockServer([tool_turn()], on_request=recorder) as srv:
        events = list(
            openai_client(srv, clients).responses.create(model="gpt-x", input="hi", stream=True)
        )
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    (done,) = [e for e in events if e.type == "response.function_call_arguments.done"]
    (completed,) = [e for e in events if e.type == "response.completed"]
    assert text == TEXT and json.loads(done.arguments) == ARGS
    assert completed.response.usage is not None
    assert completed.response.usage.output_tokens == 9
    assert [o.type for o in completed.response.output] == ["message", "function_call"]
    for data in sse_data(recorder.bodies()[0]):
        strict(ResponseStreamEvent, data)


def test_openai_responses_length_is_incomplete(clients: ExitStack) -> None:
    with MockServer([text_turn("cut", stop="length")]) as srv:
        r = openai_client(srv, clients).responses.create(model="gpt-x", input="hi")
    assert r.status == "incomplete" and r.incomplete_details is not None
    assert r.incomplete_details.reason == "max_output_tokens" and r.output_text == "cut"


def test_openai_models_list(clients: ExitStack) -> None:
    with MockServer(["unused"], models=["gpt-a", "gpt-b"]) as srv:
        ids = [m.id for m in openai_client(srv, clients).models.list()]
        assert srv.pending == 1
    assert ids == ["gpt-a", "gpt-b"]


def test_openai_sdk_raises_its_own_error_class(clients: ExitStack) -> None:
    from modelwire.testing import error_reply

    srv = clients.enter_context(MockServer([error_reply(429, "slow down")]))
    with pytest.raises(openai.RateLimitError, match="slow down"):
        openai_client(srv, clients).chat.completions.create(model="m", messages=[])


# --------------------------------------------------------------------------- anthropic


def anthropic_client(srv: MockServer, clients: ExitStack) -> Any:
    client = anthropic.Anthropic(base_url=srv.origin, api_key="sk-ant-test", max_retries=0)
    return clients.enter_context(client)


THINKING = mw.AssistantMessage(
    content=(mw.ThinkingContent(thinking="Let me see."), mw.TextContent(text="Hi."), CALL),
    api="", provider="", model="", usage=USAGE, stop_reason="tool_use",
)  # fmt: skip


def test_anthropic_messages_create(recorder: Recorder, clients: ExitStack) -> None:
    from anthropic.types import Message

    with MockServer([THINKING], on_request=recorder) as srv:
        m = anthropic_client(srv, clients).messages.create(
            model="claude-x", max_tokens=100, messages=[{"role": "user", "content": "hi"}])  # fmt: skip
    assert isinstance(m, Message) and m.id.startswith("msg_") and m.stop_reason == "tool_use"
    thinking, text, use = m.content
    assert thinking.type == "thinking" and thinking.thinking == "Let me see."
    assert thinking.signature  # a real, non-empty signature
    assert text.type == "text" and text.text == "Hi."
    assert use.type == "tool_use" and (use.id, use.name, use.input) == ("call_abc123", "read", ARGS)
    assert (m.usage.input_tokens, m.usage.output_tokens) == (21, 9)
    strict(Message, recorder.bodies()[0])


def test_anthropic_messages_stream(recorder: Recorder, clients: ExitStack) -> None:
    from anthropic.types import RawMessageStreamEvent

    srv = clients.enter_context(MockServer([THINKING], on_request=recorder))
    with anthropic_client(srv, clients).messages.stream(
        model="claude-x", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Hi." and final.stop_reason == "tool_use"
    assert [b.type for b in final.content] == ["thinking", "text", "tool_use"]
    assert final.content[0].signature  # type: ignore[union-attr,unused-ignore]
    assert final.content[2].input == ARGS  # type: ignore[union-attr,unused-ignore]
    assert final.usage.output_tokens == 9
    dec = mw.SSEDecoder()
    events = [e for e in dec.feed(recorder.bodies()[0]) if e.event != "ping"]
    assert events
    for e in events:  # ping is documented but not part of the SDK's event union
        strict(RawMessageStreamEvent, e.data.encode())


def test_anthropic_models_list_and_error_shape(clients: ExitStack) -> None:
    from modelwire.testing import error_reply

    with MockServer([error_reply(529, "busy")], models=["claude-a"]) as srv:
        client = anthropic_client(srv, clients)
        assert [m.id for m in client.models.list()] == ["claude-a"]
        with pytest.raises(anthropic.APIStatusError) as info:
            client.messages.create(model="claude-a", max_tokens=5, messages=[])
    assert info.value.status_code == 529
    assert info.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index,unused-ignore]
    assert info.value.request_id == "req_mock"


# --------------------------------------------------------------------------- google-genai


def genai_client(srv: MockServer, clients: ExitStack) -> Any:
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    client = genai.Client(api_key="g-test", http_options=types.HttpOptions(base_url=srv.origin))
    clients.callback(client.close)
    return client


def test_genai_generate_content_and_stream(recorder: Recorder, clients: ExitStack) -> None:
    client_kind = pytest.importorskip("google.genai.types")
    with MockServer([tool_turn(), tool_turn()], on_request=recorder) as srv:
        client = genai_client(srv, clients)
        r = client.models.generate_content(model="gemini-x", contents="hi")
        chunks = list(client.models.generate_content_stream(model="gemini-x", contents="hi"))
    assert r.text == TEXT
    (fc,) = r.function_calls or []
    assert (fc.name, fc.args, fc.id) == ("read", ARGS, "call_abc123")
    assert r.candidates is not None and r.candidates[0].finish_reason == "STOP"
    assert r.usage_metadata is not None
    assert (r.usage_metadata.prompt_token_count, r.usage_metadata.candidates_token_count) == (
        21, 9)  # fmt: skip
    streamed = "".join(p.text or "" for c in chunks for p in c.candidates[0].content.parts)
    calls = [p.function_call for c in chunks for p in c.candidates[0].content.parts
             if p.function_call]  # fmt: skip
    assert streamed == TEXT and [(c.name, c.args) for c in calls] == [("read", ARGS)]
    assert chunks[-1].usage_metadata.candidates_token_count == 9
    paths = [rec.path.split("/models/", 1)[1] for rec, _ in recorder.sent]
    assert paths == ["gemini-x:generateContent", "gemini-x:streamGenerateContent?alt=sse"]
    kind = client_kind.GenerateContentResponse
    strict(kind, recorder.bodies()[0])
    for data in sse_data(recorder.bodies()[1]):
        strict(kind, data)


def test_genai_models_list_and_error(clients: ExitStack) -> None:
    pytest.importorskip("google.genai")
    from google.genai import errors

    from modelwire.testing import error_reply

    with MockServer([error_reply(429, "quota")], models=["gemini-a"]) as srv:
        client = genai_client(srv, clients)
        names = [m.name for m in client.models.list()]
        with pytest.raises(errors.ClientError) as info:
            client.models.generate_content(model="gemini-a", contents="hi")
    assert names == ["models/gemini-a"]
    assert info.value.code == 429 and info.value.status == "RESOURCE_EXHAUSTED"


# --------------------------------------------------------------------------- ollama


def test_ollama_chat_and_stream(recorder: Recorder, clients: ExitStack) -> None:
    ollama = pytest.importorskip("ollama")
    with MockServer([tool_turn(), tool_turn()], on_request=recorder, models=["qwen3"]) as srv:
        client = clients.enter_context(ollama.Client(host=srv.origin))
        r = client.chat(model="qwen3", messages=[{"role": "user", "content": "hi"}])
        parts = list(client.chat(model="qwen3", messages=[{"role": "user", "content": "hi"}],
                                 stream=True))  # fmt: skip
        tags = [m.model for m in client.list().models]
    assert r.message.content == TEXT and r.done_reason == "stop"
    assert [(c.function.name, dict(c.function.arguments)) for c in r.message.tool_calls or []] == [
        ("read", ARGS)]  # fmt: skip
    assert (r.prompt_eval_count, r.eval_count) == (21, 9)
    assert "".join(p.message.content or "" for p in parts) == TEXT
    assert parts[-1].done and parts[-1].eval_count == 9
    assert tags == ["qwen3"]
    strict(ollama.ChatResponse, recorder.bodies()[0])
    for line in recorder.bodies()[1].splitlines():
        strict(ollama.ChatResponse, line)


def test_ollama_error_is_its_own_shape(clients: ExitStack) -> None:
    ollama = pytest.importorskip("ollama")
    from modelwire.testing import error_reply

    with MockServer([error_reply(404, "model 'x' not found")]) as srv:
        client = clients.enter_context(ollama.Client(host=srv.origin))
        with pytest.raises(ollama.ResponseError) as info:
            client.chat(model="x", messages=[])
    assert info.value.status_code == 404 and info.value.error == "model 'x' not found"


# --------------------------------------------------------------------------- bedrock (botocore)


def bedrock_client(srv: MockServer) -> Any:
    session = pytest.importorskip("botocore.session").get_session()
    from botocore.config import Config

    return session.create_client(
        "bedrock-runtime", region_name="us-east-1", endpoint_url=srv.origin,
        aws_access_key_id="AKIDTEST", aws_secret_access_key="secret",
        config=Config(retries={"total_max_attempts": 1}),
    )  # fmt: skip


def check_shape(shape: Any, value: Any, path: str = "$") -> None:
    """``value`` against a botocore shape: no member it does not define, every
    required one present, each of the shape's JSON type."""
    kind = shape.type_name
    if shape.metadata.get("document"):
        return  # a document (tool input) is any JSON value
    if kind == "structure":
        assert isinstance(value, dict), path
        members = shape.members
        for name in shape.required_members:
            assert name in value, f"{path}.{name} is required"
        for name, item in value.items():
            assert name in members, f"{path}.{name} is not in {shape.name}"
            check_shape(members[name], item, f"{path}.{name}")
        if shape.metadata.get("union"):
            assert len(value) == 1, f"{path} is a union: one member"
    elif kind == "list":
        assert isinstance(value, list), path
        for i, item in enumerate(value):
            check_shape(shape.member, item, f"{path}[{i}]")
    elif kind == "map":
        assert isinstance(value, dict), path
    elif kind in ("integer", "long"):
        assert isinstance(value, int) and not isinstance(value, bool), path
    elif kind == "string":
        assert isinstance(value, str), path
        if shape.enum:
            assert value in shape.enum, f"{path}: {value!r} not in {shape.enum}"
    elif kind == "boolean":
        assert isinstance(value, bool), path


def test_bedrock_converse_and_stream(recorder: Recorder) -> None:
    client = bedrock_client(srv := MockServer([THINKING, THINKING], on_request=recorder).start())
    try:
        msg = [{"role": "user", "content": [{"text": "hi"}]}]
        r = client.converse(modelId="anthropic.claude-x", messages=msg)
        stream = client.converse_stream(modelId="anthropic.claude-x", messages=msg)["stream"]
        events = list(stream)
    finally:
        client.close()
        srv.stop()
    reasoning, text, use = r["output"]["message"]["content"]
    assert reasoning["reasoningContent"]["reasoningText"]["signature"]
    assert text == {"text": "Hi."} and r["stopReason"] == "tool_use"
    assert use["toolUse"] == {"toolUseId": "call_abc123", "name": "read", "input": ARGS}
    assert (r["usage"]["inputTokens"], r["usage"]["outputTokens"]) == (21, 9)
    streamed = "".join(e["contentBlockDelta"]["delta"].get("text", "") for e in events
                       if "contentBlockDelta" in e)  # fmt: skip
    args = "".join(e["contentBlockDelta"]["delta"]["toolUse"]["input"] for e in events
                   if "toolUse" in e.get("contentBlockDelta", {}).get("delta", {}))  # fmt: skip
    stops = [e["messageStop"]["stopReason"] for e in events if "messageStop" in e]
    (meta,) = [e["metadata"] for e in events if "metadata" in e]
    assert streamed == "Hi." and json.loads(args) == ARGS and stops == ["tool_use"]
    assert meta["usage"]["outputTokens"] == 9
    model = client.meta.service_model
    check_shape(model.operation_model("Converse").output_shape, json.loads(recorder.bodies()[0]))
    stream_shape = model.shape_for("ConverseStreamOutput")
    for e in events:
        (name,) = e
        check_shape(stream_shape.members[name], e[name], name)


def test_bedrock_error_type_header() -> None:
    from modelwire.testing import error_reply

    client = bedrock_client(srv := MockServer([error_reply(429, "too fast")]).start())
    try:
        with pytest.raises(client.exceptions.ThrottlingException, match="too fast"):
            client.converse(modelId="m", messages=[{"role": "user", "content": [{"text": "x"}]}])
    finally:
        client.close()
        srv.stop()


# --------------------------------------------------------------------------- pydantic-ai


def _read_tool_agent(model: Any) -> tuple[Any, list[dict[str, Any]]]:
    from pydantic_ai import Agent

    agent = Agent(model)
    seen: list[dict[str, Any]] = []

    @agent.tool_plain
    def read(path: str, lines: int) -> str:
        """Read a file."""
        seen.append({"path": path, "lines": lines})
        return "file contents"

    return agent, seen


def _pydantic_ai_models(srv: MockServer, http: Any) -> Iterator[tuple[str, Any]]:
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.anthropic import AnthropicProvider
    from pydantic_ai.providers.openai import OpenAIProvider

    openai_provider = OpenAIProvider(base_url=srv.base_url, api_key="sk-test", http_client=http)
    yield "openai-chat", OpenAIChatModel("gpt-x", provider=openai_provider)
    yield "openai-responses", OpenAIResponsesModel("gpt-x", provider=openai_provider)
    anthropic_provider = AnthropicProvider(base_url=srv.origin, api_key="sk-ant", http_client=http)
    yield "anthropic-messages", AnthropicModel("claude-x", provider=anthropic_provider)


@pytest.mark.anyio
@pytest.mark.parametrize("streaming", [False, True], ids=["run", "run_stream"])
async def test_pydantic_ai_agents_run_the_scripted_tool_call(streaming: bool) -> None:
    pytest.importorskip("pydantic_ai")
    # pydantic-ai's providers take an httpx2 client (its own fork of httpx).
    httpx2 = pytest.importorskip("httpx2")

    with MockServer() as srv:
        async with httpx2.AsyncClient() as http:
            for api, model in list(_pydantic_ai_models(srv, http)):
                # A call with no text first: pydantic-ai's run_stream takes the first
                # text it sees as the output.
                call_only = mw.AssistantMessage(content=(CALL,), api="", provider="", model="",
                                                usage=USAGE, stop_reason="tool_use")  # fmt: skip
                srv.add(call_only, text_turn("All read."))
                agent, seen = _read_tool_agent(model)
                if streaming:
                    async with agent.run_stream("read README") as run:
                        output = await run.get_output()
                        usage = run.usage
                else:
                    result = await agent.run("read README")
                    output, usage = result.output, result.usage
                assert output == "All read.", api
                assert seen == [ARGS], api
                assert usage.input_tokens == 21 + 40 and usage.output_tokens == 9 + 2, api
                assert srv.pending == 0, api
    # The tool result went back to the mock in each API's own shape.
    results = [r for r in srv.requests if r.api and "file contents" in r.body.decode()]
    assert [r.api for r in results] == ["openai-chat", "openai-responses", "anthropic-messages"]


# --------------------------------------------------------------------------- the command


def test_the_sdks_against_the_mock_server_command(tmp_path: Any) -> None:
    """``modelwire mock-server`` (a real process, as a user starts it) answers the
    official SDKs, streaming and not, with exactly what its script says."""
    import subprocess
    import sys

    reply = {"text": "From the command.", "usage": {"input": 21, "output": 9},
             "tool_calls": [{"name": "read", "arguments": ARGS, "id": "call_cmd1"}]}  # fmt: skip
    script = tmp_path / "script.json"
    script.write_text(json.dumps([reply] * 3), encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "modelwire", "mock-server", "--json", "--script", str(script)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8",
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        origin = json.loads(proc.stdout.readline())["origin"]
        with openai.OpenAI(base_url=origin + "/v1", api_key="sk-test", max_retries=0) as oa:
            whole = oa.chat.completions.create(
                model="gpt-x", messages=[{"role": "user", "content": "hi"}], tools=TOOLS_OPENAI
            )
            chunks = list(oa.chat.completions.create(
                model="gpt-x", messages=[{"role": "user", "content": "hi"}],
                tools=TOOLS_OPENAI, stream=True, stream_options={"include_usage": True},
            ))  # fmt: skip
        with anthropic.Anthropic(base_url=origin, api_key="sk-ant", max_retries=0) as an:
            message = an.messages.create(
                model="claude-x", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
            )
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    choice = whole.choices[0]
    assert (choice.message.content, choice.finish_reason) == ("From the command.", "tool_calls")
    (call,) = choice.message.tool_calls or []
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
        "call_cmd1", "read", ARGS)  # fmt: skip
    assert whole.usage is not None and (
        whole.usage.prompt_tokens,
        whole.usage.completion_tokens,
    ) == (21, 9)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finish = [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ]
    usage = [c.usage for c in chunks if c.usage is not None]
    assert (text, finish) == ("From the command.", ["tool_calls"])
    assert [(u.prompt_tokens, u.completion_tokens) for u in usage] == [(21, 9)]
    text_block, use = message.content
    assert text_block.type == "text" and text_block.text == "From the command."
    assert use.type == "tool_use" and (use.id, use.name, use.input) == ("call_cmd1", "read", ARGS)
    assert (message.stop_reason, message.usage.input_tokens, message.usage.output_tokens) == (
        "tool_use", 21, 9)  # fmt: skip


# --------------------------------------------------------------------------- LiteLLM

# LiteLLM changes process-wide state when imported and used (other libraries' loggers
# and filters, httpx's request log), so it runs in a child process of its own.
_LITELLM = r"""
import json, os, sys, warnings
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # offline: its packaged cost map
warnings.simplefilter("ignore")
import litellm
litellm.suppress_debug_info = True
kw = json.loads(sys.argv[1])
whole = litellm.completion(**kw)
chunks = list(litellm.completion(stream=True, stream_options={"include_usage": True}, **kw))
m = whole.choices[0].message
out = {
    "text": m.content, "finish": whole.choices[0].finish_reason,
    "calls": [[c.id, c.function.name, c.function.arguments] for c in m.tool_calls or ()],
    "usage": [whole.usage.prompt_tokens, whole.usage.completion_tokens],
    "stream_text": "".join(c.choices[0].delta.content or "" for c in chunks if c.choices),
    "stream_args": "".join(tc.function.arguments or "" for c in chunks if c.choices
                           for tc in c.choices[0].delta.tool_calls or ()),
    "stream_finish": [c.choices[0].finish_reason for c in chunks
                      if c.choices and c.choices[0].finish_reason],
    "stream_usage": [[c.usage.prompt_tokens, c.usage.completion_tokens] for c in chunks
                     if getattr(c, "usage", None) is not None],
}
print(json.dumps(out))
"""


@pytest.mark.parametrize(("prefix", "where"), [("openai", "base_url"), ("anthropic", "origin")])
def test_litellm_completion_streaming_and_not(prefix: str, where: str) -> None:
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("litellm") is None:  # found, never imported here
        pytest.skip("LiteLLM is not installed (make test installs it)")
    with MockServer([tool_turn(), tool_turn()]) as srv:
        kw = {"model": f"{prefix}/m-x", "api_key": "sk-test", "max_tokens": 50,
              "api_base": getattr(srv, where), "tools": TOOLS_OPENAI,
              "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip
        run = subprocess.run([sys.executable, "-c", _LITELLM, json.dumps(kw)],
                             capture_output=True, text=True, timeout=120)  # fmt: skip
        paths = [r.path.split("?")[0] for r in srv.requests]
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert (got["text"], got["finish"]) == (TEXT, "tool_calls")
    [[cid, name, args]] = got["calls"]
    assert (cid, name, json.loads(args)) == ("call_abc123", "read", ARGS)
    assert got["usage"] == [21, 9]
    assert got["stream_text"] == TEXT and json.loads(got["stream_args"]) == ARGS
    assert got["stream_finish"][-1] == "tool_calls" and got["stream_usage"][-1] == [21, 9]
    want = "/v1/chat/completions" if prefix == "openai" else "/v1/messages"
    assert paths == [want, want]
