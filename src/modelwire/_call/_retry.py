"""One call's deadline and retry decisions.

Sans-IO: :class:`RetryPolicy` never sleeps and never touches a socket. The
:class:`~modelwire._call.Call` asks it, after every failed attempt, how long to wait
before the next one and yields that wait as a ``Sleep`` intent; the async driver
awaits ``asyncio.sleep`` and the sync one calls ``time.sleep`` — the only difference
between the two paths.

Rules (DESIGN §2a "Errors and limits"):

* Only failures before any content are retried: a connect failure, a status in
  :data:`RETRY_STATUSES`, or an in-band error event the provider sends after the
  ``200`` but before any content (Anthropic ``overloaded_error``, Groq and Gemini
  rate limits and server errors), when the classifier marks it retryable. A timeout is not retried (the
  caller's budget is spent), nor a 4xx other than 408/409/429.
* ``Retry-After`` / ``retry-after-ms`` is honoured up to :data:`MAX_RETRY_AFTER`
  seconds; longer ends the call at once with the provider's error. A value that is not
  a finite, non-negative number (``nan``, ``inf``, ``-1``, garbage) is ignored and the
  normal backoff applies (RFC 9110 §10.2.3: delay-seconds is a non-negative integer).
* ``Timeout(total=…)`` bounds everything, retry sleeps included: a wait longer than
  what is left of the deadline is not started; the call ends at once with the error
  that caused the retry.
"""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable

from .._providers._classify import RETRY_STATUSES
from .._providers._status import MAX_RETRY_AFTER
from .._wire.request import Timeout
from ..errors import ProviderError, RequestTimeoutError, StreamError

__all__ = ["RetryPolicy"]

_BACKOFF_BASE = 0.5
_BACKOFF_CAP = 8.0


class RetryPolicy:
    """The deadline and retry budget of one call (every attempt of it).

    ``clock`` (monotonic seconds) and ``rng`` (``[0, 1)``, the backoff jitter) are
    parameters so tests can drive the policy without waiting.
    """

    __slots__ = ("_clock", "_rng", "attempts", "deadline", "max_retries", "timeout")

    def __init__(
        self,
        timeout: Timeout,
        max_retries: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        rng: Callable[[], float] | None = None,
    ) -> None:
        self.timeout = timeout
        self.max_retries = max_retries
        self._clock = clock
        self._rng = rng or random.random
        #: Attempts that failed so far (the next attempt is number ``attempts + 1``).
        self.attempts = 0
        #: The ``clock`` value at which the call's total timeout expires (``None``: never).
        self.deadline = None if timeout.total is None else clock() + timeout.total

    def remaining(self) -> float | None:
        """Seconds left before the total deadline (``None`` without one; never negative)."""
        if self.deadline is None:
            return None
        return max(self.deadline - self._clock(), 0.0)

    def expired(self) -> bool:
        return self.deadline is not None and self._clock() >= self.deadline

    def bound(self, seconds: float | None) -> float | None:
        """``seconds`` (a per-phase timeout, ``None`` = unlimited) cut to what is left
        of the deadline, so no single wait can outlast the whole call."""
        left = self.remaining()
        if left is None:
            return seconds
        left = max(left, 1e-3)  # httpx treats 0 as "no time at all" before even trying
        return left if seconds is None else min(seconds, left)

    def total_timeout(self, while_: str) -> RequestTimeoutError:
        total = self.timeout.total
        return RequestTimeoutError(f"total timeout ({total:g} s) expired {while_}")

    def backoff(self) -> float:
        """Exponential backoff with jitter for attempt ``attempts`` (0-based)."""
        base = min(_BACKOFF_CAP, _BACKOFF_BASE * 2.0 ** (self.attempts - 1))
        return float(base) * (0.5 + self._rng() / 2)

    def next_wait(self, err: StreamError) -> float:
        """Record a failed attempt; the seconds to wait before the next one.

        Raises ``err`` (with the reason appended) when the call should end instead:
        the error is not retryable, the retries are used up, the provider asked for
        a wait beyond :data:`MAX_RETRY_AFTER`, or the wait would outlast the deadline.
        """
        self.attempts += 1
        retry_after = err.retry_after
        if retry_after is not None and retry_after > MAX_RETRY_AFTER:
            raise _annotated(
                err,
                f"the provider asked to retry after {retry_after:.0f} s, longer than "
                f"modelwire waits ({MAX_RETRY_AFTER:.0f} s)",
            )
        if isinstance(err, ProviderError) and err.status is not None:
            # The classifier's decision too: a 429 ``insufficient_quota`` is sent once.
            retryable = err.status in RETRY_STATUSES and err.retryable
        elif isinstance(err, ProviderError):
            # An in-band error event after the ``200`` and before any content
            # (``overloaded_error``, ``rate_limit_exceeded``…): the classifier's decision.
            retryable = err.retryable
        else:
            # A transport failure before any response; a timeout spent the budget.
            retryable = err.kind == "connect" and not isinstance(err, RequestTimeoutError)
        if not retryable or self.attempts > self.max_retries:
            raise err
        wait = retry_after if retry_after is not None else self.backoff()
        left = self.remaining()
        if left is not None and wait >= left:
            raise _annotated(
                err,
                f"not retried: the total timeout leaves {left:.2f} s, less than the "
                f"{wait:.2f} s wait before the next attempt",
            )
        return wait


def _annotated(err: StreamError, why: str) -> StreamError:
    # A copy: the attempt's error is not changed in place (errors are values here).
    out = copy.copy(err)
    out.message = f"{err.message} — {why}"
    out.args = (out.message,)
    return out
