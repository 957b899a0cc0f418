"""Agent events: what ``agent.stream(prompt)`` yields, in this order.

::

    agent_start
      message_start / message_end                 for each new user message
      turn_start                                  one per model response
        context_prepared (only with prepare_next_turn: the context sent)
        message_start   (wraps the model's ``start`` event)
        message_update  (wraps every model event in between)
        message_end     (wraps the terminal ``done``/``error`` event)
        tool_execution_start / _update* / _end    for each tool call
        message_start / message_end               for each tool result, in call order
      turn_end
      ...                                         more turns
    agent_end                                     always last, carries the run

With ``should_stop_after_turn``, a turn after which the run would go on may be
the last: ``agent_end`` follows its ``turn_end`` with ``run.stop_reason ==
"stopped"``.

Every model event of a response is wrapped exactly once, in order. Events are
frozen ``msgspec.Struct`` values tagged by the ``type`` class variable, like
:mod:`modelwire.events`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeAlias

import msgspec

from ..events import Event
from ..tools import ToolOutput
from ..types import AssistantMessage, Context, Message, ToolCall, ToolResultMessage
from ._run import AgentRun

__all__ = [
    "AgentEndEvent",
    "AgentEvent",
    "AgentStartEvent",
    "ContextPreparedEvent",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "TurnEndEvent",
    "TurnStartEvent",
]


class _AgentEvent(msgspec.Struct, frozen=True, kw_only=True):
    type: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain data, ``type`` first (for ``--json`` output and logs)."""
        out: dict[str, Any] = {"type": self.type}
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if hasattr(value, "to_dict"):
                out[name] = value.to_dict()
            else:
                out[name] = msgspec.to_builtins(value, builtin_types=None, enc_hook=repr)
        return out


class AgentStartEvent(_AgentEvent, frozen=True):
    """The run started; always the first event."""

    type: ClassVar[Literal["agent_start"]] = "agent_start"


class TurnStartEvent(_AgentEvent, frozen=True):
    """A turn (one model response and its tool calls) starts."""

    type: ClassVar[Literal["turn_start"]] = "turn_start"
    turn: int
    """1 for the first turn of the run."""


class MessageStartEvent(_AgentEvent, frozen=True):
    """A message starts: a model response (``event`` is its ``start`` event), or a
    user / tool-result message being added to the transcript (``event`` is None)."""

    type: ClassVar[Literal["message_start"]] = "message_start"
    message: Message
    """The message (for a model response: the snapshot at ``start``)."""
    event: Event | None = None
    """The wrapped model event, for a model response."""


class MessageUpdateEvent(_AgentEvent, frozen=True):
    """A model event between ``start`` and the terminal event of a response."""

    type: ClassVar[Literal["message_update"]] = "message_update"
    event: Event
    """The wrapped model event (``text_delta``, ``tool_call_end``…)."""

    @property
    def message(self) -> AssistantMessage:
        """The response as it stood at this event (``event.partial``)."""
        return self.event.partial


class MessageEndEvent(_AgentEvent, frozen=True):
    """A message is complete and appended to the transcript."""

    type: ClassVar[Literal["message_end"]] = "message_end"
    message: Message
    """The final message."""
    event: Event | None = None
    """The wrapped terminal ``done``/``error`` event, for a model response."""


class ToolExecutionStartEvent(_AgentEvent, frozen=True):
    """The agent starts handling one tool call (checks, then execution)."""

    type: ClassVar[Literal["tool_execution_start"]] = "tool_execution_start"
    tool_call: ToolCall
    """The call as the model made it."""


class ToolExecutionUpdateEvent(_AgentEvent, frozen=True):
    """Progress a tool reported through ``ctx.update(...)``."""

    type: ClassVar[Literal["tool_execution_update"]] = "tool_execution_update"
    tool_call: ToolCall
    """The call being executed."""
    partial: str | ToolOutput
    """What the tool reported."""


class ToolExecutionEndEvent(_AgentEvent, frozen=True):
    """A tool call is answered (executed, or refused by one of the checks)."""

    type: ClassVar[Literal["tool_execution_end"]] = "tool_execution_end"
    tool_call: ToolCall
    """The call."""
    result: ToolResultMessage
    """The result sent back to the model."""
    failure: str | None = None
    """The failure kind when the call failed (``unknown_tool``, ``invalid_arguments``,
    ``blocked``, a tool's own kind, ``execution_failed``…); ``None`` on success."""

    @property
    def is_error(self) -> bool:
        return self.result.is_error


class ContextPreparedEvent(_AgentEvent, frozen=True):
    """``prepare_next_turn`` returned the context this turn's request is made from."""

    type: ClassVar[Literal["context_prepared"]] = "context_prepared"
    turn: int
    """The turn number."""
    context: Context
    """What is sent to the model."""
    replaced: bool
    """True when its messages differ from the transcript before the hook (e.g. a
    compaction): they replace the agent's transcript from here on."""


class TurnEndEvent(_AgentEvent, frozen=True):
    """The turn ended: its response and the results of its tool calls."""

    type: ClassVar[Literal["turn_end"]] = "turn_end"
    turn: int
    """The turn number."""
    message: AssistantMessage
    """The model's response."""
    tool_results: tuple[ToolResultMessage, ...] = ()
    """Results in the order of the calls."""


class AgentEndEvent(_AgentEvent, frozen=True):
    """The run ended; always the last event. ``run`` is what ``agent.run`` returns."""

    type: ClassVar[Literal["agent_end"]] = "agent_end"
    run: AgentRun
    """The finished run."""


AgentEvent: TypeAlias = (
    AgentStartEvent
    | TurnStartEvent
    | ContextPreparedEvent
    | MessageStartEvent
    | MessageUpdateEvent
    | MessageEndEvent
    | ToolExecutionStartEvent
    | ToolExecutionUpdateEvent
    | ToolExecutionEndEvent
    | TurnEndEvent
    | AgentEndEvent
)
"""Any agent event."""
