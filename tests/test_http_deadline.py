"""The total deadline over a response's reads (``modelwire._http._deadline``): one timer
per response, a timeout only for the deadline's own cancellation, and on each async
transport (httpx, aiohttp, httptools) a deadline that leaves the consumer's task as
it found it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import modelwire as mw
from modelwire._http._deadline import ReadDeadline
from rawserver import CTX, KEY, at, model_for, serving, stall_after_two, streamed

API = "openai-chat"
TRANSPORTS = ("httpx", "aiohttp", "httptools")


async def _wait_forever() -> None:
    await asyncio.get_running_loop().create_future()


async def _wait_out(d: ReadDeadline) -> bool:
    """A read that waits until cancelled; whether the cancellation was ``d``'s."""
    try:
        await _wait_forever()
    except asyncio.CancelledError:
        return d.fired()
    finally:
        d.exit()
    raise AssertionError("not cancelled")


def test_the_deadline_ends_a_waiting_read_as_its_own_and_takes_its_cancel_back() -> None:
    async def main() -> tuple[bool, int, bool]:
        d = ReadDeadline()
        assert d.enter(0.001)
        ours = await _wait_out(d)
        task = asyncio.current_task()
        assert task is not None
        return ours, task.cancelling(), d.enter(60.0)

    ours, cancelling, again = asyncio.run(main())
    assert ours and cancelling == 0
    assert not again  # a read after the deadline fails at once


def test_a_cancel_from_elsewhere_is_not_the_deadline() -> None:
    async def main() -> bool:
        d = ReadDeadline()
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().call_soon(task.cancel)
        assert d.enter(60.0)
        try:
            return await _wait_out(d)
        finally:
            d.cancel()

    assert asyncio.run(main()) is False


def test_the_deadline_and_another_cancel_at_once_still_cancel() -> None:
    async def main() -> tuple[bool, int]:
        d = ReadDeadline()
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        assert d.enter(0.001)
        loop.call_at(loop.time() + 0.001, task.cancel)  # after the deadline's timer
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            return d.fired(), task.cancelling()
        finally:
            d.exit()
        raise AssertionError("not cancelled")

    ours, cancelling = asyncio.run(main())
    assert not ours and cancelling == 1  # the other cancel is still the task's


def test_a_deadline_between_reads_fails_the_next_read_without_cancelling() -> None:
    async def main() -> tuple[bool, int]:
        d = ReadDeadline()
        assert d.enter(0.001)
        d.exit()
        await asyncio.sleep(0.05)  # the timer fires while no read waits
        task = asyncio.current_task()
        assert task is not None
        return d.enter(60.0), task.cancelling()

    entered, cancelling = asyncio.run(main())
    assert not entered and cancelling == 0


def test_one_timer_serves_every_read_and_cancel_disarms_it() -> None:
    async def main() -> tuple[int, bool, int]:
        loop = asyncio.get_running_loop()
        armed: list[Any] = []
        call_at = loop.call_at

        def counting(when: float, cb: Any, *args: Any, **kw: Any) -> asyncio.TimerHandle:
            handle = call_at(when, cb, *args, **kw)
            armed.append(handle)
            return handle

        loop.call_at = counting  # type: ignore[method-assign, assignment]
        d = ReadDeadline()
        for _ in range(100):
            assert d.enter(60.0)
            await asyncio.sleep(0)
            d.exit()
        n = len(armed)
        d.cancel()
        fresh = d.enter(60.0)  # the next response's deadline: a timer of its own
        d.exit()
        d.cancel()
        return n, fresh and armed[0].cancelled(), len(armed)

    n, fresh, total = asyncio.run(main())
    assert n == 1 and fresh and total == 2


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_total_deadline_mid_body_leaves_the_consumer_task_uncancelled(transport: str) -> None:
    """A stalled body under ``Timeout(total=...)``: the stream ends with the total
    timeout and the consumer's task goes on (no cancellation left over)."""
    timeout = mw.Timeout(idle=30, total=0.5)

    async def main(port: int) -> tuple[mw.AssistantMessage, int]:
        s = mw.stream(model_for(API, port), CTX, transport=transport, api_key=KEY,  # type: ignore[arg-type]
                      timeout=timeout, max_retries=0)  # fmt: skip
        message = await s.result()
        await asyncio.sleep(0)  # would raise CancelledError if a cancel were left over
        task = asyncio.current_task()
        assert task is not None
        return message, task.cancelling()

    with serving([stall_after_two(API)]) as server:
        message, cancelling = asyncio.run(main(server.port))
    assert message.stop_reason == "error" and message.error is not None
    assert message.error.kind == "timeout" and "total timeout" in message.error.message
    assert cancelling == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_abort_in_a_read_under_a_total_deadline_is_an_abort(transport: str) -> None:
    timeout = mw.Timeout(idle=30, total=30)

    async def main(port: int) -> mw.AssistantMessage:
        s = mw.stream(model_for(API, port), CTX, transport=transport, api_key=KEY,  # type: ignore[arg-type]
                      timeout=timeout, max_retries=0)  # fmt: skip
        async for ev in s:
            if ev.type == "text_delta" and ev.delta == "o wö":
                asyncio.get_running_loop().call_later(0.05, s.abort)
        return await s.result()

    with serving([stall_after_two(API)]) as server:
        message = asyncio.run(main(server.port))
    assert message.stop_reason == "aborted" and message.text == "Hello wö"


def _fake_clock() -> list[float]:
    """The running loop's clock, moved by the test only: a timer fires once the
    clock has passed its time (the loop then waits for nothing)."""
    loop = asyncio.get_running_loop()
    clock = [loop.time()]
    loop.time = lambda: clock[0]  # type: ignore[method-assign]
    return clock


def test_reads_that_go_on_move_the_idle_timeout_and_one_that_waits_it_out_fails() -> None:
    async def main() -> tuple[list[float], bool, bool, bool]:
        loop = asyncio.get_running_loop()
        clock = _fake_clock()
        t0 = clock[0]
        armed: list[float] = []
        call_at = loop.call_at

        def counting(when: float, cb: Any, *args: Any, **kw: Any) -> asyncio.TimerHandle:
            armed.append(when - t0)
            return call_at(when, cb, *args, **kw)

        loop.call_at = counting  # type: ignore[method-assign, assignment]
        d = ReadDeadline()
        for _ in range(3):  # reads 6 s apart: each waits less than the 10 s idle timeout
            assert d.enter(None, 10.0)
            clock[0] += 6
            await asyncio.sleep(0)
            await asyncio.sleep(0)  # the timer runs, if due
            d.exit()
        early = d.idled
        assert d.enter(None, 10.0)  # waits from t0 + 18: its idle timeout is at t0 + 28
        loop.call_soon(clock.__setitem__, 0, t0 + 29)
        ours = await _wait_out(d)
        task = asyncio.current_task()
        assert task is not None
        return armed, early, ours and d.idled and not d.expired, task.cancelling() == 0

    armed, early, idled, uncancelled = asyncio.run(main())
    # Armed at the first read; fired at t0 + 10 and t0 + 16 while reads went on, each
    # time armed again for the idle timeout of the read then waiting; fired at t0 + 22
    # (the clock at t0 + 29), past the last read's, which it ends.
    assert armed == [10.0, 16.0, 22.0]
    assert not early and idled and uncancelled


def test_the_total_deadline_comes_first_when_it_is_earlier_than_the_idle_timeout() -> None:
    async def main() -> tuple[bool, bool, bool]:
        loop = asyncio.get_running_loop()
        clock = _fake_clock()
        d = ReadDeadline()
        assert d.enter(5.0, 10.0)
        loop.call_soon(clock.__setitem__, 0, clock[0] + 6)
        ours = await _wait_out(d)
        return ours, d.expired and not d.idled, d.enter(60.0, 10.0)

    ours, expired, again = asyncio.run(main())
    assert ours and expired and not again


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_idle_stall_after_bytes_in_several_reads_is_the_idle_timeout(transport: str) -> None:
    """The body streams in two socket reads, then stalls: the idle timeout still ends
    the stream (aiohttp's own timer, dropped after the head, does not do it)."""
    before, late = at(API, b'rld "')
    plan = streamed(API, before, end="stall")
    plan.late = [late]

    async def main(port: int) -> mw.AssistantMessage:
        s = mw.stream(model_for(API, port), CTX, transport=transport, api_key=KEY,  # type: ignore[arg-type]
                      timeout=mw.Timeout(idle=0.3), max_retries=0)  # fmt: skip
        return await s.result()

    with serving([plan]) as server:
        message = asyncio.run(main(server.port))
    assert message.stop_reason == "error" and message.error is not None
    assert message.error.kind == "timeout" and "idle" in message.error.message
    assert message.text == "Hello wörld "
