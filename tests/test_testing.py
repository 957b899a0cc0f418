"""modelwire.testing: rendering per wire API, MockServer (framing, faults, recording),
ScriptedModel, the text-generator adapter, the JSON script format, the pytest plugin.

Expectations are derived from the scripts themselves and from the frames parsed
here with ``json`` (never from modelwire's own output); ``mw.replay`` then shows
the rendered bytes decode back to the scripted content.
"""

from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import modelwire as mw
import modelwire.testing as testing
from modelwire._apis import MODEL_SLOT, server_routes
from modelwire.errors import ConfigurationError, StreamInterruptedError
from modelwire.ext import register_wire_api
from modelwire.testing import (
    MockServer,
    RecordedRequest,
    Reply,
    ScriptedModel,
    api_for_path,
    error_reply,
    load_script,
    parse_script,
    register_text_api,
    render,
    render_frames,
    sse_body,
    text_api,
    tool_call,
)

_MODULES = {
    "openai-chat": "modelwire._apis.openai_chat",
    "openai-responses": "modelwire._apis.openai_responses",
    "anthropic-messages": "modelwire._apis.anthropic_messages",
    "google-generative-ai": "modelwire._apis.google_generative_ai",
}


def _api_param(api: str) -> Any:
    missing = importlib.util.find_spec(_MODULES[api]) is None
    return pytest.param(
        api, marks=pytest.mark.skipif(missing, reason=f"the {api} adapter is not written yet")
    )


# The SSE APIs, each checked below against its own format. ollama-chat (NDJSON, no
# tool-call ids on the wire, so a script's ids cannot round-trip) has the same checks
# in tests/test_ollama.py; test_every_registered_api_renders_and_replays covers all.
APIS = tuple(_MODULES)
ALL_APIS = [_api_param(a) for a in APIS]

README_PARAMS = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
}
TOOLS = [
    mw.ToolDefinition(name="read", description="Read a file", parameters=README_PARAMS),
    mw.ToolDefinition(name="ls", description="List", parameters={"type": "object"}),
]
CTX = mw.Context(messages=[mw.UserMessage(content="读取 README.md")], tools=TOOLS)

TEXT = "Hello 世界 — streamed in pieces, with émoji 🙂 and a newline\nat the end."
THINKING = "The user wants the file; 先读取它。"


def rich_script(usage: mw.Usage | None = None, stop: Any = "stop") -> mw.AssistantMessage:
    u = usage or mw.Usage(input=120, output=35, cache_read=40, cache_write=0, total_tokens=195)
    return mw.AssistantMessage(
        content=[
            mw.ThinkingContent(thinking=THINKING, signature="sig-abc"),
            mw.TextContent(text=TEXT),
            tool_call("read", {"path": "README.md", "lines": [1, 2], "note": "名字"}, id="call_r1"),
            tool_call("ls", {}, id="call_l2"),
        ],
        api="", provider="", model="", usage=u, stop_reason=stop,
    )  # fmt: skip


# --------------------------------------------------------------------------- an independent frame parser


def parse_frames(api: str, body: bytes) -> list[tuple[str | None, Any]]:
    """(event name, parsed data) per frame, split by the API's own separator."""
    text = body.decode()
    sep = "\r\n\r\n" if api == "google-generative-ai" else "\n\n"
    assert text.endswith(sep)
    out: list[tuple[str | None, Any]] = []
    for raw in text[: -len(sep)].split(sep):
        lines = raw.split("\r\n" if api == "google-generative-ai" else "\n")
        name = None
        data: list[str] = []
        for line in lines:
            field, _, value = line.partition(": ")
            if field == "event":
                name = value
            else:
                assert field == "data", line
                data.append(value)
        payload = "\n".join(data)
        out.append((name, payload if payload == "[DONE]" else json.loads(payload)))
    return out


def expected_from_frames(api: str, frames: list[tuple[str | None, Any]]) -> dict[str, Any]:
    """Text, thinking, tool calls and stop signal read from the frames with plain json."""
    text, thinking = "", ""
    calls: dict[Any, dict[str, str]] = {}
    stop = None
    if api == "openai-chat":
        for _, d in frames:
            if d == "[DONE]":
                continue
            for c in d["choices"]:
                delta = c["delta"]
                text += delta.get("content") or ""
                thinking += delta.get("reasoning_content") or ""
                for tc in delta.get("tool_calls") or []:
                    slot = calls.setdefault(tc["index"], {"id": "", "name": "", "args": ""})
                    slot["id"] = tc.get("id") or slot["id"]
                    slot["name"] = tc.get("function", {}).get("name") or slot["name"]
                    slot["args"] += tc.get("function", {}).get("arguments") or ""
                stop = c["finish_reason"] or stop
    elif api == "openai-responses":
        for name, d in frames:
            assert name == d["type"]
            if name == "response.output_text.delta":
                text += d["delta"]
            elif name == "response.reasoning_summary_text.delta":
                thinking += d["delta"]
            elif name == "response.output_item.added" and d["item"]["type"] == "function_call":
                it = d["item"]
                calls[it["id"]] = {"id": it["call_id"], "name": it["name"], "args": ""}
            elif name == "response.function_call_arguments.delta":
                calls[d["item_id"]]["args"] += d["delta"]
            elif name in ("response.completed", "response.incomplete"):
                stop = d["response"]["status"]
    elif api == "anthropic-messages":
        for name, d in frames:
            assert name == d["type"]
            if name == "content_block_start" and d["content_block"]["type"] == "tool_use":
                b = d["content_block"]
                calls[d["index"]] = {"id": b["id"], "name": b["name"], "args": ""}
            elif name == "content_block_delta":
                delta = d["delta"]
                text += delta.get("text", "")
                thinking += delta.get("thinking", "")
                if delta["type"] == "input_json_delta":
                    calls[d["index"]]["args"] += delta["partial_json"]
            elif name == "message_delta":
                stop = d["delta"]["stop_reason"]
    else:
        for name, d in frames:
            assert name is None
            cand = d["candidates"][0]
            for part in cand["content"]["parts"]:
                if "functionCall" in part:
                    fc = part["functionCall"]
                    calls[len(calls)] = {"id": fc.get("id", ""), "name": fc["name"],
                                         "args": json.dumps(fc["args"])}  # fmt: skip
                elif part.get("thought"):
                    thinking += part["text"]
                else:
                    text += part.get("text", "")
            stop = cand.get("finishReason") or stop
    return {"text": text, "thinking": thinking, "calls": list(calls.values()), "stop": stop}


# --------------------------------------------------------------------------- render: framing


@pytest.mark.parametrize("api", APIS)
def test_render_framing_matches_each_api(api: str) -> None:
    body = render(rich_script(), api, model="m-1", response_id="r-1", piece_chars=5)
    frames = parse_frames(api, body)
    text = body.decode()
    if api == "openai-chat":
        assert "event:" not in text and frames[-1] == (None, "[DONE]")
        assert text.endswith("data: [DONE]\n\n")
    elif api == "openai-responses":
        assert "[DONE]" not in text and frames[-1][0] == "response.completed"
        assert all(n is not None for n, _ in frames)
        seqs = [d["sequence_number"] for _, d in frames]
        assert seqs == list(range(len(frames)))
    elif api == "anthropic-messages":
        names = [n for n, _ in frames]
        assert names[0] == "message_start" and names[-1] == "message_stop"
        assert names.count("content_block_start") == names.count("content_block_stop") == 4
    else:
        assert "event:" not in text and "\r\n\r\n" in text
        assert "finishReason" in frames[-1][1]["candidates"][0]
        assert all("finishReason" not in d["candidates"][0] for _, d in frames[:-1])
    got = expected_from_frames(api, frames)
    assert got["text"] == TEXT
    assert got["thinking"] == THINKING
    assert [c["name"] for c in got["calls"]] == ["read", "ls"]
    assert json.loads(got["calls"][0]["args"]) == {"path": "README.md", "lines": [1, 2],
                                                   "note": "名字"}  # fmt: skip
    assert json.loads(got["calls"][1]["args"]) == {}
    assert got["stop"] == {"openai-chat": "tool_calls", "openai-responses": "completed",
                           "anthropic-messages": "tool_use",
                           "google-generative-ai": "STOP"}[api]  # fmt: skip


@pytest.mark.parametrize("api", APIS)
def test_render_splits_deltas_by_piece_chars(api: str) -> None:
    frames: list[tuple[Any, Any]] = render_frames("abcdefghij", api, piece_chars=3)
    pieces = []
    for _, d in frames:
        if api == "openai-chat" and d != "[DONE]" and d["choices"]:
            pieces.append(d["choices"][0]["delta"].get("content"))
        elif api == "openai-responses" and d["type"] == "response.output_text.delta":
            pieces.append(d["delta"])
        elif api == "anthropic-messages" and d["type"] == "content_block_delta":
            pieces.append(d["delta"]["text"])
        elif api == "google-generative-ai":
            pieces.append(d["candidates"][0]["content"]["parts"][0]["text"])
    assert [p for p in pieces if p] == ["abc", "def", "ghi", "j"]


@pytest.mark.parametrize("api", testing.APIS)
def test_a_failed_message_renders_its_content_then_the_apis_own_error(api: str) -> None:
    failed = mw.AssistantMessage(content=[mw.TextContent(text="part of it")], api="",
                                 provider="", model="", stop_reason="error")  # fmt: skip
    done = mw.replay(api, render(failed, api, piece_chars=4))[-1]
    assert done.type == "error", api  # never read as success
    assert done.message.text == "part of it" and done.message.error is not None
    assert "the scripted reply failed" in done.message.error.message


def test_render_refuses_what_a_stream_cannot_say() -> None:
    with pytest.raises(ConfigurationError, match="cannot render for api"):
        render("hi", "no-such-api")
    with pytest.raises(ConfigurationError, match=r"script\[1\]"):
        render(["ok", 42], "openai-chat")  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="piece_chars"):
        render("hi", "openai-chat", piece_chars=0)


@pytest.mark.parametrize("api", testing.APIS)
def test_every_registered_api_renders_and_replays(api: str) -> None:
    assert set(APIS) <= set(testing.APIS)  # the registry lists these and any new one
    msg = mw.replay(api, render(["hello ", "wörld"], api, piece_chars=3)).message
    assert isinstance(msg, mw.AssistantMessage) and msg.text == "hello wörld", msg.error


def test_api_for_path_knows_every_endpoint() -> None:
    assert api_for_path("/v1/chat/completions") == "openai-chat"
    assert api_for_path("/v1/responses") == "openai-responses"
    assert api_for_path("/v1/messages") == "anthropic-messages"
    assert api_for_path("/v1beta/models/gemini-x:streamGenerateContent?alt=sse") == (
        "google-generative-ai"
    )
    assert api_for_path("/v1/embeddings") is None


# --------------------------------------------------------------------------- render → replay


def _check_message(api: str, msg: mw.AssistantMessage, script: mw.AssistantMessage) -> None:
    assert msg.stop_reason == "tool_use", msg.error
    assert [type(b).__name__ for b in msg.content] == [type(b).__name__ for b in script.content]
    thinking, text, read, ls = msg.content
    assert isinstance(thinking, mw.ThinkingContent) and thinking.thinking == THINKING
    assert isinstance(text, mw.TextContent) and text.text == TEXT
    for got, want in ((read, script.content[2]), (ls, script.content[3])):
        assert isinstance(got, mw.ToolCall) and isinstance(want, mw.ToolCall)
        assert (got.id, got.name, got.arguments) == (want.id, want.name, want.arguments)
        assert json.loads(got.raw_arguments or "") == want.arguments
    u = script.usage
    # Anthropic and Responses (input_tokens_details.cache_write_tokens) report cache
    # writes; the others count them as input.
    cw = u.cache_write if api in ("anthropic-messages", "openai-responses") else 0
    assert (msg.usage.input, msg.usage.output, msg.usage.cache_read, msg.usage.cache_write) == (
        u.input + u.cache_write - cw,
        u.output,
        u.cache_read,
        cw,
    )
    if api in ("anthropic-messages", "google-generative-ai"):
        assert thinking.signature == "sig-abc"  # both carry the thinking signature verbatim


@pytest.mark.parametrize("api", ALL_APIS)
def test_rendered_stream_decodes_back_whole_and_byte_by_byte(api: str) -> None:
    usage = mw.Usage(input=120, output=35, cache_read=40, cache_write=7, total_tokens=202)
    script = rich_script(usage)
    body = render(script, api)
    whole = mw.replay(api, body)
    _check_message(api, whole[-1].message, script)  # type: ignore[union-attr]
    split = mw.replay(api, [body[i : i + 1] for i in range(len(body))])
    assert [e.to_dict() for e in split[:-1]] == [e.to_dict() for e in whole[:-1]]
    assert split[-1].message.content == whole[-1].message.content  # type: ignore[union-attr]


@pytest.mark.parametrize("api", ALL_APIS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_rendered_stream_decodes_at_random_splits(api: str, data: st.DataObject) -> None:
    script = rich_script()
    body = render(script, api, piece_chars=3)
    points = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=40)))
    chunks = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    _check_message(api, mw.replay(api, chunks)[-1].message, script)  # type: ignore[union-attr]


@pytest.mark.parametrize("api", ALL_APIS)
def test_length_finish_renders_as_length(api: str) -> None:
    msg = mw.AssistantMessage(content=[mw.TextContent(text="cut of")], api="", provider="",
                              model="", stop_reason="length")  # fmt: skip
    out = mw.replay(api, render(msg, api))[-1].message  # type: ignore[union-attr]
    assert out.stop_reason == "length" and out.text == "cut of"


# --------------------------------------------------------------------------- MockServer over HTTP


@pytest.mark.parametrize("api", ALL_APIS)
def test_mock_server_speaks_each_api(api: str) -> None:
    script = rich_script()
    with MockServer([script, "second reply"]) as srv:
        model = srv.model(api, "model-x")
        first = mw.complete_sync(model, CTX)
        second = mw.complete_sync(model, CTX.with_messages(first))
    _check_message(api, first, script)
    assert second.text == "second reply" and second.stop_reason == "stop"
    assert len(srv.requests) == 2
    rec = srv.requests[0]
    assert rec.method == "POST" and rec.api == api and rec.model == "model-x"
    # The exact path the mock server routes to the API, asked of the registry.
    assert rec.path.split("?")[0] == server_routes()[api].replace(MODEL_SLOT, "model-x")
    assert "读取 README.md" in rec.body.decode()
    # the second request carries the first answer's tool calls back
    assert "README.md" in srv.requests[1].body.decode()


def test_mock_server_records_requests(mock_server: MockServer) -> None:
    mock_server.add("ok")
    model = mock_server.model()
    mw.complete_sync(model, CTX, api_key="sk-test-123", headers={"X-Trace": "t1"})
    rec = mock_server.last_request
    assert isinstance(rec, RecordedRequest)
    assert rec.headers["authorization"] == "Bearer sk-test-123"
    assert rec.headers["x-trace"] == "t1"
    body = rec.json()
    assert body["model"] == "mock-model" and body["stream"] is True
    assert body["messages"][-1] == {"role": "user", "content": "读取 README.md"}
    assert [t["function"]["name"] for t in body["tools"]] == ["read", "ls"]
    assert mock_server.pending == 0


def test_mock_server_keeps_raw_bytes_and_reply_working() -> None:
    payloads = [{"id": "c1", "choices": [{"index": 0, "delta": {"content": "raw"}}]},
                {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]  # fmt: skip
    with MockServer([sse_body(payloads), Reply(body=sse_body(payloads), chunk_size=3)]) as srv:
        model = mw.Model(id="m", api="openai-chat", provider="local", base_url=srv.base_url)
        assert mw.complete_sync(model, CTX).text == "raw"
        assert mw.complete_sync(model, CTX).text == "raw"


def test_responder_sees_the_request_and_decides() -> None:
    seen: list[str] = []

    def reply(rec: RecordedRequest) -> Any:
        seen.append(rec.json()["messages"][-1]["content"])
        return f"you said {len(seen)}"

    with MockServer([reply], repeat_last=True) as srv:
        model = srv.model()
        a = mw.complete_sync(model, mw.Context(messages=[mw.UserMessage(content="one")]))
        b = mw.complete_sync(model, mw.Context(messages=[mw.UserMessage(content="two")]))
    assert (a.text, b.text) == ("you said 1", "you said 2")
    assert seen == ["one", "two"]


def test_no_reply_left_and_unknown_path_and_bad_script() -> None:
    with MockServer(["only one", Reply(message="scripted"), Reply(message=object())]) as srv:
        model = srv.model()
        assert mw.complete_sync(model, CTX).text == "only one"
        r = httpx.post(srv.origin + "/v1/audio/speech", json={})
        assert r.status_code == 404 and "/v1/audio/speech" in r.json()["error"]["message"]
        assert srv.pending == 2  # the 404 consumed no reply
        assert mw.complete_sync(model, CTX).text == "scripted"
        bad = mw.complete_sync(model, CTX, max_retries=0)
        assert bad.error is not None and bad.error.kind == "server"
        assert "scripted reply failed" in bad.error.message
        empty = mw.complete_sync(model, CTX, max_retries=0)
        assert empty.error is not None and "no reply left" in empty.error.message


def test_error_reply_is_a_typed_provider_error() -> None:
    with MockServer([error_reply(429, "slow down", type="rate_limit_error",
                                 headers={"retry-after": "120"})]) as srv:  # fmt: skip
        msg = mw.complete_sync(srv.model(), CTX, max_retries=0)
    assert msg.error is not None
    assert (msg.error.kind, msg.error.status, msg.error.retry_after) == ("rate_limit", 429, 120.0)
    assert "slow down" in msg.error.message


# --------------------------------------------------------------------------- faults


def test_pieces_follow_the_split_options() -> None:
    body = bytes(range(50))
    assert Reply(body=body, chunk_size=1).pieces() == [bytes([b]) for b in body]
    assert [len(p) for p in Reply(body=body, chunk_size=16).pieces()] == [16, 16, 16, 2]
    assert Reply(body=body, split_points=(0, 10, 10, 60, 30)).pieces() == [
        body[:10],
        body[10:30],
        body[30:],
    ]
    a, b = Reply(body=body, seed=1).pieces(), Reply(body=body, seed=1).pieces()
    assert a == b and b"".join(a) == body
    assert Reply(body=body, seed=2).pieces() != a  # another seed, other cuts
    assert Reply(body=body).pieces() == [body]


@pytest.mark.parametrize("api", ALL_APIS)
@pytest.mark.parametrize(
    "delivery",
    [{"chunk_size": 1}, {"chunk_size": 13}, {"seed": 7}, {"split_points": (1, 2, 3, 50, 51)}],
    ids=["every-byte", "size-13", "seed-7", "points"],
)
def test_split_deliveries_give_the_same_message(api: str, delivery: dict[str, Any]) -> None:
    script = rich_script()
    with MockServer([Reply(message=script, **delivery)]) as srv:
        _check_message(api, mw.complete_sync(srv.model(api), CTX), script)


def test_scripted_replies_flush_one_event_per_chunk() -> None:
    reply = Reply(message="abcdef", piece_chars=2)
    with MockServer([reply]) as srv:
        resolved = srv._resolve(
            RecordedRequest("POST", "/v1/messages", {}, b'{"stream":true}'), reply
        )
    assert resolved.split_points is not None
    pieces = resolved.pieces()
    assert all(p.endswith(b"\n\n") and p.startswith(b"event: ") for p in pieces)
    assert len(pieces) == len(render_frames("abcdef", "anthropic-messages", piece_chars=2))


def test_delay_spaces_the_pieces() -> None:
    with MockServer([Reply(message="abcdefgh", piece_chars=2, delay=0.03)]) as srv:
        t0 = time.monotonic()
        msg = mw.complete_sync(srv.model(), CTX)
        elapsed = time.monotonic() - t0
    pieces = len(render_frames("abcdefgh", "openai-chat", piece_chars=2))
    assert msg.text == "abcdefgh"
    assert elapsed >= 0.03 * (pieces - 1) * 0.9


@pytest.mark.parametrize("api", ALL_APIS)
def test_cut_mid_body_is_stream_interrupted_keeping_content(api: str) -> None:
    body = render("a long answer " * 20, api)
    cut = len(body) // 2
    with MockServer([Reply(body=body, cut_after=cut, chunk_size=40)]) as srv:
        msg = mw.complete_sync(srv.model(api), CTX)
    assert msg.stop_reason == "error" and msg.error is not None
    assert msg.error.kind == StreamInterruptedError.kind
    assert msg.text and ("a long answer " * 20).startswith(msg.text)
    assert len(msg.text) < len("a long answer " * 20)


@pytest.mark.anyio
async def test_stall_ends_with_timeout_after_the_idle_limit() -> None:
    body = render("before the stall, then nothing", "openai-chat")
    with MockServer([Reply(body=body, stall_after=len(body) // 2, stall_seconds=10)]) as srv:
        t0 = time.monotonic()
        msg = await mw.complete(srv.model(), CTX, timeout=mw.Timeout(connect=5, idle=0.3))
        elapsed = time.monotonic() - t0
    assert msg.error is not None and msg.error.kind == "timeout"
    assert 0.25 <= elapsed < 5


# --------------------------------------------------------------------------- ScriptedModel


@pytest.mark.anyio
async def test_scripted_model_gives_the_same_events_as_the_wire() -> None:
    script = rich_script()
    sm = ScriptedModel([script], piece_chars=8)
    s = mw.stream(sm.model, CTX)
    offline = [e async for e in s]
    with MockServer([script]) as srv:
        wire = [e async for e in mw.stream(srv.model("anthropic-messages"), CTX)]
    assert [e.type for e in offline] == [e.type for e in wire]
    msg = offline[-1].message  # type: ignore[union-attr]
    assert msg.api == "scripted" and msg.model == sm.model.id
    assert msg.content == wire[-1].message.content  # type: ignore[union-attr]
    assert (msg.usage.input, msg.usage.output, msg.usage.cache_read) == (120, 35, 40)
    assert sm.contexts == [CTX]


@pytest.mark.anyio
async def test_scripted_model_replies_in_order_and_then_fails() -> None:
    sm = ScriptedModel(["first", lambda ctx: f"saw {len(ctx.messages)} messages"])
    assert (await mw.complete(sm.model, CTX)).text == "first"
    assert (await mw.complete(sm.model, CTX)).text == "saw 1 messages"
    over = await mw.complete(sm.model, CTX)
    assert over.stop_reason == "error" and over.error is not None
    assert "no reply left" in over.error.message
    assert len(sm.contexts) == 3 and sm.pending == 0


@pytest.mark.anyio
async def test_scripted_model_applies_the_tool_choice_policy() -> None:
    sm = ScriptedModel([tool_call("read", {"path": "x"}), "plain text"])
    refused = await mw.complete(sm.model, CTX, tool_choice="none")
    assert refused.error is not None and refused.error.kind == "tool_call_protocol"
    missing = await mw.complete(sm.model, CTX, tool_choice="required")
    assert missing.error is not None and missing.error.kind == "tool_call_protocol"


@pytest.mark.anyio
async def test_scripted_failure_keeps_content_and_kind() -> None:
    failed = mw.AssistantMessage(
        content=[mw.TextContent(text="partial")], api="", provider="", model="",
        stop_reason="error", error=mw.ErrorInfo(kind="overloaded", message="busy"),
    )  # fmt: skip
    sm = ScriptedModel([failed])
    msg = await mw.complete(sm.model, CTX)
    assert (msg.stop_reason, msg.text) == ("error", "partial")
    assert msg.error is not None and (msg.error.kind, msg.error.message) == ("overloaded", "busy")
    with pytest.raises(mw.errors.OverloadedError):
        msg.raise_for_error()


@pytest.mark.anyio
async def test_scripted_model_prices_usage() -> None:
    sm = ScriptedModel(
        [mw.AssistantMessage(content=[mw.TextContent(text="x")], api="", provider="", model="",
                             usage=mw.Usage(input=1_000_000, output=500_000), stop_reason="stop")],
        cost=mw.ModelCost(input=2.0, output=8.0),
    )  # fmt: skip
    msg = await mw.complete(sm.model, CTX)
    assert msg.usage.cost.total == pytest.approx(2.0 + 4.0)


def _scripted_faults() -> list[Any]:
    failed = mw.AssistantMessage(
        content=[mw.TextContent(text="partial")], api="", provider="", model="",
        stop_reason="error", error=mw.ErrorInfo(kind="overloaded", message="busy"),
    )  # fmt: skip
    return [rich_script(), lambda ctx: f"saw {len(ctx.messages)} messages", failed]


def _same_event(a: Any) -> tuple[Any, ...]:
    # Timestamps differ between two runs; everything else must not.
    msg = a.partial
    return (a.type, getattr(a, "delta", None), msg.content, msg.usage, msg.stop_reason,
            msg.error)  # fmt: skip


@pytest.mark.anyio
async def test_scripted_model_gives_the_same_replies_faults_and_records_on_both_paths() -> None:
    on_async, on_sync = ScriptedModel(_scripted_faults()), ScriptedModel(_scripted_faults())
    async_events = [[e async for e in mw.stream(on_async.model, CTX)] for _ in range(4)]
    sync_events = [list(mw.stream_sync(on_sync.model, CTX)) for _ in range(4)]
    for a, b in zip(async_events, sync_events, strict=True):
        assert [_same_event(e) for e in a] == [_same_event(e) for e in b]
    finals = [evs[-1].message for evs in sync_events]  # type: ignore[union-attr]
    assert [m.stop_reason for m in finals] == ["tool_use", "stop", "error", "error"]
    assert finals[1].text == "saw 1 messages"
    assert finals[2].text == "partial" and finals[2].error is not None
    assert finals[2].error.kind == "overloaded"
    assert finals[3].error is not None and "no reply left" in finals[3].error.message
    assert on_sync.contexts == on_async.contexts == [CTX] * 4


def test_scripted_model_complete_sync_applies_the_tool_choice_policy() -> None:
    sm = ScriptedModel([tool_call("read", {"path": "x"}), "fine"])
    refused = mw.complete_sync(sm.model, CTX, tool_choice="none")
    assert refused.error is not None and refused.error.kind == "tool_call_protocol"
    assert mw.complete_sync(sm.model, CTX).text == "fine"


@pytest.mark.anyio
async def test_scripted_model_sync_path_works_inside_a_running_loop() -> None:
    # stream_sync runs no event loop of its own (DESIGN §2a), so it works here too.
    sm = ScriptedModel(["from inside a loop"])
    assert mw.complete_sync(sm.model, CTX).text == "from inside a loop"


def test_abort_keeps_the_content_of_a_sync_scripted_model() -> None:
    sm = ScriptedModel(["Hello there, world"], piece_chars=6)
    s = mw.stream_sync(sm.model, CTX)
    for e in s:
        if e.type == "text_delta":
            s.abort()
    msg = s.result()
    assert (msg.stop_reason, msg.text) == ("aborted", "Hello ")


# --------------------------------------------------------------------------- text_api


@pytest.mark.anyio
async def test_text_generator_becomes_a_provider() -> None:
    async def words(model: mw.Model, context: mw.Context) -> AsyncIterator[str]:
        for w in ["echo: ", str(context.messages[-1].content)]:
            yield w

    register_text_api("test-echo", words)
    model = mw.Model(id="e", api="test-echo", provider="custom", base_url="http://echo.invalid")
    events = [e.type async for e in mw.stream(model, CTX)]
    assert events == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    msg = await mw.complete(model, CTX)
    assert msg.text == "echo: 读取 README.md" and msg.stop_reason == "stop"


@pytest.mark.anyio
async def test_text_generator_failures_are_typed_and_keep_content() -> None:
    async def broken(model: mw.Model, context: mw.Context) -> AsyncIterator[str]:
        yield "half "
        raise RuntimeError("backend went away")

    async def timed_out(model: mw.Model, context: mw.Context) -> AsyncIterator[str]:
        yield "x"
        raise mw.errors.RequestTimeoutError("idle timeout")

    register_wire_api(text_api(broken), "test-broken")
    register_wire_api(text_api(timed_out), "test-timeout")
    base: dict[str, Any] = dict(provider="custom", base_url="http://x.invalid")
    m1 = await mw.complete(mw.Model(id="b", api="test-broken", **base), CTX)
    assert m1.text == "half " and m1.error is not None
    assert m1.error.kind == "provider_stream" and "backend went away" in m1.error.message
    m2 = await mw.complete(mw.Model(id="t", api="test-timeout", **base), CTX)
    assert m2.error is not None and m2.error.kind == "timeout"


# --------------------------------------------------------------------------- script files


def test_parse_script_covers_every_reply_kind() -> None:
    replies = parse_script(json.dumps([
        "plain",
        {"text": "look", "tool_calls": [{"name": "read", "arguments": {"path": "a"}, "id": "c9"}]},
        {"content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "t"}],
         "stop_reason": "length", "usage": {"input": 3, "output": 4}, "piece_chars": 2},
        {"status": 429, "error": "slow down", "headers": {"retry-after": "1"}},
        {"body": "data: [DONE]\n\n", "chunk_size": 1, "delay": 0.5},
        {"text": "cut", "cut_after": 10, "stall_after": 5, "stall_seconds": 1.5, "seed": 3},
    ]))  # fmt: skip
    assert replies[0].message == "plain"
    calls = replies[1].message.tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [("c9", "read", {"path": "a"})]
    assert replies[1].message.text == "look"
    m2 = replies[2].message
    assert m2.stop_reason == "length" and replies[2].piece_chars == 2
    assert (m2.usage.input, m2.usage.output, m2.usage.total_tokens) == (3, 4, 7)
    assert isinstance(m2.content[0], mw.ThinkingContent)
    assert replies[3].status == 429 and replies[3].headers == {"retry-after": "1"}
    assert (replies[3].error, replies[3].error_type) == ("slow down", None)
    with MockServer([replies[3]]) as srv:  # rendered in the shape of the API it reaches
        r = httpx.post(srv.origin + "/v1/messages", json={})
    assert r.status_code == 429 and r.headers["retry-after"] == "1"
    assert r.json()["error"] == {"type": "rate_limit_error", "message": "slow down"}
    assert (replies[4].body, replies[4].chunk_size, replies[4].delay) == (
        b"data: [DONE]\n\n",
        1,
        0.5,
    )
    r5 = replies[5]
    assert (r5.cut_after, r5.stall_after, r5.stall_seconds, r5.seed) == (10, 5, 1.5, 3)


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ('[{"text": "x", "tool_calls": [{"name": 5}]}]', r"script\[0\]\.tool_calls\[0\]\.name"),
        ('["ok", {"txt": "typo"}]', r"script\[1\].*txt"),
        ('[{"text": "x", "body": "y"}]', r"script\[0\]: a scripted reply cannot"),
        ('[{"content": [], "text": "x"}]', r"script\[0\]: give either content"),
        ('[{"status": 200}]', r"script\[0\]: say what to reply"),
        ('{"not": "a list"}', r"invalid script"),
        ('["unterminated', r"not JSON"),
        ('[{"text": "x", "chunk_size": 0}]', r"script\[0\]\.chunk_size"),
    ],
)
def test_bad_scripts_name_the_place(script: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        parse_script(script)


def test_load_script_reads_a_file(tmp_path: Any) -> None:
    path = tmp_path / "s.json"
    path.write_text('["from a file"]', encoding="utf-8")
    with MockServer(load_script(path)) as srv:
        assert mw.complete_sync(srv.model(), CTX).text == "from a file"
    with pytest.raises(ConfigurationError, match="cannot read script"):
        load_script(tmp_path / "missing.json")


def test_server_model_refuses_unknown_api(mock_server: MockServer) -> None:
    with pytest.raises(ConfigurationError, match="unknown api"):
        mock_server.model("grpc")
    assert mock_server.model("google-generative-ai").base_url.endswith("/v1beta")


def test_scripted_model_fixture(scripted_model: ScriptedModel) -> None:
    scripted_model.add("from the fixture")
    assert scripted_model.pending == 1
    assert scripted_model.model.api == "scripted"


# --------------------------------------------------------------------------- the documented recipes (docs/testing.md)


@pytest.mark.anyio
async def test_doc_recipe_agent_against_mock_server(tmp_path: Any) -> None:
    (tmp_path / "README.md").write_text("# Hello\n")
    replies = [["Let me read it.", tool_call("read", {"path": "README.md"})], "It says hello."]
    with MockServer(replies) as server:
        agent = mw.Agent(server.model("anthropic-messages"),
                         tools=mw.tools.read_only(root=tmp_path))  # fmt: skip
        run = await agent.run("读取 README.md")
    assert run.final.text == "It says hello."
    first, second = server.requests
    assert first.path == "/v1/messages"
    result = second.json()["messages"][-1]["content"][0]
    assert result["type"] == "tool_result"
    assert "# Hello" in json.dumps(result, ensure_ascii=False)


@pytest.mark.anyio
async def test_doc_recipe_responder_answers_from_the_tool_result(tmp_path: Any) -> None:
    (tmp_path / "README.md").write_text("# Hello\nworld\n")

    def summarise(request: RecordedRequest) -> str:
        tool_output = request.json()["messages"][-1]["content"]
        return f"The file starts with: {tool_output.splitlines()[1]}"

    with MockServer([tool_call("read", {"path": "README.md"}), summarise]) as server:
        agent = mw.Agent(server.model(), tools=mw.tools.read_only(root=tmp_path))
        run = await agent.run("读取 README.md")
    assert run.final.text.startswith("The file starts with: ")
    assert run.final.text.endswith("# Hello")


@pytest.mark.anyio
async def test_doc_recipe_agent_against_scripted_model(tmp_path: Any) -> None:
    (tmp_path / "README.md").write_text("# Hello\n")
    model = ScriptedModel(
        [tool_call("read", {"path": "README.md"}),
         lambda context: f"I saw {len(context.messages)} messages."]
    )  # fmt: skip
    agent = mw.Agent(model.model, tools=mw.tools.read_only(root=tmp_path))
    run = await agent.run("读取 README.md")
    assert model.contexts[1].messages[-1].role == "tool_result"
    assert "# Hello" in model.contexts[1].messages[-1].text
    # user, assistant (call), tool result: three messages when the second reply is decided
    assert run.final.text == "I saw 3 messages."


@pytest.mark.anyio
async def test_doc_recipe_custom_provider_in_five_lines() -> None:
    async def shout(model: mw.Model, context: mw.Context) -> AsyncIterator[str]:
        for word in str(context.messages[-1].content).split():
            yield word.upper() + " "

    register_text_api("shout", shout)
    ctx = mw.Context(messages=[mw.UserMessage(content="hello there")])
    message = await mw.complete(
        mw.Model(id="v1", api="shout", provider="me", base_url="http://localhost"), ctx
    )
    assert message.text == "HELLO THERE "


@pytest.mark.anyio
async def test_scripted_length_finish_never_trusts_call_arguments() -> None:
    cut = mw.AssistantMessage(
        content=[tool_call("read", {"path": "README.md"})], api="", provider="", model="",
        stop_reason="length",
    )  # fmt: skip
    msg = await mw.complete(ScriptedModel([cut]).model, CTX)
    assert msg.stop_reason == "length"
    (call,) = msg.tool_calls
    assert call.arguments == {} and call.raw_arguments == '{"path":"README.md"}'


# --------------------------------------------------------------------------- answers as asked

CALL = mw.ToolCall(id="call_7", name="read", arguments={"path": "README.md"},
                   raw_arguments='{"path":"README.md"}')  # fmt: skip
SCRIPT = mw.AssistantMessage(
    content=(mw.TextContent(text="Reading it."), CALL), api="", provider="", model="",
    usage=mw.Usage(input=11, output=7, total_tokens=18), stop_reason="tool_use",
)  # fmt: skip

# (api, path, body) of a request that does not ask for a stream, and what the one JSON
# object answering it must hold: text, the call's name and arguments, the stop reason.
NON_STREAMING = [
    ("openai-chat", "/v1/chat/completions", {"model": "m", "messages": []}),
    ("openai-chat", "/v1/chat/completions", {"model": "m", "messages": [], "stream": False}),
    ("openai-responses", "/v1/responses", {"model": "m", "input": "hi"}),
    ("anthropic-messages", "/v1/messages", {"model": "m", "max_tokens": 5, "messages": []}),
    ("google-generative-ai", "/v1beta/models/m:generateContent", {"contents": []}),
    ("ollama-chat", "/api/chat", {"model": "m", "messages": [], "stream": False}),
    ("bedrock-converse", "/model/m/converse", {"messages": []}),
]


def _summary(api: str, obj: dict[str, Any]) -> tuple[str, str, dict[str, Any], str, int, int]:
    """(text, tool name, tool arguments, raw stop reason, input, output) read by hand
    from each provider's documented non-streaming object."""
    if api == "openai-chat":
        m = obj["choices"][0]["message"]
        f = m["tool_calls"][0]["function"]
        u = obj["usage"]
        return (m["content"], f["name"], json.loads(f["arguments"]),
                obj["choices"][0]["finish_reason"], u["prompt_tokens"], u["completion_tokens"])  # fmt: skip
    if api == "openai-responses":
        msg, call = obj["output"]
        u = obj["usage"]
        return (msg["content"][0]["text"], call["name"], json.loads(call["arguments"]),
                obj["status"], u["input_tokens"], u["output_tokens"])  # fmt: skip
    if api == "anthropic-messages":
        text, use = obj["content"]
        u = obj["usage"]
        return (text["text"], use["name"], use["input"], obj["stop_reason"],
                u["input_tokens"], u["output_tokens"])  # fmt: skip
    if api == "google-generative-ai":
        cand = obj["candidates"][0]
        text, call = cand["content"]["parts"]
        u = obj["usageMetadata"]
        return (text["text"], call["functionCall"]["name"], call["functionCall"]["args"],
                cand["finishReason"], u["promptTokenCount"], u["candidatesTokenCount"])  # fmt: skip
    if api == "ollama-chat":
        m = obj["message"]
        f = m["tool_calls"][0]["function"]
        return (m["content"], f["name"], f["arguments"], obj["done_reason"],
                obj["prompt_eval_count"], obj["eval_count"])  # fmt: skip
    text, use = obj["output"]["message"]["content"]
    u = obj["usage"]
    return (text["text"], use["toolUse"]["name"], use["toolUse"]["input"], obj["stopReason"],
            u["inputTokens"], u["outputTokens"])  # fmt: skip


_STOPS = {"openai-chat": "tool_calls", "openai-responses": "completed",
          "anthropic-messages": "tool_use", "google-generative-ai": "STOP",
          "ollama-chat": "stop", "bedrock-converse": "tool_use"}  # fmt: skip


@pytest.mark.parametrize(("api", "path", "body"), NON_STREAMING)
def test_a_request_without_stream_gets_one_json_object(
    api: str, path: str, body: dict[str, Any]
) -> None:
    with MockServer([SCRIPT]) as srv:
        r = httpx.post(srv.origin + path, json=body)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    got = _summary(api, r.json())
    assert got == ("Reading it.", "read", {"path": "README.md"}, _STOPS[api], 11, 7)
    assert srv.requests[0].api == api and not srv.requests[0].stream


def test_the_same_path_streams_when_asked() -> None:
    with MockServer([SCRIPT, SCRIPT]) as srv:
        r = httpx.post(srv.origin + "/v1/messages", json={"model": "m", "stream": True})
        o = httpx.post(srv.origin + "/api/chat", json={"model": "m"})  # Ollama: streams by default
    assert r.headers["content-type"] == "text/event-stream"
    assert r.text.startswith("event: message_start\n")
    assert o.headers["content-type"] == "application/x-ndjson" and len(o.text.splitlines()) > 1
    assert [q.stream for q in srv.requests] == [True, True]


def test_the_ids_carry_the_provider_prefixes() -> None:
    with MockServer([SCRIPT] * 3) as srv:
        chat = httpx.post(srv.origin + "/v1/chat/completions", json={}).json()
        resp = httpx.post(srv.origin + "/v1/responses", json={}).json()
        msg = httpx.post(srv.origin + "/v1/messages", json={}).json()
    assert chat["id"].startswith("chatcmpl-") and chat["object"] == "chat.completion"
    assert resp["id"].startswith("resp_") and resp["object"] == "response"
    assert msg["id"].startswith("msg_") and msg["type"] == "message"


def test_a_made_up_tool_call_id_takes_the_prefix_of_the_api_that_sends_it() -> None:
    # Anthropic's tool_use ids are toolu_…, Bedrock's tooluse_…, OpenAI's call_…: a
    # script's call without an id looks like the provider's own, streamed or not; an
    # id the script gives is sent exactly as given.
    made_up = testing.tool_call("read", {"path": "README.md"})
    given = testing.tool_call("read", {"path": "README.md"}, id="my-own-id")
    n = made_up.id.removeprefix("call_")
    ctx = mw.Context(messages=[mw.UserMessage(content="read it")], tools=TOOLS)
    with MockServer([made_up, made_up, made_up, given]) as srv:
        anthropic_streamed = mw.complete_sync(srv.model("anthropic-messages"), ctx, api_key="k")
        chat_streamed = mw.complete_sync(srv.model("openai-chat"), ctx, api_key="k")
        whole = httpx.post(srv.origin + "/v1/messages", json={"model": "m"}).json()
        kept = mw.complete_sync(srv.model("anthropic-messages"), ctx, api_key="k")
    assert anthropic_streamed.content[-1].id == f"toolu_{n}"  # type: ignore[union-attr]
    assert chat_streamed.content[-1].id == f"call_{n}"  # type: ignore[union-attr]
    assert [b["id"] for b in whole["content"] if b["type"] == "tool_use"] == [f"toolu_{n}"]
    assert kept.content[-1].id == "my-own-id"  # type: ignore[union-attr]
    assert render(made_up, "bedrock-converse").count(f"tooluse_{n}".encode()) == 1
    # A script that gives the very text of a made-up id keeps it: the rule is about
    # the call the kit made, not about how an id looks.
    same_text = testing.tool_call("read", {"path": "README.md"}, id=made_up.id)
    assert f'"id":"{made_up.id}"'.encode() in render(same_text, "anthropic-messages")


def test_usage_chunk_only_when_the_request_asks_for_it() -> None:
    asked = {"stream": True, "stream_options": {"include_usage": True}}
    with MockServer([SCRIPT, SCRIPT]) as srv:
        plain = httpx.post(srv.origin + "/v1/chat/completions", json={"stream": True}).text
        usage = httpx.post(srv.origin + "/v1/chat/completions", json=asked).text

    def chunks(body: str) -> list[Any]:
        return [json.loads(line[6:]) for line in body.split("\n\n")
                if line.startswith("data: {")]  # fmt: skip

    assert not any(c["choices"] == [] for c in chunks(plain))
    assert [c["usage"]["prompt_tokens"] for c in chunks(usage) if c["choices"] == []] == [11]


def test_gemini_stream_without_alt_sse_is_a_json_array() -> None:
    with MockServer([SCRIPT, SCRIPT]) as srv:
        array = httpx.post(srv.origin + "/v1beta/models/m:streamGenerateContent", json={})
        sse = httpx.post(srv.origin + "/v1beta/models/m:streamGenerateContent?alt=sse", json={})
    assert array.headers["content-type"] == "application/json"
    items = array.json()
    assert isinstance(items, list) and len(items) > 1
    text = "".join(p.get("text", "") for i in items for p in i["candidates"][0]["content"]["parts"])
    assert text == "Reading it." and items[-1]["candidates"][0]["finishReason"] == "STOP"
    assert sse.headers["content-type"] == "text/event-stream" and sse.text.startswith("data: ")


@pytest.mark.parametrize("api", ["anthropic-messages", "bedrock-converse"])
def test_an_unsigned_thinking_block_gets_a_fixed_signature(api: str) -> None:
    script: list[mw.ThinkingContent | str] = [mw.ThinkingContent(thinking="hmm"), "ok"]
    msg = mw.replay(api, [render(script, api)])[-1].partial
    block = msg.content[0]
    assert isinstance(block, mw.ThinkingContent) and block.thinking == "hmm"
    assert block.signature  # non-empty, opaque
    signed: list[mw.ThinkingContent | str] = [
        mw.ThinkingContent(thinking="hmm", signature="s"),
        "ok",
    ]
    again = mw.replay(api, [render(signed, api)])[-1].partial.content[0]
    assert isinstance(again, mw.ThinkingContent) and again.signature == "s"


# --------------------------------------------------------------------------- routing


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/chat/completions"),  # no version segment
        ("POST", "/v1/chat/completions/chat/completions"),  # endpoint in the base URL
        ("POST", "/v1/audio/speech"),
        ("GET", "/v1/chat/completions"),
        ("POST", "/v1/models"),
        ("GET", "/v2/models"),
    ],
)
def test_an_unserved_path_is_a_404_naming_the_served_ones_and_uses_no_reply(
    method: str, path: str
) -> None:
    with MockServer([tool_call("read", {"path": "a"}), "after"]) as srv:
        r = httpx.request(method, srv.origin + path, json={"model": "m"})
        assert r.status_code == 404
        message = r.json()["error"]["message"]
        assert path in message
        assert "POST /v1/chat/completions" in message and "GET /api/tags" in message
        assert srv.pending == 2
        assert [(q.method, q.path) for q in srv.requests] == [(method, path)]
        assert srv.requests[0].api is None
        # The script is untouched: the real call still gets the scripted tool call.
        msg = mw.complete_sync(srv.model(), CTX)
    assert [c.name for c in msg.tool_calls] == ["read"]


def test_a_provider_url_layout_still_routes() -> None:
    with MockServer(["azure", "vertex"]) as srv:
        a = httpx.post(srv.origin + "/openai/deployments/d/chat/completions?api-version=1",
                       json={"stream": False}).json()  # fmt: skip
        v = httpx.post(srv.origin + "/v1/projects/p/locations/l/publishers/google/models/"
                       "g:generateContent", json={}).json()  # fmt: skip
    assert a["choices"][0]["message"]["content"] == "azure"
    assert v["candidates"][0]["content"]["parts"][0]["text"] == "vertex"


# --------------------------------------------------------------------------- model listings


def test_model_listings_name_the_servers_models_and_use_no_reply() -> None:
    with MockServer(["kept"], models=["alpha", "beta"]) as srv:
        srv.model("openai-chat", "gamma")
        openai = httpx.get(srv.origin + "/v1/models").json()
        claude = httpx.get(srv.origin + "/v1/models", headers={"anthropic-version": "2023-06-01"})
        gemini = httpx.get(srv.origin + "/v1beta/models").json()
        ollama = httpx.get(srv.origin + "/api/tags").json()
        assert srv.pending == 1 and len(srv.requests) == 4
    want = ["alpha", "beta", "gamma"]
    assert openai["object"] == "list" and [m["id"] for m in openai["data"]] == want
    assert [m["id"] for m in claude.json()["data"]] == want
    assert claude.json()["data"][0]["type"] == "model"
    assert [m["name"] for m in gemini["models"]] == [f"models/{m}" for m in want]
    assert [m["name"] for m in ollama["models"]] == want
    assert [q.api for q in srv.requests] == [
        "openai-chat", "anthropic-messages", "google-generative-ai", "ollama-chat"]  # fmt: skip


# --------------------------------------------------------------------------- error shapes


def test_errors_come_in_each_providers_own_shape() -> None:
    replies = [error_reply(429, "slow down")] * 6
    with MockServer(replies) as srv:
        got = {
            "openai": httpx.post(srv.origin + "/v1/chat/completions", json={}),
            "anthropic": httpx.post(srv.origin + "/v1/messages", json={}),
            "google": httpx.post(srv.origin + "/v1beta/models/m:generateContent", json={}),
            "ollama": httpx.post(srv.origin + "/api/chat", json={}),
            "bedrock": httpx.post(srv.origin + "/model/m/converse", json={}),
        }
    assert all(r.status_code == 429 for r in got.values())
    assert got["openai"].json()["error"]["type"] == "rate_limit_error"
    body = got["anthropic"].json()
    assert body["type"] == "error" and body["error"]["type"] == "rate_limit_error"
    assert got["anthropic"].headers["request-id"]
    assert got["google"].json()["error"] == {
        "code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}  # fmt: skip
    assert got["ollama"].json() == {"error": "slow down"}
    assert got["bedrock"].json() == {"message": "slow down"}
    assert got["bedrock"].headers["x-amzn-errortype"].startswith("ThrottlingException")


@pytest.mark.parametrize("api", ["anthropic-messages", "google-generative-ai", "ollama-chat",
                                 "bedrock-converse"])  # fmt: skip
def test_a_provider_shaped_error_is_still_a_typed_error(api: str) -> None:
    with MockServer([error_reply(401, "bad key")]) as srv:
        msg = mw.complete_sync(srv.model(api), CTX, max_retries=0)
    assert msg.error is not None and msg.error.kind == "authentication"
    assert "bad key" in msg.error.message


# --------------------------------------------------------------------------- automatic mode

SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"path": {"type": "string", "minLength": 3}},
     "required": ["path"]},
    {"type": "object", "properties": {
        "n": {"type": "integer", "minimum": 5, "maximum": 9, "multipleOf": 3},
        "x": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "flag": {"type": "boolean"}, "mode": {"enum": ["fast", "slow"]},
        "tag": {"const": "v1"}, "when": {"type": "string", "format": "date-time"},
        "mail": {"type": "string", "format": "email"}, "short": {"type": "string", "maxLength": 1},
    }, "required": ["n", "x", "flag", "mode", "tag", "when", "mail", "short"],
     "additionalProperties": False},
    {"type": "object", "properties": {
        "items": {"type": "array", "items": {"$ref": "#/$defs/point"}, "minItems": 2},
        "maybe": {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 2}]},
        "both": {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}},
                            "required": ["a"]},
                           {"properties": {"b": {"type": ["null", "integer"]}},
                            "required": ["b"]}]},
    }, "required": ["items", "maybe", "both"],
     "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}},
                         "required": ["x"]}}},
    {"type": "object"},
]  # fmt: skip


@pytest.mark.parametrize("schema", SCHEMAS)
def test_example_for_is_valid_against_the_schema(schema: dict[str, Any]) -> None:
    import jsonschema

    value = testing.example_for(schema)
    jsonschema.validate(value, schema)  # the independent check
    assert value == testing.example_for(schema)  # the same every run
    for key in schema.get("required", []):
        assert key in value


def test_example_for_refuses_what_it_cannot_satisfy() -> None:
    schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[0-9]+$"}},
              "required": ["id"]}  # fmt: skip
    with pytest.raises(ConfigurationError, match=r"tool 'lookup'.*pattern|tool 'lookup'.*id"):
        testing.example_for(schema, tool="tool 'lookup'")
    with pytest.raises(ConfigurationError, match="only local"):
        testing.example_for({"$ref": "https://example.com/s.json"})


# Gemini's Schema has no multipleOf and no exclusive bounds: the request carries the
# tool without them (so a model, or the mock, cannot honour them). Its variant of the
# second schema keeps to what Gemini can say.
GEMINI_TUNE = {**SCHEMAS[1], "properties": {
    **SCHEMAS[1]["properties"], "n": {"type": "integer", "minimum": 5, "maximum": 9},
    "x": {"type": "number", "minimum": 0.25, "maximum": 0.75}}}  # fmt: skip


def _auto_tools(
    calls: list[tuple[str, dict[str, Any]]], tune: dict[str, Any] = SCHEMAS[1]
) -> list[mw.Tool]:
    def make(name: str, schema: dict[str, Any]) -> mw.Tool:
        def execute(args: dict[str, Any], ctx: Any) -> str:
            calls.append((name, args))
            return f"{name} ran"

        return mw.Tool(name=name, description=name, parameters=schema, execute=execute)

    return [make("read", SCHEMAS[0]), make("tune", tune), make("plot", SCHEMAS[2])]


def _check_auto_run(
    run: Any, calls: list[tuple[str, dict[str, Any]]], tune: dict[str, Any] = SCHEMAS[1]
) -> None:
    import jsonschema

    assert [name for name, _ in calls] == ["read", "tune", "plot"]  # each once, in order
    for (_, args), schema in zip(calls, [SCHEMAS[0], tune, SCHEMAS[2]], strict=True):
        jsonschema.validate(args, schema)
    assert run.final.stop_reason == "stop"
    assert run.final.text == 'tool results: ["read ran", "tune ran", "plot ran"]'


def test_scripted_model_auto_calls_each_tool_once_then_answers() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    sm = ScriptedModel(auto=True)
    run = mw.Agent(sm.model, tools=_auto_tools(calls)).run_sync("go")
    _check_auto_run(run, calls)
    assert len(sm.contexts) == 2
    plain = mw.complete_sync(sm.model, mw.Context(messages=[mw.UserMessage(content="hi")]))
    assert plain.text == "success (no tool calls)"


@pytest.mark.anyio
async def test_scripted_model_auto_on_the_async_path() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    sm = ScriptedModel(["first a scripted reply"], auto=True)
    agent = mw.Agent(sm.model, tools=_auto_tools(calls))
    first = await agent.run("go")
    assert first.final.text == "first a scripted reply" and calls == []
    _check_auto_run(await agent.run("go"), calls)


@pytest.mark.parametrize("api", ["openai-chat", "openai-responses", "anthropic-messages",
                                 "google-generative-ai", "ollama-chat", "bedrock-converse"])  # fmt: skip
def test_mock_server_auto_calls_each_tool_once_then_answers(api: str) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    tune = GEMINI_TUNE if api == "google-generative-ai" else SCHEMAS[1]
    with MockServer(auto=True) as srv:
        run = mw.Agent(srv.model(api), tools=_auto_tools(calls, tune)).run_sync("go")
    _check_auto_run(run, calls, tune)
    assert len(srv.requests) == 2
    if api != "ollama-chat":  # Ollama sends no call ids (modelwire makes them up)
        prefix = {"anthropic-messages": "toolu_", "bedrock-converse": "tooluse_"}.get(api, "call_")
        ids = [c.id for m in run.messages if isinstance(m, mw.AssistantMessage)
               for c in m.tool_calls]  # fmt: skip
        assert len(ids) == 3 and all(i.startswith(prefix) for i in ids), ids


def test_auto_with_a_schema_outside_the_subset_is_a_clear_error() -> None:
    bad = mw.Tool(name="lookup", description="", execute=lambda a, c: "x",
                  parameters={"type": "object", "properties": {"id": {"type": "string",
                              "pattern": "^[0-9]+$"}}, "required": ["id"]})  # fmt: skip
    sm = ScriptedModel(auto=True)
    run = mw.Agent(sm.model, tools=[bad]).run_sync("go")
    assert run.final.error is not None and "lookup" in run.final.error.message


def test_a_json_script_holds_provider_run_tools_citations_and_a_provider_stop() -> None:
    script = [{"content": [
        {"type": "server_tool_call", "id": "srvtoolu_1", "name": "web_search",
         "input": {"query": "sky"}, "provider_type": "server_tool_use"},
        {"type": "server_tool_result", "tool_call_id": "srvtoolu_1",
         "provider_type": "web_search_tool_result", "result": []},
        {"type": "text", "text": "Blue.", "citations": [
            {"kind": "url", "url": "https://sky.example", "title": "Sky"}]},
    ], "provider_stop_reason": "pause_turn"}]  # fmt: skip
    (reply,) = parse_script(json.dumps(script))
    with MockServer([reply]) as server:
        msg = mw.complete_sync(server.model("anthropic-messages"), CTX)
    call, result, text = msg.content
    assert isinstance(call, mw.ServerToolCall) and call.input == {"query": "sky"}
    assert isinstance(result, mw.ServerToolResult) and result.name == "web_search"
    assert isinstance(text, mw.TextContent) and text.citations[0].url == "https://sky.example"
    assert (msg.stop_reason, msg.provider_stop_reason) == ("stop", "pause_turn")
    bad = [{"content": [{"type": "server_tool_call", "id": "s", "name": "n", "input": {}}]}]
    with pytest.raises(mw.ConfigurationError, match=r"script\[0\]\.content\[0\]"):
        parse_script(json.dumps(bad))


def test_the_mock_server_writes_each_event_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """TCP_NODELAY on every connection it accepts, as a provider's server: with Nagle's
    algorithm a streamed event after the first waits for the client's delayed ACK."""
    import socket

    seen: list[tuple[int, int, int, object]] = []  # (local port, level, option, value)
    original = socket.socket.setsockopt

    def record(self: socket.socket, level: int, option: int, value: Any, *rest: Any) -> None:
        seen.append((self.getsockname()[1], level, option, value))
        original(self, level, option, value, *rest)

    monkeypatch.setattr(socket.socket, "setsockopt", record)
    with MockServer(["hello"]) as server:
        msg = mw.complete_sync(server.model("openai-chat"), "hi", api_key="sk-test")
        port = server.port
    assert msg.text == "hello"
    # The server's side of the connection (its local port is the server's).
    assert (port, socket.IPPROTO_TCP, socket.TCP_NODELAY, True) in seen
