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

import msgspec

from .._apis import (
    custom_stream,
    get_api,
    register_wire_api,
)
from .._apis._common import check_input
from .._apis._sniff import wrong_api_error
from .._call import Call, Leg
from .._call._breaker import CircuitBreaker
from .._call._fallback import Fallback, Plan, Target, make_plan
from .._providers import apply_provider_rules
from .._wire.pipeline import Pipeline
from .._wire.request import RequestOptions
from ..errors import ConfigurationError, StreamError
from ..events import Event
from ..types import AssistantMessage, Context, Model, UserMessage
from ._count import TokenCount
from ._handoffs import handoff, handoff_notes
from ._not_found import not_found_hint
from ._observers import CALL_OBSERVERS
from ._options import StreamOptions, check_option_names, resolve_checked
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
    from .._wire.request import HTTPRequest
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


def _output_plan(model: Model, opts: StreamOptions) -> OutputPlan | None:
    if opts.get("output") is None and opts.get("output_mode") is None:
        return None
    from ._output._plan import plan_output

    return plan_output(model, opts.get("output"), opts.get("output_mode"))


def _default_cap(model: Model, opts: StreamOptions, options: RequestOptions) -> RequestOptions:
    """Without a ``max_tokens`` option the model's own is sent (the catalog's output
    limit; :data:`modelwire._catalog.UNLISTED_MAX_TOKENS` for an id it does not list),
    so a model that loops stops; ``max_tokens=None`` sends no limit."""
    if "max_tokens" in opts:
        return options
    return msgspec.structs.replace(options, max_tokens=model.max_tokens)


def _prepare(
    model: Model, context: Context, opts: StreamOptions
) -> tuple[RequestOptions, HTTPRequest | None, StreamError | None, Context, OutputPlan | None]:
    """Options, request, the error the call ends with before any I/O (for
    ``max_tokens="auto"`` that cannot fit: ``context_overflow``), the context as sent
    (with the output plan applied) and that plan."""
    if not isinstance(model, Model):
        raise ConfigurationError(f"model must be a modelwire.Model, got {type(model).__name__}")
    if not isinstance(context, Context):
        raise ConfigurationError(
            f"context must be a modelwire.Context, got {type(context).__name__}"
        )
    plan = _output_plan(model, opts)
    # "auto" is fitted below, once the conversation is rewritten for this model.
    auto = opts.get("max_tokens") == "auto"
    custom = custom_stream(model.api) is not None
    if plan is not None or custom:
        # A block the model does not accept is refused here, never replaced
        # (Model.input); without an output plan, handoff checks the same context.
        check_input(model, context)
    if custom:
        # A custom stream function does its own auth: no env-var lookup.
        options = _default_cap(model, opts, resolve_checked("", opts))
        if plan is not None:
            context, options = plan.apply(context, options)
        return options, None, None, context, plan
    options = _default_cap(model, opts, resolve_checked(model.provider, opts))
    if options.reasoning is not None:
        from .._catalog import clamp_reasoning

        # Clamp to the levels the model has; a model without reasoning raises here.
        level = clamp_reasoning(model, options.reasoning)
        options = msgspec.structs.replace(options, reasoning=level)
    if plan is not None:
        # The native field's request, the answer tool forced, or the schema prompted.
        context, options = plan.apply(context, options)
    # Replaying to another provider/model: signatures, ids, orphaned calls (handoff
    # rules); it refuses input the model does not take (check_input) first.
    ctx = handoff(context, model)
    prefail: StreamError | None = None
    if auto:
        from ._count import fit_max_tokens

        fitted, prefail = fit_max_tokens(model, ctx)
        options = msgspec.structs.replace(options, max_tokens=fitted)
    request = get_api(model.api).build_request(model, ctx, options)
    request = apply_provider_rules(model, options, request)  # URL, auth, body, secrets
    return options, request, prefail, context, plan


class _Prepared(NamedTuple):
    """What a call is made of: the resilience plan (or, for a custom stream function,
    its options), the context as sent, the output plan."""

    plan: Plan | RequestOptions
    context: Context
    output: OutputPlan | None


def _plan(model: Model | Fallback, context: Context, opts: StreamOptions) -> _Prepared:
    """The call's plan; for a custom stream function its options only."""
    if isinstance(model, Fallback):
        targets = []
        outputs: list[OutputPlan | None] = []
        sent = context
        for m in model.models:
            options, request, prefail, ctx, output = _prepare(m, context, opts)
            assert request is not None  # Fallback refuses custom stream functions
            targets.append(Target(m, options, request, prefail))
            outputs.append(output)
            if not targets[1:]:
                sent = ctx
        modes = {o.mode for o in outputs if o is not None}
        if len(modes) > 1:
            raise ConfigurationError(
                "output= with a Fallback asks every model the same way: its models "
                f"default to different output modes ({', '.join(sorted(modes))}); "
                "pass output_mode='tool' or 'prompted'"
            )
        return _Prepared(make_plan(targets, opts, model), sent, outputs[0])
    options, request, prefail, ctx, output = _prepare(model, context, opts)
    if request is None:
        return _Prepared(options, ctx, output)
    return _Prepared(make_plan([Target(model, options, request, prefail)], opts, None), ctx, output)


def _pipeline_factory(
    target: Target,
    context: Context,
    trace: TraceObserver | None,
    policy: CompletionPolicy | None,
) -> Callable[[], Pipeline]:
    model, options, request = target.model, target.options, target.request

    def new() -> Pipeline:
        p = Pipeline(
            get_api(model.api),
            api=model.api,
            sniff=wrong_api_error,
            model=model,
            tool_choice=options.tool_choice,
            tools_declared=bool(context.tools),
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
    return Leg(request, timeout=options.timeout, max_retries=options.max_retries,
               new_pipeline=new, model=model, prefail=target.prefail, circuit=circuit,
               pacer=pacer, tokens=tokens,
               not_found_hint=partial(not_found_hint, model, request.url, request.secrets))  # fmt: skip


def _call(
    plan: Plan,
    context: Context,
    trace: TraceObserver | None,
    policy: CompletionPolicy | None,
    aborted: Callable[[], bool],
) -> Call:
    """The one call both paths run (:class:`~modelwire._call.Call`); only its driver differs."""
    legs = [_leg(plan, t, _pipeline_factory(t, context, trace, policy)) for t in plan.targets]
    first = legs[0]
    assert first.new_pipeline is not None
    return Call(
        first.new_pipeline(), first.request, timeout=first.timeout,
        max_retries=first.max_retries, aborted=aborted, new_pipeline=first.new_pipeline,
        model=first.model, prefail=first.prefail, circuit=first.circuit, pacer=first.pacer,
        tokens=first.tokens, fallback=legs[1:], switch=plan.switch,
        not_found_hint=first.not_found_hint,
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


class _Begun(NamedTuple):
    prepared: _Prepared
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
    prepared = _plan(model, context, options)
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

        observers.append(recorder(check_log_path(log), model, options.get("session_id")))
    if CALL_OBSERVERS:
        observers.extend(call_observers(model))
    return fan_out(observers)


def stream(
    model: Model | Fallback | str, context: Context | str, **options: Unpack[StreamOptions]
) -> AssistantMessageStream:
    """Stream one response. No I/O happens until the stream is iterated.

    Caller mistakes (bad options, a missing key) raise ``ConfigurationError`` /
    ``MissingAPIKeyError`` here, at once. Everything after the request starts
    ends the stream with an ``error`` event instead of raising.

    The options (:class:`~modelwire._client._options.StreamOptions`, each documented
    there): ``api_key``, ``headers``, ``temperature``, ``max_tokens``,
    ``reasoning``, ``tool_choice``, ``parallel_tool_calls``, ``extra_body``,
    ``timeout``, ``max_retries``, ``http_client``, ``transport``, ``session_id``,
    ``cache``, and

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

    ``output``: the type to answer with (a pydantic model, msgspec Struct,
    dataclass, TypedDict or JSON Schema dict); the final message's ``parsed`` is the
    validated value, and invalid output ends the stream with ``output_invalid``;
    ``output_mode`` (``"native"``, ``"tool"`` or ``"prompted"``) overrides how it is
    asked for (:mod:`modelwire._client._output`). ``model`` may be a ``"provider/model-id"``
    string (resolved by :func:`modelwire._catalog.resolve_model`: an id the catalog does
    not know, at ``base_url`` or ``OPENAI_BASE_URL``…, is a model of its provider's
    default API; ``"local/<id>"`` one of the compatible API, Chat Completions) and
    ``context`` a prompt string; ``base_url`` replaces the model's.
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
    failures: check ``message.stop_reason`` or call ``message.raise_for_error()``)."""
    check_option_names(options, "complete")
    s = stream(model, context, **options)
    return await s.result()


def stream_sync(
    model: Model | Fallback | str, context: Context | str, **options: Unpack[StreamOptions]
) -> SyncAssistantMessageStream:
    """Synchronous :func:`stream` over ``httpx.Client`` (works inside a running loop);
    the same options (:class:`~modelwire._client._options.StreamOptions`)."""
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
    """Synchronous :func:`complete`."""
    check_option_names(options, "complete_sync")
    return stream_sync(model, context, **options).result()


async def count_tokens(
    model: Model | Fallback | str, context: Context | str, **options: Unpack[StreamOptions]
) -> TokenCount:
    """The prompt tokens of ``context`` for ``model``: the provider's own count where
    its API has an endpoint (Anthropic, Gemini, Bedrock, OpenAI Responses), else the
    local estimate, marked ``estimated=True`` (:mod:`modelwire._client._count` says how both work).

    ``model`` is a ``Model``, a ``"provider/model-id"`` string or a ``Fallback`` (its
    first model); ``context`` a ``Context`` or a prompt string; the options are
    ``stream``'s (``api_key``, ``headers``, ``timeout``, ``http_client``…). Caller
    mistakes raise ``ConfigurationError`` before any request; a failed count raises
    the typed error (``RateLimitError``, ``ConnectError``…)."""
    from ._count import count_tokens as count

    check_option_names(options, "count_tokens")
    return await count(_prepare, *_count_inputs(model, context, options), options)


def count_tokens_sync(
    model: Model | Fallback | str, context: Context | str, **options: Unpack[StreamOptions]
) -> TokenCount:
    """Synchronous :func:`count_tokens` over ``httpx.Client`` (the same decisions)."""
    from ._count import count_tokens_sync as count

    check_option_names(options, "count_tokens_sync")
    return count(_prepare, *_count_inputs(model, context, options), options)


def _count_inputs(
    model: Model | Fallback | str, context: Context | str, opts: StreamOptions
) -> tuple[Model, Context]:
    """A count's model and context, resolved as a call's are (``base_url=`` applied);
    a ``Fallback`` is counted for its first model."""
    m, ctx = _inputs(model, context, opts)
    return (m.first if isinstance(m, Fallback) else m), ctx
