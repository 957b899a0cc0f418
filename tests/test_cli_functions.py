"""Tools on the command line: ``--functions FILE.py``, ``-T NAME``, ``--td``, ``--ta``.

Each test runs the real command against a MockServer on loopback whose model calls a
function of a file written here. The function writes a file, so whether it really
ran is read from the disk; what the model was told is read from the next request.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from modelwire.testing import MockServer, tool_call
from test_cli import assert_one_line_error, cli
from test_cli_conventions import _data_env
from test_terminal import PROMPT, TMUX, Pane, _cmd, _last_line, _local

NOTES = '''\
from pathlib import Path
from os.path import join  # imported: not a tool

import modelwire as mw


def save_note(path: str, text: str) -> str:
    """Write a note to a file.

    Args:
        path: the file to write
        text: what to write in it
    """
    Path(path).write_text(text, encoding="utf-8")
    return f"saved {len(text)} characters to {path}"


@mw.tool(read_only=True)
def count_words(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


def explode(reason: str) -> str:
    """Fail."""
    raise ValueError(f"exploded: {reason}")


def _helper() -> None:
    pass
'''


def _notes(tmp_path: Path) -> Path:
    path = tmp_path / "notes.py"
    path.write_text(NOTES, encoding="utf-8")
    return path


def _save(target: Path, text: str = "hello") -> list[Any]:
    return [["Saving.", tool_call("save_note", {"path": str(target), "text": text})], "Done."]


def _chat(
    srv: MockServer, tmp_path: Path, *args: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return cli("chat", *_local_args(srv), *args, cwd=tmp_path, stdin=stdin,
               env=_data_env(tmp_path))  # fmt: skip


def _local_args(srv: MockServer) -> list[str]:
    return ["-m", "local/m", "--base-url", srv.model().base_url, "--no-log"]


def _tools_sent(srv: MockServer, n: int = 0) -> dict[str, Any]:
    return {t["function"]["name"]: t["function"] for t in srv.requests[n].json().get("tools", [])}


def _tool_results(srv: MockServer, n: int) -> list[str]:
    return [m["content"] for m in srv.requests[n].json()["messages"] if m["role"] == "tool"]


# --------------------------------------------------------------------------- calls


def test_an_approved_call_runs_the_function_and_td_shows_it(tmp_path: Path) -> None:
    notes, target = _notes(tmp_path), tmp_path / "out.txt"
    with MockServer(_save(target)) as srv:
        proc = _chat(srv, tmp_path, "--functions", str(notes), "--ta", "--td", "save hello")
    assert proc.returncode == 0, proc.stderr
    assert target.read_text(encoding="utf-8") == "hello"
    # stdout is the answer; the calls are on stderr.
    assert proc.stdout == "Saving.\nDone.\n"
    args = json.dumps({"path": str(target), "text": "hello"})
    assert f"Tool call: save_note({args})" in proc.stderr
    assert f"  saved 5 characters to {target}" in proc.stderr
    # Every public function defined in the file, with its schema; nothing imported or private.
    sent = _tools_sent(srv)
    assert sorted(sent) == ["count_words", "explode", "save_note"]
    params = sent["save_note"]["parameters"]
    assert params["required"] == ["path", "text"]
    assert params["properties"]["path"]["type"] == "string"
    assert params["properties"]["text"]["description"] == "what to write in it"
    assert sent["save_note"]["description"] == "Write a note to a file."
    assert _tool_results(srv, 1) == [f"saved 5 characters to {target}"]


def test_without_a_terminal_a_call_that_changes_things_is_refused(tmp_path: Path) -> None:
    notes, target = _notes(tmp_path), tmp_path / "out.txt"
    with MockServer(_save(target)) as srv:
        proc = _chat(srv, tmp_path, "--functions", str(notes), "save hello")
    assert proc.returncode == 0, proc.stderr
    assert not target.exists()
    assert proc.stdout == "Saving.\nDone.\n"
    note = proc.stderr.strip().splitlines()
    assert len(note) == 1 and "save_note(" in note[0] and "not run" in note[0], proc.stderr
    assert "pass --ta" in note[0] and "Traceback" not in proc.stderr
    (result,) = _tool_results(srv, 1)
    assert "blocked" in result and "not approved" in result


def test_a_read_only_function_runs_without_asking(tmp_path: Path) -> None:
    notes = _notes(tmp_path)
    replies = [[tool_call("count_words", {"text": "one two three"})], "Three."]
    with MockServer(replies) as srv:
        proc = _chat(srv, tmp_path, "--functions", str(notes), "count")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert _tool_results(srv, 1) == ["3"]


def test_with_a_schema_the_answer_after_the_tools_is_the_validated_value(
    tmp_path: Path,
) -> None:
    notes = _notes(tmp_path)
    replies = [[tool_call("count_words", {"text": "one two three"})], '{"words": 3}']
    with MockServer(replies) as srv:
        proc = _chat(srv, tmp_path, "--functions", str(notes), "--schema", "words int", "count")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"words": 3} and proc.stdout.count("words") == 1
    assert _tool_results(srv, 1) == ["3"]
    # The agent asks again once (output_retries), then gives up with a typed error.
    invalid = [[tool_call("count_words", {"text": "a"})], '{"words": "many"}']
    with MockServer(invalid, repeat_last=True) as srv:
        bad = _chat(srv, tmp_path, "--functions", str(notes), "--schema", "words int", "count")
    assert bad.returncode == 1 and "output_invalid" in bad.stderr and bad.stdout == ""


def test_an_exception_in_the_function_is_an_error_result_td_shows(tmp_path: Path) -> None:
    notes = _notes(tmp_path)
    replies = [[tool_call("explode", {"reason": "on purpose"})], "It failed."]
    with MockServer(replies) as srv:
        proc = _chat(srv, tmp_path, "--functions", str(notes), "--ta", "--td", "go")
    assert proc.returncode == 0, proc.stderr
    (result,) = _tool_results(srv, 1)
    assert "execution_failed" in result and "ValueError: exploded: on purpose" in result
    assert "execution_failed" in proc.stderr and "exploded: on purpose" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_invalid_arguments_never_reach_the_function(tmp_path: Path) -> None:
    notes, target = _notes(tmp_path), tmp_path / "out.txt"
    replies = [[tool_call("save_note", {"path": str(target), "text": 5})], "Oops."]
    with MockServer(replies) as srv:
        proc = _chat(srv, tmp_path, "--functions", str(notes), "--ta", "go")
    assert proc.returncode == 0, proc.stderr
    assert not target.exists()
    (result,) = _tool_results(srv, 1)
    assert "invalid_arguments" in result and "text" in result


def test_functions_as_code(tmp_path: Path) -> None:
    code = "def add(a: int, b: int) -> int:\n    return a + b\n"
    replies = [[tool_call("add", {"a": 2, "b": 40})], "42."]
    with MockServer(replies) as srv:
        proc = _chat(srv, tmp_path, "--functions", code, "--ta", "add")
    assert proc.returncode == 0, proc.stderr
    assert _tool_results(srv, 1) == ["42"]
    assert _tools_sent(srv)["add"]["parameters"]["properties"]["a"]["type"] == "integer"


def test_script_mode_calls_the_function(tmp_path: Path) -> None:
    notes, target = _notes(tmp_path), tmp_path / "scripted.txt"
    script = tmp_path / "script.json"
    call = {"name": "save_note", "arguments": {"path": str(target), "text": "from a script"}}
    script.write_text(json.dumps([{"text": "Saving.", "tool_calls": [call]}, "Done."]),
                      encoding="utf-8")  # fmt: skip
    proc = cli("chat", "--script", str(script), "--functions", str(notes), "--ta", "save",
               cwd=tmp_path, env=_data_env(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert target.read_text(encoding="utf-8") == "from a script"
    assert proc.stdout == "Saving.\nDone.\n"


def test_a_tool_decorated_in_the_file_is_taken_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "decorated.py"
    path.write_text(
        "import modelwire as mw\n"
        "from modelwire.tools import read_only\n\n"
        "bundled = read_only('.')  # tools made elsewhere: not this file's\n\n\n"
        "@mw.tool(name='shout', description='Upper-case a text.', read_only=True)\n"
        "def upper(text: str) -> str:\n"
        "    return text.upper()\n",
        encoding="utf-8",
    )
    replies = [[tool_call("shout", {"text": "hey"})], "HEY."]
    with MockServer(replies) as srv:
        proc = _chat(srv, tmp_path, "--functions", str(path), "shout")
    assert proc.returncode == 0, proc.stderr
    assert list(_tools_sent(srv)) == ["shout"]
    assert _tools_sent(srv)["shout"]["description"] == "Upper-case a text."
    assert _tool_results(srv, 1) == ["HEY"]  # read-only: ran without --ta


# --------------------------------------------------------------------------- -T


def test_t_sends_only_the_named_tools(tmp_path: Path) -> None:
    notes = _notes(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("the secret is 7\n", encoding="utf-8")
    replies = [[tool_call("read", {"path": "a.txt"})], "It is 7."]
    with MockServer(replies) as srv:
        proc = _chat(srv, tmp_path, "--functions", str(notes), "-T", "count_words", "-T", "read",
                     "--root", str(tmp_path / "docs"), "read a.txt")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert sorted(_tools_sent(srv)) == ["count_words", "read"]
    (result,) = _tool_results(srv, 1)
    assert "the secret is 7" in result  # read is read-only: no --ta needed


def test_an_unknown_tool_name_suggests_the_nearest(tmp_path: Path) -> None:
    notes = _notes(tmp_path)
    proc = cli("chat", "-m", "local/m", "--base-url", "http://127.0.0.1:9/v1",
               "--functions", str(notes), "-T", "save_nots", "hi", env=_data_env(tmp_path))  # fmt: skip
    assert_one_line_error(proc, "usage", "save_nots", "did you mean save_note?",
                          "read, ls, grep, save_note, count_words, explode")  # fmt: skip
    assert proc.returncode == 2
    bare = cli("chat", "-m", "local/m", "--base-url", "http://127.0.0.1:9/v1", "-T", "reed",
               "hi", env=_data_env(tmp_path))  # fmt: skip
    assert_one_line_error(bare, "usage", "did you mean read?", "--functions")


# --------------------------------------------------------------------------- loading errors


@pytest.mark.parametrize(
    ("source", "needles"),
    [
        ("x = 1\ndef f(a: int) -> int\n    return a\n", ["line 2", "SyntaxError"]),
        ("import os\n\nraise RuntimeError('no config here')\n",
         ["line 3", "RuntimeError: no config here"]),
        ("import not_a_module_anywhere\n", ["line 1", "ModuleNotFoundError"]),
        ("def shout(text, times: int) -> str:\n    return text * times\n",
         ["function shout", "'text'", "type hint", "def shout(text: str)"]),
        ("_private = 1\n", ["defines no public function"]),
    ],
)  # fmt: skip
def test_a_file_that_cannot_be_a_tool_is_a_usage_error(
    tmp_path: Path, source: str, needles: list[str]
) -> None:
    path = tmp_path / "broken.py"
    path.write_text(source, encoding="utf-8")
    proc = cli("chat", "-m", "local/m", "--base-url", "http://127.0.0.1:9/v1",
               "--functions", str(path), "hi", env=_data_env(tmp_path))  # fmt: skip
    assert_one_line_error(proc, "usage", str(path), *needles)
    assert proc.returncode == 2


def test_a_missing_functions_file_says_so(tmp_path: Path) -> None:
    proc = cli("chat", "-m", "local/m", "--base-url", "http://127.0.0.1:9/v1",
               "--functions", "nowhere.py", "hi", env=_data_env(tmp_path))  # fmt: skip
    assert_one_line_error(proc, "usage", "nowhere.py", "no such file")


# --------------------------------------------------------------------------- run


def test_run_keeps_its_file_tools_and_adds_the_functions(tmp_path: Path) -> None:
    notes, target = _notes(tmp_path), tmp_path / "out.txt"
    with MockServer(_save(target, "from run")) as srv:
        proc = cli("run", *_local_args(srv), "--root", str(tmp_path), "--functions", str(notes),
                   "-T", "save_note", "--ta", "--td", "--key", "sk-run", "save",
                   env=_data_env(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert target.read_text(encoding="utf-8") == "from run"
    assert sorted(_tools_sent(srv)) == ["grep", "ls", "read", "save_note"]
    assert "Tool call: save_note(" in proc.stderr
    assert srv.requests[0].headers["authorization"] == "Bearer sk-run"  # --key reaches the agent


# --------------------------------------------------------------------------- a terminal

needs_tmux = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (CI installs it)")


def _asking(pane: Pane) -> int:
    """How many approval questions the pane shows, 0 unless the last one waits."""
    screen = pane.screen(joined=True)  # a long question wraps over several rows
    return screen.count("[y/N/a]") if _last_line(screen).rstrip().endswith("[y/N/a]") else 0


@needs_tmux
def test_the_terminal_asks_before_each_call(tmp_path: Path) -> None:
    notes = _notes(tmp_path)
    yes, no = tmp_path / "yes.txt", tmp_path / "no.txt"
    pane = Pane(tmp_path)
    try:
        with MockServer([*_save(yes, "approved"), *_save(no, "declined")]) as srv:
            # Interactive: each turn runs the agent until the model answers.
            pane.type(_cmd("chat", *_local(srv, "openai-chat"), "--no-log", "--functions",
                           str(notes)))  # fmt: skip
            pane.wait_for(lambda s: _last_line(s).startswith("you ›"), "the chat prompt")
            pane.type("save the first")
            pane.wait_for(lambda _: _asking(pane) == 1, "the approval question")
            pane.type("y")
            pane.wait_for(lambda s: "Done." in s and _last_line(s).startswith("you ›"),
                          "the answer after the call")  # fmt: skip
            pane.type("save the second")
            pane.wait_for(lambda _: _asking(pane) == 2, "the second question")
            pane.type("n")
            pane.wait_for(lambda s: s.count("Done.") == 2 and _last_line(s).startswith("you ›"),
                          "the second answer")  # fmt: skip
            pane.key("C-d")
            pane.wait_for(lambda s: _last_line(s) == PROMPT.rstrip(), "the shell prompt")
            screen = pane.screen(joined=True)
    finally:
        pane.close()
    assert (
        f"Run save_note({json.dumps({'path': str(yes), 'text': 'approved'})})? [y/N/a] y" in screen
    )
    assert yes.read_text(encoding="utf-8") == "approved"
    assert not no.exists()
    assert "Traceback" not in screen and "modelwire: error" not in screen
    assert _tool_results(srv, 1) == [f"saved 8 characters to {yes}"]
    # The second turn carries the first one's call and result; its call was declined.
    assert _tool_results(srv, 2) == [f"saved 8 characters to {yes}"]
    declined = _tool_results(srv, 3)
    assert len(declined) == 2 and "declined" in declined[1]


@needs_tmux
def test_ctrl_c_at_the_question_runs_nothing_and_stops(tmp_path: Path) -> None:
    notes, target = _notes(tmp_path), tmp_path / "never.txt"
    pane = Pane(tmp_path)
    try:
        with MockServer(_save(target)) as srv:
            pane.type(_cmd("chat", *_local(srv, "openai-chat"), "--no-log", "--functions",
                           str(notes), "save it"))  # fmt: skip
            pane.wait_for(lambda _: _asking(pane) == 1, "the approval question")
            pane.key("C-c")
            pane.wait_for(lambda s: _last_line(s) == PROMPT.rstrip(), "the shell prompt")
            screen = pane.screen(joined=True)
    finally:
        pane.close()
    assert not target.exists()
    assert "modelwire: error [interrupted]" in screen and "Traceback" not in screen
    assert len(srv.requests) == 1  # the refused call was not sent back for an answer
