"""Entry points: ``stream``, ``complete``, their sync twins, and ``register_api`` (deprecated).

The client wires the layers and nothing else (DESIGN §1): a wire API builds the
request (validated before any I/O), one sans-IO :class:`~modelwire._call.Call`
takes every decision of the call and feeds the :class:`~modelwire._wire.pipeline.Pipeline`,
and a driver from ``modelwire._http`` does its waiting: ``stream`` and
``stream_sync`` differ only in which driver they use.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, Unpack

from .._apis import (
    background_facet,
    get_api,
    register_wire_api,
)
from .._apis._sniff import wrong_api_error
from .._call import Call, Leg
from .._call._breaker import CircuitBreaker
from .._call._fallback import Fallback, Plan, Target
from .._call._leg import Resume
from .._wire.pipeline import Pipeline
from ..errors import ConfigurationError
from ..events import Event
from ..types import AssistantMessage, Context, Model, UserMessage
from ._count import TokenCount
from ._handoffs import handoff_notes
from ._not_found import not_found_hint
from ._observers import CALL_OBSERVERS
from ._options import StreamOptions, check_option_names
from ._prepare import Prepared, plan_call, prepare
from ._streams import (
    AbortFlag,
    AssistantMessageStream,
    Pulled,
    Puller,
    SyncAssistantMessageStream,
    SyncStreamChannel,
)

if TYPE_CHECKING:
    from .._wire.assemble import CompletionPolicy
    from .._wire.trace import TraceObserver
    from ._output._plan import OutputPlan

__all__ = [
    "CircuitBreaker",
    "Fallback",
    "TokenCount",
    "complete",
    "complete_sync",
    "count_tokens",
    "count_tokens_sync",
    "register_api",
    "stream",
    "stream_sync",
]

_S = TypeVar("_S", AssistantMessageStream, SyncAssistantMessageStream)


def register_api(name: str, stream_fn: Any) -> None:
    """Deprecated spelling of :func:`modelwire.ext.register_wire_api` ``(stream_fn, name)``:
    registers a wire API object or a stream function under ``name``."""
    warnings.warn(
        "mw.register_api(name, api) is deprecated: use modelwire.ext.register_wire_api(api, name)",
        DeprecationWarning,
        stacklevel=2,
    )
    if not isinstance(name, str) or not name:
        raise ConfigurationError("register_api needs a non-empty name")
    register_wire_api(stream_fn, name)


def _inputs(
    model: Model | Fallback | str, context: Context | str, opts: StreamOptions
) -> tuple[Model | Fallback, Context]:
    """The call's model (a ``"provider/model-id"`` string looked up, ``base_url=``
    applied) and its context (a prompt string is one user message)."""
    base_url = opts.get("base_url")
    if isinstance(model, Fallback):
        if base_url is not None:
            raise ConfigurationError(
                "base_url= replaces one model's address; give each model of the "
                "Fallback its own base_url instead"
            )
    elif not isinstance(model, Model) or base_url is not None:
        from .._catalog import as_model

        model = as_model(model, base_url)
    if isinstance(context, str):
        context = Context(messages=(UserMessage(content=context),))
    elif not isinstance(context, Context):
        raise ConfigurationError(
            f"context must be a modelwire.Context or a prompt string, got {type(context).__name__}"
        )
    return model, context


def _pipeline_factory(
    target: Target,
    context: Context,
    trace: TraceObserver | None,
    policy: CompletionPolicy | None,
    after: int = -1,
    response_id: str | None = None,
) -> Callable[[], Pipeline]:
    model, options, request = target.model, target.options, target.request

    wire: Any = get_api(model.api)
    facet = background_facet(model.api) if options.background else None
    if facet is not None:  # sequence numbers read: a broken stream is picked up (_call)
        wire = facet.decoding(wire, after, response_id)

    def new() -> Pipeline:
        p = Pipeline(
            wire,
            api=model.api,
            sniff=wrong_api_error,
            model=model,
            tool_choice=options.tool_choice,
            # A response picked up by id: what its request declared is not known here.
            tools_declared=bool(context.tools) if response_id is None else None,
            secrets=request.secrets,  # the key and every credential header (apis._common)
            trace=trace,
            clock=True,
            policy=policy,
        )
        declare = getattr(p.decoder, "declare_tools", None)
        if declare is not None:  # a decoder that reads tool names (leaked tool calls)
            declare(tuple(t.name for t in context.tools or ()))
        if p.trace is not None:
            p.trace.context(model, context, tuple(handoff_notes(context, model)))
            p.trace.request(request)
        return p

    return new


def _leg(plan: Plan, target: Target, new: Callable[[], Pipeline]) -> Leg:
    model, options = target.model, target.options
    pacer = None
    tokens = 0
    if plan.rpm is not None or plan.tpm is not None:
        from .._call._limits import pacer_for

        pacer = pacer_for(model.provider, plan.rpm, plan.tpm)
        if plan.tpm is not None:
            # The usual 4 bytes per token of the request body; settled with the usage.
            tokens = max(1, len(target.request.body) // 4)
    circuit = plan.breaker.circuit(model.provider, model.id) if plan.breaker else None
    request = target.request
    resume: Resume | None = None
    facet = background_facet(model.api) if options.background else None
    if facet is not None:
        resume = facet.resume_request
    return Leg(request, timeout=options.timeout, max_retries=options.max_retries,
               new_pipeline=new, model=model, prefail=target.prefail, circuit=circuit,
               pacer=pacer, tokens=tokens, resume=resume,
               not_found_hint=partial(not_found_hint, model, request.url, request.secrets))  # fmt: skip


def _call(
    plan: Plan,
    context: Context,
    trace: TraceObserver | None,
    policy: CompletionPolicy | None,
    aborted: Callable[[], bool],
    after: int = -1,
    response_id: str | None = None,
) -> Call:
    """The one call both paths run (:class:`~modelwire._call.Call`); only its driver
    differs. ``after`` and ``response_id``: a background response picked up
    (:mod:`modelwire._client._background`)."""
    legs = [_leg(plan, t, _pipeline_factory(t, context, trace, policy, after, response_id))
            for t in plan.targets]  # fmt: skip
    first = legs[0]
    assert first.new_pipeline is not None
    return Call(
        first.new_pipeline(), first.request, timeout=first.timeout,
        max_retries=first.max_retries, aborted=aborted, new_pipeline=first.new_pipeline,
        model=first.model, prefail=first.prefail, circuit=first.circuit, pacer=first.pacer,
        tokens=first.tokens, fallback=legs[1:], switch=plan.switch,
        not_found_hint=first.not_found_hint, resume=first.resume,
    )  # fmt: skip


def _check_policy(policy: object) -> None:
    if policy is not None and not callable(policy):
        raise ConfigurationError(
            "completion_policy must be a callable (message, tool_choice, tools_declared) "
            "-> None | str; see modelwire._wire.assemble.CompletionPolicy"
        )


def _check_trace(trace: object) -> TraceObserver | None:
    if trace is None:
        return None
    from .._wire.trace import check_observer

    return check_observer(trace)


def _check_background(model: Model | Fallback) -> None:
    """``background=True`` is the OpenAI Responses API's; any other API refuses it."""
    for m in model.models if isinstance(model, Fallback) else (model,):
        if background_facet(m.api) is None:
            raise ConfigurationError(
                "background=True needs an API that runs responses in the background "
                f"(OpenAI Responses); {m.provider}/{m.id} uses api {m.api!r}"
            )


class _Begun(NamedTuple):
    prepared: Prepared
    first: Model
    trace: TraceObserver | None
    http_client: Any
    completion_policy: CompletionPolicy | None


def _begin(
    name: str, model: Model | Fallback | str, context: Context | str, options: StreamOptions
) -> _Begun:
    """What :func:`stream` and :func:`stream_sync` decide alike before any I/O: the
    options checked, the inputs resolved, the call planned, its observer, and a
    caller's ``http_client`` checked against the transport (``name`` is the entry
    point, for errors; ``stream_sync`` wants a sync client)."""
    check_option_names(options, name)
    checked_trace = _check_trace(options.get("trace"))
    completion_policy = options.get("completion_policy")
    _check_policy(completion_policy)
    http_client = options.get("http_client")
    model, context = _inputs(model, context, options)
    if options.get("background"):
        _check_background(model)
    prepared = plan_call(model, context, options)
    first = model.models[0] if isinstance(model, Fallback) else model
    trace = _observer(first, options, checked_trace)
    plan = prepared.plan
    if isinstance(plan, Plan):
        transport = plan.targets[0].options.transport
        if http_client is not None or transport != "auto":
            from .._http._base import check_client  # (a module: no importlib call per call)

            check_client(http_client, sync=name == "stream_sync", transport=transport)
    return _Begun(prepared, first, trace, http_client, completion_policy)


def _planned(s: _S, plan: OutputPlan | None) -> _S:
    """``s`` validated against the output plan at its end (``s`` itself without one)."""
    if plan is None:
        return s
    from ._output._stream import with_plan

    out: _S = with_plan(s, plan)
    return out


def _observer(
    model: Model, options: StreamOptions, trace: TraceObserver | None
) -> TraceObserver | None:
    """The call's one observer: ``trace`` (the checked ``trace=``), the ``log=``
    recorder and every registered instrumentation (:mod:`modelwire._client._observers`), in
    that order."""
    log = options.get("log")
    if log is None and not CALL_OBSERVERS:
        return trace
    from ._observers import call_observers, fan_out

    observers = [trace] if trace is not None else []
    if log is not None:
        from ._log import check_log_path, recorder

        output = options.get("output")
        schema = None
        if output is not None:
            from ._output._schema import output_type

            schema = output_type(output).schema  # the schema sent, as the log keeps it
        observers.append(recorder(check_log_path(log), model, options.get("session_id"),
                                  schema=schema))  # fmt: skip
    if CALL_OBSERVERS:
        observers.extend(call_observers(model))
    return fan_out(observers)


def stream(
    model: Model | Fallback | str, context: Context | str, **options: Unpack[StreamOptions]
) -> AssistantMessageStream:
    """Stream one response. No I/O happens until the stream is iterated.

    It yields :mod:`modelwire.events`: ``start``, each block's start, deltas and end,
    then one terminal ``done`` or ``error``. Caller mistakes (bad options, a missing
    key) raise ``ConfigurationError`` / ``MissingAPIKeyError`` here, at once.
    Everything after the request starts ends the stream with an ``error`` event
    instead of raising (``message.raise_for_error()`` raises it, typed). Failures
    before any content (a refused connection, 408, 409, 429, 500, 502-504 or 529, an
    in-band overload) are retried ``max_retries`` times, honouring ``Retry-After``, within
    ``Timeout(total=...)``; after content nothing is retried.

    The options (:class:`~modelwire._client._options.StreamOptions`, each documented
    there): ``api_key``, ``headers``, ``temperature``, ``max_tokens``,
    ``reasoning``, ``tool_choice``, ``parallel_tool_calls``, ``extra_body``,
    ``timeout``, ``max_retries``, ``http_client``, ``transport``, ``session_id``,
    ``cache``, ``server_tools``, ``background`` (OpenAI Responses background mode: a
    broken stream is picked up again; :func:`modelwire.resume_stream`), and

    ``trace``: a callable that receives one :mod:`trace record <modelwire.trace>`
    per item of every layer — context, request, response, network reads, SSE
    events, deltas, events, final message, errors where they arise.

    ``log``: the path of a SQLite file to record the call in (:mod:`modelwire._client._log`);
    nothing is recorded without it.

    ``completion_policy``: decides whether a finished response is acceptable
    (:data:`modelwire._wire.assemble.CompletionPolicy`); by default derived from
    ``tool_choice`` and the context's tools.

    Resilience: ``model`` may be a :class:`~modelwire.Fallback` (models tried in order,
    ``modelwire._call._fallback``); ``circuit_breaker`` (``modelwire._call._breaker``);
    ``requests_per_minute`` and ``tokens_per_minute`` (client-side pacing shared per
    provider, ``modelwire._call._limits``); ``max_tokens="auto"`` fits the output to the
    context window.

    ``server_tools``: tools the provider runs itself (:class:`~modelwire.ServerTool`:
    web search, web fetch, code execution), where the model's profile lists them; any
    other model refuses them with ``ConfigurationError`` before the request.

    ``output``: the type to answer with (a pydantic model, msgspec Struct,
    dataclass, TypedDict or JSON Schema dict); the final message's ``parsed`` is the
    validated value, and invalid output ends the stream with ``output_invalid``;
    ``output_mode`` (``"native"``, ``"tool"`` or ``"prompted"``) overrides how it is
    asked for (:mod:`modelwire._client._output`). ``model`` may be a ``"provider/model-id"``
    string (resolved by :func:`modelwire._catalog.resolve_model`: an id the catalog does
    not know, at ``base_url`` or ``OPENAI_BASE_URL``…, is a model of its provider's
    default API; ``"local/<id>"`` one of the compatible API, Chat Completions) and
    ``context`` a prompt string; ``base_url`` replaces the model's.

    Args:
        model: A :class:`~modelwire.Model`, a ``"provider/model-id"`` string or a ``Fallback``.
        context: A :class:`~modelwire.Context`, or a prompt string (one user message).
        **options: The options above; an unknown name suggests the closest.

    Returns:
        An :class:`~modelwire.AssistantMessageStream`: ``async for`` it, or await
        ``result()``; ``async with`` it to close the connection when leaving early.

    Raises:
        ConfigurationError: An invalid option, model or context, before any request.
        MissingAPIKeyError: No ``api_key`` and the provider's variable is unset.

    Example:
        ```python
        import asyncio

        import modelwire as mw
        from modelwire.testing import MockServer


        async def main(model: mw.Model) -> None:
            types = [event.type async for event in mw.stream(model, "Say hello")]
            print(" ".join(types))  # start text_start text_delta text_delta text_end done


        with MockServer(["Hello there"]) as server:
            asyncio.run(main(server.model()))
        ```
    """
    prepared, first, trace, http_client, completion_policy = _begin(
        "stream", model, context, options
    )
    plan, context = prepared.plan, prepared.context
    if not isinstance(plan, Plan):
        from ._custom import custom_async

        return _planned(custom_async(first, context, plan, trace), prepared.output)
    transport = plan.targets[0].options.transport

    def pull(s: AbortFlag) -> Puller:
        # By its full name: ``from . import`` a package runs importlib's Python-level
        # ``_handle_fromlist`` on every call.
        import modelwire._http as http

        call = _call(plan, context, trace, completion_policy, lambda: s.aborted)
        return http.AsyncDriver(call, http_client, transport)

    return _planned(AssistantMessageStream(Pulled(pull)), prepared.output)


async def complete(
    model: Model | Fallback | str, context: Context | str, **options: Unpack[StreamOptions]
) -> AssistantMessage:
    """Stream to the end and return the final message (never raises for stream
    failures: check ``message.stop_reason`` or call ``message.raise_for_error()``).

    Args:
        model: A :class:`~modelwire.Model`, a ``"provider/model-id"`` string or a ``Fallback``.
        context: A :class:`~modelwire.Context`, or a prompt string.
        **options: :func:`stream`'s options.

    Returns:
        The final :class:`~modelwire.AssistantMessage` (``text``, ``tool_calls``, ``usage``…).

    Raises:
        ConfigurationError: An invalid option, model or context, before any request.
        MissingAPIKeyError: No ``api_key`` and the provider's variable is unset.

    Example:
        ```python
        import asyncio

        import modelwire as mw
        from modelwire.testing import MockServer

        with MockServer(["Hello!"]) as server:
            print(asyncio.run(mw.complete(server.model(), "Hi")).text)  # Hello!
        ```
    """
    check_option_names(options, "complete")
    s = stream(model, context, **options)
    return await s.result()


def stream_sync(
    model: Model | Fallback | str, context: Context | str, **options: Unpack[StreamOptions]
) -> SyncAssistantMessageStream:
    """Synchronous :func:`stream` over ``httpx.Client`` (works inside a running loop);
    the same options (:class:`~modelwire._client._options.StreamOptions`), events and
    errors. ``abort()`` may be called from another thread.

    Args:
        model: A :class:`~modelwire.Model`, a ``"provider/model-id"`` string or a ``Fallback``.
        context: A :class:`~modelwire.Context`, or a prompt string.
        **options: :func:`stream`'s options (``http_client``: an ``httpx.Client``).

    Returns:
        A :class:`~modelwire.SyncAssistantMessageStream`: iterate it, or call ``result()``.

    Raises:
        ConfigurationError: An invalid option, model or context, before any request.
        MissingAPIKeyError: No ``api_key`` and the provider's variable is unset.

    Example:
        ```python
        import modelwire as mw
        from modelwire.testing import MockServer

        with MockServer(["Hello there"]) as server, mw.stream_sync(server.model(), "Hi") as s:
            print([event.type for event in s][-1])  # done
        ```
    """
    prepared, first, trace, http_client, completion_policy = _begin(
        "stream_sync", model, context, options
    )
    plan, context = prepared.plan, prepared.context
    if not isinstance(plan, Plan):
        from ._custom import custom_sync

        return _planned(custom_sync(first, context, plan, trace), prepared.output)

    def produce(s: SyncStreamChannel) -> Iterator[list[Event]]:
        import modelwire._http as http  # (as in stream)

        call = _call(plan, context, trace, completion_policy, lambda: s.aborted)
        driver = http.SyncDriver(call, http_client)
        s.abort_events = call.abort_events
        s.fail_events = call.fail_events
        s.on_abort = driver.abort  # unblocks a read in progress, from any thread
        return driver.events()

    return _planned(SyncAssistantMessageStream(produce), prepared.output)


def complete_sync(
    model: Model | Fallback | str, context: Context | str, **options: Unpack[StreamOptions]
) -> AssistantMessage:
    """Synchronous :func:`complete` (never raises for stream failures either).

    Args:
        model: A :class:`~modelwire.Model`, a ``"provider/model-id"`` string or a ``Fallback``.
        context: A :class:`~modelwire.Context`, or a prompt string.
        **options: :func:`stream`'s options.

    Returns:
        The final :class:`~modelwire.AssistantMessage`.

    Raises:
        ConfigurationError: An invalid option, model or context, before any request.
        MissingAPIKeyError: No ``api_key`` and the provider's variable is unset.

    Example:
        ```python
        import modelwire as mw
        from modelwire.testing import MockServer, error_reply

        with MockServer(["Hello!", error_reply(401, "bad key")]) as server:
            print(mw.complete_sync(server.model(), "Hi").text)  # Hello!
            print(mw.complete_sync(server.model(), "Hi").error.kind)  # authentication
        ```
    """
    check_option_names(options, "complete_sync")
    return stream_sync(model, context, **options).result()


async def count_tokens(
    model: Model | Fallback | str, context: Context | str, **options: Unpack[StreamOptions]
) -> TokenCount:
    """The prompt tokens of ``context`` for ``model``: the provider's own count where
    its API has an endpoint (Anthropic, Gemini, Bedrock, OpenAI Responses), else the
    local estimate, marked ``estimated=True`` (:mod:`modelwire._client._count` says how
    both work). Unlike :func:`complete`, a failed count raises.

    Args:
        model: A ``Model``, a ``"provider/model-id"`` string or a ``Fallback`` (its first).
        context: A ``Context`` or a prompt string.
        **options: :func:`stream`'s options (``api_key``, ``headers``, ``timeout``…).

    Returns:
        A :class:`~modelwire.TokenCount`.

    Raises:
        ConfigurationError: A caller mistake, before any request.
        modelwire.errors.StreamError: The count failed (``RateLimitError``, ``ConnectError``…).
    """
    from ._count import count_tokens as count

    check_option_names(options, "count_tokens")
    return await count(prepare, *_count_inputs(model, context, options), options)


def count_tokens_sync(
    model: Model | Fallback | str, context: Context | str, **options: Unpack[StreamOptions]
) -> TokenCount:
    """Synchronous :func:`count_tokens` over ``httpx.Client`` (the same decisions).

    Args:
        model: A ``Model``, a ``"provider/model-id"`` string or a ``Fallback`` (its first).
        context: A ``Context`` or a prompt string.
        **options: :func:`stream`'s options.

    Returns:
        A :class:`~modelwire.TokenCount`.

    Raises:
        ConfigurationError: A caller mistake, before any request.
        modelwire.errors.StreamError: The count failed.
    """
    from ._count import count_tokens_sync as count

    check_option_names(options, "count_tokens_sync")
    return count(prepare, *_count_inputs(model, context, options), options)


def _count_inputs(
    model: Model | Fallback | str, context: Context | str, opts: StreamOptions
) -> tuple[Model, Context]:
    """A count's model and context, resolved as a call's are (``base_url=`` applied);
    a ``Fallback`` is counted for its first model."""
    m, ctx = _inputs(model, context, opts)
    return (m.first if isinstance(m, Fallback) else m), ctx
