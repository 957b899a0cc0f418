"""A body read whole (``modelwire._wire.whole``): one frame at its end, however the
body is split, read by a parse function into the final message's usage."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelwire._apis._common import read_count
from modelwire._wire.pipeline import Pipeline
from modelwire._wire.whole import BODY_EVENT, WholeAnswer, WholeBody
from modelwire.errors import ConfigurationError, EventTooLargeError, TruncatedStreamError
from modelwire.events import DoneEvent, ErrorEvent

BODY = b'{"input_tokens": 2095, "note": "\xc3\xa9t\xc3\xa9"}'


def _parse(body: bytes) -> int:
    return read_count(body, "input_tokens", "messages/count_tokens")


def _run(pieces: list[bytes]) -> DoneEvent | ErrorEvent:
    p = Pipeline(WholeAnswer("anthropic-messages", _parse))
    events = p.start()
    for piece in pieces:
        events += p.feed(piece)
    events += p.end()
    last = events[-1]
    assert isinstance(last, DoneEvent | ErrorEvent)
    return last


def test_whole_byte_by_byte_and_at_every_split() -> None:
    cuts = [[BODY], [BODY[i : i + 1] for i in range(len(BODY))]]
    cuts += [[BODY[:i], BODY[i:]] for i in range(len(BODY) + 1)]
    for pieces in cuts:
        last = _run(pieces)
        assert isinstance(last, DoneEvent), pieces
        assert last.message.usage.input == 2095 and last.message.stop_reason == "stop"


@given(st.lists(st.integers(min_value=0, max_value=len(BODY)), max_size=8))
def test_at_random_splits(points: list[int]) -> None:
    edges = [0, *sorted(points), len(BODY)]
    last = _run([BODY[a:b] for a, b in itertools.pairwise(edges)])
    assert isinstance(last, DoneEvent) and last.message.usage.input == 2095


def test_the_frame_is_the_body_at_its_end() -> None:
    w = WholeBody(1024)
    assert w.feed(BODY[:5]) == [] and w.feed(bytearray(BODY[5:])) == []
    (frame,) = w.end()
    assert (frame.event, frame.data, w.bytes_fed) == (BODY_EVENT, BODY, len(BODY))


@pytest.mark.parametrize(
    ("pieces", "kind"),
    [
        ([], "truncated_stream"),  # no body at all
        ([b'{"input_tokens": "many"}'], "malformed_chunk"),
        ([b'{"input_tokens": 3'], "malformed_chunk"),  # cut inside its JSON
        ([b"x" * 2048], "event_too_large"),
    ],
)
def test_a_bad_answer_is_a_typed_failure(pieces: list[bytes], kind: str) -> None:
    p = Pipeline(WholeAnswer("anthropic-messages", _parse), max_event_bytes=1024)
    events = p.start()
    for piece in pieces:
        events += p.feed(piece)
    events += p.end()
    last = events[-1]
    assert isinstance(last, ErrorEvent) and last.message.error is not None
    assert last.message.error.kind == kind


def test_caller_mistakes_are_configuration_errors() -> None:
    w = WholeBody(8)
    with pytest.raises(ConfigurationError, match="takes bytes"):
        w.feed("text")  # type: ignore[arg-type]
    with pytest.raises(EventTooLargeError):
        w.feed(b"123456789")
    done = WholeBody(8)
    with pytest.raises(TruncatedStreamError):
        done.end()
    with pytest.raises(ConfigurationError, match="after end"):
        done.feed(b"1")


def test_a_pipeline_without_wrong_api_detection_decodes_one_frame_a_read() -> None:
    # Reads of one frame each: each is decoded (once, not by a decoder calling itself).
    from modelwire._apis import get_api

    p = Pipeline(get_api("openai-chat"))
    events = p.start()
    chunk = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
    events += p.feed(chunk)
    events += p.feed(
        b'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    )
    events += p.feed(b"data: [DONE]\n\n")
    events += p.end()
    last = events[-1]
    assert isinstance(last, DoneEvent) and last.message.text == "hi"
