"""Gateway keys: what a client sends, checked against the sha256 in the config.

A client authenticates as the OpenAI and Anthropic SDKs do (``Authorization:
Bearer KEY`` or ``x-api-key: KEY``). The gateway hashes what it got and compares the
digest with every configured ``key_sha256`` in constant time (:func:`hmac.compare_digest`,
no early exit), so neither the answer's timing nor any stored value reveals a key.
A plain sha256 is enough for keys the gateway generates (:func:`new_key`: 256 random
bits); a slow password hash protects guessable passwords, which these are not.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping

from ._config import KeyConfig

__all__ = ["authenticate", "hash_key", "new_key", "presented_key"]


def hash_key(key: str) -> str:
    """The ``key_sha256`` of ``key``: the sha256 of its UTF-8 bytes, in hex."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    """A fresh random gateway key (``mwgw-`` and 43 URL-safe characters)."""
    return "mwgw-" + secrets.token_urlsafe(32)


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The key a request carries (``Authorization: Bearer`` or ``x-api-key``;
    spaces around it ignored); ``None`` when it has none. Both headers with different
    keys is a :class:`ValueError`: which one to check would be a guess, and a
    client's proxy may have added one."""
    bearer = None
    auth = headers.get("authorization")
    if auth is not None:
        scheme, _, token = auth.strip().partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            bearer = token.strip()
    key = headers.get("x-api-key")
    key = key.strip() if key is not None and key.strip() else None
    if (
        bearer is not None
        and key is not None
        and not hmac.compare_digest(
            bearer.encode("utf-8", "surrogateescape"), key.encode("utf-8", "surrogateescape")
        )
    ):
        raise ValueError(
            "the request carries two different gateway keys (Authorization: Bearer and "
            "x-api-key): send one"
        )
    return bearer if bearer is not None else key


def authenticate(keys: Mapping[str, KeyConfig], presented: str) -> KeyConfig | None:
    """The configured key whose sha256 matches ``presented`` (``None``: no match)."""
    digest = hash_key(presented).encode("ascii")
    found: KeyConfig | None = None
    for key in keys.values():
        # Every key compared (no early exit): the time does not depend on which matched.
        if hmac.compare_digest(digest, key.key_sha256.encode("ascii")):
            found = key
    return found
