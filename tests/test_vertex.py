"""Google Vertex AI: ``google-vertex`` (Gemini) and ``vertex-anthropic``
(Claude) over the existing wire APIs, through their provider rules
(modelwire/providers/_vertex.py) — URLs with project and location, credentials
(API key, access token, Application Default Credentials from a loopback token
endpoint), Claude's body, Google's error bodies, and the same end-to-end path and
fault matrix as every API, over loopback only."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import modelwire as mw
import rawserver
import test_faults
from modelwire import _providers as providers
from modelwire._apis import get_api, get_server
from modelwire._client._options import resolve_options
from modelwire._providers import (
    ProviderRules,
    _vertex,
    apply_provider_rules,
    provider_rules,
    register_provider,
)
from modelwire.testing import MockServer, Reply, tool_call
from modelwire.trace import TraceLog
from test_faults import fast_backoff  # noqa: F401  (the fixture, for the reused matrix)

CTX = mw.Context(messages=[mw.UserMessage(content="hi")])
TOKEN = "ya29.vertex-token-Zq81"
API_KEY = "AQ.vertex-express-key-Pp42"
PROVIDERS = {"google-vertex": "google-generative-ai", "vertex-anthropic": "anthropic-messages"}
CLAUDE = "claude-sonnet-4-5@20250929"
IDS = {"google-vertex": "gemini-2.5-flash", "vertex-anthropic": CLAUDE}
SCOPED = "/v1/projects/proj-test-123/locations/us-east5"


def vertex(provider: str, base_url: str, model_id: str | None = None, **fields: Any) -> mw.Model:
    return mw.Model(id=model_id or IDS[provider], api=PROVIDERS[provider], provider=provider,
                    base_url=base_url, max_tokens=1024, **fields)  # fmt: skip


def build(model: mw.Model, context: mw.Context = CTX, **opts: Any) -> Any:
    """The request as the client sends it: the API's, with the provider rules applied
    (where the environment and the credentials file are read)."""
    options = resolve_options(model.provider, **opts)
    built = get_api(model.api).build_request(model, context, options)
    return apply_provider_rules(model, options, built)


@pytest.fixture(autouse=True)
def _no_ambient_google(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No credential of the machine is seen, no metadata server is probed, and no
    credentials loaded by one test are reused by the next."""
    empty = tmp_path / "gcloud"
    empty.mkdir()
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(empty))
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    monkeypatch.setenv("HOME", str(empty))
    for rules in (_vertex.GEMINI_RULES, _vertex.ANTHROPIC_RULES):
        rules.adc.clear()
    yield
    for rules in (_vertex.GEMINI_RULES, _vertex.ANTHROPIC_RULES):
        rules.adc.clear()


# --------------------------------------------------------------------------- the seam


def test_built_in_rules_are_found_by_module_name_and_loaded_lazily() -> None:
    assert provider_rules("google-vertex") is _vertex.GEMINI_RULES
    assert provider_rules("vertex-anthropic") is _vertex.ANTHROPIC_RULES
    assert provider_rules("no-such-provider") is None
    assert "no-such-provider" in providers._no_rules  # the miss is remembered
    # `import modelwire` loads neither the rules nor google-auth; a Vertex request
    # built with a token loads the rules only.
    code = (
        "import sys, modelwire as mw\n"
        "before = [m for m in ('modelwire._providers._vertex', 'google.auth') if m in sys.modules]\n"
        "m = mw.Model(id='g', api='google-generative-ai', provider='google-vertex',\n"
        "             base_url='https://aiplatform.googleapis.com/v1/projects/p-12345/locations/global')\n"
        "mw.stream(m, mw.Context(messages=[mw.UserMessage(content='x')]), api_key='ya29.x').abort()\n"
        "print(before, 'modelwire._providers._vertex' in sys.modules, 'google.auth' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]", "True", "False"]


def test_a_registered_provider_wins_over_the_built_in_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(providers, "_providers", dict(providers._providers))

    class Mine(ProviderRules):
        pass

    register_provider("google-vertex", Mine())
    model = vertex("google-vertex", "https://proxy.example.com/v1beta")
    assert build(model, api_key="k").url.endswith(
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )


# --------------------------------------------------------------------------- URLs


@pytest.mark.parametrize(
    ("provider", "base_url", "env", "url"),
    [
        # The catalog's base URL; a regional location moves to the regional host.
        ("google-vertex", "https://aiplatform.googleapis.com/v1",
         {"GOOGLE_CLOUD_PROJECT": "my-proj-1", "GOOGLE_CLOUD_LOCATION": "us-central1"},
         "https://us-central1-aiplatform.googleapis.com/v1/projects/my-proj-1/locations/"
         "us-central1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"),
        # No location: global, on the global host.
        ("google-vertex", "https://aiplatform.googleapis.com/v1/",
         {"GOOGLE_CLOUD_PROJECT": "my-proj-1"},
         "https://aiplatform.googleapis.com/v1/projects/my-proj-1/locations/global/publishers/"
         "google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"),
        # AnthropicVertex's CLOUD_ML_REGION; the @ of a Claude id is kept as is.
        ("vertex-anthropic", "https://aiplatform.googleapis.com/v1",
         {"GOOGLE_CLOUD_PROJECT": "my-proj-1", "CLOUD_ML_REGION": "europe-west1"},
         "https://europe-west1-aiplatform.googleapis.com/v1/projects/my-proj-1/locations/"
         f"europe-west1/publishers/anthropic/models/{CLAUDE}:streamRawPredict"),
        # Project and location in base_url win over the environment; the host is kept.
        ("vertex-anthropic", "https://vertex-proxy.example.com/v1/projects/p-from-url/locations/us-east5",
         {"GOOGLE_CLOUD_PROJECT": "ignored-proj", "GOOGLE_CLOUD_LOCATION": "asia-east1"},
         "https://vertex-proxy.example.com/v1/projects/p-from-url/locations/us-east5/publishers/"
         f"anthropic/models/{CLAUDE}:streamRawPredict"),
        # A base_url already ending in the publisher path is not doubled.
        ("google-vertex", "https://aiplatform.googleapis.com/v1beta1/projects/p-from-url/locations/global/publishers/google",
         {},
         "https://aiplatform.googleapis.com/v1beta1/projects/p-from-url/locations/global/"
         "publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"),
    ],
)  # fmt: skip
def test_the_url_names_project_location_and_publisher(
    provider: str, base_url: str, env: dict[str, str], url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert build(vertex(provider, base_url), api_key=TOKEN).url == url


def test_an_api_key_without_a_project_uses_express_mode() -> None:
    request = build(
        vertex("google-vertex", "https://aiplatform.googleapis.com/v1"), api_key=API_KEY
    )
    assert request.url == ("https://aiplatform.googleapis.com/v1/publishers/google/models/"
                           "gemini-2.5-flash:streamGenerateContent?alt=sse")  # fmt: skip
    assert request.headers["x-goog-api-key"] == API_KEY
    assert "key=" not in request.url and API_KEY not in request.url  # never in the URL


@pytest.mark.parametrize(
    ("provider", "opts", "error", "says"),
    [
        ("vertex-anthropic", {"api_key": TOKEN}, mw.ConfigurationError, "GOOGLE_CLOUD_PROJECT"),
        ("google-vertex", {"api_key": TOKEN}, mw.ConfigurationError, "GOOGLE_CLOUD_PROJECT"),
        ("google-vertex", {"headers": {"Authorization": "Bearer x"}}, mw.ConfigurationError,
         "GOOGLE_CLOUD_PROJECT"),
        ("google-vertex", {}, mw.MissingAPIKeyError, "GOOGLE_CLOUD_API_KEY"),
        ("vertex-anthropic", {}, mw.MissingAPIKeyError, "GOOGLE_CLOUD_ACCESS_TOKEN"),
    ],
)  # fmt: skip
def test_without_a_project_only_an_api_key_works_and_the_error_says_what_to_set(
    provider: str, opts: dict[str, Any], error: type[Exception], says: str
) -> None:
    model = vertex(provider, "https://aiplatform.googleapis.com/v1")
    with MockServer(["never"]) as server:
        local = msgspec.structs.replace(model, base_url=server.origin + "/v1")
        with pytest.raises(error, match=says):
            mw.stream(local, CTX, **opts)
        with pytest.raises(error, match=says):
            mw.complete_sync(local, CTX, **opts)
        assert server.requests == []


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"GOOGLE_CLOUD_PROJECT": "Bad Project!"}, "not a Google Cloud project id"),
        ({"GOOGLE_CLOUD_PROJECT": "my-proj-1", "GOOGLE_CLOUD_LOCATION": "us/../x"},
         "not a Vertex AI location"),
    ],
)  # fmt: skip
def test_a_bad_project_or_location_is_refused_not_put_into_the_path(
    env: dict[str, str], says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(mw.ConfigurationError, match=says):
        build(vertex("google-vertex", "https://aiplatform.googleapis.com/v1"), api_key=TOKEN)
    with pytest.raises(mw.ConfigurationError, match="not a Google Cloud project id"):
        build(vertex("vertex-anthropic", "https://x.example/v1/projects/a%2Fb/locations/global"),
              api_key=TOKEN)  # fmt: skip


# --------------------------------------------------------------------------- auth and body


def test_credentials_given_directly_go_in_headers_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-proj-1")
    base = "https://aiplatform.googleapis.com/v1"
    gemini_key = build(vertex("google-vertex", base), api_key=API_KEY)
    assert gemini_key.headers["x-goog-api-key"] == API_KEY
    assert "authorization" not in {k.lower() for k in gemini_key.headers}
    gemini_token = build(vertex("google-vertex", base), api_key=TOKEN)
    assert gemini_token.headers["Authorization"] == f"Bearer {TOKEN}"
    assert "x-goog-api-key" not in gemini_token.headers
    claude = build(vertex("vertex-anthropic", base), api_key=TOKEN)
    assert claude.headers["authorization"] == f"Bearer {TOKEN}"
    assert "x-api-key" not in claude.headers  # the anthropic key header is replaced
    for request in (gemini_key, gemini_token, claude):
        assert request.authorizer is None  # a key or token given: no ADC
        assert API_KEY not in repr(request) and TOKEN not in repr(request)
    # An Authorization header given by the caller is sent as is, without ADC.
    own = build(vertex("vertex-anthropic", base), headers={"Authorization": "Bearer mine-1"})
    assert own.headers["authorization"] == "Bearer mine-1" and own.authorizer is None
    # From the environment: the express-mode key first, then the access token.
    monkeypatch.setenv("GOOGLE_CLOUD_ACCESS_TOKEN", TOKEN)
    assert build(vertex("vertex-anthropic", base)).headers["authorization"] == f"Bearer {TOKEN}"
    assert build(vertex("google-vertex", base)).headers["Authorization"] == f"Bearer {TOKEN}"
    monkeypatch.setenv("GOOGLE_CLOUD_API_KEY", API_KEY)
    assert build(vertex("google-vertex", base)).headers["x-goog-api-key"] == API_KEY


def test_claude_on_vertex_carries_anthropic_version_and_no_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-proj-1")
    tools = [mw.ToolDefinition(name="read", description="Read", parameters={"type": "object"})]
    ctx = mw.Context(system_prompt="Be brief.", messages=CTX.messages, tools=tools)
    on_vertex = json.loads(build(vertex("vertex-anthropic", "https://aiplatform.googleapis.com/v1"),
                                 ctx, api_key=TOKEN, max_tokens=50).body)  # fmt: skip
    direct_model = mw.Model(id=CLAUDE, api="anthropic-messages", provider="anthropic",
                            base_url="https://api.anthropic.com/v1", max_tokens=1024)  # fmt: skip
    direct = json.loads(build(direct_model, ctx, api_key="sk-ant", max_tokens=50).body)
    assert on_vertex["anthropic_version"] == "vertex-2023-10-16"
    assert "model" not in on_vertex and direct["model"] == CLAUDE
    del direct["model"], on_vertex["anthropic_version"]
    assert on_vertex == direct  # everything else is the adapter's own body
    # Gemini's body is the Gemini API's, untouched.
    gem = vertex("google-vertex", "https://aiplatform.googleapis.com/v1")
    google = msgspec.structs.replace(gem, provider="google")
    assert build(gem, ctx, api_key=TOKEN).body == build(google, ctx, api_key="k").body


# --------------------------------------------------------------------------- end to end


def _on(server: MockServer, provider: str) -> mw.Model:
    return vertex(provider, server.origin + SCOPED)


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_stream_complete_and_their_sync_twins(provider: str) -> None:
    with MockServer(["Hello from Vertex 你好"], repeat_last=True) as server:
        model = _on(server, provider)

        async def go() -> tuple[list[Any], mw.AssistantMessage, mw.AssistantMessage]:
            s = mw.stream(model, CTX, api_key=TOKEN)
            types = [e.type async for e in s]
            return types, await s.result(), await mw.complete(model, CTX, api_key=TOKEN)

        types, streamed, completed = asyncio.run(go())
        sync_types = [e.type for e in mw.stream_sync(model, CTX, api_key=TOKEN)]
        sync = mw.complete_sync(model, CTX, api_key=TOKEN)
        seen = list(server.requests)
    assert types == sync_types and types[0] == "start" and types[-1] == "done"
    for message in (streamed, completed, sync):
        assert message.text == "Hello from Vertex 你好" and message.stop_reason == "stop"
        assert (message.provider, message.api, message.model) == (provider, model.api, model.id)
    publisher = "google" if provider == "google-vertex" else "anthropic"
    for request in seen:
        assert request.path.startswith(f"{SCOPED}/publishers/{publisher}/models/{model.id}:")
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        assert request.model == model.id and request.api == model.api
    if provider == "vertex-anthropic":
        assert seen[0].path.endswith(":streamRawPredict")
        assert seen[0].json()["anthropic_version"] == "vertex-2023-10-16"


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_the_agent_runs_tools_over_vertex(provider: str, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("vertex notes", encoding="utf-8")
    replies = [["Reading.", tool_call("read", {"path": "notes.txt"})], "It says vertex notes."]
    with MockServer(replies) as server:
        agent = mw.Agent(_on(server, provider), tools=mw.tools.read_only(root=tmp_path),
                         api_key=TOKEN)  # fmt: skip
        run = asyncio.run(agent.run("read notes.txt"))
        second = server.requests[1]
    assert run.final.text == "It says vertex notes."
    assert [m.role for m in run.messages] == ["user", "assistant", "tool_result", "assistant"]
    [result] = get_server(PROVIDERS[provider]).tool_results(second.json())
    assert result.endswith("vertex notes")
    if provider == "vertex-anthropic":
        assert "model" not in second.json()


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_replay_and_trace(provider: str) -> None:
    log = TraceLog()
    with MockServer(["Traced."]) as server:
        model = _on(server, provider)
        message = mw.complete_sync(model, CTX, api_key=TOKEN, trace=log)
        body = server.requests[0]
    assert message.text == "Traced."
    records = [r.to_dict() for r in log.records]
    request = next(r for r in records if r["layer"] == "request")
    assert request["url"].endswith(body.path) and TOKEN not in json.dumps(records, default=str)
    # The recorded bytes replay to the same message (provider from the model).
    from modelwire.testing import render

    chunks = [render("Traced.", model.api, model=model.id)]
    replayed = mw.replay(model.api, chunks, model=model).message
    assert replayed.text == "Traced." and replayed.provider == provider


def test_handoff_to_and_from_vertex() -> None:
    """Signatures go back only to the same provider+API+model; ids are rewritten."""
    signed = mw.AssistantMessage(
        content=[mw.ThinkingContent(thinking="hmm", signature="sig-1"),
                 mw.ToolCall(id="call_1|fc_9", name="read", arguments={"path": "a"})],
        api="anthropic-messages", provider="anthropic", model=CLAUDE, usage=mw.Usage(),
        stop_reason="tool_use",
    )  # fmt: skip
    result = mw.ToolResultMessage(tool_call_id="call_1|fc_9", tool_name="read",
                                  content=[mw.TextContent(text="A")], is_error=False)  # fmt: skip
    ctx = mw.Context(messages=[CTX.messages[0], signed, result])
    with MockServer(["ok", "ok", "ok"]) as server:
        claude_vertex = _on(server, "vertex-anthropic")
        mw.complete_sync(claude_vertex, ctx, api_key=TOKEN)
        same = msgspec.structs.replace(signed, provider="vertex-anthropic")
        mw.complete_sync(claude_vertex, mw.Context(messages=[CTX.messages[0], same, result]),
                         api_key=TOKEN)  # fmt: skip
        mw.complete_sync(_on(server, "google-vertex"), ctx, api_key=TOKEN)
        to_claude, same_claude, to_gemini = (r.json() for r in server.requests)
    sent = to_claude["messages"][1]["content"]
    assert sent[0] == {"type": "text", "text": "<thinking>\nhmm\n</thinking>"}  # not signed
    assert sent[1]["id"] == "call_1_fc_9"
    assert to_claude["messages"][2]["content"][0]["tool_use_id"] == "call_1_fc_9"
    assert same_claude["messages"][1]["content"][0]["signature"] == "sig-1"
    assert "sig-1" not in json.dumps(to_gemini)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("provider", list(PROVIDERS))
@pytest.mark.parametrize(
    ("status", "body", "kind", "says"),
    [
        (429, {"error": {"code": 429, "message": "Quota exceeded for aiplatform",
                         "status": "RESOURCE_EXHAUSTED"}}, "rate_limit", "Quota exceeded"),
        (403, {"error": {"code": 403, "message": "Permission 'aiplatform.endpoints.predict' "
                         "denied", "status": "PERMISSION_DENIED"}}, "permission", "denied"),
        (401, {"error": {"code": 401, "message": "Request had invalid authentication "
                         f"credentials {TOKEN}", "status": "UNAUTHENTICATED"}},
         "authentication", "invalid authentication"),
        (404, [{"error": {"code": 404, "message": "Publisher Model was not found",
                          "status": "NOT_FOUND"}}], "not_found", "Publisher Model was not found"),
        (400, [{"error": {"code": 400, "message": "Invalid JSON payload received",
                          "status": "INVALID_ARGUMENT"}}], "invalid_request", "INVALID_ARGUMENT"),
    ],
)  # fmt: skip
def test_google_error_bodies_map_to_typed_kinds(
    provider: str, status: int, body: Any, kind: str, says: str
) -> None:
    reply = Reply(status=status, body=json.dumps(body).encode(), content_type="application/json",
                  headers={"retry-after": "120"} if status == 429 else {})  # fmt: skip
    with MockServer([reply]) as server:
        origin = server.origin
        message = mw.complete_sync(_on(server, provider), CTX, api_key=TOKEN)
    assert message.error is not None and message.error.kind == kind
    assert says in message.error.message and TOKEN not in message.error.message
    # The message is the provider's, not the JSON body (arrays too: _http_status._error_text).
    assert (
        message.error.message.startswith(f"HTTP {status} from POST {origin}/")
        and '"error"' not in message.error.message
    )


# --------------------------------------------------------------------------- ADC


class TokenEndpoint:
    """A loopback OAuth token endpoint for an ``authorized_user`` ADC file
    (google-auth posts the refresh-token grant to the file's ``token_uri``)."""

    def __init__(self, fail: bool = False) -> None:
        self.grants: list[dict[str, list[str]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                form = parse_qs(self.rfile.read(int(self.headers["content-length"])).decode())
                outer.grants.append(form)
                n = len(outer.grants)
                status, payload = (
                    (400, {"error": "invalid_grant", "error_description": "refresh-secret-9 revoked"})
                    if fail
                    else (200, {"access_token": f"ya29.adc-{n}", "expires_in": 3600})
                )  # fmt: skip
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                         daemon=True).start()  # fmt: skip
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/token"


@pytest.fixture
def adc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Callable[..., TokenEndpoint]]:
    started: list[TokenEndpoint] = []

    def start(fail: bool = False) -> TokenEndpoint:
        endpoint = TokenEndpoint(fail)
        started.append(endpoint)
        info = {"type": "authorized_user", "client_id": "cid.apps.googleusercontent.com",
                "client_secret": "client-secret-7", "refresh_token": "refresh-secret-9",
                "token_uri": endpoint.url}  # fmt: skip
        path = tmp_path / f"adc-{len(started)}.json"
        path.write_text(json.dumps(info))
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
        return endpoint

    yield start
    for endpoint in started:
        endpoint.server.shutdown()
        endpoint.server.server_close()


def _authorized_user_token_uri(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    # google-auth sends an authorized_user refresh to its own token endpoint constant
    # (it ignores a token_uri in the file): point that endpoint at loopback.
    import google.oauth2.credentials

    monkeypatch.setattr(google.oauth2.credentials, "_GOOGLE_OAUTH2_TOKEN_ENDPOINT", url)


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_adc_token_is_fetched_inside_the_stream_cached_and_redacted(
    provider: str, adc: Callable[..., TokenEndpoint], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = adc()
    _authorized_user_token_uri(monkeypatch, endpoint.url)
    log = TraceLog()
    echo = json.dumps({"error": {"code": 401, "message": "bad ya29.adc-1",
                                 "status": "UNAUTHENTICATED"}})  # fmt: skip
    with MockServer(["one", "two", Reply(status=401, body=echo.encode(),
                                          content_type="application/json")]) as server:  # fmt: skip
        model = _on(server, provider)
        s = mw.stream_sync(model, CTX)
        assert endpoint.grants == []  # nothing fetched before iterating
        assert "".join(e.delta for e in s if e.type == "text_delta") == "one"
        second = asyncio.run(mw.complete(model, CTX))
        bad = mw.complete_sync(model, CTX, trace=log, max_retries=0)
        seen = list(server.requests)
    assert second.text == "two"
    assert len(endpoint.grants) == 1  # one token for all three calls (cached)
    assert endpoint.grants[0]["grant_type"] == ["refresh_token"]
    assert [r.headers["authorization"] for r in seen] == ["Bearer ya29.adc-1"] * 3
    assert bad.error is not None and bad.error.kind == "authentication"
    assert "ya29.adc-1" not in bad.error.message and "[redacted]" in bad.error.message
    assert "ya29.adc-1" not in json.dumps([r.to_dict() for r in log.records], default=str)


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_a_failed_adc_refresh_ends_the_stream_typed_and_sends_nothing(
    mode: str, adc: Callable[..., TokenEndpoint], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = adc(fail=True)
    _authorized_user_token_uri(monkeypatch, endpoint.url)
    with MockServer(["never"]) as server:
        model = _on(server, "vertex-anthropic")
        if mode == "async":
            message = asyncio.run(mw.complete(model, CTX))
        else:
            message = mw.complete_sync(model, CTX)
        assert server.requests == []
    assert message.error is not None and message.error.kind == "authentication"
    assert "could not be refreshed" in message.error.message
    for secret in ("refresh-secret-9", "client-secret-7"):
        assert secret not in message.error.message and secret not in repr(message)


def test_no_adc_at_all_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    with MockServer(["never"]) as server:
        message = mw.complete_sync(_on(server, "google-vertex"), CTX)
        assert server.requests == []
    assert message.error is not None and message.error.kind == "authentication"
    assert "GOOGLE_APPLICATION_CREDENTIALS" in message.error.message


# --------------------------------------------------------------------------- CLI


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_cli_chat_against_the_mock_server(provider: str) -> None:
    from test_cli import cli

    with MockServer(["Bonjour de Vertex"]) as server:
        proc = cli("chat", "-m", f"{provider}/{IDS[provider]}", "--base-url",
                   server.origin + SCOPED, "hello",
                   env={"GOOGLE_CLOUD_ACCESS_TOKEN": TOKEN})  # fmt: skip
        seen = server.requests
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Bonjour de Vertex\n"
    assert seen[0].headers["authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in proc.stdout + proc.stderr


# --------------------------------------------------------------------------- fault matrix


def _vertex_model_for(provider: str) -> Callable[[str, int], mw.Model]:
    def model_for(api: str, port: int) -> mw.Model:
        return vertex(provider, f"http://127.0.0.1:{port}{SCOPED}", model_id="mock-model")

    return model_for


# The whole matrix runs through both Vertex providers' rules: test_faults.PROVIDER_RUNS.


@pytest.mark.parametrize("mode", test_faults.MODES)
@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_a_dropped_vertex_stream_closes_its_connection(
    provider: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(test_faults, "model_for", _vertex_model_for(provider))
    test_faults.test_a_dropped_stream_closes_its_connection_promptly(PROVIDERS[provider], mode)


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_vertex_sync_and_async_take_the_same_decisions(
    provider: str,
    monkeypatch: pytest.MonkeyPatch,
    fast_backoff: None,  # noqa: F811
) -> None:
    monkeypatch.setattr(test_faults, "model_for", _vertex_model_for(provider))
    test_faults.test_sync_and_async_take_the_same_decisions(PROVIDERS[provider], monkeypatch, None)


def test_the_matrix_reaches_the_vertex_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reused matrix really goes through the rules (not the API's default URL)."""
    seen: list[bytes] = []
    real = rawserver.RawServer._next_plan

    def spy(self: rawserver.RawServer, body: bytes) -> rawserver.Plan:
        seen.append(body)
        return real(self, body)

    monkeypatch.setattr(rawserver.RawServer, "_next_plan", spy)
    with rawserver.serving([rawserver.ok("anthropic-messages")]) as server:
        model = _vertex_model_for("vertex-anthropic")("anthropic-messages", server.port)
        message = mw.complete_sync(model, CTX, api_key=rawserver.KEY)
    assert message.text == rawserver.TEXT
    body = json.loads(seen[0])
    assert body["anthropic_version"] == "vertex-2023-10-16" and "model" not in body


def test_the_mock_server_command_speaks_vertex() -> None:
    """``modelwire mock-server`` answers both Vertex paths (echo mode) and logs their API."""
    from test_cli import _start_server, _stop

    proc, hello = _start_server()
    try:
        origin = hello["base_urls"]["anthropic-messages"].rsplit("/v1", 1)[0]
        for provider in PROVIDERS:
            model = vertex(provider, origin + SCOPED)
            msg = mw.complete_sync(model, mw.Context(messages=[mw.UserMessage(content="ping")]),
                                   api_key=TOKEN)  # fmt: skip
            assert msg.text == "echo: ping", msg.error
        assert proc.stdout is not None
        log = [json.loads(proc.stdout.readline()) for _ in range(2)]
        assert [(e["api"], e["path"].split(":")[-1]) for e in log] == [
            ("google-generative-ai", "streamGenerateContent?alt=sse"),
            ("anthropic-messages", "streamRawPredict"),
        ]
    finally:
        assert _stop(proc) == 0


# --------------------------------------------------------------------------- Vertex-shaped streams

# Synthetic streams in the shapes Vertex AI sends (tests/data/vertex): Gemini with
# Vertex's extra fields (createTime, trafficType, token details by modality) and
# CRLF-separated events; Claude with Vertex's msg_vrtx_/toolu_vrtx_ ids and a ping.
STREAMS = Path(__file__).resolve().parent / "data" / "vertex"
SHAPED = {"google-vertex": "gemini-tool-call.sse", "vertex-anthropic": "claude-tool-call.sse"}


def _check_shaped(provider: str, message: mw.AssistantMessage) -> None:
    assert message.error is None and message.stop_reason == "tool_use"
    assert message.text == "Je lis le fichier — un instant 你好."
    [call] = message.tool_calls
    assert (call.name, call.arguments) == ("read", {"path": "README.md"})
    assert message.provider == provider
    if provider == "google-vertex":
        assert message.content[0].type == "thinking"
        assert call.signature == "CiQBVKhc7vZ0c2lnbmF0dXJl"
        assert message.response_id == "B1fNaL-vHqWx2PgP5cK3qQ4"
        # 22 answer + 34 thinking tokens; total as Vertex counted it.
        assert (message.usage.input, message.usage.output) == (41, 56)
        assert message.usage.total_tokens == 97
    else:
        assert call.id == "toolu_vrtx_01AbCdEf2345"
        assert message.response_id == "msg_vrtx_01Lq3Y2v9NnD8kX7a6Wc5Jt4"
        assert (message.usage.input, message.usage.output) == (52, 38)


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_vertex_shaped_streams_whole_byte_by_byte_and_at_every_split(provider: str) -> None:
    data = (STREAMS / SHAPED[provider]).read_bytes()
    model = vertex(provider, "https://aiplatform.googleapis.com/v1", model_id=IDS[provider])
    api = PROVIDERS[provider]
    whole = mw.replay(api, [data], model=model).message
    _check_shaped(provider, whole)
    expected = mw.to_json(msgspec.structs.replace(whole, timestamp=0))

    def same(chunks: list[bytes]) -> None:
        got = mw.replay(api, chunks, model=model).message
        assert mw.to_json(msgspec.structs.replace(got, timestamp=0)) == expected

    same([data[i : i + 1] for i in range(len(data))])
    for cut in range(1, len(data)):
        same([data[:cut], data[cut:]])


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_vertex_shaped_streams_over_the_wire(provider: str) -> None:
    data = (STREAMS / SHAPED[provider]).read_bytes()
    read = mw.ToolDefinition(name="read", description="Read", parameters={"type": "object"})
    ctx = mw.Context(messages=CTX.messages, tools=[read])
    with MockServer([Reply(body=data, seed=7)]) as server:
        message = mw.complete_sync(_on(server, provider), ctx, api_key=TOKEN)
    _check_shaped(provider, message)


@given(st.data())
@settings(max_examples=40, deadline=None)
def test_vertex_shaped_streams_at_random_splits(data: st.DataObject) -> None:
    provider = data.draw(st.sampled_from(list(PROVIDERS)))
    body = (STREAMS / SHAPED[provider]).read_bytes()
    cuts = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=12)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    model = vertex(provider, "https://aiplatform.googleapis.com/v1")
    _check_shaped(provider, mw.replay(PROVIDERS[provider], chunks, model=model).message)


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_a_connect_error_names_the_origin_only(provider: str) -> None:
    import socket

    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # closed on exit: connecting is refused
    model = vertex(provider, f"http://127.0.0.1:{port}{SCOPED}")
    message = mw.complete_sync(model, CTX, api_key=TOKEN, max_retries=0)
    assert message.error is not None and message.error.kind == "connect"
    assert f"http://127.0.0.1:{port}" in message.error.message
    for secret in ("proj-test-123", TOKEN):
        assert secret not in message.error.message
    # user:password@ is Basic auth, which a bearer token excludes: refused, not shown.
    with_userinfo = vertex(provider, f"http://user:hunter2pw@127.0.0.1:{port}{SCOPED}")
    with pytest.raises(mw.ConfigurationError, match="Basic auth") as info:
        mw.complete_sync(with_userinfo, CTX, api_key=TOKEN, max_retries=0)
    assert "hunter2pw" not in str(info.value) and "user:" not in str(info.value)


@pytest.mark.parametrize(
    ("info", "project"),
    [
        ({"type": "service_account", "project_id": "proj-sa-77"}, "proj-sa-77"),
        ({"type": "authorized_user", "quota_project_id": "proj-quota-1"}, "proj-quota-1"),
        ({"type": "authorized_user"}, None),
        ("not json at all", None),
    ],
)
def test_the_project_can_come_from_the_credentials_file(
    info: Any, project: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "key.json"
    path.write_text(info if isinstance(info, str) else json.dumps(info))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    model = vertex("vertex-anthropic", "https://aiplatform.googleapis.com/v1")
    if project is None:
        with pytest.raises(mw.MissingAPIKeyError, match="GOOGLE_CLOUD_PROJECT"):
            build(model)
        return
    request = build(model)  # ADC: the credentials themselves are loaded only when sent
    assert f"/projects/{project}/locations/global/" in request.url
    assert request.authorizer is _vertex.ANTHROPIC_RULES.adc
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "proj-env-1")  # the variable wins
    assert "/projects/proj-env-1/" in build(model).url


# --------------------------------------------------------------------------- purity


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_building_the_request_is_pure_and_the_rules_read_the_environment(
    provider: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The wire API's build_request reads neither the environment nor the credentials
    file: with every Vertex variable set (and the key file unreadable) it gives the
    same request as without; the provider rules, applied when the call is prepared,
    are where project and location are read."""
    model = vertex(provider, "https://aiplatform.googleapis.com/v1")
    for name in ("GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION",
                 "GOOGLE_APPLICATION_CREDENTIALS"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    options = resolve_options(provider, api_key=TOKEN)
    clean = get_api(model.api).build_request(model, CTX, options)
    key_file = tmp_path / "key.json"
    key_file.write_text(json.dumps({"type": "service_account", "project_id": "from-file"}))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "poisoned-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "europe-west4")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))

    def no_file(self: Path) -> bytes:
        raise AssertionError(f"build_request read {self}")

    with monkeypatch.context() as m:
        m.setattr(Path, "read_bytes", no_file)
        m.setattr(Path, "read_text", no_file)
        poisoned = get_api(model.api).build_request(model, CTX, options)
    assert (poisoned.url, poisoned.headers, poisoned.body) == (clean.url, clean.headers, clean.body)
    assert "poisoned-project" not in poisoned.url
    prepared = apply_provider_rules(model, options, poisoned)
    assert "/projects/poisoned-project/locations/europe-west4/" in prepared.url


@pytest.mark.parametrize("provider", list(PROVIDERS))
@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("GOOGLE_CLOUD_PROJECT", "../../escape"),
        ("GOOGLE_CLOUD_PROJECT", "proj-test-123/../x"),
        ("GOOGLE_CLOUD_PROJECT", "proj-test-123?x=1"),
        ("GOOGLE_CLOUD_LOCATION", "us-east5/../../x"),
        ("GOOGLE_CLOUD_LOCATION", "evil.example#"),
        ("GOOGLE_CLOUD_LOCATION", "us-east5\nx"),
    ],
)
def test_a_hostile_project_or_location_never_reaches_the_url(
    provider: str, var: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both go into the path (and the location into the host name): refused, naming
    # the variable, before any request.
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "proj-test-123")
    monkeypatch.setenv(var, value)
    model = vertex(provider, "http://127.0.0.1:9/v1")
    with pytest.raises(mw.ConfigurationError, match=var):
        mw.stream_sync(model, CTX, api_key=TOKEN)
