"""``cancel_jobs``: cancel the provider batch jobs a ``via="provider"`` run left open."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from typing import Any, Unpack

from ._options import BatchConfig, BatchOptions

__all__ = ["cancel_jobs"]


def cancel_jobs(
    input: str | os.PathLike[str] | Iterable[Any],
    output: str | os.PathLike[str],
    **options: Unpack[BatchOptions],
) -> list[str]:
    """Cancel every provider job of ``output``'s ledger that has not ended.

    The input and options are those of the run (they give each job's endpoint and
    key). Each job is asked to stop; what it answered before stopping is written by
    the next run of the same command, which polls it, and the lines it did not answer
    are sent again by the run after (docs/batch.md, "Provider batch").

    Args:
        input: The run's input (a JSONL path, or line dicts).
        output: The run's results file (its ledger is ``OUT.jobs``).
        **options: :func:`~modelwire.batching.batch`'s options (``api_key``,
            ``base_url``, ``models``…).

    Returns:
        The ids of the jobs asked to cancel.

    Raises:
        ConfigurationError: As :func:`~modelwire.batching.batch`, before any request.
        ModelwireError: A cancel request failed (the typed error).
    """
    from ._api import load_requests, model_resolver
    from ._provider import prepare_lines
    from ._provider._exchange import exchange
    from ._provider._ledger import Ledger

    cfg = BatchConfig.of("cancel_jobs", options)
    resolve = model_resolver(cfg.models, base_url=cfg.base_url, api=cfg.api)
    requests, _ = load_requests(input, resolve, skip_invalid=True, api_key=cfg.api_key)
    lines = {line.req.custom_id: line for line in prepare_lines(requests)}

    async def cancel() -> list[str]:
        from .._http import pooled_async_client

        ledger = Ledger(os.fspath(output), read_only=True)
        http = pooled_async_client(2)
        done = []
        try:
            for job in ledger.open_jobs():
                line = next((lines[c] for c in job.keys.values() if c in lines), None)
                if line is None or job.id is None:
                    continue
                request = line.facet.cancel_request(line.sent, job.id)
                await exchange(request, line.model.api, http_client=http)
                done.append(job.id)
        finally:
            ledger.close()
            await http.aclose()
        return done

    return asyncio.run(cancel())
