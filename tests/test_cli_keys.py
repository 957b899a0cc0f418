"""``modelwire keys``: API keys in keys.json (mode 0600, written atomically), used after
the provider's environment variable and after ``--key``; no output ever holds a key
except ``keys get``'s stdout. Commands run as subprocesses against a loopback
MockServer, which records the key each request carried."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from modelwire.testing import MockServer
from test_cli import assert_one_line_error, cli
from test_cli_conventions import _data_env
from test_terminal import TMUX, Pane, _cmd, pane  # noqa: F401  (the fixture)

SECRET = "sk-stored-0123456789abcdef"


def _path(tmp_path: Path) -> Path:
    return tmp_path / "config" / "modelwire" / "keys.json"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _auth(srv: MockServer) -> list[str]:
    return [r.headers["authorization"] for r in srv.requests]


def test_set_list_get_remove_and_the_file_mode(tmp_path: Path) -> None:
    env = _data_env(tmp_path)
    outputs: list[subprocess.CompletedProcess[str]] = []
    piped = cli("keys", "set", "openai", stdin=SECRET + "\n", env=env)
    flag = cli("keys", "set", "anthropic", "--value", "sk-ant-flag", env=env)
    outputs += [piped, flag]
    assert piped.returncode == 0 and flag.returncode == 0, piped.stderr
    path = _path(tmp_path)
    assert _mode(path) == 0o600
    assert json.loads(path.read_text(encoding="utf-8")) == {
        "anthropic": "sk-ant-flag", "openai": SECRET,  # the newline piped in is not kept
    }  # fmt: skip
    listed = cli("keys", "list", env=env)
    bare = cli("keys", env=env)
    outputs += [listed, bare]
    assert listed.stdout == bare.stdout == "anthropic\nopenai\n"
    got = cli("keys", "get", "openai", env=env)
    assert got.stdout == SECRET + "\n" and got.stderr == ""
    assert cli("keys", "path", env=env).stdout == f"{path}\n"
    removed = cli("keys", "remove", "openai", env=env)
    outputs.append(removed)
    assert removed.returncode == 0, removed.stderr
    assert json.loads(path.read_text(encoding="utf-8")) == {"anthropic": "sk-ant-flag"}
    assert _mode(path) == 0o600  # the replacement is created 0600 too
    missing = cli("keys", "remove", "openai", env=env)
    assert_one_line_error(missing, "not_found", "no key stored for 'openai'")
    typo = cli("keys", "get", "anthropc", env=env)
    assert_one_line_error(typo, "not_found", "did you mean anthropic?")
    outputs += [missing, typo]
    for proc in outputs:
        assert SECRET not in proc.stdout + proc.stderr
        assert "sk-ant-flag" not in proc.stdout + proc.stderr
    # Nothing left behind by the atomic writes.
    assert sorted(p.name for p in path.parent.iterdir()) == ["keys.json"]


def test_a_stored_key_is_used_after_the_environment_and_key(tmp_path: Path) -> None:
    env = _data_env(tmp_path)
    assert cli("keys", "set", "openai", "--value", SECRET, env=env).returncode == 0
    with MockServer(["one", "two", "three"]) as srv:
        env["OPENAI_BASE_URL"] = srv.model().base_url
        stored = cli("chat", "-m", "openai/gpt-4.1-mini", "hi", env=env)
        from_env = cli("chat", "-m", "openai/gpt-4.1-mini", "hi",
                       env={**env, "OPENAI_API_KEY": "sk-from-env"})  # fmt: skip
        flag = cli("chat", "-m", "openai/gpt-4.1-mini", "--key", "sk-from-flag", "hi",
                   env={**env, "OPENAI_API_KEY": "sk-from-env"})  # fmt: skip
    for proc in (stored, from_env, flag):
        assert proc.returncode == 0, proc.stderr
        assert SECRET not in proc.stdout + proc.stderr
    assert _auth(srv) == [f"Bearer {SECRET}", "Bearer sk-from-env", "Bearer sk-from-flag"]


def test_a_key_stored_under_a_provider_alias_is_found(tmp_path: Path) -> None:
    env = _data_env(tmp_path)
    assert cli("keys", "set", "gemini", "--value", "gm-key-123", env=env).returncode == 0
    with MockServer(["from gemini"]) as srv:
        env["GOOGLE_GEMINI_BASE_URL"] = srv.origin
        proc = cli("chat", "-m", "google/gemini-2.5-flash", "hi", env=env)
    assert proc.returncode == 0, proc.stderr
    assert srv.requests[0].headers["x-goog-api-key"] == "gm-key-123"


def test_trace_never_shows_the_stored_key(tmp_path: Path) -> None:
    env = _data_env(tmp_path)
    cli("keys", "set", "openai", "--value", SECRET, env=env)
    with MockServer(["traced"]) as srv:
        env["OPENAI_BASE_URL"] = srv.model().base_url
        proc = cli("trace", "-m", "openai/gpt-4.1-mini", "hi", env=env)
    assert proc.returncode == 0, proc.stderr
    assert _auth(srv) == [f"Bearer {SECRET}"]
    assert "[redacted]" in proc.stdout and SECRET not in proc.stdout + proc.stderr


def test_a_missing_key_error_says_how_to_store_one(tmp_path: Path) -> None:
    proc = cli("chat", "-m", "anthropic/claude-sonnet-4-5", "hi", env=_data_env(tmp_path))
    assert_one_line_error(proc, "missing_api_key", "ANTHROPIC_API_KEY", "--key",
                          "modelwire keys set anthropic")  # fmt: skip
    assert proc.returncode == 2


def test_a_file_readable_by_others_is_narrowed_with_a_warning(tmp_path: Path) -> None:
    env = _data_env(tmp_path)
    path = _path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"openai": SECRET}), encoding="utf-8")
    os.chmod(path, 0o644)
    proc = cli("keys", "list", env=env)
    assert proc.returncode == 0 and proc.stdout == "openai\n"
    assert proc.stderr.startswith("modelwire: warning: ") and "mode 644" in proc.stderr
    assert _mode(path) == 0o600
    assert SECRET not in proc.stderr


def test_bad_values_names_and_files_are_refused_without_echo(tmp_path: Path) -> None:
    env = _data_env(tmp_path)
    empty = cli("keys", "set", "openai", stdin="", env=env)
    assert_one_line_error(empty, "usage", "no key given")
    spaced = cli("keys", "set", "openai", "--value", "sk-has space ", env=env)
    assert_one_line_error(spaced, "configuration", "whitespace")
    assert "sk-has" not in spaced.stderr
    assert_one_line_error(cli("keys", "set", "../x", "--value", "k", env=env), "usage",
                          "is not allowed")  # fmt: skip
    assert not _path(tmp_path).exists()
    unknown = cli("keys", "set", "opneai", "--value", SECRET, env=env)
    assert unknown.returncode == 0
    assert "warning" in unknown.stderr and "did you mean openai?" in unknown.stderr
    assert SECRET not in unknown.stdout + unknown.stderr
    _path(tmp_path).write_text('{"openai": 5}', encoding="utf-8")
    os.chmod(_path(tmp_path), 0o600)
    assert_one_line_error(cli("keys", "list", env=env), "configuration", "keys.json",
                          "JSON object")  # fmt: skip


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed (CI installs it)")
def test_set_on_a_terminal_asks_without_echo(pane: Pane, tmp_path: Path) -> None:  # noqa: F811
    pane.type(_cmd("keys", "set", "openai"))
    pane.wait_for(lambda s: "Key for openai (not shown):" in s, "the hidden prompt")
    # Typed by hand: Pane.type waits for the echo, which a hidden prompt never shows.
    pane.tmux("send-keys", "-t", "t", "-l", SECRET)
    pane.key("Enter")
    screen = pane.wait_for(lambda s: "key openai stored" in s, "the confirmation")
    assert SECRET not in pane.screen(joined=True) and SECRET not in screen
    assert json.loads(_path(tmp_path).read_text(encoding="utf-8")) == {"openai": SECRET}
    assert _mode(_path(tmp_path)) == 0o600


def test_batch_uses_stored_keys_per_provider_after_the_environment(tmp_path: Path) -> None:
    env = _data_env(tmp_path)
    cli("keys", "set", "openai", "--value", SECRET, env=env)
    cli("keys", "set", "anthropic", "--value", "sk-ant-stored", env=env)
    src = tmp_path / "in.jsonl"
    lines = [{"custom_id": "o", "model": "openai/gpt-4.1-mini", "prompt": "a"},
             {"custom_id": "a", "model": "anthropic/claude-sonnet-4-5", "prompt": "b"}]  # fmt: skip
    src.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    with MockServer(["done"], repeat_last=True) as srv:
        base = ["batch", str(src), "--base-url", srv.base_url, "--concurrency", "1", "--plain"]
        stored = cli(*base, "-o", str(tmp_path / "1.jsonl"), env=env)
        from_env = cli(*base, "-o", str(tmp_path / "2.jsonl"),
                       env={**env, "ANTHROPIC_API_KEY": "sk-ant-env"})  # fmt: skip
    assert stored.returncode == 0 and from_env.returncode == 0, stored.stderr + from_env.stderr
    sent = sorted(
        (r.path, r.headers.get("authorization") or r.headers.get("x-api-key")) for r in srv.requests
    )
    assert sent == sorted([
        ("/v1/chat/completions", f"Bearer {SECRET}"), ("/v1/messages", "sk-ant-stored"),
        ("/v1/chat/completions", f"Bearer {SECRET}"), ("/v1/messages", "sk-ant-env"),
    ])  # fmt: skip
    for proc in (stored, from_env):
        assert SECRET not in proc.stdout + proc.stderr


def test_each_provider_gets_its_own_stored_key_after_model(tmp_path: Path) -> None:
    env = _data_env(tmp_path)
    cli("keys", "set", "openai", "--value", SECRET, env=env)
    cli("keys", "set", "anthropic", "--value", "sk-ant-stored", env=env)
    # A key that cannot be a header is skipped with a warning, not sent, not fatal.
    keys = json.loads(_path(tmp_path).read_text(encoding="utf-8"))
    _path(tmp_path).write_text(json.dumps({**keys, "mistral": "bad key\n"}), encoding="utf-8")
    with MockServer(["first", "second"]) as srv:
        env.update(OPENAI_BASE_URL=srv.model().base_url, ANTHROPIC_BASE_URL=srv.origin)
        proc = cli("chat", "-m", "openai/gpt-4.1-mini", "-i",
                   stdin="hi\n/model anthropic/claude-sonnet-4-5\nhi again\n", env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [(r.path, r.headers.get("authorization") or r.headers.get("x-api-key"))
            for r in srv.requests] == [("/v1/chat/completions", f"Bearer {SECRET}"),
                                       ("/v1/messages", "sk-ant-stored")]  # fmt: skip
    assert "the key stored for mistral" in proc.stderr and "bad key" not in proc.stderr
