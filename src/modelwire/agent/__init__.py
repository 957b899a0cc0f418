"""The agent loop: a model, tools, and the safe path from proposed calls to actions.

``Agent(model, tools)``; ``await agent.run(prompt)`` → :class:`AgentRun`;
``agent.stream(prompt)`` → agent events (:mod:`modelwire.agent.events`); their sync
twins ``agent.run_sync(prompt)`` and ``agent.stream_sync(prompt)`` make the same
decisions with no event loop. See :mod:`modelwire.agent._loop` for the execution
rule, :mod:`modelwire.agent._execute` for the five judgements each call goes
through, and :mod:`modelwire.agent._drive` for how each path waits.
"""

from __future__ import annotations

from ._calls import DynamicModel, DynamicOptions
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
    "AgentStopReason",
    "AgentStream",
    "BeforeToolCall",
    "ContextPreparedEvent",
    "DynamicModel",
    "DynamicOptions",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "PrepareNextTurn",
    "ShouldStopAfterTurn",
    "SyncAgentStream",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "TurnEndEvent",
    "TurnStartEvent",
]
