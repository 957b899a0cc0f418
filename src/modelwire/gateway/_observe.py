"""What one gateway request did, and its OpenTelemetry span.

An :class:`Exchange` is filled in as the request goes (key name, model asked for,
backend, context sent, final message, status, first-token time); when it ends it is
written to the request log (:mod:`._requestlog`) and set on the request's span.

With ``[gateway] otel = true`` each request is a ``SERVER`` span named ``METHOD
/path``, current while the backend is called, so the model call's ``chat {model}``
span (:mod:`modelwire.otel`) is its child. Its attributes: ``modelwire.gateway.key``
(the key's *name*), ``modelwire.gateway.api`` (the client's API),
``gen_ai.request.model`` (the name asked for), ``gen_ai.response.model``, usage as the
GenAI conventions count it (https://opentelemetry.io/docs/specs/semconv/gen-ai/),
``modelwire.gateway.cost_usd``, ``modelwire.gateway.latency_s``,
``modelwire.gateway.first_token_s``, ``http.response.status_code``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import ConfigurationError
from ..events import ErrorEvent
from ..types import AssistantMessage, Context, Model

if TYPE_CHECKING:
    from ._backend import Scrub

__all__ = ["Exchange", "Tracing", "span_attributes"]

_logger = logging.getLogger("modelwire.gateway")

#: The events that carry the first content of an answer (its first token).
FIRST_CONTENT = frozenset({"text_delta", "thinking_delta", "tool_call_start", "block", "citation"})


class Exchange:
    """What one request did: logged and traced when it ends."""

    __slots__ = ("context", "first_token", "frontend", "key", "message", "model", "path",
                 "scrub", "started", "status", "t0", "target")  # fmt: skip

    def __init__(self, path: str) -> None:
        self.path = path
        self.started = time.time()
        self.t0 = time.perf_counter()
        self.frontend: str | None = None
        self.key: str | None = None
        self.model: str | None = None
        self.target: Model | None = None
        self.context: Context | None = None
        self.message: AssistantMessage | None = None
        self.status = 0
        self.first_token: float | None = None
        self.scrub: Scrub | None = None  # how a backend's failure may be shown

    def logged(self) -> AssistantMessage | None:
        """The final message as the log and traces keep it: its error with every
        secret the gateway knows redacted (the backend's URL kept, for the operator)."""
        m = self.message
        if m is None or m.error is None or self.scrub is None:
            return m
        return msgspec.structs.replace(m, error=self.scrub.logged(m.error))

    def answered(self, message: AssistantMessage) -> AssistantMessage:
        """``message`` as the client may see it: its error with no secret, backend URL
        or host (:class:`~._backend.Scrub`); the operator's log names the URL."""
        if message.error is None or self.scrub is None:
            return message
        shown = self.scrub.message(message)
        if message.error.kind != "aborted":  # the client left: nothing failed
            _logger.warning(
                "the backend of model %r failed (%s): %s", self.model, message.error.kind,
                self.scrub.logged(message.error).message,
            )  # fmt: skip
        return shown

    def answered_event(self, event: ErrorEvent) -> ErrorEvent:
        """An error event as the client may see it (:meth:`answered`)."""
        return msgspec.structs.replace(event, message=self.answered(event.message))

    def saw(self, event_type: str) -> None:
        """Note the first content event's time."""
        if self.first_token is None and event_type in FIRST_CONTENT:
            self.first_token = time.perf_counter()


class Tracing:
    """The gateway's spans: ``provider`` is a tracer provider (default: the global one);
    ``secrets`` returns every backend secret the gateway knows, redacted from the
    strings the model calls' spans record (a backend may echo another model's key,
    which the call itself does not know)."""

    def __init__(self, provider: Any = None, secrets: Callable[[], Iterable[str]] = tuple) -> None:
        self.tracer = _tracer(provider, secrets)

    def start(self, method: str, path: str) -> Any:
        from opentelemetry import context as otel_context
        from opentelemetry import trace

        span = self.tracer.start_span(
            f"{method} {path}", kind=trace.SpanKind.SERVER,
            attributes={"http.request.method": method, "url.path": path},
        )  # fmt: skip
        # Current for the request, so the model call's span is its child.
        token = otel_context.attach(trace.set_span_in_context(span))
        return span, token

    def end(self, handle: Any, ex: Exchange) -> None:
        from opentelemetry import context as otel_context
        from opentelemetry.trace import Status, StatusCode

        span, token = handle
        otel_context.detach(token)
        span.set_attributes(span_attributes(ex))
        m = ex.message
        if ex.status >= 500 or (m is not None and m.error is not None):
            kind = m.error.kind if m is not None and m.error is not None else "server"
            span.set_attribute("error.type", kind)
            span.set_status(Status(StatusCode.ERROR))
        span.end()


def span_attributes(ex: Exchange) -> dict[str, Any]:
    attrs: dict[str, Any] = {"http.response.status_code": ex.status,
                             "modelwire.gateway.latency_s": time.perf_counter() - ex.t0}  # fmt: skip
    if ex.key is not None:
        attrs["modelwire.gateway.key"] = ex.key
    if ex.frontend is not None:
        attrs["modelwire.gateway.api"] = ex.frontend
    if ex.model is not None:
        attrs["gen_ai.request.model"] = ex.model
    if ex.first_token is not None:
        attrs["modelwire.gateway.first_token_s"] = ex.first_token - ex.t0
    m = ex.logged()
    if m is not None:
        u = m.usage
        attrs.update({
            "gen_ai.usage.input_tokens": u.input + u.cache_read + u.cache_write,
            "gen_ai.usage.output_tokens": u.output,
            "gen_ai.usage.cache_read.input_tokens": u.cache_read,
            "gen_ai.usage.cache_creation.input_tokens": u.cache_write,
            "modelwire.gateway.cost_usd": u.cost.total,
            "gen_ai.response.model": m.model,
        })  # fmt: skip
    return attrs


def _tracer(provider: Any, secrets: Callable[[], Iterable[str]]) -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        raise ConfigurationError(
            "gateway.otel = true needs OpenTelemetry: pip install 'modelwire[otel]'"
        ) from None
    import modelwire.otel

    from .._version import __version__

    if provider is not None or not modelwire.otel.is_instrumented():
        calls = provider if provider is not None else trace.get_tracer_provider()
        modelwire.otel.instrument(tracer_provider=_Scrubbing(calls, secrets))
    return trace.get_tracer("modelwire.gateway", __version__, tracer_provider=provider)


class _Scrubbing:
    """A tracer provider whose spans redact ``secrets()`` from every string they are
    given (attributes, events, status), on their way to the wrapped provider."""

    def __init__(self, provider: Any, secrets: Callable[[], Iterable[str]]) -> None:
        self._provider = provider
        self._secrets = secrets

    def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
        return _ScrubbingTracer(self._provider.get_tracer(*args, **kwargs), self._secrets)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)


class _ScrubbingTracer:
    def __init__(self, tracer: Any, secrets: Callable[[], Iterable[str]]) -> None:
        self._tracer = tracer
        self._secrets = secrets

    def start_span(self, *args: Any, **kwargs: Any) -> Any:
        attrs = kwargs.get("attributes")
        if attrs:
            kwargs["attributes"] = _clean(attrs, self._secrets)
        return _ScrubbingSpan(self._tracer.start_span(*args, **kwargs), self._secrets)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tracer, name)


class _ScrubbingSpan:
    def __init__(self, span: Any, secrets: Callable[[], Iterable[str]]) -> None:
        self._span = span
        self._secrets = secrets

    def set_attribute(self, key: str, value: Any) -> None:
        self._span.set_attribute(key, _clean_value(value, self._secrets))

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        self._span.set_attributes(_clean(attributes, self._secrets))

    def add_event(self, name: str, attributes: Any = None, *args: Any, **kwargs: Any) -> None:
        if attributes:
            attributes = _clean(attributes, self._secrets)
        self._span.add_event(name, attributes, *args, **kwargs)

    def set_status(self, status: Any, description: str | None = None) -> None:
        from opentelemetry.trace import Status

        if isinstance(status, Status) and status.description:
            status = Status(status.status_code, _clean_value(status.description, self._secrets))
        if description:
            description = _clean_value(description, self._secrets)
        self._span.set_status(status, description)

    def record_exception(self, exception: BaseException, attributes: Any = None,
                         *args: Any, **kwargs: Any) -> None:  # fmt: skip
        attrs = dict(attributes or {})
        attrs.setdefault("exception.message", str(exception))
        self._span.record_exception(exception, _clean(attrs, self._secrets), *args, **kwargs)

    def __enter__(self) -> Any:
        self._span.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._span.__exit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._span, name)


def _clean(attributes: Mapping[str, Any], secrets: Callable[[], Iterable[str]]) -> dict[str, Any]:
    keys: tuple[str, ...] | None = None  # read once, and only when a string needs them

    def known() -> tuple[str, ...]:
        nonlocal keys
        if keys is None:
            keys = tuple(secrets())
        return keys

    return {k: _clean_value(v, known) for k, v in attributes.items()}


def _clean_value(value: Any, secrets: Callable[[], Iterable[str]]) -> Any:
    from .._redact import redact

    if isinstance(value, str):
        return redact(value, secrets())
    if isinstance(value, list | tuple) and any(isinstance(v, str) for v in value):
        keys = tuple(secrets())
        return type(value)(redact(v, keys) if isinstance(v, str) else v for v in value)
    return value
