"""Anthropic Message Batches: the batch facet of ``anthropic-messages``.

Anthropic API reference, "Message Batches": ``POST /v1/messages/batches`` with
``requests: [{custom_id, params}]`` (``params``: a Messages request; ``custom_id``
``^[a-zA-Z0-9_-]{1,64}$``), ``GET /v1/messages/batches/{id}`` (``processing_status``
in_progress, canceling, ended; ``request_counts`` processing, succeeded, errored,
canceled, expired; ``results_url`` once ended), ``POST
/v1/messages/batches/{id}/cancel``. The results are JSONL at ``results_url``, one line
``{"custom_id", "result": {"type": "succeeded" | "errored" | "canceled" | "expired",
"message" | "error"}}``. Batched requests cost half the live price.

A succeeded line's ``message`` is the whole Messages answer: :func:`as_stream` gives it
as the events a stream carries (``message_start``, each block whole in its
``content_block_start``, ``message_delta`` with the stop reason and usage,
``message_stop``), which the live decoder reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ...errors import MalformedChunkError
from .._batch import (
    BatchJob,
    JobState,
    LineResult,
    Outcome,
    json_request,
    jsonl,
    origin_path,
    without,
)

if TYPE_CHECKING:
    from ..._wire.request import HTTPRequest

__all__ = ["BATCHING", "MessageBatches", "as_stream"]


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + msgspec.json.encode({"type": kind, **data}) + b"\n\n"  # fmt: skip


def as_stream(body: bytes) -> bytes:
    """A ``message`` body as its Messages stream."""
    try:
        whole: Any = msgspec.json.decode(body)
        blocks = whole.get("content") or []
    except (msgspec.DecodeError, AttributeError) as exc:
        raise MalformedChunkError(f"a batched message is not an object ({exc!r})") from None
    out = [_event("message_start", {"message": {**whole, "content": [], "stop_reason": None}})]
    for i, block in enumerate(blocks):
        out.append(_event("content_block_start", {"index": i, "content_block": block}))
        out.append(_event("content_block_stop", {"index": i}))
    delta = {"stop_reason": whole.get("stop_reason"), "stop_sequence": whole.get("stop_sequence")}
    out.append(_event("message_delta", {"delta": delta, "usage": whole.get("usage") or {}}))
    out.append(_event("message_stop", {}))
    return b"".join(out)


_STATES: dict[str, JobState] = {"in_progress": "running", "canceling": "running", "ended": "completed"}  # fmt: skip


class _Batch(msgspec.Struct):
    id: str
    processing_status: str
    request_counts: dict[str, int] = {}
    results_url: str | None = None
    cancel_initiated_at: str | None = None


class _Result(msgspec.Struct):
    type: str
    message: msgspec.Raw = msgspec.Raw(b"null")
    error: msgspec.Raw = msgspec.Raw(b"null")


class _Line(msgspec.Struct):
    custom_id: str
    result: _Result


class _ErrorStatus(msgspec.Struct):
    type: str | None = None


class _ErrorBody(msgspec.Struct):
    # The error response a live call gets, ``{"type": "error", "error": {"type"…}}``;
    # an error object itself (``{"type": "invalid_request_error"…}``) is read too.
    type: str | None = None
    error: _ErrorStatus | None = None


_batch = msgspec.json.Decoder(_Batch)
_line = msgspec.json.Decoder(_Line)
_error_body = msgspec.json.Decoder(_ErrorBody)
#: Anthropic's error types and the HTTP status each is sent with ("Errors").
_STATUS = {"invalid_request_error": 400, "authentication_error": 401, "permission_error": 403,
           "not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429,
           "api_error": 500, "overloaded_error": 529}  # fmt: skip


def _status(error: bytes) -> int | None:
    try:
        body = _error_body.decode(error)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    kind = body.error.type if body.error is not None else body.type
    return _STATUS.get(kind or "")


class MessageBatches:
    """The batch facet of ``anthropic-messages``."""

    price_factor = 0.5
    max_lines = 100_000
    key_chars = r"[a-zA-Z0-9_-]{1,64}"

    def _base(self, sent: HTTPRequest) -> str:
        return without(sent.url, "/messages") + "/messages/batches"

    def entry(self, sent: HTTPRequest, key: str) -> dict[str, Any]:
        params = msgspec.json.decode(sent.body)
        params.pop("stream", None)
        return {"custom_id": key, "params": params}

    def upload_request(self, sent: HTTPRequest, entries: list[dict[str, Any]], name: str) -> None:
        return None

    def create_request(
        self, sent: HTTPRequest, entries: list[dict[str, Any]], name: str, uploaded: bytes | None
    ) -> HTTPRequest:
        return json_request(sent, origin_path(sent.url, self._base(sent)), {"requests": entries})

    def status_request(self, sent: HTTPRequest, job_id: str) -> HTTPRequest:
        return json_request(sent, origin_path(sent.url, f"{self._base(sent)}/{job_id}"), method="GET")  # fmt: skip

    def cancel_request(self, sent: HTTPRequest, job_id: str) -> HTTPRequest:
        return json_request(sent, origin_path(sent.url, f"{self._base(sent)}/{job_id}/cancel"), {})  # fmt: skip

    def result_request(self, sent: HTTPRequest, where: str) -> HTTPRequest:
        return json_request(sent, where, method="GET", accept="*/*")

    def parse_job(self, body: bytes) -> BatchJob:
        try:
            b = _batch.decode(body)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise MalformedChunkError(f"the message batch: {exc}") from None
        state = _STATES.get(b.processing_status, "running")
        if state == "completed" and b.cancel_initiated_at is not None:
            state = "cancelled"
        return BatchJob(id=b.id, state=state, provider_state=b.processing_status,
                        counts=dict(b.request_counts),
                        results=(b.results_url,) if b.results_url else ())  # fmt: skip

    def parse_results(self, body: bytes, where: str) -> list[LineResult]:
        out = []
        for line in jsonl(body, _line, "batch results"):
            r = line.result
            if r.type == "succeeded":
                out.append(LineResult(key=line.custom_id, outcome="succeeded", body=bytes(r.message)))  # fmt: skip
            elif r.type == "errored":
                # ``error`` is the error response a live call would have had.
                err = bytes(r.error)
                out.append(LineResult(key=line.custom_id, outcome="errored", status=_status(err), error=err))  # fmt: skip
            else:
                gone: Outcome = "expired" if r.type == "expired" else "cancelled"
                out.append(LineResult(key=line.custom_id, outcome=gone))
        return out

    def as_stream(self, body: bytes) -> bytes:
        return as_stream(body)

    def find_request(self, sent: HTTPRequest) -> None:
        return None  # a message batch carries no name or metadata to be found by

    def find(self, body: bytes, name: str) -> str | None:
        return None


BATCHING = MessageBatches()
