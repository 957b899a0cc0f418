"""The values the SSE decoders yield (:class:`ServerSentEvent`, :class:`Frame`) and the
framing's fast path for a read of many whole blocks (:func:`runs`)."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

__all__ = ["Frame", "ServerSentEvent", "runs"]

# The size of the event-name tables (here and in the decoder): streams use a handful.
_EVENT_LINES_MAX = 64
# Event names (the bytes after ``event: ``) seen so far → their text, for :func:`runs`;
# shared by every framing, it stops growing at _EVENT_LINES_MAX entries.
_EVENT_NAMES: dict[bytes, str] = {}


class ServerSentEvent(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One dispatched Server-Sent Event (WHATWG "dispatch the event").

    Immutable and not tracked by the garbage collector, so that long streams stay linear.
    """

    event: str = "message"
    """The event type: the last ``event`` field of the block, or ``"message"`` when the
    block had none or it was empty."""

    data: str = ""
    """The ``data`` field values of the block joined with LF (``"\\n"``); the buffer's
    final LF is removed, so one empty ``data:`` line gives ``""``."""

    id: str = ""
    """The last event ID in effect at dispatch: the value of the most recent ``id`` field
    seen so far in the stream, in this block or an earlier one (``""`` if never set, or
    after an empty ``id`` field reset it). ``id`` values containing U+0000 are ignored."""

    retry: int | None = None
    """The reconnection time in milliseconds set by a valid ``retry`` field inside this
    event's block, else ``None``. The value in effect for the stream, which persists
    across events, is :attr:`SSEDecoder.retry`."""


class Frame(msgspec.Struct, frozen=True, gc=False):
    """One frame of a response body, whatever its framing: what a wire API decodes.

    ``event`` is the frame's type (an SSE event's type, ``"message"`` for an NDJSON
    line, the ``:event-type`` of an AWS event-stream message); ``data`` its payload
    as the bytes on the wire (an SSE event's ``data`` lines joined with LF, the line,
    the message payload), already checked to be UTF-8 — a wire API decodes it with
    msgspec straight from bytes. Immutable and not tracked by the garbage collector.
    """

    event: str
    """The frame's type."""
    data: bytes
    """The payload bytes (valid UTF-8)."""


def runs(
    data: bytes, out: list[Frame], bad_utf8: Callable[[UnicodeDecodeError, str], Exception]
) -> int:
    """Frames for the leading run of blocks that all have the shape of the first one,
    ``data: JSON`` or ``event: NAME`` + ``data: JSON``; returns how many bytes of
    ``data`` (clean state, LF only) they took, the rest being left to the block loop.

    ``bytes.split`` with the two-byte separator ``\n\n`` scans every byte, and a copy
    of each block's payload is made once more by slicing off ``data: ``: splitting on
    the whole separator between two such blocks (``\n\ndata: ``, ``\n\nevent: ``)
    skips through the bytes faster and yields each payload (or event line + data
    line) directly. A piece is taken only when it is exactly that shape (no other
    line feed): it is then the same block ``split(b"\n\n")`` would cut, since its
    first ``\n\n`` follows it. The first piece that is not, and the last (the
    remainder of the read), go to the block loop unchanged.
    """
    append = out.append
    taken = 0
    if data[:6] == b"data: ":
        parts = data[6:].split(b"\n\ndata: ")
        parts.pop()  # the remainder: never followed by a separator in this read
        for raw in parts:
            if 10 in raw:
                break
            if not raw.isascii():
                try:
                    raw.decode()
                except UnicodeDecodeError as exc:
                    raise bad_utf8(exc, "event data") from None
            append(Frame("message", raw))
            taken += len(raw) + 8  # "data: " + payload + "\n\n"
        return taken
    names = _EVENT_NAMES
    parts = data[7:].split(b"\n\nevent: ")
    parts.pop()
    for part in parts:
        # One search for the data line, and the payload copied once.
        name_b, sep, raw = part.partition(b"\ndata: ")
        if not sep or 10 in raw or 10 in name_b:
            break
        name = names.get(name_b)
        if name is None:
            try:
                name = name_b.decode() or "message"
            except UnicodeDecodeError:
                break  # the block loop raises the error, worded as always
            if len(names) < _EVENT_LINES_MAX:
                names[name_b] = name
        if not raw.isascii():
            try:
                raw.decode()
            except UnicodeDecodeError:
                break  # as above
        append(Frame(name, raw))
        taken += len(part) + 9  # "event: " + the two lines + "\n\n"
    return taken
