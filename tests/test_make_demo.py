"""``make demo`` installs only what the demo needs: the library and the ``cli`` extra,
with a stamp of its own (``make test`` still installs ``dev``). Read with ``make -n``
in a copy of the clone's Makefile and pyproject.toml, where no .venv exists yet."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAKE = shutil.which("make")


def _plan(tmp_path: Path, target: str) -> list[str]:
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    # Run as a top-level make even when the suite runs under `make test` (MAKELEVEL and
    # MAKEFLAGS would make it print "make[1]: Entering directory …" around the plan).
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    proc = subprocess.run([MAKE or "make", "--no-print-directory", "-n", target], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


@pytest.mark.skipif(MAKE is None, reason="make is not installed")
def test_make_demo_installs_only_the_cli_extra(tmp_path: Path) -> None:
    demo = _plan(tmp_path, "demo")
    installs = [ln for ln in demo if "pip install" in ln]
    assert installs == [".venv/bin/python -m pip install -q -e '.[cli]'"]
    assert demo[-1] == ".venv/bin/modelwire demo"
    test = _plan(tmp_path, "test")
    assert any("pip install -q -e '.[dev]'" in ln for ln in test)
    stamps = {ln.split()[-1] for ln in demo + test if ln.startswith("touch ")}
    assert len(stamps) == 2  # one each: a demo never installs the test tools


def test_the_cli_extra_is_small_and_the_demo_needs_nothing_else() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    names = {req.split(">")[0].split("[")[0].split("=")[0] for req in extras["cli"]}
    assert names == {"rich", "prompt_toolkit"}
    # The otel extra is the API alone: the application brings its SDK.
    assert extras["otel"] == [r for r in extras["otel"] if r.startswith("opentelemetry-api")]
