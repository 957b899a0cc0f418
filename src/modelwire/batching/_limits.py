"""Per-provider pacing: requests/min, tokens/min, and ``Retry-After`` pauses.

Requests/min uses ``aiolimiter`` (a maintained asyncio leaky bucket). Tokens
per minute need a bucket that can take a *variable* amount and be corrected
after the response (the prompt is only estimated before; the usage says what
it really cost), which aiolimiter does not offer — so :class:`TokenBucket` is
a few lines of our own. A ``Retry-After`` on a 429 pauses the whole provider:
every worker waits in :meth:`ProviderLimiter.acquire`, not only the one that
saw it.
"""

from __future__ import annotations

import asyncio
import math
import time

from aiolimiter import AsyncLimiter

from ..errors import ConfigurationError

__all__ = ["Limits", "ProviderLimiter", "TokenBucket"]


class Limits:
    """Rate limits for one provider (``None`` = unlimited)."""

    def __init__(self, rpm: float | None = None, tpm: float | None = None) -> None:
        for name, v in (("rpm", rpm), ("tpm", tpm)):
            # NaN compares false with everything: ``nan <= 0`` would pass and the
            # bucket would never let a request through; infinity never refills.
            if v is not None and (
                isinstance(v, bool)
                or not isinstance(v, int | float)
                or not math.isfinite(v)
                or v <= 0
            ):
                raise ConfigurationError(
                    f"{name} must be a positive finite number or None, got {v!r}"
                )
        self.rpm = rpm
        self.tpm = tpm

    def __repr__(self) -> str:
        return f"Limits(rpm={self.rpm!r}, tpm={self.tpm!r})"


class TokenBucket:
    """Up to ``per_minute`` tokens, refilled at ``per_minute`` per minute. It
    starts with one second's worth, not a minute's, so a fresh run does not
    burst a whole minute of tokens at once. A request larger than what is
    available waits for ``min(amount, capacity)`` and then takes all of it: the
    level goes negative, and later takers wait until the debt is paid back (the
    same happens after :meth:`settle` charges more than was estimated)."""

    def __init__(self, per_minute: float) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.level = self.rate
        self._t = time.monotonic()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self._t) * self.rate)
        self._t = now

    async def take(self, amount: float) -> None:
        need = min(amount, self.capacity)
        async with self._lock:  # FIFO: a big request is not starved by small ones
            while True:
                self._refill()
                if self.level >= need:
                    self.level -= amount
                    return
                await asyncio.sleep((need - self.level) / self.rate)

    def settle(self, delta: float) -> None:
        """Charge ``delta`` more tokens (negative: give back an over-estimate)."""
        self._refill()
        self.level = min(self.capacity, self.level - delta)


def _request_limiter(rpm: float) -> AsyncLimiter:
    # aiolimiter lets a full bucket through at once; a bucket of one *second's*
    # worth (not a minute's) keeps a fresh run from bursting rpm requests in the
    # first instant, which providers that meter per second would refuse.
    if rpm >= 60:
        return AsyncLimiter(rpm / 60.0, 1.0)
    return AsyncLimiter(1, 60.0 / rpm)


class ProviderLimiter:
    """Pacing for one provider, shared by every worker (one per provider)."""

    def __init__(self, limits: Limits | None = None) -> None:
        limits = limits or Limits()
        self.requests = _request_limiter(limits.rpm) if limits.rpm else None
        self.tokens = TokenBucket(limits.tpm) if limits.tpm else None
        self.paused_until = 0.0
        self.pauses = 0

    def pause(self, seconds: float) -> None:
        """The provider said wait (``Retry-After``): nobody sends before then."""
        until = time.monotonic() + seconds
        if until > self.paused_until:
            self.paused_until = until
            self.pauses += 1

    async def _wait_pause(self) -> None:
        while (left := self.paused_until - time.monotonic()) > 0:
            await asyncio.sleep(left)

    async def acquire(self, tokens: int) -> None:
        await self._wait_pause()
        if self.requests is not None:
            await self.requests.acquire()
        if self.tokens is not None:
            await self.tokens.take(tokens)
        # A pause may have started while this worker waited in a bucket.
        await self._wait_pause()

    def settle(self, estimated: int, actual: int) -> None:
        if self.tokens is not None and actual:
            self.tokens.settle(actual - estimated)
