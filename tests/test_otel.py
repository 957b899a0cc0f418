"""modelwire.otel: spans and metrics by the GenAI semantic conventions, read back from
the OpenTelemetry SDK's in-memory exporters; attribute names are checked against the
``opentelemetry-semantic-conventions`` package, not restated here."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as GA
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics as GM
from opentelemetry.semconv.attributes import error_attributes, server_attributes
from opentelemetry.trace import SpanKind, StatusCode

import modelwire as mw
import modelwire.otel
from modelwire.testing import MockServer, Reply, error_reply, tool_call
from modelwire.trace import MessageTrace, TraceLog

SECRET = "sk-otel-secret-0123456789"


class Otel:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        tp = TracerProvider()
        tp.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.tp, self.mp = tp, MeterProvider(metric_readers=[self.reader])

    def finished(self) -> list[Any]:
        return list(self.spans.get_finished_spans())

    def metrics(self) -> dict[str, list[Any]]:
        data = self.reader.get_metrics_data()
        out: dict[str, list[Any]] = {}
        assert data is not None
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    out[metric.name] = list(metric.data.data_points)
        return out


@pytest.fixture
def otel() -> Iterator[Otel]:
    o = Otel()
    modelwire.otel.instrument(tracer_provider=o.tp, meter_provider=o.mp)
    try:
        yield o
    finally:
        modelwire.otel.uninstrument()


def _ctx(text: str = "hi") -> mw.Context:
    return mw.Context(system_prompt="be brief", messages=[mw.UserMessage(content=text)])


def test_one_client_span_per_call_with_the_conventions_attributes(otel: Otel) -> None:
    usage = mw.Usage(input=7, output=5, cache_read=3, cache_write=0, total_tokens=15)
    reply = Reply(message=mw.AssistantMessage(content=[mw.TextContent(text="hello")], api="",
                  provider="", model="", usage=usage, stop_reason="stop"))  # fmt: skip
    log = TraceLog()
    with MockServer([reply]) as srv:
        model = srv.model("openai-chat")
        port = srv.port
        message = mw.complete_sync(model, _ctx(), api_key=SECRET, trace=log, max_tokens=50)
    (span,) = otel.finished()
    a = dict(span.attributes or {})
    assert span.kind == SpanKind.CLIENT and span.name == f"chat {model.id}"
    assert a[GA.GEN_AI_OPERATION_NAME] == GA.GenAiOperationNameValues.CHAT.value
    assert a[GA.GEN_AI_PROVIDER_NAME] == model.provider
    assert a[GA.GEN_AI_REQUEST_MODEL] == model.id
    assert a[GA.GEN_AI_REQUEST_MAX_TOKENS] == 50
    # The same values the trace's message record carries: one source for both.
    (final,) = [r for r in log.records if isinstance(r, MessageTrace)]
    assert final.message.text == message.text == "hello"
    assert a[GA.GEN_AI_RESPONSE_MODEL] == (final.message.model or model.id)
    assert a[GA.GEN_AI_RESPONSE_ID] == final.message.response_id
    assert list(a[GA.GEN_AI_RESPONSE_FINISH_REASONS]) == [
        final.message.provider_stop_reason or final.message.stop_reason
    ]
    assert a[GA.GEN_AI_USAGE_INPUT_TOKENS] == 7 + 3  # cached tokens are part of input
    assert a[GA.GEN_AI_USAGE_OUTPUT_TOKENS] == 5
    assert a[GA.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 3
    assert a[server_attributes.SERVER_ADDRESS] == "127.0.0.1"
    assert a[server_attributes.SERVER_PORT] == port
    assert [e.name for e in span.events] == ["modelwire.first_token"]
    assert a[GA.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] >= 0
    assert GA.GEN_AI_INPUT_MESSAGES not in a  # content only when enabled
    assert span.status.status_code != StatusCode.ERROR
    points = otel.metrics()
    durations = points[GM.GEN_AI_CLIENT_OPERATION_DURATION]
    assert len(durations) == 1 and durations[0].count == 1
    tokens = {
        p.attributes[GA.GEN_AI_TOKEN_TYPE]: p.sum for p in points[GM.GEN_AI_CLIENT_TOKEN_USAGE]
    }
    assert tokens == {"input": 10, "output": 5}
    assert SECRET not in repr([dict(s.attributes or {}) for s in otel.finished()])


def test_retries_are_span_events_and_a_failure_sets_error_type(otel: Otel) -> None:
    replies = [error_reply(429, "slow down", headers={"retry-after": "0"}),
               error_reply(401, "bad key")]  # fmt: skip
    with MockServer(replies) as srv:
        message = mw.complete_sync(srv.model("anthropic-messages"), _ctx(), api_key=SECRET,
                                   max_retries=1)  # fmt: skip
    assert message.error is not None
    (span,) = otel.finished()
    retry = [e for e in span.events if e.name == "modelwire.retry"]
    assert len(retry) == 1 and dict(retry[0].attributes or {})["http.response.status_code"] == 429
    a = dict(span.attributes or {})
    assert a[error_attributes.ERROR_TYPE] == message.error.kind == "authentication"
    assert span.status.status_code == StatusCode.ERROR
    assert SECRET not in repr(a) + repr([dict(e.attributes or {}) for e in span.events])
    durations = otel.metrics()[GM.GEN_AI_CLIENT_OPERATION_DURATION]
    assert dict(durations[0].attributes)[error_attributes.ERROR_TYPE] == "authentication"


def test_content_is_recorded_only_when_enabled() -> None:
    o = Otel()
    modelwire.otel.instrument(tracer_provider=o.tp, meter_provider=o.mp, capture_content=True)
    try:
        with MockServer(["the answer"]) as srv:
            mw.complete_sync(srv.model("openai-chat"), _ctx("the question"))
    finally:
        modelwire.otel.uninstrument()
    a = dict(o.finished()[0].attributes or {})
    assert "the question" in str(a[GA.GEN_AI_INPUT_MESSAGES])
    assert "the answer" in str(a[GA.GEN_AI_OUTPUT_MESSAGES])
    assert "be brief" in str(a[GA.GEN_AI_SYSTEM_INSTRUCTIONS])


def test_uninstrument_stops_recording(otel: Otel) -> None:
    modelwire.otel.uninstrument()
    assert not modelwire.otel.is_instrumented()
    with MockServer(["x"]) as srv:
        mw.complete_sync(srv.model("openai-chat"), _ctx())
    assert otel.finished() == []


@pytest.mark.parametrize("sync", [True, False])
def test_agent_run_has_invoke_agent_and_execute_tool_spans(otel: Otel, sync: bool) -> None:
    import anyio

    def add(args: dict[str, Any], ctx: Any) -> str:
        return str(args["a"] + args["b"])

    tool = mw.Tool(name="add", description="add", parameters={
        "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
        execute=add)  # fmt: skip
    with MockServer([[tool_call("add", {"a": 1, "b": 2}, id="call_1")], "3"]) as srv:
        agent = mw.Agent(srv.model("openai-chat"), tools=[tool])
        run = agent.run_sync("1+2?") if sync else anyio.run(agent.run, "1+2?")
    assert run.final.text == "3"
    spans = otel.finished()
    by_name = {s.name: s for s in spans}
    agent_span = by_name["invoke_agent"]
    tool_span = by_name["execute_tool add"]
    calls = [s for s in spans if s.name.startswith("chat ")]
    assert len(calls) == 2
    for s in [*calls, tool_span]:
        assert s.parent is not None and s.parent.span_id == agent_span.context.span_id
        assert s.context.trace_id == agent_span.context.trace_id
    t = dict(tool_span.attributes or {})
    assert t[GA.GEN_AI_OPERATION_NAME] == "execute_tool"
    assert t[GA.GEN_AI_TOOL_NAME] == "add" and t[GA.GEN_AI_TOOL_CALL_ID] == "call_1"
    assert dict(agent_span.attributes or {})[GA.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert GA.GEN_AI_TOOL_CALL_ARGUMENTS not in t


def test_instrument_uses_the_global_providers() -> None:
    code = """
import modelwire as mw, modelwire.otel
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from modelwire.testing import MockServer
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
modelwire.otel.instrument()
with MockServer(["hi"]) as srv:
    mw.complete_sync(srv.model("openai-chat"), mw.Context(messages=[mw.UserMessage(content="x")]))
print([s.name for s in exporter.get_finished_spans()])
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['chat mock-model']"


def test_a_raising_trace_observer_does_not_silence_the_instrumentation(otel: Otel) -> None:
    def broken(record: Any) -> None:
        raise ValueError("boom")

    with MockServer(["still traced"]) as srv, pytest.warns(RuntimeWarning, match="boom"):
        message = mw.complete_sync(srv.model("openai-chat"), _ctx(), trace=broken)
    assert message.text == "still traced"
    (span,) = otel.finished()
    assert dict(span.attributes or {})[GA.GEN_AI_USAGE_OUTPUT_TOKENS] == message.usage.output


@pytest.mark.parametrize("missing", ["opentelemetry", "opentelemetry.metrics"])
def test_instrument_without_the_extra_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    # As an environment without opentelemetry-api imports it: None in sys.modules
    # makes the import fail with ModuleNotFoundError naming the module.
    for name in [n for n in sys.modules if n == "opentelemetry" or n.startswith("opentelemetry.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, missing, None)
    with pytest.raises(mw.errors.ConfigurationError, match=r"pip install 'modelwire\[otel\]'"):
        modelwire.otel.instrument()
    assert not modelwire.otel.is_instrumented()
