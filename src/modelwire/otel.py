"""OpenTelemetry spans and metrics for every model call and agent run, following the
GenAI semantic conventions (https://opentelemetry.io/docs/specs/semconv/gen-ai/)::

    import modelwire.otel
    modelwire.otel.instrument()      # the global tracer and meter providers
    ...
    modelwire.otel.uninstrument()

Needs ``opentelemetry-api`` (``pip install 'modelwire[otel]'``); an SDK or a
distro configured by the application decides where the data goes.

* One ``CLIENT`` span per model call, named ``chat {model}`` (``embeddings {model}``
  for each request of ``mw.embed``):
  ``gen_ai.operation.name``, ``gen_ai.provider.name``, ``gen_ai.request.model``,
  ``gen_ai.request.max_tokens`` / ``temperature`` (when sent),
  ``gen_ai.response.model``, ``gen_ai.response.id``, ``gen_ai.response.finish_reasons``,
  ``gen_ai.usage.input_tokens`` (cached tokens included, as the conventions count
  them), ``gen_ai.usage.output_tokens``, ``gen_ai.usage.cache_read.input_tokens``,
  ``gen_ai.usage.cache_creation.input_tokens``, ``server.address``,
  ``server.port``, and on failure ``error.type`` (the error kind) with an ERROR status.
  Each automatic retry is a span event ``modelwire.retry``; the first streamed
  content is a span event ``modelwire.first_token`` and the attribute
  ``gen_ai.response.time_to_first_chunk`` (seconds).
* An ``invoke_agent`` span per :class:`~modelwire.Agent` run, the parent of its model
  calls and of one ``execute_tool {name}`` span per tool call (``gen_ai.tool.name``,
  ``gen_ai.tool.call.id``, ``gen_ai.tool.type``).
* The histograms ``gen_ai.client.operation.duration`` (s) and
  ``gen_ai.client.token.usage`` (``{token}``, by ``gen_ai.token.type``).

Message content (``gen_ai.input.messages``, ``gen_ai.output.messages``,
``gen_ai.system_instructions``, tool arguments and results) is recorded only with
``instrument(capture_content=True)`` or
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``. No header, key or URL
path is ever an attribute.

The spans are built from the same observer records as :mod:`modelwire.trace` (the
context, retry, event and message records of each call), so the two cannot
disagree; an instrumentation that fails is detached from the call like any observer.
"""

from __future__ import annotations

import contextvars
import json
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .errors import ConfigurationError

if TYPE_CHECKING:
    from .trace import TraceRecord
    from .types import Model

__all__ = ["instrument", "is_instrumented", "uninstrument"]

#: ``gen_ai.provider.name`` for modelwire's providers (the conventions' well-known
#: values); any other provider is reported by its own id.
PROVIDER_NAMES: Mapping[str, str] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "google": "gcp.gemini",
    "google-vertex": "gcp.vertex_ai",
    "vertex-anthropic": "gcp.vertex_ai",
    "amazon-bedrock": "aws.bedrock",
    "azure-openai": "azure.ai.openai",
    "deepseek": "deepseek",
    "groq": "groq",
    "mistral": "mistral_ai",
    "xai": "x_ai",
}

_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
# Bucket boundaries the conventions advise for the two histograms.
_TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
                  16777216, 67108864]  # fmt: skip
_DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24,
                     20.48, 40.96, 81.92]  # fmt: skip

# The agent span of the run in progress in this task: the parent of its model calls.
_AGENT_SPAN: contextvars.ContextVar[Any] = contextvars.ContextVar("modelwire_agent_span",
                                                                  default=None)  # fmt: skip


class _Instruments:
    def __init__(self, tracer_provider: Any, meter_provider: Any, capture_content: bool) -> None:
        from opentelemetry import metrics, trace

        from ._version import __version__

        self.tracer = trace.get_tracer("modelwire", __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter("modelwire", __version__, meter_provider=meter_provider)
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )  # fmt: skip
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )  # fmt: skip
        self.capture = capture_content

    def call(self, model: Model) -> Any:
        return _CallSpan(self, model, _AGENT_SPAN.get())

    def agent(self) -> Any:
        return _AgentSpans(self)


_active: _Instruments | None = None


def instrument(
    *,
    tracer_provider: Any = None,
    meter_provider: Any = None,
    capture_content: bool | None = None,
) -> None:
    """Record spans and metrics for every model call and agent run from now on, with the
    global tracer and meter providers (or the ones given). ``capture_content``: record
    message content too (default: ``$OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``).
    Calling it again replaces the previous settings.

    Process-wide: every ``mw.stream``/``complete`` call and ``Agent`` run in any
    thread is recorded (the module docs list the spans, attributes and metrics),
    until :func:`uninstrument`.

    Args:
        tracer_provider: The OpenTelemetry ``TracerProvider`` to use (default: the
            global one).
        meter_provider: The ``MeterProvider`` to use (default: the global one).
        capture_content: Also record message content, tool arguments and results;
            ``None`` reads the environment variable above.

    Raises:
        ConfigurationError: OpenTelemetry is not installed
            (``pip install 'modelwire[otel]'``).

    Example:
        ```python
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        import modelwire as mw
        import modelwire.otel
        from modelwire.testing import MockServer

        spans = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(spans))
        modelwire.otel.instrument(tracer_provider=provider)
        try:
            with MockServer(["Hello!"]) as server:
                mw.complete_sync(server.model(), "Hi")
        finally:
            modelwire.otel.uninstrument()
        print([span.name for span in spans.get_finished_spans()])  # ['chat mock-model']
        ```
    """
    global _active
    from ._client._observers import AGENT_OBSERVERS, CALL_OBSERVERS

    _require_opentelemetry()
    if capture_content is None:
        capture_content = os.environ.get(_CONTENT_ENV, "").strip().lower() == "true"
    uninstrument()
    _active = _Instruments(tracer_provider, meter_provider, bool(capture_content))
    CALL_OBSERVERS.append(_active.call)
    AGENT_OBSERVERS.append(_active.agent)


def _require_opentelemetry() -> None:
    # What the other extras say (aiohttp, Ray, the cloud credentials): the install line,
    # not a bare ModuleNotFoundError; an ImportError from inside OpenTelemetry propagates.
    try:
        import opentelemetry.metrics
        import opentelemetry.trace  # noqa: F401
    except ImportError as exc:
        if exc.name is None or exc.name.partition(".")[0] != "opentelemetry":
            raise
        raise ConfigurationError(
            "modelwire.otel.instrument() needs OpenTelemetry (opentelemetry-api), which is "
            "not installed: pip install 'modelwire[otel]'"
        ) from None


def uninstrument() -> None:
    """Stop recording (calls already in flight finish their spans).

    Undoes :func:`instrument`; calling it when nothing is instrumented does nothing.
    Tests that instrument should call it in a ``finally`` (or a fixture teardown),
    since instrumentation is process-wide.
    """
    global _active
    from ._client._observers import AGENT_OBSERVERS, CALL_OBSERVERS

    if _active is not None:
        if _active.call in CALL_OBSERVERS:
            CALL_OBSERVERS.remove(_active.call)
        if _active.agent in AGENT_OBSERVERS:
            AGENT_OBSERVERS.remove(_active.agent)
    _active = None


def is_instrumented() -> bool:
    """Whether :func:`instrument` is in effect.

    Returns:
        ``True`` between :func:`instrument` and :func:`uninstrument`.
    """
    return _active is not None


def _server(base_url: str) -> dict[str, Any]:
    parts = urlsplit(base_url)
    out: dict[str, Any] = {}
    if parts.hostname:
        out["server.address"] = parts.hostname
        try:
            port = parts.port
        except ValueError:
            port = None
        out["server.port"] = port or (443 if parts.scheme == "https" else 80)
    return out


def _json(value: Any) -> str:
    from .types import to_json

    return to_json(value).decode()


class _CallSpan:
    """The trace observer of one model call: its span and its two metrics."""

    def __init__(self, inst: _Instruments, model: Model, agent_span: Any) -> None:
        self.inst = inst
        self.model = model
        self.parent = agent_span
        self.span: Any = None
        self.t0 = 0.0
        self.first = False
        provider = PROVIDER_NAMES.get(model.provider, model.provider)
        self.common: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model.id,
            **_server(model.base_url),
        }

    def __call__(self, record: TraceRecord) -> None:
        from .trace import ContextTrace, EventTrace, MessageTrace, RequestTrace, RetryTrace

        if isinstance(record, ContextTrace):
            self._start(record)
        elif self.span is None:
            return
        elif isinstance(record, RequestTrace):
            body = record.body if isinstance(record.body, dict) else {}
            for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
                if isinstance(body.get(key), int):
                    self.span.set_attribute("gen_ai.request.max_tokens", body[key])
                    break
            if isinstance(body.get("temperature"), int | float):
                self.span.set_attribute("gen_ai.request.temperature", body["temperature"])
        elif isinstance(record, RetryTrace):
            attrs: dict[str, Any] = {"attempt": record.attempt, "error.type": record.kind,
                                     "wait_s": record.wait}  # fmt: skip
            if record.status is not None:
                attrs["http.response.status_code"] = record.status
            self.span.add_event("modelwire.retry", attrs)
        elif isinstance(record, EventTrace):
            if not self.first and record.event.type in (
                "text_delta", "thinking_delta", "tool_call_start"):  # fmt: skip
                self.first = True
                ttft = time.monotonic() - self.t0
                self.span.set_attribute("gen_ai.response.time_to_first_chunk", ttft)
                self.span.add_event("modelwire.first_token", {"time_to_first_token_s": ttft})
        elif isinstance(record, MessageTrace):
            self._end(record)

    def _start(self, record: Any) -> None:
        from opentelemetry import trace

        ctx = trace.set_span_in_context(self.parent) if self.parent is not None else None
        # The semantic conventions' operation names: chat, embeddings (mw.embed).
        self.common["gen_ai.operation.name"] = record.operation
        self.span = self.inst.tracer.start_span(
            f"{record.operation} {self.model.id}", context=ctx, kind=trace.SpanKind.CLIENT,
            attributes=self.common,
        )  # fmt: skip
        self.t0 = time.monotonic()
        if self.inst.capture:
            context = record.context
            if context.system_prompt:
                self.span.set_attribute("gen_ai.system_instructions", json.dumps(
                    [{"type": "text", "content": context.system_prompt}], ensure_ascii=False))  # fmt: skip
            self.span.set_attribute("gen_ai.input.messages", _json(context.messages))

    def _end(self, record: Any) -> None:
        from opentelemetry.trace import Status, StatusCode

        m = record.message
        span = self.span
        self.span = None
        u = m.usage
        input_tokens = u.input + u.cache_read + u.cache_write
        attrs: dict[str, Any] = {
            "gen_ai.response.model": m.model or self.model.id,
            "gen_ai.response.finish_reasons": [m.provider_stop_reason or m.stop_reason or ""],
            "gen_ai.usage.input_tokens": input_tokens,
            "gen_ai.usage.output_tokens": u.output,
        }
        if m.response_id:
            attrs["gen_ai.response.id"] = m.response_id
        if u.cache_read:
            attrs["gen_ai.usage.cache_read.input_tokens"] = u.cache_read
        if u.cache_write:
            attrs["gen_ai.usage.cache_creation.input_tokens"] = u.cache_write
        if self.inst.capture:
            attrs["gen_ai.output.messages"] = _json([m])
        metric_attrs = {**self.common, "gen_ai.response.model": attrs["gen_ai.response.model"]}
        if m.error is not None:
            attrs["error.type"] = m.error.kind
            metric_attrs["error.type"] = m.error.kind
            span.set_status(Status(StatusCode.ERROR, m.error.message))
        span.set_attributes(attrs)
        span.end()
        self.inst.duration.record(time.monotonic() - self.t0, metric_attrs)
        if m.error is None or input_tokens or u.output:
            self.inst.tokens.record(input_tokens, {**metric_attrs, "gen_ai.token.type": "input"})
            self.inst.tokens.record(u.output, {**metric_attrs, "gen_ai.token.type": "output"})


class _AgentSpans:
    """The agent event observer of one run: its ``invoke_agent`` and tool spans."""

    def __init__(self, inst: _Instruments) -> None:
        self.inst = inst
        self.span: Any = None
        self.token: contextvars.Token[Any] | None = None
        self.tools: dict[str, Any] = {}

    def __call__(self, event: Any) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode

        t = event.type
        if t == "agent_start":
            self.span = self.inst.tracer.start_span(
                "invoke_agent", kind=trace.SpanKind.INTERNAL,
                attributes={"gen_ai.operation.name": "invoke_agent"},
            )  # fmt: skip
            self.token = _AGENT_SPAN.set(self.span)
        elif self.span is None:
            return
        elif t == "tool_execution_start":
            call = event.tool_call
            attrs: dict[str, Any] = {"gen_ai.operation.name": "execute_tool",
                                     "gen_ai.tool.name": call.name,
                                     "gen_ai.tool.call.id": call.id,
                                     "gen_ai.tool.type": "function"}  # fmt: skip
            if self.inst.capture:
                attrs["gen_ai.tool.call.arguments"] = call.raw_arguments or json.dumps(
                    call.arguments, ensure_ascii=False)  # fmt: skip
            self.tools[call.id] = self.inst.tracer.start_span(
                f"execute_tool {call.name}", context=trace.set_span_in_context(self.span),
                kind=trace.SpanKind.INTERNAL, attributes=attrs,
            )  # fmt: skip
        elif t == "tool_execution_end":
            span = self.tools.pop(event.tool_call.id, None)
            if span is None:
                return
            result = event.result
            if self.inst.capture:
                span.set_attribute("gen_ai.tool.call.result", _json(result.content))
            if result.is_error:
                kind = event.failure or "tool_error"
                span.set_attribute("error.type", kind)
                span.set_status(Status(StatusCode.ERROR, kind))
            span.end()
        elif t == "agent_end":
            run = event.run
            final = run.final
            self.span.set_attributes({
                "gen_ai.usage.input_tokens": run.usage.input + run.usage.cache_read
                + run.usage.cache_write,
                "gen_ai.usage.output_tokens": run.usage.output,
            })  # fmt: skip
            if final.model:
                self.span.set_attribute("gen_ai.request.model", final.model)
            if final.error is not None:
                self.span.set_attribute("error.type", final.error.kind)
                self.span.set_status(Status(StatusCode.ERROR, final.error.message))
            for span in self.tools.values():
                span.end()
            self.tools.clear()
            self.span.end()
            self.span = None
            if self.token is not None:
                try:
                    _AGENT_SPAN.reset(self.token)
                except ValueError:  # ended in another context: clear it here
                    _AGENT_SPAN.set(None)
                self.token = None
