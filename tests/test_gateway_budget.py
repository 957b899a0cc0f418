"""Budgets that hold: each request of a budgeted key reserves its worst case before it
is sent and settles at its real cost (``gateway._store``), in-process and through
Redis alike; prices and limits that are not finite numbers stop the gateway. The ASGI
app is called directly; MockServer is the backend."""

from __future__ import annotations

import asyncio
import json
import tomllib
from collections.abc import Iterator, MutableMapping
from typing import Any

import pytest

from modelwire import Fallback
from modelwire.errors import ConfigurationError
from modelwire.gateway import Gateway, MemoryStore, app, hash_key, load_config
from modelwire.gateway._store import worst_case_cost
from modelwire.testing import MockServer, Reply, error_reply, parse_script
from modelwire.types import Model, ModelCost
from test_gateway_store import redis_server

KEY = "sk-gw-budget-0123456789"
CHAT = "/v1/chat/completions"
# $1,000 per million tokens ($0.001 a token), a 1,000-token window, 500 out: the worst
# case of one request is 1,000 x $0.001 + 500 x $0.001 = $1.50.
WORST = 1.5


def config(base_url: str, *, name: str = "team-a", **key: Any) -> dict[str, Any]:
    return {
        "models": {
            "smart": {"api": "anthropic-messages", "id": "m", "base_url": base_url,
                      "cost": {"input": 1000, "output": 1000},
                      "context_window": 1000, "max_tokens": 500},
        },
        "keys": {name: {"key_sha256": hash_key(KEY), "models": ["*"], **key}},
    }  # fmt: skip


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def __repr__(self) -> str:
        return f"Answer({self.status}, {self.body[:300]!r})"


async def call(gw: Gateway, body: dict[str, Any], *, leave_mid_stream: bool = False) -> Answer:
    """One Chat Completions request to the ASGI app; the client stays until the answer
    ends, or leaves once the first streamed bytes are written."""
    incoming = [{"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}]
    sent: list[MutableMapping[str, Any]] = []
    ended = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await ended.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and (
            not message.get("more_body", False) or (leave_mid_stream and message.get("body"))
        ):
            ended.set()

    headers = [(b"authorization", f"Bearer {KEY}".encode()),
               (b"content-type", b"application/json")]  # fmt: skip
    scope = {"type": "http", "method": "POST", "path": CHAT, "raw_path": CHAT.encode(),
             "query_string": b"", "headers": headers}  # fmt: skip
    await asyncio.wait_for(gw(scope, receive, send), 60)  # a guard against a hang only
    start = sent[0]
    hdrs = {k.decode(): v.decode() for k, v in start["headers"]}
    return Answer(start["status"], hdrs, b"".join(m.get("body", b"") for m in sent[1:]))


def hi(**extra: Any) -> dict[str, Any]:
    return {"model": "smart", "messages": [{"role": "user", "content": "hi"}], **extra}


@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_fifty_raced_requests_after_a_cheap_answer_pass_the_budget_by_one_worst_case_at_most(
    kind: str, request: pytest.FixtureRequest
) -> None:
    cheap = '[{"text": "a", "usage": {"input": 1, "output": 1}}]'
    large = '[{"text": "b", "usage": {"input": 1000, "output": 500}}]'  # the worst case
    with MockServer() as server:
        server.add(*parse_script(cheap), *(parse_script(large) * 50))
        cfg: dict[str, Any] = config(server.origin + "/v1", budget_usd=10.0)
        if kind == "redis":
            cfg = config(server.origin + "/v1", name=f"team-{request.node.name}-{id(cfg)}",
                         budget_usd=10.0)  # fmt: skip
            cfg["gateway"] = {"redis": request.getfixturevalue("redis_url")}
        # Two apps: two gateway processes (in-process, each has its own store).
        gws = [app(cfg)] if kind == "memory" else [app(cfg), app(cfg)]

        async def go() -> tuple[Answer, list[Answer], float]:
            try:
                first = await call(gws[0], hi(stream=True))
                rest = await asyncio.gather(*(call(gws[i % len(gws)], hi()) for i in range(50)))
                k = next(iter(gws[0].config.keys.values()))
                return first, list(rest), await gws[0].store.spent(k)
            finally:
                for gw in gws:
                    await gw.aclose()

        first, rest, spent = asyncio.run(go())
        served = len(server.requests)
    assert first.status == 200, first
    ok = [a for a in rest if a.status == 200]
    assert ok and len(ok) == served - 1
    for a in rest:
        assert a.status in (200, 403, 429), a
        if a.status == 429:
            assert a.headers["retry-after"] == "1"
    assert spent == pytest.approx(0.002 + WORST * len(ok))
    assert spent <= 10.0 + WORST


class Recording(MemoryStore):
    """A MemoryStore that records what the app reserves and settles."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, Any, str | None]] = []

    async def admit(self, key: Any, *, reserve: float = 0.0, ticket: str | None = None) -> Any:
        self.calls.append(("admit", reserve, ticket))
        return await super().admit(key, reserve=reserve, ticket=ticket)

    async def settle(
        self, key: Any, tokens: int, cost: float, *, ticket: str | None = None
    ) -> None:
        self.calls.append(("settle", (tokens, cost), ticket))
        await super().settle(key, tokens, cost, ticket=ticket)


@pytest.mark.parametrize(("extra", "worst"), [({}, WORST), ({"max_tokens": 100}, 1.1),
                                              ({"max_completion_tokens": 5000}, 2.0)])  # fmt: skip
def test_a_request_reserves_its_worst_case_and_settles_at_its_real_cost(
    extra: dict[str, Any], worst: float
) -> None:
    with MockServer() as server:
        server.add(*parse_script('[{"text": "a", "usage": {"input": 30, "output": 20}}]'))
        store = Recording()
        gw = Gateway(load_config(config(server.origin + "/v1", budget_usd=10.0)), store=store)

        async def go() -> tuple[Answer, float, float]:
            try:
                a = await call(gw, hi(**extra))
                k = gw.config.keys["team-a"]
                return a, await store.spent(k), await store.reserved(k)
            finally:
                await gw.aclose()

        answer, spent, held = asyncio.run(go())
    assert answer.status == 200, answer
    (admit, reserve, ticket), (settle, (tokens, cost), settled) = store.calls
    # The request's output allowance (capped at the window), else the model's.
    assert admit == "admit" and reserve == pytest.approx(worst)
    assert settle == "settle" and settled == ticket and ticket
    assert tokens == 50 and cost == pytest.approx(0.05)
    assert spent == pytest.approx(0.05) and held == 0.0


# An Anthropic stream that stops after its first text delta (and stays open): the
# events of https://docs.anthropic.com/en/api/messages-streaming, the prompt's usage
# in message_start.
_STALLED = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
    b'"type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,'
    b'"stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":1}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"text_delta","text":"hel"}}\n\n'
)


@pytest.mark.parametrize("how", ["backend error", "no backend key", "client leaves mid-stream"])
def test_a_failed_or_cancelled_request_releases_its_reservation(
    how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with MockServer() as server:
        cfg = config(server.origin + "/v1", budget_usd=10.0)
        if how == "backend error":
            server.add(error_reply(500, "boom"), error_reply(500, "boom"), error_reply(500, "boom"))
        elif how == "no backend key":
            monkeypatch.delenv("MW_BUDGET_TEST_KEY", raising=False)
            cfg["models"]["smart"]["api_key_env"] = "MW_BUDGET_TEST_KEY"
        else:
            server.add(Reply(body=_STALLED, stall_after=len(_STALLED)))
        store = MemoryStore()
        gw = Gateway(load_config(cfg), store=store)

        async def go() -> tuple[Answer, float, float]:
            try:
                a = await call(gw, hi(stream=True), leave_mid_stream=how.startswith("client"))
                k = gw.config.keys["team-a"]
                return a, await store.spent(k), await store.reserved(k)
            finally:
                await gw.aclose()

        answer, spent, held = asyncio.run(go())
    assert held == 0.0, answer
    if how == "client leaves mid-stream":
        assert answer.status == 200
        assert spent == pytest.approx(0.101)  # what message_start counted: 100 in, 1 out
    else:
        assert answer.status == (502 if how == "backend error" else 500), answer
        assert spent == 0.0


def test_worst_case_cost() -> None:
    def model(name: str, **fields: Any) -> Model:
        return Model(id=name, api="openai-chat", provider="p", base_url="http://h/v1", **fields)

    a = model("a", cost=ModelCost(input=2, output=8, cache_write=2.5), context_window=10_000,
              max_tokens=1000)  # fmt: skip
    b = model("b", cost=ModelCost(input=1, output=4), context_window=100_000, max_tokens=2000)
    # The whole window at the dearest input price (cache writes here), the allowance out.
    assert worst_case_cost(a) == pytest.approx((10_000 * 2.5 + 1000 * 8) / 1e6)
    assert worst_case_cost(a, 10) == pytest.approx((10_000 * 2.5 + 10 * 8) / 1e6)
    assert worst_case_cost(a, 10**9) == pytest.approx((10_000 * 2.5 + 10_000 * 8) / 1e6)
    assert worst_case_cost(a, "auto") == worst_case_cost(a)
    assert worst_case_cost(Fallback([a, b])) == pytest.approx((100_000 + 2000 * 4) / 1e6)
    assert worst_case_cost(model("free")) == 0.0


_TOML = """
[models.smart]
api = "openai-chat"
id = "m"
base_url = "http://127.0.0.1:1/v1"
{cost}
[keys.team-a]
key_sha256 = "{digest}"
models = ["*"]
{limit}
"""


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e400", "-1", '"10"', "[1]"])
@pytest.mark.parametrize(
    "setting",
    ["cost.input", "cost.cache_write", "requests_per_minute", "tokens_per_minute", "budget_usd"],
)
def test_a_price_or_limit_that_is_no_finite_number_stops_the_gateway(
    setting: str, value: str
) -> None:
    cost = f"cost = {{ {setting[5:]} = {value} }}" if setting.startswith("cost.") else ""
    limit = "" if cost else f"{setting} = {value}"
    text = _TOML.format(cost=cost, limit=limit, digest=hash_key(KEY))
    where = f"models.smart.{setting}" if cost else f"keys.team-a.{setting}"
    with pytest.raises(ConfigurationError) as info:
        load_config(tomllib.loads(text))
    message = info.value.message
    assert message.startswith(f"{where} must be "), message
    # TOML reads 1e400 as infinity.
    assert ("finite number" in message) == (value in ("inf", "-inf", "nan", "1e400")), message
