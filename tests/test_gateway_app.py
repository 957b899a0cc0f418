"""The gateway's ASGI app over real loopback HTTP (uvicorn in a thread), with a small
fake front-end (``tests/gateway_fake.py``) and MockServer backends: auth, routing,
limits, budgets, passthrough, streaming and not, backend failures, client
disconnects, the request log, traces, and that no key reaches any output."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway_fake import FRONTEND
from modelwire.gateway import GatewayRequest, GatewayServer, MemoryStore, app, hash_key, load_config
from modelwire.testing import MockServer, Reply, error_reply, parse_script
from rawserver import RawServer

KEY = "sk-gw-test-0123456789"
OTHER = "sk-gw-other-9876543210"
AUTH = {"authorization": f"Bearer {KEY}"}


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def config(base_url: str, **key: Any) -> dict[str, Any]:
    return {
        "models": {
            "smart": {"api": "anthropic-messages", "id": "mock-model", "base_url": base_url},
            "other": {"api": "openai-chat", "id": "mock-model", "base_url": base_url},
        },
        "keys": {
            "team-a": {"key_sha256": hash_key(KEY), "models": ["smart"], **key},
            "team-b": {"key_sha256": hash_key(OTHER), "models": ["*"]},
        },
    }


@pytest.fixture
def backend() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def serving(cfg: Any, **options: Any) -> GatewayServer:
    options.setdefault("frontends", [FRONTEND])
    return GatewayServer(cfg, **options)


def post(
    gw: GatewayServer, body: dict[str, Any], headers: dict[str, str] | None = None
) -> httpx.Response:
    return httpx.post(gw.base_url + "/v1/fake", json=body, headers=AUTH if headers is None else headers,
                      timeout=30)  # fmt: skip


def events(text: str) -> list[Any]:
    out = []
    for line in text.splitlines():
        if line.startswith("data: "):
            data = line[6:]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


# --------------------------------------------------------------------------- auth + routing


def test_answers_not_streamed_and_streamed(backend: MockServer) -> None:
    backend.add("hello there world", "a streamed answer")
    with serving(config(backend.origin + "/v1")) as gw:
        r = post(gw, {"model": "smart", "prompt": "hi"})
        assert r.status_code == 200, r.text
        assert r.json()["text"] == "hello there world"
        assert r.json()["id"].startswith("gw-")  # no API of its own: a neutral id
        r = post(gw, {"model": "smart", "prompt": "hi", "stream": True})
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        got = events(r.text)
        assert got[0]["type"] == "start" and got[-1] == "[DONE]"
        assert "".join(e["delta"] for e in got if isinstance(e, dict) and "delta" in e) == (
            "a streamed answer"
        )
    # The backend got the client's prompt, in its own API.
    assert backend.requests[0].api == "anthropic-messages"
    assert backend.requests[0].json()["messages"][0]["content"][0]["text"] == "hi"


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ({}, "no gateway key"),
        ({"authorization": "Bearer sk-wrong"}, "not valid"),
        ({"x-api-key": "sk-wrong"}, "not valid"),
        ({"authorization": f"Basic {KEY}"}, "no gateway key"),
    ],
)
def test_a_missing_or_wrong_key_is_401(
    backend: MockServer, headers: dict[str, str], why: str
) -> None:
    with serving(config(backend.origin + "/v1")) as gw:
        r = post(gw, {"model": "smart", "prompt": "hi"}, headers)
    assert r.status_code == 401
    assert r.json()["error"]["kind"] == "authentication"
    assert why in r.json()["error"]["message"]
    assert backend.requests == []


def test_x_api_key_authenticates(backend: MockServer) -> None:
    backend.add("ok")
    with serving(config(backend.origin + "/v1")) as gw:
        r = post(gw, {"model": "smart", "prompt": "hi"}, {"x-api-key": KEY})
    assert r.status_code == 200, r.text


def test_models_lists_what_the_key_may_use(backend: MockServer) -> None:
    with serving(config(backend.origin + "/v1")) as gw:
        a = httpx.get(gw.base_url + "/v1/models", headers=AUTH)
        b = httpx.get(gw.base_url + "/models", headers={"x-api-key": OTHER})
        anon = httpx.get(gw.base_url + "/v1/models")
    assert a.status_code == 200
    assert a.json() == {"object": "list", "data": [
        {"id": "smart", "object": "model", "created": 0, "owned_by": "modelwire"}]}  # fmt: skip
    assert [m["id"] for m in b.json()["data"]] == ["smart", "other"]
    assert anon.status_code == 401


def test_models_in_the_anthropic_shape_for_an_anthropic_client(backend: MockServer) -> None:
    with serving(config(backend.origin + "/v1")) as gw:
        r = httpx.get(gw.base_url + "/v1/models",
                      headers={"x-api-key": OTHER, "anthropic-version": "2023-06-01"})  # fmt: skip
    assert r.status_code == 200
    body = r.json()
    assert [m["id"] for m in body["data"]] == ["smart", "other"]
    assert body["data"][0]["type"] == "model" and body["has_more"] is False
    assert (body["first_id"], body["last_id"]) == ("smart", "other")


def test_what_the_backend_model_cannot_take_is_400(backend: MockServer) -> None:
    with serving(config(backend.origin + "/v1")) as gw:
        r = post(gw, {"model": "smart", "prompt": "what is this?", "image": "iVBORw0KGgo="})
    assert r.status_code == 400
    assert "image" in r.json()["error"]["message"]
    assert backend.requests == []


class BrokenFrontend:
    api = "openai-chat"
    paths = ("/v1/broken",)
    id_prefix = "gw-"

    def parse(self, body: bytes, headers: Any) -> Any:
        raise KeyError("a front-end bug")

    def renderer(self, request: Any, response_id: str) -> Any:
        raise AssertionError

    def message(self, request: Any, message: Any, response_id: str) -> bytes:
        raise AssertionError

    def error(self, error: BaseException) -> tuple[int, dict[str, str], bytes]:
        return FRONTEND.error(error)


def test_a_front_end_fault_is_a_500_in_the_apis_shape(backend: MockServer) -> None:
    with serving(config(backend.origin + "/v1"), frontends=[BrokenFrontend()]) as gw:
        r = httpx.post(gw.base_url + "/v1/broken", json={}, headers=AUTH)
    assert r.status_code == 500
    assert r.json()["error"]["message"] == "the gateway failed on this request (its log says why)"
    assert "front-end bug" not in r.text


def test_adopted_attributes_the_clients_turns_to_the_backend_of_their_api() -> None:
    from modelwire._apis._server.origin import CLIENT_PROVIDER
    from modelwire.gateway._backend import adopted
    from modelwire.types import AssistantMessage, Context, TextContent, UserMessage

    turn = AssistantMessage(content=(TextContent(text="hi"),), api="anthropic-messages",
                            provider=CLIENT_PROVIDER, model="both")  # fmt: skip
    other = AssistantMessage(content=(TextContent(text="yo"),), api="openai-responses",
                             provider=CLIENT_PROVIDER, model="both")  # fmt: skip
    cfg = load_config({
        "models": {
            "a": {"api": "openai-chat", "id": "m1", "base_url": "http://127.0.0.1:1/v1"},
            "b": {"api": "anthropic-messages", "id": "m2", "base_url": "http://127.0.0.1:1/v1"},
            "both": {"fallback": ["a", "b"]},
        },
        "keys": {"k": {"key_sha256": hash_key(KEY), "models": ["*"]}},
    })  # fmt: skip
    req = GatewayRequest(model="both", stream=False, options={}, context=Context(
        messages=(UserMessage(content="q"), turn, UserMessage(content="again"), other)))  # fmt: skip
    got = adopted(cfg.models["both"], req).messages
    assert (got[1].provider, got[1].model) == ("b", "m2")  # type: ignore[union-attr]
    assert got[3] == other  # no backend of its API: left as the client's


def test_unknown_model_and_forbidden_model_are_the_same_404(backend: MockServer) -> None:
    with serving(config(backend.origin + "/v1")) as gw:
        unknown = post(gw, {"model": "nope", "prompt": "hi"})
        forbidden = post(gw, {"model": "other", "prompt": "hi"})
    assert unknown.status_code == 404
    assert unknown.json()["error"]["param"] == "model"
    assert "'nope'" in unknown.json()["error"]["message"]
    # A model the key may not use is not revealed: the same answer as an unknown one.
    assert forbidden.status_code == 404
    assert forbidden.json()["error"] == {
        **unknown.json()["error"], "message": unknown.json()["error"]["message"].replace("'nope'", "'other'")}  # fmt: skip
    assert backend.requests == []


def test_unknown_path_method_and_oversized_body(backend: MockServer) -> None:
    cfg = config(backend.origin + "/v1")
    cfg["gateway"] = {"max_body_bytes": 1000}
    with serving(cfg) as gw:
        path = httpx.post(gw.base_url + "/v1/nothing", json={}, headers=AUTH)
        method = httpx.get(gw.base_url + "/v1/fake", headers=AUTH)
        big = post(gw, {"model": "smart", "prompt": "x" * 2000})
        chunked = httpx.post(gw.base_url + "/v1/fake", headers=AUTH,
                             content=iter([b"{" + b" " * 600, b" " * 600 + b"}"]))  # fmt: skip
        bad = httpx.post(gw.base_url + "/v1/fake", headers=AUTH, content=b"{not json")
    assert path.status_code == 404
    assert "/v1/fake" in path.json()["error"]["message"]
    assert method.status_code == 405
    assert big.status_code == 413 and "1000 bytes" in big.json()["error"]["message"]
    assert chunked.status_code == 413
    assert bad.status_code == 400 and "not JSON" in bad.json()["error"]["message"]
    assert backend.requests == []


# --------------------------------------------------------------------------- passthrough


def test_passthrough_reaches_a_backend_of_the_same_api_only(backend: MockServer) -> None:
    backend.add("ok")
    with serving(config(backend.origin + "/v1")) as gw:
        # The fake front-end speaks openai-chat; "other" is an openai-chat backend.
        same = post(gw, {"model": "other", "prompt": "hi", "logit_bias": {"42": 1}},
                    {"authorization": f"Bearer {OTHER}"})  # fmt: skip
        differs = post(gw, {"model": "smart", "prompt": "hi", "logit_bias": {"42": 1}})
    assert same.status_code == 200, same.text
    assert backend.requests[0].json()["logit_bias"] == {"42": 1}
    assert differs.status_code == 400
    assert differs.json()["error"]["param"] == "logit_bias"
    assert "anthropic-messages" in differs.json()["error"]["message"]
    assert len(backend.requests) == 1


# --------------------------------------------------------------------------- backend keys


def test_backend_key_is_read_from_its_variable_per_request(
    backend: MockServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cfg = config(backend.origin + "/v1")
    cfg["models"]["smart"]["api_key_env"] = "GW_TEST_BACKEND_KEY"
    cfg["gateway"] = {"log": str(tmp_path / "gw.db"), "otel": False}
    monkeypatch.delenv("GW_TEST_BACKEND_KEY", raising=False)
    backend.add("first", "second")
    gw_app = app(cfg, frontends=[FRONTEND])
    with serving(gw_app) as gw:
        missing = post(gw, {"model": "smart", "prompt": "hi"})
        monkeypatch.setenv("GW_TEST_BACKEND_KEY", "sk-backend-secret-1")
        one = post(gw, {"model": "smart", "prompt": "hi"})
        monkeypatch.setenv("GW_TEST_BACKEND_KEY", "sk-backend-secret-2")
        two = post(gw, {"model": "smart", "prompt": "hi", "stream": True})
    assert missing.status_code == 500
    assert "GW_TEST_BACKEND_KEY" in missing.json()["error"]["message"]
    assert one.status_code == two.status_code == 200
    assert [r.headers["x-api-key"] for r in backend.requests] == [
        "sk-backend-secret-1", "sk-backend-secret-2"]  # fmt: skip
    # The client's gateway key is not forwarded.
    assert not any(KEY in json.dumps(r.headers) for r in backend.requests)
    # No key — backend or gateway, nor the gateway key's hash — in anything the
    # gateway wrote or shows.
    shown = [missing.text, one.text, two.text, repr(gw_app), repr(gw_app.config),
             repr(load_config(cfg)), (tmp_path / "gw.db").read_bytes().decode("latin-1")]  # fmt: skip
    for text in shown:
        for secret in ("sk-backend-secret", KEY, hash_key(KEY)):
            assert secret not in text


# --------------------------------------------------------------------------- failures


def test_backend_error_before_content_is_the_apis_error(backend: MockServer) -> None:
    backend.add(error_reply(400, "bad field"), error_reply(404, "no such model"))
    with serving(config(backend.origin + "/v1")) as gw:
        streamed = post(gw, {"model": "smart", "prompt": "hi", "stream": True})
        whole = post(gw, {"model": "smart", "prompt": "hi"})
    assert (streamed.status_code, whole.status_code) == (400, 502)
    assert streamed.json()["error"]["kind"] == "invalid_request"
    assert "bad field" in streamed.json()["error"]["message"]
    # The backend not knowing its model id is the gateway's config, not the client's
    # model name (which the gateway knows): a 502 that says so.
    assert whole.json()["error"]["kind"] == "server"
    assert "does not know the model id" in whole.json()["error"]["message"]
    assert "no such model" in whole.json()["error"]["message"]


def test_backend_auth_failure_streamed_and_not(backend: MockServer) -> None:
    backend.add(error_reply(401, "bad backend key"), error_reply(401, "bad backend key"))
    with serving(config(backend.origin + "/v1")) as gw:
        streamed = post(gw, {"model": "smart", "prompt": "hi", "stream": True})
        whole = post(gw, {"model": "smart", "prompt": "hi"})
    for r in (streamed, whole):
        # The backend refused the gateway's own key: a 502 (a 401 would tell the
        # client its gateway key is wrong, and its SDK would say so).
        assert r.status_code == 502
        assert r.json()["error"]["kind"] == "server"
        assert "refused the gateway's credentials" in r.json()["error"]["message"]
        assert r.headers["content-type"] == "application/json"


def test_failure_after_content_is_an_in_stream_error_without_done() -> None:
    with MockServer() as cut_backend:
        frames = _anthropic_body("a long answer that breaks in the middle")
        cut_backend.add(Reply(body=frames, cut_after=len(frames) // 2))
        with serving(config(cut_backend.origin + "/v1")) as gw:
            r = post(gw, {"model": "smart", "prompt": "hi", "stream": True})
    assert r.status_code == 200
    got = events(r.text)
    assert any(isinstance(e, dict) and e.get("type") == "text_delta" for e in got)
    assert isinstance(got[-1], dict) and "error" in got[-1]
    assert "[DONE]" not in got


#: Per real front-end: its path, a streamed request, its in-stream failure and its end.
FRONT_STREAMS = {
    "chat": ("/v1/chat/completions",
             {"model": "smart", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
             b'data: {"error"', b"[DONE]"),
    "responses": ("/v1/responses", {"model": "smart", "stream": True, "input": "hi"},
                  b"response.failed", b"response.completed"),
    "anthropic": ("/v1/messages",
                  {"model": "smart", "stream": True, "max_tokens": 5,
                   "messages": [{"role": "user", "content": "hi"}]},
                  b"event: error", b"message_stop"),
}  # fmt: skip


@pytest.mark.parametrize("front", FRONT_STREAMS)
def test_the_head_goes_out_once_the_backend_has_answered(front: str) -> None:
    """The backend answers 200 and holds its body back: the client already has the
    gateway's 200 head (it reads it while the model thinks, not after the first
    token). A failure after that answer — here the backend's body breaking off before
    any content — comes in the stream, the API's own error, with no normal end."""
    path, body, failed, ended = FRONT_STREAMS[front]
    answer = _anthropic_body("never sent")
    with (
        MockServer([Reply(body=answer, stall_after=0)]) as held,
        GatewayServer(config(held.origin + "/v1")) as gw,
        httpx.Client(timeout=20) as c,
        c.stream("POST", gw.base_url + path, json=body, headers=AUTH) as r,
    ):
        status, kind = r.status_code, r.headers.get("content-type", "")
        held._stall.set()  # only now does the backend's body (break off)
        got = r.read()
    assert (status, kind.split(";")[0]) == (200, "text/event-stream")
    assert failed in got and ended not in got


def _anthropic_body(text: str) -> bytes:
    from modelwire.testing import render

    return render(text, "anthropic-messages", piece_chars=4)


def test_fallback_moves_to_the_next_model(backend: MockServer) -> None:
    with MockServer([error_reply(503, "down")], repeat_last=True) as down:
        backend.add("from the second")
        cfg = {
            "models": {
                "a": {"api": "openai-chat", "id": "m1", "base_url": down.origin + "/v1"},
                "b": {"api": "anthropic-messages", "id": "m2", "base_url": backend.origin + "/v1"},
                "both": {"fallback": ["a", "b"]},
            },
            "keys": {"k": {"key_sha256": hash_key(KEY), "models": ["both"]}},
        }
        with serving(cfg) as gw:
            r = post(gw, {"model": "both", "prompt": "hi"})
    assert r.status_code == 200, r.text
    assert r.json()["text"] == "from the second"
    assert backend.requests[0].json()["model"] == "m2"


def test_each_model_of_a_fallback_gets_its_own_key(
    backend: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GW_KEY_A", "sk-backend-a")
    monkeypatch.setenv("GW_KEY_B", "sk-backend-b")
    with MockServer([error_reply(503, "down")], repeat_last=True) as down:
        backend.add("from b", "from b again")
        cfg = {
            "models": {
                "a": {"api": "openai-chat", "id": "m1", "base_url": down.origin + "/v1",
                      "api_key_env": "GW_KEY_A"},
                "b": {"api": "anthropic-messages", "id": "m2", "base_url": backend.origin + "/v1",
                      "api_key_env": "GW_KEY_B"},
                "local": {"api": "openai-chat", "id": "m3", "base_url": backend.origin + "/v1"},
                "both": {"fallback": ["a", "b"]},
                "mixed": {"fallback": ["local", "b"]},
            },
            "keys": {"k": {"key_sha256": hash_key(KEY), "models": ["*"]}},
        }  # fmt: skip
        with serving(cfg) as gw:
            r = post(gw, {"model": "both", "prompt": "hi", "stream": True})
            mixed = post(gw, {"model": "mixed", "prompt": "hi"})
    assert r.status_code == 200, r.text
    assert {q.headers["authorization"] for q in down.requests} == {"Bearer sk-backend-a"}
    assert backend.requests[0].headers["x-api-key"] == "sk-backend-b"
    assert mixed.status_code == 500
    assert "local" in mixed.json()["error"]["message"]
    assert "sk-backend" not in r.text + mixed.text


# --------------------------------------------------------------------------- limits


def test_requests_per_minute_with_retry_after(backend: MockServer) -> None:
    clock = Clock()
    backend.add("1", "2", "3", "4")
    store = MemoryStore(clock=clock)
    with serving(config(backend.origin + "/v1", requests_per_minute=2), store=store) as gw:
        a = post(gw, {"model": "smart", "prompt": "hi"})
        b = post(gw, {"model": "smart", "prompt": "hi"})
        c = post(gw, {"model": "smart", "prompt": "hi"})
        other = post(gw, {"model": "smart", "prompt": "hi"}, {"x-api-key": OTHER})
        clock.t += 30  # one request's worth refilled (2 per minute)
        d = post(gw, {"model": "smart", "prompt": "hi"})
    assert [a.status_code, b.status_code, c.status_code, d.status_code] == [200, 200, 429, 200]
    assert c.json()["error"]["kind"] == "rate_limit"
    assert c.headers["retry-after"] == "30"
    assert other.status_code == 200  # another key has its own limits (none)
    assert len(backend.requests) == 4


def test_tokens_per_minute_counts_usage(backend: MockServer) -> None:
    clock = Clock()
    backend.add(*parse_script('[{"text": "big", "usage": {"input": 50, "output": 70}}, "x"]'))
    store = MemoryStore(clock=clock)
    with serving(config(backend.origin + "/v1", tokens_per_minute=100), store=store) as gw:
        first = post(gw, {"model": "smart", "prompt": "hi"})
        second = post(gw, {"model": "smart", "prompt": "hi"})
        clock.t += 13  # 100/60 tokens a second: the debt of 20 is paid after 12 s
        third = post(gw, {"model": "smart", "prompt": "hi"})
    assert first.status_code == 200
    assert second.status_code == 429
    assert int(second.headers["retry-after"]) == 12
    assert third.status_code == 200


def test_budget_spent_is_403(backend: MockServer) -> None:
    script = '[{"text": "a", "usage": {"input": 1, "output": 1}}, "b"]'
    backend.add(*parse_script(script))
    cfg = config(backend.origin + "/v1", budget_usd=1.5)
    # $1 per token: the first answer costs $2.
    cfg["models"]["smart"]["cost"] = {"input": 1_000_000, "output": 1_000_000}
    store = MemoryStore()
    with serving(cfg, store=store) as gw:
        first = post(gw, {"model": "smart", "prompt": "hi", "stream": True})
        second = post(gw, {"model": "smart", "prompt": "hi"})
    assert first.status_code == 200
    assert second.status_code == 403
    assert "budget" in second.json()["error"]["message"]
    assert len(backend.requests) == 1


# --------------------------------------------------------------------------- disconnect


class StallingBackend:
    """A loopback OpenAI-chat server: one streamed delta, then nothing; it records
    when the gateway closes the connection."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.closed = threading.Event()
        self.got_request = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return  # closed before any request came
        with conn:
            RawServer.read_request(conn, b"")
            self.got_request.set()
            chunk = b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"hel"}}]}\n\n'
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                         b"transfer-encoding: chunked\r\n\r\n"
                         + f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")  # fmt: skip
            conn.settimeout(60)
            try:
                while conn.recv(65536):
                    pass
            except OSError:
                pass
            self.closed.set()

    def close(self) -> None:
        self.sock.close()


def test_client_disconnect_cancels_the_backend_stream() -> None:
    backend = StallingBackend()
    cfg = {
        "models": {"slow": {"api": "openai-chat", "id": "m", "base_url": backend.base_url}},
        "keys": {"k": {"key_sha256": hash_key(KEY), "models": ["*"]}},
    }
    try:
        with serving(cfg) as gw, httpx.Client(timeout=30) as client:
            with client.stream("POST", gw.base_url + "/v1/fake", headers=AUTH,
                               json={"model": "slow", "prompt": "hi", "stream": True}) as r:  # fmt: skip
                assert r.status_code == 200
                first = next(r.iter_raw())
                assert b"start" in first or b"hel" in first
            # The client has gone: the gateway closes its backend connection.
            assert backend.closed.wait(30), "the backend connection stayed open"
    finally:
        backend.close()


def test_client_disconnect_cancels_a_request_not_streamed() -> None:
    backend = StallingBackend()
    cfg = {
        "models": {"slow": {"api": "openai-chat", "id": "m", "base_url": backend.base_url}},
        "keys": {"k": {"key_sha256": hash_key(KEY), "models": ["*"]}},
    }
    try:
        with serving(cfg) as gw:
            with socket.create_connection(("127.0.0.1", gw.port)) as client:
                body = json.dumps({"model": "slow", "prompt": "hi"}).encode()
                client.sendall(b"POST /v1/fake HTTP/1.1\r\nhost: x\r\ncontent-type: "
                               b"application/json\r\nauthorization: Bearer " + KEY.encode()
                               + b"\r\ncontent-length: " + str(len(body)).encode()
                               + b"\r\n\r\n" + body)  # fmt: skip
                assert backend.got_request.wait(30)
            # The client left before any answer: the backend connection is closed.
            assert backend.closed.wait(30), "the backend connection stayed open"
    finally:
        backend.close()


# --------------------------------------------------------------------------- log + otel


def test_every_request_is_logged_with_the_key_name(backend: MockServer, tmp_path: Path) -> None:
    backend.add(*parse_script('[{"text": "logged", "usage": {"input": 3, "output": 4}}]'))
    cfg = config(backend.origin + "/v1")
    path = tmp_path / "gw.db"
    cfg["gateway"] = {"log": str(path)}
    with serving(cfg) as gw:
        ok = post(gw, {"model": "smart", "prompt": "what is logged", "stream": True})
        refused = post(gw, {"model": "other", "prompt": "hi"})
    assert ok.status_code == 200 and refused.status_code == 404
    with sqlite3.connect(path) as conn:
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute("SELECT * FROM gateway_requests ORDER BY started")]
        calls = [dict(r) for r in conn.execute("SELECT * FROM responses ORDER BY id")]
    assert [(r["key_name"], r["model"], r["status"]) for r in rows] == [
        ("team-a", "smart", 200), ("team-a", "other", 404)]  # fmt: skip
    first = rows[0]
    assert (first["input_tokens"], first["output_tokens"]) == (3, 4)
    assert first["first_token_ms"] is not None
    assert 0 <= first["first_token_ms"] <= first["latency_ms"]
    assert first["response_row"] == calls[0]["id"]
    assert calls[0]["prompt"] == "what is logged" and calls[0]["response"] == "logged"
    assert len(calls) == 1


def test_otel_spans_name_the_key_and_parent_the_model_call(backend: MockServer) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import modelwire.otel

    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    backend.add(*parse_script('[{"text": "traced", "usage": {"input": 3, "output": 4}}]'))
    cfg = config(backend.origin + "/v1")
    cfg["gateway"] = {"otel": True}
    try:
        with serving(cfg, tracer_provider=provider) as gw:
            r = post(gw, {"model": "smart", "prompt": "hi", "stream": True})
    finally:
        modelwire.otel.uninstrument()
    assert r.status_code == 200
    done = {s.name: s for s in spans.get_finished_spans()}
    server = done["POST /v1/fake"]
    call = done["chat mock-model"]
    assert server.attributes is not None and call.parent is not None
    assert call.parent.span_id == server.context.span_id
    assert server.attributes["modelwire.gateway.key"] == "team-a"
    assert server.attributes["gen_ai.request.model"] == "smart"
    assert server.attributes["gen_ai.usage.output_tokens"] == 4
    assert server.attributes["http.response.status_code"] == 200
    assert "modelwire.gateway.first_token_s" in server.attributes
    for s in spans.get_finished_spans():
        assert KEY not in json.dumps(dict(s.attributes or {}))


# --------------------------------------------------------------------------- imports


_PROXY_VARS = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY",
               "all_proxy", "NO_PROXY", "no_proxy")  # fmt: skip


def test_the_backend_client_is_httptools_unless_the_environment_names_a_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """modelwire's own HTTP/1.1 client adds the least latency (bench_gateway), but it
    goes through no proxy: with one set, the gateway takes aiohttp's, which does."""
    for var in _PROXY_VARS:
        monkeypatch.delenv(var, raising=False)

    from modelwire._http._httptools import Pool

    async def kind() -> str:
        gw = app(config("http://127.0.0.1:1/v1"))
        try:
            client = gw._http_client()
            return "httptools" if isinstance(client, Pool) else type(client).__module__
        finally:
            await gw.aclose()

    assert asyncio.run(kind()) == "httptools"
    for var in ("HTTPS_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")
        assert asyncio.run(kind()).startswith("aiohttp"), var
        monkeypatch.delenv(var)


def test_the_gateway_reaches_its_backend_through_a_proxy_the_environment_names(
    backend: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end: a backend behind an HTTP proxy (the proxy forwards in absolute
    form) answers the client, and nothing went around the proxy."""
    for var in _PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    backend.add("through the proxy")
    proxy = ForwardingProxy()
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    try:
        # The test's own client goes straight to the gateway (the variable is the
        # gateway's to read).
        with serving(config(backend.origin + "/v1")) as gw, httpx.Client(trust_env=False) as c:
            r = c.post(gw.base_url + "/v1/fake", json={"model": "smart", "prompt": "hi"},
                       headers=AUTH, timeout=30)  # fmt: skip
        assert r.status_code == 200, r.text
        assert r.json()["text"] == "through the proxy"
        assert proxy.targets and proxy.targets[0].startswith(backend.origin + "/v1/")
        assert len(backend.requests) == len(proxy.targets)
    finally:
        proxy.close()


class ForwardingProxy:
    """An HTTP proxy on loopback for plain-http targets (RFC 9112 §3.2.2, absolute
    form): each request is sent on to its target with httpx and the answer copied
    back whole."""

    def __init__(self) -> None:
        self.targets: list[str] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._sock.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            buf = b""
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = dict(line.split(": ", 1) for line in lines[1:])
                length = int(
                    next((v for k, v in headers.items() if k.lower() == "content-length"), 0)
                )
                while len(buf) < length:
                    buf += conn.recv(65536)
                body, buf = buf[:length], buf[length:]
                self.targets.append(target)
                sent = {k: v for k, v in headers.items()
                        if k.lower() not in ("host", "content-length", "connection", "proxy-connection")}  # fmt: skip
                with httpx.Client(trust_env=False, timeout=30) as client:
                    r = client.request(method, target, headers=sent, content=body)
                out = r.content
                conn.sendall(b"HTTP/1.1 %d X\r\ncontent-type: %s\r\ncontent-length: %d\r\n\r\n"
                             % (r.status_code, r.headers.get("content-type", "").encode(), len(out))
                             + out)  # fmt: skip


def test_import_does_not_load_uvicorn_or_redis() -> None:
    code = ("import sys, modelwire.gateway as g; g.app(" + repr(config("http://127.0.0.1:1/v1"))
            + "); print(sorted(m for m in ('uvicorn', 'redis') if m in sys.modules))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_app_without_front_end_modules_still_serves_models(backend: MockServer) -> None:
    with GatewayServer(config(backend.origin + "/v1"), frontends=[]) as gw:
        r = httpx.get(gw.base_url + "/v1/models", headers=AUTH)
        missing = httpx.post(gw.base_url + "/v1/chat/completions", headers=AUTH, json={})
    assert r.status_code == 200
    assert missing.status_code == 404


# --------------------------------------------------------------------------- the CLI


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cli_env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}


def test_modelwire_serve_serves_until_interrupted(backend: MockServer, tmp_path: Path) -> None:
    import signal
    import time

    port = _free_port()
    path = tmp_path / "gateway.toml"
    path.write_text(f"""
[models.smart]
api = "openai-chat"
id = "mock-model"
base_url = "{backend.origin}/v1"

[keys.team-a]
key_sha256 = "{hash_key(KEY)}"
models = ["*"]
""")
    proc = subprocess.Popen(
        [sys.executable, "-m", "modelwire", "serve", "--config", str(path), "--port", str(port)],
        env=_cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/v1/models", headers=AUTH, timeout=5)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "modelwire serve did not start"
                time.sleep(0.1)
        assert [m["id"] for m in r.json()["data"]] == ["smart"]
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and KEY not in err


def test_modelwire_serve_usage_errors(tmp_path: Path) -> None:
    def cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "modelwire", "serve", *args], input=stdin,
                              capture_output=True, text=True, env=_cli_env(), timeout=60)  # fmt: skip

    no_config = cli()
    assert no_config.returncode == 2 and "--config FILE" in no_config.stderr
    empty = cli("--hash-key")
    assert empty.returncode == 2 and "stdin" in empty.stderr
    assert cli("--hash-key", stdin="abc\n").stdout.strip() == hash_key("abc")
    bad = tmp_path / "bad.toml"
    bad.write_text('[models.x]\napi = "nope"\n')
    wrong = cli("--config", str(bad))
    assert wrong.returncode == 2
    assert "models.x.api must be one of" in wrong.stderr and "Traceback" not in wrong.stderr


def test_serving_without_uvicorn_says_which_extra(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['uvicorn'] = None\n"
            "from modelwire._cli import main\n"
            "sys.exit(main(['serve', '--config', sys.argv[1]]))")  # fmt: skip
    path = tmp_path / "gateway.toml"
    path.write_text(f'[models.m]\napi = "openai-chat"\nid = "m"\nbase_url = "http://127.0.0.1:1/v1"\n'
                    f'[keys.k]\nkey_sha256 = "{hash_key(KEY)}"\nmodels = ["*"]\n')  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                         env=_cli_env(), timeout=60)  # fmt: skip
    assert out.returncode == 2
    assert "pip install 'modelwire[gateway]'" in out.stderr


def test_the_test_server_sends_each_chunk_at_once(backend: MockServer) -> None:
    """TCP_NODELAY on the connections GatewayServer accepts: without it a streamed
    chunk after the first waits for the client's delayed ACK (Nagle)."""
    with serving(config(backend.origin + "/v1")) as gw, httpx.Client() as client:
        assert client.get(gw.base_url + "/v1/models", headers=AUTH).status_code == 200
        server: Any = gw._server
        [connection] = server.server_state.connections
        sock = connection.transport.get_extra_info("socket")
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


class OneWriteBackend:
    """A loopback OpenAI Chat backend that sends its whole streamed answer (headers
    and ``n`` text deltas) in one write, so the gateway reads it in one go."""

    def __init__(self, n: int) -> None:
        chunks = [
            b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n'
        ]
        chunks += [b'data: {"choices":[{"index":0,"delta":{"content":"w%d "}}]}\n\n' % i
                   for i in range(n)]  # fmt: skip
        chunks.append(b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n')
        chunks.append(b"data: [DONE]\n\n")
        body = b"".join(chunks)
        self.response = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                         b"content-length: %d\r\n\r\n%s" % (len(body), body))  # fmt: skip
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.origin = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with self.sock:
            conn, _ = self.sock.accept()
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(65536)
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))  # fmt: skip
            rest = head.split(b"\r\n\r\n", 1)[1]
            while len(rest) < length:
                rest += conn.recv(65536)
            conn.sendall(self.response)


def test_one_write_to_the_client_per_backend_read() -> None:
    """The events of one backend read go to the client as one body message: a client
    is woken once per read, not once per delta (50 deltas here, one read)."""
    import asyncio

    backend = OneWriteBackend(50)
    gateway = app(config(backend.origin + "/v1"), frontends=[FRONTEND])
    body = json.dumps({"model": "other", "prompt": "hi", "stream": True}).encode()
    scope = {"type": "http", "method": "POST", "path": "/v1/fake",
             "headers": [(b"authorization", f"Bearer {OTHER}".encode())]}  # fmt: skip
    sent: list[dict[str, Any]] = []

    async def run() -> None:
        received = asyncio.Event()

        async def receive() -> dict[str, Any]:
            if not received.is_set():
                received.set()
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()  # the client never leaves
            raise AssertionError  # pragma: no cover

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(dict(message))

        try:
            await gateway(scope, receive, send)
        finally:
            await gateway.aclose()

    asyncio.run(run())
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200
    bodies = [m["body"] for m in sent[1:]]
    # The first content right after the headers, then the rest of the read, then the end.
    assert len(bodies) <= 3, [len(b) for b in bodies]
    got = events(b"".join(bodies).decode())
    assert "".join(
        e["delta"] for e in got if isinstance(e, dict) and e["type"] == "text_delta"
    ) == ("".join(f"w{i} " for i in range(50)))
    assert got[-1] == "[DONE]"


def test_the_start_up_summary_names_backends_and_key_names_never_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from modelwire._cli.serve import summary

    monkeypatch.setenv("SUMMARY_BACKEND_KEY", "sk-summary-secret-value-123")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = load_config({
        "models": {
            "smart": {"api": "anthropic-messages", "id": "claude-x", "api_key_env": "SUMMARY_BACKEND_KEY",
                      "base_url": "https://user:pw-secret@api.example.test/v1?key=q-secret",
                      "timeout": {"idle": 30}},
            "cheap": {"provider": "openai", "id": "gpt-4.1-mini"},
            "both": {"fallback": ["smart", "cheap"]},
        },
        "keys": {"team-a": {"key_sha256": hash_key(KEY), "models": ["smart"],
                            "requests_per_minute": 60, "budget_usd": 5}},
        "gateway": {"redis": "redis://:redis-secret@cache.test:6379/0", "log": "gw.db",
                    "timeout": {"total": 600}},
    })  # fmt: skip
    lines = summary(cfg)
    assert lines == [
        "model smart: anthropic-messages claude-x at https://[redacted]@api.example.test/v1"
        "?key=[redacted], key $SUMMARY_BACKEND_KEY, timeout connect 10 s, idle 30 s, total 600 s",
        "model cheap: openai-chat gpt-4.1-mini at https://api.openai.com/v1, key $OPENAI_API_KEY "
        "(not set)",
        "model both: fallback smart → cheap",
        "key team-a: smart (60 requests/min, 5 USD budget)",
        "limits and budgets: Redis at redis://[redacted]@cache.test:6379/0",
        "backend timeout: connect 10 s, idle 300 s, total 600 s",
        "request log: gw.db; traces: off",
    ]
    text = "\n".join(lines)
    for secret in ("sk-summary", "pw-secret", "q-secret", "redis-secret", hash_key(KEY)):
        assert secret not in text


def test_new_key_name_prints_the_key_once_and_its_keys_table(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "modelwire", "serve", "--new-key", "team b"],
                         capture_output=True, text=True, env=_cli_env(), timeout=60, check=True)  # fmt: skip
    key = out.stderr.split()[-1]
    assert key.startswith("mwgw-") and key not in out.stdout
    table = tomllib.loads(out.stdout)
    assert table == {"keys": {"team b": {"key_sha256": hash_key(key), "models": ["*"]}}}
    path = tmp_path / "gateway.toml"
    path.write_text('[models.m]\napi = "openai-chat"\nid = "m"\nbase_url = "http://127.0.0.1:1/v1"\n'
                    + out.stdout)  # fmt: skip
    assert load_config(path).keys["team b"].key_sha256 == hash_key(key)
