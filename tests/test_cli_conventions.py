"""The CLI behaves like its peers: conventions users bring from the SDKs and
``llm`` — base-URL variables, stdin prompts, --key/--system/-o/--no-stream, a default
model, ``chat -c`` — plus NO_COLOR, one error line and Ctrl-C. Each test runs
``python -m modelwire`` as a subprocess against a loopback MockServer."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import modelwire as mw
from modelwire import _catalog as catalog
from modelwire.testing import MockServer, Reply
from test_cli import _env, _local, assert_one_line_error, cli


def _data_env(tmp_path: Path) -> dict[str, str]:
    return {
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "HOME": str(tmp_path / "home"),
    }


# --------------------------------------------------------------------------- base URL variables


@pytest.mark.parametrize(
    ("provider", "model", "var", "key_var", "base", "path"),
    [
        ("openai", "gpt-4.1-mini", "OPENAI_BASE_URL", "OPENAI_API_KEY", "v1", "/v1/chat/completions"),
        # The Anthropic and Gemini SDKs take the server root and add the version themselves.
        ("anthropic", "claude-haiku-4-5", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "", "/v1/messages"),
        ("google", "gemini-2.5-flash", "GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY", "",
         "/v1beta/models/gemini-2.5-flash:streamGenerateContent"),
    ],
)  # fmt: skip
def test_sdk_base_url_variables_are_read_without_base_url(
    provider: str, model: str, var: str, key_var: str, base: str, path: str
) -> None:
    key_var = catalog.env_vars(provider)[0] if catalog.env_vars(provider) else key_var
    with MockServer(["hi from the env"]) as srv:
        url = srv.origin + (f"/{base}" if base else "")
        proc = cli("chat", "-m", f"{provider}/{model}", "hello",
                   env={var: url, key_var: "sk-test-env"})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hi from the env\n"
    assert srv.requests[0].path.startswith(path)


@pytest.mark.parametrize("spec", ["openai/smollm2", "local/smollm2", "openai/gpt-4.1-mini",
                                  "openai/gpt-5-mini"])  # fmt: skip
def test_the_cli_and_the_library_resolve_a_model_string_alike(
    spec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One rule (DESIGN §2d): an id the catalog does not list at OPENAI_BASE_URL is a
    # Chat Completions model, as local/<id> is; a catalog entry keeps its own API.
    with MockServer(["same"], repeat_last=True) as srv:
        env = {"OPENAI_BASE_URL": srv.model().base_url, "OPENAI_API_KEY": "sk-test"}
        by_cli = cli("chat", "-m", spec, "hi", env=env)
        for var, value in env.items():
            monkeypatch.setenv(var, value)
        by_library = mw.complete_sync(spec, "hi")
    assert by_cli.returncode == 0 and by_cli.stdout == "same\n", by_cli.stderr
    assert by_library.text == "same"
    (one, two) = srv.requests
    path = "/v1/responses" if spec.endswith("gpt-5-mini") else "/v1/chat/completions"
    assert one.path == two.path == path
    assert one.json() == two.json() and one.json()["model"] == spec.partition("/")[2]


def test_local_without_an_address_says_what_to_set() -> None:
    proc = cli("chat", "-m", "local/smollm2", "hi")
    assert_one_line_error(proc, "configuration", "--base-url", "OPENAI_BASE_URL")


def test_a_bad_base_url_variable_is_one_clear_error() -> None:
    proc = cli("chat", "-m", "openai/gpt-4.1-mini", "hi",
               env={"OPENAI_BASE_URL": "localhost:8000", "OPENAI_API_KEY": "k"})  # fmt: skip
    assert_one_line_error(proc, "configuration", "OPENAI_BASE_URL must be an http(s) URL")


def test_base_url_flag_wins_over_the_variable() -> None:
    with MockServer(["flag"]) as srv:
        proc = cli("chat", *_local(srv), "hi", env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert proc.returncode == 0 and proc.stdout == "flag\n", proc.stderr


# --------------------------------------------------------------------------- stdin, options


def test_piped_stdin_is_the_prompt_and_the_argument_is_appended() -> None:
    with MockServer(["ok", "ok"]) as srv:
        both = cli("chat", *_local(srv), "summarise", "this", stdin="line one\nline two\n")
        dash = cli("chat", *_local(srv), "-", stdin="only stdin\n")
    assert both.returncode == 0 and dash.returncode == 0, both.stderr + dash.stderr
    first, second = (r.json()["messages"][-1]["content"] for r in srv.requests)
    assert first == "line one\nline two\n\nsummarise this"
    assert second == "only stdin"


def test_no_prompt_at_all_is_a_usage_error() -> None:
    with MockServer([]) as srv:
        proc = cli("chat", *_local(srv), stdin="")
    assert_one_line_error(proc, "usage", "no prompt")
    assert srv.requests == []


def test_key_system_and_options_reach_the_request() -> None:
    with MockServer(["ok"]) as srv:
        proc = cli(
            "chat", *_local(srv, "anthropic-messages"), "--key", "sk-from-flag",
            "--system", "be brief", "-o", "temperature", "0.25", "-o", "max_tokens", "77",
            "-o", "extra.top_k", "5", "hi",
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    req = srv.requests[0]
    body = req.json()
    assert req.headers["x-api-key"] == "sk-from-flag"
    assert "be brief" in json.dumps(body["system"])
    assert body["temperature"] == 0.25 and body["max_tokens"] == 77 and body["top_k"] == 5
    assert "sk-from-flag" not in proc.stdout + proc.stderr


def test_key_flag_satisfies_a_provider_that_needs_one() -> None:
    with MockServer(["ok"]) as srv:
        proc = cli("chat", "-m", "openai/gpt-4.1-mini", "--key", "sk-k", "hi",
                   env={"OPENAI_BASE_URL": srv.model().base_url})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert srv.requests[0].headers["authorization"] == "Bearer sk-k"


def test_no_stream_prints_the_answer_once() -> None:
    with MockServer([Reply(message="whole answer", piece_chars=2)]) as srv:
        proc = cli("chat", *_local(srv), "--no-stream", "hi")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "whole answer\n"


def test_usage_flag_prints_usage_on_stderr() -> None:
    with MockServer(["ok"]) as srv:
        proc = cli("chat", *_local(srv), "-u", "hi")
    assert proc.stdout == "ok\n"
    assert proc.stderr.startswith("usage: ")


# --------------------------------------------------------------------------- default model, -c


def test_default_model_from_the_environment_and_the_config_file(tmp_path: Path) -> None:
    env = _data_env(tmp_path)
    with MockServer(["a", "b"]) as srv:
        base = ["--base-url", srv.model().base_url]
        by_env = cli("chat", *base, "hi", env={**env, "MODELWIRE_MODEL": "local/from-env"})
        config = tmp_path / "config" / "modelwire" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text('model = "local/from-config"\n', encoding="utf-8")
        by_file = cli("chat", *base, "hi", env=env)
    assert by_env.returncode == 0 and by_file.returncode == 0, by_env.stderr + by_file.stderr
    assert [r.json()["model"] for r in srv.requests] == ["from-env", "from-config"]


def test_no_model_anywhere_says_how_to_set_one(tmp_path: Path) -> None:
    proc = cli("chat", "hi", env=_data_env(tmp_path))
    assert_one_line_error(proc, "usage", "-m PROVIDER/MODEL", "MODELWIRE_MODEL", "config.toml")


def test_chat_continue_resumes_the_last_conversation(tmp_path: Path) -> None:
    env = _data_env(tmp_path)
    with MockServer(["first answer", "second answer"]) as srv:
        one = cli("chat", *_local(srv), "first question", env=env)
        two = cli("chat", "-c", "second question", env=env)  # model and address remembered
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    assert two.stdout == "second answer\n"
    messages = srv.requests[1].json()["messages"]
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "first question"), ("assistant", "first answer"), ("user", "second question"),
    ]  # fmt: skip
    logged = cli("logs", "-n", "0", "--json", env=env)
    rows = [json.loads(line) for line in logged.stdout.splitlines()]
    assert len(rows) == 2 and rows[0]["conversation_id"] == rows[1]["conversation_id"]
    assert len(rows[1]["messages"]) == 4


def test_chat_continue_without_history_is_one_error(tmp_path: Path) -> None:
    proc = cli("chat", "-c", "hi", env=_data_env(tmp_path))
    assert_one_line_error(proc, "not_found", "no conversation to continue")
    unknown = cli("chat", "--cid", "nope", "hi", env=_data_env(tmp_path))
    assert_one_line_error(unknown, "not_found", "no conversation 'nope'")


# --------------------------------------------------------------------------- errors, Ctrl-C


def test_an_error_is_printed_once(tmp_path: Path) -> None:
    with MockServer([Reply(message="partial answer", cut_after=60)]) as srv:
        proc = cli("chat", *_local(srv), "hi")
    assert_one_line_error(proc, "stream_interrupted")
    assert "stream_interrupted" not in proc.stdout and "✗" not in proc.stdout


def _start_chat(srv: MockServer, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "modelwire", "chat", *_local(srv), *extra, "hi"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, encoding="utf-8", env={**_env(), "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip


def _interrupt_after_first_output(
    proc: subprocess.Popen[str], *, json_lines: bool = False
) -> tuple[str, str]:
    assert proc.stdout is not None
    if json_lines:  # wait for the first text_delta line, not just `start`
        first = ""
        while '"text_delta"' not in first:
            line = proc.stdout.readline()
            assert line, first
            first += line
    else:
        first = proc.stdout.read(1)  # the answer has started streaming
        assert first
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    return first + out, err


def test_ctrl_c_with_json_ends_with_the_aborted_event() -> None:
    slow = Reply(message="one two three four five six seven eight", piece_chars=2, delay=0.2)
    with MockServer([slow]) as srv:
        proc = _start_chat(srv, "--json")
        out, err = _interrupt_after_first_output(proc, json_lines=True)
    assert proc.returncode == 130, err
    last = json.loads(out.splitlines()[-1])
    assert last["type"] == "error" and last["reason"] == "aborted"
    partial = last["message"]["content"][0]["text"]
    assert partial and "one two three four five six seven eight".startswith(partial)
    assert partial != "one two three four five six seven eight"
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("modelwire: error [")


def test_ctrl_c_error_starts_on_a_new_line() -> None:
    slow = Reply(message="abcdefghijklmnopqrstuvwxyz", piece_chars=1, delay=0.2)
    with MockServer([slow]) as srv:
        proc = _start_chat(srv)
        out, err = _interrupt_after_first_output(proc)
    assert proc.returncode == 130
    assert out and out.endswith("\n") and "abcdefghijklmnopqrstuvwxyz".startswith(out.strip())
    assert err.count("\n") == 1 and err.startswith("modelwire: error [interrupted]"), err


# --------------------------------------------------------------------------- NO_COLOR


def _in_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """Run the CLI with stdout and stderr on a pseudo-terminal; everything it wrote."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "modelwire", *args], stdin=subprocess.DEVNULL,
        stdout=follower, stderr=follower, env={**_env(), "TERM": "xterm-256color", **env},
    )  # fmt: skip
    os.close(follower)
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def test_no_color_removes_every_escape_sequence(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# Title\n\n## Part\n", encoding="utf-8")
    args = ["demo", "--delay", "0", "--root", str(tmp_path)]
    coloured = _in_a_terminal(args, {})
    plain = _in_a_terminal(args, {"NO_COLOR": "1"})
    assert "\x1b[" in coloured  # a terminal does get colour: the check below can fail
    assert "第一行是「# Title」" in plain and "\x1b" not in plain


def test_piped_output_has_no_escape_sequence(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# Title\n", encoding="utf-8")
    proc = cli("demo", "--delay", "0", "--root", str(tmp_path))
    assert proc.returncode == 0 and "\x1b" not in proc.stdout + proc.stderr


# --------------------------------------------------------------------------- trace, mock-server


def test_trace_loopback_declares_the_tools_the_recording_calls(tmp_path: Path) -> None:
    from modelwire.testing import render, tool_call

    body = tmp_path / "call.sse"
    body.write_bytes(
        render(["Looking.", tool_call("get_weather", {"city": "Paris"})], "openai-chat")
    )
    proc = cli("trace", "--loopback", "--delay", "0", "--api", "openai-chat", str(body))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "tool_call_protocol" not in proc.stdout + proc.stderr
    assert "stop_reason: tool_use" in proc.stdout


def test_mock_server_log_shows_every_request_status_and_retry(tmp_path: Path) -> None:
    from test_cli import _start_server, _stop

    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"status": 429, "error": "slow down",
                                   "headers": {"retry-after": "0"}}, "ok"]))  # fmt: skip
    proc, hello = _start_server("--script", str(script))
    try:
        model = mw.Model(id="m", api="openai-chat", provider="local",
                         base_url=hello["base_urls"]["openai-chat"])  # fmt: skip
        ctx = mw.Context(messages=[mw.UserMessage(content="go")])
        first = mw.complete_sync(model, ctx)  # 429, retried: "ok"
        second = mw.complete_sync(model, ctx, max_retries=0)  # nothing left: 500
        assert first.text == "ok" and second.stop_reason == "error"
        assert proc.stdout is not None
        log = [json.loads(proc.stdout.readline()) for _ in range(3)]
    finally:
        _stop(proc)
    assert [(e["n"], e["status"], e["retry"]) for e in log] == [
        (1, 429, False), (2, 200, True), (3, 500, False),
    ]  # fmt: skip
    assert log[0]["note"] == "slow down" and log[2]["note"] == "MockServer has no reply left"


def test_a_connect_error_names_the_address_it_tried() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}/v1"
    proc = cli("chat", "-m", "local/x", "--base-url", base, "--timeout", "5", "--max-retries",
               "0", "hi")  # fmt: skip
    assert_one_line_error(proc, "connect", f"127.0.0.1:{port}")
    # With retries each is one line before the single error line.
    proc = cli("chat", "-m", "local/x", "--base-url", base, "--timeout", "5", "--max-retries",
               "1", "hi")  # fmt: skip
    lines = proc.stderr.strip().splitlines()
    assert [line.split(":")[1] for line in lines] == [" retry [connect]", " error [connect]"]
    assert f"127.0.0.1:{port}" in lines[-1]


def test_the_library_reads_the_base_url_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    catalog_url = mw.get_model("anthropic", "claude-haiku-4-5").base_url
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://proxy.example.com/")
    assert mw.get_model("anthropic", "claude-haiku-4-5").base_url == "https://proxy.example.com/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    assert catalog.resolve_model("openai/gpt-4.1-mini").base_url == "http://127.0.0.1:8000/v1"
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    assert mw.get_model("anthropic", "claude-haiku-4-5").base_url == catalog_url
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "ftp://x")
    with pytest.raises(mw.ConfigurationError, match="GOOGLE_GEMINI_BASE_URL"):
        mw.get_model("google", "gemini-2.5-flash")


def test_no_stream_json_prints_the_terminal_event_and_the_message() -> None:
    with MockServer([Reply(message="whole", piece_chars=1)]) as srv:
        proc = cli("chat", *_local(srv), "--no-stream", "--json", "hi")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [x.get("type", x.get("role")) for x in lines] == ["done", "assistant"]
    assert lines[-1]["content"][0]["text"] == "whole"


def test_chat_against_a_script_declares_the_tools_it_calls(tmp_path: Path) -> None:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps([
        "Plain text.",
        {"text": "Let me look.", "tool_calls": [{"name": "read", "arguments": {"path": "a"}}]},
    ]), encoding="utf-8")  # fmt: skip
    proc = cli("chat", "--script", str(script), "-i", "--api", "anthropic-messages",
               stdin="first\nsecond\n")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "tool_call_protocol" not in proc.stderr and proc.stderr.count("modelwire: error") == 0
    assert "Plain text." in proc.stdout and '→ read {"path":"a"}' in proc.stdout
