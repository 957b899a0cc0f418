"""Circuit breakers (``modelwire._call._breaker``): closed → open after N failures in a
window → fails fast → half-open with one probe → closed or open again, driven by a
fake clock; over loopback an open circuit sends nothing and moves a Fallback on."""

from __future__ import annotations

import pytest

import modelwire as mw
from modelwire._call._breaker import CIRCUIT_OPEN, CircuitBreaker
from modelwire.errors import OverloadedError
from modelwire.testing import MockServer, error_reply

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


def breaker(clock: Clock, failures: int = 3) -> CircuitBreaker:
    return CircuitBreaker(failures=failures, window=10.0, cooldown=5.0, clock=clock)


def test_failures_within_the_window_open_the_circuit() -> None:
    clock = Clock()
    b = breaker(clock)
    c = b.circuit("p", "m")
    for _ in range(2):
        assert c.admit() is None
        c.failure()
    assert b.state("p", "m") == "closed"
    clock.now += 11  # the first two fall out of the window
    c.failure()
    c.failure()
    assert b.state("p", "m") == "closed"
    c.failure()
    assert b.state("p", "m") == "open"
    refused = c.admit()
    assert isinstance(refused, OverloadedError)
    assert refused.code == CIRCUIT_OPEN and refused.retryable
    assert refused.retry_after == pytest.approx(5.0)
    assert "p/m" in refused.message and "Fallback" in refused.message
    # Another model of the same provider is not affected.
    assert b.circuit("p", "other").admit() is None


def test_a_success_forgets_the_failures() -> None:
    clock = Clock()
    b = breaker(clock)
    c = b.circuit("p", "m")
    c.failure()
    c.failure()
    c.success()
    c.failure()
    c.failure()
    assert b.state("p", "m") == "closed"


def test_half_open_lets_one_probe_through_and_its_success_closes() -> None:
    clock = Clock()
    b = breaker(clock, failures=1)
    c = b.circuit("p", "m")
    c.failure()
    clock.now += 4.9
    assert c.admit() is not None
    clock.now += 0.2
    assert b.state("p", "m") == "half_open"
    assert c.admit() is None  # the probe
    second = c.admit()
    assert second is not None and "probe" in second.message  # the others still fail fast
    c.success()
    assert b.state("p", "m") == "closed"
    assert c.admit() is None and c.admit() is None


def test_a_failed_probe_opens_it_again_and_an_aborted_one_frees_the_slot() -> None:
    clock = Clock()
    b = breaker(clock, failures=1)
    c = b.circuit("p", "m")
    c.failure()
    clock.now += 5
    assert c.admit() is None
    c.release()  # the probe was aborted: no verdict
    assert c.admit() is None  # another probe may go
    c.failure()
    assert b.state("p", "m") == "open"
    clock.now += 4
    assert c.admit() is not None


def test_a_retry_after_longer_than_the_cooldown_is_respected() -> None:
    clock = Clock()
    b = breaker(clock, failures=1)
    c = b.circuit("p", "m")
    c.failure(retry_after=30.0)
    clock.now += 29
    refused = c.admit()
    assert refused is not None and refused.retry_after == pytest.approx(1.0)
    clock.now += 1
    assert c.admit() is None
    c2 = b.circuit("p", "short")
    c2.failure(retry_after=1.0)  # shorter than the cooldown: the cooldown stands
    clock.now += 2
    assert c2.admit() is not None


def test_bad_settings_are_refused() -> None:
    with pytest.raises(mw.ConfigurationError, match="failures"):
        CircuitBreaker(failures=0)
    with pytest.raises(mw.ConfigurationError, match="cooldown"):
        CircuitBreaker(cooldown=float("nan"))
    with pytest.raises(mw.ConfigurationError, match="circuit_breaker"):
        mw.stream(mw.get_model("openai", "gpt-4.1-mini"), mw.Context(), api_key="k",
                  circuit_breaker="yes")  # fmt: skip


CTX = mw.Context(messages=[mw.UserMessage(content="hi")])


async def test_over_loopback_the_breaker_opens_fails_fast_half_opens_and_closes() -> None:
    clock = Clock()
    b = breaker(clock, failures=2)
    replies = [error_reply(503, "down"), error_reply(503, "down"), "probe ok", "again"]
    with MockServer(replies) as srv:
        model = srv.model("openai-chat", id="m")
        for _ in range(2):
            msg = await mw.complete(model, CTX, circuit_breaker=b, max_retries=0)
            assert msg.error is not None and msg.error.kind == "overloaded"
        assert b.state("mock", "m") == "open"
        fast = await mw.complete(model, CTX, circuit_breaker=b, max_retries=0)
        assert len(srv.requests) == 2  # nothing sent
        assert fast.error is not None and fast.error.code == CIRCUIT_OPEN
        assert fast.error.kind == "overloaded" and fast.error.retry_after == pytest.approx(5.0)
        with pytest.raises(OverloadedError):
            fast.raise_for_error()
        # The sync twin makes the same decision.
        assert mw.complete_sync(model, CTX, circuit_breaker=b).error is not None
        assert len(srv.requests) == 2
        clock.now += 5
        probe = await mw.complete(model, CTX, circuit_breaker=b)
        assert probe.text == "probe ok"
        assert b.state("mock", "m") == "closed"
        assert (await mw.complete(model, CTX, circuit_breaker=b)).text == "again"


async def test_a_status_the_provider_answers_with_is_not_a_failure_of_the_model() -> None:
    clock = Clock()
    b = breaker(clock, failures=1)
    with MockServer([error_reply(400, "bad"), "fine"]) as srv:
        model = srv.model("openai-chat", id="m")
        await mw.complete(model, CTX, circuit_breaker=b)
        assert b.state("mock", "m") == "closed"


async def test_an_open_circuit_moves_a_fallback_on_at_once() -> None:
    clock = Clock()
    b = breaker(clock, failures=1)
    b.circuit("mock", "a").failure()
    with MockServer(["from b"]) as srv:
        fb = mw.Fallback([srv.model("openai-chat", id="a"), srv.model("anthropic-messages", id="b")],
                         circuit_breaker=b)  # fmt: skip
        msg = await mw.complete(fb, CTX)
        assert [r.api for r in srv.requests] == ["anthropic-messages"]
    assert msg.model == "b" and msg.text == "from b"


async def test_a_fallback_shares_the_process_wide_breaker_by_default() -> None:
    from modelwire._call._breaker import default_breaker

    shared = default_breaker()
    shared.reset()
    try:
        with MockServer([error_reply(503, "down")] * 5 + ["b1", "b2"]) as srv:
            models = [srv.model("openai-chat", id="shared-a"), srv.model("openai-chat", id="b")]
            for _ in range(5):
                await mw.complete(mw.Fallback(models[:1]), CTX, max_retries=0)
            assert shared.state("mock", "shared-a") == "open"
            msg = await mw.complete(mw.Fallback(models), CTX, max_retries=0)
            assert msg.model == "b" and len(srv.requests) == 6
    finally:
        shared.reset()
