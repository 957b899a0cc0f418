"""Sans-IO AWS event stream (``application/vnd.amazon.eventstream``): decoder and encoder.

The binary framing of Amazon Bedrock's ``ConverseStream`` (and Transcribe, Lex, S3 Select…),
as AWS documents it ("Event stream encoding",
https://docs.aws.amazon.com/transcribe/latest/dg/event-stream.html) and as the reference
implementations read it (awslabs/aws-c-event-stream, botocore ``eventstream.py``). One
message, all integers big-endian::

    total length (uint32) | headers length (uint32) | prelude CRC32 (of the 8 bytes before)
    headers (headers length bytes) | payload | message CRC32 (of every byte before it)

A header is ``name length (uint8) | name (UTF-8) | type (uint8) | value``, the value by type:
0 bool true and 1 bool false (no bytes), 2 byte (int8), 3 short (int16), 4 integer (int32),
5 long (int64), 6 byte array and 7 string (uint16 length, then the bytes; a string is UTF-8),
8 timestamp (int64 milliseconds since the epoch), 9 UUID (16 bytes). CRC32 is the gzip/zlib
CRC-32 (``zlib.crc32``).

Two layers:

* :class:`EventStreamMessageDecoder` gives :class:`EventStreamMessage` values with the full
  typed headers; :func:`decode_messages` is its one-shot form.
* :class:`EventStreamDecoder` is a :class:`~modelwire._wire.framing.Framing`: it gives
  :class:`~modelwire._wire.sse.Frame` values (the payload as bytes, checked to be UTF-8) like
  every framing, so a wire API's ``decode(frame)`` reads them as any other. The mapping,
  by the ``:message-type`` header:

  ============== ================================== =========================================
  message type   ``event``                          ``data``
  ============== ================================== =========================================
  ``event``      the ``:event-type`` header         the payload (UTF-8)
                 (``contentBlockDelta``, …)
  ``exception``  ``"exception:"`` + the             the payload (UTF-8; Bedrock sends
                 ``:exception-type`` header         ``{"message": "..."}``)
                 (``exception:throttlingException``)
  ``error``      ``"error:"`` + the ``:error-code`` the ``:error-message`` header if present,
                 header                             else the payload (UTF-8)
  ============== ================================== =========================================

  Event type names are Smithy member names, which cannot contain ``:``, so the prefixed
  names never collide with an event. A missing or unknown ``:message-type``, or a missing
  ``:event-type``/``:exception-type``/``:error-code``, is a
  :class:`~modelwire.errors.MalformedChunkError`: a message the decoder cannot classify is
  never passed on as if it were content.

Validation, each a typed error naming the message (1-based) and the byte offset in the
stream: the prelude CRC is checked before its lengths are trusted; a total length under 16,
or a headers length that does not fit, is malformed; a total length over
``max_event_bytes`` raises :class:`~modelwire.errors.EventTooLargeError` before any of the
message is buffered; the message CRC, header bounds, header types, UTF-8 of names and string
values, and duplicate header names (botocore rejects them too) are checked before the
message is delivered. A body that stops inside a message makes ``end()`` raise
:class:`~modelwire.errors.TruncatedStreamError` saying how many bytes were missing.

Linear however the body is cut: pieces of an incomplete message are kept in a list and
joined once, when the prelude (12 bytes) or the whole message has arrived; CRCs are computed
over memoryviews, without copying the message, by zlib-ng's ``crc32`` when it is installed
(the ``bedrock`` extra), else by ``zlib.crc32``: the same function.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TypeVar

import msgspec

from ...errors import EventTooLargeError, MalformedChunkError, TruncatedStreamError
from ..sse import DEFAULT_MAX_EVENT_BYTES, Frame
from ._base import IncrementalDecoder
from ._encode import encode_event, encode_exception, encode_message
from ._headers import HeaderValue, Int8, Int16, Int32, Int64, Timestamp
from ._runs import Runs

__all__ = [
    "EventStreamDecoder",
    "EventStreamMessage",
    "EventStreamMessageDecoder",
    "HeaderValue",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "Timestamp",
    "decode_messages",
    "encode_event",
    "encode_exception",
    "encode_message",
]

_PRELUDE = 12  # total length, headers length, prelude CRC
_OVERHEAD = 16  # the prelude and the message CRC
_UINT32 = struct.Struct(">I")
_PRELUDE_STRUCT = struct.Struct(">III")

_FIXED: dict[int, tuple[int, type[Int8 | Int16 | Int32 | Int64 | Timestamp]]] = {
    cls.TYPE: (cls.BITS // 8, cls) for cls in (Int8, Int16, Int32, Int64, Timestamp)
}

# Header names and short string values (``:event-type`` names, ``event``,
# ``application/json``) seen so far, bytes → text: a stream repeats a handful of them, so
# the table stays tiny; it stops growing at _STRINGS_MAX entries.
_STRINGS: dict[bytes, str] = {}
_STRINGS_MAX = 256

# Whole header sections seen so far → their parse (for typed messages) or their frame
# ``event`` (for frames). Bedrock repeats the same three headers for every event of a
# type, so a message costs one lookup instead of a header loop; only sections that parsed
# and classified without error are stored, so a hit is exactly what parsing would give.
_HEADERS: dict[bytes, MappingProxyType[str, HeaderValue]] = {}
_FRAME_EVENTS: dict[bytes, str] = {}
_BLOCK_MAX = 512
_BLOCKS_MAX = 256

# Preludes that passed their checks (CRC, lengths; not max_event_bytes, which is the
# decoder's own) → (total length, headers length): the CRC of 8 bytes is a function of
# them, so a prelude seen before is checked by one lookup. Messages of a stream have a
# few hundred lengths at most; the table stops growing at _PRELUDES_MAX entries.
_PRELUDES: dict[bytes, tuple[int, int]] = {}
_PRELUDES_MAX = 4096

# CRC-32 as zlib computes it (the gzip polynomial): zlib-ng's, installed with the
# ``bedrock`` extra, when present — 2.5x the speed of the stdlib's (zlib 1.2) on a
# 200-byte message, a quarter of the framing's time — else the stdlib's.
try:
    from zlib_ng.zlib_ng import crc32 as _crc32
except ImportError:  # pragma: no cover - the bedrock extra is not installed
    from zlib import crc32 as _crc32


class EventStreamMessage(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One decoded AWS event stream message."""

    headers: Mapping[str, HeaderValue]
    """The headers in wire order, typed (see :data:`HeaderValue`); names are unique.
    Read-only (a ``types.MappingProxyType``) when decoded."""

    payload: bytes = b""
    """The payload bytes (Bedrock sends JSON)."""

    offset: int = 0
    """The byte offset of the message's first byte in the stream."""


T = TypeVar("T")


class _MessageReader(IncrementalDecoder[T]):
    """The message layer: cuts the body into messages, checks them, hands each to _make."""

    __slots__ = ("_count", "_have", "_join", "_need", "_offset", "_pieces")

    def __init__(self, max_event_bytes: int) -> None:
        super().__init__(max_event_bytes)
        # Whether consecutive messages of one type go out as one Run (join_runs).
        self._join = False
        # Pieces of the pending (incomplete) message, joined once enough has arrived.
        self._pieces: list[bytes] = []
        self._have = 0
        # Bytes needed before the next step: the prelude, or (once the prelude has been
        # checked) the message's total length, which is always at least 16.
        self._need = _PRELUDE
        # Stream offset of the first pending byte, and how many messages came before it.
        self._offset = 0
        self._count = 0

    def _consume(self, data: bytes, out: list[T]) -> None:
        pieces = self._pieces
        pieces.append(data)
        self._have += len(data)
        if self._have < self._need:
            return  # nothing to parse yet: keep the piece, scan nothing twice
        buf = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        view = memoryview(buf)
        size = len(buf)
        pos = 0
        need = _PRELUDE
        # The checks of _prelude and _message, inlined for the messages that pass them
        # (one network read holds many); a message that fails one is handed to that
        # method, which raises the worded error. ``base`` is the stream offset of
        # ``buf``, ``count`` the messages before ``pos``: written back to the
        # attributes before anything that reads them. The prelude of a message left
        # incomplete by an earlier read is looked up (or checked) again.
        unpack, uint32, crc32 = _PRELUDE_STRUCT.unpack_from, _UINT32.unpack_from, _crc32
        preludes = _PRELUDES
        preludes_get = preludes.get
        limit = self._max
        make = self._make
        append = out.append
        base = self._offset
        count = self._count
        run = self._run_start(out) if self._join else None
        # The run's header section (its length -1: none) and the append of its payloads.
        run_len, run_headers = -1, b""
        add: Callable[[bytes], None] = list[bytes]().append
        try:
            while size - pos >= _PRELUDE:
                prelude = buf[pos : pos + _PRELUDE]
                known = preludes_get(prelude)
                if known is not None and known[0] <= limit:
                    total, headers_len = known
                else:
                    total, headers_len, crc = unpack(buf, pos)
                    if (
                        crc32(view[pos : pos + 8]) != crc
                        or total < _OVERHEAD
                        or headers_len > total - _OVERHEAD
                        or total > limit
                    ):
                        self._offset, self._count = base + pos, count
                        self._prelude(buf, view, pos)  # raises
                    if len(preludes) < _PRELUDES_MAX:
                        preludes[prelude] = (total, headers_len)
                end = pos + total
                if end > size:
                    need = total
                    break
                start = pos + _PRELUDE
                if crc32(view[pos : end - 4]) != uint32(buf, end - 4)[0]:
                    self._offset, self._count = base + pos, count
                    self._message(buf, view, pos, total)  # raises
                if headers_len == run_len and buf.startswith(run_headers, start):
                    # Another message of the run's type: its payload joins the run
                    # (whose UTF-8 is checked once, when it is flushed).
                    add(buf[start + headers_len : end - 4])
                else:
                    self._offset, self._count = base + pos, count
                    value = make(buf, start, start + headers_len, end - 4, pos)
                    if run is None:
                        append(value)
                    else:
                        run.flush()
                        run.begin(buf[start : start + headers_len], value)
                        run_len, run_headers, add = run.headers_len, run.headers, run.add
                pos = end
                count += 1
        finally:
            view.release()
            self._offset, self._count = base + pos, count
            self._need = need
            rest = buf[pos:] if pos else buf
            self._pieces = [rest] if rest else []
            self._have = len(rest)
            if run is not None:
                # Last: a payload of the run that is not UTF-8 is the read's earliest
                # error, raised in place of any met after it.
                run.flush()

    def _run_start(self, out: list[T]) -> Runs | None:
        """The run collector of a framing that joins runs (only frames do)."""
        return None

    def _utf8(self, payload: bytes, delta: int) -> None:
        """Raise if ``payload`` (at ``delta`` bytes into the current message) is not UTF-8."""
        try:
            payload.decode()  # checked, not decoded: the wire API parses the bytes
        except UnicodeDecodeError as exc:
            raise self._not_utf8(payload, exc, "payload", delta) from None

    def _not_utf8(
        self, raw: bytes, exc: UnicodeDecodeError, what: str, delta: int
    ) -> MalformedChunkError:
        """The error for ``raw``, ``delta`` bytes into the current message."""
        bad = raw[exc.start : exc.end]
        return MalformedChunkError(
            f"AWS event stream {what} is not valid UTF-8: {exc.reason} "
            f"(byte(s) {bad.hex(' ')}) in {self._where(delta + exc.start)}"
        )

    def _utf8_at(self, payload: bytes, offset: int, count: int, delta: int) -> None:
        """:meth:`_utf8` of the message ``count`` (0-based) at stream ``offset``."""
        self._offset, self._count = offset, count
        self._utf8(payload, delta)

    def _prelude(self, buf: bytes, view: memoryview, pos: int) -> int:
        """Check the prelude at ``pos``; return the message's total length."""
        total, headers_len, crc = _PRELUDE_STRUCT.unpack_from(buf, pos)
        actual = zlib.crc32(view[pos : pos + 8])
        if actual != crc:
            raise MalformedChunkError(
                f"AWS event stream prelude CRC mismatch in {self._where()}: the prelude says "
                f"0x{crc:08x}, its first 8 bytes give 0x{actual:08x}; the body is corrupt "
                "or is not an AWS event stream"
            )
        if total < _OVERHEAD:
            raise MalformedChunkError(
                f"AWS event stream {self._where()} has total length {total}, less than the "
                f"{_OVERHEAD} bytes of its prelude and CRCs"
            )
        if headers_len > total - _OVERHEAD:
            raise MalformedChunkError(
                f"AWS event stream {self._where()} has headers length {headers_len}, which does "
                f"not fit in its total length {total}"
            )
        if total > self._max:
            raise EventTooLargeError(
                f"AWS event stream {self._where()} is {total} bytes, over "
                f"max_event_bytes={self._max}; raise max_event_bytes if such messages "
                "are expected"
            )
        return int(total)

    def _where(self, delta: int = 0) -> str:
        where = f"message #{self._count + 1} (at byte offset {self._offset})"
        if delta:
            where += f", byte offset {self._offset + delta}"
        return where

    def _message(self, buf: bytes, view: memoryview, pos: int, total: int) -> None:
        """Raise the message CRC mismatch of the message at ``pos``."""
        end = pos + total
        (crc,) = _UINT32.unpack_from(buf, end - 4)
        actual = zlib.crc32(view[pos : end - 4])
        raise MalformedChunkError(
            f"AWS event stream message CRC mismatch in {self._where()}: the message "
            f"says 0x{crc:08x}, its bytes give 0x{actual:08x}; the body is corrupt"
        )

    def _headers(self, buf: bytes, p: int, stop: int, base: int) -> dict[str, HeaderValue]:
        """Parse the headers section ``buf[p:stop]`` of the message starting at ``base``."""
        headers: dict[str, HeaderValue] = {}
        strings = _STRINGS
        while p < stop:
            at = p
            q = p + 1 + buf[p]
            if q >= stop or q == p + 1:
                raise self._bad_header(
                    at, base, "an empty header name" if q == p + 1 else "a header past its end"
                )
            raw = buf[p + 1 : q]
            name = strings.get(raw)
            if name is None:
                name = self._text(raw, at + 1, base, "header name")
            kind = buf[q]
            p = q + 1
            value: HeaderValue
            if kind == 7 or kind == 6:
                if p + 2 > stop:
                    raise self._bad_header(at, base, f"header {name!r} past its end")
                q = p + 2 + ((buf[p] << 8) | buf[p + 1])
                if q > stop:
                    raise self._bad_header(at, base, f"header {name!r} past its end")
                raw = buf[p + 2 : q]
                if kind == 6:
                    value = raw
                else:
                    text = strings.get(raw)
                    value = (
                        text
                        if text is not None
                        else self._text(raw, p + 2, base, f"value of header {name!r}")
                    )
                p = q
            elif kind == 0 or kind == 1:
                value = kind == 0
            elif kind == 9:
                if p + 16 > stop:
                    raise self._bad_header(at, base, f"header {name!r} past its end")
                value = uuid.UUID(bytes=buf[p : p + 16])
                p += 16
            elif kind in _FIXED:
                width, cls = _FIXED[kind]
                if p + width > stop:
                    raise self._bad_header(at, base, f"header {name!r} past its end")
                value = cls(int.from_bytes(buf[p : p + width], "big", signed=True))
                p += width
            else:
                raise self._bad_header(
                    at, base, f"header {name!r} with unknown value type {kind} (valid: 0 to 9)"
                )
            if name in headers:
                raise self._bad_header(at, base, f"a second header named {name!r}")
            headers[name] = value
        return headers

    def _text(self, raw: bytes, at: int, base: int, what: str) -> str:
        try:
            text = raw.decode()
        except UnicodeDecodeError as exc:
            raise self._not_utf8(raw, exc, what, at - base) from None
        if len(raw) <= 64 and len(_STRINGS) < _STRINGS_MAX:
            _STRINGS[raw] = text
        return text

    def _bad_header(self, at: int, base: int, what: str) -> MalformedChunkError:
        return MalformedChunkError(
            f"AWS event stream headers are malformed: {what}, in {self._where(at - base)}"
        )

    def _make(self, buf: bytes, start: int, headers_end: int, stop: int, base: int) -> T:
        """The value for the message at ``base``: headers ``buf[start:headers_end]``,
        payload ``buf[headers_end:stop]`` (both CRCs already checked)."""
        raise NotImplementedError

    def _finish(self) -> None:
        have = self._have
        self._pieces = []
        self._have = 0
        if not have:
            return
        if self._need == _PRELUDE:
            detail = f"{have} of the {_PRELUDE} bytes of its prelude arrived"
        else:
            detail = f"{have} of its {self._need} bytes arrived, {self._need - have} bytes missing"
        raise TruncatedStreamError(
            f"AWS event stream ended in the middle of {self._where()}: {detail}; the body "
            "was cut — retry the request"
        )


class EventStreamMessageDecoder(_MessageReader[EventStreamMessage]):
    """Incremental, sans-IO decoder of an AWS event stream body into typed messages.

    ``feed()`` returns :class:`EventStreamMessage` values; ``end()`` raises
    :class:`~modelwire.errors.TruncatedStreamError` if the body stopped inside a message.
    ``max_event_bytes`` bounds one message's total length (prelude and CRCs included).
    Errors and their delivery are those of :class:`EventStreamDecoder`.
    """

    __slots__ = ()

    def __init__(self, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        super().__init__(max_event_bytes)

    def _make(
        self, buf: bytes, start: int, headers_end: int, stop: int, base: int
    ) -> EventStreamMessage:
        raw = buf[start:headers_end]
        headers = _HEADERS.get(raw)
        if headers is None:
            # Read-only, so that the value stays immutable and can be shared.
            headers = MappingProxyType(self._headers(buf, start, headers_end, base))
            if len(raw) <= _BLOCK_MAX and len(_HEADERS) < _BLOCKS_MAX:
                _HEADERS[raw] = headers
        return EventStreamMessage(
            headers=headers, payload=buf[headers_end:stop], offset=self._offset
        )


class EventStreamDecoder(_MessageReader[Frame]):
    """Incremental, sans-IO decoder of an AWS event stream body (a :class:`Framing`).

    ::

        decoder = EventStreamDecoder()
        for chunk in body_chunks:
            for frame in decoder.feed(chunk):
                handle(frame.event, frame.data)  # "contentBlockDelta", b'{"delta": ...}'
        decoder.end()  # raises TruncatedStreamError if the body stopped mid-message

    Each message becomes one :class:`~modelwire._wire.sse.Frame` (the mapping is in the
    module docstring); the frames never depend on where the body was cut. For the typed
    headers use :class:`EventStreamMessageDecoder`.

    Errors: :class:`~modelwire.errors.MalformedChunkError` (a CRC mismatch, naming which
    CRC; bad lengths, headers or UTF-8; a message that is not an event, exception or
    error), :class:`~modelwire.errors.EventTooLargeError` (a message whose total length is
    over ``max_event_bytes``, raised from its prelude, before it is buffered),
    :class:`~modelwire.errors.TruncatedStreamError` (from :meth:`end`),
    :class:`~modelwire.errors.ConfigurationError` (``feed()`` after ``end()``, or not
    bytes). When :meth:`feed` meets an error after completing some frames it returns those
    and raises from the next call; the decoder is then poisoned, as
    :class:`~modelwire._wire.sse.SSEDecoder` is.

    Args:
        max_event_bytes: The largest message accepted, in bytes.
    """

    __slots__ = ()

    def __init__(self, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        super().__init__(max_event_bytes)

    def _make(self, buf: bytes, start: int, headers_end: int, stop: int, base: int) -> Frame:
        raw = buf[start:headers_end]
        event = _FRAME_EVENTS.get(raw)
        if event is None:
            event, text = self._classify(self._headers(buf, start, headers_end, base))
            if text is not None:
                return Frame(event, text.encode())
            if len(raw) <= _BLOCK_MAX and len(_FRAME_EVENTS) < _BLOCKS_MAX:
                _FRAME_EVENTS[raw] = event
        payload = buf[headers_end:stop]
        if not payload.isascii():
            self._utf8(payload, headers_end - base)
        return Frame(event, payload)

    def join_runs(self) -> None:
        """From the next read on, yield consecutive messages of one type whose payloads
        are JSON objects without a CR as one :class:`~modelwire._wire.sse._frames.Run` (the
        payloads joined with CR, for one ``decode_lines`` call; :class:`Runs` has the
        rules), for a wire API decoder that takes runs."""
        self._join = True

    def _run_start(self, out: list[Frame]) -> Runs:
        return Runs(self, out, _FRAME_EVENTS, _OVERHEAD)

    def _classify(self, headers: dict[str, HeaderValue]) -> tuple[str, str | None]:
        """The frame's ``event`` for these headers, and its ``data`` when that is not the
        payload (an error's ``:error-message``)."""
        kind = headers.get(":message-type")
        if kind == "event":
            return self._name(headers, ":event-type", "event"), None
        if kind == "exception":
            return "exception:" + self._name(headers, ":exception-type", "exception"), None
        if kind == "error":
            name = "error:" + self._name(headers, ":error-code", "error")
            message = headers.get(":error-message")
            return name, message if isinstance(message, str) else None
        raise MalformedChunkError(
            f"AWS event stream {self._where()} has "
            + (
                "no :message-type header"
                if kind is None
                else f":message-type {kind!r}; expected 'event', 'exception' or 'error'"
            )
        )

    def _name(self, headers: dict[str, HeaderValue], header: str, kind: str) -> str:
        value = headers.get(header)
        if not isinstance(value, str) or not value:
            raise MalformedChunkError(
                f"AWS event stream {self._where()} is an {kind!r} message without a "
                f"non-empty string {header} header (got {value!r})"
            )
        return value


def decode_messages(
    data: bytes | bytearray | memoryview, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
) -> list[EventStreamMessage]:
    """Decode a whole AWS event stream body; raises as :class:`EventStreamMessageDecoder` does."""
    decoder = EventStreamMessageDecoder(max_event_bytes=max_event_bytes)
    messages = decoder.feed(data)
    decoder.end()
    return messages
