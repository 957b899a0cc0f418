"""The async driver's transport over ``httpx.AsyncClient`` (``transport="httpx"``,
or a caller's ``httpx.AsyncClient``): the waiting half of
:class:`modelwire._http.AsyncDriver`, one response at a time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import httpx

from .._call import Drain, Failure, Head, Read, ReadError, Send
from ..errors import RequestTimeoutError
from ._base import (
    DEADLINE_BEFORE,
    DEADLINE_READING,
    phases,
    read_failure,
    send_failure,
)
from ._deadline import ReadDeadline

if TYPE_CHECKING:
    import ssl
    from collections.abc import Callable

__all__ = ["HttpxAsyncTransport"]


class HttpxAsyncTransport:
    """:class:`~modelwire._http.AsyncTransport` over ``httpx.AsyncClient``."""

    __slots__ = ("_client", "_deadline", "_it", "_own", "_response", "_secrets", "_ssl")

    def __init__(self, client: httpx.AsyncClient | None, ssl: Callable[[], ssl.SSLContext]) -> None:
        self._client = client
        self._ssl = ssl  # the shared TLS context, for a client of its own
        self._own: httpx.AsyncClient | None = None
        self._response: httpx.Response | None = None
        # Decoded bytes (``aiter_bytes``), not the raw body: providers may send the
        # event stream with ``Content-Encoding: gzip`` (Anthropic does). One iterator
        # serves reading and draining: httpx refuses a second one.
        self._it: AsyncIterator[bytes] | None = None
        self._secrets: tuple[str, ...] = ()
        self._deadline = ReadDeadline()  # the total deadline over the body's reads

    async def send(self, i: Send) -> Head | Failure:
        if self._response is not None:
            # Another attempt after a failure the Call read from the body (an in-band
            # error, a fallback to the next model): that response is done with.
            response, self._response = self._response, None
            await response.aclose()
        self._deadline.cancel()
        client = self._client
        if client is None:
            client = self._client = self._own = httpx.AsyncClient(
                timeout=phases(i), verify=self._ssl()
            )
        r = i.request
        self._secrets = r.secrets
        req = client.build_request(
            r.method, r.url, headers=r.headers, content=r.body or None, timeout=phases(i)
        )
        try:
            async with asyncio.timeout(i.remaining):
                response = await client.send(req, stream=True)
        except TimeoutError:
            return Failure(RequestTimeoutError(DEADLINE_BEFORE), deadline=True)
        except httpx.HTTPError as exc:
            return send_failure(exc, r)
        self._response, self._it = response, None
        return Head(response.status_code, response.headers)

    async def read_error(self, i: ReadError) -> bytes:
        response = self._response
        assert response is not None
        buf = bytearray()
        try:
            async with asyncio.timeout(i.remaining):
                async for chunk in response.aiter_bytes():
                    buf += chunk
                    if len(buf) >= i.limit:
                        break
        except TimeoutError:
            buf.clear()
        except httpx.HTTPError:
            pass
        finally:
            self._response = None
            await response.aclose()
        return bytes(buf[: i.limit])

    def _iter(self) -> AsyncIterator[bytes]:
        if self._it is None:
            assert self._response is not None
            self._it = self._response.aiter_bytes()
        return self._it

    async def read(self, i: Read) -> bytes | Failure | None:
        it = self._it or self._iter()
        if i.remaining is None:
            try:
                return await anext(it)
            except StopAsyncIteration:
                return None
            except httpx.HTTPError as exc:
                return read_failure(exc, self._secrets)
        # The total deadline: one timer for the whole body (``ReadDeadline``).
        deadline = self._deadline
        if not deadline.enter(i.remaining):
            return Failure(RequestTimeoutError(DEADLINE_READING), deadline=True)
        try:
            return await anext(it)
        except StopAsyncIteration:
            return None
        except httpx.HTTPError as exc:
            return read_failure(exc, self._secrets)
        except asyncio.CancelledError:
            if deadline.fired():
                return Failure(RequestTimeoutError(DEADLINE_READING), deadline=True)
            raise
        finally:
            deadline.exit()

    async def drain(self, i: Drain) -> None:
        n = 0
        try:
            async with asyncio.timeout(i.seconds):
                async for chunk in self._iter():
                    n += len(chunk)
                    if n > i.max_bytes:
                        break
        except (TimeoutError, httpx.HTTPError, RuntimeError):
            pass

    async def close(self) -> None:
        self._deadline.cancel()
        response, self._response = self._response, None
        own, self._own = self._own, None
        try:
            if response is not None:
                await response.aclose()
        finally:
            if own is not None:
                await own.aclose()
