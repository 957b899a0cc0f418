"""``mw.batch`` and ``batch_async``: run a JSONL file of requests with exactly-once
output. Both share one plan (settings checked, every line validated) and differ only
in waiting."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import os
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Unpack

import msgspec

from .._call._fallback import Fallback
from ..errors import ConfigurationError
from ..types import Model
from ._input import BatchRequest, InputProblem, problems_error, read_requests
from ._limits import Limits, ProviderLimiter
from ._options import BatchConfig, BatchOptions, signature
from ._output import OutputLog, check_output, read_done
from ._progress import Progress
from ._runner import Budget, RunSettings, Stats, as_timeout, run_requests
from ._summary import BatchSummary, summarize, summary_dict

__all__ = ["BatchSummary", "batch", "batch_async", "load_requests", "model_resolver"]


def model_resolver(
    models: Mapping[str, Model | Fallback] | None = None,
    *,
    base_url: str | None = None,
    api: str | None = None,
) -> Callable[[str], Model | Fallback]:
    """``"provider/id"`` -> Model: ``models`` first, then the library's one rule
    (:func:`modelwire._catalog.resolve_model`). With ``base_url`` every model goes
    there (a catalog entry keeps its prices and limits; an unknown id is a model of
    its provider's default API, ``local/<id>`` of the compatible API, Chat
    Completions); ``api`` replaces the wire API.

    What :func:`batch` builds from its ``models``, ``base_url`` and ``api`` options;
    build one for :func:`load_requests`.

    Args:
        models: ``{"provider/id": Model or Fallback}`` overriding the catalog.
        base_url: Send every model there.
        api: The wire API of every model.

    Returns:
        ``resolve("provider/id")``, caching each answer; it raises
        ``ConfigurationError`` for a name it cannot resolve.
    """
    from .._catalog import resolve_model

    cache: dict[str, Model | Fallback] = {}

    def resolve(name: str) -> Model | Fallback:
        hit = cache.get(name)
        if hit is not None:
            return hit
        model: Model | Fallback
        if models is not None and name in models:
            model = models[name]
        else:
            provider, sep, mid = name.partition("/")
            if base_url is not None and (not sep or not provider or not mid):
                raise ConfigurationError(f'model must be "provider/id", got {name!r}')
            model = resolve_model(name, base_url, api=api)
        cache[name] = model
        return model

    return resolve


def _validator(api_key: Any, timeout: Any) -> Callable[[BatchRequest], None]:
    from .._client import stream

    def check(req: BatchRequest) -> None:
        # Building the stream builds the HTTP request: bad options, a context the
        # API cannot carry, a missing key all fail here, before anything is sent.
        stream(req.model, req.context, api_key=api_key, **_call_options(req.options, timeout))

    return check


def _call_options(options: dict[str, Any], timeout: Any) -> dict[str, Any]:
    if timeout is not None and "timeout" not in options:
        return {**options, "timeout": timeout}
    if isinstance(options.get("timeout"), dict):
        return {**options, "timeout": as_timeout(options["timeout"])}
    return options


def _lines(source: str | os.PathLike[str] | Iterable[Any]) -> tuple[str, Iterable[bytes]]:
    if isinstance(source, str | os.PathLike):
        path = os.fspath(source)
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise ConfigurationError(f"cannot read {path}: {exc.strerror}") from None
        return path, data.split(b"\n")
    enc = msgspec.json.Encoder()
    return "requests", (
        item if isinstance(item, bytes) else item.encode() if isinstance(item, str) else enc.encode(item)
        for item in source
    )  # fmt: skip


def load_requests(
    source: str | os.PathLike[str] | Iterable[Any],
    resolve: Callable[[str], Model | Fallback],
    *,
    skip_invalid: bool = False,
    api_key: Any = None,
    timeout: Any = None,
) -> tuple[list[BatchRequest], list[InputProblem]]:
    """Parse and validate every line; raise listing every bad line unless ``skip_invalid``.

    What :func:`batch` does before sending anything, on its own: to check a file
    (or build the requests of a custom runner). Each line's request is built as a
    call would build it, so bad options, a context the API cannot carry or a missing
    key are found here.

    Args:
        source: A JSONL file path, or an iterable of line dicts.
        resolve: ``"provider/id"`` -> model, e.g. :func:`model_resolver`.
        skip_invalid: Return the bad lines as problems instead of raising.
        api_key: The key for every line (default: each provider's variable).
        timeout: The ``timeout`` option of every line that sets none.

    Returns:
        The valid requests, and the problems of the invalid lines (empty unless
        ``skip_invalid``).

    Raises:
        ConfigurationError: Invalid lines (all listed) without ``skip_invalid``, or
            a source that cannot be read.

    Example:
        ```python
        from modelwire.batching import load_requests, model_resolver
        from modelwire.testing import MockServer

        lines = [
            {"custom_id": "q1", "model": "mock/m", "prompt": "Hi"},
            {"custom_id": "q2", "model": "mock/m"},
        ]
        with MockServer() as server:
            resolve = model_resolver({"mock/m": server.model()})
            requests, problems = load_requests(lines, resolve, skip_invalid=True)
        print([r.custom_id for r in requests], [str(p) for p in problems])
        # ['q1'] ['line 2: give a context (modelwire Context JSON) or a prompt string']
        ```
    """
    name, lines = _lines(source)
    requests, problems = read_requests(lines, resolve, _validator(api_key, timeout))
    if problems and not skip_invalid:
        raise problems_error(problems, name)
    if api_key is not None or timeout is not None:
        extra = {"api_key": api_key} if api_key is not None else {}
        requests = [
            msgspec.structs.replace(r, options={**_call_options(r.options, timeout), **extra})
            for r in requests
        ]
    return requests, problems


def _limits_for(limits: Limits | Mapping[str, Limits] | None) -> Callable[[str], Limits | None]:
    if limits is None or isinstance(limits, Limits):
        return lambda provider: limits
    # "*" holds the limits of every provider not named.
    return lambda provider: limits.get(provider) or limits.get("*")


class _LocalLimiter:
    """The limiter interface of the runner over a local :class:`ProviderLimiter`."""

    def __init__(self, inner: ProviderLimiter) -> None:
        self.inner = inner

    async def acquire(self, tokens: int) -> None:
        await self.inner.acquire(tokens)

    async def pause(self, seconds: float) -> None:
        self.inner.pause(seconds)

    async def settle(self, estimated: int, actual: int) -> None:
        self.inner.settle(estimated, actual)


class _LocalSink:
    def __init__(self, log: OutputLog, stats: Stats, progress: Progress) -> None:
        self.log, self.stats, self.progress = log, stats, progress
        self._next = 0.0

    async def spent(self, spend: dict[str, Any]) -> None:
        self.stats.add_spent(spend)

    async def write(self, record: dict[str, Any]) -> None:
        if self.log.write(record):
            self.stats.add(record)
            now = time.monotonic()
            if now >= self._next:  # a snapshot per 50 ms at most, not per result
                self._next = now + 0.05
                self.progress.update(self.stats.snapshot())


@dataclasses.dataclass(frozen=True)
class _Knobs:
    """Test-only settings, off the public signatures: the first backoff wait, and the
    Ray chaos hook (a sink that kills its worker after N lines)."""

    backoff_base: float = 0.5
    chaos: dict[str, Any] | None = None
    #: ``via="provider"``: the wait between polls (an async ``sleep(seconds)``).
    sleep: Callable[[float], Awaitable[None]] | None = None


_KNOBS: contextvars.ContextVar[_Knobs] = contextvars.ContextVar("modelwire_batch_knobs")


@contextlib.contextmanager
def knobs(
    *,
    backoff_base: float = 0.5,
    chaos: dict[str, Any] | None = None,
    sleep: Callable[[float], Awaitable[None]] | None = None,
) -> Iterator[None]:
    """For modelwire's own tests: runs started inside use these knobs."""
    token = _KNOBS.set(_Knobs(backoff_base=backoff_base, chaos=chaos, sleep=sleep))
    try:
        yield
    finally:
        _KNOBS.reset(token)


@dataclasses.dataclass
class _Plan:
    """A validated run: ``ray`` (a blocking call, for a Ray run) or ``local`` (the
    coroutine of a local run); nothing has been sent yet."""

    ray: Callable[[], BatchSummary] | None
    local: Callable[[], Coroutine[Any, Any, BatchSummary]] | None


def _plan(
    input: str | os.PathLike[str] | Iterable[Any],
    output: str | os.PathLike[str],
    cfg: BatchConfig,
) -> _Plan:
    """Every decision of :func:`batch` and :func:`batch_async` before the first request:
    the settings checked (:class:`BatchConfig`) and every input line validated."""
    started = time.monotonic()
    knobs = _KNOBS.get(_Knobs())
    out = os.fspath(output)
    inputs = (os.fspath(input),) if isinstance(input, str | os.PathLike) else ()
    # The output is checked (and an existing one read) before the input is even
    # validated: a results file that cannot be used would otherwise fail only after
    # requests were paid for.
    check_output(out, inputs)
    read_done(out, cfg.output_format)
    models = cfg.models
    resolve = model_resolver(models, base_url=cfg.base_url, api=cfg.api)
    requests, invalid = load_requests(
        input, resolve, skip_invalid=cfg.skip_invalid, api_key=cfg.api_key, timeout=cfg.timeout
    )
    progress = cfg.progress or Progress()
    if invalid:
        progress.invalid(invalid)  # before the run, so they never follow its summary
    settings = RunSettings(
        concurrency=cfg.concurrency, max_attempts=cfg.max_attempts,
        backoff_base=knobs.backoff_base,
        agent_root=os.fspath(cfg.agent_root) if cfg.agent_root is not None else None,
        line_timeout=cfg.line_timeout, output_format=cfg.output_format,
        run_deadline=time.time() + cfg.run_timeout if cfg.run_timeout is not None else None,
    )  # fmt: skip
    if _via(cfg, requests) == "provider":
        return _provider_plan(requests, invalid, out, inputs, cfg, progress, started, knobs)
    from ._provider import refuse_live_beside_jobs

    refuse_live_beside_jobs(out)  # lines a provider job still holds would be paid twice
    if cfg.backend == "ray":
        if models is not None and any(isinstance(m, Fallback) for m in models.values()):
            raise ConfigurationError(
                'backend="ray" does not take a mw.Fallback in models= (its workers receive '
                'plain models); run it with backend="local"'
            )
        try:
            from ._ray import run_on_ray
        except ImportError as exc:
            if exc.name is None or exc.name.partition(".")[0] != "ray":
                raise
            raise ConfigurationError(
                "backend=\"ray\" needs Ray, which is not installed: pip install 'modelwire[ray]'"
            ) from None

        job = functools.partial(
            run_on_ray, requests, out, settings=settings, max_cost=cfg.max_cost,
            limits=_limits_for(cfg.limits), address=cfg.ray_address, workers=cfg.ray_workers,
            progress=progress, invalid=invalid, started=started, chaos=knobs.chaos,
        )  # fmt: skip
        return _Plan(ray=job, local=None)

    async def local() -> BatchSummary:
        return await _run_local(requests, invalid, out, inputs, settings, cfg.max_cost,
                                cfg.limits, progress, started)  # fmt: skip

    return _Plan(ray=None, local=local)


def _via(cfg: BatchConfig, requests: list[BatchRequest]) -> str:
    """``"provider"`` or ``"live"``: ``via="auto"`` is the providers' batch APIs when the
    run may wait their completion window (no ``run_timeout``, or one of 24 h or more),
    runs in this process, and every line's API has one."""
    if cfg.via != "auto":
        return cfg.via
    from ._provider import BATCH_WINDOW, supported

    patient = cfg.run_timeout is None or cfg.run_timeout >= BATCH_WINDOW
    plain = cfg.backend == "local" and cfg.agent_root is None
    return "provider" if patient and plain and supported(requests) else "live"


def _provider_plan(
    requests: list[BatchRequest], invalid: list[InputProblem], out: str,
    inputs: tuple[str, ...], cfg: BatchConfig, progress: Progress, started: float,
    knobs: _Knobs,
) -> _Plan:  # fmt: skip
    from ._provider import ProviderSettings, prepare_lines, run_provider

    for name, value in (("backend", cfg.backend != "local"), ("agent_root", cfg.agent_root)):
        if value:
            raise ConfigurationError(
                f'via="provider" runs in this process and sends each line once: {name}= '
                'needs via="live"'
            )
    lines = prepare_lines(requests)  # every line's job entry is buildable: nothing sent yet
    settings = ProviderSettings(
        max_attempts=cfg.max_attempts, output_format=cfg.output_format,
        run_deadline=time.time() + cfg.run_timeout if cfg.run_timeout is not None else None,
        poll_first=cfg.poll_interval, poll_max=max(60.0, cfg.poll_interval),
    )  # fmt: skip

    async def local() -> BatchSummary:
        return await run_provider(
            lines, invalid=invalid, out=out, inputs=inputs, settings=settings,
            max_cost=cfg.max_cost, progress=progress, started=started,
            sleep=knobs.sleep or asyncio.sleep,
        )  # fmt: skip

    return _Plan(ray=None, local=local)


async def _run_local(
    requests: list[BatchRequest],
    invalid: list[InputProblem],
    out: str,
    inputs: tuple[str, ...],
    settings: RunSettings,
    max_cost: float | None,
    limits: Limits | Mapping[str, Limits] | None,
    progress: Progress,
    started: float,
) -> BatchSummary:
    limits_for = _limits_for(limits)
    limiters: dict[str, _LocalLimiter] = {}

    def limiter_for(model: Model | Fallback) -> _LocalLimiter:
        lim = limiters.get(model.provider)
        if lim is None:
            lim = limiters[model.provider] = _LocalLimiter(ProviderLimiter(limits_for(model.provider)))  # fmt: skip
        return lim

    with OutputLog(out, output_format=settings.output_format, inputs=inputs) as log:
        pending = [r for r in requests if r.custom_id not in log.done]
        stats = Stats(len(pending), already_done=len(requests) - len(pending))
        skipped: dict[str, int] = {"cost": 0, "deadline": 0}
        progress.start(len(pending))

        def on_skip(req: BatchRequest, why: str) -> None:
            skipped[why] += 1

        interrupted = False
        try:
            await run_requests(
                pending, _LocalSink(log, stats, progress), settings=settings,
                limiter_for=limiter_for, budget=Budget(max_cost), on_skip=on_skip,
            )  # fmt: skip
        except (asyncio.CancelledError, KeyboardInterrupt):
            # Ctrl-C (asyncio.run cancels the main task): the progress and the
            # summary still say exactly what reached the file, then it goes on up.
            interrupted = True
            raise
        finally:
            log.sync()
            progress.update(stats.snapshot(), force=True)
            summary = summarize(
                stats, total=len(requests), skipped_done=len(requests) - len(pending),
                skipped_cost=skipped["cost"], skipped_deadline=skipped["deadline"],
                invalid=invalid, started=started, interrupted=interrupted,
            )  # fmt: skip
            progress.close(summary_dict(summary))
    return summary


async def batch_async(
    input: str | os.PathLike[str] | Iterable[Any],
    output: str | os.PathLike[str],
    **options: Unpack[BatchOptions],
) -> BatchSummary:
    """The async twin of :func:`batch`: the same arguments and decisions, awaited in
    the running loop (a Ray run, which blocks on Ray's own calls, waits on a worker
    thread so the loop goes on).

    Use it where an event loop already runs (a notebook, an async service), where
    :func:`batch` refuses to start.

    Args:
        input: A JSONL file path, or an iterable of line dicts.
        output: The JSONL results file, appended to.
        **options: :func:`batch`'s options.

    Returns:
        The :class:`~modelwire.batching.BatchSummary` of this run.

    Raises:
        ConfigurationError: An invalid option, invalid input lines, or an output
            file that is not a results file.
        OutputWriteError: The results file could not be written.

    Example:
        ```python
        import asyncio

        from modelwire.batching import batch_async
        from modelwire.testing import MockServer


        async def main() -> None:
            lines = [{"custom_id": "q1", "model": "mock/m", "prompt": "Hi"}]
            with MockServer(["ok"]) as server:
                summary = await batch_async(
                    lines, "results.jsonl", models={"mock/m": server.model()}
                )
            print(summary.ok)  # 1


        asyncio.run(main())
        ```
    """
    plan = _plan(input, output, BatchConfig.of("batch_async", options))
    if plan.ray is not None:
        return await asyncio.to_thread(plan.ray)
    assert plan.local is not None
    return await plan.local()


def batch(
    input: str | os.PathLike[str] | Iterable[Any],
    output: str | os.PathLike[str],
    **options: Unpack[BatchOptions],
) -> BatchSummary:
    """Run every request of ``input`` (a JSONL path, or an iterable of line
    dicts) and append one result line per ``custom_id`` to ``output``.

    Re-running with the same ``output`` resumes: ids already there are skipped.
    Options (keyword-only; :class:`~modelwire.batching._options.BatchConfig` has
    their defaults): ``concurrency``, ``max_attempts``, ``max_cost`` (dollars),
    ``limits`` (``Limits(rpm, tpm)`` for every provider, or a dict by provider),
    ``line_timeout`` (seconds one line may take, retries included) and
    ``run_timeout`` (seconds for the whole run: no line starts after it, and lines
    it cuts are left for the next run),
    ``models`` (``{"provider/id": Model}`` overriding the catalog), ``base_url``
    and ``api`` (send every model there), ``api_key``, ``timeout``,
    ``skip_invalid``, ``agent_root`` (run ``mw.Agent`` with the read-only tools
    rooted there), ``progress``, ``backend`` (``"local"`` or ``"ray"``),
    ``ray_address``, ``ray_workers``, ``output_format`` (``"modelwire"``, or
    ``"openai"`` for the OpenAI Batch API output lines), ``via`` (``"live"``;
    ``"provider"``: the providers' batch APIs at their batch price; ``"auto"``: those
    when ``run_timeout`` allows 24 hours) and ``poll_interval``. See docs/batch.md.

    It runs its own event loop, so it refuses to start inside a running one (it
    would block that loop for the whole run): there, ``await
    modelwire.batching.batch_async(...)`` with the same arguments.

    Every line is validated before anything is sent. A line that fails (after up to
    ``max_attempts`` tries for a retryable error) gets a result line with
    ``"ok": false`` and its error; it does not stop the run. Each result line is
    written once, so a crash or Ctrl-C loses at most the lines in flight.

    Args:
        input: A JSONL file path, or an iterable of line dicts: modelwire's own
            format (``custom_id``, ``model``, ``prompt`` or ``context``,
            ``options``) or the OpenAI Batch API input format.
        output: The JSONL results file, appended to (created if missing).
        **options: The options above (:class:`~modelwire.batching._options.BatchOptions`).

    Returns:
        The :class:`~modelwire.batching.BatchSummary` of this run: lines written ok
        or failed, errors by kind, lines skipped (done before, over ``max_cost``,
        invalid, past ``run_timeout``), requests, tokens and cost.

    Raises:
        ConfigurationError: An invalid option, invalid input lines (all listed,
            nothing sent; ``skip_invalid=True`` runs the valid ones), an output
            file that is not a results file, or a call inside a running event
            loop.
        OutputWriteError: The results file could not be written (a full disk…);
            the lines written stay, so running again resumes.

    Example:
        ```python
        import modelwire as mw
        from modelwire.testing import MockServer

        lines = [{"custom_id": f"q{i}", "model": "mock/m", "prompt": f"Say {i}"} for i in range(3)]
        with MockServer(["ok"], repeat_last=True) as server:
            models = {"mock/m": server.model()}
            summary = mw.batch(lines, "results.jsonl", models=models)
            again = mw.batch(lines, "results.jsonl", models=models)  # resumes: nothing left
        print(summary.ok, summary.failed, again.skipped_done)  # 3 0 3
        ```
    """
    cfg = BatchConfig.of("batch", options)
    if _running_loop():
        raise ConfigurationError(
            "mw.batch() was called inside a running event loop, which it would block for "
            "the whole run; there, use `await modelwire.batching.batch_async(...)` with "
            "the same arguments"
        )
    plan = _plan(input, output, cfg)
    if plan.ray is not None:
        # Ray wants the main thread (signal handlers); nothing here awaits.
        return plan.ray()
    assert plan.local is not None
    return asyncio.run(plan.local())


# help() and IDEs show the options spelled out, from the one definition.
batch.__signature__ = signature(batch)  # type: ignore[attr-defined]
batch_async.__signature__ = signature(batch_async)  # type: ignore[attr-defined]


def _running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
