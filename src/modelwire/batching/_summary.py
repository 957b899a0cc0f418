"""What a batch run did: :class:`BatchSummary`, built from the runner's counts (shared by
the local and the Ray backends, so neither imports the other's entry point)."""

from __future__ import annotations

import time
from typing import Any

import msgspec

from ._input import InputProblem
from ._runner import Stats

__all__ = ["BatchSummary", "summarize", "summary_dict"]


class BatchSummary(msgspec.Struct, frozen=True, kw_only=True):
    """What a run did. ``ok + failed`` lines were written this run;
    ``skipped_done`` ids were already in the output (resume)."""

    total: int
    """Valid requests in the input."""
    ok: int
    """Lines answered and written this run."""
    failed: int
    """Lines that failed (after their attempts) and were written with their error."""
    errors: dict[str, int]
    """Failed requests by error kind."""
    skipped_done: int
    """Ids already in the output, skipped (a resumed run)."""
    skipped_cost: int
    """Not started because of ``max_cost`` (run again with a higher cap to go on)."""
    skipped_invalid: int
    """Invalid lines skipped with ``skip_invalid=True`` (listed in ``invalid``)."""
    requests: int
    """HTTP requests made (attempts, retries included)."""
    input_tokens: int
    """Prompt tokens (cached ones included) of this run's requests."""
    output_tokens: int
    """Output tokens of this run's requests."""
    cost: float
    """Dollars spent this run, also by lines left without a result (0 for models
    without prices)."""
    wall_s: float
    """Seconds the run took."""
    invalid: tuple[InputProblem, ...] = ()
    """The invalid lines skipped, each with what to fix."""
    skipped_deadline: int = 0
    """Not started, or cut before they finished, by ``run_timeout`` (run again to go on)."""
    interrupted: bool = False
    """The run was stopped (Ctrl-C) before every line was done: run again to resume."""
    skipped_cancelled: int = 0
    """``via="provider"``: lines a cancelled provider job did not answer (run again to
    send them in a new job)."""
    jobs: int = 0
    """``via="provider"``: provider batch jobs submitted this run."""

    @property
    def complete(self) -> bool:
        """Every valid request has a line in the output."""
        return (self.skipped_cost == 0 and self.skipped_deadline == 0
                and self.skipped_cancelled == 0 and not self.interrupted)  # fmt: skip


def summarize(
    stats: Stats, *, total: int, skipped_done: int, skipped_cost: int,
    invalid: list[InputProblem], started: float, skipped_deadline: int = 0,
    interrupted: bool = False, skipped_cancelled: int = 0, jobs: int = 0,
) -> BatchSummary:  # fmt: skip
    return BatchSummary(
        total=total, ok=stats.ok, failed=sum(stats.failed.values()),
        errors=dict(sorted(stats.failed.items())), skipped_done=skipped_done,
        skipped_cost=skipped_cost, skipped_invalid=len(invalid), requests=stats.attempts,
        input_tokens=stats.input_tokens, output_tokens=stats.output_tokens,
        cost=round(stats.cost, 9), wall_s=round(time.monotonic() - started, 3),
        invalid=tuple(invalid), skipped_deadline=skipped_deadline, interrupted=interrupted,
        skipped_cancelled=skipped_cancelled, jobs=jobs,
    )  # fmt: skip


def summary_dict(summary: BatchSummary) -> dict[str, Any]:
    d: dict[str, Any] = msgspec.to_builtins(summary)
    d["invalid"] = [{"line": p.line, "message": p.message} for p in summary.invalid]
    return d
