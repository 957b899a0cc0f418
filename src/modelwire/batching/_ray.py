"""The same batch job on a Ray cluster (``backend="ray"``, ``--ray [ADDRESS]``).

Ray's own primitives, no home-made scheduler:

* the pending requests are cut into shards, one Ray **task** each
  (``max_retries``): a worker that dies has its shard retried by Ray, and the
  retry skips the ids already written;
* each task runs modelwire's async runner (:func:`run_requests`) with its own
  ``concurrency``;
* one **limiter actor per provider** holds the requests/min and tokens/min
  buckets and the ``Retry-After`` pause, so limits hold across the cluster;
* one **budget actor** holds ``max_cost``;
* one **sink actor**, pinned to the driver's node, owns the output file with
  the same :class:`OutputLog` as the local runner — so the exactly-once rule and
  the resume rule are the same, byte for byte.

Imported only for ``backend="ray"``: ``import modelwire`` never loads Ray.
"""

from __future__ import annotations

import asyncio
import errno
import os
import signal
from collections.abc import Callable
from typing import Any

import msgspec
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from .._call._fallback import Fallback
from ..errors import ConfigurationError, OutputWriteError
from ..types import Model
from ._input import BatchRequest, InputProblem
from ._limits import Limits, ProviderLimiter
from ._output import OutputLog, write_error
from ._progress import Progress
from ._runner import Budget, RunSettings, Stats, run_requests

__all__ = ["run_on_ray"]

#: Retries of a shard whose worker died (Ray's ``max_retries`` for system failures).
SHARD_RETRIES = 3
#: Seconds the sink waits for the output's lock (held by the sink of a killed driver
#: until its cluster notices; see OutputLog).
SINK_LOCK_WAIT = 30.0


@ray.remote(num_cpus=0)
class SinkActor:
    """The one writer of the output file (see :class:`OutputLog`)."""

    def __init__(
        self, path: str, output_format: str = "modelwire", fail_after: int | None = None
    ) -> None:
        self.path = path
        self.output_format = output_format
        self.stats = Stats(0)
        # Fault tests only: the disk "fills up" after this many lines.
        self._fail_after = fail_after

    def open(self, lock_wait: float) -> str | None:
        """Open the output; the error text when it cannot be (no exception, so
        the driver reports it as the one-line error it is)."""
        try:
            self.log = OutputLog(self.path, lock_wait=lock_wait, output_format=self.output_format)
        except ConfigurationError as exc:
            return exc.message
        return None

    def done_ids(self) -> list[str]:
        return list(self.log.done)

    def start(self, total: int) -> None:
        self.stats = Stats(total)

    def done_among(self, ids: list[str]) -> list[str]:
        return [i for i in ids if i in self.log.done]

    def write(self, record: dict[str, Any]) -> bool:
        if self._fail_after is not None and len(self.log.done) >= self._fail_after:
            raise write_error(self.path, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
        wrote = self.log.write(record)
        if wrote:
            self.stats.add(record)
        return wrote

    def spent(self, spend: dict[str, Any]) -> None:
        self.stats.add_spent(spend)

    def snapshot(self) -> dict[str, Any]:
        return self.stats.snapshot()

    def totals(self) -> dict[str, Any]:
        s = self.stats
        return {"ok": s.ok, "failed": dict(s.failed), "attempts": s.attempts,
                "input_tokens": s.input_tokens, "output_tokens": s.output_tokens,
                "cost": s.cost}  # fmt: skip

    def close(self) -> None:
        self.log.close()


@ray.remote(num_cpus=0)
class LimiterActor:
    """One provider's pacing for the whole cluster (an async actor: waiting
    callers do not block each other)."""

    def __init__(self, rpm: float | None, tpm: float | None) -> None:
        self.inner = ProviderLimiter(Limits(rpm=rpm, tpm=tpm))

    async def acquire(self, tokens: int) -> None:
        await self.inner.acquire(tokens)

    async def pause(self, seconds: float) -> None:
        self.inner.pause(seconds)

    async def settle(self, estimated: int, actual: int) -> None:
        self.inner.settle(estimated, actual)


@ray.remote(num_cpus=0)
class BudgetActor:
    def __init__(self, max_cost: float | None) -> None:
        self.inner = Budget(max_cost)

    def reserve(self, estimate: float) -> bool:
        return self.inner.try_reserve(estimate)

    def settle(self, estimate: float, actual: float) -> None:
        self.inner.release(estimate, actual)


class _Remote:
    """The runner's limiter/budget interface over an actor handle."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    async def acquire(self, tokens: int) -> None:
        await self.handle.acquire.remote(tokens)

    async def pause(self, seconds: float) -> None:
        await self.handle.pause.remote(seconds)

    async def settle(self, a: Any, b: Any) -> None:
        await self.handle.settle.remote(a, b)

    async def reserve(self, estimate: float) -> bool:
        return bool(await self.handle.reserve.remote(estimate))


class _RemoteSink:
    def __init__(self, handle: Any, chaos: dict[str, Any] | None) -> None:
        self.handle = handle
        self.chaos = chaos
        self.written = 0

    async def spent(self, spend: dict[str, Any]) -> None:
        await self.handle.spent.remote(spend)

    async def write(self, record: dict[str, Any]) -> None:
        # Acknowledged before the next request starts: a result counts as done
        # only once the sink has appended it.
        await self.handle.write.remote(record)
        self.written += 1
        chaos = self.chaos
        if chaos and "kill_after" in chaos and self.written >= chaos["kill_after"]:
            # Fault tests only: the first execution of a shard dies like a lost node.
            marker = f"{chaos['marker']}.{chaos['shard']}"
            if chaos["shard"] == 0 and not os.path.exists(marker):
                open(marker, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)


@ray.remote(num_cpus=1)
def run_shard(
    blob: bytes,
    settings: dict[str, Any],
    sink: Any,
    limiters: dict[str, Any],
    budget: Any,
    chaos: dict[str, Any] | None,
) -> tuple[int, int]:
    """Run one shard on a worker; returns how many requests the budget refused and
    how many the run deadline cut."""
    requests = msgspec.json.decode(blob, type=list[BatchRequest])
    # A retried shard skips what its earlier run (or anyone) already wrote.
    done = set(ray.get(sink.done_among.remote([r.custom_id for r in requests])))
    requests = [r for r in requests if r.custom_id not in done]
    skipped: list[str] = []

    async def main() -> None:
        run = RunSettings(**settings)
        proxies = {p: _Remote(h) for p, h in limiters.items()}
        await run_requests(
            requests, _RemoteSink(sink, chaos), settings=run,
            limiter_for=lambda m: proxies[m.provider], budget=_Remote(budget),
            on_skip=lambda req, why: skipped.append(why),
        )  # fmt: skip

    asyncio.run(main())
    return skipped.count("cost"), skipped.count("deadline")


def _init(address: str | None, workers: int) -> bool:
    """Connect (or start a local cluster); ``True`` when this call started Ray."""
    if ray.is_initialized():
        return False
    try:
        if address is None:
            # "local": always a fresh cluster on this machine, never a found one.
            ray.init(address="local", num_cpus=workers, include_dashboard=False,
                     log_to_driver=False, configure_logging=False)  # fmt: skip
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    except ConnectionError as exc:
        raise ConfigurationError(f"cannot reach the Ray cluster at {address!r}: {exc}") from None
    return True


def run_on_ray(
    requests: list[BatchRequest],
    out: str,
    *,
    settings: RunSettings,
    max_cost: float | None,
    limits: Callable[[str], Limits | None],
    address: str | None,
    workers: int,
    progress: Progress,
    invalid: list[InputProblem],
    started: float,
    chaos: dict[str, Any] | None = None,
) -> Any:
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigurationError(f"ray_workers must be a positive integer, got {workers!r}")
    own = _init(address, workers)
    try:
        here = ray.get_runtime_context().get_node_id()
        sink = SinkActor.options(  # type: ignore[attr-defined]
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False)
        ).remote(out, settings.output_format, (chaos or {}).get("write_fail_after"))
        # (the file lives on the driver's machine)
        problem = ray.get(sink.open.remote(SINK_LOCK_WAIT))
        if problem is not None:
            raise ConfigurationError(problem)
        done = set(ray.get(sink.done_ids.remote()))
        pending = [r for r in requests if r.custom_id not in done]
        ray.get(sink.start.remote(len(pending)))
        progress.start(len(pending))
        providers: dict[str, Model | Fallback] = {r.model.provider: r.model for r in pending}
        limiters = {}
        for p in providers:
            lim = limits(p) or Limits()
            limiters[p] = LimiterActor.options(max_concurrency=100_000).remote(lim.rpm, lim.tpm)  # type: ignore[attr-defined]
        budget = BudgetActor.remote(max_cost)  # type: ignore[attr-defined]
        n = min(workers, max(1, len(pending)))
        shards = [pending[i::n] for i in range(n)]
        enc = msgspec.json.Encoder()
        run = msgspec.structs.asdict(settings)
        refs = [
            run_shard.options(max_retries=SHARD_RETRIES).remote(
                enc.encode(shard),
                run,
                sink,
                limiters,
                budget,
                {**chaos, "shard": i} if chaos else None,
            )
            for i, shard in enumerate(shards)
            if shard
        ]
        interrupted = False
        skipped_cost = skipped_deadline = 0
        try:
            waiting = list(refs)
            while waiting:
                _, waiting = ray.wait(waiting, num_returns=len(waiting), timeout=0.5)
                progress.update(ray.get(sink.snapshot.remote()))
            counts = _shard_results(refs)
            skipped_cost = sum(c for c, _ in counts)
            skipped_deadline = sum(d for _, d in counts)
        except KeyboardInterrupt:
            # Ctrl-C: stop the shards first, so the summary says exactly what reached
            # the file, then go on up (the CLI adds the resume hint).
            interrupted = True
            for ref in refs:
                ray.cancel(ref, force=True)
            raise
        finally:
            summary = _final_summary(
                sink, progress, requests=requests, pending=pending, invalid=invalid,
                started=started, skipped_cost=skipped_cost,
                skipped_deadline=skipped_deadline, interrupted=interrupted,
            )  # fmt: skip
    finally:
        if own:
            ray.shutdown()
    return summary


def _shard_results(refs: list[Any]) -> list[Any]:
    """Every shard's counts; a results file that cannot be written (raised in the
    sink actor, wrapped by Ray once per hop) is the typed ``OutputWriteError`` it is."""
    try:
        return list(ray.get(refs))
    except ray.exceptions.RayTaskError as exc:
        cause: BaseException | None = exc
        for _ in range(8):  # one wrapper per actor/task hop
            if isinstance(cause, OutputWriteError) and not isinstance(
                cause, ray.exceptions.RayTaskError
            ):
                break
            cause = getattr(cause, "cause", None) or getattr(cause, "__cause__", None)
        if isinstance(cause, OutputWriteError):
            raise OutputWriteError(*cause.args) from None
        raise


def _final_summary(
    sink: Any,
    progress: Progress,
    *,
    requests: list[BatchRequest],
    pending: list[BatchRequest],
    invalid: list[InputProblem],
    started: float,
    skipped_cost: int,
    skipped_deadline: int,
    interrupted: bool,
) -> Any:
    """The last progress update and the summary, from the sink's own counts: what
    was written, whichever way the run ended."""
    from ._summary import summarize, summary_dict

    stats = Stats(len(pending))
    try:
        progress.update(ray.get(sink.snapshot.remote()), force=True)
        t = ray.get(sink.totals.remote())
        ray.get(sink.close.remote())
    except (ray.exceptions.RayError, KeyboardInterrupt):
        t = None  # the sink is gone: nothing more is known than what was shown
    if t is not None:
        stats.ok, stats.failed, stats.attempts = t["ok"], t["failed"], t["attempts"]
        stats.input_tokens, stats.output_tokens, stats.cost = (
            t["input_tokens"], t["output_tokens"], t["cost"],
        )  # fmt: skip
    summary = summarize(
        stats, total=len(requests), skipped_done=len(requests) - len(pending),
        skipped_cost=skipped_cost, skipped_deadline=skipped_deadline, invalid=invalid,
        started=started, interrupted=interrupted,
    )  # fmt: skip
    progress.close(summary_dict(summary))
    return summary
