"""The CLI in a real terminal: tmux runs it, the test types keys and reads the screen.

``chat``, ``run`` and ``demo`` run in a 60-column tmux pane against a MockServer on
loopback (no key, no network): streamed text appears piece by piece, thinking and tool
calls render, Ctrl-C leaves a clean shell prompt, and output fits the pane's width.
tmux comes from the OS (``apt-get install tmux``); ``.ci/run`` installs it, elsewhere
these tests skip with one line when it is missing.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import modelwire as mw
from modelwire.testing import MockServer, Reply, tool_call

TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (CI installs it)")

WIDTH, HEIGHT = 60, 40
PROMPT = "READY$ "


class Pane:
    """One tmux server (its own socket) with one shell in a WIDTH×HEIGHT window."""

    def __init__(self, tmp_path: Path) -> None:
        self.socket = f"modelwire-test-{uuid.uuid4().hex[:8]}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
        env.update(TERM="xterm-256color", PS1=PROMPT, HOME=str(tmp_path),
                   XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "config"),
                   PYTHONUNBUFFERED="1")  # fmt: skip
        env.pop("NO_COLOR", None)
        self.env = env
        self.tmux("-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", str(WIDTH),
                  "-y", str(HEIGHT), "bash --norc --noprofile")  # fmt: skip
        self.wait_for(lambda screen: bool(screen.strip()), "a shell")
        self.type(f"PS1='{PROMPT}'; clear")  # bash sets its own PS1, whatever the env says
        self.wait_for(lambda screen: screen.strip() == PROMPT.rstrip(), "a clean prompt")

    def tmux(self, *args: str) -> str:
        proc = subprocess.run([TMUX or "tmux", "-L", self.socket, *args], env=self.env,
                              capture_output=True, text=True, timeout=30)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def type(self, line: str) -> None:
        self.tmux("send-keys", "-t", "t", "-l", line)
        # Wait for the shell to echo the line before pressing Enter: otherwise a wait
        # for "the prompt again" could see the old prompt, before the command started.
        tail = line[-20:]
        self.wait_for(lambda _: tail in self.screen(joined=True), f"the typed {tail!r}")
        self.tmux("send-keys", "-t", "t", "Enter")

    def key(self, name: str) -> None:
        self.tmux("send-keys", "-t", "t", name)

    def screen(self, *, joined: bool = False) -> str:
        """What the pane shows (``joined``: wrapped rows joined into their lines)."""
        return self.tmux("capture-pane", "-p", "-t", "t", *(["-J"] if joined else []))

    def wait_for(self, ready: Callable[[str], bool], what: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if ready(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"the terminal never showed {what}:\n{screen}")
            time.sleep(0.05)

    def close(self) -> None:
        subprocess.run([TMUX or "tmux", "-L", self.socket, "kill-server"],
                       capture_output=True, timeout=30)  # fmt: skip


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[Pane]:
    p = Pane(tmp_path)
    try:
        yield p
    finally:
        p.close()


def _cmd(*args: str) -> str:
    return shlex.join([sys.executable, "-m", "modelwire", *args])


def _local(srv: MockServer, api: str) -> list[str]:
    return ["-m", "local/m", "--base-url", srv.model(api).base_url, "--api", api]


def _last_line(screen: str) -> str:
    return [ln for ln in screen.splitlines() if ln.strip()][-1]


ANSWER = "streamed piece by piece through a real terminal"


def test_chat_streams_incrementally_and_renders_thinking(pane: Pane) -> None:
    reply: list[mw.ThinkingContent | mw.TextContent] = [
        mw.ThinkingContent(thinking="pondering"),
        mw.TextContent(text=ANSWER),
    ]
    with MockServer([Reply(message=mw.AssistantMessage(
            content=reply, api="", provider="", model="", stop_reason="stop"),
            piece_chars=3, delay=0.25)]) as srv:  # fmt: skip
        pane.type(_cmd("chat", *_local(srv, "anthropic-messages"), "hi"))
        # Part of the answer is on screen before the whole of it: it streams.
        partial = pane.wait_for(lambda s: "streamed pi" in s, "the first pieces")
        assert ANSWER not in partial
        final = pane.wait_for(lambda s: _last_line(s) == PROMPT.rstrip(), "the prompt again")
    assert "thinking: pondering" in final
    assert ANSWER in pane.screen(joined=True)


def test_ctrl_c_leaves_a_clean_prompt(pane: Pane) -> None:
    slow = Reply(message="a b c d e f g h i j k l m n o p q r s t", piece_chars=2, delay=0.2)
    with MockServer([slow]) as srv:
        pane.type(_cmd("chat", *_local(srv, "openai-chat"), "hi"))
        pane.wait_for(lambda s: "a b c" in s, "the answer starting")
        pane.key("C-c")
        screen = pane.wait_for(lambda s: _last_line(s) == PROMPT.rstrip(), "the prompt")
    lines = [ln for ln in screen.splitlines() if ln.strip()]
    error = next(ln for ln in lines if "modelwire: error" in ln)
    assert error.lstrip("^C").startswith("modelwire: error [interrupted]")  # a line of its own
    assert lines[-1] == PROMPT.rstrip() and lines[-2] != lines[-1]
    assert "Traceback" not in screen


def test_run_renders_tool_calls_within_the_width(pane: Pane, tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    wide = "x" * 150
    (root / "notes.txt").write_text(f"first line\n{wide}\nlast line\n", encoding="utf-8")
    replies = [["Reading.", tool_call("read", {"path": "notes.txt"})], "Done reading."]
    with MockServer(replies) as srv:
        pane.type(_cmd("run", *_local(srv, "openai-chat"), "--root", str(root), "read", "it"))
        pane.wait_for(lambda s: _last_line(s) == PROMPT.rstrip(), "the prompt again")
    screen = pane.screen(joined=True)
    assert '→ read {"path":"notes.txt"}' in screen
    assert "← read result:" in screen and "Done reading." in screen
    result = screen[screen.index("← read result:") :].splitlines()[1:5]
    wide_row = next(ln for ln in result if "xxxx" in ln)
    assert len(wide_row) <= WIDTH and wide_row.endswith("…")  # cut to the pane, not wrapped


def test_demo_in_a_terminal_has_colour_and_ends_at_the_prompt(pane: Pane, tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# Terminal\n\n## One\n", encoding="utf-8")
    pane.type(_cmd("demo", "--root", str(tmp_path)))
    pane.wait_for(lambda s: "served 2 requests" in s, "the end of the demo", timeout=90)
    pane.wait_for(lambda s: _last_line(s) == PROMPT.rstrip(), "the prompt again")
    coloured = pane.tmux("capture-pane", "-p", "-e", "-t", "t")
    assert "\x1b[" in coloured
    screen = pane.screen(joined=True)
    assert "第一行是「# Terminal」" in screen and "Traceback" not in screen


def _at_chat_prompt(screen: str) -> bool:
    return _last_line(screen).startswith("you ›")


def test_interactive_chat_in_a_terminal(pane: Pane) -> None:
    with MockServer(["first answer", "second answer"]) as srv:
        pane.type(_cmd("chat", *_local(srv, "openai-chat")))
        pane.wait_for(_at_chat_prompt, "the chat prompt")
        pane.type("first question")
        pane.wait_for(lambda s: "first answer" in s and _at_chat_prompt(s),
                      "the answer, then the prompt")  # fmt: skip
        pane.type("second question")
        pane.wait_for(lambda s: "second answer" in s and _at_chat_prompt(s),
                      "the second answer")  # fmt: skip
        # Ctrl-C at the prompt clears what was typed (the chat goes on); Ctrl-D ends it.
        pane.tmux("send-keys", "-t", "t", "-l", "never sent")
        pane.wait_for(lambda s: "never sent" in _last_line(s), "the typed text")
        pane.key("C-c")
        pane.wait_for(lambda s: _last_line(s).strip() == "you ›", "a cleared prompt line")
        pane.key("C-d")
        pane.wait_for(lambda s: _last_line(s) == PROMPT.rstrip(), "the shell prompt")
        pane.type("echo rc=$?")
        screen = pane.wait_for(lambda s: "rc=0" in s, "the exit code")
    assert len(srv.requests) == 2
    assert [m["content"] for m in srv.requests[1].json()["messages"]] == [
        "first question", "first answer", "second question",
    ]  # fmt: skip
    assert "Traceback" not in screen and "modelwire: error" not in screen


def _paste(pane: Pane, text: str) -> None:
    # As a terminal pastes: tmux wraps it in the bracketed-paste markers when the
    # program asked for them (-p), and sends each newline as Enter (CR), as typing would.
    pane.tmux("set-buffer", "-b", "p", "--", text)
    pane.tmux("paste-buffer", "-p", "-b", "p", "-d", "-t", "t")


def test_a_paste_is_one_message_and_never_reaches_the_shell(pane: Pane, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    text = (f"first paragraph of the paste\n\nsecond paragraph\necho PWNED > {marker}\n"
            "/exit\n\nlast line")  # fmt: skip
    with MockServer(["one answer for the whole paste"]) as srv:
        pane.type(_cmd("chat", *_local(srv, "openai-chat")))
        pane.wait_for(_at_chat_prompt, "the chat prompt")
        _paste(pane, text)
        pane.wait_for(lambda s: "last line" in s, "the pasted text")
        time.sleep(0.3)  # nothing is sent before Enter
        assert srv.requests == []
        pane.key("Enter")
        pane.wait_for(lambda s: "one answer for the whole paste" in s and _at_chat_prompt(s),
                      "the answer")  # fmt: skip
        pane.key("C-d")
        pane.wait_for(lambda s: _last_line(s) == PROMPT.rstrip(), "the shell prompt")
    assert len(srv.requests) == 1
    messages = srv.requests[0].json()["messages"]
    assert messages == [{"role": "user", "content": text}]
    assert not marker.exists()
    assert "PWNED" not in pane.screen(joined=True).split("one answer")[-1]


def test_ctrl_c_stops_only_the_answer_and_c_continues_after_it(pane: Pane) -> None:
    slow = Reply(message="a b c d e f g h i j k l m n o p q r s t", piece_chars=2, delay=0.2)
    with MockServer([slow, "after the stop", "continued"]) as srv:
        pane.type(_cmd("chat", *_local(srv, "openai-chat")))
        pane.wait_for(_at_chat_prompt, "the chat prompt")
        pane.type("tell me the letters")
        pane.wait_for(lambda s: "a b c" in s, "the answer starting")
        pane.key("C-c")
        screen = pane.wait_for(lambda s: "answer stopped" in s and _at_chat_prompt(s),
                               "the chat prompt after the stop")  # fmt: skip
        assert "s t" not in screen  # it stopped before the end
        pane.type("and then?")
        pane.wait_for(lambda s: "after the stop" in s and _at_chat_prompt(s), "the next answer")
        pane.key("C-d")
        pane.wait_for(lambda s: _last_line(s) == PROMPT.rstrip(), "the shell prompt")
        pane.type(_cmd("chat", "-c", "one more"))
        pane.wait_for(lambda s: "continued" in s and _last_line(s) == PROMPT.rstrip(),
                      "the continued answer")  # fmt: skip
    second = srv.requests[1].json()["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    partial = second[1]["content"]
    assert partial and "a b c d e f g h i j k l m n o p q r s t".startswith(partial)
    third = srv.requests[2].json()["messages"]
    assert [m["content"] for m in third] == [
        "tell me the letters", partial, "and then?", "after the stop", "one more",
    ]  # fmt: skip


def test_history_multi_line_input_and_commands(pane: Pane, tmp_path: Path) -> None:
    saved = tmp_path / "saved.json"
    with MockServer(["answer-1", "answer-2", "answer-3"]) as srv:
        pane.type(_cmd("chat", *_local(srv, "openai-chat")))
        pane.wait_for(_at_chat_prompt, "the chat prompt")
        pane.type("remember me")
        pane.wait_for(lambda s: "answer-1" in s and _at_chat_prompt(s), "the answer")
        pane.key("Up")  # line editing and history: the last message comes back
        pane.wait_for(lambda s: _last_line(s).endswith("remember me"), "the recalled line")
        pane.key("Enter")
        pane.wait_for(lambda s: "answer-2" in s and _at_chat_prompt(s), "the second answer")
        pane.tmux("send-keys", "-t", "t", "-l", "line one")
        pane.key("Escape")
        pane.key("Enter")  # Esc Enter: a new line, not sent
        pane.tmux("send-keys", "-t", "t", "-l", "line two")
        pane.wait_for(lambda s: "line two" in s, "the second line")
        pane.key("Enter")
        pane.wait_for(lambda s: "answer-3" in s and _at_chat_prompt(s), "the third answer")
        pane.tmux("send-keys", "-t", "t", "-l", "   ")
        pane.key("Enter")  # blank input is ignored: no request, the prompt again
        pane.key("Enter")
        pane.type("/system be terse")
        pane.wait_for(lambda s: "system prompt: be terse" in s, "the system prompt")
        pane.type(f"/save {saved}")
        pane.wait_for(lambda s: "saved 6 messages" in s, "the save")
        pane.type("/help")
        pane.wait_for(lambda s: "/model [PROVIDER/MODEL]" in s, "the help")
        pane.type("/exit")
        pane.wait_for(lambda s: _last_line(s) == PROMPT.rstrip(), "the shell prompt")
    assert len(srv.requests) == 3
    assert srv.requests[1].json()["messages"][-1]["content"] == "remember me"
    assert srv.requests[2].json()["messages"][-1]["content"] == "line one\nline two"
    history = (tmp_path / "config" / "modelwire" / "history").read_text(encoding="utf-8")
    assert "remember me" in history
    data = json.loads(saved.read_text(encoding="utf-8"))
    assert data["context"]["system_prompt"] == "be terse"
    assert [m["role"] for m in data["context"]["messages"]] == ["user", "assistant"] * 3
