"""Keep-alive connections by origin, at most so many in flight (:class:`Pool`), and
the one pool per event loop of the calls that bring none (:func:`pooled`)."""

from __future__ import annotations

import asyncio
import atexit
from collections import deque
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING

from ._wire import Connection, Target

if TYPE_CHECKING:
    import ssl

__all__ = ["KEEPALIVE_SECONDS", "Pool", "pooled"]

#: Idle connections older than this are closed rather than reused: a server's own
#: keep-alive timeout is often 5-60 s, and a request written as the server closes
#: fails (aiohttp keeps one 15 s, httpcore 5 s).
KEEPALIVE_SECONDS = 15.0


# --------------------------------------------------------------------------- pool


class Pool:
    """Keep-alive connections by origin (scheme, host, port). ``limit``: at most that
    many requests in flight at once, the others waiting for one to end (within their
    connect timeout), as aiohttp's connector ``limit``; 0, no limit. Idle connections
    are reused newest first and closed after :data:`KEEPALIVE_SECONDS`.
    :meth:`aclose` closes them all."""

    def __init__(self, limit: int = 0) -> None:
        self._idle: dict[tuple[str, str, int], list[Connection]] = {}
        self._busy: set[Connection] = set()
        self._limit = max(0, limit)
        self._waiters: deque[asyncio.Future[None]] = deque()
        self.closed = False

    def __repr__(self) -> str:
        idle = sum(len(v) for v in self._idle.values())
        return f"<modelwire httptools Pool: {len(self._busy)} in use, {idle} idle>"

    def reuse(self, t: Target) -> Connection | None:
        """An open idle connection to ``t`` when a slot is free, without waiting."""
        idle = self._idle.get(t.key)
        if not idle or self.closed or (self._limit and len(self._busy) >= self._limit):
            return None
        conn = _newest_usable(idle)
        if conn is not None:
            self._busy.add(conn)
        return conn

    async def acquire(self, t: Target, ssl: Callable[[], ssl.SSLContext]) -> Connection:
        """A connection to ``t``: an idle one, else a new one; first a free slot."""
        if self.closed:
            raise RuntimeError("the connection pool is closed")
        loop = asyncio.get_running_loop()
        while self._limit and len(self._busy) >= self._limit:
            waiter = loop.create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()  # woken, then cancelled: the next one may go
                raise
            if self.closed:
                raise RuntimeError("the connection pool is closed")
        placeholder = Connection(t.key, loop)  # holds the slot while connecting
        self._busy.add(placeholder)
        try:
            idle = self._idle.get(t.key)
            conn = _newest_usable(idle) if idle else None
            if conn is None:
                _, conn = await loop.create_connection(
                    lambda: Connection(t.key, loop), t.host, t.port,
                    ssl=ssl() if t.tls else None, server_hostname=t.host if t.tls else None,
                )  # fmt: skip
        finally:
            self._busy.discard(placeholder)
        if self.closed:
            conn._abort()
            raise RuntimeError("the connection pool is closed")
        self._busy.add(conn)
        return conn

    def release(self, conn: Connection) -> None:
        """Back to the pool when its response was read whole on a connection that
        stays open; closed otherwise (its rest would reach the next request)."""
        if conn not in self._busy:
            return
        self._busy.discard(conn)
        self._wake_one()
        conn.parser = None
        if self.closed or not conn.reusable():
            conn._abort()
            return
        if conn.chunks:
            conn.take()  # the rest of a response received whole: the socket holds none of it
        conn.idle_since = conn.loop.time()
        self._idle.setdefault(conn.key, []).append(conn)

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # it checks the slots again when it runs
                return

    def _abort_all(self) -> None:
        self.closed = True
        conns = [c for idle in self._idle.values() for c in idle] + list(self._busy)
        self._idle.clear()
        for c in conns:
            c._abort()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # and finds the pool closed

    async def aclose(self) -> None:
        """Close every connection, idle or in use."""
        had = bool(self._idle or self._busy)
        self._abort_all()
        if had:
            await asyncio.sleep(0)  # connection_lost runs in a callback of the loop

    close = aclose


def _newest_usable(idle: list[Connection]) -> Connection | None:
    now = idle[-1].loop.time() if idle else 0.0
    while idle:
        conn = idle.pop()
        if conn.reusable() and now - conn.idle_since < KEEPALIVE_SECONDS:
            return conn
        conn._abort()
    return None


# One pool per event loop for the calls that bring none, closed with its loop
# (``loop.shutdown_asyncgens``, which ``asyncio.run`` calls, closes the keeper
# started on it), or at exit when the loop was closed without that.
_POOLS: dict[asyncio.AbstractEventLoop, tuple[Pool, AsyncGenerator[None, None]]] = {}


async def pooled() -> Pool:
    """The running loop's shared pool, opened on first use."""
    loop = asyncio.get_running_loop()
    entry = _POOLS.get(loop)
    if entry is not None and not entry[0].closed:
        return entry[0]
    for old in [lp for lp in _POOLS if lp.is_closed()]:
        _forget(old)
    pool = Pool()
    keeper = _keeper(loop, pool)
    await anext(keeper)
    _POOLS[loop] = (pool, keeper)
    return pool


async def _keeper(loop: asyncio.AbstractEventLoop, pool: Pool) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        entry = _POOLS.get(loop)
        if entry is not None and entry[0] is pool:
            del _POOLS[loop]
        if not pool.closed:
            await pool.aclose()


def _forget(loop: asyncio.AbstractEventLoop) -> None:
    """Drop a closed loop's pool: its connections aborted, its keeper finished
    without the loop (the pool is closed, so the keeper has nothing to wait for)."""
    pool, keeper = _POOLS.pop(loop)
    pool._abort_all()
    coro = keeper.aclose()
    try:
        coro.send(None)
    except StopIteration:
        return
    coro.close()


@atexit.register
def _close_all() -> None:
    for loop in list(_POOLS):
        if loop.is_closed() or loop.is_running():
            _forget(loop)
        else:
            loop.run_until_complete(_POOLS[loop][1].aclose())
