"""The agent loop over a real loopback server (``MockServer``) with scripted replies.

Replies are built here as the providers send them: OpenAI Chat Completions chunks
(``sse_body``) and Anthropic Messages frames rendered by hand (``event:`` +
``data:``). Expectations come from what the test scripted and from the files it
wrote — the ids it chose, the bytes of README.md, ``mw.replay`` of the same
reply for the model events — never from the agent's own output.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest

import modelwire as mw
from modelwire.agent import AgentRun, ToolExecutionEndEvent
from modelwire.testing import MockServer, Reply, sse_body
from modelwire.tools import ToolContext, ToolFailure, ToolOutput

pytestmark = pytest.mark.anyio

SECRET = "TOP-SECRET-c0ffee"
README = "# modelwire\n读取 README.md 的第二行\nthird line\n"
APIS = ["openai-chat", "anthropic-messages"]

Call = tuple[str, str, str]  # (id, name, raw arguments text)


# --------------------------------------------------------------------------- replies


def _chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }


def chat_calls(*calls: Call, finish: str | None = "tool_calls", done: bool = True) -> bytes:
    """OpenAI Chat: each call's id and name first, then its arguments in two fragments."""
    payloads: list[dict[str, Any]] = [_chunk({"role": "assistant", "content": None})]
    for i, (cid, name, args) in enumerate(calls):
        head = {
            "index": i,
            "id": cid,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        payloads.append(_chunk({"tool_calls": [head]}))
        half = len(args) // 2
        for part in (args[:half], args[half:]):
            payloads.append(_chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]}))
    if finish is not None:
        payloads.append(_chunk(finish=finish))
    return sse_body(payloads, done=done)


def chat_text(text: str, *, usage: tuple[int, int] | None = None) -> bytes:
    payloads = [_chunk({"role": "assistant", "content": text}), _chunk(finish="stop")]
    if usage is not None:
        payloads.append(
            {
                "id": "chatcmpl-1",
                "choices": [],
                "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]},
            }
        )
    return sse_body(payloads)


def _anthropic(blocks: list[list[dict[str, Any]]], stop: str) -> bytes:
    payloads: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [],
                "stop_reason": None,
                "usage": {"input_tokens": 12, "output_tokens": 1},
            },
        },
    ]
    for i, frames in enumerate(blocks):
        for frame in frames:
            payloads.append({**frame, "index": i})
        payloads.append({"type": "content_block_stop", "index": i})
    payloads.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 30},
        }
    )
    payloads.append({"type": "message_stop"})
    return sse_body(payloads, done=False, event_names=True)


def anthropic_calls(*calls: Call) -> bytes:
    blocks = []
    for cid, name, args in calls:
        half = len(args) // 2
        blocks.append(
            [
                {
                    "type": "content_block_start",
                    "content_block": {"type": "tool_use", "id": cid, "name": name, "input": {}},
                },
                *(
                    {
                        "type": "content_block_delta",
                        "delta": {"type": "input_json_delta", "partial_json": part},
                    }
                    for part in (args[:half], args[half:])
                ),
            ]
        )
    return _anthropic(blocks, "tool_use")


def anthropic_text(text: str) -> bytes:
    return _anthropic(
        [
            [
                {"type": "content_block_start", "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "delta": {"type": "text_delta", "text": text}},
            ]
        ],
        "end_turn",
    )


def calls_reply(api: str, *calls: Call) -> bytes:
    return chat_calls(*calls) if api == "openai-chat" else anthropic_calls(*calls)


def text_reply(api: str, text: str) -> bytes:
    return chat_text(text) if api == "openai-chat" else anthropic_text(text)


def call_id(api: str, n: int) -> str:
    return f"call_{n}" if api == "openai-chat" else f"toolu_0{n}"


# --------------------------------------------------------------------------- helpers


def model_for(srv: MockServer, api: str = "openai-chat") -> mw.Model:
    mid = "gpt-test" if api == "openai-chat" else "claude-test"
    return mw.Model(id=mid, api=api, provider="local", base_url=srv.base_url)


def tool_results_sent(req: Any, api: str) -> list[tuple[str, str]]:
    """(tool call id, text) of every tool result in a recorded request body."""
    body = req.json()
    out = []
    for m in body["messages"]:
        if api == "openai-chat" and m["role"] == "tool":
            out.append((m["tool_call_id"], m["content"]))
        elif api == "anthropic-messages" and m["role"] == "user" and isinstance(m["content"], list):
            for b in m["content"]:
                if b["type"] == "tool_result":
                    text = "".join(c["text"] for c in b.get("content", []))
                    out.append((b["tool_use_id"], text))
    return out


def tools_declared(req: Any, api: str) -> list[str]:
    tools = req.json()["tools"]
    return [t["function"]["name"] if api == "openai-chat" else t["name"] for t in tools]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    r.mkdir()
    (r / "README.md").write_text(README, encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    (r / "link-out").symlink_to(outside / "secret.txt")
    (r / "dir-out").symlink_to(outside, target_is_directory=True)
    return r


class Spy:
    """A ``read``-shaped tool that records every execution."""

    def __init__(self, name: str = "read") -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self.tool = mw.Tool(
            name,
            "Read a file.",
            {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            self.execute,
        )

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> str:
        self.seen.append((ctx.tool_call_id, args))
        return f"contents of {args['path']}"


async def collect(agent: mw.Agent, prompt: Any) -> tuple[list[Any], AgentRun]:
    events = [ev async for ev in agent.stream(prompt)]
    assert events[-1].type == "agent_end"
    return events, events[-1].run


def ends(events: list[Any]) -> list[ToolExecutionEndEvent]:
    return [e for e in events if isinstance(e, ToolExecutionEndEvent)]


# --------------------------------------------------------------------------- round trip


@pytest.mark.parametrize("api", APIS)
async def test_read_readme_round_trip(api: str, root: Path) -> None:
    cid = call_id(api, 1)
    args = json.dumps({"path": "README.md"})
    answer = "README 的标题是 modelwire。"
    replies = [
        Reply(body=calls_reply(api, (cid, "read", args)), chunk_size=5),
        Reply(body=text_reply(api, answer)),
    ]
    with MockServer(replies) as srv:
        agent = mw.Agent(model_for(srv, api), tools=mw.tools.read_only(root))
        run = await agent.run("读取 README.md")
    assert run.stop_reason == "stop" and run.turns == 2
    assert run.final.text == answer and run.text == answer
    assert [m.role for m in run.messages] == ["user", "assistant", "tool_result", "assistant"]
    assert run.messages == run.new_messages == agent.messages
    assert len(srv.requests) == 2
    assert sorted(tools_declared(srv.requests[0], api)) == ["grep", "ls", "read"]
    # The tool result goes back with the id the model chose, holding the file's lines.
    ((sent_id, text),) = tool_results_sent(srv.requests[1], api)
    assert sent_id == cid
    for n, line in enumerate(README.splitlines(), 1):
        assert f"{n:>6}\t{line}" in text
    result = run.messages[2]
    assert isinstance(result, mw.ToolResultMessage)
    assert result.tool_call_id == cid and not result.is_error and result.text == text
    assert result.details["path"] == "README.md"
    # The assistant's call is replayed with the arguments the model sent.
    body = srv.requests[1].json()
    if api == "openai-chat":
        replayed = body["messages"][1]["tool_calls"][0]
        assert replayed["id"] == cid and replayed["function"]["arguments"] == args
    else:
        (replayed,) = [b for b in body["messages"][1]["content"] if b["type"] == "tool_use"]
        assert replayed["id"] == cid and replayed["input"] == json.loads(args)


@pytest.mark.parametrize("api", APIS)
async def test_events_in_order(api: str, root: Path) -> None:
    first = calls_reply(api, (call_id(api, 1), "read", '{"path": "README.md"}'))
    second = text_reply(api, "done")
    with MockServer([first, second]) as srv:
        agent = mw.Agent(model_for(srv, api), tools=mw.tools.read_only(root))
        events, run = await collect(agent, "读取 README.md")
    # The model events each response produces, replayed offline from the same bytes.
    model1 = [e.type for e in mw.replay(api, first)]
    model2 = [e.type for e in mw.replay(api, second)]
    assert model1[0] == "start" and model1[-1] == "done"

    def response(types: Sequence[str]) -> list[str]:
        return ["message_start", *["message_update"] * (len(types) - 2), "message_end"]

    expected = [
        "agent_start",
        "message_start",
        "message_end",
        "turn_start",
        *response(model1),
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",
        "turn_end",
        "turn_start",
        *response(model2),
        "turn_end",
        "agent_end",
    ]
    assert [e.type for e in events] == expected
    wrapped = [e.event.type for e in events if getattr(e, "event", None) is not None]
    assert wrapped == model1 + model2
    turn_ends = [e for e in events if e.type == "turn_end"]
    assert [e.turn for e in turn_ends] == [1, 2]
    assert turn_ends[0].tool_results == (run.messages[2],)
    assert events[-1].run is run
    assert all(isinstance(e.to_dict(), dict) for e in events)


# --------------------------------------------------------------------------- nothing executed


async def test_no_execution_on_length(root: Path) -> None:
    spy = Spy()
    cut = chat_calls(("call_1", "read", '{"path": "README.md"}'), finish="length")
    with MockServer([cut, chat_text("never requested")]) as srv:
        agent = mw.Agent(model_for(srv), tools=[spy.tool])
        events, run = await collect(agent, "go")
    assert spy.seen == []
    assert run.stop_reason == "length" and run.final.stop_reason == "length"
    assert len(srv.requests) == 1
    assert not any(e.type.startswith("tool_execution") for e in events)
    # The call is answered (the transcript stays valid to continue), saying why.
    result = run.messages[-1]
    assert isinstance(result, mw.ToolResultMessage) and result.is_error
    assert result.tool_call_id == "call_1"
    assert result.text.startswith("Error [output_limit]") and "nothing was executed" in result.text


async def test_no_execution_on_silent_context_overflow(root: Path) -> None:
    # The server reports more prompt tokens than the window holds: it truncated
    # the prompt without an error, so the answer cannot be acted on.
    spy = Spy()
    body = chat_calls(("call_1", "read", '{"path": "README.md"}'), done=False)
    body += sse_body([{"choices": [], "usage": {"prompt_tokens": 5000, "completion_tokens": 9}}])
    with MockServer([body, chat_text("never requested")]) as srv:
        small = msgspec.structs.replace(model_for(srv), context_window=4096)
        agent = mw.Agent(small, tools=[spy.tool])
        _, run = await collect(agent, "go")
    assert spy.seen == [] and len(srv.requests) == 1
    assert run.stop_reason == "context_overflow"
    result = run.messages[-1]
    assert isinstance(result, mw.ToolResultMessage) and result.is_error
    assert result.text.startswith("Error [context_overflow]")


async def test_no_execution_on_an_in_band_error(root: Path) -> None:
    spy = Spy()
    body = chat_calls(("call_1", "read", '{"path": "README.md"}'), finish=None, done=False)
    body += sse_body(
        [{"error": {"message": "upstream overloaded", "type": "server_error"}}], done=False
    )
    with MockServer([body]) as srv:
        agent = mw.Agent(model_for(srv), tools=[spy.tool])
        events, run = await collect(agent, "go")
    assert spy.seen == [] and len(srv.requests) == 1
    assert run.stop_reason == "error"
    assert run.error is not None and run.error.kind == "server"
    assert not any(e.type.startswith("tool_execution") for e in events)
    assert [m.role for m in run.messages] == ["user", "assistant"]


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        # Complete call fragments, but neither finish_reason nor [DONE].
        (
            Reply(
                body=chat_calls(
                    ("call_1", "read", '{"path": "README.md"}'), finish=None, done=False
                )
            ),
            "truncated_stream",
        ),
        # The connection closes mid-body, right after the arguments are complete.
        (
            Reply(
                body=chat_calls(("call_1", "read", '{"path": "README.md"}')),
                cut_after=len(
                    chat_calls(("call_1", "read", '{"path": "README.md"}'), finish=None, done=False)
                ),
            ),
            "stream_interrupted",
        ),
        (
            Reply(
                status=500, content_type="application/json", body=b'{"error": {"message": "boom"}}'
            ),
            "server",
        ),
    ],
)
async def test_no_execution_on_a_broken_stream(reply: Reply, kind: str) -> None:
    spy = Spy()
    with MockServer([reply]) as srv:
        agent = mw.Agent(model_for(srv), tools=[spy.tool], max_retries=0)
        events, run = await collect(agent, "go")
    assert spy.seen == []
    assert run.stop_reason == "error" and run.error is not None and run.error.kind == kind
    assert not any(e.type.startswith("tool_execution") for e in events)


# --------------------------------------------------------------------------- judgements


@pytest.mark.parametrize("api", APIS)
async def test_invalid_arguments_and_unknown_tools_get_errors_and_the_run_continues(
    api: str,
) -> None:
    spy = Spy()
    ids = [call_id(api, n) for n in range(1, 6)]
    calls = [
        (ids[0], "read", '{"path": 5}'),  # schema: path must be a string
        (ids[1], "read", "{}"),  # schema: path is required
        (ids[2], "write", '{"path": "x"}'),  # no such tool
        (ids[3], "read", '{"path": "README.md"}'),  # fine
    ]
    if api == "openai-chat":
        # Not a JSON object: the response still ends done(tool_use) (DESIGN §2a).
        calls.append((ids[4], "read", "not json"))
    with MockServer([calls_reply(api, *calls), text_reply(api, "ok")]) as srv:
        agent = mw.Agent(model_for(srv, api), tools=[spy.tool])
        events, run = await collect(agent, "go")
    assert spy.seen == [(ids[3], {"path": "README.md"})]
    assert run.stop_reason == "stop" and len(srv.requests) == 2
    sent = tool_results_sent(srv.requests[1], api)
    assert [cid for cid, _ in sent] == [c[0] for c in calls]
    texts = [t for _, t in sent]
    assert (
        texts[0].startswith("Error [invalid_arguments]")
        and "$.path: 5 is not of type 'string'" in texts[0]
    )
    assert "$: 'path' is a required property" in texts[1]
    assert (
        texts[2].startswith("Error [unknown_tool]") and "'write'" in texts[2] and "read" in texts[2]
    )
    assert texts[3] == "contents of README.md"
    kinds = ["invalid_arguments", "invalid_arguments", "unknown_tool", None]
    if api == "openai-chat":
        assert texts[4].startswith("Error [invalid_arguments]") and "not a JSON object" in texts[4]
        assert "'not json'" in texts[4]
        kinds.append("invalid_arguments")
    # End events come as calls finish (refusals first); results keep call order.
    assert {e.tool_call.id: e.failure for e in ends(events)} == dict(zip(ids, kinds, strict=False))
    results = [m for m in run.messages if isinstance(m, mw.ToolResultMessage)]
    assert [r.is_error for r in results] == [k is not None for k in kinds]
    assert results[0].details["failure"] == "invalid_arguments"


async def test_a_json_array_is_not_an_arguments_object() -> None:
    spy = Spy()
    with MockServer([chat_calls(("call_1", "read", '["README.md"]')), chat_text("ok")]) as srv:
        run = await mw.Agent(model_for(srv), tools=[spy.tool]).run("go")
    assert spy.seen == []
    assert "not a JSON object" in run.messages[2].text  # type: ignore[union-attr]


async def test_escapes_never_leak_file_contents(root: Path) -> None:
    outside_abs = str(root.parent / "outside" / "secret.txt")
    calls = [
        ("call_1", "read", json.dumps({"path": "../outside/secret.txt"})),
        ("call_2", "read", json.dumps({"path": outside_abs})),
        ("call_3", "read", json.dumps({"path": "link-out"})),
        ("call_4", "read", json.dumps({"path": "dir-out/secret.txt"})),
        ("call_5", "ls", json.dumps({"path": "dir-out"})),
        ("call_6", "grep", json.dumps({"pattern": "TOP-SECRET"})),
        ("call_7", "grep", json.dumps({"pattern": "TOP", "path": ".."})),
        ("call_8", "ls", json.dumps({})),
    ]
    with MockServer([chat_calls(*calls), chat_text("ok")]) as srv:
        agent = mw.Agent(model_for(srv), tools=mw.tools.read_only(root))
        events, run = await collect(agent, "go")
    assert SECRET.encode() not in srv.requests[1].body
    for m in run.messages:
        assert SECRET not in mw.to_json(m).decode()
    kinds = {e.tool_call.id: e.failure for e in ends(events)}
    assert [kinds[c[0]] for c in calls] == ["permission_denied"] * 5 + [
        None,
        "permission_denied",
        None,
    ]
    assert "No matches" in run.messages[7].text  # type: ignore[union-attr]
    listing = run.messages[9].text  # type: ignore[union-attr]
    assert "link-out -> (outside the root)" in listing and str(root.parent) not in listing


async def test_a_50_mb_file_is_refused(root: Path) -> None:
    with open(root / "big.log", "wb") as f:
        f.truncate(50 * 1024 * 1024)  # sparse: nothing is written
    with MockServer(
        [chat_calls(("call_1", "read", '{"path": "big.log"}')), chat_text("ok")]
    ) as srv:
        run = await mw.Agent(model_for(srv), tools=mw.tools.read_only(root)).run("go")
    ((_, text),) = tool_results_sent(srv.requests[1], "openai-chat")
    assert text.startswith("Error [too_large]") and str(50 * 1024 * 1024) in text
    assert "offset" in text and "limit" in text
    assert len(srv.requests[1].body) < 10_000
    assert run.stop_reason == "stop"


# --------------------------------------------------------------------------- parallel


def slow_tool(kind: str, finished: list[str]) -> mw.Tool:
    schema = {"type": "object", "properties": {"delay": {"type": "number"}}, "required": ["delay"]}

    async def run_async(args: dict[str, Any], ctx: ToolContext) -> str:
        await asyncio.sleep(args["delay"])
        finished.append(ctx.tool_call_id)
        return f"slept {args['delay']}"

    def run_sync(args: dict[str, Any], ctx: ToolContext) -> str:
        time.sleep(args["delay"])
        finished.append(ctx.tool_call_id)
        return f"slept {args['delay']}"

    return mw.Tool("sleep", "Sleep.", schema, run_async if kind == "async" else run_sync)


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_parallel_results_keep_call_order_when_the_first_is_slower(kind: str) -> None:
    finished: list[str] = []
    calls = [("call_slow", "sleep", '{"delay": 0.4}'), ("call_fast", "sleep", '{"delay": 0}')]
    with MockServer([chat_calls(*calls), chat_text("ok")]) as srv:
        agent = mw.Agent(model_for(srv), tools=[slow_tool(kind, finished)])
        events, run = await collect(agent, "go")
    assert finished == ["call_fast", "call_slow"]  # they ran concurrently
    assert [e.tool_call.id for e in ends(events)] == ["call_fast", "call_slow"]
    assert [cid for cid, _ in tool_results_sent(srv.requests[1], "openai-chat")] == [
        "call_slow",
        "call_fast",
    ]
    results = [m.tool_call_id for m in run.messages if isinstance(m, mw.ToolResultMessage)]
    assert results == ["call_slow", "call_fast"]
    # Result messages are emitted in call order too, after the slow one ended.
    order = [
        e.message.tool_call_id
        for e in events
        if e.type == "message_end" and e.message.role == "tool_result"
    ]
    assert order == ["call_slow", "call_fast"]


async def test_sequential_runs_one_call_at_a_time() -> None:
    finished: list[str] = []
    calls = [("call_slow", "sleep", '{"delay": 0.2}'), ("call_fast", "sleep", '{"delay": 0}')]
    with MockServer([chat_calls(*calls), chat_text("ok")]) as srv:
        agent = mw.Agent(
            model_for(srv), tools=[slow_tool("async", finished)], tool_execution="sequential"
        )
        events, _ = await collect(agent, "go")
    assert finished == ["call_slow", "call_fast"]
    types = [e.type for e in events if e.type.startswith("tool_execution")]
    assert types == ["tool_execution_start", "tool_execution_end"] * 2


# --------------------------------------------------------------------------- once per id


async def test_each_id_runs_once_even_when_the_model_repeats_it() -> None:
    spy = Spy()
    same = ("call_same", "read", '{"path": "README.md"}')
    with MockServer([chat_calls(same), chat_calls(same), chat_text("ok")]) as srv:
        events, run = await collect(mw.Agent(model_for(srv), tools=[spy.tool]), "go")
    assert spy.seen == [("call_same", {"path": "README.md"})]
    assert [e.failure for e in ends(events)] == [None, "duplicate_call"]
    second = run.messages[4]
    assert isinstance(second, mw.ToolResultMessage) and second.is_error
    assert "already answered" in second.text and run.stop_reason == "stop"


async def test_continue_resumes_unanswered_calls_once() -> None:
    spy = Spy()
    asked = mw.AssistantMessage(
        content=(
            mw.ToolCall(
                id="call_r", name="read", arguments={"path": "a"}, raw_arguments='{"path": "a"}'
            ),
        ),
        api="openai-chat",
        provider="local",
        model="gpt-test",
        stop_reason="tool_use",
    )
    with MockServer(
        [chat_text("first"), chat_calls(("call_r", "read", '{"path": "a"}')), chat_text("second")]
    ) as srv:
        agent = mw.Agent(
            model_for(srv), tools=[spy.tool], messages=[mw.UserMessage(content="go"), asked]
        )
        agent.steer("a note")
        events, run = await collect(agent, None)
        assert spy.seen == [("call_r", {"path": "a"})]
        # Nothing comes between a call and its result: the queued note goes after it.
        sent = [m["role"] for m in srv.requests[0].json()["messages"]]
        assert sent == ["user", "assistant", "tool", "user"]
        assert [e.type for e in events[:3]] == ["agent_start", "turn_start", "tool_execution_start"]
        assert events[1].turn == 0 and run.turns == 1 and run.final.text == "first"
        assert [cid for cid, _ in tool_results_sent(srv.requests[0], "openai-chat")] == ["call_r"]
        with pytest.raises(mw.ConfigurationError, match="nothing to continue"):
            await agent.continue_()
        # The model asks for the same call again: it is not executed twice.
        again = await agent.run("again")
    assert spy.seen == [("call_r", {"path": "a"})]
    assert again.messages[-2].text.startswith("Error [duplicate_call]")  # type: ignore[union-attr]


# --------------------------------------------------------------------------- hooks and tools


async def test_before_tool_call_can_block_and_fails_closed() -> None:
    spy = Spy()
    calls = [
        ("call_1", "read", '{"path": "a"}'),
        ("call_2", "read", '{"path": "b"}'),
        ("call_3", "read", '{"path": "c"}'),
    ]
    seen: list[tuple[str, dict[str, Any]]] = []

    async def before(call: mw.ToolCall, args: dict[str, Any]) -> Any:
        seen.append((call.id, args))
        if args["path"] == "a":
            return "paths named a are off limits"
        if args["path"] == "b":
            raise RuntimeError("policy service down")
        return None

    with MockServer([chat_calls(*calls), chat_text("ok")]) as srv:
        events, _ = await collect(
            mw.Agent(model_for(srv), tools=[spy.tool], before_tool_call=before), "go"
        )
    assert seen == [("call_1", {"path": "a"}), ("call_2", {"path": "b"}), ("call_3", {"path": "c"})]
    assert spy.seen == [("call_3", {"path": "c"})]
    assert [e.failure for e in ends(events)] == ["blocked", "blocked", None]
    texts = [t for _, t in tool_results_sent(srv.requests[1], "openai-chat")]
    assert texts[0].startswith("Error [blocked]") and "off limits" in texts[0]
    assert "policy service down" in texts[1]


async def test_after_tool_call_replaces_and_fails_closed() -> None:
    spy = Spy()
    calls = [("call_1", "read", '{"path": "a"}'), ("call_2", "read", '{"path": "b"}')]

    def after(call: mw.ToolCall, result: mw.ToolResultMessage) -> mw.ToolResultMessage | None:
        if call.id == "call_2":
            raise ValueError("redactor crashed")
        return mw.ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content="[redacted]")

    with MockServer([chat_calls(*calls), chat_text("ok")]) as srv:
        await mw.Agent(model_for(srv), tools=[spy.tool], after_tool_call=after).run("go")
    texts = [t for _, t in tool_results_sent(srv.requests[1], "openai-chat")]
    assert texts[0] == "[redacted]"
    assert texts[1].startswith("Error [execution_failed]") and "withheld" in texts[1]
    assert "contents of b" not in texts[1]


async def test_tool_outcomes_each_have_their_own_result() -> None:
    schema = {"type": "object", "properties": {"mode": {"type": "string"}}, "required": ["mode"]}

    async def execute(args: dict[str, Any], ctx: ToolContext) -> Any:
        mode = args["mode"]
        if mode == "missing":
            raise ToolFailure("not_found", "no such record 42")
        if mode == "crash":
            raise RuntimeError("boom")
        if mode == "wrong":
            return 42
        if mode == "hang":
            await asyncio.sleep(30)
        ctx.update("half way")
        ctx.update(ToolOutput("almost", {"pct": 90}))
        return ToolOutput("all good", {"rows": 3})

    tool = mw.Tool("work", "Work.", schema, execute, timeout=0.3)
    modes = ["missing", "crash", "wrong", "hang", "ok"]
    calls = [(f"call_{m}", "work", json.dumps({"mode": m})) for m in modes]
    with MockServer([chat_calls(*calls), chat_text("ok")]) as srv:
        events, run = await collect(mw.Agent(model_for(srv), tools=[tool]), "go")
    by_id = {e.tool_call.id: e for e in ends(events)}
    assert {m: by_id[f"call_{m}"].failure for m in modes} == {
        "missing": "not_found",
        "crash": "execution_failed",
        "wrong": "execution_failed",
        "hang": "timeout_unknown",
        "ok": None,
    }
    texts = dict(tool_results_sent(srv.requests[1], "openai-chat"))
    assert texts["call_missing"] == ToolFailure("not_found", "no such record 42").text
    assert "RuntimeError: boom" in texts["call_crash"]
    assert "returned int" in texts["call_wrong"]
    assert "0.3 s" in texts["call_hang"] and "unknown" in texts["call_hang"]
    assert texts["call_ok"] == "all good"
    ok = next(
        m
        for m in run.messages
        if isinstance(m, mw.ToolResultMessage) and m.tool_call_id == "call_ok"
    )
    assert ok.details == {"rows": 3}
    updates = [e for e in events if e.type == "tool_execution_update"]
    assert [u.partial for u in updates] == ["half way", ToolOutput("almost", {"pct": 90})]
    positions = [
        i
        for i, e in enumerate(events)
        if getattr(e, "tool_call", None) is not None and e.tool_call.id == "call_ok"
    ]
    assert [events[i].type for i in positions] == [
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_update",
        "tool_execution_end",
    ]


async def test_pydantic_parameters_end_to_end() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Args(pydantic.BaseModel):  # type: ignore[misc, name-defined]
        path: str

    got: list[Any] = []

    def read(args: Any, ctx: Any) -> str:
        got.append(Args(**args))
        return "ok"

    tool = mw.Tool("read", "Read.", Args, read)
    calls = [("call_1", "read", '{"path": 1}'), ("call_2", "read", '{"path": "x"}')]
    with MockServer([chat_calls(*calls), chat_text("ok")]) as srv:
        await mw.Agent(model_for(srv), tools=[tool]).run("go")
    assert got == [Args(path="x")]
    assert srv.requests[0].json()["tools"][0]["function"]["parameters"] == Args.model_json_schema()


# --------------------------------------------------------------------------- run control


async def test_max_turns_ends_the_run_with_its_reason() -> None:
    spy = Spy()
    replies = [chat_calls((f"call_{n}", "read", '{"path": "a"}')) for n in range(3)]
    with MockServer(replies) as srv:
        run = await mw.Agent(model_for(srv), tools=[spy.tool], max_turns=2).run("go")
    assert run.stop_reason == "max_turns" and run.turns == 2 and len(srv.requests) == 2
    assert [cid for cid, _ in spy.seen] == ["call_0", "call_1"]
    assert run.messages[-1].role == "tool_result"  # the last turn's results are kept


async def test_follow_up_and_steer() -> None:
    spy = Spy()
    replies = [
        chat_calls(("call_1", "read", '{"path": "a"}')),
        chat_text("first"),
        chat_text("second"),
    ]
    with MockServer(replies) as srv:
        agent = mw.Agent(model_for(srv), tools=[spy.tool])
        agent.follow_up("and then?")
        async for ev in agent.stream("go"):
            if ev.type == "turn_start" and ev.turn == 1:
                agent.steer("also this")
    second = [(m["role"], m.get("content")) for m in srv.requests[1].json()["messages"]]
    assert second[-2:] == [("tool", "contents of a"), ("user", "also this")]
    third = srv.requests[2].json()["messages"]
    assert third[-2:] == [
        {"role": "assistant", "content": "first"},
        {"role": "user", "content": "and then?"},
    ]
    assert agent.messages[-1].text == "second"  # type: ignore[union-attr]


async def test_abort_during_a_tool_call() -> None:
    started = asyncio.Event()
    runs: list[str] = []

    async def hang(args: dict[str, Any], ctx: ToolContext) -> str:
        runs.append(ctx.tool_call_id)
        started.set()
        await asyncio.sleep(30)
        return "never"

    tool = mw.Tool("hang", "Hang.", {"type": "object"}, hang)
    with MockServer([chat_calls(("call_h", "hang", "{}")), chat_text("after")]) as srv:
        agent = mw.Agent(model_for(srv), tools=[tool])
        task = asyncio.create_task(agent.run("go"))
        await asyncio.wait_for(started.wait(), 5)
        t0 = time.monotonic()
        agent.abort()
        run = await asyncio.wait_for(task, 5)
        assert time.monotonic() - t0 < 2
        assert run.stop_reason == "aborted" and len(srv.requests) == 1
        result = run.messages[-1]
        assert isinstance(result, mw.ToolResultMessage) and result.text.startswith(
            "Error [aborted]"
        )
        # Continuing asks the model again; the aborted call is not run a second time.
        again = await agent.continue_()
    assert runs == ["call_h"] and again.final.text == "after"


async def test_abort_during_the_model_stream() -> None:
    spy = Spy()
    body = chat_calls(("call_1", "read", '{"path": "a"}'))
    with MockServer([Reply(body=body, stall_after=60, stall_seconds=10)]) as srv:
        agent = mw.Agent(model_for(srv), tools=[spy.tool])
        t0 = time.monotonic()
        stream = agent.stream("go")
        async for ev in stream:
            if ev.type == "message_start" and getattr(ev, "event", None) is not None:
                stream.abort()
        run = stream.run
    assert run is not None and time.monotonic() - t0 < 5
    assert run.stop_reason == "aborted" and run.final.stop_reason == "aborted"
    assert spy.seen == []


async def test_closing_the_stream_early_leaves_a_valid_transcript() -> None:
    started = asyncio.Event()

    async def hang(args: dict[str, Any], ctx: ToolContext) -> str:
        started.set()
        await asyncio.sleep(30)
        return "never"

    tool = mw.Tool("hang", "Hang.", {"type": "object"}, hang)
    with MockServer([chat_calls(("call_h", "hang", "{}"))]) as srv:
        agent = mw.Agent(model_for(srv), tools=[tool])
        stream = agent.stream("go")
        async with stream:
            async for ev in stream:
                if ev.type == "tool_execution_start":
                    break
        assert not agent.running
    assert stream.run is not None and stream.run.stop_reason == "aborted"
    assert [m.role for m in agent.messages] == ["user", "assistant", "tool_result"]


async def test_options_and_system_prompt_pass_through() -> None:
    with MockServer([chat_text("hi", usage=(11, 4)), chat_text("again", usage=(20, 5))]) as srv:
        agent = mw.Agent(
            model_for(srv),
            tools=[Spy().tool],
            system_prompt="回答要简洁。",
            temperature=0.2,
            options={"max_tokens": 50, "tool_choice": "auto"},
        )
        run = await agent.run("hello")
        run2 = await agent.run("more")
    body = srv.requests[0].json()
    assert body["messages"][0] == {"role": "system", "content": "回答要简洁。"}
    assert body["temperature"] == 0.2 and body["max_tokens"] == 50 and body["tool_choice"] == "auto"
    assert run.usage.input == 11 and run.usage.output == 4 and run.usage.total_tokens == 15
    assert run2.usage.input == 20 and len(run2.messages) == 4 and len(run2.new_messages) == 2
    assert [m["content"] for m in srv.requests[1].json()["messages"][1:]] == ["hello", "hi", "more"]


async def test_caller_mistakes_raise_at_once() -> None:
    m = mw.Model(id="x", api="openai-chat", provider="openai", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(mw.MissingAPIKeyError):
        mw.Agent(m)
    local = mw.Model(id="x", api="openai-chat", provider="local", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(mw.ConfigurationError, match="unknown stream option"):
        mw.Agent(local, temprature=0.1)  # type: ignore[call-arg]
    with pytest.raises(mw.ConfigurationError, match="temperature"):
        mw.Agent(local, temperature="hot")  # type: ignore[arg-type]
    with pytest.raises(mw.ConfigurationError, match="two tools"):
        mw.Agent(local, tools=[Spy().tool, Spy().tool])
    with pytest.raises(mw.ConfigurationError):
        mw.Agent(local, tool_execution="random")  # type: ignore[arg-type]
    with pytest.raises(mw.ConfigurationError, match="nothing to continue"):
        await mw.Agent(local).continue_()
    with pytest.raises(mw.ConfigurationError):
        mw.Agent(local).stream(42)  # type: ignore[arg-type]


async def test_one_run_at_a_time() -> None:
    gate = asyncio.Event()

    async def wait(args: dict[str, Any], ctx: ToolContext) -> str:
        await gate.wait()
        return "ok"

    tool = mw.Tool("wait", "Wait.", {"type": "object"}, wait)
    with MockServer([chat_calls(("call_1", "wait", "{}")), chat_text("ok")]) as srv:
        agent = mw.Agent(model_for(srv), tools=[tool])
        stream = agent.stream("go")
        async for ev in stream:
            if ev.type == "tool_execution_start":
                with pytest.raises(mw.ConfigurationError, match="already running"):
                    await agent.run("second")
                gate.set()
    assert stream.run is not None and stream.run.stop_reason == "stop"


async def test_trace_option_reaches_every_turn(root: Path) -> None:
    records: list[Any] = []
    replies = [
        Reply(body=chat_calls(("call_1", "read", '{"path": "README.md"}'))),
        Reply(body=chat_text("done")),
    ]
    with MockServer(replies) as srv:
        agent = mw.Agent(model_for(srv), tools=mw.tools.read_only(root), trace=records.append)
        run = await agent.run("读取 README.md")
    assert run.stop_reason == "stop"
    layers = [r.layer for r in records]
    # One request and one final message traced per model call.
    assert layers.count("request") == 2 and layers.count("message") == 2
    finals = [r for r in records if r.layer == "message"]
    assert finals[0].message.stop_reason == "tool_use"


# --------------------------------------------------------------------------- hooks


def read_call_reply(n: int) -> bytes:
    return chat_calls((f"call_{n}", "read", json.dumps({"path": f"f{n}.txt"})))


def _sync_or_async(kind: str, fn: Any) -> Any:
    if kind == "sync":
        return fn

    async def wrapped(*args: Any) -> Any:
        await asyncio.sleep(0)
        return fn(*args)

    return wrapped


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_should_stop_after_turn_ends_the_run_after_that_turn(kind: str) -> None:
    spy = Spy()
    seen: list[Any] = []

    def stop_after_first(turn: Any) -> bool:
        seen.append(turn)
        return bool(turn.turn == 1)

    replies = [read_call_reply(1), read_call_reply(2), chat_text("never requested")]
    with MockServer(replies) as srv:
        agent = mw.Agent(
            model_for(srv), tools=[spy.tool],
            should_stop_after_turn=_sync_or_async(kind, stop_after_first),
        )  # fmt: skip
        agent.follow_up("stays queued")
        events, run = await collect(agent, "go")
    assert len(srv.requests) == 1
    assert run.stop_reason == "stopped" and run.turns == 1
    assert [c for c, _ in spy.seen] == ["call_1"]  # the turn's tools ran
    assert [m.role for m in run.messages] == ["user", "assistant", "tool_result"]
    [turn] = seen
    assert turn.type == "turn_end" and turn.turn == 1
    assert [r.tool_call_id for r in turn.tool_results] == ["call_1"]
    assert [e.type for e in events[-2:]] == ["turn_end", "agent_end"]
    assert events[-2] is turn
    # The follow-up was not delivered: it is still queued for the next run.
    assert agent._follow_ups and agent._follow_ups[0].content == "stays queued"


async def test_should_stop_after_turn_false_lets_the_run_go_on_and_is_not_asked_at_the_end() -> (
    None
):
    spy = Spy()
    asked: list[int] = []

    def never(turn: Any) -> bool:
        asked.append(turn.turn)
        return False

    with MockServer([read_call_reply(1), read_call_reply(2), chat_text("done")]) as srv:
        agent = mw.Agent(model_for(srv), tools=[spy.tool], should_stop_after_turn=never)
        run = await agent.run("go")
    assert run.stop_reason == "stop" and run.turns == 3 and run.text == "done"
    assert asked == [1, 2]  # not after the final answer: the run ends anyway


async def test_should_stop_after_turn_must_return_a_bool() -> None:
    with MockServer([read_call_reply(1)]) as srv:
        agent = mw.Agent(model_for(srv), tools=[Spy().tool], should_stop_after_turn=lambda t: 1)  # type: ignore[arg-type, return-value]
        with pytest.raises(mw.ConfigurationError, match="must return a bool"):
            await agent.run("go")
        assert not agent.running
        with pytest.raises(mw.ConfigurationError, match="should_stop_after_turn"):
            mw.Agent(model_for(srv), should_stop_after_turn="yes")  # type: ignore[arg-type]


def compact(context: mw.Context) -> mw.Context:
    """Keep the first user message and a summary once the transcript grows past 3."""
    msgs = context.messages
    if len(msgs) <= 3:
        return context
    summary = mw.UserMessage(content=f"[summary of {len(msgs) - 1} messages]")
    return mw.Context(
        system_prompt=context.system_prompt, messages=(msgs[0], summary), tools=context.tools
    )


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_prepare_next_turn_compacts_the_conversation(kind: str) -> None:
    spy = Spy()
    replies = [read_call_reply(1), read_call_reply(2), chat_text("done")]
    with MockServer(replies) as srv:
        agent = mw.Agent(
            model_for(srv), tools=[spy.tool], system_prompt="be brief",
            prepare_next_turn=_sync_or_async(kind, compact),
        )  # fmt: skip
        events, run = await collect(agent, "go")
    sent = [[m["role"] for m in r.json()["messages"]] for r in srv.requests]
    # Turn 1: system + user. Turn 2: 3 messages, not compacted yet. Turn 3: the
    # 5-message transcript was compacted to the prompt and a summary.
    assert sent == [
        ["system", "user"],
        ["system", "user", "assistant", "tool"],
        ["system", "user", "user"],
    ]
    assert srv.requests[2].json()["messages"][2]["content"] == "[summary of 4 messages]"
    prepared = [e for e in events if e.type == "context_prepared"]
    assert [(e.turn, e.replaced) for e in prepared] == [(1, False), (2, False), (3, True)]
    # The event comes between turn_start and the model's message_start.
    i = events.index(prepared[2])
    assert events[i - 1].type == "turn_start" and events[i + 1].type == "message_start"
    # The compaction sticks: the transcript continues from the compacted messages.
    assert [m.role for m in agent.messages] == ["user", "user", "assistant"]
    assert run.messages == agent.messages and run.text == "done"


async def test_prepare_next_turn_must_return_a_context() -> None:
    with MockServer([chat_text("never")]) as srv:
        agent = mw.Agent(model_for(srv), prepare_next_turn=lambda ctx: ctx.messages)  # type: ignore[arg-type, return-value]
        with pytest.raises(mw.ConfigurationError, match="prepare_next_turn must return"):
            await agent.run("go")
        assert srv.requests == [] and not agent.running


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_dynamic_model_and_options_are_evaluated_at_every_call(kind: str) -> None:
    # The whole per-call config (base URL, headers, model id, stream options) may
    # come from callables, as api_key can (agent-core "dynamic configuration").
    spy = Spy()
    with (
        MockServer([read_call_reply(1)]) as first,
        MockServer([chat_text("done")]) as second,
    ):
        calls: list[int] = []

        def current_model() -> mw.Model:
            calls.append(len(calls))
            srv, mid = (first, "model-a") if len(calls) == 1 else (second, "model-b")
            return mw.Model(
                id=mid, api="openai-chat", provider="local", base_url=srv.base_url,
                headers={"x-turn": str(len(calls))},
            )  # fmt: skip

        def current_options() -> dict[str, Any]:
            return {"temperature": 0.5 * len(calls), "headers": {"x-tenant": f"t{len(calls)}"}}

        agent = mw.Agent(
            _sync_or_async(kind, current_model), tools=[spy.tool],
            options=_sync_or_async(kind, current_options), max_tokens=77,
        )  # fmt: skip
        run = await agent.run("go")
    assert run.stop_reason == "stop" and run.text == "done"
    [a] = first.requests
    [b] = second.requests
    assert (a.model, b.model) == ("model-a", "model-b")
    assert (a.headers["x-turn"], b.headers["x-turn"]) == ("1", "2")
    assert (a.headers["x-tenant"], b.headers["x-tenant"]) == ("t1", "t2")
    assert (a.json()["temperature"], b.json()["temperature"]) == (0.5, 1.0)
    assert a.json()["max_tokens"] == b.json()["max_tokens"] == 77  # static options kept
    answer = run.messages[1]
    assert isinstance(answer, mw.AssistantMessage)
    assert answer.model == "model-a" and run.final.model == "model-b"


async def test_dynamic_config_that_returns_garbage_is_a_configuration_error() -> None:
    with MockServer([chat_text("never")]) as srv:
        bad_model = mw.Agent(lambda: "gpt-4")  # type: ignore[arg-type, return-value]
        with pytest.raises(mw.ConfigurationError, match=r"must return a modelwire\.Model"):
            await bad_model.run("go")
        bad_opts = mw.Agent(model_for(srv), options=lambda: {"temprature": 1})
        with pytest.raises(mw.ConfigurationError, match="temprature"):
            await bad_opts.run("go")
        assert srv.requests == []
    with pytest.raises(mw.ConfigurationError, match="model must be"):
        mw.Agent(42)  # type: ignore[arg-type]
    with pytest.raises(mw.ConfigurationError, match="unknown model 'gpt-4'"):
        mw.Agent("gpt-4")  # a string must name a catalog model ("provider/model-id")


async def test_agent_passes_its_completion_policy_to_every_call() -> None:
    def must_use_a_tool(message: mw.AssistantMessage, tool_choice: Any, declared: Any) -> Any:
        return None if message.tool_calls else "answer only after reading a file"

    spy = Spy()
    with MockServer([chat_text("guessing")]) as srv:
        agent = mw.Agent(model_for(srv), tools=[spy.tool], completion_policy=must_use_a_tool)
        run = await agent.run("go")
    assert run.stop_reason == "error" and run.error is not None
    assert run.error.kind == "tool_call_protocol"
    assert run.error.message == "answer only after reading a file"
    assert spy.seen == []
    model = mw.Model(id="m", api="openai-chat", provider="local", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(mw.ConfigurationError, match="completion_policy"):
        mw.Agent(model, completion_policy="strict")  # type: ignore[arg-type]


async def test_abort_stops_a_running_grep_worker_promptly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # abort() used to leave grep's worker thread spinning until the file
    # (or the pattern's backtracking) was done. Each slice of the search is slowed
    # down here so the search would take 3 s without the abort.
    from modelwire.tools import _grep as grep_mod
    from modelwire.tools import files as files_mod

    (tmp_path / "big.txt").write_text("no match here\n" * 280_000)  # 3.7 MiB: 15 slices
    calls: list[float] = []

    class Slow:
        def __init__(self, real: Any) -> None:
            self.real = real

        def search(self, *args: Any) -> Any:
            calls.append(time.monotonic())
            time.sleep(0.2)
            return self.real.search(*args)

    def compile_slow(text: str, ignore_case: bool) -> Slow:
        return Slow(grep_mod.compile_pattern(text, ignore_case))

    monkeypatch.setattr(files_mod, "compile_pattern", compile_slow)
    grep = chat_calls(("call_1", "grep", json.dumps({"pattern": "zzz"})))
    with MockServer([grep, chat_text("never")]) as srv:
        agent = mw.Agent(model_for(srv), tools=mw.tools.read_only(tmp_path))
        aborted_at: list[float] = []

        async def abort_once_grep_runs() -> None:
            for _ in range(500):  # at most 5 s
                if calls:
                    break
                await asyncio.sleep(0.01)
            aborted_at.append(time.monotonic())
            agent.abort()

        aborter = asyncio.create_task(abort_once_grep_runs())
        events, run = await collect(agent, "search")
        await aborter
    assert run.stop_reason == "aborted"
    await asyncio.sleep(0.4)
    # At most the slice that was running when abort() came; none started after it.
    assert len(calls) <= 2
    assert all(t < aborted_at[0] + 0.25 for t in calls)
    [end] = ends(events)
    assert end.failure == "aborted" and end.result.is_error


# --------------------------------------------------------------------------- both drivers
# The loop's decisions are written once (a sans-IO core); ``run``/``stream`` and
# ``run_sync``/``stream_sync`` only wait differently. Each scenario runs on both
# drivers against its own server with the same replies: same events, transcript and
# requests; and each checks its own facts, so a driver that decides differently fails.

DRIVERS = ["async", "sync"]


def drive(driver: str, agent: mw.Agent, prompt: Any) -> tuple[list[Any], AgentRun]:
    """All events of one run on ``driver`` (from a thread with no running loop)."""
    if driver == "async":
        return asyncio.run(collect(agent, prompt))
    events = list(agent.stream_sync(prompt))
    assert events[-1].type == "agent_end"
    return events, events[-1].run


def _plain(value: Any) -> Any:
    # Timestamps are the only thing two runs may not share.
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "timestamp"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def transcript(messages: Sequence[Any]) -> Any:
    return _plain(msgspec.to_builtins(list(messages)))


def event_shape(events: list[Any]) -> list[Any]:
    shape = []
    for e in events:
        inner = getattr(e, "event", None)
        call = getattr(e, "tool_call", None)
        shape.append((e.type, inner.type if inner is not None else None,
                      call.id if call is not None else None, getattr(e, "failure", None)))  # fmt: skip
    return shape


def on_both(scenario: Any) -> dict[str, Any]:
    """``scenario(driver)`` on each driver; the outcomes must be the same."""
    outcomes = {d: scenario(d) for d in DRIVERS}
    assert outcomes["async"] == outcomes["sync"]
    return outcomes["sync"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("api", APIS)
def test_both_drivers_read_readme_the_same(api: str, root: Path) -> None:
    cid = call_id(api, 1)
    args = json.dumps({"path": "README.md"})

    def scenario(driver: str) -> dict[str, Any]:
        replies = [Reply(body=calls_reply(api, (cid, "read", args)), chunk_size=5),
                   Reply(body=text_reply(api, "done"))]  # fmt: skip
        with MockServer(replies) as srv:
            agent = mw.Agent(model_for(srv, api), tools=mw.tools.read_only(root))
            events, run = drive(driver, agent, "读取 README.md")
        return {"events": event_shape(events), "messages": transcript(run.messages),
                "requests": [r.json() for r in srv.requests], "stop": run.stop_reason,
                "turns": run.turns, "sent": tool_results_sent(srv.requests[1], api)}  # fmt: skip

    out = on_both(scenario)
    assert out["stop"] == "stop" and out["turns"] == 2
    ((sent_id, text),) = out["sent"]
    assert sent_id == cid and f"{2:>6}\t{README.splitlines()[1]}" in text
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "tool_result", "assistant"]
    types = [t for t, *_ in out["events"]]
    assert types[:4] == ["agent_start", "message_start", "message_end", "turn_start"]
    assert types.count("turn_end") == 2 and types[-1] == "agent_end"


def test_both_drivers_judge_calls_the_same() -> None:
    ids = ["call_1", "call_2", "call_3", "call_4", "call_5"]
    calls = [
        (ids[0], "read", '{"path": 5}'),  # schema
        (ids[1], "write", '{"path": "x"}'),  # no such tool
        (ids[2], "read", '{"path": "a"}'),  # blocked by the hook
        (ids[3], "read", '{"path": "b"}'),  # fine; its result replaced by after_tool_call
        (ids[4], "read", "not json"),
    ]

    def before(call: mw.ToolCall, args: dict[str, Any]) -> Any:
        return "not a" if args["path"] == "a" else None

    async def after(call: mw.ToolCall, result: mw.ToolResultMessage) -> Any:
        return mw.ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content="[kept]")

    def scenario(driver: str) -> dict[str, Any]:
        spy = Spy()
        replies = [chat_calls(*calls), chat_calls(calls[3]), chat_text("ok")]
        with MockServer(replies) as srv:
            agent = mw.Agent(model_for(srv), tools=[spy.tool], before_tool_call=before,
                             after_tool_call=after)  # fmt: skip
            events, run = drive(driver, agent, "go")
        return {"events": event_shape(events), "messages": transcript(run.messages),
                "seen": spy.seen, "stop": run.stop_reason}  # fmt: skip

    out = on_both(scenario)
    assert out["seen"] == [("call_4", {"path": "b"})]  # once, though asked twice
    failures = [f for t, _, _, f in out["events"] if t == "tool_execution_end"]
    # Refusals end at once; the executed call ends when the turn waits for it.
    assert failures == ["invalid_arguments", "unknown_tool", "blocked", "invalid_arguments",
                        None, "duplicate_call"]  # fmt: skip
    results = [m for m in out["messages"] if m["role"] == "tool_result"]
    assert [r["tool_call_id"] for r in results] == [*ids, "call_4"]
    assert results[3]["content"][0]["text"] == "[kept]" and out["stop"] == "stop"


@pytest.mark.parametrize("execution", ["parallel", "sequential"])
def test_both_drivers_run_tools_in_the_same_order(execution: str) -> None:
    def work(args: dict[str, Any], ctx: ToolContext) -> str:
        ctx.update(f"half of {args['n']}")
        return f"did {args['n']}"

    tool = mw.Tool("work", "Work.", {"type": "object"}, work)
    calls = [(f"call_{n}", "work", json.dumps({"n": n})) for n in range(3)]

    def scenario(driver: str) -> dict[str, Any]:
        with MockServer([chat_calls(*calls), chat_text("ok")]) as srv:
            agent = mw.Agent(model_for(srv), tools=[tool], tool_execution=execution)  # type: ignore[arg-type]
            events, run = drive(driver, agent, "go")
        shape = event_shape(events)
        tool_events = [(t, cid) for t, _, cid, _ in shape if t.startswith("tool_execution")]
        if execution == "parallel":
            # Concurrent calls on the async path finish in any order: compare each
            # call's own events, and where the first waiting starts.
            per_call = {c: [t for t, cid in tool_events if cid == c] for _, c in tool_events}
            return {"per_call": per_call, "messages": transcript(run.messages),
                    "starts_first": [t for t, _ in tool_events[:3]],
                    "sent": tool_results_sent(srv.requests[1], "openai-chat")}  # fmt: skip
        return {"events": shape, "messages": transcript(run.messages), "tools": tool_events,
                "sent": tool_results_sent(srv.requests[1], "openai-chat")}  # fmt: skip

    out = on_both(scenario)
    assert out["sent"] == [(f"call_{n}", f"did {n}") for n in range(3)]
    each = ["tool_execution_start", "tool_execution_update", "tool_execution_end"]
    if execution == "sequential":
        assert out["tools"] == [(kind, f"call_{n}") for n in range(3) for kind in each]
    else:  # every call judged and started before any result is waited for
        assert out["starts_first"] == ["tool_execution_start"] * 3
        assert out["per_call"] == {f"call_{n}": each for n in range(3)}


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_both_drivers_share_the_turn_hooks_and_queues(kind: str) -> None:
    asked: list[int] = []

    def stop_after(end: Any) -> bool:
        asked.append(end.turn)
        return bool(end.turn == 2)

    def prepare(context: mw.Context) -> mw.Context:
        return compact(context)

    def scenario(driver: str) -> dict[str, Any]:
        asked.clear()
        spy = Spy()
        replies = [read_call_reply(1), read_call_reply(2), read_call_reply(3), chat_text("x")]
        with MockServer(replies) as srv:
            agent = mw.Agent(model_for(srv), tools=[spy.tool],
                             should_stop_after_turn=_sync_or_async(kind, stop_after),
                             prepare_next_turn=_sync_or_async(kind, prepare))  # fmt: skip
            agent.steer("note before the first turn")
            agent.follow_up("stays queued")
            events, run = drive(driver, agent, "go")
            agent.reset()
        return {"events": event_shape(events), "messages": transcript(run.messages),
                "asked": list(asked), "stop": run.stop_reason, "requests": len(srv.requests),
                "first": [m["role"] for m in srv.requests[0].json()["messages"]]}  # fmt: skip

    out = on_both(scenario)
    assert out["asked"] == [1, 2] and out["stop"] == "stopped" and out["requests"] == 2
    assert out["first"] == ["user", "user"]  # the prompt, then the steering note
    assert [t for t, *_ in out["events"]].count("context_prepared") == 2


def test_both_drivers_end_on_length_and_max_turns_alike() -> None:
    def scenario(driver: str) -> dict[str, Any]:
        spy = Spy()
        cut = chat_calls(("call_c", "read", '{"path": "a"}'), finish="length")
        with MockServer([read_call_reply(1), read_call_reply(2), cut]) as srv:
            two = mw.Agent(model_for(srv), tools=[spy.tool], max_turns=2)
            _, capped = drive(driver, two, "go")
            _, cut_run = drive(driver, mw.Agent(model_for(srv), tools=[spy.tool]), "go")
        return {"capped": (capped.stop_reason, capped.turns), "seen": len(spy.seen),
                "cut": (cut_run.stop_reason, transcript(cut_run.messages)[-1]["content"][0]["text"])}  # fmt: skip

    out = on_both(scenario)
    assert out["capped"] == ("max_turns", 2) and out["seen"] == 2
    assert out["cut"][0] == "length" and out["cut"][1].startswith("Error [output_limit]")


def test_continue_sync_resumes_unanswered_calls_once() -> None:
    spy = Spy()
    asked = mw.AssistantMessage(
        content=(mw.ToolCall(id="call_r", name="read", arguments={"path": "a"},
                             raw_arguments='{"path": "a"}'),),
        api="openai-chat", provider="local", model="gpt-test", stop_reason="tool_use",
    )  # fmt: skip
    with MockServer(
        [chat_text("first"), chat_calls(("call_r", "read", "{}")), chat_text("x")]
    ) as srv:
        agent = mw.Agent(model_for(srv), tools=[spy.tool],
                         messages=[mw.UserMessage(content="go"), asked])  # fmt: skip
        run = agent.continue_sync()
        assert run.final.text == "first" and spy.seen == [("call_r", {"path": "a"})]
        with pytest.raises(mw.ConfigurationError, match="nothing to continue"):
            agent.continue_sync()
        again = agent.run_sync("again")
    assert spy.seen == [("call_r", {"path": "a"})]
    assert again.messages[-2].text.startswith("Error [duplicate_call]")  # type: ignore[union-attr]


# --------------------------------------------------------------------------- the sync path


def test_run_sync_with_a_scripted_model_records_what_it_was_sent() -> None:
    spy = Spy()
    sm = mw.testing.ScriptedModel(
        [mw.testing.tool_call("read", {"path": "a"}, id="c1"),
         lambda ctx: f"saw {len(ctx.messages)} messages"]
    )  # fmt: skip
    agent = mw.Agent(sm.model, tools=[spy.tool])
    run = agent.run_sync("go")
    assert run.final.text == "saw 3 messages" and spy.seen == [("c1", {"path": "a"})]
    assert [m.role for m in sm.contexts[1].messages] == ["user", "assistant", "tool_result"]
    # The agent keeps the transcript: the sync twin continues where it was.
    types = [e.type for e in agent.stream_sync("and now?")]
    assert types[0] == "agent_start" and types[-1] == "agent_end"
    last = agent.messages[-1]
    assert isinstance(last, mw.AssistantMessage) and last.error is not None
    assert "no reply left" in last.error.message and len(sm.contexts) == 3


async def test_run_sync_works_inside_a_running_loop_with_sync_tools() -> None:
    spy = Spy()
    sm = mw.testing.ScriptedModel([mw.testing.tool_call("read", {"path": "a"}), "ok"])
    run = mw.Agent(sm.model, tools=[spy.tool]).run_sync("go")
    assert run.final.text == "ok" and len(spy.seen) == 1


async def test_run_sync_refuses_async_tools_inside_a_running_loop_at_once() -> None:
    async def fetch(args: dict[str, Any], ctx: ToolContext) -> str:  # pragma: no cover
        return "never"

    sm = mw.testing.ScriptedModel(["unused"])
    agent = mw.Agent(sm.model, tools=[mw.Tool("fetch", "Fetch.", {"type": "object"}, fetch)])
    with pytest.raises(mw.ConfigurationError, match=r"fetch.*async.*await agent\.run\(\)"):
        agent.run_sync("go")
    assert sm.contexts == [] and not agent.running  # nothing was sent


async def test_an_async_hook_under_run_sync_inside_a_running_loop_is_a_configuration_error() -> (
    None
):
    async def prepare(context: mw.Context) -> mw.Context:  # pragma: no cover - never awaited
        return context

    sm = mw.testing.ScriptedModel(["unused"])
    agent = mw.Agent(sm.model, prepare_next_turn=prepare)
    with pytest.raises(mw.ConfigurationError, match=r"returned an awaitable.*await agent\.run"):
        agent.run_sync("go")
    assert sm.contexts == [] and not agent.running


def test_async_tools_and_hooks_run_on_a_private_loop_when_none_is_running() -> None:
    async def fetch(args: dict[str, Any], ctx: ToolContext) -> str:
        await asyncio.sleep(0)
        return f"fetched {args['url']}"

    async def before(call: mw.ToolCall, args: dict[str, Any]) -> None:
        await asyncio.sleep(0)

    tool = mw.Tool("fetch", "Fetch.", {"type": "object"}, fetch)
    sm = mw.testing.ScriptedModel([mw.testing.tool_call("fetch", {"url": "u"}), "ok"])
    run = mw.Agent(sm.model, tools=[tool], before_tool_call=before).run_sync("go")
    result = run.messages[2]
    assert isinstance(result, mw.ToolResultMessage) and result.text == "fetched u"
    assert run.final.text == "ok"


def test_a_sync_tool_past_its_timeout_is_answered_timeout_unknown_on_the_sync_path() -> None:
    release = threading.Event()

    def slow(args: dict[str, Any], ctx: ToolContext) -> str:
        release.wait(30)
        return "late"

    tool = mw.Tool("slow", "Slow.", {"type": "object"}, slow, timeout=0.2)
    sm = mw.testing.ScriptedModel([mw.testing.tool_call("slow", {}), "ok"])
    try:
        events = list(mw.Agent(sm.model, tools=[tool]).stream_sync("go"))
    finally:
        release.set()
    assert [e.failure for e in ends(events)] == ["timeout_unknown"]
    assert "0.2 s" in ends(events)[0].result.text


def test_abort_during_a_sync_tool_answers_it_aborted_and_stops() -> None:
    spy = Spy()
    holder: list[mw.Agent] = []
    told: list[bool] = []

    def stop(args: dict[str, Any], ctx: ToolContext) -> str:
        holder[0].abort()
        told.append(ctx.cancelled)  # the tool is told, though it cannot be interrupted
        return "finished anyway"

    tools = [mw.Tool("stop", "Stop.", {"type": "object"}, stop), spy.tool]
    sm = mw.testing.ScriptedModel(
        [[mw.testing.tool_call("stop", {}, id="c1"), mw.testing.tool_call("read", {"path": "a"},
                                                                         id="c2")], "never"]
    )  # fmt: skip
    agent = mw.Agent(sm.model, tools=tools)
    holder.append(agent)
    run = agent.run_sync("go")
    assert run.stop_reason == "aborted" and spy.seen == [] and len(sm.contexts) == 1
    results = [m for m in run.messages if isinstance(m, mw.ToolResultMessage)]
    assert [r.tool_call_id for r in results] == ["c1", "c2"]
    assert all(r.is_error and r.text.startswith("Error [aborted]") for r in results)
    assert told == [True] and not agent.running


def test_abort_during_the_sync_model_stream() -> None:
    spy = Spy()
    body = chat_calls(("call_1", "read", '{"path": "a"}'))
    with MockServer([Reply(body=body, stall_after=60, stall_seconds=10)]) as srv:
        agent = mw.Agent(model_for(srv), tools=[spy.tool])
        stream = agent.stream_sync("go")
        for ev in stream:
            if ev.type == "message_start" and getattr(ev, "event", None) is not None:
                stream.abort()
        run = stream.run
    assert run is not None and run.stop_reason == "aborted"
    assert run.final.stop_reason == "aborted" and spy.seen == []


def test_closing_a_sync_stream_early_leaves_a_valid_transcript() -> None:
    spy = Spy()
    sm = mw.testing.ScriptedModel([mw.testing.tool_call("read", {"path": "a"}), "never"])
    agent = mw.Agent(sm.model, tools=[spy.tool])
    with agent.stream_sync("go") as stream:
        for ev in stream:
            if ev.type == "tool_execution_start":
                break
    assert not agent.running and stream.run is not None
    assert stream.run.stop_reason == "aborted"
    assert [m.role for m in agent.messages] == ["user", "assistant", "tool_result"]
    assert spy.seen == []


def test_a_stream_fn_must_return_a_sync_stream_on_the_sync_path() -> None:
    sm = mw.testing.ScriptedModel(["x"])
    agent = mw.Agent(sm.model, stream_fn=mw.stream)
    with pytest.raises(mw.ConfigurationError, match="not a sync stream"):
        agent.run_sync("go")
    assert not agent.running


def test_sync_tools_run_in_the_calling_thread_on_the_sync_path() -> None:
    threads: list[int] = []

    def where(args: dict[str, Any], ctx: ToolContext) -> str:
        threads.append(threading.get_ident())
        return "here"

    tool = mw.Tool("where", "Where.", {"type": "object"}, where)
    sm = mw.testing.ScriptedModel([[mw.testing.tool_call("where", {}),
                                    mw.testing.tool_call("where", {})], "ok"])  # fmt: skip
    run = mw.Agent(sm.model, tools=[tool]).run_sync("go")
    assert run.final.text == "ok" and threads == [threading.get_ident()] * 2


# --------------------------------------------------------------------------- provider-run tools

SEARCH = mw.ServerToolCall(
    id="srvtoolu_01",
    name="web_search",
    input={"query": "weather"},
    provider_type="server_tool_use",
    raw='{"type":"server_tool_use","id":"srvtoolu_01","name":"web_search","input":{"query":"weather"}}',
)
FOUND = mw.ServerToolResult(
    tool_call_id="srvtoolu_01",
    provider_type="web_search_tool_result",
    result=[{"type": "web_search_result", "url": "https://w.example", "title": "W"}],
    name="web_search",
    raw='{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01","content":'
    '[{"type":"web_search_result","url":"https://w.example","title":"W"}]}',
)


def paused_reply(*blocks: Any) -> mw.AssistantMessage:
    """A turn Anthropic paused mid server-tool loop (stop_reason ``pause_turn``)."""
    return mw.AssistantMessage(
        content=blocks, api="", provider="", model="", stop_reason="stop",
        provider_stop_reason="pause_turn",
    )  # fmt: skip


async def test_the_agent_never_runs_a_provider_run_tool() -> None:
    # A client tool with the same name as the provider's: it must not run.
    spy = Spy("web_search")
    answer = [SEARCH, FOUND, mw.TextContent(text="Sunny.")]
    with MockServer([answer]) as server:
        agent = mw.Agent(server.model("anthropic-messages"), tools=[spy.tool])
        events, run = await collect(agent, "weather?")
    assert spy.seen == [] and ends(events) == []
    assert run.stop_reason == "stop" and run.turns == 1 and run.final.text == "Sunny."
    assert run.final.server_tool_calls == (SEARCH,) and run.final.tool_calls == ()


async def test_a_paused_turn_is_continued_by_sending_the_paused_message_back() -> None:
    spy = Spy("web_search")
    replies = [paused_reply(mw.TextContent(text="Searching. "), SEARCH), [FOUND, "Sunny."]]
    with MockServer(replies) as server:
        agent = mw.Agent(server.model("anthropic-messages"), tools=[spy.tool])
        _, run = await collect(agent, "weather?")
        requests = server.requests
    assert spy.seen == []
    assert run.stop_reason == "stop" and run.turns == 2 and run.final.text == "Sunny."
    assert run.messages[1].provider_stop_reason == "pause_turn"  # type: ignore[union-attr]
    # The second request ends with the paused message, its blocks as received.
    sent = requests[1].json()["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant"]
    assert sent[1]["content"] == [
        {"type": "text", "text": "Searching. "},
        json.loads(SEARCH.raw or ""),
    ]


async def test_a_paused_turn_counts_against_max_turns() -> None:
    with MockServer([paused_reply(SEARCH), ["Sunny."]]) as server:
        agent = mw.Agent(server.model("anthropic-messages"), max_turns=1)
        _, run = await collect(agent, "weather?")
        assert len(server.requests) == 1
        assert run.stop_reason == "max_turns"
        # continue_() resumes the paused turn from the transcript.
        again = await agent.continue_()
        assert len(server.requests) == 2
    assert again.stop_reason == "stop" and again.final.text == "Sunny."


def test_a_paused_turn_is_continued_on_the_sync_path_too() -> None:
    seen: list[Any] = []

    def resume(ctx: mw.Context) -> str:
        seen.append(ctx.messages[-1])
        return "Sunny."

    sm = mw.testing.ScriptedModel([paused_reply(SEARCH), resume])
    agent = mw.Agent(sm.model)
    run = agent.run_sync("weather?")
    assert run.turns == 2 and run.final.text == "Sunny."
    (last,) = seen
    assert isinstance(last, mw.AssistantMessage) and last.content == (SEARCH,)
    assert last.provider_stop_reason == "pause_turn"
