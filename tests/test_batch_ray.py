"""The batch job on a local Ray cluster (``ray.init(num_cpus=2)``), against a
MockServer on loopback: exactly once, shared Retry-After pauses across worker
processes, a worker killed mid-shard, the driver killed with -9 then resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip(
    "ray", reason="Ray is not installed: pip install 'modelwire[ray]' (make test installs it)"
)

import modelwire as mw  # noqa: E402
from modelwire.batching._api import knobs  # noqa: E402
from modelwire.batching._output import read_done  # noqa: E402
from modelwire.testing import MockServer, Reply, error_reply  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(180)


def lines(n: int) -> list[dict[str, Any]]:
    return [{"custom_id": f"r{i}", "model": "mock/m", "prompt": f"q{i}"} for i in range(n)]


def ids(path: Path) -> list[str]:
    return [json.loads(x)["custom_id"] for x in path.read_text().splitlines() if x.strip()]


def test_driver_killed_with_9_then_resumed_gives_every_id_exactly_once(tmp_path: Path) -> None:
    n = 40
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines(n)))
    out = tmp_path / "out.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "RAY_AUTH_MODE": "disabled"}
    with MockServer([Reply(message="answer", delay=0.05)], repeat_last=True) as srv:
        cmd = [sys.executable, "-m", "modelwire", "batch", str(src), "-o", str(out),
               "--base-url", srv.base_url, "--concurrency", "2", "--json", "--ray"]  # fmt: skip
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)  # fmt: skip
        try:
            deadline = time.monotonic() + 90
            while len(read_done(str(out))[0]) < 8 and time.monotonic() < deadline:
                assert p.poll() is None, "the Ray run ended before it could be killed"
                time.sleep(0.05)
            os.kill(p.pid, signal.SIGKILL)  # the driver only, mid-run
            p.wait(timeout=30)
        finally:
            # Ray processes the killed driver left behind (this test started them).
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        before = set(read_done(str(out))[0])
        assert 8 <= len(before) < n
        again = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 text=True, start_new_session=True)  # fmt: skip
        try:
            _, err = again.communicate(timeout=120)
        finally:
            try:
                os.killpg(again.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        assert again.returncode == 0, err[-2000:]
    got = ids(out)
    assert len(got) == n and set(got) == {f"r{i}" for i in range(n)}
    assert before <= set(got)


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def test_retry_after_on_one_worker_pauses_the_other(cluster: None, tmp_path: Path) -> None:
    arrivals: list[tuple[float, int]] = []
    lock = threading.Lock()
    gave = threading.Event()

    def reply(rec: Any) -> Any:
        i = int(rec.json()["messages"][-1]["content"][1:])
        with lock:
            arrivals.append((time.monotonic(), i))
            # Shards are r0, r2, … and r1, r3, …: the first even request after an
            # odd one has arrived (both workers running) gets the 429.
            trigger = i % 2 == 0 and not gave.is_set() and any(j % 2 for _, j in arrivals)
            if trigger:
                gave.set()
        if trigger:
            return error_reply(429, "slow down", headers={"retry-after": "1.5"})
        return Reply(message="ok", delay=0.05)

    out = tmp_path / "out.jsonl"
    with MockServer([reply], repeat_last=True) as srv:
        # A loaded machine may starve a worker for seconds: a connect that slow is
        # not what this test is about (timeout=60 instead of the default 10 s).
        summary = mw.batch(lines(20), out, models={"mock/m": srv.model()}, backend="ray",
                           ray_workers=2, concurrency=1, timeout=60)  # fmt: skip
        total = len(srv.requests)
    first_odd = next(t for t, i in arrivals if i % 2)
    t429 = next(t for t, i in arrivals if i % 2 == 0 and t > first_odd)
    odd_after = [t - t429 for t, i in arrivals if i % 2 and t > t429]
    # The other process sends a request every ~0.25 s; once the pause reaches the
    # limiter actor (a few ms after the 429 left the server; a request already
    # past the limiter may still land) it sends nothing until the pause ends.
    assert not [d for d in odd_after if 0.3 < d < 1.4], odd_after
    assert [d for d in odd_after if d >= 1.4], odd_after
    assert summary.ok == 20 and total == 21
    got = ids(out)
    assert len(got) == 20 and set(got) == {f"r{i}" for i in range(20)}


def test_a_worker_killed_mid_shard_is_retried_by_ray(cluster: None, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    marker = tmp_path / "killed"
    with MockServer([Reply(message="ok", delay=0.01)], repeat_last=True) as srv:
        with knobs(chaos={"kill_after": 4, "marker": str(marker)}):
            summary = mw.batch(lines(30), out, models={"mock/m": srv.model()}, backend="ray",
                               ray_workers=2, concurrency=2)  # fmt: skip
        total = len(srv.requests)
    assert Path(f"{marker}.0").exists()  # shard 0's first run died with SIGKILL
    got = ids(out)
    assert len(got) == 30 and set(got) == {f"r{i}" for i in range(30)}
    assert all(json.loads(x)["ok"] for x in out.read_text().splitlines())
    # Only the requests in flight when the worker died were sent twice.
    assert 30 <= total <= 30 + 2
    assert summary.skipped_done == 0 and summary.skipped_cost == 0


def test_max_cost_holds_across_workers_and_a_local_rerun_goes_on(
    cluster: None, tmp_path: Path
) -> None:
    answer = mw.AssistantMessage(
        content=(mw.TextContent(text="ok"),), api="", provider="", model="", stop_reason="stop",
        usage=mw.Usage(output=500, total_tokens=500),
    )  # fmt: skip
    items = [{**x, "options": {"max_tokens": 1000}} for x in lines(12)]
    out = tmp_path / "out.jsonl"
    with MockServer([answer], repeat_last=True) as srv:
        models = {"mock/m": srv.model(cost=mw.ModelCost(input=0.0, output=1.0))}
        # Each request may cost $0.001 and costs $0.0005; the budget actor is shared.
        s1 = mw.batch(items, out, models=models, backend="ray", ray_workers=2, concurrency=2,
                      max_cost=0.004)  # fmt: skip
        sent = len(srv.requests)
        s2 = mw.batch(items, out, models=models, max_cost=1.0)  # the same file, locally
    assert s1.skipped_cost > 0 and s1.ok == sent == len(ids(out)) - s2.ok
    assert s1.cost <= 0.004
    assert s2.skipped_done == s1.ok and s2.complete
    got = ids(out)
    assert len(got) == 12 and set(got) == {f"r{i}" for i in range(12)}


def test_a_write_failure_in_the_sink_is_the_typed_error_with_the_resume_hint(
    cluster: None, tmp_path: Path
) -> None:
    # The sink actor's disk "fills up" after 3 lines: the caller gets the same typed
    # OutputWriteError a local run raises (not Ray's wrapper), the lines written stay
    # whole, and a local rerun finishes the rest.
    out = tmp_path / "out.jsonl"
    with MockServer([Reply(message="ok")], repeat_last=True) as srv:
        models = {"mock/m": srv.model()}
        with (
            knobs(chaos={"write_fail_after": 3}),
            pytest.raises(mw.errors.OutputWriteError) as info,
        ):
            mw.batch(lines(12), out, models=models, backend="ray", ray_workers=2, concurrency=1)
        assert not isinstance(info.value, ray.exceptions.RayError)
        assert "the disk is full" in info.value.message
        assert "run the same command again to resume" in info.value.message
        assert len(ids(out)) == 3
        summary = mw.batch(lines(12), out, models=models)
    assert summary.skipped_done == 3 and summary.ok == 9
    assert sorted(ids(out)) == sorted(f"r{i}" for i in range(12))


def test_ctrl_c_on_a_ray_run_prints_the_final_summary_and_the_resume_hint(
    tmp_path: Path,
) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines(200)))
    out = tmp_path / "out.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "RAY_AUTH_MODE": "disabled"}
    with MockServer([Reply(message="answer", delay=0.05)], repeat_last=True) as srv:
        cmd = [sys.executable, "-m", "modelwire", "batch", str(src), "-o", str(out),
               "--base-url", srv.base_url, "--concurrency", "2", "--json", "--ray"]  # fmt: skip
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)  # fmt: skip
        try:
            deadline = time.monotonic() + 90
            while len(read_done(str(out))[0]) < 6 and time.monotonic() < deadline:
                assert p.poll() is None, "the Ray run ended before it could be interrupted"
                time.sleep(0.05)
            p.send_signal(signal.SIGINT)  # the driver only, as a terminal's Ctrl-C would
            stdout, stderr = p.communicate(timeout=90)
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # any Ray process left behind
            except ProcessLookupError:
                pass
    assert p.returncode == 130, stderr[-2000:]
    written = len(ids(out))
    assert 6 <= written < 200
    records = [json.loads(x) for x in stdout.splitlines() if x.startswith("{")]
    summary = records[-1]
    assert summary["type"] == "summary" and summary["interrupted"] is True
    assert summary["ok"] + summary["failed"] == written
    assert "run the same command again to resume" in stderr
