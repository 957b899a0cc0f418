"""The gateway's ``POST /v1/embeddings``: OpenAI's shape in front of backends of any
API that embeds, with the gateway's keys, routing and error shapes; the ASGI app is
called directly and MockServer is the backend. The openai SDK reads the answer."""

from __future__ import annotations

import asyncio
import base64
import json
import struct
from collections.abc import MutableMapping
from typing import Any

import pytest

from modelwire.gateway import Gateway, hash_key, load_config
from modelwire.testing import MockServer, error_reply, mock_vector

KEY = "sk-gw-embed-0123456789"
BACKEND_KEY = "sk-backend-SECRET-4242"


def config(server: MockServer) -> dict[str, Any]:
    return {
        "models": {
            "emb": {"api": "openai-chat", "id": "backend-emb", "base_url": server.base_url,
                    "cost": {"input": 1.0, "output": 0.0}},
            "gem": {"api": "google-generative-ai", "id": "gemini-embedding-001",
                    "base_url": server.origin + "/v1beta"},
            "chat-only": {"api": "anthropic-messages", "id": "claude",
                          "base_url": server.base_url},
        },
        "keys": {"team": {"key_sha256": hash_key(KEY), "models": ["emb", "gem", "chat-only"]}},
    }  # fmt: skip


async def call(gw: Gateway, body: Any, *, method: str = "POST", key: str = KEY) -> tuple[int, Any]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    incoming = [{"type": "http.request", "body": raw, "more_body": False}]
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    headers = [(b"authorization", f"Bearer {key}".encode()),
               (b"content-type", b"application/json")]  # fmt: skip
    scope = {"type": "http", "method": method, "path": "/v1/embeddings",
             "raw_path": b"/v1/embeddings", "query_string": b"", "headers": headers}  # fmt: skip
    await asyncio.wait_for(gw(scope, receive, send), 60)
    return sent[0]["status"], json.loads(b"".join(m.get("body", b"") for m in sent[1:]))


def run(server: MockServer, body: Any, **kw: Any) -> tuple[int, Any]:
    async def go() -> tuple[int, Any]:
        gw = Gateway(load_config(config(server)))
        try:
            return await call(gw, body, **kw)
        finally:
            await gw.aclose()

    return asyncio.run(go())


def close(got: list[float], want: list[float]) -> bool:
    return len(got) == len(want) and all(abs(a - b) < 1e-6 for a, b in zip(got, want, strict=True))


@pytest.mark.parametrize("model", ["emb", "gem"])
def test_embeddings_in_openai_shape_from_any_backend(model: str) -> None:
    texts = ["a cat", "一只狗"]
    with MockServer() as server:
        status, body = run(server, {"model": model, "input": texts, "dimensions": 8})
        sent = server.last_request
    assert status == 200, body
    assert body["object"] == "list" and body["model"] == model
    assert [d["index"] for d in body["data"]] == [0, 1]
    assert all(close(d["embedding"], mock_vector(t, 8)) for d, t in zip(body["data"], texts,
                                                                           strict=True))  # fmt: skip
    assert body["usage"]["prompt_tokens"] == body["usage"]["total_tokens"] > 0
    assert "authorization" not in sent.headers or KEY not in sent.headers["authorization"]


def test_base64_is_encoded_as_openai_does_and_the_sdk_reads_it() -> None:
    from openai.types import CreateEmbeddingResponse

    with MockServer() as server:
        status, body = run(server, {"model": "emb", "input": "x", "encoding_format": "base64"})
    assert status == 200
    raw = base64.b64decode(body["data"][0]["embedding"])
    assert close(list(struct.unpack(f"<{len(raw) // 4}f", raw)), mock_vector("x"))
    parsed = CreateEmbeddingResponse.model_validate(
        {**body, "data": [{**body["data"][0], "embedding": [0.0]}]})  # fmt: skip
    assert parsed.usage.prompt_tokens == body["usage"]["prompt_tokens"]


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"model": "emb", "input": []}, 400, "input must be a string or a non-empty array"),
        ({"model": "emb", "input": [[1, 2]]}, 400, "token ids are not accepted"),
        ({"model": "emb", "input": "x", "dimensions": 0}, 400, "dimensions must be"),
        ({"model": "emb", "input": "x", "colour": 1}, 400, "colour: not a field"),
        ({"model": "nope", "input": "x"}, 404, "is not served here"),
        ({"model": "chat-only", "input": "x"}, 400, "has no embedding endpoint"),
        (b"{not json", 400, "not JSON"),
    ],
)  # fmt: skip
def test_bad_requests_get_openai_errors_and_reach_no_backend(
    body: Any, status: int, says: str
) -> None:
    with MockServer() as server:
        got, answer = run(server, body)
        assert server.requests == []
    assert got == status and says in answer["error"]["message"]


def test_a_wrong_key_and_a_wrong_method() -> None:
    with MockServer() as server:
        assert run(server, {"model": "emb", "input": "x"}, key="sk-wrong")[0] == 401
        assert run(server, {"model": "emb", "input": "x"}, method="GET")[0] == 405
        assert server.requests == []


def test_a_backend_failure_is_scrubbed_of_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMB_KEY", BACKEND_KEY)
    with MockServer([error_reply(429, f"slow down {BACKEND_KEY}", headers={"retry-after": "0"})]
                    * 3) as server:  # fmt: skip
        cfg = config(server)
        cfg["models"]["emb"]["api_key_env"] = "EMB_KEY"

        async def go() -> tuple[int, Any]:
            gw = Gateway(load_config(cfg))
            try:
                return await call(gw, {"model": "emb", "input": "x"})
            finally:
                await gw.aclose()

        status, body = asyncio.run(go())
        assert server.requests[0].headers["authorization"] == f"Bearer {BACKEND_KEY}"
    assert status == 429
    text = json.dumps(body)
    assert BACKEND_KEY not in text and "slow down" in text and "127.0.0.1" not in text


def test_a_fault_of_the_gateway_is_a_500_without_its_text(monkeypatch: pytest.MonkeyPatch) -> None:
    import modelwire._client._embed as embedding

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("internal detail sk-internal")

    monkeypatch.setattr(embedding, "embed", broken)
    with MockServer() as server:
        status, body = run(server, {"model": "emb", "input": "x"})
    assert status == 500 and "internal detail" not in json.dumps(body)
