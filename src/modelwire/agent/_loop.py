"""The agent loop: stream → complete message → judge and execute calls → results → next turn.

The loop never touches HTTP: each turn calls ``mw.stream(model, context,
**options)`` (or the ``stream_fn`` given), so it runs on every wire API.

Execution rule (DESIGN §3 rule 8). Tools run only after a response ended
``done(tool_use)``. A response that ended ``error`` or ``aborted`` executes
nothing and ends the run (it is kept in the transcript; the wire APIs do not
replay failed responses). A response that ended ``length`` executes nothing
either: each of its tool calls is answered with an ``output_limit`` error result
("nothing was executed") so the transcript stays valid for a later
``continue_()``/``run()``, and the run ends with ``stop_reason="length"``. Each
tool call id executes at most once per conversation: an id already answered is
refused with ``duplicate_call``, also after a resumed run.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections import deque
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from contextlib import aclosing
from typing import Any, Literal, TypeVar, Unpack

from ..catalog import is_silent_overflow
from ..errors import ConfigurationError
from ..events import DoneEvent, ErrorEvent
from ..options import AgentOptions
from ..tools import Tool, ToolFailure, ToolOutput
from ..types import (
    AssistantMessage,
    Context,
    ErrorInfo,
    Message,
    Model,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ._execute import AfterToolCall, BeforeToolCall, Prepared, execute, failure_result, prepare
from ._run import AgentRun, AgentStopReason, sum_usage
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

__all__ = ["DEFAULT_MAX_TURNS", "Agent", "AgentStream"]

DEFAULT_MAX_TURNS = 25

# The keyword options of ``mw.stream`` the agent passes through (api_key is its
# own argument): declared once, in ``modelwire.options.AgentOptions``.
STREAM_OPTIONS = AgentOptions.__optional_keys__

Prompt = str | UserMessage | Sequence[str | UserMessage]
#: ``should_stop_after_turn(turn_end_event) -> bool`` (sync or async).
ShouldStopAfterTurn = Callable[[TurnEndEvent], "bool | Awaitable[bool]"]
#: ``prepare_next_turn(context) -> Context`` (sync or async).
PrepareNextTurn = Callable[[Context], "Context | Awaitable[Context]"]
#: A zero-argument callable returning the stream options of one call (sync or async).
DynamicOptions = Callable[[], "Mapping[str, Any] | Awaitable[Mapping[str, Any]]"]
#: A zero-argument callable returning the model of one call (sync or async).
DynamicModel = Callable[[], "Model | Awaitable[Model]"]

_T = TypeVar("_T")


async def _maybe_await(value: _T | Awaitable[_T]) -> _T:
    if inspect.isawaitable(value):
        return await value
    return value


def _user(message: object) -> UserMessage:
    if isinstance(message, str):
        return UserMessage(content=message)
    if isinstance(message, UserMessage):
        return message
    raise ConfigurationError(
        f"a prompt must be a str or a UserMessage, got {type(message).__name__}"
    )


def _as_messages(prompt: Prompt) -> list[UserMessage]:
    if isinstance(prompt, str | UserMessage):
        return [_user(prompt)]
    if isinstance(prompt, Sequence):
        out = [_user(m) for m in prompt]
        if out:
            return out
    raise ConfigurationError("a prompt must be a str, a UserMessage or a non-empty list of them")


class _RunState:
    """What ``abort()`` needs to reach inside the running loop."""

    __slots__ = ("aborted", "cancels", "loop", "stream", "tasks")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.aborted = False
        self.stream: Any = None
        self.tasks: set[asyncio.Task[Any]] = set()
        self.cancels: set[threading.Event] = set()


class _Turn:
    """Tool calls of the current turn and their results, appended in call order."""

    __slots__ = ("calls", "flushed", "results", "tasks")

    def __init__(self, calls: Sequence[ToolCall]) -> None:
        self.calls = tuple(calls)
        self.results: list[ToolResultMessage | None] = [None] * len(self.calls)
        self.flushed = 0
        # Calls being executed, by position.
        self.tasks: dict[int, asyncio.Task[tuple[ToolResultMessage, str | None]]] = {}

    def unanswered(self) -> list[ToolResultMessage]:
        """Results for every call not yet appended; a call that was started but did
        not finish is answered ``aborted`` (its effect is unknown)."""
        out = []
        for i in range(self.flushed, len(self.calls)):
            call = self.calls[i]
            result = self.results[i]
            task = self.tasks.get(i)
            if result is None and task is not None and task.done() and not task.cancelled():
                if task.exception() is None:
                    result = task.result()[0]
            if result is None:
                failure = _interrupted(call) if i in self.tasks else _not_started(call)
                result = failure_result(call, failure)
            out.append(result)
        self.flushed = len(self.calls)
        return out


def _not_started(call: ToolCall) -> ToolFailure:
    return ToolFailure(
        "aborted",
        f"the run was aborted before this {call.name} call started; it was not executed",
        hint="Nothing was executed. Wait for the user's instructions.",
    )


def _interrupted(call: ToolCall) -> ToolFailure:
    return ToolFailure("aborted", f"the run was aborted before this {call.name} call finished")


def _silent_overflow(call: ToolCall) -> ToolFailure:
    return ToolFailure(
        "context_overflow",
        f"the conversation is larger than the model's context window, so the server "
        f"dropped part of it; this {call.name} call was not executed",
    )


def _output_limit(call: ToolCall) -> ToolFailure:
    return ToolFailure(
        "output_limit",
        "your response was cut off by the output token limit (finish reason length) before "
        f"this {call.name} call was complete, so its arguments cannot be trusted; "
        "nothing was executed",
    )


class Agent:
    """Runs a model with tools until it answers.

    ``Agent(model, tools, system_prompt=None, api_key=None, ...)``; then
    ``await agent.run(prompt)`` returns an :class:`AgentRun` (``.messages``,
    ``.final``, ``.stop_reason``), and ``agent.stream(prompt)`` yields the
    :mod:`agent events <modelwire.agent.events>` as they happen. The agent keeps
    the transcript: a second ``run`` continues the conversation.

    Options: ``max_turns`` (model responses per run; then the run ends with
    ``stop_reason="max_turns"``, tool results of the last turn included);
    ``tool_execution`` ``"parallel"`` (calls of one response run concurrently,
    results are appended in call order) or ``"sequential"``;
    ``before_tool_call(call, args)`` and ``after_tool_call(call, result)`` hooks
    (see :mod:`modelwire.agent._execute`; both fail closed); ``messages`` to start
    from an existing transcript; ``options`` (a dict) and/or keyword arguments:
    the options of ``mw.stream`` (``temperature``, ``max_tokens``, ``reasoning``,
    ``tool_choice``, ``timeout``, ``max_retries``, ``http_client``,
    ``completion_policy``…), passed on every turn; ``stream_fn`` replaces
    ``mw.stream`` (same signature).

    Dynamic configuration: ``model`` may be a zero-argument callable returning a
    ``Model`` (its ``base_url``, ``id`` and ``headers`` are the call's), and
    ``options`` a zero-argument callable returning a dict of stream options
    (merged over the keyword options); either may be async and is evaluated
    before every model call, as a callable ``api_key`` is read at every call. What
    they return is checked like static values (``ConfigurationError``).

    Turn hooks (sync or async): ``should_stop_after_turn(turn_end_event) -> bool``
    is asked after each turn the run would go on from (tool calls to answer, or
    queued messages); ``True`` ends the run with ``stop_reason="stopped"``.
    ``prepare_next_turn(context) -> Context`` runs before every model call with
    the context about to be sent; its result is sent instead (a
    ``context_prepared`` event carries it), and its messages replace the
    transcript — so a compaction of a long conversation sticks.

    Caller mistakes (unknown options, a missing API key, duplicate tool names)
    raise ``ConfigurationError`` here, at once (a hook or dynamic callable that
    returns the wrong type raises it from the run).
    """

    def __init__(
        self,
        model: Model | DynamicModel,
        tools: Iterable[Tool] = (),
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
        **stream_options: Unpack[AgentOptions],
    ) -> None:
        if not isinstance(model, Model) and not callable(model):
            raise ConfigurationError(
                "model must be a modelwire.Model or a callable returning one, "
                f"got {type(model).__name__}"
            )
        self.model = model
        # The model of the latest call (a callable model is evaluated at every call).
        self._model: Model | None = model if isinstance(model, Model) else None
        self.tools: dict[str, Tool] = {}
        for tool in tools:
            if not isinstance(tool, Tool):
                raise ConfigurationError(f"tools must be modelwire.Tool, got {type(tool).__name__}")
            if tool.name in self.tools:
                raise ConfigurationError(f"two tools are named {tool.name!r}")
            self.tools[tool.name] = tool
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
            from ..client import stream

            stream_fn = stream
            if self._model is not None:
                self._check_key(self._model)
        self._stream_fn = stream_fn
        self._messages: list[Message] = []
        for m in messages:
            if not isinstance(m, UserMessage | AssistantMessage | ToolResultMessage):
                raise ConfigurationError(f"messages must be messages, got {type(m).__name__}")
            self._messages.append(m)
        self._steering: deque[UserMessage] = deque()
        self._follow_ups: deque[UserMessage] = deque()
        self._executed: set[str] = set()
        self._state: _RunState | None = None

    @staticmethod
    def _check_options(opts: dict[str, Any]) -> dict[str, Any]:
        from ..options import resolve_options

        if "api_key" in opts:
            raise ConfigurationError("pass api_key= to Agent directly, not in options")
        unknown = sorted(set(opts) - STREAM_OPTIONS)
        if unknown:
            raise ConfigurationError(
                f"unknown stream option(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(STREAM_OPTIONS))}"
            )
        # Validate now (provider "" has no env var, so no key is looked up here).
        trace = opts.get("trace")
        if trace is not None and not callable(trace):
            raise ConfigurationError("trace must be a callable receiving trace records")
        policy = opts.get("completion_policy")
        if policy is not None and not callable(policy):
            raise ConfigurationError(
                "completion_policy must be a callable (message, tool_choice, tools_declared) "
                "-> None | str"
            )
        resolve_options(
            "", **{k: v for k, v in opts.items() if k not in ("trace", "completion_policy")}
        )
        return opts

    def _check_key(self, model: Model) -> None:
        from ..apis import BUILTIN_APIS
        from ..options import resolve_api_key

        # A missing key is a caller mistake: say so now, not on the first turn.
        # A callable key is read at each call, as mw.stream does.
        if model.api in BUILTIN_APIS and not callable(self.api_key):
            resolve_api_key(model.provider, self.api_key)

    async def _call_config(self) -> tuple[Model, dict[str, Any]]:
        """The model and stream options of one call: a callable model or options is
        evaluated here, at every call (sync or async), and checked like the static ones."""
        model = self.model
        if not isinstance(model, Model):
            model = await _maybe_await(model())
            if not isinstance(model, Model):
                raise ConfigurationError(
                    f"the model callable must return a modelwire.Model, got {type(model).__name__}"
                )
        self._model = model
        options = self.options
        if self._options_fn is not None:
            dynamic = await _maybe_await(self._options_fn())
            if not isinstance(dynamic, Mapping):
                raise ConfigurationError(
                    f"the options callable must return a dict, got {type(dynamic).__name__}"
                )
            options = self._check_options({**options, **dynamic})
        return model, options

    # ------------------------------------------------------------------ public

    @property
    def messages(self) -> tuple[Message, ...]:
        """The transcript so far."""
        return tuple(self._messages)

    @property
    def running(self) -> bool:
        """True while a run is in progress."""
        return self._state is not None

    def reset(self) -> None:
        """Forget the transcript and queued messages (not while running)."""
        if self._state is not None:
            raise ConfigurationError("reset() while the agent is running; abort() first")
        self._messages.clear()
        self._steering.clear()
        self._follow_ups.clear()
        self._executed.clear()

    def stream(self, prompt: Prompt | None = None) -> AgentStream:
        """Run on ``prompt`` (``None``: continue the transcript, see :meth:`continue_`),
        yielding agent events. Nothing happens until it is iterated."""
        new = None if prompt is None else _as_messages(prompt)
        return AgentStream(self, new)

    async def run(self, prompt: Prompt) -> AgentRun:
        """Run on ``prompt`` until the model answers (or the run stops); the run."""
        return await self.stream(prompt).result()

    async def continue_(self) -> AgentRun:
        """Go on from the current transcript without a new prompt: execute the
        unanswered calls of the last ``tool_use`` response, or retry after a failed
        response, then continue the loop."""
        return await self.stream(None).result()

    def steer(self, message: str | UserMessage) -> None:
        """Queue a user message for the next turn boundary (after the current
        turn's tool results), also when the model was about to stop."""
        self._steering.append(_user(message))

    def follow_up(self, message: str | UserMessage) -> None:
        """Queue a user message delivered only when the run would otherwise stop."""
        self._follow_ups.append(_user(message))

    def abort(self) -> None:
        """Abort the current run (callable from any thread): the model stream ends
        ``aborted``, running tools are cancelled (answered ``aborted``), the run
        ends with ``stop_reason="aborted"``."""
        st = self._state
        if st is None:
            return
        st.aborted = True
        stream = st.stream
        if stream is not None:
            stream.abort()
        for ev in list(st.cancels):
            ev.set()
        for task in list(st.tasks):
            try:
                st.loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # the loop is closed
                pass

    # ------------------------------------------------------------------ loop

    def _record(self, message: Message, new: list[Message]) -> list[AgentEvent]:
        self._messages.append(message)
        new.append(message)
        return [MessageStartEvent(message=message), MessageEndEvent(message=message)]

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
        if k == len(msgs) - 1 and last.stop_reason in ("stop", "length"):
            if not self._steering and not self._follow_ups:
                raise ConfigurationError(
                    "nothing to continue: the last message is a finished response; use run()"
                )
        return []

    async def _events(
        self, new_prompt: list[UserMessage] | None
    ) -> AsyncGenerator[AgentEvent, None]:
        if self._state is not None:
            raise ConfigurationError(
                "this agent is already running; use steer()/follow_up(), or abort() it first"
            )
        pending = self._resume_calls() if new_prompt is None else []
        st = self._state = _RunState(asyncio.get_running_loop())
        new: list[Message] = []
        turn_state: list[_Turn] = []
        answered = self._executed | {
            m.tool_call_id for m in self._messages if isinstance(m, ToolResultMessage)
        }
        turns = 0
        stop: AgentStopReason = "stop"
        try:
            yield AgentStartEvent()
            for m in new_prompt or ():
                for e in self._record(m, new):
                    yield e
            if pending:
                last = next(m for m in reversed(self._messages) if isinstance(m, AssistantMessage))
                yield TurnStartEvent(turn=0)
                turn = _Turn(pending)
                turn_state[:] = [turn]
                async with aclosing(self._run_tools(st, turn, answered, new)) as tool_events:
                    async for e in tool_events:
                        yield e
                yield TurnEndEvent(turn=0, message=last, tool_results=_done(turn))
            # Steering queued while idle goes after the prompt (and after the results
            # of resumed calls: nothing may come between a call and its result).
            for m in self._drain(self._steering):
                for e in self._record(m, new):
                    yield e
            while True:
                if st.aborted:
                    stop = "aborted"
                    break
                if turns >= self.max_turns:
                    stop = "max_turns"
                    break
                turns += 1
                yield TurnStartEvent(turn=turns)
                final: list[AssistantMessage] = []
                async with aclosing(self._respond(st, turns, new, final)) as model_events:
                    async for e in model_events:
                        yield e
                msg = final[0]
                reason = msg.stop_reason
                if reason in ("error", "aborted"):
                    yield TurnEndEvent(turn=turns, message=msg)
                    stop = "aborted" if reason == "aborted" else "error"
                    break
                # Nothing of a response cut by the output limit, or of one answering a
                # prompt the server silently truncated, is executed: each call gets an
                # error result (the transcript stays valid) and the run stops.
                refusal = None
                if reason == "length":
                    refusal, stop = _output_limit, "length"
                elif self._model is not None and is_silent_overflow(msg, self._model):
                    refusal, stop = _silent_overflow, "context_overflow"
                if refusal is not None:
                    results = []
                    for call in msg.tool_calls:
                        answered.add(call.id)
                        result = failure_result(call, refusal(call))
                        results.append(result)
                        for e in self._record(result, new):
                            yield e
                    yield TurnEndEvent(turn=turns, message=msg, tool_results=tuple(results))
                    break
                calls = msg.tool_calls if reason == "tool_use" else ()
                turn = _Turn(calls)
                turn_state[:] = [turn]
                if calls:
                    async with aclosing(self._run_tools(st, turn, answered, new)) as tool_events:
                        async for e in tool_events:
                            yield e
                end = TurnEndEvent(turn=turns, message=msg, tool_results=_done(turn))
                yield end
                if st.aborted:
                    stop = "aborted"
                    break
                hook = self.should_stop_after_turn
                if hook is not None and (calls or self._steering or self._follow_ups):
                    # Asked only when the run would go on; queued messages stay queued.
                    verdict = await _maybe_await(hook(end))
                    if not isinstance(verdict, bool):
                        raise ConfigurationError(
                            "should_stop_after_turn must return a bool, "
                            f"got {type(verdict).__name__}"
                        )
                    if verdict:
                        stop = "stopped"
                        break
                queued = self._drain(self._steering)
                if not calls and not queued:
                    queued = self._drain(self._follow_ups)
                for m in queued:
                    for e in self._record(m, new):
                        yield e
                if calls or queued:
                    continue
                stop = "stop"
                break
            yield AgentEndEvent(run=self._make_run(new, turns, stop))
        finally:
            if st.tasks:
                st.aborted = True  # running tools end as "aborted", not as a crash
                for task in list(st.tasks):
                    task.cancel()
                await asyncio.gather(*st.tasks, return_exceptions=True)
            if st.stream is not None:
                await st.stream.aclose()
            # A run closed mid-turn must not leave calls unanswered: the next request
            # would be refused, and continue_() must not run them again.
            for turn in turn_state:
                self._messages.extend(turn.unanswered())
            self._state = None

    @staticmethod
    def _drain(queue: deque[UserMessage]) -> list[UserMessage]:
        out = list(queue)
        queue.clear()
        return out

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
        return AgentRun(
            messages=tuple(self._messages),
            new_messages=tuple(new),
            final=final,
            stop_reason=stop,
            turns=turns,
            usage=sum_usage(new),
        )

    async def _respond(
        self, st: _RunState, turn: int, new: list[Message], final: list[AssistantMessage]
    ) -> AsyncGenerator[AgentEvent, None]:
        """One model response: wraps each model event once; appends the message."""
        context = Context(
            system_prompt=self.system_prompt,
            messages=tuple(self._messages),
            tools=tuple(t.definition for t in self.tools.values()) or None,
        )
        if self.prepare_next_turn is not None:
            prepared = await _maybe_await(self.prepare_next_turn(context))
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
        model, options = await self._call_config()
        s = self._stream_fn(model, context, api_key=self.api_key, **options)
        st.stream = s
        if st.aborted:
            s.abort()
        started = False
        try:
            async for ev in s:
                kind = ev.type
                if isinstance(ev, DoneEvent | ErrorEvent):
                    message = ev.message
                    if not started:
                        yield MessageStartEvent(message=message)
                    self._messages.append(message)
                    new.append(message)
                    final.append(message)
                    yield MessageEndEvent(message=message, event=ev)
                    break
                if kind == "start" and not started:
                    started = True
                    yield MessageStartEvent(message=ev.partial, event=ev)
                else:
                    started = True
                    yield MessageUpdateEvent(event=ev)
        finally:
            st.stream = None
            if not final:
                await s.aclose()
        if not final:
            raise RuntimeError("the model stream ended without a done or error event")

    async def _run_tools(
        self, st: _RunState, turn: _Turn, answered: set[str], new: list[Message]
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
                prep = Prepared(call, failure=_not_started(call))
            else:
                prep = await prepare(call, self.tools, answered, self.before_tool_call)
                if st.aborted and prep.failure is None:  # aborted during before_tool_call
                    prep = Prepared(call, failure=_not_started(call))
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
        st: _RunState,
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

    def _flush(self, turn: _Turn, new: list[Message]) -> list[AgentEvent]:
        out: list[AgentEvent] = []
        while turn.flushed < len(turn.calls) and turn.results[turn.flushed] is not None:
            result = turn.results[turn.flushed]
            assert result is not None
            turn.flushed += 1
            out.extend(self._record(result, new))
        return out


def _done(turn: _Turn) -> tuple[ToolResultMessage, ...]:
    return tuple(r for r in turn.results if r is not None)


class AgentStream:
    """Async iterator of agent events for one run; ``await result()`` gives the run.

    ``abort()`` aborts the run (the stream then ends with ``agent_end``);
    ``aclose()`` aborts and drains it. Also an async context manager.
    """

    def __init__(self, agent: Agent, new: list[UserMessage] | None) -> None:
        self._agent = agent
        self._new = new
        self._gen: AsyncIterator[AgentEvent] | None = None
        self._run: AgentRun | None = None
        self._exhausted = False

    def __aiter__(self) -> AgentStream:
        return self

    async def __anext__(self) -> AgentEvent:
        if self._exhausted:
            raise StopAsyncIteration
        if self._gen is None:
            self._gen = self._agent._events(self._new)
        try:
            ev = await self._gen.__anext__()
        except StopAsyncIteration:
            self._exhausted = True
            raise
        if isinstance(ev, AgentEndEvent):
            self._run = ev.run
        return ev

    async def result(self) -> AgentRun:
        """Run to the end; the :class:`AgentRun`."""
        async for _ in self:
            pass
        if self._run is None:
            raise RuntimeError("the agent stream ended without agent_end")
        return self._run

    @property
    def run(self) -> AgentRun | None:
        """The run, once ``agent_end`` was yielded."""
        return self._run

    def abort(self) -> None:
        """Abort the run (callable from any thread)."""
        if self._gen is not None and not self._exhausted:
            self._agent.abort()

    async def aclose(self) -> None:
        """Abort if still running, then drain to ``agent_end``."""
        if self._gen is None or self._exhausted:
            return
        if self._run is None:
            self._agent.abort()
        async for _ in self:
            pass

    async def __aenter__(self) -> AgentStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
