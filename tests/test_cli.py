"""The ``modelwire`` command, run as a real subprocess (``python -m modelwire``).

Every command is exercised, error paths included: each failure must print one
line ``modelwire: error [kind]: …`` on stderr, exit non-zero, and never show a
traceback. Models are served by an in-process MockServer on loopback.
Expected values come from the inputs (the README written here, the fixture
payloads parsed with json), not from modelwire's output.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import modelwire as mw
from modelwire._catalog._records import ENV_KEYS
from modelwire.testing import MockServer, error_reply, tool_call
from recorded import recorded_streams

FIXTURES = recorded_streams()
COMMANDS = ("demo", "chat", "run", "replay", "mock-server", "models")
_KEY_VARS = {v for names in ENV_KEYS.values() for v in names}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _KEY_VARS}
    env.pop("MODELWIRE_DEBUG", None)
    return env


def cli(
    *args: str, cwd: Path | None = None, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "modelwire", *args],
        capture_output=True, text=True, encoding="utf-8", timeout=90, cwd=cwd,
        env={**_env(), **(env or {})}, input=stdin if stdin is not None else "",
    )  # fmt: skip


def assert_one_line_error(proc: subprocess.CompletedProcess[str], kind: str, *needles: str) -> None:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"modelwire: error [{kind}]: "), lines[0]
    for n in needles:
        assert n in lines[0]


# --------------------------------------------------------------------------- help


def test_help_lists_every_command() -> None:
    proc = cli("--help")
    assert proc.returncode == 0
    for cmd in COMMANDS:
        assert f"    {cmd}" in proc.stdout
    bare = cli()
    assert bare.returncode == 0 and all(c in bare.stdout for c in COMMANDS)
    assert cli("--version").stdout.strip() == f"modelwire {mw.__version__}"


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_has_help(command: str) -> None:
    proc = cli(command, "--help")
    assert proc.returncode == 0 and f"modelwire {command}" in proc.stdout


def test_unknown_command_is_a_usage_error() -> None:
    proc = cli("fly")
    assert_one_line_error(proc, "usage", "invalid choice: 'fly'", "modelwire --help")
    assert proc.returncode == 2
    missing = cli("replay")
    assert_one_line_error(missing, "usage", "FILE.sse", "modelwire replay --help")


def test_a_typo_in_a_flag_names_the_flag_meant_and_the_commands_help() -> None:
    proc = cli("chat", "--modle", "openai/gpt-4.1-mini", "hi")
    assert_one_line_error(proc, "usage", "--modle", "did you mean --model?",
                          "(see: modelwire chat --help)")  # fmt: skip
    assert proc.returncode == 2
    command = cli("chta", "hi")
    assert_one_line_error(command, "usage", "invalid choice: 'chta'", "did you mean chat?")
    far = cli("replay", "--zzzzqq", "x.sse")
    assert_one_line_error(far, "usage", "--zzzzqq", "modelwire replay --help")
    assert "did you mean" not in far.stderr


def test_replay_without_api_recognises_the_body_or_asks_for_api(tmp_path: Path) -> None:
    path = sorted((FIXTURES / "anthropic").glob("claude-*.sse"))[0]
    detected = cli("replay", str(path), "--json")
    named = cli("replay", "--api", "anthropic-messages", str(path), "--json")

    def untimed(out: str) -> str:
        return re.sub(r'"timestamp": \d+', "", out)

    assert detected.returncode == named.returncode
    assert untimed(detected.stdout) == untimed(named.stdout) and detected.stdout
    assert json.loads(detected.stdout.splitlines()[-1])["api"] == "anthropic-messages"
    unknown = tmp_path / "noise.sse"
    unknown.write_text("data: 42\n\n", encoding="utf-8")
    proc = cli("replay", str(unknown))
    assert_one_line_error(proc, "usage", "cannot tell which wire API", "pass --api")


# --------------------------------------------------------------------------- demo

README = """# Projet Été 2031

Un petit projet.

## Install

```sh
## not a heading: inside a code block
```

## Usage

Run it.
"""


def _readme(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text(README, encoding="utf-8")
    return tmp_path


def _headings(text: str) -> list[str]:
    out, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("## "):
            out.append(line[3:])
    return out


@pytest.mark.parametrize("api", ["openai-chat", "openai-responses", "anthropic-messages",
                                 "google-generative-ai"])  # fmt: skip
def test_demo_reads_the_readme_end_to_end(tmp_path: Path, api: str) -> None:
    root = _readme(tmp_path)
    proc = cli("demo", "--delay", "0", "--api", api, cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    out = proc.stdout
    first_line = README.splitlines()[0]
    assert "you › 读取 README.md" in out
    assert '→ read {"path":"README.md"}' in out  # the call, as its arguments streamed
    assert "← read result:" in out  # the tool result, trimmed, line numbers kept
    assert re.search(rf"^ +1 +{re.escape(first_line)}$", out, re.M)
    # The final answer was built by the server from the tool result it received.
    assert f"第一行是「{first_line}」" in out
    assert f"全文共 {len(README.splitlines())} 行" in out
    assert "主要章节：" + "、".join(_headings(README)) in out
    assert "usage over 2 responses:" in out and "cost $0.0" in out
    assert "served 2 requests on loopback" in out
    assert out.index("→ read") < out.index("← read result") < out.index("第一行是")


def test_demo_json_lines_are_agent_events(tmp_path: Path) -> None:
    proc = cli("demo", "--delay", "0", "--json", cwd=_readme(tmp_path))
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "agent_start" and types[-1] == "agent_end"
    assert types.count("turn_start") == 2 and types.count("tool_execution_end") == 1
    end = next(e for e in events if e["type"] == "tool_execution_end")
    assert end["tool_call"]["name"] == "read"
    result_text = "".join(c["text"] for c in end["result"]["content"])
    assert README.splitlines()[0] in result_text
    updates = [e["event"]["type"] for e in events if e["type"] == "message_update"]
    assert "text_delta" in updates and "tool_call_delta" in updates


def test_demo_without_a_readme_reads_a_file_that_exists(tmp_path: Path) -> None:
    # No `not_found` tool failure: the demo reads another file.
    (tmp_path / "notes.txt").write_text("Première ligne\nsecond\n", encoding="utf-8")
    (tmp_path / "image.bin").write_bytes(b"\x00\x01\x02")
    proc = cli("demo", "--delay", "0", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "you › 读取 notes.txt" in proc.stdout
    assert "failed" not in proc.stdout
    assert "notes.txt 的第一行是「Première ligne」，全文共 2 行" in proc.stdout


def test_demo_in_an_empty_folder_says_what_it_needs(tmp_path: Path) -> None:
    proc = cli("demo", "--delay", "0", cwd=tmp_path)
    assert_one_line_error(proc, "demo", "no text file to read", "README.md", "--root")
    assert proc.returncode == 2


def test_demo_root_must_exist(tmp_path: Path) -> None:
    proc = cli("demo", "--root", str(tmp_path / "nope"))
    assert_one_line_error(proc, "configuration", "is not a directory")
    assert proc.returncode == 2


# --------------------------------------------------------------------------- chat


def _local(srv: MockServer, api: str = "openai-chat") -> list[str]:
    return ["-m", "local/test-model", "--base-url", srv.model(api).base_url, "--api", api]


def test_chat_one_prompt_streams_the_answer() -> None:
    with MockServer(["Bonjour, 世界!"]) as srv:
        proc = cli("chat", *_local(srv), "say", "hello")
    assert proc.returncode == 0, proc.stderr
    # `chat … > answer.txt` captures only the answer; usage is behind -u.
    assert proc.stdout == "Bonjour, 世界!\n" and proc.stderr == ""
    body = srv.requests[0].json()
    assert body["model"] == "test-model"
    assert body["messages"][-1] == {"role": "user", "content": "say hello"}


def test_chat_json_prints_events_then_the_message() -> None:
    with MockServer(["abc"]) as srv:
        proc = cli("chat", *_local(srv, "anthropic-messages"), "--json", "hi")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert lines[0] == {"type": "start"} and lines[-2]["type"] == "done"
    assert lines[-1]["role"] == "assistant" and lines[-1]["content"][0]["text"] == "abc"
    assert "".join(x["delta"] for x in lines if x.get("type") == "text_delta") == "abc"
    assert srv.requests[0].path == "/v1/messages"


def test_chat_interactive_keeps_the_conversation() -> None:
    with MockServer(["answer one", "answer two"]) as srv:
        # Piped stdin is one prompt; -i keeps the line-by-line chat.
        # Blank lines are ignored, not the end of the chat.
        proc = cli("chat", *_local(srv), "-i", stdin="first question\n\n  \nsecond question\n")
    assert proc.returncode == 0, proc.stderr
    assert "answer one" in proc.stdout and "answer two" in proc.stdout
    second = srv.requests[1].json()["messages"]
    assert [(m["role"], m["content"]) for m in second] == [
        ("user", "first question"), ("assistant", "answer one"), ("user", "second question"),
    ]  # fmt: skip


def test_chat_missing_key_names_the_variable() -> None:
    proc = cli("chat", "-m", "openai/gpt-4.1-mini", "hello")
    assert_one_line_error(proc, "missing_api_key", "OPENAI_API_KEY")
    assert proc.returncode == 2


def test_chat_provider_error_exits_nonzero() -> None:
    with MockServer([error_reply(401, "bad key", type="authentication_error")]) as srv:
        proc = cli("chat", *_local(srv), "hi")
    assert_one_line_error(proc, "authentication", "bad key")
    assert proc.returncode == 1


@pytest.mark.parametrize(
    ("args", "kind"),
    [
        (["-m", "nomodel", "--base-url", "http://127.0.0.1:9/v1"], "usage"),
        (["-m", "openai/not-a-model-xyz"], "configuration"),
        (["-m", "local/x", "--base-url", "ftp://127.0.0.1/v1"], "configuration"),
    ],
)
def test_chat_bad_model_arguments(args: list[str], kind: str) -> None:
    proc = cli("chat", *args, "hi")
    assert_one_line_error(proc, kind)
    assert proc.returncode == 2


# --------------------------------------------------------------------------- run


def test_run_refuses_a_paid_api_without_the_flag(tmp_path: Path) -> None:
    proc = cli("run", "-m", "local/m", "--base-url", "https://api.example.com/v1",
               "--root", str(tmp_path), "summarise")  # fmt: skip
    assert_one_line_error(proc, "paid_api_not_allowed", "--allow-paid-api", "api.example.com")
    assert proc.returncode == 2


def test_run_the_agent_on_loopback(tmp_path: Path) -> None:
    root = _readme(tmp_path)
    replies = [["Reading.", tool_call("read", {"path": "README.md"})], "It is a French README."]
    with MockServer(replies) as srv:
        proc = cli("run", *_local(srv), "-u", "--root", str(root), "what", "is", "this?")
    assert proc.returncode == 0, proc.stderr
    assert "→ read" in proc.stdout and "It is a French README." in proc.stdout
    assert "usage over 2 responses" in proc.stderr and "usage" not in proc.stdout
    tool_msg = srv.requests[1].json()["messages"][-1]
    assert tool_msg["role"] == "tool" and README.splitlines()[0] in tool_msg["content"]
    assert srv.requests[0].json()["messages"][-1]["content"] == "what is this?"


def test_run_failure_exits_nonzero(tmp_path: Path) -> None:
    with MockServer([error_reply(400, "boom", type="invalid_request_error")]) as srv:
        proc = cli("run", *_local(srv), "--timeout", "5", "--root", str(tmp_path), "task")
    assert_one_line_error(proc, "invalid_request", "boom")
    assert proc.returncode == 1
    # The error is printed once (stderr), no second `✗` line on stdout.
    assert "boom" not in proc.stdout and "✗" not in proc.stdout


def test_run_root_must_be_a_directory(tmp_path: Path) -> None:
    proc = cli("run", "-m", "local/m", "--base-url", "http://127.0.0.1:9/v1",
               "--root", str(tmp_path / "missing"), "task")  # fmt: skip
    assert_one_line_error(proc, "configuration", "is not a directory")


# --------------------------------------------------------------------------- replay


def _fixture_text(api: str, path: Path) -> str:
    """The answer text of a recorded stream, read from its payloads with json."""
    text = ""
    for block in path.read_bytes().decode().replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(ln[6:] for ln in block.splitlines() if ln.startswith("data: "))
        if not data or data == "[DONE]":
            continue
        d = json.loads(data)
        if api == "openai-chat":
            for c in d.get("choices", []):
                text += c["delta"].get("content") or ""
        elif api == "openai-responses" and d["type"] == "response.output_text.delta":
            text += d["delta"]
        elif api == "anthropic-messages" and d["type"] == "content_block_delta":
            text += d["delta"].get("text", "")
        elif api == "google-generative-ai":
            for part in d["candidates"][0]["content"]["parts"]:
                text += part.get("text", "") if not part.get("thought") else ""
    return text


TEXT_FIXTURES = [
    ("openai-chat", "openai-chat/gpt-4o-text-with-usage-chunk.sse"),
    ("openai-responses", "openai-responses/gpt-4o-text.sse"),
    ("anthropic-messages", "anthropic/claude-haiku-4-5-text.sse"),
    ("google-generative-ai", "google/gemini-2.0-flash-text.sse"),
]


@pytest.mark.parametrize(("api", "name"), TEXT_FIXTURES)
def test_replay_json_ends_with_the_final_message(api: str, name: str) -> None:
    path = FIXTURES / name
    proc = cli("replay", "--api", api, str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    final = lines[-1]
    assert final["role"] == "assistant" and final["api"] == api and final["stop_reason"] == "stop"
    expected = _fixture_text(api, path)
    assert "".join(b.get("text", "") for b in final["content"]) == expected
    assert "".join(x["delta"] for x in lines if x.get("type") == "text_delta") == expected
    assert lines[0] == {"type": "start"} and lines[-2]["type"] == "done"


def test_replay_prints_events_and_the_tool_call() -> None:
    path = FIXTURES / "openai-chat" / "gpt-4o-single-tool-call.sse"
    args, name = "", ""
    for block in path.read_text().split("\n\n"):
        if block.startswith("data: {"):
            for c in json.loads(block[6:]).get("choices", []):
                for tc in c["delta"].get("tool_calls") or []:
                    name = tc["function"].get("name") or name
                    args += tc["function"].get("arguments") or ""
    proc = cli("replay", "--api", "openai-chat", str(path))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0] == "start"
    assert any(ln.startswith("tool_call_end") and f"{name} {args}" in ln for ln in out)
    assert "done            reason=tool_use" in out
    assert "stop_reason: tool_use (provider: tool_calls)" in out


def test_replay_malformed_stream_names_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sse"
    bad.write_bytes(b'data: {"choices":[{"index":0,"delta":{"content":"ok"}}]}\n\n'
                    b'data: {"choices":[{"index":0,"delta":{"content":5}}]}\n\n')  # fmt: skip
    proc = cli("replay", "--api", "openai-chat", str(bad))
    assert_one_line_error(proc, "malformed_chunk", "choices[0].delta.content")
    assert proc.returncode == 1
    assert "text_delta      #0  'ok'" in proc.stdout  # what came before is still shown
    as_json = cli("replay", "--api", "openai-chat", str(bad), "--json")
    assert as_json.returncode == 1
    final = json.loads(as_json.stdout.splitlines()[-1])
    assert final["stop_reason"] == "error" and final["error"]["kind"] == "malformed_chunk"


def test_replay_truncated_stream_fails(tmp_path: Path) -> None:
    body = (FIXTURES / "anthropic" / "claude-haiku-4-5-text.sse").read_bytes()
    cut = tmp_path / "cut.sse"
    cut.write_bytes(body[: body.index(b"event: message_stop")])
    proc = cli("replay", "--api", "anthropic-messages", str(cut))
    assert_one_line_error(proc, "truncated_stream")
    assert proc.returncode == 1


def test_replay_file_errors(tmp_path: Path) -> None:
    proc = cli("replay", "--api", "openai-chat", str(tmp_path / "missing.sse"))
    assert_one_line_error(proc, "file", "missing.sse")
    assert proc.returncode == 2
    proc = cli("replay", "--api", "carrier-pigeon", str(tmp_path / "x.sse"))
    assert_one_line_error(proc, "usage", "invalid choice: 'carrier-pigeon'")
    assert proc.returncode == 2


# --------------------------------------------------------------------------- mock-server


def _start_server(*args: str) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "modelwire", "mock-server", "--json", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8", env=_env(),
    )  # fmt: skip
    assert proc.stdout is not None
    first = proc.stdout.readline()
    if not first:
        _, err = proc.communicate(timeout=30)
        raise AssertionError(err or "no output")
    return proc, json.loads(first)


def _stop(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)  # also closes the pipes
    assert "Traceback" not in err
    return proc.returncode


def test_mock_server_plays_a_script(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"text": "Let me look.", "tool_calls": [{"name": "read", "arguments": {"path": "a"}}]},
        "Done.",
    ]), encoding="utf-8")  # fmt: skip
    proc, hello = _start_server("--script", str(script))
    try:
        assert hello["event"] == "listening" and hello["host"] == "127.0.0.1"
        model = mw.Model(id="m", api="anthropic-messages", provider="local",
                         base_url=hello["base_urls"]["anthropic-messages"])  # fmt: skip
        ctx = mw.Context(messages=[mw.UserMessage(content="go")],
                         tools=[mw.ToolDefinition(name="read", description="r",
                                                  parameters={"type": "object"})])  # fmt: skip
        first = mw.complete_sync(model, ctx)
        second = mw.complete_sync(model, ctx)
        assert first.text == "Let me look." and first.tool_calls[0].arguments == {"path": "a"}
        assert second.text == "Done."
        assert proc.stdout is not None
        log = [json.loads(proc.stdout.readline()) for _ in range(2)]
        assert [(e["event"], e["n"], e["path"], e["api"]) for e in log] == [
            ("request", 1, "/v1/messages", "anthropic-messages"),
            ("request", 2, "/v1/messages", "anthropic-messages"),
        ]
    finally:
        code = _stop(proc)
    assert code == 0


def test_mock_server_echoes_without_a_script() -> None:
    proc, hello = _start_server()
    try:
        model = mw.Model(id="gem", api="google-generative-ai", provider="local",
                         base_url=hello["base_urls"]["google-generative-ai"])  # fmt: skip
        msg = mw.complete_sync(model, mw.Context(messages=[mw.UserMessage(content="ping 1")]))
        assert msg.text == "echo: ping 1"
    finally:
        assert _stop(proc) == 0


def test_mock_server_bad_script_and_busy_port(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"text": "x", "tool_calls": [{"name": 1}]}]', encoding="utf-8")
    proc = cli("mock-server", "--script", str(bad))
    assert_one_line_error(proc, "configuration", "script[0].tool_calls[0].name")
    assert proc.returncode == 2
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = cli("mock-server", "--port", str(s.getsockname()[1]))
    assert_one_line_error(busy, "connect", "cannot listen")


# --------------------------------------------------------------------------- models


def test_models_table_and_json() -> None:
    everything = mw.models()
    proc = cli("models")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["provider", "model", "api"]
    assert len(lines) == 1 + len(everything)
    assert all(m.id in proc.stdout for m in everything)
    anthropic = mw.models("anthropic")
    js = cli("models", "anthropic", "--json")
    rows = [json.loads(x) for x in js.stdout.splitlines()]
    assert [r["id"] for r in rows] == [m.id for m in anthropic]
    assert {r["provider"] for r in rows} == {"anthropic"}


def test_models_unknown_provider() -> None:
    proc = cli("models", "nosuchprovider")
    assert_one_line_error(proc, "configuration", "nosuchprovider")
