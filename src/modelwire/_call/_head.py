"""What a response's head says before its body is read: whether it is the stream the
request asked for (its content type against the request's ``Accept``), and the error
a page sent instead of it is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .._providers._status import origin, status_error
from .._redact import head, redact
from ..errors import ProviderError, ProviderStreamError

if TYPE_CHECKING:
    from .._wire.request import HTTPRequest
    from ._intents import Head

__all__ = ["header_items", "http_status_error", "unexpected_type", "wrong_type_error"]

#: How much of a non-event-stream 200 body its error quotes.
_EXCERPT_CHARS = 200


def header_items(headers: Mapping[str, str]) -> list[tuple[str, str]]:
    multi = getattr(headers, "multi_items", None)  # httpx.Headers keeps repeated names
    return list(multi()) if callable(multi) else list(headers.items())


def _media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def _accept(request: HTTPRequest) -> str:
    return next((v for k, v in request.headers.items() if k.lower() == "accept"), "")


def unexpected_type(request: HTTPRequest, head: Head) -> str | None:
    """The response's content type when it is not the one the request asked for
    (``Accept: text/event-stream`` for every wire API): an HTML or JSON page from
    a proxy or gateway, sent with ``200``, is not the stream."""
    wanted = _media_type(_accept(request).split(",", 1)[0])
    got = head.headers.get("content-type")
    if not wanted or "*" in wanted or got is None:
        return None
    return None if _media_type(got) == wanted else got


def wrong_type_error(
    request: HTTPRequest, head_: Head, content_type: str, body: bytes
) -> ProviderStreamError:
    # Redacted before the cut (redact.head), so the cut never leaves a piece of a key.
    excerpt = head(
        " ".join(body.decode("utf-8", "replace").split()), _EXCERPT_CHARS, request.secrets
    )
    message = (
        f"HTTP {head_.status} with content type {content_type!r} instead of "
        f"{_media_type(_accept(request))!r}: {origin(request.url)} answered with a page, "
        f"not the stream (a proxy, gateway or wrong base_url?); the body begins: "
        f"{excerpt or '(empty)'!r}"
    )
    return ProviderStreamError(redact(message, request.secrets), status=head_.status)


def http_status_error(
    request: HTTPRequest, head_: Head, body: bytes, hint: str | None = None
) -> ProviderError:
    """The typed error for a response's error status: the provider's message (an HTML
    page summarized), the request's method and URL, and ``hint`` (what the caller
    knows about a 404: :class:`~modelwire._call._flow.Leg`'s ``not_found_hint``)."""
    return status_error(
        head_.status, body, head_.headers, request.secrets, method=request.method, url=request.url,
        hint=hint,
    )  # fmt: skip
