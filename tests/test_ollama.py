"""Ollama's native ``/api/chat`` (``ollama-chat``): one module, end to end.

The streams under tests/data/ollama/ are written by hand after Ollama's docs/api.md
("Generate a chat completion", streaming, tools, thinking) and the tool-streaming
announcement (https://ollama.com/blog/streaming-tool): one JSON object per line,
the last with ``done: true``, ``done_reason`` and the token counts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import modelwire as mw
from eventlist import final, plain, same_at_every_split
from modelwire import _catalog as catalog
from modelwire._apis import get_api
from modelwire._client._options import resolve_options
from modelwire.testing import MockServer, RecordedRequest, Reply, render, tool_call

API = "ollama-chat"
DATA = Path(__file__).parent / "data" / "ollama"
TEXT = (DATA / "thinking-text.ndjson").read_bytes()
TOOLS = (DATA / "tool-calls.ndjson").read_bytes()
CTX = mw.Context(messages=[mw.UserMessage(content="读取 README.md")])
_PARAMS = {"type": "object"}
TOOLED = mw.Context(messages=CTX.messages, tools=[
    mw.ToolDefinition(name="read", description="Read a file", parameters=_PARAMS),
    mw.ToolDefinition(name="get_current_weather", description="Weather", parameters=_PARAMS),
])  # fmt: skip


# --------------------------------------------------------------------------- replay


def test_thinking_and_text_whole() -> None:
    events = mw.replay(API, TEXT)
    msg = final(events)
    assert events[-1].type == "done" and msg.stop_reason == "stop"
    assert msg.api == API and msg.provider_stop_reason == "stop"
    thinking, text = msg.content
    assert isinstance(thinking, mw.ThinkingContent)
    assert thinking.thinking == "The user greets in 中文; answer briefly."
    assert isinstance(text, mw.TextContent) and text.text == "你好！很高兴见到你 🙂"
    # prompt_eval_count → input, eval_count → output (Ollama reports no cache).
    assert (msg.usage.input, msg.usage.output, msg.usage.total_tokens) == (18, 42, 60)
    types = [e.type for e in events]
    assert types[:3] == ["start", "thinking_start", "thinking_delta"]
    assert "text_delta" in types and types.count("thinking_delta") == 2


@pytest.mark.parametrize("body", [TEXT, TOOLS], ids=["text", "tools"])
def test_byte_by_byte_and_every_split_give_the_same_events(body: bytes) -> None:
    same_at_every_split(API, body)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_splits_give_the_same_events(data: st.DataObject) -> None:
    body = TOOLS
    points = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=30)))
    chunks = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    assert plain(mw.replay(API, chunks)) == plain(mw.replay(API, body))


def test_whole_tool_calls_get_unique_deterministic_ids_and_exact_arguments() -> None:
    msg = final(mw.replay(API, TOOLS))
    assert msg.stop_reason == "tool_use"  # done_reason "stop" with complete calls
    thinking, first, second = msg.content
    assert isinstance(thinking, mw.ThinkingContent)
    assert isinstance(first, mw.ToolCall) and isinstance(second, mw.ToolCall)
    assert first.name == second.name == "get_current_weather"
    assert first.arguments == {"format": "celsius", "location": "Toronto"}
    assert second.arguments == {"format": "celsius", "location": "Zürich"}
    # raw_arguments is the exact object text the server sent.
    assert first.raw_arguments == '{"format":"celsius","location":"Toronto"}'
    assert first.id != second.id and first.id.startswith("ocall_")
    # The same bytes give the same ids (replay is deterministic) ...
    again = final(mw.replay(API, TOOLS))
    assert [b.id for b in again.content[1:]] == [first.id, second.id]  # type: ignore[union-attr]
    # ... and another response (another created_at) other ids.
    other = final(mw.replay(API, TOOLS.replace(b"58.2000", b"59.2000")))
    assert other.content[1].id != first.id  # type: ignore[union-attr]


def test_length_finish() -> None:
    msg = final(mw.replay(API, (DATA / "length.ndjson").read_bytes()))
    assert msg.stop_reason == "length" and msg.text == "Once upon a time"


def test_in_band_error_keeps_the_content() -> None:
    events = mw.replay(API, (DATA / "error-midstream.ndjson").read_bytes())
    msg = final(events)
    assert events[-1].type == "error" and msg.stop_reason == "error"
    assert msg.text == "Partial" and msg.error is not None
    assert "unexpected EOF" in msg.error.message


def test_context_overflow_error_line_is_typed() -> None:
    line = b'{"error":"prompt too long; exceeded max context length by 4 tokens"}\n'
    msg = final(mw.replay(API, line))
    assert msg.error is not None and msg.error.kind == "context_overflow"


def test_no_done_line_is_a_truncated_stream() -> None:
    msg = final(mw.replay(API, (DATA / "truncated.ndjson").read_bytes()))
    assert msg.error is not None and msg.error.kind == "truncated_stream"
    assert msg.text == "Half an answer"  # what arrived is kept
    assert "done" in msg.error.message


def test_unterminated_last_line_is_a_truncated_stream() -> None:
    body = TEXT.rstrip(b"\n")  # the done line lost its LF: the body was cut
    msg = final(mw.replay(API, body))
    assert msg.error is not None and msg.error.kind == "truncated_stream"


def test_load_done_reason_is_not_an_answer() -> None:
    line = b'{"model":"m","created_at":"x","message":{"role":"assistant","content":""},'
    line += b'"done":true,"done_reason":"load"}\n'
    msg = final(mw.replay(API, line))
    assert msg.stop_reason == "error" and msg.error is not None
    assert msg.error.kind == "provider_stream" and "load" in msg.error.message


@pytest.mark.parametrize(
    ("line", "path"),
    [
        ('{"message":{"role":"assistant","content":5},"done":false}', "message.content"),
        ('{"message":{"content":"","thinking":[]},"done":false}', "message.thinking"),
        ('{"message":{"content":"","tool_calls":[{"function":{"arguments":{}}}]}}',
         "message.tool_calls[0].function"),
        ('{"message":{"content":"","tool_calls":{}},"done":false}', "message.tool_calls"),
        ('{"done":true,"eval_count":-1}', "eval_count"),
        ('{"done":"yes"}', "done"),
        ('{"error":{"code":1}}', "error"),
    ],
)  # fmt: skip
def test_malformed_lines_name_the_field(line: str, path: str) -> None:
    msg = final(mw.replay(API, line.encode() + b"\n"))
    assert msg.error is not None and msg.error.kind == "malformed_chunk"
    assert path in msg.error.message


def test_invalid_json_and_an_sse_body_are_malformed() -> None:
    assert final(mw.replay(API, b'{"message":\n')).error.kind == "malformed_chunk"  # type: ignore[union-attr]
    sse = render("hi", "openai-chat")
    err = final(mw.replay(API, sse)).error
    assert err is not None and err.kind == "malformed_chunk"
    assert "Server-Sent Events" in err.message and "api='openai-chat'" in err.message


# --------------------------------------------------------------------------- request


def _request(ctx: mw.Context, model: mw.Model | None = None, **kw: Any) -> Any:
    model = model or mw.Model(id="qwen3", api=API, provider="ollama",
                              base_url="http://127.0.0.1:11434/", reasoning=True)  # fmt: skip
    req = get_api(API).build_request(model, ctx, resolve_options("ollama", **kw))
    return req, json.loads(req.body)


def test_request_body_follows_the_documented_format() -> None:
    call = mw.ToolCall(id="toolu_01", name="read", arguments={"path": "README.md"},
                       raw_arguments='{"path": "README.md"}')  # fmt: skip
    prior = mw.AssistantMessage(
        content=[mw.ThinkingContent(thinking="look first"), mw.TextContent(text="Reading."),
                 call],
        api=API, provider="ollama", model="qwen3", stop_reason="tool_use",
    )  # fmt: skip
    ctx = mw.Context(
        system_prompt="Be brief.",
        messages=[
            mw.UserMessage(content=[mw.TextContent(text="What is this?"),
                                    mw.ImageContent(data="aGk=", mime_type="image/png")]),
            prior,
            mw.ToolResultMessage(tool_call_id="toolu_01", tool_name="read",
                                 content=[mw.TextContent(text="# modelwire")]),
        ],
        tools=[mw.ToolDefinition(name="read", description="Read a file",
                                 parameters={"type": "object"})],
    )  # fmt: skip
    req, body = _request(ctx, max_tokens=64, temperature=0.2, reasoning="high")
    assert req.url == "http://127.0.0.1:11434/api/chat"
    assert req.headers["Accept"] == "application/x-ndjson"
    assert "Authorization" not in req.headers  # a local server, no key
    assert body["model"] == "qwen3" and body["stream"] is True
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is this?", "images": ["aGk="]},
        {"role": "assistant", "content": "Reading.", "thinking": "look first",
         "tool_calls": [{"function": {"name": "read", "arguments": {"path": "README.md"}}}]},
        {"role": "tool", "content": "# modelwire", "tool_name": "read"},
    ]  # fmt: skip
    assert body["tools"] == [{"type": "function", "function": {
        "name": "read", "description": "Read a file", "parameters": {"type": "object"}}}]  # fmt: skip
    assert body["options"] == {"temperature": 0.2, "num_predict": 64}
    assert body["think"] is True  # only gpt-oss takes a level


def test_gpt_oss_takes_a_think_level_and_extra_options_merge() -> None:
    model = mw.Model(id="gpt-oss:20b", api=API, provider="ollama",
                     base_url="http://127.0.0.1:11434", reasoning=True)  # fmt: skip
    _, body = _request(CTX, model, reasoning="low", max_tokens=10,
                       extra_body={"options": {"num_ctx": 32768}, "keep_alive": "5m"})  # fmt: skip
    assert body["think"] == "low"
    assert body["options"] == {"num_predict": 10, "num_ctx": 32768}
    assert body["keep_alive"] == "5m"


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"extra_body": {"options": {"num_predict": 5}}}, "num_predict"),
        ({"extra_body": {"think": False}}, "think"),
        ({"extra_body": {"options": 3}}, "options"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"reasoning": "low"}, "reasoning"),
    ],
)
def test_impossible_options_are_refused_before_any_request(kw: dict[str, Any], needle: str) -> None:
    model = mw.Model(id="llama3.2", api=API, provider="ollama", base_url="http://127.0.0.1:1")
    ctx = mw.Context(messages=CTX.messages, tools=[mw.ToolDefinition(
        name="read", description="", parameters={"type": "object"})])  # fmt: skip
    with pytest.raises(mw.ConfigurationError, match=needle):
        _request(ctx, model, **kw)


def test_tool_choice_none_hides_the_tools() -> None:
    ctx = mw.Context(messages=CTX.messages, tools=[mw.ToolDefinition(
        name="read", description="", parameters={"type": "object"})])  # fmt: skip
    assert "tools" in _request(ctx)[1]
    assert "tools" not in _request(ctx, tool_choice="none")[1]


# --------------------------------------------------------------------------- mock server


def test_mock_server_speaks_ndjson_at_the_server_root() -> None:
    script = [
        mw.ThinkingContent(thinking="hmm"),
        "读取中…",
        tool_call("read", {"path": "README.md"}),
    ]
    with MockServer([script, "second"]) as srv:
        model = srv.model(API, "qwen3")
        assert model.base_url == srv.origin  # the server root, no version segment
        first = mw.complete_sync(model, TOOLED)
        second = mw.complete_sync(model, TOOLED.with_messages(first))
    assert first.stop_reason == "tool_use", first.error
    assert [type(b).__name__ for b in first.content] == ["ThinkingContent", "TextContent",
                                                         "ToolCall"]  # fmt: skip
    assert first.text == "读取中…" and first.content[2].arguments == {"path": "README.md"}  # type: ignore[union-attr]
    assert second.text == "second"
    rec = srv.requests[0]
    assert rec.path == "/api/chat" and rec.api == API and rec.model == "qwen3"
    # The call goes back as an object with its tool name; ids are not sent.
    (back,) = [m for m in srv.requests[1].json()["messages"] if m["role"] == "assistant"]
    assert back["tool_calls"] == [
        {"function": {"name": "read", "arguments": {"path": "README.md"}}}
    ]


def test_scripted_reply_has_the_ndjson_content_type_one_line_per_chunk() -> None:
    reply = Reply(message="abcdef", piece_chars=2)
    with MockServer([reply]) as srv:
        rec = RecordedRequest("POST", "/api/chat", {}, b'{"model":"m"}')
        resolved = srv._resolve(rec, reply)
    assert resolved.content_type == "application/x-ndjson"
    pieces = resolved.pieces()
    assert len(pieces) == 4 and all(p.endswith(b"\n") and p.count(b"\n") == 1 for p in pieces)
    assert json.loads(pieces[-1])["done"] is True


@pytest.mark.parametrize("delivery", [{"chunk_size": 1}, {"chunk_size": 7}, {"seed": 3}])
def test_split_deliveries_over_http_give_the_same_message(delivery: dict[str, Any]) -> None:
    body = TOOLS
    # A raw body gets its API's media type (application/x-ndjson) from the MockServer.
    with MockServer([Reply(body=body, **delivery)]) as srv:
        msg = mw.complete_sync(srv.model(API, "qwen3"), TOOLED)
    want = final(mw.replay(API, body))
    assert msg.content == want.content and msg.stop_reason == "tool_use"


def test_cut_mid_body_is_stream_interrupted_keeping_content() -> None:
    body = render("a long answer " * 20, API)
    with MockServer([Reply(body=body, cut_after=len(body) // 2, chunk_size=40)]) as srv:
        msg = mw.complete_sync(srv.model(API), CTX)
    assert msg.error is not None and msg.error.kind == "stream_interrupted"
    assert msg.text and ("a long answer " * 20).startswith(msg.text)


def test_http_error_body_is_typed() -> None:
    body = b'{"error":"model \\"nope\\" not found, try pulling it first"}'
    reply = Reply(status=404, body=body, content_type="application/json")
    with MockServer([reply]) as srv:
        msg = mw.complete_sync(srv.model(API, "nope"), CTX)
    assert msg.error is not None and msg.error.kind == "not_found"
    assert "try pulling it first" in msg.error.message


@pytest.mark.anyio
async def test_async_stream_yields_events_from_ndjson() -> None:
    with MockServer([Reply(body=TEXT, content_type="application/x-ndjson", chunk_size=9)]) as srv:
        s = mw.stream(srv.model(API, "qwen3"), CTX)
        types = [e.type async for e in s]
        msg = await s.result()
    assert types[0] == "start" and types[-1] == "done"
    assert msg.text == "你好！很高兴见到你 🙂" and msg.usage.output == 42


# --------------------------------------------------------------------------- agent


@pytest.mark.anyio
async def test_agent_reads_a_file_through_ollama(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# modelwire\nhello\n")

    def answer(rec: RecordedRequest) -> str:
        tool = [m for m in rec.json()["messages"] if m["role"] == "tool"]
        assert tool and tool[-1]["tool_name"] == "read"
        return "The title is " + ("modelwire" if "# modelwire" in tool[-1]["content"] else "?")

    replies = [["Reading.", tool_call("read", {"path": "README.md"})], answer]
    with MockServer(replies) as srv:
        agent = mw.Agent(srv.model(API, "qwen3"), tools=mw.tools.read_only(tmp_path))
        run = await agent.run("读取 README.md")
    assert run.final.text == "The title is modelwire"
    assert [m.role for m in run.messages] == ["user", "assistant", "tool_result", "assistant"]
    result = run.messages[2]
    assert isinstance(result, mw.ToolResultMessage) and not result.is_error
    assert result.tool_call_id.startswith("ocall_")
    assert [t["function"]["name"] for t in srv.requests[0].json()["tools"]] == ["read", "ls",
                                                                                "grep"]  # fmt: skip


# --------------------------------------------------------------------------- trace


def test_trace_records_every_layer_for_ndjson() -> None:
    records: list[Any] = []
    events = mw.replay(API, [TOOLS[:50], TOOLS[50:]], trace=records.append)
    assert plain(events) == plain(mw.replay(API, TOOLS))
    layers = {r.layer for r in records}
    assert {"read", "sse", "delta", "event", "message"} <= layers
    frames = [r for r in records if r.layer == "sse"]
    assert len(frames) == 4  # one frame per NDJSON line


# --------------------------------------------------------------------------- handoff


def test_handoff_from_ollama_to_anthropic_and_back() -> None:
    from modelwire._client._handoffs import handoff

    turn = final(mw.replay(API, TOOLS, mw.Model(id="qwen3", api=API, provider="ollama",
                                                base_url="http://127.0.0.1:11434")))  # fmt: skip
    ids = [b.id for b in turn.content if isinstance(b, mw.ToolCall)]
    results = [mw.ToolResultMessage(tool_call_id=i, tool_name="get_current_weather",
                                    content=[mw.TextContent(text="20°C")]) for i in ids]  # fmt: skip
    ctx = mw.Context(messages=[CTX.messages[0], turn, *results])
    claude = mw.Model(id="claude-x", api="anthropic-messages", provider="anthropic",
                      base_url="https://api.anthropic.com/v1")  # fmt: skip
    moved = handoff(ctx, claude)
    sent = [b.id for b in moved.messages[1].content if isinstance(b, mw.ToolCall)]
    assert sent == ids  # Ollama's synthesized ids already fit Anthropic's rule
    assert [m.tool_call_id for m in moved.messages[2:]] == ids  # type: ignore[union-attr]
    # Back to Ollama: any id is accepted; the body carries tool names, not ids.
    chat_turn = mw.AssistantMessage(
        content=[mw.ToolCall(id="call_" + "x" * 60, name="read", arguments={"path": "a"})],
        api="openai-chat", provider="openai", model="gpt", stop_reason="tool_use")  # fmt: skip
    back = mw.Context(messages=[CTX.messages[0], chat_turn, mw.ToolResultMessage(
        tool_call_id="call_" + "x" * 60, tool_name="read", content=[mw.TextContent(text="A")])])  # fmt: skip
    model = mw.Model(id="qwen3", api=API, provider="ollama", base_url="http://127.0.0.1:11434")
    assert handoff(back, model).messages[1].content[0].id == "call_" + "x" * 60  # type: ignore[union-attr]
    _, body = _request(back, model)
    assert body["messages"][-1] == {"role": "tool", "content": "A", "tool_name": "read"}


# --------------------------------------------------------------------------- CLI


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "modelwire", *args], capture_output=True,
                          text=True, encoding="utf-8", timeout=90)  # fmt: skip


def test_cli_chat_with_the_catalog_model_against_a_loopback_ollama() -> None:
    with MockServer(["Bonjour from Ollama"]) as srv:
        proc = cli("chat", "-m", "ollama/qwen3", "--base-url", srv.origin, "--plain", "hi")
    assert proc.returncode == 0, proc.stderr
    assert "Bonjour from Ollama" in proc.stdout
    assert srv.requests[0].path == "/api/chat" and srv.requests[0].json()["model"] == "qwen3"


def test_cli_replay_and_trace_take_the_api(tmp_path: Path) -> None:
    path = tmp_path / "call.ndjson"
    path.write_bytes(TOOLS)
    proc = cli("replay", "--api", API, str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    last = json.loads(proc.stdout.splitlines()[-1])
    assert last["api"] == API and last["stop_reason"] == "tool_use"
    traced = cli("trace", "--api", API, str(path), "--json")
    assert traced.returncode == 0, traced.stderr
    layers = {json.loads(x)["layer"] for x in traced.stdout.splitlines()}
    assert {"read", "sse", "delta", "event", "message"} <= layers


def test_the_catalog_default_for_ollama_is_the_native_api() -> None:
    model = mw.get_model("ollama", "qwen3")
    assert (model.api, model.base_url) == (API, "http://127.0.0.1:11434")
    anything = catalog.resolve_model("ollama/some-pulled-model")
    assert anything.api == API and msgspec.structs.replace(anything, api="openai-chat")


def test_a_call_id_and_index_sent_by_newer_servers_are_used_and_ignored() -> None:
    # Newer Ollama versions may add an ``id`` to a call and an ``index`` to its function:
    # a given id is kept (no id is made up), unknown fields are ignored.
    line = ('{"model":"m","created_at":"t","message":{"role":"assistant","content":"",'
            '"tool_calls":[{"id":"call_abc123","function":{"index":0,"name":"read",'
            '"arguments":{"path":"a"}}}]},"done":false}\n'
            '{"model":"m","created_at":"t","message":{"role":"assistant","content":""},'
            '"done":true,"done_reason":"stop"}\n')  # fmt: skip
    (call,) = final(mw.replay(API, line.encode())).content
    assert isinstance(call, mw.ToolCall)
    assert (call.id, call.name, call.arguments) == ("call_abc123", "read", {"path": "a"})
