"""A body read whole: the answer of an endpoint that does not stream (a token count).

:class:`WholeBody` is a :class:`~modelwire._wire.framing.Framing` whose one frame is
the complete body, delivered at its end; :class:`WholeAnswer` is the
:class:`~modelwire._wire.pipeline.Decoding` that reads that frame with a parse
function into deltas — so such a request runs as a :class:`~modelwire._call.Call`,
with the retries, deadlines, transports and redaction of every model call, and its
number arrives as the final message's usage.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import ConfigurationError, EventTooLargeError, TruncatedStreamError
from .deltas import Delta, EndOfStream, Finish, UsageUpdate
from .framing._base import check_max_event_bytes
from .sse import Frame

if TYPE_CHECKING:
    from ..types import Model
    from .framing import Framing

__all__ = ["BODY_EVENT", "WholeAnswer", "WholeBody"]

#: The type of the one frame (the whole body).
BODY_EVENT = "body"


class WholeBody:
    """The body as one frame at its end; over ``max_event_bytes`` it is an
    :class:`~modelwire.errors.EventTooLargeError`, an empty body a truncation."""

    __slots__ = ("_buf", "_ended", "_max")

    def __init__(self, max_event_bytes: int) -> None:
        self._max = check_max_event_bytes(max_event_bytes)
        self._buf = bytearray()
        self._ended = False

    @property
    def bytes_fed(self) -> int:
        return len(self._buf)

    @property
    def max_event_bytes(self) -> int:
        return self._max

    def feed(self, data: bytes | bytearray | memoryview) -> list[Frame]:
        if self._ended:
            raise ConfigurationError("WholeBody.feed() after end()")
        if not isinstance(data, bytes | bytearray | memoryview):
            raise ConfigurationError(f"WholeBody.feed() takes bytes, got {type(data).__name__}")
        self._buf += data
        if len(self._buf) > self._max:
            raise EventTooLargeError(f"the answer is over {self._max} bytes (max_event_bytes)")
        return []

    def end(self) -> list[Frame]:
        self._ended = True
        if not self._buf:
            raise TruncatedStreamError("the answer ended before any byte of its body")
        return [Frame(BODY_EVENT, bytes(self._buf))]


class _Decoder:
    __slots__ = ("_done", "_parse")

    def __init__(self, parse: Callable[[bytes], int]) -> None:
        self._parse = parse
        self._done = False

    def decode(self, frame: Frame) -> list[Delta]:
        n = self._parse(frame.data)
        self._done = True
        return [UsageUpdate(input=n), Finish("stop"), EndOfStream()]

    def end(self) -> list[Delta]:
        if not self._done:
            raise TruncatedStreamError("the answer ended before its body was read")
        return []


class WholeAnswer:
    """The decoding of a whole JSON answer whose one number ``parse`` reads (a
    ``malformed_chunk`` when it cannot): it becomes the message's ``usage.input``."""

    __slots__ = ("_parse", "name")

    def __init__(self, name: str, parse: Callable[[bytes], int]) -> None:
        self.name = name
        self._parse = parse

    def framing(self, max_event_bytes: int) -> Framing:
        return WholeBody(max_event_bytes)

    def new_decoder(self, model: Model | None) -> _Decoder:
        return _Decoder(self._parse)


if TYPE_CHECKING:
    from .pipeline import Decoding, WireDecoder

    def _conforms(
        w: WholeBody, a: WholeAnswer, d: _Decoder
    ) -> tuple[Framing, Decoding, WireDecoder]:
        return w, a, d
