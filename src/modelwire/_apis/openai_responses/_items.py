"""What the Responses decoder remembers of each output item, and the signature a message
item's text carries (see the package docstring)."""

from __future__ import annotations

from collections.abc import Hashable

from ..._wire.deltas import Delta, TextDelta, ThinkingDelta
from .._common import dumps

__all__ = ["fill", "text_signature"]

# The kinds of output item a delta may continue.
_TEXT, _THINKING, _TOOL, _IGNORED, _CLIENT = 0, 1, 2, 3, 4
_PART_SEP = "\n\n"


class _ItemState:
    """What the decoder remembers of one output item."""

    __slots__ = ("cites", "closed", "kind", "part", "pieces", "signature")

    def __init__(self, kind: int) -> None:
        self.kind = kind
        self.closed = False
        self.pieces: list[str] = []  # text/thinking streamed so far (done-event fill)
        self.part: tuple[str, int] | None = None  # the reasoning part last streamed
        self.signature: str | None = None
        # content part index → annotations already streamed (annotation.added), so the
        # done item's copy of them is not cited twice.
        self.cites: dict[int, int] | None = None


def text_signature(item_id: str | None, phase: str | None) -> str | None:
    """The ``TextContent.signature`` of a message item: its id, or
    ``{"id":…,"phase":…}`` when it has a phase (package docstring)."""
    if not item_id:
        return None
    if phase is None:
        return item_id
    return dumps({"id": item_id, "phase": phase}).decode()


def fill(
    key: Hashable,
    st: _ItemState,
    full: str,
    out: list[Delta],
    cls: type[TextDelta] | type[ThinkingDelta],
) -> None:
    """Append the part of the finished item's text that no delta carried."""
    if not full:
        return
    streamed = "".join(st.pieces)
    if len(full) > len(streamed) and full.startswith(streamed):
        out.append(cls(key, full[len(streamed) :]))
    # Otherwise the deltas already said it all, or said something else: what
    # was streamed stands (events already sent are never taken back).
