"""The pipeline's hand-off: the frames of one network read are decoded into one list
of deltas and assembled in one call, with the per-frame loop's outcome in every
case — the terminal delta ends the stream and what follows it in the same read is
never an error, a frame that fails to decode keeps everything before it — whole,
byte by byte and at every split point."""

from __future__ import annotations

import json
from typing import Any

import pytest

import modelwire as mw
from modelwire._assemble import Assembler
from modelwire._pipeline import Pipeline


def chunk(content: str | None = None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    payload = {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


TEXT = ["Hel", "lo ", "wö", "rld"]
BODY = b"".join(chunk(t) for t in TEXT) + chunk(finish="stop") + b"data: [DONE]\n\n"


def shapes(events: list[Any]) -> list[tuple[str, str]]:
    return [(e.type, getattr(e, "delta", "")) for e in events]


def splits(body: bytes) -> list[list[bytes]]:
    """The body whole, byte by byte, and cut once at every point."""
    out = [[body], [body[i : i + 1] for i in range(len(body))]]
    out += [[body[:i], body[i:]] for i in range(1, len(body))]
    return out


def test_one_read_is_assembled_in_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = Assembler.feed

    def counting(self: Assembler, deltas: Any, out: list[Any]) -> None:
        calls.append(len(deltas))
        real(self, deltas, out)

    monkeypatch.setattr(Assembler, "feed", counting)
    p = Pipeline("openai-chat")
    p.feed(chunk("a"))  # the first payload is checked on its own (wrong-API sniffing)
    calls.clear()
    events = p.feed(b"".join(chunk(t) for t in TEXT))
    assert calls == [len(TEXT)]  # one call, every delta of the read
    assert [e.delta for e in events if e.type == "text_delta"] == TEXT


@pytest.mark.parametrize("reads", splits(BODY), ids=lambda r: f"{len(r)} reads")
def test_every_split_gives_the_events_of_the_whole_body(reads: list[bytes]) -> None:
    whole = mw.replay("openai-chat", [BODY])
    assert whole.message.text == "".join(TEXT) and whole[-1].type == "done"
    assert shapes(mw.replay("openai-chat", reads)) == shapes(whole)


def test_a_broken_frame_after_the_terminal_one_in_the_same_read_is_not_an_error() -> None:
    # The per-frame loop stopped at [DONE] and never decoded what followed; the batch
    # decodes ahead, and must not turn the finished response into an error.
    body = BODY + b"data: {broken\n\n"
    for reads in splits(body):
        events = mw.replay("openai-chat", reads)
        assert events[-1].type == "done", (reads, events[-1])
        assert events.message.text == "".join(TEXT)


def test_a_broken_frame_mid_read_keeps_every_delta_before_it() -> None:
    body = b"".join(chunk(t) for t in TEXT) + b'data: {"choices": 7}\n\n' + chunk("lost")
    for reads in ([chunk("a"), body], splits(chunk("a") + body)[1]):
        events = mw.replay("openai-chat", reads)
        last = events[-1]
        assert last.type == "error" and last.message.error is not None
        assert last.message.error.kind == "malformed_chunk"
        assert "choices" in last.message.error.message
        assert events.message.text == "a" + "".join(TEXT)  # nothing before it lost


def test_a_tool_call_protocol_error_mid_read_ends_the_stream_there() -> None:
    # The assembler's own error at one frame of a batch: the stream ends with it, not
    # with a decode error of a later frame of the same read.
    def call(index: int, id_: str) -> bytes:
        tc = {"index": index, "id": id_, "function": {"name": "f", "arguments": "{}"}}
        payload = {"choices": [{"index": 0, "delta": {"tool_calls": [tc]}}]}
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    body = chunk("a") + call(0, "same") + call(1, "same") + b"data: {broken\n\n"
    events = mw.replay("openai-chat", [chunk("x"), body])
    err = events.message.error
    assert err is not None and err.kind == "tool_call_protocol", err
