"""The sync driver's transport over a blocking ``httpx.Client``: the waiting half of
:class:`modelwire._http.SyncDriver`, one response at a time.

A blocked read cannot be cancelled as a task can, so the total deadline, the drain
bound and :meth:`HttpxSyncTransport.abort` all end a read by shutting the socket down
from a timer or another thread (see :meth:`~HttpxSyncTransport.abort`).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import httpx

from .._call import Drain, Failure, Head, Read, ReadError, Send
from ._base import phases, read_failure, send_failure

if TYPE_CHECKING:
    import ssl
    from collections.abc import Callable

__all__ = ["HttpxSyncTransport"]


class HttpxSyncTransport:
    """:class:`~modelwire._http.SyncTransport` over ``httpx.Client``."""

    def __init__(self, client: httpx.Client | None, ssl: Callable[[], ssl.SSLContext]) -> None:
        self._client = client
        self._ssl = ssl  # the shared TLS context, for a client of its own
        self._own: httpx.Client | None = None
        self._response: httpx.Response | None = None
        self._it: Iterator[bytes] | None = None  # see HttpxAsyncTransport
        self._secrets: tuple[str, ...] = ()
        self._timer: threading.Timer | None = None
        self._closed = False
        self._lock = threading.Lock()

    def send(self, i: Send) -> Head | Failure:
        # A blocking send cannot be wrapped in a deadline as a task can: each of its
        # phases (connect, write, waiting for the headers) has a timeout cut to what
        # is left of the total (``Send.connect``/``idle``).
        if self._response is not None:
            with self._lock:  # another attempt: the previous response is done with
                response, self._response = self._response, None
            response.close()
        client = self._client
        if client is None:
            client = self._client = self._own = httpx.Client(timeout=phases(i), verify=self._ssl())
        r = i.request
        self._secrets = r.secrets
        req = client.build_request(
            r.method, r.url, headers=r.headers, content=r.body or None, timeout=phases(i)
        )
        try:
            response = client.send(req, stream=True)
        except httpx.HTTPError as exc:
            return send_failure(exc, r)
        with self._lock:
            self._response, self._it = response, None
        return Head(response.status_code, response.headers)

    def read_error(self, i: ReadError) -> bytes:
        response = self._response
        assert response is not None
        end = None if i.remaining is None else time.monotonic() + i.remaining
        buf = bytearray()
        try:
            for chunk in response.iter_bytes():
                buf += chunk
                if len(buf) >= i.limit or (end is not None and time.monotonic() >= end):
                    break
        except httpx.HTTPError:
            pass
        finally:
            with self._lock:
                self._response = None
            response.close()
        return bytes(buf[: i.limit])

    def _iter(self) -> Iterator[bytes]:
        if self._it is None:
            assert self._response is not None
            self._it = self._response.iter_bytes()
        return self._it

    def read(self, i: Read) -> bytes | Failure | None:
        it = self._it
        if it is None:
            it = self._iter()
            if i.remaining is not None:
                self._arm(i.remaining)  # the total deadline, once for the whole body
        try:
            return next(it)
        except StopIteration:
            return None
        except httpx.HTTPError as exc:
            return read_failure(exc, self._secrets)

    def drain(self, i: Drain) -> None:
        # A server that stalls is cut off after ``i.seconds``.
        self._arm(i.seconds)
        n = 0
        try:
            for chunk in self._iter():
                n += len(chunk)
                if n > i.max_bytes:
                    break
        except (httpx.HTTPError, RuntimeError):
            pass
        finally:
            self._disarm()

    def _arm(self, seconds: float) -> None:
        self._disarm()
        timer = threading.Timer(max(seconds, 0.0), self.abort)
        timer.daemon = True
        self._timer = timer
        timer.start()

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def abort(self) -> None:
        """Unblock a read in progress, from any thread.

        Closing an httpx response from another thread neither is thread-safe nor
        wakes a thread blocked in ``recv``; shutting the socket down does both
        jobs: the read returns at once and the reading thread closes the
        response itself. httpx exposes the socket through the response's
        ``network_stream`` extension (httpx docs, "Extensions").
        """
        with self._lock:
            response = self._response
            if self._closed or response is None:
                return  # the connection may already serve another request
            stream = response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is None:
                response.close()
                return
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self._disarm()
        with self._lock:
            self._closed = True
            response, self._response = self._response, None
        own, self._own = self._own, None
        try:
            if response is not None:
                response.close()
        finally:
            if own is not None:
                own.close()
