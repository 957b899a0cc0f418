"""Tests of the framing layer (``modelwire._wire.framing``): the ``Framing`` protocol and NDJSON.

Every decoder is fed whole, byte by byte, split in two at every offset and at random
(Hypothesis); byte soup gives the same outcome however it is cut, matches a small
independent oracle, and raises only ``ModelwireError`` subclasses. The AWS event stream has
its own file, tests/test_eventstream.py.
"""

from __future__ import annotations

import inspect
import itertools
import json
import sys
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import modelwire._wire.framing as framing
from modelwire._wire.framing import EventStreamDecoder, Framing, NDJSONDecoder, encode_event
from modelwire._wire.sse import DEFAULT_MAX_EVENT_BYTES, Frame, SSEDecoder, SSEFraming
from modelwire.errors import (
    ConfigurationError,
    EventTooLargeError,
    MalformedChunkError,
    ModelwireError,
    TruncatedStreamError,
)

DATA = Path(__file__).resolve().parent / "data" / "framing"
OLLAMA = (DATA / "ollama-chat.ndjson").read_bytes()

Outcome = tuple[list[Frame], type[ModelwireError] | None]


def run(chunks: Iterable[bytes], **kwargs: Any) -> Outcome:
    """Feed ``chunks`` to a new NDJSONDecoder, then ``end()``; frames and error class."""
    return run_decoder(NDJSONDecoder(**kwargs), chunks)


def run_decoder(decoder: Framing, chunks: Iterable[bytes]) -> Outcome:
    frames: list[Frame] = []
    try:
        for chunk in chunks:
            frames += decoder.feed(chunk)
        frames += decoder.end()
    except ModelwireError as exc:
        return frames, type(exc)
    return frames, None


def split_at(data: bytes, offsets: Iterable[int]) -> list[bytes]:
    cuts = [0, *sorted(set(offsets)), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(cuts)]


def frames_of(*lines: str) -> list[Frame]:
    return [Frame("message", line.encode()) for line in lines]


# -- the Framing protocol -------------------------------------------------------------


def resolve(cls: type[Any], hint: Any) -> Any:
    """``hint`` with the TypeVars of ``cls``'s generic bases replaced by their arguments."""
    bindings: dict[Any, Any] = {}
    for klass in cls.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            origin = typing.get_origin(base)
            params = getattr(origin, "__parameters__", ())
            bindings.update(zip(params, typing.get_args(base), strict=False))
    if typing.get_origin(hint) is not list:
        return hint
    (item,) = typing.get_args(hint)
    while item in bindings:  # a TypeVar bound to another class's TypeVar, and so on
        item = bindings[item]
    return types.GenericAlias(list, (item,))


@pytest.mark.parametrize("cls", [SSEFraming, NDJSONDecoder, EventStreamDecoder])
def test_every_decoder_is_a_framing_with_the_protocols_signatures(cls: type[Any]) -> None:
    assert isinstance(cls(), Framing)
    # runtime_checkable only checks that the names exist: compare the signatures too.
    for name in ("feed", "end"):
        want = typing.get_type_hints(getattr(Framing, name))
        got = {k: resolve(cls, v) for k, v in typing.get_type_hints(getattr(cls, name)).items()}
        assert got == want, (cls.__name__, name)
        want_params = list(inspect.signature(getattr(Framing, name)).parameters)
        assert list(inspect.signature(getattr(cls, name)).parameters) == want_params
    for name in ("bytes_fed", "max_event_bytes"):
        prop = getattr(cls, name)
        assert isinstance(prop, property), (cls.__name__, name)
        assert prop.fget is not None
        assert typing.get_type_hints(prop.fget)["return"] is int
    assert cls(max_event_bytes=5).max_event_bytes == 5
    assert cls().max_event_bytes == DEFAULT_MAX_EVENT_BYTES


def test_objects_missing_a_member_are_not_framings() -> None:
    class NoEnd:
        bytes_fed = 0
        max_event_bytes = 1

        def feed(self, data: bytes) -> list[Frame]:
            return []

    assert not isinstance(NoEnd(), Framing)


def test_one_consumer_drives_every_framing_and_gets_the_same_frames() -> None:
    """The seam the pipeline uses: any Framing in, Frames (payload bytes) out."""
    payloads = ['{"a": 1}', '{"b": "ü"}']

    def drain(decoder: Framing, body: bytes) -> list[tuple[str, str]]:
        out: list[Frame] = []
        for i in range(0, len(body), 3):
            out += decoder.feed(body[i : i + 3])
        out += decoder.end()
        assert decoder.bytes_fed == len(body)
        assert all(type(f) is Frame and type(f.data) is bytes for f in out)
        return [(f.event, f.data.decode()) for f in out]

    sse = "".join(f"event: delta\ndata: {p}\n\n" for p in payloads).encode()
    ndjson = "".join(p + "\n" for p in payloads).encode()
    aws = b"".join(encode_event("delta", p.encode()) for p in payloads)
    assert drain(SSEFraming(), sse) == [("delta", p) for p in payloads]
    # The public SSEDecoder keeps yielding Frames (text), event for event.
    assert [(e.event, e.data) for e in SSEDecoder().feed(sse)] == [("delta", p) for p in payloads]
    assert drain(NDJSONDecoder(), ndjson) == [("message", p) for p in payloads]
    assert drain(EventStreamDecoder(), aws) == [("delta", p) for p in payloads]


def test_package_exports_are_curated_and_resolve() -> None:
    assert framing.__all__ == sorted(framing.__all__)
    assert len(set(framing.__all__)) == len(framing.__all__)
    for name in framing.__all__:
        assert getattr(framing, name) is not None
    public = {n for n in vars(framing) if n.isidentifier() and not n.startswith("_")}
    modules = {"annotations", "eventstream", "ndjson", "TYPE_CHECKING", "Protocol"}
    modules |= {"runtime_checkable"}
    assert public - modules == set(framing.__all__)


# -- NDJSON: the recorded-shape Ollama stream -----------------------------------------

OLLAMA_LINES = OLLAMA.decode().split("\n")[:-1]
OLLAMA_FRAMES = frames_of(*OLLAMA_LINES)


def test_ollama_stream_whole() -> None:
    frames, error = run([OLLAMA])
    assert error is None
    assert frames == OLLAMA_FRAMES
    values = [json.loads(f.data) for f in frames]  # bytes, as msgspec reads them
    assert values[-1]["done"] is True
    assert "".join(v["message"]["content"] for v in values).startswith("Hello! Here is a naïve")
    assert values[-2]["message"]["tool_calls"][0]["function"]["name"] == "read_file"


def test_ollama_stream_byte_by_byte() -> None:
    assert run([OLLAMA[i : i + 1] for i in range(len(OLLAMA))]) == (OLLAMA_FRAMES, None)


def test_ollama_stream_split_in_two_at_every_offset() -> None:
    for i in range(len(OLLAMA) + 1):
        assert run([OLLAMA[:i], OLLAMA[i:]]) == (OLLAMA_FRAMES, None), i


def test_ollama_stream_with_crlf_split_at_every_offset() -> None:
    body = OLLAMA.replace(b"\n", b"\r\n")
    for i in range(len(body) + 1):
        assert run([body[:i], body[i:]]) == (OLLAMA_FRAMES, None), i


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(offsets=st.lists(st.integers(min_value=0, max_value=len(OLLAMA)), max_size=30))
def test_ollama_stream_split_at_random(offsets: list[int]) -> None:
    assert run(split_at(OLLAMA, offsets)) == (OLLAMA_FRAMES, None)


# -- NDJSON: lines, blank lines, CRLF ---------------------------------------------------


def test_crlf_is_tolerated_and_only_the_final_cr_is_removed() -> None:
    body = b'{"a":1}\r\n{"b":"x\r"}\n{"c":\r2}\r\n'
    assert run([body]) == (frames_of('{"a":1}', '{"b":"x\r"}', '{"c":\r2}'), None)


def test_cr_and_lf_split_across_chunks() -> None:
    decoder = NDJSONDecoder()
    assert decoder.feed(b'{"a":1}\r') == []
    assert decoder.feed(b"\n") == frames_of('{"a":1}')
    assert decoder.feed(b"\r") == []
    assert decoder.feed(b"\n") == []  # a blank CRLF line
    assert decoder.end() == []


@pytest.mark.parametrize("blank", [b"\n", b"\r\n", b"  \n", b"\t \r\n", b" \r \n"])
def test_blank_and_whitespace_only_lines_are_ignored(blank: bytes) -> None:
    body = blank + b"1\n" + blank * 3 + b"2\n" + blank
    assert run([body]) == (frames_of("1", "2"), None)
    assert run([body[i : i + 1] for i in range(len(body))]) == (frames_of("1", "2"), None)


def test_leading_and_inner_whitespace_is_kept_for_the_json_parser() -> None:
    assert run([b'  {"a": 1} \n']) == (frames_of('  {"a": 1} '), None)


def test_line_content_is_not_parsed_here() -> None:
    # Not JSON: the wire API's decode() reports it with its own field-path error.
    assert run([b"not json\n[1,\n"]) == (frames_of("not json", "[1,"), None)


def test_a_bom_is_not_stripped() -> None:
    assert run([b'\xef\xbb\xbf{"a":1}\n']) == (frames_of('\ufeff{"a":1}'), None)


def test_an_empty_body_is_a_complete_stream() -> None:
    assert run([]) == ([], None)
    assert run([b"", b""]) == ([], None)


# -- NDJSON: truncation -----------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [b'{"done":true}', b'{"a":1}\n{"done":true}', b'{"a":1}\n{"do', b"x", b'{"a":1}\n\r\n  {'],
)
def test_unterminated_last_line_is_a_truncation_even_if_it_is_complete_json(body: bytes) -> None:
    complete = [f.data for f in run([body + b"\n"])[0]]
    decoder = NDJSONDecoder()
    frames = decoder.feed(body)
    assert [f.data for f in frames] == complete[:-1]
    with pytest.raises(TruncatedStreamError, match="no line break") as info:
        decoder.end()
    start = body.rfind(b"\n") + 1
    assert f"the last {len(body) - start} bytes (from byte offset {start})" in str(info.value)
    # end() again repeats the outcome.
    with pytest.raises(TruncatedStreamError):
        decoder.end()


@pytest.mark.parametrize("tail", [b" ", b"\r", b" \t\r"])
def test_unterminated_whitespace_only_tail_is_dropped(tail: bytes) -> None:
    assert run([b"1\n" + tail]) == (frames_of("1"), None)


# -- NDJSON: UTF-8 ------------------------------------------------------------------------


def test_multibyte_characters_split_at_every_offset() -> None:
    body = '{"t":"é中🙂"}\n'.encode()
    for i in range(len(body) + 1):
        assert run([body[:i], body[i:]]) == (frames_of('{"t":"é中🙂"}'), None)


@pytest.mark.parametrize("limit", [DEFAULT_MAX_EVENT_BYTES, 12])  # fast path, line path
def test_invalid_utf8_is_typed_with_its_byte_offset(limit: int) -> None:
    body = b'{"a":1}\n{"b":"\xff"}\n{"c":3}\n'
    decoder = NDJSONDecoder(max_event_bytes=limit)
    assert decoder.feed(body) == frames_of('{"a":1}')  # the good line before it
    with pytest.raises(MalformedChunkError) as info:
        decoder.end()
    message = str(info.value)
    assert "byte offset 14 of the stream" in message
    assert "line starting at byte offset 8" in message
    assert "(byte(s) ff)" in message


def test_invalid_utf8_alone_raises_at_once_and_never_becomes_u_fffd() -> None:
    decoder = NDJSONDecoder()
    with pytest.raises(MalformedChunkError, match="byte offset 1 "):
        decoder.feed(b'"\xc3("\n')


def test_utf8_sequence_cut_by_the_end_of_a_line_is_invalid() -> None:
    # "é" is c3 a9; a line ending after c3 is invalid however the chunks fall.
    body = b'"\xc3\n\xa9"\n'
    for i in range(len(body) + 1):
        assert run([body[:i], body[i:]]) == ([], MalformedChunkError)


# -- NDJSON: size limit -------------------------------------------------------------------


def test_line_exactly_at_the_limit_passes_one_byte_more_fails() -> None:
    line = b"x" * 100
    assert run([line + b"\n"], max_event_bytes=100) == (frames_of("x" * 100), None)
    assert run([line + b"\r\n"], max_event_bytes=100) == (frames_of("x" * 100), None)
    assert run([line + b"x\n"], max_event_bytes=100) == ([], EventTooLargeError)
    assert run([line + b"x\r\n"], max_event_bytes=100) == ([], EventTooLargeError)


def test_a_long_pending_line_raises_as_soon_as_it_exceeds_the_limit() -> None:
    decoder = NDJSONDecoder(max_event_bytes=10)
    assert decoder.feed(b"0123456789") == []  # 10 bytes: still fine
    with pytest.raises(EventTooLargeError, match="starting at byte offset 0 has at least 11"):
        decoder.feed(b"a")  # 11 bytes and no LF yet: known to be too large
    with pytest.raises(EventTooLargeError):
        decoder.feed(b"\n")  # poisoned


def test_a_pending_cr_at_the_limit_waits_for_its_lf() -> None:
    decoder = NDJSONDecoder(max_event_bytes=10)
    assert decoder.feed(b"0123456789\r") == []  # may be a CRLF: not over yet
    assert decoder.feed(b"\n") == frames_of("0123456789")
    decoder = NDJSONDecoder(max_event_bytes=10)
    assert decoder.feed(b"0123456789\r") == []
    with pytest.raises(EventTooLargeError):
        decoder.feed(b"x")  # the CR was inside the line: 12 bytes


def test_limit_is_per_line_and_good_lines_before_a_large_one_are_returned() -> None:
    decoder = NDJSONDecoder(max_event_bytes=10)
    body = b"0123456789\n" * 3 + b"0123456789a\n1\n"
    assert decoder.feed(body) == frames_of(*["0123456789"] * 3)
    with pytest.raises(EventTooLargeError, match="byte offset 33 has 11 bytes"):
        decoder.end()


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10", True, None])
def test_max_event_bytes_must_be_a_positive_int(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="max_event_bytes must be a positive int"):
        NDJSONDecoder(max_event_bytes=bad)


# -- NDJSON: the caller's side --------------------------------------------------------------


def test_feed_after_end_is_a_configuration_error() -> None:
    decoder = NDJSONDecoder()
    decoder.feed(b"1\n")
    decoder.end()
    with pytest.raises(ConfigurationError, match=r"feed\(\) after end\(\)"):
        decoder.feed(b"2\n")


def test_feed_accepts_bytes_like_and_rejects_str() -> None:
    decoder = NDJSONDecoder()
    assert decoder.feed(bytearray(b"1\n")) == frames_of("1")
    assert decoder.feed(memoryview(b"2\n")) == frames_of("2")
    with pytest.raises(ConfigurationError, match="takes bytes, got str"):
        decoder.feed("3\n")  # type: ignore[arg-type]


def test_bytes_fed_counts_every_byte() -> None:
    decoder = NDJSONDecoder()
    decoder.feed(b"1\r\n\n  ")
    decoder.feed(bytearray(b"2"))
    assert decoder.bytes_fed == 7


def test_decoder_is_poisoned_after_an_error() -> None:
    decoder = NDJSONDecoder()
    assert decoder.feed(b"1\n\xff\n") == frames_of("1")
    with pytest.raises(MalformedChunkError) as first:
        decoder.feed(b"2\n")
    with pytest.raises(MalformedChunkError) as second:
        decoder.feed(b"3\n")
    assert second.value.__cause__ is first.value
    with pytest.raises(MalformedChunkError):
        decoder.end()


# -- NDJSON: linear cost (structural, no timing) --------------------------------------------


def c_work(fn: Callable[[], object]) -> tuple[int, int]:
    """(C calls made by ``fn``, calls of ``join``) — counted with ``sys.setprofile``.

    A decoder that re-joined or re-scanned its pending bytes on every piece would make
    a join (or scan) per piece, and its cost would grow with the square of the input.
    """
    calls = 0
    joins = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal calls, joins
        if event == "c_call":
            calls += 1
            if getattr(arg, "__name__", "") == "join":
                joins += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls, joins


def feed_pieces(decoder: Framing, body: bytes, size: int) -> Callable[[], object]:
    def go() -> None:
        for i in range(0, len(body), size):
            decoder.feed(body[i : i + size])
        decoder.end()

    return go


def test_one_long_line_in_one_byte_pieces_is_joined_once() -> None:
    joins_seen = set()
    for n in (2_000, 20_000):
        body = b'"' + b"x" * n + b'"\n'
        decoder = NDJSONDecoder()
        calls, joins = c_work(feed_pieces(decoder, body, 1))
        joins_seen.add(joins)
        assert calls <= 6 * len(body)  # a fixed number of C calls per piece
    # Joined when the LF arrives (and end() joins the empty rest), never while it grows.
    assert joins_seen == {2}


def test_ten_times_the_input_is_ten_times_the_work() -> None:
    small = OLLAMA * 10
    large = OLLAMA * 100
    for size in (1, 7, 1024):
        work_small, _ = c_work(feed_pieces(NDJSONDecoder(), small, size))
        work_large, _ = c_work(feed_pieces(NDJSONDecoder(), large, size))
        assert work_large <= 11 * work_small, size


# -- NDJSON: properties -------------------------------------------------------------------

line_text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\n"))
content_lines = line_text.filter(lambda s: s.strip(" \t\r") != "" and not s.endswith("\r"))
blank_lines = st.sampled_from(["", " ", "\t", "\r", " \r"])


@st.composite
def ndjson_streams(draw: st.DrawFn) -> tuple[bytes, list[Frame]]:
    """Random non-blank lines with LF or CRLF ends and blank lines between them."""
    out: list[str] = []
    expected: list[Frame] = []
    for line in draw(st.lists(content_lines, max_size=10)):
        out += [blank + "\n" for blank in draw(st.lists(blank_lines, max_size=2))]
        out.append(line + draw(st.sampled_from(["\n", "\r\n"])))
        expected.append(Frame("message", line.encode()))
    return "".join(out).encode(), expected


@st.composite
def cuts(draw: st.DrawFn, data: bytes) -> list[bytes]:
    offsets = draw(st.lists(st.integers(min_value=0, max_value=len(data)), max_size=12))
    return split_at(data, offsets)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(stream=ndjson_streams(), data=st.data())
def test_random_lines_come_back_however_split(
    stream: tuple[bytes, list[Frame]], data: st.DataObject
) -> None:
    body, expected = stream
    assert run([body]) == (expected, None)
    assert run(data.draw(cuts(body))) == (expected, None)
    assert run([body[i : i + 1] for i in range(len(body))]) == (expected, None)


def oracle(soup: bytes, limit: int) -> Outcome:
    """NDJSON as specified above, written the obvious (quadratic-free but naive) way."""
    frames: list[Frame] = []
    *lines, last = soup.split(b"\n")
    for raw in lines:
        raw = raw.removesuffix(b"\r")
        if len(raw) > limit:
            return frames, EventTooLargeError
        if not raw.strip(b" \t\r"):
            continue
        try:
            raw.decode("utf-8")
            frames.append(Frame("message", raw))
        except UnicodeDecodeError:
            return frames, MalformedChunkError
    if len(last.removesuffix(b"\r")) > limit:
        return frames, EventTooLargeError
    if last.strip(b" \t\r"):
        return frames, TruncatedStreamError
    return frames, None


byte_soup = st.lists(
    st.sampled_from([b"\n", b"\r", b" ", b"\t", b"{", b"}", b"a", b"\xc3", b"\xa9", b"\xff"]),
    max_size=40,
).map(b"".join) | st.binary(max_size=40)
limits = st.sampled_from([1, 3, 8, DEFAULT_MAX_EVENT_BYTES])


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(soup=byte_soup, limit=limits, data=st.data())
@example(soup=b"abc\r", limit=3, data=None)
@example(soup=b"ab\r\nabcd\n", limit=3, data=None)
@example(soup=b"\xc3\n\xa9\n", limit=8, data=None)
def test_byte_soup_whole_split_and_oracle_agree(
    soup: bytes, limit: int, data: st.DataObject | None
) -> None:
    outcome = run([soup], max_event_bytes=limit)
    assert outcome == oracle(soup, limit)
    pieces = [soup[i : i + 1] for i in range(len(soup))] if data is None else data.draw(cuts(soup))
    assert run(pieces, max_event_bytes=limit) == outcome


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(soup=byte_soup, data=st.data())
def test_byte_soup_never_raises_anything_but_modelwire_errors(
    soup: bytes, data: st.DataObject
) -> None:
    decoder = NDJSONDecoder(max_event_bytes=data.draw(limits))
    try:
        for piece in data.draw(cuts(soup)):
            decoder.feed(piece)
        decoder.end()
    except ModelwireError:
        pass
    # Poisoned or ended, the decoder keeps answering with modelwire errors only.
    with pytest.raises(ModelwireError):
        decoder.feed(b"1\n")


# -- SSE: the pipeline's framing is the public decoder, as bytes -------------------------

sse_soup = st.lists(
    st.sampled_from([b"data: ", b"data:", b"event: x\n", b"id: 7\n", b": c\n", b"retry: 5\n",
                     b"\n", b"\r\n", b"\r", b"{\"a\":1}", b"\xc3\xa9", b"\xff", b"[DONE]"]),
    max_size=30,
).map(b"".join)  # fmt: skip


def sse_outcome(decoder: SSEDecoder, pieces: list[bytes]) -> tuple[list[tuple[str, bytes]], str]:
    out: list[tuple[str, bytes]] = []
    try:
        for piece in pieces:
            for ev in decoder.feed(piece):
                data = ev.data if isinstance(ev, Frame) else ev.data.encode()
                out.append((ev.event, data))
        decoder.end()
    except ModelwireError as exc:
        return out, f"{type(exc).__name__}: {exc.message}"
    return out, ""


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(soup=sse_soup, limit=limits, data=st.data())
def test_sse_framing_gives_the_public_decoders_events_as_frames(
    soup: bytes, limit: int, data: st.DataObject
) -> None:
    pieces = data.draw(cuts(soup))
    want = sse_outcome(SSEDecoder(max_event_bytes=limit), pieces)
    framing = SSEFraming(max_event_bytes=limit)
    assert sse_outcome(framing, pieces) == want  # same payloads, same errors, same words


# Reads of many whole blocks (what a network read of a fast stream holds) take
# SSEFraming's run path; the soup mixes such blocks with every other kind of line so
# that a run stops anywhere: a comment, an ``id``, a multi-line event, CR, bad UTF-8.
_DATA_BLOCKS = [b'data: {"a":1}\n\n', b'data: {"b":"\xc3\xa9"}\n\n', b"data: \n\n"]
_EVENT_BLOCKS = [b"event: x\ndata: {}\n\n", b"event: y\ndata: [1]\n\n",
                 b"event: \ndata: {}\n\n", b"event: \xc3\xa9\ndata: {}\n\n"]  # fmt: skip
_OTHER_LINES = [b"event: x\ndata: \xc3\xa9\n\n", b"event: x\nid: 7\ndata: {}\n\n",
                b"data: a\ndata: b\n\n", b": c\n", b"id: 7\n", b"\n", b"\r\n",
                b"data: \xff\n\n", b"event: \xff\ndata: {}\n\n", b"event: x\ndata: \xff\n\n",
                b"data:", b"event: z", b"event: q\n\n", b"event: x\ndata: {}\nid: 1\n\n"]  # fmt: skip


def _soup(blocks: list[bytes]) -> st.SearchStrategy[bytes]:
    return st.tuples(
        st.sampled_from(blocks),
        st.lists(st.sampled_from(blocks * 8 + _OTHER_LINES), min_size=40, max_size=150),
    ).map(lambda t: t[0] + b"".join(t[1]))


block_soup = st.one_of(
    _soup(_DATA_BLOCKS), _soup(_EVENT_BLOCKS), _soup(_DATA_BLOCKS + _EVENT_BLOCKS)
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(soup=block_soup, limit=st.sampled_from([40, DEFAULT_MAX_EVENT_BYTES]), data=st.data())
def test_sse_framing_runs_of_whole_blocks_give_the_public_decoders_events(
    soup: bytes, limit: int, data: st.DataObject
) -> None:
    for pieces in ([soup], data.draw(cuts(soup)), [soup[:700], soup[700:]]):
        want = sse_outcome(SSEDecoder(max_event_bytes=limit), pieces)
        assert sse_outcome(SSEFraming(max_event_bytes=limit), pieces) == want


def test_sse_framing_run_of_blocks_in_one_read() -> None:
    body = b"".join(b'event: e%d\ndata: {"i":%d}\n\n' % (i % 3, i) for i in range(100))
    frames = SSEFraming().feed(body)
    assert [(f.event, f.data) for f in frames] == [
        (f"e{i % 3}", b'{"i":%d}' % i) for i in range(100)
    ]
    chat = b"".join(b'data: {"i":%d}\n\n' % i for i in range(100)) + b"data: {"
    framing = SSEFraming()
    assert [f.data for f in framing.feed(chat)] == [b'{"i":%d}' % i for i in range(100)]
    assert [f.data for f in framing.feed(b'"i":100}\n\n')] == [b'{"i":100}']
