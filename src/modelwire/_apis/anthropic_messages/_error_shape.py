"""modelwire errors as Anthropic Messages errors.

The API's errors (https://docs.anthropic.com/en/api/errors): an HTTP status and
``{"type": "error", "error": {"type": ..., "message": ...}}``; the same object is
the payload of the stream's ``error`` event (streaming docs, "Error events").
"""

from __future__ import annotations

import math

import msgspec

from ...errors import StreamError
from .._server.reply import ErrorReply
from .._server.request import RequestError

__all__ = ["error_body", "error_response", "error_type", "in_stream_error"]

#: modelwire error kind → (status, Anthropic error type). Every other kind (the
#: backend's 5xx, a broken or malformed stream, a refused connection) is the API's
#: server error, as a gateway reports a failed upstream: 502 ``api_error``.
_KINDS: dict[str, tuple[int, str]] = {
    "invalid_request": (400, "invalid_request_error"),
    "context_overflow": (400, "invalid_request_error"),
    "configuration": (400, "invalid_request_error"),
    "content_filter": (400, "invalid_request_error"),
    "authentication": (401, "authentication_error"),
    "missing_api_key": (401, "authentication_error"),
    "permission": (403, "permission_error"),
    "not_found": (404, "not_found_error"),
    "rate_limit": (429, "rate_limit_error"),
    "overloaded": (529, "overloaded_error"),
    "timeout": (504, "timeout_error"),
}
_SERVER = (502, "api_error")
#: A status a RequestError names → its type, when its kind is not in _KINDS.
_STATUS_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                 402: "billing_error", 403: "permission_error", 404: "not_found_error",
                 413: "request_too_large", 429: "rate_limit_error",
                 504: "timeout_error", 529: "overloaded_error"}  # fmt: skip
_encode = msgspec.json.encode


def error_type(kind: str) -> str:
    """The Anthropic error type for a modelwire error kind."""
    return _KINDS.get(kind, _SERVER)[1]


def _body(type_: str, message: str) -> bytes:
    return _encode({"type": "error", "error": {"type": type_, "message": message}})


def error_response(error: RequestError | BaseException) -> tuple[int, dict[str, str], bytes]:
    """Status, headers (``retry-after`` for a rate limit) and body of an error.

    Messages come from modelwire's errors, which are redacted already; an
    unexpected exception says only its class (its text may hold anything)."""
    headers: dict[str, str] = {}
    if isinstance(error, RequestError):
        status = error.status
        type_ = _KINDS[error.kind][1] if error.kind in _KINDS else _STATUS_TYPES.get(
            status, "api_error"
        )  # fmt: skip
        if status == 413:
            type_ = "request_too_large"  # its own type, whatever the kind (errors doc)
        message = error.message
    elif isinstance(error, StreamError):
        status, type_ = _KINDS.get(error.kind, _SERVER)
        message = error.message
    else:
        status, type_ = 500, "api_error"
        message = f"the gateway failed ({type(error).__name__})"
    retry_after = getattr(error, "retry_after", None)
    if status == 429 and isinstance(retry_after, int | float) and retry_after >= 0:
        headers["retry-after"] = str(math.ceil(retry_after))
    return status, headers, _body(type_, message)


def in_stream_error(kind: str, message: str) -> bytes:
    """The stream's ``error`` event for a failure after the answer began."""
    return b"event: error\ndata: " + _body(error_type(kind), message) + b"\n\n"


def error_body(status: int, message: str, kind: str | None = None) -> ErrorReply:
    """An HTTP error of ``status``: ``{"type": "error", "error": {"type", "message"}}``
    and the ``request-id`` header; ``kind`` the Anthropic error type (``None``: the one
    the status has)."""
    kind = kind or _STATUS_TYPES.get(status, "api_error")
    return ErrorReply(
        body={"type": "error", "error": {"type": kind, "message": message},
              "request_id": "req_mock"},
        headers={"request-id": "req_mock"},
    )  # fmt: skip
