"""README.md and docs/ as a user copies them: every code block and command is run here.

Blocks of ``README.md``, ``docs/testing.md``, ``docs/providers.md`` and
``docs/adding-a-wire-api.md`` (the guides have
``tests/test_guide.py``), by kind:

* ``python`` blocks that are pytest files (a ``# name.py`` first line, or ``def test_``)
  run under pytest in a pytester project, exactly as printed; a ``# package/name.py``
  first line puts the block in that package, so a multi-file example is one project;
* other ``python`` blocks run one after the other in one namespace, with top-level
  ``await`` (as ``python -m asyncio`` or a notebook runs them), in a folder holding the
  files they name (``README.md``, ``docs/examples/``, ``replies.json``) and
  with a MockServer where the README says a server listens (``127.0.0.1:8000``);
* ``sh`` blocks: every ``modelwire …`` line runs as a subprocess, against a MockServer
  that ``OPENAI_BASE_URL``/``ANTHROPIC_BASE_URL`` point at (so no key or network is
  needed), and must exit 0 without a traceback; ``mock-server`` is stopped with Ctrl-C;
* ``json`` blocks parse (the mock-server script also loads as a script);
* the README's ``$ make demo`` transcript is compared with a fresh ``modelwire demo``,
  numbers, addresses and paths aside.

A block that cannot run hermetically is preceded by ``<!-- not run: reason -->``; that
set is kept small and listed by a test.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import modelwire as mw
from modelwire.testing import MockServer, Reply, load_script, tool_call

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TESTING = ROOT / "docs" / "testing.md"
PROVIDERS = ROOT / "docs" / "providers.md"
ADDING_AN_API = ROOT / "docs" / "adding-a-wire-api.md"
DOCS = [README, TESTING, PROVIDERS, ADDING_AN_API]
FENCE = re.compile(
    r"^(<!-- not run: (?P<why>.+?) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)^```\n", re.M | re.S
)
# ``# name.py`` or, for a module of a package, ``# package/name.py``.
FILE_HEADER = re.compile(r"\A# ((?:\w+/)*\w+\.py)\n")


@dataclass
class Block:
    doc: Path
    lang: str
    body: str
    line: int
    not_run: str | None

    @property
    def where(self) -> str:
        return f"{self.doc.name}:{self.line}"


def blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    return [
        Block(path, m["lang"], m["body"], text.count("\n", 0, m.start("body")), m["why"])
        for m in FENCE.finditer(text)
    ]


def is_pytest_file(block: Block) -> bool:
    return bool(
        FILE_HEADER.match(block.body) or re.search(r"^(async )?def test_", block.body, re.M)
    )


def kind(block: Block) -> str:
    if block.not_run:
        return "not run"
    if block.lang == "python":
        return "pytest" if is_pytest_file(block) else "python"
    if block.lang in ("sh", "console") and "modelwire " in block.body:
        return "commands"
    if block.lang == "json":
        return "json"
    if block.lang == "toml":
        return "config"  # config.toml, loaded by the CLI in tests/test_cli_config.py
    if block.lang == "text":
        return "transcript" if block.body.startswith("$ ") else "diagram"
    return "unknown"


def test_every_block_is_run_or_marked_not_run() -> None:
    found = [(b.where, kind(b)) for doc in DOCS for b in blocks(doc)]
    assert [w for w, k in found if k == "unknown"] == []
    not_run = [b for doc in DOCS for b in blocks(doc) if b.not_run]
    # Only package installation and the make entry points themselves.
    assert len(not_run) <= 2, [b.where for b in not_run]
    assert all(b.lang == "sh" for b in not_run)


# --------------------------------------------------------------------------- a workspace


def _workspace(tmp_path: Path) -> Path:
    """The files the examples name, as a user would have them."""
    (tmp_path / "README.md").write_text(README.read_text(encoding="utf-8"), encoding="utf-8")
    # The saved response bodies the docs name, shipped in the repository.
    shutil.copytree(ROOT / "docs" / "examples", tmp_path / "docs" / "examples")
    script = next(b for b in blocks(TESTING) if b.lang == "json")
    (tmp_path / "replies.json").write_text(script.body, encoding="utf-8")
    return tmp_path


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


# --------------------------------------------------------------------------- python blocks


async def _run_python(found: list[Block]) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "__doc__"}
    for block in found:
        code = compile(block.body, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        result = eval(code, namespace)
        if inspect.iscoroutine(result):
            await result
    return namespace


def _python_blocks(doc: Path) -> list[Block]:
    return [b for b in blocks(doc) if kind(b) == "python"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_python_blocks_run_as_printed(
    doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    found = _python_blocks(doc)
    assert found
    monkeypatch.chdir(_workspace(tmp_path))
    if doc is README:
        # The tour's server at 127.0.0.1:8000: a text and a read call, then answers.
        if not _port_free(8000):
            pytest.skip("port 8000 is busy: the README tour talks to 127.0.0.1:8000")
        # The quick start's "openai/..." calls reach it as the openai SDK would: the
        # key and base URL from the environment.
        monkeypatch.setenv("OPENAI_API_KEY", "sk-readme")
        monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
        quick_start = [
            "Waves fold to foam.",
            "Once upon a time.",
            tool_call("get_weather", {"city": "Paris"}),
            "It is 18 degrees and sunny in Paris.",
            '{"name": "Tokyo", "country": "Japan", "population": 37400000}',
            Reply(
                error="Rate limit reached for requests",
                error_type="rate_limit_exceeded",
                status=429,
            ),
        ]
        replies = [
            *quick_start,
            ["Let me read it.", tool_call("read", {"path": "README.md"})],
            "Hello.",
            ["Reading.", tool_call("read", {"path": "README.md"})],
            "It is the modelwire README.",
            "Nothing more.",
            Reply(
                message='{"name": "Tokyo", "country": "Japan", "population": 37400000}',
                piece_chars=4,
            ),  # the structured-output section's stream
        ]
        with MockServer(replies, repeat_last=True, port=8000) as server:
            namespace = asyncio.run(_run_python(found))
        assert namespace["answer"].final.text == "It is 18 degrees and sunny in Paris."
        assert namespace["city"] == namespace["City"](
            name="Tokyo", country="Japan", population=37400000
        )
        assert namespace["run"].final.text == "It is the modelwire README."
        assert namespace["message"].stop_reason in ("stop", "tool_use")
        assert [e.type for e in namespace["events"]][-1] == "done"
        assert len(server.requests) == len(quick_start) + 5 + 1
        assert namespace["partial"] == {"name": "Tokyo", "country": "Japan", "population": 37400000}
        weather = server.requests[3].json()["messages"][-1]
        assert (
            weather["role"] == "tool" and weather["content"] == "18 degrees celsius, sunny in Paris"
        )
        schema = server.requests[4].json()["response_format"]["json_schema"]
        assert schema["name"] == "City" and schema["strict"] is True
    else:
        asyncio.run(_run_python(found))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    if doc is README:  # the quick start's failure prints as its comment says
        assert re.search(
            r"error rate_limit HTTP 429 from POST http://\S+/v1/chat/completions: "
            r"Rate limit reached for requests \(rate_limit_exceeded\)",
            captured.out,
        )


def test_the_readme_malformed_chunk_example_is_what_modelwire_says() -> None:
    text = README.read_text(encoding="utf-8")
    quoted = re.search(r"A malformed chunk names its field path, e\.g\.\s+`([^`]+)`", text)
    assert quoted is not None
    chunk = b'data: {"choices":[{"index":0,"delta":{"content":5}}]}\n\n'
    error = mw.replay("openai-chat", chunk).message.error
    assert error is not None and error.kind == "malformed_chunk"
    assert quoted.group(1) in error.message


# --------------------------------------------------------------------------- pytest blocks


def pytest_files(path: Path) -> dict[str, str]:
    """Blocks that are pytest files: named by a ``# name.py`` first line, or defining tests."""
    files: dict[str, str] = {}
    for block in blocks(path):
        if kind(block) != "pytest":
            continue
        header = FILE_HEADER.match(block.body)
        name = header.group(1) if header else f"test_block_{block.line}.py"
        files[name] = block.body
    return files


@pytest.mark.parametrize("doc", [README, TESTING, ADDING_AN_API], ids=lambda d: d.name)
def test_the_documented_pytest_files_pass(doc: Path, pytester: pytest.Pytester) -> None:
    files = pytest_files(doc)
    if doc is TESTING:
        conftest = files["conftest.py"].splitlines()
        assert conftest[1] == 'pytest_plugins = ["modelwire.testing.pytest_plugin"]'
        pytester.makeconftest(files["conftest.py"])
    tests = {name: body for name, body in files.items() if name.startswith("test_")}
    assert tests
    for name, body in files.items():
        if name != "conftest.py" and name not in tests:  # a module the tests import
            pytester.makepyfile(**{name.removesuffix(".py"): body})
    for name, body in tests.items():
        pytester.makepyfile(**{name.removesuffix(".py"): body})
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-W", "error")
    result.assert_outcomes(passed=sum(b.count("def test_") for b in tests.values()))


def test_the_plugin_is_opt_in(pytester: pytest.Pytester) -> None:
    """Installing modelwire loads nothing into other projects' pytest runs."""
    pytester.makepyfile(
        """
        import sys

        def test_not_loaded():
            assert "modelwire.testing.pytest_plugin" not in sys.modules

        def test_no_fixture(mock_server):
            pass
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*fixture 'mock_server' not found*"])


# --------------------------------------------------------------------------- commands


def _commands(doc: Path) -> list[tuple[str, list[tuple[str, list[str]]]]]:
    """Each block's ``modelwire`` lines: a block is a session, run in order on a config
    and data folder of its own (``--save`` then ``-t``; ``aliases set`` then ``-m``)."""
    out = []
    for block in blocks(doc):
        if kind(block) != "commands":
            continue
        lines = []
        for line in block.body.splitlines():
            line = line.removeprefix("$ ")
            if line.startswith("modelwire "):
                lines.append((f"{block.where}: {line}", shlex.split(line, comments=True)))
        if lines:
            out.append((block.where, lines))
    return out


COMMANDS = [c for doc in (README, TESTING) for c in _commands(doc)]


def _example(schema: Any) -> Any:
    """A value of a (CLI-made) JSON Schema: what a model asked for it would send."""
    kind = schema.get("type")
    if kind == "object":
        return {k: _example(v) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [_example(schema.get("items", {}))]
    return {"integer": 1, "number": 1.5, "boolean": True}.get(kind, "text")


def _docs_reply(request: Any) -> str:
    """The docs' model: a value of the schema a ``--schema`` call sends, else a greeting."""
    body = request.json()
    schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
    return json.dumps(_example(schema)) if schema else "Hello from the docs test."


def _cli_env(server: MockServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    # A reader's shell has modelwire's environment on PATH (that is where its
    # `modelwire` command is), so `python` in a documented --mcp command is that one.
    path = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(
        PATH=path,
        OPENAI_BASE_URL=server.model("openai-chat").base_url,
        ANTHROPIC_BASE_URL=server.origin,
        OPENAI_API_KEY="sk-doc-test",
        ANTHROPIC_API_KEY="sk-doc-test",
        NO_COLOR="1",
    )
    return env


@pytest.mark.parametrize(("block", "lines"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_documented_commands_run(
    block: str, lines: list[tuple[str, list[str]]], tmp_path: Path
) -> None:
    cwd = _workspace(tmp_path)
    with MockServer([_docs_reply], repeat_last=True) as server:
        env = _cli_env(server)
        env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"))
        for where, argv in lines:
            _run_documented(where, argv, cwd, env)


def _run_documented(where: str, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
    cmd = [sys.executable, "-m", "modelwire", *argv[1:]]
    if argv[1] == "mock-server":
        if "--port" in argv and not _port_free(int(argv[argv.index("--port") + 1])):
            cmd[cmd.index("--port") + 1] = "0"  # busy here (another run): any free port
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)  # fmt: skip
        assert proc.stdout is not None
        first = proc.stdout.readline()  # listening: the server is up
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        code, out = proc.returncode, first + out
    else:
        done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        code, out, err = done.returncode, done.stdout, done.stderr
    assert code == 0, f"{where}\n{out}\n{err}"
    assert "Traceback" not in out + err and out.strip(), f"{where}\n{out}\n{err}"


def test_the_json_blocks_parse_and_the_script_loads(tmp_path: Path) -> None:
    found = [b for doc in DOCS for b in blocks(doc) if b.lang == "json"]
    assert found
    for block in found:
        json.loads(block.body)
    path = _workspace(tmp_path) / "replies.json"
    assert len(load_script(str(path))) == len(json.loads(path.read_text(encoding="utf-8")))


# --------------------------------------------------------------------------- the demo transcript


def _normalize(line: str) -> str:
    line = re.sub(r"rooted at [^)]*\)", "rooted at ROOT)", line.rstrip())
    line = re.sub(r"version [0-9a-f]{8,}", "version V", line)
    line = re.sub(r"主要章节：.*", "主要章节：…", line)
    return re.sub(r"\d+(\.\d+)?", "N", line)


def test_the_readme_demo_transcript_matches_a_fresh_demo() -> None:
    (transcript,) = [b for b in blocks(README) if kind(b) == "transcript"]
    lines = transcript.body.splitlines()
    assert lines[:2] == ["$ make demo", ".venv/bin/modelwire demo"]
    assert lines[-2:] == ["$ echo $?", "0"]
    proc = subprocess.run(
        [sys.executable, "-m", "modelwire", "demo"], cwd=ROOT, capture_output=True, text=True,
        timeout=120, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [_normalize(x) for x in proc.stdout.splitlines()] == [_normalize(x) for x in lines[2:-2]]
