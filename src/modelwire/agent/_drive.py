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

Neither driver ever blocks a running event loop on a helper thread. ``abort()``
works on both from any thread: on the sync path a running sync tool cannot be
interrupted — it sees ``ctx.cancel`` set, and its result is answered ``aborted``
like a cancelled task's on the async path.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import threading
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator
from typing import Any

from .._client._observers import AGENT_OBSERVERS, agent_observers
from ..errors import ConfigurationError
from ..tools import Tool, ToolOutput
from ..types import ToolResultMessage, UserMessage
from ._execute import execute, is_async_tool
from ._intents import (
    Core,
    Invoke,
    InvokeAborted,
    InvokeTimedOut,
    NextModelEvent,
    NextToolItem,
    OpenModel,
    Resolve,
)
from ._tools_turn import Spawn
from ._turns import RunState
from .events import AgentEvent, _AgentEvent

__all__ = ["check_sync", "drive_async", "drive_sync"]

CoreFn = Callable[[list[UserMessage] | None, RunState], Core]
Outcome = tuple[ToolResultMessage, str | None]


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def check_sync(tools: Iterable[Tool]) -> None:
    """The sync path's caller mistake, raised at once: an async tool while an event
    loop is running in this thread (it could only run by blocking that loop)."""
    if _running_loop() is None:
        return
    names = sorted(t.name for t in tools if is_async_tool(t))
    if names:
        raise ConfigurationError(
            f"tool(s) {', '.join(names)} are async, and an event loop is running in this "
            "thread, so run_sync()/stream_sync() cannot run them without blocking it; "
            "use await agent.run() / agent.stream() here, or make the tools sync"
        )


# --------------------------------------------------------------------------- async


async def _invoke_async(intent: Invoke, st: RunState) -> Any:
    tool, args, ctx = intent.tool, intent.args, intent.ctx

    async def call() -> Any:
        fn: Any = tool.execute
        if is_async_tool(tool):
            return await fn(args, ctx)
        # A sync tool runs in a worker thread so it cannot stall the event loop
        # (and with it other tools and the model stream).
        out = await asyncio.to_thread(fn, args, ctx)
        return await out if inspect.isawaitable(out) else out

    scope: asyncio.Timeout | None = None
    try:
        if tool.timeout is None:
            return await call()
        async with asyncio.timeout(tool.timeout) as scope:
            return await call()
    except TimeoutError:
        if scope is not None and scope.expired():
            raise InvokeTimedOut from None
        raise  # the tool's own TimeoutError
    except asyncio.CancelledError:
        if not st.aborted:
            raise
        raise InvokeAborted from None


async def _steps_async(gen: Any, st: RunState) -> Any:
    """Run a step generator (no events) to its return value."""
    send: Any = None
    exc: BaseException | None = None
    while True:
        try:
            intent = gen.throw(exc) if exc is not None else gen.send(send)
        except StopIteration as stop:
            return stop.value
        send, exc = None, None
        try:
            if isinstance(intent, Resolve):
                v = intent.value
                send = await v if inspect.isawaitable(v) else v
            elif isinstance(intent, Invoke):
                send = await _invoke_async(intent, st)
            else:  # pragma: no cover - a step generator yields only these
                raise TypeError(f"unexpected intent {intent!r}")
        except Exception as e:
            exc = e


class _AsyncTools:
    """Tool tasks of one run on the running loop; items in FIFO order."""

    def __init__(self, st: RunState) -> None:
        self.st = st
        self.queue: asyncio.Queue[tuple[str, int, Any]] = asyncio.Queue()
        self.tasks: dict[int, asyncio.Task[Outcome]] = {}

    def spawn(self, intent: Spawn) -> None:
        st, i, loop = self.st, intent.index, self.st.loop
        assert loop is not None
        cancel = threading.Event()
        finished = False
        queue = self.queue

        def on_update(partial: str | ToolOutput) -> None:
            # From the loop thread or a worker thread: call_soon_threadsafe keeps
            # every item in FIFO order with the "done" below.
            if not finished:
                loop.call_soon_threadsafe(queue.put_nowait, ("update", i, partial))

        async def one() -> Outcome:
            nonlocal finished
            try:
                gen = execute(intent.prep, intent.transcript, on_update, cancel, intent.after)
                outcome: Outcome = await _steps_async(gen, st)
                intent.turn.finished[i] = outcome[0]
                return outcome
            finally:
                finished = True
                st.cancels.discard(cancel)
                loop.call_soon_threadsafe(queue.put_nowait, ("done", i, None))

        st.cancels.add(cancel)
        task = loop.create_task(one())
        st.tasks.add(task)
        task.add_done_callback(st.tasks.discard)
        self.tasks[i] = task

    async def next_item(self) -> tuple[str, int, Any]:
        what, i, payload = await self.queue.get()
        if what == "done":
            payload = await self.tasks.pop(i)
        return what, i, payload


async def drive_async(
    core: CoreFn, new: list[UserMessage] | None, stream_fn: Callable[..., Any]
) -> AsyncGenerator[AgentEvent, None]:
    """The async driver: ``Agent.stream``'s events."""
    st = RunState(asyncio.get_running_loop())
    tools = _AsyncTools(st)
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
                if isinstance(item, NextModelEvent):
                    try:
                        send = await item.stream.__anext__()
                    except StopAsyncIteration:
                        send = None
                elif isinstance(item, NextToolItem):
                    send = await tools.next_item()
                elif isinstance(item, Spawn):
                    tools.spawn(item)
                elif isinstance(item, OpenModel):
                    send = stream_fn(item.model, item.context, **item.options)
                else:
                    send = await _steps_async(_one(item), st)
            except Exception as e:
                exc = e
    finally:
        if st.tasks:
            st.aborted = True  # running tools end as "aborted", not as a crash
            for task in list(st.tasks):
                task.cancel()
            await asyncio.gather(*st.tasks, return_exceptions=True)
        if st.stream is not None:
            await st.stream.aclose()
        gen.close()


def _one(intent: Any) -> Any:
    # A single intent as a step generator (the core's own Resolve).
    return (yield intent)


# --------------------------------------------------------------------------- sync


def _resolve_sync(value: Any, st: RunState, what: str) -> Any:
    if not inspect.isawaitable(value):
        return value
    if _running_loop() is not None:
        if inspect.iscoroutine(value):
            value.close()  # never awaited: no "was never awaited" warning
        raise ConfigurationError(
            f"{what} returned an awaitable, and an event loop is running in this thread, "
            "so run_sync()/stream_sync() cannot await it without blocking that loop; use "
            "await agent.run() / agent.stream() here, or make it sync"
        )
    if st.runner is None:
        st.runner = asyncio.Runner()
    return st.runner.run(_await(value))


async def _await(value: Any) -> Any:
    return await value


def _invoke_sync(intent: Invoke, st: RunState) -> Any:
    tool, args, ctx = intent.tool, intent.args, intent.ctx
    if st.aborted:  # aborted after this parallel call was spawned: it never starts
        raise InvokeAborted
    fn: Any = tool.execute
    if tool.timeout is None or is_async_tool(tool):
        # An async tool's coroutine runs on the private loop (_resolve_sync).
        out = _resolve_sync(fn(args, ctx), st, f"tool {tool.name!r}")
    else:
        # Only a worker thread can bound a sync call; this thread waits for it (the
        # sync path blocks its caller by design, never a loop of its own).
        box: list[Any] = []
        worker = threading.Thread(
            target=_capture, args=(box, fn, args, ctx), name=f"tool-{tool.name}", daemon=True
        )
        worker.start()
        worker.join(tool.timeout)
        if worker.is_alive():
            raise InvokeTimedOut
        ok, out = box[0]
        if not ok:
            raise out
        out = _resolve_sync(out, st, f"tool {tool.name!r}")
    if st.aborted:
        raise InvokeAborted  # as a task cancelled on the async path: answered "aborted"
    return out


def _capture(box: list[Any], fn: Any, args: Any, ctx: Any) -> None:
    try:
        box.append((True, fn(args, ctx)))
    except BaseException as exc:  # handed to the waiting thread
        box.append((False, exc))


def _steps_sync(gen: Any, st: RunState) -> Any:
    send: Any = None
    exc: BaseException | None = None
    while True:
        try:
            intent = gen.throw(exc) if exc is not None else gen.send(send)
        except StopIteration as stop:
            return stop.value
        send, exc = None, None
        try:
            if isinstance(intent, Resolve):
                send = _resolve_sync(intent.value, st, "a hook")
            elif isinstance(intent, Invoke):
                send = _invoke_sync(intent, st)
            else:  # pragma: no cover - a step generator yields only these
                raise TypeError(f"unexpected intent {intent!r}")
        except Exception as e:
            exc = e


class _SyncTools:
    """Spawned calls of one run, executed one after the other when their items are
    asked for (call order)."""

    def __init__(self, st: RunState) -> None:
        self.st = st
        self.pending: collections.deque[Spawn] = collections.deque()
        self.items: collections.deque[tuple[str, int, Any]] = collections.deque()

    def spawn(self, intent: Spawn) -> None:
        self.pending.append(intent)

    def next_item(self) -> tuple[str, int, Any]:
        if not self.items:
            self._run(self.pending.popleft())
        return self.items.popleft()

    def _run(self, intent: Spawn) -> None:
        st, i, items = self.st, intent.index, self.items
        cancel = threading.Event()
        finished = False

        def on_update(partial: str | ToolOutput) -> None:
            if not finished:
                items.append(("update", i, partial))

        st.cancels.add(cancel)
        try:
            gen = execute(intent.prep, intent.transcript, on_update, cancel, intent.after)
            outcome: Outcome = _steps_sync(gen, st)
        finally:
            finished = True
            st.cancels.discard(cancel)
        intent.turn.finished[i] = outcome[0]
        items.append(("done", i, outcome))


def drive_sync(
    core: CoreFn, new: list[UserMessage] | None, stream_fn: Callable[..., Any]
) -> Iterator[AgentEvent]:
    """The sync driver: ``Agent.stream_sync``'s events, in the calling thread."""
    st = RunState()
    tools = _SyncTools(st)
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
                if isinstance(item, NextModelEvent):
                    send = next(item.stream, None)
                elif isinstance(item, NextToolItem):
                    send = tools.next_item()
                elif isinstance(item, Spawn):
                    tools.spawn(item)
                elif isinstance(item, OpenModel):
                    send = _open_sync(stream_fn, item)
                else:
                    send = _steps_sync(_one(item), st)
            except Exception as e:
                exc = e
    finally:
        if st.stream is not None:
            st.stream.close()
        gen.close()
        if st.runner is not None:
            st.runner.close()


def _open_sync(stream_fn: Callable[..., Any], item: OpenModel) -> Any:
    s = stream_fn(item.model, item.context, **item.options)
    if not hasattr(s, "__next__") or not hasattr(s, "close"):
        if hasattr(s, "aclose"):
            s_close = s.aclose()
            if inspect.iscoroutine(s_close):
                s_close.close()
        raise ConfigurationError(
            f"stream_fn returned {type(s).__name__}, not a sync stream; run_sync()/"
            "stream_sync() need a stream_fn with mw.stream_sync's signature and result"
        )
    return s
