"""Every example in a public docstring runs as printed and prints what its comments say.

The reference site shows these blocks (``Example:`` sections, fenced ``python``); a
reader copies them. Each runs here in a directory of its own, and each
``print(...)  # shown`` line's comment is checked against what was printed, in order:
the line as shown, or the shown text followed by an explanation (``# 5: the result``),
or with ``…`` standing for any text within the line.
"""

from __future__ import annotations

import importlib
import inspect
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from test_reference import MODULES as REFERENCE_MODULES

#: The reference's modules, and those whose names it shows through ``modelwire``.
MODULES = (
    *REFERENCE_MODULES,
    "modelwire.agent",
    "modelwire.events",
    "modelwire.types",
    "modelwire.trace",
)

#: Examples that show a long-running server: they start it and never return.
SERVES = {
    "modelwire.gateway.app": "runs uvicorn until stopped",
    "modelwire.gateway.serve": "serves until stopped",
}

_BLOCK = re.compile(r"```python\n(.*?)^\s*```", re.S | re.M)


def _members(obj: Any) -> Iterator[tuple[str, Any]]:
    for name in dir(obj):
        if name.startswith("_"):
            continue
        value = inspect.getattr_static(obj, name)
        if isinstance(value, classmethod | staticmethod):
            yield name, value.__func__
        elif isinstance(value, property):
            yield name, value.fget
        elif inspect.isfunction(value):
            yield name, value


def _examples() -> dict[str, str]:
    found: dict[str, str] = {}
    seen: set[str] = set()

    def add(name: str, obj: Any) -> None:
        for i, m in enumerate(_BLOCK.finditer(inspect.getdoc(obj) or "")):
            code = textwrap.dedent(m.group(1))
            if code not in seen:  # a name re-exported by several modules
                seen.add(code)
                found[f"{name}#{i}" if i else name] = code

    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            add(f"{module_name}.{name}", obj)
            if inspect.isclass(obj):
                for member, value in _members(obj):
                    add(f"{module_name}.{name}.{member}", value)
    return found


EXAMPLES = _examples()


def _shown(line: str) -> str | None:
    code, sep, comment = line.partition("  # ")
    return comment.strip() if sep and code.strip().startswith("print(") else None


def _matches(shown: str, printed: str) -> bool:
    if shown == printed or shown.startswith((f"{printed}: ", f"{printed}  ")):
        return True
    if "…" in shown:
        pattern = ".*".join(re.escape(part) for part in shown.split("…"))
        return re.fullmatch(pattern, printed) is not None
    return False


def test_the_public_docstrings_have_examples() -> None:
    # The collection itself: the entry points' examples are among them.
    for name in ("modelwire.complete_sync", "modelwire.Agent.resume", "modelwire.resume_stream"):
        assert name in EXAMPLES
    assert len(EXAMPLES) > 40


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_example_runs_as_printed(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if name in SERVES:
        pytest.skip(f"{name}: {SERVES[name]}")
    code = EXAMPLES[name]
    monkeypatch.chdir(tmp_path)  # an example may write files (a batch's output)
    exec(compile(code, name, "exec"), {"__name__": "__example__"})
    printed = [line.strip() for line in capsys.readouterr().out.splitlines()]
    rest = iter(printed)
    for shown in filter(None, map(_shown, code.splitlines())):
        assert any(_matches(shown, line) for line in rest), (
            f"{name}: nothing printed matches {shown!r}; printed: {printed}"
        )
