"""Custom stream functions: APIs registered with ``register_wire_api(fn, name)`` that
produce events themselves, on both the async and the sync path.

A stream function is ``fn(model, context, options)`` returning either an async
iterator of events (an ``async def`` generator) or a sync iterator (a ``def``
generator). Which path serves which kind, without a hidden event loop:

- an async function on the async path (``mw.stream``/``mw.complete``) and a sync
  function on the sync path (``mw.stream_sync``/``mw.complete_sync``) are iterated
  directly;
- a sync function on the async path is advanced one event at a time in a worker
  thread (``asyncio.to_thread``), so a function that blocks never stalls the
  running loop;
- an async function on the sync path is a ``ConfigurationError`` at once: running
  it would need an event loop in this thread, and the sync path must work inside a
  running one (DESIGN §2a). Register a sync generator function, or call
  ``mw.stream``.

Both paths give the wire path's guarantees through one :class:`Relay`: ``start``
first (added when the function did not yield it), exactly one terminal event
(nothing after the function's ``done``/``error``; a function that ends without one
fails with ``provider_stream``), and an aborted or failed terminal keeps the content
delivered so far — it is built from the ``partial`` of the last event delivered,
since the relay's assembler saw none of the function's deltas.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .._apis import custom_stream, custom_stream_sync
from .._wire.assemble._terminal import aborted_from, failed_from
from ..errors import ConfigurationError, ProviderStreamError, StreamError
from ..events import Event
from ._streams import (
    AssistantMessageStream,
    StreamChannel,
    SyncAssistantMessageStream,
    SyncStreamChannel,
)

if TYPE_CHECKING:
    from .._wire.assemble import Assembler
    from .._wire.request import RequestOptions
    from .._wire.trace import TraceObserver, Tracer
    from ..types import AssistantMessage, Context, Model

__all__ = ["Relay", "custom_async", "custom_sync", "is_async_function", "is_sync_function"]

_TERMINAL = ("done", "error")
_NO_TERMINAL = "the custom stream function ended without a done or error event"


def is_async_function(fn: object) -> bool:
    """True for an ``async def`` generator function (or a callable object with one)."""
    return inspect.isasyncgenfunction(fn) or inspect.isasyncgenfunction(
        getattr(fn, "__call__", None)  # noqa: B004 - callable objects
    )


def is_sync_function(fn: object) -> bool:
    """True for a ``def`` generator function (or a callable object with one)."""
    return inspect.isgeneratorfunction(fn) or inspect.isgeneratorfunction(
        getattr(fn, "__call__", None)  # noqa: B004 - callable objects
    )


class Relay:
    """The decisions of one custom stream, shared by both drivers: what to deliver for
    each event the function yields, and the aborted / failed terminal."""

    __slots__ = ("asm", "ended", "last", "started", "tracer")

    def __init__(self, model: Model, context: Context, trace: TraceObserver | None) -> None:
        from .._wire.assemble import Assembler

        self.asm: Assembler = Assembler(api=model.api, provider=model.provider, model=model.id)
        # A custom stream function has no wire layers: its trace is the context and
        # the events it yields.
        self.tracer: Tracer | None = None
        if trace is not None:
            from .._wire.trace import Tracer
            from ._handoffs import handoff_notes

            self.tracer = Tracer(trace)
            self.tracer.context(model, context, tuple(handoff_notes(context, model)))
        self.last: list[Event] = []
        self.started = False
        self.ended = False

    def push(self, event: object) -> list[Event]:
        """The events to deliver for one item the function yielded; sets ``ended``
        after the terminal event."""
        if not isinstance(event, Event):
            raise ProviderStreamError(
                f"the custom stream function yielded {type(event).__name__}, not a modelwire event"
            )
        out: list[Event] = []
        if not self.started and event.type != "start":
            self.asm.start(out)
        self.started = True
        out.append(event)
        self.last[:] = (event,)
        self.ended = event.type in _TERMINAL
        return _traced(self.tracer, out)

    def missing_terminal(self) -> ProviderStreamError:
        return ProviderStreamError(_NO_TERMINAL)

    def abort(self) -> list[Event]:
        return _traced(self.tracer, _abort(self.asm, self.last))

    def fail(self, exc: BaseException) -> list[Event]:
        return _traced(self.tracer, _fail(self.asm, exc, self.last))


def _call(fn: Callable[..., Any], model: Model, context: Context, options: RequestOptions) -> Any:
    return fn(model, context, options)


def custom_async(
    model: Model, context: Context, options: RequestOptions, trace: TraceObserver | None
) -> AssistantMessageStream:
    """``mw.stream`` for a custom API (registered as ``model.api``)."""
    fn = custom_stream(model.api)
    assert fn is not None  # the client found it
    in_thread = is_sync_function(fn)

    async def produce(s: StreamChannel) -> None:
        relay = Relay(model, context, trace)
        s.abort_events = relay.abort
        s.fail_events = relay.fail
        produced = _call(fn, model, context, options)
        if in_thread or (not hasattr(produced, "__anext__") and hasattr(produced, "__next__")):
            # A sync function: each step in a worker thread, never in the loop.
            it: Iterator[Event] = iter(produced)
            done = object()
            while True:
                event = await asyncio.to_thread(next, it, done)
                if event is done:
                    break
                await s.put(relay.push(event))
                if relay.ended:
                    return
        else:
            if not hasattr(produced, "__anext__"):
                raise _not_an_iterator(produced)
            async for event in produced:
                await s.put(relay.push(event))
                if relay.ended:
                    return
        raise relay.missing_terminal()

    return AssistantMessageStream(produce)


def custom_sync(
    model: Model, context: Context, options: RequestOptions, trace: TraceObserver | None
) -> SyncAssistantMessageStream:
    """``mw.stream_sync`` for a custom API; a ``ConfigurationError`` at once when only
    an async function is registered under ``model.api``."""
    fn = custom_stream_sync(model.api)
    if fn is None:
        raise ConfigurationError(
            f"api {model.api!r} is an async stream function, which the sync path cannot "
            "run without an event loop; use mw.stream()/mw.complete(), or register a sync "
            "generator function (def fn(model, context, options): yield event) for "
            "mw.stream_sync()/mw.complete_sync()"
        )

    def produce(s: SyncStreamChannel) -> Iterator[list[Event]]:
        relay = Relay(model, context, trace)
        s.abort_events = relay.abort
        s.fail_events = relay.fail
        produced = _call(fn, model, context, options)
        if not hasattr(produced, "__next__"):
            if hasattr(produced, "__anext__"):
                raise ConfigurationError(
                    f"the stream function of api {model.api!r} returned an async iterator; "
                    "mw.stream_sync() needs a sync generator function (or use mw.stream())"
                )
            raise _not_an_iterator(produced)
        for event in produced:
            yield relay.push(event)
            if relay.ended:
                return
        raise relay.missing_terminal()

    return SyncAssistantMessageStream(produce)


def _not_an_iterator(produced: object) -> ConfigurationError:
    return ConfigurationError(
        "a stream function must be a generator function yielding modelwire events, "
        f"but it returned {type(produced).__name__}"
    )


def _traced(t: Tracer | None, events: list[Event]) -> list[Event]:
    if t is not None:
        t.events(events, t.origin)
    return events


def _last_partial(last: list[Event]) -> AssistantMessage | None:
    if not last:
        return None
    try:
        return last[-1].partial
    except Exception:  # an event built by hand, without a snapshot
        return None


def _ended(last: list[Event]) -> bool:
    # The function already yielded its terminal event: nothing may follow it.
    return bool(last) and last[-1].type in _TERMINAL


def _abort(asm: Assembler, last: list[Event]) -> list[Event]:
    if _ended(last):
        return []
    partial = _last_partial(last)
    if partial is not None:
        return [aborted_from(partial)]
    out: list[Event] = []
    asm.abort(out)
    return out


def _fail(asm: Assembler, exc: BaseException, last: list[Event]) -> list[Event]:
    if _ended(last):
        return []
    err = (
        exc
        if isinstance(exc, StreamError)
        else ProviderStreamError(f"the custom stream function failed: {exc!r}")
    )
    partial = _last_partial(last)
    if partial is not None:
        return [failed_from(partial, err)]
    out: list[Event] = []
    asm.fail(err, out)
    return out
