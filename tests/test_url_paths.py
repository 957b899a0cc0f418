"""Every value a wire API or provider puts into a URL path stays data: the request line a
real loopback server receives is exactly the intended path, for hostile model ids.

The (provider, API) pairs come from the catalog's provider records; the intended path of
each is the one a benign id gets, with the hostile id percent-encoded in its place (one
path segment, RFC 3986 §3.3), or the same path when the API sends the id in the body.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote, urlsplit

import msgspec
import pytest

import modelwire as mw
from modelwire import _providers
from modelwire._apis import builtin_api_names
from modelwire._catalog import models as list_models
from modelwire.errors import ConfigurationError
from modelwire.types import Context, Model, UserMessage

# Unreserved characters only: no encoding changes it, so it marks where the id goes.
SLOT = "mwslot-7"
HOSTILE = ["..", ".", "../../escape", "a/b", "%2e%2e", "?x=1", "#frag", "a b", "modèle-ü", "a:b"]
DOTS = {".", ".."}


class Recorder:
    """A loopback server that records every request line and its headers and answers
    404 with ``answer`` as the error message."""

    def __init__(self, answer: bytes = b"no such path") -> None:
        self.lines: list[str] = []
        self.headers: list[dict[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                outer.lines.append(self.requestline)
                outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                self.rfile.read(int(self.headers.get("content-length") or 0))
                message = answer.decode()
                data = json.dumps({"error": {"message": message, "code": 404}}).encode()
                self.send_response(404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                         daemon=True).start()  # fmt: skip
        self.netloc = f"127.0.0.1:{self.server.server_address[1]}"

    def target(self, model: Model) -> str:
        """The request target (path and query) the server received for one call."""
        before = len(self.lines)
        message = mw.complete_sync(model, CONTEXT, api_key=KEYS.get(model.provider, "test-key"),
                                   max_retries=0)  # fmt: skip
        assert message.stop_reason == "error"
        assert len(self.lines) == before + 1, self.lines[before:]
        method, target, _version = self.lines[-1].split(" ")
        assert method == "POST"
        return target


CONTEXT = Context(messages=(UserMessage(content="hi"),))
# Vertex AI's Gemini takes an API key as x-goog-api-key (an access token would do too).
KEYS = {"google-vertex": "AIza-test-key"}


def _pairs() -> list[tuple[str, str]]:
    seen: dict[tuple[str, str], None] = {}
    for model in list_models():
        seen[(model.provider, model.api)] = None
    return sorted(seen)


def _variants() -> list[tuple[str, str, str]]:
    # Azure's dated API versions put the deployment (Model.id) into the path.
    out = [(p, a, "") for p, a in _pairs()]
    out += [(p, a, "?api-version=2024-10-21") for p, a in _pairs()
            if p == "azure-openai" and a == "openai-chat"]  # fmt: skip
    return out


VARIANTS = _variants()


@pytest.fixture(scope="module")
def recorder() -> Iterator[Recorder]:
    rec = Recorder()
    yield rec
    rec.server.shutdown()
    rec.server.server_close()


def _model(recorder: Recorder, provider: str, api: str, query: str, model_id: str) -> Model:
    found = next(m for m in list_models() if m.provider == provider and m.api == api)
    path = urlsplit(found.base_url).path.rstrip("/")
    if query:  # the dated form's endpoint is the resource root
        path = path.removesuffix("/v1").removesuffix("/openai")
    if provider in ("google-vertex", "vertex-anthropic"):
        path += "/projects/my-project-1/locations/us-central1"
    base = f"http://{recorder.netloc}{path}{query}"
    return msgspec.structs.replace(found, id=model_id, base_url=base)


def test_the_pairs_cover_every_api_and_every_provider_with_rules() -> None:
    # Every shipped wire API and every provider with its own URL rules is exercised.
    assert {a for _, a in _pairs()} == set(builtin_api_names())
    with_rules = {p for p, _ in _pairs() if _providers.provider_rules(p) is not None}
    assert {"azure-openai", "amazon-bedrock", "google-vertex", "vertex-anthropic"} <= with_rules


@pytest.mark.parametrize(("provider", "api", "query"), VARIANTS)
@pytest.mark.parametrize("hostile", HOSTILE)
def test_the_request_line_is_exactly_the_intended_path(
    recorder: Recorder, provider: str, api: str, query: str, hostile: str
) -> None:
    intended = recorder.target(_model(recorder, provider, api, query, SLOT))
    in_path = SLOT in intended
    model = _model(recorder, provider, api, query, hostile)
    if in_path and hostile in DOTS:
        before = len(recorder.lines)
        with pytest.raises(ConfigurationError, match=r"Model\.id") as info:
            mw.complete_sync(model, CONTEXT, api_key=KEYS.get(provider, "test-key"))
        assert "RFC 3986" in str(info.value)
        assert len(recorder.lines) == before  # refused before any I/O
        return
    expected = intended.replace(SLOT, quote(hostile, safe="")) if in_path else intended
    assert recorder.target(model) == expected


@pytest.mark.parametrize(
    ("model_id", "resource"),
    [
        ("gemini-2.5-flash", "models/gemini-2.5-flash"),
        ("models/gemini-2.5-flash", "models/gemini-2.5-flash"),
        ("tunedModels/my-tuned-1", "tunedModels/my-tuned-1"),
        ("models/../../escape", "models/..%2F..%2Fescape"),
        ("tunedModels/a/b", "tunedModels/a%2Fb"),
        ("other/x", "models/other%2Fx"),
    ],
)
def test_gemini_resource_names_follow_googles_collections(
    recorder: Recorder, model_id: str, resource: str
) -> None:
    # POST /v1beta/{model=models/*}:streamGenerateContent, and tunedModels/*.
    model = _model(recorder, "google", "google-generative-ai", "", model_id)
    assert recorder.target(model) == f"/v1beta/{resource}:streamGenerateContent?alt=sse"


@pytest.mark.parametrize("model_id", ["models/..", "tunedModels/.", "models/."])
def test_a_dot_segment_after_a_gemini_collection_is_refused(
    recorder: Recorder, model_id: str
) -> None:
    model = _model(recorder, "google", "google-generative-ai", "", model_id)
    with pytest.raises(ConfigurationError, match=r"Gemini model id \(Model\.id\)"):
        mw.complete_sync(model, CONTEXT, api_key="test-key")


def test_a_bedrock_inference_profile_arn_is_one_encoded_segment(recorder: Recorder) -> None:
    # The Converse API reference: "If you use an ARN ... URL-encode it".
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-v1:0"
    model = _model(recorder, "amazon-bedrock", "bedrock-converse", "", arn)
    assert recorder.target(model) == f"/model/{quote(arn, safe='')}/converse-stream"
    assert "/" not in recorder.target(model).removeprefix("/model/").removesuffix(
        "/converse-stream"
    )


def test_a_vertex_claude_version_keeps_its_at_sign(recorder: Recorder) -> None:
    model = _model(recorder, "vertex-anthropic", "anthropic-messages", "", "claude-x@20250929")
    assert recorder.target(model) == (
        "/v1/projects/my-project-1/locations/us-central1/publishers/anthropic/models/"
        "claude-x@20250929:streamRawPredict"
    )


@pytest.mark.parametrize("base_path", ["/v1/../admin", "/v1/./x", "/v1/%2E%2E"])
def test_a_dot_segment_in_base_url_is_refused_for_every_api(
    recorder: Recorder, base_path: str
) -> None:
    for provider, api in _pairs():
        found = next(m for m in list_models() if m.provider == provider and m.api == api)
        model = msgspec.structs.replace(found, base_url=f"http://{recorder.netloc}{base_path}")
        before = len(recorder.lines)
        with pytest.raises(ConfigurationError, match="another path"):
            mw.complete_sync(model, CONTEXT, api_key=KEYS.get(provider, "test-key"))
        assert len(recorder.lines) == before, provider


class Escaping(_providers.ProviderRules):
    def url(self, model: Model, api: str, default: str) -> str:
        return default.replace("/chat/completions", "/x/../../admin")


def test_provider_rules_registered_at_run_time_cannot_send_a_dot_segment(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The net under every API and provider, also those registered at run time.
    monkeypatch.setattr(_providers, "_providers", dict(_providers._providers))
    _providers.register_provider("escaping", Escaping())
    model = mw.Model(id="m", api="openai-chat", provider="escaping",
                     base_url=f"http://{recorder.netloc}/v1")  # fmt: skip
    before = len(recorder.lines)
    with pytest.raises(ConfigurationError, match="another path"):
        mw.complete_sync(model, CONTEXT)
    assert len(recorder.lines) == before
