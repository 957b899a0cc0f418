"""Daily-driver details of the CLI: any model id at an address of one's own (the SDK
base-URL variables, ``base_url`` in config.toml), ``--reasoning`` outside the catalog,
library advice put in CLI words, and ``--help`` texts that need no docs folder."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from modelwire._cli import build_parser
from modelwire.testing import MockServer
from test_cli import assert_one_line_error, cli
from test_cli_conventions import _data_env


def _config(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config" / "modelwire" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_openai_base_url_accepts_any_model_id(tmp_path: Path) -> None:
    with MockServer(["from the finetune"]) as srv:
        proc = cli("chat", "-m", "openai/my-finetune", "hi",
                   env={**_data_env(tmp_path), "OPENAI_BASE_URL": srv.model().base_url,
                        "OPENAI_API_KEY": "sk-x"})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "from the finetune\n"
    assert srv.requests[0].json()["model"] == "my-finetune"
    assert srv.requests[0].path == "/v1/chat/completions"


def test_anthropic_base_url_sends_any_id_with_the_providers_api(tmp_path: Path) -> None:
    with MockServer(["claude-ish"]) as srv:
        proc = cli("chat", "-m", "anthropic/house-model", "hi",
                   env={**_data_env(tmp_path), "ANTHROPIC_BASE_URL": srv.origin,
                        "ANTHROPIC_API_KEY": "k"})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert srv.requests[0].path == "/v1/messages"
    assert srv.requests[0].json()["model"] == "house-model"


def test_base_url_in_the_config_file_is_used(tmp_path: Path) -> None:
    env = _data_env(tmp_path)
    with MockServer(["configured"]) as srv:
        _config(tmp_path, f'model = "local/anything"\nbase_url = "{srv.model().base_url}"\n')
        proc = cli("chat", "hi", env=env)
    assert proc.returncode == 0, proc.stderr
    assert srv.requests[0].json()["model"] == "anything"
    _config(tmp_path, 'model = "local/anything"\nbase_url = "localhost:1"\n')
    bad = cli("chat", "hi", env=env)
    assert_one_line_error(bad, "configuration", "base_url in", "must be an http(s) URL")


def test_reasoning_outside_the_catalog_needs_the_user_to_say_it_reasons(tmp_path: Path) -> None:
    env = _data_env(tmp_path)
    with MockServer(["thought", "thought again"]) as srv:
        base = ["-m", "local/qwq", "--base-url", srv.model().base_url]
        refused = cli("chat", *base, "--reasoning", "high", "hi", env=env)
        allowed = cli("chat", *base, "--reasoning", "high", "--reasoning-model", "hi", env=env)
        _config(tmp_path, "reasoning_model = true\n")
        configured = cli("chat", *base, "-o", "reasoning", "low", "hi", env=env)
    assert_one_line_error(refused, "configuration", "local/qwq is not known to reason",
                          "--reasoning-model")  # fmt: skip
    assert "reasoning=None" not in refused.stderr
    assert allowed.returncode == 0 and configured.returncode == 0, allowed.stderr
    assert srv.requests[0].json()["reasoning_effort"] == "high"
    assert srv.requests[1].json()["reasoning_effort"] == "low"


def test_a_wrong_api_replay_is_told_in_cli_words(tmp_path: Path) -> None:
    from modelwire.testing import render

    path = tmp_path / "gemini.sse"
    path.write_bytes(render("hello", "google-generative-ai"))
    proc = cli("replay", "--api", "openai-chat", str(path))
    assert_one_line_error(proc, "malformed_chunk", "--api google-generative-ai")
    assert "mw.replay" not in proc.stderr and "api=" not in proc.stderr


def test_a_missing_key_says_the_variable_or_key(tmp_path: Path) -> None:
    proc = cli("chat", "-m", "openai/gpt-4.1-mini", "hi", env=_data_env(tmp_path))
    assert_one_line_error(proc, "missing_api_key", "OPENAI_API_KEY", "--key")
    assert "api_key=" not in proc.stderr


def _helps() -> dict[str, str]:
    parser = build_parser()
    out = {"modelwire": parser.format_help()}
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    choices: dict[str, argparse.ArgumentParser] = sub.choices  # type: ignore[assignment]
    for name, p in choices.items():
        out[name] = p.format_help()
    return out


@pytest.mark.parametrize("name", sorted(_helps()))
def test_help_is_self_contained(name: str) -> None:
    text = _helps()[name]
    assert not re.search(r"modelwire\.\w+\._", text), text  # no private module paths
    assert "docs/" not in text and "pydoc" not in text, text


def test_mock_server_help_carries_the_script_format() -> None:
    text = _helps()["mock-server"]
    assert "script format" in text and '"tool_calls"' in text and "cut_after" in text


def test_a_stopped_turn_is_settled_before_the_next_question() -> None:
    import modelwire as mw
    from modelwire._cli.chat import settle

    def assistant(text: str, reason: str) -> mw.AssistantMessage:
        content = [mw.TextContent(text=text)] if text else []
        err = mw.ErrorInfo(kind="aborted", message="stopped") if reason == "aborted" else None
        return mw.AssistantMessage(content=content, api="openai-chat", provider="p", model="m",
                                   stop_reason=reason, error=err)  # type: ignore[arg-type]  # fmt: skip

    ctx = mw.Context(messages=[
        mw.UserMessage(content="q1"), assistant("partial", "aborted"),
        mw.UserMessage(content="q2"), assistant("", "aborted"),
        mw.UserMessage(content="q3"),
    ])  # fmt: skip
    out = settle(ctx)
    assert [(m.role, getattr(m, "stop_reason", None)) for m in out.messages] == [
        ("user", None), ("assistant", "stop"), ("user", None)]  # fmt: skip
    kept = out.messages[1]
    assert isinstance(kept, mw.AssistantMessage) and kept.text == "partial" and kept.error is None
    assert [m.content for m in out.messages if m.role == "user"] == ["q1", "q3"]
    assert settle(out) is out  # nothing left to settle
    assert ctx.messages[1].stop_reason == "aborted"  # type: ignore[union-attr]  # the input is kept


def test_repl_commands_model_and_system() -> None:
    import modelwire as mw
    from modelwire._cli.output import Screen
    from modelwire._cli.repl import _command

    model = mw.Model(id="a", api="openai-chat", provider="local", base_url="http://127.0.0.1:9/v1")
    state = {"model": model}
    notes = Screen(plain=True)
    done, ctx = _command("/model local/b", mw.Context(), state, notes)
    assert not done and state["model"].id == "b" and state["model"].base_url == model.base_url
    done, ctx = _command("/system be terse", ctx, state, notes)
    assert ctx.system_prompt == "be terse"
    done, ctx = _command("/system -", ctx, state, notes)
    assert ctx.system_prompt is None
    assert _command("/exit", ctx, state, notes)[0] and _command("/quit", ctx, state, notes)[0]
