"""The two drivers of the sans-IO agent core: they differ only in how they wait.

The core (``Agent._events`` and the steps it delegates to) yields agent events and
intents (:mod:`modelwire.agent._intents`); a driver passes the events on and
answers the intents:

============================  ==================================  ====================================
intent                        async driver (``run``/``stream``)   sync driver (``run_sync``/``stream_sync``)
============================  ==================================  ====================================
``Resolve`` (hooks, dynamic   ``await`` an awaitable              an awaitable runs on a private event
model/options)                                                    loop when none is running in this
                                                                  thread, else ``ConfigurationError``
``OpenModel``/                ``mw.stream`` (or ``stream_fn``),   ``mw.stream_sync`` (or ``stream_fn``,
``NextModelEvent``            ``async for``                       which must return a sync stream)
``Spawn``/``NextToolItem``    one task per call: ``parallel``     calls run one after the other in
                              calls run concurrently              call order (also ``parallel``)
``Invoke``                    an async tool is awaited; a sync    a sync tool runs directly in the
                              tool runs in a worker thread, so    calling thread (in a worker thread
                              it cannot stall the loop; the       only to enforce ``tool.timeout``); an
                              tool's ``timeout`` is a deadline    async tool runs on the private loop
                                                                  (``ConfigurationError`` at once when a
                                                                  loop is running in this thread)
============================  ==================================  ====================================

Which method performs which intent is one table for both,
:data:`~modelwire.agent._performers.PERFORMS`; a driver's loop is one lookup per
intent, and the two loops differ only in waiting (``await`` or not) and in their
cleanup. Neither driver ever blocks a running event loop on a helper thread. ``abort()``
works on both from any thread: on the sync path a running sync tool cannot be
interrupted — it sees ``ctx.cancel`` set, and its result is answered ``aborted``
like a cancelled task's on the async path.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator, Sequence
from typing import Any

from .._client._observers import AGENT_OBSERVERS, agent_observers
from ..errors import ConfigurationError
from ..tools import Tool
from ..tools._toolset import Toolset
from ..types import UserMessage
from ._execute import is_async_tool
from ._intents import Core
from ._performers import AsyncPerformer, SyncPerformer, async_steps, running_loop, sync_steps
from ._turns import RunState
from .events import AgentEvent, _AgentEvent

__all__ = ["check_sync", "drive_async", "drive_sync"]

CoreFn = Callable[[list[UserMessage] | None, RunState], Core]


def check_sync(tools: Iterable[Tool]) -> None:
    """The sync path's caller mistake, raised at once: an async tool while an event
    loop is running in this thread (it could only run by blocking that loop)."""
    if running_loop() is None:
        return
    names = sorted(t.name for t in tools if is_async_tool(t))
    if names:
        raise ConfigurationError(
            f"tool(s) {', '.join(names)} are async, and an event loop is running in this "
            "thread, so run_sync()/stream_sync() cannot run them without blocking it; "
            "use await agent.run() / agent.stream() here, or make the tools sync"
        )


async def drive_async(
    core: CoreFn,
    new: list[UserMessage] | None,
    stream_fn: Callable[..., Any],
    toolsets: Sequence[Toolset] = (),
) -> AsyncGenerator[AgentEvent, None]:
    """The async driver: ``Agent.stream``'s events. Opens the toolsets that are not
    open before the run, and closes those it opened after it."""
    opened: list[Toolset] = []
    try:
        for ts in toolsets:
            if not ts.is_open:
                await ts.open()
                opened.append(ts)
        async for ev in _drive_async(core, new, stream_fn):
            yield ev
    finally:
        for ts in reversed(opened):
            await ts.close()


async def _drive_async(
    core: CoreFn, new: list[UserMessage] | None, stream_fn: Callable[..., Any]
) -> AsyncGenerator[AgentEvent, None]:
    st = RunState(asyncio.get_running_loop())
    steps = async_steps(AsyncPerformer(st, stream_fn))
    gen = core(new, st)
    observers = agent_observers() if AGENT_OBSERVERS else ()  # modelwire.otel, when on
    send: Any = None
    exc: BaseException | None = None
    try:
        while True:
            try:
                item = gen.throw(exc) if exc is not None else gen.send(send)
            except StopIteration:
                return
            send, exc = None, None
            if isinstance(item, _AgentEvent):
                for observe in observers:
                    observe(item)
                yield item
                continue
            try:
                send = await steps[type(item)](item)
            except Exception as e:
                exc = e  # thrown into the core, which decides
    finally:
        if st.tasks:
            st.aborted = True  # running tools end as "aborted", not as a crash
            for task in list(st.tasks):
                task.cancel()
            await asyncio.gather(*st.tasks, return_exceptions=True)
        if st.stream is not None:
            await st.stream.aclose()
        gen.close()


def drive_sync(
    core: CoreFn,
    new: list[UserMessage] | None,
    stream_fn: Callable[..., Any],
    toolsets: Sequence[Toolset] = (),
) -> Iterator[AgentEvent]:
    """The sync driver: ``Agent.stream_sync``'s events, in the calling thread; the
    toolsets as in :func:`drive_async`."""
    opened: list[Toolset] = []
    try:
        for ts in toolsets:
            if not ts.is_open:
                ts.open_sync()
                opened.append(ts)
        yield from _drive_sync(core, new, stream_fn)
    finally:
        for ts in reversed(opened):
            ts.close_sync()


def _drive_sync(
    core: CoreFn, new: list[UserMessage] | None, stream_fn: Callable[..., Any]
) -> Iterator[AgentEvent]:
    st = RunState()
    steps = sync_steps(SyncPerformer(st, stream_fn))
    gen = core(new, st)
    observers = agent_observers() if AGENT_OBSERVERS else ()  # modelwire.otel, when on
    send: Any = None
    exc: BaseException | None = None
    try:
        while True:
            try:
                item = gen.throw(exc) if exc is not None else gen.send(send)
            except StopIteration:
                return
            send, exc = None, None
            if isinstance(item, _AgentEvent):
                for observe in observers:
                    observe(item)
                yield item
                continue
            try:
                send = steps[type(item)](item)
            except Exception as e:
                exc = e  # thrown into the core, which decides
    finally:
        if st.stream is not None:
            st.stream.close()
        gen.close()
        if st.runner is not None:
            st.runner.close()
