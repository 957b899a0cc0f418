"""The ``openai-chat`` decoder with compat ``leaked_tool_calls``: tool calls a server
leaked into the text become calls (the rules are in :mod:`modelwire._apis._leaked`).

A subclass, chosen when the compat flag is on, so the ordinary decoder's per-delta path
pays nothing for it: it passes the text deltas the plain decoder produced through a
:class:`~modelwire._apis._leaked.LeakedText` and turns what it held back into text or
calls just before the finish (or the end of the stream).
"""

from __future__ import annotations

from ..._wire.deltas import Delta, EndOfStream, Finish, TextDelta, ToolCallDelta
from ..._wire.sse import Frame
from .._leaked import LeakedCall, LeakedText
from ._compat import ChatCompat
from .decode import ChatDecoder

__all__ = ["LeakyChatDecoder"]

_TEXT = "text"  # the plain decoder's text key


class LeakyChatDecoder(ChatDecoder):
    """:class:`ChatDecoder` plus leaked tool calls, once told the declared tools."""

    __slots__ = ("_held", "_leaks")

    def __init__(self, compat: ChatCompat) -> None:
        super().__init__(compat)
        self._held: LeakedText | None = None
        self._leaks = 0

    def declare_tools(self, names: tuple[str, ...]) -> None:
        """The request's tool names (the client tells every decoder that asks); with
        none, nothing can be a call and the text passes as it came."""
        self._held = LeakedText(frozenset(names)) if names else None

    def decode(self, frame: Frame) -> list[Delta]:
        return self._route(super().decode(frame))

    def end(self) -> list[Delta]:
        return self._route(super().end())

    def _route(self, deltas: list[Delta]) -> list[Delta]:
        held = self._held
        if held is None:
            return deltas
        out: list[Delta] = []
        for d in deltas:
            if type(d) is TextDelta and d.key == _TEXT:
                shown = held.feed(d.text)
                if shown:
                    out.append(TextDelta(_TEXT, shown))
                continue
            if type(d) is Finish or type(d) is EndOfStream:
                for piece in held.finish():
                    if isinstance(piece, LeakedCall):
                        n = self._leaks
                        self._leaks += 1
                        out.append(
                            ToolCallDelta(
                                ("leaked", n), f"call_leaked_{n}", piece.name, piece.arguments
                            )
                        )
                    else:
                        out.append(TextDelta(_TEXT, piece))
            out.append(d)
        return out
