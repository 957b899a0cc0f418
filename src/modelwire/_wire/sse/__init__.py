"""Sans-IO Server-Sent-Events decoder: bytes in, :class:`ServerSentEvent` values out.

The decoder follows the WHATWG HTML standard, "event stream interpretation"
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation),
byte for byte, with two deliberate deviations (DESIGN §2, §2a):

1. **A truncated last event is reported, not dropped.** WHATWG discards an event whose
   blank line never arrives. :meth:`SSEDecoder.end` raises
   :class:`~modelwire.errors.TruncatedStreamError` instead when an event is pending:
   its data buffer is non-empty, or the unterminated last line is a ``data`` field.
   Unterminated ``event``/``id``/``retry``/comment lines, and a pending event whose data
   buffer is empty, are dropped silently as WHATWG does.
2. **Invalid UTF-8 is an error, not U+FFFD.** WHATWG decodes the stream with
   "UTF-8 decode", replacing bad sequences with U+FFFD; modelwire raises
   :class:`~modelwire.errors.MalformedChunkError`, because a model's output silently
   altered is worse than a stream that stops.

The pipeline's framing (:class:`SSEFraming`, not the public decoder) has one more: an
``error: {...}`` line — not an SSE field, but what llama.cpp's server (and GPUStack and
vLLM builds on it) sends when generation fails mid-stream — is handed over at once as
an ``error`` event with the line's value as its data, so the provider's message reaches
the wire API instead of being dropped as an unknown field.

Everything else is as specified: lines end at CR, LF or CRLF (a CR at the end of one
chunk and an LF at the start of the next are one line break); one leading U+FEFF (the
bytes EF BB BF) is stripped at the start of the stream only, even when it arrives split
across chunks; lines starting with ``:`` are comments; a line without a colon is a field
name with an empty value; one U+0020 after the colon is removed; field names are
case-sensitive and unknown fields are ignored; ``data`` lines are joined with LF; ``id``
values containing U+0000 are ignored; ``retry`` is honoured only when it is all ASCII
digits; a blank line dispatches the event unless the data buffer is empty.

The decoder does no I/O and is linear in the input however it is cut into chunks:
lines are split with ``bytes.split``/``bytes.splitlines`` (the latter breaks exactly at
CR, LF and CRLF), never byte by byte in Python; a line still waiting for its line break is
kept as a list of pieces, joined once when the break arrives, so no buffer is rescanned
as it grows (each byte is looked at a small, fixed number of times).
"""

from __future__ import annotations

from typing import Any

from ...errors import (
    ConfigurationError,
    EventTooLargeError,
    MalformedChunkError,
    ModelwireError,
    TruncatedStreamError,
)
from ._frames import _EVENT_LINES_MAX, Frame, ServerSentEvent, join, runs
from ._latch import ErrorLatch

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "Frame", "SSEDecoder", "SSEFraming", "ServerSentEvent"]

#: Default for :class:`SSEDecoder` ``max_event_bytes``: 16 MiB.
DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024

_BOM = b"\xef\xbb\xbf"

# ``event: NAME`` line (bytes, valid UTF-8) → the event type it sets, shared by every
# decoder: streams use a handful of names, so the table stays tiny; it stops growing at
# _EVENT_LINES_MAX entries (further names take the ordinary path).
_EVENT_LINES: dict[bytes, str] = {}
# A read shorter than this holds a block or two (one delta per network write, as a model
# streams live): the plain block loop is cheaper there than the extra split of _runs.
_RUN_MIN = 512
# Runs tried per read (SSEFraming.join_runs): each try scans the rest of the read again.
_JOIN_TRIES = 4


class SSEDecoder(ErrorLatch):
    """Incremental, sans-IO decoder of a ``text/event-stream`` body.

    Feed it the body's bytes as they arrive, split anywhere, and call :meth:`end` once
    the body is complete::

        decoder = SSEDecoder()
        for chunk in body_chunks:
            for event in decoder.feed(chunk):
                handle(event)
        decoder.end()  # raises TruncatedStreamError if the body stopped mid-event

    The events returned never depend on where the stream was cut.

    Implements WHATWG HTML "event stream interpretation"
    (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation)
    with the two deviations described in the module docstring: a truncated last event
    raises :class:`~modelwire.errors.TruncatedStreamError` from :meth:`end`, and invalid
    UTF-8 raises :class:`~modelwire.errors.MalformedChunkError`.

    ``max_event_bytes`` bounds the memory one event may take: when the lines of one
    pending event (line terminators not counted, comments and unknown fields included),
    or a single line still waiting for its line break, exceed it,
    :class:`~modelwire.errors.EventTooLargeError` is raised as soon as the excess bytes
    are fed.

    Errors: when :meth:`feed` meets an error, it still returns the events completed
    before the offending bytes, if there are any, and raises the error from the next call
    to :meth:`feed` or :meth:`end`; if there are none it raises at once. Either way the
    decoder is then poisoned: every later :meth:`feed` or :meth:`end` raises the same
    error class again. :meth:`feed` after :meth:`end` is a caller mistake and raises
    :class:`~modelwire.errors.ConfigurationError`.

    Args:
        max_event_bytes: The largest event accepted, in bytes (a positive integer).
    """

    __slots__ = (
        "_bytes_fed",
        "_data",
        "_ended",
        "_ev_bytes",
        "_ev_retry",
        "_event",
        "_id",
        "_join",
        "_last_id",
        "_max",
        "_pending_cr",
        "_retry",
        "_start",
        "_tail",
        "_tail_len",
    )

    # Frames (``SSEFraming``) instead of ServerSentEvents: read once per loop.
    _FRAMES = False

    def __init__(self, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        if (
            isinstance(max_event_bytes, bool)
            or not isinstance(max_event_bytes, int)
            or max_event_bytes < 1
        ):
            raise ConfigurationError(
                f"max_event_bytes must be a positive int, got {max_event_bytes!r}"
            )
        self._max = max_event_bytes
        # Stream start: the first bytes seen while they may still be a split BOM,
        # None once decided.
        self._start: bytes | None = b""
        # The previous chunk ended with CR: an LF starting the next chunk is part of it.
        self._pending_cr = False
        # Pieces of the current unterminated line, joined once its line break arrives.
        self._tail: list[bytes] = []
        self._tail_len = 0
        # WHATWG buffers: data (one item per data line), event type, last event ID.
        self._data: list[bytes] = []
        self._event = ""
        self._id = ""
        # The event source's "last event ID string": set from the buffer at each blank line.
        self._last_id = ""
        # The stream's reconnection time (ms), and the one set inside the current block.
        self._retry: int | None = None
        self._ev_retry: int | None = None
        # Bytes of the lines of the pending event.
        self._ev_bytes = 0
        self._bytes_fed = 0
        self._ended = False
        self._error: ModelwireError | None = None
        self._error_raised = False
        # Runs of whole blocks as one Run (SSEFraming.join_runs).
        self._join = False

    # -- read-only state -------------------------------------------------------------

    @property
    def max_event_bytes(self) -> int:
        """The size limit of one event, in bytes."""
        return self._max

    @property
    def last_event_id(self) -> str:
        """The event source's last event ID string (WHATWG): the ``id`` in effect at the
        most recent blank line, whether or not that blank line dispatched an event.
        An ``id`` in a block that never ended does not count."""
        return self._last_id

    @property
    def retry(self) -> int | None:
        """The reconnection time in milliseconds from the last valid ``retry`` field
        (applied as soon as its line ends, as WHATWG says), or ``None`` if none yet."""
        return self._retry

    @property
    def bytes_fed(self) -> int:
        """How many bytes :meth:`feed` has been given in total (BOM included)."""
        return self._bytes_fed

    # -- input -----------------------------------------------------------------------

    def feed(self, data: bytes | bytearray | memoryview) -> list[ServerSentEvent]:
        """Decode the next piece of the stream; return the events it completed, in order.

        Args:
            data: The next bytes of the body; they may end anywhere: mid-line,
                mid-CRLF, mid-UTF-8 character, mid-BOM.

        Raises :class:`~modelwire.errors.MalformedChunkError` (invalid UTF-8),
        :class:`~modelwire.errors.EventTooLargeError` (``max_event_bytes`` exceeded), or
        :class:`~modelwire.errors.ConfigurationError` (called after :meth:`end`, or
        ``data`` is not bytes-like). See the class docstring for when an error is deferred.
        """
        if (
            self._start is not None
            or self._pending_cr
            or self._error is not None
            or self._ended
            or type(data) is not bytes
        ):
            chunk = self._prepare(data)
        else:
            chunk = data
            self._bytes_fed += len(chunk)
        if not chunk:
            return []
        tail = self._tail
        if tail and 10 not in chunk and 13 not in chunk:
            # The middle of a long line: keep the piece, scan nothing twice.
            tail.append(chunk)
            self._tail_len += len(chunk)
            if self._ev_bytes + self._tail_len > self._max:
                self._fail(self._too_large())
            return []
        out: list[Any] = []  # ServerSentEvents, or Frames (SSEFraming)
        try:
            self._consume(chunk, out)
        except ModelwireError as exc:
            if not out:
                self._fail(exc)
            self._error = exc  # deliver what came before the error; raise on the next call
        return out

    def end(self) -> list[ServerSentEvent]:
        """Signal the end of the body. Returns the events it completes (always none).

        Raises :class:`~modelwire.errors.TruncatedStreamError` when an event is pending:
        its data buffer is non-empty (a ``data`` line arrived but no blank line after
        it), or the unterminated last line is a ``data`` field. WHATWG drops such an
        event silently; modelwire reports it (deliberate deviation). Unterminated
        ``event``/``id``/``retry``/comment/unknown lines and events with an empty data
        buffer are dropped, as WHATWG does. Calling ``end()`` again repeats the outcome.
        """
        self._ended = True
        if self._error is not None:
            self._raise_error()
        start = self._start
        if start:
            # Only part of a possible BOM arrived: it is an unterminated line.
            self._start = None
            self._tail = [start]
            if len(start) > self._max:
                self._fail(self._too_large())
        last_line = b"".join(self._tail)
        self._tail = []
        self._tail_len = 0
        data_line = last_line == b"data" or last_line.startswith(b"data:")
        if self._data or data_line:
            self._fail(
                TruncatedStreamError(
                    "SSE stream ended in the middle of an event: "
                    + (
                        f"{len(self._data)} data line(s) and no blank line after them"
                        if self._data
                        else "no blank line after it"
                    )
                    + ("; the last data line has no line break" if data_line else "")
                )
            )
        return []

    # -- internals -------------------------------------------------------------------

    def _prepare(self, data: bytes | bytearray | memoryview) -> bytes:
        """The rare cases of :meth:`feed`: errors, stream start (BOM), a split CRLF."""
        if self._ended:
            raise ConfigurationError("feed() after end()")
        if self._error is not None:
            self._raise_error()
        data = data if type(data) is bytes else _as_bytes(data)
        self._bytes_fed += len(data)
        if not data:
            return data
        if self._start is not None:
            # WHATWG: the stream is UTF-8 decoded, which drops one leading BOM.
            data = self._start + data
            if len(data) < 3 and _BOM.startswith(data):
                self._start = data
                return b""
            self._start = None
            if data.startswith(_BOM):
                data = data[3:]
                if not data:
                    return data
        if self._pending_cr:
            self._pending_cr = False
            if data[0] == 10:  # the LF of a CRLF split across chunks
                data = data[1:]
        return data

    def _consume(self, data: bytes, out: list[Any]) -> None:
        """Decode ``data`` (non-empty; BOM and split CRLF already handled).

        Fast path for the shape nearly every LLM stream has, LF line ends and events of
        one ``data: ...`` line: the chunk is cut at each blank line with one
        ``bytes.split`` and each such event costs a slice, a decode and a constructor.
        Anything else goes through :meth:`_general`, which is the reference; both give
        the same events (the tests check it on random streams, split at random).

        CRLF line ends (Gemini sends them) take the fast path too: CRLF is one line
        terminator, and a line holds no CR, so when every CR of the chunk is the first
        half of a CRLF, the chunk with LF for each CRLF is the same lines. A chunk that
        ends with CR (its LF may come next) or holds a lone CR stays on the general path.
        """
        if 13 in data and data[-1] != 13:
            lf = b"\n".join(data.split(b"\r\n"))  # one scan (bytes.replace makes two)
            if 13 not in lf:
                data = lf
        if 13 not in data:
            tail = self._tail
            if tail and self._tail_len <= len(data):
                # A short pending start of a line (the usual cut mid-event) is rescanned
                # with the new bytes, so the whole chunk takes the fast path. Each byte is
                # prepended at most once: linear. A long pending line is left to
                # _general, which joins it without the extra copy.
                data = (tail[0] if len(tail) == 1 else b"".join(tail)) + data
                self._tail = []
                self._tail_len = 0
            if len(data) <= self._max:
                self._fast(data, out)
                return
        self._general(data, out)

    def _fast(self, data: bytes, out: list[Any]) -> None:
        """:meth:`_consume` for LF-only ``data`` no longer than ``max_event_bytes``."""
        if self._ev_bytes or self._tail:
            # Mid-event: finish it (up to its blank line) on the general path.
            k = data.find(b"\n\n")
            if k < 0:
                self._general(data, out)
                return
            k += 2
            self._general(data[:k], out)
            if k == len(data):
                return
            data = data[k:]
        if self._join:
            data = self._joined(data, out)
            if not data:
                return
        elif (
            self._FRAMES
            and len(data) > _RUN_MIN
            and (data[:6] == b"data: " or data[:7] == b"event: ")
        ):
            k = runs(data, out, self._bad_utf8)
            if k:
                data = data[k:]
        # The state is clean here, and every block but the last ends with a blank line.
        blocks = data.split(b"\n\n")
        rest = blocks.pop()
        if blocks:
            # A clean state means the last blank line saw the current id buffer, so the
            # last event ID needs no update here.
            append = out.append
            id_ = self._id
            names = _EVENT_LINES
            frames = self._FRAMES
            for block in blocks:
                if block[:6] == b"data: " and 10 not in block:
                    raw = block[6:]
                    if frames:
                        # Validated (the whole stream must be UTF-8), not decoded: the
                        # wire API parses the bytes (an ASCII payload is valid as it is).
                        if not raw.isascii():
                            try:
                                raw.decode()
                            except UnicodeDecodeError as exc:
                                raise self._bad_utf8(exc, "event data") from None
                        append(Frame("message", raw))
                        continue
                    try:
                        text = raw.decode()
                    except UnicodeDecodeError as exc:
                        raise self._bad_utf8(exc, "event data") from None
                    append(ServerSentEvent(data=text, id=id_))
                    continue
                # ``event: NAME\ndata: JSON``, as Anthropic and OpenAI Responses send every
                # event: the event line is looked up whole in a small table of event lines
                # already seen (it is one of a handful of names), so such a block costs a
                # partition, a lookup and one decode instead of the line loop.
                head, _, line = block.partition(b"\n")
                name = names.get(head)
                if name is None and head[:7] == b"event: " and len(names) < _EVENT_LINES_MAX:
                    try:
                        name = names[head] = head[7:].decode() or "message"
                    except UnicodeDecodeError:
                        pass  # the line loop below raises the error, worded as always
                if name is not None and line[:6] == b"data: " and 10 not in line:
                    raw = line[6:]
                    try:
                        if not frames:
                            append(ServerSentEvent(event=name, data=raw.decode(), id=id_))
                            continue
                        if not raw.isascii():
                            raw.decode()
                    except UnicodeDecodeError:
                        pass  # as above
                    else:
                        append(Frame(name, raw))
                        continue
                lines = block.split(b"\n")
                lines.append(b"")
                self._lines(lines, out)
                id_ = self._id
        if rest:
            if 10 in rest:
                self._general(rest, out)
            else:  # the start of a line (len(data) <= max_event_bytes: no size check)
                self._tail = [rest]
                self._tail_len = len(rest)

    def _joined(self, data: bytes, out: list[Any]) -> bytes:
        """:meth:`_fast`'s start when runs are asked for: the leading blocks of one shape
        as one run (:func:`join`), a block of another shape the ordinary way, and again
        (a few tries per read); returns what is left for the block loop."""
        for _ in range(_JOIN_TRIES):
            k = join(data, out)
            if k:
                data = data[k:]
            k = data.find(b"\n\n")
            if k < 0:
                break
            lines = data[:k].split(b"\n")
            lines.append(b"")
            self._lines(lines, out)
            data = data[k + 2 :]
        return data

    def _general(self, data: bytes, out: list[Any]) -> None:
        """Split ``data`` into lines at CR, LF and CRLF; keep an unterminated last line."""
        last = data[-1]
        terminated = last == 10 or last == 13
        if last == 13:
            self._pending_cr = True
        tail = self._tail
        lines = data.splitlines()
        if tail:
            tail.append(lines[0])
            lines[0] = b"".join(tail)
            self._tail = []
            self._tail_len = 0
        partial = b"" if terminated else lines.pop()
        if lines:
            self._lines(lines, out)
        if partial:
            self._tail = [partial]
            self._tail_len = len(partial)
            if self._ev_bytes + len(partial) > self._max:
                raise self._too_large()

    def _too_large(self) -> EventTooLargeError:
        return EventTooLargeError(
            f"SSE event exceeds max_event_bytes={self._max} bytes "
            f"(within the first {self._bytes_fed} bytes of the stream)"
        )

    def _lines(self, lines: list[bytes], out: list[Any]) -> None:
        """Process complete lines (WHATWG "process the field" / "dispatch the event")."""
        buf = self._data
        event = self._event
        id_ = self._id
        last_id = self._last_id
        ev_retry = self._ev_retry
        ev_bytes = self._ev_bytes
        limit = self._max
        append = out.append
        try:
            for line in lines:
                if not line:
                    # Blank line: dispatch the event.
                    last_id = id_
                    if buf:
                        raw = buf[0] if len(buf) == 1 else b"\n".join(buf)
                        try:
                            text = raw.decode()
                        except UnicodeDecodeError as exc:
                            raise self._bad_utf8(exc, "event data") from None
                        if self._FRAMES:
                            append(Frame(event or "message", raw))
                        else:
                            append(
                                ServerSentEvent(
                                    event=event or "message", data=text, id=id_, retry=ev_retry
                                )
                            )
                        buf = []
                    event = ""
                    ev_retry = None
                    ev_bytes = 0
                    continue
                ev_bytes += len(line)
                if ev_bytes > limit:
                    raise self._too_large()
                if line[:6] == b"data: ":
                    # Fast path: the common "data: ..." line (validated at dispatch).
                    buf.append(line[6:])
                    continue
                colon = line.find(b":")
                if colon < 0:
                    name = line
                    value = b""
                else:
                    name = line[:colon]
                    if colon + 1 < len(line) and line[colon + 1] == 32:
                        value = line[colon + 2 :]
                    else:
                        value = line[colon + 1 :]
                if name == b"data":
                    buf.append(value)
                    continue
                # Every other line is validated here: the whole stream must be UTF-8.
                # For "event" and "id" the bytes before the value are ASCII, so decoding
                # the value validates the line.
                try:
                    if name == b"event":
                        event = value.decode()
                        continue
                    if name == b"id":
                        text = value.decode()
                        if "\0" not in text:
                            id_ = text
                        continue
                    line.decode()  # comments, retry and unknown fields
                    if name == b"error" and self._FRAMES:
                        append(Frame("error", value))  # llama.cpp's error line (docstring)
                        continue
                except UnicodeDecodeError as exc:
                    raise self._bad_utf8(exc, "line", len(line) - len(exc.object)) from None
                if name == b"retry" and value.isdigit():
                    # bytes.isdigit(): non-empty and ASCII digits only, as WHATWG requires.
                    try:
                        ev_retry = self._retry = int(value)
                    except ValueError:  # more digits than int() will parse: ignored
                        pass
                # Unknown field names are ignored.
        finally:
            self._data = buf
            self._event = event
            self._id = id_
            self._last_id = last_id
            self._ev_retry = ev_retry
            self._ev_bytes = ev_bytes

    def _bad_utf8(self, exc: UnicodeDecodeError, where: str, base: int = 0) -> MalformedChunkError:
        bad = exc.object[exc.start : exc.end]
        return MalformedChunkError(
            f"SSE stream is not valid UTF-8: {exc.reason} (byte(s) {bad.hex(' ')}) "
            f"at offset {base + exc.start} of an SSE {where}, within the first "
            f"{self._bytes_fed} bytes of the stream"
        )


class SSEFraming(SSEDecoder):
    """The SSE framing of the inbound pipeline: the same decoder, byte for byte and
    error for error, yielding :class:`Frame` values (payload bytes, UTF-8 checked,
    not decoded) instead of :class:`ServerSentEvent` values. ``id`` and ``retry``
    are still tracked (:attr:`last_event_id`, :attr:`retry`); no LLM API's payload
    depends on them."""

    __slots__ = ()
    _FRAMES = True

    def join_runs(self) -> None:
        """From the next read on, yield the whole blocks of a read that have one shape
        as one :class:`~modelwire._wire.sse._frames.Run` (their JSON payloads joined with CR,
        for one ``decode_lines`` call), for a wire API decoder that takes runs."""
        self._join = True

    def feed(self, data: bytes | bytearray | memoryview) -> list[Frame]:  # type: ignore[override]
        """:meth:`SSEDecoder.feed`, returning frames."""
        return super().feed(data)  # type: ignore[return-value]

    def end(self) -> list[Frame]:  # type: ignore[override]
        """:meth:`SSEDecoder.end`, returning frames."""
        return super().end()  # type: ignore[return-value]


def _as_bytes(data: object) -> bytes:
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise ConfigurationError(f"SSEDecoder.feed() takes bytes, got {type(data).__name__}")
