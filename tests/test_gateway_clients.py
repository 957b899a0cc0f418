"""Agent clients through the gateway: the request bodies Claude Code (Anthropic
Messages) and Codex CLI (OpenAI Responses) send (``tests/data/clients``, written from
the clients' documented formats: ``SOURCES.md``), driven against backends of every wire
API served by a MockServer. A tool-use turn and the turn answering it must complete in
the client's own API, and the backend must receive what the gateway's rules say:
mid-conversation system text in the system prompt of a backend model that does not take
it among the turns, ``context_management`` only for an Anthropic backend, namespace tools
flattened (their calls rendered back with their ``namespace``), ``web_search`` where the
backend runs it, ``client_metadata`` nowhere, a reasoning level dropped or refused by the
model's ``unsupported_reasoning``."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import modelwire as mw
from modelwire._apis import builtin_api_names
from modelwire._apis.anthropic_messages.parse import parse as anthropic_parse
from modelwire._apis.openai_chat.parse import parse as chat_parse
from modelwire._apis.openai_responses.parse import parse as responses_parse
from modelwire.errors import ConfigurationError
from modelwire.gateway import GatewayServer, hash_key, load_config
from modelwire.testing import MockServer

KEY = "sk-gw-clients-0123456789"
DATA = Path(__file__).parent / "data" / "clients"
APIS = builtin_api_names()
REMINDER = "a git repository on branch main"  # the first turn's mid-conversation system text


def load(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((DATA / name).read_text(encoding="utf-8"))
    return body


@pytest.fixture(scope="module")
def backend() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(scope="module")
def gateway(backend: MockServer) -> Iterator[GatewayServer]:
    models: dict[str, Any] = {}
    for api in APIS:
        base = {"api": api, "id": f"mock-{api}", "base_url": backend.model(api).base_url}
        # Codex declares web_search: passed on where the backend runs it (a Responses
        # backend here), dropped per the model's rule elsewhere.
        runs = {"server_tools": ["web_search"]} if api == "openai-responses" else {}
        models[api] = {**base, **runs, "reasoning": True, "unsupported_server_tools": "drop"}
        if api == "bedrock-converse":  # a Claude model's thinking field, on Bedrock
            models[api]["compat"] = {"thinking": True}
        models[f"{api}-plain"] = base  # no reasoning: a level asked for is dropped
        models[f"{api}-strict"] = {**base, "unsupported_reasoning": "refuse"}
    cfg = {"models": models, "keys": {"team": {"key_sha256": hash_key(KEY), "models": ["*"]}}}
    with GatewayServer(cfg) as gw:
        yield gw


@pytest.fixture(autouse=True)
def fresh(backend: MockServer) -> Iterator[None]:
    yield
    with backend._lock:
        backend._replies.clear()


def post(gateway: GatewayServer, path: str, body: dict[str, Any]) -> httpx.Response:
    if path == "/v1/messages":
        # What Claude Code sends besides its body: the betas of the fields it uses.
        headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01",
                   "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14,"
                   "context-management-2025-06-27,mid-conversation-system-2026-04-07"}  # fmt: skip
    else:
        headers = {"authorization": f"Bearer {KEY}"}
    url = gateway.base_url + path + ("?beta=true" if path == "/v1/messages" else "")
    return httpx.post(url, json=body, headers=headers, timeout=30)


def events(response: httpx.Response) -> list[tuple[str, Any]]:
    """The SSE events of a streamed answer, as ``(event name or type, data)``."""
    assert response.status_code == 200, response.text
    out: list[tuple[str, Any]] = []
    for frame in mw.SSEDecoder().feed(response.content):
        data = json.loads(frame.data)
        out.append((data.get("type", frame.event), data))
    return out


def call(name: str, args: dict[str, Any], call_id: str) -> mw.AssistantMessage:
    raw = json.dumps(args)
    return mw.AssistantMessage(
        content=[mw.ToolCall(id=call_id, name=name, arguments=args, raw_arguments=raw)],
        api="", provider="", model="", stop_reason="tool_use",
        usage=mw.Usage(input=30, output=8),
    )  # fmt: skip


def said(text: str) -> mw.AssistantMessage:
    return mw.AssistantMessage(content=[mw.TextContent(text=text)], api="", provider="",
                               model="", stop_reason="stop", usage=mw.Usage(input=40, output=3))  # fmt: skip


# --------------------------------------------------------------------------- Claude Code


def anthropic_blocks(evs: list[tuple[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """The content blocks a client assembles from a Messages stream, and the stop."""
    blocks: list[dict[str, Any]] = []
    partial: dict[int, str] = {}
    stop = ""
    for kind, data in evs:
        if kind == "content_block_start":
            blocks.append(dict(data["content_block"]))
        elif kind == "content_block_delta":
            d, block = data["delta"], blocks[data["index"]]
            if d["type"] == "input_json_delta":
                partial[data["index"]] = partial.get(data["index"], "") + d["partial_json"]
            elif d["type"] == "text_delta":
                block["text"] += d["text"]
            elif d["type"] == "thinking_delta":
                block["thinking"] += d["thinking"]
            elif d["type"] == "signature_delta":
                block["signature"] = d["signature"]
        elif kind == "content_block_stop" and data["index"] in partial:
            blocks[data["index"]]["input"] = json.loads(partial[data["index"]])
        elif kind == "message_delta":
            stop = data["delta"]["stop_reason"]
    assert evs[-1][0] == "message_stop"
    return blocks, stop


@pytest.mark.parametrize("api", APIS)
def test_claude_code_tool_use_turn_and_its_answer(
    api: str, backend: MockServer, gateway: GatewayServer
) -> None:
    first = load("claude-code-first-turn.json")
    first["model"] = api
    backend.add(call("Bash", {"command": "ls"}, "toolu_01Bash"))
    blocks, stop = anthropic_blocks(events(post(gateway, "/v1/messages", first)))
    uses = [b for b in blocks if b["type"] == "tool_use"]
    assert stop == "tool_use" and [(u["name"], u["input"]) for u in uses] == [
        ("Bash", {"command": "ls"})
    ]
    got = backend.last_request.json()
    raw = backend.last_request.body
    assert REMINDER.encode() in raw and b"You are Claude Code" in raw
    assert all(name in raw for name in (b"Bash", b"Glob", b"Read"))
    if api == "anthropic-messages":
        # Passed through as sent; the mid-conversation text is in the system prompt.
        assert got["context_management"] == first["context_management"]
        assert REMINDER in json.dumps(got["system"])
        assert all(m["role"] in ("user", "assistant") for m in got["messages"])
        assert got["thinking"]["type"] in ("enabled", "adaptive")
    else:
        assert b"context_management" not in raw and b"clear_thinking" not in raw
    if api == "openai-chat":
        assert got["messages"][0]["role"] in ("system", "developer")
        assert REMINDER in got["messages"][0]["content"]
        assert got["reasoning_effort"] == "high"  # adaptive thinking at effort high

    # The next turn: the answer as the client assembled it, the tool's result, and a
    # system message after it.
    second = load("claude-code-tool-result.json")
    second["model"] = api
    second["messages"][-3] = {"role": "assistant", "content": blocks}
    result_block = second["messages"][-2]["content"][0]
    result_block["tool_use_id"] = uses[0]["id"]
    backend.add(said("Four entries."))
    blocks2, stop2 = anthropic_blocks(events(post(gateway, "/v1/messages", second)))
    assert stop2 == "end_turn" and blocks2[-1] == {"type": "text", "text": "Four entries."}
    raw2 = backend.last_request.body
    assert b"README.md" in raw2 and b"Keep answers short" in raw2 and REMINDER.encode() in raw2


def test_claude_code_thinking_on_a_model_without_reasoning(
    backend: MockServer, gateway: GatewayServer
) -> None:
    body = load("claude-code-first-turn.json")
    body["model"] = "openai-chat-plain"
    backend.add(call("Bash", {"command": "ls"}, "toolu_01Bash"))
    assert anthropic_blocks(events(post(gateway, "/v1/messages", body)))[1] == "tool_use"
    got = backend.last_request.json()
    assert "reasoning_effort" not in got and "reasoning" not in got  # dropped (the default)
    body["model"] = "openai-chat-strict"
    refused = post(gateway, "/v1/messages", body)
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["type"] == "invalid_request_error" and error["message"].startswith("thinking: ")


@pytest.mark.parametrize(
    ("edit", "api"),
    [
        ({"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 1}},
         "openai-chat"),
        ({"type": "clear_tool_uses_20250919"}, "google-generative-ai"),
    ],
)  # fmt: skip
def test_context_edits_that_change_the_answer_are_refused_elsewhere(
    edit: dict[str, Any], api: str, gateway: GatewayServer
) -> None:
    body = load("claude-code-first-turn.json")
    body["model"] = api
    body["context_management"] = {"edits": [edit]}
    refused = post(gateway, "/v1/messages", body)
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["type"] == "invalid_request_error" and "context_management" in error["message"]


def test_context_edits_reach_an_anthropic_backend(
    backend: MockServer, gateway: GatewayServer
) -> None:
    body = load("claude-code-first-turn.json")
    body["model"] = "anthropic-messages"
    body["context_management"] = {"edits": [{"type": "clear_tool_uses_20250919"}]}
    backend.add(said("ok"))
    assert anthropic_blocks(events(post(gateway, "/v1/messages", body)))[1] == "end_turn"
    assert backend.last_request.json()["context_management"] == body["context_management"]
    # The client's betas go on with it (context editing needs its own), joined with
    # modelwire's.
    betas = backend.last_request.headers["anthropic-beta"].split(",")
    assert "context-management-2025-06-27" in betas and "claude-code-20250219" in betas
    body["model"] = "openai-chat"
    body["context_management"] = {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}
    backend.add(said("ok"))
    assert anthropic_blocks(events(post(gateway, "/v1/messages", body)))[1] == "end_turn"
    assert "anthropic-beta" not in backend.last_request.headers


# --------------------------------------------------------------------------- Codex CLI


def completed(evs: list[tuple[str, Any]]) -> dict[str, Any]:
    assert evs[-1][0] == "response.completed", evs[-1]
    response: dict[str, Any] = evs[-1][1]["response"]
    return response


@pytest.mark.parametrize("api", APIS)
def test_codex_tool_use_turn_and_its_answer(
    api: str, backend: MockServer, gateway: GatewayServer
) -> None:
    first = load("codex-first-turn.json")
    first["model"] = api
    backend.add(call("search", {"query": "gateway"}, "call_search1"))
    evs = events(post(gateway, "/v1/responses", first))
    output = completed(evs)["output"]
    calls = [i for i in output if i["type"] == "function_call"]
    assert [(c["name"], c.get("namespace"), json.loads(c["arguments"])) for c in calls] == [
        ("search", "mcp__docs__", {"query": "gateway"})
    ]
    # The streamed items say the same as the final response.
    done = [d["item"] for k, d in evs if k == "response.output_item.done"]
    assert [i.get("namespace") for i in done if i["type"] == "function_call"] == ["mcp__docs__"]
    raw = backend.last_request.body
    # Flattened: every function tool under its own name; no group, no client tags.
    for name in (b"shell_command", b"update_plan", b"apply_patch", b"search", b"fetch_page"):
        assert name in raw
    assert b"mcp__docs__" not in raw and b"client_metadata" not in raw
    assert b"codex_cli_rs" not in raw
    if api == "openai-responses":
        got = backend.last_request.json()
        assert [t.get("name") for t in got["tools"]][-3:] == ["search", "fetch_page", None]
        # The provider-run tool as Codex wrote it, to a backend that runs it.
        assert got["tools"][-1] == {"type": "web_search", "external_web_access": False}
        assert got["reasoning"]["effort"] == "medium"
    else:
        assert b"web_search" not in raw and b"googleSearch" not in raw

    second = load("codex-tool-result.json")
    second["model"] = api
    second["input"][-2:] = [*output, {**second["input"][-1], "call_id": calls[0]["call_id"]}]
    backend.add(said("docs/gateway.md"))
    answer = completed(events(post(gateway, "/v1/responses", second)))
    assert answer["status"] == "completed"
    assert answer["output"][-1]["content"][0]["text"] == "docs/gateway.md"
    raw2 = backend.last_request.body
    assert b"The gateway: modelwire serve" in raw2 and b"mcp__docs__" not in raw2


def test_codex_recorded_second_turn_replays_the_namespaced_call(
    backend: MockServer, gateway: GatewayServer
) -> None:
    body = load("codex-tool-result.json")
    body["model"] = "anthropic-messages"
    backend.add(said("docs/gateway.md"))
    assert completed(events(post(gateway, "/v1/responses", body)))["status"] == "completed"
    got = backend.last_request.json()
    uses = [b for m in got["messages"] if m["role"] == "assistant" for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"]  # fmt: skip
    assert [(u["name"], u["input"]) for u in uses] == [("search", {"query": "gateway"})]


@pytest.mark.parametrize(
    ("change", "param"),
    [
        (lambda b: b.update(model="openai-chat-plain"), "tools[5].type"),
        (lambda b: b["tools"].append({"type": "web_search"}), "tools[6].type"),
        (lambda b: b["tools"][4]["tools"].append(copy.deepcopy(b["tools"][0])),
         "tools[4].tools[2].name"),
        (lambda b: b.update(model="openai-chat-strict"), "reasoning.effort"),
    ],
    ids=["web_search", "web_search twice", "a name twice", "reasoning refused"],
)  # fmt: skip
def test_codex_requests_refused_by_name(change: Any, param: str, gateway: GatewayServer) -> None:
    body = load("codex-first-turn.json")
    body["model"] = "openai-chat"
    change(body)
    refused = post(gateway, "/v1/responses", body)
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == param


def test_unsupported_reasoning_is_drop_or_refuse() -> None:
    model = {"api": "openai-chat", "id": "m", "base_url": "http://127.0.0.1:9/v1"}
    keys = {"k": {"key_sha256": hash_key(KEY), "models": ["*"]}}
    config = load_config({"models": {"m": model}, "keys": keys})
    assert config.models["m"].unsupported_reasoning == "drop"
    with pytest.raises(ConfigurationError, match=r"models\.m\.unsupported_reasoning must be drop"):
        load_config({"models": {"m": {**model, "unsupported_reasoning": "ask"}}, "keys": keys})


@pytest.mark.parametrize(
    ("parse", "body"),
    [
        (anthropic_parse, {"model": "m", "max_tokens": 9, "system": "A.", "messages": [
            {"role": "user", "content": "q"}, {"role": "system", "content": "B."},
            {"role": "assistant", "content": "a"}, {"role": "user", "content": "q2"},
            {"role": "system", "content": [{"type": "text", "text": "C."}]}]}),
        (chat_parse, {"model": "m", "messages": [
            {"role": "system", "content": "A."}, {"role": "user", "content": "q"},
            {"role": "developer", "content": "B."}, {"role": "assistant", "content": "a"},
            {"role": "user", "content": "q2"}, {"role": "system", "content": "C."}]}),
        (responses_parse, {"model": "m", "instructions": "A.", "input": [
            {"role": "user", "content": "q"}, {"role": "developer", "content": "B."},
            {"role": "assistant", "content": "a"}, {"role": "user", "content": "q2"},
            {"role": "system", "content": "C."}]}),
    ],
    ids=["anthropic", "chat", "responses"],
)  # fmt: skip
def test_system_messages_later_in_the_conversation_keep_their_place(
    parse: Any, body: dict[str, Any]
) -> None:
    req = parse(json.dumps(body).encode(), {})
    assert req.context.system_prompt == "A."
    messages = req.context.messages
    assert [m.role for m in messages] == ["user", "system", "assistant", "user", "system"]
    assert [messages[1].content, messages[4].content] == ["B.", "C."]
    # A backend model that does not take them gets their text in its system prompt.
    assert req.context.system_text == "A.\n\nB.\n\nC."
