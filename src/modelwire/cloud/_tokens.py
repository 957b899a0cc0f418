"""The bearer-token cache shared by Vertex AI and Azure: one decision, two waits."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

#: Refresh this many seconds before the token's expiry, so a token never
#: expires between being read here and reaching the server (google-auth's own
#: threshold is 3 min 45 s; azure-identity refreshes 5 min early).
REFRESH_MARGIN = 300.0

#: ``fetch()`` returns the new token and its expiry in epoch seconds (None: unknown).
Fetch = Callable[[], tuple[str, float | None]]


class TokenCache:
    """A token fetched by ``fetch`` and reused until ``margin`` seconds before expiry.

    Thread-safe: concurrent callers that find it stale wait for one refresh
    instead of each fetching. ``aget`` differs from ``get`` only in waiting: a
    refresh runs in a worker thread (it does blocking I/O in google-auth and
    azure-identity), a fresh token returns without leaving the event loop.
    """

    def __init__(
        self,
        fetch: Fetch,
        *,
        margin: float = REFRESH_MARGIN,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._fetch = fetch
        self._margin = margin
        self._clock = clock
        self._lock = threading.Lock()
        self._token: str | None = None
        self._expires_at: float | None = None

    def _fresh(self) -> str | None:
        token = self._token
        if token is None:
            return None
        expires_at = self._expires_at
        if expires_at is not None and self._clock() >= expires_at - self._margin:
            return None
        return token

    def get(self) -> str:
        token = self._fresh()
        if token is not None:
            return token
        with self._lock:
            token = self._fresh()  # another thread may have refreshed meanwhile
            if token is not None:
                return token
            token, expires_at = self._fetch()
            self._token, self._expires_at = token, expires_at
            return token

    async def aget(self) -> str:
        token = self._fresh()
        if token is not None:
            return token
        import anyio.to_thread

        return await anyio.to_thread.run_sync(self.get)
