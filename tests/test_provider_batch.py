"""``via="provider"``: the providers' batch APIs behind the exactly-once runner.

Every test runs against the MockServer's batch endpoints over loopback (OpenAI
files and batches, Anthropic Message Batches, Gemini batch mode); polling waits go
through an injected sleep, so no test waits for a provider's interval.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

import modelwire as mw
from modelwire.batching import JsonProgress, cancel_jobs
from modelwire.batching._api import knobs
from modelwire.testing import MockServer, RecordedRequest, error_reply

#: Each wire API with a provider batch API: OpenAI's two endpoints, Anthropic, Gemini.
APIS = ("openai-chat", "openai-responses", "anthropic-messages", "google-generative-ai")
NAME = "mock/m1"


async def no_wait(seconds: float) -> None:
    await asyncio.sleep(0)


@pytest.fixture(autouse=True)
def fast_polls() -> Iterator[None]:
    with knobs(sleep=no_wait):
        yield


def lines(n: int, ids: list[str] | None = None) -> list[dict[str, Any]]:
    ids = ids or [f"q{i}" for i in range(n)]
    return [{"custom_id": cid, "model": NAME, "prompt": f"ask-{i}"} for i, cid in enumerate(ids)]


def echo(rec: RecordedRequest) -> str:
    """Each line answered with its own prompt's number, whatever the API's body."""
    found = re.search(r"ask-(\d+)", rec.body.decode())
    assert found is not None, rec.body
    return f"answer {found.group(1)}"


def results(path: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        assert rec["custom_id"] not in out, f"{rec['custom_id']} written twice"
        out[rec["custom_id"]] = rec
    return out


def text(rec: dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in rec["message"]["content"])


def creates(server: MockServer) -> list[RecordedRequest]:
    """The job-creating requests the server received."""
    return [r for r in server.requests if r.method == "POST" and (
        r.path.endswith(("/batches", ":batchGenerateContent")))]  # fmt: skip


def played(server: MockServer) -> list[RecordedRequest]:
    """The lines the server's script answered inside batch jobs."""
    return [r for r in server.requests if "x-mock-batch" in r.headers]


def run(server: MockServer, api: str, items: list[dict[str, Any]], out: Path, **kw: Any) -> Any:
    model = server.model(api, "m1", cost=kw.pop("cost", None))
    return mw.batch(items, out, models={NAME: model}, via="provider", **kw)


# --------------------------------------------------------------------------- the happy path


@pytest.mark.parametrize("api", APIS)
def test_submit_poll_and_write_every_line_with_its_custom_id(api: str, tmp_path: Path) -> None:
    # An id outside Anthropic's custom_id pattern travels as a key of its own.
    ids = ["q0", "q 1/é", "q2"]
    out = tmp_path / "out.jsonl"
    with MockServer([echo], repeat_last=True) as server:
        server.batches.polls = 2
        s = run(server, api, lines(3, ids), out)
        live = mw.complete_sync(server.model(api, "m1"), "ask-1")
    assert (s.ok, s.failed, s.jobs, s.complete) == (3, 0, 1, True)
    got = results(out)
    assert sorted(got) == sorted(ids)
    for i, cid in enumerate(ids):
        assert got[cid]["ok"] and text(got[cid]) == f"answer {i}" and got[cid]["attempts"] == 1
    # The line is what a live call would have produced: the same message content (a
    # Responses text block's signature names its response, which differs per answer).
    message = mw.from_json(json.dumps(got["q 1/é"]["message"]), mw.AssistantMessage)
    unsigned = [msgspec.structs.replace(b, signature=None) for b in message.content]
    assert unsigned == [msgspec.structs.replace(b, signature=None) for b in live.content]
    assert (message.api, message.stop_reason) == (api, live.stop_reason) == (api, "stop")
    # One job; its lines went without streaming; the job was polled until it ended.
    assert len(creates(server)) == 1 and len(played(server)) == 3
    for rec in played(server):
        assert rec.json().get("stream") in (None, False)
    job = server.batches.jobs[server.batches.created[0]]
    assert job.state == "completed" and job.polls_left < 0


def test_openai_lines_are_uploaded_as_a_batch_file_and_created_for_their_endpoint(
    tmp_path: Path,
) -> None:
    with MockServer([echo], repeat_last=True) as server:
        run(server, "openai-chat", lines(2), tmp_path / "out.jsonl")
    upload = next(r for r in server.requests if r.path == "/v1/files")
    assert upload.headers["content-type"].startswith("multipart/form-data; boundary=")
    assert b'name="purpose"\r\n\r\nbatch' in upload.body
    create = creates(server)[0].json()
    assert create["endpoint"] == "/v1/chat/completions" and create["completion_window"] == "24h"
    entries = [json.loads(x) for x in server.batches.files[create["input_file_id"]].splitlines()]
    assert [(e["custom_id"], e["method"], e["url"]) for e in entries] == [
        ("q0", "POST", "/v1/chat/completions"), ("q1", "POST", "/v1/chat/completions")]  # fmt: skip
    assert "stream" not in entries[0]["body"] and "stream_options" not in entries[0]["body"]


def test_the_openai_output_format_works_through_the_provider_path(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with MockServer([echo], repeat_last=True) as server:
        run(server, "openai-chat", lines(2), out, output_format="openai")
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert sorted(r["custom_id"] for r in rows) == ["q0", "q1"]
    assert {r["response"]["status_code"] for r in rows} == {200}


# --------------------------------------------------------------------------- price and cap

PRICED = mw.ModelCost(input=0.0, output=1.0)  # $1 per million output tokens


def answer_of(tokens: int) -> mw.AssistantMessage:
    return mw.AssistantMessage(content=[mw.TextContent(text="ok")], api="", provider="",
                               model="", usage=mw.Usage(output=tokens, total_tokens=tokens),
                               stop_reason="stop")  # fmt: skip


@pytest.mark.parametrize("api", APIS)
def test_each_line_costs_the_batch_price(api: str, tmp_path: Path) -> None:
    with MockServer([answer_of(500)], repeat_last=True) as server:
        s = run(server, api, lines(2), tmp_path / "out.jsonl", cost=PRICED)
        live = mw.complete_sync(server.model(api, "m1", cost=PRICED), "ask-0")
    got = results(tmp_path / "out.jsonl")
    assert live.usage.cost.total == pytest.approx(0.0005)
    assert [r["cost"] for r in got.values()] == [pytest.approx(0.00025)] * 2
    assert s.cost == pytest.approx(0.0005)


def test_max_cost_holds_before_submission_at_the_batch_price(tmp_path: Path) -> None:
    items = [{**x, "options": {"max_tokens": 1000}} for x in lines(10)]
    with MockServer([answer_of(500)], repeat_last=True) as server:
        # Each line may cost $0.001 live, $0.0005 batched: the cap takes three.
        s = run(server, "anthropic-messages", items, tmp_path / "out.jsonl", cost=PRICED,
                max_cost=0.0016)  # fmt: skip
    assert (s.ok, s.skipped_cost, s.complete) == (3, 7, False)
    assert len(creates(server)) == 1
    assert len(creates(server)[0].json()["requests"]) == 3


def test_a_cap_below_one_line_submits_nothing(tmp_path: Path) -> None:
    items = [{**x, "options": {"max_tokens": 1000}} for x in lines(4)]
    with MockServer([answer_of(500)], repeat_last=True) as server:
        s = run(server, "openai-chat", items, tmp_path / "out.jsonl", cost=PRICED, max_cost=0.0001)
    assert (s.ok, s.skipped_cost, s.jobs) == (0, 4, 0)
    assert server.requests == []  # not even the upload


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize("api", APIS)
def test_partial_failure_fails_its_lines_and_retries_the_retryable_in_a_new_job(
    api: str, tmp_path: Path
) -> None:
    script = ["one", error_reply(400, "bad line"), error_reply(500, "flaky"), "again"]
    out = tmp_path / "out.jsonl"
    with MockServer(script) as server:
        s = run(server, api, lines(3), out)
    got = results(out)
    assert (s.ok, s.failed, s.errors, s.jobs) == (2, 1, {"invalid_request": 1}, 2)
    assert text(got["q0"]) == "one" and got["q0"]["attempts"] == 1
    assert got["q1"]["error"]["kind"] == "invalid_request" and got["q1"]["error"]["status"] == 400
    assert text(got["q2"]) == "again" and got["q2"]["attempts"] == 2
    assert len(creates(server)) == 2 and len(played(server)) == 4


@pytest.mark.parametrize("api", APIS)
def test_expired_lines_are_sent_again_in_a_new_job(api: str, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with MockServer([echo], repeat_last=True) as server:
        server.batches.expire_next(answered=1)
        s = run(server, api, lines(3), out)
    first, second = (server.batches.jobs[j] for j in server.batches.created)
    assert first.state == "expired" and second.state == "completed"
    got = results(out)
    assert (s.ok, s.jobs) == (3, 2) and all(text(got[f"q{i}"]) == f"answer {i}" for i in range(3))
    # Gemini's expired job answers nothing; the others answered their first line.
    resent = 3 if api == "google-generative-ai" else 2
    assert len(second.lines) == resent
    attempts = [got[f"q{i}"]["attempts"] for i in range(3)]
    assert attempts == ([2, 2, 2] if resent == 3 else [1, 2, 2])


@pytest.mark.parametrize("api", APIS)
def test_a_line_that_expires_on_its_last_attempt_is_written_as_a_timeout(
    api: str, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    with MockServer([echo], repeat_last=True) as server:
        server.batches.expire_next(answered=0)
        s = run(server, api, lines(2), out, max_attempts=1)
    got = results(out)
    assert (s.ok, s.failed, s.errors, s.jobs) == (0, 2, {"timeout": 2}, 1)
    assert "expired" in got["q0"]["error"]["message"]


# --------------------------------------------------------------------------- cancel


class Stop(Exception):
    """Raised by the sleep hook: the run dies after its jobs were submitted."""


async def stop(seconds: float) -> None:
    raise Stop


@pytest.mark.parametrize("api", APIS)
def test_cancel_then_the_next_runs_write_what_is_left(api: str, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    items = lines(2)
    with MockServer([echo], repeat_last=True) as server:
        models = {NAME: server.model(api, "m1")}
        with knobs(sleep=stop), pytest.raises(Stop):
            mw.batch(items, out, models=models, via="provider")
        job_id = server.batches.created[0]
        assert cancel_jobs(items, out, models=models) == [_provider_id(api, job_id)]
        cancelled = mw.batch(items, out, models=models, via="provider")
        assert (cancelled.ok, cancelled.skipped_cancelled, cancelled.complete) == (0, 2, False)
        assert server.batches.jobs[job_id].state == "cancelled" and played(server) == []
        assert cancel_jobs(items, out, models=models) == []  # nothing left running
        again = mw.batch(items, out, models=models, via="provider")
    assert (again.ok, again.jobs, again.complete) == (2, 1, True)
    assert len(creates(server)) == 2 and sorted(results(out)) == ["q0", "q1"]


def _provider_id(api: str, mock_id: str) -> str:
    return f"batches/{mock_id}" if api == "google-generative-ai" else mock_id


# --------------------------------------------------------------------------- via, progress


def test_auto_uses_the_batch_api_only_when_the_deadline_allows(tmp_path: Path) -> None:
    with MockServer([echo], repeat_last=True) as server:
        models = {NAME: server.model("anthropic-messages", "m1")}
        mw.batch(lines(1), tmp_path / "a.jsonl", models=models, via="auto")
        assert len(creates(server)) == 1
        mw.batch(lines(1), tmp_path / "b.jsonl", models=models, via="auto", run_timeout=3600)
        assert len(creates(server)) == 1 and server.requests[-1].path == "/v1/messages"
        mw.batch(lines(1), tmp_path / "c.jsonl", models=models, via="auto", run_timeout=86400)
        assert len(creates(server)) == 2
        # A provider without a batch API here: live, whatever the deadline.
        ollama = {NAME: server.model("ollama-chat", "m1")}
        mw.batch(lines(1), tmp_path / "d.jsonl", models=ollama, via="auto")
        assert len(creates(server)) == 2 and server.requests[-1].path == "/api/chat"


def test_via_provider_refuses_what_it_cannot_send_before_anything_is_sent(tmp_path: Path) -> None:
    with MockServer([echo], repeat_last=True) as server:
        ollama = {NAME: server.model("ollama-chat", "m1")}
        with pytest.raises(mw.ConfigurationError, match="has no provider batch API"):
            mw.batch(lines(1), tmp_path / "o.jsonl", models=ollama, via="provider")
        chat = {NAME: server.model("openai-chat", "m1")}
        with pytest.raises(mw.ConfigurationError, match='agent_root= needs via="live"'):
            mw.batch(lines(1), tmp_path / "o.jsonl", models=chat, via="provider",
                     agent_root=str(tmp_path))  # fmt: skip
        with pytest.raises(mw.ConfigurationError, match="via must be"):
            mw.batch(lines(1), tmp_path / "o.jsonl", models=chat, via="later")  # type: ignore[arg-type]
    assert server.requests == []


def test_progress_reports_job_states_and_counts(tmp_path: Path) -> None:
    sink = io.StringIO()
    with MockServer([echo], repeat_last=True) as server:
        server.batches.polls = 2
        run(server, "openai-chat", lines(3), tmp_path / "out.jsonl",
            progress=JsonProgress(sink, interval=0))  # fmt: skip
    reports = [json.loads(x) for x in sink.getvalue().splitlines()]
    states = [r["jobs"] for r in reports if r["type"] == "progress" and r["jobs"]]
    assert {"in_progress": 1} in states
    assert any(
        r.get("job_counts", {}).get("total") == 3 for r in reports if r["type"] == "progress"
    )
    assert reports[-1]["type"] == "summary" and reports[-1]["jobs"] == 1 and reports[-1]["ok"] == 3


def test_the_ledger_names_each_job_before_and_after_its_creation(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with MockServer([echo], repeat_last=True) as server:
        run(server, "anthropic-messages", lines(2), out)
    records = [json.loads(x) for x in Path(f"{out}.jobs").read_text().splitlines()]
    assert [r["t"] for r in records] == ["submit", "created", "done"]
    assert records[0]["keys"] == {"q0": "q0", "q1": "q1"}
    assert records[1]["id"] == server.batches.created[0] and records[2]["state"] == "ended"


def test_the_plain_summary_names_provider_jobs_and_cancelled_lines(tmp_path: Path) -> None:
    from modelwire.batching._progress import format_summary
    from modelwire.batching._summary import summary_dict

    out = tmp_path / "out.jsonl"
    with MockServer([echo], repeat_last=True) as server:
        s = run(server, "openai-responses", lines(2), out)
    said = format_summary(summary_dict(s))
    assert "2 done" in said and "1 provider batch jobs" in said and "cancelled" not in said
    cut = msgspec.structs.replace(s, ok=0, skipped_cancelled=2)
    assert "2 left by a cancelled provider job" in format_summary(summary_dict(cut))


def test_azure_openai_batches_under_the_resource_root_with_the_deployment_as_model(
    tmp_path: Path,
) -> None:
    with MockServer([echo], repeat_last=True) as server:
        deploy = mw.Model(id="my-deploy", api="openai-chat", provider="azure-openai",
                          base_url=server.origin + "/openai?api-version=2024-10-21")  # fmt: skip
        s = mw.batch(lines(2), tmp_path / "out.jsonl", models={NAME: deploy}, via="provider",
                     api_key="azure-key")  # fmt: skip
    assert (s.ok, s.jobs) == (2, 1)
    jobs = [r for r in server.requests if "x-mock-batch" not in r.headers]
    assert [r.path.split("?")[0] for r in jobs[:2]] == ["/openai/files", "/openai/batches"]
    assert all(r.path.endswith("?api-version=2024-10-21") for r in jobs)
    assert all(r.headers["api-key"] == "azure-key" for r in jobs)
    create = jobs[1].json()
    assert create["endpoint"] == "/chat/completions"
    entry = json.loads(server.batches.files[create["input_file_id"]].splitlines()[0])
    assert entry["url"] == "/chat/completions" and entry["body"]["model"] == "my-deploy"
    assert text(results(tmp_path / "out.jsonl")["q1"]) == "answer 1"


@pytest.mark.parametrize("api", ["openai-chat", "google-generative-ai"])
def test_a_job_that_fails_as_a_whole_writes_its_lines_with_the_providers_reason(
    api: str, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    with MockServer([echo], repeat_last=True) as server:
        server.batches.fail_next("line 2 has no body")
        s = run(server, api, lines(2), out)
    got = results(out)
    assert (s.ok, s.failed, s.errors, s.jobs) == (0, 2, {"invalid_request": 2}, 1)
    assert "line 2 has no body" in got["q0"]["error"]["message"] and played(server) == []


def test_jobs_hold_one_model_each_and_at_most_the_providers_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from modelwire._apis import batch_facet

    facet = batch_facet("anthropic-messages")
    assert facet is not None
    monkeypatch.setattr(facet, "max_lines", 2)
    items = [*lines(5), {"custom_id": "other", "model": "mock/m2", "prompt": "ask-9"}]
    with MockServer([echo], repeat_last=True) as server:
        models = {NAME: server.model("anthropic-messages", "m1"),
                  "mock/m2": server.model("anthropic-messages", "m2")}  # fmt: skip
        s = mw.batch(items, tmp_path / "out.jsonl", models=models, via="provider")
    assert (s.ok, s.jobs) == (6, 4)
    sizes = [[r["params"]["model"] for r in c.json()["requests"]] for c in creates(server)]
    assert sizes == [["m1", "m1"], ["m1", "m1"], ["m1"], ["m2"]]
    assert text(results(tmp_path / "out.jsonl")["other"]) == "answer 9"


def test_an_azure_job_whose_create_answer_was_lost_is_found_with_its_api_version(
    tmp_path: Path,
) -> None:
    with MockServer([echo], repeat_last=True) as server:
        server.batches.lose_next_create()
        deploy = mw.Model(id="my-deploy", api="openai-chat", provider="azure-openai",
                          base_url=server.origin + "/openai?api-version=2024-10-21")  # fmt: skip
        s = mw.batch(lines(2), tmp_path / "out.jsonl", models={NAME: deploy}, via="provider",
                     api_key="azure-key")  # fmt: skip
    assert (s.ok, s.jobs) == (2, 1)
    made = [
        r for r in server.requests if r.method == "POST" and r.path.startswith("/openai/batches?")
    ]
    assert len(made) == 1  # found by its name, not created twice
    listed = [r for r in server.requests if r.method == "GET" and "limit=100" in r.path]
    assert [r.path for r in listed] == ["/openai/batches?api-version=2024-10-21&limit=100"]


def test_a_live_run_is_refused_while_provider_jobs_of_its_output_are_open(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with MockServer([echo], repeat_last=True) as server:
        models = {NAME: server.model("openai-chat", "m1")}
        with knobs(sleep=stop), pytest.raises(Stop):
            mw.batch(lines(2), out, models=models, via="provider")
        sent = len(server.requests)
        with pytest.raises(mw.ConfigurationError, match=r'provider batch jobs not yet written.*via="provider"'):  # fmt: skip
            mw.batch(lines(2), out, models=models)
        assert len(server.requests) == sent  # nothing sent live
        mw.batch(lines(2), out, models=models, via="provider")  # collected
        assert mw.batch(lines(2), out, models=models).skipped_done == 2  # live is fine now
