"""Circuit breakers: one per (provider, model), shared by every call in the process.

A model that keeps failing with a transient error (rate limits, overload, server
errors, dropped connections) is not asked again for a while: sending more requests
only deepens the overload and spends the caller's deadline. The states (Nygard,
*Release It!*, "Circuit Breaker"; the same as resilience4j and Polly):

* **closed** — calls go through; each call that ends with a retryable failure is
  counted (after its own retries), and ``failures`` of them within ``window``
  seconds open the circuit. A success forgets the count.
* **open** — for ``cooldown`` seconds, or as long as the provider's ``Retry-After``
  asked when that is longer, a call fails at once without any I/O: an
  :class:`~modelwire.errors.OverloadedError` with ``code="circuit_open"`` and
  ``retry_after`` set to what is left — or a :class:`~modelwire.Fallback` moves on to
  its next model at once.
* **half-open** — after the cooldown one call (the probe) goes through; the others
  still fail fast. The probe's success closes the circuit; its failure opens it again.

Sans-IO: the clock is a parameter (tests drive every transition with a fake clock)
and nothing here waits. Thread-safe: the sync path runs calls in many threads.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Literal, TypeAlias

from ..errors import ConfigurationError, OverloadedError

__all__ = ["CIRCUIT_OPEN", "Circuit", "CircuitBreaker", "CircuitState", "default_breaker"]

CircuitState: TypeAlias = Literal["closed", "open", "half_open"]
#: ``ErrorInfo.code`` of the error an open circuit fails a call with.
CIRCUIT_OPEN = "circuit_open"


class Circuit:
    """The breaker state of one (provider, model); made by :class:`CircuitBreaker`."""

    __slots__ = ("_breaker", "_failures", "_lock", "_probe", "key", "open_until", "state")

    def __init__(self, breaker: CircuitBreaker, key: tuple[str, str]) -> None:
        self._breaker = breaker
        self.key = key
        self.state: CircuitState = "closed"
        #: The clock value at which an open circuit lets a probe through.
        self.open_until = 0.0
        self._failures: deque[float] = deque()
        self._probe = False
        self._lock = threading.Lock()

    def admit(self) -> OverloadedError | None:
        """``None``: the call may go; else the error to fail it with at once (open, or
        half-open with the probe already out). The caller that gets ``None`` in the
        half-open state is the probe and must report :meth:`success`, :meth:`failure`
        or :meth:`release`."""
        b = self._breaker
        with self._lock:
            now = b.clock()
            if self.state == "open" and now >= self.open_until:
                self.state = "half_open"
                self._probe = False
            if self.state == "closed":
                return None
            if self.state == "half_open" and not self._probe:
                self._probe = True
                return None
            left = max(self.open_until - now, 0.0)
        provider, model = self.key
        why = "a probe call is in flight" if self.state == "half_open" else f"{left:.1f} s left"
        return OverloadedError(
            f"the circuit breaker for {provider}/{model} is open after repeated failures "
            f"({why}); not sent — wait, or give a mw.Fallback another model",
            retry_after=left,
            code=CIRCUIT_OPEN,
            retryable=True,
        )

    def success(self) -> None:
        """The call got an answer: the circuit closes and forgets its failures."""
        with self._lock:
            self.state = "closed"
            self._failures.clear()
            self._probe = False

    def failure(self, retry_after: float | None = None) -> None:
        """The call ended with a retryable failure (``retry_after``: the provider's wait)."""
        b = self._breaker
        with self._lock:
            now = b.clock()
            if self.state == "half_open":
                self._open(now, retry_after)
                return
            if self.state == "open":
                return
            fails = self._failures
            fails.append(now)
            while fails and fails[0] <= now - b.window:
                fails.popleft()
            if len(fails) >= b.failures:
                self._open(now, retry_after)

    def release(self) -> None:
        """The call ended without a verdict (aborted, a caller-side failure): a probe
        slot it held is given back."""
        with self._lock:
            self._probe = False

    def _open(self, now: float, retry_after: float | None) -> None:
        cooldown = self._breaker.cooldown
        if retry_after is not None and math.isfinite(retry_after) and retry_after > cooldown:
            cooldown = retry_after  # the provider's own wait, when it is longer
        self.state = "open"
        self.open_until = now + cooldown
        self._failures.clear()
        self._probe = False


class CircuitBreaker:
    """Breakers for every (provider, model), with one policy: ``failures`` retryable
    failures within ``window`` seconds open a circuit for ``cooldown`` seconds (longer
    when the provider's ``Retry-After`` says so), then one probe call decides.

    Give one as ``circuit_breaker=`` to ``stream``/``complete``/their twins/``Agent``
    (``True`` means the process-wide one, :func:`default_breaker`) or to
    ``mw.Fallback(..., circuit_breaker=…)``. ``clock`` (monotonic seconds) is a
    parameter for tests.

    While a circuit is open, calls to that model end at once with an ``overloaded``
    error that says so, without sending: a failing provider is not hammered, and a
    ``Fallback`` moves on to its next model without waiting for timeouts.

    Args:
        failures: Retryable failures that open a circuit.
        window: Seconds in which they must happen.
        cooldown: Seconds a circuit stays open.
        clock: Monotonic seconds.

    Raises:
        ConfigurationError: A non-positive or non-finite setting.

    Example:
        ```python
        import modelwire as mw
        from modelwire.testing import MockServer, error_reply

        breaker = mw.CircuitBreaker(failures=2, window=60, cooldown=30)
        with MockServer([error_reply(500, "down")], repeat_last=True) as server:
            model = server.model()
            for _ in range(3):
                mw.complete_sync(model, "Hi", max_retries=0, circuit_breaker=breaker)
            print(breaker.state(model.provider, model.id), len(server.requests))  # open 2
        ```
    """

    __slots__ = ("_circuits", "_lock", "clock", "cooldown", "failures", "window")

    def __init__(
        self,
        failures: int = 5,
        window: float = 60.0,
        cooldown: float = 30.0,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(failures, bool) or not isinstance(failures, int) or failures < 1:
            raise ConfigurationError(f"failures must be a positive integer, got {failures!r}")
        for name, v in (("window", window), ("cooldown", cooldown)):
            if (
                isinstance(v, bool)
                or not isinstance(v, int | float)
                or not math.isfinite(v)
                or v <= 0
            ):
                raise ConfigurationError(f"{name} must be a positive number of seconds, got {v!r}")
        self.failures = failures
        self.window = float(window)
        self.cooldown = float(cooldown)
        self.clock = clock
        self._circuits: dict[tuple[str, str], Circuit] = {}
        self._lock = threading.Lock()

    def circuit(self, provider: str, model: str) -> Circuit:
        """The circuit of ``provider``/``model`` (made closed on first use).

        Args:
            provider: The model's provider.
            model: The model id.

        Returns:
            Its circuit, shared by every call to that model.
        """
        key = (provider, model)
        with self._lock:
            c = self._circuits.get(key)
            if c is None:
                c = self._circuits[key] = Circuit(self, key)
            return c

    def state(self, provider: str, model: str) -> CircuitState:
        """The state of a circuit as a call would find it now.

        Args:
            provider: The model's provider.
            model: The model id.

        Returns:
            ``"closed"``, ``"open"``, or ``"half_open"`` (the next call probes).
        """
        c = self.circuit(provider, model)
        with c._lock:
            if c.state == "open" and self.clock() >= c.open_until:
                return "half_open"
            return c.state

    def reset(self) -> None:
        """Close and forget every circuit."""
        with self._lock:
            self._circuits.clear()

    def __repr__(self) -> str:
        return (
            f"CircuitBreaker(failures={self.failures}, window={self.window:g}, "
            f"cooldown={self.cooldown:g})"
        )


_DEFAULT = CircuitBreaker()


def default_breaker() -> CircuitBreaker:
    """The process-wide breaker (5 failures in 60 s open a circuit for 30 s)."""
    return _DEFAULT
