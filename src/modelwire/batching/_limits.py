"""Per-provider pacing of a batch run: requests/min, tokens/min, ``Retry-After`` pauses.

The pacing itself is :class:`modelwire._call._limits.Pacer`, the same one ``mw.stream``'s
``requests_per_minute`` / ``tokens_per_minute`` use (one implementation): it books a
slot and says how long to wait; :class:`ProviderLimiter` awaits that wait. Tokens per
minute are booked with the prompt's estimate and corrected after the response
(:meth:`ProviderLimiter.settle`). A ``Retry-After`` on a 429 pauses the whole
provider: every worker waits in :meth:`ProviderLimiter.acquire`, not only the one
that saw it.
"""

from __future__ import annotations

import asyncio

from .._call._limits import Pacer, check_rate

__all__ = ["Limits", "ProviderLimiter"]


class Limits:
    """Rate limits for one provider (``None`` = unlimited).

    Pass as ``batch(..., limits=Limits(rpm, tpm))`` for every provider, or a dict by
    provider name (``"*"`` for those not named). Every worker of a run shares one
    pacer per provider, so the run stays under the provider's limits instead of
    collecting 429s.

    Args:
        rpm: Requests per minute.
        tpm: Tokens per minute (each request books its estimated prompt size,
            corrected by the usage of its answer).

    Raises:
        ConfigurationError: A rate that is not a positive finite number.
    """

    def __init__(self, rpm: float | None = None, tpm: float | None = None) -> None:
        check_rate("rpm", rpm)
        check_rate("tpm", tpm)
        self.rpm = rpm
        self.tpm = tpm

    def __repr__(self) -> str:
        return f"Limits(rpm={self.rpm!r}, tpm={self.tpm!r})"


class ProviderLimiter:
    """Pacing for one provider, shared by every worker (one per provider)."""

    def __init__(self, limits: Limits | None = None) -> None:
        limits = limits or Limits()
        self.pacer = Pacer(limits.rpm, limits.tpm)

    @property
    def pauses(self) -> int:
        return self.pacer.pauses

    def pause(self, seconds: float) -> None:
        """The provider said wait (``Retry-After``): nobody sends before then."""
        self.pacer.pause(seconds)

    async def acquire(self, tokens: int) -> None:
        wait = self.pacer.reserve(tokens)
        if wait > 0:
            await asyncio.sleep(wait)
        # A pause may have started while this worker waited for its slot.
        while (left := self.pacer.paused()) > 0:
            await asyncio.sleep(left)

    def settle(self, estimated: int, actual: int) -> None:
        self.pacer.settle(estimated, actual)
