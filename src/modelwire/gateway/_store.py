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
  past ``budget_usd``. A cost is known only once an answer ends, so each request
  admitted under a budget first *reserves* its worst case (:func:`worst_case_cost`,
  from the request and the model's prices, never from what earlier answers cost) under
  a ticket it names; it is admitted only while the spend plus every reservation plus
  its own fits the budget, or when nothing else is reserved (so a budget smaller than
  one worst case still serves one request at a time). Settling the ticket replaces
  the reservation with the real cost. The spend can pass the budget by at most one
  request's worst case, however many requests race in and whatever earlier answers
  cost. In-process, spend counts from the start of the process; in Redis it stays
  until the key ``modelwire:gw:NAME:spent`` is deleted.

Every admission is one step: in-process, one critical section (a lock, no await
inside); in Redis, one Lua script per admission and one per settlement
(https://redis.io/docs/latest/develop/interact/programmability/eval-intro/: a script
runs atomically, nothing else runs meanwhile), so requests through different processes
cannot both take the last slot or the last dollars. Bucket keys expire once idle (a
full bucket is the same as none); a reservation left by a process that died expires
after ``hold_seconds``; keys are namespaced ``modelwire:gw:<key name>:…``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ._config import KeyConfig

if TYPE_CHECKING:
    from .._call._fallback import Fallback
    from ..types import Model

__all__ = [
    "LimitStore",
    "MemoryStore",
    "RedisStore",
    "Refusal",
    "StoreUnavailable",
    "open_store",
    "worst_case_cost",
]

#: A dollar amount past any budget: what a reservation or a cost that is not a
#: finite number (a price so large the product overflows) is counted as, so it spends
#: the budget rather than being dropped.
_ALL = 1e15


class Refusal(NamedTuple):
    """Why a request is refused: ``kind`` ``requests``, ``tokens``, ``budget`` (spent)
    or ``reserved`` (requests in flight may spend the rest of the budget)."""

    kind: str
    message: str
    retry_after: float | None = None


class StoreUnavailable(Exception):
    """The shared store (Redis) could not be reached."""


class LimitStore(Protocol):
    """Where the gateway books each key's requests, tokens and spend.

    :class:`MemoryStore` (one process) and :class:`RedisStore` (shared by every
    gateway process using one Redis) implement it; pass another as
    ``Gateway(config, store=...)`` to keep the limits elsewhere. Each method is one
    atomic step: two requests racing must not both take the last slot or the last
    dollars (see the module docs for the rules).
    """

    async def admit(
        self, key: KeyConfig, *, reserve: float = 0.0, ticket: str | None = None
    ) -> Refusal | None:
        """Book one request of ``key``; a :class:`Refusal` when a limit says no. With
        a budget and a ``ticket``: also reserve ``reserve`` dollars under it, in the
        same step as the checks.

        Args:
            key: The key the request came with.
            reserve: The request's worst-case cost, in dollars.
            ticket: The request's id, naming its reservation.
        """
        ...

    async def settle(
        self, key: KeyConfig, tokens: int, cost: float, *, ticket: str | None = None
    ) -> None:
        """Charge a request's tokens and dollars, and release its reservation
        (``ticket``; a failed request settles with what it used, often nothing).

        Args:
            key: The key the request came with.
            tokens: Input plus output tokens of the answer.
            cost: Dollars the answer cost.
            ticket: The request's reservation.
        """
        ...

    async def spent(self, key: KeyConfig) -> float:
        """Dollars spent so far by ``key``.

        Args:
            key: The key asked about.
        """
        ...

    async def close(self) -> None:
        """Release connections; the gateway calls it when it shuts down."""
        ...


def worst_case_cost(target: Model | Fallback, max_tokens: object = None) -> float:
    """The most one request to ``target`` may cost, in dollars: its whole output
    allowance (``max_tokens`` when the request sets it, else the model's) at the output
    price, plus a whole context window of prompt at the dearest input price (plain,
    cache read or cache write). For a fallback, the dearest of its models."""
    from .._call._fallback import Fallback

    models = target.models if isinstance(target, Fallback) else (target,)
    worst = 0.0
    for m in models:
        c = m.cost
        out = m.max_tokens
        if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > 0:
            out = max_tokens
        out = min(out, m.context_window)  # no model writes past its window
        prompt = m.context_window * max(c.input, c.cache_read, c.cache_write)
        worst = max(worst, (prompt + out * c.output) / 1e6)
    return _dollars(worst)


def _dollars(value: float) -> float:
    """A reservation or cost as a finite, non-negative amount (see :data:`_ALL`)."""
    if value != value or value > _ALL:  # NaN or past any budget (inf included)
        return _ALL
    return value if value > 0 else 0.0


def _refusal(kind: str, key: KeyConfig, wait: float | None) -> Refusal:
    if kind == "budget":
        return Refusal(
            "budget",
            f"the budget of this key (${key.budget_usd:g}) is spent; ask the gateway's "
            "operator to raise budget_usd",
        )
    if kind == "reserved":
        return Refusal(
            "reserved",
            f"this key's requests in flight may spend the rest of its budget "
            f"(${key.budget_usd:g}); retry when they end",
            wait,
        )
    limit = key.requests_per_minute if kind == "requests" else key.tokens_per_minute
    return Refusal(
        kind, f"this key's limit of {limit:g} {kind} per minute is reached; retry later", wait
    )


#: retry-after of a ``reserved`` refusal: the requests in flight end at their own
#: pace, so no wait is known; a client retrying after a second finds the room their
#: settlement left.
_RESERVED_WAIT = 1.0


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
    __slots__ = ("held", "requests", "spent", "tokens")

    def __init__(self) -> None:
        self.requests: _Bucket | None = None
        self.tokens: _Bucket | None = None
        self.spent = 0.0
        self.held: dict[str, float] = {}  # ticket -> dollars reserved


class MemoryStore:
    """Limits and spend in this process (lost when it exits).

    The default store: right for one gateway process. Behind a load balancer use
    :class:`RedisStore` (``[gateway] redis``) so every process shares the limits.

    Args:
        clock: Seconds, monotonic; tests pass their own to drive the buckets.
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._keys: dict[str, _KeyState] = {}
        # Each admission and settlement is one critical section: no await inside, and
        # a lock for a store shared by apps on several threads' event loops.
        self._lock = threading.Lock()

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

    async def admit(
        self, key: KeyConfig, *, reserve: float = 0.0, ticket: str | None = None
    ) -> Refusal | None:
        """:meth:`LimitStore.admit`, in one critical section."""
        with self._lock:
            return self._admit(key, _dollars(reserve), ticket)

    def _admit(self, key: KeyConfig, reserve: float, ticket: str | None) -> Refusal | None:
        s = self._state(key)
        now = self._clock()
        budget = key.budget_usd
        if budget is not None and s.spent >= budget:
            return _refusal("budget", key, None)
        if s.tokens is not None:
            level = s.tokens.refill(now)
            if level <= 0:
                return _refusal("tokens", key, -level / s.tokens.rate)
        if s.requests is not None:
            level = s.requests.refill(now)
            if level < 1:
                return _refusal("requests", key, (1 - level) / s.requests.rate)
        hold = budget is not None and ticket is not None
        if hold:
            assert budget is not None
            held = sum(s.held.values())
            if held > 0 and s.spent + held + reserve > budget:
                return _refusal("reserved", key, _RESERVED_WAIT)
        # Every check passed: book them all.
        if s.requests is not None:
            s.requests.level -= 1
        if hold:
            assert ticket is not None
            s.held[ticket] = reserve
        return None

    async def settle(
        self, key: KeyConfig, tokens: int, cost: float, *, ticket: str | None = None
    ) -> None:
        """:meth:`LimitStore.settle`, in one critical section."""
        with self._lock:
            s = self._state(key)
            if ticket is not None:
                s.held.pop(ticket, None)
            if s.tokens is not None and tokens > 0:
                s.tokens.refill(self._clock())
                s.tokens.level -= tokens
            s.spent += _dollars(cost)

    async def spent(self, key: KeyConfig) -> float:
        """:meth:`LimitStore.spent`."""
        return self._state(key).spent

    async def reserved(self, key: KeyConfig) -> float:
        """Dollars reserved by ``key``'s requests in flight."""
        return sum(self._state(key).held.values())

    async def close(self) -> None:
        """Nothing to release."""
        return None


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
# KEYS: requests bucket, tokens bucket, spent, held (hash ticket -> dollars), held
# deadlines (sorted set ticket -> time). ARGV: now, rpm, tpm, budget (0: none), ttl,
# reserve, ticket ('': none), hold seconds. Every check first, then every booking: a
# refused request books nothing.
_ADMIT = (
    _BUCKET
    + """
local now, rpm, tpm, budget = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local reserve, ticket, hold = tonumber(ARGV[6]), ARGV[7], tonumber(ARGV[8])
local spent = tonumber(redis.call('GET', KEYS[3]) or '0')
if budget > 0 and spent >= budget then return {'budget', ''} end
if tpm > 0 then
  local l = level(KEYS[2], tpm, now)
  if l <= 0 then return {'tokens', tostring(-l * 60 / tpm)} end
end
local rl = 0
if rpm > 0 then
  rl = level(KEYS[1], rpm, now)
  if rl < 1 then return {'requests', tostring((1 - rl) * 60 / rpm)} end
end
local holding = budget > 0 and ticket ~= ''
if holding then
  -- Reservations past their deadline were left by a process that never settled them.
  local stale = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now)
  for _, t in ipairs(stale) do redis.call('HDEL', KEYS[4], t) end
  if #stale > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now) end
  local held = 0
  for _, v in ipairs(redis.call('HVALS', KEYS[4])) do held = held + tonumber(v) end
  if held > 0 and spent + held + reserve > budget then return {'reserved', ''} end
end
if rpm > 0 then
  redis.call('HSET', KEYS[1], 'level', tostring(rl - 1), 't', tostring(now))
  redis.call('EXPIRE', KEYS[1], ARGV[5])
end
if holding then
  redis.call('HSET', KEYS[4], ticket, ARGV[6])
  redis.call('ZADD', KEYS[5], now + hold, ticket)
  redis.call('EXPIRE', KEYS[4], ARGV[8])
  redis.call('EXPIRE', KEYS[5], ARGV[8])
end
return {'ok', ''}
"""
)
# KEYS: tokens bucket, spent, held, held deadlines. ARGV: now, tpm (0: none), tokens,
# cost, ttl, ticket ('': none).
_SETTLE = (
    _BUCKET
    + """
local now, tpm, tokens, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if ARGV[6] ~= '' then
  redis.call('HDEL', KEYS[3], ARGV[6])
  redis.call('ZREM', KEYS[4], ARGV[6])
end
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
    synchronised, as NTP does); the client connects on first use, in the serving loop.
    ``hold_seconds``: how long a reservation outlives a process that died before
    settling it (longer than any request runs).

    Args:
        url: A ``redis://``, ``rediss://`` or ``unix://`` URL.
        clock: Wall-clock seconds.
        prefix: The namespace of every key it writes.
        hold_seconds: How long an unsettled reservation is kept.
    """

    def __init__(
        self,
        url: str,
        *,
        clock: Callable[[], float] = time.time,
        prefix: str = "modelwire:gw:",
        hold_seconds: int = 3600,
    ) -> None:
        self._url = url
        self._clock = clock
        self._prefix = prefix
        self._hold = int(hold_seconds)
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
            # EVALSHA, and EVAL once when the server does not have the script yet.
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

    async def admit(
        self, key: KeyConfig, *, reserve: float = 0.0, ticket: str | None = None
    ) -> Refusal | None:
        """:meth:`LimitStore.admit`, in one Lua script."""
        keys = [self._key(key, p) for p in ("requests", "tokens", "spent", "held", "held-until")]
        args = [repr(self._clock()), _num(key.requests_per_minute),
                _num(key.tokens_per_minute), _num(key.budget_usd), "120",
                repr(_dollars(reserve)), ticket or "", str(self._hold)]  # fmt: skip
        kind, wait = await self._run("admit", keys, args)
        kind = kind.decode() if isinstance(kind, bytes) else str(kind)
        if kind == "ok":
            return None
        if kind == "reserved":
            return _refusal(kind, key, _RESERVED_WAIT)
        seconds = float(wait) if wait not in (b"", "") else None
        return _refusal(kind, key, seconds)

    async def settle(
        self, key: KeyConfig, tokens: int, cost: float, *, ticket: str | None = None
    ) -> None:
        """:meth:`LimitStore.settle`, in one Lua script."""
        charge = _dollars(cost)
        if (key.tokens_per_minute is None or tokens <= 0) and not charge > 0 and not ticket:
            return
        keys = [self._key(key, p) for p in ("tokens", "spent", "held", "held-until")]
        args = [repr(self._clock()), _num(key.tokens_per_minute), str(max(tokens, 0)),
                repr(charge), "120", ticket or ""]  # fmt: skip
        await self._run("settle", keys, args)

    async def _get(self, call: Callable[[], Any]) -> Any:
        import redis.exceptions

        self._connect()
        try:
            return await call()
        except (redis.exceptions.RedisError, OSError) as exc:
            raise StoreUnavailable(
                f"the gateway's Redis is unavailable ({type(exc).__name__})"
            ) from exc

    async def spent(self, key: KeyConfig) -> float:
        """:meth:`LimitStore.spent`."""
        value = await self._get(lambda: self._client.get(self._key(key, "spent")))
        return float(value) if value is not None else 0.0

    async def reserved(self, key: KeyConfig) -> float:
        """Dollars reserved by ``key``'s requests in flight (expired ones included
        until the next admission drops them)."""
        values = await self._get(lambda: self._client.hvals(self._key(key, "held")))
        return sum(float(v) for v in values)

    async def close(self) -> None:
        """Close the Redis connection."""
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
