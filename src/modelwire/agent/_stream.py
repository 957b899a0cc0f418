"""The stream of one agent run, async and sync: its events as they happen, then the run."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator

from ._run import AgentRun
from .events import AgentEndEvent, AgentEvent

__all__ = ["AgentStream", "SyncAgentStream"]


class AgentStream:
    """Async iterator of agent events for one run; ``await result()`` gives the run.

    ``abort()`` aborts the run (the stream then ends with ``agent_end``);
    ``aclose()`` aborts and drains it. Also an async context manager.
    """

    def __init__(
        self,
        events: Callable[[], AsyncIterator[AgentEvent]],
        abort: Callable[[], None],
    ) -> None:
        # ``events`` starts the run (the agent's loop); ``abort`` is ``Agent.abort``.
        self._events = events
        self._abort = abort
        self._gen: AsyncIterator[AgentEvent] | None = None
        self._run: AgentRun | None = None
        self._exhausted = False

    def __aiter__(self) -> AgentStream:
        return self

    async def __anext__(self) -> AgentEvent:
        if self._exhausted:
            raise StopAsyncIteration
        if self._gen is None:
            self._gen = self._events()
        try:
            ev = await self._gen.__anext__()
        except StopAsyncIteration:
            self._exhausted = True
            raise
        if isinstance(ev, AgentEndEvent):
            self._run = ev.run
        return ev

    async def result(self) -> AgentRun:
        """Run to the end; the :class:`AgentRun`."""
        async for _ in self:
            pass
        if self._run is None:
            raise RuntimeError("the agent stream ended without agent_end")
        return self._run

    @property
    def run(self) -> AgentRun | None:
        """The run, once ``agent_end`` was yielded."""
        return self._run

    def abort(self) -> None:
        """Abort the run (callable from any thread)."""
        if self._gen is not None and not self._exhausted:
            self._abort()

    async def aclose(self) -> None:
        """Abort if still running, then drain to ``agent_end``."""
        if self._gen is None or self._exhausted:
            return
        if self._run is None:
            self._abort()
        async for _ in self:
            pass

    async def __aenter__(self) -> AgentStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class SyncAgentStream:
    """Iterator twin of :class:`AgentStream` for ``Agent.stream_sync``; ``result()``
    gives the run. ``abort()`` (from any thread) aborts the run; ``close()`` aborts
    and drains it. Also a context manager."""

    def __init__(
        self,
        events: Callable[[], Iterator[AgentEvent]],
        abort: Callable[[], None],
    ) -> None:
        self._events = events
        self._abort = abort
        self._gen: Iterator[AgentEvent] | None = None
        self._run: AgentRun | None = None
        self._exhausted = False

    def __iter__(self) -> SyncAgentStream:
        return self

    def __next__(self) -> AgentEvent:
        if self._exhausted:
            raise StopIteration
        if self._gen is None:
            self._gen = self._events()
        try:
            ev = next(self._gen)
        except StopIteration:
            self._exhausted = True
            raise
        if isinstance(ev, AgentEndEvent):
            self._run = ev.run
        return ev

    def result(self) -> AgentRun:
        """Run to the end; the :class:`AgentRun`."""
        for _ in self:
            pass
        if self._run is None:
            raise RuntimeError("the agent stream ended without agent_end")
        return self._run

    @property
    def run(self) -> AgentRun | None:
        """The run, once ``agent_end`` was yielded."""
        return self._run

    def abort(self) -> None:
        """Abort the run (callable from any thread)."""
        if self._gen is not None and not self._exhausted:
            self._abort()

    def close(self) -> None:
        """Abort if still running, then drain to ``agent_end``."""
        if self._gen is None or self._exhausted:
            return
        if self._run is None:
            self._abort()
        for _ in self:
            pass

    def __enter__(self) -> SyncAgentStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
