"""The model catalog: data validity, the provider records and the tables derived
from them, lookups, costs, API keys, reasoning levels and context-overflow detection.

Expectations are derived independently: the data file is read with ``json``
(not the catalog's own decoder), usage is parsed from the recorded streams with
``json`` following each API's documented usage fields, and costs are checked
against the dollar amounts xAI and OpenRouter themselves report in those streams.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec
import pytest

import modelwire as mw
from eventlist import final
from modelwire import _catalog as catalog
from modelwire._apis import builtin_api_names, get_api, get_server
from modelwire._catalog._records import ENV_KEYS, key_optional
from modelwire._client._handoffs import tool_id_rule
from modelwire._client._options import resolve_api_key, resolve_options
from modelwire._providers import _classify as classify
from modelwire._providers import apply_provider_rules
from modelwire._providers._classify import is_context_overflow
from modelwire._wire.assemble import compute_cost
from modelwire._wire.request import REASONING_LEVELS
from modelwire.errors import ConfigurationError, MissingAPIKeyError
from modelwire.testing import MockServer, Reply
from recorded import recorded_streams

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = recorded_streams()
DATA = ROOT / "src" / "modelwire" / "data" / "models.json"
DOCS = ROOT / "docs" / "providers.md"
RAW: dict[str, Any] = json.loads(DATA.read_text("utf-8"))
ENTRIES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (p, m) for p in RAW["providers"] for m in p["models"]
]
# The wire APIs modelwire ships (derived from the registry, so ollama-chat is in).
APIS = set(builtin_api_names())
REQUIRED_PROVIDERS = {
    "openai", "anthropic", "google", "deepseek", "openrouter", "groq", "mistral", "xai",
    "qwen", "moonshot", "zai", "together", "fireworks", "cerebras", "ollama", "vllm", "lmstudio",
}  # fmt: skip
LOCAL = {"ollama", "vllm", "lmstudio"}
CTX = mw.Context(messages=[mw.UserMessage(content="hi")])


def _ids(entries: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[str]:
    return [f"{p['id']}/{m['id']}" for p, m in entries]


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# --------------------------------------------------------------------------- data validity


def test_catalog_covers_every_provider_with_at_least_40_models() -> None:
    providers = [p["id"] for p in RAW["providers"]]
    assert len(providers) == len(set(providers))
    assert set(providers) >= REQUIRED_PROVIDERS
    assert len(ENTRIES) >= 40
    assert [m.provider for m in mw.models()] == [p["id"] for p, _ in ENTRIES]


@pytest.mark.parametrize(("provider", "entry"), ENTRIES, ids=_ids(ENTRIES))
def test_every_entry_is_valid(provider: dict[str, Any], entry: dict[str, Any]) -> None:
    assert isinstance(entry["id"], str) and entry["id"] == entry["id"].strip() != ""
    assert isinstance(entry["name"], str) and entry["name"]
    assert entry["api"] in APIS
    url = urlsplit(entry["base_url"])
    if provider.get("local"):
        assert url.scheme == "http" and _loopback(entry["base_url"])
        assert provider.get("env", []) == []
    else:
        assert url.scheme == "https" and url.hostname
        assert not _loopback(entry["base_url"])
    # base_url carries the API's version segment, except where the API's base_url is the
    # server root (ollama-chat, DESIGN §2b).
    if get_server(entry["api"]).version_segment:
        assert url.path not in ("", "/"), "base_url carries the API's version segment"
    else:
        assert url.path == "", "base_url is the server root"
    assert not entry["base_url"].endswith("/")
    for key in ("context_window", "max_tokens"):
        assert type(entry[key]) is int and entry[key] > 0
    assert entry["max_tokens"] <= entry["context_window"]
    assert isinstance(entry["reasoning"], bool)
    assert entry["input"][0] == "text"
    assert set(entry["input"]) <= {"text", "image", "document", "audio"}
    assert len(set(entry["input"])) == len(entry["input"])
    cost = entry["cost"]
    assert set(cost) == {"input", "output", "cache_read", "cache_write"}
    for value in cost.values():
        assert isinstance(value, int | float) and value >= 0
    if not provider.get("local"):
        assert cost["input"] > 0 and cost["output"] > 0
    levels = entry.get("reasoning_levels")
    if levels is not None:
        assert entry["reasoning"] is True
        assert levels == [lv for lv in REASONING_LEVELS if lv in levels]
    assert set(entry) <= {
        "id", "name", "api", "base_url", "reasoning", "input", "context_window", "max_tokens",
        "cost", "reasoning_levels", "compat", "capabilities", "headers", "notes",
    }  # fmt: skip


def test_ids_are_unique_per_provider() -> None:
    for p in RAW["providers"]:
        ids = [m["id"] for m in p["models"]]
        assert len(ids) == len(set(ids)), p["id"]


def test_version_segments_of_the_first_party_apis() -> None:
    firsts = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com/v1",
              "google": "https://generativelanguage.googleapis.com/v1beta"}  # fmt: skip
    for p, m in ENTRIES:
        if p["id"] in firsts:
            assert m["base_url"] == firsts[p["id"]]


def test_env_keys_are_the_provider_records_and_are_documented() -> None:
    docs = DOCS.read_text("utf-8")
    want: dict[str, tuple[str, ...]] = {}
    for p in RAW["providers"]:
        for name in (p["id"], *p.get("aliases", ())):
            if p.get("env"):
                want[name] = tuple(p["env"])
            assert catalog.env_vars(name) == tuple(p.get("env", ())), name
            assert key_optional(name) is p.get("key_optional", False), name
        assert f"`{p['id']}`" in docs, f"{p['id']} missing from docs/providers.md"
        for var in p.get("env", ()):
            assert f"`{var}`" in docs, f"{var} missing from docs/providers.md"
    assert dict(ENV_KEYS) == want  # derived from the data: nothing more, nothing less
    for names in ENV_KEYS.values():  # every variable modelwire reads is documented
        for var in names:
            assert f"`{var}`" in docs


def test_the_derived_tables_are_read_only() -> None:
    with pytest.raises(TypeError):
        ENV_KEYS["cloudy"] = ("CLOUDY_KEY",)  # type: ignore[index]
    from modelwire._catalog._records import env_keys

    with pytest.raises(TypeError):
        env_keys()["cloudy"] = ("CLOUDY_KEY",)  # type: ignore[index]


def test_data_file_is_canonical_and_the_script_agrees(capsys: pytest.CaptureFixture[str]) -> None:
    raw = DATA.read_bytes()
    assert catalog.dump_catalog(catalog.validate_catalog(raw)) == raw
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import regenerate_catalog
    finally:
        sys.path.pop(0)
    assert regenerate_catalog.main(["--check", "--summary"]) == 0
    out = capsys.readouterr().out
    assert f"{len(ENTRIES):3} models" in out and "valid and canonical" in out


def test_the_script_rewrites_a_messy_file_in_canonical_form(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import regenerate_catalog
    finally:
        sys.path.pop(0)
    messy = tmp_path / "models.json"
    messy.write_text(json.dumps(RAW, indent=4, sort_keys=True), "utf-8")
    assert regenerate_catalog.main(["--check", "--path", str(messy)]) == 1
    assert regenerate_catalog.main(["--path", str(messy)]) == 0
    assert messy.read_bytes() == DATA.read_bytes()
    broken = json.loads(json.dumps(RAW))
    _record(broken, "openai")["models"][0]["cost"]["input"] = -1
    messy.write_text(json.dumps(broken), "utf-8")
    assert regenerate_catalog.main(["--path", str(messy)]) == 1


def _record(data: dict[str, Any], provider: str) -> dict[str, Any]:
    """A provider record looked up by its id, never by its position."""
    return next(p for p in data["providers"] if p["id"] == provider)


def _mutated(path: tuple[Any, ...], value: Any) -> bytes:
    """The data with ``value`` at ``path``; a path starting ``("providers", id)``
    goes through the record of provider ``id``."""
    data = json.loads(json.dumps(RAW))
    node: Any = data
    if path[0] == "providers":
        node, path = _record(data, path[1]), path[2:]
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return json.dumps(data).encode()


_DELETE = object()
_FIRST = ("providers", "openai", "models", 0)


@pytest.mark.parametrize(
    ("path", "value", "expect"),
    [
        ((*_FIRST, "api"), "openai-completions", "api 'openai-completions' is not one of"),
        ((*_FIRST, "base_url"), "http://api.openai.com/v1", "base_url must be https"),
        ((*_FIRST, "base_url"), "https://api.openai.com/v1/", "must not end with '/'"),
        ((*_FIRST, "context_window"), 0, "context_window must be a positive integer"),
        ((*_FIRST, "max_tokens"), "lots", "Expected `int`"),
        ((*_FIRST, "cost", "cache_read"), -0.1, "cost.cache_read must be a finite number >= 0"),
        ((*_FIRST, "input"), ["image"], "input must list text"),
        ((*_FIRST, "reasoning_levels"), ["high", "low"], "reasoning_levels must be distinct"),
        ((*_FIRST, "reasoning_levels"), ["ultra"], "reasoning_levels must be distinct"),
        ((*_FIRST, "contextWindow"), 5, "unknown field `contextWindow`"),
        ((*_FIRST, "cost"), _DELETE, "missing required field `cost`"),
        (("providers", "openai", "env"), [], "must name its key variable"),
        (("providers", "ollama", "env"), ["OLLAMA_KEY"], "local and must not need a key"),
        (("providers", "anthropic", "models", 1, "id"),
         _record(RAW, "anthropic")["models"][0]["id"], "duplicate"),
        (("providers", "ollama", "models", 0, "base_url"), "http://10.0.0.5:11434/v1", "loopback"),
        (("providers", "qwen", "aliases"), ["openai"], "'openai' must be a unique"),
        (("providers", "mistral", "compat"), {"openai-chatt": {}}, "'openai-chatt' is not a known API"),
        (("providers", "mistral", "tool_ids", "openai-chat", "valid"), "[a-z", "valid regular"),
        (("providers", "xai", "overflow"), ["(unclosed"], "overflow[0] is not a valid regular"),
        (("providers", "groq", "status_quirks", 0, "kind"), "slow", "kind 'slow' is unknown"),
        (("providers", "groq", "status_quirks", 0, "status"), 200, "must be 4xx or 5xx"),
        (("providers", "snowflake", "env"), ["SNOWFLAKE_KEY"], "models must not be empty"),
        (("providers", "openai", "keyOptional"), True, "unknown field `keyOptional`"),
        (("version",), 2, "unsupported model catalog version"),
    ],
)  # fmt: skip
def test_validator_names_the_bad_field(path: tuple[Any, ...], value: Any, expect: str) -> None:
    with pytest.raises(ConfigurationError) as exc:
        catalog.validate_catalog(_mutated(path, value))
    assert expect in str(exc.value)


def test_catalog_is_read_lazily_not_at_import() -> None:
    code = (
        "import sys, modelwire as mw\n"
        "assert 'modelwire._catalog' not in sys.modules\n"
        "m = mw.get_model('openai', 'gpt-4.1-mini')\n"
        "assert 'modelwire._catalog' in sys.modules and m.id == 'gpt-4.1-mini'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_wheel_ships_the_data_file(tmp_path: Path) -> None:
    builders = pytest.importorskip("hatchling.builders.wheel")
    import zipfile

    wheel = next(iter(builders.WheelBuilder(str(ROOT)).build(directory=str(tmp_path),
                                                              versions=["standard"])))  # fmt: skip
    with zipfile.ZipFile(wheel) as z:
        assert z.read("modelwire/data/models.json") == DATA.read_bytes()


@pytest.mark.parametrize(("provider", "entry"), ENTRIES, ids=_ids(ENTRIES))
def test_every_entry_builds_a_request_with_its_adapter(
    provider: dict[str, Any], entry: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Compat flags are checked by the adapter (unknown flags refused) and the
    # clamped reasoning level is one the adapter accepts.
    # azure-openai: the catalog's placeholder resource is read from this variable.
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://YOUR-RESOURCE.openai.azure.com")
    monkeypatch.setenv("AWS_REGION", "us-east-1")  # amazon-bedrock's {region}
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "catalog-check")  # Vertex AI needs a project
    model = mw.get_model(provider["id"], entry["id"])
    api = get_api(model.api)
    options = resolve_options(model.provider, api_key="sk-test")
    request = apply_provider_rules(model, options, api.build_request(model, CTX, options))
    assert request.url.startswith(entry["base_url"].replace("{region}", "us-east-1") + "/")
    if model.reasoning:
        for level in REASONING_LEVELS:
            sent = catalog.clamp_reasoning(model, level)
            opts = resolve_options(model.provider, api_key="sk-test", reasoning=sent)
            api.build_request(model, CTX, opts)


# --------------------------------------------------------------------------- lookups


@pytest.mark.parametrize(("provider", "entry"), ENTRIES[::7], ids=_ids(ENTRIES[::7]))
def test_get_model_returns_the_entry(provider: dict[str, Any], entry: dict[str, Any]) -> None:
    m = mw.get_model(provider["id"], entry["id"])
    assert isinstance(m, mw.Model)
    assert (m.provider, m.id, m.api, m.base_url, m.name) == (
        provider["id"], entry["id"], entry["api"], entry["base_url"], entry["name"],
    )  # fmt: skip
    assert (m.context_window, m.max_tokens, m.reasoning) == (
        entry["context_window"], entry["max_tokens"], entry["reasoning"],
    )  # fmt: skip
    assert m.input == tuple(entry["input"])
    assert msgspec.structs.asdict(m.cost) == pytest.approx(entry["cost"])
    assert m.compat == entry.get("compat")
    assert mw.get_model(provider["id"], entry["id"]) is m  # built once


def test_models_lists_in_catalog_order_and_returns_new_lists() -> None:
    for p in RAW["providers"]:
        if not p["models"]:  # known only by its server's quirks: not catalogued
            assert p["id"] not in catalog.providers()
            continue
        assert [m.id for m in mw.models(p["id"])] == [m["id"] for m in p["models"]]
    listed = mw.models("openai")
    listed.clear()
    assert mw.models("openai")


def test_unknown_names_raise_with_close_matches() -> None:
    with pytest.raises(ConfigurationError, match=r"did you mean gpt-4\.1-mini"):
        mw.get_model("openai", "gpt-4.1-mni")
    with pytest.raises(ConfigurationError, match="did you mean openai"):
        mw.get_model("opnai", "gpt-4.1-mini")
    with pytest.raises(ConfigurationError, match="listed under groq, together"):
        mw.get_model("openai", "openai/gpt-oss-120b")
    with pytest.raises(ConfigurationError, match="unknown provider 'nope'"):
        mw.models("nope")
    with pytest.raises(ConfigurationError):
        mw.get_model("openai", None)  # type: ignore[arg-type]


def test_resolve_model_strings() -> None:
    r = catalog.resolve_model
    assert r("openai/gpt-4.1-mini") is mw.get_model("openai", "gpt-4.1-mini")
    m = r("openrouter/anthropic/claude-sonnet-4.5")
    assert (m.provider, m.id) == ("openrouter", "anthropic/claude-sonnet-4.5")
    assert r("dashscope/qwen3-max").provider == "qwen"
    assert r("Gemini/gemini-2.5-flash").provider == "google"
    assert r("  claude-haiku-4-5 ") is mw.get_model("anthropic", "claude-haiku-4-5")
    with pytest.raises(ConfigurationError, match="did you mean"):
        r("anthropic/claude-haiku-4.5")
    with pytest.raises(ConfigurationError, match="names no model"):
        r("openai/")
    with pytest.raises(ConfigurationError, match="provider/model"):
        r("definitely-not-a-model")
    with pytest.raises(ConfigurationError):
        r("")


@pytest.mark.parametrize("provider", sorted(LOCAL))
def test_local_providers_take_any_model_id(provider: str) -> None:
    p = next(p for p in RAW["providers"] if p["id"] == provider)
    t = p["template"]
    m = catalog.resolve_model(f"{provider}/my-own-model:7b")
    assert (m.provider, m.id, m.api, m.base_url) == (provider, "my-own-model:7b", t["api"],
                                                     t["base_url"])  # fmt: skip
    assert (m.context_window, m.max_tokens) == (t["context_window"], t["max_tokens"])
    assert m.cost == mw.ModelCost() and catalog.env_vars(provider) == ()
    with pytest.raises(ConfigurationError, match="resolve_model"):
        mw.get_model(provider, "my-own-model:7b")


# --------------------------------------------------------------------------- one resolution rule

#: (spec, variable or None for base_url=, api expected, path expected). An id the catalog
#: does not list, at an address: its provider's default API (DESIGN §2d).
_UNLISTED = [
    ("openai/smollm2", "OPENAI_BASE_URL", "openai-chat", "/v1/chat/completions"),
    ("openai/smollm2", None, "openai-chat", "/v1/chat/completions"),
    ("local/smollm2", "OPENAI_BASE_URL", "openai-chat", "/v1/chat/completions"),
    ("local/smollm2", None, "openai-chat", "/v1/chat/completions"),
    ("deepseek/my-fine-tune", None, "openai-chat", "/v1/chat/completions"),
    ("anthropic/claude-next", "ANTHROPIC_BASE_URL", "anthropic-messages", "/v1/messages"),
]


@pytest.mark.parametrize(("spec", "var", "api", "path"), _UNLISTED)
def test_an_unlisted_id_at_an_address_is_a_model_of_the_providers_api(
    spec: str, var: str | None, api: str, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with MockServer(["hi"]) as srv:
        base = srv.model(api).base_url
        if var is not None:
            # The Anthropic SDK's variable is the server root (it appends /v1).
            monkeypatch.setenv(var, base.removesuffix("/v1") if var.startswith("ANTH") else base)
        where = {} if var is not None else {"base_url": base}
        model = catalog.as_model(spec, **where)
        msg = mw.complete_sync(spec, "hello", api_key="sk-test", **where)  # type: ignore[arg-type]
        agent = mw.Agent(spec, api_key="sk-test", **where)  # type: ignore[arg-type]
    assert msg.stop_reason == "stop", msg.error
    assert (model.api, model.base_url, model.id) == (api, base, spec.partition("/")[2])
    assert model.max_tokens == catalog.UNLISTED_MAX_TOKENS and agent.model == model
    assert srv.requests[0].path == path
    assert srv.requests[0].json()["model"] == spec.partition("/")[2]


def test_the_default_api_of_an_unlisted_id() -> None:
    # OpenAI's own host serves Responses, the API of most of its models; any other
    # server gets Chat Completions, the one compatible servers serve.
    assert catalog.default_api("openai", "https://api.openai.com/v1") == "openai-responses"
    assert catalog.default_api("openai", "http://127.0.0.1:8080/v1") == "openai-chat"
    assert catalog.default_api("azure-openai", "https://me.openai.azure.com/openai/v1") == (
        "openai-chat"
    )
    assert catalog.default_api("google", "http://127.0.0.1:1/v1beta") == "google-generative-ai"
    assert catalog.default_api("ollama", "http://127.0.0.1:1") == "ollama-chat"
    assert catalog.default_api("acme", "http://127.0.0.1:1/v1") == "openai-chat"
    m = catalog.resolve_model("openai/new-model", "https://api.openai.com/v1")
    assert (m.api, m.provider) == ("openai-responses", "openai")
    # A catalog entry keeps its API and limits; api= (the CLI's --api) replaces the API.
    listed = catalog.resolve_model("openai/gpt-5-mini", "http://127.0.0.1:1/v1")
    assert (listed.api, listed.max_tokens) == ("openai-responses", 128_000)
    assert catalog.resolve_model("local/x", "http://127.0.0.1:1/v1", api="ollama-chat").api == (
        "ollama-chat"
    )


def test_without_an_address_an_unlisted_id_says_what_to_set() -> None:
    with pytest.raises(ConfigurationError, match=r"base_url='http://127\.0\.0\.1:8000/v1'.*"
                       r"set OPENAI_BASE_URL"):  # fmt: skip
        mw.complete_sync("local/smollm2", "hi")
    with pytest.raises(ConfigurationError, match=r"local/smollm2.*OPENAI_BASE_URL"):
        mw.Agent("local/smollm2")
    with pytest.raises(ConfigurationError, match=r"unknown model 'smollm2'.*base_url= or "
                       r"OPENAI_BASE_URL"):  # fmt: skip
        mw.complete_sync("openai/smollm2", "hi", api_key="sk-test")
    with pytest.raises(ConfigurationError, match="give it as provider/model"):
        catalog.resolve_model("smollm2", "http://127.0.0.1:1/v1")


@pytest.mark.parametrize(
    ("api", "other"),
    [("openai-responses", "/v1/chat/completions: use api='openai-chat'"),
     ("openai-chat", "/v1/responses: use api='openai-responses'")],
)  # fmt: skip
def test_a_404_from_a_compatible_server_names_the_other_endpoint(api: str, other: str) -> None:
    with MockServer([Reply(status=404, error="Not Found")]) as srv:
        model = catalog.resolve_model("openai/smollm2", srv.model(api).base_url, api=api)
        msg = mw.complete_sync(model, "hi", api_key="sk-test", max_retries=0)
    assert msg.error is not None and msg.error.kind == "not_found"
    assert f"this server may serve only {other}" in msg.error.message
    assert srv.requests[0].path == ("/v1/responses" if api == "openai-responses" else
                                    "/v1/chat/completions")  # fmt: skip
    # OpenAI's own host serves both, a hosted provider's endpoints are known: a 404
    # there is about the model, not the endpoint.
    assert catalog.other_apis(mw.get_model("openai", "gpt-5-mini")) == ()
    assert catalog.other_apis(mw.get_model("groq", "openai/gpt-oss-120b")) == ()


# --------------------------------------------------------------------------- costs


def _price(provider: str, model_id: str) -> dict[str, float]:
    p = next(p for p in RAW["providers"] if p["id"] == provider)
    cost: dict[str, float] = next(m for m in p["models"] if m["id"] == model_id)["cost"]
    return cost


def _payloads(body: bytes) -> Iterator[dict[str, Any]]:
    for line in body.decode("utf-8").splitlines():
        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
            yield json.loads(line[5:])


def _usage_anthropic(body: bytes) -> dict[str, int]:
    # message_start carries message.usage; message_delta.usage holds cumulative
    # totals (Messages streaming docs), so the last value of each field wins.
    got = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
    names = {"input_tokens": "input", "output_tokens": "output",
             "cache_read_input_tokens": "cache_read", "cache_creation_input_tokens": "cache_write"}  # fmt: skip
    for p in _payloads(body):
        usage = p.get("usage") or (p.get("message") or {}).get("usage") or {}
        for k, v in usage.items():
            if k in names and isinstance(v, int):
                got[names[k]] = v
    return got


def _usage_chat(body: bytes) -> dict[str, int]:
    # prompt_tokens includes cached tokens (OpenAI: prompt_tokens_details.cached_tokens,
    # DeepSeek: prompt_cache_hit_tokens); xAI leaves reasoning tokens out of
    # completion_tokens (prompt + completion + reasoning == total_tokens).
    u = [p["usage"] for p in _payloads(body) if p.get("usage")][-1]
    cached = u.get("prompt_cache_hit_tokens") or (u.get("prompt_tokens_details") or {}).get(
        "cached_tokens", 0
    )
    output = u["completion_tokens"]
    reasoning = (u.get("completion_tokens_details") or {}).get("reasoning_tokens", 0)
    if u["prompt_tokens"] + output + reasoning == u["total_tokens"]:
        output += reasoning
    return {"input": u["prompt_tokens"] - cached, "output": output, "cache_read": cached,
            "cache_write": 0}  # fmt: skip


def _usage_responses(body: bytes) -> dict[str, int]:
    done = [p for p in _payloads(body) if p.get("type") == "response.completed"][-1]
    u = done["response"]["usage"]
    cached = u["input_tokens_details"]["cached_tokens"]
    return {"input": u["input_tokens"] - cached, "output": u["output_tokens"],
            "cache_read": cached, "cache_write": 0}  # fmt: skip


def _usage_gemini(body: bytes) -> dict[str, int]:
    u = [p["usageMetadata"] for p in _payloads(body) if p.get("usageMetadata")][-1]
    cached = u.get("cachedContentTokenCount", 0)
    return {"input": u["promptTokenCount"] + u.get("toolUsePromptTokenCount", 0) - cached,
            "output": u.get("candidatesTokenCount", 0) + u.get("thoughtsTokenCount", 0),
            "cache_read": cached, "cache_write": 0}  # fmt: skip


COST_CASES = [
    ("anthropic-messages", "anthropic/claude-code-execution-prompt-cache-creation.sse",
     "anthropic", "claude-sonnet-5", _usage_anthropic),
    ("anthropic-messages", "anthropic/claude-haiku-4-5-thinking-then-tool-use.sse",
     "anthropic", "claude-haiku-4-5", _usage_anthropic),
    ("openai-chat", "openai-chat/xai-grok-reasoning-tool-call.sse", "xai", "grok-3-mini",
     _usage_chat),
    ("openai-chat", "openai-chat/deepseek-reasoner-reasoning-then-tool-call.sse", "deepseek",
     "deepseek-reasoner", _usage_chat),
    ("openai-chat", "openai-chat/gpt-4o-mini-tool-call-obfuscation.sse", "openai", "gpt-4o-mini",
     _usage_chat),
    ("openai-responses", "openai-responses/gpt-5-web-search-call.sse", "openai", "gpt-5",
     _usage_responses),
    ("google-generative-ai", "google/gemini-2.5-flash-usage-every-chunk.sse", "google",
     "gemini-2.5-flash", _usage_gemini),
]  # fmt: skip


@pytest.mark.parametrize(("api", "fixture", "provider", "model_id", "parse"), COST_CASES,
                         ids=[c[1] for c in COST_CASES])  # fmt: skip
def test_replayed_message_is_priced_from_the_catalog(
    api: str, fixture: str, provider: str, model_id: str, parse: Any
) -> None:
    body = (FIXTURES / fixture).read_bytes()
    usage = parse(body)
    price = _price(provider, model_id)
    events = mw.replay(api, body, model=mw.get_model(provider, model_id))
    assert events[-1].type == "done"
    msg = events[-1].message
    got = msg.usage
    assert (got.input, got.output, got.cache_read, got.cache_write) == (
        usage["input"], usage["output"], usage["cache_read"], usage["cache_write"],
    )  # fmt: skip
    for field in ("input", "output", "cache_read", "cache_write"):
        assert getattr(got.cost, field) == pytest.approx(usage[field] * price[field] / 1e6)
    assert got.cost.total == pytest.approx(sum(usage[f] * price[f] / 1e6 for f in usage))
    assert msg.provider == provider and msg.model == model_id


def test_cache_read_and_write_are_priced_separately_end_to_end() -> None:
    body = (FIXTURES / "anthropic/claude-code-execution-prompt-cache-creation.sse").read_bytes()
    usage = _usage_anthropic(body)
    assert usage["cache_read"] > 0 and usage["cache_write"] > 0 and usage["cache_read"] != usage["cache_write"]  # fmt: skip
    base = mw.get_model("anthropic", "claude-sonnet-5")
    prices = mw.ModelCost(input=1.0, output=2.0, cache_read=3.0, cache_write=5.0)
    swapped = mw.ModelCost(input=1.0, output=2.0, cache_read=5.0, cache_write=3.0)
    a = mw.replay("anthropic-messages", body, model=msgspec.structs.replace(base, cost=prices))
    b = mw.replay("anthropic-messages", body, model=msgspec.structs.replace(base, cost=swapped))
    ca, cb = final(a).usage.cost, final(b).usage.cost
    assert ca.cache_read == pytest.approx(usage["cache_read"] * 3.0 / 1e6)
    assert ca.cache_write == pytest.approx(usage["cache_write"] * 5.0 / 1e6)
    assert cb.cache_read == pytest.approx(usage["cache_read"] * 5.0 / 1e6)
    assert ca.total != pytest.approx(cb.total)
    assert ca.total == pytest.approx(
        (usage["input"] * 1 + usage["output"] * 2 + usage["cache_read"] * 3
         + usage["cache_write"] * 5) / 1e6
    )  # fmt: skip


def test_catalog_prices_reproduce_the_costs_providers_report() -> None:
    # xAI reports cost_in_usd_ticks (1e-10 USD) and OpenRouter reports cost in
    # dollars in their final usage chunk: the catalog prices and the arithmetic
    # must give the same amounts.
    body = (FIXTURES / "openai-chat/xai-grok-reasoning-tool-call.sse").read_bytes()
    ticks = [p["usage"]["cost_in_usd_ticks"] for p in _payloads(body) if p.get("usage")][-1]
    msg = mw.replay("openai-chat", body, model=mw.get_model("xai", "grok-3-mini")).message
    assert msg.usage.cost.total == pytest.approx(ticks / 1e10)

    body = (FIXTURES / "openai-chat/openrouter-claude-reasoning-details-text.sse").read_bytes()
    u = [p["usage"] for p in _payloads(body) if p.get("usage")][-1]
    model = mw.get_model("openrouter", "anthropic/claude-sonnet-4.5")
    cost = mw.replay("openai-chat", body, model=model).message.usage.cost
    assert cost.input == pytest.approx(u["cost_details"]["upstream_inference_prompt_cost"])
    assert cost.output == pytest.approx(u["cost_details"]["upstream_inference_completions_cost"])
    assert cost.total == pytest.approx(u["cost"])

    # OpenRouter passes OpenAI's o3 price through: the openai/o3 entry's prices.
    body = (FIXTURES / "openai-chat/openrouter-o3-reasoning-details-encrypted.sse").read_bytes()
    u = [p["usage"] for p in _payloads(body) if p.get("usage")][-1]
    o3 = msgspec.structs.replace(mw.get_model("openai", "o3"), api="openai-chat",
                                 provider="openrouter", id="openai/o3")  # fmt: skip
    cost = mw.replay("openai-chat", body, model=o3).message.usage.cost
    assert cost.total == pytest.approx(u["cost"])


def test_cost_arithmetic() -> None:
    prices = mw.get_model("anthropic", "claude-opus-4-5").cost
    usage = mw.Usage(input=1_000, output=2_000, cache_read=30_000, cache_write=4_000,
                     total_tokens=37_000)  # fmt: skip
    priced = compute_cost(usage, prices)
    p = _price("anthropic", "claude-opus-4-5")
    assert priced.cost.input == pytest.approx(1_000 * p["input"] / 1e6)
    assert priced.cost.output == pytest.approx(2_000 * p["output"] / 1e6)
    assert priced.cost.cache_read == pytest.approx(30_000 * p["cache_read"] / 1e6)
    assert priced.cost.cache_write == pytest.approx(4_000 * p["cache_write"] / 1e6)
    assert priced.cost.total == pytest.approx(
        priced.cost.input + priced.cost.output + priced.cost.cache_read + priced.cost.cache_write
    )
    assert (priced.input, priced.total_tokens) == (1_000, 37_000)
    assert compute_cost(usage, None).cost == mw.Cost()
    local = catalog.resolve_model("ollama/anything")
    assert compute_cost(usage, local.cost).cost.total == 0.0


# --------------------------------------------------------------------------- API keys

_SSE_OK = (
    b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}'
    b"\n\ndata: [DONE]\n\n"
)


def _pointed(srv: MockServer, provider: str, model_id: str) -> mw.Model:
    return msgspec.structs.replace(mw.get_model(provider, model_id), base_url=srv.base_url)


@pytest.mark.anyio
async def test_option_beats_env_and_env_is_used_without_option(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    with MockServer([_SSE_OK, _SSE_OK]) as srv:
        model = _pointed(srv, "openai", "gpt-4.1-mini")
        a = await mw.complete(model, CTX, api_key="sk-from-option")
        b = await mw.complete(model, CTX)
    assert a.stop_reason == b.stop_reason == "stop"
    assert srv.requests[0].headers["authorization"] == "Bearer sk-from-option"
    assert srv.requests[1].headers["authorization"] == "Bearer sk-from-env"
    assert b"sk-from" not in srv.requests[0].body + srv.requests[1].body


def test_callable_key_is_read_at_each_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-env-loses")
    calls: list[int] = []

    def key() -> str:
        calls.append(1)
        return f"sk-rotated-{len(calls)}"

    with MockServer([_SSE_OK, _SSE_OK]) as srv:
        model = _pointed(srv, "deepseek", "deepseek-chat")
        s = mw.stream_sync(model, CTX, api_key=key)
        assert len(calls) == 1  # read when the call is made, before any I/O
        s.result()
        mw.complete_sync(model, CTX, api_key=key)
    assert [r.headers["authorization"] for r in srv.requests] == [
        "Bearer sk-rotated-1", "Bearer sk-rotated-2",
    ]  # fmt: skip


def test_google_reads_gemini_then_google_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "g-second")
    assert resolve_api_key("google", None) == "g-second"
    monkeypatch.setenv("GEMINI_API_KEY", "g-first")
    assert resolve_api_key("google", None) == "g-first"
    assert resolve_api_key("google", "g-option") == "g-option"


# Providers whose credentials may come from their authorizer (SigV4, OAuth) raise no
# MissingAPIKeyError (``key_optional`` in their records; each is tested in its own file).
HOSTED = [p["id"] for p in RAW["providers"]
          if p["models"] and not p.get("local") and not p.get("key_optional")]  # fmt: skip


@pytest.mark.parametrize("provider", HOSTED)
def test_missing_key_raises_before_any_request_naming_the_variable(provider: str) -> None:
    var = ENV_KEYS[provider][0]
    entry = next(p for p in RAW["providers"] if p["id"] == provider)["models"][0]
    with MockServer([_SSE_OK]) as srv:
        model = msgspec.structs.replace(
            mw.get_model(provider, entry["id"]),
            base_url=srv.origin + ("/v1beta" if entry["api"] == "google-generative-ai" else "/v1"),
        )
        with pytest.raises(MissingAPIKeyError) as exc:
            mw.stream(model, CTX)
        with pytest.raises(MissingAPIKeyError):
            mw.complete_sync(model, CTX)
        assert srv.requests == []
    assert exc.value.env_var == var
    assert var in str(exc.value)


@pytest.mark.parametrize("provider", sorted(LOCAL))
def test_local_providers_send_no_auth_header(provider: str) -> None:
    # A scripted "ok" in the model's own API (ollama speaks ollama-chat).
    with MockServer(["ok"]) as srv:
        entry = catalog.models(provider)[0]
        base = srv.model(entry.api).base_url
        model = msgspec.structs.replace(entry, base_url=base)
        assert mw.complete_sync(model, CTX).stop_reason == "stop"
    assert "authorization" not in srv.requests[0].headers


# --------------------------------------------------------------------------- reasoning


def _distance(a: str, b: str) -> int:
    return abs(REASONING_LEVELS.index(a) - REASONING_LEVELS.index(b))


REASONING = [(p, m) for p, m in ENTRIES if m["reasoning"]]


@pytest.mark.parametrize(("provider", "entry"), REASONING, ids=_ids(REASONING))
def test_clamp_picks_the_nearest_accepted_level(
    provider: dict[str, Any], entry: dict[str, Any]
) -> None:
    model = mw.get_model(provider["id"], entry["id"])
    accepted = entry.get("reasoning_levels", list(REASONING_LEVELS))
    for level in REASONING_LEVELS:
        sent = catalog.clamp_reasoning(model, level)
        if not accepted:
            assert sent is None
            continue
        assert sent is not None and sent in accepted
        if level in accepted:
            assert sent == level
        for other in accepted:  # nearest; a tie goes to the lower level
            assert _distance(sent, level) <= _distance(other, level)
            if _distance(sent, level) == _distance(other, level):
                assert REASONING_LEVELS.index(sent) <= REASONING_LEVELS.index(other)


def test_clamp_examples_and_errors() -> None:
    c = catalog.clamp_reasoning
    grok = mw.get_model("xai", "grok-3-mini")
    assert [c(grok, lv) for lv in REASONING_LEVELS] == ["low", "low", "low", "high", "high"]
    assert c(mw.get_model("openai", "o3"), "xhigh") == "high"
    assert c(mw.get_model("openai", "gpt-5.5"), "minimal") == "low"
    assert c(mw.get_model("google", "gemini-3-pro-preview"), "medium") == "low"
    assert c(mw.get_model("deepseek", "deepseek-reasoner"), "high") is None
    assert c(mw.get_model("anthropic", "claude-haiku-4-5"), "xhigh") == "xhigh"
    assert c(grok, None) is None
    with pytest.raises(ConfigurationError, match="does not support a reasoning level"):
        c(mw.get_model("openai", "gpt-4.1"), "low")
    with pytest.raises(ConfigurationError, match="reasoning must be one of"):
        c(grok, "max")
    hand_made = mw.Model(id="x", api="openai-chat", provider="local",
                         base_url="http://127.0.0.1:1/v1", reasoning=True)  # fmt: skip
    assert catalog.reasoning_levels(hand_made) == REASONING_LEVELS
    assert c(hand_made, "minimal") == "minimal"
    assert c(hand_made, "minimal", levels=["medium", "high"]) == "medium"
    assert catalog.reasoning_levels(mw.get_model("openai", "gpt-4.1")) == ()
    # Another API for the same id is not the catalog entry: its list does not apply.
    moved = msgspec.structs.replace(mw.get_model("openai", "o3"), api="openai-chat")
    assert catalog.reasoning_levels(moved) == REASONING_LEVELS


# --------------------------------------------------------------------------- overflow

# Real error texts, as the providers sent them (sources in the comments).
OVERFLOW_TEXTS = [
    # OpenAI Chat: github.com/bytedance/deer-flow/issues/310
    ("openai", "This model's maximum context length is 128000 tokens. However, your messages "
     "resulted in 202868 tokens (202767 in the messages, 101 in the functions). Please reduce "
     "the length of the messages or functions."),
    # OpenAI Responses: github.com/VectorlyApp/bluebox/issues/66
    ("openai-responses", "Your input exceeds the context window of this model. Please adjust "
     "your input and try again."),
    # Anthropic: github.com/anthropics/claude-code/issues/12186
    ("anthropic", "prompt is too long: 208310 tokens > 200000 maximum"),
    # Anthropic: github.com/continuedev/continue/issues/8454
    ("anthropic", "input length and `max_tokens` exceed context limit: 143653 + 64000 > 200000, "
     "decrease input length or `max_tokens` and try again"),
    # Gemini: github.com/google-gemini/gemini-cli/issues/4118
    ("google", "The input token count (132478) exceeds the maximum number of tokens allowed "
     "(131072)."),
    # DeepSeek: github.com/anomalyco/models.dev/issues/1295
    ("deepseek", "This model's maximum context length is 131072 tokens. However, you requested "
     "131749 tokens (131749 in the messages, 0 in the completion). Please reduce the length of "
     "the messages or completion."),
    # Groq: github.com/letta-ai/letta/issues/1963
    ("groq", "Please reduce the length of the messages or completion."),
    # Cerebras: github.com/cline/cline/issues/5140
    ("cerebras", "Please reduce the length of the messages or completion. Current length is "
     "42328 while limit is 40000"),
    # OpenRouter: github.com/refly-ai/refly/issues/1177
    ("openrouter", "This endpoint's maximum context length is 32768 tokens. However, you "
     "requested about 42832 tokens (42832 of text input). Please reduce the length of either "
     "one, or use the \"middle-out\" transform to compress your prompt automatically."),
    # Mistral (wording documented by docs.mistral.ai; quoted in overflow classifiers)
    ("mistral", "Prompt contains 300000 tokens, too large for model with 131072 maximum context "
     "length"),
    # xAI: github.com/cline/cline/issues/3120
    ("xai", "This model's maximum prompt length is 131072 but the request contains 136973 "
     "tokens."),
    # xAI gRPC wording: github.com/UKGovernmentBEIS/inspect_ai/pull/5208
    ("xai", "Failed to start sampling: [input_too_large] Current message (1149677 tokens) "
     "exceeds budget (975424 tokens)"),
    # Ollama: the error string of its 400 body, as quoted in overflow test suites
    ("ollama", "prompt too long; exceeded max context length by 4 tokens"),
    # vLLM: github.com/vllm-project/vllm/issues/20409
    ("vllm", "This model's maximum context length is 16384 tokens. However, you requested "
     "19591 tokens (9591 in the messages, 10000 in the completion). Please reduce the length of "
     "the messages or completion. None"),
    # vLLM (newer wording): github.com/vllm-project/vllm/pull/33425
    ("vllm", "This model's maximum context length is 2048 tokens. However, your request has 8 "
     "input tokens plus 2045 'max_tokens'. Please reduce one or the other."),
    # LM Studio: github.com/lmstudio-ai/model-catalog/issues/38 family of reports
    ("lmstudio", "tokens to keep from the initial prompt is greater than the context length"),
]  # fmt: skip

NOT_OVERFLOW_TEXTS = [
    # Groq TPM limit (a rate limit): github.com/ITSpecialist111/ai_automation_suggester/issues/61
    "Request too large for model `llama-3.3-70b-versatile` in organization `org_01jp8byq` "
    "service tier `on_demand` on tokens per minute (TPM): Limit 6000, Requested 14810, please "
    "reduce your message size and try again.",
    # OpenAI TPM rate limit
    "Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit "
    "30000, Used 24000, Requested 9000. Please try again in 6s.",
    # Anthropic: an output limit, not the prompt: github.com/ChatGPTNextWeb/NextChat/issues/4964
    "max_tokens: 10000 > 4096, which is the maximum allowed number of output tokens for "
    "claude-3-5-sonnet-20240620",
    # Bedrock throttle worded with tokens
    "Throttling error: Too many tokens, please wait before trying again.",
    "You exceeded your current quota, please check your plan and billing details.",
    "Request contains an invalid argument.",
]


@pytest.mark.parametrize(("provider", "text"), OVERFLOW_TEXTS, ids=[t[0] for t in OVERFLOW_TEXTS])
def test_real_overflow_texts_are_recognised(provider: str, text: str) -> None:
    assert is_context_overflow(text)


@pytest.mark.parametrize("text", NOT_OVERFLOW_TEXTS)
def test_rate_limits_and_other_errors_are_not_overflow(text: str) -> None:
    assert not is_context_overflow(text)


# Whole error bodies as each server returns them, through the HTTP layer.
HTTP_OVERFLOWS = [
    ("openai-chat", 400, {"error": {"message": OVERFLOW_TEXTS[0][1],
     "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
    ("openai-responses", 400, {"error": {"message": OVERFLOW_TEXTS[1][1],
     "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}}),
    ("anthropic-messages", 400, {"type": "error", "error": {"type": "invalid_request_error",
     "message": OVERFLOW_TEXTS[2][1]}, "request_id": "req_011CVQe1dLrGNMJyE1ghG1av"}),
    ("google-generative-ai", 400, {"error": {"code": 400, "message": OVERFLOW_TEXTS[4][1],
     "status": "INVALID_ARGUMENT"}}),
    ("openai-chat", 400, {"error": {"message": OVERFLOW_TEXTS[5][1],
     "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}}),
    ("openai-chat", 400, {"StatusCode": 400, "Status": "400 Bad Request",
     "error": OVERFLOW_TEXTS[12][1]}),
    ("openai-chat", 400, {"object": "error", "message": OVERFLOW_TEXTS[13][1],
     "type": "BadRequestError", "param": None, "code": 400}),
]  # fmt: skip


@pytest.mark.parametrize(("api", "status", "body"), HTTP_OVERFLOWS)
def test_overflow_status_bodies_end_with_context_overflow(
    api: str, status: int, body: dict[str, Any]
) -> None:
    reply = Reply(status=status, content_type="application/json", body=json.dumps(body).encode())
    with MockServer([reply]) as srv:
        model = srv.model(api, context_window=1000)
        msg = mw.complete_sync(model, CTX, api_key="sk-test", max_retries=0)
    assert msg.stop_reason == "error"
    assert msg.error is not None and msg.error.kind == "context_overflow"
    assert classify.is_overflow(msg) and classify.is_overflow(msg, model)
    with pytest.raises(mw.errors.ContextOverflowError):
        msg.raise_for_error()


def test_groq_tpm_limit_is_not_overflow_over_http() -> None:
    body = {"error": {"message": NOT_OVERFLOW_TEXTS[0], "type": "tokens",
                      "code": "rate_limit_exceeded"}}  # fmt: skip
    reply = Reply(status=413, content_type="application/json", body=json.dumps(body).encode())
    with MockServer([reply]) as srv:
        msg = mw.complete_sync(srv.model("openai-chat"), CTX, max_retries=0)
    assert msg.error is not None and msg.error.kind != "context_overflow"
    assert not classify.is_overflow(msg)


def test_in_band_responses_overflow_is_context_overflow() -> None:
    # The Responses stream reports it as an error event (github.com/dyad-sh/dyad/issues/1672).
    error = {"type": "error", "sequence_number": 2, "error": {"type": "invalid_request_error",
             "code": "context_length_exceeded", "message": OVERFLOW_TEXTS[1][1], "param": "input"}}  # fmt: skip
    body = b"event: error\ndata: " + json.dumps(error).encode() + b"\n\n"
    msg = mw.replay("openai-responses", body).message
    assert msg.error is not None and msg.error.kind == "context_overflow"


def _message(stop: str, *, input: int, cache_read: int = 0, cache_write: int = 0) -> mw.AssistantMessage:  # fmt: skip
    usage = mw.Usage(input=input, output=5, cache_read=cache_read, cache_write=cache_write,
                     total_tokens=input + 5 + cache_read + cache_write)  # fmt: skip
    error = mw.ErrorInfo(kind="truncated_stream", message="cut") if stop == "error" else None
    return mw.AssistantMessage(content=(mw.TextContent(text="hi"),), api="openai-chat",
                               provider="zai", model="glm-4.6", usage=usage,
                               stop_reason=stop, error=error)  # type: ignore[arg-type]  # fmt: skip


def test_silent_overflow() -> None:
    model = mw.get_model("zai", "glm-4.6")
    window = model.context_window
    assert classify.is_silent_overflow(_message("stop", input=window + 1), model)
    assert not classify.is_silent_overflow(_message("stop", input=window), model)
    assert classify.is_silent_overflow(_message("stop", input=window - 10, cache_read=11), model)
    assert classify.is_silent_overflow(_message("tool_use", input=10, cache_write=window), model)
    assert classify.is_silent_overflow(_message("length", input=window * 2), model)
    assert not classify.is_silent_overflow(_message("error", input=window * 2), model)
    assert classify.is_overflow(_message("stop", input=window + 1), model)
    assert not classify.is_overflow(_message("stop", input=window + 1))  # no model, no window
    assert not classify.is_overflow(_message("error", input=window * 2), model)


# --------------------------------------------------------------------------- records → tables


def _chat_model(provider: str, base_url: str = "https://example.test/v1", **kw: Any) -> mw.Model:
    return mw.Model(id="m", api="openai-chat", provider=provider, base_url=base_url, **kw)


@pytest.mark.parametrize("record", [p for p in RAW["providers"] if p.get("compat")],
                         ids=lambda p: p["id"])  # fmt: skip
def test_chat_compat_defaults_come_from_the_record_by_name_alias_or_host(
    record: dict[str, Any],
) -> None:
    from modelwire._apis.openai_chat import detect_compat

    want = record["compat"].get("openai-chat", {})
    names = [record["id"], *record.get("aliases", ())]
    models = [_chat_model(n) for n in names]
    models += [
        _chat_model("some-proxy", f"https://{h}.example/v1") for h in record.get("hosts", ())
    ]
    for model in models:
        got = msgspec.structs.asdict(detect_compat(model))
        assert {k: got[k] for k in want} == want, (model.provider, model.base_url)
    # A user's compat wins over the record's.
    if "stream_options" in want:
        flipped = not want["stream_options"]
        model = _chat_model(record["id"], compat={"stream_options": flipped})
        assert detect_compat(model).stream_options is flipped


def test_reasoning_compat_applies_to_reasoning_models_only() -> None:
    from modelwire._apis.openai_chat import detect_compat

    extra = _record(RAW, "openai")["reasoning_compat"]["openai-chat"]
    assert detect_compat(_chat_model("openai", reasoning=True)).system_role == extra["system_role"]
    assert detect_compat(_chat_model("openai")).system_role == "system"


def test_the_mistral_id_rule_is_its_records() -> None:
    rule = _record(RAW, "mistral")["tool_ids"]["openai-chat"]
    for model in (_chat_model("mistral"), _chat_model("proxy", "https://api.mistral.ai/v1")):
        got = tool_id_rule(model)
        assert got is not None and (got.valid.pattern, got.max_len, got.exact) == (
            rule["valid"], rule["max_len"], rule["exact"])  # fmt: skip
    assert tool_id_rule(_chat_model("openai")).exact is None  # type: ignore[union-attr]


def test_a_new_record_is_all_it_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A provider added to the data — with a key variable, a compat default, an id
    rule, an overflow wording and a status quirk — is picked up by every table."""
    from modelwire._apis.openai_chat import detect_compat
    from modelwire._catalog import _records
    from modelwire._providers import _classify
    from modelwire._providers._status import status_error

    data = json.loads(json.dumps(RAW))
    data["providers"].append({
        "id": "newco", "name": "NewCo", "aliases": ["new-co"], "env": ["NEWCO_API_KEY"],
        "hosts": ["api.newco.test"], "compat": {"openai-chat": {"stream_options": False}},
        "tool_ids": {"openai-chat": {"valid": "[a-z]{1,8}", "bad": "[^a-z]", "max_len": 8}},
        "overflow": [r"newco: prompt over \d+ tokens"],
        "status_quirks": [{"status": 418, "match": "teapot_quota", "kind": "rate_limit"}],
        "docs": "https://newco.test/docs",
        "models": [{"id": "m", "name": "M", "api": "openai-chat", "base_url": "https://api.newco.test/v1",
                    "reasoning": False, "input": ["text"], "context_window": 10, "max_tokens": 5,
                    "cost": {"input": 1, "output": 1}}],
    })  # fmt: skip
    monkeypatch.setattr(
        _records, "_tables", _records._Tables(catalog.validate_catalog(json.dumps(data)))
    )
    monkeypatch.setattr(_classify, "_overflow", None)
    assert ENV_KEYS["newco"] == ENV_KEYS["new-co"] == ("NEWCO_API_KEY",)
    monkeypatch.delenv("NEWCO_API_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match="NEWCO_API_KEY"):
        resolve_api_key("new-co", None)
    proxied = _chat_model("proxy", "https://api.newco.test/v1")
    assert detect_compat(proxied).stream_options is False
    assert tool_id_rule(proxied).max_len == 8  # type: ignore[union-attr]
    assert is_context_overflow("NewCo: prompt over 9000 tokens")
    assert status_error(418, b'{"error": {"message": "teapot_quota"}}', {}, ()).kind == "rate_limit"
    monkeypatch.undo()
    assert "newco" not in ENV_KEYS


@pytest.mark.parametrize(
    ("provider", "api"),
    [(p["id"], api) for p in RAW["providers"] for api in {**p.get("compat", {}), **p.get("reasoning_compat", {})}],
)  # fmt: skip
def test_every_record_compat_is_valid_for_its_api(provider: str, api: str) -> None:
    """The API itself checks a record's flags (an unknown one is a ConfigurationError)."""
    model = mw.Model(id="m", api=api, provider=provider, base_url="https://x.test/v1",
                     reasoning=True, max_tokens=64)  # fmt: skip
    get_api(api).build_request(model, CTX, resolve_options("local", api_key="k"))


@pytest.mark.parametrize("api", sorted(APIS))
def test_a_records_compat_reaches_every_api(api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from modelwire._catalog import _records

    data = json.loads(json.dumps(RAW))
    data["providers"].append({"id": "flagged", "name": "F", "docs": "https://f.test", "models": [],
                              "compat": {api: {"no_such_flag": True}}})  # fmt: skip
    monkeypatch.setattr(
        _records, "_tables", _records._Tables(catalog.validate_catalog(json.dumps(data)))
    )
    model = mw.Model(
        id="m", api=api, provider="flagged", base_url="https://x.test/v1", max_tokens=64
    )
    options = resolve_options("local", api_key="k")
    # The record's flags are checked exactly where the model's own compat is: an API
    # that refuses a bogus Model.compat refuses the same flag from the record.
    direct = msgspec.structs.replace(model, provider="local", compat={"no_such_flag": True})
    try:
        get_api(api).build_request(direct, CTX, options)
    except ConfigurationError:
        with pytest.raises(ConfigurationError, match="no_such_flag"):
            get_api(api).build_request(model, CTX, options)
    else:  # an API without compat flags
        get_api(api).build_request(model, CTX, options)


def test_a_models_record_and_chat_compat_are_remembered_only_for_what_they_depend_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``record_for`` and ``detect_compat`` remember their answer per provider and base
    URL (and reasoning): never across a ``Model.compat`` override, a reasoning flag or
    replaced tables, and never more than a bounded number of them."""
    from modelwire._apis.openai_chat import detect_compat
    from modelwire._catalog import _records

    fresh = _records._Tables(catalog.validate_catalog(json.dumps(RAW)))
    monkeypatch.setattr(_records, "_tables", fresh)
    plain = _chat_model("openai")
    thinking = _chat_model("openai", reasoning=True)
    for _ in range(2):  # the second time from what was remembered
        assert detect_compat(plain).system_role != "developer"
        assert detect_compat(thinking).system_role == "developer"  # reasoning_compat
        overridden = detect_compat(_chat_model("openai", compat={"system_role": "system"}))
        assert overridden.system_role == "system"
        found = _records.record_for(_chat_model("local", "https://api.openai.com/v1"))
        assert found is not None and found.id == "openai"
        assert _records.record_for(_chat_model("local", "http://127.0.0.1:8080/v1")) is None
    # New tables (a catalog replaced): their own answers, none remembered from before.
    data = json.loads(json.dumps(RAW))
    for p in data["providers"]:
        if p["id"] == "openai":
            p["reasoning_compat"]["openai-chat"]["system_role"] = "system"
            p["hosts"] = []
    monkeypatch.setattr(
        _records, "_tables", _records._Tables(catalog.validate_catalog(json.dumps(data)))
    )
    assert detect_compat(thinking).system_role == "system"
    assert _records.record_for(_chat_model("local", "https://api.openai.com/v1")) is None
    for i in range(3 * _records._CACHE_ENTRIES):
        detect_compat(_chat_model("local", f"http://10.0.0.1:{1000 + i}/v1"))
    tables = _records._get()
    assert 0 < len(tables.found) <= _records._CACHE_ENTRIES
    assert 0 < len(tables.derived) <= _records._CACHE_ENTRIES
