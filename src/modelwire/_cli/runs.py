"""The runs of ``modelwire run``, kept so that ``run --resume [ID]`` goes on with one.

Beside the log (``data_dir()/runs.db``) the agent's ledger keeps each run's
latest state and every tool call's result (:mod:`modelwire.agent`'s ``store``):
a resumed run replays a finished call and never executes it again. This module
adds what the command line needs to continue a run with no flags but its id: the
model as it was given (``-m``, ``--base-url``, ``--api``), the ``--root`` and the
task (to name runs in messages). Tools are code, so ``--functions``, ``-T`` and
``--mcp`` are given again.
"""

from __future__ import annotations

import argparse
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

from .common import CLIError, data_dir

__all__ = ["Record", "find", "new_run_id", "record", "runs_path"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS cli_runs (
    run_id TEXT PRIMARY KEY, model TEXT, base_url TEXT, api TEXT, root TEXT NOT NULL,
    task TEXT NOT NULL, started REAL NOT NULL)
"""


def runs_path() -> Path:
    """``data_dir()/runs.db``: the agent's ledger and this module's records."""
    return data_dir() / "runs.db"


def new_run_id() -> str:
    """Twelve hex digits: short enough to type, unique enough for one user's runs."""
    return uuid.uuid4().hex[:12]


class Record:
    """A run as ``modelwire run`` started it."""

    def __init__(self, row: tuple[Any, ...]) -> None:
        self.run_id: str = row[0]
        self.model: str | None = row[1]
        self.base_url: str | None = row[2]
        self.api: str | None = row[3]
        self.root: str = row[4]
        self.task: str = row[5]

    def label(self) -> str:
        task = " ".join(self.task.split())
        return f"{self.run_id} ({task[:40] + '…' if len(task) > 40 else task})"

    def apply(self, args: argparse.Namespace) -> None:
        """Fill in what the resuming command line did not give again."""
        if args.model is None:
            args.model, args.base_url = self.model, args.base_url or self.base_url
            args.api = args.api or self.api
        if args.root is None:
            args.root = self.root


def _connect(path: Path) -> sqlite3.Connection:
    try:
        db = sqlite3.connect(path, timeout=30, isolation_level=None)
        db.execute(_SCHEMA)
    except sqlite3.Error as exc:
        raise CLIError("file", f"cannot use the runs file {str(path)!r}: {exc}") from None
    return db


def record(args: argparse.Namespace, run_id: str, root: Path, task: str) -> None:
    """Keep how run ``run_id`` was started (before it sends anything)."""
    from .._redact import display_url

    path = runs_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    # A base URL carrying a credential (user:password@, ?key=) is not kept: a resumed
    # run is given it again with --base-url.
    base_url = args.base_url
    if base_url is not None and display_url(base_url) != base_url:
        base_url = None
    db = _connect(path)
    try:
        db.execute(
            "INSERT OR REPLACE INTO cli_runs VALUES (?, ?, ?, ?, ?, ?, ?)",
            (run_id, args.model, base_url, args.api, str(root.resolve()), task, time.time()),
        )
    finally:
        db.close()


def find(wanted: str) -> Record:
    """The run whose id is ``wanted`` or starts with it; the latest for ``""``."""
    path = runs_path()
    rows: list[tuple[Any, ...]] = []
    if path.exists():
        db = _connect(path)
        try:
            rows = db.execute("SELECT * FROM cli_runs ORDER BY started DESC").fetchall()
        finally:
            db.close()
    runs = [Record(r) for r in rows]
    if not runs:
        which = f"no run {wanted!r}" if wanted else "no run to resume"
        raise CLIError("usage", f"{which}: {str(path)!r} keeps no run of modelwire run yet")
    if not wanted:
        return runs[0]
    matches = [r for r in runs if r.run_id == wanted] or [
        r for r in runs if r.run_id.startswith(wanted)
    ]
    if len(matches) == 1:
        return matches[0]
    recent = ", ".join(r.label() for r in (matches or runs)[:5])
    if matches:
        raise CLIError("usage", f"{wanted!r} starts more than one run id: {recent}")
    raise CLIError("usage", f"no run {wanted!r}; the latest runs: {recent}")
