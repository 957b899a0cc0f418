"""Entry points: ``stream``, ``complete``, their sync twins, and ``register_api``.

The client wires the layers and nothing else (DESIGN §1): a wire API builds the
request (validated before any I/O), ``modelwire._http`` moves bytes, and the
sans-IO :class:`~modelwire._pipeline.Pipeline` turns them into events.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Unpack

from ._apis import (
    WireAPI,
    custom_stream,
    get_api,
    register_stream_function,
    register_wire_api,
)
from ._options import RequestOptions, StreamOptions, check_option_names, resolve_options
from ._pipeline import Pipeline
from ._providers import apply_provider_rules
from ._streams import (
    AssistantMessageStream,
    StreamChannel,
    SyncAssistantMessageStream,
    SyncStreamChannel,
    aborted_from,
    failed_from,
)
from .errors import ConfigurationError, ProviderStreamError, StreamError
from .events import Event
from .types import AssistantMessage, Context, Model

if TYPE_CHECKING:
    from ._assemble import Assembler, CompletionPolicy
    from ._http import OnRetry
    from ._options import HTTPRequest
    from .trace import TraceObserver, Tracer

__all__ = ["complete", "complete_sync", "register_api", "stream", "stream_sync"]


def register_api(name: str, stream_fn: Any) -> None:
    """Register a custom API under ``name`` (then usable as ``Model(api=name)``).

    ``stream_fn`` is either a wire API object (``build_request``/``new_decoder``,
    see ``modelwire._apis``) or an async function ``(model, context, options) ->
    AsyncIterator[Event]`` producing events itself (``modelwire.testing`` has
    helpers that build those events from text).
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


def _pipeline(
    model: Model,
    context: Context,
    options: RequestOptions,
    request: HTTPRequest,
    trace: TraceObserver | None,
    policy: CompletionPolicy | None = None,
) -> Pipeline:
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
    return p


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


def _on_retry(t: Tracer | None) -> OnRetry | None:
    """One :class:`~modelwire.trace.RetryTrace` per retry, on both paths."""
    if t is None:
        return None
    from .trace import RetryTrace

    def on_retry(attempt: int, status: int | None, kind: str, wait: float) -> None:
        t.emit(RetryTrace(id=f"retry-{attempt}", parent="request", attempt=attempt,
                          status=status, kind=kind, wait=wait))  # fmt: skip

    return on_retry


def _trace_response(t: Tracer | None, body: Any) -> None:
    # Once per call, after the status line: never on the per-read path.
    if t is not None:
        t.response(body.response.status_code, body.response.headers.multi_items())


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
        return _custom_stream(model, context, resolved, trace)
    if http_client is not None:
        from ._http import check_client

        check_client(http_client, sync=False)

    async def produce(s: StreamChannel) -> None:
        from ._http import authorize_async, open_async

        p = _pipeline(model, context, resolved, request, trace, completion_policy)
        s.abort_events = p.abort
        s.fail_events = lambda exc: p.fail(_as_stream_error(exc, p.secrets))
        await s.put(p.start())
        try:
            sent = await authorize_async(request)
        except StreamError as exc:
            await s.put(p.fail(exc))
            return
        p.add_secrets(sent.secrets)
        secrets = p.secrets
        try:
            body = await open_async(
                sent, timeout=resolved.timeout, max_retries=resolved.max_retries,
                client=http_client, on_retry=_on_retry(p.trace),
            )  # fmt: skip
        except StreamError as exc:
            exc.redact(secrets)
            await s.put(p.fail(exc))
            return
        _trace_response(p.trace, body)
        try:
            async for chunk in body.chunks():
                events = p.feed(chunk)
                if events:
                    await s.put(events)
                if p.done:
                    await body.drain()
                    return
            await s.put(p.end())
        except StreamError as exc:
            exc.redact(secrets)
            await s.put(p.fail(exc))
        finally:
            await body.aclose()

    return AssistantMessageStream(produce)


def _as_stream_error(exc: BaseException, secrets: tuple[str, ...]) -> StreamError:
    from ._http import redact
    from .errors import StreamInterruptedError

    if isinstance(exc, StreamError):
        exc.redact(secrets)
        return exc
    return StreamInterruptedError(redact(f"the stream failed: {exc!r}", secrets))


def _custom_stream(
    model: Model, context: Context, options: RequestOptions, trace: TraceObserver | None
) -> AssistantMessageStream:
    fn = custom_stream(model.api)
    assert fn is not None  # _prepare found it

    async def produce(s: StreamChannel) -> None:
        from ._assemble import Assembler

        asm = Assembler(api=model.api, provider=model.provider, model=model.id)
        # A custom stream function has no wire layers: its trace is the context
        # and the events it yields.
        t = None
        if trace is not None:
            from .trace import Tracer

            t = Tracer(trace)
            t.context(model, context)
        # The function's events carry the message as it stood (``partial``); this
        # assembler saw none of them, so an abort or a failure starts from the last
        # partial, or the content already delivered would be lost.
        last: list[Event] = []
        s.abort_events = lambda: _traced(t, _abort(asm, last))
        s.fail_events = lambda exc: _traced(t, _fail(asm, exc, last))
        saw_start = False
        async for event in fn(model, context, options):
            if not saw_start and event.type != "start":
                start: list[Event] = []
                asm.start(start)
                last[:] = start
                await s.put(_traced(t, start))
            saw_start = True
            last[:] = (event,)
            await s.put(_traced(t, [event]))
            if event.type in ("done", "error"):
                return
        raise ProviderStreamError("the custom stream function ended without a done or error event")

    return AssistantMessageStream(produce)


def _traced(t: Tracer | None, events: list[Event]) -> list[Event]:
    if t is not None:
        t.events(events, t.origin)
    return events


def _last_partial(last: list[Event]) -> AssistantMessage | None:
    if not last:
        return None
    try:
        return last[-1].partial
    except Exception:  # an event built by hand, without a snapshot
        return None


def _ended(last: list[Event]) -> bool:
    # The function already yielded its terminal event: nothing may follow it.
    return bool(last) and last[-1].type in ("done", "error")


def _abort(asm: Assembler, last: list[Event]) -> list[Event]:
    if _ended(last):
        return []
    partial = _last_partial(last)
    if partial is not None:
        return [aborted_from(partial)]
    out: list[Event] = []
    asm.abort(out)
    return out


def _fail(asm: Assembler, exc: BaseException, last: list[Event]) -> list[Event]:
    if _ended(last):
        return []
    err = (
        exc
        if isinstance(exc, StreamError)
        else ProviderStreamError(f"the custom stream function failed: {exc!r}")
    )
    partial = _last_partial(last)
    if partial is not None:
        return [failed_from(partial, err)]
    out: list[Event] = []
    asm.fail(err, out)
    return out


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
        raise ConfigurationError(
            f"api {model.api!r} is a custom async stream function; use mw.stream()"
        )
    if http_client is not None:
        from ._http import check_client

        check_client(http_client, sync=True)

    def produce(s: SyncStreamChannel) -> Iterator[list[Event]]:
        from ._http import authorize_sync, open_sync

        p = _pipeline(model, context, resolved, request, trace, completion_policy)
        s.abort_events = p.abort
        s.fail_events = lambda exc: p.fail(_as_stream_error(exc, p.secrets))
        yield p.start()
        try:
            sent = authorize_sync(request)
        except StreamError as exc:
            yield p.fail(exc)
            return
        p.add_secrets(sent.secrets)
        secrets = p.secrets
        try:
            body = open_sync(
                sent, timeout=resolved.timeout, max_retries=resolved.max_retries,
                client=http_client, on_retry=_on_retry(p.trace),
            )  # fmt: skip
        except StreamError as exc:
            exc.redact(secrets)
            yield p.fail(exc)
            return
        _trace_response(p.trace, body)
        s.on_abort = body.abort  # unblocks a read in progress, from any thread
        try:
            for chunk in body.chunks():
                events = p.feed(chunk)
                if events:
                    yield events
                if p.done:
                    return
            yield p.end()
        except StreamError as exc:
            if s.aborted:
                yield p.abort()
                return
            exc.redact(secrets)
            yield p.fail(exc)
        finally:
            # The consumer closes this generator as soon as it takes the terminal
            # event, so a successful response is drained here (bounded) to put the
            # connection back in the pool.
            msg = p.message
            if msg is not None and msg.error is None and not s.aborted:
                body.drain()
            body.close()

    return SyncAssistantMessageStream(produce)


def complete_sync(
    model: Model, context: Context, **options: Unpack[StreamOptions]
) -> AssistantMessage:
    """Synchronous :func:`complete`."""
    return stream_sync(model, context, **options).result()
