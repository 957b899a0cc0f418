"""The runs of :class:`~modelwire._wire.framing.eventstream.EventStreamDecoder`: consecutive
messages of one type, their payloads joined as one :class:`~modelwire._wire.sse._frames.Run`
for one ``decode_lines`` call (the framing yields them when the pipeline asks,
``join_runs``)."""

from __future__ import annotations

from typing import Any, Protocol

from ..sse._frames import Frame, Run

__all__ = ["Runs"]


class _Reader(Protocol):
    """What a run needs of its decoder: where the run began, and the worded UTF-8 error."""

    _offset: int
    _count: int

    def _utf8_at(self, payload: bytes, offset: int, count: int, delta: int) -> None: ...


class Runs:
    """The run being collected in one ``feed``: the messages after its first whose
    header section is the same bytes, so the same frame ``event``; flushed to ``out``
    as one :class:`Run`, or as its frames unless no payload holds a CR and each
    boundary is ``}`` CR ``{`` (an LF, JSON whitespace like a CR, may stay:
    ``decode_lines`` reads values, not lines). The payloads' UTF-8 is checked
    once for the run; when it fails, the frames before the bad payload are flushed and
    its error is raised, naming its message and byte as the frame path does."""

    __slots__ = ("add", "count", "event", "events", "first", "headers", "headers_len",
                 "offset", "out", "overhead", "payloads", "reader")  # fmt: skip

    def __init__(
        self, reader: _Reader, out: list[Any], events: dict[bytes, str], overhead: int
    ) -> None:
        self.reader = reader
        self.out = out
        self.events = events  # header sections → their frame event, as the reader caches
        self.overhead = overhead  # a message's bytes besides its headers and payload
        self.event = ""
        self.first = Frame("", b"")  # the frame that began the run
        self.headers = b""
        self.headers_len = -1  # no run: no header section has this length
        self.payloads: list[bytes] = []
        self.add = self.payloads.append
        self.offset = self.count = 0  # the run's first message

    def begin(self, headers: bytes, frame: Any) -> None:
        if self.events.get(headers) == frame.event:
            # A frame whose data is its payload (an error's :error-message is not).
            self.event, self.headers, self.headers_len = frame.event, headers, len(headers)
            self.first = frame
            self.payloads = [frame.data]
            self.add = self.payloads.append
            self.offset, self.count = self.reader._offset, self.reader._count
        else:
            self.out.append(frame)

    def flush(self) -> None:
        payloads, self.payloads, self.headers_len = self.payloads, [], -1
        n = len(payloads)
        if n == 1:
            self.out.append(self.first)
        elif n:
            joined = b"\r".join(payloads)
            if not joined.isascii():
                try:
                    joined.decode()
                except UnicodeDecodeError:
                    self._bad_utf8(payloads)
            # No CR in a payload, and every boundary ``}`` CR ``{``: the CRs of ``data``
            # are its boundaries (where frames_of cuts), and a boundary is never inside
            # one JSON value, so when decode_lines yields ``n`` values each payload is
            # one (see Run).
            if joined.count(b"}\r{") == n - 1 and joined.count(b"\r") == n - 1:
                self.out.append(Run(self.event, joined, n))
            else:
                event = self.event
                self.out.extend([Frame(event, p) for p in payloads])

    def _bad_utf8(self, payloads: list[bytes]) -> None:
        """Flush the frames before the first payload that is not UTF-8; raise its error."""
        # The first payload was checked by the frame that began the run.
        offset, count, fixed = self.offset, self.count, self.overhead + len(self.headers)
        for k, payload in enumerate(payloads):
            if k and not payload.isascii():
                try:
                    payload.decode()
                except UnicodeDecodeError:
                    self.out.extend([Frame(self.event, p) for p in payloads[:k]])
                    self.reader._utf8_at(payload, offset, count, fixed - 4)
            offset += fixed + len(payload)
            count += 1
