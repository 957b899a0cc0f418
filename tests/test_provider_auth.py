"""The request-time credential seam for cloud providers (groundwork of issue 18):
``ProviderRules.authorizer(model, options)`` hands over an object whose
``authorize``/``aauthorize`` add headers (a SigV4 signature over the exact body, a
refreshed OAuth token) when the request is sent, inside the stream. Its secrets are
redacted like the API key; its failure ends the stream typed, nothing sent."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

import modelwire as mw
from modelwire import _apis as apis
from modelwire._apis import builtin_api_names, register_provider
from modelwire._options import RequestOptions
from modelwire.testing import MockServer, Reply
from modelwire.trace import TraceLog

TOKEN = "ya29.only-in-the-authorizer-Qx81zz"
CTX = mw.Context(messages=[mw.UserMessage(content="hi")])
APIS = builtin_api_names()


class Authorizer:
    def __init__(self, fail: BaseException | None = None, result: Any = None) -> None:
        self.fail = fail
        self.result = result
        self.seen: list[tuple[str, str, dict[str, str], bytes]] = []

    def _go(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> Any:
        self.seen.append((method, url, dict(headers), body))
        if self.fail is not None:
            raise self.fail
        if self.result is not None:
            return self.result
        return {"Authorization": f"Bearer {TOKEN}"}, (TOKEN,)

    def authorize(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> Any:
        return self._go(method, url, headers, body)

    async def aauthorize(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> Any:
        await asyncio.sleep(0)
        return self._go(method, url, headers, body)


class Rules:
    def __init__(self, authorizer: Authorizer) -> None:
        self.made: list[tuple[mw.Model, RequestOptions]] = []
        self._authorizer = authorizer

    def url(self, model: mw.Model, api: str, default: str) -> str:
        return default

    def auth(self, model: mw.Model, api_key: str) -> Mapping[str, str] | None:
        return None

    def authorizer(self, model: mw.Model, options: RequestOptions) -> Authorizer:
        self.made.append((model, options))
        return self._authorizer


@pytest.fixture
def clean_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(apis, "_providers", dict(apis._providers))
    yield


def _model(server: MockServer, api: str) -> mw.Model:
    base = server.model(api)
    return mw.Model(id=base.id, api=api, provider="cloudy", base_url=base.base_url)


def _run(mode: str, model: mw.Model, **opts: Any) -> mw.AssistantMessage:
    if mode == "async":
        return asyncio.run(mw.complete(model, CTX, **opts))
    return mw.complete_sync(model, CTX, **opts)


@pytest.mark.parametrize("mode", ["async", "sync"])
@pytest.mark.parametrize("api", APIS)
def test_the_authorizer_signs_the_exact_request_and_its_token_is_a_secret(
    api: str, mode: str, clean_registry: None
) -> None:
    auth = Authorizer()
    register_provider("cloudy", Rules(auth))
    echo = json.dumps({"error": {"message": f"token {TOKEN} is expired", "type": "x"}})
    log = TraceLog()
    with MockServer(["signed hello", Reply(status=400, body=echo.encode(),
                                            content_type="application/json")]) as server:  # fmt: skip
        ok = _run(mode, _model(server, api))
        bad = _run(mode, _model(server, api), max_retries=0, trace=log)
        seen = server.requests
    assert ok.error is None and ok.text == "signed hello"
    # Sent exactly what was authorized: the same body bytes, the header added.
    method, url, headers, body = auth.seen[0]
    assert method == "POST" and seen[0].body == body
    assert seen[0].path in url
    assert seen[0].headers.get("authorization") == f"Bearer {TOKEN}"
    assert "authorization" not in {k.lower() for k in headers}  # added, not given
    # The token is redacted like an API key: error text, repr, trace.
    assert bad.error is not None and bad.error.kind == "invalid_request"
    assert TOKEN not in bad.error.message and "[redacted]" in bad.error.message
    assert TOKEN not in repr(bad) and TOKEN not in mw.to_json(bad).decode()
    assert TOKEN not in json.dumps([r.to_dict() for r in log.records], default=str)


@pytest.mark.parametrize("mode", ["async", "sync"])
@pytest.mark.parametrize(
    ("failure", "result", "says"),
    [
        (RuntimeError("token endpoint said no"), None, "RuntimeError: token endpoint said no"),
        (mw.errors.MissingAPIKeyError("no credentials: set AWS_PROFILE"), None, "AWS_PROFILE"),
        (None, "not a pair", "no (headers, secrets)"),
    ],
)
def test_an_authorizer_that_fails_ends_the_stream_typed_and_sends_nothing(
    mode: str, failure: BaseException | None, result: Any, says: str, clean_registry: None
) -> None:
    auth = Authorizer(fail=failure, result=result)
    register_provider("cloudy", Rules(auth))
    with MockServer(["never"]) as server:
        msg = _run(mode, _model(server, "openai-chat"))
        n = len(server.requests)
        where = server.origin
    assert n == 0
    assert msg.error is not None and msg.error.kind == "authentication"
    assert msg.stop_reason == "error" and says in msg.error.message
    assert where in msg.error.message  # says where the credentials were for


def test_no_io_before_iteration_and_rules_without_an_authorizer_still_work(
    clean_registry: None,
) -> None:
    auth = Authorizer()
    rules = Rules(auth)
    register_provider("cloudy", rules)
    with MockServer(["x"]) as server:
        s = mw.stream(_model(server, "openai-chat"), CTX)
        assert rules.made and not auth.seen  # built at once, authorized only when sent
        s.abort()
        assert not auth.seen and not server.requests

    class Plain:
        def url(self, model: mw.Model, api: str, default: str) -> str:
            return default

        def auth(self, model: mw.Model, api_key: str) -> Mapping[str, str] | None:
            return None

    register_provider("cloudy", Plain())  # the authorizer hook is optional
    with MockServer(["plain"]) as server:
        assert mw.complete_sync(_model(server, "openai-chat"), CTX).text == "plain"


def test_a_provider_whose_key_is_optional_gets_none_instead_of_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from modelwire import _options as options

    monkeypatch.setitem(options.ENV_KEYS, "cloudy", ("CLOUDY_TOKEN",))
    monkeypatch.delenv("CLOUDY_TOKEN", raising=False)
    with pytest.raises(mw.MissingAPIKeyError, match="CLOUDY_TOKEN"):
        options.resolve_api_key("cloudy", None)
    monkeypatch.setattr(options, "KEY_OPTIONAL", {"cloudy"})
    assert options.resolve_api_key("cloudy", None) is None  # the authorizer will sign
    monkeypatch.setenv("CLOUDY_TOKEN", "tok-from-env")
    assert options.resolve_api_key("cloudy", None) == "tok-from-env"
