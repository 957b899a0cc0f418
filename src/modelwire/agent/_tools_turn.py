"""Executing the tool calls of one turn (the second half of a turn, after the
model's response ended ``done(tool_use)``): each call is judged
(:func:`~modelwire.agent._execute.prepare`), run as a task — concurrently or one
at a time — and its result appended to the transcript in call order.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any, Literal

from ..tools import Tool, ToolOutput
from ..types import Message, ToolResultMessage
from ._execute import AfterToolCall, BeforeToolCall, Prepared, execute, failure_result, prepare
from ._turns import RunState, Turn, not_started
from .events import (
    AgentEvent,
    MessageEndEvent,
    MessageStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
)

__all__ = ["ToolRunner"]


class ToolRunner:
    """The :class:`~modelwire.agent.Agent`'s tool-execution half: the state it
    reads is declared here, set by ``Agent.__init__``."""

    tools: dict[str, Tool]
    tool_execution: Literal["parallel", "sequential"]
    before_tool_call: BeforeToolCall | None
    after_tool_call: AfterToolCall | None
    _messages: list[Message]
    _executed: set[str]

    def _record(self, message: Message, new: list[Message]) -> list[AgentEvent]:
        self._messages.append(message)
        new.append(message)
        return [MessageStartEvent(message=message), MessageEndEvent(message=message)]

    async def _run_tools(
        self, st: RunState, turn: Turn, answered: set[str], new: list[Message]
    ) -> AsyncGenerator[AgentEvent, None]:
        """Judge and execute the calls of one turn; results appended in call order."""
        queue: asyncio.Queue[tuple[str, int, Any]] = asyncio.Queue()
        transcript = tuple(self._messages)
        tasks = turn.tasks
        kinds: list[str | None] = [None] * len(turn.calls)
        sequential = self.tool_execution == "sequential"

        async def wait_for(count: int) -> AsyncGenerator[AgentEvent, None]:
            finished: set[int] = set()
            while len(finished) < count:
                what, i, payload = await queue.get()
                if what == "update":
                    if i not in finished:
                        yield ToolExecutionUpdateEvent(tool_call=turn.calls[i], partial=payload)
                    continue
                finished.add(i)
                result, kinds[i] = await tasks[i]
                turn.results[i] = result
                yield ToolExecutionEndEvent(
                    tool_call=turn.calls[i], result=result, failure=kinds[i]
                )
                for e in self._flush(turn, new):
                    yield e

        for i, call in enumerate(turn.calls):
            yield ToolExecutionStartEvent(tool_call=call)
            if st.aborted:
                prep = Prepared(call, failure=not_started(call))
            else:
                prep = await prepare(call, self.tools, answered, self.before_tool_call)
                if st.aborted and prep.failure is None:  # aborted during before_tool_call
                    prep = Prepared(call, failure=not_started(call))
            if prep.failure is not None:
                refused = turn.results[i] = failure_result(call, prep.failure)
                kinds[i] = prep.failure.kind
                yield ToolExecutionEndEvent(tool_call=call, result=refused, failure=kinds[i])
                if sequential or not tasks:
                    for e in self._flush(turn, new):
                        yield e
                continue
            self._executed.add(call.id)
            tasks[i] = self._spawn(st, i, prep, transcript, queue)
            if sequential:
                async with aclosing(wait_for(1)) as updates:
                    async for e in updates:
                        yield e
        if not sequential and tasks:
            async with aclosing(wait_for(len(tasks))) as updates:
                async for e in updates:
                    yield e
        for e in self._flush(turn, new):
            yield e

    def _spawn(
        self,
        st: RunState,
        i: int,
        prep: Prepared,
        transcript: tuple[Message, ...],
        queue: asyncio.Queue[tuple[str, int, Any]],
    ) -> asyncio.Task[tuple[ToolResultMessage, str | None]]:
        loop = st.loop
        cancel = threading.Event()
        finished = False

        def on_update(partial: str | ToolOutput) -> None:
            # From the loop thread or a worker thread: call_soon_threadsafe keeps
            # every item in FIFO order with the "done" below.
            if not finished:
                loop.call_soon_threadsafe(queue.put_nowait, ("update", i, partial))

        async def one() -> tuple[ToolResultMessage, str | None]:
            nonlocal finished
            try:
                return await execute(
                    prep, transcript, on_update, cancel, lambda: st.aborted, self.after_tool_call
                )
            finally:
                finished = True
                st.cancels.discard(cancel)
                loop.call_soon_threadsafe(queue.put_nowait, ("done", i, None))

        st.cancels.add(cancel)
        task = loop.create_task(one())
        st.tasks.add(task)
        task.add_done_callback(st.tasks.discard)
        return task

    def _flush(self, turn: Turn, new: list[Message]) -> list[AgentEvent]:
        out: list[AgentEvent] = []
        while turn.flushed < len(turn.calls) and turn.results[turn.flushed] is not None:
            result = turn.results[turn.flushed]
            assert result is not None
            turn.flushed += 1
            out.extend(self._record(result, new))
        return out
