"""Errors in the Chat Completions shape: ``{"error": {message, type, param, code}}``.

References: https://platform.openai.com/docs/guides/error-codes (statuses) and the
``error`` object of the API reference; the openai SDK maps the status to its
exception class (``BadRequestError`` 400, ``AuthenticationError`` 401,
``PermissionDeniedError`` 403, ``NotFoundError`` 404, ``RateLimitError`` 429,
``InternalServerError`` >= 500) and reads ``error.message``/``code``/``param``.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from ...errors import StreamError
from .._server.request import RequestError

__all__ = ["error", "error_object"]

_SERVER = (502, "server_error", None)
#: modelwire error kind → (status, error.type, default error.code).
_KINDS: dict[str, tuple[int, str, str | None]] = {
    "invalid_request": (400, "invalid_request_error", None),
    "configuration": (400, "invalid_request_error", None),
    "context_overflow": (400, "invalid_request_error", "context_length_exceeded"),
    "content_filter": (400, "invalid_request_error", "content_filter"),
    "authentication": (401, "authentication_error", "invalid_api_key"),
    "permission": (403, "permission_error", None),
    "not_found": (404, "not_found_error", "model_not_found"),
    "rate_limit": (429, "rate_limit_error", "rate_limit_exceeded"),
    "overloaded": (503, "service_unavailable_error", "server_is_overloaded"),
    "timeout": (504, "server_error", "timeout"),
    "missing_api_key": (500, "server_error", "gateway_configuration"),
}
_encode = msgspec.json.Encoder().encode


def error_object(error: RequestError | BaseException) -> tuple[int, dict[str, Any], float | None]:
    """Status, the ``error`` object and the retry-after seconds of ``error``."""
    if isinstance(error, RequestError):
        _, etype, code = _KINDS.get(error.kind, _SERVER)
        body = {"message": error.message, "type": etype, "param": error.param, "code": code}
        # The gateway's own limiter may say how long to wait (an attribute it sets).
        wait = getattr(error, "retry_after", None)
        return error.status, body, wait if isinstance(wait, int | float) else None
    kind = getattr(error, "kind", None)
    if not isinstance(error, StreamError) and kind != "configuration":
        # Not a modelwire error: a bug of the gateway; its text may hold anything.
        return 500, {"message": f"internal gateway error ({type(error).__name__})",
                     "type": "server_error", "param": None, "code": None}, None  # fmt: skip
    status, etype, code = _KINDS.get(str(kind), _SERVER)
    own = getattr(error, "code", None)
    body = {"message": str(error), "type": etype, "param": None, "code": own or code or kind}
    wait = getattr(error, "retry_after", None)
    return status, body, wait if kind == "rate_limit" else None


def error(error: RequestError | BaseException) -> tuple[int, dict[str, str], bytes]:
    status, body, wait = error_object(error)
    headers = {"retry-after": str(max(1, math.ceil(wait)))} if wait is not None else {}
    return status, headers, _encode({"error": body})
