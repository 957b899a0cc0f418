"""The async runner: workers, retries, pacing, the cost cap, one result per id.

The same coroutine runs on one machine and inside every Ray worker; only the
*sink* (where results go), the *limiters* and the *budget* differ — local
objects here, proxies to Ray actors there (:mod:`modelwire.batching._ray`) — so
both backends share every decision.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, Protocol, TypeAlias

import msgspec

from .._call._fallback import Fallback, answered_by
from .._providers._classify import RETRYABLE_KINDS
from ..errors import ConfigurationError
from ..types import AssistantMessage, Model, Usage
from ._input import BatchRequest

__all__ = [
    "RETRYABLE",
    "Budget",
    "RunSettings",
    "Sink",
    "Stats",
    "as_timeout",
    "estimate_cost",
    "run_requests",
]

RETRYABLE = RETRYABLE_KINDS
"""Error kinds worth another attempt by default (the classifier's,
:data:`modelwire._providers._classify.RETRYABLE_KINDS`: ``rate_limit``,
``overloaded``, ``server``, ``connect``, ``timeout``…); each failure's own
``ErrorInfo.retryable`` decides (a 429 out of quota is recorded at once).

A line whose failure is retryable is tried again, up to ``max_attempts``; any
other failure is written as its result line at once. Use it to pick, from the
error kinds of a results file, the failures that a later run may turn into
answers.
"""
#: A ``Retry-After`` longer than this ends the request instead of pausing everyone.
MAX_PAUSE = 600.0
#: Connections per HTTP client (see ``run_requests``).
POOL_SIZE = 16
#: Why a line was not written: the cost cap refused an attempt, or the run ran out.
SkipReason: TypeAlias = Literal["cost", "deadline"]


class LimiterLike(Protocol):
    async def acquire(self, tokens: int) -> None: ...
    async def pause(self, seconds: float) -> None: ...
    async def settle(self, estimated: int, actual: int) -> None: ...


class Sink(Protocol):
    async def write(self, record: dict[str, Any]) -> None: ...
    async def spent(self, spend: dict[str, Any]) -> None:
        """What a line cut before its result (cost cap, run deadline) still cost."""


class BudgetLike(Protocol):
    async def reserve(self, estimate: float) -> bool: ...
    async def settle(self, estimate: float, actual: float) -> None: ...


class RunSettings(msgspec.Struct, frozen=True, kw_only=True):
    concurrency: int = 16
    max_attempts: int = 4
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    agent_root: str | None = None
    agent_max_turns: int = 8
    output_format: str = "modelwire"
    """``"modelwire"`` or ``"openai"`` (the OpenAI Batch API output lines)."""
    line_timeout: float | None = None
    """Seconds one line may take, every attempt and backoff included."""
    run_deadline: float | None = None
    """Wall-clock time (``time.time()``, shared by Ray workers) after which no line
    starts and no attempt goes on."""


class Budget:
    """``max_cost`` in dollars: a request starts only if the spend so far plus
    the estimates of the requests in flight plus its own estimate stay within
    it (DESIGN: "stops starting new requests once … could pass it")."""

    def __init__(self, max_cost: float | None) -> None:
        self.max_cost = max_cost
        self.spent = 0.0
        self.in_flight = 0.0
        self.stopped = False

    def try_reserve(self, estimate: float) -> bool:
        if self.max_cost is None:
            return True
        if self.stopped or self.spent + self.in_flight + estimate > self.max_cost:
            self.stopped = True  # once stopped, stays stopped: no cheap line sneaks in later
            return False
        self.in_flight += estimate
        return True

    def release(self, estimate: float, actual: float) -> None:
        if self.max_cost is not None:
            self.in_flight = max(0.0, self.in_flight - estimate)
        self.spent += actual

    async def reserve(self, estimate: float) -> bool:
        return self.try_reserve(estimate)

    async def settle(self, estimate: float, actual: float) -> None:
        self.release(estimate, actual)


def estimate_cost(req: BatchRequest) -> float:
    """The most this request may cost: its estimated prompt plus the whole output
    allowance (``max_tokens``, else the model's limit), at catalog prices."""
    c = req.model.cost
    out = req.options.get("max_tokens") or req.model.max_tokens or 4096
    return (req.estimated_input_tokens * c.input + out * c.output) / 1e6


class Stats:
    """Counters built from the result records alone, so a Ray sink actor and
    the local runner report the same figures."""

    def __init__(self, total: int, already_done: int = 0) -> None:
        self.total = total
        self.already_done = already_done
        self.ok = 0
        self.failed: dict[str, int] = {}
        self.attempts = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost = 0.0
        self.started = time.monotonic()

    @property
    def finished(self) -> int:
        return self.ok + sum(self.failed.values())

    def add(self, record: Mapping[str, Any]) -> None:
        if record.get("ok"):
            self.ok += 1
        else:
            kind = record["error"]["kind"]
            self.failed[kind] = self.failed.get(kind, 0) + 1
        self.attempts += record.get("attempts", 0)
        usage = record.get("usage") or {}
        self.input_tokens += (
            usage.get("input", 0) + usage.get("cache_read", 0) + usage.get("cache_write", 0)
        )
        self.output_tokens += usage.get("output", 0)
        self.cost += record.get("cost", 0.0)

    def add_spent(self, spend: Mapping[str, Any]) -> None:
        """Requests, tokens and cost of a line that got no result (see ``Sink.spent``):
        the summary reports what was really spent, not only what was written."""
        self.attempts += spend.get("attempts", 0)
        usage = spend.get("usage") or {}
        self.input_tokens += (
            usage.get("input", 0) + usage.get("cache_read", 0) + usage.get("cache_write", 0)
        )
        self.output_tokens += usage.get("output", 0)
        self.cost += spend.get("cost", 0.0)

    def snapshot(self) -> dict[str, Any]:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        n = self.finished
        rate = n / elapsed
        left = self.total - n
        return {
            "done": n,
            "total": self.total,
            "ok": self.ok,
            "failed": sum(self.failed.values()),
            "errors": dict(sorted(self.failed.items())),
            "requests_per_s": round(rate, 2),
            "tokens_per_s": round((self.input_tokens + self.output_tokens) / elapsed, 1),
            "cost": round(self.cost, 6),
            "elapsed_s": round(elapsed, 3),
            "eta_s": round(left / rate, 1)
            if rate > 0 and left > 0
            else (0.0 if left <= 0 else None),
        }


def _usage_dict(u: Usage) -> dict[str, Any]:
    return {
        "input": u.input,
        "output": u.output,
        "cache_read": u.cache_read,
        "cache_write": u.cache_write,
        "total_tokens": u.total_tokens,
    }


def _tokens(u: Usage) -> int:
    return u.input + u.output + u.cache_read + u.cache_write


def _record(
    req: BatchRequest, message: AssistantMessage, usage: Usage, attempts: int, started: float,
    extra: dict[str, Any] | None = None, output_format: str = "modelwire",
) -> dict[str, Any]:  # fmt: skip
    ok = message.error is None and message.stop_reason not in ("error", "aborted")
    rec: dict[str, Any] = {"custom_id": req.custom_id, "ok": ok}
    if ok:
        rec["message"] = msgspec.to_builtins(message)
        rec["stop_reason"] = message.stop_reason
    else:
        err = message.error
        rec["error"] = {
            "kind": err.kind if err else "provider_stream",
            "message": err.message if err else "the response failed",
            "status": err.status if err else None,
        }
    # A Fallback's line names the model that answered (the first one if none did).
    m = answered_by(req.model, message)
    rec["model"] = f"{m.provider}/{m.id}"
    rec["usage"] = _usage_dict(usage)
    rec["cost"] = usage.cost.total
    rec["attempts"] = attempts
    rec["latency_ms"] = round((time.monotonic() - started) * 1000, 1)
    if extra:
        rec.update(extra)
    if output_format == "openai":
        from ._openai_output import openai_line

        # The counters read ``rec``; the file gets this line instead (see OutputLog).
        rec["_line"] = openai_line(req, message, rec)
    return rec


async def _attempt(
    req: BatchRequest, settings: RunSettings, http_client: Any, budget: BudgetLike, timeout: Any
) -> tuple[AssistantMessage, Usage, dict[str, Any] | None] | _Refused:
    """One try: the library's own path with ``max_retries=0`` (the runner retries).
    Every HTTP request — this try, or each turn of an agent — reserves its estimate
    from the budget first and settles its real cost after, so the cap is passed by
    at most the requests in flight. When the budget refuses one: what ran before
    it (earlier agent turns) instead of a result."""
    estimate = estimate_cost(req)
    options = {**req.options, "timeout": timeout} if timeout is not None else req.options
    if settings.agent_root is None:
        from .._client import complete

        if not await budget.reserve(estimate):
            return _Refused(Usage(), 0)
        actual = 0.0
        try:
            msg = await complete(
                req.model, req.context, max_retries=0, http_client=http_client, **options
            )
            actual = msg.usage.cost.total
        finally:
            await budget.settle(estimate, actual)
        return msg, msg.usage, None
    from ..agent import Agent
    from ..tools import read_only

    history = list(req.context.messages)
    prompt = history.pop() if history else None
    agent = Agent(
        req.model, read_only(root=settings.agent_root), system_prompt=req.context.system_prompt,
        messages=history, max_turns=settings.agent_max_turns, max_retries=0,
        http_client=http_client, **options,
    )  # fmt: skip
    # Each turn is one HTTP request: reserve at ``turn_start`` (the agent waits at
    # that event, before sending) and settle at ``turn_end``.
    reserved = False
    run = None
    turns, done = Usage(), 0
    stream = agent.stream(prompt)  # type: ignore[arg-type]
    # Each turn's call has the attempt's total deadline; the turns together have it too,
    # or a line of many quick turns would outlast its deadline.
    total = getattr(as_timeout(timeout), "total", None)
    try:
        async with asyncio.timeout(total):
            async for ev in stream:
                if ev.type == "turn_start":
                    if not await budget.reserve(estimate):
                        return _Refused(turns, done)
                    reserved = True
                elif ev.type == "turn_end" and reserved:
                    reserved = False
                    turns, done = _add_usage(turns, ev.message.usage), done + 1
                    await budget.settle(estimate, ev.message.usage.cost.total)
                elif ev.type == "agent_end":
                    run = ev.run
    except TimeoutError:
        return _timed_out(req, turns, done, total), turns, {"turns": done}
    finally:
        if reserved:
            await budget.settle(estimate, 0.0)
        await stream.aclose()
    assert run is not None
    extra = {"turns": run.turns, "messages": [msgspec.to_builtins(m) for m in run.new_messages]}
    return run.final, run.usage, extra


def _timed_out(
    req: BatchRequest, usage: Usage, turns: int, total: float | None
) -> AssistantMessage:
    """The result of an agent line whose turns together ran out of its deadline."""
    from ..types import ErrorInfo

    m = req.model
    info = ErrorInfo(
        kind="timeout", retryable=True,
        message=f"total timeout expired: the agent's {turns} finished turn(s) and the one "
        f"in flight took longer than the {total:g} s left for this line",
    )  # fmt: skip
    return AssistantMessage(content=(), api=m.api, provider=m.provider, model=m.id,
                            usage=usage, stop_reason="error", error=info)  # fmt: skip


async def run_requests(
    requests: Iterable[BatchRequest],
    sink: Sink,
    *,
    settings: RunSettings,
    limiter_for: Callable[[Model | Fallback], LimiterLike],
    budget: BudgetLike,
    on_skip: Callable[[BatchRequest, SkipReason], None] | None = None,
) -> None:
    """Run every request with ``settings.concurrency`` workers, writing one record
    per request to ``sink`` — except those the budget refused or the run deadline
    cut (``on_skip`` with ``"cost"`` or ``"deadline"``)."""
    from .._http import pooled_async_client

    it = iter(requests)
    stop = False
    n = max(1, settings.concurrency)
    # httpcore's pool scans every connection to place each request
    # (connection_pool.py, _assign_requests_to_connections): one pool of 512
    # costs O(512) per event. Pools of POOL_SIZE, each shared by as many workers
    # (one request in flight each), keep that constant.
    clients = [pooled_async_client(min(POOL_SIZE, n - i)) for i in range(0, n, POOL_SIZE)]

    async def worker(http_client: Any) -> None:
        nonlocal stop
        for req in it:
            if not stop and _run_left(settings) <= 0:
                stop = True
            if stop:
                if on_skip is not None:
                    on_skip(req, "deadline" if _run_left(settings) <= 0 else "cost")
                continue
            outcome = await _one(req, settings, limiter_for(req.model), http_client, budget)
            if isinstance(outcome, _Cut):
                # Cut by the cap or the run deadline: no line, so a rerun does it.
                stop = True
                if outcome.attempts:
                    await sink.spent(outcome.spend())
                if on_skip is not None:
                    on_skip(req, outcome.reason)
                continue
            await sink.write(outcome)

    try:
        await asyncio.gather(*(worker(clients[i // POOL_SIZE]) for i in range(n)))
    finally:
        for c in clients:
            await c.aclose()


class _Refused(msgspec.Struct, frozen=True):
    """The budget refused a request of an attempt: the usage of the ``requests``
    that ran before it in that attempt (an agent's earlier turns)."""

    usage: Usage
    requests: int


class _Cut(msgspec.Struct, frozen=True):
    """A line stopped before its result: why, and what its attempts cost."""

    reason: SkipReason
    usage: Usage
    attempts: int

    def spend(self) -> dict[str, Any]:
        return {"attempts": self.attempts, "usage": _usage_dict(self.usage),
                "cost": self.usage.cost.total}  # fmt: skip


def _run_left(settings: RunSettings) -> float:
    if settings.run_deadline is None:
        return math.inf
    return settings.run_deadline - time.time()


def as_timeout(option: Any) -> Any:
    """A line's ``timeout`` as ``mw.stream`` takes it: seconds, or a
    ``{"connect", "idle", "total"}`` object (a file, or a ``mw.Timeout`` that went
    through JSON to a Ray worker) as ``mw.Timeout``."""
    from .._wire.request import Timeout

    if isinstance(option, dict):
        unknown = sorted(set(option) - {"connect", "idle", "total"})
        try:
            if unknown:  # a misspelt key would silently leave its limit unset
                raise msgspec.ValidationError(f"unknown keys {', '.join(unknown)}")
            return msgspec.convert(option, Timeout)
        except msgspec.ValidationError as exc:
            raise ConfigurationError(
                f"options.timeout must be seconds or an object with connect, idle and "
                f"total seconds: {exc}"
            ) from None
    return option


def _attempt_timeout(option: Any, left: float) -> Any:
    """The request's own ``timeout`` with its total cut to ``left`` seconds: the
    Call's total deadline bounds the whole attempt, so a server that keeps the
    connection alive with comments (each resets the idle timer) still ends on time."""
    from .._wire.request import Timeout

    option = as_timeout(option)
    if math.isinf(left):
        return option
    left = max(left, 0.001)
    if option is None:
        return Timeout(total=left)
    if isinstance(option, Timeout):
        total = left if option.total is None else min(option.total, left)
        return msgspec.structs.replace(option, total=total)
    return Timeout(connect=float(option), idle=float(option), total=left)


async def _one(
    req: BatchRequest,
    settings: RunSettings,
    limiter: LimiterLike,
    http_client: Any,
    budget: BudgetLike,
) -> dict[str, Any] | _Cut:
    """Every attempt of one line: its record, or why it was cut before it finished
    (``"cost"``: the cap refused an attempt; ``"deadline"``: the run ran out)."""
    started = time.monotonic()
    line_end = math.inf if settings.line_timeout is None else started + settings.line_timeout
    spent = Usage()
    attempt = 0
    last: dict[str, Any] | None = None
    while True:
        left_run = _run_left(settings)
        left = min(line_end - time.monotonic(), left_run)
        if left <= 0:
            if last is None or left_run <= 0:
                return _Cut("deadline", spent, attempt)
            return last  # the line's own deadline: its last failure is its result
        attempt += 1
        await limiter.acquire(req.estimated_input_tokens)
        timeout = _attempt_timeout(req.options.get("timeout"), left)
        got = await _attempt(req, settings, http_client, budget, timeout)
        if isinstance(got, _Refused):  # the cap refused a request of this attempt
            spent = _add_usage(spent, got.usage)
            return _Cut("cost", spent, attempt if got.requests else attempt - 1)
        msg, usage, extra = got
        await limiter.settle(req.estimated_input_tokens, _tokens(usage))
        spent = _add_usage(spent, usage)  # a failed try that streamed something still cost
        err = msg.error
        last = _record(req, msg, spent, attempt, started, extra, settings.output_format)
        if err is not None and _run_left(settings) <= 0:
            return _Cut("deadline", spent, attempt)  # cut by the run: a rerun does the line
        if err is None or not err.retryable or attempt >= settings.max_attempts:
            return last
        if err.retry_after is not None:
            if err.retry_after > MAX_PAUSE:
                return last
            # Every worker of this provider waits, not only this one.
            await limiter.pause(err.retry_after)
        else:
            # Full jitter (AWS architecture blog, "Exponential Backoff and Jitter").
            cap = min(settings.backoff_cap, settings.backoff_base * 2 ** (attempt - 1))
            await asyncio.sleep(min(random.uniform(0, cap), max(0.0, line_end - time.monotonic())))


def _add_usage(a: Usage, b: Usage) -> Usage:
    from ..types import Cost

    ca, cb = a.cost, b.cost
    return Usage(
        input=a.input + b.input, output=a.output + b.output,
        cache_read=a.cache_read + b.cache_read, cache_write=a.cache_write + b.cache_write,
        total_tokens=a.total_tokens + b.total_tokens,
        cost=Cost(input=ca.input + cb.input, output=ca.output + cb.output,
                  cache_read=ca.cache_read + cb.cache_read,
                  cache_write=ca.cache_write + cb.cache_write, total=ca.total + cb.total),
    )  # fmt: skip
