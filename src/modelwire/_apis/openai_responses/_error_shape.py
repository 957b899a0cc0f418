"""Errors in the OpenAI shape: ``{"error": {"message", "type", "param", "code"}}``
with the HTTP status the API uses (https://platform.openai.com/docs/guides/error-codes),
and the ``error`` object of a ``response.failed`` event (API reference, "The response
object": ``error.code``, ``error.message``).

Statuses by modelwire error kind: 400 for a bad request (also ``context_overflow``,
code ``context_length_exceeded``, and ``content_filter``), 401, 403, 404, 429 with
``retry-after``, 503 when the backend is overloaded, 504 for a timeout and 502 for
anything else that went wrong past the gateway (connect, server, protocol errors).
Messages are modelwire's, already redacted; no header of the backend's is copied.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from ...errors import ErrorInfo, StreamError
from .._server.request import RequestError

__all__ = ["error", "failure"]

_encode = msgspec.json.Encoder().encode

#: kind → (status, error type, code)
_BY_KIND: dict[str, tuple[int, str, str | None]] = {
    "invalid_request": (400, "invalid_request_error", None),
    "context_overflow": (400, "invalid_request_error", "context_length_exceeded"),
    "content_filter": (400, "invalid_request_error", "content_filter"),
    "authentication": (401, "authentication_error", "invalid_api_key"),
    "permission": (403, "permission_error", "permission_denied"),
    "not_found": (404, "invalid_request_error", "model_not_found"),
    "rate_limit": (429, "rate_limit_error", "rate_limit_exceeded"),
    "overloaded": (503, "service_unavailable_error", "server_is_overloaded"),
    "timeout": (504, "server_error", "timeout"),
}
_SERVER = (502, "server_error", "server_error")

#: kind → ``response.error.code`` in a failed stream (the codes modelwire's own
#: decoder maps back to the same kind, ``openai_responses._errors``).
_FAILED_CODES = {
    "rate_limit": "rate_limit_exceeded",
    "overloaded": "server_is_overloaded",
    "context_overflow": "context_length_exceeded",
    "invalid_request": "invalid_prompt",
    "content_filter": "content_policy_violation",
    "authentication": "invalid_api_key",
    "permission": "permission_denied",
    "not_found": "model_not_found",
}


def error(exc: RequestError | BaseException) -> tuple[int, dict[str, str], bytes]:
    """Status, extra headers and body of an error answer."""
    headers: dict[str, str] = {}
    param: str | None = None
    if isinstance(exc, RequestError):
        # The gateway's own refusal: its status stands; the type and code follow the kind
        # (a 5xx of the gateway's, such as a missing backend key, is a server_error).
        default = (exc.status, "server_error" if exc.status >= 500 else "invalid_request_error",
                   None)  # fmt: skip
        _, type_, code = _BY_KIND.get(exc.kind, default)
        status, message, param = exc.status, exc.message, exc.param
        if exc.kind == "invalid_request":
            code = None
    elif isinstance(exc, StreamError):
        status, type_, code = _BY_KIND.get(exc.kind, _SERVER)
        message = str(exc)
        if exc.kind == "rate_limit" and exc.code:
            code = exc.code  # e.g. insufficient_quota: the client must not retry
        if exc.retry_after is not None:
            headers["retry-after"] = str(max(1, math.ceil(exc.retry_after)))
    else:
        # Not one of modelwire's errors: its text may hold anything, so only its class.
        status, type_, code = 500, "server_error", "server_error"
        message = f"the gateway failed ({type(exc).__name__})"
    body = {"error": {"message": message, "type": type_, "param": param, "code": code}}
    return status, headers, _encode(body)


def failure(info: ErrorInfo | None) -> dict[str, Any]:
    """The ``error`` of a failed Response."""
    if info is None:
        return {"code": "server_error", "message": "the response failed"}
    return {"code": _FAILED_CODES.get(info.kind, "server_error"), "message": info.message}
