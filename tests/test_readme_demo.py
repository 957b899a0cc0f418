"""The README's ``$ make demo`` sample output is produced here, so it cannot go stale.

The test runs a fresh ``modelwire demo`` in the clone (it reads the clone's README.md)
and requires the README's transcript to be exactly that output, apart from what
changes on every run: the loopback port, the clone's path and the README's own
content hash (a file cannot quote its own hash). Everything else — line counts, sizes,
chapters, token counts and cost — must match as printed.

After editing README.md, regenerate the transcript with::

    MODELWIRE_UPDATE_README=1 pytest tests/test_readme_demo.py

which rewrites it until it is stable (the demo's output depends on the README's size,
which depends on the output).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCK = re.compile(r"```text\n\$ make demo\n\.venv/bin/modelwire demo\n(?P<out>.*?)\$ echo \$\?\n0\n```",
                   re.S)  # fmt: skip


def _demo() -> str:
    proc = subprocess.run([sys.executable, "-m", "modelwire", "demo"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _varying(text: str) -> str:
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)
    text = re.sub(r"rooted at [^)]*\)", "rooted at ROOT)", text)
    return re.sub(r"version [0-9a-f]{8,}", "version V", text)


def _printed() -> str:
    found = BLOCK.search(README.read_text(encoding="utf-8"))
    assert found, "README.md has no ```text $ make demo … $ echo $? 0``` block"
    return found["out"]


def _update() -> None:
    for _ in range(6):
        # The README shows a clone's path as a user's would be, not this machine's.
        out = _demo().replace(f"rooted at {ROOT})", "rooted at ~/modelwire)")
        text = README.read_text(encoding="utf-8")
        found = BLOCK.search(text)
        assert found
        if _varying(found["out"]) == _varying(out):
            return
        README.write_text(text[: found.start("out")] + out + text[found.end("out") :],
                          encoding="utf-8")  # fmt: skip
    raise AssertionError("the README transcript did not settle after 6 rewrites")


def test_the_readme_demo_output_is_a_fresh_demo_output() -> None:
    if os.environ.get("MODELWIRE_UPDATE_README"):
        _update()
    assert _varying(_printed()) == _varying(_demo()), (
        "the README's `make demo` output is stale: run "
        "MODELWIRE_UPDATE_README=1 pytest tests/test_readme_demo.py"
    )
