"""What every protocol type shares: the frozen base, checks, the clock."""

from __future__ import annotations

import time
from typing import Any, Literal, TypeAlias

import msgspec

from ..errors import ConfigurationError

StopReason: TypeAlias = Literal["stop", "length", "tool_use", "error", "aborted"]
"""How a response ended (``AssistantMessage.stop_reason``); a partial snapshot has
``None``.

``"stop"``: the model finished its answer. ``"length"``: it hit ``max_tokens``
(the text is cut; tool calls of such a response are not trusted). ``"tool_use"``:
it called tools; execute them and send the results to continue. ``"error"``: the
response failed, ``message.error`` says why. ``"aborted"``: the caller cancelled
it.
"""


def now_ms() -> int:
    """Milliseconds since the epoch: the default ``timestamp`` of every message."""
    return time.time_ns() // 1_000_000


def _set(obj: Any, name: str, value: Any) -> None:
    msgspec.structs.force_setattr(obj, name, value)


def _require_str(owner: str, field: str, value: object, *, non_empty: bool = False) -> None:
    if not isinstance(value, str):
        raise ConfigurationError(f"{owner}.{field} must be a string, got {type(value).__name__}")
    if non_empty and not value:
        raise ConfigurationError(f"{owner}.{field} must be a non-empty string")


class _Value(msgspec.Struct, frozen=True, kw_only=True):
    pass
