"""Runs of AWS event stream messages: consecutive messages of one type, their JSON
payloads joined for one ``decode_lines`` call, give the events and errors the
message-by-message path gives, event for event and error for error — on hostile
payloads (``{}{}``, a value split over messages, a string swallowing a boundary, LF or
CR inside a payload, leading or trailing whitespace, an empty payload, invalid UTF-8 in
a field read and one never read, wrong types, a corrupt CRC after a bad payload, other
event types in a row, exceptions and errors), whole, byte by byte, at every split
point and at random splits."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelwire._client._replay import pipeline_for
from modelwire._wire.framing.eventstream import (
    EventStreamDecoder,
    encode_event,
    encode_exception,
    encode_message,
)
from modelwire._wire.sse._frames import Frame, Run, frames_of
from modelwire.errors import MalformedChunkError
from test_sse_runs import _run as run_events
from test_sse_runs import _splits


def _event(name: str, payload: dict[str, Any] | bytes) -> bytes:
    data = payload if isinstance(payload, bytes) else json.dumps(payload, ensure_ascii=False)
    return encode_event(name, data if isinstance(data, bytes) else data.encode())


def _text(t: str, index: int = 0) -> bytes:
    return _event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": t},
                                        "p": "abcdefghij"})  # fmt: skip


def _corrupt(message: bytes) -> bytes:
    return message[:-5] + bytes([message[-5] ^ 1]) + message[-4:]


HEAD = _event("messageStart", {"role": "assistant"}) + b"".join(
    _text(t) for t in ["Hel", "lo ", "wö", "🙂 r", "ld"]
)
TAIL = (
    b"".join(_text(t) for t in ["a", "b", "c"])
    + _event("contentBlockStop", {"contentBlockIndex": 0})
    + _event("messageStop", {"stopReason": "end_turn"})
    + _event("metadata", {"usage": {"inputTokens": 3, "outputTokens": 5}, "metrics": {}})
)
D = "contentBlockDelta"
# Messages that must not be taken as they look: each is spliced between a head of
# ordinary deltas and a tail of more, so the reads around it take runs.
HOSTILE = [
    _event(D, b"{}{}"),
    _event(D, b'{"contentBlockIndex":0,"delta":{"text":"x"}}{}'),
    _event(D, b'{"contentBlockIndex":0,"delta":{"text":"x}') + _event(D, b'{y"}}'),
    _event(D, b'{"contentBlockIndex":0,\n"delta":{"text":"x"}}'),  # LF: JSON whitespace
    _event(D, b'{"contentBlockIndex":0,\r"delta":{"text":"x"}}'),  # CR: JSON whitespace
    _event(D, b'{"contentBlockIndex":0,\r"delta":{"text":"x"}}')  # and then a bad one
    + _event(D, {"contentBlockIndex": 0, "delta": {"text": 7}}),
    _event(D, b'{"contentBlockIndex":0,"delta":{"text":"x"}}\r'),
    _event(D, b'{"contentBlockIndex":0,"delta":{"text":"x"}}\r\n'),
    _event(D, b' {"contentBlockIndex":0,"delta":{"text":"x"}}'),
    _event(D, b'{"contentBlockIndex":0,"delta":{"text":"a}\r{b"}}'),  # raw CR in a string
    _event(D, b""),
    _event(D, b"[1]"),
    _event(D, b'{"contentBlockIndex":0,"delta":{"text":"x"}')  # two values in two payloads
    + _event(D, b'}{"contentBlockIndex":0,"delta":{"text":"y"}}'),
    _event(D, b'{"contentBlockIndex":0,"delta":{"text":"x"}}{"contentBlockIndex":0,')
    + _event(D, b'"delta":{"text":"y"}}'),
    _event(D, b"{"),
    _event(D, b"}") + _event(D, b"{"),
    _event(D, b'{"contentBlockIndex":0,"delta":{"text":"\xff"}}'),  # invalid UTF-8, read
    _event(D, b'{"contentBlockIndex":0,"delta":{"text":"x"},"p":"\xc3"}'),  # never read
    _event(D, b'{"contentBlockIndex":0,"delta":{"text":"\xff"}}') + _corrupt(_text("z")),
    _text("x") + _corrupt(_text("z")),
    _event(D, {"contentBlockIndex": "x", "delta": {"text": "x"}}),
    _event(D, {"contentBlockIndex": 0, "delta": {"text": 7}}),
    _event(D, {"contentBlockIndex": 0, "delta": {}}),  # a delta kind unknown today
    _event(D, {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "hm"}}}),
    _event(D, {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '{"a":'}}}),
    _event(D, {"contentBlockIndex": 0, "delta": {"text": "x"}}).replace(b"event", b"EVENT"),
    encode_message(
        {":message-type": "event", ":event-type": D, ":content-type": "application/json"},
        b'{"contentBlockIndex":0,"delta":{"text":"o"}}',
    ),
    _event("futureEvent", {"a": 1}) * 3,
    _event("messageStart", {"role": "assistant"}) * 2,
    encode_exception("throttlingException", b'{"message":"slow down"}'),
    encode_message(
        {":message-type": "error", ":error-code": "InternalFailure", ":error-message": "boom"}, b""
    ),
    _event("messageStop", {"stopReason": "end_turn"}),
]
CASES = [HEAD + h + TAIL for h in HOSTILE] + [HEAD + TAIL]


def _run(reads: list[bytes], *, runs: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    return run_events("bedrock-converse", reads, runs=runs, monkeypatch=monkeypatch)


@pytest.mark.parametrize("body", CASES)
def test_runs_give_the_message_by_message_events_at_every_split(
    body: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    for reads in _splits(body):
        want = _run(reads, runs=False, monkeypatch=monkeypatch)
        assert _run(reads, runs=True, monkeypatch=monkeypatch) == want, reads


_POOL = HOSTILE + [_text(t) for t in ["x", "yz", "é"]]


@settings(max_examples=150, deadline=None)
@given(
    picks=st.lists(st.integers(0, 10**6), max_size=12),
    cuts=st.lists(st.integers(0, 10**6), max_size=8),
)
def test_runs_give_the_message_by_message_events_on_random_streams(
    picks: list[int], cuts: list[int]
) -> None:
    body = HEAD + b"".join(_POOL[i % len(_POOL)] for i in picks) + TAIL
    points = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    reads = [body[a:b] for a, b in itertools.pairwise(points)]
    with pytest.MonkeyPatch.context() as mp:
        want = _run(reads, runs=False, monkeypatch=mp)
        assert _run(reads, runs=True, monkeypatch=mp) == want


def test_a_read_of_one_type_in_a_row_is_one_run() -> None:
    framing = EventStreamDecoder()
    framing.join_runs()
    got = framing.feed(HEAD + TAIL)
    assert [(type(f).__name__, f.event, getattr(f, "count", 1)) for f in got] == [
        ("Frame", "messageStart", 1),
        ("Run", D, 8),
        ("Frame", "contentBlockStop", 1),
        ("Frame", "messageStop", 1),
        ("Frame", "metadata", 1),
    ]
    run = got[1]
    assert isinstance(run, Run)
    plain = EventStreamDecoder().feed(HEAD + TAIL)
    assert frames_of(run) == plain[1:9]
    assert all(type(f) is Frame for f in plain)


def test_a_bad_payload_in_a_run_is_named_and_the_frames_before_it_delivered() -> None:
    bad = _event(D, b'{"contentBlockIndex":0,"delta":{"text":"\xff"}}')
    body = _text("a") + _text("b") + bad + _corrupt(_text("c"))
    for join in (False, True):
        framing = EventStreamDecoder()
        if join:
            framing.join_runs()
        got = framing.feed(body)
        assert got == EventStreamDecoder().feed(_text("a") + _text("b"))
        with pytest.raises(MalformedChunkError) as info:
            framing.end()
        # The payload error, not the CRC error after it: message 3, at its byte 0xff.
        offset = 2 * len(_text("a"))
        at = offset + bad.index(b"\xff")
        assert f"message #3 (at byte offset {offset}), byte offset {at}" in str(info.value)
        assert "not valid UTF-8" in str(info.value)


def test_the_pipeline_joins_bedrock_once_the_body_is_recognised() -> None:
    p = pipeline_for("bedrock-converse")
    p.feed(HEAD)
    assert p._joined
    events = p.feed(TAIL) + p.end()
    assert events[-1].type == "done" and events[-1].message.text == "Hello wö🙂 rldabc"
