"""``via="provider"``: the lines of a run sent through the providers' batch APIs, with
the live runner's output, resume and cost rules (docs/batch.md, "Provider batch").

The rules, in order:

* OUT is opened (locked) and read as for a live run; the jobs ledger next to it
  (:mod:`._ledger`) is read: a job the provider created whose results are not all in
  OUT is **polled**, never submitted again, and its lines are sent in no other job; a
  job whose create answer a crash lost is looked for by name where the provider
  allows it (OpenAI, Gemini) and polled if found.
* The other lines go in new jobs — one per API, model, endpoint and key, each at most
  the provider's ``max_lines`` — each line reserving its most at the batch price from
  ``max_cost`` first (a line the cap refuses is not sent: ``skipped_cost``).
* Jobs are polled (first after ``poll_first`` seconds, then twice as long each time, up
  to ``poll_max``); an ended job's results are read, each answer decoded by its API's
  live pipeline, each line written once to OUT (synced), then the job marked done.
* A line the job did not answer — it **expired**, or failed with a retryable error
  (the classifier's ``retryable``: 429, 5xx…), or its job failed to be created — goes
  in a **new job** while it has attempts left (``max_attempts``, counting every job
  it was sent in, across runs); then its last failure is its result line. A line a
  **cancelled** job did not answer gets no line (``skipped_cancelled``): the same
  command sends it again.
* ``run_timeout`` stops the waiting, not the jobs: they stay in the ledger and the same
  command picks them up (their lines count as ``skipped_deadline``).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from ..._apis._batch import LineResult
from ...errors import ModelwireError
from ...types import AssistantMessage, ErrorInfo, Usage
from .._input import InputProblem
from .._output import OutputLog
from .._progress import Progress
from .._runner import Budget, Stats, _record
from .._summary import BatchSummary, summarize, summary_dict
from ._jobs import Active, find, new_job, poll, results, submit
from ._ledger import Ledger
from ._lines import Line

__all__ = ["ProviderSettings", "Sleep", "run_provider"]

Sleep = Callable[[float], Awaitable[None]]


class ProviderSettings(msgspec.Struct, frozen=True, kw_only=True):
    max_attempts: int = 4
    output_format: str = "modelwire"
    run_deadline: float | None = None
    """``time.time()`` after which the run stops waiting (its jobs go on)."""
    poll_first: float = 5.0
    poll_max: float = 60.0


async def run_provider(
    lines: list[Line],
    *,
    invalid: list[InputProblem],
    out: str,
    inputs: tuple[str, ...],
    settings: ProviderSettings,
    max_cost: float | None,
    progress: Progress,
    started: float,
    sleep: Sleep = asyncio.sleep,
) -> BatchSummary:
    """Run ``lines`` through the providers' batch APIs into ``out`` (the rules above)."""
    with OutputLog(out, output_format=settings.output_format, inputs=inputs) as log:
        ledger = Ledger(out)
        try:
            run = _Run(lines, log, ledger, settings, Budget(max_cost), progress, sleep)
            return await run.go(invalid, started)
        finally:
            ledger.close()


class _Run:
    def __init__(
        self, lines: list[Line], log: OutputLog, ledger: Ledger, settings: ProviderSettings,
        budget: Budget, progress: Progress, sleep: Sleep,
    ) -> None:  # fmt: skip
        self.log, self.ledger, self.settings = log, ledger, settings
        self.budget, self.progress, self.sleep = budget, progress, sleep
        self.total = len(lines)
        todo = [line for line in lines if line.req.custom_id not in log.done]
        self.skipped_done = len(lines) - len(todo)
        self.stats = Stats(len(todo), already_done=self.skipped_done)
        self.attempts = ledger.attempts()
        self.skipped = {"cost": 0, "deadline": 0, "cancelled": 0}
        self.jobs = 0
        self.active: list[Active] = []
        self.started: dict[str, float] = {}
        by_id = {line.req.custom_id: line for line in todo}
        self.unsure: list[Active] = []
        self.counted: set[str] = set()  # jobs of this run whose attempts are counted
        for job in ledger.unsure_jobs():
            mine = {k: by_id.pop(cid) for k, cid in job.keys.items() if cid in by_id}
            if mine:
                self.unsure.append(Active(job, mine))
        for job in ledger.open_jobs():
            mine = {k: by_id.pop(cid) for k, cid in job.keys.items() if cid in by_id}
            if mine:
                active = Active(job, mine)
                self._reserve_resumed(active)
                self.active.append(active)
            elif all(cid in log.done for cid in job.keys.values()):
                ledger.done(job, "written")  # every result reached OUT before a crash
        self.retry: list[Line] = list(by_id.values())

    def _reserve_resumed(self, active: Active) -> None:
        # A job already sent may still cost its most: it counts against the cap.
        if self.budget.max_cost is not None:
            self.budget.in_flight += active.estimate

    async def go(self, invalid: list[InputProblem], started: float) -> BatchSummary:
        self.progress.start(self.stats.total)
        interrupted = False
        try:
            await self._loop()
        except (asyncio.CancelledError, KeyboardInterrupt):
            interrupted = True
            raise
        finally:
            self.log.sync()
            self.progress.update(self._snapshot(), force=True)
            summary = summarize(
                self.stats, total=self.total, skipped_done=self.skipped_done,
                skipped_cost=self.skipped["cost"], skipped_deadline=self.skipped["deadline"],
                invalid=invalid, started=started, interrupted=interrupted,
                skipped_cancelled=self.skipped["cancelled"], jobs=self.jobs,
            )  # fmt: skip
            self.progress.close(summary_dict(summary))
        return summary

    def _left(self) -> float:
        deadline = self.settings.run_deadline
        return math.inf if deadline is None else deadline - time.time()

    async def _loop(self) -> None:
        from ..._http import pooled_async_client

        http = pooled_async_client(4)
        delay = self.settings.poll_first
        try:
            while True:
                await self._recover(http)
                for active in [a for a in self.active if _ended(a)]:
                    await self._finish(active, http)
                    self.active.remove(active)
                if self.retry and self._left() > 0:
                    todo, self.retry = self.retry, []
                    if await self._submit_all(todo, http):
                        delay = self.settings.poll_first
                self._update()
                if not self.active and not self.retry and not self.unsure:
                    return
                left = self._left()
                if left <= 0:
                    waiting = sum(len(a.lines) for a in [*self.active, *self.unsure])
                    waiting += len(self.retry)
                    self.skipped["deadline"] += waiting
                    return
                await self.sleep(min(delay, left))
                delay = min(delay * 2, self.settings.poll_max)
                for active in list(self.active):
                    try:
                        await poll(active, http)
                    except ModelwireError as exc:
                        if getattr(exc, "kind", None) != "not_found":
                            raise  # a key refused, a provider down: the job stays on record
                        self._lost(active, exc)
        finally:
            await http.aclose()

    def _not_created(self, active: Active, info: ErrorInfo) -> None:
        """A create that failed. One that may have reached the provider (a timeout, a
        5xx) is looked for by name before its lines go again, where the provider
        lists jobs by name; any other is not a job: its lines fail or go again."""
        for line in active.lines.values():
            self.budget.release(line.estimate, 0.0)
        if info.retryable and active.facet.find_request(active.sent) is not None:
            self.unsure.append(active)  # attempts already counted
            self.counted.add(active.job.name)
            return
        self.ledger.done(active.job, "not created")
        for line in active.lines.values():
            self._failed(line, info, time.monotonic())

    async def _recover(self, http: Any) -> None:
        """Jobs whose create answer was lost (a crash, a timeout): adopted when the
        provider lists one by their name, else their lines go in a new job."""
        unsure, self.unsure = self.unsure, []
        for active in unsure:
            found = await find(active, http)
            if found is not None:
                self.ledger.created(active.job, found)
                if active.job.name not in self.counted:  # the job it is in now counts
                    for line in active.lines.values():
                        cid = line.req.custom_id
                        self.attempts[cid] = self.attempts.get(cid, 0) + 1
                self._reserve_resumed(active)
                self.active.append(active)
                self.jobs += active.job.name in self.counted
            else:
                self.ledger.done(active.job, "not created")
                self.retry.extend(active.lines.values())

    def _lost(self, active: Active, exc: ModelwireError) -> None:
        """The provider no longer knows the job (deleted, or expired long ago): its lines
        count an attempt that answered nothing, and go in a new job while they may."""
        self.active.remove(active)
        self.ledger.done(active.job, "not found")
        info = ErrorInfo(kind="server", retryable=True,
                         message=f"the provider no longer knows batch job {active.job.id}: {exc}")  # fmt: skip
        for line in active.lines.values():
            if line.req.custom_id not in self.log.done:
                self.budget.release(line.estimate, 0.0)
                self._failed(line, info, self.started.get(line.req.custom_id, time.monotonic()))

    async def _submit_all(self, lines: list[Line], http: Any) -> bool:
        """New jobs for ``lines``; whether any was created."""
        groups: dict[tuple[Any, ...], list[Line]] = {}
        for line in lines:
            groups.setdefault(line.group, []).append(line)
        created = False
        for group in groups.values():
            size = group[0].facet.max_lines
            for at in range(0, len(group), size):
                chosen = []
                for line in group[at : at + size]:
                    if self.budget.try_reserve(line.estimate):
                        chosen.append(line)
                    else:
                        self.skipped["cost"] += 1
                if not chosen:
                    continue
                for line in chosen:
                    cid = line.req.custom_id
                    self.attempts[cid] = self.attempts.get(cid, 0) + 1
                active = new_job(chosen)
                try:
                    await submit(active, self.ledger, http)
                except ModelwireError as exc:
                    self._not_created(active, _info(exc))
                    continue
                now = time.monotonic()
                for line in chosen:
                    self.started[line.req.custom_id] = now
                self.active.append(active)
                self.jobs += 1
                created = True
        return created

    async def _finish(self, active: Active, http: Any) -> None:
        """Write every line of an ended job (or send it again), then mark the job done."""
        status = active.status
        assert status is not None
        got = await results(active, http)
        unanswered = {"expired": "expired", "cancelled": "cancelled"}.get(status.state, "errored")
        for key, line in active.lines.items():
            cid = line.req.custom_id
            if cid in self.log.done:
                continue
            started = self.started.get(cid, time.monotonic())
            r = got.get(key) or LineResult(key=key, outcome=unanswered)  # type: ignore[arg-type]
            if r.outcome == "succeeded":
                self._answered(line, r, started)
            elif r.outcome == "cancelled":
                self.budget.release(line.estimate, 0.0)
                self.skipped["cancelled"] += 1
            else:
                self.budget.release(line.estimate, 0.0)
                self._failed(line, _failure(line, r, active), started)
        self.log.sync()
        self.ledger.done(active.job, status.provider_state)

    def _answered(self, line: Line, r: LineResult, started: float) -> None:
        from ..._client._replay import replay

        try:
            stream = line.facet.as_stream(r.body or b"")
        except ModelwireError as exc:
            self.budget.release(line.estimate, 0.0)
            self._failed(line, _info(exc), started)
            return
        msg = replay(line.model.api, stream, line.model).message
        self.budget.release(line.estimate, msg.usage.cost.total)
        err = msg.error
        if err is not None and err.retryable and self._attempts_left(line):
            self.retry.append(line)
            return
        self._write(_record(line.req, msg, msg.usage, self.attempts.get(line.req.custom_id, 1),
                            started, output_format=self.settings.output_format))  # fmt: skip

    def _attempts_left(self, line: Line) -> bool:
        return self.attempts.get(line.req.custom_id, 0) < self.settings.max_attempts

    def _failed(self, line: Line, info: ErrorInfo, started: float) -> None:
        if info.retryable and self._attempts_left(line):
            self.retry.append(line)
            return
        m = line.model
        msg = AssistantMessage(content=(), api=m.api, provider=m.provider, model=m.id,
                               usage=Usage(), stop_reason="error", error=info)  # fmt: skip
        self._write(_record(line.req, msg, msg.usage, self.attempts.get(line.req.custom_id, 1),
                            started, output_format=self.settings.output_format))  # fmt: skip

    def _write(self, record: dict[str, Any]) -> None:
        if self.log.write(record):
            self.stats.add(record)

    def _snapshot(self) -> dict[str, Any]:
        snap = self.stats.snapshot()
        states: dict[str, int] = {}
        counts: dict[str, int] = {}
        for a in self.active:
            st = a.status
            name = st.provider_state if st is not None else "submitted"
            states[name] = states.get(name, 0) + 1
            for k, v in (st.counts if st is not None else {}).items():
                counts[k] = counts.get(k, 0) + v
        snap["jobs"] = dict(sorted(states.items()))
        snap["job_counts"] = dict(sorted(counts.items()))
        return snap

    def _update(self) -> None:
        self.progress.update(self._snapshot())


def _ended(active: Active) -> bool:
    return active.status is not None and active.status.state != "running"


def _info(exc: ModelwireError) -> ErrorInfo:
    to_info = getattr(exc, "to_info", None)
    if callable(to_info):
        info = to_info()
        assert isinstance(info, ErrorInfo)
        return info
    return ErrorInfo(kind="invalid_request", message=str(exc))


def _failure(line: Line, r: LineResult, active: Active) -> ErrorInfo:
    """Why a line of an ended job has no answer, as a live call would say it."""
    from ..._providers._status import status_error

    status = active.status
    assert status is not None
    job = active.job.id
    if r.outcome == "expired":
        return ErrorInfo(
            kind="timeout", retryable=True,
            message=f"the provider's batch job {job} expired before this line was answered",
        )  # fmt: skip
    if r.status is not None:
        return status_error(r.status, r.error or b"", {}, line.sent.secrets).to_info()
    if r.error is not None:
        text = r.error.decode("utf-8", "replace")
        return ErrorInfo(kind="server", retryable=True,
                         message=f"batch job {job}: this line failed: {text}")  # fmt: skip
    if status.state == "failed":
        why = status.message or "no reason given"
        return ErrorInfo(kind="invalid_request",
                         message=f"the provider's batch job {job} failed: {why}")  # fmt: skip
    return ErrorInfo(kind="server", retryable=True,
                     message=f"the provider's batch job {job} ended without answering this line")  # fmt: skip
