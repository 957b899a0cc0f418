"""How a driver performs the agent core's intents: one table for both drivers.

:data:`PERFORMS` says which performer method answers which intent
(:mod:`modelwire.agent._intents`, and the tool turn's ``Spawn``). A performer holds
one run's waiting state — :class:`AsyncPerformer` for ``run``/``stream``,
:class:`SyncPerformer` for ``run_sync``/``stream_sync``, the same six methods,
coroutines or not — and :func:`async_steps` / :func:`sync_steps` bind the table to
one, so a driver's loop (:mod:`modelwire.agent._drive`) and the step generators of
the tool calls it spawns are one lookup per intent. The twins differ only in waiting
(the table in :mod:`modelwire.agent._drive`'s docstring says how each one waits).
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import inspect
import threading
from collections.abc import Awaitable, Callable, Generator
from typing import Any

from ..errors import ConfigurationError
from ..tools import ToolOutput
from ..types import ToolResultMessage
from ._execute import execute, is_async_tool
from ._intents import (
    Intent,
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

__all__ = [
    "PERFORMS",
    "AsyncPerformer",
    "SyncPerformer",
    "async_steps",
    "run_steps_async",
    "run_steps_sync",
    "running_loop",
    "sync_steps",
]

#: Which performer method answers which intent of the core (agent events are no
#: intents: the drivers pass them on).
PERFORMS: tuple[tuple[type[Intent], str], ...] = (
    (NextModelEvent, "next_model_event"),
    (NextToolItem, "next_tool_item"),
    (Spawn, "spawn"),
    (OpenModel, "open_model"),
    (Resolve, "resolve"),
    (Invoke, "invoke"),
)

Outcome = tuple[ToolResultMessage, str | None]
AsyncSteps = dict[type[Intent], Callable[[Any], Awaitable[Any]]]
SyncSteps = dict[type[Intent], Callable[[Any], Any]]
Steps = Generator[Intent, Any, Any]


def _bind(performer: object) -> dict[type[Intent], Callable[[Any], Any]]:
    return {kind: getattr(performer, name) for kind, name in PERFORMS}


def async_steps(p: AsyncPerformer) -> AsyncSteps:
    """:data:`PERFORMS` bound to ``p``: intent type → the coroutine function performing it."""
    return _bind(p)


def sync_steps(p: SyncPerformer) -> SyncSteps:
    """:data:`PERFORMS` bound to ``p``: intent type → the function performing it."""
    return _bind(p)


def running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def run_steps_async(gen: Steps, steps: AsyncSteps) -> Any:
    """Run a step generator (no events: a tool call's judgements 4–5) to its return
    value; what performing an intent raised is thrown into it."""
    send: Any = None
    exc: BaseException | None = None
    while True:
        try:
            intent = gen.throw(exc) if exc is not None else gen.send(send)
        except StopIteration as stop:
            return stop.value
        send, exc = None, None
        try:
            send = await steps[type(intent)](intent)
        except Exception as e:
            exc = e


def run_steps_sync(gen: Steps, steps: SyncSteps) -> Any:
    """The blocking twin of :func:`run_steps_async`."""
    send: Any = None
    exc: BaseException | None = None
    while True:
        try:
            intent = gen.throw(exc) if exc is not None else gen.send(send)
        except StopIteration as stop:
            return stop.value
        send, exc = None, None
        try:
            send = steps[type(intent)](intent)
        except Exception as e:
            exc = e


# --------------------------------------------------------------------------- async


class AsyncPerformer:
    """One async run's performer: tool calls are tasks on the running loop (``parallel``
    ones concurrent), their items in FIFO order; a sync tool runs in a worker thread."""

    __slots__ = ("queue", "st", "stream_fn", "tasks")

    def __init__(self, st: RunState, stream_fn: Callable[..., Any]) -> None:
        self.st = st
        self.stream_fn = stream_fn
        self.queue: asyncio.Queue[tuple[str, int, Any]] = asyncio.Queue()
        self.tasks: dict[int, asyncio.Task[Outcome]] = {}

    async def next_model_event(self, i: NextModelEvent) -> Any:
        try:
            return await i.stream.__anext__()
        except StopAsyncIteration:
            return None

    async def next_tool_item(self, i: NextToolItem) -> tuple[str, int, Any]:
        what, index, payload = await self.queue.get()
        if what == "done":
            payload = await self.tasks.pop(index)
        return what, index, payload

    async def spawn(self, intent: Spawn) -> None:
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
                # Bound per call, not kept on self: no cycle through the tasks.
                outcome: Outcome = await run_steps_async(gen, async_steps(self))
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

    async def open_model(self, i: OpenModel) -> Any:
        return self.stream_fn(i.model, i.context, **i.options)

    async def resolve(self, i: Resolve) -> Any:
        v = i.value
        return await v if inspect.isawaitable(v) else v

    async def invoke(self, intent: Invoke) -> Any:
        tool, args, ctx, st = intent.tool, intent.args, intent.ctx, self.st

        async def call() -> Any:
            fn: Any = tool.execute
            if is_async_tool(tool):
                return await fn(args, ctx)
            # A sync tool runs in a worker thread so it cannot stall the event loop
            # (and with it other tools and the model stream).
            out = await _in_thread(fn, args, ctx, tool.name)
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


# --------------------------------------------------------------------------- sync


class SyncPerformer:
    """One sync run's performer, in the calling thread: spawned calls run one after
    the other, when their items are asked for (call order); an awaitable runs on a
    private event loop (``st.runner``) when none is running in this thread."""

    __slots__ = ("items", "pending", "st", "stream_fn")

    def __init__(self, st: RunState, stream_fn: Callable[..., Any]) -> None:
        self.st = st
        self.stream_fn = stream_fn
        self.pending: collections.deque[Spawn] = collections.deque()
        self.items: collections.deque[tuple[str, int, Any]] = collections.deque()

    def next_model_event(self, i: NextModelEvent) -> Any:
        return next(i.stream, None)

    def next_tool_item(self, i: NextToolItem) -> tuple[str, int, Any]:
        if not self.items:
            self._run(self.pending.popleft())
        return self.items.popleft()

    def spawn(self, intent: Spawn) -> None:
        self.pending.append(intent)

    def open_model(self, item: OpenModel) -> Any:
        s = self.stream_fn(item.model, item.context, **item.options)
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

    def resolve(self, i: Resolve) -> Any:
        return _resolve_sync(i.value, self.st, "a hook")

    def invoke(self, intent: Invoke) -> Any:
        tool, args, ctx, st = intent.tool, intent.args, intent.ctx, self.st
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
            outcome: Outcome = run_steps_sync(gen, sync_steps(self))
        finally:
            finished = True
            st.cancels.discard(cancel)
        intent.turn.finished[i] = outcome[0]
        items.append(("done", i, outcome))


def _resolve_sync(value: Any, st: RunState, what: str) -> Any:
    if not inspect.isawaitable(value):
        return value
    if running_loop() is not None:
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


def _capture(box: list[Any], fn: Any, args: Any, ctx: Any) -> None:
    try:
        box.append((True, fn(args, ctx)))
    except BaseException as exc:  # handed to the waiting thread
        box.append((False, exc))


async def _in_thread(fn: Any, args: Any, ctx: Any, name: str) -> Any:
    """``fn(args, ctx)`` in a daemon thread, awaited (``asyncio.to_thread`` uses the
    loop's executor, whose threads ``asyncio.run`` and interpreter exit wait for: a
    Ctrl-C during a long tool would hang until it returned). The context variables go
    with it, as with ``to_thread``."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()
    box: list[Any] = []

    def settle() -> None:
        if done.done():
            return  # the awaiting task was cancelled
        ok, value = box[0]
        if ok:
            done.set_result(value)
        else:
            done.set_exception(value)

    def work() -> None:
        context.run(_capture, box, fn, args, ctx)
        try:
            loop.call_soon_threadsafe(settle)
        except RuntimeError:
            pass  # the loop is closed: nobody waits for this result any more

    threading.Thread(target=work, name=f"tool-{name}", daemon=True).start()
    return await done
