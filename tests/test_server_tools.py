"""Provider-run tools (``mw.ServerTool``: web search, web fetch, code execution): each API
that has them gets its own tool object, every other API refuses them before any request
(never dropped), and the gateway passes a client's own server tool to a backend that runs
it — as written to a backend of the client's API, as the bare tool to another — or
applies the model's ``unsupported_server_tools`` rule, naming the request field."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import msgspec
import pytest

import modelwire as mw
from modelwire._apis._profile import model_profile
from modelwire.errors import ConfigurationError
from modelwire.gateway import GatewayServer, hash_key, load_config
from modelwire.testing import MockServer

KEY = "sk-gw-server-tools-0123456789"
ASK = mw.Context(messages=[mw.UserMessage(content="What changed in the news today?")])


@pytest.fixture(scope="module")
def backend() -> Iterator[MockServer]:
    with MockServer(["Nothing new."], repeat_last=True) as server:
        yield server


def first_party(backend: MockServer, api: str, provider: str) -> mw.Model:
    """A model of a catalog provider (whose record says which tools it runs), served
    by the MockServer."""
    return msgspec.structs.replace(backend.model(api), provider=provider)


def sent(backend: MockServer, model: mw.Model, tools: list[mw.ServerTool]) -> Any:
    answer = mw.complete_sync(model, ASK, server_tools=tools, api_key="sk-test-key-123")
    assert answer.stop_reason == "stop", answer.error
    return backend.last_request


# --------------------------------------------------------------------------- the library


def test_responses_takes_its_tool_objects_with_their_options(backend: MockServer) -> None:
    model = first_party(backend, "openai-responses", "openai")
    tools = [mw.ServerTool("web_search", options={"search_context_size": "low"}),
             mw.ServerTool("code_execution")]  # fmt: skip
    got = sent(backend, model, tools).json()["tools"]
    assert got == [{"type": "web_search", "search_context_size": "low"},
                   {"type": "code_interpreter", "container": {"type": "auto"}}]  # fmt: skip


def test_anthropic_takes_versioned_server_tools_and_their_betas(backend: MockServer) -> None:
    model = first_party(backend, "anthropic-messages", "anthropic")
    tools = [mw.ServerTool("web_search", options={"max_uses": 2}), mw.ServerTool("web_fetch"),
             mw.ServerTool("code_execution")]  # fmt: skip
    request = sent(backend, model, tools)
    assert request.json()["tools"] == [
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 2},
        {"type": "web_fetch_20250910", "name": "web_fetch"},
        {"type": "code_execution_20250825", "name": "code_execution"},
    ]
    betas = request.headers["anthropic-beta"].split(",")
    assert "web-fetch-2025-09-10" in betas and "code-execution-2025-08-25" in betas


def test_gemini_turns_each_tool_on_with_its_field(backend: MockServer) -> None:
    model = first_party(backend, "google-generative-ai", "google")
    tools = [mw.ServerTool("web_search"), mw.ServerTool("web_fetch"),
             mw.ServerTool("code_execution", options={})]  # fmt: skip
    got = sent(backend, model, tools).json()["tools"]
    assert got == [{"googleSearch": {}}, {"urlContext": {}}, {"codeExecution": {}}]


def test_server_tools_come_after_the_callers_own_tools(backend: MockServer) -> None:
    model = first_party(backend, "anthropic-messages", "anthropic")
    tool = mw.ToolDefinition(name="lookup", description="d", parameters={"type": "object"})
    ctx = msgspec.structs.replace(ASK, tools=(tool,))
    mw.complete_sync(model, ctx, server_tools=[mw.ServerTool("web_search")], api_key="sk-1234567")
    names = [t["name"] for t in backend.last_request.json()["tools"]]
    assert names == ["lookup", "web_search"]


@pytest.mark.parametrize("api", ["openai-chat", "ollama-chat", "bedrock-converse"])
def test_an_api_without_server_tools_refuses_them_before_any_request(
    api: str, backend: MockServer
) -> None:
    before = len(backend.requests)
    with pytest.raises(
        ConfigurationError, match=r"server_tools\[0\]: .*no provider-run web_search"
    ):
        mw.complete_sync(backend.model(api), ASK, server_tools=[mw.ServerTool("web_search")])
    # Claimed by the model, still refused by the API, which has no such tool to render.
    claimed = msgspec.structs.replace(
        backend.model(api), capabilities=mw.Capabilities(server_tools=("web_search",))
    )
    with pytest.raises(ConfigurationError, match=f"{api} has no provider-run web_search"):
        mw.complete_sync(claimed, ASK, server_tools=[mw.ServerTool("web_search")])
    assert len(backend.requests) == before


def test_a_model_without_the_tool_refuses_it_naming_how_to_say_it_has_it(
    backend: MockServer,
) -> None:
    model = backend.model("anthropic-messages")  # a compatible server: runs none
    with pytest.raises(ConfigurationError, match=r"it runs none.*Capabilities\(server_tools="):
        mw.complete_sync(model, ASK, server_tools=[mw.ServerTool("web_search")])
    vertex = first_party(backend, "anthropic-messages", "vertex-anthropic")
    with pytest.raises(ConfigurationError, match="no provider-run code_execution tool"):
        mw.complete_sync(vertex, ASK, server_tools=[mw.ServerTool("code_execution")])


def test_options_of_another_api_are_refused_not_translated(backend: MockServer) -> None:
    model = first_party(backend, "openai-responses", "openai")
    tool = mw.ServerTool("web_search", options={"max_uses": 3}, api="anthropic-messages")
    with pytest.raises(ConfigurationError, match=r"options \(max_uses\) are fields of anthropic"):
        mw.complete_sync(model, ASK, server_tools=[tool], api_key="sk-1234567")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("web_search", "server_tools must be a list of mw.ServerTool"),
        (["web_search"], r"server_tools\[0\] must be a mw.ServerTool, got str"),
        ([mw.ServerTool("web_search")] * 2, "names web_search more than once"),
    ],
)
def test_the_option_is_checked(value: Any, message: str, backend: MockServer) -> None:
    with pytest.raises(ConfigurationError, match=message):
        mw.complete_sync(backend.model("openai-responses"), ASK, server_tools=value)


def test_a_server_tool_is_one_of_the_names_modelwire_renders() -> None:
    with pytest.raises(ConfigurationError, match=r"ServerTool\.name must be one of web_search"):
        mw.ServerTool("bash")
    with pytest.raises(ConfigurationError, match=r"ServerTool\.options must be a dict"):
        mw.ServerTool("web_search", options=["max_uses"])  # type: ignore[arg-type]


def test_the_catalog_says_which_models_run_which_tools() -> None:
    claude = mw.get_model("anthropic", "claude-sonnet-4-5")
    assert model_profile(claude).server_tools == ("web_search", "web_fetch", "code_execution")
    chat = mw.get_model("openai", "gpt-4.1-mini")  # Chat Completions: no server tools
    assert chat.api == "openai-chat" and model_profile(chat).server_tools == ()
    responses = msgspec.structs.replace(chat, api="openai-responses")
    assert "web_search" in (model_profile(responses).server_tools or ())


# --------------------------------------------------------------------------- the gateway

WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}


@pytest.fixture(scope="module")
def gateway(backend: MockServer) -> Iterator[GatewayServer]:
    models: dict[str, Any] = {}
    for api in ("openai-responses", "anthropic-messages", "google-generative-ai", "openai-chat"):
        base = {"api": api, "id": f"mock-{api}", "base_url": backend.model(api).base_url}
        runs = [] if api == "openai-chat" else ["web_search"]
        models[api] = {**base, "server_tools": runs}
        models[f"{api}-drop"] = {**base, "unsupported_server_tools": "drop"}
    cfg = {"models": models, "keys": {"team": {"key_sha256": hash_key(KEY), "models": ["*"]}}}
    with GatewayServer(cfg) as gw:
        yield gw


def messages_body(model: str, *tools: dict[str, Any]) -> dict[str, Any]:
    return {"model": model, "max_tokens": 64, "tools": list(tools),
            "messages": [{"role": "user", "content": "news?"}]}  # fmt: skip


def responses_body(model: str, *tools: dict[str, Any]) -> dict[str, Any]:
    return {"model": model, "input": "news?", "tools": list(tools)}


def post(gateway: GatewayServer, body: dict[str, Any], **headers: str) -> httpx.Response:
    path = "/v1/messages" if "messages" in body else "/v1/responses"
    auth = {"x-api-key": KEY} if path == "/v1/messages" else {"authorization": f"Bearer {KEY}"}
    return httpx.post(gateway.base_url + path, json=body, headers={**auth, **headers}, timeout=30)


def answered(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def test_a_client_server_tool_reaches_a_backend_of_its_api_as_written(
    backend: MockServer, gateway: GatewayServer
) -> None:
    body = messages_body("anthropic-messages", WEB_SEARCH)
    answered(post(gateway, body, **{"anthropic-beta": "web-search-2025-03-05"}))
    assert backend.last_request.json()["tools"] == [WEB_SEARCH]
    assert "web-search-2025-03-05" in backend.last_request.headers["anthropic-beta"]
    answered(post(gateway, responses_body("openai-responses", {"type": "web_search_preview"})))
    assert backend.last_request.json()["tools"] == [{"type": "web_search_preview"}]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (messages_body("openai-responses", {"type": "web_search_20250305", "name": "web_search"}),
         [{"type": "web_search"}]),
        (messages_body("google-generative-ai", {"type": "web_search_20260209", "name": "web_search"}),
         [{"googleSearch": {}}]),
        (responses_body("anthropic-messages", {"type": "web_search"}),
         [{"type": "web_search_20250305", "name": "web_search"}]),
    ],
    ids=["messages to responses", "messages to gemini", "responses to messages"],
)  # fmt: skip
def test_the_bare_tool_is_translated_to_a_backend_of_another_api(
    body: dict[str, Any], expected: list[Any], backend: MockServer, gateway: GatewayServer
) -> None:
    answered(post(gateway, body))
    assert backend.last_request.json()["tools"] == expected


@pytest.mark.parametrize(
    ("body", "param", "reason"),
    [
        (responses_body("anthropic-messages", {"type": "web_search", "external_web_access": False}),
         "tools[0].type", r"its settings \(external_web_access\) are openai-responses fields"),
        (messages_body("openai-responses", WEB_SEARCH), "tools[0].type",
         r"its settings \(max_uses\)"),
        (messages_body("openai-chat", {"name": "f", "input_schema": {"type": "object"}},
                       WEB_SEARCH), "tools[1].type", "runs no provider web_search tool"),
        (messages_body("anthropic-messages", {"type": "memory_20250818", "name": "memory"}),
         "tools[0].type", "does not pass on"),
        (responses_body("openai-responses", {"type": "file_search", "vector_store_ids": ["v"]}),
         "tools[0].type", "'file_search' is not supported"),
    ],
    ids=["codex settings elsewhere", "max_uses elsewhere", "no web search", "memory tool",
         "file_search"],
)  # fmt: skip
def test_a_server_tool_a_backend_cannot_take_is_refused_by_name(
    body: dict[str, Any], param: str, reason: str, backend: MockServer, gateway: GatewayServer
) -> None:
    before = len(backend.requests)
    refused = post(gateway, body)
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    if "messages" in body:
        assert error["type"] == "invalid_request_error" and param in error["message"]
    else:
        assert error["param"] == param
    assert re.search(reason, error["message"]), error["message"]
    assert len(backend.requests) == before  # nothing reached a backend


def test_drop_answers_without_the_tool_the_backend_cannot_run(
    backend: MockServer, gateway: GatewayServer
) -> None:
    body = responses_body("openai-chat-drop", {"type": "web_search"},
                          {"type": "function", "name": "f", "parameters": {"type": "object"}})  # fmt: skip
    assert answered(post(gateway, body))["status"] == "completed"
    assert [t["function"]["name"] for t in backend.last_request.json()["tools"]] == ["f"]
    answered(post(gateway, messages_body("anthropic-messages-drop", WEB_SEARCH)))
    assert "tools" not in backend.last_request.json()


def test_the_rule_and_the_tools_are_checked_at_start() -> None:
    model = {"api": "openai-chat", "id": "m", "base_url": "http://127.0.0.1:9/v1"}
    keys = {"k": {"key_sha256": hash_key(KEY), "models": ["*"]}}
    config = load_config({"models": {"m": model}, "keys": keys})
    assert config.models["m"].unsupported_server_tools == "refuse"
    with pytest.raises(ConfigurationError, match=r"models\.m\.unsupported_server_tools must be"):
        load_config({"models": {"m": {**model, "unsupported_server_tools": "x"}}, "keys": keys})
    with pytest.raises(ConfigurationError, match=r"models\.m\.server_tools\[0\] must be one of"):
        load_config({"models": {"m": {**model, "server_tools": ["bash"]}}, "keys": keys})
