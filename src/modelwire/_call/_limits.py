"""Client-side pacing per provider: requests per minute, tokens per minute, and the
``Retry-After`` pause one call's answer imposes on every other call to that provider.

Sans-IO and shared: a :class:`Pacer` never sleeps. :meth:`Pacer.reserve` books a
slot and answers how many seconds the caller must wait before sending; the
:class:`~modelwire._call.Call` yields that wait as a ``Sleep`` intent (both drivers
wait it their own way) and the batch runner (``modelwire.batching``) awaits it. One
implementation, so ``mw.stream(..., requests_per_minute=…)`` and ``mw.batch(limits=…)``
pace the same way.

* Requests: a bucket of one second's worth (``rpm / 60``, at least one request), so a
  fresh process does not burst a whole minute of requests in its first instant
  (providers that meter per second refuse that), refilled at ``rpm / 60`` per second.
* Tokens: a bucket of ``tpm`` tokens that starts with one second's worth and refills at
  ``tpm / 60`` per second. A request takes its estimated prompt size at once; the
  level may go negative (a request larger than what is there waits only for
  ``min(amount, capacity)``), and later requests wait until the debt is paid.
  :meth:`Pacer.settle` corrects the estimate with what the usage says it cost.
* A booking is final: reservations are served in the order they were made (FIFO), so
  a big request is never starved by small ones, and no call can overtake a waiting one.
* :meth:`Pacer.pause` (a ``429`` with ``Retry-After``): nobody sends before then;
  a caller that booked earlier checks :meth:`Pacer.paused` again after its wait.

Thread-safe (a lock around each booking): the sync path runs in many threads.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from ..errors import ConfigurationError

__all__ = ["Pacer", "check_rate", "pacer_for", "pause_provider", "reset_pacers"]


def check_rate(name: str, value: object) -> float | None:
    """``value`` as a positive finite rate, or ``None``; anything else is a
    ``ConfigurationError`` naming ``name`` (NaN compares false with everything, so a
    bucket would never let a request through; infinity never refills)."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigurationError(f"{name} must be a positive finite number or None, got {value!r}")
    return float(value)


class _Bucket:
    """A leaky bucket booked ahead: ``level`` at time ``t``, may go negative."""

    __slots__ = ("capacity", "level", "rate", "t")

    def __init__(self, capacity: float, rate: float, start: float, now: float) -> None:
        self.capacity = capacity
        self.rate = rate  # per second
        self.level = start
        self.t = now

    def _refill(self, now: float) -> None:
        if now > self.t:
            self.level = min(self.capacity, self.level + (now - self.t) * self.rate)
            self.t = now

    def book(self, amount: float, now: float) -> float:
        """Take ``amount``; the seconds until it is covered (0: at once)."""
        self._refill(now)
        need = min(amount, self.capacity)
        wait = 0.0 if self.level >= need else (need - self.level) / self.rate
        self.level -= amount
        return wait

    def give(self, amount: float, now: float) -> None:
        """Charge ``-amount`` more (negative ``amount``: charge more)."""
        self._refill(now)
        self.level = min(self.capacity, self.level + amount)


class Pacer:
    """Pacing for one provider, shared by every call (and batch worker) that sends to it.

    ``rpm`` / ``tpm``: requests and tokens per minute (``None``: no limit). ``clock``
    (monotonic seconds) is a parameter so tests drive it without waiting.
    """

    __slots__ = ("_clock", "_lock", "paused_until", "pauses", "requests", "rpm", "tokens", "tpm")

    def __init__(
        self,
        rpm: float | None = None,
        tpm: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rpm = check_rate("requests_per_minute", rpm)
        self.tpm = check_rate("tokens_per_minute", tpm)
        self._clock = clock
        self._lock = threading.Lock()
        now = clock()
        self.requests: _Bucket | None = None
        if self.rpm is not None:
            per_s = self.rpm / 60.0
            burst = max(1.0, per_s)
            self.requests = _Bucket(burst, per_s, burst, now)
        self.tokens: _Bucket | None = None
        if self.tpm is not None:
            self.tokens = _Bucket(self.tpm, self.tpm / 60.0, self.tpm / 60.0, now)
        #: The ``clock`` value before which nobody sends (a provider's ``Retry-After``).
        self.paused_until = 0.0
        #: How many pauses were started (a longer pause replacing a shorter one counts).
        self.pauses = 0

    def reserve(self, tokens: int = 0) -> float:
        """Book one request of ``tokens`` estimated tokens; the seconds to wait first."""
        with self._lock:
            now = self._clock()
            wait = max(self.paused_until - now, 0.0)
            # Booked at the moment the pause ends: the buckets refill during it.
            at = now + wait
            if self.requests is not None:
                wait = max(wait, self.requests.book(1.0, at) + (at - now))
            if self.tokens is not None and tokens > 0:
                wait = max(wait, self.tokens.book(float(tokens), at) + (at - now))
            return wait

    def paused(self) -> float:
        """Seconds left of a pause (0: none); checked again after a booked wait."""
        return max(self.paused_until - self._clock(), 0.0)

    def pause(self, seconds: float) -> None:
        """The provider said wait (``Retry-After``): nobody sends before then."""
        if not math.isfinite(seconds) or seconds <= 0:
            return
        with self._lock:
            until = self._clock() + seconds
            if until > self.paused_until:
                self.paused_until = until
                self.pauses += 1

    def settle(self, estimated: int, actual: int) -> None:
        """Correct a booking: the response's usage says it cost ``actual`` tokens."""
        if self.tokens is None or not actual:
            return
        with self._lock:
            self.tokens.give(float(estimated - actual), self._clock())


# One pacer per (provider, rpm, tpm) and one pause per provider, shared by the process.
_PACERS: dict[tuple[str, float | None, float | None], Pacer] = {}
_PAUSED: dict[str, float] = {}  # provider → the latest pause's end (time.monotonic)
_REGISTRY = threading.Lock()


def pacer_for(provider: str, rpm: float | None, tpm: float | None) -> Pacer:
    """The process-wide pacer of ``provider`` at these limits. Calls with the same limits
    share buckets; every pacer of a provider shares its pause (one ``Retry-After``
    pauses every call to that provider, whatever limits it was given)."""
    key = (provider, rpm, tpm)
    with _REGISTRY:
        p = _PACERS.get(key)
        if p is None:
            p = _PACERS[key] = Pacer(rpm, tpm)
            p.paused_until = _PAUSED.get(provider, 0.0)
        return p


def pause_provider(provider: str, seconds: float) -> None:
    """Pause every pacer of ``provider`` (a ``Retry-After`` answered one of its calls)."""
    if not math.isfinite(seconds) or seconds <= 0:
        return
    with _REGISTRY:
        until = time.monotonic() + seconds
        _PAUSED[provider] = max(_PAUSED.get(provider, 0.0), until)
        pacers = [p for (name, _r, _t), p in _PACERS.items() if name == provider]
    for p in pacers:
        p.pause(seconds)


def reset_pacers() -> None:
    """Forget every process-wide pacer (for tests)."""
    with _REGISTRY:
        _PACERS.clear()
        _PAUSED.clear()
