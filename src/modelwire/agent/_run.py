"""``AgentRun``: what one run of the agent produced."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, TypeAlias

import msgspec

from ..types import AssistantMessage, Cost, ErrorInfo, Message, Usage
from ._durable import AgentState, PendingCall

__all__ = ["AgentRun", "AgentStopReason", "sum_usage"]

#: Why a run ended: the model finished (``stop``); its response hit the output
#: limit (``length``, nothing of it was executed); a response failed (``error``);
#: the caller aborted (``aborted``); ``max_turns`` responses were used up; or a
#: response reported more prompt tokens than the model's context window holds
#: (``context_overflow``: the server truncated the prompt silently; nothing of that
#: response was executed); or ``should_stop_after_turn`` returned true after a
#: turn the run would have gone on from (``stopped``: that turn's tool results are
#: in the transcript, queued steering and follow-up messages stay queued); or a
#: call needs approval and the agent has no ``before_tool_call`` hook (``paused``:
#: ``run.pending`` waits for ``agent.resume(run.state, decisions)``).
AgentStopReason: TypeAlias = Literal[
    "stop", "length", "error", "aborted", "max_turns", "context_overflow", "stopped", "paused"
]


class AgentRun(msgspec.Struct, frozen=True, kw_only=True):
    """The result of ``agent.run(prompt)`` (also carried by the ``agent_end`` event).

    A run that failed is still a result: ``stop_reason`` says how it ended
    (``"stop"`` when the model answered, or ``length``, ``error``, ``aborted``,
    ``max_turns``, ``context_overflow``, ``stopped``, ``paused``) and ``error`` why
    the last response failed. ``agent.continue_()`` resumes from it, and
    ``agent.resume(run.state, decisions)`` from its state, in any process.
    """

    messages: tuple[Message, ...]
    """The whole transcript after the run: earlier runs, then user, assistant and
    tool-result messages of this one, in order."""
    new_messages: tuple[Message, ...]
    """Only the messages this run added."""
    final: AssistantMessage
    """The last assistant message (for a run aborted before any response, an empty
    message with ``stop_reason="aborted"``, not added to the transcript)."""
    stop_reason: AgentStopReason
    """Why the run ended."""
    turns: int
    """Model responses requested in this run."""
    usage: Usage
    """Tokens and cost of this run's responses, summed."""
    run_id: str
    """The run's id (its calls are recorded under it; ``agent.resume(run_id)``)."""
    state: AgentState
    """Where the run stands, to continue it with ``agent.resume(state, decisions)``."""
    pending: tuple[PendingCall, ...] = ()
    """The calls waiting for a decision (``stop_reason="paused"``)."""

    @property
    def text(self) -> str:
        """The final message's text."""
        return self.final.text

    @property
    def error(self) -> ErrorInfo | None:
        """Why the final response failed, when it did."""
        return self.final.error


def sum_usage(messages: Iterable[Message], start: Usage | None = None) -> Usage:
    """The sum of the usage of the assistant messages in ``messages`` (plus ``start``)."""
    i = o = cr = cw = 0
    ci = co = ccr = ccw = 0.0
    usages = [m.usage for m in messages if isinstance(m, AssistantMessage)]
    for u in [start, *usages] if start is not None else usages:
        i, o, cr, cw = i + u.input, o + u.output, cr + u.cache_read, cw + u.cache_write
        c = u.cost
        ci, co, ccr, ccw = ci + c.input, co + c.output, ccr + c.cache_read, ccw + c.cache_write
    return Usage(
        input=i,
        output=o,
        cache_read=cr,
        cache_write=cw,
        total_tokens=i + o + cr + cw,
        cost=Cost(input=ci, output=co, cache_read=ccr, cache_write=ccw, total=ci + co + ccr + ccw),
    )
