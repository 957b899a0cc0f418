"""Values placed into a request URL's path: each one percent-encoded as exactly one
segment (RFC 3986 §3.3), and no request URL with a ``.`` or ``..`` segment.

RFC 3986 §5.2.4 removes dot segments (httpx does, before sending), so a model id
or deployment of ``..`` would otherwise move the request to another endpoint of
the same host. Pure; used by the wire APIs and the provider rules alike.
"""

from __future__ import annotations

import functools
from urllib.parse import quote, unquote, urlsplit

from .errors import ConfigurationError

__all__ = ["check_url_path", "path_segment"]

_DOT_SEGMENTS = (".", "..")


def path_segment(value: str, source: str, *, safe: str = "") -> str:
    """``value`` as exactly one URL path segment: every character but the unreserved
    ones (and ``safe``) percent-encoded as UTF-8, so ``/``, ``?``, ``#``, ``%``,
    spaces and non-ASCII stay data. ``.`` and ``..`` (which no encoding keeps from
    being navigation) are a :class:`ConfigurationError` naming ``source``."""
    if not isinstance(value, str) or not value:
        raise ConfigurationError(f"{source} must be a non-empty string (it is a URL path segment)")
    if value in _DOT_SEGMENTS:
        raise ConfigurationError(
            f"{source} is {value!r}, which in a URL path means another path "
            "(RFC 3986 §5.2.4); give the real name"
        )
    return quote(value, safe=safe)


def check_url_path(url: str, source: str) -> None:
    """Refuse a request URL whose path holds a ``.`` or ``..`` segment (plain or
    percent-encoded, which RFC 3986 §6.2.2.2 makes equivalent): the client would
    remove it, or the server may, and send the request elsewhere. The net under
    every wire API and provider, including those registered at run time."""
    found = _dot_segment(url)
    if found is not None:
        path, segment = found
        raise ConfigurationError(
            f"the request URL path {path!r} has a {segment!r} segment, which would "
            f"send the request to another path; check {source}"
        )


@functools.lru_cache(maxsize=256)
def _dot_segment(url: str) -> tuple[str, str] | None:
    """``(path, segment)`` of the first dot segment in ``url``'s path, else ``None``
    (cached: the same few URLs are checked on every request)."""
    path = urlsplit(url).path
    for segment in path.split("/"):
        if unquote(segment) in _DOT_SEGMENTS:
            return path, segment
    return None
