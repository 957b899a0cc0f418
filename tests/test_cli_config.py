"""``config.toml`` and ``-o``, checked: an unknown key names the nearest known one, a
wrong value says what it must be, ``-o extra.NAME`` is the one way to a body field, the
README's config block works as printed and flags win over it. Also what reads the
default model (``trace``) and a conversation id by its prefix (``logs``/``chat --cid``).
Each test runs ``python -m modelwire`` against a loopback MockServer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import modelwire as mw
from modelwire.testing import MockServer
from test_cli import _local, assert_one_line_error, cli
from test_cli_conventions import _data_env
from test_docs import README, blocks


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config" / "modelwire" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _system(body: dict[str, object]) -> object:
    messages = body["messages"]
    assert isinstance(messages, list)
    return next(m["content"] for m in messages if m["role"] in ("system", "developer"))


# --------------------------------------------------------------------------- the README's file


def test_the_readme_config_block_is_applied_and_flags_win(tmp_path: Path) -> None:
    (block,) = [b for b in blocks(README) if b.lang == "toml"]
    _config(tmp_path, block.body)
    env = {**_data_env(tmp_path), "OPENAI_API_KEY": "sk-x"}
    with MockServer(["a", "b", "c"]) as srv:
        base = ["--base-url", srv.model().base_url]
        per_model = cli("chat", *base, "hi", env=env)  # model = "openai/gpt-4.1-mini"
        other = cli("chat", *base, "-m", "local/other", "hi", env=env)
        flags = cli("chat", *base, "--system", "flag", "--temperature", "0.1", "--max-tokens", "9",
                    "-o", "extra.top_k", "3", "hi", env=env)  # fmt: skip
    for proc in (per_model, other, flags):
        assert proc.returncode == 0, proc.stderr
    first, second, third = (r.json() for r in srv.requests)
    assert srv.requests[0].path == "/v1/chat/completions" and first["model"] == "gpt-4.1-mini"
    # [models."openai/gpt-4.1-mini"] over the top level; [options] for every call.
    assert _system(first) == "Answer in one sentence." and first["temperature"] == 0.5
    assert first["max_completion_tokens"] == 2000 and first["top_k"] == 40
    assert _system(second) == "Answer briefly." and second["temperature"] == 0.3
    assert second["max_tokens"] == 2000 and second["top_k"] == 40
    assert _system(third) == "flag" and third["temperature"] == 0.1
    assert third["max_completion_tokens"] == 9 and third["top_k"] == 3


def test_per_model_options_and_reasoning_model(tmp_path: Path) -> None:
    _config(
        tmp_path, '[models."local/qwq"]\nreasoning_model = true\noptions = { reasoning = "low" }\n'
    )
    with MockServer(["thought"]) as srv:
        proc = cli("chat", "-m", "local/qwq", "--base-url", srv.model().base_url, "hi",
                   env=_data_env(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert srv.requests[0].json()["reasoning_effort"] == "low"


# --------------------------------------------------------------------------- config mistakes


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ('modle = "openai/gpt-4.1-mini"\n', ["unknown key 'modle'", "did you mean 'model'?",
                                              "the keys are base_url, log, max_tokens"]),
        ("[options]\ntemprature = 0.2\n", ["options.temprature: unknown option",
                                          "did you mean 'temperature'?"]),
        ('[models."local/m"]\nsytem = "x"\n', ["unknown key models.\"local/m\".'sytem'",
                                               "did you mean 'system'?"]),
        ('temperature = "hot"\n', ['temperature must be a number, got "hot"']),
        ("max_tokens = 0\n", ["max_tokens: max_tokens must be a positive integer"]),
        ("log = 1\n", ["log must be true or false, got 1"]),
        ("options = 3\n", ["options must be a table"]),
        ("[options]\nreasoning = \"hgih\"\n", ["options.reasoning: reasoning must be one of"]),
        ("[options]\nextra = 5\n", ["options.extra must be a table of body fields"]),
        ("[options]\napi_key = \"sk\"\n", ["options.api_key: set it with --key"]),
        ('[models.gpt]\nsystem = "x"\n', ['models."gpt": name a model as "provider/model"']),
        ('[models]\n"a/b" = 3\n', ['models."a/b" must be a table, got 3']),
    ],
)  # fmt: skip
def test_a_config_mistake_names_the_key_and_what_it_must_be(
    text: str, needles: list[str], tmp_path: Path
) -> None:
    path = _config(tmp_path, text)
    with MockServer(["never"]) as srv:
        proc = cli("chat", *_local(srv), "hi", env=_data_env(tmp_path))
    assert_one_line_error(proc, "configuration", str(path), *needles)
    assert proc.returncode == 2 and srv.requests == []


def test_a_config_mistake_stops_every_command_that_reads_it(tmp_path: Path) -> None:
    _config(tmp_path, 'modle = "x"\n')
    env = _data_env(tmp_path)
    with MockServer(["never"]) as srv:
        procs = [
            cli("run", *_local(srv), "--root", str(tmp_path), "task", env=env),
            cli("trace", *_local(srv), "hi", env=env),
            cli("chat", "hi", env=env),
        ]
    for proc in procs:
        assert_one_line_error(proc, "configuration", "did you mean 'model'?")
    assert srv.requests == []


# --------------------------------------------------------------------------- -o KEY VALUE


@pytest.mark.parametrize(
    ("option", "kind", "needles"),
    [
        (["temprature", "0.2"], "usage", ["-o temprature: unknown option",
                                          "did you mean 'temperature'?", "extra.NAME"]),
        (["top_k", "5"], "usage", ["-o top_k: unknown option", "extra.NAME"]),
        (["temperature", "hot"], "usage", ["-o temperature hot: temperature must be a number"]),
        (["temperature", "-1"], "usage", ["temperature must be a finite number >= 0"]),
        (["max_tokens", "many"], "usage", ["max_tokens must be a positive integer"]),
        (["tool_choice", "sometimes"], "usage", ["tool_choice must be"]),
        (["parallel_tool_calls", "yes"], "usage", ["parallel_tool_calls must be a bool"]),
        (["output_mode", "json"], "usage", ["output_mode must be one of native, tool, prompted"]),
        (["cache", "1"], "usage", ["cache must be true or false"]),
        (["background", "yes"], "usage", ["background must be a bool"]),
        (["api_key", "sk"], "usage", ["-o api_key: set it with --key"]),
        (["extra.", "5"], "usage", ["name the body field"]),
    ],
)  # fmt: skip
def test_an_option_is_checked_before_anything_is_sent(
    option: list[str], kind: str, needles: list[str], tmp_path: Path
) -> None:
    with MockServer(["never"]) as srv:
        proc = cli("chat", *_local(srv), "-o", *option, "hi", env=_data_env(tmp_path))
    assert_one_line_error(proc, kind, *needles)
    assert proc.returncode == 2 and srv.requests == []


def test_options_and_extra_fields_reach_the_body(tmp_path: Path) -> None:
    with MockServer(["ok"]) as srv:
        proc = cli("chat", *_local(srv), "-o", "temperature", "0.5", "-o", "max_tokens", "12",
                   "-o", "extra.top_k", "5", "-o", "extra.stop", '["END"]',
                   "-o", "session_id", "0123", "hi", env=_data_env(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    body = srv.requests[0].json()
    assert (body["temperature"], body["max_tokens"]) == (0.5, 12)
    assert (body["top_k"], body["stop"]) == (5, ["END"])


def test_a_background_response_cut_mid_stream_is_picked_up(tmp_path: Path) -> None:
    from modelwire.testing import Reply

    with MockServer([Reply(message="The answer is 42.", cut_after=1500)]) as srv:
        proc = cli("chat", "-m", "local/m", "--base-url", srv.model().base_url, "--api",
                   "openai-responses", "--no-log", "-o", "background", "true", "hi",
                   env=_data_env(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "The answer is 42."
    assert [r.method for r in srv.requests] == ["POST", "GET"]
    assert srv.requests[0].json()["background"] is True


# --------------------------------------------------------------------------- trace's default model


def test_trace_uses_the_default_model_from_the_environment_and_the_config(tmp_path: Path) -> None:
    env = _data_env(tmp_path)
    with MockServer(["traced", "traced again"]) as srv:
        from_env = cli("trace", "say", "hi", env={**env, "MODELWIRE_MODEL": "local/env-model",
                                                  "OPENAI_BASE_URL": srv.model().base_url})  # fmt: skip
        _config(tmp_path, f'model = "local/config-model"\nbase_url = "{srv.model().base_url}"\n')
        from_config = cli("trace", "say hi", env=env)
    assert from_env.returncode == 0, from_env.stderr
    assert from_config.returncode == 0, from_config.stderr
    assert [r.json()["model"] for r in srv.requests] == ["env-model", "config-model"]
    assert "traced" in from_env.stdout and "local/config-model" in from_config.stdout


def test_trace_of_a_file_stays_offline_with_a_default_model(tmp_path: Path) -> None:
    from modelwire.testing import render

    path = tmp_path / "call.sse"
    path.write_bytes(render("offline text", "openai-chat"))
    with MockServer(["never"]) as srv:
        env = {**_data_env(tmp_path), "MODELWIRE_MODEL": "local/m",
               "OPENAI_BASE_URL": srv.model().base_url}  # fmt: skip
        proc = cli("trace", "--api", "openai-chat", str(path), env=env)
    assert proc.returncode == 0, proc.stderr
    assert "offline text" in proc.stdout and srv.requests == []


def test_trace_without_any_model_says_how_to_name_one(tmp_path: Path) -> None:
    proc = cli("trace", "say", "hi", env=_data_env(tmp_path))
    assert_one_line_error(proc, "usage", "MODELWIRE_MODEL", "config.toml")


# --------------------------------------------------------------------------- --cid PREFIX


def _conversations(tmp_path: Path, ids: list[str]) -> None:
    db = tmp_path / "data" / "modelwire" / "logs.db"
    with MockServer([f"answer in {c}" for c in ids]) as srv:
        for cid in ids:
            ctx = mw.Context(messages=[mw.UserMessage(content=f"question in {cid}")])
            mw.complete_sync(srv.model(), ctx, log=db, session_id=cid)


def test_a_unique_prefix_names_a_conversation(tmp_path: Path) -> None:
    _conversations(tmp_path, ["abc123", "abc456", "fed789"])
    env = _data_env(tmp_path)
    proc = cli("logs", "--json", "--cid", "abc4", env=env)
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["prompt"] for line in proc.stdout.splitlines()] == [
        "question in abc456"]  # fmt: skip
    ambiguous = cli("logs", "--cid", "abc", env=env)
    assert_one_line_error(ambiguous, "usage", "matches 2 conversations", "abc456, abc123",
                          "give more of the id")  # fmt: skip
    assert ambiguous.returncode == 2
    missing = cli("logs", "--cid", "zzz", env=env)
    assert_one_line_error(missing, "not_found", "no conversation 'zzz'")
    with MockServer(["continued"]) as srv:
        again = cli("chat", "--cid", "fed", *_local(srv), "and then?", env=env)
        both = cli("chat", "--cid", "abc", *_local(srv), "and then?", env=env)
    assert again.returncode == 0, again.stderr
    sent = srv.requests[0].json()["messages"]
    assert [m["content"] for m in sent] == ["question in fed789", "answer in fed789", "and then?"]
    assert_one_line_error(both, "usage", "matches 2 conversations")
    assert len(srv.requests) == 1
