"""The batch facet of a wire API: its provider's batch endpoints, sans-IO.

A provider that runs requests asynchronously at a discount (OpenAI Batch, Anthropic
Message Batches, Gemini batch mode) is offered as ``codec.batching``, a
:class:`BatchFacet`: it turns the live request of one line into an entry of a job,
builds the job's requests (upload, create, retrieve, results, cancel) from a live
request's URL and credentials, reads their answers into :class:`BatchJob` and
:class:`LineResult` values, and gives a successful line's whole JSON answer as the
bytes the API would have streamed (:meth:`BatchFacet.as_stream`), so the result is
decoded by the same pipeline as a live call. The I/O and every decision about
retries, the ledger and the cost live in :mod:`modelwire.batching`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

import msgspec

if TYPE_CHECKING:
    from .._wire.request import HTTPRequest

__all__ = [
    "BatchFacet",
    "BatchJob",
    "JobState",
    "LineResult",
    "Outcome",
    "control_headers",
    "json_request",
    "jsonl",
    "multipart",
    "origin_path",
    "without",
]

#: How a line of a job ended.
Outcome = Literal["succeeded", "errored", "expired", "cancelled"]
#: How a job stands, in modelwire's words (the provider's own is ``BatchJob.provider_state``).
JobState = Literal["running", "completed", "failed", "expired", "cancelled"]


class LineResult(msgspec.Struct, frozen=True, kw_only=True):
    """One line of a job's results.

    ``body`` is the whole JSON answer of a success; an error has the HTTP ``status``
    the request would have got (``None``: no status, e.g. a job-level failure) and
    ``error``, the JSON error body as the provider wrote it."""

    key: str
    outcome: Outcome
    body: bytes | None = None
    status: int | None = None
    error: bytes | None = None


class BatchJob(msgspec.Struct, frozen=True, kw_only=True):
    """What a create or retrieve answer says about a job."""

    id: str
    state: JobState
    provider_state: str
    counts: dict[str, int] = {}
    #: Where the results are (file ids, URLs), each fetched with ``result_request``.
    results: tuple[str, ...] = ()
    #: Results carried in the answer itself (Gemini's inline responses).
    inline: tuple[LineResult, ...] | None = None
    #: Why the job failed as a whole, as the provider says it.
    message: str | None = None


@runtime_checkable
class BatchFacet(Protocol):
    """An API's provider batch endpoints (optional: ``WireCodec.batching``)."""

    #: The share of the live price a batched request costs (the provider's discount).
    price_factor: float
    #: The most lines one job takes.
    max_lines: int
    #: The pattern of a key the provider accepts for a line (``custom_id``…).
    key_chars: str

    def entry(self, sent: HTTPRequest, key: str) -> dict[str, Any]:
        """One line of a job: the live request ``sent`` without streaming."""
        ...

    def upload_request(self, sent: HTTPRequest, entries: list[dict[str, Any]], name: str) -> HTTPRequest | None:  # fmt: skip
        """The request uploading the entries first (``None``: they go in the create)."""
        ...

    def create_request(
        self, sent: HTTPRequest, entries: list[dict[str, Any]], name: str, uploaded: bytes | None
    ) -> HTTPRequest:
        """The request creating the job (``uploaded``: the upload's answer)."""
        ...

    def status_request(self, sent: HTTPRequest, job_id: str) -> HTTPRequest: ...

    def cancel_request(self, sent: HTTPRequest, job_id: str) -> HTTPRequest: ...

    def result_request(self, sent: HTTPRequest, where: str) -> HTTPRequest: ...

    def parse_job(self, body: bytes) -> BatchJob: ...

    def parse_results(self, body: bytes, where: str) -> list[LineResult]: ...

    def as_stream(self, body: bytes) -> bytes:
        """A whole JSON answer as the body the API streams for it."""
        ...

    def find_request(self, sent: HTTPRequest) -> HTTPRequest | None:
        """The request listing the recent jobs, to find one by the name it was created
        with (``None``: the provider keeps no name a job can be found by)."""
        ...

    def find(self, body: bytes, name: str) -> str | None:
        """The id of the job created with ``name`` in a listing (``None``: not there)."""
        ...


# --------------------------------------------------------------------------- helpers

_SKIP = frozenset({"content-type", "content-length", "accept", "accept-encoding"})


def control_headers(sent: HTTPRequest) -> dict[str, str]:
    """The live request's headers (credentials, versions) without those of its body."""
    return {k: v for k, v in sent.headers.items() if k.lower() not in _SKIP}


def origin_path(url: str, path: str, query: str | None = None) -> str:
    """``url`` with its path replaced by ``path`` (its query kept unless ``query``)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query if query is None else query, ""))  # fmt: skip


def without(url: str, suffix: str) -> str:
    """``url``'s path with ``suffix`` (and anything after it) cut off its end."""
    path = urlsplit(url).path
    at = path.rfind(suffix)
    return path[:at] if at >= 0 else path.rstrip("/")


def json_request(
    sent: HTTPRequest,
    url: str,
    body: Any = None,
    method: str = "POST",
    accept: str = "application/json",
) -> HTTPRequest:
    """A JSON request with the live request's credentials (``accept="*/*"`` for a file,
    whatever its media type)."""
    headers = control_headers(sent)
    data = b""
    if body is not None:
        headers["content-type"] = "application/json"
        data = msgspec.json.encode(body)
    headers["accept"] = accept
    return msgspec.structs.replace(sent, url=url, headers=headers, body=data, method=method)


def multipart(fields: dict[str, str], file_field: str, filename: str, content: bytes) -> tuple[str, bytes]:  # fmt: skip
    """``(content type, body)`` of a ``multipart/form-data`` upload (RFC 7578)."""
    boundary = "modelwire-" + os.urandom(12).hex()
    out = bytearray()
    for k, v in fields.items():
        out += f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
    out += (f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; '
            f'filename="{filename}"\r\nContent-Type: application/jsonl\r\n\r\n').encode()  # fmt: skip
    out += content + f"\r\n--{boundary}--\r\n".encode()
    return f"multipart/form-data; boundary={boundary}", bytes(out)


_T = TypeVar("_T")


def jsonl(body: bytes, decoder: msgspec.json.Decoder[_T], what: str) -> Iterator[_T]:
    """Each non-blank line of a JSONL results body, decoded; a line that does not
    decode is a ``MalformedChunkError`` naming ``what`` and its line number."""
    from ..errors import MalformedChunkError

    for n, raw in enumerate(body.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            yield decoder.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise MalformedChunkError(f"{what} line {n}: {exc}") from None
