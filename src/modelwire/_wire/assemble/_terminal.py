"""The terminal ``error`` event of a stream that ends early: its content kept.

Both the call's state machine and the stream objects end a stream this way (DESIGN
§2a: everything that goes wrong after the request starts ends the stream with an
``error`` event whose message keeps all content received so far).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ...errors import AbortedError, StreamError
from ...events import DoneEvent, ErrorEvent
from ...types import AssistantMessage

__all__ = ["ABORT_TEXT", "TERMINAL", "aborted_from", "failed_from"]

#: The event types that end a stream.
TERMINAL = (DoneEvent, ErrorEvent)
ABORT_TEXT = "the stream was aborted by the caller"


def aborted_from(message: AssistantMessage) -> ErrorEvent:
    """The terminal ``error(aborted)`` event for ``message`` (a partial snapshot or a
    final message): its content kept, ``stop_reason`` "aborted"."""
    return failed_from(message, AbortedError(ABORT_TEXT))


def failed_from(message: AssistantMessage, exc: StreamError) -> ErrorEvent:
    """The terminal ``error`` event for ``message`` failed with ``exc``, content kept."""
    reason: Literal["error", "aborted"] = "aborted" if isinstance(exc, AbortedError) else "error"
    msg = msgspec.structs.replace(message, stop_reason=reason, error=exc.to_info())
    return ErrorEvent(reason=reason, message=msg, _partial=msg)
