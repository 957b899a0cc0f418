"""How every framing decoder delivers an error (:class:`~modelwire._wire.sse.SSEDecoder` and
:class:`~modelwire._wire.framing.IncrementalDecoder` alike): once met, the decoder is
poisoned — the error is raised once as itself, then every later call raises a new
error of the same class from it, so no frame after a bad byte is ever delivered."""

from __future__ import annotations

from typing import NoReturn

from ...errors import ModelwireError

__all__ = ["ErrorLatch"]


class ErrorLatch:
    """The poisoned state (subclasses set both fields in their ``__init__``)."""

    __slots__ = ("_error", "_error_raised")

    _error: ModelwireError | None
    _error_raised: bool

    def _fail(self, exc: ModelwireError) -> NoReturn:
        self._error = exc
        self._error_raised = True
        raise exc

    def _raise_error(self) -> NoReturn:
        err = self._error
        assert err is not None
        if not self._error_raised:
            self._error_raised = True
            raise err
        raise type(err)(err.message) from err
