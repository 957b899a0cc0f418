"""Where a stream of reads stands in the SSE grammar: inside a UTF-8 character, inside
the payload of a ``data:`` line (and inside a JSON string there), inside another line,
between the lines of one event, or on an event boundary (the trace's ``ReadCut``)."""

from __future__ import annotations

import re
from typing import Literal, TypeAlias

__all__ = ["ReadCut", "ReadPosition"]

#: Where a read (or the whole body) ended: inside a UTF-8 character (``utf8``), inside
#: the payload of a ``data:`` line (``json``), inside another field line (``line``),
#: between the lines of one event (``event``), or on an event boundary (``None``).
ReadCut: TypeAlias = Literal["utf8", "json", "line", "event"] | None

# A line still waiting for its line break is kept up to this many bytes, to tell a
# cut inside a JSON string from one between tokens; longer lines report no detail.
_PENDING_LIMIT = 1 << 20
_ESCAPE = re.compile(rb"\\.", re.DOTALL)


class ReadPosition:
    """Follows the reads of one body, never the SSE decoder itself."""

    __slots__ = ("_boundary", "_content", "_pending", "_pending_over", "_tail", "pending_n")

    def __init__(self) -> None:
        self._tail = b""
        self._pending = bytearray()
        self.pending_n = 0  # its length (``_pending`` keeps only a head past the limit)
        self._pending_over = False
        self._boundary = True
        self._content = False

    def track(self, data: bytes, first: bool) -> None:
        # The unfinished line and whether the last complete line was blank — enough
        # to say where a read ended without touching the SSE decoder (WHATWG: lines
        # end at CR, LF or CRLF; a blank line dispatches the event).
        if first and data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        self._tail = (self._tail + data)[-4:]
        if not self._content and data.strip(b"\r\n"):
            self._content = True
        last = max(data.rfind(b"\n"), data.rfind(b"\r"))
        if last < 0:
            self.pending_n += len(data)
            if not self._pending_over:
                self._pending += data
                if len(self._pending) > _PENDING_LIMIT:
                    self._pending_over = True
                    del self._pending[16:]
            return
        self._pending = bytearray(data[last + 1 :])
        self.pending_n = len(self._pending)
        self._pending_over = len(self._pending) > _PENDING_LIMIT
        if self._pending_over:
            del self._pending[16:]
        norm = self._tail.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if not self._pending:
            # Only line breaks so far is a boundary too: nothing is pending.
            self._boundary = norm.endswith(b"\n\n") or not self._content

    def where(self) -> tuple[ReadCut, tuple[int, int] | None, bool | None]:
        pending = bytes(self._pending)
        utf8 = _utf8_cut(self._tail) if pending else None
        in_string = None
        is_data = pending.startswith(b"data")
        if is_data and not self._pending_over:
            value = pending[5:] if pending.startswith(b"data:") else b""
            unescaped = _ESCAPE.sub(b"", value.lstrip())
            in_string = unescaped.count(b'"') % 2 == 1
        if utf8 is not None:
            return "utf8", utf8, in_string
        if pending:
            return ("json" if is_data else "line"), None, in_string
        return (None if self._boundary else "event"), None, None


def _utf8_cut(tail: bytes) -> tuple[int, int] | None:
    """``(received, needed)`` when ``tail`` ends inside a UTF-8 sequence (RFC 3629 §3)."""
    for i in range(1, min(4, len(tail)) + 1):
        b = tail[-i]
        if b & 0xC0 == 0x80:  # a continuation byte: keep looking for the lead byte
            continue
        need = 4 if b >= 0xF0 else 3 if b >= 0xE0 else 2 if b >= 0xC0 else 1
        return (i, need) if i < need else None
    return None
