"""The gateway against hostile and careless clients: malformed bodies, odd HTTP,
keys sent wrong, budgets raced — every answer the API's own 4xx naming the field,
never a 500, a traceback or a hang. The ASGI app is called directly (each request
a scripted ``receive``), for all three front-ends; a MockServer is the backend."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import pytest

from modelwire.gateway import Gateway, app, hash_key
from modelwire.testing import MockServer, parse_script
from test_gateway_app import StallingBackend

KEY = "sk-gw-hostile-0123456789"
OTHER = "sk-gw-hostile-other-987"
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses",
         "anthropic": "/v1/messages"}  # fmt: skip
FRONTENDS = list(PATHS)


@pytest.fixture(scope="module")
def backend() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def config(base_url: str, **key: Any) -> dict[str, Any]:
    return {
        "models": {
            "smart": {"api": "openai-chat", "id": "m", "base_url": base_url},
            "secret-model": {"api": "openai-chat", "id": "m2", "base_url": base_url},
        },
        "keys": {
            "a": {"key_sha256": hash_key(KEY), "models": ["smart"], **key},
            "b": {"key_sha256": hash_key(OTHER), "models": ["*"]},
        },
    }


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        return json.loads(self.body)

    def message(self) -> str:
        err = self.json()["error"]
        return str(err["message"])

    def __repr__(self) -> str:
        return f"Answer({self.status}, {self.body[:300]!r})"


def auth(key: str = KEY) -> list[tuple[bytes, bytes]]:
    return [(b"authorization", f"Bearer {key}".encode()), (b"content-type", b"application/json")]


async def call(
    gw: Gateway, path: str, body: bytes = b"", *, method: str = "POST",
    headers: list[tuple[bytes, bytes]] | None = None, chunks: list[bytes] | None = None,
) -> Answer:  # fmt: skip
    """One request to the ASGI app; the client stays connected until the answer ends."""
    parts = [body] if chunks is None else chunks
    incoming: list[dict[str, Any]] = [
        {"type": "http.request", "body": c, "more_body": i < len(parts) - 1}
        for i, c in enumerate(parts)
    ]
    sent: list[MutableMapping[str, Any]] = []
    ended = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await ended.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            ended.set()

    scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(),
             "query_string": b"", "headers": auth() if headers is None else headers}  # fmt: skip
    await asyncio.wait_for(gw(scope, receive, send), 60)  # a guard against a hang only
    start = sent[0]
    hdrs = {k.decode(): v.decode() for k, v in start["headers"]}
    return Answer(start["status"], hdrs, b"".join(m.get("body", b"") for m in sent[1:]))


def run(gw: Gateway, *requests: Any) -> list[Answer]:
    async def go() -> list[Answer]:
        try:
            return list(await asyncio.gather(*requests))
        finally:
            await gw.aclose()

    return asyncio.run(go())


def good(fe: str, **extra: Any) -> dict[str, Any]:
    if fe == "chat":
        body: dict[str, Any] = {"model": "smart", "messages": [{"role": "user", "content": "hi"}]}
    elif fe == "responses":
        body = {"model": "smart", "input": "hi"}
    else:
        body = {"model": "smart", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    body.update(extra)
    return body


def turns(fe: str) -> str:
    return "input" if fe == "responses" else "messages"


def check_4xx(fe: str, a: Answer, status: int = 400, where: str | None = None) -> str:
    """The API's own error shape, with ``where`` (a field path) in the message."""
    assert a.status == status, a
    body = a.json()
    if fe == "anthropic":
        assert body["type"] == "error" and set(body["error"]) == {"type", "message"}
    else:
        assert set(body["error"]) >= {"message", "type", "param", "code"}
        if where is not None and status == 400:
            assert body["error"]["param"] == where, a
    message = a.message()
    assert "Traceback" not in message and "Expected `" not in message, message
    if where is not None:
        assert where in message, message
    return message


# --------------------------------------------------------------------------- bodies


def _bodies(fe: str) -> list[tuple[str, bytes, str | None]]:
    g = good(fe)
    m = turns(fe)
    text = json.dumps(g)
    deep = "[" * 3000 + "]" * 3000
    return [
        ("not json", b"{nope", None),
        ("empty", b"", None),
        ("array", b"[1, 2]", None),
        ("null", b"null", None),
        ("invalid utf-8", text.replace('"smart"', '"sm\\u0061rt\xff"').encode("latin-1"), None),
        ("lone surrogate", text.replace('"hi"', '"h\\ud800i"').encode(), None),
        ("NaN", text.replace('"smart"', '"smart", "temperature": NaN').encode(), None),
        ("Infinity", text.replace('"smart"', '"smart", "temperature": -Infinity').encode(), None),
        ("deep unknown field", text.replace('"smart"', f'"smart", "zzz": {deep}').encode(), None),
        ("deep content", text.replace('"hi"', deep).encode(), None),
        ("model int", json.dumps({**g, "model": 3}).encode(), "model"),
        ("model null", json.dumps({**g, "model": None}).encode(), "model"),
        ("no model", json.dumps({k: v for k, v in g.items() if k != "model"}).encode(), "model"),
        ("empty model", json.dumps({**g, "model": ""}).encode(), "model"),
        ("turns object", json.dumps({**g, m: {"a": 1}}).encode(), m),
        ("turns empty", json.dumps({**g, m: []}).encode(), m),
        ("turn int", json.dumps({**g, m: [1]}).encode(), f"{m}[0]"),
        ("turn null", json.dumps({**g, m: [None]}).encode(), f"{m}[0]"),
        (
            "role unknown",
            json.dumps({**g, m: [{"role": "wizard", "content": "x"}]}).encode(),
            f"{m}[0].role",
        ),
        (
            "content int",
            json.dumps({**g, m: [{"role": "user", "content": 5}]}).encode(),
            f"{m}[0].content",
        ),
        (
            "content part int",
            json.dumps({**g, m: [{"role": "user", "content": [5]}]}).encode(),
            f"{m}[0].content[0]",
        ),
        (
            "content part {}",
            json.dumps({**g, m: [{"role": "user", "content": [{}]}]}).encode(),
            f"{m}[0].content[0].type",
        ),
        ("stream string", json.dumps({**g, "stream": "yes"}).encode(), "stream"),
        ("temperature string", json.dumps({**g, "temperature": "hot"}).encode(), "temperature"),
        ("tools object", json.dumps({**g, "tools": {"x": 1}}).encode(), "tools"),
        ("tool int", json.dumps({**g, "tools": [1]}).encode(), "tools[0]"),
        (
            "empty user text",
            json.dumps({**g, m: [{"role": "user", "content": ""}]}).encode(),
            f"{m}[0].content",
        ),
        (
            "empty user content",
            json.dumps({**g, m: [{"role": "user", "content": []}]}).encode(),
            f"{m}[0].content",
        ),
    ]


BODIES = [(fe, name, body, where) for fe in FRONTENDS for name, body, where in _bodies(fe)]


@pytest.mark.parametrize(("fe", "name", "body", "where"), BODIES,
                         ids=[f"{fe}-{name}" for fe, name, _, _ in BODIES])  # fmt: skip
def test_a_bad_body_is_the_apis_400_naming_the_field(
    backend: MockServer, fe: str, name: str, body: bytes, where: str | None
) -> None:
    gw = app(config(backend.origin + "/v1"))
    before = len(backend.requests)
    (a,) = run(gw, call(gw, PATHS[fe], body))
    check_4xx(fe, a, 400, where)
    assert len(backend.requests) == before  # refused before any backend call


def _tool_turns(fe: str, arguments: str, call_id: str = "c1") -> list[MutableMapping[str, Any]]:
    if fe == "chat":
        return [
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "f", "arguments": arguments},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": "r"},
        ]
    return [
        {"role": "user", "content": "x"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": arguments},
        {"type": "function_call_output", "call_id": call_id, "output": "r"},
    ]


@pytest.mark.parametrize("fe", ["chat", "responses"])
@pytest.mark.parametrize("arguments", ["{not json", "[1, 2]", '"text"', '{"a": 1'])
def test_tool_call_arguments_that_are_no_json_object_are_refused(
    backend: MockServer, fe: str, arguments: str
) -> None:
    # Another backend API holds arguments as an object: text that is none could not
    # reach it, so the gateway refuses it rather than send the backend {}.
    gw = app(config(backend.origin + "/v1"))
    (a,) = run(gw, call(gw, PATHS[fe], json.dumps(good(fe, **{turns(fe): _tool_turns(fe, arguments)})).encode()))  # fmt: skip
    where = "messages[1].tool_calls[0].function.arguments" if fe == "chat" else "input[1].arguments"
    check_4xx(fe, a, 400, where)


def test_a_tool_result_for_an_unknown_call_id_is_refused(backend: MockServer) -> None:
    gw = app(config(backend.origin + "/v1"))
    bodies = {
        "chat": good("chat", messages=_tool_turns("chat", "{}", "nope")),
        "responses": good("responses", input=_tool_turns("responses", "{}", "nope")),
        "anthropic": good(
            "anthropic",
            messages=[
                {"role": "user", "content": "x"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "c1", "name": "f", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "nope", "content": "r"}],
                },
            ],
        ),
    }
    answers = run(gw, *(call(gw, PATHS[fe], json.dumps(b).encode()) for fe, b in bodies.items()))
    where = {"chat": "messages[2].tool_call_id", "responses": "input[2].call_id",
             "anthropic": "messages[2].content[0].tool_use_id"}  # fmt: skip
    for fe, a in zip(bodies, answers, strict=True):
        check_4xx(fe, a, 400, where[fe])


def test_chat_an_assistant_turn_with_nothing_is_refused(backend: MockServer) -> None:
    gw = app(config(backend.origin + "/v1"))
    body = good("chat", messages=[{"role": "user", "content": "x"}, {"role": "assistant"},
                                  {"role": "user", "content": "y"}])  # fmt: skip
    (a,) = run(gw, call(gw, PATHS["chat"], json.dumps(body).encode()))
    check_4xx("chat", a, 400, "messages[1]")


def test_chat_only_system_messages_is_refused(backend: MockServer) -> None:
    gw = app(config(backend.origin + "/v1"))
    body = good("chat", messages=[{"role": "system", "content": "be brief"}])
    (a,) = run(gw, call(gw, PATHS["chat"], json.dumps(body).encode()))
    check_4xx("chat", a, 400, "messages")


@pytest.mark.parametrize("fe", FRONTENDS)
def test_max_tokens_past_any_model_is_refused(backend: MockServer, fe: str) -> None:
    gw = app(config(backend.origin + "/v1"))
    field = "max_output_tokens" if fe == "responses" else "max_tokens"
    (a,) = run(gw, call(gw, PATHS[fe], json.dumps(good(fe, **{field: 10**30})).encode()))
    check_4xx(fe, a, 400, field)


@pytest.mark.parametrize("fe", FRONTENDS)
def test_duplicate_keys_the_last_one_counts(backend: MockServer, fe: str) -> None:
    # RFC 8259 §4 leaves duplicate names to the parser; msgspec (like Python's json)
    # keeps the last, in every front-end alike, so a key allowed "smart" only is
    # still refused a second "model" it may not use.
    gw = app(config(backend.origin + "/v1"))
    text = json.dumps(good(fe)).replace(
        '"model": "smart"', '"model": "smart", "model": "secret-model"'
    )
    (a,) = run(gw, call(gw, PATHS[fe], text.encode()))
    check_4xx(fe, a, 404)


# --------------------------------------------------------------------------- HTTP


@pytest.mark.parametrize("fe", FRONTENDS)
@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_another_method_on_a_post_path_is_405_with_allow(
    backend: MockServer, fe: str, method: str
) -> None:
    gw = app(config(backend.origin + "/v1"))
    (a,) = run(gw, call(gw, PATHS[fe], method=method))
    check_4xx(fe, a, 405)
    assert a.headers["allow"] == "POST"


def test_a_post_on_models_is_405_with_allow(backend: MockServer) -> None:
    gw = app(config(backend.origin + "/v1"))
    (a,) = run(gw, call(gw, "/v1/models", b"{}"))
    assert a.status == 405 and a.headers["allow"] == "GET", a


@pytest.mark.parametrize("fe", FRONTENDS)
def test_a_trailing_slash_is_the_same_endpoint(backend: MockServer, fe: str) -> None:
    backend.add("slash")
    gw = app(config(backend.origin + "/v1"))
    (a,) = run(gw, call(gw, PATHS[fe] + "/", json.dumps(good(fe)).encode()))
    assert a.status == 200, a
    assert b"slash" in a.body


@pytest.mark.parametrize("fe", FRONTENDS)
def test_a_body_in_many_chunks_without_content_type(backend: MockServer, fe: str) -> None:
    # A chunked request body arrives as several http.request messages; the
    # content-type is not needed to read JSON (curl -d sends form-urlencoded).
    backend.add("chunked")
    gw = app(config(backend.origin + "/v1"))
    body = json.dumps(good(fe)).encode()
    parts = [body[i : i + 7] for i in range(0, len(body), 7)]
    headers = [(b"authorization", f"Bearer {KEY}".encode())]
    (a,) = run(gw, call(gw, PATHS[fe], chunks=parts, headers=headers))
    assert a.status == 200, a
    assert b"chunked" in a.body


@pytest.mark.parametrize("fe", FRONTENDS)
def test_a_body_past_the_limit_is_413_however_it_comes(backend: MockServer, fe: str) -> None:
    cfg = config(backend.origin + "/v1")
    cfg["gateway"] = {"max_body_bytes": 1_000_000}
    gw = app(cfg)
    big = json.dumps(good(fe, zzz="x" * 10_000_000)).encode()  # 10 MB
    declared = [*auth(), (b"content-length", str(len(big)).encode())]
    lying = [*auth(), (b"content-length", b"10")]  # says 10 bytes, sends 10 MB
    chunks = [big[i : i + 65536] for i in range(0, len(big), 65536)]
    answers = run(
        gw,
        call(gw, PATHS[fe], big, headers=declared),
        call(gw, PATHS[fe], chunks=chunks, headers=lying),
        call(gw, PATHS[fe], chunks=chunks),
    )
    for a in answers:
        check_4xx(fe, a, 413)
        assert "max_body_bytes" in a.message()


# --------------------------------------------------------------------------- auth


@pytest.mark.parametrize("fe", FRONTENDS)
@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ([], "no gateway key"),
        ([(b"authorization", b"Bearer sk-wrong")], "not valid"),
        ([(b"authorization", b"Bearer " + KEY.encode() + b"x")], "not valid"),
        ([(b"authorization", b"Bearer " + KEY[:-1].encode())], "not valid"),
        ([(b"x-api-key", b"   ")], "no gateway key"),
        ([(b"authorization", b"Bearer " + KEY.encode()), (b"x-api-key", OTHER.encode())],
         "two different gateway keys"),
        ([(b"authorization", b"Bearer " + KEY.encode() + b" extra")], "not valid"),
    ],
)  # fmt: skip
def test_a_missing_wrong_or_doubled_key_is_401(
    backend: MockServer, fe: str, headers: list[tuple[bytes, bytes]], why: str
) -> None:
    gw = app(config(backend.origin + "/v1"))
    before = len(backend.requests)
    (a,) = run(gw, call(gw, PATHS[fe], json.dumps(good(fe)).encode(), headers=headers))
    assert why in check_4xx(fe, a, 401)
    assert KEY not in a.body.decode() and OTHER not in a.body.decode()
    assert len(backend.requests) == before


@pytest.mark.parametrize("fe", FRONTENDS)
def test_a_key_with_spaces_around_it_or_in_both_headers_alike_is_valid(
    backend: MockServer, fe: str
) -> None:
    backend.add("one", "two")
    gw = app(config(backend.origin + "/v1"))
    body = json.dumps(good(fe)).encode()
    spaced = [(b"authorization", f"Bearer   {KEY}  ".encode())]
    both = [(b"authorization", f"Bearer {KEY}".encode()), (b"x-api-key", f" {KEY}".encode())]
    answers = run(gw, call(gw, PATHS[fe], body, headers=spaced),
                  call(gw, PATHS[fe], body, headers=both))  # fmt: skip
    assert [a.status for a in answers] == [200, 200], answers


@pytest.mark.parametrize("fe", FRONTENDS)
def test_a_model_the_key_may_not_use_is_the_404_of_an_unknown_one(
    backend: MockServer, fe: str
) -> None:
    gw = app(config(backend.origin + "/v1"))
    forbidden, unknown = run(
        gw,
        call(gw, PATHS[fe], json.dumps(good(fe, model="secret-model")).encode()),
        call(gw, PATHS[fe], json.dumps(good(fe, model="no-such-model")).encode()),
    )
    check_4xx(fe, forbidden, 404)
    check_4xx(fe, unknown, 404)
    # The same answer but for the name the client sent: nothing tells them apart.
    assert forbidden.body.replace(b"secret-model", b"no-such-model") == unknown.body


@pytest.mark.parametrize("anthropic", [False, True])
def test_models_lists_only_the_names_the_key_may_use(backend: MockServer, anthropic: bool) -> None:
    gw = app(config(backend.origin + "/v1"))
    extra = [(b"anthropic-version", b"2023-06-01")] if anthropic else []
    mine, everything, nobody = run(
        gw,
        call(gw, "/v1/models", method="GET", headers=[*auth(), *extra]),
        call(gw, "/v1/models", method="GET", headers=[*auth(OTHER), *extra]),
        call(gw, "/v1/models", method="GET", headers=extra),
    )
    assert [m["id"] for m in mine.json()["data"]] == ["smart"]
    assert b"secret-model" not in mine.body
    assert [m["id"] for m in everything.json()["data"]] == ["smart", "secret-model"]
    assert nobody.status == 401 and b"secret-model" not in nobody.body


# --------------------------------------------------------------------------- budget


def _priced(base_url: str, **key: Any) -> dict[str, Any]:
    cfg = config(base_url, **key)
    # $1 per token: an answer of 1 input + 1 output token costs $2.
    cfg["models"]["smart"]["cost"] = {"input": 1_000_000, "output": 1_000_000}
    return cfg


@pytest.mark.parametrize("fe", FRONTENDS)
def test_fifty_raced_requests_overspend_a_budget_by_at_most_one(fe: str) -> None:
    reply = '[{"text": "a", "usage": {"input": 1, "output": 1}}]'
    with MockServer() as server:
        server.add(*(parse_script(reply) * 50))
        gw = app(_priced(server.origin + "/v1", budget_usd=5.0))
        body = json.dumps(good(fe)).encode()
        answers = run(gw, *(call(gw, PATHS[fe], body) for _ in range(50)))
        spent = asyncio.run(gw.store.spent(gw.config.keys["a"]))
        served = len(server.requests)
    ok = [a for a in answers if a.status == 200]
    refused = [a for a in answers if a.status != 200]
    # $5 of budget, $2 an answer: three answers ($6) at most — one past the budget.
    assert 1 <= len(ok) == served <= 3, [a.status for a in answers]
    assert spent == 2.0 * served <= 5.0 + 2.0
    for a in refused:
        assert a.status in (403, 429), a
        if a.status == 429:
            assert 1 <= int(a.headers["retry-after"]) <= 60


def test_a_free_model_is_not_held_to_one_request_at_a_time() -> None:
    # Answers that cost nothing leave a budget as it was: raced requests all run.
    reply = '[{"text": "a", "usage": {"input": 1, "output": 1}}]'
    with MockServer() as server:
        server.add(*(parse_script(reply) * 11))
        gw = app(config(server.origin + "/v1", budget_usd=1.0))
        body = json.dumps(good("chat")).encode()

        async def go() -> list[Answer]:
            try:
                first = await call(gw, PATHS["chat"], body)  # one answer: its cost is known
                rest = await asyncio.gather(*(call(gw, PATHS["chat"], body) for _ in range(10)))
                return [first, *rest]
            finally:
                await gw.aclose()

        answers = asyncio.run(go())
    assert [a.status for a in answers] == [200] * 11


# --------------------------------------------------------------------------- disconnects


async def _leave(
    gw: Gateway, path: str, body: bytes, when: str, backend: StallingBackend
) -> list[MutableMapping[str, Any]]:
    """A request whose client goes away at ``when``; what the app sent."""
    sent: list[MutableMapping[str, Any]] = []
    wrote = asyncio.Event()
    half = len(body) // 2

    async def gone_when(ready: Any) -> dict[str, Any]:
        await ready()
        return {"type": "http.disconnect"}

    steps: list[Any]
    if when == "before the body":
        steps = []
    elif when == "mid-body":
        steps = [{"type": "http.request", "body": body[:half], "more_body": True}]
    else:
        steps = [{"type": "http.request", "body": body, "more_body": False}]

    async def backend_asked() -> None:
        await asyncio.to_thread(backend.got_request.wait, 30)

    async def receive() -> dict[str, Any]:
        if steps:
            return steps.pop(0)  # type: ignore[no-any-return]
        if when.startswith("waiting for"):
            return await gone_when(backend_asked)
        if when == "mid-stream":
            return await gone_when(wrote.wait)
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and message.get("body"):
            wrote.set()

    scope = {"type": "http", "method": "POST", "path": path, "raw_path": path.encode(),
             "query_string": b"", "headers": auth()}  # fmt: skip
    await asyncio.wait_for(gw(scope, receive, send), 60)
    return sent


WHEN = ["before the body", "mid-body", "waiting for the answer", "waiting for the stream",
        "mid-stream"]  # fmt: skip


@pytest.mark.parametrize("fe", FRONTENDS)
@pytest.mark.parametrize("when", WHEN)
def test_a_client_leaving_cancels_the_backend_leaks_no_task_and_is_logged(
    tmp_path: Path, fe: str, when: str
) -> None:
    backend = StallingBackend()
    cfg = {
        "models": {"smart": {"api": "openai-chat", "id": "m", "base_url": backend.base_url}},
        "keys": {"a": {"key_sha256": hash_key(KEY), "models": ["*"]}},
        "gateway": {"log": str(tmp_path / "gw.db")},
    }
    body = json.dumps(good(fe, stream=when in ("mid-stream", "waiting for the stream"))).encode()
    try:

        async def go() -> tuple[list[MutableMapping[str, Any]], set[asyncio.Task[Any]]]:
            gw = app(cfg)
            try:
                sent = await _leave(gw, PATHS[fe], body, when, backend)
            finally:
                await gw.aclose()
            # What the app started has ended with it (the backend stream, the
            # disconnect watcher, the log write).
            await asyncio.sleep(0)
            left = {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}
            return sent, left

        sent, left = asyncio.run(go())
        assert left == set()
        if when not in ("before the body", "mid-body"):
            assert backend.got_request.is_set()
            assert backend.closed.wait(30), "the backend connection stayed open"
        else:
            assert not backend.got_request.is_set()  # nothing was asked of a backend
    finally:
        backend.close()
    statuses = [m["status"] for m in sent if m["type"] == "http.response.start"]
    assert statuses in ([], [499], [200]), statuses
    with sqlite3.connect(tmp_path / "gw.db") as conn:
        rows = conn.execute("SELECT status, key_name FROM gateway_requests").fetchall()
    # Logged as the client's leaving (nginx's 499), whatever was sent before; the key
    # is authenticated from the headers, before the body is read.
    assert rows == [(499, "a")]


# --------------------------------------------------------------------------- secrets

PROVIDER_KEY = "sk-provider-hostile-5f3a9c0e1d"


@pytest.mark.parametrize("stream", [False, True])
def test_no_key_reaches_a_client_a_log_or_a_trace_even_echoed_by_the_backend(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stream: bool
) -> None:
    import httpx
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from modelwire.gateway import GatewayServer
    from modelwire.testing import error_reply

    monkeypatch.setenv("HOSTILE_PROVIDER_KEY", PROVIDER_KEY)
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    echoed = f"Incorrect API key provided: {PROVIDER_KEY}. Bearer {PROVIDER_KEY}"
    seen: list[str] = []
    with MockServer() as server:
        for status in (401, 400, 500, 429):
            for _ in FRONTENDS:
                server.add(error_reply(status, echoed))
        cfg = config(server.origin + "/v1")
        cfg["models"]["smart"]["api_key_env"] = "HOSTILE_PROVIDER_KEY"
        cfg["gateway"] = {"log": str(tmp_path / "gw.db"), "otel": True}
        with GatewayServer(cfg, tracer_provider=provider) as gw, httpx.Client(timeout=60) as c:
            for _status in (401, 400, 500, 429):
                for fe in FRONTENDS:
                    r = c.post(gw.base_url + PATHS[fe], json=good(fe, stream=stream),
                               headers={"authorization": f"Bearer {KEY}"})  # fmt: skip
                    assert r.status_code >= 400 or stream, r.text
                    seen.append(r.text)
                    seen.extend(f"{k}: {v}" for k, v in r.headers.items())
        # The backend was sent the key (so it could echo it) ...
        assert all(req.headers.get("authorization") == f"Bearer {PROVIDER_KEY}"
                   for req in server.requests)  # fmt: skip
    assert len(seen) > 12
    with sqlite3.connect(tmp_path / "gw.db") as conn:
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            for row in conn.execute(f"SELECT * FROM {table}"):
                seen.append(repr(row))
    for s in spans.get_finished_spans():
        seen.append(repr(dict(s.attributes or {})))
        seen.extend(repr(e.attributes) for e in s.events)
    text = "\n".join(seen)
    assert "Incorrect API key provided" in text  # ... and the error did come back
    for secret in (PROVIDER_KEY, PROVIDER_KEY[3:], KEY, hash_key(KEY), hash_key(PROVIDER_KEY)):
        assert secret not in text


@pytest.mark.parametrize("fe", FRONTENDS)
def test_a_body_that_never_ends_is_408_not_a_hang(backend: MockServer, fe: str) -> None:
    # content-length says more than is sent; the client holds the connection open.
    gw = Gateway(app(config(backend.origin + "/v1")).config, body_timeout=0.2)
    body = json.dumps(good(fe)).encode()
    sent: list[MutableMapping[str, Any]] = []
    first = [{"type": "http.request", "body": body[:10], "more_body": True}]
    ended = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if first:
            return first.pop()
        await ended.wait()  # never: the client sends no more
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    headers = [*auth(), (b"content-length", str(len(body)).encode())]
    scope = {"type": "http", "method": "POST", "path": PATHS[fe], "query_string": b"",
             "headers": headers}  # fmt: skip

    async def go() -> None:
        try:
            await asyncio.wait_for(gw(scope, receive, send), 60)
        finally:
            await gw.aclose()

    asyncio.run(go())
    a = Answer(sent[0]["status"], {}, b"".join(m.get("body", b"") for m in sent[1:]))
    assert "did not arrive" in check_4xx(fe, a, 408)


@pytest.mark.parametrize("fe", FRONTENDS)
def test_a_query_string_does_not_change_the_endpoint(backend: MockServer, fe: str) -> None:
    import httpx

    from modelwire.gateway import GatewayServer

    backend.add("queried")
    with GatewayServer(config(backend.origin + "/v1")) as gw:
        r = httpx.post(gw.base_url + PATHS[fe] + "?beta=true&x=%00", json=good(fe),
                       headers={"authorization": f"Bearer {KEY}"}, timeout=60)  # fmt: skip
        m = httpx.get(gw.base_url + "/v1/models/?limit=1", headers={"x-api-key": KEY}, timeout=60)
    assert r.status_code == 200 and "queried" in r.text, r.text
    assert m.status_code == 200 and [x["id"] for x in m.json()["data"]] == ["smart"]


def test_every_configured_key_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # No early exit on a match, and hmac.compare_digest for each: the time to answer
    # does not tell which key (or how much of one) matched.
    import hmac

    from modelwire.gateway import _keys, load_config

    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", counting)  # what _keys calls
    keys = load_config(config("http://127.0.0.1:9/v1")).keys
    for presented, name in ((KEY, "a"), (OTHER, "b"), ("sk-nope", None)):
        compared.clear()
        found = _keys.authenticate(keys, presented)
        assert (found.name if found is not None else None) == name
        assert len(compared) == len(keys)
        assert all(len(a) == len(b) == 64 for a, b in compared)  # digests, never the key


@pytest.mark.parametrize("fe", FRONTENDS)
@pytest.mark.parametrize(
    ("bad", "inner", "why"),
    [
        ({"type": "wizard"}, ".type", "is not valid"),
        (
            {"type": "object", "properties": {"x": {"type": 5}}},
            ".properties.x.type",
            "is not valid",
        ),
        ({"type": "object", "required": "x"}, ".required", "is not of type 'array'"),
    ],
)
def test_a_tool_schema_that_is_no_json_schema_is_refused(
    backend: MockServer, fe: str, bad: dict[str, Any], inner: str, why: str
) -> None:
    if fe == "chat":
        tool: dict[str, Any] = {"type": "function", "function": {"name": "f", "parameters": bad}}
        where = "tools[0].function.parameters"
    elif fe == "responses":
        tool = {"type": "function", "name": "f", "parameters": bad}
        where = "tools[0].parameters"
    else:
        tool = {"name": "f", "input_schema": bad}
        where = "tools[0].input_schema"
    gw = app(config(backend.origin + "/v1"))
    (a,) = run(gw, call(gw, PATHS[fe], json.dumps(good(fe, tools=[tool])).encode()))
    message = check_4xx(fe, a, 400, where + inner)
    assert "not a valid JSON Schema" in message and why in message


@pytest.mark.parametrize("fe", FRONTENDS)
def test_a_content_length_shorter_than_the_body_over_real_http(
    backend: MockServer, fe: str
) -> None:
    # uvicorn reads content-length bytes: the gateway gets a cut body (the API's 400,
    # not JSON); what follows is not a request (uvicorn's own 400, which may come
    # first), and the server closes the connection: a 400 either way, never a hang.
    from modelwire.gateway import GatewayServer

    body = json.dumps(good(fe)).encode()
    with (
        GatewayServer(config(backend.origin + "/v1")) as gw,
        socket.create_connection(("127.0.0.1", gw.port), timeout=60) as s,
    ):
        s.sendall(f"POST {PATHS[fe]} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {KEY}\r\n"
                  f"content-length: 12\r\n\r\n".encode() + body)  # fmt: skip
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), data
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length")))  # fmt: skip
    first = rest[:length]
    assert b"Traceback" not in data
    if b"Invalid HTTP request" in first:
        return  # uvicorn read the bytes past content-length first: its own 400
    assert b"not valid JSON" in first
    if fe == "anthropic":
        assert json.loads(first)["type"] == "error"
    else:
        assert json.loads(first)["error"]["type"] == "invalid_request_error"


# --------------------------------------------------------------------------- echoed secrets

#: The keys of two configured models: a backend may echo either (the gateway knows both).
ECHO_KEY = "sk-echo-backend-1f2e3d4c5b6a"
SIBLING_KEY = "sk-echo-sibling-9a8b7c6d5e4f"
URL_PASSWORD = "pw-in-url-4d5e6f7a8b"


def _echo_error(api: str) -> dict[str, Any]:
    """An error object whose every field echoes both provider keys."""
    both = f"{ECHO_KEY} {SIBLING_KEY} {URL_PASSWORD}"
    if api == "anthropic-messages":
        return {"type": "error", "request_id": both,
                "error": {"type": f"t {both}", "message": f"bad key {both}"}}  # fmt: skip
    return {"error": {"message": f"bad key {both}", "type": f"t {both}", "param": f"p {both}",
                      "code": f"c {both}", "request_id": both}, "request_id": both}  # fmt: skip


def _echo_reply(api: str, where: str) -> Any:
    from modelwire.testing import Reply

    body = json.dumps(_echo_error(api)).encode()
    if where == "http":
        rid = f"{ECHO_KEY} {SIBLING_KEY} {URL_PASSWORD}"
        return Reply(status=400, body=body, content_type="application/json",
                     headers={"x-request-id": rid, "request-id": rid})  # fmt: skip
    event = b"event: error\n" if api == "anthropic-messages" else b""
    return Reply(body=event + b"data: " + body + b"\n\n")


@pytest.mark.parametrize("api", ["openai-chat", "anthropic-messages"])
@pytest.mark.parametrize("where", ["in-band", "http"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_backend_echoing_keys_in_every_error_field_leaks_them_nowhere(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path,
    api: str, where: str, stream: bool,
) -> None:  # fmt: skip
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    monkeypatch.setenv("ECHO_PROVIDER_KEY", ECHO_KEY)
    monkeypatch.setenv("ECHO_SIBLING_KEY", SIBLING_KEY)
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    with MockServer([_echo_reply(api, where)], repeat_last=True) as server:
        host_port = server.origin.split("://", 1)[1]
        # A password in a URL is a secret too: the request log keeps the URL without
        # it (an OpenAI backend sends its key in Authorization, which leaves no room
        # for userinfo: its password is the other model's).
        userinfo = f"http://gw:{URL_PASSWORD}@{host_port}"
        origin = userinfo if api == "anthropic-messages" else server.origin
        cfg = {
            "models": {
                "smart": {"api": api, "id": "m", "base_url": origin + "/v1",
                          "api_key_env": "ECHO_PROVIDER_KEY"},
                "sibling": {"api": "openai-chat", "id": "m", "base_url": f"https://u:{URL_PASSWORD}@sibling.test/v1",
                            "api_key_env": "ECHO_SIBLING_KEY"},
            },
            "keys": {"a": {"key_sha256": hash_key(KEY), "models": ["*"]}},
            "gateway": {"log": str(tmp_path / "gw.db"), "otel": True},
        }  # fmt: skip
        gw = app(cfg, tracer_provider=provider)
        answers = run(gw, *(call(gw, PATHS[fe], json.dumps(good(fe, stream=stream)).encode())
                            for fe in FRONTENDS))  # fmt: skip
    shown = "\n".join(f"{a.status} {a.headers} {a.body.decode()}" for a in answers)
    assert all(a.status >= 400 or stream for a in answers), shown
    assert shown.count("bad key [redacted]") == len(FRONTENDS), shown  # the error came back
    # Nothing of the backend's address reaches a client (the log names it, for the operator).
    assert host_port not in shown and "127.0.0.1" not in shown, shown
    if where == "http":
        assert "HTTP 400 from the backend of model 'smart'" in shown
        assert host_port in caplog.text
    stored: list[str] = []
    with sqlite3.connect(tmp_path / "gw.db") as conn:
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            stored.extend(repr(row) for row in conn.execute(f"SELECT * FROM {table}"))
    assert any("bad key [redacted]" in row for row in stored)
    for s in spans.get_finished_spans():
        stored.append(repr(dict(s.attributes or {})) + repr(s.status.description))
        stored.extend(repr(e.attributes) for e in s.events)
    text = "\n".join([shown, *stored, caplog.text])
    for secret in (ECHO_KEY, SIBLING_KEY, URL_PASSWORD):
        for i in range(len(secret) - 8):  # not even a piece of one
            assert secret[i : i + 9] not in text, [
                t for t in [shown, *stored] if secret[i : i + 9] in t
            ]


class _Silent:
    """A loopback server that accepts connections and reads requests, never answering."""

    def __init__(self) -> None:
        import threading

        self.sock = socket.create_server(("127.0.0.1", 0))
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


@pytest.mark.parametrize("fe", FRONTENDS)
@pytest.mark.parametrize(("backend_kind", "timeout"), [
    ("never answers", {"idle": 0.2}), ("never answers", {"total": 0.2}),
    ("stalls mid-stream", {"idle": 0.2}),
])  # fmt: skip
def test_a_backend_that_never_answers_ends_at_the_configured_timeout(
    fe: str, backend_kind: str, timeout: dict[str, float]
) -> None:
    backend: Any = _Silent() if backend_kind == "never answers" else StallingBackend()
    stream = backend_kind == "stalls mid-stream"
    cfg = {
        "models": {"smart": {"api": "openai-chat", "id": "m", "base_url": backend.base_url,
                             "timeout": timeout}},
        "keys": {"a": {"key_sha256": hash_key(KEY), "models": ["*"]}},
        # Left to this default (300 s idle), the request would hang past the guard.
        "gateway": {"timeout": {"idle": 600}},
    }  # fmt: skip
    try:
        gw = app(cfg)
        (answer,) = run(gw, call(gw, PATHS[fe], json.dumps(good(fe, stream=stream)).encode()))
    finally:
        backend.close()
    if stream:  # the head was sent: the API's in-stream error, no normal end
        assert answer.status == 200
        assert b"timeout" in answer.body and b"[DONE]" not in answer.body
        assert b"message_stop" not in answer.body and b"response.completed" not in answer.body
    else:
        assert answer.status == 504, answer
        assert "timeout" in answer.message()
    assert "127.0.0.1" not in repr(answer)


def test_a_backend_url_in_a_refusal_before_any_call_is_not_shown(
    backend: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A base_url with a password for a backend whose key goes in Authorization: the
    # library refuses before any I/O, naming the URL; the client gets the model's name.
    monkeypatch.setenv("HOSTILE_URL_KEY", ECHO_KEY)
    cfg = config(backend.origin.replace("http://", f"http://gw:{URL_PASSWORD}@") + "/v1")
    cfg["models"]["smart"]["api_key_env"] = "HOSTILE_URL_KEY"
    gw = app(cfg)
    answers = run(gw, *(call(gw, PATHS[fe], json.dumps(good(fe)).encode()) for fe in FRONTENDS))
    for a in answers:
        assert a.status == 400 and "carries a user name and password" in a.message(), a
        assert "the base_url of smart/m (the backend of model 'smart')" in a.message()
        assert "127.0.0.1" not in repr(a) and URL_PASSWORD not in repr(a)
