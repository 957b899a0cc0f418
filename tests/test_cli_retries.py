"""Retries from the command line: ``--max-retries N`` on ``chat``, ``run`` and
``trace``; every retry is one stderr line (``trace`` shows it as a record); ``run`` — the
live, paid mode — retries nothing unless asked. Each test runs ``python -m modelwire``
against a loopback MockServer and counts the requests it saw."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelwire.testing import MockServer, error_reply
from test_cli import _local, assert_one_line_error, cli

RETRY_NOW = {"retry-after": "0"}


def _busy() -> object:
    return error_reply(429, "slow down", type="rate_limit_error", headers=RETRY_NOW)


def _retry_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("modelwire: retry [")]


def test_chat_retries_by_default_and_says_so_on_stderr() -> None:
    with MockServer([_busy(), "made it"]) as srv:
        proc = cli("chat", *_local(srv), "hi")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "made it\n"  # stdout stays the answer only
    assert _retry_lines(proc.stderr) == [
        "modelwire: retry [rate_limit]: attempt 1 got HTTP 429; next attempt in 0.0 s"
    ]
    assert len(srv.requests) == 2


def test_chat_max_retries_0_sends_once() -> None:
    with MockServer([_busy(), "never sent"]) as srv:
        proc = cli("chat", *_local(srv), "--max-retries", "0", "hi")
    assert_one_line_error(proc, "rate_limit", "slow down")
    assert len(srv.requests) == 1


def test_chat_max_retries_bounds_the_attempts() -> None:
    with MockServer([_busy(), _busy(), _busy(), "late"]) as srv:
        proc = cli("chat", *_local(srv), "--max-retries", "1", "hi")
    assert proc.returncode == 1
    assert len(_retry_lines(proc.stderr)) == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("modelwire: error [rate_limit]: ")
    assert len(srv.requests) == 2


def test_run_does_not_retry_unless_asked(tmp_path: Path) -> None:
    with MockServer([_busy(), "done"]) as srv:
        proc = cli("run", *_local(srv), "--root", str(tmp_path), "task")
    assert_one_line_error(proc, "rate_limit")
    assert len(srv.requests) == 1  # the paid mode never repeats a call by itself
    with MockServer([_busy(), "done"]) as srv:
        proc = cli("run", *_local(srv), "--max-retries", "2", "--root", str(tmp_path), "task")
    assert proc.returncode == 0, proc.stderr
    assert "done" in proc.stdout
    assert len(_retry_lines(proc.stderr)) == 1
    assert len(srv.requests) == 2


def test_trace_shows_the_retry_record() -> None:
    with MockServer([_busy(), "traced"]) as srv:
        proc = cli("trace", *_local(srv), "--max-retries", "1", "hi")
    assert proc.returncode == 0, proc.stderr
    assert "retry [rate_limit]: attempt 1 got HTTP 429; next attempt in 0.0 s" in proc.stdout
    assert len(srv.requests) == 2
    with MockServer([_busy(), "never sent"]) as srv:
        proc = cli("trace", *_local(srv), "--max-retries", "0", "--json", "hi")
    assert proc.returncode == 1
    assert '"layer": "retry"' not in proc.stdout and '"layer": "request"' in proc.stdout
    assert len(srv.requests) == 1


@pytest.mark.parametrize("command", ["chat", "run", "trace"])
def test_max_retries_must_not_be_negative(command: str, tmp_path: Path) -> None:
    extra = ["--root", str(tmp_path)] if command == "run" else []
    with MockServer(["x"]) as srv:
        proc = cli(command, *_local(srv), "--max-retries", "-1", *extra, "hi")
    assert_one_line_error(proc, "usage", "--max-retries")
    assert len(srv.requests) == 0
