"""A fresh clone: the suite runs without the recorded streams, CI insists on them."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pytest(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MODELWIRE_")}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", *args],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_without_the_fixture_folder_recorded_tests_skip_with_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    # test_handoff mixes tests over recorded streams with synthetic ones.
    proc = _pytest("-rs", "tests/test_handoff.py", MODELWIRE_FIXTURES=str(missing))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    reason = f"recorded provider streams not found at {missing}: set MODELWIRE_FIXTURES="
    summary = [ln for ln in proc.stdout.splitlines() if ln.startswith("modelwire: ")]
    assert len(summary) == 1 and reason in summary[0], proc.stdout
    skipped = [ln for ln in proc.stdout.splitlines() if ln.startswith("SKIPPED")]
    assert len(skipped) == 1 and reason in skipped[0], proc.stdout  # one folded reason
    assert " passed" in proc.stdout  # the synthetic tests still ran


def test_ci_turns_a_missing_fixture_folder_into_a_failure(tmp_path: Path) -> None:
    proc = _pytest(
        "tests/test_handoff.py",
        MODELWIRE_FIXTURES=str(tmp_path / "nowhere"),
        MODELWIRE_REQUIRE_FIXTURES="1",
    )
    assert proc.returncode != 0
    assert "MODELWIRE_REQUIRE_FIXTURES is set but recorded provider streams not found" in (
        proc.stdout + proc.stderr
    )
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "export MODELWIRE_REQUIRE_FIXTURES=1" in ci


def test_modelwire_fixtures_points_at_any_folder(tmp_path: Path) -> None:
    folder = tmp_path / "streams"
    (folder / "openai-chat").mkdir(parents=True)
    body = b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'
    (folder / "openai-chat" / "one.sse").write_bytes(body + b"data: [DONE]\n\n")
    proc = _pytest(
        "-rs", "tests/test_http.py", "-k", "live_and_replay", MODELWIRE_FIXTURES=str(folder)
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout and "skipped" not in proc.stdout, proc.stdout


def test_the_build_backend_is_a_dev_dependency() -> None:
    # test_catalog's wheel-contents test builds with hatchling: a dev install must have it.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    backend = project["build-system"]["requires"][0]
    assert any(
        dep.startswith(backend) for dep in project["project"]["optional-dependencies"]["dev"]
    )
