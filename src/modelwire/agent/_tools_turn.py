"""Executing the tool calls of one turn (the second half of a turn, after the
model's response ended ``done(tool_use)``): each call is judged
(:func:`~modelwire.agent._execute.prepare`), spawned — run concurrently or one at a
time, as the driver can — and its result appended to the transcript in call order.
Sans-IO like the rest of the loop: the driver does the waiting
(:mod:`modelwire.agent._intents`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from ..tools import Tool, ToolFailure, ToolOutput
from ..types import Message, ToolCall, ToolResultMessage
from ._durable import STARTED, Approve, Deny, Ledger, PendingCall
from ._execute import (
    AfterToolCall,
    BeforeToolCall,
    Prepared,
    failure_result,
    output_result,
    prepare,
    result_kind,
)
from ._intents import Core, Intent, NextToolItem
from ._turns import RunState, Turn, not_started
from .events import (
    AgentEvent,
    MessageEndEvent,
    MessageStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
)

__all__ = ["Spawn", "ToolRunner"]


class Spawn(Intent):
    """Start executing call ``index`` of ``turn`` (it passed judgements 1–3); its
    updates and its outcome come back through :class:`NextToolItem`, and the outcome
    is also stored in ``turn.finished`` as soon as it exists."""

    __slots__ = ("after", "index", "prep", "transcript", "turn")

    def __init__(
        self,
        turn: Turn,
        index: int,
        prep: Prepared,
        transcript: tuple[Message, ...],
        after: AfterToolCall | None,
    ) -> None:
        self.turn = turn
        self.index = index
        self.prep = prep
        self.transcript = transcript
        self.after = after


class ToolRunner:
    """The :class:`~modelwire.agent.Agent`'s tool-execution half: the state it
    reads is declared here, set by ``Agent.__init__``."""

    tools: dict[str, Tool]
    tool_execution: Literal["parallel", "sequential"]
    before_tool_call: BeforeToolCall | None
    after_tool_call: AfterToolCall | None
    approval: Callable[[ToolCall, dict[str, Any]], Any] | None
    _ledger: Ledger
    _run_id: str
    _decisions: dict[str, Any]
    _pending: list[PendingCall]
    _messages: list[Message]
    _executed: set[str]
    _search: Tool | None

    def _callable(self) -> dict[str, Tool]:
        """The tools a call may name: the run's, and its ``search_tools`` when a tool
        is deferred (a deferred tool is callable before the model loaded it)."""
        if self._search is None:
            return self.tools
        return {**self.tools, self._search.name: self._search}

    def _record(self, message: Message, new: list[Message]) -> list[AgentEvent]:
        self._messages.append(message)
        new.append(message)
        return [MessageStartEvent(message=message), MessageEndEvent(message=message)]

    def _run_tools(self, st: RunState, turn: Turn, answered: set[str], new: list[Message]) -> Core:
        """Judge and execute the calls of one turn; results appended in call order.

        Judged one by one, in call order; each allowed call is spawned
        (:class:`Spawn`) and — sequential — waited for before the next is
        judged, or — parallel — all are waited for at the end."""
        transcript = tuple(self._messages)
        tools = self._callable()
        kinds: list[str | None] = [None] * len(turn.calls)
        sequential = self.tool_execution == "sequential"

        def wait_for(count: int) -> Core:
            finished: set[int] = set()
            while len(finished) < count:
                what, i, payload = yield NextToolItem()
                if what == "update":
                    if i not in finished:
                        yield ToolExecutionUpdateEvent(tool_call=turn.calls[i], partial=payload)
                    continue
                finished.add(i)
                result, kinds[i] = payload
                self._ledger.finish(self._run_id, result)
                turn.results[i] = result
                yield ToolExecutionEndEvent(
                    tool_call=turn.calls[i], result=result, failure=kinds[i]
                )
                yield from self._flush(turn, new)

        for i, call in enumerate(turn.calls):
            yield ToolExecutionStartEvent(tool_call=call)
            known = self._known(call, tools, answered)
            if known is not None:  # replayed from the ledger, or decided by the caller
                answered.add(call.id)
                turn.results[i] = known
                kinds[i] = result_kind(known)
                yield ToolExecutionEndEvent(tool_call=call, result=known, failure=kinds[i])
                if sequential or not turn.started:
                    yield from self._flush(turn, new)
                continue
            approved = isinstance(self._decisions.pop(call.id, None), Approve)
            if st.aborted:
                prep = Prepared(call, failure=not_started(call))
            else:
                prep = yield from prepare(
                    call, tools, answered, self.before_tool_call, self.approval, approved
                )
                if st.aborted and prep.failure is None:  # aborted during before_tool_call
                    prep = Prepared(call, failure=not_started(call))
            if prep.pending:
                assert prep.args is not None
                turn.pending.append(i)  # the run pauses after this turn
                self._pending.append(PendingCall(id=call.id, name=call.name, arguments=prep.args))
                continue
            if prep.failure is not None:
                refused = turn.results[i] = failure_result(call, prep.failure)
                kinds[i] = prep.failure.kind
                yield ToolExecutionEndEvent(tool_call=call, result=refused, failure=kinds[i])
                if sequential or not turn.started:
                    yield from self._flush(turn, new)
                continue
            self._executed.add(call.id)
            self._ledger.start(self._run_id, call.id)  # before it executes
            turn.started.add(i)
            yield Spawn(turn, i, prep, transcript, self.after_tool_call)
            if sequential:
                yield from wait_for(1)
        if not sequential and turn.started:
            yield from wait_for(len(turn.started))
        yield from self._flush(turn, new)

    def _known(
        self, call: ToolCall, tools: dict[str, Tool], answered: set[str]
    ) -> ToolResultMessage | None:
        """The result of a call that is not executed now: recorded in the ledger
        (replayed), in doubt (started, never finished: ``in_doubt`` unless the tool
        is idempotent or read-only), or given by the caller's decision (``Deny``, a result)."""
        if call.id in answered:
            return None  # prepare() answers it duplicate_call
        recorded = self._ledger.lookup(self._run_id, call.id)
        if isinstance(recorded, ToolResultMessage):
            return recorded
        tool = tools.get(call.name)
        # A read-only tool changed nothing however far it got: it simply runs again.
        rerun = tool is not None and (tool.idempotent or tool.read_only)
        if recorded == STARTED and not rerun:
            return failure_result(
                call,
                ToolFailure(
                    "in_doubt",
                    f"the run stopped while this {call.name} call was running: it is not "
                    "known whether it ran, and it was not run again",
                ),
            )
        decision = self._decisions.get(call.id)
        result: ToolResultMessage | None = None
        if isinstance(decision, Deny):
            result = failure_result(
                call,
                ToolFailure(
                    "denied",
                    f"the application denied this {call.name} call: {decision.reason}",
                ),
            )
        elif isinstance(decision, ToolOutput):
            result = output_result(call, decision)
        elif isinstance(decision, ToolResultMessage):
            result = ToolResultMessage(
                tool_call_id=call.id,
                tool_name=call.name,
                content=decision.content,
                is_error=decision.is_error,
                details=decision.details,
            )
        if result is not None:
            del self._decisions[call.id]
            self._ledger.finish(self._run_id, result)
        return result

    def _flush(self, turn: Turn, new: list[Message]) -> list[AgentEvent]:
        # The results from the first unappended call on that exist, in call order
        # (a call waiting for a decision is skipped: the run pauses on it).
        out: list[AgentEvent] = []
        while turn.flushed < len(turn.calls):
            if turn.flushed in turn.pending:
                turn.flushed += 1
                continue
            result = turn.results[turn.flushed]
            if result is None:
                break
            turn.flushed += 1
            out.extend(self._record(result, new))
        return out
