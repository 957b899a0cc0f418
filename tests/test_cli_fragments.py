"""``-f/--fragment FILE|-``: text files put before the prompt, in order, each once;
stored once in the log by sha256 however many prompts use them, and sent again as
they were when a conversation is continued (``chat -c`` / ``--cid``). Each test runs
``python -m modelwire`` as a subprocess against a loopback MockServer."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from modelwire._client import _log
from modelwire._client._log import _schema
from modelwire.testing import MockServer
from test_cli import _local, assert_one_line_error, cli
from test_cli_conventions import _data_env


def _db(tmp_path: Path) -> Path:
    return tmp_path / "data" / "modelwire" / "logs.db"


def _rows(tmp_path: Path) -> list[dict[str, Any]]:
    proc = cli("logs", "--json", "-n", "0", env=_data_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def _uncached(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _uncached(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_uncached(v) for v in value]
    return value


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_fragments_go_before_the_prompt_in_order_each_once(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("print('a')\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("# B, no final newline", encoding="utf-8")
    # Same content as a.py (and no stdlib module's name: python -m puts the cwd on sys.path).
    (tmp_path / "same_as_a.py").write_text("print('a')\n", encoding="utf-8")
    env = _data_env(tmp_path)
    with MockServer(["chat answer", "anthropic answer"]) as srv:
        chat = cli("chat", *_local(srv), "-f", "a.py", "--fragment", "b.md", "-f", "same_as_a.py",
                   "-f", "a.py", "explain", cwd=tmp_path, env=env)  # fmt: skip
        anthropic = cli("chat", *_local(srv, "anthropic-messages"), "-f", "b.md", "-f", "a.py",
                        "explain", cwd=tmp_path, env=env)  # fmt: skip
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout == "chat answer\n"
    # Chat Completions joins the text blocks: llm's "fragment\nfragment\nprompt".
    assert srv.requests[0].json()["messages"] == [
        {"role": "user", "content": "print('a')\n# B, no final newline\nexplain"}
    ]
    assert anthropic.returncode == 0, anthropic.stderr
    assert _uncached(srv.requests[1].json()["messages"][0]["content"]) == [
        {"type": "text", "text": "# B, no final newline\n"},
        {"type": "text", "text": "print('a')\n"},
        {"type": "text", "text": "explain"},
    ]
    # The log keeps the prompt apart from its fragments, listed by hash and source.
    first, second = _rows(tmp_path)
    assert first["prompt"] == second["prompt"] == "explain"
    assert [(f["sha256"], f["source"]) for f in first["fragments"]] == [
        (_sha(tmp_path / "a.py"), str(tmp_path / "a.py")),
        (_sha(tmp_path / "b.md"), str(tmp_path / "b.md")),
    ]
    assert [f["sha256"] for f in second["fragments"]] == [
        _sha(tmp_path / "b.md"), _sha(tmp_path / "a.py")]  # fmt: skip
    text = cli("logs", "--plain", env=env)
    assert f"+ {tmp_path / 'b.md'}, {tmp_path / 'a.py'}" in text.stdout, text.stdout


def test_a_fragment_from_stdin_and_fragments_alone(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk\n", encoding="utf-8")
    env = _data_env(tmp_path)
    with MockServer(["one", "two"]) as srv:
        piped = cli("prompt", *_local(srv), "-f", "-", "-f", "notes.txt", "what is this?",
                    stdin="piped text\n", cwd=tmp_path, env=env)  # fmt: skip
        alone = cli("chat", *_local(srv), "-f", "notes.txt", stdin="", cwd=tmp_path, env=env)
    assert piped.returncode == 0, piped.stderr
    # stdin went to the fragment: it is not also the prompt.
    assert srv.requests[0].json()["messages"][0]["content"] == (
        "piped text\nremember the milk\nwhat is this?")  # fmt: skip
    assert alone.returncode == 0, alone.stderr
    assert srv.requests[1].json()["messages"][0]["content"] == "remember the milk\n"
    rows = _rows(tmp_path)
    assert rows[0]["fragments"][0]["source"] == "-" and rows[1]["prompt"] == ""


def test_fragment_errors_name_the_path(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "blob.bin").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00")
    (tmp_path / "ok.txt").write_text("fine\n", encoding="utf-8")
    env = _data_env(tmp_path)
    with MockServer(["never"]) as srv:
        cases = [
            (["-f", "missing.txt", "hi"], ("'missing.txt'", "no such file")),
            (["-f", "dir", "hi"], ("'dir'", "is a directory")),
            (["-f", "blob.bin", "hi"], ("'blob.bin'", "not UTF-8", "-a")),
            (["-f", "https://example.com/robots.txt", "hi"], ("https://example.com/robots.txt",
                                                               "download it first", "curl")),
            (["-f", "-", "-f", "-", "hi"], ("stdin can be read once",)),
            (["-f", "-", "-", "hi"], ("stdin can be read once", "the prompt '-'")),
            (["-i", "-f", "-"], ("-f - reads stdin, where the chat reads its messages",)),
        ]  # fmt: skip
        for args, needles in cases:
            proc = cli("chat", *_local(srv), "-f", "ok.txt", *args, stdin="x", cwd=tmp_path,
                       env=env)  # fmt: skip
            assert proc.returncode == 2, (args, proc.stderr)
            assert_one_line_error(proc, "usage", *needles)
        assert srv.requests == []  # nothing was sent
    assert not _db(tmp_path).exists()


def test_the_log_stores_a_fragment_once_however_many_prompts_use_it(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    line = "the quick brown fox jumps over the lazy dog 0123456789\n"
    big.write_text(line * (2**20 // len(line) + 1), encoding="utf-8")  # a little over 1 MB
    env = _data_env(tmp_path)
    with MockServer([f"answer {i}" for i in range(10)]) as srv:
        for i in range(10):
            proc = cli("chat", *_local(srv), "-f", "big.txt", f"question {i}", cwd=tmp_path,
                       env=env)  # fmt: skip
            assert proc.returncode == 0, proc.stderr
    # Every request carried the whole file.
    for i, request in enumerate(srv.requests):
        content = request.json()["messages"][0]["content"]
        assert content == big.read_text(encoding="utf-8") + f"question {i}"
    with closing(sqlite3.connect(_db(tmp_path))) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert conn.execute("SELECT count(*) FROM responses").fetchone()[0] == 10
        assert conn.execute("SELECT count(*), sha256 FROM fragments").fetchone() == (1, _sha(big))
        assert conn.execute("SELECT count(*) FROM response_fragments").fetchone()[0] == 10
        stored = conn.execute("SELECT sum(length(messages_json)) FROM responses").fetchone()[0]
        assert stored < 20_000, stored  # references, not ten copies
    size = sum(f.stat().st_size for f in _db(tmp_path).parent.iterdir())
    assert big.stat().st_size < size < 2 * big.stat().st_size, size
    rows = _rows(tmp_path)
    assert [r["prompt"] for r in rows] == [f"question {i}" for i in range(10)]
    assert all(r["fragments"] == [{"sha256": _sha(big), "source": str(big),
                                   "bytes": big.stat().st_size}] for r in rows)  # fmt: skip


def test_continuing_sends_the_fragments_again(tmp_path: Path) -> None:
    (tmp_path / "spec.md").write_text("# Spec\nmust be fast\n", encoding="utf-8")
    (tmp_path / "tail.txt").write_text("no newline at the end", encoding="utf-8")
    env = _data_env(tmp_path)
    for api in ("anthropic-messages", "openai-chat"):
        with MockServer(["first", "second", "third"]) as srv:
            one = cli("chat", *_local(srv, api), "-f", "spec.md", "-f", "tail.txt", "summarise",
                      cwd=tmp_path, env=env)  # fmt: skip
            two = cli("chat", "-c", "shorter", env=env)
            cid = _rows(tmp_path)[-1]["conversation_id"]
            three = cli("chat", "--cid", cid, "-f", "spec.md", "again?", cwd=tmp_path, env=env)
        assert one.returncode == two.returncode == three.returncode == 0, (one.stderr,
                                                                           two.stderr, three.stderr)  # fmt: skip
        # (Anthropic's prompt-cache marker moves to each request's newest message.)
        sent = [_uncached(r.json()["messages"]) for r in srv.requests]
        # The continued conversation starts with the very same first message.
        assert sent[1][0] == sent[2][0] == sent[0][0], api
        assert sent[1][-1]["content"] in ("shorter", [{"type": "text", "text": "shorter"}])
        if api == "anthropic-messages":
            assert sent[0][0]["content"][:2] == [
                {"type": "text", "text": "# Spec\nmust be fast\n"},
                {"type": "text", "text": "no newline at the end\n"},
            ]
            # A fragment used again in the same conversation is sent again, as given.
            assert sent[2][-1]["content"][0] == {"type": "text", "text": "# Spec\nmust be fast\n"}
    with closing(sqlite3.connect(_db(tmp_path))) as conn:
        assert conn.execute("SELECT count(*) FROM fragments").fetchone()[0] == 2
        stored = "".join(r[0] for r in conn.execute("SELECT messages_json FROM responses"))
    assert "must be fast" not in stored and "no newline at the end" not in stored


def test_run_and_the_chat_repl_take_fragments(tmp_path: Path) -> None:
    (tmp_path / "context.txt").write_text("the project is called Heron\n", encoding="utf-8")
    env = _data_env(tmp_path)
    with MockServer(["it is Heron", "hello", "again"]) as srv:
        run = cli("run", *_local(srv), "--root", str(tmp_path), "-f", "context.txt",
                  "what is the project called?", cwd=tmp_path, env=env)  # fmt: skip
        repl = cli("chat", *_local(srv), "-i", "-f", "context.txt", stdin="hi\nand now?\n",
                   cwd=tmp_path, env=env)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert srv.requests[0].json()["messages"][-1]["content"] == (
        "the project is called Heron\nwhat is the project called?")  # fmt: skip
    assert repl.returncode == 0, repl.stderr
    # The chat's first message carries the fragment; the next ones are the text alone.
    assert srv.requests[1].json()["messages"][-1]["content"] == "the project is called Heron\nhi"
    assert srv.requests[2].json()["messages"][-1]["content"] == "and now?"
    assert [len(r["fragments"]) for r in _rows(tmp_path)] == [1, 1, 1]


def test_an_existing_log_is_migrated(tmp_path: Path) -> None:
    db = _db(tmp_path)
    db.parent.mkdir(parents=True)
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        for statement in _schema._MIGRATIONS[0]:
            conn.execute(statement)
        conn.execute("PRAGMA user_version = 1")
        conn.execute(
            "INSERT INTO responses (conversation_id, started, api, provider, model, model_json, "
            "prompt, messages_json, response) VALUES ('old', 1.0, 'openai-chat', 'local', 'm', "
            "NULL, 'before', ?, 'yes')",
            (json.dumps([{"role": "user", "content": "before"},
                         {"role": "assistant", "content": [{"type": "text", "text": "yes"}],
                          "api": "openai-chat", "provider": "local", "model": "m"}]),),
        )  # fmt: skip
    (tmp_path / "f.txt").write_text("fragment text\n", encoding="utf-8")
    with MockServer(["new"]) as srv:
        proc = cli("chat", *_local(srv), "-f", "f.txt", "after", cwd=tmp_path,
                   env=_data_env(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == _log.SCHEMA_VERSION
    old, new = _rows(tmp_path)
    assert (old["prompt"], old["fragments"], old["messages"][0]["content"]) == (
        "before", [], "before")  # fmt: skip
    assert (new["prompt"], [f["sha256"] for f in new["fragments"]]) == (
        "after", [_sha(tmp_path / "f.txt")])  # fmt: skip
