"""Tests of the sans-IO SSE decoder (``modelwire._wire.sse``).

Conformance: the 40 web-platform-tests vectors in ``../shared/fixtures/sse-vectors.json``,
each fed whole, byte by byte, split in two at every offset, and in its own ``chunks``.
The deliberate deviations from WHATWG (DESIGN §2, §2a) are asserted explicitly:

1. a truncated last event makes ``end()`` raise ``TruncatedStreamError`` instead of
   being dropped (vector ``data-before-final-empty-line``);
2. invalid UTF-8 raises ``MalformedChunkError`` instead of decoding to U+FFFD (no vector
   expects U+FFFD today; if one ever does, the vector tests expect the error instead).

Properties (Hypothesis): serialised events come back unchanged however the bytes are
split; arbitrary byte soup gives the same result whole and split, matches a small
independent WHATWG oracle written below, and raises only ``ModelwireError`` subclasses.
"""

from __future__ import annotations

import gc
import itertools
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from modelwire._wire.sse import ServerSentEvent, SSEDecoder
from modelwire.errors import (
    ConfigurationError,
    EventTooLargeError,
    MalformedChunkError,
    ModelwireError,
    TruncatedStreamError,
)
from recorded import PLACEHOLDER, recorded_streams

FIXTURES = recorded_streams()
# Without the fixture folder: one placeholder vector, collected, then skipped by conftest.
VECTORS: list[dict[str, Any]] = (
    json.loads((FIXTURES / "sse-vectors.json").read_text(encoding="utf-8"))["vectors"]
    if FIXTURES.is_dir()
    else [{"name": PLACEHOLDER, "chunks": []}]
)
BOM = b"\xef\xbb\xbf"

# Deviation 1: WHATWG silently drops the event that never got its blank line.
TRUNCATED_VECTORS = {"data-before-final-empty-line"}

Outcome = tuple[list[ServerSentEvent], type[ModelwireError] | None]


def run(chunks: Iterable[bytes], **kwargs: Any) -> Outcome:
    """Feed ``chunks`` then call ``end()``; the events and the error class, if any."""
    decoder = SSEDecoder(**kwargs)
    events: list[ServerSentEvent] = []
    try:
        for chunk in chunks:
            events += decoder.feed(chunk)
        events += decoder.end()
    except ModelwireError as exc:
        return events, type(exc)
    return events, None


def run_decoder(decoder: SSEDecoder, chunks: Iterable[bytes]) -> Outcome:
    events: list[ServerSentEvent] = []
    try:
        for chunk in chunks:
            events += decoder.feed(chunk)
        events += decoder.end()
    except ModelwireError as exc:
        return events, type(exc)
    return events, None


def split_at(data: bytes, offsets: Iterable[int]) -> list[bytes]:
    cuts = [0, *sorted(set(offsets)), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(cuts)]


def as_dicts(events: Sequence[ServerSentEvent]) -> list[dict[str, str]]:
    return [{"event": e.event, "data": e.data, "id": e.id} for e in events]


# -- the web-platform-tests vectors ---------------------------------------------------


def vector_bytes(vector: dict[str, Any]) -> bytes:
    # The inputs are JSON strings; surrogateescape would carry raw invalid bytes, were a
    # vector ever to contain them.
    return str(vector["input"]).encode("utf-8", "surrogateescape")


def expected_outcome(vector: dict[str, Any]) -> tuple[list[dict[str, str]], type | None]:
    expected: list[dict[str, str]] = vector["expected"]
    if any("\ufffd" in e["data"] or "\ufffd" in e["event"] for e in expected):
        # Deviation 2: where a browser substitutes U+FFFD, modelwire refuses the stream.
        return [], MalformedChunkError
    if vector["name"] in TRUNCATED_VECTORS:
        return expected, TruncatedStreamError
    return expected, None


def check_vector(vector: dict[str, Any], chunks: list[bytes]) -> None:
    want_events, want_error = expected_outcome(vector)
    decoder = SSEDecoder()
    events, error = run_decoder(decoder, chunks)
    assert error is want_error, f"{vector['name']} split as {chunks!r}"
    if want_error is MalformedChunkError:
        return
    assert as_dicts(events) == want_events, f"{vector['name']} split as {chunks!r}"
    if "expected_retry" in vector:
        assert decoder.retry == vector["expected_retry"]
    assert decoder.bytes_fed == sum(map(len, chunks))


VECTOR_IDS = [v["name"] for v in VECTORS]


def test_all_forty_vectors_are_loaded() -> None:
    assert len(VECTORS) == 40
    assert len(set(VECTOR_IDS)) == 40
    assert set(VECTOR_IDS) >= TRUNCATED_VECTORS


@pytest.mark.parametrize("vector", VECTORS, ids=VECTOR_IDS)
def test_vector_whole(vector: dict[str, Any]) -> None:
    check_vector(vector, [vector_bytes(vector)])


@pytest.mark.parametrize("vector", VECTORS, ids=VECTOR_IDS)
def test_vector_byte_by_byte(vector: dict[str, Any]) -> None:
    data = vector_bytes(vector)
    check_vector(vector, [data[i : i + 1] for i in range(len(data))])


@pytest.mark.parametrize("vector", VECTORS, ids=VECTOR_IDS)
def test_vector_split_in_two_at_every_offset(vector: dict[str, Any]) -> None:
    data = vector_bytes(vector)
    for i in range(len(data) + 1):
        check_vector(vector, [data[:i], data[i:]])


CHUNKED = [v for v in VECTORS if "chunks" in v]


@pytest.mark.parametrize("vector", CHUNKED, ids=[v["name"] for v in CHUNKED])
def test_vector_in_its_own_chunks(vector: dict[str, Any]) -> None:
    chunks = [str(c).encode("utf-8", "surrogateescape") for c in vector["chunks"]]
    assert b"".join(chunks) == vector_bytes(vector)
    check_vector(vector, chunks)


def test_truncated_vector_keeps_events_before_it_and_its_id_never_counts() -> None:
    (vector,) = [v for v in VECTORS if v["name"] == "data-before-final-empty-line"]
    decoder = SSEDecoder()
    events = decoder.feed(vector_bytes(vector))
    assert as_dicts(events) == [{"event": "message", "data": "test1", "id": ""}]
    with pytest.raises(TruncatedStreamError):
        decoder.end()
    # The undispatched block's "id:test" never became the last event ID.
    assert decoder.last_event_id == ""
    assert decoder.retry == 1000


# -- line breaks, BOM -----------------------------------------------------------------


def test_cr_at_chunk_end_and_lf_at_next_start_are_one_line_break() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    # Were the LF a second line break, it would be a blank line dispatching "a" alone.
    assert decoder.feed(b"\ndata: b\r") == []
    assert decoder.feed(b"\n") == []
    assert decoder.feed(b"\r") == [ServerSentEvent(data="a\nb")]  # a blank line (CR)
    assert decoder.feed(b"\n") == []  # the LF of that CRLF, not another blank line
    assert decoder.feed(b"event: x\r") == []
    assert decoder.feed(b"\ndata: c\r") == []
    assert decoder.feed(b"\n\r\n") == [ServerSentEvent(event="x", data="c")]
    assert decoder.end() == []


def test_cr_then_cr_across_chunks_is_a_blank_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\r") == [ServerSentEvent(data="a")]
    assert decoder.feed(b"\ndata: b\n\n") == [ServerSentEvent(data="b")]


def test_lone_cr_split_at_every_offset() -> None:
    data = b"data: 1\r\rdata: 2\r\n\r\ndata: 3\n\r\ndata: 4\r\r\n"
    want = [ServerSentEvent(data=d) for d in "1234"]
    for i in range(len(data) + 1):
        for j in range(i, len(data) + 1):
            assert run(split_at(data, [i, j])) == (want, None)


@pytest.mark.parametrize(
    "chunks",
    [
        [b"\xef", b"\xbb\xbfdata: x\n\n"],
        [b"\xef\xbb", b"\xbfdata: x\n\n"],
        [b"\xef", b"\xbb", b"\xbf", b"data: x\n\n"],
        [b"\xef\xbb\xbf", b"data: x\n\n"],
        [b"", b"\xef", b"", b"\xbb\xbf", b"", b"data: x\n\n"],
    ],
)
def test_bom_split_across_chunks_is_stripped(chunks: list[bytes]) -> None:
    decoder = SSEDecoder()
    events, error = run_decoder(decoder, chunks)
    assert (events, error) == ([ServerSentEvent(data="x")], None)
    assert decoder.bytes_fed == sum(map(len, chunks))


def test_only_the_first_bom_is_stripped() -> None:
    events, error = run([BOM + b"data: 1\n\n", BOM + b"data: 2\n\ndata: 3\n\n"])
    assert (events, error) == ([ServerSentEvent(data="1"), ServerSentEvent(data="3")], None)
    # A BOM that is not at the very start is part of a field name (unknown field).
    assert run([b"\n" + BOM + b"data: 1\n\n"]) == ([], None)


def test_partial_bom_then_other_bytes_is_invalid_utf8() -> None:
    assert run([b"\xef", b"data: x\n\n"]) == ([], MalformedChunkError)
    assert run([b"\xef\xbb", b"\n"]) == ([], MalformedChunkError)
    # A partial BOM at the end of the body is an unterminated (non-data) line: dropped.
    assert run([b"\xef\xbb"]) == ([], None)


# -- fields -----------------------------------------------------------------------------


def test_field_parsing_rules() -> None:
    body = (
        b": comment\n"
        b"event:  spaced\n"  # only one space is removed
        b"data:no-space\n"
        b"data\n"  # no colon: field name with empty value
        b"data:   three\n"
        b"Data: ignored\n"  # case-sensitive
        b"unknown: x\n"
        b"data: a:b: c\n"
        b"\n"
    )
    assert run([body]) == (
        [ServerSentEvent(event=" spaced", data="no-space\n\n  three\na:b: c")],
        None,
    )


def test_empty_data_line_dispatches_empty_event_but_no_data_dispatches_nothing() -> None:
    assert run([b"data:\n\n"]) == ([ServerSentEvent(data="")], None)
    assert run([b"data\n\n"]) == ([ServerSentEvent(data="")], None)
    assert run([b"data\ndata\n\n"]) == ([ServerSentEvent(data="\n")], None)
    assert run([b"event: x\n\n"]) == ([], None)
    assert run([b"event: x\n\ndata: y\n\n"]) == ([ServerSentEvent(data="y")], None)
    assert run([b"\n\n\n\n"]) == ([], None)


def test_event_type_resets_and_empty_event_type_is_message() -> None:
    body = b"event: a\ndata: 1\n\ndata: 2\n\nevent:\ndata: 3\n\nevent: b\nevent: c\ndata: 4\n\n"
    events, error = run([body])
    assert error is None
    assert [(e.event, e.data) for e in events] == [
        ("a", "1"),
        ("message", "2"),
        ("message", "3"),
        ("c", "4"),
    ]


def test_id_persists_resets_and_ignores_nul() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(
        b"id: 1\ndata: a\n\n"
        b"data: b\n\n"
        b"id: x\x00y\ndata: c\n\n"  # contains NUL: ignored, "1" stays
        b"id\ndata: d\n\n"  # bare "id" resets to ""
        b"id: 2\n\n"  # no data: nothing dispatched, but the last event ID is set
    )
    assert [(e.data, e.id) for e in events] == [("a", "1"), ("b", "1"), ("c", "1"), ("d", "")]
    assert decoder.last_event_id == "2"
    assert decoder.feed(b"data: e\n\n") == [ServerSentEvent(data="e", id="2")]
    # An id in a block that never ends is in the buffer but not the last event ID.
    assert decoder.feed(b"id: 3\n") == []
    assert decoder.last_event_id == "2"
    assert decoder.end() == []
    assert decoder.last_event_id == "2"


def test_id_with_non_ascii_and_spaces() -> None:
    assert run(["id: … x \ndata: 1\n\n".encode()]) == (
        [ServerSentEvent(data="1", id="… x ")],
        None,
    )


@pytest.mark.parametrize(
    ("line", "value"),
    [
        (b"retry: 1000", 1000),
        (b"retry:1000", 1000),
        (b"retry: 0", 0),
        (b"retry: 007", 7),
        (b"retry: 123456789012345678901234567890", 123456789012345678901234567890),
        (b"retry:", None),
        (b"retry", None),
        (b"retry:  1000", None),  # the second space is part of the value
        (b"retry: 1000 ", None),
        (b"retry: -1", None),
        (b"retry: +1", None),
        (b"retry: 1_000", None),
        (b"retry: 1.5", None),
        (b"retry: 1e3", None),
        (b"retry: 0x10", None),
        ("retry: ١٢".encode(), None),  # Arabic-Indic digits are not ASCII digits
        ("retry: １２".encode(), None),  # fullwidth digits neither
        (b"Retry: 5", None),
    ],
)
def test_retry_parsing(line: bytes, value: int | None) -> None:
    decoder = SSEDecoder()
    events = decoder.feed(line + b"\ndata: x\n\n")
    assert decoder.retry == value
    assert events == [ServerSentEvent(data="x", retry=value)]


def test_retry_applies_at_line_end_and_persists_while_event_field_is_per_block() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"retry: 10\n") == []
    assert decoder.retry == 10  # WHATWG: set as soon as the field is processed
    assert decoder.feed(b"retry: bogus\ndata: a\n\ndata: b\n\n") == [
        ServerSentEvent(data="a", retry=10),
        ServerSentEvent(data="b"),
    ]
    assert decoder.retry == 10
    assert decoder.feed(b"retry: 20\n\n") == []  # no data: nothing dispatched
    assert decoder.retry == 20
    assert decoder.end() == []


def test_absurdly_long_retry_is_ignored_not_crashing() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"retry: 5\n\nretry: " + b"9" * 50_000 + b"\ndata: x\n\n") == [
        ServerSentEvent(data="x")
    ]
    assert decoder.retry == 5


def test_nul_and_controls_in_data_are_kept() -> None:
    controls = "\x00\x0b\x0c\x1c\x1d\x1e\x7f"
    assert run([f"data: {controls}\n\n".encode()]) == ([ServerSentEvent(data=controls)], None)
    # U+2028/U+2029/U+0085 are not SSE line breaks (only CR and LF are).
    text = "a\u2028b\u2029c\x85d"
    assert run([f"data: {text}\n\n".encode()]) == ([ServerSentEvent(data=text)], None)


# -- UTF-8 ----------------------------------------------------------------------------


def test_multibyte_characters_split_at_every_offset_decode_fine() -> None:
    text = "é…🙂中文"
    data = f"event: ü\nid: ß\ndata: {text}\n: ça\n\n".encode()
    want = [ServerSentEvent(event="ü", data=text, id="ß")]
    for i in range(len(data) + 1):
        assert run([data[:i], data[i:]]) == (want, None)
    assert run([data[i : i + 1] for i in range(len(data))]) == (want, None)


@pytest.mark.parametrize(
    "body",
    [
        b"data: \xff\n\n",
        b"data: \xc3\n\n",  # truncated 2-byte sequence at the end of the line
        b"data: \xe2\x80A\n\n",  # truncated 3-byte sequence followed by ASCII
        b"data: \xc0\xaf\n\n",  # overlong encoding
        b"data: \xed\xa0\x80\n\n",  # UTF-8-encoded surrogate
        b"data: \xf4\x90\x80\x80\n\n",  # above U+10FFFF
        b"data: ok\ndata: \x80\n\n",
        b"event: \xff\ndata: x\n\n",
        b"id: \xff\ndata: x\n\n",
        b"id: \xff\x00\ndata: x\n\n",  # ignored for the NUL, but still not UTF-8
        b":\xff comment\ndata: x\n\n",
        b"retry: \xff\ndata: x\n\n",
        b"unknown\xff: x\ndata: x\n\n",
        b"\xffdata: x\n\n",
    ],
)
def test_invalid_utf8_raises_malformed_chunk_never_replacement(body: bytes) -> None:
    for i in range(len(body) + 1):
        assert run([body[:i], body[i:]]) == ([], MalformedChunkError)
    decoder = SSEDecoder()
    with pytest.raises(MalformedChunkError, match="UTF-8"):
        decoder.feed(body)


def test_invalid_utf8_split_across_chunk_boundary() -> None:
    # The first byte of a 3-byte character, then a chunk that does not continue it.
    decoder = SSEDecoder()
    assert decoder.feed(b"data: abc\xe2") == []
    assert decoder.feed(b"\x80") == []
    with pytest.raises(MalformedChunkError) as info:
        decoder.feed(b"Z\n\n")
    assert "e2 80" in str(info.value)


def test_error_after_good_events_in_one_chunk_is_deferred_to_the_next_call() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b"data: 1\n\ndata: 2\n\ndata: \xff\n\ndata: 3\n\n")
    assert events == [ServerSentEvent(data="1"), ServerSentEvent(data="2")]
    with pytest.raises(MalformedChunkError):
        decoder.end()


def test_decoder_is_poisoned_after_an_error() -> None:
    decoder = SSEDecoder()
    with pytest.raises(MalformedChunkError) as first:
        decoder.feed(b"data: \xff\n\n")
    with pytest.raises(MalformedChunkError) as again:
        decoder.feed(b"data: fine\n\n")
    assert again.value.message == first.value.message
    with pytest.raises(MalformedChunkError):
        decoder.end()
    with pytest.raises(MalformedChunkError):
        decoder.end()


# -- max_event_bytes --------------------------------------------------------------------


def test_event_exactly_at_the_limit_passes_one_byte_more_fails() -> None:
    line = b"data: " + b"x" * 94  # 100 bytes, line terminators not counted
    assert run([line + b"\n\n"], max_event_bytes=100) == ([ServerSentEvent(data="x" * 94)], None)
    assert run([line + b"x\n\n"], max_event_bytes=100) == ([], EventTooLargeError)
    # CRLF terminators do not count either.
    assert run([line + b"\r\n\r\n"], max_event_bytes=100)[1] is None


def test_many_lines_exceeding_the_limit() -> None:
    body = b"data: 12345678\n" * 8  # 8 lines of 14 bytes = 112 > 100
    decoder = SSEDecoder(max_event_bytes=100)
    with pytest.raises(EventTooLargeError, match="100"):
        decoder.feed(body)
    # Line by line: the error comes with the line that crosses the limit, before any blank line.
    decoder = SSEDecoder(max_event_bytes=100)
    lines = body.splitlines(keepends=True)
    for line in lines[:7]:
        assert decoder.feed(line) == []
    with pytest.raises(EventTooLargeError, match="max_event_bytes=100"):
        decoder.feed(lines[7])


def test_comments_and_other_fields_count_towards_the_event() -> None:
    body = b": " + b"c" * 60 + b"\nevent: " + b"e" * 40 + b"\ndata: x\n\n"
    assert run([body], max_event_bytes=100) == ([], EventTooLargeError)
    assert run([body], max_event_bytes=200)[1] is None


def test_limit_is_per_event_not_per_stream() -> None:
    body = b"data: " + b"x" * 90 + b"\n\n"
    events, error = run([body * 50], max_event_bytes=100)
    assert error is None
    assert len(events) == 50


def test_one_long_unterminated_line_raises_while_it_grows() -> None:
    decoder = SSEDecoder(max_event_bytes=1000)
    assert decoder.feed(b"data: ") == []
    fed = 6
    with pytest.raises(EventTooLargeError, match="1000"):
        while True:
            decoder.feed(b"x" * 64)
            fed += 64
            assert fed <= 1000, "no error although the line exceeded the limit"
    assert fed + 64 > 1000
    # Also when the long line is not a data line, and with no line break ever.
    decoder = SSEDecoder(max_event_bytes=1000)
    with pytest.raises(EventTooLargeError):
        for _ in range(100):
            decoder.feed(b": keep-alive comment without end ")


def test_limit_counts_the_lines_already_in_the_event_plus_the_pending_line() -> None:
    decoder = SSEDecoder(max_event_bytes=100)
    assert decoder.feed(b"data: " + b"a" * 54 + b"\n") == []  # 60 bytes
    assert decoder.feed(b"data: " + b"b" * 34) == []  # 100 in all, unterminated
    with pytest.raises(EventTooLargeError):
        decoder.feed(b"b")


def test_good_events_before_a_too_large_one_in_the_same_chunk_are_returned() -> None:
    decoder = SSEDecoder(max_event_bytes=50)
    events = decoder.feed(b"data: a\n\ndata: " + b"x" * 60 + b"\n\n")
    assert events == [ServerSentEvent(data="a")]
    with pytest.raises(EventTooLargeError):
        decoder.feed(b"data: b\n\n")


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "10", None])
def test_max_event_bytes_must_be_a_positive_int(bad: Any) -> None:
    with pytest.raises(ConfigurationError):
        SSEDecoder(max_event_bytes=bad)


def test_max_event_bytes_property_and_default() -> None:
    assert SSEDecoder().max_event_bytes == 16 * 1024 * 1024
    assert SSEDecoder(max_event_bytes=5).max_event_bytes == 5


# -- end() ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"data: x",  # unterminated data line
        b"data",  # bare "data" field, unterminated
        b"data:",
        b"data: x\n",  # data buffer non-empty, no blank line
        b"data: x\r",
        b"data: x\r\n",
        b"data\n",  # buffer "\n": non-empty
        b"data: a\n\ndata: b\n",
        b"event: e\ndata: x\nid: 1",
        b"data: x\n: comment",
        b"id: 1\ndata",
    ],
)
def test_end_reports_a_pending_event(body: bytes) -> None:
    for i in range(len(body) + 1):
        assert run([body[:i], body[i:]])[1] is TruncatedStreamError
    decoder = SSEDecoder()
    decoder.feed(body)
    with pytest.raises(TruncatedStreamError, match="ended in the middle of an event"):
        decoder.end()
    with pytest.raises(TruncatedStreamError):  # end() again repeats the outcome
        decoder.end()


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"event: x",  # unterminated non-data lines are dropped
        b"id: 5",
        b"retry: 10",
        b": comment",
        b"datax",  # field "datax", not "data"
        b"data x",  # field "data x"
        b"Data: x",
        b"event: x\n",  # terminated, but the data buffer is empty
        b"id: 5\nretry: 3\n: c\n",
        b"data: a\n\nevent: b",
        b"data: a\n\n\n\n",
        b"\xef\xbb",
    ],
)
def test_end_drops_pending_lines_without_data(body: bytes) -> None:
    for i in range(len(body) + 1):
        assert run([body[:i], body[i:]])[1] is None
    decoder = SSEDecoder()
    decoder.feed(body)
    assert decoder.end() == []
    assert decoder.end() == []


def test_unterminated_id_and_retry_are_not_applied() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"id: 1\n\nid: 2")
    assert decoder.end() == []
    assert decoder.last_event_id == "1"
    decoder = SSEDecoder()
    decoder.feed(b"retry: 9")
    assert decoder.end() == []
    assert decoder.retry is None


def test_feed_after_end_is_a_configuration_error() -> None:
    decoder = SSEDecoder()
    assert decoder.end() == []
    with pytest.raises(ConfigurationError, match=r"feed\(\) after end\(\)"):
        decoder.feed(b"data: x\n\n")
    with pytest.raises(ConfigurationError):
        decoder.feed(b"")
    assert decoder.end() == []


# -- API details --------------------------------------------------------------------------


def test_server_sent_event_defaults_and_immutability() -> None:
    event = ServerSentEvent()
    assert (event.event, event.data, event.id, event.retry) == ("message", "", "", None)
    with pytest.raises(AttributeError):
        event.data = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        ServerSentEvent("message")  # type: ignore[call-arg]  # keyword-only
    assert not gc.is_tracked(ServerSentEvent(data="x"))
    assert ServerSentEvent(data="x") == ServerSentEvent(event="message", data="x")


def test_feed_accepts_bytes_like_and_rejects_str() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(bytearray(b"data: a\n\n")) == [ServerSentEvent(data="a")]
    assert decoder.feed(memoryview(b"data: b\n\n")) == [ServerSentEvent(data="b")]
    with pytest.raises(ConfigurationError):
        decoder.feed("data: c\n\n")  # type: ignore[arg-type]


def test_bytes_fed_counts_every_byte() -> None:
    decoder = SSEDecoder()
    for chunk in (BOM, b"data: x\r", b"\n", b"", b"\r\n"):
        decoder.feed(chunk)
    assert decoder.bytes_fed == 3 + 8 + 1 + 0 + 2


def test_events_are_returned_in_order_from_one_chunk() -> None:
    body = b"".join(b"data: %d\n\n" % i for i in range(1000))
    events, error = run([body])
    assert error is None
    assert [e.data for e in events] == [str(i) for i in range(1000)]


def test_two_megabyte_event_in_64_byte_pieces_equals_whole() -> None:
    # Correctness only; the cost (linear, no rescanning) is measured in bench/bench_sse.py.
    payload = ("0123456789abcdef" * 131_072)[:2_000_000]
    body = b"event: big\ndata: " + payload.encode() + b"\n\n"
    whole = run([body])
    assert whole == ([ServerSentEvent(event="big", data=payload)], None)
    assert run([body[i : i + 64] for i in range(0, len(body), 64)]) == whole
    assert run([body[i : i + 1000] for i in range(0, len(body), 1000)]) == whole


RECORDED = sorted(FIXTURES.glob("*/*.sse"))


@pytest.mark.parametrize("path", RECORDED, ids=[f"{p.parent.name}/{p.name}" for p in RECORDED])
def test_recorded_provider_streams_decode_the_same_however_split(path: Path) -> None:
    body = path.read_bytes()
    events, error = run([body])
    assert error is None
    assert events
    for size in (1, 7, 64, 1000):
        assert run([body[i : i + size] for i in range(0, len(body), size)]) == (events, None)


# -- properties ---------------------------------------------------------------------------

line_text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\r\n"))
event_names = st.one_of(st.none(), line_text)
ids = st.one_of(st.none(), line_text.filter(lambda s: "\0" not in s))
datas = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\r"))
retries = st.one_of(st.none(), st.integers(min_value=0, max_value=10**12))
comments = st.lists(line_text, max_size=2)
spec_events = st.lists(st.tuples(event_names, datas, ids, retries, comments), max_size=8)


@st.composite
def serialised_streams(draw: st.DrawFn) -> tuple[bytes, list[ServerSentEvent]]:
    """Random events written as an event stream, with the events a reader must see."""
    lines: list[str] = []
    expected: list[ServerSentEvent] = []
    current_id = ""
    for name, data, id_, retry, notes in draw(spec_events):
        fields: list[str] = [":" + c for c in notes]
        if name is not None:
            fields.append("event: " + name)
        if id_ is not None:
            if id_ == "" and draw(st.booleans()):
                fields.append("id")
            elif not id_.startswith(" ") and draw(st.booleans()):
                fields.append("id:" + id_)
            else:
                fields.append("id: " + id_)
            current_id = id_
        if retry is not None:
            fields.append(f"retry: {retry}")
        block: list[str] = []
        for value in data.split("\n"):
            if value == "" and draw(st.booleans()):
                block.append("data")
            elif not value.startswith(" ") and draw(st.booleans()):
                block.append("data:" + value)
            else:
                block.append("data: " + value)
        # Other fields may sit anywhere in the block; data lines keep their order.
        rng = draw(st.randoms())
        for field in fields:
            block.insert(rng.randint(0, len(block)), field)
        lines += [*block, ""]
        expected.append(
            ServerSentEvent(event=name or "message", data=data, id=current_id, retry=retry)
        )
    out: list[str] = []
    previous_end = ""
    for line in lines:
        choices = ["\n", "\r", "\r\n"]
        if line == "" and previous_end == "\r":
            choices = ["\r", "\r\n"]  # "\r" + "\n" would be one CRLF, not two breaks
        end = draw(st.sampled_from(choices))
        out.append(line + end)
        previous_end = end
    body = "".join(out).encode()
    if draw(st.booleans()):
        body = BOM + body
    return body, expected


@st.composite
def cuts(draw: st.DrawFn, data: bytes) -> list[bytes]:
    offsets = draw(st.lists(st.integers(min_value=0, max_value=len(data)), max_size=12))
    return split_at(data, offsets)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(stream=serialised_streams(), data=st.data())
def test_serialised_events_come_back_however_split(
    stream: tuple[bytes, list[ServerSentEvent]], data: st.DataObject
) -> None:
    body, expected = stream
    assert run([body]) == (expected, None)
    assert run(data.draw(cuts(body))) == (expected, None)


def test_id_field_in_a_serialised_block_applies_to_its_own_event() -> None:
    # The generator above assumes "id" applies to the event of the same block even
    # when it comes after the data lines; pin that down directly.
    assert run([b"data: a\nid: 7\n\n"]) == ([ServerSentEvent(data="a", id="7")], None)


# A small, independent reading of the WHATWG algorithm on bytes, with modelwire's two
# deviations, for comparison on arbitrary input. It splits with a regex and processes
# one line at a time, sharing no code with the decoder.
_BREAK = re.compile(rb"\r\n|\r|\n")


def oracle(stream: bytes, limit: int) -> tuple[Outcome, str, int | None]:
    if stream.startswith(BOM):
        stream = stream[3:]
    *lines, partial = _BREAK.split(stream)
    events: list[ServerSentEvent] = []
    data: list[bytes] = []
    event_type = ""
    id_buffer = ""
    last_id = ""
    retry: int | None = None
    block_retry: int | None = None
    size = 0

    def result(error: type[ModelwireError] | None) -> tuple[Outcome, str, int | None]:
        return (events, error), last_id, retry

    for line in lines:
        if line == b"":
            last_id = id_buffer
            if data:
                try:
                    text = b"\n".join(data).decode("utf-8")
                except UnicodeDecodeError:
                    return result(MalformedChunkError)
                events.append(
                    ServerSentEvent(
                        event=event_type or "message", data=text, id=id_buffer, retry=block_retry
                    )
                )
            data, event_type, block_retry, size = [], "", None, 0
            continue
        size += len(line)
        if size > limit:
            return result(EventTooLargeError)
        name, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            data.append(value)  # validated when the event is dispatched
            continue
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            return result(MalformedChunkError)
        if not colon or name:  # a comment has an empty name and a colon
            if name == b"event":
                event_type = value.decode()
            elif name == b"id" and b"\0" not in value:
                id_buffer = value.decode()
            elif name == b"retry" and value and all(48 <= c <= 57 for c in value):
                try:
                    retry = block_retry = int(value)
                except ValueError:
                    pass
    if size + len(partial) > limit:
        return result(EventTooLargeError)
    if data or partial == b"data" or partial.startswith(b"data:"):
        return result(TruncatedStreamError)
    return result(None)


soup_atoms = st.sampled_from(
    [
        b"data",
        b"data:",
        b"data: ",
        b"event:",
        b"id:",
        b"id",
        b"retry:",
        b":",
        b" ",
        b"\n",
        b"\r",
        b"\r\n",
        b"\n\n",
        b"x",
        b"1",
        b"\x00",
        BOM,
        b"\xef",
        b"\xbb",
        b"\xbf",
        b"\xc3",
        b"\xa9",
        b"\xe2\x80\xa6",
        b"\xf0\x9f\x99\x82",
        b"\xff",
        b"\x80",
        b"\xed\xa0\x80",
    ]
)
byte_soup = st.one_of(
    st.binary(max_size=200),
    st.lists(st.one_of(soup_atoms, st.binary(max_size=3)), max_size=60).map(b"".join),
)
limits = st.sampled_from([1, 3, 8, 20, 64, 16 * 1024 * 1024])


@settings(max_examples=1000, suppress_health_check=[HealthCheck.too_slow])
@given(soup=byte_soup, limit=limits, data=st.data())
@example(soup=b"\xef\xbb", limit=1, data=None)  # a partial BOM left at the end
@example(soup=b"data: a\r\n\r\ndata: \xff\n\n", limit=64, data=None)
@example(soup=b"data: a\n\nxxxxxxxx", limit=3, data=None)
def test_byte_soup_whole_split_and_oracle_agree(
    soup: bytes, limit: int, data: st.DataObject | None
) -> None:
    whole = SSEDecoder(max_event_bytes=limit)
    outcome = run_decoder(whole, [soup])
    assert outcome[1] in (None, MalformedChunkError, EventTooLargeError, TruncatedStreamError)
    expected, last_id, retry = oracle(soup, limit)
    assert outcome == expected
    if outcome[1] is None:
        assert (whole.last_event_id, whole.retry) == (last_id, retry)
    pieces = [soup[i : i + 1] for i in range(len(soup))] if data is None else data.draw(cuts(soup))
    split = SSEDecoder(max_event_bytes=limit)
    assert run_decoder(split, pieces) == outcome
    if outcome[1] is None:
        assert (split.last_event_id, split.retry) == (last_id, retry)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(soup=byte_soup, data=st.data())
def test_byte_soup_never_raises_anything_but_modelwire_errors(
    soup: bytes, data: st.DataObject
) -> None:
    decoder = SSEDecoder(max_event_bytes=data.draw(limits))
    try:
        for piece in data.draw(cuts(soup)):
            decoder.feed(piece)
        decoder.end()
    except ModelwireError:
        pass
    # Poisoned or ended, the decoder keeps answering with modelwire errors only.
    with pytest.raises(ModelwireError):
        decoder.feed(b"data: x\n\n")
