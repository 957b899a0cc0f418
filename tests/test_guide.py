"""The guide cannot rot: every command and code block in docs/guide*.md is run here.

From each guide (English and Chinese) this test extracts

* ``console`` blocks: each ``$ modelwire …`` line is a command; the lines after it
  are output it must print, in that order (other lines may come between them);
  ``…`` in an expected line matches any text; ``$ echo $?`` followed by a number
  is the command's exit code (0 when not shown);
* ``python`` blocks: executed from the repository root; a ``text`` block right
  after one is the output it must print, matched the same way.

Commands run in-process through ``modelwire._cli.main`` (stdout, then stderr, as a
terminal shows them); each distinct command runs once for both guides.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from modelwire._cli import main

ROOT = Path(__file__).resolve().parents[1]
GUIDES = [ROOT / "docs" / "guide.md", ROOT / "docs" / "guide.zh-CN.md"]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.M | re.S)


@dataclass
class Step:
    kind: str  # "command" or "python"
    source: str
    expected: list[str] = field(default_factory=list)
    exit_code: int = 0


def steps_of(text: str) -> list[Step]:
    steps: list[Step] = []
    blocks = [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]
    for i, (lang, body) in enumerate(blocks):
        if lang == "python":
            step = Step("python", body)
            if i + 1 < len(blocks) and blocks[i + 1][0] == "text":
                step.expected = blocks[i + 1][1].splitlines()
            steps.append(step)
        elif lang == "console":
            lines = body.splitlines()
            j = 0
            while j < len(lines):
                line = lines[j]
                if line == "$ echo $?":
                    steps[-1].exit_code = int(lines[j + 1])
                    j += 2
                    continue
                if line.startswith("$ "):
                    steps.append(Step("command", line[2:]))
                else:
                    steps[-1].expected.append(line)
                j += 1
    return steps


def pattern(line: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(p) for p in line.rstrip().split("…")))


def unmatched(expected: list[str], actual: str) -> str | None:
    """The first expected line not found, in order, in ``actual`` (``None``: all found)."""
    lines = [ln.rstrip() for ln in actual.splitlines()]
    pos = 0
    for exp in expected:
        if exp.strip() in ("", "…"):
            continue
        pat = pattern(exp)
        while pos < len(lines) and not pat.fullmatch(lines[pos]):
            pos += 1
        if pos == len(lines):
            return exp
        pos += 1
    return None


_results: dict[str, tuple[int, str]] = {}


def run(step: Step, *, again: bool = False) -> tuple[int, str]:
    key = f"{step.kind}:{step.source}"
    if key in _results and not again:
        return _results[key]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        if step.kind == "command":
            argv = shlex.split(step.source)
            assert argv[0] == "modelwire", step.source
            code = main(argv[1:])
        else:
            exec(compile(step.source, "<guide>", "exec"), {"__name__": "__guide__"})
            code = 0
    _results[key] = (code, out.getvalue() + err.getvalue())
    return _results[key]


def _cases() -> list[tuple[str, Step]]:
    cases = []
    for guide in GUIDES:
        for n, step in enumerate(steps_of(guide.read_text(encoding="utf-8")), 1):
            cases.append((f"{guide.name}#{n}", step))
    return cases


CASES = _cases()


def test_both_guides_exist_and_show_the_same_commands() -> None:
    english, chinese = (steps_of(g.read_text(encoding="utf-8")) for g in GUIDES)
    assert [s.source for s in english] == [s.source for s in chinese]
    assert [s.exit_code for s in english] == [s.exit_code for s in chinese]
    commands = [s.source for s in english if s.kind == "command"]
    assert "modelwire demo --trace" in commands
    # Every counterexample file is shown, and every file shown exists; the others are
    # the saved bodies the README and docs/testing.md name (tests/test_docs.py runs those).
    shown = {p for c in commands for p in shlex.split(c) if p.startswith("docs/examples/")}
    named = {"docs/examples/call.sse", "docs/examples/recorded.sse"}
    files = {f"docs/examples/{p.name}" for p in (ROOT / "docs" / "examples").glob("*.sse")}
    assert shown == files - named
    docs = (ROOT / "README.md").read_text(encoding="utf-8")
    docs += (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    assert all(name in docs for name in named)


@pytest.mark.parametrize(("where", "step"), CASES, ids=[c[0] for c in CASES])
def test_guide_step(where: str, step: Step, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    code, output = run(step)
    missing = unmatched(step.expected, output)
    if missing is not None and "demo" in step.source:
        # Live reads are real network reads: under heavy load two writes of the
        # mock server can arrive as one read. Such a run differs in its read
        # lines only; one more run settles it.
        code, output = run(step, again=True)
        missing = unmatched(step.expected, output)
    assert code == step.exit_code, f"{where}: `{step.source}` exited {code}\n{output}"
    assert missing is None, f"{where}: `{step.source}` did not print:\n{missing}\n---\n{output}"
    assert "Traceback" not in output


def test_the_readme_trace_excerpt(monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's trimmed ``modelwire demo --trace`` is checked the same way."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    steps = [s for s in steps_of_blocks(readme) if s.source == "modelwire demo --trace"]
    if not steps:
        pytest.skip("README.md shows no `$ modelwire demo --trace` block")
    monkeypatch.chdir(ROOT)
    for step in steps:
        code, output = run(step)
        missing = unmatched(step.expected, output)
        if missing is not None:
            code, output = run(step, again=True)
            missing = unmatched(step.expected, output)
        assert code == step.exit_code and missing is None, f"README.md did not match:\n{missing}"


def steps_of_blocks(text: str) -> list[Step]:
    """Steps of the ``console`` blocks that run ``modelwire`` (a README has others)."""
    blocks = [m.group(0) for m in FENCE.finditer(text) if m.group(1) == "console"]
    found = [s for b in blocks for s in steps_of(b)]
    return [s for s in found if s.kind == "command" and s.source.startswith("modelwire ")]


def test_the_matcher_can_fail() -> None:
    assert unmatched(["a…c", "d"], "abc\nxd\nd\n") is None
    assert unmatched(["d", "a…c"], "abc\nd\n") == "a…c"  # order matters
    assert unmatched(["abc"], "abcd\n") == "abc"  # whole lines only
