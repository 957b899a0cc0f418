"""The deadlines over a response's body reads: the total and the idle timeout, one
timer per response.

``async with asyncio.timeout(remaining)`` around every read schedules a timer and
cancels it again each time, and so does aiohttp's ``sock_read`` for every socket read:
at one event per network read that bookkeeping (a ``TimerHandle``, a heap push, the
cancelled handles the loop sweeps later) costs more than decoding the event
(``bench/icount.py``). The total deadline does not move between reads, and the idle
timeout only moves forward: so one timer, armed at the first read for the earlier of
the two, serves them all. A read notes when it began waiting (one clock read); when
the timer fires before either has passed — the reads went on — it is armed again for
the next instant one could pass, at most once per idle period. It cancels the task
only while that task waits in a read, and a read after the total deadline fails at
once. What a read sees is what ``asyncio.timeout`` gave it: the timer's own
cancellation becomes a timeout, any other one goes on (``Task.uncancel``, as there).
"""

from __future__ import annotations

import asyncio
import math

__all__ = ["DEADLINE_BEFORE", "DEADLINE_READING", "ReadDeadline"]

#: What a total deadline that passed says, by where the call was (every transport's).
DEADLINE_BEFORE = "total timeout expired before the response"
DEADLINE_READING = "total timeout expired while reading"


class ReadDeadline:
    """Bound a response's reads by one total deadline and, per read, an idle timeout.

    Per read: :meth:`enter` (``False``: the total deadline has passed, fail the read),
    the wait, then :meth:`exit` in a ``finally``; a ``CancelledError`` out of the
    wait is this timer's when :meth:`fired` says so — :attr:`expired` for the total
    deadline, :attr:`idled` for the idle timeout. :meth:`cancel` when the response is
    done with (closed, or another attempt begins).
    """

    __slots__ = ("_at", "_cancelling", "_handle", "_idle", "_loop", "_since", "_task",
                 "expired", "idled")  # fmt: skip

    def __init__(self) -> None:
        self._handle: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[object] | None = None  # the task waiting in a read
        self._cancelling = 0
        self._loop: asyncio.AbstractEventLoop | None = None  # set by the first read
        self._at = math.inf  # the total deadline, in loop time
        self._idle: float | None = None
        self._since = 0.0  # when the waiting read began (loop time)
        #: Whether the total deadline has passed.
        self.expired = False
        #: Whether a read waited the idle timeout for bytes.
        self.idled = False

    def enter(self, remaining: float | None, idle: float | None = None) -> bool:
        """A read begins, within ``remaining`` seconds of the total deadline and
        ``idle`` seconds of waiting (both fixed by the first read of the response;
        ``None``: unbounded); ``False`` once the total deadline has passed."""
        if self.expired:
            return False
        loop = self._loop
        if loop is None:
            if remaining is not None and remaining <= 0:
                self.expired = True
                return False
            loop = self._loop = asyncio.get_running_loop()
            now = self._since = loop.time()
            self._at = math.inf if remaining is None else now + remaining
            self._idle = idle
            when = self._at if idle is None else min(self._at, now + idle)
            if when != math.inf:
                self._handle = loop.call_at(when, self._fire)
        elif self._idle is not None:
            self._since = loop.time()
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        self._cancelling = task.cancelling()
        return True

    def exit(self) -> None:
        self._task = None

    def fired(self) -> bool:
        """Whether the ``CancelledError`` the read got is this timer's (then it is
        taken back from the task, as ``asyncio.timeout`` does)."""
        task = self._task
        return (
            (self.expired or self.idled)
            and task is not None
            and task.uncancel() <= self._cancelling
        )

    def cancel(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.cancel()
        self._task = None
        self._loop = None
        self.expired = self.idled = False

    def _fire(self) -> None:
        self._handle = None
        loop = self._loop
        assert loop is not None
        now = loop.time()
        task = self._task
        idle = self._idle
        if idle is None or now >= self._at:
            self.expired = True
        elif task is not None and now >= self._since + idle:
            self.idled = True
        else:
            # The reads went on: armed again for the waiting read's idle timeout (or,
            # none waiting, a full idle period from now), or the total deadline.
            nxt = self._since + idle if task is not None else now + idle
            self._handle = loop.call_at(min(self._at, nxt), self._fire)
            return
        if task is not None:
            task.cancel()
