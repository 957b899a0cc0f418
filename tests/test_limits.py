"""Client-side pacing (``modelwire._call._limits``): one Pacer for ``mw.stream`` and the batch
runner; requests and tokens per minute hold under 50 concurrent calls, and one call's
Retry-After pauses every paced call to that provider."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest

import modelwire as mw
from modelwire._call import Call, Close, Emit, Send, Sleep
from modelwire._call._limits import Pacer, pacer_for, pause_provider, reset_pacers
from modelwire.batching._limits import ProviderLimiter
from modelwire.testing import MockServer, error_reply

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def fresh_pacers() -> Iterator[None]:
    reset_pacers()
    yield
    reset_pacers()


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def starts(waits: list[float], now: float = 0.0) -> list[float]:
    return sorted(now + w for w in waits)


def assert_rate(times: list[float], burst: float, per_second: float, slack: float = 0.0) -> None:
    """No window holds more than the burst plus what refilled during it."""
    times = sorted(times)
    for i, t0 in enumerate(times):
        for j in range(i, len(times)):
            allowed = burst + (times[j] - t0) * per_second + slack
            assert j - i + 1 <= allowed + 1e-9, (i, j, times[j] - t0)


def test_requests_per_minute_under_50_concurrent_reservations() -> None:
    clock = Clock()
    pacer = Pacer(rpm=600, clock=clock)  # 10 per second, a burst of one second's worth
    waits = [pacer.reserve() for _ in range(50)]
    assert waits[:10] == [0.0] * 10
    assert waits[10] == pytest.approx(0.1) and waits[49] == pytest.approx(4.0)
    assert_rate(starts(waits), burst=10, per_second=10)


def test_a_low_rate_allows_one_request_at_a_time() -> None:
    clock = Clock()
    pacer = Pacer(rpm=30, clock=clock)  # one every 2 s
    assert [pacer.reserve() for _ in range(3)] == [0.0, pytest.approx(2.0), pytest.approx(4.0)]
    clock.now += 10  # refilled, but only up to the one-request burst
    assert pacer.reserve() == 0.0 and pacer.reserve() == pytest.approx(2.0)


def test_tokens_per_minute_book_the_estimate_and_settle_the_usage() -> None:
    clock = Clock()
    pacer = Pacer(tpm=60_000, clock=clock)  # 1000 tokens/s, starting with 1000
    assert pacer.reserve(800) == 0.0
    assert pacer.reserve(700) == pytest.approx(0.5)  # 500 short
    pacer.settle(800, 300)  # the first cost 500 less than estimated
    assert pacer.reserve(400) == pytest.approx(0.4)  # -500 + 500 = 0 → 400 short
    # A request larger than the whole bucket waits for a full bucket, not forever.
    big = Pacer(tpm=600, clock=clock)
    assert big.reserve(10_000) == pytest.approx((600 - 10) / 10)


def test_threads_booking_at_once_keep_the_rate() -> None:
    clock = Clock()
    pacer = Pacer(rpm=1200, clock=clock)
    waits: list[float] = []
    lock = threading.Lock()

    def book() -> None:
        w = pacer.reserve()
        with lock:
            waits.append(w)

    threads = [threading.Thread(target=book) for _ in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(waits) == 50
    assert_rate(starts(waits), burst=20, per_second=20)
    assert max(waits) == pytest.approx(30 / 20)


def test_a_pause_holds_everyone_and_buckets_refill_meanwhile() -> None:
    clock = Clock()
    pacer = Pacer(rpm=60, clock=clock)
    assert pacer.reserve() == 0.0
    pacer.pause(5.0)
    assert pacer.paused() == pytest.approx(5.0)
    assert pacer.reserve() == pytest.approx(5.0)  # refilled during the pause
    assert pacer.reserve() == pytest.approx(6.0)
    pacer.pause(float("nan"))  # not a wait: ignored
    assert pacer.pauses == 1


def test_bad_rates_are_refused_before_any_request() -> None:
    with pytest.raises(mw.ConfigurationError, match="requests_per_minute"):
        mw.stream(mw.get_model("openai", "gpt-4.1-mini"), mw.Context(), api_key="k",
                  requests_per_minute=0)  # fmt: skip
    with pytest.raises(mw.ConfigurationError, match="tokens_per_minute"):
        mw.stream(mw.get_model("openai", "gpt-4.1-mini"), mw.Context(), api_key="k",
                  tokens_per_minute=float("inf"))  # fmt: skip


def test_the_batch_limiter_is_the_same_pacer() -> None:
    from modelwire.batching import Limits

    limiter = ProviderLimiter(Limits(rpm=120, tpm=6000))
    assert isinstance(limiter.pacer, Pacer)
    assert (limiter.pacer.rpm, limiter.pacer.tpm) == (120, 6000)


def test_the_call_waits_for_its_slot_as_a_sleep_intent() -> None:
    from modelwire._client._replay import pipeline_for
    from modelwire._wire.request import HTTPRequest

    clock = Clock()
    pacer = Pacer(rpm=60, clock=clock)
    pacer.reserve()  # the burst is taken: the next request waits 1 s
    request = HTTPRequest(url="http://127.0.0.1:9/v1/chat/completions",
                          headers={"Accept": "text/event-stream"}, body=b"{}")  # fmt: skip
    call = Call(pipeline_for("openai-chat"), request, timeout=mw.Timeout(), max_retries=0,
                clock=clock, pacer=pacer)  # fmt: skip
    intents = [call.first()]
    while not isinstance(intents[-1], Send):
        i = intents[-1]
        if isinstance(i, Sleep):
            clock.now += i.seconds
        intents.append(call.send(request if type(i).__name__ == "Authorize" else None))
    assert [type(i).__name__ for i in intents] == ["Emit", "Authorize", "Sleep", "Send"]
    slept = intents[2]
    assert isinstance(slept, Sleep) and slept.seconds == pytest.approx(1.0)
    assert isinstance(call.abort(), Emit) and isinstance(call.send(None), Close)


CTX = mw.Context(messages=[mw.UserMessage(content="hi")])


async def test_fifty_concurrent_streams_hold_requests_per_minute() -> None:
    arrivals: list[float] = []
    with MockServer(["ok"], repeat_last=True,
                    on_request=lambda rec, reply: arrivals.append(time.monotonic())) as srv:  # fmt: skip
        model = srv.model("openai-chat", id="paced")
        t0 = time.monotonic()
        msgs = await asyncio.gather(
            *(mw.complete(model, CTX, requests_per_minute=1800) for _ in range(50))
        )
    assert all(m.text == "ok" for m in msgs)
    assert len(arrivals) == 50
    # 30/s with a burst of 30: 20 more need 2/3 s. The server sees arrival times, which
    # the loopback's latency can bunch up by a few tenths of a second (0.3 s = 9 requests);
    # the exact schedule is checked on a fake clock above.
    assert_rate(arrivals, burst=30, per_second=30, slack=9)
    # The last one's slot is 20/30 s after the first booking: it cannot arrive before.
    assert max(arrivals) - t0 >= 0.66


def test_the_sync_twin_paces_the_same_way() -> None:
    arrivals: list[float] = []
    with MockServer(["ok"], repeat_last=True,
                    on_request=lambda rec, reply: arrivals.append(time.monotonic())) as srv:  # fmt: skip
        model = srv.model("openai-chat", id="paced-sync")
        for _ in range(4):
            assert mw.complete_sync(model, CTX, requests_per_minute=120).text == "ok"
    # 2/s, a burst of 2: the 3rd and 4th wait ~0.5 s each.
    assert arrivals[3] - arrivals[0] >= 0.9


async def test_a_retry_after_pauses_every_paced_call_to_that_provider() -> None:
    arrivals: list[float] = []
    replies = [error_reply(429, "slow down", headers={"retry-after": "1"}), "ok"]
    with MockServer(replies, on_request=lambda rec, reply: arrivals.append(time.monotonic())) as srv:  # fmt: skip
        model = srv.model("openai-chat", id="p")
        first = await mw.complete(model, CTX, max_retries=0, requests_per_minute=6000)
        assert first.error is not None and first.error.kind == "rate_limit"
        # Another call (another model of the provider, other limits) waits for the pause.
        other = srv.model("openai-chat", id="q")
        second = await mw.complete(other, CTX, requests_per_minute=600)
    assert second.text == "ok"
    assert arrivals[1] - arrivals[0] >= 0.9


def test_pacers_are_shared_per_provider_and_limits() -> None:
    a = pacer_for("prov", 60, None)
    assert pacer_for("prov", 60, None) is a
    b = pacer_for("prov", 120, None)
    assert b is not a
    pause_provider("prov", 3.0)
    assert a.paused() > 2.9 and b.paused() > 2.9
    assert pacer_for("other", 60, None).paused() == 0.0
    # A pacer made after the pause inherits it.
    assert pacer_for("prov", None, 1000).paused() > 2.9
