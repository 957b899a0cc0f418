"""HTTP error statuses → typed :mod:`modelwire.errors` (DESIGN §5), without httpx.

Split out of :mod:`modelwire._http` (issue 17: no module over ~600 lines): the
mapping is pure — status, body bytes and headers in, one
:class:`~modelwire.errors.ProviderError` out — so it needs no transport.
:func:`origin` is what every connect or credential error names.
:mod:`modelwire._http` re-exports :func:`status_error` and :func:`origin`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import msgspec

from ._apis._common import content_filter_error, is_context_overflow
from ._redact import head, redact, redact_bytes
from ._retry import parse_retry_after
from .errors import (
    AuthenticationError,
    ContentFilterError,
    ContextOverflowError,
    InvalidRequestError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderError,
    RateLimitError,
    ServerError,
)

__all__ = ["origin", "status_error"]


def _header(headers: Mapping[str, str], name: str) -> str | None:
    # Header names are case-insensitive (RFC 9110 §5.1); httpx.Headers already
    # joins repeated fields with ", " in items(), as its get() does.
    return next((v for k, v in headers.items() if k.lower() == name), None)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    return parse_retry_after(_header(headers, "retry-after"), _header(headers, "retry-after-ms"))


def origin(url: str) -> str:
    """``scheme://host:port`` of ``url``: what a connect error names. Never the path,
    the query string (Gemini may carry ``?key=``) or user:password."""
    try:
        u = urlsplit(url)
        host, port = u.hostname or "", u.port  # .port raises on a bad one
    except (TypeError, ValueError, AttributeError):
        return "(an invalid URL)"
    if ":" in host:
        host = f"[{host}]"
    port = port or {"http": 80, "https": 443}.get(u.scheme)
    return f"{u.scheme}://{host}" + (f":{port}" if port else "")


class _ErrorBody(msgspec.Struct):
    error: Any = None
    message: str | None = None
    detail: Any = None


def _error_text(body: bytes) -> tuple[str, str | None]:
    """The provider's error message and type from an error body (OpenAI,
    Anthropic and Gemini all nest ``{"error": {"message", "type"|"status"}}``)."""
    text = body.decode("utf-8", "replace").strip()
    try:
        if text.startswith("["):
            # Google APIs (Vertex AI) sometimes wrap the error in an array: its first.
            parsed = (msgspec.json.decode(body, type=list[_ErrorBody]) or [_ErrorBody()])[0]
        else:
            parsed = msgspec.json.decode(body, type=_ErrorBody)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return (head(text, 500) or "(empty body)"), None
    err = parsed.error
    if isinstance(err, dict):
        msg = err.get("message")
        typ = err.get("type") or err.get("status") or err.get("code")
        return (str(msg) if msg else head(text, 500)), (str(typ) if typ else None)
    if isinstance(err, str):
        return err, None
    if parsed.message:
        return parsed.message, None
    if isinstance(parsed.detail, str):
        return parsed.detail, None
    return head(text, 500) or "(empty body)", None


def _content_filter(body: bytes) -> str | None:
    try:
        parsed = msgspec.json.decode(body, type=_ErrorBody)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return content_filter_error(parsed.error)


def _is_rate_limit(message: str, typ: str | None) -> bool:
    text = f"{message} {typ or ''}".lower()
    return "rate_limit" in text or "per minute" in text


def _is_bad_key(message: str, body: bytes) -> bool:
    return b"API_KEY_INVALID" in body or "API key not valid" in message


def status_error(
    status: int, body: bytes, headers: Mapping[str, str], secrets: tuple[str, ...]
) -> ProviderError:
    """The typed error for an HTTP error status, message taken from the body.

    ``headers`` is any mapping of the response headers (``httpx.Headers`` or a
    plain dict): only ``Retry-After`` / ``retry-after-ms`` are read, in any case."""
    body = redact_bytes(body, secrets)  # before any cut (modelwire._redact)
    message, typ = _error_text(body)
    message = redact(message, secrets)
    detail = f"HTTP {status}: {message}" + (f" ({typ})" if typ else "")
    retry_after = _retry_after(headers)
    cls: type[ProviderError]
    if status == 401 or (status == 400 and _is_bad_key(message, body)):
        # Gemini answers a bad key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
        cls = AuthenticationError
    elif status == 403:
        cls = PermissionDeniedError
    elif status == 404:
        cls = NotFoundError
    elif status == 429 or (status == 413 and _is_rate_limit(message, typ)):
        # Groq answers a tokens-per-minute limit with 413 "Request too large".
        cls = RateLimitError
        if typ and "quota" in typ.lower():
            detail += " — the account is out of quota; retrying will not help"
    elif status in (400, 413, 422) and (filtered := _content_filter(body)):
        # Azure OpenAI's filtered prompt: 400, code content_filter, the categories in
        # innererror.content_filter_result — a refusal, not a malformed request.
        cls = ContentFilterError
        detail += f" — {filtered}"
    elif status in (400, 413, 422):
        cls = ContextOverflowError if is_context_overflow(message) else InvalidRequestError
    elif status in (503, 529) or (typ and "overloaded" in typ.lower()):
        cls = OverloadedError
    elif status >= 500:
        cls = ServerError
    else:
        cls = InvalidRequestError
    return cls(detail, status=status, retry_after=retry_after)
