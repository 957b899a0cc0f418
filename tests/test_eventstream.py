"""Tests of the AWS event stream framing (``modelwire._wire.framing.eventstream``).

Conformance: the AWS SDKs' published event stream test vectors
(tests/data/framing/aws-event-stream-vectors.json, from aws/aws-sdk-go, cited there), each
decoded whole, byte by byte and split in two at every offset, and re-encoded to the same
bytes. Against botocore's decoder (when botocore is installed; a test-only dependency) on
random messages. Properties (Hypothesis): random messages round-trip however the bytes are
split; every single-byte corruption is caught by a CRC; byte soup raises only
``ModelwireError`` subclasses and gives the same outcome whole and split.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import struct
import sys
import uuid
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelwire._wire.framing import (
    EventStreamDecoder,
    EventStreamMessage,
    EventStreamMessageDecoder,
    HeaderValue,
    Int8,
    Int16,
    Int32,
    Int64,
    Timestamp,
    decode_messages,
    encode_event,
    encode_exception,
    encode_message,
    eventstream,
)
from modelwire._wire.sse import DEFAULT_MAX_EVENT_BYTES, Frame
from modelwire.errors import (
    ConfigurationError,
    EventTooLargeError,
    MalformedChunkError,
    ModelwireError,
    TruncatedStreamError,
)

VECTORS = json.loads(
    (
        Path(__file__).resolve().parent / "data" / "framing" / "aws-event-stream-vectors.json"
    ).read_text(encoding="utf-8")
)
TYPES: dict[str, Callable[[Any], HeaderValue]] = {
    "Int8": Int8,
    "Int16": Int16,
    "Int32": Int32,
    "Int64": Int64,
    "Timestamp": Timestamp,
    "str": str,
    "bool": bool,
    "bytes": str.encode,
    "UUID": lambda h: uuid.UUID(hex=h),
}

Outcome = tuple[list[Any], type[ModelwireError] | None]


def wire_frame(*, event: str = "message", data: str) -> Frame:
    """A frame as the pipeline's framing hands it to a decoder: the payload as bytes."""
    return Frame(event, data.encode())


def run(
    decoder: EventStreamDecoder | EventStreamMessageDecoder, chunks: Iterable[bytes]
) -> Outcome:
    out: list[Any] = []
    try:
        for chunk in chunks:
            out += decoder.feed(chunk)
        out += decoder.end()
    except ModelwireError as exc:
        return out, type(exc)
    return out, None


def split_at(data: bytes, offsets: Iterable[int]) -> list[bytes]:
    cuts = [0, *sorted(set(offsets)), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(cuts)]


def frame_message(headers_bytes: bytes, payload: bytes = b"") -> bytes:
    """A message with raw (possibly invalid) header bytes and correct lengths and CRCs."""
    total = 16 + len(headers_bytes) + len(payload)
    prelude = struct.pack(">II", total, len(headers_bytes))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers_bytes + payload
    return body + struct.pack(">I", zlib.crc32(body))


def string_header(name: bytes, value: bytes) -> bytes:
    return bytes([len(name)]) + name + b"\x07" + len(value).to_bytes(2, "big") + value


def expected_message(vector: dict[str, Any]) -> EventStreamMessage:
    headers = {name: TYPES[kind](value) for name, kind, value in vector["headers"]}
    return EventStreamMessage(headers=headers, payload=vector["payload"].encode())


# -- the published vectors ----------------------------------------------------------------

POSITIVE = VECTORS["positive"]
NEGATIVE = VECTORS["negative"]


def test_all_vectors_are_loaded() -> None:
    names = {v["name"] for v in POSITIVE + NEGATIVE}
    assert names == {
        "empty_message", "int32_header", "payload_no_headers", "payload_one_str_header",
        "all_headers", "corrupted_header_len", "corrupted_headers", "corrupted_length",
        "corrupted_payload",
    }  # fmt: skip


@pytest.mark.parametrize("vector", POSITIVE, ids=[v["name"] for v in POSITIVE])
def test_positive_vector_whole_byte_by_byte_and_at_every_split(vector: dict[str, Any]) -> None:
    data = bytes.fromhex(vector["hex"])
    want = ([expected_message(vector)], None)
    assert run(EventStreamMessageDecoder(), [data]) == want
    assert run(EventStreamMessageDecoder(), [data[i : i + 1] for i in range(len(data))]) == want
    for i in range(len(data) + 1):
        assert run(EventStreamMessageDecoder(), [data[:i], data[i:]]) == want, i


@pytest.mark.parametrize("vector", POSITIVE, ids=[v["name"] for v in POSITIVE])
def test_positive_vector_header_types_and_exact_re_encoding(vector: dict[str, Any]) -> None:
    data = bytes.fromhex(vector["hex"])
    (message,) = decode_messages(data)
    # The types, not only the values: Int8(2) == Int32(2) as ints.
    assert [type(v).__name__ for v in message.headers.values()] == [
        "UUID" if kind == "UUID" else kind for _, kind, _ in vector["headers"]
    ]
    assert encode_message(message.headers, message.payload) == data


def test_all_positive_vectors_in_one_stream_with_their_offsets() -> None:
    parts = [bytes.fromhex(v["hex"]) for v in POSITIVE]
    stream = b"".join(parts)
    messages = decode_messages(stream)
    offsets = list(itertools.accumulate([0, *map(len, parts[:-1])]))
    assert [m.offset for m in messages] == offsets
    assert [m.headers for m in messages] == [expected_message(v).headers for v in POSITIVE]
    for size in (1, 5, 64):
        chunks = [stream[i : i + size] for i in range(0, len(stream), size)]
        assert run(EventStreamMessageDecoder(), chunks) == (messages, None)


@pytest.mark.parametrize("vector", NEGATIVE, ids=[v["name"] for v in NEGATIVE])
def test_negative_vector_names_the_crc_that_failed(vector: dict[str, Any]) -> None:
    data = bytes.fromhex(vector["hex"])
    for chunks in ([data], [data[i : i + 1] for i in range(len(data))]):
        decoder = EventStreamMessageDecoder()
        with pytest.raises(MalformedChunkError, match=vector["error"]) as info:
            for chunk in chunks:
                decoder.feed(chunk)
        assert "message #1 (at byte offset 0)" in str(info.value)


def test_every_single_byte_corruption_is_caught() -> None:
    # CRC-32 detects every error burst of up to 32 bits, so one changed byte anywhere (a
    # length, a header, the payload, a CRC itself) is always reported, never delivered.
    data = bytes.fromhex(POSITIVE[-1]["hex"])  # all_headers
    for i in range(len(data)):
        for flip in (0x01, 0x80, 0xFF):
            bad = data[:i] + bytes([data[i] ^ flip]) + data[i + 1 :]
            outcome = run(EventStreamMessageDecoder(), [bad])
            assert outcome == ([], MalformedChunkError), (i, flip)


@pytest.mark.parametrize("crc", ["zlib-ng", "stdlib"])
def test_the_crc_of_zlib_ng_and_of_the_stdlib_catch_the_same_corruptions(
    crc: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The framing takes zlib-ng's CRC-32 when installed (the bedrock extra), else the
    # stdlib's: the same function, so the same frames and the same errors. The table
    # of checked preludes is emptied, so that every prelude's CRC is computed.
    if crc == "stdlib":
        monkeypatch.setattr(eventstream, "_crc32", zlib.crc32)
    else:
        assert eventstream._crc32 is not zlib.crc32  # type: ignore[attr-defined]  # make test installs it
    monkeypatch.setattr(eventstream, "_PRELUDES", {})
    body, frames = bedrock_stream()
    for chunks in ([body], [body[i : i + 1] for i in range(len(body))]):
        assert run(EventStreamDecoder(), chunks) == (frames, None)
    data = bytes.fromhex(POSITIVE[-1]["hex"])
    for i in range(len(data)):
        bad = data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1 :]
        assert run(EventStreamMessageDecoder(), [bad]) == ([], MalformedChunkError), i


def test_a_prelude_checked_once_is_looked_up_then_still_held_to_each_limit() -> None:
    data = encode_event("x", b"{}")
    eventstream._PRELUDES.pop(data[:12], None)
    assert run(EventStreamDecoder(), [data * 3])[1] is None
    assert eventstream._PRELUDES[data[:12]] == (len(data), len(data) - 18)
    # The same prelude with one bit of its CRC flipped is another key: checked, refused.
    bad = data[:11] + bytes([data[11] ^ 1]) + data[12:]
    with pytest.raises(MalformedChunkError, match="prelude CRC mismatch"):
        EventStreamDecoder().feed(bad)
    assert run(EventStreamDecoder(max_event_bytes=len(data) - 1), [data]) == (
        [],
        EventTooLargeError,
    )


# -- the Framing decoder: message types ------------------------------------------------------


def bedrock_stream() -> tuple[bytes, list[Frame]]:
    """A ConverseStream-shaped body (synthetic), and the frames it must give."""
    events = [
        ("messageStart", {"role": "assistant"}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hello, naïve 🙂"}}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": " world"}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        (
            "contentBlockStart",
            {"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "t1", "name": "read"}}},
        ),
        ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '{"p'}}}),
        ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '":1}'}}}),
        ("contentBlockStop", {"contentBlockIndex": 1}),
        ("messageStop", {"stopReason": "tool_use"}),
        ("metadata", {"usage": {"inputTokens": 10, "outputTokens": 5}, "metrics": {}}),
    ]
    payloads = [json.dumps(p, ensure_ascii=False).encode() for _, p in events]
    body = b"".join(encode_event(name, p) for (name, _), p in zip(events, payloads, strict=True))
    frames = [
        wire_frame(event=name, data=p.decode())
        for (name, _), p in zip(events, payloads, strict=True)
    ]
    return body, frames


def test_bedrock_shaped_stream_whole_byte_by_byte_and_at_every_split() -> None:
    body, frames = bedrock_stream()
    assert run(EventStreamDecoder(), [body]) == (frames, None)
    assert run(EventStreamDecoder(), [body[i : i + 1] for i in range(len(body))]) == (frames, None)
    for i in range(len(body) + 1):
        assert run(EventStreamDecoder(), [body[:i], body[i:]]) == (frames, None), i


def test_encode_event_sends_bedrocks_headers() -> None:
    (message,) = decode_messages(encode_event("contentBlockDelta", b"{}"))
    assert list(message.headers.items()) == [
        (":event-type", "contentBlockDelta"),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ]
    (message,) = decode_messages(encode_exception("throttlingException", b'{"message":"x"}'))
    assert dict(message.headers) == {
        ":exception-type": "throttlingException",
        ":content-type": "application/json",
        ":message-type": "exception",
    }


def test_exception_and_error_messages_map_to_distinguishable_frames() -> None:
    body = encode_event("messageStart", b'{"role":"assistant"}') + encode_exception(
        "throttlingException", b'{"message":"Too many requests"}'
    )
    assert run(EventStreamDecoder(), [body]) == (
        [
            wire_frame(event="messageStart", data='{"role":"assistant"}'),
            wire_frame(
                event="exception:throttlingException", data='{"message":"Too many requests"}'
            ),
        ],
        None,
    )
    # botocore's ERROR_EVENT_MESSAGE shape: the message is in a header, the payload empty.
    error = encode_message(
        {":message-type": "error", ":error-code": "code", ":error-message": "message"}
    )
    assert run(EventStreamDecoder(), [error]) == (
        [wire_frame(event="error:code", data="message")],
        None,
    )
    no_text = encode_message({":message-type": "error", ":error-code": "E"}, b"details")
    assert run(EventStreamDecoder(), [no_text]) == (
        [wire_frame(event="error:E", data="details")],
        None,
    )


@pytest.mark.parametrize(
    ("headers", "match"),
    [
        ({}, "no :message-type header"),
        ({":message-type": "ping"}, ":message-type 'ping'; expected"),
        ({":message-type": Int32(1)}, ":message-type Int32"),
        ({":message-type": "event"}, "without a non-empty string :event-type"),
        ({":message-type": "event", ":event-type": ""}, ":event-type header"),
        ({":message-type": "event", ":event-type": b"x"}, ":event-type header"),
        ({":message-type": "exception"}, ":exception-type header"),
        ({":message-type": "error", ":error-message": "m"}, ":error-code header"),
    ],
)
def test_messages_that_cannot_be_classified_are_malformed(
    headers: dict[str, HeaderValue], match: str
) -> None:
    good = encode_event("messageStart", b"{}")
    decoder = EventStreamDecoder()
    # The good message before it is delivered; the error comes from the next call.
    assert decoder.feed(good + encode_message(headers, b"{}")) == [
        wire_frame(event="messageStart", data="{}")
    ]
    with pytest.raises(MalformedChunkError, match=match) as info:
        decoder.end()
    assert f"message #2 (at byte offset {len(good)})" in str(info.value)


def test_payload_that_is_not_utf8_is_malformed_with_its_offset() -> None:
    data = encode_event("contentBlockDelta", b'{"a":"\xff"}')
    with pytest.raises(MalformedChunkError, match=r"payload is not valid UTF-8.*\(byte\(s\) ff\)"):
        EventStreamDecoder().feed(data)
    # The typed layer passes payload bytes through untouched.
    assert decode_messages(data)[0].payload == b'{"a":"\xff"}'


# -- errors: prelude, size limit, headers, truncation ------------------------------------------


def test_prelude_crc_is_checked_before_the_lengths_are_trusted() -> None:
    huge = struct.pack(">II", 0xFFFFFFF0, 0) + b"\0\0\0\0"  # wrong CRC, absurd length
    with pytest.raises(MalformedChunkError, match="prelude CRC mismatch"):
        EventStreamDecoder(max_event_bytes=100).feed(huge)


def prelude(total: int, headers_len: int) -> bytes:
    head = struct.pack(">II", total, headers_len)
    return head + struct.pack(">I", zlib.crc32(head))


@pytest.mark.parametrize(
    ("total", "headers_len", "match"),
    [
        (15, 0, "total length 15, less than the 16 bytes"),
        (0, 0, "total length 0"),
        (20, 5, "headers length 5, which does not fit in its total length 20"),
    ],
)
def test_impossible_lengths_are_malformed(total: int, headers_len: int, match: str) -> None:
    with pytest.raises(MalformedChunkError, match=match):
        EventStreamDecoder().feed(prelude(total, headers_len) + b"\0" * 20)


def test_size_limit_is_checked_from_the_prelude_before_buffering() -> None:
    decoder = EventStreamDecoder(max_event_bytes=1000)
    # Only the 12-byte prelude of a 1 GiB message: raised at once, nothing else buffered.
    with pytest.raises(EventTooLargeError, match="is 1073741824 bytes, over max_event_bytes=1000"):
        decoder.feed(prelude(1 << 30, 0))
    assert decoder.bytes_fed == 12


def test_message_exactly_at_the_limit_passes_one_byte_more_fails() -> None:
    data = encode_event("x", b"{}")
    assert run(EventStreamDecoder(max_event_bytes=len(data)), [data])[1] is None
    outcome = run(EventStreamDecoder(max_event_bytes=len(data) - 1), [data])
    assert outcome == ([], EventTooLargeError)


def test_limit_is_per_message_and_earlier_messages_are_delivered() -> None:
    small = encode_event("a", b"1")
    big = encode_event("b", b"1" * 100)
    decoder = EventStreamDecoder(max_event_bytes=len(small))
    assert decoder.feed(small + small + big[:12]) == [wire_frame(event="a", data="1")] * 2
    with pytest.raises(EventTooLargeError, match="message #3"):
        decoder.feed(big[12:])


@pytest.mark.parametrize(
    ("headers", "match"),
    [
        (b"\x05:abc", "a header past its end"),  # no type byte
        (b"\x00\x07\x00\x00", "an empty header name"),
        (b"\x09:too-long", "a header past its end"),
        (b"\x01a\x0a", "header 'a' with unknown value type 10"),
        (b"\x01a\xff", "unknown value type 255"),
        (b"\x01a\x07\x00", "header 'a' past its end"),
        (b"\x01a\x07\x00\x05abc", "header 'a' past its end"),
        (b"\x01a\x06\x00\x09abc", "header 'a' past its end"),
        (b"\x01a\x04\x00\x00", "header 'a' past its end"),
        (b"\x01a\x05" + b"\0" * 7, "header 'a' past its end"),
        (b"\x01a\x09" + b"\0" * 15, "header 'a' past its end"),
        (b"\x01a\x00\x01a\x01", "a second header named 'a'"),
        (b"\x02\xc3(\x00", r"header name is not valid UTF-8.*byte offset 13"),
        (string_header(b"k", b"\xed\xa0\x80"), "value of header 'k' is not valid UTF-8"),
    ],
)
def test_malformed_headers_are_typed(headers: bytes, match: str) -> None:
    data = frame_message(headers, b"{}")
    for chunks in ([data], [data[i : i + 1] for i in range(len(data))]):
        assert run(EventStreamMessageDecoder(), chunks) == ([], MalformedChunkError)
    with pytest.raises(MalformedChunkError, match=match):
        decode_messages(data)


def test_every_header_type_decodes_from_hand_written_bytes() -> None:
    raw = (
        b"\x01t\x00" + b"\x01f\x01" + b"\x01b\x02\xfe" + b"\x01s\x03\xff\xfe"
        + b"\x01i\x04\xff\xff\xff\xfe" + b"\x01l\x05" + b"\xff" * 7 + b"\xfe"
        + b"\x01y\x06\x00\x02\x00\xff" + b"\x01u\x07\x00\x02\xc3\xa9"
        + b"\x01d\x08" + (1_700_000_000_000).to_bytes(8, "big")
        + b"\x01g\x09" + bytes(range(16))
    )  # fmt: skip
    (message,) = decode_messages(frame_message(raw))
    assert dict(message.headers) == {
        "t": True, "f": False, "b": -2, "s": -2, "i": -2, "l": -2, "y": b"\x00\xff",
        "u": "é", "d": 1_700_000_000_000, "g": uuid.UUID(bytes=bytes(range(16))),
    }  # fmt: skip
    assert [type(v) for v in message.headers.values()] == [
        bool, bool, Int8, Int16, Int32, Int64, bytes, str, Timestamp, uuid.UUID,
    ]  # fmt: skip


@pytest.mark.parametrize("cut", [1, 11, 12, 13, 30])
def test_truncation_says_how_many_bytes_of_which_message_were_missing(cut: int) -> None:
    first = encode_event("a", b"{}")
    second = encode_event("contentBlockDelta", b'{"x": 1}')
    decoder = EventStreamDecoder()
    assert decoder.feed(first + second[:cut]) == [wire_frame(event="a", data="{}")]
    with pytest.raises(TruncatedStreamError) as info:
        decoder.end()
    message = str(info.value)
    assert f"message #2 (at byte offset {len(first)})" in message
    if cut < 12:
        assert f"{cut} of the 12 bytes of its prelude arrived" in message
    else:
        missing = len(second) - cut
        assert f"{cut} of its {len(second)} bytes arrived, {missing} bytes missing" in message


def test_empty_body_is_a_complete_stream() -> None:
    assert run(EventStreamDecoder(), []) == ([], None)
    assert decode_messages(b"") == []


# -- the caller's side ---------------------------------------------------------------------------


def test_feed_after_end_and_non_bytes_are_configuration_errors() -> None:
    decoder = EventStreamDecoder()
    decoder.end()
    with pytest.raises(ConfigurationError, match=r"EventStreamDecoder.feed\(\) after end\(\)"):
        decoder.feed(b"")
    with pytest.raises(ConfigurationError, match="takes bytes, got str"):
        EventStreamDecoder().feed("x")  # type: ignore[arg-type]
    data = encode_event("a", b"{}")
    assert len(EventStreamDecoder().feed(bytearray(data))) == 1
    assert len(EventStreamDecoder().feed(memoryview(data))) == 1


@pytest.mark.parametrize("bad", [0, -1, 2.0, "1", True])
def test_max_event_bytes_must_be_a_positive_int(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="max_event_bytes must be a positive int"):
        EventStreamDecoder(max_event_bytes=bad)
    with pytest.raises(ConfigurationError):
        EventStreamMessageDecoder(max_event_bytes=bad)


def test_decoder_is_poisoned_after_an_error() -> None:
    good = encode_event("a", b"{}")
    corrupt = good[:-1] + bytes([good[-1] ^ 1])
    decoder = EventStreamDecoder()
    assert len(decoder.feed(good + corrupt + good)) == 1
    with pytest.raises(MalformedChunkError, match="message CRC mismatch in message #2") as first:
        decoder.feed(good)
    with pytest.raises(MalformedChunkError) as again:
        decoder.end()
    assert again.value.__cause__ is first.value


def test_bytes_fed_counts_every_byte() -> None:
    decoder = EventStreamDecoder()
    data = encode_event("a", b"{}")
    decoder.feed(data[:5])
    decoder.feed(data[5:])
    assert decoder.bytes_fed == len(data)


# -- the encoder's checks --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "match"),
    [
        ({"n": 1}, "a plain int is ambiguous"),
        ({"n": 1.5}, "value of type float"),
        ({"n": None}, "value of type NoneType"),
        ({"": "v"}, "is 0 bytes; it must be 1 to 127"),
        ({"n" * 128: "v"}, "is 128 bytes; it must be 1 to 127"),
        ({"\ud800": "v"}, "cannot be encoded as UTF-8"),
        ({"n": "\ud800"}, "cannot be encoded as UTF-8"),
        ({"n": "v" * 32768}, "32768 bytes; at most 32767"),
        ({"n": b"v" * 32768}, "32768 bytes; at most 32767"),
        ({1: "v"}, "header names are str"),
    ],
)
def test_encode_message_rejects_what_aws_decoders_would_not_accept(
    headers: dict[Any, Any], match: str
) -> None:
    with pytest.raises(ConfigurationError, match=match):
        encode_message(headers)


def test_encode_message_payload_must_be_bytes_like() -> None:
    with pytest.raises(ConfigurationError, match="the payload must be bytes, got str"):
        encode_message({}, "x")  # type: ignore[arg-type]
    assert encode_message({}, bytearray(b"x")) == encode_message({}, memoryview(b"x"))


@pytest.mark.parametrize(
    ("cls", "low", "high"),
    [
        (Int8, -128, 127),
        (Int16, -(2**15), 2**15 - 1),
        (Int32, -(2**31), 2**31 - 1),
        (Int64, -(2**63), 2**63 - 1),
        (Timestamp, -(2**63), 2**63 - 1),
    ],
)
def test_fixed_width_ints_check_their_range(cls: type[Int8], low: int, high: int) -> None:
    for value in (low, high):
        assert decode_messages(encode_message({"v": cls(value)}))[0].headers["v"] == value
    for value in (low - 1, high + 1):
        with pytest.raises(ConfigurationError, match=f"{cls.__name__} must be in"):
            cls(value)
    with pytest.raises(ConfigurationError, match="takes an int"):
        cls(True)
    with pytest.raises(ConfigurationError, match="takes an int"):
        cls("1")  # type: ignore[arg-type]
    assert repr(cls(5)) == f"{cls.__name__}(5)"


# -- linear cost (structural, no timing) ----------------------------------------------------------


def c_work(fn: Callable[[], object]) -> tuple[int, int]:
    """(C calls made by ``fn``, calls of ``join``), counted with ``sys.setprofile``."""
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


def test_one_large_message_in_small_pieces_is_joined_a_fixed_number_of_times() -> None:
    seen = set()
    for n in (20_000, 200_000):
        data = encode_event("big", b'"' + b"x" * n + b'"')

        def go(data: bytes = data) -> None:
            decoder = EventStreamDecoder()
            for i in range(0, len(data), 5):
                decoder.feed(data[i : i + 5])
            decoder.end()

        calls, joins = c_work(go)
        seen.add(joins)
        assert calls <= 6 * (len(data) // 5 + 1) + 100  # a fixed number per piece
    # Once for the prelude, once for the whole message, whatever its size.
    assert seen == {2}


def test_ten_times_the_messages_is_ten_times_the_work() -> None:
    body, _ = bedrock_stream()
    for size in (1, 7, 1024):
        works = []
        for stream in (body * 5, body * 50):

            def go(stream: bytes = stream, size: int = size) -> None:
                decoder = EventStreamDecoder()
                for i in range(0, len(stream), size):
                    decoder.feed(stream[i : i + size])
                decoder.end()

            works.append(c_work(go)[0])
        assert works[1] <= 11 * works[0], size


# -- properties ------------------------------------------------------------------------------------

names = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=12).filter(
    lambda s: len(s.encode()) <= 127
)
header_values: st.SearchStrategy[HeaderValue] = st.one_of(
    st.booleans(),
    st.text(st.characters(exclude_categories=["Cs"]), max_size=20),
    st.binary(max_size=20),
    st.uuids(),
    st.integers(-(2**7), 2**7 - 1).map(Int8),
    st.integers(-(2**15), 2**15 - 1).map(Int16),
    st.integers(-(2**31), 2**31 - 1).map(Int32),
    st.integers(-(2**63), 2**63 - 1).map(Int64),
    st.integers(-(2**63), 2**63 - 1).map(Timestamp),
)
messages = st.tuples(st.dictionaries(names, header_values, max_size=6), st.binary(max_size=60))


@st.composite
def cuts(draw: st.DrawFn, data: bytes) -> list[bytes]:
    offsets = draw(st.lists(st.integers(min_value=0, max_value=len(data)), max_size=12))
    return split_at(data, offsets)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.lists(messages, max_size=5), data=st.data())
def test_random_messages_round_trip_however_split(
    batch: list[tuple[dict[str, HeaderValue], bytes]], data: st.DataObject
) -> None:
    stream = b"".join(encode_message(h, p) for h, p in batch)
    decoded = decode_messages(stream)
    assert [(dict(m.headers), m.payload) for m in decoded] == batch
    for m, (headers, _) in zip(decoded, batch, strict=True):
        assert [type(v) for v in m.headers.values()] == [type(v) for v in headers.values()]
    assert run(EventStreamMessageDecoder(), data.draw(cuts(stream))) == (decoded, None)
    # Re-encoding what was decoded gives the same bytes.
    assert b"".join(encode_message(m.headers, m.payload) for m in decoded) == stream


def soup_from(parts: list[bytes]) -> bytes:
    return b"".join(parts)


byte_soup = st.one_of(
    st.binary(max_size=60),
    # Valid messages with a few bytes changed, cut or inserted: close to the real thing.
    st.lists(messages.map(lambda m: encode_message(*m)), min_size=1, max_size=3).map(soup_from)
    .flatmap(
        lambda s: st.tuples(st.just(s), st.integers(0, len(s)), st.binary(max_size=3))
        .map(lambda t: t[0][: t[1]] + t[2] + t[0][t[1] + len(t[2]) :])
    ),
)  # fmt: skip


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(soup=byte_soup, limit=st.sampled_from([16, 40, DEFAULT_MAX_EVENT_BYTES]), data=st.data())
def test_byte_soup_only_raises_modelwire_errors_and_whole_equals_split(
    soup: bytes, limit: int, data: st.DataObject
) -> None:
    for cls in (EventStreamMessageDecoder, EventStreamDecoder):
        whole = run(cls(max_event_bytes=limit), [soup])
        assert whole[1] in (
            None, MalformedChunkError, TruncatedStreamError, EventTooLargeError
        )  # fmt: skip
        assert run(cls(max_event_bytes=limit), data.draw(cuts(soup))) == whole
        decoder = cls(max_event_bytes=limit)
        with pytest.raises(ModelwireError):
            for piece in data.draw(cuts(soup)):
                decoder.feed(piece)
            decoder.end()
            decoder.feed(b"x")  # after end(): a caller mistake, also a ModelwireError


# -- against botocore (test-only, optional) -------------------------------------------------------

HAVE_BOTOCORE = importlib.util.find_spec("botocore") is not None


@pytest.mark.skipif(not HAVE_BOTOCORE, reason="botocore is not installed (test-only, optional)")
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.lists(messages, min_size=1, max_size=4), data=st.data())
def test_botocore_decodes_what_we_encode_and_agrees_with_our_decoder(
    batch: list[tuple[dict[str, HeaderValue], bytes]], data: st.DataObject
) -> None:
    from botocore.eventstream import EventStreamBuffer

    stream = b"".join(encode_message(h, p) for h, p in batch)
    buffer = EventStreamBuffer()
    for piece in data.draw(cuts(stream)):
        buffer.add_data(piece)
    theirs: list[Any] = list(buffer)
    ours = decode_messages(stream)

    def plain(value: HeaderValue) -> object:
        # botocore gives UUIDs as their 16 bytes, every integer type as int.
        return value.bytes if isinstance(value, uuid.UUID) else value

    assert [(m.headers, m.payload) for m in theirs] == [
        ({k: plain(v) for k, v in m.headers.items()}, m.payload) for m in ours
    ]
    assert [m.prelude.total_length for m in theirs] == [
        len(encode_message(m.headers, m.payload)) for m in ours
    ]


@pytest.mark.skipif(not HAVE_BOTOCORE, reason="botocore is not installed (test-only, optional)")
def test_botocore_and_we_both_reject_the_negative_vectors() -> None:
    from botocore.eventstream import EventStreamBuffer, ParserError

    for vector in NEGATIVE:
        data = bytes.fromhex(vector["hex"])
        buffer = EventStreamBuffer()
        buffer.add_data(data)
        with pytest.raises(ParserError):
            list(buffer)
        with pytest.raises(MalformedChunkError):
            decode_messages(data)


def test_decoded_headers_are_read_only_so_repeated_sections_can_share_them() -> None:
    data = encode_event("contentBlockDelta", b"{}")
    first, second = decode_messages(data + data)
    assert first.headers == second.headers
    with pytest.raises(TypeError):
        first.headers[":event-type"] = "changed"  # type: ignore[index]
    with pytest.raises(AttributeError):
        first.payload = b"x"  # type: ignore[misc]
    assert decode_messages(data)[0].headers[":event-type"] == "contentBlockDelta"
