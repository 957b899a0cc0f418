"""Runs: the whole blocks of a read, joined for one ``decode_lines`` call, give the
events and errors the frame-by-frame path gives, event for event and error for error —
on hostile reads (``{}{}``, a value split over frames, a string swallowing a boundary,
``data:{``, CRLF, BOM, comments, ``id``/``retry`` lines, multi-line data, invalid UTF-8,
``[DONE]``, wrong types, mixed event names), whole, byte by byte, at every split point
and at random splits."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelwire._apis.anthropic_messages.decode import AnthropicDecoder
from modelwire._apis.bedrock_converse.decode import BedrockDecoder
from modelwire._apis.google_generative_ai.decode import GoogleDecoder
from modelwire._apis.openai_chat.decode import ChatDecoder
from modelwire._client._replay import pipeline_for
from modelwire._wire.sse import SSEFraming
from modelwire._wire.sse._frames import Frame, Run, frames_of, join
from modelwire.testing import render


def _chat(content: str, **extra: Any) -> bytes:
    payload = {"id": "c1", "model": "m", **extra,
               "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}]}  # fmt: skip
    return b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"


def _anth(payload: dict[str, Any], name: str | None = None) -> bytes:
    data = json.dumps(payload, ensure_ascii=False).encode()
    return f"event: {name or payload['type']}\n".encode() + b"data: " + data + b"\n\n"


def _text(t: str) -> bytes:
    return _anth({"type": "content_block_delta", "index": 0,
                  "delta": {"type": "text_delta", "text": t}})  # fmt: skip


CHAT_HEAD = b"".join(_chat(t) for t in ["", "Hel", "lo ", "wö", "🙂 r", "ld"])
CHAT_TAIL = (
    b"".join(_chat(t) for t in ["a", "b", "c"])
    + b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    + b"data: [DONE]\n\n"
)
ANTH_HEAD = (
    _anth({"type": "message_start", "message": {"id": "msg_1", "model": "claude"}})
    + _anth(
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    )
    + b"".join(_text(t) for t in ["Hel", "lo ", "wö", "🙂 r", "ld"])
)
ANTH_TAIL = (
    b"".join(_text(t) for t in ["a", "b", "c"])
    + _anth({"type": "content_block_stop", "index": 0})
    + _anth(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 5},
        }
    )
    + _anth({"type": "message_stop"})
)


# Blocks that must not be taken as they look: each is spliced between a head of
# ordinary chunks and a tail of more, so the reads around it take runs.
def _calls(*calls: dict[str, Any]) -> bytes:
    payload = {"choices": [{"index": 0, "delta": {"content": None, "tool_calls": list(calls)}}]}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


CHAT_HOSTILE = [
    _calls({"index": 0, "id": "call_1", "function": {"name": "f", "arguments": ""}}),
    _calls({"index": 0, "function": {"arguments": '{"a":'}}),
    _calls({"index": 0, "function": {"arguments": None}}),
    _calls({"index": 0, "id": "", "function": {"arguments": "1"}}),
    _calls({"index": 20, "function": {"arguments": "1"}}),
    _calls({"function": {"arguments": "1"}}),
    _calls({"index": 0}),
    _calls({"index": 0, "function": {"arguments": "1"}}, {"index": 1, "function": {}}),
    _calls({"index": -1, "function": {"arguments": "1"}}),
    b"data: {}{}\n\n",
    b'data: {"x":[1,\n\ndata: 2]}\n\n',
    b'data: {"t":"x}\n\ndata: {y"}\n\ndata: {}{}\n\n',  # a string across a boundary
    b'data: {"choices":[]}\n{"choices":[]}\n\n',  # a second line that is JSON too
    b'data: {"a":\ndata: 1}\n\n',  # multi-line data
    b'data:{"choices":[]}\n\n',
    b'data: {"choices":[]} \n\n',
    b'data: {"choices":[]}\r\n\r\ndata: {"choices":[]}\r\n\r\n',
    b'data: {"choices":[]}\n\n\n\ndata: {"choices":[]}\n\n',
    b": ping\n\n",
    b'id: 7\ndata: {"choices":[]}\n\n',
    b'retry: 10\ndata: {"choices":[]}\n\n',
    b'data: {"id":"\xff","choices":[]}\n\n',  # invalid UTF-8 in a field never decoded
    b'data: {"choices":[{"index":0,"delta":{"content":"\xc3"}}]}\n\n',
    b'data: {"choices":[{"index":"x"}]}\n\n',  # wrong types
    b'data: {"choices":[{"index":0,"delta":{"content":7}}]}\n\n',
    b'data: {"choices":[{"index":1,"delta":{"content":"x"}}]}\n\n',
    b'data: {"error":{"message":"boom"}}\n\n',
    b"data: [DONE]\n\n",
    b'event: error\ndata: {"error":{"message":"boom"}}\n\n',
    b'data: [1]\n\ndata: {"choices":[]}\n\n',
    b"data: {\n\n",
    b"data: }\n\ndata: {\n\n",
]
ANTH_HOSTILE = [
    _anth({"type": "ping"}),
    _text("x").replace(b"event: content_block_delta", b"event: ping"),  # name ≠ type
    _text("x").replace(b"data: ", b"data:"),
    _text("x").replace(b"\ndata: ", b"\nid: 3\ndata: "),
    _text("x").replace(b"\n\n", b"\nretry: 5\n\n"),
    _text("x").replace(b"\n\n", b"\r\n\r\n").replace(b"\ndata", b"\r\ndata"),
    _text("x")[:-2] + b"}\n\n",
    _text("x").replace(b'"x"', b'"\xff"'),
    _text("x").replace(b"event: content_block_delta", b"event: content_block_\xffdelta"),
    _anth(
        {"type": "content_block_delta", "index": 5, "delta": {"type": "text_delta", "text": "x"}}
    ),
    _anth({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 1}}),
    _anth({"type": "content_block_delta", "index": 0, "delta": {"type": "future", "text": 1}}),
    _anth({"type": "future_event", "index": "x"}),
    b"event: content_block_delta\ndata: {}{}\n\n",
    b'event: content_block_delta\ndata: {"type":"content_block_delta",\n\n',
    b"event: content_block_delta\n\n",
    b": comment\n\n",
    _anth({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
]
_GEM = render("Hello wörld 🙂 and more of the text, in pieces", "google-generative-ai",
              piece_chars=6).split(b"\r\n\r\n")  # fmt: skip
GEM_HEAD = b"".join(b + b"\r\n\r\n" for b in _GEM[:4])
GEM_TAIL = b"".join(b + b"\r\n\r\n" for b in _GEM[4:])
GEM_HOSTILE = [h.replace(b"\n", b"\r\n") for h in CHAT_HOSTILE[9:19]] + [
    _GEM[1] + b"\n\n" + _GEM[2] + b"\r\n\r\n",  # LF and CRLF blocks in one read
    b'data: {"candidates":[{"index":"x"}]}\r\n\r\n',
    b'data: {"candidates":[{"content":{"parts":[{"text":7}]}}]}\r\n\r\n',
    b'data: {"candidates":[{"content":{"parts":[{"text":"a"},{"text":"b"}]}}]}\r\n\r\n',
    b'data: {"error":{"code":500,"message":"boom"}}\r\n\r\n',
    b'data: {"responseId":"\xff","candidates":[]}\r\n\r\n',
    b"data: [DONE]\r\n\r\n",
]
CASES = [("openai-chat", CHAT_HEAD + h + CHAT_TAIL) for h in CHAT_HOSTILE]
CASES += [("anthropic-messages", ANTH_HEAD + h + ANTH_TAIL) for h in ANTH_HOSTILE]
CASES += [("google-generative-ai", GEM_HEAD + h + GEM_TAIL) for h in GEM_HOSTILE]
CASES += [
    ("openai-chat", b"\xef\xbb\xbf" + CHAT_HEAD + CHAT_TAIL),
    ("openai-chat", CHAT_HEAD + CHAT_TAIL),
    ("anthropic-messages", ANTH_HEAD + ANTH_TAIL),
    ("google-generative-ai", GEM_HEAD + GEM_TAIL),
]
_DECODERS = {"openai-chat": ChatDecoder, "anthropic-messages": AnthropicDecoder,
             "google-generative-ai": GoogleDecoder,
             "bedrock-converse": BedrockDecoder}  # fmt: skip
_ENDS = {"openai-chat": (CHAT_HEAD, CHAT_TAIL), "anthropic-messages": (ANTH_HEAD, ANTH_TAIL),
         "google-generative-ai": (GEM_HEAD, GEM_TAIL)}  # fmt: skip


def _run(api: str, reads: list[bytes], *, runs: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every event of the stream, the error event's message included, as text (with the
    API's decoder taking runs or not; also used by ``test_eventstream_runs``)."""
    cls = _DECODERS[api]
    with monkeypatch.context() as m:
        m.setattr(cls, "takes_runs", runs)
        p = pipeline_for(api)
        events = p.start()
        for r in reads:
            events += p.feed(r)
        events += p.end()
    return re.sub(r"timestamp=\d+", "", repr(list(events)))


def _splits(body: bytes) -> list[list[bytes]]:
    out = [[body], [body[i : i + 1] for i in range(len(body))]]
    out += [[body[:i], body[i:]] for i in range(1, len(body))]
    return out


@pytest.mark.parametrize(("api", "body"), CASES, ids=lambda v: v if isinstance(v, str) else "")
def test_runs_give_the_frame_by_frame_events_at_every_split(
    api: str, body: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    for reads in _splits(body):
        want = _run(api, reads, runs=False, monkeypatch=monkeypatch)
        assert _run(api, reads, runs=True, monkeypatch=monkeypatch) == want, reads


_POOL = {"openai-chat": CHAT_HOSTILE + [_chat(t) for t in ["x", "yz", "é"]],
         "anthropic-messages": ANTH_HOSTILE + [_text(t) for t in ["x", "yz", "é"]],
         "google-generative-ai": GEM_HOSTILE + [b + b"\r\n\r\n" for b in _GEM[1:3]]}  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    api=st.sampled_from(sorted(_POOL)),
    picks=st.lists(st.integers(0, 10**6), max_size=12),
    cuts=st.lists(st.integers(0, 10**6), max_size=8),
)
def test_runs_give_the_frame_by_frame_events_on_random_streams(
    api: str, picks: list[int], cuts: list[int]
) -> None:
    pool = _POOL[api]
    head, tail = _ENDS[api]
    body = head + b"".join(pool[i % len(pool)] for i in picks) + tail
    points = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    reads = [body[a:b] for a, b in itertools.pairwise(points)]
    with pytest.MonkeyPatch.context() as mp:
        want = _run(api, reads, runs=False, monkeypatch=mp)
        assert _run(api, reads, runs=True, monkeypatch=mp) == want


def test_a_read_of_whole_blocks_is_one_run_and_done_its_own_frame() -> None:
    out: list[Frame] = []
    read = _chat("a") + _chat("b") + b"data: [DONE]\n\n" + b"data: {"
    taken = join(read, out)
    assert taken == len(read) - len(b"data: {")
    run, done = out
    assert isinstance(run, Run) and run.count == 2 and done == Frame("message", b"[DONE]")
    assert frames_of(run) == [Frame("message", _chat(x)[6:-2]) for x in "ab"]


@pytest.mark.parametrize(
    ("read", "first"),
    [
        (b"data: {}{}\n\n", b"{}{}"),  # one block: a run, decode_lines then counts 2
        (_chat("a") + b'data: {"a":\n1}\n\n', _chat("a")),
        (_chat("a") + b"data: [1]\n\n", _chat("a")),
        (_chat("a") + b": ping\n\n", _chat("a")),
        (_chat("a") + _chat("b").replace(b"\n\n", b" \n\n"), _chat("a")),
        (_text("a") + _anth({"type": "ping"}), _text("a")),
        (_chat("a").replace(b"\n\n", b" \n\n"), b""),
        (b'data: {"a":1}\n{"b":2}\n\n', b""),
        (_chat("ÿ").replace("ÿ".encode(), b"\xff"), b""),
        (b": ping\n\n" + _chat("a"), b""),
    ],
)
def test_join_takes_the_blocks_of_one_shape_before_any_other(read: bytes, first: bytes) -> None:
    out: list[Frame] = []
    taken = join(read, out)
    if not first:
        assert (taken, out) == (0, [])
    elif first == b"{}{}":
        assert taken == len(read) and out == [Run("message", b"{}{}", 1)]
    else:
        payload = first.partition(b"data: ")[2][:-2]
        assert taken == len(first)
        assert out == [Run("content_block_delta" if b"event" in first else "message", payload, 1)]


def test_a_mixed_read_takes_runs_around_the_odd_blocks() -> None:
    sse = SSEFraming()
    sse.join_runs()
    read = _chat("a") + _chat("b") + b": ping\n\n" + _chat("c") + _chat("d") + b"data: [DONE]\n\n"
    got = sse.feed(read)
    assert [(type(f).__name__, getattr(f, "count", 1)) for f in got] == [
        ("Run", 2),
        ("Run", 2),
        ("Frame", 1),
    ]


def test_the_framing_joins_only_when_asked() -> None:
    body = _chat("a") + _chat("b")
    plain = SSEFraming()
    assert [type(f) for f in plain.feed(body)] == [Frame, Frame]
    joined = SSEFraming()
    joined.join_runs()
    assert [type(f) for f in joined.feed(body)] == [Run]


def test_the_pipeline_joins_once_the_body_is_recognised_and_not_when_traced() -> None:
    p = pipeline_for("openai-chat")
    p.feed(_chat("a"))
    assert p._joined
    traced = pipeline_for("openai-chat", trace=lambda record: None)
    traced.feed(_chat("a"))
    assert not traced._joined
