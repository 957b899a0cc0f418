"""System messages among the turns (``mw.SystemMessage``): sent in place to a model that
takes them (``Capabilities.mid_conversation_system``: OpenAI's models, Claude Opus 4.8 on
Anthropic's API, where the placement rules allow), and for every other model appended to
the system prompt, in order — never lost, never sent where the API would refuse it. The
gateway keeps a client's mid-conversation system messages in place for such a backend."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import msgspec
import pytest

import modelwire as mw
from modelwire._apis import builtin_api_names
from modelwire.errors import ConfigurationError
from modelwire.gateway import GatewayServer, hash_key
from modelwire.testing import MockServer

KEY = "sk-gw-system-messages-0123"
IN_PLACE = mw.Capabilities(mid_conversation_system=True)


def said(text: str) -> mw.AssistantMessage:
    return mw.AssistantMessage(content=[mw.TextContent(text=text)], api="", provider="",
                               model="", stop_reason="stop")  # fmt: skip


CTX = mw.Context(
    system_prompt="A.",
    messages=[
        mw.UserMessage(content="q"),
        mw.SystemMessage(content="B."),
        said("a"),
        mw.UserMessage(content="q2"),
        mw.SystemMessage(content="C."),
    ],
)


@pytest.fixture(scope="module")
def backend() -> Iterator[MockServer]:
    with MockServer(["ok"], repeat_last=True) as server:
        yield server


def body_for(backend: MockServer, model: mw.Model, ctx: mw.Context = CTX) -> Any:
    answer = mw.complete_sync(model, ctx, api_key="sk-test-1234567")
    assert answer.stop_reason == "stop", answer.error
    return backend.last_request.json()


def test_the_value_and_its_json() -> None:
    assert CTX.system_text == "A.\n\nB.\n\nC."
    assert mw.from_json(mw.to_json(CTX), mw.Context) == CTX
    assert mw.Context(messages=[mw.SystemMessage(content="B.")]).system_text == "B."
    with pytest.raises(ConfigurationError, match=r"SystemMessage\.content"):
        mw.SystemMessage(content="")


@pytest.mark.parametrize("api", builtin_api_names())
def test_a_model_without_them_gets_their_text_in_its_system_prompt(
    api: str, backend: MockServer
) -> None:
    raw = msgspec.json.encode(body_for(backend, backend.model(api)))
    assert raw.count(b"B.") == 1 and raw.count(b"C.") == 1
    assert b"A.\\n\\nB.\\n\\nC." in raw  # one system prompt, in order
    assert b'"role":"system","content":"B.' not in raw


def test_chat_and_responses_send_them_in_place_with_the_system_role(
    backend: MockServer,
) -> None:
    chat = msgspec.structs.replace(backend.model("openai-chat"), capabilities=IN_PLACE)
    got = body_for(backend, chat)["messages"]
    assert [(m["role"], m["content"]) for m in got if m["role"] == "system"] == [
        ("system", "A."), ("system", "B."), ("system", "C.")
    ]  # fmt: skip
    assert [m["role"] for m in got] == ["system", "user", "system", "assistant", "user", "system"]
    responses = msgspec.structs.replace(backend.model("openai-responses"), capabilities=IN_PLACE)
    body = body_for(backend, responses)
    assert body["instructions"] == "A."
    roles = [(i.get("role"), i.get("content")) for i in body["input"]]
    assert ("developer", "B.") in roles and roles[-1] == ("developer", "C.")


def test_the_catalog_says_openai_and_opus_4_8_take_them(backend: MockServer) -> None:
    openai = msgspec.structs.replace(backend.model("openai-chat"), provider="openai")
    assert [m["content"] for m in body_for(backend, openai)["messages"]][-1] == "C."
    opus = msgspec.structs.replace(
        backend.model("anthropic-messages"), provider="anthropic", id="claude-opus-4-8"
    )
    got = body_for(backend, opus)
    assert got["messages"][1] == {"role": "system", "content": [{"type": "text", "text": "B."}]}
    sonnet = msgspec.structs.replace(opus, id="claude-sonnet-4-5")
    assert "B." in str(body_for(backend, sonnet)["system"])


def anthropic_in_place(backend: MockServer) -> mw.Model:
    return msgspec.structs.replace(backend.model("anthropic-messages"), capabilities=IN_PLACE)


def test_anthropic_keeps_each_one_where_the_placement_rules_allow(backend: MockServer) -> None:
    got = body_for(
        backend, anthropic_in_place(backend), msgspec.structs.replace(CTX, system_prompt=None)
    )
    assert [m["role"] for m in got["messages"]] == ["user", "system", "assistant", "user", "system"]
    assert "system" not in got


def test_anthropic_moves_one_the_rules_refuse_to_the_system_prompt(backend: MockServer) -> None:
    # After an assistant turn, and between two user turns: neither may stand there.
    ctx = mw.Context(
        system_prompt="A.",
        messages=[
            mw.UserMessage(content="q"), said("a"), mw.SystemMessage(content="X."),
            mw.UserMessage(content="q2"), mw.SystemMessage(content="Y."), mw.SystemMessage(content="Z."),
            mw.UserMessage(content="q3"),
        ],
    )  # fmt: skip
    got = body_for(backend, anthropic_in_place(backend), ctx)
    assert [m["role"] for m in got["messages"]] == ["user", "assistant", "user"]
    texts = [b["text"] for b in got["messages"][2]["content"]]
    assert texts == ["q2", "q3"]  # the user turns it stood between, merged again
    system = got["system"] if isinstance(got["system"], str) else got["system"][0]["text"]
    assert system == "A.\n\nX.\n\nY.\n\nZ."


def test_consecutive_ones_are_one_anthropic_system_message(backend: MockServer) -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content="q"), mw.SystemMessage(content="Y."),
                               mw.SystemMessage(content="Z.")])  # fmt: skip
    got = body_for(backend, anthropic_in_place(backend), ctx)["messages"]
    assert got[1] == {"role": "system", "content": [{"type": "text", "text": "Y."},
                                                    {"type": "text", "text": "Z."}]}  # fmt: skip


def test_the_agent_takes_them_in_its_transcript(backend: MockServer) -> None:
    agent = mw.Agent(backend.model("openai-chat"), messages=list(CTX.messages))
    run = agent.run_sync("and now?")
    assert run.final.text == "ok"
    assert "B." in str(backend.last_request.json()["messages"][0]["content"])


# --------------------------------------------------------------------------- the gateway


@pytest.fixture(scope="module")
def gateway(backend: MockServer) -> Iterator[GatewayServer]:
    models: dict[str, Any] = {}
    for api in ("anthropic-messages", "openai-chat", "google-generative-ai"):
        base = {"api": api, "id": f"mock-{api}", "base_url": backend.model(api).base_url}
        models[api] = base
        models[f"{api}-in-place"] = {**base, "mid_conversation_system": True}
    cfg = {"models": models, "keys": {"team": {"key_sha256": hash_key(KEY), "models": ["*"]}}}
    with GatewayServer(cfg) as gw:
        yield gw


CLAUDE_CODE = {
    "max_tokens": 64,
    "system": [{"type": "text", "text": "You are a coding agent."}],
    "messages": [
        {"role": "user", "content": "What files are here?"},
        {"role": "system", "content": "The user is on branch main."},
    ],
}


def send(gateway: GatewayServer, model: str) -> Any:
    headers = {"x-api-key": KEY, "anthropic-beta": "mid-conversation-system-2026-04-07"}
    answer = httpx.post(gateway.base_url + "/v1/messages", json={**CLAUDE_CODE, "model": model},
                        headers=headers, timeout=30)  # fmt: skip
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_gateway_passes_them_in_place_to_a_backend_that_takes_them(
    backend: MockServer, gateway: GatewayServer
) -> None:
    send(gateway, "anthropic-messages-in-place")
    got = backend.last_request.json()
    assert got["messages"][-1] == {
        "role": "system", "content": [{"type": "text", "text": "The user is on branch main."}]
    }  # fmt: skip
    assert "branch main" not in str(got["system"])
    send(gateway, "openai-chat-in-place")
    roles = [m["role"] for m in backend.last_request.json()["messages"]]
    assert roles == ["system", "user", "system"]


@pytest.mark.parametrize("model", ["anthropic-messages", "openai-chat", "google-generative-ai"])
def test_the_gateway_puts_them_in_the_system_prompt_of_any_other(
    model: str, backend: MockServer, gateway: GatewayServer
) -> None:
    send(gateway, model)
    raw = backend.last_request.body
    assert b"You are a coding agent.\\n\\nThe user is on branch main." in raw
    assert raw.count(b"branch main") == 1
