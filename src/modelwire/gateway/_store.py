"""Per-key limits and budgets: requests per minute, tokens per minute, spend.

Two stores with one behaviour: :class:`MemoryStore` (the default; one process) and
:class:`RedisStore` (``[gateway] redis = "redis://…"``: every gateway process using
that Redis shares each key's limits and spend). Both are token buckets booked with a
clock passed in (tests drive it), so a refusal says how long to wait (``retry-after``):

* requests: a bucket of ``requests_per_minute`` requests, refilled at ``rpm / 60`` per
  second; a request takes one, and is refused while less than one is left;
* tokens: a bucket of ``tokens_per_minute`` tokens refilled the same way; a request is
  admitted while the level is above zero, and its answer's usage (input + output +
  cache tokens) is taken when it ends — the level may go negative, and later requests
  wait until the debt is paid (a request's size is known only once it is answered);
* budget: the dollars spent (``usage.cost.total`` of each answer) — refused once at or
  past ``budget_usd``. In-process, spend counts from the start of the process; in Redis
  it stays until the key ``modelwire:gw:NAME:spent`` is deleted.

Redis: each check or charge is one Lua script (https://redis.io/docs/latest/develop/interact/programmability/eval-intro/),
atomic on the server, so concurrent requests through different processes cannot
both take the last slot. Bucket keys expire once idle (a full bucket is the same as
none); keys are namespaced ``modelwire:gw:<key name>:…``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from ._config import KeyConfig

__all__ = ["LimitStore", "MemoryStore", "RedisStore", "Refusal", "StoreUnavailable", "open_store"]


class Refusal(NamedTuple):
    """Why a request is refused: ``kind`` ``requests``, ``tokens`` or ``budget``."""

    kind: str
    message: str
    retry_after: float | None = None


class StoreUnavailable(Exception):
    """The shared store (Redis) could not be reached."""


class LimitStore(Protocol):
    async def admit(self, key: KeyConfig) -> Refusal | None:
        """Book one request of ``key``; a :class:`Refusal` when a limit says no."""
        ...

    async def settle(self, key: KeyConfig, tokens: int, cost: float) -> None:
        """Charge an answered request's tokens and dollars."""
        ...

    async def spent(self, key: KeyConfig) -> float:
        """Dollars spent so far by ``key``."""
        ...

    async def close(self) -> None: ...


def _refusal(kind: str, key: KeyConfig, wait: float | None) -> Refusal:
    if kind == "budget":
        return Refusal(
            "budget",
            f"the budget of this key (${key.budget_usd:g}) is spent; ask the gateway's "
            "operator to raise budget_usd",
        )
    limit = key.requests_per_minute if kind == "requests" else key.tokens_per_minute
    return Refusal(
        kind, f"this key's limit of {limit:g} {kind} per minute is reached; retry later", wait
    )


class _Bucket:
    __slots__ = ("capacity", "level", "rate", "t")

    def __init__(self, per_minute: float, now: float) -> None:
        self.capacity = per_minute
        self.rate = per_minute / 60.0
        self.level = per_minute
        self.t = now

    def refill(self, now: float) -> float:
        if now > self.t:
            self.level = min(self.capacity, self.level + (now - self.t) * self.rate)
            self.t = now
        return self.level


class _KeyState:
    __slots__ = ("requests", "spent", "tokens")

    def __init__(self) -> None:
        self.requests: _Bucket | None = None
        self.tokens: _Bucket | None = None
        self.spent = 0.0


class MemoryStore:
    """Limits and spend in this process (lost when it exits)."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._keys: dict[str, _KeyState] = {}

    def _state(self, key: KeyConfig) -> _KeyState:
        s = self._keys.get(key.name)
        if s is None:
            s = self._keys[key.name] = _KeyState()
        now = self._clock()
        if key.requests_per_minute is not None and s.requests is None:
            s.requests = _Bucket(key.requests_per_minute, now)
        if key.tokens_per_minute is not None and s.tokens is None:
            s.tokens = _Bucket(key.tokens_per_minute, now)
        return s

    async def admit(self, key: KeyConfig) -> Refusal | None:
        # No await inside: one event loop, so each check-and-book is atomic.
        s = self._state(key)
        now = self._clock()
        if key.budget_usd is not None and s.spent >= key.budget_usd:
            return _refusal("budget", key, None)
        if s.tokens is not None:
            level = s.tokens.refill(now)
            if level <= 0:
                return _refusal("tokens", key, -level / s.tokens.rate)
        if s.requests is not None:
            level = s.requests.refill(now)
            if level < 1:
                return _refusal("requests", key, (1 - level) / s.requests.rate)
            s.requests.level -= 1
        return None

    async def settle(self, key: KeyConfig, tokens: int, cost: float) -> None:
        s = self._state(key)
        if s.tokens is not None and tokens > 0:
            s.tokens.refill(self._clock())
            s.tokens.level -= tokens
        if cost > 0 and math.isfinite(cost):
            s.spent += cost

    async def spent(self, key: KeyConfig) -> float:
        return self._state(key).spent

    async def close(self) -> None:
        return None


# KEYS: requests bucket, tokens bucket, spent. ARGV: now, rpm, tpm, budget (0: none), ttl.
# Numbers leave Lua as strings: Redis truncates a Lua number reply to an integer.
_BUCKET = """
local function level(key, cap, now)
  local v = redis.call('HMGET', key, 'level', 't')
  local l, t = tonumber(v[1]), tonumber(v[2])
  if l == nil then return cap end
  if now > t then l = math.min(cap, l + (now - t) * cap / 60) end
  return l
end
"""
_ADMIT = (
    _BUCKET
    + """
local now, rpm, tpm, budget = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if budget > 0 and tonumber(redis.call('GET', KEYS[3]) or '0') >= budget then
  return {'budget', ''}
end
if tpm > 0 then
  local l = level(KEYS[2], tpm, now)
  if l <= 0 then return {'tokens', tostring(-l * 60 / tpm)} end
end
if rpm > 0 then
  local l = level(KEYS[1], rpm, now)
  if l < 1 then return {'requests', tostring((1 - l) * 60 / rpm)} end
  redis.call('HSET', KEYS[1], 'level', tostring(l - 1), 't', tostring(now))
  redis.call('EXPIRE', KEYS[1], ARGV[5])
end
return {'ok', ''}
"""
)
# KEYS: tokens bucket, spent. ARGV: now, tpm (0: none), tokens, cost, ttl.
_SETTLE = (
    _BUCKET
    + """
local now, tpm, tokens, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if tpm > 0 and tokens > 0 then
  local l = level(KEYS[1], tpm, now)
  redis.call('HSET', KEYS[1], 'level', tostring(l - tokens), 't', tostring(now))
  redis.call('EXPIRE', KEYS[1], ARGV[5])
end
if cost > 0 then redis.call('INCRBYFLOAT', KEYS[2], ARGV[4]) end
return 'ok'
"""
)


def _num(value: float | None) -> str:
    return repr(float(value)) if value is not None else "0"


class RedisStore:
    """Limits and spend in Redis, shared by every gateway process using ``url``.

    ``clock`` is wall-clock seconds (every process's clock is compared, so keep them
    synchronised, as NTP does); the client connects on first use, in the serving loop."""

    def __init__(
        self, url: str, *, clock: Callable[[], float] = time.time, prefix: str = "modelwire:gw:"
    ) -> None:
        self._url = url
        self._clock = clock
        self._prefix = prefix
        self._client: Any = None
        self._admit: Any = None
        self._settle: Any = None

    def __repr__(self) -> str:
        from .._redact import redact_url

        return f"RedisStore({redact_url(self._url)!r})"

    def _connect(self) -> None:
        if self._client is None:
            import redis.asyncio

            self._client = redis.asyncio.from_url(self._url)
            self._admit = self._client.register_script(_ADMIT)
            self._settle = self._client.register_script(_SETTLE)

    def _key(self, key: KeyConfig, part: str) -> str:
        return f"{self._prefix}{key.name}:{part}"

    async def _run(self, script: str, keys: list[str], args: list[str]) -> Any:
        import redis.exceptions

        self._connect()
        fn = self._admit if script == "admit" else self._settle
        try:
            return await fn(keys=keys, args=args)
        except (redis.exceptions.RedisError, OSError) as exc:
            # The URL (it may hold a password) stays out of the message.
            raise StoreUnavailable(
                f"the gateway's Redis is unavailable ({type(exc).__name__})"
            ) from exc

    async def admit(self, key: KeyConfig) -> Refusal | None:
        keys = [self._key(key, "requests"), self._key(key, "tokens"), self._key(key, "spent")]
        args = [repr(self._clock()), _num(key.requests_per_minute),
                _num(key.tokens_per_minute), _num(key.budget_usd), "120"]  # fmt: skip
        kind, wait = await self._run("admit", keys, args)
        kind = kind.decode() if isinstance(kind, bytes) else str(kind)
        if kind == "ok":
            return None
        seconds = float(wait) if wait not in (b"", "") else None
        return _refusal(kind, key, seconds)

    async def settle(self, key: KeyConfig, tokens: int, cost: float) -> None:
        if (key.tokens_per_minute is None or tokens <= 0) and not cost > 0:
            return
        if not math.isfinite(cost):
            cost = 0.0
        keys = [self._key(key, "tokens"), self._key(key, "spent")]
        args = [repr(self._clock()), _num(key.tokens_per_minute), str(max(tokens, 0)),
                repr(float(max(cost, 0.0))), "120"]  # fmt: skip
        await self._run("settle", keys, args)

    async def spent(self, key: KeyConfig) -> float:
        import redis.exceptions

        self._connect()
        try:
            value = await self._client.get(self._key(key, "spent"))
        except (redis.exceptions.RedisError, OSError) as exc:
            raise StoreUnavailable(
                f"the gateway's Redis is unavailable ({type(exc).__name__})"
            ) from exc
        return float(value) if value is not None else 0.0

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()


def open_store(redis_url: str | None, *, clock: Callable[[], float] | None = None) -> LimitStore:
    """The store a config asks for: Redis when it names a URL, else in-process."""
    if redis_url is None:
        return MemoryStore(clock=clock) if clock is not None else MemoryStore()
    import importlib.util

    if importlib.util.find_spec("redis") is None:
        from ..errors import ConfigurationError

        raise ConfigurationError(
            "gateway.redis needs the redis client: pip install 'modelwire[gateway]'"
        )
    return RedisStore(redis_url, clock=clock) if clock is not None else RedisStore(redis_url)
