"""Entry points: ``stream``, ``complete``, their sync twins, and ``register_api``.

The client wires the layers and nothing else (DESIGN §1): a wire API builds the
request (validated before any I/O), one sans-IO :class:`~modelwire._call.Call`
takes every decision of the call and feeds the :class:`~modelwire._pipeline.Pipeline`,
and a driver from ``modelwire._http`` does its waiting: ``stream`` and
``stream_sync`` differ only in which driver they use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Unpack

from ._apis import (
    WireAPI,
    custom_stream,
    get_api,
    register_stream_function,
    register_wire_api,
)
from ._apis._common import check_input
from ._options import RequestOptions, StreamOptions, check_option_names, resolve_options
from ._pipeline import Pipeline
from ._providers import apply_provider_rules
from ._streams import (
    AssistantMessageStream,
    StreamChannel,
    SyncAssistantMessageStream,
    SyncStreamChannel,
)
from .errors import ConfigurationError
from .events import Event
from .types import AssistantMessage, Context, Model

if TYPE_CHECKING:
    from ._assemble import CompletionPolicy
    from ._call import Call
    from ._options import HTTPRequest
    from .trace import TraceObserver

__all__ = ["complete", "complete_sync", "register_api", "stream", "stream_sync"]


def register_api(name: str, stream_fn: Any) -> None:
    """Register a custom API under ``name`` (then usable as ``Model(api=name)``).

    ``stream_fn`` is either a wire API object (``build_request``/``new_decoder``,
    see ``modelwire._apis``) or a generator function ``(model, context, options)``
    producing events itself — ``async def`` (``AsyncIterator[Event]``) or ``def``
    (``Iterator[Event]``); ``modelwire._custom`` says which path serves which, and
    ``modelwire.testing`` has helpers that build those events from text.
    """
    if not isinstance(name, str) or not name:
        raise ConfigurationError("register_api needs a non-empty name")
    # One registry (modelwire._apis) holds both kinds; the object is not changed.
    if isinstance(stream_fn, WireAPI):
        register_wire_api(stream_fn, name)
        return
    if not callable(stream_fn):
        raise ConfigurationError("register_api needs a wire API object or a stream function")
    register_stream_function(name, stream_fn)


def _prepare(
    model: Model, context: Context, opts: StreamOptions
) -> tuple[RequestOptions, HTTPRequest | None]:
    if not isinstance(model, Model):
        raise ConfigurationError(f"model must be a modelwire.Model, got {type(model).__name__}")
    if not isinstance(context, Context):
        raise ConfigurationError(
            f"context must be a modelwire.Context, got {type(context).__name__}"
        )
    if custom_stream(model.api) is not None:
        # A custom stream function does its own auth: no env-var lookup.
        return resolve_options("", **opts), None
    # A block the model does not accept is refused here, never replaced (Model.input).
    check_input(model, context)
    options = resolve_options(model.provider, **opts)
    if options.reasoning is not None:
        import msgspec

        from ._catalog import clamp_reasoning

        # Clamp to the levels the model has; a model without reasoning raises here.
        level = clamp_reasoning(model, options.reasoning)
        options = msgspec.structs.replace(options, reasoning=level)
    from ._handoffs import handoff

    # Replaying to another provider/model: signatures, ids, orphaned calls (handoff rules).
    request = get_api(model.api).build_request(model, handoff(context, model), options)
    request = apply_provider_rules(model, options, request)  # URL, auth, body, secrets
    return options, request


def _call(
    model: Model,
    context: Context,
    options: RequestOptions,
    request: HTTPRequest,
    trace: TraceObserver | None,
    policy: CompletionPolicy | None,
    aborted: Callable[[], bool],
) -> Call:
    """The one call both paths run (:class:`~modelwire._call.Call`); only its driver differs."""
    from ._call import Call

    p = Pipeline(
        model.api,
        model=model,
        tool_choice=options.tool_choice,
        tools_declared=bool(context.tools),
        secrets=request.secrets,  # the key and every credential header (apis._common)
        trace=trace,
        clock=True,
        policy=policy,
    )
    if p.trace is not None:
        p.trace.context(model, context)
        p.trace.request(request)
    return Call(
        p, request, timeout=options.timeout, max_retries=options.max_retries, aborted=aborted
    )


def _check_policy(policy: object) -> None:
    if policy is not None and not callable(policy):
        raise ConfigurationError(
            "completion_policy must be a callable (message, tool_choice, tools_declared) "
            "-> None | str; see modelwire._assemble.CompletionPolicy"
        )


def _check_trace(trace: object) -> TraceObserver | None:
    if trace is None:
        return None
    from .trace import check_observer

    return check_observer(trace)


def stream(
    model: Model, context: Context, **options: Unpack[StreamOptions]
) -> AssistantMessageStream:
    """Stream one response. No I/O happens until the stream is iterated.

    Caller mistakes (bad options, a missing key) raise ``ConfigurationError`` /
    ``MissingAPIKeyError`` here, at once. Everything after the request starts
    ends the stream with an ``error`` event instead of raising.

    The options (:class:`~modelwire._options.StreamOptions`, each documented
    there): ``api_key``, ``headers``, ``temperature``, ``max_tokens``,
    ``reasoning``, ``tool_choice``, ``parallel_tool_calls``, ``extra_body``,
    ``timeout``, ``max_retries``, ``http_client``, ``session_id``, ``cache``, and

    ``trace``: a callable that receives one :mod:`trace record <modelwire.trace>`
    per item of every layer — context, request, response, network reads, SSE
    events, deltas, events, final message, errors where they arise.

    ``completion_policy``: decides whether a finished response is acceptable
    (:data:`modelwire._assemble.CompletionPolicy`); by default derived from
    ``tool_choice`` and the context's tools.
    """
    check_option_names(options, "stream")
    trace = _check_trace(options.get("trace"))
    completion_policy = options.get("completion_policy")
    _check_policy(completion_policy)
    http_client = options.get("http_client")
    resolved, request = _prepare(model, context, options)
    if request is None:
        from ._custom import custom_async

        return custom_async(model, context, resolved, trace)
    if http_client is not None:
        from ._http import check_client

        check_client(http_client, sync=False)

    async def produce(s: StreamChannel) -> None:
        from ._http import drive_async

        call = _call(model, context, resolved, request, trace, completion_policy,
                     lambda: s.aborted)  # fmt: skip
        s.abort_events = call.abort_events
        s.fail_events = call.fail_events
        await drive_async(call, s, http_client)

    return AssistantMessageStream(produce)


async def complete(
    model: Model, context: Context, **options: Unpack[StreamOptions]
) -> AssistantMessage:
    """Stream to the end and return the final message (never raises for stream
    failures: check ``message.stop_reason`` or call ``message.raise_for_error()``)."""
    s = stream(model, context, **options)
    return await s.result()


def stream_sync(
    model: Model, context: Context, **options: Unpack[StreamOptions]
) -> SyncAssistantMessageStream:
    """Synchronous :func:`stream` over ``httpx.Client`` (works inside a running loop);
    the same options (:class:`~modelwire._options.StreamOptions`)."""
    check_option_names(options, "stream_sync")
    trace = _check_trace(options.get("trace"))
    completion_policy = options.get("completion_policy")
    _check_policy(completion_policy)
    http_client = options.get("http_client")
    resolved, request = _prepare(model, context, options)
    if request is None:
        from ._custom import custom_sync

        return custom_sync(model, context, resolved, trace)
    if http_client is not None:
        from ._http import check_client

        check_client(http_client, sync=True)

    def produce(s: SyncStreamChannel) -> Iterator[list[Event]]:
        from ._http import SyncDriver

        call = _call(model, context, resolved, request, trace, completion_policy,
                     lambda: s.aborted)  # fmt: skip
        driver = SyncDriver(call, http_client)
        s.abort_events = call.abort_events
        s.fail_events = call.fail_events
        s.on_abort = driver.abort  # unblocks a read in progress, from any thread
        return driver.events()

    return SyncAssistantMessageStream(produce)


def complete_sync(
    model: Model, context: Context, **options: Unpack[StreamOptions]
) -> AssistantMessage:
    """Synchronous :func:`complete`."""
    return stream_sync(model, context, **options).result()
