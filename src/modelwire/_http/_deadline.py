"""The total deadline over a response's body reads: one timer per response.

``async with asyncio.timeout(remaining)`` around every read schedules a timer and
cancels it again each time: at one event per network read that bookkeeping (a
``TimerHandle``, a heap push, the cancelled handles the loop sweeps later) costs
more than decoding the event (``bench/icount.py``). The deadline does not move
between reads, so one timer, armed at the first read, serves them all; it cancels
the task only while that task waits in a read, and a read after it fired fails at
once. What a read sees is what ``asyncio.timeout`` gave it: the deadline's own
cancellation becomes a timeout, any other one goes on (``Task.uncancel``, as there).
"""

from __future__ import annotations

import asyncio

__all__ = ["ReadDeadline"]


class ReadDeadline:
    """Bound a response's reads by one deadline.

    Per read: :meth:`enter` (``False``: the deadline has passed, fail the read),
    the wait, then :meth:`exit` in a ``finally``; a ``CancelledError`` out of the
    wait is the deadline's when :meth:`fired` says so. :meth:`cancel` when the
    response is done with (closed, or another attempt begins).
    """

    __slots__ = ("_cancelling", "_handle", "_task", "expired")

    def __init__(self) -> None:
        self._handle: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[object] | None = None  # the task waiting in a read
        self._cancelling = 0
        #: Whether the deadline has passed.
        self.expired = False

    def enter(self, remaining: float) -> bool:
        """A read within ``remaining`` seconds begins (the timer is armed by the
        first one); ``False`` once the deadline has passed."""
        if self.expired:
            return False
        if self._handle is None:
            if remaining <= 0:
                self.expired = True
                return False
            loop = asyncio.get_running_loop()
            self._handle = loop.call_at(loop.time() + remaining, self._fire)
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        self._cancelling = task.cancelling()
        return True

    def exit(self) -> None:
        self._task = None

    def fired(self) -> bool:
        """Whether the ``CancelledError`` the read got is the deadline's (then it is
        taken back from the task, as ``asyncio.timeout`` does)."""
        task = self._task
        return self.expired and task is not None and task.uncancel() <= self._cancelling

    def cancel(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.cancel()
        self._task = None
        self.expired = False

    def _fire(self) -> None:
        self._handle = None
        self.expired = True
        if self._task is not None:
            self._task.cancel()
