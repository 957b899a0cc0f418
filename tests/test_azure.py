"""Azure OpenAI (provider ``azure-openai``) on ``openai-chat`` and ``openai-responses``,
end to end: URL forms, auth (api-key, Entra ID bearer through the authorizer hook),
the content filter, stream / complete / sync twins, replay, the agent, the CLI against
the mock server, trace, the catalog and handoff.

The streams under tests/data/azure/ are written by hand after Azure OpenAI's REST
reference and content-filtering docs (learn.microsoft.com/azure/ai-foundry/openai/
reference, .../concepts/content-filter) and the shape of Azure streams recorded in
public SDK test suites: a first chunk with empty ``choices`` carrying
``prompt_filter_results``, ``content_filter_results`` on every choice, and a
``finish_reason: "content_filter"`` when the filter stops the completion.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import modelwire as mw
from eventlist import final, plain, same_at_every_split
from modelwire import _providers as providers
from modelwire._apis import get_api
from modelwire._client._options import resolve_options
from modelwire._providers import (
    apply_provider_rules,
    provider_module,
    provider_rules,
    register_provider,
)
from modelwire._providers.azure_openai import AzureOpenAIRules
from modelwire._wire.request import HTTPRequest, RequestOptions
from modelwire.cloud.azure import AzureAuth
from modelwire.testing import MockServer, RecordedRequest, Reply, tool_call
from modelwire.trace import TraceLog

PROVIDER = "azure-openai"
CHAT, RESPONSES = "openai-chat", "openai-responses"
DATA = Path(__file__).parent / "data" / "azure"
TEXT = (DATA / "chat-text.sse").read_bytes()
FILTERED = (DATA / "chat-filtered.sse").read_bytes()
TOOLS = (DATA / "chat-tools.sse").read_bytes()
CTX = mw.Context(messages=[mw.UserMessage(content="hi")])
KEY = "azure-KEY-5f0c9d1e77ab"
TOKEN = "eyJ0eXAi.entra-TOKEN-81aa"
VERSION = "2024-10-21"

# Azure's answer to a filtered prompt (the content-filtering docs, "Scenario details").
PROMPT_FILTERED = json.dumps(
    {
        "error": {
            "message": "The response was filtered due to the prompt triggering Azure "
            "OpenAI's content management policy.",
            "type": None,
            "param": "prompt",
            "code": "content_filter",
            "status": 400,
            "innererror": {
                "code": "ResponsibleAIPolicyViolation",
                "content_filter_result": {
                    "hate": {"filtered": False, "severity": "safe"},
                    "jailbreak": {"filtered": True, "detected": True},
                    "self_harm": {"filtered": False, "severity": "safe"},
                    "sexual": {"filtered": False, "severity": "safe"},
                    "violence": {"filtered": True, "severity": "high"},
                },
            },
        }
    }
).encode()


@pytest.fixture
def clean_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(providers, "_providers", dict(providers._providers))
    yield


def azure(base_url: str, api: str = CHAT, model_id: str = "my-gpt") -> mw.Model:
    return mw.Model(id=model_id, api=api, provider=PROVIDER, base_url=base_url)


def prepared(model: mw.Model, ctx: mw.Context, options: RequestOptions) -> HTTPRequest:
    """The request as the client sends it: the API's, with the provider rules applied."""
    return apply_provider_rules(
        model, options, get_api(model.api).build_request(model, ctx, options)
    )


def request(model: mw.Model, **opts: Any) -> tuple[str, dict[str, str]]:
    req = prepared(model, CTX, resolve_options(PROVIDER, **opts))
    return req.url, {k.lower(): v for k, v in req.headers.items()}


# --------------------------------------------------------------------------- registration


def test_the_rules_are_found_by_name_and_imported_only_when_used() -> None:
    assert provider_module(PROVIDER) == "modelwire._providers.azure_openai"
    assert isinstance(provider_rules(PROVIDER), AzureOpenAIRules)
    assert provider_rules("no-such-provider") is None
    code = (
        "import sys, modelwire as mw\n"
        "assert 'modelwire._providers.azure_openai' not in sys.modules\n"
        "assert 'modelwire.cloud.azure' not in sys.modules\n"
        "m = mw.Model(id='d', api='openai-chat', provider='azure-openai',"
        " base_url='https://r.openai.azure.com')\n"
        "mw.stream_sync(m, mw.Context(messages=[mw.UserMessage(content='x')]), api_key='k')\n"
        "assert 'modelwire._providers.azure_openai' in sys.modules\n"
        "assert 'azure.identity' not in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------------------- URLs


@pytest.mark.parametrize(
    ("base_url", "api", "env", "url"),
    [
        (
            "https://r.openai.azure.com",
            CHAT,
            {},
            "https://r.openai.azure.com/openai/v1/chat/completions",
        ),
        (
            "https://r.openai.azure.com/",
            RESPONSES,
            {},
            "https://r.openai.azure.com/openai/v1/responses",
        ),
        (
            f"https://r.openai.azure.com?api-version={VERSION}",
            CHAT,
            {},
            f"https://r.openai.azure.com/openai/deployments/my-gpt/chat/completions?api-version={VERSION}",
        ),
        (
            "https://r.openai.azure.com",
            CHAT,
            {"OPENAI_API_VERSION": "2025-04-01-preview"},
            "https://r.openai.azure.com/openai/deployments/my-gpt/chat/completions"
            "?api-version=2025-04-01-preview",
        ),
        (
            "https://r.openai.azure.com",
            RESPONSES,
            {"OPENAI_API_VERSION": "2025-04-01-preview"},
            "https://r.openai.azure.com/openai/responses?api-version=2025-04-01-preview",
        ),
        (
            "https://r.openai.azure.com?api-version=preview",
            RESPONSES,
            {},
            "https://r.openai.azure.com/openai/v1/responses?api-version=preview",
        ),
        (  # the catalog's placeholder means AZURE_OPENAI_ENDPOINT
            "https://YOUR-RESOURCE.openai.azure.com/openai/v1",
            CHAT,
            {"AZURE_OPENAI_ENDPOINT": "https://mine.openai.azure.com"},
            "https://mine.openai.azure.com/openai/v1/chat/completions",
        ),
    ],
)
def test_url_forms(
    base_url: str, api: str, env: dict[str, str], url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    got, headers = request(azure(base_url, api), api_key=KEY)
    assert got == url
    assert headers["api-key"] == KEY and "authorization" not in headers


def test_the_body_names_the_deployment() -> None:
    model = azure("https://r.openai.azure.com", model_id="prod-gpt4o")
    req = prepared(model, CTX, resolve_options(PROVIDER, api_key=KEY))
    assert json.loads(req.body)["model"] == "prod-gpt4o"  # the /openai/v1 form reads it
    assert KEY.encode() not in req.body


@pytest.mark.parametrize(
    ("base_url", "env", "says"),
    [
        ("https://YOUR-RESOURCE.openai.azure.com/openai/v1", {}, "AZURE_OPENAI_ENDPOINT"),
        ("https://r.openai.azure.com?api-version=latest", {}, "neither a dated"),
        ("https://r.openai.azure.com", {"OPENAI_API_VERSION": "yesterday"}, "neither a dated"),
        ("https://r.openai.azure.com?x=1", {}, "query or fragment"),
    ],
)
def test_bad_configuration_raises_at_stream_before_any_request(
    base_url: str, env: dict[str, str], says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(mw.ConfigurationError, match=says):
        mw.stream(azure(base_url), CTX, api_key=KEY)


def test_an_api_azure_does_not_serve_is_refused() -> None:
    model = azure("https://r.openai.azure.com", api="anthropic-messages")
    with pytest.raises(mw.ConfigurationError, match="not 'anthropic-messages'"):
        mw.stream(model, CTX, api_key=KEY)


# --------------------------------------------------------------------------- auth


def test_key_from_the_environment_goes_in_the_api_key_header(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", TOKEN)  # a key given wins
    with MockServer(["keyed"]) as srv:
        msg = mw.complete_sync(azure(srv.origin), CTX)
    assert msg.text == "keyed"
    headers = srv.requests[0].headers
    assert headers["api-key"] == KEY and "authorization" not in headers


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_an_entra_token_from_the_environment_is_a_bearer_and_a_secret(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", TOKEN)
    echo = json.dumps({"error": {"message": f"token {TOKEN} expired", "code": "401"}})
    replies = [
        "with a token",
        Reply(status=401, body=echo.encode(), content_type="application/json"),
    ]
    log = TraceLog()
    with MockServer(replies) as srv:
        model = azure(srv.origin)
        if mode == "async":
            ok = asyncio.run(mw.complete(model, CTX))
            bad = asyncio.run(mw.complete(model, CTX, trace=log))
        else:
            ok = mw.complete_sync(model, CTX)
            bad = mw.complete_sync(model, CTX, trace=log)
    assert ok.text == "with a token"
    assert srv.requests[0].headers["authorization"] == f"Bearer {TOKEN}"
    assert "api-key" not in srv.requests[0].headers
    assert bad.error is not None and bad.error.kind == "authentication"
    assert TOKEN not in bad.error.message and "[redacted]" in bad.error.message
    assert TOKEN not in repr(bad) and TOKEN not in mw.to_json(bad).decode()
    assert TOKEN not in json.dumps([r.to_dict() for r in log.records], default=str)


def test_no_credentials_raise_missing_api_key_before_any_request() -> None:
    with MockServer(["never"]) as srv:
        with pytest.raises(mw.MissingAPIKeyError, match="AZURE_OPENAI_API_KEY") as info:
            mw.stream(azure(srv.origin), CTX)
        assert not srv.requests
    assert "AZURE_OPENAI_AD_TOKEN" in str(info.value)
    assert info.value.env_var == "AZURE_OPENAI_API_KEY"


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_registered_rules_with_an_azure_auth_fetch_a_token_per_request(
    mode: str, clean_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)  # ignored: the AzureAuth supplies auth
    calls: list[int] = []

    def provider() -> str:
        calls.append(1)
        return f"{TOKEN}-{len(calls)}"

    register_provider(PROVIDER, AzureOpenAIRules(auth=AzureAuth(token_provider=provider)))
    with MockServer(["one", "two"]) as srv:
        model = azure(srv.origin, RESPONSES)
        for _ in range(2):
            msg = (
                asyncio.run(mw.complete(model, CTX))
                if mode == "async"
                else mw.complete_sync(model, CTX)
            )
            assert msg.error is None
    sent = [r.headers["authorization"] for r in srv.requests]
    assert sent == [f"Bearer {TOKEN}-1", f"Bearer {TOKEN}-2"]
    assert all("api-key" not in r.headers for r in srv.requests)
    assert srv.requests[0].path == "/openai/v1/responses"


def test_a_failing_credential_ends_the_stream_authentication_nothing_sent(
    clean_registry: None,
) -> None:
    def broken() -> str:
        raise RuntimeError("managed identity endpoint unreachable")

    register_provider(PROVIDER, AzureOpenAIRules(auth=AzureAuth(token_provider=broken)))
    with MockServer(["never"]) as srv:
        msg = mw.complete_sync(azure(srv.origin), CTX)
    assert not srv.requests
    assert msg.error is not None and msg.error.kind == "authentication"
    assert "managed identity endpoint unreachable" in msg.error.message


# --------------------------------------------------------------------------- content filter


def test_an_azure_stream_with_filter_results_decodes_whole() -> None:
    events = mw.replay(CHAT, TEXT, azure("https://r.openai.azure.com"))
    msg = final(events)
    assert (events[-1].type, msg.stop_reason, msg.error) == ("done", "stop", None)
    assert msg.text == "Hello from Azure, 你好"
    assert msg.response_id == "chatcmpl-AZ1"  # not the first chunk's empty id
    assert (msg.usage.input, msg.usage.output) == (12, 7)


@pytest.mark.parametrize("body", [TEXT, FILTERED, TOOLS], ids=["text", "filtered", "tools"])
def test_byte_by_byte_and_every_split_give_the_same_events(body: bytes) -> None:
    same_at_every_split(CHAT, body)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_random_splits_give_the_same_events(data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(1, len(FILTERED) - 1), max_size=8)))
    pieces = [FILTERED[a:b] for a, b in zip([0, *cuts], [*cuts, len(FILTERED)], strict=True)]
    assert plain(mw.replay(CHAT, pieces)) == plain(mw.replay(CHAT, FILTERED))


def test_a_filtered_completion_is_content_filter_naming_the_category_content_kept() -> None:
    msg = final(mw.replay(CHAT, FILTERED))
    assert msg.stop_reason == "error" and msg.provider_stop_reason == "content_filter"
    assert msg.error is not None and msg.error.kind == "content_filter"
    assert "filtered: violence (medium)" in msg.error.message
    assert "hate" not in msg.error.message  # only what was filtered
    assert msg.text == "The fight"
    with pytest.raises(mw.errors.ContentFilterError):
        msg.raise_for_error()


def _finish_with(results: object) -> bytes:
    choice = {"index": 0, "delta": {"content": "x"}, "finish_reason": "content_filter",
              "content_filter_results": results}  # fmt: skip
    return (
        b"data: " + json.dumps({"id": "c", "choices": [choice]}).encode() + b"\n\ndata: [DONE]\n\n"
    )


@pytest.mark.parametrize(
    ("results", "says"),
    [
        (
            {
                "custom_blocklists": {
                    "filtered": True,
                    "details": [{"filtered": True, "id": "b1"}],
                },
                "protected_material_text": {"filtered": True, "detected": True},
            },
            "filtered: custom_blocklists, protected_material_text",
        ),
        # What the filter could not judge, or a shape it does not document: no category
        # named, still content_filter (the finish reason says so).
        ({"error": {"code": "content_filter_error", "message": "timeout"}}, None),
        ("not an object", None),
        ([{"filtered": True}], None),
    ],
)
def test_filter_result_shapes(results: object, says: str | None) -> None:
    msg = final(mw.replay(CHAT, _finish_with(results)))
    assert msg.error is not None and msg.error.kind == "content_filter"
    assert msg.text == "x"
    if says is None:
        assert "filtered:" not in msg.error.message
    else:
        assert says in msg.error.message


def test_an_in_band_chat_error_with_the_filter_code_is_content_filter() -> None:
    body = (
        TEXT.split(b"\n\n")[2]
        + b"\n\n"
        + (b'data: {"error":{"message":"The response was filtered","code":"content_filter"}}\n\n')
    )
    msg = final(mw.replay(CHAT, body))
    assert msg.error is not None and msg.error.kind == "content_filter"
    assert msg.text == "Hello"  # what came before is kept


@pytest.mark.parametrize("api", [CHAT, RESPONSES])
def test_a_filtered_prompt_is_content_filter_not_invalid_request(api: str) -> None:
    reply = Reply(status=400, body=PROMPT_FILTERED, content_type="application/json")
    with MockServer([reply]) as srv:
        msg = mw.complete_sync(azure(srv.origin, api), CTX, api_key=KEY, max_retries=0)
    assert msg.error is not None and msg.error.kind == "content_filter", msg.error
    assert msg.error.status == 400
    assert "filtered: jailbreak, violence (high)" in msg.error.message
    assert len(srv.requests) == 1  # a refusal is not retried


def test_a_400_without_the_filter_code_stays_invalid_request() -> None:
    body = json.dumps({"error": {"message": "bad param", "code": "invalid_value"}}).encode()
    with MockServer([Reply(status=400, body=body, content_type="application/json")]) as srv:
        msg = mw.complete_sync(azure(srv.origin), CTX, api_key=KEY)
    assert msg.error is not None and msg.error.kind == "invalid_request"


def test_a_responses_error_event_with_the_filter_code_is_content_filter() -> None:
    body = (
        b'event: response.created\ndata: {"type":"response.created","sequence_number":0,'
        b'"response":{"id":"resp_1","status":"in_progress","output":[]}}\n\n'
        b'event: error\ndata: {"type":"error","code":"content_filter","message":'
        b'"The response was filtered","param":null,"sequence_number":1}\n\n'
    )
    msg = final(mw.replay(RESPONSES, body))
    assert msg.error is not None and msg.error.kind == "content_filter"


# --------------------------------------------------------------------------- end to end


@pytest.mark.parametrize("api", [CHAT, RESPONSES])
@pytest.mark.anyio
async def test_stream_and_complete_async_and_sync_over_loopback(api: str) -> None:
    with MockServer(["Hello from Azure"] * 4) as srv:
        model = azure(srv.origin + f"?api-version={VERSION}", api)
        events = [e async for e in mw.stream(model, CTX, api_key=KEY)]
        sync_events = list(mw.stream_sync(model, CTX, api_key=KEY))
        done = await mw.complete(model, CTX, api_key=KEY)
        sync_done = mw.complete_sync(model, CTX, api_key=KEY)
    assert [e.type for e in events] == [e.type for e in sync_events]
    assert events[-1].type == "done"
    for msg in (final(events), final(sync_events), done, sync_done):
        assert msg.text == "Hello from Azure" and msg.provider == PROVIDER
    want = (
        f"/openai/deployments/my-gpt/chat/completions?api-version={VERSION}"
        if api == CHAT
        else f"/openai/responses?api-version={VERSION}"
    )
    assert {r.path for r in srv.requests} == {want}
    assert all(r.headers["api-key"] == KEY for r in srv.requests)


@pytest.mark.parametrize("api", [CHAT, RESPONSES])
@pytest.mark.anyio
async def test_agent_reads_a_file_through_azure(api: str, tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# modelwire\nhello\n")

    def answer(rec: RecordedRequest) -> str:
        sent = json.dumps(rec.json())
        return "The title is " + ("modelwire" if "# modelwire" in sent else "?")

    replies = [["Reading.", tool_call("read", {"path": "README.md"})], answer]
    with MockServer(replies) as srv:
        agent = mw.Agent(azure(srv.origin, api), tools=mw.tools.read_only(tmp_path), api_key=KEY)
        run = await agent.run("读取 README.md")
    assert run.final.text == "The title is modelwire"
    assert [m.role for m in run.messages] == ["user", "assistant", "tool_result", "assistant"]
    assert all(r.headers["api-key"] == KEY for r in srv.requests)
    assert all(r.path.startswith("/openai/v1/") for r in srv.requests)


def test_trace_records_every_layer_of_an_azure_stream() -> None:
    records: list[Any] = []
    events = mw.replay(CHAT, [TEXT[:100], TEXT[100:]], trace=records.append)
    assert plain(events) == plain(mw.replay(CHAT, TEXT))
    assert {"read", "sse", "delta", "event", "message"} <= {r.layer for r in records}


def test_catalog_entries_are_priced_and_reach_the_endpoint_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = {m.id for m in mw.models(PROVIDER)}
    assert {"gpt-4.1", "gpt-4o", "o4-mini"} <= names
    model = mw.get_model(PROVIDER, "gpt-4.1")
    assert (model.cost.input, model.cost.output) == (2.0, 8.0)
    msg = final(mw.replay(CHAT, TEXT, model))
    assert msg.usage.cost.total == pytest.approx((12 * 2.0 + 7 * 8.0) / 1e6)
    with MockServer(["priced"]) as srv:
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", srv.origin)
        done = mw.complete_sync(model, CTX, api_key=KEY)
    assert done.text == "priced" and done.model == "gpt-4.1"
    assert srv.requests[0].path == "/openai/v1/chat/completions"
    assert srv.requests[0].json()["model"] == "gpt-4.1"


def test_handoff_from_azure_to_anthropic_and_back() -> None:
    from modelwire._client._handoffs import handoff

    model = azure("https://r.openai.azure.com")
    turn = final(mw.replay(CHAT, TOOLS, model))
    assert turn.stop_reason == "tool_use"
    call = turn.content[0]
    assert isinstance(call, mw.ToolCall) and call.arguments == {"path": "README.md"}
    result = mw.ToolResultMessage(tool_call_id=call.id, tool_name="read",
                                  content=[mw.TextContent(text="# modelwire")])  # fmt: skip
    ctx = mw.Context(messages=[CTX.messages[0], turn, result])
    claude = mw.Model(id="claude-x", api="anthropic-messages", provider="anthropic",
                      base_url="https://api.anthropic.com/v1")  # fmt: skip
    moved = handoff(ctx, claude)
    assert moved.messages[2].tool_call_id == call.id  # type: ignore[union-attr]
    # Back from Anthropic: its ids fit; the Azure request carries them as sent.
    claude_turn = mw.AssistantMessage(
        content=[mw.ToolCall(id="toolu_01A" + "x" * 50, name="read", arguments={"path": "a"})],
        api="anthropic-messages", provider="anthropic", model="claude-x", stop_reason="tool_use",
    )  # fmt: skip
    back = mw.Context(messages=[CTX.messages[0], claude_turn, mw.ToolResultMessage(
        tool_call_id="toolu_01A" + "x" * 50, tool_name="read",
        content=[mw.TextContent(text="A")])])  # fmt: skip
    moved_back = handoff(back, model)
    new_id = moved_back.messages[1].content[0].id  # type: ignore[union-attr]
    assert len(new_id) <= 40  # OpenAI Chat's id rule, through the Azure provider
    req = prepared(model, moved_back, resolve_options(PROVIDER, api_key=KEY))
    body = json.loads(req.body)
    assert body["messages"][-1]["tool_call_id"] == new_id


# --------------------------------------------------------------------------- CLI


def cli(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "modelwire", *args], capture_output=True,
                          text=True, encoding="utf-8", timeout=90,
                          env={**os.environ, **(env or {})})  # fmt: skip


@pytest.mark.parametrize("api", [CHAT, RESPONSES])
def test_cli_chat_with_a_deployment_against_the_mock_server(api: str) -> None:
    with MockServer(["Bonjour from Azure"]) as srv:
        proc = cli("chat", "-m", f"{PROVIDER}/my-deployment", "--base-url", srv.origin,
                   "--api", api, "--plain", "hi",
                   env={"AZURE_OPENAI_API_KEY": KEY, "OPENAI_API_VERSION": VERSION})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Bonjour from Azure" in proc.stdout
    assert KEY not in proc.stdout + proc.stderr
    want = (
        "/openai/deployments/my-deployment/chat/completions" if api == CHAT else "/openai/responses"
    )
    assert srv.requests[0].path == f"{want}?api-version={VERSION}"
    assert srv.requests[0].headers["api-key"] == KEY


def test_cli_trace_of_a_live_call_shows_the_azure_request_key_redacted() -> None:
    with MockServer(["traced"]) as srv:
        proc = cli("trace", "-m", f"{PROVIDER}/my-deployment", "--base-url", srv.origin,
                   "--json", "hi", env={"AZURE_OPENAI_API_KEY": KEY})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(x) for x in proc.stdout.splitlines()]
    assert {"request", "sse", "delta", "event", "message"} <= {r["layer"] for r in records}
    assert "/openai/v1/chat/completions" in proc.stdout
    assert KEY not in proc.stdout + proc.stderr and "[redacted]" in proc.stdout


def test_cli_without_credentials_names_the_variables() -> None:
    with MockServer(["never"]) as srv:
        proc = cli("chat", "-m", f"{PROVIDER}/d", "--base-url", srv.origin, "--plain", "hi")
    assert proc.returncode != 0 and not srv.requests
    assert "AZURE_OPENAI_API_KEY" in proc.stderr and "Traceback" not in proc.stderr


def test_the_mock_server_command_speaks_azure_paths(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["from the command"]), encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "modelwire", "mock-server", "--json", "--script", str(script)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8",
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
        origin = first["origin"]
        msg = mw.complete_sync(azure(origin + f"?api-version={VERSION}"), CTX, api_key=KEY)
        assert (msg.error, msg.text) == (None, "from the command")
        seen = json.loads(proc.stdout.readline())
        assert seen["path"] == f"/openai/deployments/my-gpt/chat/completions?api-version={VERSION}"
        assert KEY not in json.dumps(seen)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)  # also closes the pipes
