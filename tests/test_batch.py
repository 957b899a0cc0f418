"""mw.batch / `modelwire batch`: validation, exactly-once output, resume after
kill -9, retries, shared Retry-After pauses, rate limits, the cost cap, progress."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import modelwire as mw
from modelwire._call._limits import Pacer
from modelwire.batching import Limits
from modelwire.batching._api import knobs
from modelwire.batching._limits import ProviderLimiter
from modelwire.batching._output import OutputLog, read_done
from modelwire.testing import MockServer, Reply, error_reply, tool_call

ROOT = Path(__file__).resolve().parents[1]


def write_jsonl(path: Path, items: list[Any]) -> Path:
    path.write_text("".join((i if isinstance(i, str) else json.dumps(i)) + "\n" for i in items))
    return path


def results(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def prompts(n: int, model: str = "mock/m") -> list[dict[str, Any]]:
    return [{"custom_id": f"r{i}", "model": model, "prompt": f"q{i}"} for i in range(n)]


def echo(rec: Any) -> str:
    """A reply naming the prompt, so each result can be checked against its id."""
    return "answer to " + str(rec.json()["messages"][-1]["content"])


# --------------------------------------------------------------------------- input


def test_bad_lines_are_reported_with_line_numbers_and_nothing_is_sent(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [
        {"custom_id": "a", "model": "mock/m", "prompt": "hi"},
        "{not json",
        {"custom_id": "a", "model": "mock/m", "prompt": "again"},
        {"custom_id": "c", "model": "nosuchprovider/x", "prompt": "hi"},
        {"custom_id": "d", "model": "mock/m"},
        {"custom_id": "e", "model": "mock/m", "prompt": "hi", "options": {"max_tokens": -1}},
    ])  # fmt: skip
    with MockServer(["ok"], repeat_last=True) as srv:
        models = {"mock/m": srv.model()}
        with pytest.raises(mw.ConfigurationError) as info:
            mw.batch(src, tmp_path / "out.jsonl", models=models)
        assert srv.requests == []
    text = str(info.value)
    assert "5 invalid line(s), nothing was sent" in text
    assert "line 2: invalid JSON" in text
    assert "line 3: duplicate custom_id 'a' (first on line 1)" in text
    assert "line 4: unknown model 'nosuchprovider/x'" in text
    assert "line 5: give a context" in text
    assert "line 6: max_tokens must be a positive integer" in text
    assert "--skip-invalid" in text
    assert not (tmp_path / "out.jsonl").exists() or results(tmp_path / "out.jsonl") == []


def test_skip_invalid_runs_the_valid_lines_and_lists_the_others(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [*prompts(2), "[1, 2]"])
    out = tmp_path / "out.jsonl"
    with MockServer([echo], repeat_last=True) as srv:
        summary = mw.batch(src, out, models={"mock/m": srv.model()}, skip_invalid=True)
        assert len(srv.requests) == 2
    assert [(p.line, p.message) for p in summary.invalid] == [(3, "a line must be a JSON object")]
    assert summary.skipped_invalid == 1 and summary.ok == 2
    assert sorted(r["custom_id"] for r in results(out)) == ["r0", "r1"]


def test_openai_batch_api_lines_run_as_they_are(tmp_path: Path) -> None:
    line = {
        "custom_id": "req-1", "method": "POST", "url": "/v1/chat/completions",
        "body": {
            "model": "gpt-4o-mini", "max_completion_tokens": 50, "top_p": 0.5,
            "tool_choice": {"type": "function", "function": {"name": "read"}},
            "tools": [{"type": "function", "function": {"name": "read", "description": "Read a file",
                       "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}],
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "Read a.txt"}]},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
                 "function": {"name": "read", "arguments": "{\"path\": \"a.txt\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
            ],
        },
    }  # fmt: skip
    src = write_jsonl(tmp_path / "in.jsonl", [line])
    out = tmp_path / "out.jsonl"
    with MockServer([tool_call("read", {"path": "b.txt"})]) as srv:
        summary = mw.batch(src, out, base_url=srv.base_url, api_key="sk-test")
        sent = srv.last_request.json()
    assert summary.ok == 1
    assert sent["model"] == "gpt-4o-mini"
    assert sent["top_p"] == 0.5
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "read"}}
    assert sent["tools"][0]["function"]["name"] == "read"
    roles = [m["role"] for m in sent["messages"]]
    assert roles == ["system", "user", "assistant", "tool"]
    assert sent["messages"][2]["tool_calls"][0]["function"]["arguments"] == '{"path": "a.txt"}'
    assert sent["messages"][3]["tool_call_id"] == "call_1"
    [rec] = results(out)
    assert rec["custom_id"] == "req-1" and rec["stop_reason"] == "tool_use"
    assert rec["message"]["content"][0]["arguments"] == {"path": "b.txt"}
    assert rec["model"] == "openai/gpt-4o-mini"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"custom_id": "x", "url": "/v1/embeddings", "body": {"model": "m", "input": "a"}},
         "url must be /v1/chat/completions"),
        ({"custom_id": "x", "url": "/v1/chat/completions", "body": {"model": "gpt-4o-mini",
          "messages": [{"role": "tool", "tool_call_id": "c9", "content": "x"}]}},
         "body.messages[0].tool_call_id 'c9' answers no earlier tool call"),
        ({"custom_id": "x", "url": "/v1/chat/completions", "body": {"model": "gpt-4o-mini",
          "messages": [{"role": "user", "content": [{"type": "image_url",
                        "image_url": {"url": "https://example.com/a.png"}}]}]}},
         "body.messages[0].content[0].image_url.url must be a data:"),
        ({"custom_id": "x", "model": "mock/m", "context": {"messages": [{"role": "user", "content": 5}]}},
         "invalid context"),
        ({"custom_id": 7, "model": "mock/m", "prompt": "x"}, "custom_id must be a non-empty string"),
        ({"custom_id": "x", "model": "mock/m", "prompt": "x", "optons": {}}, "unknown keys: optons"),
    ],
)  # fmt: skip
def test_each_bad_line_says_what_to_fix(tmp_path: Path, line: Any, message: str) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [line])
    with pytest.raises(mw.ConfigurationError, match="line 1: ") as info:
        mw.batch(src, tmp_path / "o.jsonl", base_url="http://127.0.0.1:9/v1", api_key="k")
    assert message in str(info.value)


# --------------------------------------------------------------------------- output


def test_one_line_per_id_with_message_usage_cost_attempts_latency(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", prompts(20))
    out = tmp_path / "out.jsonl"
    cost = mw.ModelCost(input=1.0, output=2.0)
    with MockServer([echo], repeat_last=True) as srv:
        summary = mw.batch(src, out, models={"mock/m": srv.model(cost=cost)}, concurrency=5)
        assert len(srv.requests) == 20
    recs = results(out)
    assert sorted(r["custom_id"] for r in recs) == sorted(f"r{i}" for i in range(20))
    for r in recs:
        msg = mw.from_json(json.dumps(r["message"]), mw.AssistantMessage)
        assert msg.content[0].text == f"answer to q{r['custom_id'][1:]}"  # type: ignore[union-attr]
        assert r["ok"] is True and r["stop_reason"] == "stop" and r["attempts"] == 1
        assert r["latency_ms"] > 0 and r["usage"]["total_tokens"] >= 0
        assert r["cost"] == msg.usage.cost.total
    assert summary.ok == 20 and summary.failed == 0 and summary.requests == 20


def test_rerun_resumes_skipping_ids_already_in_the_output(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", prompts(6))
    out = tmp_path / "out.jsonl"
    with MockServer([echo], repeat_last=True) as srv:
        model = {"mock/m": srv.model()}
        mw.batch(write_jsonl(tmp_path / "first.jsonl", prompts(3)), out, models=model)
        # A crash mid-write at worst leaves a torn last line: it is cut and redone.
        with open(out, "ab") as f:
            f.write(b'{"custom_id":"r3","ok":tr')
        before = len(srv.requests)
        summary = mw.batch(src, out, models=model)
        assert len(srv.requests) - before == 3
        again = mw.batch(src, out, models=model)
        assert len(srv.requests) - before == 3  # nothing left to do
    assert summary.skipped_done == 3 and summary.ok == 3
    assert again.skipped_done == 6 and again.ok == 0
    ids = [r["custom_id"] for r in results(out)]
    assert sorted(ids) == [f"r{i}" for i in range(6)]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_file_cut_at_any_byte_resumes_with_exactly_the_whole_lines(data: Any) -> None:
    import tempfile

    lines = [json.dumps({"custom_id": f"id{i}", "ok": i % 2 == 0, "x": "é" * i}) + "\n" for i in range(5)]  # fmt: skip
    blob = "".join(lines).encode()
    cut = data.draw(st.integers(0, len(blob)))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "out.jsonl")
        Path(path).write_bytes(blob[:cut])
        whole = blob[:cut].count(b"\n")
        with OutputLog(path) as log:
            assert list(log.done) == [f"id{i}" for i in range(whole)]
            assert log.write({"custom_id": "new", "ok": True})
            assert not log.write({"custom_id": "new", "ok": True})
        done, _ = read_done(path)
        assert list(done) == [*(f"id{i}" for i in range(whole)), "new"]
        assert done.get("id0", True) is True and done.get("id1", False) is False


def test_an_output_file_that_is_not_ours_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text('{"custom_id": "a", "ok": true}\nhello\n')
    with pytest.raises(mw.ConfigurationError, match="line 2 is not a batch result"):
        OutputLog(str(out))


# --------------------------------------------------------------------------- faults


def test_retryable_errors_are_retried_and_others_recorded_at_once(tmp_path: Path) -> None:
    calls: dict[str, int] = {}
    lock = threading.Lock()

    def reply(rec: Any) -> Any:
        prompt = rec.json()["messages"][-1]["content"]
        with lock:
            n = calls[prompt] = calls.get(prompt, 0) + 1
        if prompt == "5xx-then-ok":
            return error_reply(502, "bad gateway") if n == 1 else "fine"
        if prompt == "cut-then-ok":
            return Reply(message="a long answer that is cut", piece_chars=2, cut_after=40) if n == 1 else "fine"  # fmt: skip
        if prompt == "inband-then-ok":
            body = b'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n'
            return Reply(body=body) if n == 1 else "fine"
        if prompt == "always-500":
            return error_reply(500, "down")
        if prompt == "auth":
            return error_reply(401, "bad key")
        if prompt == "bad-request":
            return error_reply(400, "no such parameter")
        raise AssertionError(prompt)

    names = ["5xx-then-ok", "cut-then-ok", "inband-then-ok", "always-500", "auth", "bad-request"]
    src = write_jsonl(tmp_path / "in.jsonl", [{"custom_id": n, "model": "mock/m", "prompt": n} for n in names])  # fmt: skip
    out = tmp_path / "out.jsonl"
    with MockServer([reply], repeat_last=True) as srv, knobs(backoff_base=0.01):
        summary = mw.batch(src, out, models={"mock/m": srv.model()}, max_attempts=3)
    by = {r["custom_id"]: r for r in results(out)}
    assert len(by) == 6 == len(results(out))
    for n in ("5xx-then-ok", "cut-then-ok", "inband-then-ok"):
        assert by[n]["ok"] and by[n]["attempts"] == 2 and calls[n] == 2, n
    assert by["always-500"]["error"]["kind"] == "server" and by["always-500"]["attempts"] == 3
    assert calls["always-500"] == 3
    assert by["auth"]["error"] == {"kind": "authentication", "message": by["auth"]["error"]["message"], "status": 401}  # fmt: skip
    assert calls["auth"] == 1 and by["auth"]["attempts"] == 1
    assert by["bad-request"]["error"]["kind"] == "invalid_request" and calls["bad-request"] == 1
    assert summary.errors == {"authentication": 1, "invalid_request": 1, "server": 1}
    assert summary.requests == sum(calls.values()) == 11


def test_the_retry_decision_is_each_errors_retryable(tmp_path: Path) -> None:
    calls: dict[str, int] = {}
    lock = threading.Lock()

    def reply(rec: Any) -> Any:
        prompt = rec.json()["messages"][-1]["content"]
        with lock:
            n = calls[prompt] = calls.get(prompt, 0) + 1
        code = "insufficient_quota" if prompt == "quota" else "rate_limit_exceeded"
        body = {"error": {"message": "no", "type": code, "code": code}}
        if prompt == "quota" or n == 1:
            return Reply(
                status=429, content_type="application/json", body=json.dumps(body).encode()
            )
        return "fine"

    src = write_jsonl(tmp_path / "in.jsonl", [{"custom_id": n, "model": "mock/m", "prompt": n}
                                               for n in ("quota", "rate")])  # fmt: skip
    out = tmp_path / "out.jsonl"
    with MockServer([reply], repeat_last=True) as srv, knobs(backoff_base=0.01):
        mw.batch(src, out, models={"mock/m": srv.model()}, max_attempts=3)
    by = {r["custom_id"]: r for r in results(out)}
    # Both are rate_limit; only the one out of quota is recorded at once.
    assert by["quota"]["error"]["kind"] == "rate_limit" and calls["quota"] == 1
    assert by["rate"]["ok"] and calls["rate"] == 2


def test_a_stall_times_out_and_is_retried(tmp_path: Path) -> None:
    replies = [Reply(message="stalled reply", stall_after=10, stall_seconds=5), "fine"]
    src = write_jsonl(tmp_path / "in.jsonl", prompts(1))
    out = tmp_path / "out.jsonl"
    with MockServer(replies, repeat_last=True) as srv:
        with knobs(backoff_base=0.01):
            mw.batch(src, out, models={"mock/m": srv.model()}, timeout=0.3)
        assert len(srv.requests) == 2
    [rec] = results(out)
    assert rec["ok"] and rec["attempts"] == 2


def test_retry_after_pauses_the_provider_for_every_worker(tmp_path: Path) -> None:
    arrivals: list[tuple[float, str]] = []
    lock = threading.Lock()
    first = threading.Event()

    def reply(rec: Any) -> Any:
        prompt = rec.json()["messages"][-1]["content"]
        with lock:
            arrivals.append((time.monotonic(), prompt))
        if prompt == "q0" and not first.is_set():
            first.set()
            return error_reply(429, "slow down", headers={"retry-after": "1"})
        return Reply(message="ok", delay=0.1 if prompt == "q1" else 0.01)

    src = write_jsonl(tmp_path / "in.jsonl", prompts(6))
    out = tmp_path / "out.jsonl"
    with MockServer([reply], repeat_last=True) as srv:
        summary = mw.batch(src, out, models={"mock/m": srv.model()}, concurrency=2)
    # q0 and q1 go out together (either first); q0 is answered 429 at once while
    # q1 streams slowly. Every request sent after the 429 waited for the pause,
    # whichever worker sent it (q0's retry and q2..q5).
    t429 = next(t for t, p in arrivals if p == "q0")
    later = [t - t429 for t, p in arrivals if t > t429 and p != "q1"]
    assert len(later) == 5 and min(later) >= 0.95, arrivals
    assert summary.ok == 6 and summary.requests == 7
    assert {r["custom_id"]: r["attempts"] for r in results(out)}["r0"] == 2


def test_requests_per_minute_paces_the_provider(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", prompts(30))
    with MockServer(["ok"], repeat_last=True) as srv:
        t0 = time.monotonic()
        mw.batch(src, tmp_path / "o.jsonl", models={"mock/m": srv.model()}, concurrency=30,
                 limits=Limits(rpm=1200))  # fmt: skip
        took = time.monotonic() - t0
        assert len(srv.requests) == 30
    # 20 per second, a one-second bucket: the last 10 wait about half a second.
    assert took >= 0.45


def test_tokens_per_minute_paces_the_provider(tmp_path: Path) -> None:
    from modelwire.batching import load_requests, model_resolver

    src = write_jsonl(tmp_path / "in.jsonl", prompts(20))
    with MockServer(["ok"], repeat_last=True) as srv:
        models = {"mock/m": srv.model()}
        reqs, _ = load_requests(src, model_resolver(models))
        tokens = sum(r.estimated_input_tokens for r in reqs)
        t0 = time.monotonic()
        mw.batch(src, tmp_path / "o.jsonl", models=models, concurrency=20,
                 limits={"mock": Limits(tpm=12_000)})  # fmt: skip
        took = time.monotonic() - t0
        assert len(srv.requests) == 20
    # 200 tokens/s after the first second's worth: the estimate of every prompt is paid.
    assert took >= 0.9 * (tokens - 200) / 200 > 0.5, (took, tokens)


def test_token_bucket_takes_variable_amounts_and_settles() -> None:
    # The batch runner paces with the same Pacer as mw.stream (one implementation).
    clock = FakeClock()
    pacer = Pacer(tpm=6000, clock=clock)  # 100 tokens/s, starting with one second's worth
    assert pacer.reserve(100) == 0.0
    assert pacer.reserve(20) == pytest.approx(0.2)
    clock.now += 0.2
    pacer.settle(20, 50)  # the response used 30 more than estimated: a debt
    assert pacer.tokens is not None and pacer.tokens.level < 0
    assert pacer.reserve(10) == pytest.approx(0.4)  # waits for the debt and its own 10
    with pytest.raises(mw.ConfigurationError, match="rpm must be a positive finite number"):
        Limits(rpm=0)


@pytest.mark.anyio
async def test_a_pause_holds_every_worker_of_the_provider() -> None:
    limiter = ProviderLimiter(Limits(tpm=6000))
    limiter.pause(0.2)
    t0 = time.monotonic()
    await limiter.acquire(10)
    assert time.monotonic() - t0 >= 0.19
    assert limiter.pauses == 1


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_max_cost_stops_starting_requests_and_a_rerun_goes_on(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [
        {"custom_id": f"r{i}", "model": "mock/m", "prompt": "x", "options": {"max_tokens": 1000}}
        for i in range(10)
    ])  # fmt: skip
    out = tmp_path / "out.jsonl"
    usage_reply = mw.AssistantMessage(
        content=(mw.TextContent(text="ok"),), api="", provider="", model="", stop_reason="stop",
        usage=mw.Usage(input=10, output=500, total_tokens=510),
    )  # fmt: skip
    cost = mw.ModelCost(input=0.0, output=1.0)  # $1 per million output tokens
    with MockServer([usage_reply], repeat_last=True) as srv:
        models = {"mock/m": srv.model(cost=cost)}
        # Each request may cost up to 1000 output tokens = $0.001; it really costs $0.0005.
        s1 = mw.batch(src, out, models=models, concurrency=1, max_cost=0.0035)
        assert len(srv.requests) == s1.ok
        s2 = mw.batch(src, out, models=models, concurrency=1, max_cost=1.0)
    # Sequential: spent + next estimate <= cap lets 6 start ($0.0025 + $0.001 = $0.0035).
    assert s1.ok == 6 and s1.skipped_cost == 4 and s1.cost == pytest.approx(0.003)
    assert s1.cost <= 0.0035 and not s1.complete
    assert s2.ok == 4 and s2.skipped_done == 6 and s2.complete
    assert sorted(r["custom_id"] for r in results(out)) == sorted(f"r{i}" for i in range(10))


def test_agent_mode_runs_the_agent_with_read_only_tools(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("the secret word is lime")

    def reply(rec: Any) -> Any:
        msgs = rec.json()["messages"]
        if msgs[-1]["role"] == "tool":
            return "It says: " + msgs[-1]["content"]
        return tool_call("read", {"path": "a.txt"})

    src = write_jsonl(tmp_path / "in.jsonl", [{"custom_id": "a", "model": "mock/m", "prompt": "read a.txt"}])  # fmt: skip
    out = tmp_path / "out.jsonl"
    with MockServer([reply], repeat_last=True) as srv:
        mw.batch(src, out, models={"mock/m": srv.model()}, agent_root=tmp_path / "docs")
        assert len(srv.requests) == 2
    [rec] = results(out)
    assert rec["ok"] and rec["turns"] == 2
    assert "lime" in rec["message"]["content"][0]["text"]
    assert [m["role"] for m in rec["messages"]] == ["user", "assistant", "tool_result", "assistant"]


def test_an_agent_lines_turns_together_keep_its_deadline(tmp_path: Path) -> None:
    # Each turn answers well within the line's deadline, but the model asks for the
    # tool again and again: the turns together must stop at the deadline, not run on
    # to max_turns (8 requests here).
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("again")

    def reply(rec: Any) -> Any:
        time.sleep(0.6)  # the model thinking: the whole answer comes after it
        return tool_call("read", {"path": "a.txt"})

    src = write_jsonl(tmp_path / "in.jsonl", [{"custom_id": "a", "model": "mock/m", "prompt": "go"}])  # fmt: skip
    out = tmp_path / "out.jsonl"
    with MockServer([reply], repeat_last=True) as srv:
        mw.batch(src, out, models={"mock/m": srv.model()}, agent_root=tmp_path / "docs",
                 line_timeout=1.5, max_attempts=1)  # fmt: skip
        sent = len(srv.requests)
    [rec] = results(out)
    assert not rec["ok"] and rec["error"]["kind"] == "timeout", rec
    assert "total timeout" in rec["error"]["message"]
    assert 1 <= sent <= 3, (sent, rec)


def test_mw_batch_is_a_plain_function_whatever_was_imported_first(tmp_path: Path) -> None:
    # In a fresh interpreter, both import orders: mw.batch is the function and
    # modelwire.batching the package (no module doubling as a callable).
    code = (
        "import importlib, inspect, sys, types\n"
        "order = sys.argv[1].split(',')\n"
        "for name in order: importlib.import_module(name)\n"
        "import modelwire as mw, modelwire.batching as pkg\n"
        "assert inspect.isfunction(mw.batch) and mw.batch is pkg.batch, mw.batch\n"
        "assert type(pkg) is types.ModuleType and not callable(pkg)\n"
        "assert inspect.signature(mw.batch).parameters['concurrency'].annotation == 'int'\n"
        "try:\n"
        "    importlib.import_module('modelwire.batch')\n"
        "except ModuleNotFoundError:\n"
        "    print('ok')\n"
    )
    for order in ("modelwire,modelwire.batching", "modelwire.batching,modelwire"):
        done = subprocess.run([sys.executable, "-c", code, order], capture_output=True,
                              text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})  # fmt: skip
        assert done.returncode == 0 and done.stdout.strip() == "ok", (order, done.stderr)
    src = write_jsonl(tmp_path / "in.jsonl", prompts(1))
    with MockServer(["ok"]) as srv:
        assert mw.batch(src, tmp_path / "o.jsonl", models={"mock/m": srv.model()}).ok == 1


def test_test_only_knobs_are_not_in_the_public_signatures() -> None:
    import inspect

    from modelwire.batching import batch, batch_async

    for fn in (batch, batch_async):
        params = inspect.signature(fn).parameters
        assert not [p for p in params if p.startswith("_")], fn
        assert all(p.kind is not p.VAR_KEYWORD for p in params.values()), fn
    with pytest.raises(TypeError, match="_backoff_base"):
        mw.batch([], "unused.jsonl", _backoff_base=0.01)  # type: ignore[call-arg]


def test_the_names_docs_batch_md_documents_are_importable_as_written() -> None:
    import importlib

    text = (ROOT / "docs" / "batch.md").read_text(encoding="utf-8")
    dotted = set(re.findall(r"\b(mw|modelwire)\.((?:batching\.)?[A-Za-z_]\w*)\b", text))
    names = {f"{'modelwire' if root == 'mw' else root}.{rest}" for root, rest in dotted}
    batching_names = {n for n in names if n.startswith("modelwire.batching.")}
    assert {f"modelwire.batching.{n}" for n in
            ("Limits", "JsonProgress", "RichProgress", "batch_async", "BatchSummary")} <= batching_names  # fmt: skip
    assert "modelwire.batch" in names  # mw.batch, the function
    for name in sorted(names):
        module, _, attr = name.rpartition(".")
        try:
            found = getattr(importlib.import_module(module), attr)
        except AttributeError:
            found = importlib.import_module(name)  # a module named as written (mw.testing)
        assert found is not None, name


# --------------------------------------------------------------------------- CLI


def _cli(*args: str, **kw: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.Popen([sys.executable, "-m", "modelwire", "batch", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)  # fmt: skip


def test_cli_json_progress_and_summary(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", prompts(8))
    out = tmp_path / "out.jsonl"
    with MockServer([echo, error_reply(401, "no")] * 4) as srv:
        p = _cli(str(src), "-o", str(out), "--base-url", srv.base_url, "--concurrency", "1", "--json")  # fmt: skip
        stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == 1, stderr  # some failed for good
    lines = [json.loads(x) for x in stdout.splitlines()]
    assert {x["type"] for x in lines[:-1]} == {"progress"}
    last_progress, summary = lines[-2], lines[-1]
    assert last_progress["done"] == 8 and last_progress["total"] == 8
    assert last_progress["errors"] == {"authentication": 4}
    assert {"requests_per_s", "tokens_per_s", "cost", "eta_s"} <= set(last_progress)
    assert summary["type"] == "summary"
    assert summary["ok"] == 4 and summary["failed"] == 4 and summary["requests"] == 8
    assert summary["errors"] == {"authentication": 4}
    assert len(results(out)) == 8


def test_cli_invalid_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", ["{oops"])
    p = _cli(str(src), "-o", str(tmp_path / "o.jsonl"), "--base-url", "http://127.0.0.1:9/v1")
    _, stderr = p.communicate(timeout=60)
    assert p.returncode == 2
    assert stderr.startswith("modelwire: error [configuration]: ")
    assert "line 1: invalid JSON" in stderr and "Traceback" not in stderr


def test_kill_9_at_random_moments_then_resume_gives_every_id_exactly_once(tmp_path: Path) -> None:
    n = 300
    src = write_jsonl(tmp_path / "in.jsonl", prompts(n))
    out = tmp_path / "out.jsonl"
    rng = random.Random(19)
    with MockServer([Reply(message="answer", delay=0.01)], repeat_last=True) as srv:
        args = (str(src), "-o", str(out), "--base-url", srv.base_url, "--concurrency", "16", "--json")  # fmt: skip
        seen: set[str] = set()
        kills = 0
        # The first kill lands during startup; the others once a random number of
        # further results are written, i.e. with requests in flight.
        for target in (0, *sorted(rng.sample(range(20, n - 20), 3))):
            p = _cli(*args)
            if target == 0:
                time.sleep(rng.uniform(0.05, 0.3))
            else:
                while p.poll() is None and len(read_done(str(out))[0]) < target:
                    time.sleep(0.005)
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                kills += 1
            p.communicate(timeout=60)
            done, _ = read_done(str(out))
            assert seen <= set(done)  # no completed result is ever lost
            seen = set(done)
        p = _cli(*args)
        _, stderr = p.communicate(timeout=120)
        assert p.returncode == 0, stderr
        requests = len(srv.requests)
    ids = [r["custom_id"] for r in results(out)]
    assert len(ids) == n and set(ids) == {f"r{i}" for i in range(n)}
    assert all(r["ok"] for r in results(out))
    assert kills == 4
    # Only requests in flight at a kill are sent twice.
    assert n <= requests <= n + kills * 16


# --------------------------------------------------------------------------- docs

FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.M | re.S)


def _doc_steps(text: str) -> list[tuple[str, list[str]]]:
    """(python source, expected output lines) for each python block; a ``text``
    block right after one is what it must print (``…`` matches anything)."""
    blocks = [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]
    steps = []
    for i, (lang, body) in enumerate(blocks):
        if lang == "python":
            after = blocks[i + 1] if i + 1 < len(blocks) else ("", "")
            steps.append((body, after[1].splitlines() if after[0] == "text" else []))
    return steps


def _matches(expected: list[str], actual: str) -> str | None:
    lines = [x.rstrip() for x in actual.splitlines()]
    pos = 0
    for exp in expected:
        pat = re.compile(".*".join(re.escape(p) for p in exp.rstrip().split("…")))
        while pos < len(lines) and not pat.fullmatch(lines[pos]):
            pos += 1
        if pos == len(lines):
            return exp
        pos += 1
    return None


def _batch_section(readme: str) -> str:
    start = readme.index("\n## Batch")
    nxt = readme.find("\n## ", start + 1)
    return readme[start : nxt if nxt > 0 else None]


DOCS = {
    "docs/batch.md": lambda: (ROOT / "docs" / "batch.md").read_text(encoding="utf-8"),
    "README.md#Batch": lambda: _batch_section((ROOT / "README.md").read_text(encoding="utf-8")),
}


@pytest.mark.timeout(240)
@pytest.mark.parametrize("doc", sorted(DOCS))
def test_every_block_of_the_batch_docs_runs_as_printed(
    doc: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ast
    import asyncio
    import contextlib
    import inspect
    import io

    steps = _doc_steps(DOCS[doc]())
    assert steps, f"{doc} has no python block"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # restored after: a block sets it
    for n, (source, expected) in enumerate(steps, 1):
        out = io.StringIO()
        # Top-level ``await`` as a notebook allows (the README's block awaits
        # batch_async); a block without it runs with no event loop, as a script.
        code = compile(source, f"<{doc} block {n}>", "exec",
                       flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)  # fmt: skip
        with contextlib.redirect_stdout(out):
            result = eval(code, {"__name__": "__doc__"})
            if inspect.iscoroutine(result):
                asyncio.run(result)
        missing = _matches(expected, out.getvalue())
        assert missing is None, f"{doc} block {n} did not print:\n{missing}\n---\n{out.getvalue()}"


def test_the_terminal_bar_shows_counts_rates_cost_errors_and_the_summary(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from modelwire.batching import RichProgress

    screen = io.StringIO()
    bar = RichProgress(interval=0, console=Console(file=screen, force_terminal=True, width=160))
    src = write_jsonl(tmp_path / "in.jsonl", prompts(3))
    with MockServer(["ok", "ok", error_reply(400, "bad")]) as srv:
        mw.batch(src, tmp_path / "o.jsonl", models={"mock/m": srv.model()}, concurrency=1,
                 progress=bar)  # fmt: skip
    text = screen.getvalue()
    assert "3/3" in text and "req/s" in text and "tok/s" in text and "$0.0000" in text
    assert "errors invalid_request:1" in text
    assert "2 done, 1 failed (invalid_request 1), 0 already in the output" in text


@pytest.mark.anyio
async def test_the_async_twin_and_the_sync_call_inside_a_running_loop(tmp_path: Path) -> None:
    from modelwire.batching import batch_async

    src = write_jsonl(tmp_path / "in.jsonl", prompts(4))
    with MockServer([echo], repeat_last=True) as srv:
        models = {"mock/m": srv.model()}
        a = await batch_async(src, tmp_path / "a.jsonl", models=models)
        # mw.batch runs its own loop: here it would block this one, so it refuses,
        # before reading the input or sending anything.
        with pytest.raises(mw.ConfigurationError, match=r"await modelwire\.batching\.batch_async"):
            mw.batch(src, tmp_path / "b.jsonl", models=models)
        assert len(srv.requests) == 4 and not (tmp_path / "b.jsonl").exists()
    assert a.ok == 4
    assert sorted(r["custom_id"] for r in results(tmp_path / "a.jsonl")) == [f"r{i}" for i in range(4)]  # fmt: skip
    with pytest.raises(mw.ConfigurationError, match="concurrency must be a positive integer"):
        await batch_async(src, tmp_path / "c.jsonl", concurrency=0)


def test_the_sync_call_and_the_async_twin_write_the_same_results(tmp_path: Path) -> None:
    import asyncio

    from modelwire.batching import batch_async

    src = write_jsonl(tmp_path / "in.jsonl", prompts(4))
    with MockServer([echo], repeat_last=True) as srv:
        models = {"mock/m": srv.model()}
        a = asyncio.run(batch_async(src, tmp_path / "a.jsonl", models=models))
        b = mw.batch(src, tmp_path / "b.jsonl", models=models)

    def answers(path: Path) -> list[tuple[str, str]]:
        return sorted((r["custom_id"], r["message"]["content"][0]["text"]) for r in results(path))

    assert (a.ok, b.ok) == (4, 4) and answers(tmp_path / "a.jsonl") == answers(tmp_path / "b.jsonl")


def test_cli_rate_limit_flags_per_provider_and_for_all() -> None:
    from modelwire._cli import main
    from modelwire._cli.batch import parse_limits

    limits = parse_limits(["100", "openai=3000"], ["openai=2e6"])
    assert limits is not None
    assert (limits["*"].rpm, limits["*"].tpm) == (100.0, None)
    assert (limits["openai"].rpm, limits["openai"].tpm) == (3000.0, 2e6)
    assert parse_limits(None, None) is None
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["batch", "in.jsonl", "-o", "o.jsonl", "--rpm", "openai=fast"])
    assert code == 2
    assert (
        "--rpm takes N or PROVIDER=N with N a finite number > 0, got 'openai=fast'"
        in err.getvalue()
    )


def test_a_second_run_on_the_same_output_is_refused_while_the_first_writes(tmp_path: Path) -> None:
    out = str(tmp_path / "out.jsonl")
    with OutputLog(out) as first:
        first.write({"custom_id": "a", "ok": True})
        with pytest.raises(mw.ConfigurationError, match="being written by another modelwire batch"):
            OutputLog(out)
    with OutputLog(out) as again:  # released on close (and by the kernel on kill -9)
        assert list(again.done) == ["a"]


def test_a_writer_may_wait_for_the_lock_of_one_that_is_going_away(tmp_path: Path) -> None:
    out = str(tmp_path / "out.jsonl")
    first = OutputLog(out)
    first.write({"custom_id": "a", "ok": True})
    threading.Timer(0.3, first.close).start()
    t0 = time.monotonic()
    with OutputLog(out, lock_wait=10) as second:  # as the Ray sink after a killed driver
        assert 0.2 < time.monotonic() - t0 < 5
        assert list(second.done) == ["a"]


# --------------------------------------------------------------------------- hardening


@pytest.mark.parametrize(
    "bad",
    [
        {"max_cost": float("nan")}, {"max_cost": float("inf")}, {"max_cost": -0.01},
        {"max_cost": "1"}, {"concurrency": 0}, {"concurrency": True}, {"concurrency": 1.5},
        {"max_attempts": 0}, {"ray_workers": 0}, {"line_timeout": float("nan")},
        {"line_timeout": 0}, {"line_timeout": float("inf")}, {"run_timeout": -1},
        {"run_timeout": float("nan")}, {"limits": {"mock": 5}}, {"output_format": "csv"},
    ],
)  # fmt: skip
def test_every_numeric_setting_is_finite_and_in_range_before_anything_is_sent(
    tmp_path: Path, bad: dict[str, Any]
) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", prompts(2))
    with MockServer(["ok"], repeat_last=True) as srv:
        with pytest.raises(mw.ConfigurationError, match=next(iter(bad))):
            mw.batch(src, tmp_path / "out.jsonl", models={"mock/m": srv.model()}, **bad)
        assert srv.requests == []


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0, 0.0, True])
def test_limits_refuse_nan_infinity_and_non_positive_numbers(value: float) -> None:
    # nan <= 0 is false: a NaN rate was accepted and never let a request through.
    for name in ("rpm", "tpm"):
        with pytest.raises(mw.ConfigurationError, match=f"{name} must be a positive finite"):
            Limits(**{name: value})


def _main(*args: str) -> tuple[int, str]:
    from modelwire._cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = main(["batch", *args])
        except SystemExit as exc:  # argparse's usage error
            code = int(exc.code or 0)
    return code, err.getvalue()


@pytest.mark.parametrize(
    "flags",
    [
        ["--rpm", "nan"], ["--tpm", "inf"], ["--rpm", "openai=nan"], ["--max-cost", "nan"],
        ["--max-cost", "inf"], ["--max-cost", "-1"], ["--concurrency", "0"],
        ["--max-attempts", "nan"], ["--timeout", "nan"], ["--timeout", "0"],
        ["--line-timeout", "inf"], ["--run-timeout", "-5"], ["--ray-workers", "0"],
    ],
)  # fmt: skip
def test_cli_numbers_are_finite_and_in_range_or_a_usage_error(
    tmp_path: Path, flags: list[str]
) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", prompts(2))
    with MockServer(["ok"], repeat_last=True) as srv:
        code, err = _main(str(src), "-o", str(tmp_path / "o.jsonl"), "--base-url",
                          srv.base_url, *flags)  # fmt: skip
        assert srv.requests == []
    assert code == 2, err
    assert flags[0] in err and "Traceback" not in err


def test_max_cost_is_reserved_per_http_request_agent_turns_included(tmp_path: Path) -> None:
    """Each agent turn costs exactly its estimate ($0.001); a $0.0035 cap allows
    exactly three HTTP requests at concurrency 1, whichever lines they belong to."""

    def reply(rec: Any) -> Any:
        msgs = rec.json()["messages"]
        content: Any = (mw.TextContent(text="done"),)
        if msgs[-1]["role"] != "tool":
            content = (tool_call("read", {"path": "a.txt"}),)
        return mw.AssistantMessage(
            content=content, api="", provider="", model="", stop_reason="stop",
            usage=mw.Usage(output=1000, total_tokens=1000),
        )  # fmt: skip

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("x")
    src = write_jsonl(tmp_path / "in.jsonl", [
        {"custom_id": f"r{i}", "model": "mock/m", "prompt": "x", "options": {"max_tokens": 1000}}
        for i in range(3)
    ])  # fmt: skip
    out = tmp_path / "out.jsonl"
    cost = mw.ModelCost(input=0.0, output=1.0)
    with MockServer([reply], repeat_last=True) as srv:
        models = {"mock/m": srv.model(cost=cost)}
        s1 = mw.batch(src, out, models=models, concurrency=1, max_cost=0.0035,
                      agent_root=tmp_path / "docs")  # fmt: skip
        assert len(srv.requests) == 3
        # The line cut after its first turn has no result (a rerun does it whole),
        # but its turn was paid: the summary reports the real spend, within the cap.
        assert s1.ok == 1 and s1.skipped_cost == 2 and s1.cost == pytest.approx(0.003)
        assert s1.cost <= 0.0035 and s1.output_tokens == 3000
        s2 = mw.batch(src, out, models=models, concurrency=1, max_cost=1.0,
                      agent_root=tmp_path / "docs")  # fmt: skip
    assert s2.ok == 2 and s2.complete
    assert sorted(r["custom_id"] for r in results(out)) == ["r0", "r1", "r2"]


def test_max_cost_counts_every_retry(tmp_path: Path) -> None:
    """A retried request that streamed tokens before failing is billed: each attempt
    reserves before it is sent."""
    body = (
        b'data: {"choices":[{"index":0,"delta":{"content":"par"}}]}\n\n'
        b'data: {"choices":[],"usage":{"prompt_tokens":0,"completion_tokens":1000}}\n\n'
    )  # a complete body without a finish reason: truncated, retryable
    src = write_jsonl(tmp_path / "in.jsonl", [
        {"custom_id": f"r{i}", "model": "mock/m", "prompt": "x", "options": {"max_tokens": 1000}}
        for i in range(2)
    ])  # fmt: skip
    cost = mw.ModelCost(input=0.0, output=1.0)
    with MockServer([Reply(body=body)], repeat_last=True) as srv, knobs(backoff_base=0.001):
        s = mw.batch(src, tmp_path / "out.jsonl", models={"mock/m": srv.model(cost=cost)},
                     concurrency=1, max_attempts=4, max_cost=0.0025)  # fmt: skip
        sent = len(srv.requests)
    assert sent == 2, "a cap of $0.0025 allows two $0.001 attempts"
    assert s.ok == 0 and s.skipped_cost == 2
    assert s.requests == 2 and s.cost == pytest.approx(0.002)


@pytest.mark.parametrize("target", ["/dev/null", "/dev/stdout", "dir", "input", "requests",
                                    "openai-requests"])  # fmt: skip
def test_unusable_outputs_are_refused_before_anything_is_sent(tmp_path: Path, target: str) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", prompts(3))
    other = write_jsonl(tmp_path / "more.jsonl", prompts(2))
    openai_in = write_jsonl(tmp_path / "oa.jsonl", [{
        "custom_id": "r0", "method": "POST", "url": "/v1/chat/completions",
        "body": {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}]},
    }])  # fmt: skip
    (tmp_path / "dir").mkdir()
    out = {"dir": str(tmp_path / "dir"), "input": str(src), "requests": str(other),
           "openai-requests": str(openai_in)}.get(target, target)  # fmt: skip
    before = {p: p.read_bytes() for p in (src, other, openai_in)}
    with MockServer(["ok"], repeat_last=True) as srv:
        with pytest.raises(mw.ConfigurationError) as info:
            mw.batch(src, out, models={"mock/m": srv.model()})
        assert srv.requests == []
    text = str(info.value)
    expected = {"/dev/null": "not a regular file", "/dev/stdout": "not a regular file",
                "dir": "is a directory", "input": "is the input file",
                "requests": "is a file of requests",
                "openai-requests": "is a file of requests"}[target]  # fmt: skip
    assert expected in text
    assert {p: p.read_bytes() for p in before} == before


def test_a_fifo_output_is_refused_at_once_without_opening_it(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", prompts(2))
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with MockServer(["ok"], repeat_last=True) as srv:
        p = _cli(str(src), "-o", str(fifo), "--base-url", srv.base_url)
        _, stderr = p.communicate(timeout=60)  # opening it for reading would block here
        assert srv.requests == []
    assert p.returncode == 2, stderr
    assert "is not a regular file" in stderr and "Traceback" not in stderr


def test_standard_output_is_refused_even_when_it_is_a_regular_file(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", prompts(2))
    captured = tmp_path / "captured.txt"
    with MockServer(["ok"], repeat_last=True) as srv, captured.open("w") as f:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        p = subprocess.run(
            [sys.executable, "-m", "modelwire", "batch", str(src), "-o", str(captured),
             "--base-url", srv.base_url, "--plain"],
            stdout=f, stderr=subprocess.PIPE, text=True, env=env, timeout=60,
        )  # fmt: skip
        assert srv.requests == []
    assert p.returncode == 2 and "standard stream" in p.stderr


_FSIZE_RUNNER = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of being killed
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), int(sys.argv[1])))
from modelwire._cli import main
sys.exit(main(sys.argv[2:]))
"""


def test_a_write_failure_is_typed_keeps_whole_lines_and_says_how_to_resume(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", prompts(30))
    out = tmp_path / "out.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    with MockServer([echo], repeat_last=True) as srv:
        args = ["batch", str(src), "-o", str(out), "--base-url", srv.base_url,
                "--concurrency", "1", "--plain"]  # fmt: skip
        p = subprocess.run([sys.executable, "-c", _FSIZE_RUNNER, "6000", *args], env=env,
                           capture_output=True, text=True, timeout=120)  # fmt: skip
        assert p.returncode == 1, p.stderr
        assert "error [output_write]" in p.stderr and "file size limit" in p.stderr
        assert "run the same command again to resume" in p.stderr
        assert "internal" not in p.stderr and "Traceback" not in p.stderr
        data = out.read_bytes()
        assert data.endswith(b"\n") and 0 < len(results(out)) < 30  # whole lines only
        p2 = subprocess.run([sys.executable, "-m", "modelwire", *args], env=env,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert p2.returncode == 0, p2.stderr
    ids = [r["custom_id"] for r in results(out)]
    assert sorted(ids) == sorted(f"r{i}" for i in range(30)) and len(ids) == 30


def _keepalive_only(seconds: float) -> Reply:
    # Only SSE comments: each resets the idle timer, none is an event.
    n = int(seconds / 0.1)
    return Reply(body=b": keep-alive\n\n" * n, chunk_size=len(b": keep-alive\n\n"), delay=0.1)


def test_a_line_deadline_ends_a_server_that_sends_only_keep_alive_comments(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", prompts(1))
    out = tmp_path / "out.jsonl"
    with MockServer([_keepalive_only(30)], repeat_last=True) as srv, knobs(backoff_base=0.001):
        t0 = time.monotonic()
        s = mw.batch(src, out, models={"mock/m": srv.model()}, timeout=1.0, line_timeout=1.0)
        took = time.monotonic() - t0
    [rec] = results(out)
    assert not rec["ok"] and rec["error"]["kind"] == "timeout"
    assert s.failed == 1 and took < 20  # the server would go on for 30 s


def test_a_run_deadline_leaves_unfinished_lines_for_the_next_run(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", prompts(3))
    out = tmp_path / "out.jsonl"
    with MockServer([_keepalive_only(30)], repeat_last=True) as srv:
        s1 = mw.batch(src, out, models={"mock/m": srv.model()}, concurrency=1, run_timeout=1.0)
        assert len(srv.requests) == 1
    assert s1.ok == 0 and s1.failed == 0 and s1.skipped_deadline == 3 and not s1.complete
    assert results(out) == []
    with MockServer(["fine"], repeat_last=True) as srv:
        s2 = mw.batch(src, out, models={"mock/m": srv.model()})
    assert s2.ok == 3 and s2.complete


def test_cli_key_and_a_missing_key_reported_once_in_cli_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    src = write_jsonl(tmp_path / "in.jsonl", prompts(20, model="openai/gpt-4.1-mini"))
    with MockServer(["ok"], repeat_last=True) as srv:
        code, err = _main(str(src), "-o", str(tmp_path / "o.jsonl"), "--base-url", srv.base_url)
        assert srv.requests == []
        assert code == 2
        assert err.count("\n") == 1 and err.count("no API key") == 1, err
        assert err.startswith("modelwire: error [missing_api_key]: ")
        assert "OPENAI_API_KEY" in err and "--key" in err and "api_key=" not in err
        code, err = _main(str(src), "-o", str(tmp_path / "o.jsonl"), "--base-url",
                          srv.base_url, "--key", "sk-from-flag", "--plain")  # fmt: skip
        assert code == 0, err
        assert {r.headers["authorization"] for r in srv.requests} == {"Bearer sk-from-flag"}
    assert len(results(tmp_path / "o.jsonl")) == 20


def test_ctrl_c_prints_a_final_accurate_summary_and_the_resume_hint(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", prompts(200))
    out = tmp_path / "out.jsonl"
    with MockServer([Reply(message="answer", delay=0.02)], repeat_last=True) as srv:
        p = _cli(str(src), "-o", str(out), "--base-url", srv.base_url, "--concurrency", "4",
                 "--json")  # fmt: skip
        deadline = time.monotonic() + 60
        while (not out.exists() or len(results(out)) < 10) and time.monotonic() < deadline:
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == 130, stderr
    written = len(results(out))
    assert 10 <= written < 200
    lines = [json.loads(x) for x in stdout.splitlines()]
    last_progress = [x for x in lines if x["type"] == "progress"][-1]
    summary = lines[-1]
    assert summary["type"] == "summary" and summary["interrupted"] is True
    assert last_progress["done"] == written == summary["ok"] + summary["failed"]
    assert stderr.endswith("\n") and stderr.count("\n") == 1, stderr
    assert "error [interrupted]" in stderr and "run the same command again to resume" in stderr


def test_ctrl_c_with_the_plain_summary_ends_on_its_own_line(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", prompts(200))
    out = tmp_path / "out.jsonl"
    with MockServer([Reply(message="answer", delay=0.02)], repeat_last=True) as srv:
        p = _cli(str(src), "-o", str(out), "--base-url", srv.base_url, "--plain")
        deadline = time.monotonic() + 60
        while (not out.exists() or len(results(out)) < 5) and time.monotonic() < deadline:
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        _, stderr = p.communicate(timeout=60)
    assert p.returncode == 130
    summary, error = stderr.rsplit("modelwire: error [interrupted]", 1)
    assert f"{len(results(out))} done" in summary and "run the same command again" in summary
    assert summary.endswith("\n") and error.endswith("\n")


_NO_RAY = """
import sys
sys.modules["ray"] = None  # as if Ray were not installed
from modelwire._cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_cli_ray_without_ray_installed_gives_the_install_hint(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", prompts(2))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    p = subprocess.run(
        [sys.executable, "-c", _NO_RAY, "batch", str(src), "-o", str(tmp_path / "o.jsonl"),
         "--base-url", "http://127.0.0.1:9/v1", "--ray"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert p.returncode == 2, p.stderr
    assert "pip install 'modelwire[ray]'" in p.stderr
    assert "ModuleNotFoundError" not in p.stderr and "internal" not in p.stderr


def test_skipped_line_reports_print_before_the_summary(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [*prompts(2), "{oops"])
    with MockServer(["ok"], repeat_last=True) as srv:
        code, err = _main(str(src), "-o", str(tmp_path / "o.jsonl"), "--base-url",
                          srv.base_url, "--skip-invalid", "--plain")  # fmt: skip
    assert code == 0, err
    assert "skipped invalid line 3" in err
    assert err.index("skipped invalid line 3") < err.index("2 done")


def test_openai_output_format_writes_batch_api_output_lines_and_resumes(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", prompts(4))
    out = tmp_path / "out.jsonl"
    with MockServer([echo, error_reply(401, "bad key")] * 2) as srv:
        code, err = _main(str(src), "-o", str(out), "--base-url", srv.base_url,
                          "--concurrency", "1", "--output-format", "openai", "--plain")  # fmt: skip
    assert code == 1, err
    lines = {r["custom_id"]: r for r in results(out)}
    assert set(lines) == {"r0", "r1", "r2", "r3"}
    for rec in lines.values():
        assert set(rec) == {"id", "custom_id", "response", "error"}
        assert rec["id"].startswith("batch_req_")
    ok = [r for r in lines.values() if r["response"]["status_code"] == 200]
    bad = [r for r in lines.values() if r["response"]["status_code"] == 401]
    assert len(ok) == 2 and len(bad) == 2
    for rec in ok:
        body = rec["response"]["body"]
        assert body["object"] == "chat.completion" and rec["error"] is None
        n = rec["custom_id"][1:]
        assert body["choices"][0]["message"]["content"] == f"answer to q{n}"
        assert body["choices"][0]["finish_reason"] == "stop"
    assert bad[0]["response"]["body"]["error"]["message"]
    # Resume reads the same format back: nothing is sent again.
    with MockServer(["x"], repeat_last=True) as srv:
        code, err = _main(str(src), "-o", str(out), "--base-url", srv.base_url,
                          "--output-format", "openai", "--plain")  # fmt: skip
        assert srv.requests == []
        # ...and refuses to mix formats in one file.
        code2, err2 = _main(str(src), "-o", str(out), "--base-url", srv.base_url, "--plain")
    assert code2 == 2 and "openai format" in err2


def test_responses_api_batch_lines_run_through_the_responses_api(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [{
        "custom_id": "a", "method": "POST", "url": "/v1/responses",
        "body": {"model": "mock/m", "instructions": "Be brief.", "max_output_tokens": 50,
                 "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]},
    }, {
        "custom_id": "b", "method": "POST", "url": "/v1/responses",
        "body": {"model": "mock/m", "input": "hello"},
    }])  # fmt: skip
    out = tmp_path / "out.jsonl"
    with MockServer(["from responses"], repeat_last=True) as srv:
        s = mw.batch(src, out, base_url=srv.base_url, output_format="openai")
        paths = {r.path for r in srv.requests}
        first = next(r.json() for r in srv.requests if r.json().get("instructions"))
    assert s.ok == 2 and paths == {"/v1/responses"}
    assert first["instructions"] == "Be brief." and first["max_output_tokens"] == 50
    for rec in results(out):
        body = rec["response"]["body"]
        assert body["object"] == "response" and body["status"] == "completed"
        assert body["output"][0]["content"][0]["text"] == "from responses"


def test_a_bad_responses_line_names_its_field(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [{
        "custom_id": "a", "method": "POST", "url": "/v1/responses",
        "body": {"model": "mock/m", "input": [{"role": "user", "content": [{"type": "x"}]}]},
    }, {
        "custom_id": "b", "method": "POST", "url": "/v1/embeddings", "body": {"model": "m"},
    }])  # fmt: skip
    with pytest.raises(mw.ConfigurationError) as info:
        mw.batch(src, tmp_path / "o.jsonl", base_url="http://127.0.0.1:9/v1")
    assert "line 1: body.input[0].content[0].type must be input_text" in str(info.value)
    assert "line 2: url must be /v1/chat/completions" in str(info.value)


def test_bad_tools_in_chat_and_responses_lines_name_their_field(tmp_path: Path) -> None:
    msgs = [{"role": "user", "content": "hi"}]
    src = write_jsonl(tmp_path / "in.jsonl", [
        {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions",
         "body": {"model": "mock/m", "messages": msgs, "tools": [{"type": "function"}]}},
        {"custom_id": "b", "method": "POST", "url": "/v1/chat/completions",
         "body": {"model": "mock/m", "messages": msgs,
                  "tools": [{"type": "function", "function": {"name": 7}}]}},
        {"custom_id": "c", "method": "POST", "url": "/v1/responses",
         "body": {"model": "mock/m", "input": "hi", "tools": [{"type": "function", "name": 7}]}},
        {"custom_id": "d", "method": "POST", "url": "/v1/responses",
         "body": {"model": "mock/m", "input": "hi", "tools": {"type": "function"}}},
    ])  # fmt: skip
    with pytest.raises(mw.ConfigurationError) as info:
        mw.batch(src, tmp_path / "o.jsonl", base_url="http://127.0.0.1:9/v1")
    text = str(info.value)
    assert 'line 1: body.tools[0] must be {"type": "function", "function": {...}}' in text
    assert "line 2: body.tools[0].function.name must be a string" in text
    assert "line 3: body.tools[0].name must be a string" in text
    assert "line 4: body.tools must be a list" in text


def test_ctrl_c_on_a_terminal_leaves_the_bar_final_and_the_error_on_its_own_line(
    tmp_path: Path,
) -> None:
    import pty

    src = write_jsonl(tmp_path / "in.jsonl", prompts(200))
    out = tmp_path / "out.jsonl"
    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TERM": "xterm", "COLUMNS": "160"}
    with MockServer([Reply(message="answer", delay=0.02)], repeat_last=True) as srv:
        p = subprocess.Popen(
            [sys.executable, "-m", "modelwire", "batch", str(src), "-o", str(out),
             "--base-url", srv.base_url, "--concurrency", "4"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave, env=env,
        )  # fmt: skip
        os.close(slave)
        deadline = time.monotonic() + 60
        while (not out.exists() or len(results(out)) < 10) and time.monotonic() < deadline:
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=60) == 130
    reader.join(timeout=10)
    os.close(master)
    text = b"".join(chunks).decode("utf-8", "replace")
    written = len(results(out))
    shown = re.findall(r"(\d+)/200", text)
    assert shown and int(shown[-1]) == written, (shown[-3:], written)
    before, error = text.rsplit("modelwire: error [interrupted]", 1)
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", before)
    assert plain.endswith("\n")  # the error is not glued to the bar
    assert f"{written} done" in plain  # the summary, after the final bar
    assert "run the same command again to resume" in error and error.endswith("\n")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0])
def test_progress_intervals_are_finite(value: float) -> None:
    from modelwire.batching import JsonProgress, RichProgress

    for cls in (JsonProgress, RichProgress):
        with pytest.raises(mw.ConfigurationError, match="interval must be a finite number"):
            cls(interval=value)


def test_a_line_sets_its_own_total_deadline_in_its_options(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [
        {"custom_id": "a", "model": "mock/m", "prompt": "hi",
         "options": {"timeout": {"connect": 5, "idle": 5, "total": 1}}},
    ])  # fmt: skip
    out = tmp_path / "out.jsonl"
    with MockServer([_keepalive_only(30)], repeat_last=True) as srv:
        t0 = time.monotonic()
        s = mw.batch(src, out, models={"mock/m": srv.model()}, max_attempts=1)
        took = time.monotonic() - t0
    [rec] = results(out)
    assert s.failed == 1 and rec["error"]["kind"] == "timeout" and took < 20
    bad = write_jsonl(tmp_path / "bad.jsonl", [
        {"custom_id": "a", "model": "mock/m", "prompt": "hi", "options": {"timeout": {"total": -1}}},
        {"custom_id": "b", "model": "mock/m", "prompt": "hi", "options": {"timeout": {"totl": 1}}},
    ])  # fmt: skip
    with pytest.raises(mw.ConfigurationError) as info:
        mw.batch(
            bad,
            tmp_path / "o2.jsonl",
            models={
                "mock/m": mw.Model(
                    id="m", api="openai-chat", provider="mock", base_url="http://127.0.0.1:9/v1"
                )
            },
        )
    text = str(info.value)
    assert "line 1: options.timeout must be seconds or an object" in text and "total" in text
    assert "line 2: options.timeout must be seconds or an object" in text
