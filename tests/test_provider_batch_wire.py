"""The batch facets of the wire APIs, without a socket: a whole answer decodes to the
message its stream gives, and each provider's job and result shapes are read."""

from __future__ import annotations

import json

import pytest

import modelwire as mw
from modelwire._apis import batch_facet
from modelwire.testing import render
from modelwire.testing._render import render_reply

APIS = ("openai-chat", "openai-responses", "anthropic-messages", "google-generative-ai")

MESSAGE = mw.AssistantMessage(
    content=[mw.ThinkingContent(thinking="Let me look.", signature="sig-1"),
             mw.TextContent(text="Reading it."),
             mw.ToolCall(id="call_1", name="read", arguments={"path": "a.txt"})],
    api="", provider="", model="", stop_reason="tool_use",
    usage=mw.Usage(input=12, output=7, total_tokens=19),
)  # fmt: skip


def _plain(message: mw.AssistantMessage) -> tuple[object, ...]:
    blocks = [(b.type, getattr(b, "text", None) or getattr(b, "thinking", None),
               getattr(b, "name", None), getattr(b, "arguments", None)) for b in message.content]  # fmt: skip
    return (blocks, message.stop_reason, message.usage.input, message.usage.output)


@pytest.mark.parametrize("api", APIS)
def test_a_whole_answer_decodes_to_what_its_stream_gives(api: str) -> None:
    facet = batch_facet(api)
    assert facet is not None and facet.price_factor == 0.5
    whole = render_reply(MESSAGE, api).complete
    assert whole is not None
    batched = mw.replay(api, facet.as_stream(whole)).message
    streamed = mw.replay(api, render(MESSAGE, api)).message
    assert batched.error is None and _plain(batched) == _plain(streamed)
    call = batched.tool_calls[0]
    assert (call.name, call.arguments, batched.stop_reason) == (
        "read",
        {"path": "a.txt"},
        "tool_use",
    )


def test_apis_without_a_provider_batch_api_have_no_facet() -> None:
    assert batch_facet("ollama-chat") is None and batch_facet("cohere-chat") is None
    assert batch_facet("no-such-api") is None


def test_openai_jobs_and_result_lines_are_read_as_the_reference_writes_them() -> None:
    facet = batch_facet("openai-chat")
    assert facet is not None
    job = facet.parse_job(json.dumps({
        "id": "batch_abc", "object": "batch", "status": "finalizing",
        "request_counts": {"total": 3, "completed": 2, "failed": 1},
        "output_file_id": "file-out", "error_file_id": "file-err"}).encode())  # fmt: skip
    assert (job.id, job.state, job.provider_state) == ("batch_abc", "running", "finalizing")
    assert job.counts == {"total": 3, "completed": 2, "failed": 1}
    assert job.results == ("file-out", "file-err")
    assert facet.parse_job(b'{"id": "b", "status": "cancelling"}').state == "running"
    assert facet.parse_job(b'{"id": "b", "status": "expired"}').state == "expired"
    lines = b"\n".join(json.dumps(x).encode() for x in [
        {"id": "r1", "custom_id": "a", "response": {"status_code": 200, "body": {"x": 1}}, "error": None},
        {"id": "r2", "custom_id": "b", "response": {"status_code": 429, "body": {"error": {}}}, "error": None},
        {"id": "r3", "custom_id": "c", "response": None, "error": {"code": "batch_expired", "message": "late"}},
        {"id": "r4", "custom_id": "d", "response": None, "error": {"code": "batch_cancelled", "message": "x"}},
    ])  # fmt: skip
    got = {r.key: r for r in facet.parse_results(lines, "file-out")}
    assert [got[k].outcome for k in "abcd"] == ["succeeded", "errored", "expired", "cancelled"]
    assert json.loads(got["a"].body or b"") == {"x": 1} and got["b"].status == 429


def test_anthropic_results_and_errors_in_either_shape() -> None:
    facet = batch_facet("anthropic-messages")
    assert facet is not None
    ended = facet.parse_job(json.dumps({
        "id": "msgbatch_1", "type": "message_batch", "processing_status": "ended",
        "request_counts": {"processing": 0, "succeeded": 1, "errored": 2, "canceled": 0,
                           "expired": 1},
        "results_url": "https://api.anthropic.test/v1/messages/batches/msgbatch_1/results",
        "cancel_initiated_at": None}).encode())  # fmt: skip
    assert ended.state == "completed" and ended.results[0].endswith("/results")
    cancelled = facet.parse_job(b'{"id": "m", "processing_status": "ended", '
                                b'"cancel_initiated_at": "2026-01-01T00:00:00Z"}')  # fmt: skip
    assert cancelled.state == "cancelled"
    lines = b"\n".join(json.dumps(x).encode() for x in [
        {"custom_id": "a", "result": {"type": "succeeded", "message": {"id": "msg_1"}}},
        {"custom_id": "b", "result": {"type": "errored", "error": {
            "type": "error", "error": {"type": "invalid_request_error", "message": "no"}}}},
        {"custom_id": "c", "result": {"type": "errored", "error": {
            "type": "overloaded_error", "message": "busy"}}},
        {"custom_id": "d", "result": {"type": "expired"}},
    ])  # fmt: skip
    got = {r.key: r for r in facet.parse_results(lines, "url")}
    assert [got[k].outcome for k in "abcd"] == ["succeeded", "errored", "errored", "expired"]
    assert (got["b"].status, got["c"].status) == (400, 529)


def test_gemini_operations_are_read_with_either_state_spelling_and_keys_by_position() -> None:
    facet = batch_facet("google-generative-ai")
    assert facet is not None
    running = facet.parse_job(
        b'{"name": "batches/1", "metadata": {"state": "BATCH_STATE_RUNNING"}}'
    )
    assert (running.id, running.state, running.inline) == ("batches/1", "running", None)
    done = facet.parse_job(json.dumps({
        "name": "batches/1", "done": True,
        "metadata": {"state": "JOB_STATE_SUCCEEDED", "batchStats": {"requestCount": "2"}},
        "response": {"inlinedResponses": {"inlinedResponses": [
            {"response": {"candidates": []}},
            {"error": {"code": 8, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}]}},
    }).encode())  # fmt: skip
    assert done.state == "completed" and done.counts == {"requestCount": 2}
    assert done.inline is not None
    assert [(r.key, r.outcome, r.status) for r in done.inline] == [
        ("#0", "succeeded", None), ("#1", "errored", 429)]  # fmt: skip
    failed = facet.parse_job(b'{"name": "batches/2", "done": true, "error": {"message": "bad"}}')
    assert failed.state == "failed" and failed.message == "bad"
