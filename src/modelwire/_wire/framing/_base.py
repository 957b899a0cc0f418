"""What every modelwire framing decoder shares: input checks, the size limit, error delivery.

:class:`~modelwire._wire.sse.SSEDecoder` follows the same rules with a hot path of its own, and
shares the error delivery (:class:`~modelwire._wire.sse._latch.ErrorLatch`); the decoders here
inherit them from :class:`IncrementalDecoder` so that each framing behaves the same way at
its edges:

* ``feed()`` takes ``bytes``/``bytearray``/``memoryview``; anything else, or a call after
  ``end()``, is a caller mistake (:class:`~modelwire.errors.ConfigurationError`).
* An error met inside ``feed()`` is raised at once if no frame was completed before the
  offending bytes; otherwise those frames are returned and the error is raised by the next
  ``feed()`` or ``end()``. Either way the decoder is then poisoned: every later call
  raises the same error class again. No frame after a bad byte is ever delivered.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from ...errors import ConfigurationError, ModelwireError
from ..sse._latch import ErrorLatch

__all__ = ["IncrementalDecoder", "check_max_event_bytes"]

T = TypeVar("T")


def check_max_event_bytes(value: object) -> int:
    """``value`` if it is a positive int (not a bool), else :class:`ConfigurationError`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"max_event_bytes must be a positive int, got {value!r}")
    return value


class IncrementalDecoder(ErrorLatch, Generic[T]):
    """Base of a sans-IO decoder: subclasses implement :meth:`_consume` and :meth:`_finish`."""

    __slots__ = ("_bytes_fed", "_ended", "_max")

    def __init__(self, max_event_bytes: int) -> None:
        self._max = check_max_event_bytes(max_event_bytes)
        self._bytes_fed = 0
        self._ended = False
        self._error: ModelwireError | None = None
        self._error_raised = False

    @property
    def max_event_bytes(self) -> int:
        """The size limit of one frame, in bytes."""
        return self._max

    @property
    def bytes_fed(self) -> int:
        """How many bytes :meth:`feed` has been given in total."""
        return self._bytes_fed

    def feed(self, data: bytes | bytearray | memoryview) -> list[T]:
        """Decode the next piece of the body; return the frames it completed, in order.

        ``data`` may end anywhere. See the class docstring for the errors and when an
        error is deferred to the next call.
        """
        if self._ended or self._error is not None or type(data) is not bytes:
            data = self._prepare(data)
        self._bytes_fed += len(data)
        if not data:
            return []
        out: list[T] = []
        try:
            self._consume(data, out)
        except ModelwireError as exc:
            if not out:
                self._fail(exc)
            self._error = exc  # deliver the frames before the error; raise on the next call
        return out

    def end(self) -> list[T]:
        """Signal the end of the body; raises if it ended in the middle of a frame.

        Returns the frames it completes (always none: a frame is delivered as soon as
        its last byte is fed). Calling ``end()`` again repeats the outcome.
        """
        self._ended = True
        if self._error is not None:
            self._raise_error()
        try:
            self._finish()
        except ModelwireError as exc:
            self._fail(exc)
        return []

    # -- for subclasses ---------------------------------------------------------------

    def _consume(self, data: bytes, out: list[T]) -> None:
        raise NotImplementedError

    def _finish(self) -> None:
        raise NotImplementedError

    # -- internals --------------------------------------------------------------------

    def _prepare(self, data: object) -> bytes:
        if self._ended:
            raise ConfigurationError(f"{type(self).__name__}.feed() after end()")
        if self._error is not None:
            self._raise_error()
        if isinstance(data, bytes):
            return data
        if isinstance(data, bytearray | memoryview):
            return bytes(data)
        raise ConfigurationError(
            f"{type(self).__name__}.feed() takes bytes, got {type(data).__name__}"
        )
