"""The OpenAI Batch API, shared by the Chat Completions and Responses packages (each
gives the endpoint its lines go to and how its whole answer streams).

OpenAI API reference, "Batch": the lines are uploaded as a JSONL file (``POST
/v1/files``, ``purpose=batch``, multipart), the job created with ``POST /v1/batches``
(``input_file_id``, ``endpoint``, ``completion_window: "24h"``, ``metadata``: modelwire
names each job there, so a job whose id a crash lost is found again in ``GET
/v1/batches``), retrieved
with ``GET /v1/batches/{id}`` (``status``: validating, in_progress, finalizing,
completed, failed, expired, cancelling, cancelled; ``request_counts``; ``errors``),
cancelled with ``POST /v1/batches/{id}/cancel``. The results are the files
``output_file_id`` (answers) and ``error_file_id`` (failures, expired and cancelled
lines: ``error.code`` ``batch_expired`` / ``batch_cancelled``), read with ``GET
/v1/files/{id}/content``; each line ``{"id", "custom_id", "response": {"status_code",
"request_id", "body"}, "error"}``. Batched requests cost half the live price. Azure
OpenAI runs the same API under its resource's ``/openai`` root (``/openai/files``,
``/openai/batches``, with the ``api-version`` query), each line's ``url`` the endpoint
alone and its ``model`` the deployment.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import msgspec

from ..errors import MalformedChunkError
from ._batch import (
    BatchJob,
    JobState,
    LineResult,
    json_request,
    jsonl,
    multipart,
    origin_path,
    without,
)

if TYPE_CHECKING:
    from .._wire.request import HTTPRequest

__all__ = ["OpenAIBatch"]

_STATES: dict[str, JobState] = {
    "validating": "running", "in_progress": "running", "finalizing": "running",
    "cancelling": "running", "completed": "completed", "failed": "failed",
    "expired": "expired", "cancelled": "cancelled",
}  # fmt: skip


class _Counts(msgspec.Struct):
    total: int = 0
    completed: int = 0
    failed: int = 0


class _Err(msgspec.Struct):
    code: str | None = None
    message: str | None = None


class _Errors(msgspec.Struct):
    data: list[_Err] = []


class _Batch(msgspec.Struct):
    id: str
    status: str
    output_file_id: str | None = None
    error_file_id: str | None = None
    request_counts: _Counts | None = None
    errors: _Errors | None = None


class _Response(msgspec.Struct):
    status_code: int
    body: msgspec.Raw = msgspec.Raw(b"null")


class _Line(msgspec.Struct):
    custom_id: str
    response: _Response | None = None
    error: _Err | None = None


class _File(msgspec.Struct):
    id: str


class _Named(msgspec.Struct):
    id: str
    metadata: dict[str, Any] | None = None


class _Listing(msgspec.Struct):
    data: list[_Named] = []


_batch = msgspec.json.Decoder(_Batch)
_line = msgspec.json.Decoder(_Line)
_file = msgspec.json.Decoder(_File)
_listing = msgspec.json.Decoder(_Listing)


_AZURE_HOSTS = (".openai.azure.com", ".services.ai.azure.com", ".cognitiveservices.azure.com")


def _azure(url: str) -> bool:
    """An Azure OpenAI URL (Azure OpenAI "Batch": ``{endpoint}/openai/files`` and
    ``/openai/batches``, each line's ``url`` the endpoint alone, ``model`` the
    deployment): its host, an ``api-version`` query or a deployment path says so."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return (host.endswith(_AZURE_HOSTS) or "api-version=" in parts.query
            or "/openai/deployments/" in parts.path)  # fmt: skip


def _deployment(url: str) -> str | None:
    path = urlsplit(url).path
    if "/openai/deployments/" not in path:
        return None
    return path.split("/openai/deployments/", 1)[1].split("/", 1)[0] or None


class OpenAIBatch:
    """The batch facet of an OpenAI API whose live endpoint is ``endpoint``."""

    price_factor = 0.5
    max_lines = 50_000
    key_chars = r"[^\x00-\x1f]{1,512}"

    def __init__(self, endpoint: str, as_stream: Callable[[bytes], bytes]) -> None:
        self.endpoint = endpoint
        self._as_stream = as_stream

    def _base(self, sent: HTTPRequest) -> str:
        path = without(sent.url, self.endpoint)
        if _azure(sent.url):
            # Files and batches hang off the resource's /openai (or /openai/v1) root,
            # not off a deployment.
            return path.split("/deployments/", 1)[0]
        return path

    def _line_url(self, sent: HTTPRequest) -> str:
        # Azure's lines and job name the endpoint alone ("/chat/completions").
        return self.endpoint if _azure(sent.url) else self._base(sent) + self.endpoint

    def entry(self, sent: HTTPRequest, key: str) -> dict[str, Any]:
        body = msgspec.json.decode(sent.body)
        body.pop("stream", None)
        body.pop("stream_options", None)
        deployment = _deployment(sent.url)
        if deployment is not None:
            body.setdefault("model", deployment)  # Azure: a batch line names its deployment
        return {"custom_id": key, "method": "POST", "url": self._line_url(sent), "body": body}

    def upload_request(self, sent: HTTPRequest, entries: list[dict[str, Any]], name: str) -> HTTPRequest:  # fmt: skip
        content = b"".join(msgspec.json.encode(e) + b"\n" for e in entries)
        ctype, body = multipart({"purpose": "batch"}, "file", f"{name}.jsonl", content)
        req = json_request(sent, origin_path(sent.url, self._base(sent) + "/files"))
        return msgspec.structs.replace(req, headers={**req.headers, "content-type": ctype}, body=body)  # fmt: skip

    def create_request(
        self, sent: HTTPRequest, entries: list[dict[str, Any]], name: str, uploaded: bytes | None
    ) -> HTTPRequest:
        try:
            file_id = _file.decode(uploaded or b"").id
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise MalformedChunkError(f"the uploaded batch file: {exc}") from None
        body = {"input_file_id": file_id, "endpoint": self._line_url(sent),
                "completion_window": "24h", "metadata": {"modelwire_job": name}}  # fmt: skip
        return json_request(sent, origin_path(sent.url, self._base(sent) + "/batches"), body)

    def status_request(self, sent: HTTPRequest, job_id: str) -> HTTPRequest:
        url = origin_path(sent.url, f"{self._base(sent)}/batches/{job_id}")
        return json_request(sent, url, method="GET")

    def cancel_request(self, sent: HTTPRequest, job_id: str) -> HTTPRequest:
        return json_request(sent, origin_path(sent.url, f"{self._base(sent)}/batches/{job_id}/cancel"), {})  # fmt: skip

    def result_request(self, sent: HTTPRequest, where: str) -> HTTPRequest:
        url = origin_path(sent.url, f"{self._base(sent)}/files/{where}/content")
        return json_request(sent, url, method="GET", accept="*/*")

    def parse_job(self, body: bytes) -> BatchJob:
        try:
            b = _batch.decode(body)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise MalformedChunkError(f"the batch object: {exc}") from None
        c = b.request_counts or _Counts()
        errors = b.errors.data if b.errors is not None else []
        return BatchJob(
            id=b.id, state=_STATES.get(b.status, "running"), provider_state=b.status,
            counts={"total": c.total, "completed": c.completed, "failed": c.failed},
            results=tuple(f for f in (b.output_file_id, b.error_file_id) if f),
            message="; ".join(f"{e.code}: {e.message}" for e in errors) or None,
        )  # fmt: skip

    def parse_results(self, body: bytes, where: str) -> list[LineResult]:
        out = []
        for line in jsonl(body, _line, f"batch results {where}"):
            r, e = line.response, line.error
            if r is not None and r.status_code == 200:
                out.append(LineResult(key=line.custom_id, outcome="succeeded", body=bytes(r.body)))
            elif r is not None:
                out.append(LineResult(key=line.custom_id, outcome="errored",
                                      status=r.status_code, error=bytes(r.body)))  # fmt: skip
            else:
                code = e.code if e is not None else None
                outcome = {"batch_expired": "expired", "batch_cancelled": "cancelled"}.get(code or "", "errored")  # fmt: skip
                err = msgspec.json.encode({"error": {"code": code, "message": e.message if e else None}})  # fmt: skip
                out.append(LineResult(key=line.custom_id, outcome=outcome, error=err))  # type: ignore[arg-type]
        return out

    def as_stream(self, body: bytes) -> bytes:
        return self._as_stream(body)

    def find_request(self, sent: HTTPRequest) -> HTTPRequest:
        # The most recent jobs first ("List batch"); a job is found by its metadata.
        query = "&".join(
            q for q in (urlsplit(sent.url).query, "limit=100") if q
        )  # api-version kept
        url = origin_path(sent.url, f"{self._base(sent)}/batches", query)
        return json_request(sent, url, method="GET")

    def find(self, body: bytes, name: str) -> str | None:
        try:
            listed = _listing.decode(body)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise MalformedChunkError(f"the list of batches: {exc}") from None
        return next((b.id for b in listed.data if (b.metadata or {}).get("modelwire_job") == name), None)  # fmt: skip
