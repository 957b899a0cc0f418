"""Progress people expect: a live bar on a terminal, JSON lines otherwise.

Both read :meth:`Stats.snapshot` (done/total, requests/s, tokens/s, cost so
far, errors by kind, ETA) at most every ``interval`` seconds, and print the
summary at the end.
"""

from __future__ import annotations

import json
import math
import sys
import time
from typing import Any, TextIO

from ..errors import ConfigurationError

__all__ = ["JsonProgress", "NoProgress", "Progress", "RichProgress", "format_summary"]


class Progress:
    """What a run reports, in this order: ``invalid`` (the lines skipped with
    ``skip_invalid``, before anything is sent), ``start``, ``update`` as results
    arrive, and ``close`` with the summary — also when the run is interrupted.

    This base reports nothing (``batch``'s default); subclass it and override the
    methods to show a run your own way (a notebook widget, a log line).
    """

    def invalid(self, problems: list[Any]) -> None:
        """The invalid lines skipped.

        Args:
            problems: The :class:`~modelwire.batching.InputProblem` of each.
        """

    def start(self, total: int) -> None:
        """The run starts.

        Args:
            total: The valid requests in the input.
        """

    def update(self, snapshot: dict[str, Any], *, force: bool = False) -> None:
        """The counts so far, as results arrive.

        Args:
            snapshot: ``done``, ``errors`` by kind, ``requests_per_s``,
                ``tokens_per_s``, ``cost``…
            force: Report now, whatever the display's interval.
        """

    def close(self, summary: dict[str, Any]) -> None:
        """The run ended (also when it was interrupted).

        Args:
            summary: :class:`BatchSummary`'s fields as plain data.
        """


NoProgress = Progress


def _interval(value: float) -> float:
    # NaN would compare false with every elapsed time: no update would ever print.
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:  # fmt: skip
        raise ConfigurationError(f"interval must be a finite number of seconds >= 0, got {value!r}")  # fmt: skip
    return float(value)


class JsonProgress(Progress):
    """``{"type": "progress", ...}`` lines, then one ``{"type": "summary", ...}``.

    For a run watched by another program (``modelwire batch --json``): one JSON
    object per line, at most one progress line per ``interval``.

    Args:
        out: Where to write (default: stderr).
        interval: Seconds between progress lines (0: every update).

    Raises:
        ConfigurationError: ``interval`` is not a finite number >= 0.
    """

    def __init__(self, out: TextIO | None = None, interval: float = 1.0) -> None:
        self.out = out or sys.stderr
        self.interval = _interval(interval)
        self._last = 0.0

    def _line(self, kind: str, data: dict[str, Any]) -> None:
        self.out.write(json.dumps({"type": kind, **data}) + "\n")
        self.out.flush()

    def update(self, snapshot: dict[str, Any], *, force: bool = False) -> None:
        """A ``progress`` line, at most one per ``interval`` unless ``force``."""
        now = time.monotonic()
        if force or now - self._last >= self.interval:
            self._last = now
            self._line("progress", snapshot)

    def close(self, summary: dict[str, Any]) -> None:
        """The ``summary`` line."""
        self._line("summary", summary)


def _money(x: float) -> str:
    return f"${x:.4f}" if x < 1 else f"${x:,.2f}"


def format_summary(s: dict[str, Any]) -> str:
    """The end-of-run summary in one short paragraph."""
    failed = ", ".join(f"{k} {v}" for k, v in s["errors"].items()) or "none"
    parts = [
        f"{s['ok']} done, {s['failed']} failed ({failed}), "
        f"{s['skipped_done']} already in the output, {s['skipped_cost']} not started (cost cap), "
        f"{s['skipped_invalid']} invalid lines skipped"
        + (
            f", {s['skipped_deadline']} left by the run deadline"
            if s.get("skipped_deadline")
            else ""
        )
        + (
            f", {s['skipped_cancelled']} left by a cancelled provider job"
            if s.get("skipped_cancelled")
            else ""
        )
        + (f", {s['jobs']} provider batch jobs" if s.get("jobs") else ""),
        f"{s['input_tokens']:,} input + {s['output_tokens']:,} output tokens, "
        f"{_money(s['cost'])}, {s['requests']} requests, {s['wall_s']:.2f} s",
    ]
    if s.get("interrupted"):
        parts.append("stopped before the end: run the same command again to resume")
    return "\n".join(parts)


class RichProgress(Progress):
    """A rich live bar on a terminal (rich is the CLI extra).

    Shows done/total, request and token rates, cost and errors by kind, then the
    summary; what ``modelwire batch`` shows on a terminal.

    Args:
        interval: Seconds between redraws.
        console: A ``rich.console.Console`` (default: one on stderr).

    Raises:
        ConfigurationError: ``interval`` is not a finite number >= 0.
    """

    def __init__(self, interval: float = 0.2, console: Any = None) -> None:
        interval = _interval(interval)
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
        from rich.progress import Progress as Bar

        self.console = console or Console(stderr=True)
        self.bar = Bar(
            TextColumn("batch"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"), TimeRemainingColumn(),
            TextColumn("{task.fields[extra]}"),
            console=self.console, refresh_per_second=5, transient=False,
        )  # fmt: skip
        self.interval = interval
        self._last = 0.0
        self._task: Any = None

    def start(self, total: int) -> None:
        """Show the bar for ``total`` requests."""
        self.bar.start()
        self._task = self.bar.add_task("batch", total=total, rate="", extra="")

    def update(self, snapshot: dict[str, Any], *, force: bool = False) -> None:
        """Redraw: done/total, rates, cost and errors by kind."""
        now = time.monotonic()
        if self._task is None or not (force or now - self._last >= self.interval):
            return
        self._last = now
        errors = " ".join(f"{k}:{v}" for k, v in snapshot["errors"].items())
        # A provider batch run (via="provider") also shows its jobs by state.
        jobs = " ".join(f"{k}:{v}" for k, v in (snapshot.get("jobs") or {}).items())
        self.bar.update(
            self._task, completed=snapshot["done"],
            rate=f"{snapshot['requests_per_s']:.1f} req/s {snapshot['tokens_per_s']:.0f} tok/s",
            extra=f"{_money(snapshot['cost'])}" + (f" errors {errors}" if errors else "")
            + (f" jobs {jobs}" if jobs else ""),
        )  # fmt: skip

    def close(self, summary: dict[str, Any]) -> None:
        """Stop the bar and print the summary."""
        if self._task is not None:
            self.bar.update(self._task, completed=summary["ok"] + summary["failed"])
        self.bar.stop()
        self.console.print(format_summary(summary), highlight=False, markup=False)
