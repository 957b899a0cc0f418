"""The CLI in a real terminal: tmux runs it, the test types keys and reads the screen.

``chat``, ``run`` and ``demo`` run in a 60-column tmux pane against a MockServer on
loopback (no key, no network): streamed text appears piece by piece, thinking and tool
calls render, Ctrl-C leaves a clean shell prompt, and output fits the pane's width.
tmux comes from the OS (``apt-get install tmux``); ``.ci/run`` installs it, elsewhere
these tests skip with one line when it is missing.
"""

from __future__ import annotations

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
                   XDG_DATA_HOME=str(tmp_path / "data"), PYTHONUNBUFFERED="1")  # fmt: skip
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


def test_interactive_chat_in_a_terminal(pane: Pane) -> None:
    with MockServer(["first answer", "second answer"]) as srv:
        pane.type(_cmd("chat", *_local(srv, "openai-chat")))
        pane.wait_for(lambda s: _last_line(s).startswith("you ›"), "the chat prompt")
        pane.type("first question")
        pane.wait_for(lambda s: "first answer" in s and _last_line(s).startswith("you ›"),
                      "the answer, then the prompt")  # fmt: skip
        pane.type("second question")
        pane.wait_for(lambda s: "second answer" in s and _last_line(s).startswith("you ›"),
                      "the second answer")  # fmt: skip
        pane.key("C-c")  # at the prompt: leaves, the error on a line of its own
        screen = pane.wait_for(lambda s: _last_line(s) == PROMPT.rstrip(), "the shell prompt")
    assert [m["content"] for m in srv.requests[1].json()["messages"]] == [
        "first question", "first answer", "second question",
    ]  # fmt: skip
    error = next(ln for ln in screen.splitlines() if "modelwire: error" in ln)
    assert error.startswith("modelwire: error [interrupted]"), screen
