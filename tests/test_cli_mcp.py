"""MCP servers on the command line: ``mcp tools SERVER`` and ``--mcp SERVER`` on run and chat.

The servers are real stdio processes: ``mcp-server-time`` (from PyPI, two read-only
tools) and ``tests/data/mcp/notes_server.py`` (the official SDK's ``MCPServer``:
``save_note`` writes a file and has no ``readOnlyHint``, ``count_words`` is
read-only). The model is a MockServer script on loopback; whether a tool really ran
is read from the disk, what the model was told from the next request.
"""

from __future__ import annotations

import json
import shlex
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from modelwire._cli import main
from modelwire.testing import MockServer, tool_call
from test_cli import assert_one_line_error, cli
from test_cli_conventions import _data_env
from test_terminal import PROMPT, TMUX, Pane, _cmd, _last_line

NOTES_SERVER = str(Path(__file__).parent / "data" / "mcp" / "notes_server.py")
TIME = shlex.join([sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"])
NOTES = shlex.join([sys.executable, NOTES_SERVER])


def _run(srv: MockServer, tmp_path: Path, *args: str) -> Any:
    return cli("run", "-m", "local/m", "--base-url", srv.model().base_url, "--no-log",
               "--root", str(tmp_path), *args, cwd=tmp_path, env=_data_env(tmp_path))  # fmt: skip


def _tools_sent(srv: MockServer, n: int = 0) -> list[str]:
    return sorted(t["function"]["name"] for t in srv.requests[n].json().get("tools", []))


def _tool_results(srv: MockServer, n: int) -> list[str]:
    return [m["content"] for m in srv.requests[n].json()["messages"] if m["role"] == "tool"]


def _save(target: Path, text: str = "hello") -> list[Any]:
    return [["Saving.", tool_call("save_note", {"path": str(target), "text": text})], "Done."]


# --------------------------------------------------------------------------- mcp tools


def test_mcp_tools_lists_one_line_per_tool() -> None:
    proc = cli("mcp", "tools", TIME)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["tool", "approval", "description"]
    rows = {ln.split()[0]: ln for ln in lines[1:]}
    assert sorted(rows) == ["convert_time", "get_current_time"]
    assert "read-only" in rows["get_current_time"]
    assert rows["get_current_time"].endswith("Get current time in a specific timezone")


def test_mcp_tools_says_which_need_approval_and_shows_the_first_line() -> None:
    # The command's words after --, as the shell split them.
    proc = cli("mcp", "tools", "--", sys.executable, NOTES_SERVER)
    assert proc.returncode == 0, proc.stderr
    rows = {ln.split()[0]: ln for ln in proc.stdout.splitlines()[1:]}
    assert "needs approval" in rows["save_note"] and "read-only" not in rows["save_note"]
    assert rows["save_note"].endswith("Write a note to a file.")  # the first line only
    assert "read-only" in rows["count_words"]


def test_mcp_tools_json_gives_the_full_definitions() -> None:
    proc = cli("mcp", "tools", NOTES, "--json")
    assert proc.returncode == 0, proc.stderr
    tools = {d["name"]: d for d in map(json.loads, proc.stdout.splitlines())}
    assert sorted(tools) == ["count_words", "save_note"]
    save = tools["save_note"]
    assert sorted(save) == ["description", "input_schema", "name", "read_only"]
    assert save["read_only"] is False and tools["count_words"]["read_only"] is True
    assert save["description"].startswith("Write a note to a file.\n")  # all of it
    assert save["input_schema"]["required"] == ["path", "text"]
    assert save["input_schema"]["properties"]["text"]["type"] == "string"


# --------------------------------------------------------------------------- run --mcp


def test_run_calls_a_server_tool_beside_its_file_tools(tmp_path: Path) -> None:
    script = [
        ["Checking.", tool_call("get_current_time", {"timezone": "Europe/Paris"})],
        "It is evening in Paris.",
    ]
    with MockServer(script) as srv:
        proc = _run(srv, tmp_path, "--mcp", TIME, "--td", "what time is it in Paris?")
    assert proc.returncode == 0, proc.stderr
    assert "It is evening in Paris." in proc.stdout
    assert _tools_sent(srv) == ["convert_time", "get_current_time", "grep", "ls", "read"]
    (result,) = _tool_results(srv, 1)
    assert "Europe/Paris" in result and "datetime" in result  # the server's own answer
    # A read-only tool runs without asking, even without a terminal.
    assert "not approved" not in proc.stderr and "Tool call: get_current_time(" in proc.stderr


def test_without_a_terminal_a_tool_that_is_not_read_only_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "note.txt"
    script = [
        ["Counting.", tool_call("count_words", {"text": "to be or not"})],
        *_save(target),
    ]
    with MockServer(script) as srv:
        proc = _run(srv, tmp_path, "--mcp", NOTES, "save it")
    assert proc.returncode == 0, proc.stderr
    assert _tool_results(srv, 1) == ["4"]  # read-only: ran, not asked
    assert not target.exists()
    note = [ln for ln in proc.stderr.splitlines() if ln.startswith("modelwire:")]
    assert len(note) == 1 and "save_note(" in note[0] and "not run" in note[0], proc.stderr
    assert "pass --ta" in note[0] and "Traceback" not in proc.stderr
    refused = _tool_results(srv, 2)[-1]
    assert "not approved" in refused or "not allow" in refused


def test_ta_approves_every_call(tmp_path: Path) -> None:
    target = tmp_path / "note.txt"
    with MockServer(_save(target, "approved")) as srv:
        proc = _run(srv, tmp_path, "--mcp", NOTES, "--ta", "save it")
    assert proc.returncode == 0, proc.stderr
    assert target.read_text(encoding="utf-8") == "approved"
    assert _tool_results(srv, 1) == [f"saved 8 characters to {target}"]
    assert "modelwire:" not in proc.stderr


def test_chat_takes_mcp_and_t_names_a_server_tool(tmp_path: Path) -> None:
    target = tmp_path / "note.txt"
    with MockServer(_save(target, "from chat")) as srv:
        proc = cli("chat", "-m", "local/m", "--base-url", srv.model().base_url, "--no-log",
                   "--mcp", NOTES, "--mcp", TIME, "-T", "save_note", "--ta", "save it",
                   cwd=tmp_path, env=_data_env(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Saving.\nDone.\n"
    assert target.read_text(encoding="utf-8") == "from chat"
    assert _tools_sent(srv) == ["save_note"]  # only what -T named


def test_an_unknown_t_name_lists_the_server_tools(tmp_path: Path) -> None:
    proc = cli("chat", "-m", "local/m", "--base-url", "http://127.0.0.1:9/v1", "--no-log",
               "--mcp", NOTES, "-T", "save_nots", "hi", env=_data_env(tmp_path))  # fmt: skip
    assert_one_line_error(proc, "usage", "did you mean save_note?", "count_words")
    assert proc.returncode == 2


# --------------------------------------------------------------------------- a terminal


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed (CI installs it)")
def test_the_terminal_asks_before_a_call_that_is_not_read_only(tmp_path: Path) -> None:
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    script = [_save(first, "approved")[0],
              [tool_call("save_note", {"path": str(second), "text": "always"})], "Done."]  # fmt: skip
    pane = Pane(tmp_path)
    try:
        with MockServer(script) as srv:
            pane.type(_cmd("run", "-m", "local/m", "--base-url", srv.model().base_url,
                           "--no-log", "--root", str(tmp_path), "--mcp", NOTES, "save it"))  # fmt: skip
            pane.wait_for(lambda _: _last_line(pane.screen(joined=True)).rstrip().endswith("[y/N/a]"),
                          "the approval question")  # fmt: skip
            pane.type("a")  # always: the second call of the tool is not asked about
            pane.wait_for(lambda s: _last_line(s) == PROMPT.rstrip(), "the shell prompt")
            screen = pane.screen(joined=True)
    finally:
        pane.close()
    question = f"Run save_note({json.dumps({'path': str(first), 'text': 'approved'})})? [y/N/a] a"
    assert question in screen
    assert screen.count("[y/N/a]") == 1
    assert first.read_text(encoding="utf-8") == "approved"
    assert second.read_text(encoding="utf-8") == "always"
    assert "Done." in screen and "Traceback" not in screen


# --------------------------------------------------------------------------- failures


def test_a_command_that_does_not_exist_is_a_configuration_error(tmp_path: Path) -> None:
    with MockServer(["never"]) as srv:
        proc = _run(srv, tmp_path, "--mcp", "no-such-mcp-server --stdio", "hi")
    assert_one_line_error(proc, "configuration", "'no-such-mcp-server'", "not", "on PATH")
    assert proc.returncode == 2
    assert srv.requests == []  # nothing was sent to the model
    assert_one_line_error(cli("mcp", "tools", "no-such-mcp-server"), "configuration", "on PATH")


def test_a_server_that_does_not_start_names_its_last_stderr_line(tmp_path: Path) -> None:
    broken = shlex.join([sys.executable, "-m", "no_such_mcp_module"])
    with MockServer(["never"]) as srv:
        proc = _run(srv, tmp_path, "--mcp", TIME, "--mcp", broken, "hi")
    assert_one_line_error(proc, "tool_server", "no_such_mcp_module",
                          "its last stderr line:", "No module named no_such_mcp_module")  # fmt: skip
    assert proc.returncode == 2 and srv.requests == []


def test_a_url_that_does_not_answer_is_a_tool_server_error() -> None:
    proc = cli("mcp", "tools", "http://127.0.0.1:9/mcp")
    assert_one_line_error(proc, "tool_server", "http://127.0.0.1:9/mcp", "check that")
    assert proc.returncode == 2


def test_without_the_sdk_the_error_says_what_to_install(tmp_path: Path) -> None:
    # An `mcp` package first on the path that cannot be imported, as if not installed.
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "__init__.py").write_text("raise ImportError('no mcp')\n")
    proc = cli("mcp", "tools", TIME, env={"PYTHONPATH": str(tmp_path)})
    assert_one_line_error(proc, "configuration", "pip install 'modelwire[mcp]'")
    assert proc.returncode == 2


# --------------------------------------------------------------------------- in process


def _stopped() -> bool:
    """No server's connection thread is left; its stderr reader ends once the process
    has exited (it reads to the end of the pipe), which takes a moment."""
    if any(t.name == "modelwire-mcp" for t in threading.enumerate()):
        return False
    deadline = time.monotonic() + 10
    while any(t.name == "modelwire-mcp-stderr" for t in threading.enumerate()):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_the_servers_are_stopped_when_the_command_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", "tools", NOTES, "--json"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2
    assert _stopped()
    # Also when a later check fails once the servers were started (-T names no tool).
    code = main(["chat", "-m", "local/m", "--base-url", "http://127.0.0.1:9/v1", "--no-log",
                 "--mcp", TIME, "--mcp", NOTES, "-T", "nothing", "hi"])  # fmt: skip
    assert code == 2 and "no tool named 'nothing'" in capsys.readouterr().err
    assert _stopped()
