"""Provider rules as the client applies them, for every wire API.

The request-time credential seam for cloud providers:
``ProviderRules.authorizer(model, options)`` hands over an object whose
``authorize``/``aauthorize`` add headers (a SigV4 signature over the exact body, a
refreshed OAuth token) when the request is sent, inside the stream. Its secrets are
redacted like the API key; its failure ends the stream typed, nothing sent. The URL,
auth and body hooks reach an API registered at run time too, because the client —
not the API's request builder — applies them. Whether a key is optional comes from
the provider's record in the catalog data."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

import modelwire as mw
import modelwire._apis as apis
import modelwire._providers as providers
from modelwire._apis import builtin_api_names, register_wire_api
from modelwire._apis.openai_chat import OpenAIChatAPI
from modelwire._providers import ProviderRules, register_provider
from modelwire._wire.request import HTTPRequest, RequestOptions
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


class Rules(ProviderRules):
    def __init__(self, authorizer: Authorizer) -> None:
        self.made: list[tuple[mw.Model, RequestOptions]] = []
        self._authorizer = authorizer

    def authorizer(self, model: mw.Model, options: RequestOptions) -> Authorizer:
        self.made.append((model, options))
        return self._authorizer


@pytest.fixture
def clean_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(providers, "_providers", dict(providers._providers))
    monkeypatch.setattr(apis, "_registry", dict(apis._registry))
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

    class Plain(ProviderRules):
        pass

    register_provider("cloudy", Plain())  # every hook has a default
    with MockServer(["plain"]) as server:
        assert mw.complete_sync(_model(server, "openai-chat"), CTX).text == "plain"


def _with_record(monkeypatch: pytest.MonkeyPatch, record: dict[str, Any]) -> None:
    """The provider tables as if the catalog data held ``record`` too."""
    from importlib import resources

    from modelwire._catalog import _records, validate_catalog

    data = json.loads(resources.files("modelwire").joinpath("data", "models.json").read_bytes())
    data["providers"].append(record)
    tables = _records._Tables(validate_catalog(json.dumps(data)))
    monkeypatch.setattr(_records, "_tables", tables)


_CLOUDY = {"id": "cloudy", "name": "Cloudy", "env": ["CLOUDY_TOKEN"], "docs": "https://x.test",
           "models": [{"id": "m", "name": "M", "api": "openai-chat", "base_url": "https://x.test/v1",
                       "reasoning": False, "input": ["text"], "context_window": 10,
                       "max_tokens": 5, "cost": {"input": 1, "output": 1}}]}  # fmt: skip


@pytest.mark.parametrize("optional", [False, True])
def test_a_provider_record_says_whether_its_key_is_optional(
    monkeypatch: pytest.MonkeyPatch, optional: bool
) -> None:
    from modelwire._client import _options as options

    _with_record(monkeypatch, {**_CLOUDY, "key_optional": optional})
    monkeypatch.delenv("CLOUDY_TOKEN", raising=False)
    from modelwire._catalog._records import ENV_KEYS

    assert ENV_KEYS["cloudy"] == ("CLOUDY_TOKEN",)  # derived from the record
    if optional:
        assert options.resolve_api_key("cloudy", None) is None  # the authorizer will sign
    else:
        with pytest.raises(mw.MissingAPIKeyError, match="CLOUDY_TOKEN"):
            options.resolve_api_key("cloudy", None)
    monkeypatch.setenv("CLOUDY_TOKEN", "tok-from-env")
    assert options.resolve_api_key("cloudy", None) == "tok-from-env"


KEY = "sk-third-party-key-8c1e55"


class ThirdPartyChat(OpenAIChatAPI):
    """An API registered at run time that builds its request itself, without the
    built-in APIs' request helper: the provider rules still reach it."""

    name = "third-party-chat"
    # Its own endpoint: two APIs on one exact path could not be told apart.
    endpoint = "/third-party/chat/completions"

    def build_request(
        self, model: mw.Model, context: mw.Context, options: RequestOptions
    ) -> HTTPRequest:
        body = json.dumps(self.build_body(model, context, options)).encode()
        headers = {"content-type": "application/json", "authorization": f"Bearer {options.api_key}"}
        return HTTPRequest(url=model.url_root + self.path(model.id), headers=headers, body=body)


class AzureStyle(ProviderRules):
    """Rules shaped like Azure OpenAI's: an ``api-version`` query, an ``api-key``
    header in place of the API's bearer token, a body field of its own."""

    def url(self, model: mw.Model, api: str, default: str) -> str:
        return default + "?api-version=2024-10-21"

    def auth(self, model: mw.Model, api_key: str) -> Mapping[str, str] | None:
        return {"api-key": api_key}

    def body(self, model: mw.Model, api: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        return {**body, "user": "azure-style"}


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_a_third_party_api_gets_the_provider_rules_url_auth_body_and_secrets(
    mode: str, clean_registry: None
) -> None:
    register_wire_api(ThirdPartyChat())
    register_provider("azure-style", AzureStyle())
    echo = json.dumps({"error": {"message": f"key {KEY} is not valid here", "type": "x"}})
    with MockServer(["routed", Reply(status=400, body=echo.encode(),
                                      content_type="application/json")]) as server:  # fmt: skip
        base = server.model("openai-chat")
        model = mw.Model(id=base.id, api="third-party-chat", provider="azure-style",
                         base_url=base.base_url)  # fmt: skip
        ok = _run(mode, model, api_key=KEY)
        bad = _run(mode, model, api_key=KEY, max_retries=0)
        sent = server.requests[0]
    assert ok.error is None and ok.text == "routed"
    assert sent.path.endswith("/v1/third-party/chat/completions?api-version=2024-10-21")
    assert sent.headers.get("api-key") == KEY and "authorization" not in sent.headers
    assert json.loads(sent.body)["user"] == "azure-style"
    # The rules' key header is a secret: redacted in the error text.
    assert bad.error is not None and KEY not in bad.error.message
    assert "[redacted]" in bad.error.message


def test_the_rules_key_header_replaces_only_the_apis_key_header(clean_registry: None) -> None:
    from modelwire._client._options import resolve_options
    from modelwire._providers import apply_provider_rules

    register_provider("azure-style", AzureStyle())
    model = mw.Model(
        id="m", api="openai-chat", provider="azure-style", base_url="https://x.test/v1"
    )
    # A one-letter key appears inside other header values: those stay.
    options = resolve_options("azure-style", api_key="e", headers={"X-Trace": "e-1 e"})
    built = apis.get_api("openai-chat").build_request(model, CTX, options)
    sent = apply_provider_rules(model, options, built)
    lower = {k.lower(): v for k, v in sent.headers.items()}
    assert lower["api-key"] == "e" and "authorization" not in lower
    assert lower["x-trace"] == "e-1 e" and lower["content-type"] == "application/json"
    assert "e" in sent.secrets


def test_every_hook_is_declared_on_the_typed_base_and_none_is_probed() -> None:
    """The client calls the hooks of :class:`ProviderRules` directly: each is declared
    there with its default, and no source looks a hook up with ``getattr``."""
    import inspect
    import re
    from pathlib import Path

    hooks = {"url", "auth", "body", "authorizer"}
    assert hooks <= {n for n, v in vars(ProviderRules).items() if callable(v)}
    plain = ProviderRules()
    model = mw.Model(id="m", api="openai-chat", provider="p", base_url="https://x.test/v1")
    assert plain.url(model, "openai-chat", "https://d") == "https://d"
    assert plain.auth(model, "k") is None and plain.authorizer(model, RequestOptions()) is None
    body = {"a": 1}
    assert plain.body(model, "openai-chat", body) is body
    src = Path(inspect.getfile(mw)).parent
    probing = re.compile(r"getattr\(\s*rules\b|hasattr\(\s*rules\b")
    found = [str(p) for p in src.rglob("*.py") if probing.search(p.read_text(encoding="utf-8"))]
    assert found == []
