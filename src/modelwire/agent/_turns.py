"""One turn's state and the results that answer calls which were not executed.

``RunState`` is what ``Agent.abort()`` reaches from any thread; ``Turn`` holds the
calls of one response and their results in call order, and answers every call a
closed or aborted run left without a result (the transcript stays valid).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

from ..errors import ConfigurationError
from ..tools import ToolFailure
from ..types import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from ._execute import failure_result

__all__ = [
    "Prompt",
    "RunState",
    "Turn",
    "as_messages",
    "done_results",
    "interrupted",
    "not_started",
    "output_limit",
    "paused",
    "silent_overflow",
    "to_user",
]

Prompt = str | UserMessage | Sequence[str | UserMessage]

#: Provider stop reasons of a turn that is not over: Anthropic ``pause_turn`` (a
#: long server-tool loop paused; handling-stop-reasons docs: "continue the
#: conversation by passing the paused response back as-is").
CONTINUED_STOPS = frozenset({"pause_turn"})


def paused(message: AssistantMessage) -> bool:
    """Whether ``message`` ended a paused turn the agent continues by sending it back
    (in the next request; nothing is executed for it)."""
    return message.stop_reason == "stop" and message.provider_stop_reason in CONTINUED_STOPS


def to_user(message: object) -> UserMessage:
    if isinstance(message, str):
        return UserMessage(content=message)
    if isinstance(message, UserMessage):
        return message
    raise ConfigurationError(
        f"a prompt must be a str or a UserMessage, got {type(message).__name__}"
    )


def as_messages(prompt: Prompt) -> list[UserMessage]:
    if isinstance(prompt, str | UserMessage):
        return [to_user(prompt)]
    if isinstance(prompt, Sequence):
        out = [to_user(m) for m in prompt]
        if out:
            return out
    raise ConfigurationError("a prompt must be a str, a UserMessage or a non-empty list of them")


class RunState:
    """What ``abort()`` needs to reach while a run is in progress (from any thread).

    ``loop`` and ``tasks`` belong to the async driver (the loop the run's tool tasks
    run on); ``runner`` to the sync driver (the private loop it opens for an async
    tool or hook when no loop is running in its thread)."""

    __slots__ = ("aborted", "cancels", "loop", "runner", "stream", "tasks")

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.loop = loop
        self.runner: asyncio.Runner | None = None
        self.aborted = False
        self.stream: Any = None
        self.tasks: set[asyncio.Task[Any]] = set()
        self.cancels: set[threading.Event] = set()


class Turn:
    """Tool calls of the current turn and their results, appended in call order."""

    __slots__ = ("calls", "finished", "flushed", "pending", "results", "started")

    def __init__(self, calls: Sequence[ToolCall]) -> None:
        self.calls = tuple(calls)
        self.results: list[ToolResultMessage | None] = [None] * len(self.calls)
        self.flushed = 0
        # Calls whose execution started, by position, and the results of those that
        # finished (set by the driver as soon as a result exists).
        self.started: set[int] = set()
        self.finished: dict[int, ToolResultMessage] = {}
        # Calls waiting for a decision (the run pauses): never answered here.
        self.pending: list[int] = []

    def unanswered(self) -> list[ToolResultMessage]:
        """Results for every call not yet appended; a call that was started but did
        not finish is answered ``aborted`` (its effect is unknown)."""
        out = []
        for i in range(self.flushed, len(self.calls)):
            call = self.calls[i]
            if i in self.pending:
                continue
            result = self.results[i] or self.finished.get(i)
            if result is None:
                failure = interrupted(call) if i in self.started else not_started(call)
                result = failure_result(call, failure)
            out.append(result)
        self.flushed = len(self.calls)
        return out


def not_started(call: ToolCall) -> ToolFailure:
    return ToolFailure(
        "aborted",
        f"the run was aborted before this {call.name} call started; it was not executed",
        hint="Nothing was executed. Wait for the user's instructions.",
    )


def interrupted(call: ToolCall) -> ToolFailure:
    return ToolFailure("aborted", f"the run was aborted before this {call.name} call finished")


def silent_overflow(call: ToolCall) -> ToolFailure:
    return ToolFailure(
        "context_overflow",
        f"the conversation is larger than the model's context window, so the server "
        f"dropped part of it; this {call.name} call was not executed",
    )


def output_limit(call: ToolCall) -> ToolFailure:
    return ToolFailure(
        "output_limit",
        "your response was cut off by the output token limit (finish reason length) before "
        f"this {call.name} call was complete, so its arguments cannot be trusted; "
        "nothing was executed",
    )


def done_results(turn: Turn) -> tuple[ToolResultMessage, ...]:
    return tuple(r for r in turn.results if r is not None)
