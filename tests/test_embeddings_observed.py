"""``mw.embed`` is observed as a model call is: a row of the SQLite log per request
(``log=``) and an OpenTelemetry ``embeddings`` span per request
(``modelwire.otel.instrument()``), the key never in either."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import modelwire as mw
import modelwire.otel
from modelwire._client._log import CallLog
from modelwire.testing import MockServer, error_reply

pytestmark = pytest.mark.anyio

SECRET = "sk-embed-secret-0123456789"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    modelwire.otel.instrument(tracer_provider=provider)
    try:
        yield exporter
    finally:
        modelwire.otel.uninstrument()


def test_each_request_is_a_row_of_the_log(tmp_path: Path) -> None:
    log = tmp_path / "calls.db"
    with MockServer() as server:
        result = mw.embed_sync(server.model(), ["a cat", "a dog"], log=log, api_key=SECRET)
    (row,) = CallLog(log).rows()
    assert row.prompt == "a cat\na dog"  # the inputs, one per line
    assert row.input_tokens == result.usage.input > 0
    assert (row.model, row.stop_reason, row.response) == (result.model, "stop", "")
    assert SECRET.encode() not in log.read_bytes()


async def test_the_async_twin_logs_too_and_a_bad_log_path_is_refused_first(
    tmp_path: Path,
) -> None:
    log = tmp_path / "calls.db"
    with MockServer() as server:
        await mw.embed(server.model(), "a cat", log=log)
        with pytest.raises(mw.ConfigurationError):
            await mw.embed(server.model(), "a cat", log=tmp_path)  # a directory
        sent = len(server.requests)
    assert [r.prompt for r in CallLog(log).rows()] == ["a cat"]
    assert sent == 1  # the refused call sent nothing


def test_each_request_is_an_embeddings_span(spans: InMemorySpanExporter) -> None:
    with MockServer([error_reply(429, "slow down", headers={"retry-after": "0"})]) as server:
        model = server.model()
        mw.embed_sync(model, ["a cat", "a dog"], api_key=SECRET)
    (span,) = spans.get_finished_spans()
    attrs = dict(span.attributes or {})
    assert span.name == f"embeddings {model.id}"
    assert attrs["gen_ai.operation.name"] == "embeddings"
    assert attrs["gen_ai.request.model"] == model.id
    tokens = attrs["gen_ai.usage.input_tokens"]
    assert isinstance(tokens, int) and tokens > 0
    assert [e.name for e in span.events] == ["modelwire.retry"]  # the 429, retried
    assert SECRET not in repr(attrs)
