"""Sans-IO newline-delimited JSON framing: bytes in, one frame per line out.

Follows the NDJSON spec (https://github.com/ndjson/ndjson-spec, ndjson.org) and JSON Lines
(https://jsonlines.org): each line is one JSON text, UTF-8, terminated by LF; a CR before the
LF is tolerated (it is not part of the frame). Empty lines — and lines of JSON whitespace only
(space, tab, CR) — are ignored, which the NDJSON spec allows ("MAY silently ignore empty
lines"). The first user is Ollama's native ``POST /api/chat`` (``application/x-ndjson``).

No JSON is parsed here: the frame is ``Frame("message", line)`` — the line's bytes, checked
to be UTF-8 — and the wire API's ``decode(frame)`` parses them as it does an SSE event's
payload, with its own field-path errors. Deliberate choices, each raising a typed error instead of guessing:

1. **An unterminated last line is a truncation** (:class:`~modelwire.errors.TruncatedStreamError`
   from :meth:`NDJSONDecoder.end`), even when it happens to be a complete JSON value. The spec
   only says each JSON text is *followed by* LF, and Ollama's server writes every line as
   ``json.Marshal(value)`` plus ``"\\n"`` (``streamResponse`` in ollama's
   ``server/routes.go``): a body that ends without that LF was cut, and a cut line can
   still parse (``12`` of ``123``, ``1e1`` of ``1e10``), so "it parses" does not prove it
   is whole. A pending line of whitespace only is dropped.
2. **Invalid UTF-8 is an error** (:class:`~modelwire.errors.MalformedChunkError`, with the
   byte offset in the stream), never U+FFFD.
3. **A line over ``max_event_bytes``** (LF and a CR before it not counted) raises
   :class:`~modelwire.errors.EventTooLargeError` as soon as its pending bytes exceed the
   limit, before the line break arrives.

A UTF-8 BOM is not stripped (RFC 8259 §8.1 forbids sending one); it reaches the JSON parser,
which rejects it with a typed error.

Linear however the body is cut: a line still waiting for its LF is kept as a list of pieces
and joined once when the LF arrives; complete lines are split with one ``bytes.split`` or
``str.split`` per chunk, never byte by byte in Python.
"""

from __future__ import annotations

from ...errors import EventTooLargeError, MalformedChunkError, TruncatedStreamError
from ..sse import DEFAULT_MAX_EVENT_BYTES, Frame
from ._base import IncrementalDecoder

__all__ = ["NDJSONDecoder"]

_WS_BYTES = b" \t\r"


class NDJSONDecoder(IncrementalDecoder[Frame]):
    """Incremental, sans-IO decoder of a newline-delimited JSON body (a :class:`Framing`).

    ::

        decoder = NDJSONDecoder()
        for chunk in body_chunks:
            for frame in decoder.feed(chunk):
                handle(json.loads(frame.data))
        decoder.end()  # raises TruncatedStreamError if the last line has no LF

    Each non-blank line becomes ``Frame("message", line)`` (bytes) with a
    trailing CR removed; the frames never depend on where the body was cut.

    Errors: :class:`~modelwire.errors.MalformedChunkError` (invalid UTF-8, with its byte
    offset), :class:`~modelwire.errors.EventTooLargeError` (a line over
    ``max_event_bytes``), :class:`~modelwire.errors.TruncatedStreamError` (from
    :meth:`end`: the last line has no LF), :class:`~modelwire.errors.ConfigurationError`
    (``feed()`` after ``end()``, or not bytes). When :meth:`feed` meets an error after
    completing some frames it returns those and raises from the next call; the decoder is
    then poisoned, as :class:`~modelwire._wire.sse.SSEDecoder` is.

    Args:
        max_event_bytes: The longest line accepted, in bytes.
    """

    __slots__ = ("_line_start", "_tail", "_tail_len")

    def __init__(self, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        super().__init__(max_event_bytes)
        # Pieces of the line still waiting for its LF, joined once when it arrives.
        self._tail: list[bytes] = []
        self._tail_len = 0
        # Stream offset of the first byte of the pending line (for error messages).
        self._line_start = 0

    def _consume(self, data: bytes, out: list[Frame]) -> None:
        cut = data.rfind(b"\n")
        tail = self._tail
        if cut < 0:
            # The middle of a line: keep the piece, scan nothing twice.
            tail.append(data)
            self._tail_len += len(data)
            if self._tail_len > self._max:
                self._check_pending()
            return
        if tail:
            tail.append(data[:cut])
            head = b"".join(tail)
        else:
            head = data[:cut]
        start = self._line_start
        rest = data[cut + 1 :]
        self._tail = [rest] if rest else []
        self._tail_len = len(rest)
        self._line_start = start + len(head) + 1
        self._lines(head, start, out)
        if self._tail_len > self._max:
            self._check_pending()

    def _lines(self, head: bytes, start: int, out: list[Frame]) -> None:
        """Emit the complete lines of ``head`` (lines joined by LF, the last LF removed)."""
        append = out.append
        if len(head) <= self._max:
            # Fast path: no line can be too large, so check the UTF-8 once (ASCII is
            # valid as it is) and split the bytes.
            valid = head.isascii()
            if not valid:
                try:
                    head.decode()
                    valid = True
                except UnicodeDecodeError:
                    pass  # the line loop below finds the line and raises, in order
            if valid:
                for line in head.split(b"\n"):
                    if line[-1:] == b"\r":
                        line = line[:-1]
                    if not line or (line[0] in _WS_BYTES and not line.strip(_WS_BYTES)):
                        continue
                    append(Frame("message", line))
                return
        offset = start
        for raw in head.split(b"\n"):
            line_start = offset
            offset += len(raw) + 1
            if raw[-1:] == b"\r":
                raw = raw[:-1]
            if len(raw) > self._max:
                raise self._too_large(line_start, len(raw))
            if not raw.strip(_WS_BYTES):
                continue
            try:
                raw.decode()
            except UnicodeDecodeError as exc:
                bad = raw[exc.start : exc.end]
                raise MalformedChunkError(
                    f"NDJSON stream is not valid UTF-8: {exc.reason} (byte(s) {bad.hex(' ')}) "
                    f"at byte offset {line_start + exc.start} of the stream, in the line "
                    f"starting at byte offset {line_start}; the server sent bytes that are "
                    "not UTF-8 JSON"
                ) from None
            append(Frame("message", raw))

    def _check_pending(self) -> None:
        """Raise if the pending line is already over the limit (a final CR may be a CRLF's)."""
        size = self._tail_len
        if self._tail[-1][-1] == 13:
            size -= 1
        if size > self._max:
            raise self._too_large(self._line_start, size, pending=True)

    def _too_large(self, line_start: int, size: int, pending: bool = False) -> EventTooLargeError:
        return EventTooLargeError(
            f"NDJSON line exceeds max_event_bytes={self._max} bytes: the line starting at "
            f"byte offset {line_start} has {'at least ' if pending else ''}{size} bytes; "
            "raise max_event_bytes if such lines are expected"
        )

    def _finish(self) -> None:
        last = b"".join(self._tail)
        self._tail = []
        self._tail_len = 0
        if last.strip(_WS_BYTES):
            raise TruncatedStreamError(
                f"NDJSON stream ended in the middle of a line: the last {len(last)} bytes "
                f"(from byte offset {self._line_start}) have no line break; every line ends "
                "with LF (Ollama writes one after each JSON value), so the body was cut — "
                "retry the request"
            )
