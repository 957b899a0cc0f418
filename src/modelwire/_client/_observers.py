"""Process-wide observers: what an instrumentation (``modelwire.otel``) attaches to
every model call and every agent run, without the caller passing ``trace=``.

A call observer factory is called once per model call, when the stream is created
(in the caller's task, so it can read the caller's context), with the call's model;
it returns a :class:`~modelwire.trace.TraceObserver` for that call, or ``None``.
An agent observer factory is called once per agent run, by both drivers, and what it
returns receives every event of that run, in order.
Nothing here costs anything while the lists are empty.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._wire.trace import TraceObserver
    from ..types import Model

__all__ = ["AGENT_OBSERVERS", "CALL_OBSERVERS", "agent_observers", "call_observers", "fan_out"]

CallObserverFactory = Callable[["Model"], "TraceObserver | None"]

#: Factories of per-call trace observers (see the module docstring).
CALL_OBSERVERS: list[CallObserverFactory] = []
#: Factories of per-run agent event observers.
AGENT_OBSERVERS: list[Callable[[], Callable[[Any], None]]] = []


def agent_observers() -> list[Callable[[Any], None]]:
    """This run's agent observers from the registered factories."""
    return [factory() for factory in list(AGENT_OBSERVERS)]


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
    raises is detached from then on, with the ``RuntimeWarning`` the tracer gives a
    failing observer, and the others go on: a broken ``trace=`` callable cannot
    silence the log or an instrumentation."""
    if not observers:
        return None
    if len(observers) == 1:
        return observers[0]
    live = list(observers)

    def observe(record: Any) -> None:
        for obs in list(live):
            try:
                obs(record)
            except Exception as exc:
                live.remove(obs)
                warnings.warn(
                    f"the trace observer raised {exc!r}; it is detached for the rest of this call",
                    RuntimeWarning,
                    stacklevel=2,
                )

    return observe
