"""Typed access to a list of events in tests: the list a stream or an assembler
produced ends with one terminal event, whose message the tests read."""

from __future__ import annotations

from collections.abc import Sequence

from modelwire.events import DoneEvent, ErrorEvent, Event
from modelwire.types import AssistantMessage

__all__ = ["final", "terminal"]


def terminal(events: Sequence[Event]) -> DoneEvent | ErrorEvent:
    """The last event, which must be the terminal ``done`` or ``error`` event."""
    last = events[-1]
    assert isinstance(last, DoneEvent | ErrorEvent), f"the events end with {last.type}"
    return last


def final(events: Sequence[Event]) -> AssistantMessage:
    """The message of the terminal event that ends ``events``."""
    return terminal(events).message
