"""Batch runs that survive anything: ``mw.batch``, ``batch_async`` and ``modelwire batch``.

One request per JSONL line (modelwire's own format or the OpenAI Batch API
input format, Chat Completions or Responses), validated up front; one result
line per ``custom_id`` (modelwire's format or the OpenAI Batch API output
format), appended atomically so a crash or ``kill -9`` followed by the same
command yields every id exactly once; concurrency, per-provider rate limits with
shared ``Retry-After`` pauses, retries with jittered backoff, a cost cap reserved
per HTTP request, per-line and per-run deadlines, progress; the same job on a
Ray cluster with ``backend="ray"``; or through the providers' own batch APIs at their
batch price with ``via="provider"`` (:func:`cancel_jobs` stops their jobs). Guide:
docs/batch.md.

``mw.batch`` is :func:`batch` (it runs its own event loop); inside a running loop,
``await batch_async(...)`` with the same arguments.
"""

from __future__ import annotations

from ._api import BatchSummary, batch, batch_async, load_requests, model_resolver
from ._cancel import cancel_jobs
from ._input import BatchRequest, InputProblem
from ._limits import Limits
from ._progress import JsonProgress, Progress, RichProgress
from ._runner import RETRYABLE

__all__ = [
    "RETRYABLE",
    "BatchRequest",
    "BatchSummary",
    "InputProblem",
    "JsonProgress",
    "Limits",
    "Progress",
    "RichProgress",
    "batch",
    "batch_async",
    "cancel_jobs",
    "load_requests",
    "model_resolver",
]
