"""The stream objects of a call made with ``output=``.

The same streams as every call (:mod:`modelwire._client._streams`), with two additions:
the terminal ``done`` event is replaced by :meth:`OutputPlan.finish`'s (the
message carrying ``parsed``, or ``error(output_invalid)``), and
``partial_output`` reads the output as it stands (display only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...events import DoneEvent, ErrorEvent, Event
from .._streams import AssistantMessageStream, SyncAssistantMessageStream

if TYPE_CHECKING:
    from ._plan import OutputPlan

__all__ = ["OutputStream", "SyncOutputStream", "with_plan"]


class OutputStream(AssistantMessageStream):
    """:class:`~modelwire._client._streams.AssistantMessageStream` whose final message is
    validated against the requested output."""

    def __init__(self, inner: AssistantMessageStream, plan: OutputPlan) -> None:
        super().__init__(inner._producer, queue_size=inner._queue_size)
        self._plan = plan
        self._last: Event | None = None
        self._finished = False

    async def __anext__(self) -> Event:
        event = await super().__anext__()
        if isinstance(event, DoneEvent) and not self._finished:
            # The base class recurses through this method: finish the terminal once.
            self._finished = True
            event = self._plan.finish(event)
            self._terminal = event
        elif not isinstance(event, DoneEvent | ErrorEvent):
            self._last = event
        return event

    @property
    def partial_output(self) -> Any:
        """The output parsed so far from the latest event (jiter's partial mode): a
        dict, list or scalar to display, never validated; ``None`` before any JSON."""
        from ._plan import partial_value

        if self._terminal is not None:
            return partial_value(self._terminal.message, self._plan.mode)
        return None if self._last is None else partial_value(self._last.partial, self._plan.mode)


class SyncOutputStream(SyncAssistantMessageStream):
    """The sync twin of :class:`OutputStream`."""

    def __init__(self, inner: SyncAssistantMessageStream, plan: OutputPlan) -> None:
        super().__init__(inner._produce)
        self._plan = plan
        self._last: Event | None = None

    def _deliver(self, event: DoneEvent | ErrorEvent) -> Event:
        if isinstance(event, DoneEvent):
            event = self._plan.finish(event)
        return super()._deliver(event)

    def __next__(self) -> Event:
        event = super().__next__()
        if not isinstance(event, DoneEvent | ErrorEvent):
            self._last = event
        return event

    @property
    def partial_output(self) -> Any:
        """The output parsed so far (see :attr:`OutputStream.partial_output`)."""
        from ._plan import partial_value

        if self._terminal is not None:
            return partial_value(self._terminal.message, self._plan.mode)
        return None if self._last is None else partial_value(self._last.partial, self._plan.mode)


def with_plan(stream: Any, plan: OutputPlan) -> Any:
    """``stream`` (sync or async) validated against ``plan`` at its end."""
    if isinstance(stream, SyncAssistantMessageStream):
        return SyncOutputStream(stream, plan)
    return OutputStream(stream, plan)
