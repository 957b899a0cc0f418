"""The request-time credential step (DESIGN §5), without httpx.

Pure of any transport: a provider's :class:`~modelwire._wire.request.RequestAuthorizer` adds
its headers just before the request is sent (the ``Authorize`` step of
:class:`modelwire._call.Call`); the async and sync twins share every decision
(:func:`_authorized`, :func:`_auth_error`) and differ only in waiting.
:mod:`modelwire._http` re-exports :func:`authorize_async` and :func:`authorize_sync`.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from .._providers._status import origin
from .._redact import redact
from .._wire.request import HTTPRequest
from ..errors import AuthenticationError, ModelwireError, StreamError

__all__ = ["authorize_async", "authorize_sync"]


class _BadAuthorizer(Exception):
    """The authorizer broke its contract (see options.RequestAuthorizer)."""


def _authorized(request: HTTPRequest, added: object) -> HTTPRequest:
    # The authorizer's headers replace any of the same name (any case).
    headers, secrets = added if isinstance(added, tuple) and len(added) == 2 else (None, None)
    if not (
        isinstance(headers, Mapping)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())
        and isinstance(secrets, tuple | list)
        and all(isinstance(s, str) for s in secrets)
    ):
        raise _BadAuthorizer("the provider's authorizer returned no (headers, secrets)")
    out = {k: v for k, v in request.headers.items() if k.lower() not in
           {h.lower() for h in headers}}  # fmt: skip
    out.update(headers)
    return msgspec.structs.replace(
        request,
        headers=out,
        secrets=tuple(dict.fromkeys((*request.secrets, *secrets))),
        authorizer=None,
    )


def _auth_error(exc: Exception, request: HTTPRequest) -> StreamError:
    # Getting credentials is I/O inside the stream (a token endpoint, the AWS
    # credential chain): its failure ends the stream typed, never raises out of it.
    if isinstance(exc, StreamError):
        return exc.redacted(request.secrets)
    if isinstance(exc, ModelwireError):
        what = exc.message
    elif isinstance(exc, _BadAuthorizer):
        what = str(exc)
    else:
        what = f"{type(exc).__name__}: {exc}"
    return AuthenticationError(
        redact(f"could not get credentials for {origin(request.url)}: {what}", request.secrets)
    )


async def authorize_async(request: HTTPRequest) -> HTTPRequest:
    """``request`` with the credentials its provider's authorizer adds (no-op without
    one); a failure is an :class:`~modelwire.errors.AuthenticationError`."""
    if request.authorizer is None:
        return request
    try:
        added = await request.authorizer.aauthorize(
            "POST", request.url, dict(request.headers), request.body
        )
        return _authorized(request, added)
    except Exception as exc:
        raise _auth_error(exc, request) from None


def authorize_sync(request: HTTPRequest) -> HTTPRequest:
    """The synchronous twin of :func:`authorize_async` (same decisions)."""
    if request.authorizer is None:
        return request
    try:
        added = request.authorizer.authorize(
            "POST", request.url, dict(request.headers), request.body
        )
        return _authorized(request, added)
    except Exception as exc:
        raise _auth_error(exc, request) from None
