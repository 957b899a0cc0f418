"""HTTP error statuses → typed :mod:`modelwire.errors` (DESIGN §5), without httpx.

Pure — status, body bytes and headers in, one :class:`~modelwire.errors.ProviderError`
out, carrying the provider's message, error code, request id and ``Retry-After``;
which class, and whether to retry, is :mod:`modelwire._providers._classify`'s decision.
:func:`origin` is what every connect or credential error names.
:mod:`modelwire._http` re-exports :func:`status_error` and :func:`origin`.
"""

from __future__ import annotations

import email.utils
import html
import math
import re
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import msgspec

from .._redact import display_url, head, redact, redact_bytes
from ..errors import ContentFilterError, ProviderError, RateLimitError
from ._classify import content_filter_error, is_retryable, status_class

__all__ = [
    "MAX_RETRY_AFTER",
    "REQUEST_ID_HEADERS",
    "origin",
    "parse_retry_after",
    "request_id",
    "status_error",
]


#: ``Retry-After`` is honoured up to this many seconds; longer ends the call (DESIGN §2a).
MAX_RETRY_AFTER = 60.0


def _seconds(text: str, scale: float = 1.0) -> float | None:
    try:
        value = float(text) * scale
    except ValueError:
        return None
    # float() accepts "nan", "inf" and "-1": none of them is a wait.
    return value if math.isfinite(value) and value >= 0 else None


def parse_retry_after(
    retry_after: str | None, retry_after_ms: str | None = None, *, now: float | None = None
) -> float | None:
    """The wait in seconds a response asked for, or ``None`` when it asked for none
    that makes sense.

    ``retry-after-ms`` (OpenAI, Anthropic) wins when valid; ``Retry-After`` is
    delay-seconds or an HTTP-date (RFC 9110 §10.2.3), a date in the past meaning 0.
    """
    if retry_after_ms:
        ms = _seconds(retry_after_ms.strip(), 1e-3)
        if ms is not None:
            return ms
    if not retry_after:
        return None
    value = retry_after.strip()
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    try:
        stamp = when.timestamp()
    except (OverflowError, OSError, ValueError):
        return None
    return max(stamp - (time.time() if now is None else now), 0.0)


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
    request_id: Any = None  # Anthropic: the request id, also in the body


def _parse(body: bytes) -> _ErrorBody | None:
    text = body.lstrip()
    try:
        if text.startswith(b"["):
            # Google APIs (Vertex AI) sometimes wrap the error in an array: its first.
            return (msgspec.json.decode(body, type=list[_ErrorBody]) or [_ErrorBody()])[0]
        return msgspec.json.decode(body, type=_ErrorBody)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def _first_text(*values: object) -> str | None:
    return next((str(v) for v in values if isinstance(v, str) and v), None)


_HTML_START = re.compile(rb"\s*(<!--.*?-->\s*)*<(!doctype\s+html|html)[\s>]", re.I | re.S)
_HTML_NAME = re.compile(r"<title[^>]*>(.*?)</title\s*>|<h[1-6][^>]*>(.*?)</h[1-6]\s*>", re.I | re.S)
# Script and style bodies and comments go whole; then every tag.
_HTML_TAG = re.compile(r"<(script|style)\b[^>]*>.*?</\1\s*>|<!--.*?-->|<[^>]*>", re.I | re.S)
#: How much of an HTML page's title (or of its text, when it has none) an error shows.
_HTML_CHARS = 200


def _is_html(body: bytes, headers: Mapping[str, str]) -> bool:
    kind = (_header(headers, "content-type") or "").split(";", 1)[0].strip().lower()
    return kind in ("text/html", "application/xhtml+xml") or bool(_HTML_START.match(body))


def _html_summary(text: str) -> str:
    """What an HTML error page (a proxy's, a web server's, a wrong base URL's) says,
    without its markup: its ``<title>``, else its first heading, else its text."""
    found = _HTML_NAME.search(text)
    inner = next(g for g in found.groups() if g is not None) if found is not None else text
    plain = " ".join(html.unescape(_HTML_TAG.sub(" ", inner)).split())
    if not plain and found is not None:
        plain = " ".join(html.unescape(_HTML_TAG.sub(" ", text)).split())
    return f"{head(plain, _HTML_CHARS) or '(an empty page)'} (an HTML page)"


def _error_text(
    body: bytes, parsed: _ErrorBody | None, headers: Mapping[str, str] | None = None
) -> tuple[str, str | None, str | None]:
    """The provider's error message, its type and its code from an error body (OpenAI,
    Anthropic and Gemini all nest ``{"error": {"message", "type"|"status", "code"}}``).
    The code is the most specific of ``code``, ``type`` and ``status`` that is text
    (Gemini's ``code`` is the HTTP status, a number). An HTML page is summarized."""
    text = body.decode("utf-8", "replace").strip()
    if parsed is None:
        if _is_html(body, headers or {}):
            return _html_summary(text), None, None
        return (head(text, 500) or "(empty body)"), None, None
    err = parsed.error
    if isinstance(err, dict):
        msg = err.get("message")
        typ = err.get("type") or err.get("status") or err.get("code")
        code = _first_text(err.get("code"), err.get("type"), err.get("status"))
        return (str(msg) if msg else head(text, 500)), (str(typ) if typ else None), code
    if isinstance(err, str):
        return err, None, None
    if parsed.message:
        return parsed.message, None, None
    if isinstance(parsed.detail, str):
        return parsed.detail, None, None
    return head(text, 500) or "(empty body)", None, None


#: Where providers put the id of a request (OpenAI ``x-request-id``, Anthropic
#: ``request-id``, AWS ``x-amzn-requestid``, Google ``x-goog-request-id``, Azure
#: ``apim-request-id``), first found wins.
REQUEST_ID_HEADERS = (
    "x-request-id",
    "request-id",
    "x-amzn-requestid",
    "x-amz-request-id",
    "x-goog-request-id",
    "apim-request-id",
    "x-ms-request-id",
)


_ID_RANK = {name: rank for rank, name in enumerate(REQUEST_ID_HEADERS)}


def request_id(headers: Mapping[str, str], body: _ErrorBody | None = None) -> str | None:
    """The provider's request id from the response headers, else the error body."""
    # One pass over the headers (read on every response), the first-ranked name wins.
    best, found = len(REQUEST_ID_HEADERS), None
    for k, v in headers.items():
        rank = _ID_RANK.get(k.lower(), best)
        if rank < best and v:
            best, found = rank, v
    if found is not None:
        return found
    if body is None:
        return None
    err = body.error if isinstance(body.error, dict) else {}
    return _first_text(body.request_id, err.get("request_id"))


def status_error(
    status: int,
    body: bytes,
    headers: Mapping[str, str],
    secrets: tuple[str, ...],
    *,
    method: str = "POST",
    url: str | None = None,
    hint: str | None = None,
) -> ProviderError:
    """The typed error for an HTTP error status, message taken from the body.

    ``headers`` is any mapping of the response headers (``httpx.Headers`` or a
    plain dict), read in any case: ``Retry-After`` / ``retry-after-ms`` and the
    request id (:data:`REQUEST_ID_HEADERS`). Given the request's ``url``, the
    message names ``method`` and the URL (:func:`~modelwire._redact.display_url`:
    no secret, userinfo or query value); ``hint`` is appended as it is."""
    body = redact_bytes(body, secrets)  # before any cut (modelwire._redact)
    parsed = _parse(body)
    message, typ, code = _error_text(body, parsed, headers)
    message = redact(message, secrets)
    where = f" from {method} {display_url(url, secrets)}" if url else ""
    detail = f"HTTP {status}{where}: {message}" + (f" ({typ})" if typ else "")
    filtered = content_filter_error(parsed.error) if parsed is not None else None
    text = body.decode("utf-8", "replace")
    cls = status_class(status, message, typ, text, filtered=filtered is not None)
    retryable = is_retryable(cls.kind, status, code)
    if cls is RateLimitError and not retryable:
        detail += " — the account is out of quota; retrying will not help"
    elif cls is ContentFilterError and filtered:
        detail += f" — {filtered}"
    if hint:
        detail += f" — {redact(hint, secrets)}"
    rid = request_id(headers, parsed)
    return cls(
        detail,
        status=status,
        retry_after=_retry_after(headers),
        code=redact(code, secrets) if code else None,
        request_id=redact(rid, secrets) if rid else None,
        retryable=retryable,
    )
