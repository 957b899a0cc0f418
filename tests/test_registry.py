"""The wire-API registry: one module per API owns every fact of it.

Everything else — catalog validation, CLI choices, the mock server, rendering,
the demo's tool-result reading, handoff, the pipeline's framing — asks
:mod:`modelwire._apis`. These tests prove it by dropping a new API module into the
package at run time and using it everywhere with no other edit, and by grepping
``src/`` for API names outside ``apis/`` and the catalog data.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import modelwire as mw
import modelwire._apis as apis
import modelwire._providers as providers
from modelwire._apis import (
    WireAPI,
    api_module,
    api_names,
    builtin_api_names,
    custom_stream,
    find_api,
    get_api,
    mock_routes,
    register_wire_api,
)
from modelwire._apis.ollama_chat import OllamaChatAPI
from modelwire._client._options import resolve_options
from modelwire._client._replay import pipeline_for
from modelwire._providers import ProviderRules, apply_provider_rules, register_provider
from modelwire._wire.framing import NDJSONDecoder
from modelwire._wire.sse import SSEDecoder
from modelwire.testing import MockServer, Reply, api_for_path, render

SRC = Path(mw.__file__).parent
# The API modules on disk (``-`` for ``_``), listed without asking the registry.
BUILTIN = tuple(sorted(p.stem.replace("_", "-") for p in (SRC / "_apis").iterdir()
                       if not p.name.startswith("_") and (p.suffix == ".py" or p.is_dir())))  # fmt: skip
CTX = mw.Context(messages=[mw.UserMessage(content="hi")])


@pytest.fixture
def clean_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Registrations made by a test are forgotten after it."""
    monkeypatch.setattr(apis, "_registry", dict(apis._registry))
    monkeypatch.setattr(apis, "_streams", dict(apis._streams))
    monkeypatch.setattr(providers, "_providers", dict(providers._providers))
    yield


# --------------------------------------------------------------------------- discovery


def test_every_shipped_api_is_found_by_its_module_name() -> None:
    assert builtin_api_names() == BUILTIN
    for name in BUILTIN:
        api = get_api(name)
        assert isinstance(api, WireAPI) and api.name == name
        assert type(api).__module__.startswith(api_module(name))
    assert api_module("ollama-chat") == "modelwire._apis.ollama_chat"


def test_listing_names_imports_no_api_module() -> None:
    code = (
        "import sys, modelwire as mw\n"
        "from modelwire._apis import builtin_api_names\n"
        "from modelwire._cli import build_parser\n"
        "assert 'ollama-chat' in builtin_api_names()\n"
        "build_parser()\n"
        "loaded = [m for m in sys.modules if m.startswith('modelwire._apis.')\n"
        "          and not m.rpartition('.')[2].startswith('_')]  # helpers, not APIs\n"
        "assert loaded == [], loaded\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_unknown_api_lists_the_known_ones() -> None:
    with pytest.raises(mw.ConfigurationError, match=r"unknown api 'nope'.*ollama-chat"):
        get_api("nope")
    for bad in ("", "Openai-Chat", "_common", "openai_chat", "../x", "a..b"):
        assert find_api(bad) is None
    with pytest.raises(mw.ConfigurationError, match="unknown api"):
        mw.complete_sync(mw.Model(id="m", api="nope", provider="p", base_url="http://x"), CTX)


def test_cli_choices_and_catalog_validation_come_from_the_registry() -> None:
    from modelwire import _catalog as catalog
    from modelwire._cli import APIS, build_parser

    assert builtin_api_names() == APIS
    assert frozenset(BUILTIN) == frozenset(catalog.load_catalog().apis)
    help_text = build_parser().format_help()
    assert "demo" in help_text
    raw = json.loads((SRC / "data" / "models.json").read_text())
    listed = next(p for p in raw["providers"] if p["models"])  # any record with models
    listed["models"][0]["api"] = "not-an-api"
    with pytest.raises(mw.ConfigurationError, match=r"not-an-api.*is not one of"):
        catalog.validate_catalog(json.dumps(raw))


# --------------------------------------------------------------------------- one module, no edit

NEW_API = '''
"""A test API: Ollama's NDJSON format under another name and path."""
from modelwire._apis.ollama_chat import OllamaChatAPI


class EchoAPI(OllamaChatAPI):
    name = "echo-ndjson"
    endpoint = "/echo/chat"


API = EchoAPI()
'''


@pytest.fixture
def new_api_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_registry: None
) -> Iterator[str]:
    (tmp_path / "echo_ndjson.py").write_text(NEW_API)
    monkeypatch.setattr(apis, "__path__", [*apis.__path__, str(tmp_path)])
    yield "echo-ndjson"
    sys.modules.pop("modelwire._apis.echo_ndjson", None)


def test_a_new_api_module_works_everywhere_with_no_other_edit(new_api_module: str) -> None:
    name = new_api_module
    assert name in builtin_api_names() and name in api_names()
    # Rendering, the mock server's routing and model id, replay, the live path.
    body = render(["hello ", "world"], name, piece_chars=3)
    assert final_text(mw.replay(name, body)) == "hello world"
    assert api_for_path("/echo/chat") == name
    with MockServer(["served"]) as srv:
        model = srv.model(name, "e-1")
        assert model.base_url == srv.origin
        msg = mw.complete_sync(model, CTX)
    assert msg.text == "served" and msg.api == name
    rec = srv.requests[0]
    assert rec.path == "/echo/chat" and rec.api == name and rec.model == "e-1"
    assert rec.headers["accept"] == "application/x-ndjson"


def final_text(events: list[Any]) -> str:
    msg = events[-1].message
    assert isinstance(msg, mw.AssistantMessage), events[-1]
    return msg.text


# --------------------------------------------------------------------------- register_api


def test_register_api_neither_mutates_the_object_nor_keeps_a_second_registry(
    clean_registry: None,
) -> None:
    class MyOllama(OllamaChatAPI):
        endpoint = "/my/chat"  # its own path: the mock server must tell them apart

    obj = MyOllama()
    mw.register_api("my-ollama", obj)
    assert obj.name == "ollama-chat"  # not renamed
    assert get_api("my-ollama") is obj and custom_stream("my-ollama") is None
    assert "my-ollama" in api_names()
    with MockServer(["via my-ollama"]) as srv:
        model = mw.Model(id="m", api="my-ollama", provider="local", base_url=srv.origin)
        msg = mw.complete_sync(model, CTX)
    assert msg.text == "via my-ollama" and msg.api == "my-ollama"

    async def fn(model: mw.Model, context: mw.Context, options: Any) -> Any:
        yield  # pragma: no cover

    # The same name, now a stream function: one registry, the later wins.
    mw.register_api("my-ollama", fn)
    assert find_api("my-ollama") is None and custom_stream("my-ollama") is fn
    import modelwire._client as client
    import modelwire._client._custom as custom

    # No second table of stream functions in the client or its custom-stream module.
    for module in (client, custom):
        assert not [k for k, v in vars(module).items() if isinstance(v, dict) and "my-ollama" in v]


def test_register_wire_api_refuses_what_is_not_a_wire_api(clean_registry: None) -> None:
    class Half:
        name = "half"

        def build_request(self, *a: Any) -> Any: ...

        def new_decoder(self, *a: Any) -> Any: ...

    with pytest.raises(mw.ConfigurationError, match=r"not a WireAPI.*framing.*recognizes"):
        register_wire_api(Half())  # type: ignore[arg-type]
    with pytest.raises(mw.ConfigurationError, match="wire API object or a stream function"):
        mw.register_api("half", 42)
    with pytest.raises(mw.ConfigurationError, match="api name"):
        register_wire_api(OllamaChatAPI(), "Bad Name")


# --------------------------------------------------------------------------- provider seam


class FakeAzure(ProviderRules):
    """A provider rule like Azure OpenAI's: its own query string and key header."""

    def url(self, model: mw.Model, api: str, default: str) -> str:
        return default + ("&" if "?" in default else "?") + "api-version=2024-10-21"

    def auth(self, model: mw.Model, api_key: str) -> Mapping[str, str] | None:
        return {"api-key": api_key}


@pytest.mark.parametrize("api", BUILTIN)
def test_provider_rules_apply_to_every_api_without_editing_it(
    api: str, clean_registry: None
) -> None:
    register_provider("fake-azure", FakeAzure())
    model = mw.Model(id="m", api=api, provider="fake-azure", base_url="https://x.test/v1")
    opts = resolve_options("fake-azure", api_key="sk-provider-key")
    req = apply_provider_rules(model, opts, get_api(api).build_request(model, CTX, opts))
    assert req.url.startswith("https://x.test/v1") and req.url.endswith("api-version=2024-10-21")
    headers = {k.lower(): v for k, v in req.headers.items()}
    assert headers["api-key"] == "sk-provider-key"
    assert not {"authorization", "x-api-key", "x-goog-api-key"} & set(headers)
    assert "sk-provider-key" in req.secrets and b"sk-provider-key" not in req.body
    # Without rules the API's own header is used.
    other = mw.Model(id="m", api=api, provider="other", base_url="https://x.test/v1")
    plain = apply_provider_rules(other, opts, get_api(api).build_request(other, CTX, opts))
    assert "api-key" not in {k.lower() for k in plain.headers}


def test_register_provider_checks_its_hooks(clean_registry: None) -> None:
    with pytest.raises(mw.ConfigurationError, match=r"must be a modelwire\.ext\.ProviderRules"):
        register_provider("p", type("R", (), {"url": lambda *a: ""})())


# --------------------------------------------------------------------------- framing seam


def test_the_pipeline_uses_the_framing_the_api_chooses() -> None:
    assert isinstance(pipeline_for("ollama-chat").sse, NDJSONDecoder)
    assert isinstance(pipeline_for("openai-chat").sse, SSEDecoder)
    assert pipeline_for("ollama-chat", max_event_bytes=64).sse.max_event_bytes == 64
    # The NDJSON size limit reaches the stream as event_too_large.
    p = pipeline_for("ollama-chat", max_event_bytes=32)
    out = [*p.start(), *p.feed(b'{"message":{"content":"' + b"x" * 64)]
    msg = out[-1].message  # type: ignore[union-attr]
    assert msg.error is not None and msg.error.kind == "event_too_large"


def test_tool_results_and_id_rules_are_asked_of_each_api() -> None:
    from modelwire._cli.demo import tool_result_text
    from modelwire._client._handoffs import tool_id_rule

    body = {"messages": [{"role": "tool", "content": "first"}, {"role": "tool", "content": "x"}]}
    assert tool_result_text("ollama-chat", body) == "x"
    assert tool_result_text("openai-chat", body) == "x"
    assert tool_result_text("no-such-api", body) is None
    ollama = mw.Model(id="m", api="ollama-chat", provider="ollama", base_url="http://h")
    assert tool_id_rule(ollama) is None
    chat = mw.Model(id="m", api="openai-chat", provider="openai", base_url="https://h/v1")
    rule = tool_id_rule(chat)
    assert rule is not None and rule.max_len == 40


# --------------------------------------------------------------------------- the grep

# Files outside apis/ that still name an API, each with the reason. Keep this short.
# serve --help shows the configuration's documented
# form, which names a wire API as a config does.
_ALLOWED: set[str] = {"_cli/serve.py"}
_FRONTENDS = ("gateway/_chat", "gateway/_responses", "gateway/_anthropic")


def test_no_wire_api_name_in_src_outside_apis_and_the_catalog_data() -> None:
    names = re.compile("|".join(re.escape(n) for n in builtin_api_names()))
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        # providers/ holds one module per provider, which may name the APIs it
        # reuses (its own facts, like the catalog data); the gateway's front-ends are
        # one module per client-facing API (each names its own); the core names none.
        if rel.startswith(("_apis/", "_providers/", *_FRONTENDS)) or rel in _ALLOWED:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if names.search(line):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert found == [], "\n".join(found)
    # The grep would see a name spelled out: prove it looks (a check that cannot fail
    # proves nothing).
    assert names.search('api="openai-chat"') and names.search("ollama-chat")


def test_an_unknown_path_lists_every_endpoint_beside_stream_functions(
    clean_registry: None,
) -> None:
    import httpx

    async def fn(model: mw.Model, context: mw.Context, options: Any) -> Any:
        yield  # pragma: no cover

    mw.register_api("a-stream-function", fn)  # has no endpoint: it must not break the list
    with MockServer([Reply(message="never sent")]) as srv:
        r = httpx.post(srv.origin + "/v1/embeddings", json={})
    assert r.status_code == 404
    text = r.json()["error"]["message"]
    assert "/api/chat" in text and "/chat/completions" in text


def test_registration_checks_each_facet_the_codec_claims(clean_registry: None) -> None:
    class HalfMock:
        content_type = "text/event-stream"
        version_segment = "/v1"

    class NoMock(OllamaChatAPI):
        name = "no-mock"
        endpoint = "/no/mock"
        mock = None  # type: ignore[assignment]  # no mock facet: still a complete API

    class BadMock(NoMock):
        name = "bad-mock"
        mock = HalfMock()  # type: ignore[assignment]

    class BadHandoff(NoMock):
        name = "bad-handoff"
        handoff = object()  # type: ignore[assignment]

    with pytest.raises(mw.ConfigurationError, match=r"BadMock\.mock is not a mock facet: "
                       r"it lacks extra_paths, render, encode_frames, request_model, "
                       r"tool_results"):  # fmt: skip
        register_wire_api(BadMock())  # type: ignore[arg-type]
    with pytest.raises(
        mw.ConfigurationError, match=r"handoff is not a handoff facet.*tool_id_rule"
    ):
        register_wire_api(BadHandoff())  # type: ignore[arg-type]
    register_wire_api(NoMock())
    assert get_api("no-mock").mock is None
    with pytest.raises(mw.ConfigurationError, match="no mock facet"):
        render("hi", "no-mock")
    with pytest.raises(mw.ConfigurationError, match="unknown api 'no-mock'; the MockServer speaks"):
        MockServer([]).model("no-mock")


def test_a_codec_whose_path_fails_is_refused_at_registration(clean_registry: None) -> None:
    class Broken(OllamaChatAPI):
        name = "broken-path"

        def path(self, model_id: str) -> str:
            raise KeyError(model_id)

    with pytest.raises(mw.ConfigurationError, match=r"'broken-path': path\(\)"):
        register_wire_api(Broken())
    assert find_api("broken-path") is None


def test_a_path_conflict_is_refused_naming_both_apis(clean_registry: None) -> None:
    class Clash(OllamaChatAPI):
        name = "clash-chat"  # Ollama's exact path, /api/chat

    with pytest.raises(mw.ConfigurationError, match=r"'clash-chat'.*'/api/chat'.*'ollama-chat'"):
        register_wire_api(Clash())
    assert find_api("clash-chat") is None

    # The same path under another version segment is another route: no conflict.
    class Versioned(OllamaChatAPI):
        name = "versioned-chat"
        mock = replace(OllamaChatAPI.mock, version_segment="/v9")

    register_wire_api(Versioned())
    assert mock_routes()["versioned-chat"] == "/v9/api/chat"
    assert api_for_path("/v9/api/chat") == "versioned-chat"
    assert api_for_path("/api/chat") == "ollama-chat"


def test_the_mock_routes_by_the_exact_path_not_a_suffix(clean_registry: None) -> None:
    # A short endpoint ("/chat", as Cohere's v2 API has) must not take Ollama's "/api/chat".
    assert mock_routes()["cohere-chat"] == "/v2/chat"

    class Short(OllamaChatAPI):
        name = "short-chat"
        endpoint = "/chat"
        mock = replace(OllamaChatAPI.mock, version_segment="/v3")

    register_wire_api(Short())
    routes = mock_routes()
    assert routes["short-chat"] == "/v3/chat" and routes["ollama-chat"] == "/api/chat"
    assert api_for_path("/api/chat") == "ollama-chat"
    assert api_for_path("/v3/chat?x=1") == "short-chat"
    assert api_for_path("/v2/chat") == "cohere-chat"
    assert api_for_path("/v1/chat/completions") == "openai-chat"
    # The model id fills exactly one path segment of a templated route.
    assert api_for_path("/v1beta/models/gemini-x:streamGenerateContent") == "google-generative-ai"
    with MockServer(["short", "long"]) as srv:
        assert mw.complete_sync(srv.model("short-chat"), CTX).text == "short"
        assert mw.complete_sync(srv.model("ollama-chat"), CTX).text == "long"
    assert [r.api for r in srv.requests] == ["short-chat", "ollama-chat"]


# --------------------------------------------------------------------------- the documented API

ADDING = SRC.parents[1] / "docs" / "adding-a-wire-api.md"


def documented_module(tmp_path: Path) -> Path:
    """The complete API module of docs/adding-a-wire-api.md, exactly as printed."""
    text = ADDING.read_text(encoding="utf-8")
    match = re.search(r"^```python\n(# toy_chat\.py\n.*?)^```\n", text, re.M | re.S)
    assert match, "docs/adding-a-wire-api.md shows the toy_chat.py module"
    body = match.group(1)
    # Extenders are sent to modelwire.ext only: no private module in the example.
    assert "modelwire._" not in body and "from modelwire.ext import" in body
    path = tmp_path / "toy_chat.py"
    path.write_text(body, encoding="utf-8")
    return path


@pytest.fixture
def documented(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_registry: None
) -> Iterator[Any]:
    documented_module(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    module = importlib.import_module("toy_chat")
    from modelwire.ext import register_wire_api as register

    register(module.API)
    yield module
    sys.modules.pop("toy_chat", None)


def test_the_documented_api_runs_end_to_end(documented: Any) -> None:
    import modelwire.ext as ext
    from eventlist import same_at_every_split

    name = "toy-chat"
    assert get_api(name) is documented.API and name in api_names()
    assert isinstance(documented.API, ext.WireCodec) and isinstance(
        documented.API.mock, ext.MockFacet
    )
    assert mock_routes()[name] == "/v1/toy/chat" and api_for_path("/v1/toy/chat") == name
    assert api_for_path("/api/chat") == "ollama-chat"  # the short path takes nothing else's
    # The mock server answers it, on its exact path, with a tool call and then text.
    script: list[str | mw.ToolCall] = [
        "Reading.",
        mw.ToolCall(id="c1", name="read", arguments={"path": "a"}),
    ]
    read = mw.ToolDefinition(name="read", description="Read a file", parameters={
        "type": "object", "properties": {"path": {"type": "string"}}})  # fmt: skip
    tools_ctx = mw.Context(messages=CTX.messages, tools=[read])
    with MockServer([script, "It says hi."]) as srv:
        model = srv.model(name, "command-x")
        assert model.base_url == srv.origin + "/v1"
        first = mw.complete_sync(model, tools_ctx)
        assert first.stop_reason == "tool_use" and first.tool_calls[0].arguments == {"path": "a"}
        result = mw.ToolResultMessage(tool_call_id="c1", tool_name="read",
                                      content=[mw.TextContent(text="hi")], is_error=False)  # fmt: skip
        ctx = mw.Context(messages=[*CTX.messages, first, result], tools=[read])
        second = mw.complete_sync(model, ctx)
    assert first.text == "Reading." and second.text == "It says hi." and second.api == name
    rec = srv.requests[1]
    assert rec.path == "/v1/toy/chat" and rec.api == name and rec.model == "command-x"
    from modelwire._cli.demo import tool_result_text

    assert tool_result_text(name, rec.json()) == "hi"  # the mock facet's tool_results
    # Replay whole, byte by byte and at every split.
    body = render(script, name, piece_chars=3)
    message = mw.replay(name, body).message
    assert message.text == "Reading." and message.tool_calls[0].name == "read"
    same_at_every_split(name, body)
    # Truncation and a field path, from the decoder.
    cut = mw.replay(name, body[: body.rindex(b'data: {"type":"toy-message-end"')]).message
    assert cut.error is not None and cut.error.kind == "truncated_stream"
    bad = body.replace(b'"text":"Rea"', b'"text":5')
    err = mw.replay(name, bad).message.error
    assert err is not None and "delta.message.content.text must be a string" in err.message
    # Wrong-API detection, both ways.
    for wrong, source, raw in (
        ("openai-chat", name, body),
        (name, "openai-chat", render(script, "openai-chat")),
        (name, "ollama-chat", render(script, "ollama-chat")),
    ):
        err = mw.replay(wrong, raw).message.error
        assert err is not None and err.kind == "malformed_chunk", (wrong, source, err)
        assert f"looks like {source} output, not {wrong}" in err.message


def test_the_registry_derived_suites_pick_up_a_new_api(documented: Any) -> None:
    import test_wrong_api

    name = "toy-chat"
    assert name in test_wrong_api.rendered()
    pairs = test_wrong_api.pairs()
    assert (name, "openai-chat") in pairs and ("bedrock-converse", name) in pairs
    test_wrong_api.test_every_pair_of_registered_apis_names_the_right_one()
    test_wrong_api.test_each_stream_decodes_with_its_own_api()
    import test_trace

    assert name in test_trace.traced_registered_apis()
    test_trace.test_every_registered_api_traces_one_record_per_frame()
