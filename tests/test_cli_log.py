"""The call log: every CLI chat call in one SQLite file (WAL, versioned schema, FTS5),
``modelwire logs`` to read it, ``--no-log`` / ``log = false`` to turn it off, and the
library's ``log=`` option (nothing is recorded without it). Concurrent writers and a
process killed mid-run leave a readable log with every committed row."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

import modelwire as mw
from modelwire._client import _log
from modelwire.errors import ConfigurationError
from modelwire.testing import MockServer, Reply
from test_cli import _local, assert_one_line_error, cli
from test_cli_conventions import _data_env

SECRET = "sk-log-secret-9876543210"


def _db(tmp_path: Path) -> Path:
    return tmp_path / "data" / "modelwire" / "logs.db"


def _rows(tmp_path: Path, *args: str) -> list[dict[str, object]]:
    proc = cli("logs", "--json", *args, env=_data_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_every_chat_call_is_logged_and_logs_lists_searches_and_totals(tmp_path: Path) -> None:
    env = _data_env(tmp_path)
    usage = mw.Usage(input=11, output=4, cache_read=0, cache_write=0, total_tokens=15)
    with MockServer(["the capital is Paris",
                     Reply(message=mw.AssistantMessage(content=[mw.TextContent(text="blue")],
                           api="", provider="", model="", usage=usage, stop_reason="stop")),
                     "third"]) as srv:  # fmt: skip
        one = cli("chat", *_local(srv), "--key", SECRET, "capital of France?", env=env)
        two = cli("chat", *_local(srv), "--system", "answer in one word", "sky colour?", env=env)
        three = cli("chat", "-c", "and grass?", env=env)
    assert one.returncode == two.returncode == three.returncode == 0
    rows = _rows(tmp_path, "-n", "0")
    assert [r["prompt"] for r in rows] == ["capital of France?", "sky colour?", "and grass?"]
    assert [r["response"] for r in rows] == ["the capital is Paris", "blue", "third"]
    assert rows[1]["system"] == "answer in one word" and rows[1]["input_tokens"] == 11
    assert rows[2]["conversation_id"] == rows[1]["conversation_id"] != rows[0]["conversation_id"]
    assert all(r["provider"] == "local" and r["model"] == "test-model" for r in rows)
    assert all(isinstance(r["duration_ms"], float) for r in rows)
    assert [r["prompt"] for r in _rows(tmp_path, "-n", "1")] == ["and grass?"]
    assert [r["prompt"] for r in _rows(tmp_path, "search", "Paris")] == ["capital of France?"]
    # The system prompt is searched too (-c kept it for the continued conversation).
    assert [r["prompt"] for r in _rows(tmp_path, "search", "one", "word")] == [
        "sky colour?", "and grass?"]  # fmt: skip
    assert _rows(tmp_path, "search", 'NEAR("x"') == []  # words, never query syntax
    cid = str(rows[1]["conversation_id"])
    assert [r["prompt"] for r in _rows(tmp_path, "--cid", cid)] == ["sky colour?", "and grass?"]
    (total,) = _rows(tmp_path, "--totals")
    assert (
        total["model"] == "local/test-model" and total["calls"] == 3 and total["input_tokens"] == 11
    )
    text = cli("logs", env=env)
    assert text.returncode == 0 and "you › and grass?" in text.stdout and cid in text.stdout
    # --cid continues any conversation, not only the newest.
    with MockServer(["back to France"]) as srv2:
        again = cli("chat", "--cid", str(rows[0]["conversation_id"]), "--base-url",
                    srv2.model().base_url, "-m", "local/test-model", "and Spain?", env=env)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert [m["content"] for m in srv2.requests[0].json()["messages"]] == [
        "capital of France?", "the capital is Paris", "and Spain?"]  # fmt: skip
    # No key or header anywhere in the files (the WAL included).
    for f in _db(tmp_path).parent.iterdir():
        assert SECRET.encode() not in f.read_bytes(), f


def test_no_log_flag_and_config_switch(tmp_path: Path) -> None:
    env = _data_env(tmp_path)
    with MockServer(["a", "b", "c"]) as srv:
        assert cli("chat", *_local(srv), "--no-log", "hi", env=env).returncode == 0
        assert not _db(tmp_path).exists()
        config = tmp_path / "config" / "modelwire" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text("log = false\n", encoding="utf-8")
        assert cli("chat", *_local(srv), "hi", env=env).returncode == 0
        assert not _db(tmp_path).exists()
        config.write_text('log = "no"\n', encoding="utf-8")
        bad = cli("chat", *_local(srv), "hi", env=env)
    assert_one_line_error(bad, "configuration", "log must be true or false")
    empty = cli("logs", env=env)
    assert empty.returncode == 0 and "no calls logged yet" in empty.stdout
    assert cli("logs", "--json", env=env).stdout == ""


def test_the_library_records_only_with_log(tmp_path: Path) -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content="q")])
    path = tmp_path / "calls.db"
    with MockServer(["a1", "a2"]) as srv:
        mw.complete_sync(srv.model(), ctx)
        assert list(tmp_path.iterdir()) == []
        mw.complete_sync(srv.model(), ctx, log=path, session_id="conv-7")
        model = srv.model()
    (row,) = _log.CallLog(path).rows()
    assert (row.prompt, row.response, row.conversation_id) == ("q", "a2", "conv-7")
    with pytest.raises(ConfigurationError, match="log must be the path"):
        mw.stream_sync(model, ctx, log=3)  # type: ignore[arg-type]


def test_migrations_are_versioned(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    conn = _log.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == _log.SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.execute(f"PRAGMA user_version = {_log.SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(ConfigurationError, match="newer than this modelwire"):
        _log.connect(path)


def test_concurrent_cli_processes_all_land(tmp_path: Path) -> None:
    env = {**_data_env(tmp_path)}
    n = 6
    with MockServer([f"answer {i}" for i in range(n)], repeat_last=True) as srv:
        procs = [subprocess.Popen([sys.executable, "-m", "modelwire", "chat", *_local(srv),
                                   f"question {i}"], env={**_env_all(), **env},
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for i in range(n)]  # fmt: skip
        for p in procs:
            _, err = p.communicate(timeout=90)
            assert p.returncode == 0, err
    rows = _log.CallLog(_db(tmp_path)).rows()
    assert sorted(r.prompt for r in rows) == sorted(f"question {i}" for i in range(n))
    with closing(sqlite3.connect(_db(tmp_path))) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def _env_all() -> dict[str, str]:
    from test_cli import _env

    return _env()


_WRITER = """
import sys, time
import modelwire as mw
from modelwire._client import _log
log = _log.CallLog(sys.argv[1])
model = mw.Model(id="m", api="openai-chat", provider="local", base_url="http://127.0.0.1:9/v1")
i = 0
while True:
    ctx = mw.Context(messages=[mw.UserMessage(content=f"q{i}")])
    msg = mw.AssistantMessage(content=[mw.TextContent(text="a" * 5000)], api="openai-chat",
                              provider="local", model="m", stop_reason="stop")
    log.append(conversation_id="c", model=model, context=ctx, message=msg,
               started=time.time(), duration_ms=1.0)
    print(i, flush=True)
    i += 1
"""


def test_a_killed_writer_leaves_every_committed_row(tmp_path: Path) -> None:
    path = tmp_path / "k.db"
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE,
                            text=True)  # fmt: skip
    assert proc.stdout is not None
    committed = -1
    while committed < 20:
        committed = int(proc.stdout.readline())
    proc.send_signal(signal.SIGKILL)  # mid-write, very likely
    proc.wait(timeout=30)
    proc.stdout.close()
    rows = _log.CallLog(path).rows()
    assert len(rows) >= committed + 1
    assert [r.prompt for r in rows] == [f"q{i}" for i in range(len(rows))]
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # And it goes on: the next writer appends after them.
    model = mw.Model(id="m", api="openai-chat", provider="local", base_url="http://x/v1")
    _log.CallLog(path).append(conversation_id="d", model=model,
                              context=mw.Context(messages=[mw.UserMessage(content="next")]),
                              message=mw.AssistantMessage(content=[], api="", provider="",
                                                          model="", stop_reason="stop"),
                              started=time.time(), duration_ms=None)  # fmt: skip
    assert _log.CallLog(path).rows(limit=1)[0].prompt == "next"


def test_run_logs_each_model_call_of_the_agent_as_one_conversation(tmp_path: Path) -> None:
    from modelwire.testing import tool_call

    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("hello notes\n", encoding="utf-8")
    env = _data_env(tmp_path)
    replies = [["Reading.", tool_call("read", {"path": "notes.txt"})], "Done.", "Unlogged."]
    with MockServer(replies) as srv:
        proc = cli("run", *_local(srv), "--root", str(root), "read notes.txt", env=env)
        quiet = cli("run", *_local(srv), "--root", str(root), "--no-log", "again", env=env)
    assert proc.returncode == 0, proc.stderr
    assert quiet.returncode == 0 and "Unlogged." in quiet.stdout, quiet.stderr
    rows = _rows(tmp_path, "-n", "0")
    assert [r["response"] for r in rows] == ["Reading.", "Done."]  # --no-log: not recorded
    assert rows[0]["conversation_id"] == rows[1]["conversation_id"]
    assert rows[0]["stop_reason"] == "tool_use"
    assert "hello notes" in json.dumps(rows[1]["messages"])  # the tool result is in the record
