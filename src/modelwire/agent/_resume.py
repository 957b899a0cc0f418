"""The :class:`~modelwire.agent.Agent`'s durable half: run ids, checkpoints,
``run.state`` and ``resume`` (:mod:`modelwire.agent._durable` has the values and
the ledger)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from .._call._fallback import Fallback
from ..errors import ConfigurationError
from ..types import AssistantMessage, ErrorInfo, Message, Model, ToolCall, ToolResultMessage, Usage
from ._durable import AgentState, Ledger, PendingCall, check_decisions
from ._run import AgentRun, AgentStopReason, sum_usage
from ._stream import AgentStream, SyncAgentStream
from ._turns import Prompt, paused

__all__ = ["Durable"]


class Durable:
    """Run ids, the ledger, the state of a run and resuming it: the state it uses
    is declared here, set by ``Agent.__init__`` (:meth:`_setup_durable`)."""

    _messages: list[Message]
    _steering: Any
    _follow_ups: Any
    _model: Model | Fallback | None
    _ledger: Ledger
    _run_id: str
    _decisions: dict[str, Any]
    _pending: list[PendingCall]
    _prior: tuple[Usage, int]
    _base: tuple[Usage, int]
    approval: Callable[[ToolCall, dict[str, Any]], Any] | None

    def stream(self, prompt: Prompt | None = None, *, run_id: str | None = None) -> AgentStream:
        raise NotImplementedError  # Agent's

    def stream_sync(
        self, prompt: Prompt | None = None, *, run_id: str | None = None
    ) -> SyncAgentStream:
        raise NotImplementedError  # Agent's

    def _setup_durable(
        self,
        approval: Callable[[ToolCall, dict[str, Any]], Any] | None,
        store: str | os.PathLike[str] | None,
    ) -> None:
        if approval is not None and not callable(approval):
            raise ConfigurationError("approval must be a callable (call, args) -> bool")
        if store is not None and not isinstance(store, str | os.PathLike):
            raise ConfigurationError("store must be a path to a SQLite file, or None")
        self.approval = approval
        self._ledger = Ledger(store)
        self._run_id = ""
        self._decisions = {}
        self._pending = []
        self._prior = self._base = (Usage(), 0)

    def _begin(self, run_id: str | None) -> None:
        """A run starts: its id (given, resumed, or new), no pending calls yet."""
        if run_id is not None and (not isinstance(run_id, str) or not run_id):
            raise ConfigurationError("run_id must be a non-empty string")
        self._run_id = run_id or uuid.uuid4().hex
        self._pending = []
        self._base, self._prior = self._prior, (Usage(), 0)

    def _end(self) -> None:
        self._decisions = {}

    def _state_now(self, turns: int, new: list[Message]) -> AgentState:
        usage, before = self._base
        return AgentState(
            run_id=self._run_id,
            messages=tuple(self._messages),
            pending=tuple(self._pending),
            usage=sum_usage(new, usage),
            turns=before + turns,
        )

    def _checkpoint(self, turns: int, new: list[Message]) -> None:
        """Keep the run's state in the store (before a turn's calls run, and after it)."""
        self._ledger.save(self._state_now(turns, new))

    def _make_run(self, new: list[Message], turns: int, stop: AgentStopReason) -> AgentRun:
        final = next((m for m in reversed(new) if isinstance(m, AssistantMessage)), None)
        if final is None:
            earlier = (m for m in reversed(self._messages) if isinstance(m, AssistantMessage))
            final = next(earlier, None)
        if final is None:
            model = self._model
            final = AssistantMessage(
                content=(),
                api=model.api if model else "",
                provider=model.provider if model else "",
                model=model.id if model else "",
                stop_reason="aborted" if stop == "aborted" else "stop",
                error=ErrorInfo(kind="aborted", message="the run was aborted before any response")
                if stop == "aborted"
                else None,
            )
        state = self._state_now(turns, new)
        self._ledger.save(state)
        return AgentRun(
            messages=tuple(self._messages),
            new_messages=tuple(new),
            final=final,
            stop_reason=stop,
            turns=turns,
            usage=sum_usage(new),
            run_id=self._run_id,
            state=state,
            pending=state.pending,
        )

    def _resume_calls(self) -> list[ToolCall]:
        """For ``continue_``: the calls of the last response still without a result."""
        msgs = self._messages
        if not msgs and not self._steering and not self._follow_ups:
            raise ConfigurationError("nothing to continue: the transcript is empty; use run()")
        k = next((i for i in range(len(msgs) - 1, -1, -1) if msgs[i].role == "assistant"), -1)
        if k < 0:
            return []
        last = msgs[k]
        assert isinstance(last, AssistantMessage)
        if last.stop_reason == "tool_use":
            done = {m.tool_call_id for m in msgs[k + 1 :] if isinstance(m, ToolResultMessage)}
            return [c for c in last.tool_calls if c.id not in done]
        if k == len(msgs) - 1 and last.stop_reason in ("stop", "length") and not paused(last):
            if not self._steering and not self._follow_ups:
                raise ConfigurationError(
                    "nothing to continue: the last message is a finished response; use run()"
                )
        return []

    def _load(self, state: AgentState | str, decisions: Mapping[str, Any] | None) -> str:
        """Check ``decisions`` and take ``state``'s transcript: the run id to go on with."""
        if isinstance(state, str):
            loaded = self._ledger.load(state)
            if loaded is None:
                where = self._ledger.path or "this agent's in-memory store"
                raise ConfigurationError(f"no run {state!r} in {where}")
            state = loaded
        if not isinstance(state, AgentState):
            raise ConfigurationError(
                f"resume() takes an AgentState or a run id, got {type(state).__name__}"
            )
        given = check_decisions(state, decisions)
        if getattr(self, "_state", None) is not None:
            raise ConfigurationError("this agent is already running; resume() it when it ends")
        self._messages[:] = state.messages
        self._decisions = given
        self._prior = (state.usage, state.turns)
        return state.run_id

    async def resume(
        self, state: AgentState | str, decisions: Mapping[str, Any] | None = None
    ) -> AgentRun:
        """Continue a run from its state — in this process or another, with the same
        agent configuration — deciding each of its pending calls.

        Calls recorded in the agent's ``store`` are not executed again: their
        results are replayed; a call recorded as started with no result is answered
        ``in_doubt`` (run again when the tool is ``idempotent`` or read-only). Then the loop goes
        on as usual, and may pause again.

        Args:
            state: ``run.state`` (or ``AgentState.from_json(data)``), or a run id whose
                latest state the agent's ``store`` keeps.
            decisions: For each pending call id: ``mw.Approve()`` (run it),
                ``mw.Deny(reason)`` (an error result of kind ``denied``), or its result
                (a ``mw.ToolOutput`` or ``mw.ToolResultMessage``), used unexecuted.

        Returns:
            The :class:`AgentRun`.

        Raises:
            ConfigurationError: A decision missing for a pending call, for an id that
                is not pending, or of the wrong type (naming the id), before anything
                runs; an unknown run id; nothing to continue.

        Example:
            ```python
            import modelwire as mw
            from modelwire.testing import MockServer, tool_call


            @mw.tool(approval=True)
            def delete(path: str) -> str:
                '''Delete a file.'''
                return f"deleted {path}"


            with MockServer([tool_call("delete", {"path": "a.txt"}), "Done."]) as server:
                agent = mw.Agent(server.model(), [delete])
                run = agent.run_sync("Delete a.txt")
                print(run.stop_reason, run.pending[0].arguments)  # paused {'path': 'a.txt'}
                data = mw.to_json(run.state)
                state = mw.AgentState.from_json(data)
                run = agent.resume_sync(state, {state.pending[0].id: mw.Approve()})
            print(run.text)  # Done.
            ```
        """
        run_id = self._load(state, decisions)
        return await self.stream(None, run_id=run_id).result()

    def resume_stream(
        self, state: AgentState | str, decisions: Mapping[str, Any] | None = None
    ) -> AgentStream:
        """:meth:`resume` as events: the :class:`AgentStream` ``stream()`` returns.

        The decisions are checked and the state taken at once; the run goes on when
        the stream is iterated.

        Args:
            state: ``run.state``, an ``AgentState`` from JSON, or a stored run id.
            decisions: One decision per pending call id (see :meth:`resume`).

        Returns:
            The run's events; ``await stream.result()`` is the :class:`AgentRun`.

        Raises:
            ConfigurationError: A missing, unknown or mistyped decision (naming the
                id), an unknown run id, nothing to continue.

        Example:
            ```python
            import asyncio

            import modelwire as mw
            from modelwire.testing import MockServer, tool_call


            @mw.tool(approval=True)
            def send(to: str) -> str:
                '''Send the report.'''
                return f"sent to {to}"


            async def main() -> None:
                with MockServer([tool_call("send", {"to": "ops"}), "Sent."]) as server:
                    agent = mw.Agent(server.model(), [send])
                    run = await agent.run("Send the report to ops")
                    decisions = {run.pending[0].id: mw.Approve()}
                    async for ev in agent.resume_stream(run.state, decisions):
                        if ev.type == "tool_execution_end":
                            print(ev.result.text)  # sent to ops


            asyncio.run(main())
            ```
        """
        run_id = self._load(state, decisions)
        return self.stream(None, run_id=run_id)

    def resume_sync(
        self, state: AgentState | str, decisions: Mapping[str, Any] | None = None
    ) -> AgentRun:
        """:meth:`resume` without an event loop.

        Args:
            state: ``run.state``, an ``AgentState`` from JSON, or a stored run id.
            decisions: One decision per pending call id (see :meth:`resume`).

        Returns:
            The :class:`AgentRun`.

        Raises:
            ConfigurationError: A missing, unknown or mistyped decision (naming the
                id), an unknown run id, nothing to continue.

        Example:
            ```python
            import modelwire as mw
            from modelwire.testing import MockServer, tool_call

            rm = mw.tool(lambda path: "gone", name="rm", description="Remove.")
            rm.approval = True
            with MockServer([tool_call("rm", {"path": "x"}), "Kept it."]) as server:
                agent = mw.Agent(server.model(), [rm])
                run = agent.run_sync("Remove x")
                call = run.pending[0]
                run = agent.resume_sync(run.state, {call.id: mw.Deny("keep x")})
            print(run.messages[-2].details["failure"])  # denied
            ```
        """
        run_id = self._load(state, decisions)
        return self.stream_sync(None, run_id=run_id).result()
