"""Typed access to a list of events in tests: the list a stream or an assembler
produced ends with one terminal event, whose message the tests read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from modelwire.events import DoneEvent, ErrorEvent, Event
from modelwire.types import AssistantMessage

__all__ = ["final", "plain", "same_at_every_split", "terminal"]


def terminal(events: Sequence[Event]) -> DoneEvent | ErrorEvent:
    """The last event, which must be the terminal ``done`` or ``error`` event."""
    last = events[-1]
    assert isinstance(last, DoneEvent | ErrorEvent), f"the events end with {last.type}"
    return last


def final(events: Sequence[Event]) -> AssistantMessage:
    """The message of the terminal event that ends ``events``."""
    return terminal(events).message


def _untimed(value: Any) -> Any:
    # A message's timestamp is the time it was made, not part of the decoding.
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k != "timestamp"}
    if isinstance(value, list | tuple):
        return [_untimed(v) for v in value]
    return value


def plain(events: Sequence[Event]) -> list[Any]:
    """The events as plain data without timestamps, to compare two decodings."""
    return [_untimed(e.to_dict()) for e in events]


def same_at_every_split(api: str, body: bytes) -> None:
    """Rule 1: ``body`` decodes to the same events fed whole, byte by byte, and cut in
    two at every offset."""
    from modelwire._client._replay import replay

    whole = plain(replay(api, [body]))
    assert plain(replay(api, [body[i : i + 1] for i in range(len(body))])) == whole
    for cut in range(1, len(body)):
        assert plain(replay(api, [body[:cut], body[cut:]])) == whole, cut
