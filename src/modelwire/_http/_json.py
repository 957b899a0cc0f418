"""One non-streaming JSON request and its answer (``mw.count_tokens``), with the
stream's authorization, deadline and error mapping (``modelwire._http``)."""

from __future__ import annotations

import asyncio

import httpx

from .._wire.request import HTTPRequest, Timeout
from ..errors import RequestTimeoutError
from ._auth import authorize_async, authorize_sync
from ._base import DEADLINE_BEFORE, check_client, map_exc, ssl_context

__all__ = ["post_json_async", "post_json_sync"]


#: The most of a JSON answer (a token count) that is read.
_JSON_LIMIT = 1 << 20


def _json_timeout(timeout: Timeout) -> httpx.Timeout:
    return httpx.Timeout(connect=timeout.connect, read=timeout.idle, write=timeout.connect,
                         pool=timeout.connect)  # fmt: skip


async def post_json_async(
    request: HTTPRequest, timeout: Timeout, client: httpx.AsyncClient | None
) -> tuple[int, httpx.Headers, bytes]:
    """Send one non-streaming JSON request (``mw.count_tokens``): status, headers and
    body (at most 1 MiB), or the typed transport error raised; ``timeout.total`` bounds
    it. Authorized as a stream request is (``modelwire._http._auth``)."""
    if client is not None:
        check_client(client, sync=False)
    request = await authorize_async(request)
    own = client is None
    c = client or httpx.AsyncClient(verify=ssl_context())
    try:
        async with asyncio.timeout(timeout.total):
            r = await c.post(request.url, headers=request.headers, content=request.body,
                             timeout=_json_timeout(timeout))  # fmt: skip
            return r.status_code, r.headers, r.content[:_JSON_LIMIT]
    except TimeoutError:
        raise RequestTimeoutError(DEADLINE_BEFORE) from None
    except httpx.HTTPError as exc:
        raise map_exc(exc, request.secrets, started=False, url=request.url) from None
    finally:
        if own:
            await c.aclose()


def post_json_sync(
    request: HTTPRequest, timeout: Timeout, client: httpx.Client | None
) -> tuple[int, httpx.Headers, bytes]:
    """The synchronous twin of :func:`post_json_async` (the total bounds each phase)."""
    if client is not None:
        check_client(client, sync=True)
    request = authorize_sync(request)
    own = client is None
    c = client or httpx.Client(verify=ssl_context())
    phases = _json_timeout(timeout)
    if timeout.total is not None:
        cut = {k: min(v, timeout.total) if v is not None else timeout.total
               for k, v in phases.as_dict().items()}  # fmt: skip
        phases = httpx.Timeout(**cut)
    try:
        r = c.post(request.url, headers=request.headers, content=request.body, timeout=phases)
        return r.status_code, r.headers, r.content[:_JSON_LIMIT]
    except httpx.HTTPError as exc:
        raise map_exc(exc, request.secrets, started=False, url=request.url) from None
    finally:
        if own:
            c.close()
