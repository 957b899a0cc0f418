"""Sans-IO response framings: bytes in, frames out, beside :mod:`modelwire._wire.sse`.

A *framing* cuts a streamed HTTP body into frames; a wire API then decodes each frame. Three
framings exist, all with the same guarantees (split anywhere, truncation reported by
``end()``, a per-frame size limit checked as soon as it is known, invalid UTF-8 typed,
errors from :mod:`modelwire.errors`, ``feed()`` after ``end()`` a caller mistake):

* :class:`~modelwire._wire.sse.SSEFraming` — ``text/event-stream`` (OpenAI, Anthropic, Gemini),
  the public :class:`~modelwire._wire.sse.SSEDecoder` yielding frames;
* :class:`NDJSONDecoder` — newline-delimited JSON (Ollama's native ``/api/chat``);
* :class:`EventStreamDecoder` — the AWS binary event stream (Amazon Bedrock
  ``ConverseStream``), with :func:`encode_message`/:func:`encode_event` for the mock server.

Every framing yields one value type, :class:`Frame`: ``event`` is the frame's type and
``data`` its payload as bytes, checked to be UTF-8 but not decoded (an SSE event's type
and data; ``"message"`` and the line for NDJSON; the ``:event-type`` header and the payload
for the AWS event stream). A wire API decodes ``data`` with msgspec straight from the
bytes, so no payload is turned into a ``str`` first, and a non-SSE API plugs into the
pipeline by choosing its framing. The AWS event stream's typed headers stay available from
the lower-level :class:`EventStreamMessageDecoder`.

:class:`Framing` is the structural type the pipeline holds (checked by mypy below and by
the tests).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..sse import Frame, SSEFraming
from .eventstream import (
    EventStreamDecoder,
    EventStreamMessage,
    EventStreamMessageDecoder,
    HeaderValue,
    Int8,
    Int16,
    Int32,
    Int64,
    Timestamp,
    decode_messages,
    encode_event,
    encode_exception,
    encode_message,
)
from .ndjson import NDJSONDecoder

__all__ = [  # noqa: RUF022 - plain sorted() order, as tests/test_framing.py checks
    "EventStreamDecoder",
    "EventStreamMessage",
    "EventStreamMessageDecoder",
    "Frame",
    "Framing",
    "HeaderValue",
    "Int16",
    "Int32",
    "Int64",
    "Int8",
    "NDJSONDecoder",
    "SSEFraming",
    "Timestamp",
    "decode_messages",
    "encode_event",
    "encode_exception",
    "encode_message",
]


@runtime_checkable
class Framing(Protocol):
    """An incremental, sans-IO decoder of a streamed body into frames.

    Feed it the body's bytes as they arrive, split anywhere; each call returns the frames
    completed so far, in order, and never depends on where the body was cut. ``end()``
    signals the end of the body and raises
    :class:`~modelwire.errors.TruncatedStreamError` if it stopped inside a frame.
    """

    @property
    def bytes_fed(self) -> int:
        """How many bytes :meth:`feed` has been given in total."""
        ...

    @property
    def max_event_bytes(self) -> int:
        """The size limit of one frame, in bytes."""
        ...

    def feed(self, data: bytes | bytearray | memoryview) -> list[Frame]:
        """Decode the next piece of the body; return the frames it completed.

        Args:
            data: The next bytes of the body, split anywhere.
        """
        ...

    def end(self) -> list[Frame]:
        """Signal the end of the body; raise if it ended in the middle of a frame."""
        ...


if TYPE_CHECKING:
    # mypy --strict proves that each decoder is a Framing (a mismatch fails `make types`).
    def _conforms(sse: SSEFraming, nd: NDJSONDecoder, aws: EventStreamDecoder) -> list[Framing]:
        return [sse, nd, aws]
