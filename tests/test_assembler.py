"""The shared assembler's rules (DESIGN §2a, §3), driven by synthetic OpenAI Chat chunks.

Every stream here is written by hand in this file, so each expectation is stated
from the protocol, not read back from the implementation. The chunks go through
the real pipeline (SSE → chat decoder → assembler) so the rules are checked where
users meet them.
"""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest

import modelwire as mw
from eventlist import final
from modelwire._client._replay import pipeline_for
from modelwire._wire.deltas import (
    BlockEnd,
    BlockSignature,
    BlockStart,
    EndOfStream,
    Finish,
    TextDelta,
    ThinkingDelta,
    ToolCallArguments,
    ToolCallDelta,
    UsageUpdate,
)
from modelwire.events import (
    Event,
    TextDeltaEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallStartEvent,
)
from modelwire.testing import sse_body

# --------------------------------------------------------------------------- helpers

BLOCK_STARTS = (TextStartEvent, ThinkingStartEvent, ToolCallStartEvent)
BLOCK_DELTAS = (TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent)


def chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    cid: str = "chatcmpl-1",
) -> dict[str, Any]:
    """One chat.completion.chunk payload with a single choice."""
    choice: dict[str, Any] = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    out: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "choices": [choice]}
    if usage is not None:
        out["usage"] = usage
    return out


def tool(
    index: int, *, id: str | None = None, name: str | None = None, args: str | None = None
) -> dict[str, Any]:
    """One ``tool_calls[]`` entry."""
    part: dict[str, Any] = {"index": index}
    if id is not None:
        part["id"] = id
        part["type"] = "function"
    fn: dict[str, Any] = {}
    if name is not None:
        fn["name"] = name
    if args is not None:
        fn["arguments"] = args
    if fn:
        part["function"] = fn
    return part


def tools(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": list(parts)}


def run(
    payloads: list[Any],
    *,
    tool_choice: Any = None,
    tools_declared: bool | None = None,
    done: bool = True,
    splits: list[bytes] | None = None,
) -> list[Event]:
    """All events of a synthetic stream, through the real pipeline."""
    p = pipeline_for("openai-chat", tool_choice=tool_choice, tools_declared=tools_declared)
    out = p.start()
    for piece in splits if splits is not None else [sse_body(payloads, done=done)]:
        out += p.feed(piece)
    out += p.end()
    return out


def terminal(events: list[Event]) -> Any:
    last = events[-1]
    assert last.type in ("done", "error")
    assert sum(e.type in ("done", "error") for e in events) == 1, "exactly one terminal event"
    assert events[0].type == "start"
    return last


def error_kind(events: list[Event]) -> str | None:
    t = terminal(events)
    return t.message.error.kind if t.type == "error" else None


def read_call(idx: int, call_id: str = "call-1", name: str = "read") -> list[dict[str, Any]]:
    """A complete call at provider index ``idx`` in two chunks."""
    return [
        chunk(tools(tool(idx, id=call_id, name=name, args='{"path":'))),
        chunk(tools(tool(idx, args='"a.txt"}'))),
    ]


# --------------------------------------------------------------------------- seed diagnostics


def test_call_arguments_in_two_fragments_split_inside_the_id() -> None:
    body = sse_body(
        [
            chunk(tools(tool(0, id="call-1", name="read", args='{"path":"RE'))),
            chunk(tools(tool(0, args='ADME.md"}'))),
            chunk(finish="tool_calls"),
        ]
    )
    cut = body.index(b'"call-1"') + 4  # the network splits inside "call-1"
    assert body[:cut].endswith(b'"cal')
    events = run([], splits=[body[:cut], body[cut:]])
    t = terminal(events)
    assert t.type == "done" and t.reason == "tool_use"
    (call,) = t.message.content
    assert call == mw.ToolCall(
        id="call-1",
        name="read",
        arguments={"path": "README.md"},
        raw_arguments='{"path":"README.md"}',
    )
    deltas = [e.delta for e in events if e.type == "tool_call_delta"]
    assert deltas == ['{"path":"RE', 'ADME.md"}']
    # Every other split point of the same body gives the same events (rule 1).
    want = [(e.type, getattr(e, "delta", None)) for e in events]
    for i in range(1, len(body)):
        got = run([], splits=[body[:i], body[i:]])
        assert [(e.type, getattr(e, "delta", None)) for e in got] == want, i
        assert final(got).content == t.message.content


def test_text_partials_are_immutable_snapshots() -> None:
    events = run([chunk({"content": "正在"}), chunk({"content": "读取"}), chunk(finish="stop")])
    deltas = [e for e in events if e.type == "text_delta"]
    assert [e.delta for e in deltas] == ["正在", "读取"]
    # Read the second (and the terminal) first: the first must not move.
    assert deltas[1].partial.content == (mw.TextContent(text="正在读取"),)
    assert terminal(events).message.text == "正在读取"
    assert deltas[0].partial.content == (mw.TextContent(text="正在"),)
    assert deltas[0].partial.stop_reason is None
    # Reading it again gives the very same value.
    assert deltas[0].partial is deltas[0].partial
    start = events[0]
    assert start.partial.content == ()


def test_interleaved_tool_indexes_keep_first_appearance_order() -> None:
    events = run(
        [
            chunk(tools(tool(4, id="call_4", name="read", args='{"path"'))),
            chunk({"content": "先读，"}),
            chunk(tools(tool(2, id="call_2", name="grep", args='{"q":'))),
            chunk(tools(tool(4, args=':"a"}'))),
            chunk({"content": "再查"}),
            chunk(tools(tool(2, args='"x"}'))),
            chunk(finish="tool_calls"),
        ]
    )
    t = terminal(events)
    assert t.reason == "tool_use"
    c = t.message.content
    assert [type(b).__name__ for b in c] == ["ToolCall", "TextContent", "ToolCall"]
    assert (c[0].id, c[0].arguments) == ("call_4", {"path": "a"})
    assert c[1].text == "先读，再查"
    assert (c[2].id, c[2].arguments) == ("call_2", {"q": "x"})
    first_delta = next(e for e in events if e.type == "tool_call_delta")
    assert first_delta.content_index == 0
    starts = [(e.type, e.content_index) for e in events if isinstance(e, BLOCK_STARTS)]
    assert starts == [("tool_call_start", 0), ("text_start", 1), ("tool_call_start", 2)]
    # Deltas route to their block's index, not to the last one opened.
    routed = [(e.content_index, e.delta) for e in events if isinstance(e, BLOCK_DELTAS)]
    assert routed == [
        (0, '{"path"'),
        (1, "先读，"),
        (2, '{"q":'),
        (0, ':"a"}'),
        (1, "再查"),
        (2, '"x"}'),
    ]


def test_tool_call_end_events_come_before_done_in_content_order() -> None:
    events = run([*read_call(3, "b"), *read_call(1, "a"), chunk(finish="tool_calls")])
    tail = [(e.type, getattr(e, "content_index", None)) for e in events[-3:]]
    assert tail == [("tool_call_end", 0), ("tool_call_end", 1), ("done", None)]
    ends = [e for e in events if e.type == "tool_call_end"]
    assert [e.tool_call.id for e in ends] == ["b", "a"]
    # Before the end, partial arguments were for display only (never parsed as final).
    last_delta = next(e for e in events if e.type == "tool_call_delta")
    assert isinstance(last_delta.partial.content[0], mw.ToolCall)
    assert last_delta.partial.content[0].raw_arguments == '{"path":'


def test_partial_arguments_are_displayed_with_partial_json() -> None:
    events = run(
        [
            chunk(tools(tool(0, id="c", name="read", args='{"path": "RE'))),
            chunk(tools(tool(0, args='ADME"}'))),
            chunk(finish="tool_calls"),
        ]
    )
    first = next(e for e in events if e.type == "tool_call_delta")
    # Derived: the partial text '{"path": "RE' read leniently is {"path": "RE"}.
    assert isinstance(first.partial.content[0], mw.ToolCall)
    assert first.partial.content[0].arguments == {"path": "RE"}


def test_events_are_cheap_to_produce() -> None:
    # Producing events must not copy content (a structuredClone per event is
    # quadratic). Measured in memory the events hold, not in time (a loaded machine
    # skews timings): ten times the chunks must hold about ten times as much, far
    # from the hundredfold a per-event copy of the text so far would hold.
    def held(n: int) -> int:
        body = sse_body([chunk({"content": "x" * 20}) for _ in range(n)] + [chunk(finish="stop")])
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            events = mw.replay("openai-chat", body)
            after = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert final(events).text == "x" * 20 * n
        return after - before

    small, large = held(1_000), held(10_000)
    assert small < large < 30 * small, (small, large)


def test_event_snapshots_are_built_lazily() -> None:
    events = run([chunk({"content": "a"}) for _ in range(50)] + [chunk(finish="stop")])
    # No snapshot exists before someone reads one (the private slot stays empty).
    middle = [e for e in events if e.type == "text_delta"]
    assert all(e._partial is None for e in middle)
    assert middle[9].partial.text == "a" * 10
    assert middle[9]._partial is not None and middle[10]._partial is None


# --------------------------------------------------------------------------- tool-call protocol


def test_rule_none_rejects_any_call_fragment() -> None:
    events = run(
        [chunk({"content": "ok"}), *read_call(0), chunk(finish="tool_calls")],
        tool_choice="none",
        tools_declared=True,
    )
    assert error_kind(events) == "tool_call_protocol"
    assert "none" in terminal(events).message.error.message
    assert terminal(events).message.text == "ok"  # content kept


@pytest.mark.parametrize("finish", ["stop", "tool_calls"])
def test_rule_required_without_a_complete_call(finish: str) -> None:
    events = run(
        [chunk({"content": "no tools today"}), chunk(finish=finish)],
        tool_choice="required",
        tools_declared=True,
    )
    assert error_kind(events) == "tool_call_protocol"
    assert terminal(events).message.text == "no tools today"


def test_rule_forced_name_not_called_at_all() -> None:
    events = run(
        [chunk({"content": "hm"}), chunk(finish="stop")],
        tool_choice={"name": "read"},
        tools_declared=True,
    )
    assert error_kind(events) == "tool_call_protocol"
    assert "read" in terminal(events).message.error.message


def test_rule_forced_name_and_a_call_to_another_tool() -> None:
    events = run(
        [*read_call(0, name="delete"), chunk(finish="tool_calls")],
        tool_choice={"name": "read"},
        tools_declared=True,
    )
    assert error_kind(events) == "tool_call_protocol"
    msg = terminal(events).message.error.message
    assert "'read'" in msg and "'delete'" in msg


def test_rule_same_id_at_two_provider_indexes() -> None:
    events = run(
        [
            chunk(tools(tool(0, id="dup", name="read", args="{}"))),
            chunk(tools(tool(1, id="dup", name="read", args="{}"))),
            chunk(finish="tool_calls"),
        ]
    )
    assert error_kind(events) == "tool_call_protocol"
    assert "dup" in terminal(events).message.error.message


def test_rule_fragment_before_the_call_started() -> None:
    events = run([chunk(tools(tool(0, args='{"path":"x"}'))), chunk(finish="tool_calls")])
    assert error_kind(events) == "tool_call_protocol"
    assert "before the call started" in terminal(events).message.error.message


def test_rule_call_without_id_at_finish() -> None:
    events = run([chunk(tools(tool(0, name="read", args="{}"))), chunk(finish="tool_calls")])
    assert error_kind(events) == "tool_call_protocol"
    assert "without an id" in terminal(events).message.error.message


def test_rule_call_without_name_at_finish() -> None:
    events = run([chunk(tools(tool(0, id="c1", args="{}"))), chunk(finish="tool_calls")])
    assert error_kind(events) == "tool_call_protocol"
    assert "without a name" in terminal(events).message.error.message


def test_rule_finish_tool_calls_with_no_call() -> None:
    events = run([chunk({"content": "I will call a tool"}), chunk(finish="tool_calls")])
    assert error_kind(events) == "tool_call_protocol"
    assert terminal(events).message.text == "I will call a tool"


def test_rule_name_conflict_within_one_call() -> None:
    events = run(
        [
            chunk(tools(tool(0, id="c1", name="read", args="{"))),
            chunk(tools(tool(0, id="c1", name="write", args="}"))),
            chunk(finish="tool_calls"),
        ]
    )
    assert error_kind(events) == "tool_call_protocol"


def test_rule_calls_without_declared_tools() -> None:
    events = run([*read_call(0), chunk(finish="tool_calls")], tools_declared=False)
    assert error_kind(events) == "tool_call_protocol"
    assert "no tools were declared" in terminal(events).message.error.message


def test_protocol_error_keeps_content_and_parses_nothing() -> None:
    events = run(
        [
            chunk({"content": "text"}),
            chunk(tools(tool(0, id="c1", name="read", args='{"a":1}'))),
            chunk(tools(tool(1, id="c1", name="read", args="{}"))),
        ]
    )
    msg = terminal(events).message
    assert msg.stop_reason == "error"
    assert msg.text == "text"
    (call,) = msg.tool_calls
    # A failed response never carries trusted arguments.
    assert call.raw_arguments == '{"a":1}' and call.arguments == {}
    assert not [e for e in events if e.type == "tool_call_end"]


# ---- not errors


def test_same_id_and_name_on_every_fragment_is_one_call() -> None:
    events = run(
        [
            chunk(tools(tool(0, id="c1", name="read", args='{"path"'))),
            chunk(tools(tool(0, id="c1", name="read", args=':"x"'))),
            chunk(tools(tool(0, id="c1", name="read", args="}"))),
            chunk(finish="tool_calls"),
        ]
    )
    t = terminal(events)
    assert t.type == "done"
    (call,) = t.message.content
    assert (call.id, call.name, call.arguments) == ("c1", "read", {"path": "x"})
    assert call.raw_arguments == '{"path":"x"}'


def test_new_id_at_a_used_index_is_a_new_call() -> None:
    # Groq and Ollama send every call at index 0, each with its own id.
    events = run(
        [
            chunk(tools(tool(0, id="a", name="read", args='{"path":"1"}'))),
            chunk(tools(tool(0, id="b", name="read", args='{"path":"2"}'))),
            chunk(finish="tool_calls"),
        ]
    )
    t = terminal(events)
    assert t.reason == "tool_use"
    assert [(c.id, c.arguments) for c in t.message.tool_calls] == [
        ("a", {"path": "1"}),
        ("b", {"path": "2"}),
    ]


def test_finish_stop_with_complete_calls_is_tool_use() -> None:
    events = run([*read_call(0), chunk(finish="stop")], tools_declared=True)
    t = terminal(events)
    assert t.type == "done" and t.reason == "tool_use"
    assert t.message.stop_reason == "tool_use"
    assert t.message.provider_stop_reason == "stop"


def test_arguments_that_are_not_an_object_end_tool_use_with_empty_arguments() -> None:
    for raw in ['{"path": "x"', "[1, 2]", "not json", '"str"']:
        events = run(
            [chunk(tools(tool(0, id="c", name="read", args=raw))), chunk(finish="tool_calls")]
        )
        t = terminal(events)
        assert t.type == "done" and t.reason == "tool_use", raw
        (call,) = t.message.tool_calls
        assert call.arguments == {} and call.raw_arguments == raw


def test_empty_arguments_mean_no_arguments() -> None:
    events = run([chunk(tools(tool(0, id="c", name="now", args=""))), chunk(finish="tool_calls")])
    (call,) = terminal(events).message.tool_calls
    assert call.arguments == {} and call.raw_arguments == ""


def test_length_finish_never_trusts_arguments() -> None:
    events = run(
        [
            chunk(tools(tool(0, id="c", name="write", args='{"path":"a","text":"hel'))),
            chunk(tools(tool(0, args='lo"}'))),  # complete JSON, but the response was cut
            chunk(finish="length"),
        ]
    )
    t = terminal(events)
    assert t.type == "done" and t.reason == "length"
    assert t.message.stop_reason == "length"
    (call,) = t.message.tool_calls
    assert call.raw_arguments == '{"path":"a","text":"hello"}'
    assert call.arguments == {}


def test_length_finish_skips_the_completion_policy() -> None:
    # "required" asks for a complete call on a non-length finish only.
    events = run(
        [chunk({"content": "cut"}), chunk(finish="length")],
        tool_choice="required",
        tools_declared=True,
    )
    assert terminal(events).reason == "length"


# --------------------------------------------------------------------------- completion policy


def test_policy_omitted_with_declared_tools_accepts_calls() -> None:
    events = run([*read_call(0), chunk(finish="tool_calls")], tools_declared=True)
    assert terminal(events).reason == "tool_use"


def test_policy_auto_allows_text_and_calls() -> None:
    events = run(
        [chunk({"content": "reading"}), *read_call(0), chunk(finish="tool_calls")],
        tool_choice="auto",
        tools_declared=True,
    )
    t = terminal(events)
    assert t.reason == "tool_use" and t.message.text == "reading"


def test_policy_auto_text_only_is_stop() -> None:
    events = run([chunk({"content": "hi"}), chunk(finish="stop")], tool_choice="auto")
    assert terminal(events).reason == "stop"


def test_policy_auto_every_started_call_must_complete() -> None:
    events = run(
        [
            *read_call(0, "a"),
            chunk(tools(tool(1, name="grep", args="{}"))),
            chunk(finish="tool_calls"),
        ],
        tool_choice="auto",
        tools_declared=True,
    )
    assert error_kind(events) == "tool_call_protocol"


def test_policy_required_with_a_call() -> None:
    events = run(
        [*read_call(0), chunk(finish="tool_calls")], tool_choice="required", tools_declared=True
    )
    assert terminal(events).reason == "tool_use"


def test_policy_forced_name_with_that_call() -> None:
    events = run(
        [*read_call(0, name="read"), chunk(finish="tool_calls")],
        tool_choice={"name": "read"},
        tools_declared=True,
    )
    assert terminal(events).reason == "tool_use"


def test_policy_none_text_only_is_fine() -> None:
    events = run([chunk({"content": "hi"}), chunk(finish="stop")], tool_choice="none")
    assert terminal(events).reason == "stop"


# --------------------------------------------------------------------------- finish, usage


def test_finish_and_usage_in_different_payloads() -> None:
    events = run(
        [
            chunk({"content": "hi"}),
            chunk(finish="stop"),
            {
                "id": "chatcmpl-1",
                "choices": [],
                "usage": {"prompt_tokens": 7, "completion_tokens": 2},
            },
        ]
    )
    t = terminal(events)
    assert t.reason == "stop"
    u = t.message.usage
    assert (u.input, u.output, u.cache_read, u.total_tokens) == (7, 2, 0, 9)


def test_no_finish_reason_is_truncated_and_keeps_content() -> None:
    events = run([chunk({"content": "half"})])
    assert error_kind(events) == "truncated_stream"
    assert terminal(events).message.text == "half"


def test_body_ending_after_finish_without_done_is_complete() -> None:
    # Rule 4: one finish is formed at [DONE] *or end of input*.
    events = run([chunk({"content": "ok"}), chunk(finish="stop")], done=False)
    assert terminal(events).reason == "stop"


def test_last_finish_wins() -> None:
    events = run([chunk({"content": "a"}, finish="length"), chunk(finish="stop")])
    assert terminal(events).reason == "stop"


def test_usage_updates_are_in_the_partials() -> None:
    events = run(
        [
            chunk({"content": "a"}),
            chunk({"content": "b"}, usage={"prompt_tokens": 3, "completion_tokens": 1}),
            chunk({"content": "c"}),
            chunk(finish="stop", usage={"prompt_tokens": 3, "completion_tokens": 3}),
        ]
    )
    deltas = [e for e in events if e.type == "text_delta"]
    # Usage arrives after the "b" delta in the same chunk, so it is visible from "c" on.
    assert deltas[0].partial.usage.output == 0
    assert deltas[2].partial.usage.output == 1
    assert terminal(events).message.usage.output == 3


def test_cost_from_model_prices() -> None:
    model = mw.Model(
        id="m", api="openai-chat", provider="local", base_url="http://127.0.0.1:1/v1",
        cost=mw.ModelCost(input=2.0, output=8.0, cache_read=0.5),
    )  # fmt: skip
    body = sse_body(
        [
            chunk({"content": "x"}, finish="stop"),
            {
                "choices": [],
                "usage": {
                    "prompt_tokens": 1_000_000,
                    "completion_tokens": 500_000,
                    "prompt_tokens_details": {"cached_tokens": 250_000},
                },
            },
        ]
    )
    u = mw.replay("openai-chat", body, model=model).message.usage
    assert (u.input, u.cache_read, u.output) == (750_000, 250_000, 500_000)
    assert u.cost.input == pytest.approx(1.5)
    assert u.cost.cache_read == pytest.approx(0.125)
    assert u.cost.output == pytest.approx(4.0)
    assert u.cost.total == pytest.approx(1.5 + 0.125 + 4.0)


# --------------------------------------------------------------------------- direct deltas


def _feed(deltas: list[Any], **kw: Any) -> list[Event]:
    from modelwire._wire.assemble import Assembler

    asm = Assembler(api="x", **kw)
    out: list[Event] = []
    asm.start(out)
    try:
        asm.feed(deltas, out)
    except mw.errors.StreamError as exc:
        asm.fail(exc, out)
    return out


def test_block_end_closes_a_call_before_the_finish() -> None:
    # Anthropic/Responses style: a call is parsed at its BlockEnd, not at the finish.
    out = _feed(
        [
            BlockStart("t", "tool_call", id="c", name="read"),
            ToolCallDelta("t", arguments='{"a":'),
            ToolCallDelta("t", arguments="1}"),
            BlockEnd("t"),
            TextDelta("x", "after"),
            Finish("tool_use", "tool_use"),
            EndOfStream(),
        ]
    )
    types = [e.type for e in out]
    assert types.index("tool_call_end") < types.index("text_start")
    assert final(out).tool_calls[0].arguments == {"a": 1}


def test_whole_arguments_replace_what_streamed() -> None:
    out = _feed(
        [
            ToolCallDelta("t", id="c", name="f", arguments='{"a":'),
            ToolCallArguments("t", '{"a": 2}'),
            Finish("tool_use"),
            EndOfStream(),
        ]
    )
    assert final(out).tool_calls[0].raw_arguments == '{"a": 2}'
    assert final(out).tool_calls[0].arguments == {"a": 2}


def test_signatures_and_redacted_thinking() -> None:
    out = _feed(
        [
            ThinkingDelta("r", "hmm"),
            BlockSignature("r", "sig-"),
            BlockSignature("r", "1", append=True),
            BlockStart("z", "thinking", signature="opaque", redacted=True),
            TextDelta("x", "hi"),
            Finish("stop"),
            EndOfStream(),
        ]
    )
    c = final(out).content
    assert c[0] == mw.ThinkingContent(thinking="hmm", signature="sig-1")
    assert c[1] == mw.ThinkingContent(thinking="", signature="opaque", redacted=True)
    assert c[2] == mw.TextContent(text="hi")


def test_finish_error_kind_is_typed() -> None:
    out = _feed(
        [
            TextDelta("x", "partial"),
            Finish("error", "content_filter", "content_filter", "filtered"),
            EndOfStream(),
        ]
    )
    error = final(out).error
    assert error is not None and error.kind == "content_filter"
    assert final(out).text == "partial"
    assert final(out).provider_stop_reason == "content_filter"


def test_usage_update_none_keeps_counts() -> None:
    out = _feed(
        [
            UsageUpdate(input=5, output=1),
            UsageUpdate(output=4, cache_read=2),
            Finish("stop"),
            EndOfStream(),
        ]
    )
    u = final(out).usage
    assert (u.input, u.output, u.cache_read, u.cache_write, u.total_tokens) == (5, 4, 2, 0, 11)


def test_the_same_usage_delta_again_after_another_applies_again() -> None:
    # A decoder may hand the very same delta for an equal snapshot; after a different
    # one it must count again.
    first = UsageUpdate(input=5, output=1)
    out = _feed([first, TextDelta("x", "a"), first, UsageUpdate(output=9), first,
                 Finish("stop"), EndOfStream()])  # fmt: skip
    u = final(out).usage
    assert (u.input, u.output, u.total_tokens) == (5, 1, 6)


def test_deltas_after_the_terminal_event_are_ignored() -> None:
    out = _feed([TextDelta("x", "a"), Finish("stop"), EndOfStream(), TextDelta("x", "b")])
    assert out[-1].type == "done" and out[-1].message.text == "a"


def test_final_message_round_trips_json() -> None:
    events = run([chunk({"content": "hi"}), *read_call(0), chunk(finish="tool_calls")])
    msg = terminal(events).message
    again = mw.from_json(mw.to_json(msg), mw.AssistantMessage)
    assert again == msg
    assert json.loads(mw.to_json(msg))["content"][1]["arguments"] == {"path": "a.txt"}


# --------------------------------------------------------------------------- completion policy


def run_with_policy(payloads: list[Any], policy: Any, **kw: Any) -> list[Event]:
    p = pipeline_for("openai-chat", **kw)
    p.assembler.policy = policy
    out = p.start()
    out += p.feed(sse_body(payloads))
    out += p.end()
    return out


class Recorder:
    def __init__(self, verdict: Any) -> None:
        self.verdict = verdict
        self.seen: list[tuple[mw.AssistantMessage, Any, Any]] = []

    def __call__(self, message: mw.AssistantMessage, tool_choice: Any, declared: Any) -> Any:
        self.seen.append((message, tool_choice, declared))
        return self.verdict


def test_a_custom_policy_sees_the_finished_response_and_may_accept() -> None:
    # tool_choice "none" would end this stream at the first call fragment; a caller's
    # policy (e.g. for a server that ignores tool_choice) accepts it instead.
    policy = Recorder(None)
    events = run_with_policy(
        [chunk({"content": "ok"}), *read_call(0), chunk(finish="tool_calls")],
        policy,
        tool_choice="none",
        tools_declared=True,
    )
    done = terminal(events)
    assert done.type == "done" and done.reason == "tool_use"
    [(message, tool_choice, declared)] = policy.seen
    assert message is done.message
    assert [c.arguments for c in message.tool_calls] == [{"path": "a.txt"}]
    assert (tool_choice, declared) == ("none", True)


def test_a_custom_policy_may_reject_a_response_the_default_accepts() -> None:
    def must_call_a_tool(message: mw.AssistantMessage, tool_choice: Any, declared: Any) -> Any:
        return None if message.tool_calls else "the model must call a tool before answering"

    payloads = [chunk({"content": "the answer is 42"}), chunk(finish="stop")]
    assert terminal(run(payloads, tool_choice="auto", tools_declared=True)).type == "done"
    events = run_with_policy(payloads, must_call_a_tool, tool_choice="auto", tools_declared=True)
    err = terminal(events)
    assert err.type == "error" and err.message.error.kind == "tool_call_protocol"
    assert err.message.error.message == "the model must call a tool before answering"
    assert err.message.text == "the answer is 42"  # content kept
    with pytest.raises(mw.errors.ToolCallProtocolError):
        err.message.raise_for_error()


def test_length_is_never_judged_by_the_policy() -> None:
    policy = Recorder("reject")
    events = run_with_policy([chunk({"content": "cut"}), chunk(finish="length")], policy)
    assert terminal(events).reason == "length" and policy.seen == []


@pytest.mark.parametrize(
    "verdict", [RuntimeError("policy bug"), True, 0], ids=["raises", "bool", "int"]
)
def test_a_broken_policy_ends_the_stream_typed(verdict: Any) -> None:
    def policy(message: mw.AssistantMessage, tool_choice: Any, declared: Any) -> Any:
        if isinstance(verdict, Exception):
            raise verdict
        return verdict

    events = run_with_policy([chunk({"content": "x"}), chunk(finish="stop")], policy)
    err = terminal(events)
    assert err.type == "error" and err.message.error.kind == "tool_call_protocol"
    assert "completion policy" in err.message.error.message


DEFAULT_CASES = [
    ([chunk({"content": "ok"}), *read_call(0), chunk(finish="tool_calls")], "none", True),
    ([chunk({"content": "ok"}), *read_call(0), chunk(finish="tool_calls")], "auto", True),
    ([chunk({"content": "ok"}), *read_call(0), chunk(finish="tool_calls")], None, False),
    ([chunk({"content": "no"}), chunk(finish="stop")], "required", True),
    ([chunk({"content": "no"}), chunk(finish="stop")], "auto", True),
    ([*read_call(0), chunk(finish="tool_calls")], "required", True),
    ([*read_call(0, name="delete"), chunk(finish="tool_calls")], {"name": "read"}, True),
    ([*read_call(0), chunk(finish="tool_calls")], {"name": "read"}, True),
    ([chunk({"content": "hm"}), chunk(finish="stop")], {"name": "read"}, True),
]


@pytest.mark.parametrize(("payloads", "tool_choice", "declared"), DEFAULT_CASES)
def test_default_completion_policy_decides_as_the_built_in_rules(
    payloads: list[Any], tool_choice: Any, declared: bool
) -> None:
    built_in = terminal(run(payloads, tool_choice=tool_choice, tools_declared=declared))
    explicit = terminal(
        run_with_policy(
            payloads, mw.default_completion_policy, tool_choice=tool_choice,
            tools_declared=declared,
        )
    )  # fmt: skip
    assert explicit.type == built_in.type
    kinds = [e.message.error.kind if e.type == "error" else None for e in (explicit, built_in)]
    assert kinds[0] == kinds[1]
    if built_in.type == "done":
        assert explicit.message.content == built_in.message.content


@pytest.mark.anyio
async def test_completion_policy_is_an_option_of_stream_and_complete() -> None:
    from modelwire.testing import MockServer

    body = sse_body([chunk({"content": "no tool"}), chunk(finish="stop")])

    def policy(message: mw.AssistantMessage, tool_choice: Any, declared: Any) -> Any:
        return f"rejected ({tool_choice}, {declared})"

    ctx = mw.Context(
        messages=[mw.UserMessage(content="hi")],
        tools=[mw.ToolDefinition(name="read", description="d", parameters={"type": "object"})],
    )
    with MockServer([body, body, body]) as srv:
        model = mw.Model(id="m", api="openai-chat", provider="local", base_url=srv.base_url)
        msg = await mw.complete(model, ctx, completion_policy=policy, tool_choice="auto")
        assert msg.error is not None and msg.error.message == "rejected (auto, True)"
        sync = mw.complete_sync(model, ctx, completion_policy=policy)
        assert sync.error is not None and sync.error.message == "rejected (None, True)"
        assert (await mw.complete(model, ctx)).stop_reason == "stop"
    with pytest.raises(mw.ConfigurationError, match="completion_policy"):
        mw.stream(model, ctx, completion_policy="strict")  # type: ignore[arg-type]


_ONE_BATCH_CASES = {
    "arguments after the call ended": [
        ToolCallDelta(0, "c1", "f", ""),
        ToolCallDelta(0, arguments='{"a"'),
        BlockEnd(0),
        ToolCallDelta(0, arguments=":1}"),
    ],
    "parallel calls, arguments interleaved": [
        ToolCallDelta(0, "c1", "f", ""),
        ToolCallDelta(1, "c2", "g", ""),
        ToolCallDelta(0, arguments='{"a"'),
        ToolCallDelta(1, arguments='{"b"'),
        ToolCallDelta(0, arguments=":1}"),
        ToolCallDelta(1, arguments=":2}"),
        BlockEnd(1),
        BlockEnd(0),
        Finish("tool_use"),
        EndOfStream(),
    ],
    "arguments to a text block's key": [
        TextDelta(0, "hi"),
        ToolCallDelta(0, arguments='{"a":1}'),
    ],
    "a new call on a key after its call ended": [
        ToolCallDelta(0, "c1", "f", '{"a":1}'),
        BlockEnd(0),
        ToolCallDelta(0, "c2", "g", ""),
        ToolCallDelta(0, arguments='{"b":2}'),
    ],
}


@pytest.mark.parametrize("deltas", list(_ONE_BATCH_CASES.values()), ids=list(_ONE_BATCH_CASES))
def test_one_feed_of_many_deltas_is_the_same_as_one_feed_each(deltas: list[Any]) -> None:
    # The hot paths remember the open block of the last delta within one feed; a delta
    # that closes or replaces it must be seen, as one call per delta sees it.
    from modelwire._wire.assemble import Assembler

    def run(batches: list[list[Any]]) -> tuple[list[Any], str | None]:
        asm = Assembler(api="anthropic-messages")
        out: list[Any] = []
        asm.start(out)
        error = None
        try:
            for batch in batches:
                asm.feed(batch, out)
        except mw.ModelwireError as exc:
            error = repr(exc)
        seen = [(type(e).__name__, getattr(e, "content_index", None), getattr(e, "delta", None))
                for e in out]  # fmt: skip
        message = asm.message
        return [*seen, message.tool_calls if message else None], error

    assert run([deltas]) == run([[d] for d in deltas])
