"""``mw.Fallback``: for every ordered pair of wire APIs, a first model that fails with
503, 429 or an in-band overloaded error before any content falls back to the second
over a real loopback server, with a request the second API's shape accepts (thinking
and tool history rewritten by handoff); nothing after content switches silently, a
``restart`` is explicit, tools never run twice, and the trace says why it moved on."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

import modelwire as mw
from modelwire._apis import builtin_api_names, find_server
from modelwire._call._breaker import default_breaker
from modelwire.testing import MockServer, Reply, error_reply
from modelwire.testing._render import in_band_error
from modelwire.trace import FallbackTrace, TraceLog

pytestmark = pytest.mark.anyio

APIS = [a for a in builtin_api_names() if find_server(a) is not None]
PAIRS = [(a, b) for a in APIS for b in APIS if a != b]
TOOL = mw.ToolDefinition(name="read", description="Read a file", parameters={
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})  # fmt: skip
# An id no API but Gemini accepts as it is: handoff must rewrite it for each target.
ODD_ID = "call|" + "x" * 70
SIGNATURE = "sig-" + "A" * 40


@pytest.fixture(autouse=True)
def fresh_breaker() -> Iterator[None]:
    default_breaker().reset()
    yield
    default_breaker().reset()


def history(first: mw.Model) -> mw.Context:
    """A conversation the first model produced: signed thinking, text, a tool call with
    an id most APIs refuse, its result, and a new question."""
    signature = SIGNATURE
    if first.api == "openai-responses":  # its signature is the reasoning item itself
        signature = json.dumps({"type": "reasoning", "id": "rs_1", "summary": [],
                                "encrypted_content": SIGNATURE})  # fmt: skip
    assistant = mw.AssistantMessage(
        content=(
            mw.ThinkingContent(thinking="The user wants a.txt.", signature=signature),
            mw.TextContent(text="Reading it."),
            mw.ToolCall(
                id=ODD_ID,
                name="read",
                arguments={"path": "a.txt"},
                raw_arguments='{"path": "a.txt"}',
            ),
        ),
        api=first.api,
        provider=first.provider,
        model=first.id,
        stop_reason="tool_use",
    )
    return mw.Context(
        system_prompt="Be brief.",
        tools=[TOOL],
        messages=[
            mw.UserMessage(content="read a.txt"),
            assistant,
            mw.ToolResultMessage(
                tool_call_id=ODD_ID,
                tool_name="read",
                content=(mw.TextContent(text="hello"),),
                is_error=False,
            ),
            mw.UserMessage(content="what did it say?"),
        ],
    )


def in_band(api: str) -> Reply:
    return Reply(body=in_band_error(api, "Overloaded"))


FAILURES = {
    "503": lambda api: error_reply(503, "Service Unavailable"),
    "429": lambda api: error_reply(429, "Too many requests"),
    "in_band": in_band,
}


# --------------------------------------------------------------------------- request shapes


def _ids(values: list[Any], pattern: str) -> None:
    for v in values:
        assert isinstance(v, str) and re.fullmatch(pattern, v), v


def check_request(api: str, body: dict[str, Any]) -> None:
    """What the API's reference requires of a conversation with tool history: roles
    it knows, every tool result answering a call before it with an id in the API's
    format, and no thinking signature from another model (each API's request schema)."""
    text = str(body)
    assert "sig-AAAA" not in text, "another model's signature was replayed"
    assert ODD_ID not in text, "a tool-call id the target refuses was sent"
    assert "The user wants a.txt." in text, "the thinking was lost instead of rewritten"
    if api == "openai-chat":
        msgs = body["messages"]
        assert {m["role"] for m in msgs} <= {"system", "user", "assistant", "tool"}
        calls = [c["id"] for m in msgs if m["role"] == "assistant" for c in m.get("tool_calls", [])]
        results = [m["tool_call_id"] for m in msgs if m["role"] == "tool"]
        assert calls and results == calls
        _ids(calls, r".{1,40}")
    elif api == "openai-responses":
        items = body["input"]
        calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
        results = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
        assert calls and results == calls
        _ids(calls, r"[A-Za-z0-9_-]{1,64}")
        assert not any(i.get("type") == "reasoning" for i in items)  # another model's
    elif api == "anthropic-messages":
        msgs = body["messages"]
        assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
        blocks = [b for m in msgs if isinstance(m["content"], list) for b in m["content"]]
        calls = [b["id"] for b in blocks if b["type"] == "tool_use"]
        results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        assert calls and results == calls
        _ids(calls, r"[a-zA-Z0-9_-]{1,64}")
        assert not any(b["type"] in ("thinking", "redacted_thinking") for b in blocks)
    elif api == "google-generative-ai":
        contents = body["contents"]
        assert {c["role"] for c in contents} <= {"user", "model"}
        parts = [p for c in contents for p in c["parts"]]
        calls = [p["functionCall"]["name"] for p in parts if "functionCall" in p]
        results = [p["functionResponse"]["name"] for p in parts if "functionResponse" in p]
        assert calls == results == ["read"]
        assert not any("thoughtSignature" in p for p in parts)
    elif api == "bedrock-converse":
        msgs = body["messages"]
        roles = [m["role"] for m in msgs]
        assert roles == ["user", "assistant", "user"], roles
        blocks = [b for m in msgs for b in m["content"]]
        calls = [b["toolUse"]["toolUseId"] for b in blocks if "toolUse" in b]
        results = [b["toolResult"]["toolUseId"] for b in blocks if "toolResult" in b]
        assert calls and results == calls
        _ids(calls, r"[a-zA-Z0-9_-]{1,64}")
        assert not any("reasoningContent" in b for b in blocks)
    elif api == "ollama-chat":
        msgs = body["messages"]
        assert {m["role"] for m in msgs} <= {"system", "user", "assistant", "tool"}
        calls = [c["function"]["name"] for m in msgs for c in m.get("tool_calls", [])]
        assert calls == ["read"]
        assert [m for m in msgs if m["role"] == "tool"]
    elif api == "cohere-chat":
        msgs = body["messages"]
        assert {m["role"] for m in msgs} <= {"system", "user", "assistant", "tool"}
        calls = [c["id"] for m in msgs if m["role"] == "assistant" for c in m.get("tool_calls", [])]
        results = [m["tool_call_id"] for m in msgs if m["role"] == "tool"]
        assert calls and results == calls
        parts = [p for m in msgs if isinstance(m.get("content"), list) for p in m["content"]]
        assert not any(p.get("type") == "thinking" for p in parts)  # another model's
    else:  # pragma: no cover - a new API needs its shape written here
        raise AssertionError(f"no request shape for {api}")


# --------------------------------------------------------------------------- every pair


@pytest.mark.parametrize("failure", sorted(FAILURES))
@pytest.mark.parametrize(("first_api", "second_api"), PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
async def test_a_failure_before_content_falls_back_to_the_next_api(
    first_api: str, second_api: str, failure: str
) -> None:
    with MockServer([FAILURES[failure](first_api), "It said hello."]) as srv:
        first = srv.model(first_api, id="first", reasoning=True)
        second = srv.model(second_api, id="second", reasoning=True)
        s = mw.stream(mw.Fallback([first, second]), history(first), max_retries=0)
        events = [e async for e in s]
        msg = await s.result()
        sent = list(srv.requests)
    assert msg.stop_reason == "stop", msg.error
    assert (msg.api, msg.provider, msg.model) == (second_api, "mock", "second")
    assert msg.text == "It said hello."
    # One start, one terminal, nothing of the failed attempt.
    assert [e.type for e in events].count("start") == 1
    assert events[-1].type == "done" and not any(e.type == "error" for e in events)
    assert [r.api for r in sent] == [first_api, second_api]
    check_request(second_api, sent[1].json())


# --------------------------------------------------------------------------- rules


def test_strings_name_models_and_bad_arguments_say_what_to_do() -> None:
    fb = mw.Fallback(["openai/gpt-4.1-mini", "anthropic/claude-sonnet-4-5"])
    assert [m.provider for m in fb.models] == ["openai", "anthropic"]
    assert fb.provider == "openai" and fb.id == "gpt-4.1-mini"  # reads as its first model
    with pytest.raises(mw.ConfigurationError, match="at least one model"):
        mw.Fallback([])
    with pytest.raises(mw.ConfigurationError, match="list of models"):
        mw.Fallback("openai/gpt-4.1-mini")
    with pytest.raises(mw.ConfigurationError, match="unknown error kinds 'oops'"):
        mw.Fallback(["openai/gpt-4.1-mini"], on=["oops"])
    with pytest.raises(mw.ConfigurationError, match="after_content"):
        mw.Fallback(["openai/gpt-4.1-mini"], after_content="later")  # type: ignore[arg-type]
    with pytest.raises(mw.ConfigurationError, match=r"models\[1\] must be"):
        mw.Fallback(["openai/gpt-4.1-mini", 3])  # type: ignore[list-item]


def test_a_caller_mistake_for_any_model_raises_before_any_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with MockServer(["unused"]) as srv:
        fb = mw.Fallback([srv.model("openai-chat"), "anthropic/claude-sonnet-4-5"])
        with pytest.raises(mw.MissingAPIKeyError, match="ANTHROPIC_API_KEY"):
            mw.stream(fb, mw.Context(messages=[mw.UserMessage(content="hi")]))
        assert srv.requests == []


async def test_a_failure_that_is_not_transient_does_not_move_on() -> None:
    with MockServer([error_reply(400, "bad request"), "unused"]) as srv:
        fb = mw.Fallback([srv.model("openai-chat", id="a"), srv.model("anthropic-messages")])
        msg = await mw.complete(fb, mw.Context(messages=[mw.UserMessage(content="hi")]))
        assert len(srv.requests) == 1
    assert msg.error is not None and msg.error.kind == "invalid_request"
    assert msg.model == "a"


async def test_on_names_the_kinds_that_move_on() -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content="hi")])
    with MockServer([error_reply(400, "bad request"), "from b"]) as srv:
        fb = mw.Fallback([srv.model("openai-chat", id="a"), srv.model("openai-chat", id="b")],
                         on=["invalid_request"])  # fmt: skip
        msg = await mw.complete(fb, ctx)
    assert msg.model == "b" and msg.stop_reason == "stop"


CUT = mw.testing.render("Partial answer that", "openai-chat")[:-40]


async def test_after_content_the_failure_ends_the_stream_by_default() -> None:
    with MockServer([Reply(body=CUT), "unused"]) as srv:
        fb = mw.Fallback([srv.model("openai-chat", id="a"), srv.model("openai-chat", id="b")])
        msg = await mw.complete(fb, mw.Context(messages=[mw.UserMessage(content="hi")]))
        assert len(srv.requests) == 1
    assert msg.stop_reason == "error" and msg.model == "a"
    assert msg.text.startswith("Partial")


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
async def test_restart_after_content_is_an_explicit_event(sync: bool) -> None:
    log = TraceLog()
    with MockServer([Reply(body=CUT), "Whole answer."]) as srv:
        fb = mw.Fallback([srv.model("openai-chat", id="a"), srv.model("anthropic-messages", id="b")],
                         after_content="restart")  # fmt: skip
        ctx = mw.Context(messages=[mw.UserMessage(content="hi")])
        if sync:
            events = list(mw.stream_sync(fb, ctx, trace=log))
        else:
            events = [e async for e in mw.stream(fb, ctx, trace=log)]
    types = [e.type for e in events]
    assert types.count("start") == 1 and types.count("restart") == 1
    restart = next(e for e in events if isinstance(e, mw.RestartEvent))
    # The partial so far stays visible in it, with why it failed.
    assert restart.message.text.startswith("Partial") and restart.message.model == "a"
    assert restart.message.error is not None
    after = events[types.index("restart") + 1 :]
    assert after[-1].type == "done" and after[-1].message.model == "b"
    assert after[-1].message.text == "Whole answer."
    moves = [r for r in log.records if isinstance(r, FallbackTrace)]
    assert [(m.model, m.next_model, m.restart) for m in moves] == [("a", "b", True)]


async def test_the_trace_shows_every_attempt_and_why_it_moved_on() -> None:
    log = TraceLog()
    replies = [error_reply(503, "down"), error_reply(429, "slow down"), "third"]
    with MockServer(replies) as srv:
        models = [srv.model("openai-chat", id=n) for n in ("a", "b", "c")]
        msg = await mw.complete(mw.Fallback(models), mw.Context(messages=[mw.UserMessage(
            content="hi")]), trace=log, max_retries=0)  # fmt: skip
    assert msg.model == "c"
    moves = [r for r in log.records if isinstance(r, FallbackTrace)]
    assert [(m.attempt, m.model, m.kind, m.next_model) for m in moves] == [
        (1, "a", "overloaded", "b"), (2, "b", "rate_limit", "c")]  # fmt: skip
    from modelwire.trace import ContextTrace

    assert [r.model for r in log.records if isinstance(r, ContextTrace)] == ["a", "b", "c"]


async def test_the_last_model_failing_ends_with_its_error() -> None:
    with MockServer([error_reply(503, "down"), error_reply(503, "down too")]) as srv:
        fb = mw.Fallback([srv.model("openai-chat", id="a"), srv.model("openai-chat", id="b")])
        msg = await mw.complete(fb, mw.Context(messages=[mw.UserMessage(content="hi")]),
                                max_retries=0)  # fmt: skip
    assert msg.stop_reason == "error" and msg.model == "b"
    assert msg.error is not None and "down too" in msg.error.message


async def test_each_model_retries_before_the_chain_moves_on() -> None:
    replies = [error_reply(503, "down", headers={"retry-after": "0"}), "a answered"]
    with MockServer(replies) as srv:
        fb = mw.Fallback([srv.model("openai-chat", id="a"), srv.model("openai-chat", id="b")])
        msg = await mw.complete(fb, mw.Context(messages=[mw.UserMessage(content="hi")]))
    assert msg.model == "a" and msg.text == "a answered"


async def test_the_agent_takes_a_fallback_and_runs_each_tool_once() -> None:
    runs: list[str] = []

    def read(args: dict[str, Any], ctx: Any) -> str:
        runs.append(args["path"])
        return "hello"

    tool = mw.Tool("read", "Read a file", TOOL.parameters, read)
    call = mw.ToolCall(id="c1", name="read", arguments={"path": "a.txt"})
    # The first model fails before content on both turns; the second answers.
    replies = [error_reply(503, "down"), call, error_reply(503, "down"), "It says hello."]
    with MockServer(replies) as srv:
        fb = mw.Fallback(
            [srv.model("openai-chat", id="a"), srv.model("anthropic-messages", id="b")]
        )
        run = await mw.Agent(fb, tools=[tool], max_retries=0).run("read a.txt")
        sent = [r.api for r in srv.requests]
    assert runs == ["a.txt"]
    assert run.final.text == "It says hello." and run.final.model == "b"
    assert sent == ["openai-chat", "anthropic-messages"] * 2
    check = srv.requests[3].json()
    assert [m["role"] for m in check["messages"]] == ["user", "assistant", "user"]


async def test_a_restart_never_runs_a_tool_twice() -> None:
    runs: list[str] = []

    def read(args: dict[str, Any], ctx: Any) -> str:
        runs.append(args["path"])
        return "hello"

    tool = mw.Tool("read", "Read a file", TOOL.parameters, read)
    call = mw.ToolCall(id="c1", name="read", arguments={"path": "a.txt"})
    cut_call = mw.testing.render(call, "openai-chat")[:-60]  # the call cut mid-arguments
    with MockServer([Reply(body=cut_call), call, "done"]) as srv:
        fb = mw.Fallback([srv.model("openai-chat", id="a"), srv.model("openai-chat", id="b")],
                         after_content="restart")  # fmt: skip
        run = await mw.Agent(fb, tools=[tool], max_retries=0).run("read a.txt")
    assert runs == ["a.txt"]
    assert run.final.text == "done"


def test_batch_takes_a_fallback_as_a_model(tmp_path: Any) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"custom_id": "r1", "model": "fb/main", "prompt": "hi"}) + "\n")
    out = tmp_path / "out.jsonl"
    with MockServer([error_reply(503, "down"), "from b"]) as srv:
        fb = mw.Fallback([srv.model("openai-chat", id="a"), srv.model("openai-chat", id="b")])
        mw.batch(str(src), str(out), models={"fb/main": fb}, max_attempts=1)
    line = json.loads(out.read_text())
    assert line["custom_id"] == "r1" and line["ok"] is True
    assert line["model"] == "mock/b" and line["message"]["content"][0]["text"] == "from b"


def test_ray_batches_refuse_a_fallback_up_front(tmp_path: Any) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"custom_id": "r1", "model": "fb/main", "prompt": "hi"}) + "\n")
    fb = mw.Fallback([mw.Model(id="a", api="openai-chat", provider="mock",
                               base_url="http://127.0.0.1:9/v1")])  # fmt: skip
    with pytest.raises(mw.ConfigurationError, match='backend="local"'):
        mw.batch(str(src), str(tmp_path / "out.jsonl"), models={"fb/main": fb}, backend="ray")
