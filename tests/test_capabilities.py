"""A model's profile is typed data in three layers: its API's default, the catalog,
``Model.capabilities``; the readers (structured output, token counting, the gateway)
read the profile, never an API name."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

import modelwire as mw
from modelwire._apis import builtin_api_names, find_api, get_api
from modelwire._apis._output_modes import mode_problem, output_mode
from modelwire._apis._profile import model_profile, origin_profile, profile
from modelwire._catalog import dump_catalog
from modelwire._catalog._schema import packaged_catalog
from modelwire.errors import ConfigurationError
from modelwire.gateway._backend import backend_capabilities
from modelwire.gateway._config import ModelRoute

SRC = Path(mw.__file__).parent


def _model(api: str, provider: str = "p", model_id: str = "m", **kw: Any) -> mw.Model:
    return mw.Model(id=model_id, api=api, provider=provider, base_url="http://127.0.0.1:9/v1", **kw)


# --------------------------------------------------------------------------- the value


def test_a_layer_over_another_wins_field_by_field() -> None:
    below = mw.Capabilities(structured_output="schema", forced_tool_choice=True)
    top = mw.Capabilities(structured_output="json")
    merged = top.over(below)
    assert merged.structured_output == "json" and merged.forced_tool_choice is True
    assert mw.Capabilities().over(below) is below  # a layer that says nothing


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"structured_output": "yes"}, "structured_output must be one of schema, json, none"),
        ({"forced_tool_choice": "no"}, "forced_tool_choice must be a bool"),
        ({"reasoning_levels": "high"}, "reasoning_levels must be a list"),
    ],
)
def test_a_wrong_capability_is_a_clear_error(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigurationError, match=words):
        mw.Capabilities(**kwargs)


def test_capabilities_round_trip_as_json() -> None:
    caps = mw.Capabilities(structured_output="none", reasoning_levels=["low", "high"])  # type: ignore[arg-type]
    assert caps.reasoning_levels == ("low", "high")
    assert mw.from_json(mw.to_json(caps), mw.Capabilities) == caps
    model = _model("openai-chat", capabilities=caps)
    assert mw.from_json(mw.to_json(model), mw.Model) == model


# --------------------------------------------------------------------------- the layers


@pytest.mark.parametrize("api", builtin_api_names())
def test_every_built_in_api_states_its_defaults(api: str) -> None:
    codec = get_api(api)
    said = codec.capabilities(_model(api))
    assert isinstance(said, mw.Capabilities)
    assert said.structured_output is not None and said.forced_tool_choice is not None
    caps = profile(codec, _model(api))
    assert caps.token_count is (codec.counting is not None)
    assert caps.late_call_signatures is not None and caps.reasoning_levels is not None


def test_the_catalog_lays_a_providers_facts_over_the_api() -> None:
    # DeepSeek's Chat Completions take JSON mode only (the catalog says so, not code).
    deepseek = mw.get_model("deepseek", "deepseek-chat")
    assert get_api("openai-chat").capabilities(deepseek).structured_output == "schema"
    assert model_profile(deepseek).structured_output == "json"
    assert output_mode(deepseek) == "tool"
    assert model_profile(mw.get_model("openai", "gpt-4.1")).structured_output == "schema"


def test_the_model_has_the_last_word() -> None:
    deepseek = mw.get_model("deepseek", "deepseek-chat")
    fixed = msgspec.structs.replace(
        deepseek, capabilities=mw.Capabilities(structured_output="schema")
    )
    assert output_mode(fixed) == "native"
    local = _model("openai-chat", capabilities=mw.Capabilities(forced_tool_choice=False))
    assert output_mode(local) == "native"
    problem = mode_problem(local, "tool")
    assert problem is not None and "cannot force a tool call" in problem


def test_a_catalog_model_entry_says_what_differs_from_its_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from modelwire._catalog import _records

    record = next(p for p in packaged_catalog().providers if p.id == "deepseek")
    entry = msgspec.structs.replace(
        record.models[0], capabilities=mw.Capabilities(forced_tool_choice=False)
    )
    edited = msgspec.structs.replace(record, models=(entry, *record.models[1:]))
    monkeypatch.setattr(_records, "record_for", lambda m: edited)
    model = mw.get_model("deepseek", entry.id)
    said = _records.capabilities_said(model)
    assert said.forced_tool_choice is False  # the model's own entry
    assert said.structured_output == "json"  # its provider's, for the API
    caps = model_profile(model)
    assert caps.forced_tool_choice is False and caps.structured_output == "json"
    assert output_mode(model) == "prompted"
    other = mw.get_model("deepseek", record.models[1].id)
    assert model_profile(other).forced_tool_choice is True  # the API's


def test_the_catalog_refuses_capabilities_for_an_unknown_api() -> None:
    from modelwire._catalog import validate_catalog

    cat = packaged_catalog()
    p = msgspec.structs.replace(
        cat.providers[0], capabilities={"no-such-api": mw.Capabilities(token_count=False)}
    )
    bad = msgspec.structs.replace(cat, providers=(p, *cat.providers[1:]))
    with pytest.raises(ConfigurationError, match="capabilities: 'no-such-api' is not a known API"):
        validate_catalog(dump_catalog(bad))


# --------------------------------------------------------------------------- the readers


@pytest.mark.parametrize(
    ("provider", "model_id", "mode"),
    [
        ("anthropic", "claude-sonnet-4-5", "native"),
        ("vertex-anthropic", "claude-sonnet-4-5@20250929", "tool"),
        ("google", "gemini-2.0-flash", "tool"),
        ("amazon-bedrock", "amazon.nova-pro-v1:0", "tool"),
        ("ollama", "llama3.2", "native"),
    ],
)
def test_the_default_mode_is_read_off_the_profile(provider: str, model_id: str, mode: str) -> None:
    model = mw.get_model(provider, model_id)
    caps = model_profile(model)
    assert output_mode(model) == mode
    assert (caps.structured_output == "schema") is (mode == "native")


def test_a_forced_tool_is_refused_only_where_the_profile_says_so() -> None:
    ollama = mw.get_model("ollama", "llama3.2")
    assert model_profile(ollama).forced_tool_choice is False
    assert "cannot force a tool call" in (mode_problem(ollama, "tool") or "")
    bedrock = mw.get_model("amazon-bedrock", "amazon.nova-pro-v1:0")
    assert "no native structured output" in (mode_problem(bedrock, "native") or "")
    assert mode_problem(bedrock, "tool") is None


def test_an_api_that_makes_events_itself_states_nothing() -> None:
    caps = profile(None, _model("some-stream-function"))
    assert caps.structured_output == "none" and caps.forced_tool_choice is None
    assert caps.token_count is False


def test_token_counting_follows_the_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    from modelwire._client import _count

    claude = mw.get_model("anthropic", "claude-sonnet-4-5")
    assert _count._counter(claude) is get_api("anthropic-messages").counting
    off = msgspec.structs.replace(claude, capabilities=mw.Capabilities(token_count=False))
    assert _count._counter(off) is None
    assert _count._counter(_model("openai-chat")) is None


def test_the_gateway_reads_late_signatures_off_the_backends_profile() -> None:
    gemini = _model("google-generative-ai", model_id="gemini-2.5-flash")
    chat = _model("openai-chat")
    late = backend_capabilities(ModelRoute(name="g", target=gemini))
    assert late.late_call_signatures is True
    assert backend_capabilities(ModelRoute(name="c", target=chat)).late_call_signatures is False
    both = mw.Fallback([chat, gemini])
    assert backend_capabilities(ModelRoute(name="f", target=both)).late_call_signatures is True
    message = mw.AssistantMessage(content=(), api="google-generative-ai", provider="google",
                                  model="gemini-2.5-flash")  # fmt: skip
    assert origin_profile(message).late_call_signatures is True


# --------------------------------------------------------------------------- the source


def _outside_own_package(path: Path) -> str | None:
    """The API a module may name: its own package's (``None`` outside ``_apis/<api>``)."""
    rel = path.relative_to(SRC).parts
    if rel[0] == "_apis" and len(rel) > 1 and not rel[1].startswith("_"):
        return rel[1].removesuffix(".py").replace("_", "-")
    return None


def _literals(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.Set | ast.List):
        return [s for e in node.elts for s in _literals(e)]
    return []


def test_no_api_name_is_compared_outside_its_package() -> None:
    names = set(builtin_api_names())
    found = []
    for path in sorted(SRC.rglob("*.py")):
        own = _outside_own_package(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            if not any(isinstance(s, ast.Attribute) and s.attr == "api" for s in sides):
                continue
            named = {lit for s in sides for lit in _literals(s)} & names
            if named - {own}:
                found.append(f"{path.relative_to(SRC)}:{node.lineno} {sorted(named)}")
    assert found == []


def test_no_capability_is_found_by_module_name() -> None:
    # Counting endpoints and late signatures are facets and profile fields, not files
    # found by naming convention.
    for rel in ("_client/_count.py", "_apis/openai_responses/_output_items.py",
                "_apis/openai_responses/render.py", "_apis/_output_modes.py"):  # fmt: skip
        text = (SRC / rel).read_text(encoding="utf-8")
        assert not re.search(r"importlib|import_module|getattr\((codec|wire|spec|api)\b", text), rel


def test_every_codec_is_checked_for_its_capabilities() -> None:
    from modelwire._apis._codec import check_codec

    class NoCapabilities:
        name = "no-capabilities"
        mock = handoff = counting = None

        def path(self, model_id: str) -> str:
            return "/x"

        build_request = framing = new_decoder = recognizes = path

    with pytest.raises(ConfigurationError, match="lacks capabilities"):
        check_codec(NoCapabilities())
    assert find_api("no-capabilities") is None
