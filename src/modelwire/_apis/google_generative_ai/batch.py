"""Gemini batch mode: the batch facet of ``google-generative-ai``.

Gemini API reference, "Batch Mode": ``POST {base}/models/{model}:batchGenerateContent``
with the requests inline (``{"batch": {"display_name", "input_config": {"requests":
{"requests": [{"request", "metadata": {"key"}}]}}}}``) answers a long-running
operation named ``batches/{id}``; ``GET {base}/batches/{id}`` retrieves it (its
``state``: ``JOB_STATE_PENDING``, ``RUNNING``, ``SUCCEEDED``, ``FAILED``,
``CANCELLED``, ``EXPIRED`` — the REST resource spells them ``BATCH_STATE_…``; both
are read), ``POST {base}/batches/{id}:cancel`` cancels it. Once done the answers are
inline, ``response.inlinedResponses``: each ``{"response"}`` (a whole
``GenerateContentResponse``) or ``{"error"}`` (a ``google.rpc.Status``), with the
request's ``metadata``. Batched requests cost half the live price.

A whole ``GenerateContentResponse`` has the shape of one streamed chunk, so
:func:`as_stream` is one Server-Sent Event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import msgspec

from ...errors import MalformedChunkError
from .._batch import BatchJob, JobState, LineResult, json_request, origin_path, without

if TYPE_CHECKING:
    from ..._wire.request import HTTPRequest

__all__ = ["BATCHING", "BatchMode", "as_stream"]

_STATES: dict[str, JobState] = {"PENDING": "running", "RUNNING": "running",
                                "SUCCEEDED": "completed", "FAILED": "failed",
                                "CANCELLED": "cancelled", "EXPIRED": "expired"}  # fmt: skip
#: google.rpc.Code names and the HTTP status each maps to (AIP-193).
_HTTP = {"INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "OUT_OF_RANGE": 400,
         "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "NOT_FOUND": 404,
         "RESOURCE_EXHAUSTED": 429, "CANCELLED": 499, "INTERNAL": 500, "UNKNOWN": 500,
         "UNAVAILABLE": 503, "DEADLINE_EXCEEDED": 504}  # fmt: skip


def as_stream(body: bytes) -> bytes:
    """A ``GenerateContentResponse`` body as its stream (one event)."""
    return b"data: " + body.strip() + b"\n\n"


def _state(raw: Any) -> str:
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    state = str(meta.get("state") or raw.get("state") or "")
    for prefix in ("JOB_STATE_", "BATCH_STATE_"):
        state = state.removeprefix(prefix)
    return state


def _inlined(raw: Any) -> list[Any] | None:
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    for holder in (raw.get("response"), meta.get("output")):
        if isinstance(holder, dict) and "inlinedResponses" in holder:
            items = holder["inlinedResponses"]
            if isinstance(items, dict):
                items = items.get("inlinedResponses")
            return items if isinstance(items, list) else []
    return None


def _line(i: int, item: Any) -> LineResult:
    if not isinstance(item, dict):
        raise MalformedChunkError(f"response.inlinedResponses[{i}] must be an object")
    meta = item.get("metadata")
    key = (
        str(meta.get("key")) if isinstance(meta, dict) and meta.get("key") is not None else f"#{i}"
    )
    if "response" in item:
        return LineResult(key=key, outcome="succeeded", body=msgspec.json.encode(item["response"]))
    error: dict[str, Any] = item["error"] if isinstance(item.get("error"), dict) else {}
    status = _HTTP.get(str(error.get("status")))
    return LineResult(key=key, outcome="errored", status=status,
                      error=msgspec.json.encode({"error": error}))  # fmt: skip


class BatchMode:
    """The batch facet of ``google-generative-ai``."""

    price_factor = 0.5
    max_lines = 10_000
    key_chars = r"[^\x00-\x1f]{1,512}"

    def _root(self, sent: HTTPRequest) -> str:
        return without(sent.url, "/models/")

    def entry(self, sent: HTTPRequest, key: str) -> dict[str, Any]:
        return {"request": msgspec.json.decode(sent.body), "metadata": {"key": key}}

    def upload_request(self, sent: HTTPRequest, entries: list[dict[str, Any]], name: str) -> None:
        return None

    def create_request(
        self, sent: HTTPRequest, entries: list[dict[str, Any]], name: str, uploaded: bytes | None
    ) -> HTTPRequest:
        path = urlsplit(sent.url).path.rsplit(":", 1)[0]  # …/models/{model}
        body = {"batch": {"display_name": name,
                          "input_config": {"requests": {"requests": entries}}}}  # fmt: skip
        return json_request(sent, origin_path(sent.url, path + ":batchGenerateContent", ""), body)

    def status_request(self, sent: HTTPRequest, job_id: str) -> HTTPRequest:
        return json_request(sent, origin_path(sent.url, f"{self._root(sent)}/{job_id}", ""), method="GET")  # fmt: skip

    def cancel_request(self, sent: HTTPRequest, job_id: str) -> HTTPRequest:
        return json_request(sent, origin_path(sent.url, f"{self._root(sent)}/{job_id}:cancel", ""), {})  # fmt: skip

    def result_request(self, sent: HTTPRequest, where: str) -> HTTPRequest:
        return self.status_request(sent, where)

    def parse_job(self, body: bytes) -> BatchJob:
        try:
            raw: Any = msgspec.json.decode(body)
            name = raw["name"]
        except (msgspec.DecodeError, KeyError, TypeError) as exc:
            raise MalformedChunkError(f"the batch operation has no name ({exc!r})") from None
        provider_state = _state(raw)
        state = _STATES.get(provider_state, "running")
        if raw.get("done") and state == "running":
            state = "failed" if raw.get("error") else "completed"
        meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
        stats: dict[str, Any] = (
            meta["batchStats"] if isinstance(meta.get("batchStats"), dict) else {}
        )
        counts = {k: int(v) for k, v in stats.items() if str(v).isdigit()}
        items = _inlined(raw)
        inline = (
            tuple(_line(i, item) for i, item in enumerate(items)) if items is not None else None
        )
        error = raw.get("error") if isinstance(raw.get("error"), dict) else None
        return BatchJob(id=str(name), state=state, provider_state=provider_state or "PENDING",
                        counts=counts, inline=inline,
                        message=str(error.get("message")) if error else None)  # fmt: skip

    def parse_results(self, body: bytes, where: str) -> list[LineResult]:
        return list(self.parse_job(body).inline or ())

    def as_stream(self, body: bytes) -> bytes:
        return as_stream(body)

    def find_request(self, sent: HTTPRequest) -> HTTPRequest:
        # batches.list: the operations, each with its batch's displayName.
        url = origin_path(sent.url, f"{self._root(sent)}/batches", "pageSize=100")
        return json_request(sent, url, method="GET")

    def find(self, body: bytes, name: str) -> str | None:
        try:
            listed: Any = msgspec.json.decode(body)
        except msgspec.DecodeError as exc:
            raise MalformedChunkError(f"the list of batches: {exc}") from None
        if not isinstance(listed, dict):
            return None
        items = listed.get("operations") or listed.get("batches") or []
        for op in items if isinstance(items, list) else ():
            meta = op.get("metadata") if isinstance(op, dict) else None
            meta = meta if isinstance(meta, dict) else (op if isinstance(op, dict) else {})
            if name in (meta.get("displayName"), meta.get("display_name")):
                return str(op.get("name"))
        return None


BATCHING = BatchMode()
