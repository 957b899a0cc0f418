"""One provider job through its life: submitted (ledger first), polled, its results
read — each line's outcome as a :class:`~modelwire._apis._batch.LineResult`."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..._apis._batch import BatchJob, LineResult
from ...errors import TruncatedStreamError
from ._exchange import exchange
from ._ledger import Job, Ledger
from ._lines import Line, keys_for

if TYPE_CHECKING:
    from ..._wire.request import HTTPRequest

__all__ = ["Active", "find", "new_job", "poll", "results", "submit"]


class Active:
    """A job the provider holds: the ledger's record, its lines by key, the last status."""

    def __init__(self, job: Job, lines: dict[str, Line]) -> None:
        self.job = job
        self.lines = lines
        first = next(iter(lines.values()))
        self.facet: Any = first.facet
        self.sent: HTTPRequest = first.sent
        self.api = first.model.api
        self.status: BatchJob | None = None

    @property
    def estimate(self) -> float:
        return sum(line.estimate for line in self.lines.values())


def new_job(lines: list[Line]) -> Active:
    """A job of ``lines``, named and keyed, not yet sent (nor recorded)."""
    first = lines[0]
    keyed = keys_for(lines, first.facet.key_chars)
    name = "modelwire-" + os.urandom(8).hex()
    job = Job(name=name, api=first.model.api, keys={k: v.req.custom_id for k, v in keyed.items()})
    return Active(job, keyed)


async def submit(active: Active, ledger: Ledger, http_client: Any) -> None:
    """Send ``active``'s job: its record is on disk before the request goes, and its id
    right after the create answer is read, before anything else.

    The create request is not retried by the call (a request that timed out may have
    created the job): the run looks for the job by its name first, where it can."""
    facet, first, job = active.facet, active.sent, active.job
    entries = [facet.entry(line.sent, key) for key, line in active.lines.items()]
    ledger.submitting(job)
    uploaded = None
    upload = facet.upload_request(first, entries, job.name)
    if upload is not None:
        uploaded = await exchange(upload, active.api, http_client=http_client)
    create = facet.create_request(first, entries, job.name, uploaded)
    body = await exchange(create, active.api, http_client=http_client, max_retries=0)
    created = facet.parse_job(body)
    ledger.created(job, created.id)
    active.status = created


async def find(active: Active, http_client: Any) -> str | None:
    """The id of the job the provider created under ``active``'s name, if it lists one."""
    request = active.facet.find_request(active.sent)
    if request is None:
        return None
    body = await exchange(request, active.api, http_client=http_client)
    found: str | None = active.facet.find(body, active.job.name)
    return found


async def poll(active: Active, http_client: Any) -> BatchJob:
    """The job's status, as the provider answers it now."""
    assert active.job.id is not None
    body = await exchange(active.facet.status_request(active.sent, active.job.id), active.api,
                          http_client=http_client)  # fmt: skip
    active.status = active.facet.parse_job(body)
    return active.status


async def results(active: Active, http_client: Any) -> dict[str, LineResult]:
    """Every line the ended job answered (by key); lines it did not answer are absent."""
    status = active.status
    assert status is not None
    found: list[LineResult] = []
    if status.inline is not None:
        found = list(status.inline)
    else:
        for where in status.results:
            request = active.facet.result_request(active.sent, where)
            try:
                body = await exchange(request, active.api, http_client=http_client)
            except TruncatedStreamError:
                body = b""  # an empty results file: no line in it
            found += active.facet.parse_results(body, where)
    keys = list(active.job.keys)
    out: dict[str, LineResult] = {}
    for r in found:
        key = r.key
        if key not in active.job.keys and key.startswith("#") and key[1:].isdigit():
            i = int(key[1:])  # answers without their metadata are in request order
            key = keys[i] if i < len(keys) else key
        out[key] = r
    return out
