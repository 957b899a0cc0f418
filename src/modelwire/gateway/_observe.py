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

import time
from typing import Any

from ..errors import ConfigurationError
from ..types import AssistantMessage, Context, Model

__all__ = ["Exchange", "Tracing", "span_attributes"]

#: The events that carry the first content of an answer (its first token).
FIRST_CONTENT = frozenset({"text_delta", "thinking_delta", "tool_call_start", "block", "citation"})


class Exchange:
    """What one request did: logged and traced when it ends."""

    __slots__ = ("context", "first_token", "frontend", "key", "message", "model", "path",
                 "started", "status", "t0", "target")  # fmt: skip

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

    def saw(self, event_type: str) -> None:
        """Note the first content event's time."""
        if self.first_token is None and event_type in FIRST_CONTENT:
            self.first_token = time.perf_counter()


class Tracing:
    """The gateway's spans: ``provider`` is a tracer provider (default: the global one)."""

    def __init__(self, provider: Any = None) -> None:
        self.tracer = _tracer(provider)

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
        if ex.status >= 500 or (ex.message is not None and ex.message.error is not None):
            kind = ex.message.error.kind if ex.message and ex.message.error else "server"
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
    m = ex.message
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


def _tracer(provider: Any) -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        raise ConfigurationError(
            "gateway.otel = true needs OpenTelemetry: pip install 'modelwire[otel]'"
        ) from None
    import modelwire.otel

    from .. import __version__

    if provider is not None or not modelwire.otel.is_instrumented():
        modelwire.otel.instrument(tracer_provider=provider)
    return trace.get_tracer("modelwire.gateway", __version__, tracer_provider=provider)
