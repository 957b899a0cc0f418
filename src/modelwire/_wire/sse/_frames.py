"""The values the SSE decoders yield (:class:`ServerSentEvent`, :class:`Frame`) and the
framing's fast path for a read of many whole blocks (:func:`runs`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import msgspec

__all__ = ["Frame", "Run", "ServerSentEvent", "frames_of", "join", "run_values", "runs"]

T = TypeVar("T")

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


class Run(Frame, frozen=True, gc=False):
    """``count`` consecutive frames of one type, ``event``, whose payloads are JSON
    objects of one line each: ``data`` is those payloads joined with CR, so a wire API
    decodes them all with one ``msgspec.json.Decoder.decode_lines`` call (the framing
    yields these only when the pipeline asks, :meth:`SSEFraming.join_runs`).

    :func:`join` makes every CR of ``data`` a boundary between two frames (the
    payloads hold none), and each frame starts with ``{`` and ends with ``}``: ``}``
    then ``{`` (whitespace between) is never inside one JSON value, and a raw CR is
    never inside a string, so the sequential parse of ``decode_lines`` cuts exactly
    there — when it yields ``count`` values. When it yields another number (``{}{}``
    is two values) or fails, :func:`frames_of` gives the frames themselves, to be
    decoded one by one (errors then name the frame and field as they always do)."""

    count: int
    """How many frames: the CRs of ``data`` plus one."""


def frames_of(run: Run) -> list[Frame]:
    """The frames a :class:`Run` stands for, in order."""
    event = run.event
    return [Frame(event, raw) for raw in run.data.split(b"\r")]


def run_values(run: Run, lines: Callable[[bytes], list[T]]) -> list[T] | None:
    """The values of ``run`` by one ``lines`` call (a typed decoder's ``decode_lines``),
    or ``None`` when that fails or yields another number of values than the run has
    frames: the caller then decodes :func:`frames_of` one by one, for the worded error."""
    try:
        values = lines(run.data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    return values if len(values) == run.count else None


def join(data: bytes, out: list[Frame]) -> int:
    """Append one :class:`Run` for the leading whole blocks of ``data`` (clean state, LF
    only, at most ``max_event_bytes``) that all have one shape, ``data: {...}`` or
    ``event: NAME`` + ``data: {...}`` with the first block's NAME, every payload one
    line starting with ``{`` and ending with ``}``, all valid UTF-8; when every whole
    block is such, a last ``data: [DONE]`` block follows as its own frame. Returns how
    many bytes of ``data`` that took (0: nothing appended, the blocks take the ordinary
    path)."""
    end = data.rfind(b"\n\n")
    if end < 0:
        return 0
    done = data.endswith(b"\n\ndata: [DONE]", 0, end)
    if data[:6] == b"data: ":
        name = "message"
        start = 6
        sep = b"}\n\ndata: {"
    else:
        nl = data.find(b"\n", 7)
        if data[:7] != b"event: " or data[nl + 1 : nl + 7] != b"data: ":
            return 0
        head = data[7:nl]
        got = _EVENT_NAMES.get(head)
        if got is None:
            try:
                got = head.decode() or "message"
            except UnicodeDecodeError:
                return 0  # the block loop raises the error, worded as always
            if len(_EVENT_NAMES) < _EVENT_LINES_MAX:
                _EVENT_NAMES[head] = got
        name = got
        start = nl + 7
        sep = b"}\n\nevent: " + head + b"\ndata: {"
        done = False  # ``[DONE]`` is sent as an unnamed event, after unnamed ones
    src = data[start : end - 14] if done else data[start:end]
    # Each block boundary, ``}`` LF LF + the next block's head + ``{``, becomes ``}``
    # CR ``{`` (``data`` holds no CR); no LF may be left (another line in a block,
    # another kind of boundary), the first payload must start with ``{`` and the last
    # end with ``}``. A CR is JSON whitespace, never inside a string.
    joined = b"}\r{".join(src.split(sep))  # one scan (bytes.replace makes two)
    if joined[:1] != b"{":
        return 0
    bad = joined.find(b"\n")
    if bad < 0 and joined[-1:] != b"}":
        bad = len(joined)
    if bad >= 0:
        # A mixed read: the blocks before the first that is not of the shape still go
        # as one run (the rest takes the ordinary path).
        if joined[bad - 1 : bad + 2] == b"}\n\n":
            cut = bad  # the block before ends there
        else:
            cut = joined.rfind(b"}\r{", 0, bad) + 1
            if not cut:
                return 0
        joined = joined[:cut]
        n = joined.count(b"\r")
        end = start + cut + n * (len(sep) - 3)
        done = False
    else:
        n = (len(src) - len(joined)) // (len(sep) - 3)
    if not joined.isascii():
        try:
            joined.decode()
        except UnicodeDecodeError:
            return 0  # as above
    out.append(Run(name, joined, n + 1))
    if done:
        out.append(Frame("message", b"[DONE]"))
    return end + 2


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
