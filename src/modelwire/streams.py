"""The stream objects returned by ``mw.stream`` and ``mw.stream_sync``.

Contract (DESIGN §2, §2a): no I/O until iterated; ``start`` first and exactly
one terminal event (``done`` or ``error``) last; ``result()`` returns the same
message as the terminal event and never hangs; ``aclose()``/``abort()`` end the
stream as aborted — the next item yielded is the terminal ``error(aborted)``,
whose message holds everything received so far — and close the connection.
"""

from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any

import msgspec

from .errors import AbortedError
from .events import DoneEvent, ErrorEvent, Event
from .types import AssistantMessage, ErrorInfo

__all__ = ["AssistantMessageStream", "SyncAssistantMessageStream"]

_TERMINAL = (DoneEvent, ErrorEvent)
_ABORT_TEXT = "the stream was aborted by the caller"

# A producer fills the queue with batches of events and returns when the
# terminal event is queued. It receives the stream so it can read ``aborted``.
Producer = Callable[["AssistantMessageStream"], Coroutine[Any, Any, None]]

# Producer tasks still running (e.g. draining the body after the terminal event
# so the connection returns to the pool): the event loop keeps only weak
# references to tasks, so they are held here until done (asyncio docs,
# ``create_task``).
_RUNNING: set[asyncio.Task[None]] = set()


def _aborted_from(message: AssistantMessage) -> ErrorEvent:
    msg = msgspec.structs.replace(
        message,
        stop_reason="aborted",
        error=ErrorInfo(kind=AbortedError.kind, message=_ABORT_TEXT),
    )
    return ErrorEvent(reason="aborted", message=msg, _partial=msg)


class AssistantMessageStream:
    """Async iterator of :mod:`modelwire.events` for one assistant response."""

    def __init__(self, producer: Producer, *, queue_size: int = 64) -> None:
        self._producer = producer
        self._queue_size = queue_size
        self._queue: asyncio.Queue[list[Event]] | None = None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._buffer: collections.deque[Event] = collections.deque()
        self._terminal: DoneEvent | ErrorEvent | None = None
        self._delivered_terminal = False
        self._abort_requested = False
        self._overflow: list[Event] | None = None
        # Set by the producer: build the aborted / failed terminal from what was received.
        self.abort_events: Callable[[], list[Event]] | None = None
        self.fail_events: Callable[[BaseException], list[Event]] | None = None

    # ---------------------------------------------------------------- producer side

    async def _emit(self, events: list[Event]) -> None:
        assert self._queue is not None
        await self._queue.put(events)

    @property
    def aborted(self) -> bool:
        return self._abort_requested

    async def _run(self) -> None:
        try:
            await self._producer(self)
        except asyncio.CancelledError:
            self._put_final(self.abort_events() if self.abort_events else [])
            raise
        except Exception as exc:  # the stream must never hang (DESIGN §2a)
            self._put_final(self.fail_events(exc) if self.fail_events else [])

    def _put_final(self, events: list[Event]) -> None:
        if self._queue is None:
            return
        try:
            self._queue.put_nowait(events)
        except asyncio.QueueFull:
            self._overflow = events

    # ---------------------------------------------------------------- consumer side

    def _ensure_started(self) -> None:
        if self._task is None:
            self._loop = asyncio.get_running_loop()
            self._queue = asyncio.Queue(self._queue_size)
            self._task = self._loop.create_task(self._run())
            _RUNNING.add(self._task)
            self._task.add_done_callback(_RUNNING.discard)

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __anext__(self) -> Event:
        if self._delivered_terminal:
            raise StopAsyncIteration
        if self._abort_requested:
            return await self._deliver_abort()
        if not self._buffer:
            self._ensure_started()
            assert self._queue is not None
            try:
                batch = await self._next_batch()
            except asyncio.CancelledError:
                # The consumer was cancelled: stop the producer and its connection.
                self._abort_requested = True
                if self._task is not None:
                    self._task.cancel()
                raise
            if self._abort_requested:
                # Keep what this batch carried: the aborted terminal holds it.
                self._buffer.extend(batch)
                return await self._deliver_abort()
            self._buffer.extend(batch)
            if not self._buffer:
                return await self.__anext__()
        event = self._buffer.popleft()
        if isinstance(event, _TERMINAL):
            self._terminal = event
            self._delivered_terminal = True
            self._buffer.clear()
        return event

    async def _next_batch(self) -> list[Event]:
        assert self._queue is not None and self._task is not None
        if self._overflow is not None and self._queue.empty():
            overflow, self._overflow = self._overflow, None
            return overflow
        if self._task.done() and self._queue.empty():
            # The producer ended without a terminal event: never hang.
            fn = self.fail_events
            batch = fn(RuntimeError("the stream producer stopped")) if fn else []
            return batch or self._fallback_abort()
        return await self._queue.get()

    def _fallback_abort(self) -> list[Event]:
        from .assemble import Assembler

        out: list[Event] = []
        Assembler(api="").abort(out, "the stream producer stopped without a result")
        return out

    async def _deliver_abort(self) -> Event:
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            try:
                await asyncio.wait({task})
            except asyncio.CancelledError:
                raise
        events: list[Event] = []
        if self._queue is not None:
            while not self._queue.empty():
                events.extend(self._queue.get_nowait())
        if self._overflow:
            events.extend(self._overflow)
            self._overflow = None
        events = list(self._buffer) + events
        self._buffer.clear()
        terminal = next((e for e in reversed(events) if isinstance(e, _TERMINAL)), None)
        if terminal is None or terminal.reason != "aborted":
            if terminal is not None:
                terminal = _aborted_from(terminal.message)
            elif self.abort_events is not None:
                built = self.abort_events()
                terminal = next((e for e in built if isinstance(e, ErrorEvent)), None)
        if terminal is None:
            terminal = self._fallback_abort()[-1]  # type: ignore[assignment]
        assert isinstance(terminal, _TERMINAL)
        self._terminal = terminal
        self._delivered_terminal = True
        return terminal

    async def result(self) -> AssistantMessage:
        """The final message (the terminal event's ``message``); consumes the rest."""
        while not self._delivered_terminal:
            await self.__anext__()
        assert self._terminal is not None
        return self._terminal.message

    def abort(self) -> None:
        """End the stream as aborted; callable from any thread."""
        if self._delivered_terminal:
            return
        self._abort_requested = True
        loop, task = self._loop, self._task
        if loop is not None and task is not None and not task.done():
            try:
                if loop is _running_loop():
                    task.cancel()
                else:
                    loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # the loop is closed
                pass

    async def aclose(self) -> None:
        """Abort (if not finished) and wait until the connection is closed."""
        if not self._delivered_terminal:
            self.abort()
            await self.__anext__()
        elif self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.wait({self._task})

    async def __aenter__(self) -> AssistantMessageStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __del__(self) -> None:
        task = self._task
        # After the terminal event the producer only drains the rest of the body
        # (bounded in bytes and time) so the connection can be reused: let it.
        if task is not None and not task.done() and not self._delivered_terminal:
            loop = self._loop
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(task.cancel)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class SyncAssistantMessageStream:
    """Iterator twin for ``stream_sync``; runs in the calling thread, no event loop."""

    def __init__(
        self,
        produce: Callable[[SyncAssistantMessageStream], Iterator[list[Event]]],
    ) -> None:
        self._produce = produce
        self._gen: Iterator[list[Event]] | None = None
        self._buffer: collections.deque[Event] = collections.deque()
        self._terminal: DoneEvent | ErrorEvent | None = None
        self._abort_requested = threading.Event()
        self.abort_events: Callable[[], list[Event]] | None = None
        self.fail_events: Callable[[BaseException], list[Event]] | None = None
        self.on_abort: Callable[[], None] | None = None

    @property
    def aborted(self) -> bool:
        return self._abort_requested.is_set()

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        if self._terminal is not None:
            raise StopIteration
        if self._abort_requested.is_set():
            return self._deliver(self._abort_terminal())
        while not self._buffer:
            if self._gen is None:
                self._gen = self._produce(self)
            try:
                batch = next(self._gen)
            except StopIteration:
                fn = self.fail_events
                batch = fn(RuntimeError("the stream producer stopped")) if fn else []
                if not batch:
                    return self._deliver(self._abort_terminal())
            except Exception as exc:
                if self._abort_requested.is_set():
                    return self._deliver(self._abort_terminal())
                fn = self.fail_events
                if fn is None:
                    raise
                batch = fn(exc)
            if self._abort_requested.is_set():
                # The batch may hold the aborted terminal the producer built with
                # all content: ``_abort_terminal`` finds it in the buffer.
                self._buffer.extend(batch)
                return self._deliver(self._abort_terminal())
            self._buffer.extend(batch)
        event = self._buffer.popleft()
        if isinstance(event, _TERMINAL):
            return self._deliver(event)
        return event

    def _abort_terminal(self) -> DoneEvent | ErrorEvent:
        built = self.abort_events() if self.abort_events else []
        term = next((e for e in built if isinstance(e, _TERMINAL)), None)
        if term is None:
            term = next((e for e in reversed(self._buffer) if isinstance(e, _TERMINAL)), None)
            if term is not None and term.reason != "aborted":
                term = _aborted_from(term.message)
        if term is None:
            from .assemble import Assembler

            out: list[Event] = []
            Assembler(api="").abort(out)
            term = out[-1]  # type: ignore[assignment]
        assert isinstance(term, _TERMINAL)
        return term

    def _deliver(self, event: DoneEvent | ErrorEvent) -> Event:
        self._terminal = event
        self._buffer.clear()
        if self._gen is not None and hasattr(self._gen, "close"):
            self._gen.close()  # closes the response in the producer's finally
        return event

    def result(self) -> AssistantMessage:
        """The final message; consumes the rest of the stream."""
        while self._terminal is None:
            next(self)
        return self._terminal.message

    def abort(self) -> None:
        """End the stream as aborted; callable from any thread (closes the response)."""
        if self._terminal is not None:
            return
        self._abort_requested.set()
        cb = self.on_abort
        if cb is not None:
            try:
                cb()
            except Exception:
                pass

    def close(self) -> None:
        if self._terminal is None:
            self.abort()
            next(self)

    def __enter__(self) -> SyncAssistantMessageStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
