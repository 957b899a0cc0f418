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
from typing import Any, Protocol

from .._wire.assemble._terminal import TERMINAL, aborted_from
from ..events import DoneEvent, ErrorEvent, Event
from ..types import AssistantMessage

__all__ = [
    "AbortFlag",
    "AssistantMessageStream",
    "Pulled",
    "Puller",
    "StreamChannel",
    "SyncAssistantMessageStream",
    "SyncStreamChannel",
]


# A producer fills the queue with batches of events and returns when the
# terminal event is queued. It receives the stream's channel (never the stream
# itself) so it can read ``aborted`` and set ``abort_events``/``fail_events``.
Producer = Callable[["StreamChannel"], Coroutine[Any, Any, None]]


class Puller(Protocol):
    """What a pulled stream drives in the consumer's own task
    (``modelwire._http.AsyncDriver`` over a call): no producer task, no queue."""

    closed: bool
    final: list[Event]

    @property
    def answered(self) -> bool: ...
    async def next(self, until_answered: bool = False) -> list[Event] | None: ...
    async def aclose(self) -> list[Event]: ...
    async def finish(self) -> None: ...
    def interrupt(self) -> bool: ...
    def abort_events(self) -> list[Event]: ...
    def fail_events(self, exc: BaseException) -> list[Event]: ...


class Pulled:
    """A stream's source that its consumer pulls: ``open(flag)`` builds the
    :class:`Puller` on first iteration; ``flag.aborted`` is the caller's abort, read
    by the call (the puller holds the flag, never the stream)."""

    __slots__ = ("open",)

    def __init__(self, open: Callable[[AbortFlag], Puller]) -> None:
        self.open = open


class AbortFlag:
    """The caller's abort as the call reads it (``Call(aborted=...)``)."""

    __slots__ = ("aborted",)

    def __init__(self) -> None:
        self.aborted = False


# Producer tasks still running (e.g. draining the body after the terminal event
# so the connection returns to the pool): the event loop keeps only weak
# references to tasks, so they are held here until done (asyncio docs,
# ``create_task``). A task holds its channel, never the stream: a stream the
# caller drops is collected at once and its ``__del__`` cancels the task.
_RUNNING: set[asyncio.Task[Any]] = set()


class StreamChannel:
    """The producer's side of a stream: the queue it fills and the callbacks that
    build the aborted / failed terminal from what was received.

    Kept apart from :class:`AssistantMessageStream` so the producer task holds no
    reference to the stream: a stream dropped without closing (``break`` out of
    ``async for``, last reference gone) is freed by reference counting and closes
    its connection at once, instead of living on with its task until the idle
    timeout.
    """

    __slots__ = ("abort_events", "aborted", "fail_events", "overflow", "queue")

    def __init__(self, queue_size: int) -> None:
        self.queue: asyncio.Queue[list[Event]] = asyncio.Queue(queue_size)
        self.overflow: list[Event] | None = None
        #: Set by the stream when the caller aborts: the producer stops reading.
        self.aborted = False
        # Set by the producer: build the aborted / failed terminal from what was received.
        self.abort_events: Callable[[], list[Event]] | None = None
        self.fail_events: Callable[[BaseException], list[Event]] | None = None

    async def put(self, events: list[Event]) -> None:
        """Queue one batch of events (waits while the consumer is behind)."""
        await self.queue.put(events)

    def put_final(self, events: list[Event]) -> None:
        """Queue the last batch without waiting (the producer is being cancelled);
        an empty one never replaces a pending one."""
        if not events:
            return
        try:
            self.queue.put_nowait(events)
        except asyncio.QueueFull:
            self.overflow = events


async def _run(producer: Producer, ch: StreamChannel) -> None:
    try:
        await producer(ch)
    except asyncio.CancelledError:
        ch.put_final(ch.abort_events() if ch.abort_events else [])
        raise
    except Exception as exc:  # the stream must never hang (DESIGN §2a)
        ch.put_final(ch.fail_events(exc) if ch.fail_events else [])


class AssistantMessageStream:
    """Async iterator of :mod:`modelwire.events` for one assistant response.

    What :func:`modelwire.stream` returns; not built directly. The request starts
    on the first iteration: ``async for event in s`` yields ``start``, the blocks'
    events and one terminal ``done`` or ``error`` event, and never raises for a
    failure of the call. ``await s.result()`` consumes the rest and returns the
    final :class:`~modelwire.AssistantMessage`. ``abort()`` (from any thread) ends
    it with an aborted ``error`` event; ``aclose()``, or leaving ``async with s``,
    also waits until the connection is closed, so leave early that way.
    """

    def __init__(self, producer: Producer | Pulled, *, queue_size: int = 64) -> None:
        self._producer = producer
        self._queue_size = queue_size
        # A pulled source runs in the consumer's task (``__anext__``); a producer in a
        # task of its own that fills a queue.
        self._pulled = isinstance(producer, Pulled)
        self._flag: AbortFlag | None = None
        self._puller: Puller | None = None
        self._finishing: asyncio.Task[None] | None = None
        self._ch: StreamChannel | None = None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._buffer: collections.deque[Event] = collections.deque()
        self._terminal: DoneEvent | ErrorEvent | None = None
        self._delivered_terminal = False
        self._abort_requested = False

    @property
    def aborted(self) -> bool:
        """Whether :meth:`abort` was called before the stream ended."""
        return self._abort_requested

    @property
    def ready(self) -> int:
        """How many events the next iterations return without waiting: the rest of
        those decoded from the last network read (0 once aborted). A consumer that
        writes once per read — as the gateway does — writes when this is 0. (Until
        a body gives its first event its reads are decoded in pieces, so its first
        content is written before the rest: ``modelwire._call.FIRST_PIECE``.)"""
        return 0 if self._abort_requested else len(self._buffer)

    @property
    def partial_output(self) -> Any:
        """With ``output=``: the output parsed so far, for display only (never
        validated; ``modelwire._client._output``). ``None`` otherwise and before any JSON."""
        return None

    # ---------------------------------------------------------------- consumer side

    def _ensure_started(self) -> StreamChannel:
        if self._ch is None:
            self._loop = asyncio.get_running_loop()
            self._ch = StreamChannel(self._queue_size)
            assert not isinstance(self._producer, Pulled)
            self._task = self._loop.create_task(_run(self._producer, self._ch))
            _RUNNING.add(self._task)
            self._task.add_done_callback(_RUNNING.discard)
        return self._ch

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __anext__(self) -> Event:
        buffer = self._buffer
        if buffer and not self._abort_requested:
            # The rest of the last batch (one network read's events): no wait.
            event = buffer.popleft()
            if isinstance(event, TERMINAL):
                self._took_terminal(event)
            return event
        if self._delivered_terminal:
            raise StopAsyncIteration
        if self._abort_requested:
            return await self._deliver_abort()
        if self._pulled:
            # The pulled source, in this task: the call's next batch.
            while not buffer:
                if not await self._pull(False):
                    return await self._deliver_abort()
            event = buffer.popleft()
            if isinstance(event, TERMINAL):
                self._took_terminal(event)
            return event
        if not self._buffer:
            ch = self._ensure_started()
            try:
                batch = await self._next_batch(ch)
            except asyncio.CancelledError:
                # The consumer was cancelled: stop the producer and its connection.
                self._abort_requested = ch.aborted = True
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
        if isinstance(event, TERMINAL):
            self._took_terminal(event)
        return event

    def _took_terminal(self, event: DoneEvent | ErrorEvent) -> None:
        self._terminal = event
        self._delivered_terminal = True
        self._buffer.clear()
        p = self._puller
        if p is not None and not p.closed:
            # The rest of the body is drained (bounded) so the connection can be
            # reused; the consumer does not wait for it.
            task = asyncio.get_running_loop().create_task(p.finish())
            _RUNNING.add(task)
            task.add_done_callback(_RUNNING.discard)
            self._finishing = task

    # ------------------------------------------------------------ pulled source

    async def _pull(self, until_answered: bool) -> bool:
        """The pulled call's next batch into the buffer (``until_answered``: or nothing,
        once the provider has answered); ``False`` when the stream ends aborted
        instead (:meth:`_deliver_abort`)."""
        p = self._puller or self._open()
        try:
            batch = await p.next(until_answered)
        except asyncio.CancelledError:
            # The consumer was cancelled: the call was aborted and closed, its
            # terminal kept (``p.final``) for the next read or ``result()``.
            self._abort_requested = True
            raise
        except Exception as exc:  # the stream must never hang (DESIGN §2a)
            batch = p.fail_events(exc)
            if not batch:
                return False
        if batch is None:
            # The call ended without a terminal event: never hang.
            batch = p.fail_events(RuntimeError("the stream producer stopped"))
            if not batch:
                batch = self._fallback_abort()
        self._buffer.extend(batch)  # when aborted, the aborted terminal holds it
        return not self._abort_requested

    async def _await_answer(self) -> bool:
        """Drive the call until the provider has answered — its response head accepted
        (2xx, the stream asked for), its body not read yet — and say ``True``; ``False``
        when there are events to take first (the ``start`` event, a failure before any
        answer) or the stream is not a pulled call. For a proxy that sends its own
        response head once the provider's is known (the gateway): its client reads
        that head while the model has not answered yet, not after."""
        if not self._pulled or self._buffer or self._delivered_terminal or self._abort_requested:
            return False
        if not await self._pull(True):
            self._abort_requested = True  # the next event is the aborted terminal
            return False
        return not self._buffer and self._puller is not None and self._puller.answered

    def _open(self) -> Puller:
        assert isinstance(self._producer, Pulled)
        self._loop = asyncio.get_running_loop()
        self._flag = AbortFlag()
        self._puller = self._producer.open(self._flag)
        return self._puller

    async def _pulled_abort(self) -> list[Event]:
        p = self._puller
        if p is None:
            return []
        events, p.final = p.final, []
        if not p.closed:
            events = await p.aclose()
        return events

    async def _next_batch(self, ch: StreamChannel) -> list[Event]:
        assert self._task is not None
        if ch.overflow is not None and ch.queue.empty():
            overflow, ch.overflow = ch.overflow, None
            return overflow
        if self._task.done() and ch.queue.empty():
            # The producer ended without a terminal event: never hang.
            fn = ch.fail_events
            batch = fn(RuntimeError("the stream producer stopped")) if fn else []
            return batch or self._fallback_abort()
        return await ch.queue.get()

    def _fallback_abort(self) -> list[Event]:
        from .._wire.assemble import Assembler

        out: list[Event] = []
        Assembler(api="").abort(out, "the stream producer stopped without a result")
        return out

    async def _deliver_abort(self) -> Event:
        task, ch = self._task, self._ch
        if task is not None and not task.done():
            task.cancel()
            try:
                await asyncio.wait({task})
            except asyncio.CancelledError:
                raise
        events: list[Event] = await self._pulled_abort() if self._pulled else []
        if ch is not None:
            while not ch.queue.empty():
                events.extend(ch.queue.get_nowait())
            if ch.overflow:
                events.extend(ch.overflow)
                ch.overflow = None
        events = list(self._buffer) + events
        self._buffer.clear()
        terminal = next((e for e in reversed(events) if isinstance(e, TERMINAL)), None)
        if terminal is None or terminal.reason != "aborted":
            if terminal is not None:
                terminal = aborted_from(terminal.message)
            elif ch is not None and ch.abort_events is not None:
                built = ch.abort_events()
                terminal = next((e for e in built if isinstance(e, ErrorEvent)), None)
            elif self._puller is not None:
                built = self._puller.abort_events()
                terminal = next((e for e in built if isinstance(e, ErrorEvent)), None)
        if terminal is None:
            # Aborted before iterating: nothing was sent, nothing was received.
            terminal = self._fallback_abort()[-1]  # type: ignore[assignment]
        assert isinstance(terminal, TERMINAL)
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
        if self._ch is not None:
            self._ch.aborted = True
        if self._flag is not None:
            self._flag.aborted = True
        p, loop = self._puller, self._loop
        if p is not None and loop is not None and not p.closed:
            # A consumer waiting inside the call is woken with the aborted terminal;
            # one between reads gets it from its next read.
            try:
                if loop is _running_loop():
                    p.interrupt()
                else:
                    loop.call_soon_threadsafe(p.interrupt)
            except RuntimeError:  # the loop is closed
                pass
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
            return
        for task in (self._task, self._finishing):
            if task is not None and not task.done():
                task.cancel()
                await asyncio.wait({task})
        if self._puller is not None and not self._puller.closed:
            await self._puller.aclose()  # its drain was cancelled before it began

    async def __aenter__(self) -> AssistantMessageStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __del__(self) -> None:
        if self._delivered_terminal:
            # After the terminal event only the drain of the rest of the body is left
            # (bounded in bytes and time) so the connection can be reused: let it.
            return
        loop, task, p = self._loop, self._task, self._puller
        if loop is None or loop.is_closed():
            return
        if task is not None and not task.done():
            loop.call_soon_threadsafe(task.cancel)
        elif p is not None and not p.closed:
            # Dropped mid-call: abort it and close its connection at once, not at
            # the idle timeout.
            loop.call_soon_threadsafe(_close_later, p)


def _close_later(p: Puller) -> None:
    if p.closed:
        return
    task = asyncio.ensure_future(p.aclose())
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class SyncStreamChannel:
    """The producer's side of a sync stream (see :class:`StreamChannel`): the producer
    generator holds this, never the stream, so a dropped stream frees the generator at
    once, and closing it runs the producer's ``finally`` (the response is closed)."""

    __slots__ = ("abort_events", "abort_flag", "fail_events", "on_abort")

    def __init__(self) -> None:
        self.abort_flag = threading.Event()
        self.abort_events: Callable[[], list[Event]] | None = None
        self.fail_events: Callable[[BaseException], list[Event]] | None = None
        self.on_abort: Callable[[], None] | None = None

    @property
    def aborted(self) -> bool:
        return self.abort_flag.is_set()


class SyncAssistantMessageStream:
    """Iterator twin for ``stream_sync``; runs in the calling thread, no event loop.

    What :func:`modelwire.stream_sync` returns; not built directly. The same events
    as :class:`AssistantMessageStream`, by ``for event in s``; ``result()`` consumes
    the rest and returns the final message. ``abort()`` may be called from another
    thread (it closes the response, unblocking a read in progress); ``close()``, or
    leaving ``with s``, ends a stream left early.
    """

    def __init__(
        self,
        produce: Callable[[SyncStreamChannel], Iterator[list[Event]]],
    ) -> None:
        self._produce = produce
        self._ch = SyncStreamChannel()
        self._gen: Iterator[list[Event]] | None = None
        self._buffer: collections.deque[Event] = collections.deque()
        self._terminal: DoneEvent | ErrorEvent | None = None
        self._abort_requested = self._ch.abort_flag

    @property
    def aborted(self) -> bool:
        """Whether :meth:`abort` was called before the stream ended."""
        return self._abort_requested.is_set()

    @property
    def partial_output(self) -> Any:
        """See :attr:`AssistantMessageStream.partial_output`."""
        return None

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        if self._terminal is not None:
            raise StopIteration
        if self._abort_requested.is_set():
            return self._deliver(self._abort_terminal())
        while not self._buffer:
            if self._gen is None:
                self._gen = self._produce(self._ch)
            try:
                batch = next(self._gen)
            except StopIteration:
                fn = self._ch.fail_events
                batch = fn(RuntimeError("the stream producer stopped")) if fn else []
                if not batch:
                    return self._deliver(self._abort_terminal())
            except Exception as exc:
                if self._abort_requested.is_set():
                    return self._deliver(self._abort_terminal())
                fn = self._ch.fail_events
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
        if isinstance(event, TERMINAL):
            return self._deliver(event)
        return event

    def _abort_terminal(self) -> DoneEvent | ErrorEvent:
        built = self._ch.abort_events() if self._ch.abort_events else []
        term = next((e for e in built if isinstance(e, TERMINAL)), None)
        if term is None:
            term = next((e for e in reversed(self._buffer) if isinstance(e, TERMINAL)), None)
            if term is not None and term.reason != "aborted":
                term = aborted_from(term.message)
        if term is None:
            from .._wire.assemble import Assembler

            out: list[Event] = []
            Assembler(api="").abort(out)
            term = out[-1]  # type: ignore[assignment]
        assert isinstance(term, TERMINAL)
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
        cb = self._ch.on_abort
        if cb is not None:
            try:
                cb()
            except Exception:
                pass

    def close(self) -> None:
        """Abort (if not finished) and close the response."""
        if self._terminal is None:
            self.abort()
            next(self)

    def __enter__(self) -> SyncAssistantMessageStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
