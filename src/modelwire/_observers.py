"""Process-wide observers: what an instrumentation (``modelwire.otel``) attaches to
every model call and every agent run, without the caller passing ``trace=``.

A call observer factory is called once per model call, when the stream is created
(in the caller's task, so it can read the caller's context), with the call's model;
it returns a :class:`~modelwire.trace.TraceObserver` for that call, or ``None``.
An agent observer is called with every agent event, in order, by both drivers.
Nothing here costs anything while the lists are empty.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .trace import TraceObserver
    from .types import Model

__all__ = ["AGENT_OBSERVERS", "CALL_OBSERVERS", "call_observers", "fan_out"]

CallObserverFactory = Callable[["Model"], "TraceObserver | None"]

#: Factories of per-call trace observers (see the module docstring).
CALL_OBSERVERS: list[CallObserverFactory] = []
#: Callables receiving every agent event of every run.
AGENT_OBSERVERS: list[Callable[[Any], None]] = []


def call_observers(model: Model) -> list[TraceObserver]:
    """This call's observers from the registered factories."""
    found: list[TraceObserver] = []
    for factory in list(CALL_OBSERVERS):
        obs = factory(model)
        if obs is not None:
            found.append(obs)
    return found


def fan_out(observers: list[TraceObserver]) -> TraceObserver | None:
    """One observer calling each of ``observers`` in order (``None`` for none). One that
    raises is dropped from then on, as the tracer drops a failing observer, so it cannot
    silence the others."""
    if not observers:
        return None
    if len(observers) == 1:
        return observers[0]
    live = list(observers)

    def observe(record: Any) -> None:
        failed: Exception | None = None
        for obs in list(live):
            try:
                obs(record)
            except Exception as exc:
                live.remove(obs)
                failed = exc
        if failed is not None:
            raise failed

    return observe
