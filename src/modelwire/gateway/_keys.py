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
from collections.abc import Iterable, Mapping

from .._apis._server.request import RequestError
from ._config import KeyConfig

__all__ = ["CREDENTIAL_HEADERS", "authenticate", "hash_key", "key_for", "new_key", "presented_key"]


def hash_key(key: str) -> str:
    """The ``key_sha256`` of ``key``: the sha256 of its UTF-8 bytes, in hex.

    What a ``[keys.NAME]`` table stores, so the configuration never holds a key.

    Args:
        key: The key a client will send.

    Returns:
        64 lower-case hex digits.
    """
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    """A fresh random gateway key (``mwgw-`` and 43 URL-safe characters).

    Give it to the client and put its :func:`hash_key` in the configuration.

    Returns:
        The key (256 random bits).
    """
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


#: The headers a gateway key may come in (``presented_key``).
CREDENTIAL_HEADERS = frozenset({b"authorization", b"x-api-key"})


def key_for(
    keys: Mapping[str, KeyConfig], raw_headers: Iterable[tuple[bytes, bytes]],
    headers: Mapping[str, str],
) -> KeyConfig:  # fmt: skip
    """The gateway key a request presents, from its headers alone (before any body
    byte is read): ``raw_headers`` as received (to see a header sent twice),
    ``headers`` the same as a mapping. A missing, repeated or unknown key is a
    :class:`RequestError` (401; 400 for a repeated header)."""
    # A credential header twice: RFC 9110 §5.3 allows a field line twice only for
    # a list-valued field, which neither is; the dict of headers would keep the
    # last, so a wrong key followed by a right one would get in.
    names = [k.lower() for k, _ in raw_headers if k.lower() in CREDENTIAL_HEADERS]
    if len(names) > len(set(names)):
        twice = next(n for n in names if names.count(n) > 1).decode("latin-1")
        raise RequestError(
            f"the request carries the {twice!r} header more than once: send the "
            "gateway key once", status=400,
        )  # fmt: skip
    try:
        presented = presented_key(headers)
    except ValueError as exc:
        raise RequestError(str(exc), status=401, kind="authentication") from None
    if presented is None:
        raise RequestError(
            "no gateway key: send it as 'Authorization: Bearer KEY' or 'x-api-key: KEY'",
            status=401, kind="authentication",
        )  # fmt: skip
    key = authenticate(keys, presented)
    if key is None:
        raise RequestError("the gateway key is not valid", status=401, kind="authentication")
    return key
