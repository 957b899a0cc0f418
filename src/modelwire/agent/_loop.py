"""The agent loop: stream → complete message → judge and execute calls → results → next turn.

The loop never touches HTTP: each turn calls ``mw.stream(model, context,
**options)`` — ``mw.stream_sync`` on the sync path — (or the ``stream_fn`` given),
so it runs on every wire API. It is written once, sans-IO: ``Agent._events`` and
the steps it delegates to are generators that make every decision (turn bounds,
steering and follow-up queues, tool judgement and order, the once-per-id rule,
abort, stop reasons, the events) and yield an intent whenever they must wait;
:mod:`modelwire.agent._drive` has the async driver (``run``/``stream``) and the
sync one (``run_sync``/``stream_sync``), which differ only in how they wait.

Execution rule (DESIGN §3 rule 8). Tools run only after a response ended
``done(tool_use)``. A response that ended ``error`` or ``aborted`` executes
nothing and ends the run (it is kept in the transcript; the wire APIs do not
replay failed responses). A response that ended ``length`` executes nothing
either: each of its tool calls is answered with an ``output_limit`` error result
("nothing was executed") so the transcript stays valid for a later
``continue_()``/``run()``, and the run ends with ``stop_reason="length"``. Each
tool call id executes at most once per conversation: an id already answered is
refused with ``duplicate_call``, also after a resumed run.

Provider-run tools (``ServerToolCall`` blocks: web search, code execution, MCP…)
are never executed here: the provider ran them, and they are not ``tool_calls``. A
response paused by the provider (``provider_stop_reason`` ``pause_turn``) is sent
back as it is in the next turn, so the provider resumes it — a turn like any other,
counted by ``max_turns``.
"""

from __future__ import annotations

import functools
import os
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Literal, Unpack

from .._call._fallback import Fallback, answered_by
from .._client._options import AgentOptions
from .._providers._classify import is_silent_overflow
from ..errors import ConfigurationError
from ..events import DoneEvent, ErrorEvent
from ..tools import Tool
from ..tools._toolset import Toolset, merge_tools
from ..types import (
    AssistantMessage,
    Context,
    Message,
    Model,
    SystemMessage,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)
from ._calls import CallConfig, DynamicModel, DynamicOptions
from ._controls import Controls
from ._deferred import check_reserved, provider_searches, request_tools, search_tool
from ._drive import check_sync, drive_async, drive_sync
from ._execute import AfterToolCall, BeforeToolCall, failure_result
from ._intents import Core, NextModelEvent, OpenModel, Resolve
from ._output import agent_model, check_retries, output_feedback
from ._resume import Durable
from ._run import AgentRun, AgentStopReason
from ._stream import AgentStream, SyncAgentStream
from ._tools_turn import ToolRunner
from ._turns import (
    Prompt,
    RunState,
    Turn,
    as_messages,
    done_results,
    output_limit,
    paused,
    silent_overflow,
)
from .events import (
    AgentEndEvent,
    AgentStartEvent,
    ContextPreparedEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)

__all__ = ["DEFAULT_MAX_TURNS", "Agent"]

DEFAULT_MAX_TURNS = 25

#: ``should_stop_after_turn(turn_end_event) -> bool`` (sync or async).
ShouldStopAfterTurn = Callable[[TurnEndEvent], "bool | Awaitable[bool]"]
#: ``prepare_next_turn(context) -> Context`` (sync or async).
PrepareNextTurn = Callable[[Context], "Context | Awaitable[Context]"]


class Agent(CallConfig, ToolRunner, Controls, Durable):
    """Runs a model with tools until it answers.

    ``await agent.run(prompt)`` returns an :class:`AgentRun` (``.text``, ``.final``,
    ``.stop_reason``, ``.messages``); ``agent.stream(prompt)`` yields the
    :mod:`agent events <modelwire.agent.events>` as they happen. The agent keeps the
    transcript: a second ``run`` continues the conversation. A failed response or tool
    does not raise: the run ends ``stop_reason="error"`` (``run.error`` says why), and a
    tool's failure goes to the model as an error result.

    Sync twins: ``agent.run_sync(prompt)``, ``agent.stream_sync(prompt)`` (an
    iterator) and ``agent.continue_sync()`` give the same events and transcript
    with no event loop, over ``mw.stream_sync`` — also inside a running loop. There
    sync tools run directly in the calling thread, and ``parallel`` calls run one
    after the other in call order; an async tool, hook or dynamic callable runs on
    a private event loop when none is running in this thread, and is a
    ``ConfigurationError`` when one is (an async tool: at once) — nothing ever
    blocks a running loop on a helper thread.

    Args:
        model: A ``Model``, a ``"provider/model-id"`` string, a ``Fallback``, or a
            zero-argument callable (sync or async) returning one, evaluated before every
            model call (its ``base_url``, ``id`` and ``headers`` are the call's).
        tools: The tools the model may call (``@mw.tool`` or ``mw.Tool``), unique names,
            and tool servers (``modelwire.mcp``): one the caller has not opened is
            opened at the start of each run and closed at its end. A tool made with
            ``defer=True`` is sent only once the model found it, with the provider's
            tool search or the agent's own ``search_tools`` (:mod:`._deferred`).
        system_prompt: The system prompt of every turn.
        api_key: A key, or a zero-argument callable read at each call.
        max_turns: Model responses per run; then the run ends with
            ``stop_reason="max_turns"``, tool results of the last turn included.
        tool_execution: ``"parallel"`` (the calls of one response run concurrently,
            results in call order) or ``"sequential"``.
        before_tool_call: ``(call, args)`` hook: ``None``/``True`` allows the call,
            ``False``, a reason or a ``ToolFailure`` blocks it (fails closed).
        approval: ``(call, args) -> bool`` (sync or async; args validated): the call
            needs approval (default: the tool's ``approval`` flag). With no
            ``before_tool_call`` hook such calls pause the run (``"paused"``) for
            :meth:`resume`.
        store: A SQLite file recording each call before and after it runs, and the
            run's state (``agent.resume(run_id)``); in memory when ``None``.
        after_tool_call: ``(call, result)`` hook: a replacement result, or ``None``.
        messages: A transcript to start from.
        options: Stream options, a dict or a zero-argument callable (sync or async)
            returning one, merged over the keyword options before every call.
        stream_fn: Replaces ``mw.stream`` (same signature; a sync stream on the sync path).
        should_stop_after_turn: ``(turn_end_event) -> bool``, asked after each turn the
            run would go on from; ``True`` ends it with ``stop_reason="stopped"``.
        prepare_next_turn: ``(context) -> Context``, run before every model call; its
            result is sent (a ``context_prepared`` event) and replaces the transcript.
        output_retries: How often invalid ``output=`` is fed back (``agent._output``).
        **stream_options: ``mw.stream``'s options but ``api_key``, on every turn
            (:class:`modelwire._client._options.AgentOptions`).

    Raises:
        ConfigurationError: Unknown options, duplicate tool names, a tool named
            ``search_tools`` beside deferred ones, a bad setting; a hook or dynamic
            callable returning the wrong type raises it from the run.
        MissingAPIKeyError: No ``api_key`` and the provider's variable is unset.

    Example:
        ```python
        import modelwire as mw
        from modelwire.testing import MockServer, tool_call

        add = mw.tool(lambda a, b: a + b, name="add", description="Add two numbers.")
        with MockServer([tool_call("add", {"a": 2, "b": 3}), "5"]) as server:
            run = mw.Agent(server.model(), [add]).run_sync("2 + 3?")
        print(run.text, run.turns)  # 5 2
        ```
    """

    def __init__(
        self,
        model: Model | Fallback | str | DynamicModel,
        tools: Iterable[Tool | Toolset] = (),
        *,
        system_prompt: str | None = None,
        api_key: str | Callable[[], str] | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        tool_execution: Literal["parallel", "sequential"] = "parallel",
        before_tool_call: BeforeToolCall | None = None,
        after_tool_call: AfterToolCall | None = None,
        messages: Iterable[Message] = (),
        options: Mapping[str, Any] | DynamicOptions | None = None,
        stream_fn: Callable[..., Any] | None = None,
        should_stop_after_turn: ShouldStopAfterTurn | None = None,
        prepare_next_turn: PrepareNextTurn | None = None,
        output_retries: int = 1,
        approval: Callable[[ToolCall, dict[str, Any]], Any] | None = None,
        store: str | os.PathLike[str] | None = None,
        **stream_options: Unpack[AgentOptions],
    ) -> None:
        self.model = model = agent_model(model, stream_options.get("base_url"))
        self.output_retries = check_retries(output_retries)
        # The model of the latest call (a callable model is evaluated at every call).
        self._model: Model | Fallback | None = (
            model if isinstance(model, Model | Fallback) else None
        )
        #: The run's tools by name: the agent's own, then (from the start of a run on)
        #: those of its tool servers.
        self.tools: dict[str, Tool] = {}
        self._toolsets: list[Toolset] = []
        for tool in tools:
            if isinstance(tool, Toolset):
                if tool in self._toolsets:
                    raise ConfigurationError(f"{tool.label} is given twice")
                self._toolsets.append(tool)
                continue
            if not isinstance(tool, Tool):
                raise ConfigurationError(
                    f"tools must be modelwire.Tool or MCP servers, got {type(tool).__name__}"
                )
            if tool.name in self.tools:
                raise ConfigurationError(f"two tools are named {tool.name!r}")
            self.tools[tool.name] = tool
        check_reserved(self.tools)
        self._own_tools = dict(self.tools)
        #: The run's ``search_tools`` when a tool is deferred (``agent._deferred``).
        self._search: Tool | None = None
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise ConfigurationError("system_prompt must be a string or None")
        self.system_prompt = system_prompt
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise ConfigurationError("max_turns must be a positive integer")
        self.max_turns = max_turns
        if tool_execution not in ("parallel", "sequential"):
            raise ConfigurationError('tool_execution must be "parallel" or "sequential"')
        self.tool_execution = tool_execution
        for name, hook in (
            ("before_tool_call", before_tool_call),
            ("after_tool_call", after_tool_call),
        ):
            if hook is not None and not callable(hook):
                raise ConfigurationError(f"{name} must be callable")
        self.before_tool_call = before_tool_call
        self.after_tool_call = after_tool_call
        self._setup_durable(approval, store)
        for name, fn in (
            ("should_stop_after_turn", should_stop_after_turn),
            ("prepare_next_turn", prepare_next_turn),
        ):
            if fn is not None and not callable(fn):
                raise ConfigurationError(f"{name} must be callable (sync or async)")
        self.should_stop_after_turn = should_stop_after_turn
        self.prepare_next_turn = prepare_next_turn
        self._options_fn: DynamicOptions | None = None
        if callable(options):
            self._options_fn = options
            options = None
        elif options is not None and not isinstance(options, Mapping):
            raise ConfigurationError("options must be a dict of stream options or a callable")
        self.options = self._check_options({**(options or {}), **stream_options})
        self.api_key = api_key
        if stream_fn is None:
            from .._client import stream, stream_sync

            self._stream_fn: Callable[..., Any] = stream
            self._stream_fn_sync: Callable[..., Any] = stream_sync
            if self._model is not None:
                self._check_key(self._model)
        else:
            # One function for both paths: on the sync one it must return a sync stream.
            self._stream_fn = self._stream_fn_sync = stream_fn
        self._messages: list[Message] = []
        for m in messages:
            if not isinstance(
                m, UserMessage | AssistantMessage | ToolResultMessage | SystemMessage
            ):
                raise ConfigurationError(f"messages must be messages, got {type(m).__name__}")
            self._messages.append(m)
        self._steering: deque[UserMessage] = deque()
        self._follow_ups: deque[UserMessage] = deque()
        self._executed: set[str] = set()
        self._state: RunState | None = None

    # ------------------------------------------------------------------ public

    def stream(self, prompt: Prompt | None = None, *, run_id: str | None = None) -> AgentStream:
        """Run on ``prompt`` (``None``: continue the transcript, see :meth:`continue_`),
        yielding agent events, ``agent_start`` … ``agent_end``. Nothing happens until it
        is iterated.

        Args:
            prompt: A string, a ``UserMessage`` or a list of them, or ``None``.
            run_id: The run's id (default: a new one), for the ``store``.

        Returns:
            An ``AgentStream``: ``async for`` it, or await ``result()``.

        Raises:
            ConfigurationError: ``prompt`` is not a prompt.
        """
        new = None if prompt is None else as_messages(prompt)
        core = functools.partial(self._events, run_id=run_id)
        return AgentStream(
            lambda: drive_async(core, new, self._stream_fn, self._toolsets), self.abort
        )

    def stream_sync(
        self, prompt: Prompt | None = None, *, run_id: str | None = None
    ) -> SyncAgentStream:
        """:meth:`stream` without an event loop: the same events, decisions and
        transcript, in the calling thread (see :mod:`modelwire.agent._drive`).

        Args:
            prompt: A string, a ``UserMessage`` or a list of them, or ``None``.
            run_id: The run's id (default: a new one), for the ``store``.

        Returns:
            A ``SyncAgentStream``: iterate it, or call ``result()``.

        Raises:
            ConfigurationError: An async tool while a loop runs here, or a bad ``prompt``.
        """
        new = None if prompt is None else as_messages(prompt)
        check_sync(self.tools.values())
        core = functools.partial(self._events, run_id=run_id)
        return SyncAgentStream(
            lambda: drive_sync(core, new, self._stream_fn_sync, self._toolsets), self.abort
        )

    async def run(self, prompt: Prompt, *, run_id: str | None = None) -> AgentRun:
        """Run on ``prompt`` until the model answers (or the run stops); the run.

        Args:
            prompt: A string, a ``UserMessage`` or a list of them.
            run_id: The run's id (default: a new one), for the ``store``.

        Returns:
            The :class:`AgentRun`; its ``stop_reason`` says how the run ended.

        Raises:
            ConfigurationError: ``prompt`` is not a prompt.
        """
        return await self.stream(prompt, run_id=run_id).result()

    def run_sync(self, prompt: Prompt, *, run_id: str | None = None) -> AgentRun:
        """:meth:`run` without an event loop (works inside a running one, as
        ``mw.complete_sync`` does).

        Args:
            prompt: A string, a ``UserMessage`` or a list of them.
            run_id: The run's id (default: a new one), for the ``store``.

        Returns:
            The :class:`AgentRun`.

        Raises:
            ConfigurationError: An async tool while a loop runs here, or a bad ``prompt``.
        """
        return self.stream_sync(prompt, run_id=run_id).result()

    async def continue_(self) -> AgentRun:
        """Go on from the current transcript without a new prompt: execute the
        unanswered calls of the last ``tool_use`` response, or retry after a failed
        response, then continue the loop.

        Returns:
            The :class:`AgentRun`.

        Raises:
            ConfigurationError: The transcript is empty.
        """
        return await self.stream(None).result()

    def continue_sync(self) -> AgentRun:
        """:meth:`continue_` without an event loop.

        Returns:
            The :class:`AgentRun`.

        Raises:
            ConfigurationError: The transcript is empty.
        """
        return self.stream_sync(None).result()

    # ------------------------------------------------------------------ loop

    def _events(
        self, new_prompt: list[UserMessage] | None, st: RunState, run_id: str | None = None
    ) -> Core:
        """The run, sans-IO: agent events for the caller and intents for the driver
        (:mod:`modelwire.agent._intents`), which holds ``st``'s I/O side and cleans it
        up (tool tasks, the model stream) before this generator is closed."""
        if self._state is not None:
            raise ConfigurationError(
                "this agent is already running; use steer()/follow_up(), or abort() it first"
            )
        pending = self._resume_calls() if new_prompt is None else []
        self._begin(run_id)
        if self._toolsets:  # the driver opened them: their tools join the run's
            self.tools = merge_tools(self._own_tools, self._toolsets)
            check_reserved(self.tools)
        deferred = {name: t for name, t in self.tools.items() if t.defer}
        self._search = search_tool(deferred) if deferred else None
        self._state = st
        new: list[Message] = []
        turn_state: list[Turn] = []
        answered = self._executed | {
            m.tool_call_id for m in self._messages if isinstance(m, ToolResultMessage)
        }
        turns = 0
        stop: AgentStopReason = "stop"
        try:
            yield AgentStartEvent()
            for m in new_prompt or ():
                yield from self._record(m, new)
            if pending:
                last = next(m for m in reversed(self._messages) if isinstance(m, AssistantMessage))
                yield TurnStartEvent(turn=0)
                turn = Turn(pending)
                turn_state[:] = [turn]
                self._checkpoint(0, new)
                yield from self._run_tools(st, turn, answered, new)
                yield TurnEndEvent(turn=0, message=last, tool_results=done_results(turn))
            # Steering queued while idle goes after the prompt (and after the results
            # of resumed calls: nothing may come between a call and its result).
            for m in self._drain(self._steering):
                yield from self._record(m, new)
            while True:
                if self._pending:
                    stop = "paused"
                    break
                if st.aborted:
                    stop = "aborted"
                    break
                if turns >= self.max_turns:
                    stop = "max_turns"
                    break
                turns += 1
                outcome: list[AgentStopReason] = []
                yield from self._turn(st, turns, answered, new, turn_state, outcome)
                self._checkpoint(turns, new)
                if outcome:
                    stop = outcome[0]
                    break
            yield AgentEndEvent(run=self._make_run(new, turns, stop))
        finally:
            # A run closed mid-turn must not leave calls unanswered: the next request
            # would be refused, and continue_() must not run them again.
            for turn in turn_state:
                self._messages.extend(turn.unanswered())
            self._state = None
            self._end()

    def _turn(
        self,
        st: RunState,
        number: int,
        answered: set[str],
        new: list[Message],
        turn_state: list[Turn],
        outcome: list[AgentStopReason],
    ) -> Core:
        """One turn: the model's response; then its tool calls executed, or each
        refused when the response may not be acted on; then the turn hook and the
        queued messages. Appends to ``outcome`` why the run ends, or nothing when
        it goes on to another turn."""
        yield TurnStartEvent(turn=number)
        final: list[AssistantMessage] = []
        yield from self._respond(st, number, new, final)
        msg = final[0]
        reason = msg.stop_reason
        if (feedback := output_feedback(msg, self.output_retries, new)) is not None:
            yield from self._record(feedback, new)  # invalid output: ask again (bounded)
            yield TurnEndEvent(turn=number, message=msg)
            return
        if reason in ("error", "aborted"):
            yield TurnEndEvent(turn=number, message=msg)
            outcome.append("aborted" if reason == "aborted" else "error")
            return
        # Nothing of a response cut by the output limit, or of one answering a
        # prompt the server silently truncated, is executed: each call gets an
        # error result (the transcript stays valid) and the run stops.
        refusal = None
        ending: AgentStopReason = "stop"
        if reason == "length":
            refusal, ending = output_limit, "length"
        elif self._model is not None and is_silent_overflow(msg, answered_by(self._model, msg)):
            refusal, ending = silent_overflow, "context_overflow"
        if refusal is not None:
            results = []
            for call in msg.tool_calls:
                answered.add(call.id)
                result = failure_result(call, refusal(call))
                results.append(result)
                yield from self._record(result, new)
            yield TurnEndEvent(turn=number, message=msg, tool_results=tuple(results))
            outcome.append(ending)
            return
        calls = msg.tool_calls if reason == "tool_use" else ()
        # A paused turn goes on: the next request sends the paused message back, so
        # the provider resumes it (never a call to run: provider-run tools are its own).
        resume = paused(msg)
        turn = Turn(calls)
        turn_state[:] = [turn]
        if calls:
            self._checkpoint(number, new)  # before any of them runs
            yield from self._run_tools(st, turn, answered, new)
        end = TurnEndEvent(turn=number, message=msg, tool_results=done_results(turn))
        yield end
        if st.aborted or self._pending:
            outcome.append("aborted" if st.aborted else "paused")
            return
        hook = self.should_stop_after_turn
        if hook is not None and (calls or resume or self._steering or self._follow_ups):
            # Asked only when the run would go on; queued messages stay queued.
            verdict = yield Resolve(hook(end))
            if not isinstance(verdict, bool):
                raise ConfigurationError(
                    f"should_stop_after_turn must return a bool, got {type(verdict).__name__}"
                )
            if verdict:
                outcome.append("stopped")
                return
        if resume:
            return  # queued messages wait: nothing may come between a pause and its resume
        queued = self._drain(self._steering)
        if not calls and not queued:
            queued = self._drain(self._follow_ups)
        for m in queued:
            yield from self._record(m, new)
        if not calls and not queued:
            outcome.append("stop")

    def _definitions(self, model: Model | Fallback) -> tuple[ToolDefinition, ...]:
        """The tool definitions of one request (deferred tools: ``agent._deferred``)."""
        if self._search is None:
            return tuple(t.definition for t in self.tools.values())
        provider = provider_searches(model)
        return request_tools(self.tools, self._messages, self._search, provider)

    def _respond(
        self, st: RunState, turn: int, new: list[Message], final: list[AssistantMessage]
    ) -> Core:
        """One model response: wraps each model event once; appends the message. A
        stream left open (the run closed or failed meanwhile) stays in ``st.stream``
        for the driver to close."""
        # The model first: with deferred tools, which definitions go depends on it.
        model, options = yield from self._call_config()
        context = Context(
            system_prompt=self.system_prompt,
            messages=tuple(self._messages),
            tools=self._definitions(model) or None,
        )
        if self.prepare_next_turn is not None:
            prepared = yield Resolve(self.prepare_next_turn(context))
            if not isinstance(prepared, Context):
                raise ConfigurationError(
                    "prepare_next_turn must return a modelwire.Context, "
                    f"got {type(prepared).__name__}"
                )
            replaced = prepared.messages != context.messages
            if replaced:
                # The prepared messages become the transcript, so a compaction sticks.
                self._messages[:] = prepared.messages
            context = prepared
            yield ContextPreparedEvent(turn=turn, context=context, replaced=replaced)
        s = yield OpenModel(model, context, {"api_key": self.api_key, **options})
        st.stream = s
        if st.aborted:
            s.abort()
        started = False
        while True:
            ev = yield NextModelEvent(s)
            if ev is None:
                raise RuntimeError("the model stream ended without a done or error event")
            if isinstance(ev, DoneEvent | ErrorEvent):
                st.stream = None  # ended: nothing left to close
                message = ev.message
                if not started:
                    yield MessageStartEvent(message=message)
                self._messages.append(message)
                new.append(message)
                final.append(message)
                yield MessageEndEvent(message=message, event=ev)
                return
            if ev.type == "start" and not started:
                started = True
                yield MessageStartEvent(message=ev.partial, event=ev)
            else:
                started = True
                yield MessageUpdateEvent(event=ev)
