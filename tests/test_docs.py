"""docs/testing.md as a user copies it: its pytest files run under pytest (pytester)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTING = ROOT / "docs" / "testing.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.M | re.S)
FILE_HEADER = re.compile(r"\A# (\w+\.py)\n")


def python_blocks(path: Path) -> list[str]:
    return [
        m.group(2)
        for m in FENCE.finditer(path.read_text(encoding="utf-8"))
        if m.group(1) == "python"
    ]


def pytest_files(path: Path) -> dict[str, str]:
    """Blocks that are pytest files: named by a ``# name.py`` first line, or defining tests."""
    files: dict[str, str] = {}
    for n, block in enumerate(python_blocks(path)):
        header = FILE_HEADER.match(block)
        if header:
            files[header.group(1)] = block
        elif re.search(r"^(async )?def test_", block, re.M):
            files[f"test_block_{n}.py"] = block
    return files


def test_the_documented_conftest_and_tests_pass(pytester: pytest.Pytester) -> None:
    files = pytest_files(TESTING)
    assert (
        files["conftest.py"].splitlines()[1]
        == 'pytest_plugins = ["modelwire.testing.pytest_plugin"]'
    )
    tests = {name: body for name, body in files.items() if name.startswith("test_")}
    assert len(tests) >= 2  # the fixtures example and the async MockServer example
    pytester.makeconftest(files["conftest.py"])
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
