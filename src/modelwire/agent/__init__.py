"""The agent loop: a model, tools, and the safe path from proposed calls to actions.

``Agent(model, tools)``; ``await agent.run(prompt)`` → :class:`AgentRun`;
``agent.stream(prompt)`` → agent events (:mod:`modelwire.agent.events`); their sync
twins ``agent.run_sync(prompt)`` and ``agent.stream_sync(prompt)`` make the same
decisions with no event loop. See :mod:`modelwire.agent._loop` for the execution
rule, :mod:`modelwire.agent._execute` for the five judgements each call goes
through, :mod:`modelwire.agent._drive` for how each path waits, and
:mod:`modelwire.agent._durable` for runs that pause and survive their process
(``agent.resume(state, decisions)``, ``Agent(store=PATH)``, :func:`list_runs`).
"""

from __future__ import annotations

from ._calls import DynamicModel, DynamicOptions
from ._durable import AgentState, Approve, Decision, Deny, PendingCall, list_runs
from ._execute import AfterToolCall, BeforeToolCall
from ._loop import DEFAULT_MAX_TURNS, Agent, PrepareNextTurn, ShouldStopAfterTurn
from ._run import AgentRun, AgentStopReason
from ._stream import AgentStream, SyncAgentStream
from .events import (
    AgentEndEvent,
    AgentEvent,
    AgentStartEvent,
    ContextPreparedEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)

__all__ = [
    "DEFAULT_MAX_TURNS",
    "AfterToolCall",
    "Agent",
    "AgentEndEvent",
    "AgentEvent",
    "AgentRun",
    "AgentStartEvent",
    "AgentState",
    "AgentStopReason",
    "AgentStream",
    "Approve",
    "BeforeToolCall",
    "ContextPreparedEvent",
    "Decision",
    "Deny",
    "DynamicModel",
    "DynamicOptions",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "PendingCall",
    "PrepareNextTurn",
    "ShouldStopAfterTurn",
    "SyncAgentStream",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "TurnEndEvent",
    "TurnStartEvent",
    "list_runs",
]
