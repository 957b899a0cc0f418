"""The wire-API registry: one module per API owns every fact of it.

Everything else — catalog validation, CLI choices, the mock server, rendering,
the demo's tool-result reading, handoff, the pipeline's framing — asks
:mod:`modelwire._apis`. These tests prove it by dropping a new API module into the
package at run time and using it everywhere with no other edit, and by grepping
``src/`` for API names outside ``apis/`` and the catalog data.
"""

from __future__ import annotations

import ast
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
    find_server,
    get_api,
    get_server,
    register_wire_api,
    server_routes,
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
OLLAMA = get_server("ollama-chat")


@pytest.fixture
def clean_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Registrations made by a test are forgotten after it."""
    monkeypatch.setattr(apis, "_registry", dict(apis._registry))
    monkeypatch.setattr(apis, "_streams", dict(apis._streams))
    monkeypatch.setattr(apis, "_servers", dict(apis._servers))
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
        "          and not m.split('.')[2].startswith('_')]  # helpers, not APIs\n"
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
from modelwire._apis.ollama_chat.render import SERVER


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
    register_wire_api(obj, "my-ollama", server=get_server("ollama-chat"))
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
    register_wire_api(fn, "my-ollama")
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
        register_wire_api(42, "half")  # type: ignore[arg-type]
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


def _docstring_lines(source: str) -> set[int]:
    """The lines of a module's docstrings: their examples may name a wire API, as a
    user's code does; the code itself names none."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            assert isinstance(body, list)
            first = body[0] if body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


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
        text = path.read_text(encoding="utf-8")
        documented = _docstring_lines(text)
        for n, line in enumerate(text.splitlines(), 1):
            if names.search(line) and n not in documented:
                found.append(f"{rel}:{n}: {line.strip()}")
    assert found == [], "\n".join(found)
    # The grep would see a name spelled out: prove it looks (a check that cannot fail
    # proves nothing).
    assert names.search('api="openai-chat"') and names.search("ollama-chat")
    code = 'def f():\n    """Example: api="openai-chat"."""\n    return "openai-chat"\n'
    assert _docstring_lines(code) == {2}  # the docstring is skipped, the code is not


def test_an_unknown_path_lists_every_endpoint_beside_stream_functions(
    clean_registry: None,
) -> None:
    import httpx

    async def fn(model: mw.Model, context: mw.Context, options: Any) -> Any:
        yield  # pragma: no cover

    register_wire_api(fn, "a-stream-function")  # has no endpoint: it must not break the list
    with MockServer([Reply(message="never sent")]) as srv:
        r = httpx.post(srv.origin + "/v1/audio/speech", json={})
    assert r.status_code == 404
    text = r.json()["error"]["message"]
    assert "/api/chat" in text and "/chat/completions" in text


def test_registration_checks_the_server_and_each_facet_the_codec_claims(
    clean_registry: None,
) -> None:
    class HalfServer:  # routing facts without a renderer: not a server
        content_type = "text/event-stream"
        version_segment = "/v1"

    class NoServer(OllamaChatAPI):
        name = "no-server"
        endpoint = "/no/server"

    class BadHandoff(NoServer):
        name = "bad-handoff"
        handoff = object()  # type: ignore[assignment]

    with pytest.raises(mw.ConfigurationError, match=r"the server of wire API 'no-server' must "
                       r"be a modelwire\.ext\.WireServer, got HalfServer"):  # fmt: skip
        register_wire_api(NoServer(), server=HalfServer())  # type: ignore[arg-type]
    assert find_api("no-server") is None  # nothing half-registered
    with pytest.raises(
        mw.ConfigurationError, match=r"handoff is not a handoff facet.*tool_id_rule"
    ):
        register_wire_api(BadHandoff())  # type: ignore[arg-type]
    register_wire_api(NoServer())  # a client-only API: still a complete API
    assert get_api("no-server").name == "no-server" and find_server("no-server") is None
    with pytest.raises(mw.ConfigurationError, match="'no-server' has no server side"):
        render("hi", "no-server")
    with pytest.raises(mw.ConfigurationError, match=r"'no-server'.*has no server side"):
        MockServer([]).model("no-server")


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

    register_wire_api(Versioned(), server=replace(OLLAMA, version_segment="/v9"))
    assert server_routes()["versioned-chat"] == "/v9/api/chat"
    assert api_for_path("/v9/api/chat") == "versioned-chat"
    assert api_for_path("/api/chat") == "ollama-chat"


def test_the_server_routes_by_the_exact_path_not_a_suffix(clean_registry: None) -> None:
    # A short endpoint ("/chat", as Cohere's v2 API has) must not take Ollama's "/api/chat".
    assert server_routes()["cohere-chat"] == "/v2/chat"

    class Short(OllamaChatAPI):
        name = "short-chat"
        endpoint = "/chat"

    register_wire_api(Short(), server=replace(OLLAMA, version_segment="/v3"))
    routes = server_routes()
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
# Cohere v2 streams (tests/data/cohere-chat/SOURCES.md): what the example must read.
COHERE_RECORDED = SRC.parents[1] / "tests" / "data" / "cohere-chat"
PACKAGE_FILE = re.compile(r"^```python\n(# (cohere_mini/\w+\.py)\n.*?)^```\n", re.M | re.S)


def documented_module(tmp_path: Path) -> Path:
    """The package of docs/adding-a-wire-api.md, each of its files exactly as printed."""
    text = ADDING.read_text(encoding="utf-8")
    files = {m.group(2): m.group(1) for m in PACKAGE_FILE.finditer(text)}
    expected = ("__init__", "decode", "encode", "render", "spec")
    assert sorted(files) == [f"cohere_mini/{n}.py" for n in expected], sorted(files)
    for name, body in files.items():
        # Extenders are sent to modelwire.ext only: no private module in the example.
        assert "modelwire._" not in body, name
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(body, encoding="utf-8")
    assert "from modelwire.ext import" in files["cohere_mini/__init__.py"]
    return tmp_path / "cohere_mini"


@pytest.fixture
def documented(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_registry: None
) -> Iterator[Any]:
    import importlib

    from modelwire.ext import register_wire_api as register

    monkeypatch.setattr(apis, "_servers", dict(apis._servers))
    documented_module(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    package = importlib.import_module("cohere_mini")
    register(package.API, server=package.SERVER)
    yield package
    for name in [m for m in sys.modules if m.partition(".")[0] == "cohere_mini"]:
        del sys.modules[name]


def test_the_documented_api_runs_end_to_end(documented: Any) -> None:
    import modelwire.ext as ext
    from eventlist import same_at_every_split
    from modelwire._apis import find_server, recognizing

    name = "cohere-mini"
    assert get_api(name) is documented.API and name in api_names()
    assert isinstance(documented.API, ext.WireCodec) and not hasattr(documented.API, "mock")
    assert find_server(name) is documented.SERVER
    assert server_routes()[name] == "/mini/v2/chat" and api_for_path("/mini/v2/chat") == name
    assert api_for_path("/v2/chat") == "cohere-chat"  # the built-in keeps its own route
    # The mock server answers it, on its exact path, with a tool call and then text.
    script: list[str | mw.ToolCall] = [
        "Reading.",
        mw.ToolCall(id="c1", name="read", arguments={"path": "a"}),
    ]
    read = mw.ToolDefinition(name="read", description="Read a file", parameters={
        "type": "object", "properties": {"path": {"type": "string"}}})  # fmt: skip
    tools_ctx = mw.Context(messages=CTX.messages, tools=[read])
    with MockServer([script, "It says hi."]) as srv:
        model = srv.model(name, "command-a-03-2025")
        assert model.base_url == srv.origin + "/mini/v2"
        first = mw.complete_sync(model, tools_ctx)
        assert first.stop_reason == "tool_use" and first.tool_calls[0].arguments == {"path": "a"}
        result = mw.ToolResultMessage(tool_call_id="c1", tool_name="read",
                                      content=[mw.TextContent(text="hi")], is_error=False)  # fmt: skip
        ctx = mw.Context(messages=[*CTX.messages, first, result], tools=[read])
        second = mw.complete_sync(model, ctx)
    assert first.text == "Reading." and second.text == "It says hi." and second.api == name
    rec = srv.requests[1]
    assert rec.path == "/mini/v2/chat" and rec.api == name and rec.model == "command-a-03-2025"
    # The request is Cohere's: the text before the call went back as its tool plan.
    turn = rec.json()["messages"][1]
    assert turn["tool_plan"] == "Reading." and turn["tool_calls"][0]["id"] == "c1"
    from modelwire._cli.demo import tool_result_text

    assert tool_result_text(name, rec.json()) == "hi"  # the server side's tool_results
    # Replay whole, byte by byte and at every split.
    body = render(script, name, piece_chars=3)
    assert body.startswith(b"event: message-start\ndata: {") and body.endswith(b"data: [DONE]\n\n")
    message = mw.replay(name, body).message
    assert message.text == "Reading." and message.tool_calls[0].name == "read"
    same_at_every_split(name, body)
    # Cohere's bytes: the built-in cohere-chat reads them alike.
    full = mw.replay("cohere-chat", body).message
    assert (full.content, full.stop_reason) == (message.content, message.stop_reason)
    # Truncation and a field path, from the decoder.
    cut = mw.replay(name, body[: body.rindex(b"event: message-end")]).message
    assert cut.error is not None and cut.error.kind == "truncated_stream"
    bad = body.replace(b'"text":"Rea"', b'"text":5')
    err = mw.replay(name, bad).message.error
    assert err is not None and "delta.message.content.text must be a string" in err.message
    # Wrong-API detection. Another API's body replayed as cohere-mini names that API.
    for source in ("openai-chat", "anthropic-messages", "ollama-chat"):
        err = mw.replay(name, render(script, source)).message.error
        assert err is not None and err.kind == "malformed_chunk", (source, err)
        assert f"looks like {source} output, not {name}" in err.message
    # Its body under another API: cohere-chat recognizes Cohere's bytes too, built-ins
    # first; detection names an API only when exactly one other recognizes the body, so
    # the stream fails and whatever it names is one of the two.
    assert recognizing(body) == ["cohere-chat", name]
    for wrong in ("openai-chat", "openai-responses", "anthropic-messages"):
        end = mw.replay(wrong, body)[-1]
        assert end.type == "error" and end.message.error is not None, wrong
        named = set(re.findall(r"looks like ([\w.-]+) output", end.message.error.message))
        assert named <= {"cohere-chat", name}, (wrong, end.message.error)


def test_the_documented_api_reads_cohere_recordings_as_cohere_chat_does(documented: Any) -> None:
    """Every recorded Cohere stream gives cohere-mini what it gives the built-in
    cohere-chat: the text (the tool plan included), the tool calls, how it ended and
    the usage; thinking and citations, which the example skips, aside."""
    from eventlist import plain

    paths = sorted(COHERE_RECORDED.glob("*.sse"))
    assert {"text.sse", "tool-plan-parallel-calls.sse", "truncated.sse"} <= {p.name for p in paths}
    for path in paths:
        raw = path.read_bytes()
        events = mw.replay("cohere-mini", raw)
        mini, full = events.message, mw.replay("cohere-chat", raw).message
        where = path.name
        assert mini.text == full.text and mini.stop_reason == full.stop_reason, where
        assert [(c.id, c.name, c.arguments) for c in mini.tool_calls] == [
            (c.id, c.name, c.arguments) for c in full.tool_calls
        ], where
        assert (mini.usage.input, mini.usage.output) == (full.usage.input, full.usage.output)
        assert mini.response_id == full.response_id, where
        if full.error is not None:  # a failed generation, a cut body: an error in both
            assert mini.error is not None and mini.error.kind == full.error.kind, where
        bytewise = mw.replay("cohere-mini", [raw[i : i + 1] for i in range(len(raw))])
        assert plain(bytewise) == plain(events), where
    cut = mw.replay("cohere-mini", (COHERE_RECORDED / "truncated.sse").read_bytes()).message
    assert cut.stop_reason == "error" and cut.error is not None
    assert cut.error.kind == "truncated_stream"


def test_the_registry_derived_suites_pick_up_a_new_api(documented: Any) -> None:
    import test_wrong_api

    name = "cohere-mini"
    bodies = test_wrong_api.rendered()
    assert name in bodies
    pairs = test_wrong_api.pairs()
    assert (name, "openai-chat") in pairs and ("bedrock-converse", name) in pairs
    # Every pair as test_wrong_api checks it, but for Cohere's bytes: cohere-chat and
    # cohere-mini read each other's bodies, and both recognize them (see the test above).
    cohere = {"cohere-chat", name}
    for source, api in pairs:
        events = mw.replay(api, bodies[source])
        if source in cohere and api in cohere:
            assert events[-1].type == "done", (source, api)
        elif source in cohere:  # a failure, that suggests no API but a Cohere one
            err = events.message.error
            assert events[-1].type == "error" and err is not None, (source, api)
            assert set(re.findall(r"looks like ([\w.-]+) output", err.message)) <= cohere, (
                source,
                api,
            )
        else:
            test_wrong_api.check_wrong(events, source, api)
    import test_testing

    test_testing.test_every_registered_api_renders_and_replays(name)
    import test_trace

    assert name in test_trace.traced_registered_apis()
    test_trace.test_every_registered_api_traces_one_record_per_frame()


def test_register_api_is_a_deprecated_alias_of_register_wire_api(clean_registry: None) -> None:
    async def fn(model: mw.Model, context: mw.Context, options: Any) -> Any:
        yield  # pragma: no cover

    with pytest.warns(DeprecationWarning, match=r"modelwire\.ext\.register_wire_api\(api, name\)"):
        mw.register_api("old-spelling", fn)
    assert custom_stream("old-spelling") is fn and find_api("old-spelling") is None
    with pytest.warns(DeprecationWarning), pytest.raises(mw.ConfigurationError, match="object or"):
        mw.register_api("half", 42)
    # One function behind both spellings: the public one is the extension module's.
    import modelwire.ext as ext

    assert ext.register_wire_api is register_wire_api


#: The modules every wire-API package has (DESIGN §2d): the tables, the request, the
#: stream, the server side.
SKELETON = ("spec", "encode", "decode", "render")


@pytest.mark.parametrize("api", builtin_api_names())
def test_every_api_package_has_the_skeleton(api: str) -> None:
    package = SRC / "_apis" / apis.api_module(api).rpartition(".")[2]
    missing = [m for m in SKELETON if not (package / f"{m}.py").is_file()]
    assert missing == [], f"{package.name} lacks {', '.join(m + '.py' for m in missing)}"


def test_parse_is_where_the_gateway_serves_the_api() -> None:
    """An API package has parse.py exactly when a gateway front end reads its requests,
    and the front end reads them with that module."""
    with_parse = {
        p.parent.name
        for p in (SRC / "_apis").glob("*/parse.py")
        if not p.parent.name.startswith("_")
    }
    used = set()
    for front in _FRONTENDS:
        text = (SRC / front / "__init__.py").read_text(encoding="utf-8")
        used |= set(re.findall(r"from \.\.\._apis\.(\w+)\.parse import", text))
    assert with_parse == used and len(used) == len(_FRONTENDS)
