"""``via="provider"`` across crashes, and from the command line: a run killed with
``kill -9`` after submitting polls its job when run again instead of submitting it
twice, and every result is written once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time as real_time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import modelwire as mw
from modelwire.batching._api import knobs
from modelwire.batching._provider._ledger import Ledger
from modelwire.testing import MockServer
from test_provider_batch import (
    APIS,
    NAME,
    answer_of,
    creates,
    echo,
    lines,
    no_wait,
    played,
    results,
    text,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def fast_polls() -> Iterator[None]:
    with knobs(sleep=no_wait):
        yield


# The child submits, and is killed with SIGKILL at its first wait for the provider:
# its job is created and recorded, nothing of it is written yet.
_CHILD = """
import os, signal, sys
import modelwire as mw
from modelwire.batching._api import knobs

api, base, src, out = sys.argv[1:5]

async def die(seconds):
    os.kill(os.getpid(), signal.SIGKILL)

model = mw.Model(id="m1", api=api, provider="mock", base_url=base)
with knobs(sleep=die):
    mw.batch(src, out, models={"mock/m1": model}, via="provider")
raise SystemExit("the run was not killed")
"""


@pytest.mark.parametrize("api", APIS)
def test_kill_9_after_submission_then_resume_polls_the_job_and_writes_each_line_once(
    api: str, tmp_path: Path
) -> None:
    n = 5
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines(n)))
    out = tmp_path / "out.jsonl"
    with MockServer([echo], repeat_last=True) as server:
        model = server.model(api, "m1")
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        child = subprocess.run([sys.executable, "-c", _CHILD, api, model.base_url, str(src), str(out)],
                               env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert child.returncode == -signal.SIGKILL, child.stderr
        assert len(creates(server)) == 1 and played(server) == []
        ledger = Ledger(str(out), read_only=True)
        [job] = ledger.open_jobs()
        ledger.close()
        assert job.id is not None and sorted(job.keys.values()) == [f"q{i}" for i in range(n)]
        resumed = mw.batch(src, out, models={NAME: model}, via="provider")
        assert (resumed.ok, resumed.jobs, resumed.complete) == (n, 0, True)
        assert len(creates(server)) == 1 and len(played(server)) == n  # no second job
        before = len(server.requests)
        again = mw.batch(src, out, models={NAME: model}, via="provider")
        assert (again.skipped_done, again.ok) == (n, 0)
        assert len(server.requests) == before  # nothing left to poll or send
    got = results(out)
    assert sorted(got) == [f"q{i}" for i in range(n)]
    assert all(text(got[f"q{i}"]) == f"answer {i}" for i in range(n))


class Stop(Exception):
    """The run dies between writing a job's results and marking the job done."""


def test_a_crash_after_writing_results_writes_none_of_them_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out.jsonl"
    with MockServer([echo], repeat_last=True) as server:
        models = {NAME: server.model("google-generative-ai", "m1")}

        def crash(self: Ledger, job: Any, state: str) -> None:
            raise Stop

        with monkeypatch.context() as m:
            m.setattr(Ledger, "done", crash)
            with pytest.raises(Stop):
                mw.batch(lines(3), out, models=models, via="provider")
        assert len(results(out)) == 3  # written and synced before the crash
        resumed = mw.batch(lines(3), out, models=models, via="provider")
    assert (resumed.ok, resumed.skipped_done, resumed.jobs) == (0, 3, 0)
    assert len(creates(server)) == 1 and len(played(server)) == 3
    assert sorted(results(out)) == ["q0", "q1", "q2"]
    records = [json.loads(x)["t"] for x in Path(f"{out}.jobs").read_text().splitlines()]
    assert records == ["submit", "created", "done"]  # marked done by the run that resumed


# --------------------------------------------------------------------------- CLI


def test_cli_via_provider_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from modelwire._cli import main

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-mock")
    items = [{"custom_id": f"c{i}", "model": "anthropic/claude-sonnet-4-5", "prompt": f"ask-{i}"}
             for i in range(3)]  # fmt: skip
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in items))
    out = tmp_path / "out.jsonl"
    with MockServer([echo], repeat_last=True) as server:
        base = ["batch", str(src), "-o", str(out), "--base-url", server.origin + "/v1"]
        assert main([*base, "--via", "provider", "--cancel"]) == 0
        assert "no provider job" in capsys.readouterr().out
        assert main([*base, "--via", "provider", "--json"]) == 0
        printed = capsys.readouterr().out
        assert main([*base, "--cancel"]) == 2  # --cancel is for --via provider
    reports = [json.loads(x) for x in printed.splitlines()]
    summary = reports[-1]
    assert summary["type"] == "summary" and (summary["ok"], summary["jobs"]) == (3, 1)
    assert any(r["type"] == "progress" and r["jobs"] for r in reports)
    create = creates(server)[0]
    assert create.path == "/v1/messages/batches" and create.headers["x-api-key"] == "sk-ant-mock"
    assert [r["params"]["model"] for r in create.json()["requests"]] == ["claude-sonnet-4-5"] * 3
    got = results(out)
    assert sorted(got) == ["c0", "c1", "c2"] and text(got["c2"]) == "answer 2"
    assert all(r["ok"] and r["model"] == "anthropic/claude-sonnet-4-5" for r in got.values())


@pytest.mark.parametrize("api", APIS)
def test_a_job_whose_create_answer_a_crash_lost_is_found_by_its_name(
    api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out.jsonl"
    with MockServer([echo], repeat_last=True) as server:
        models = {NAME: server.model(api, "m1")}

        def lost(self: Ledger, job: Any, job_id: str) -> None:
            raise Stop  # the provider created the job; its id never reached the ledger

        with monkeypatch.context() as m:
            m.setattr(Ledger, "created", lost)
            with pytest.raises(Stop):
                mw.batch(lines(3), out, models=models, via="provider")
        assert len(creates(server)) == 1
        resumed = mw.batch(lines(3), out, models=models, via="provider")
    assert resumed.ok == 3 and sorted(results(out)) == ["q0", "q1", "q2"]
    records = [json.loads(x) for x in Path(f"{out}.jobs").read_text().splitlines()]
    if api == "anthropic-messages":
        # A message batch has no name to be found by: its lines go in a new job.
        assert len(creates(server)) == 2 and resumed.jobs == 1
        assert records[1] == {"t": "done", "job": records[0]["job"], "state": "not created"}
    else:
        assert len(creates(server)) == 1 and resumed.jobs == 0  # adopted, polled
        assert records[1]["t"] == "created" and records[1]["job"] == records[0]["job"]
        assert {r["attempts"] for r in results(out).values()} == {1}
    assert len(played(server)) == 3


def test_run_timeout_stops_the_waiting_and_the_same_command_picks_the_job_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import modelwire.batching._provider._run as runner

    class Clock:
        """``time`` for the runner, whose sleeps move it on instead of waiting."""

        offset = 0.0

        @classmethod
        def time(cls) -> float:
            return real_time.time() + cls.offset

        @staticmethod
        def monotonic() -> float:
            return real_time.monotonic()

    async def advance(seconds: float) -> None:
        Clock.offset += seconds

    out = tmp_path / "out.jsonl"
    with MockServer([echo], repeat_last=True) as server:
        models = {NAME: server.model("openai-chat", "m1")}
        server.batches.polls = 5
        with monkeypatch.context() as m, knobs(sleep=advance):
            m.setattr(runner, "time", Clock)
            cut = mw.batch(lines(2), out, models=models, via="provider", run_timeout=100,
                           poll_interval=60)  # fmt: skip
        assert (cut.ok, cut.skipped_deadline, cut.complete, cut.jobs) == (0, 2, False, 1)
        assert Clock.offset == pytest.approx(100, abs=1)  # waited 60 s, then what was left
        resumed = mw.batch(lines(2), out, models=models, via="provider")
    assert (resumed.ok, resumed.jobs) == (2, 0) and len(creates(server)) == 1


async def _stop(seconds: float) -> None:
    raise Stop


@pytest.mark.parametrize("api", APIS)
def test_a_job_the_provider_no_longer_knows_has_its_lines_sent_again(
    api: str, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    with MockServer([echo], repeat_last=True) as server:
        models = {NAME: server.model(api, "m1")}
        with knobs(sleep=_stop), pytest.raises(Stop):
            mw.batch(lines(2), out, models=models, via="provider")
        del server.batches.jobs[server.batches.created[0]]  # deleted at the provider
        resumed = mw.batch(lines(2), out, models=models, via="provider")
    assert (resumed.ok, resumed.jobs) == (2, 1) and len(creates(server)) == 2
    assert [r["attempts"] for r in results(out).values()] == [2, 2]
    states = [json.loads(x).get("state") for x in Path(f"{out}.jobs").read_text().splitlines()]
    assert states.count("not found") == 1


def test_cli_via_provider_in_a_process_of_its_own(tmp_path: Path) -> None:
    items = [{"custom_id": f"c{i}", "model": "openai/gpt-4.1-mini", "prompt": f"ask-{i}"}
             for i in range(2)]  # fmt: skip
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in items))
    out = tmp_path / "out.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OPENAI_API_KEY": "sk-mock"}
    with MockServer([answer_of(1000)], repeat_last=True) as server:
        p = subprocess.run(
            [sys.executable, "-m", "modelwire", "batch", str(src), "-o", str(out), "--json",
             "--base-url", server.base_url, "--via", "provider", "--poll-interval", "0.01"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout.splitlines()[-1])
    assert (summary["type"], summary["ok"], summary["jobs"]) == ("summary", 2, 1)
    assert (
        len(creates(server)) == 1
        and creates(server)[0].headers["authorization"] == "Bearer sk-mock"
    )
    got = results(out)
    assert text(got["c0"]) == "ok" and got["c1"]["model"] == "openai/gpt-4.1-mini"
    # The catalog's price, halved: 1,000 output tokens at half the output price.
    price = mw.get_model("openai", "gpt-4.1-mini").cost.output
    assert price > 0 and got["c1"]["cost"] == pytest.approx(1000 * price / 1e6 / 2)


@pytest.mark.parametrize("api", APIS)
def test_a_create_that_may_have_reached_the_provider_is_looked_for_before_sending_again(
    api: str, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    with MockServer([echo], repeat_last=True) as server:
        server.batches.lose_next_create(500)
        s = run_lines(server, api, out)
    assert s.ok == 3 and sorted(results(out)) == ["q0", "q1", "q2"]
    if api == "anthropic-messages":
        # No name to look for: the lines go in a second job (the first is orphaned).
        assert len(creates(server)) == 2 and s.jobs == 1
        assert {r["attempts"] for r in results(out).values()} == {2}
    else:
        assert len(creates(server)) == 1 and s.jobs == 1  # found by name, polled
        assert {r["attempts"] for r in results(out).values()} == {1}
    assert len(played(server)) == 3


def run_lines(server: MockServer, api: str, out: Path) -> Any:
    return mw.batch(lines(3), out, models={NAME: server.model(api, "m1")}, via="provider")
