"""``modelwire aliases``: ALIAS → PROVIDER/MODEL in aliases.json, resolved wherever a model
is named (-m of chat, prompt, run and trace, $MODELWIRE_MODEL, config.toml, a template).
Commands run as subprocesses against a loopback MockServer that records the model id
each request named."""

from __future__ import annotations

import json
from pathlib import Path

from modelwire.testing import MockServer
from test_cli import assert_one_line_error, cli
from test_cli_conventions import _data_env


def _path(tmp_path: Path) -> Path:
    return tmp_path / "config" / "modelwire" / "aliases.json"


def test_set_list_remove_path(tmp_path: Path) -> None:
    env = {**_data_env(tmp_path), "NO_COLOR": "1"}
    empty = cli("aliases", env=env)
    assert empty.returncode == 0 and "no aliases yet" in empty.stdout
    for alias, model in (("fast", "openai/gpt-4.1-mini"), ("smart", "anthropic/claude-sonnet-4-5")):
        proc = cli("aliases", "set", alias, model, env=env)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        assert f"{alias} → {model}" in proc.stdout
    assert json.loads(_path(tmp_path).read_text(encoding="utf-8")) == {
        "fast": "openai/gpt-4.1-mini", "smart": "anthropic/claude-sonnet-4-5",
    }  # fmt: skip
    table = cli("aliases", "list", env=env)
    assert [line.split() for line in table.stdout.splitlines()] == [
        ["alias", "model"], ["fast", "openai/gpt-4.1-mini"],
        ["smart", "anthropic/claude-sonnet-4-5"],
    ]  # fmt: skip
    as_json = cli("aliases", "list", "--json", env=env)
    assert [json.loads(x) for x in as_json.stdout.splitlines()] == [
        {"alias": "fast", "model": "openai/gpt-4.1-mini"},
        {"alias": "smart", "model": "anthropic/claude-sonnet-4-5"},
    ]
    assert cli("aliases", "remove", "fast", env=env).returncode == 0
    assert json.loads(_path(tmp_path).read_text(encoding="utf-8")) == {
        "smart": "anthropic/claude-sonnet-4-5"
    }
    gone = cli("aliases", "remove", "fats", env=env)
    assert_one_line_error(gone, "not_found", "no alias 'fats'")
    typo = cli("aliases", "remove", "smrat", env=env)
    assert_one_line_error(typo, "not_found", "did you mean smart?")
    assert cli("aliases", "path", env=env).stdout == f"{_path(tmp_path)}\n"


def test_an_alias_is_resolved_wherever_a_model_is_named(tmp_path: Path) -> None:
    env = _data_env(tmp_path)
    cli("aliases", "set", "mine", "local/aliased-model", env=env)
    config = tmp_path / "config" / "modelwire" / "config.toml"
    with MockServer(["answer"], repeat_last=True) as srv:
        env["OPENAI_BASE_URL"] = srv.model().base_url
        runs = [
            cli("chat", "-m", "mine", "hi", env=env),
            cli("prompt", "-m", "mine", "hi", env=env),
            cli("run", "-m", "mine", "--root", str(tmp_path), "list files", env=env),
            cli("trace", "-m", "mine", "hi", env=env),
            cli("chat", "hi", env={**env, "MODELWIRE_MODEL": "mine"}),
        ]
        config.write_text('model = "mine"\n', encoding="utf-8")
        runs.append(cli("chat", "hi", env=env))
        config.unlink()
        cli("chat", "-m", "mine", "--save", "t", env=env)
        runs.append(cli("chat", "-t", "t", "hi", env=env))
    for proc in runs:
        assert proc.returncode == 0, proc.stderr
    assert [r.json()["model"] for r in srv.requests] == ["aliased-model"] * len(runs)


def test_an_alias_may_be_named_like_a_model(tmp_path: Path) -> None:
    env = _data_env(tmp_path)
    proc = cli("aliases", "set", "openai/gpt-4o", "openai/gpt-4.1-mini", env=env)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    with MockServer(["ok"]) as srv:
        env.update(OPENAI_BASE_URL=srv.model().base_url, OPENAI_API_KEY="sk-x")
        chat = cli("chat", "-m", "openai/gpt-4o", "hi", env=env)
    assert chat.returncode == 0, chat.stderr
    assert srv.requests[0].json()["model"] == "gpt-4.1-mini"


def test_a_model_outside_the_catalog_is_a_warning_and_a_bad_target_an_error(
    tmp_path: Path,
) -> None:
    env = _data_env(tmp_path)
    unknown = cli("aliases", "set", "next", "openai/gpt-4.1-mnii", env=env)
    assert unknown.returncode == 0
    assert unknown.stderr.startswith("modelwire: warning: openai/gpt-4.1-mnii is not in the ")
    assert "did you mean openai/gpt-4.1-mini?" in unknown.stderr
    local = cli("aliases", "set", "mine", "local/qwen3", env=env)
    assert local.returncode == 0 and local.stderr == ""  # local/ is never in the catalog
    for bad in ("gpt-4o", "openai/", "/gpt-4o", "openai/gpt 4o"):
        assert_one_line_error(cli("aliases", "set", "x", bad, env=env), "usage",
                              "PROVIDER/MODEL")  # fmt: skip
    assert_one_line_error(cli("aliases", "set", "two words", "local/m", env=env), "usage",
                          "not allowed")  # fmt: skip
    assert json.loads(_path(tmp_path).read_text(encoding="utf-8")) == {
        "next": "openai/gpt-4.1-mnii", "mine": "local/qwen3",
    }  # fmt: skip
    _path(tmp_path).write_text("[1, 2]", encoding="utf-8")
    broken = cli("chat", "-m", "mine", "hi", env=env)
    assert_one_line_error(broken, "configuration", str(_path(tmp_path)), "JSON object")
