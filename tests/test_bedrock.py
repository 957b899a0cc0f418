"""Amazon Bedrock's Converse stream (``bedrock-converse``) and provider ``amazon-bedrock``.

The streams are synthetic, built here with ``modelwire._wire.framing.eventstream``'s encoder in
the shapes the ConverseStream API reference documents (``messageStart``,
``contentBlockStart/Delta/Stop``, ``messageStop``, ``metadata``, exception messages).
Transport tests run over loopback: ``MockServer`` and the fault matrix's raw socket
server (tests/test_faults.py). SigV4 is checked against AWS's published example and
by re-computing the signature over the request the server received.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import modelwire as mw
import modelwire._apis
from eventlist import final, plain, same_at_every_split
from modelwire._apis import api_for_path, get_api, get_server
from modelwire._client._options import resolve_options
from modelwire._providers import (
    ProviderRules,
    apply_provider_rules,
    provider_rules,
    register_provider,
)
from modelwire._wire.framing.eventstream import encode_event, encode_exception
from modelwire._wire.request import HTTPRequest, RequestOptions
from modelwire.testing import MockServer, RecordedRequest, Reply, tool_call
from modelwire.trace import TraceLog
from rawserver import KEY, TEXT, Plan, at, serving, streamed
from test_faults import (
    assert_no_key,
    fast_backoff,  # noqa: F401 - a fixture used by the matrix run below
    run,
)

API = "bedrock-converse"
PROVIDER = "amazon-bedrock"
CLAUDE = "anthropic.claude-haiku-4-5-20251001-v1:0"
CTX = mw.Context(messages=[mw.UserMessage(content="读取 README.md")])
_PARAMS = {"type": "object", "properties": {"path": {"type": "string"}}}
TOOLED = mw.Context(messages=CTX.messages, tools=[
    mw.ToolDefinition(name="read", description="Read a file", parameters=_PARAMS),
])  # fmt: skip
SIG = "EqQBCkYIARgCIkB8c2lnbmF0dXJl"


def ev(name: str, payload: Any) -> bytes:
    return encode_event(name, json.dumps(payload, ensure_ascii=False).encode())


def delta(i: int, body: dict[str, Any]) -> bytes:
    return ev("contentBlockDelta", {"contentBlockIndex": i, "delta": body, "p": "abcd"})


def tail(reason: str = "end_turn", **usage: int) -> bytes:
    counts = {"inputTokens": 12, "outputTokens": 30, "totalTokens": 50,
              "cacheReadInputTokens": 5, "cacheWriteInputTokens": 3, **usage}  # fmt: skip
    return ev("messageStop", {"stopReason": reason}) + ev(
        "metadata", {"usage": counts, "metrics": {"latencyMs": 321}}
    )


START = ev("messageStart", {"role": "assistant"})
FULL = b"".join([
    START,
    delta(0, {"reasoningContent": {"text": "Let me "}}),
    delta(0, {"reasoningContent": {"text": "think."}}),
    delta(0, {"reasoningContent": {"signature": SIG}}),
    ev("contentBlockStop", {"contentBlockIndex": 0}),
    delta(1, {"text": "读取 "}),
    delta(1, {"text": "README 🙂"}),
    ev("contentBlockStop", {"contentBlockIndex": 1}),
    ev("contentBlockStart", {"contentBlockIndex": 2,
                             "start": {"toolUse": {"toolUseId": "tooluse_ab-12", "name": "read"}}}),
    delta(2, {"toolUse": {"input": '{"path":'}}),
    delta(2, {"toolUse": {"input": ' "README.md"}'}}),
    ev("contentBlockStop", {"contentBlockIndex": 2}),
    tail("tool_use"),
])  # fmt: skip


def model(base_url: str = "http://127.0.0.1:9", model_id: str = CLAUDE, **kw: Any) -> mw.Model:
    return mw.Model(id=model_id, api=API, provider=PROVIDER, base_url=base_url,
                    max_tokens=kw.pop("max_tokens", 64000), **kw)  # fmt: skip


def prepared(m: mw.Model, ctx: mw.Context, options: RequestOptions) -> HTTPRequest:
    """The request as the client sends it: the API's, with the provider rules applied."""
    return apply_provider_rules(m, options, get_api(API).build_request(m, ctx, options))


def body_of(ctx: mw.Context, m: mw.Model | None = None, **opts: Any) -> dict[str, Any]:
    request = get_api(API).build_request(
        m or model(reasoning=True), ctx, resolve_options("test", api_key="k", **opts)
    )
    return json.loads(request.body)  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- decoding


def test_a_whole_stream_gives_thinking_text_a_tool_call_and_usage() -> None:
    events = mw.replay(API, FULL)
    msg = final(events)
    assert events[-1].type == "done" and msg.stop_reason == "tool_use"
    assert msg.provider_stop_reason == "tool_use" and msg.api == API
    thinking, text, call = msg.content
    assert isinstance(thinking, mw.ThinkingContent)
    assert (thinking.thinking, thinking.signature) == ("Let me think.", SIG)
    assert isinstance(text, mw.TextContent) and text.text == "读取 README 🙂"
    assert isinstance(call, mw.ToolCall) and (call.id, call.name) == ("tooluse_ab-12", "read")
    assert call.arguments == {"path": "README.md"}
    assert call.raw_arguments == '{"path": "README.md"}'  # the exact text sent
    u = msg.usage
    # inputTokens excludes the cache reads and writes (counted apart, as Anthropic does).
    assert (u.input, u.output, u.cache_read, u.cache_write, u.total_tokens) == (12, 30, 5, 3, 50)
    types = [e.type for e in events]
    assert types[:3] == ["start", "thinking_start", "thinking_delta"]
    assert types.count("tool_call_delta") == 2 and "tool_call_end" in types


def test_byte_by_byte_and_every_split_give_the_same_events() -> None:
    same_at_every_split(API, FULL)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_splits_give_the_same_events(data: st.DataObject) -> None:
    points = sorted(data.draw(st.sets(st.integers(1, len(FULL) - 1), max_size=40)))
    chunks = [FULL[a:b] for a, b in zip([0, *points], [*points, len(FULL)], strict=True)]
    assert plain(mw.replay(API, chunks)) == plain(mw.replay(API, FULL))


def test_redacted_reasoning_is_kept_whole() -> None:
    body = START + delta(0, {"reasoningContent": {"redactedContent": "ZW5jcnlwdGVk"}}) + ev(
        "contentBlockStop", {"contentBlockIndex": 0}) + delta(1, {"text": "ok"}) + tail()  # fmt: skip
    thinking, _ = final(mw.replay(API, body)).content
    assert isinstance(thinking, mw.ThinkingContent)
    assert thinking.redacted and thinking.signature == "ZW5jcnlwdGVk"


def test_unknown_events_and_fields_are_ignored() -> None:
    body = START + ev("someFutureEvent", {"x": 1}) + delta(0, {"text": "hi", "new": 2}) + delta(
        0, {"citation": {"title": "t"}}) + tail()  # fmt: skip
    msg = final(mw.replay(API, body))
    assert (msg.text, msg.stop_reason) == ("hi", "stop")


@pytest.mark.parametrize(
    ("reason", "stop", "kind"),
    [
        ("end_turn", "stop", None),
        ("stop_sequence", "stop", None),
        ("max_tokens", "length", None),
        ("tool_use", "tool_use", None),
        ("guardrail_intervened", "error", "content_filter"),
        ("content_filtered", "error", "content_filter"),
        ("model_context_window_exceeded", "error", "context_overflow"),
        ("a_future_reason", "stop", None),
    ],
)
def test_stop_reasons(reason: str, stop: str, kind: str | None) -> None:
    calls = b""
    if reason == "tool_use":
        calls = ev("contentBlockStart", {"contentBlockIndex": 1, "start": {
            "toolUse": {"toolUseId": "t1", "name": "read"}}}) + delta(1, {
            "toolUse": {"input": "{}"}}) + ev("contentBlockStop", {"contentBlockIndex": 1})  # fmt: skip
    msg = final(mw.replay(API, START + delta(0, {"text": "kept"}) + calls + tail(reason)))
    assert msg.stop_reason == stop and msg.provider_stop_reason == reason
    assert msg.text == "kept"
    assert (msg.error.kind if msg.error else None) == kind


def test_a_body_without_message_stop_is_truncated() -> None:
    msg = final(mw.replay(API, START + delta(0, {"text": "partial"})))
    assert msg.error is not None and msg.error.kind == "truncated_stream"
    assert "messageStop" in msg.error.message and msg.text == "partial"


def test_a_body_cut_mid_frame_is_truncated_and_a_bad_crc_is_malformed() -> None:
    good = START + delta(0, {"text": "kept"})
    cut = final(mw.replay(API, good + delta(0, {"text": "lost"})[:-7]))
    assert cut.error is not None and cut.error.kind == "truncated_stream" and cut.text == "kept"
    bad = bytearray(delta(0, {"text": "lost"}))
    bad[-1] ^= 0xFF  # the message CRC
    msg = final(mw.replay(API, good + bytes(bad) + tail()))
    assert msg.error is not None and msg.error.kind == "malformed_chunk"
    assert "CRC" in msg.error.message and msg.text == "kept"


@pytest.mark.parametrize(
    ("exception", "message", "kind"),
    [
        ("throttlingException", "Too many tokens, please wait before trying again.", "rate_limit"),
        ("serviceUnavailableException", "Bedrock is unable to process your request.",
         "overloaded"),
        ("internalServerException", "internal error", "server"),
        ("modelTimeoutException", "Model has timed out in processing the request.", "server"),
        ("validationException", "Malformed input request", "invalid_request"),
        ("validationException", "Input is too long for requested model.", "context_overflow"),
        ("accessDeniedException", "no access to the model", "permission"),
        ("modelStreamErrorException", "The model stopped unexpectedly", "provider_stream"),
        ("someNewException", "who knows", "provider_stream"),
    ],
)  # fmt: skip
def test_in_band_exceptions_are_typed_and_keep_the_content(
    exception: str, message: str, kind: str
) -> None:
    error = encode_exception(exception, json.dumps({"message": message}).encode())
    msg = final(mw.replay(API, START + delta(0, {"text": "so far"}) + error))
    assert msg.error is not None and msg.error.kind == kind
    assert message in msg.error.message and exception in msg.error.message
    assert msg.text == "so far" and msg.stop_reason == "error"


def test_an_event_stream_error_message_is_a_provider_stream_error() -> None:
    from modelwire._wire.framing.eventstream import encode_message

    error = encode_message({":message-type": "error", ":error-code": "InternalFailure",
                            ":error-message": "the stream failed"}, b"")  # fmt: skip
    msg = final(mw.replay(API, START + delta(0, {"text": "so far"}) + error))
    assert msg.error is not None and msg.error.kind == "provider_stream"
    assert "InternalFailure" in msg.error.message and "the stream failed" in msg.error.message
    assert msg.text == "so far"


@pytest.mark.parametrize(
    ("frame", "path"),
    [
        (ev("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": 5}}),
         "delta.text must be a string"),
        (ev("contentBlockDelta", {"contentBlockIndex": -1, "delta": {"text": "x"}}),
         "contentBlockIndex must be an integer >= 0"),
        (ev("contentBlockDelta", {"delta": {"text": "x"}}), "contentBlockIndex"),
        (ev("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": {}}}}),
         "delta.toolUse.input must be a string"),
        (ev("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {"name": "r"}}}),
         "start.toolUse"),
        (ev("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {
            "toolUseId": "", "name": "r"}}}), "start.toolUse.toolUseId"),
        (ev("messageStop", {"stopReason": None}), "stopReason must be a string"),
        (ev("metadata", {"usage": {"inputTokens": "12"}}), "usage.inputTokens must be an integer"),
        (encode_event("contentBlockDelta", b'{"contentBlockIndex": 0, "delta": {"text": "x'),
         "invalid JSON"),
    ],
)  # fmt: skip
def test_malformed_events_name_the_field(frame: bytes, path: str) -> None:
    msg = final(mw.replay(API, START + delta(0, {"text": "kept"}) + frame + tail()))
    assert msg.error is not None and msg.error.kind == "malformed_chunk"
    assert path in msg.error.message, msg.error.message
    assert msg.text == "kept"


def test_an_oversized_frame_is_event_too_large_before_it_is_buffered() -> None:
    big = delta(0, {"text": "x" * 5000})
    decoder = get_api(API).framing(1024)
    with pytest.raises(mw.errors.EventTooLargeError):
        decoder.feed(big[:12])  # the prelude alone says it is too large


# --------------------------------------------------------------------------- request


def test_the_request_body_follows_the_documented_format() -> None:
    m = model(reasoning=True)
    turn = mw.AssistantMessage(
        content=[mw.ThinkingContent(thinking="plan", signature=SIG),
                 mw.ThinkingContent(thinking="", signature="RED", redacted=True),
                 mw.TextContent(text="Reading."),
                 mw.ToolCall(id="tooluse_1", name="read", arguments={"path": "a"},
                             raw_arguments='{"path": "a"}')],
        api=API, provider=PROVIDER, model=CLAUDE, stop_reason="tool_use")  # fmt: skip
    ctx = mw.Context(
        system_prompt="回答要简洁。",
        messages=[
            mw.UserMessage(content=[mw.TextContent(text="look"),
                                    mw.ImageContent(data="iVBORw0KGgo=", mime_type="image/png")]),
            turn,
            mw.ToolResultMessage(tool_call_id="tooluse_1", tool_name="read",
                                 content=[mw.TextContent(text="A")]),
            mw.ToolResultMessage(tool_call_id="tooluse_2", tool_name="read",
                                 content=[mw.TextContent(text="no such file")], is_error=True),
            mw.UserMessage(content="and now?"),
        ],
        tools=TOOLED.tools,
    )  # fmt: skip
    before = mw.to_json(ctx)
    opts = resolve_options("test", api_key="k", max_tokens=4096, temperature=0.5,
                           tool_choice={"name": "read"})  # fmt: skip
    request = get_api(API).build_request(m, ctx, opts)
    assert mw.to_json(ctx) == before  # pure: the context is not changed
    assert request.url == ("http://127.0.0.1:9/model/anthropic.claude-haiku-4-5-20251001-v1%3A0"
                           "/converse-stream")  # fmt: skip
    assert request.headers["Accept"] == "application/vnd.amazon.eventstream"
    assert request.headers["Authorization"] == "Bearer k"
    assert json.loads(request.body) == {
        "messages": [
            {"role": "user", "content": [
                {"text": "look"},
                {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}}]},
            {"role": "assistant", "content": [
                {"reasoningContent": {"reasoningText": {"text": "plan", "signature": SIG}}},
                {"reasoningContent": {"redactedContent": "RED"}},
                {"text": "Reading."},
                {"toolUse": {"toolUseId": "tooluse_1", "name": "read", "input": {"path": "a"}}}]},
            # Roles alternate: the tool results and the next question share one user turn.
            {"role": "user", "content": [
                {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "A"}],
                                "status": "success"}},
                {"toolResult": {"toolUseId": "tooluse_2", "content": [{"text": "no such file"}],
                                "status": "error"}},
                {"text": "and now?"}]},
        ],
        "system": [{"text": "回答要简洁。"}],
        "inferenceConfig": {"maxTokens": 4096, "temperature": 0.5},
        "toolConfig": {
            "tools": [{"toolSpec": {"name": "read", "description": "Read a file",
                                    "inputSchema": {"json": _PARAMS}}}],
            "toolChoice": {"tool": {"name": "read"}},
        },
    }  # fmt: skip


def test_another_models_reasoning_and_failed_turns_are_not_sent() -> None:
    other = mw.AssistantMessage(content=[mw.ThinkingContent(thinking="t", signature=SIG),
                                         mw.TextContent(text="hello")],
                                api="anthropic-messages", provider="anthropic", model="claude",
                                stop_reason="stop")  # fmt: skip
    failed = mw.AssistantMessage(content=[mw.TextContent(text="half")], api=API,
                                 provider=PROVIDER, model=CLAUDE, stop_reason="error")  # fmt: skip
    ctx = mw.Context(messages=[CTX.messages[0], other, failed, mw.UserMessage(content="go")])
    assert body_of(ctx)["messages"][1] == {"role": "assistant", "content": [{"text": "hello"}]}
    assert len(body_of(ctx)["messages"]) == 3


@pytest.mark.parametrize(
    ("choice", "want"),
    [("auto", {"auto": {}}), ("required", {"any": {}}), (None, None)],
)
def test_tool_choice(choice: str | None, want: dict[str, Any] | None) -> None:
    config = body_of(TOOLED, tool_choice=choice)["toolConfig"]
    assert config.get("toolChoice") == want


def test_tool_choice_none_hides_the_tools_unless_the_history_uses_them() -> None:
    assert "toolConfig" not in body_of(TOOLED, tool_choice="none")
    turn = mw.AssistantMessage(content=[mw.ToolCall(id="t1", name="read", arguments={})],
                               api=API, provider=PROVIDER, model=CLAUDE, stop_reason="tool_use")  # fmt: skip
    used = TOOLED.with_messages(turn, mw.ToolResultMessage(tool_call_id="t1", tool_name="read",
                                                           content=[]))  # fmt: skip
    config = body_of(used, tool_choice="none")["toolConfig"]
    assert "toolChoice" not in config and config["tools"][0]["toolSpec"]["name"] == "read"
    # An empty result still carries one (empty) text block: Bedrock needs content.
    assert body_of(used)["messages"][-1]["content"][0]["toolResult"]["content"] == [{"text": ""}]


def test_reasoning_is_claude_thinking_with_room_for_the_answer() -> None:
    body = body_of(CTX, reasoning="medium")
    assert body["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 8192}
    }
    assert body["inferenceConfig"] == {"maxTokens": 64000}  # must exceed the budget
    small = body_of(CTX, reasoning="high", max_tokens=4096)
    assert small["additionalModelRequestFields"]["thinking"]["budget_tokens"] == 3072
    assert small["inferenceConfig"]["maxTokens"] == 4096


@pytest.mark.parametrize(
    ("m", "opts", "needle"),
    [
        (model(model_id="amazon.nova-pro-v1:0", reasoning=True), {"reasoning": "low"},
         "Claude models only"),
        (model(reasoning=True), {"reasoning": "low", "max_tokens": 1500}, "no room for thinking"),
        (model(), {"reasoning": "low"}, "does not support a reasoning level"),
        (model(), {"extra_body": {"messages": []}}, "may not override messages"),
        (model(), {"extra_body": {"inferenceConfig": {"maxTokens": 9}}}, "maxTokens"),
        (model(), {"extra_body": {"inferenceConfig": 3}}, "must be a dict"),
        (model(reasoning=True), {"reasoning": "low", "extra_body": {
            "additionalModelRequestFields": {"thinking": {}}}}, "use one or the other"),
        (model(compat={"nope": 1}), {}, "unknown bedrock-converse compat flag"),
        (model(), {"tool_choice": "required"}, "needs tools"),
    ],
)  # fmt: skip
def test_impossible_options_are_refused_before_any_request(
    m: mw.Model, opts: dict[str, Any], needle: str
) -> None:
    with pytest.raises(mw.errors.ConfigurationError, match=needle):
        body_of(CTX, m, **opts)


def test_an_image_type_bedrock_cannot_take_names_its_path() -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content=[mw.ImageContent(data="AA==",
                                                                       mime_type="image/bmp")])])  # fmt: skip
    with pytest.raises(mw.errors.ConfigurationError, match=r"messages\[0\]\.content\[0\]"):
        body_of(ctx)


def test_extra_body_merges_and_cache_points_are_placed() -> None:
    m = model(compat={"cache_points": True})
    ctx = mw.Context(system_prompt="sys", messages=CTX.messages, tools=TOOLED.tools)
    body = body_of(ctx, m, extra_body={"inferenceConfig": {"topP": 0.9},
                                       "additionalModelRequestFields": {"top_k": 5},
                                       "guardrailConfig": {"guardrailIdentifier": "g"}})  # fmt: skip
    point = {"cachePoint": {"type": "default"}}
    assert body["system"] == [{"text": "sys"}, point]
    assert body["toolConfig"]["tools"][-1] == point
    assert body["messages"][-1]["content"][-1] == point
    assert body["inferenceConfig"] == {"topP": 0.9}
    assert body["additionalModelRequestFields"] == {"top_k": 5}
    assert body["guardrailConfig"] == {"guardrailIdentifier": "g"}
    assert "cachePoint" not in json.dumps(body_of(ctx))  # off by default


def test_the_path_carries_the_encoded_model_id_and_the_mock_reads_it_back() -> None:
    api = get_api(API)
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-x-v1:0"
    path = api.path(arn)
    assert "/" not in path[len("/model/") : -len("/converse-stream")]
    assert api_for_path(path + "?x=1") == API and api_for_path("/v1/chat/completions") != API
    assert get_server(API).request_model(path, {}) == arn
    assert get_server(API).request_model("/api/chat", {}) is None


# --------------------------------------------------------------------------- provider


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """Hermetic AWS environment: no profile files, no instance metadata, no key."""
    for var in ("AWS_BEARER_TOKEN_BEDROCK", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE",
                "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return monkeypatch


SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRETKEYx"
TOKEN = "IQoJb3JpZ2luX2VjEXAMPLESESSIONTOKEN"


def _resign(rec: RecordedRequest, region: str) -> str:
    """The SigV4 signature of the request the server received, computed afresh."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    signed = rec.headers["authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
    headers = {h: rec.headers[h] for h in signed}
    req = AWSRequest(method="POST", url="http://" + rec.headers["host"] + rec.path,
                     headers=headers, data=rec.body)  # fmt: skip
    auth = SigV4Auth(Credentials("AKIDEXAMPLE", SECRET, TOKEN), "bedrock", region)
    req.context["timestamp"] = rec.headers["x-amz-date"]
    canonical = auth.canonical_request(req)
    return auth.signature(auth.string_to_sign(req, canonical), req)


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_sigv4_signs_the_exact_bytes_sent_and_its_secrets_never_show(
    mode: str, aws_env: pytest.MonkeyPatch
) -> None:
    aws_env.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    aws_env.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    aws_env.setenv("AWS_SESSION_TOKEN", TOKEN)
    aws_env.setenv("AWS_REGION", "eu-central-1")
    echo = json.dumps({"message": f"signature for {SECRET} / {TOKEN} rejected"}).encode()
    log = TraceLog()
    with MockServer(["signed 你好", Reply(status=403, body=echo, content_type="application/json",
                                          headers={"x-amzn-ErrorType": "AccessDeniedException"})]
                    ) as srv:  # fmt: skip
        m = model(srv.origin)
        if mode == "async":
            ok = asyncio.run(mw.complete(m, CTX))
            bad = asyncio.run(mw.complete(m, CTX, trace=log))
        else:
            ok = mw.complete_sync(m, CTX)
            bad = mw.complete_sync(m, CTX, trace=log)
        rec = srv.requests[0]
    assert ok.error is None and ok.text == "signed 你好"
    auth = rec.headers["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-central-1/bedrock/aws4_request" in auth  # the region from AWS_REGION
    assert rec.headers["x-amz-security-token"] == TOKEN
    assert auth.rpartition("Signature=")[2] == _resign(rec, "eu-central-1")
    assert bad.error is not None and bad.error.kind == "permission"
    signature = srv.requests[1].headers["authorization"].rpartition("Signature=")[2]
    dumped = json.dumps([r.to_dict() for r in log.records], default=str)
    for secret in (SECRET, TOKEN, signature):
        assert secret not in bad.error.message and secret not in repr(bad)
        assert secret not in dumped
    assert "[redacted]" in bad.error.message


def test_credentials_are_loaded_once_per_environment_not_per_call(
    aws_env: pytest.MonkeyPatch,
) -> None:
    from modelwire._providers import amazon_bedrock
    from modelwire.cloud import aws

    aws_env.setattr(amazon_bedrock, "_signers", {})
    real = aws._load_credentials
    loads: list[str | None] = []

    def counting(profile: str | None) -> Any:
        loads.append(os.environ["AWS_ACCESS_KEY_ID"])
        return real(profile)

    aws_env.setattr(aws, "_load_credentials", counting)
    aws_env.setenv("AWS_REGION", "us-east-1")
    aws_env.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    with MockServer(["a", "b", "c"]) as srv:
        for key_id in ("AKIDFIRST", "AKIDFIRST", "AKIDSECOND"):
            aws_env.setenv("AWS_ACCESS_KEY_ID", key_id)
            assert mw.complete_sync(model(srv.origin), CTX).error is None
        sent = [r.headers["authorization"].split("/")[0] for r in srv.requests]
    assert loads == ["AKIDFIRST", "AKIDSECOND"]  # the second call reused the first signer
    assert sent == [
        f"AWS4-HMAC-SHA256 Credential={k}" for k in ("AKIDFIRST",) * 2 + ("AKIDSECOND",)
    ]


def test_a_bedrock_api_key_is_a_bearer_token_and_no_signature(aws_env: pytest.MonkeyPatch) -> None:
    aws_env.setenv("AWS_BEARER_TOKEN_BEDROCK", KEY)
    echo = json.dumps({"message": f"The security token {KEY} is invalid"}).encode()
    with MockServer(["hi", Reply(status=401, body=echo, content_type="application/json")]) as srv:
        ok = mw.complete_sync(model(srv.origin), CTX)
        bad = mw.complete_sync(model(srv.origin), CTX)
        rec = srv.requests[0]
    assert ok.text == "hi" and rec.headers["authorization"] == f"Bearer {KEY}"
    assert "x-amz-date" not in rec.headers
    assert bad.error is not None and bad.error.kind == "authentication"
    assert_no_key(bad.error.message, repr(bad))


def test_missing_credentials_end_the_stream_typed_and_send_nothing(
    aws_env: pytest.MonkeyPatch,
) -> None:
    aws_env.setenv("AWS_REGION", "us-west-2")
    with MockServer(["never"]) as srv:
        msg = mw.complete_sync(model(srv.origin), CTX)
        amsg = asyncio.run(mw.complete(model(srv.origin), CTX))
        sent = len(srv.requests)
    assert sent == 0
    for m in (msg, amsg):
        assert m.error is not None and m.error.kind == "authentication"
        assert "AWS_BEARER_TOKEN_BEDROCK" in m.error.message  # says what to set


def test_no_region_is_a_caller_mistake_before_any_request(aws_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(mw.errors.ConfigurationError, match="AWS_REGION"):
        mw.stream(model("http://127.0.0.1:9"), CTX)
    with pytest.raises(mw.errors.ConfigurationError, match="AWS_REGION"):
        mw.stream(mw.get_model(PROVIDER, "amazon.nova-lite-v1:0"), CTX, api_key="k")


def test_without_botocore_sigv4_says_which_extra_to_install(
    aws_env: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    aws_env.setattr(importlib.util, "find_spec",
                    lambda name, *a: None if name == "botocore" else real(name, *a))  # fmt: skip
    aws_env.setenv("AWS_REGION", "us-east-1")
    with pytest.raises(mw.errors.ConfigurationError, match=r"modelwire\[bedrock\]"):
        mw.stream(model("http://127.0.0.1:9"), CTX)


def test_the_catalog_endpoint_takes_the_region_and_the_endpoint_names_the_signing_region(
    aws_env: pytest.MonkeyPatch,
) -> None:
    aws_env.setenv("AWS_REGION", "eu-central-1")
    m = mw.get_model(PROVIDER, "amazon.nova-lite-v1:0")
    assert m.base_url == "https://bedrock-runtime.{region}.amazonaws.com"
    options = resolve_options(PROVIDER, api_key=None)
    request = prepared(m, CTX, options)
    assert request.url == (
        "https://bedrock-runtime.eu-central-1.amazonaws.com/model/amazon.nova-lite-v1%3A0"
        "/converse-stream"
    )
    assert repr(request.authorizer) == "LazySigV4(region='eu-central-1')"
    # An explicit regional endpoint is used as it is and names the signing region.
    fixed = msgspec.structs.replace(m, base_url="https://bedrock-runtime.ap-south-1.amazonaws.com")
    request = prepared(fixed, CTX, options)
    assert request.url.startswith("https://bedrock-runtime.ap-south-1.amazonaws.com/model/")
    assert repr(request.authorizer) == "LazySigV4(region='ap-south-1')"


def test_sigv4_matches_the_published_aws_example(monkeypatch: pytest.MonkeyPatch) -> None:
    """AWS's worked example ("Create a signed AWS API request", IAM ListUsers,
    2015-08-30T12:36:00Z, AKIDEXAMPLE): the signature AWS publishes for it."""
    import botocore.auth
    from botocore.credentials import Credentials

    from modelwire.cloud.aws import SigV4Signer

    when = datetime.datetime(2015, 8, 30, 12, 36, tzinfo=datetime.UTC)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: when)
    creds = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    signer = SigV4Signer("us-east-1", service="iam", credentials=creds)
    headers, secrets = signer.authorize(
        "GET", "https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08",
        {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}, b"",
    )  # fmt: skip
    want = "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
    assert headers["Authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
        f"SignedHeaders=content-type;host;x-amz-date, Signature={want}"
    )
    assert headers["X-Amz-Date"] == "20150830T123600Z" and want in secrets


def test_provider_rules_are_found_by_module_name_and_loaded_lazily(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code = ("import sys, modelwire; assert 'modelwire._providers.amazon_bedrock' not in "
            "sys.modules; from modelwire._providers import provider_rules; "
            "r = provider_rules('amazon-bedrock'); assert type(r).__name__ == "
            "'AmazonBedrockRules'; assert 'botocore' not in sys.modules; "
            "assert provider_rules('no-such-provider') is None")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # register_provider wins over the built-in module.
    monkeypatch.setattr(modelwire._providers, "_providers", dict(modelwire._providers._providers))
    mine = type("Mine", (ProviderRules,), {})()
    register_provider(PROVIDER, mine)
    assert provider_rules(PROVIDER) is mine


# --------------------------------------------------------------------------- end to end


def test_the_mock_server_speaks_the_binary_framing_sync_and_async() -> None:
    script = [mw.ThinkingContent(thinking="hmm", signature=SIG), "读取中…",
              tool_call("read", {"path": "README.md"})]  # fmt: skip
    with MockServer([script, "second", "third"]) as srv:
        m = srv.model(API, CLAUDE)
        assert m.base_url == srv.origin  # the runtime endpoint's root
        first = mw.complete_sync(m, TOOLED, api_key="k")
        second = mw.complete_sync(m, TOOLED.with_messages(first), api_key="k")

        async def go() -> tuple[list[str], mw.AssistantMessage]:
            s = mw.stream(m, CTX, api_key="k")
            return [e.type async for e in s], await s.result()

        types, third = asyncio.run(go())
        recs = srv.requests
    assert first.stop_reason == "tool_use", first.error
    assert [type(b).__name__ for b in first.content] == ["ThinkingContent", "TextContent",
                                                         "ToolCall"]  # fmt: skip
    assert isinstance(first.content[0], mw.ThinkingContent)
    assert first.content[0].signature == SIG
    assert second.text == "second" and third.text == "third"
    assert types[0] == "start" and types[-1] == "done"
    rec = recs[0]
    assert rec.path == "/model/anthropic.claude-haiku-4-5-20251001-v1%3A0/converse-stream"
    assert rec.api == API and rec.model == CLAUDE
    assert rec.headers["accept"] == "application/vnd.amazon.eventstream"
    back = recs[1].json()["messages"]
    assert back[1]["content"][0] == {"reasoningContent": {"reasoningText": {
        "text": "hmm", "signature": SIG}}}  # fmt: skip
    assert back[2]["content"][0]["toolResult"]["status"] == "error"  # no tool was run


@pytest.mark.parametrize("delivery", [{"chunk_size": 1}, {"chunk_size": 7}, {"seed": 3}])
def test_split_deliveries_over_http_give_the_same_message(delivery: dict[str, Any]) -> None:
    with MockServer([Reply(body=FULL, **delivery)]) as srv:
        msg = mw.complete_sync(srv.model(API, CLAUDE), TOOLED, api_key="k")
    assert msg.content == final(mw.replay(API, FULL)).content and msg.stop_reason == "tool_use"


@pytest.mark.anyio
async def test_an_agent_reads_a_file_through_bedrock(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# modelwire\nhello\n")

    def answer(rec: RecordedRequest) -> str:
        results = [b["toolResult"] for m in rec.json()["messages"] for b in m["content"]
                   if "toolResult" in b]  # fmt: skip
        assert results and results[-1]["status"] == "success"
        return "The title is " + ("modelwire" if "# modelwire" in results[-1]["content"][0][
            "text"] else "?")  # fmt: skip

    replies = [["Reading.", tool_call("read", {"path": "README.md"})], answer]
    with MockServer(replies) as srv:
        agent = mw.Agent(srv.model(API, CLAUDE), tools=mw.tools.read_only(tmp_path), api_key="k")
        run_ = await agent.run("读取 README.md")
        first = srv.requests[0].json()
    assert run_.final.text == "The title is modelwire"
    assert [m.role for m in run_.messages] == ["user", "assistant", "tool_result", "assistant"]
    names = [t["toolSpec"]["name"] for t in first["toolConfig"]["tools"]]
    assert names == ["read", "ls", "grep"]


def test_trace_records_every_layer_for_the_event_stream() -> None:
    records: list[Any] = []
    events = mw.replay(API, [FULL[:50], FULL[50:]], trace=records.append)
    assert plain(events) == plain(mw.replay(API, FULL))
    assert {"read", "sse", "delta", "event", "message"} <= {r.layer for r in records}
    frames = [r for r in records if r.layer == "sse"]
    assert len(frames) == 14  # one frame per event-stream message


def test_handoff_from_anthropic_to_bedrock_and_on_to_openai() -> None:
    from modelwire._client._handoffs import handoff

    claude = mw.AssistantMessage(
        content=[mw.ThinkingContent(thinking="look first", signature=SIG),
                 mw.ToolCall(id="toolu_01A.b", name="read", arguments={"path": "a"})],
        api="anthropic-messages", provider="anthropic", model="claude-x",
        stop_reason="tool_use")  # fmt: skip
    result = mw.ToolResultMessage(tool_call_id="toolu_01A.b", tool_name="read",
                                  content=[mw.TextContent(text="A")])  # fmt: skip
    ctx = mw.Context(messages=[CTX.messages[0], claude, result], tools=TOOLED.tools)
    moved = handoff(ctx, model())
    body = body_of(moved)
    use = body["messages"][1]["content"]
    # Another model's signed thinking goes as text; the id is rewritten to fit toolUseId.
    assert use[0] == {"text": "<thinking>\nlook first\n</thinking>"}
    (call,) = [b["toolUse"] for b in use if "toolUse" in b]
    assert call["toolUseId"] == "toolu_01A_b"
    tr = body["messages"][2]["content"][0]["toolResult"]
    assert tr["toolUseId"] == call["toolUseId"]
    # And from Bedrock on to OpenAI Chat.
    turn = final(mw.replay(API, FULL, model()))
    later = mw.Context(messages=[CTX.messages[0], turn, mw.ToolResultMessage(
        tool_call_id="tooluse_ab-12", tool_name="read", content=[mw.TextContent(text="A")])])  # fmt: skip
    gpt = mw.Model(id="gpt-x", api="openai-chat", provider="openai",
                   base_url="https://api.openai.com/v1")  # fmt: skip
    out = handoff(later, gpt)
    sent = get_api("openai-chat").build_request(gpt, out, resolve_options("openai", api_key="k"))
    chat = json.loads(sent.body)["messages"]
    assert chat[1]["tool_calls"][0]["id"] == chat[2]["tool_call_id"]
    assert chat[1]["tool_calls"][0]["function"]["arguments"] == '{"path": "README.md"}'


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "modelwire", *args], capture_output=True,
                          text=True, encoding="utf-8", timeout=90,
                          env={**os.environ, **env})  # fmt: skip


def test_cli_chat_with_a_catalog_model_against_the_mock_server() -> None:
    with MockServer(["Bonjour from Bedrock"]) as srv:
        proc = _cli("chat", "-m", f"{PROVIDER}/{CLAUDE}", "--base-url", srv.origin, "--plain",
                    "hi", AWS_BEARER_TOKEN_BEDROCK=KEY)  # fmt: skip
        rec = srv.requests[0]
    assert proc.returncode == 0, proc.stderr
    assert "Bonjour from Bedrock" in proc.stdout
    assert rec.model == CLAUDE and rec.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in proc.stdout + proc.stderr


def test_the_mock_server_command_speaks_bedrock_in_binary_frames(tmp_path: Path) -> None:
    from test_cli import _start_server, _stop

    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "Let me look.", "tool_calls": [
        {"name": "read", "arguments": {"path": "a"}}]}, "Done."]), encoding="utf-8")  # fmt: skip
    proc, hello = _start_server("--script", str(script))
    try:
        m = model(hello["base_urls"][API])
        first = mw.complete_sync(m, TOOLED, api_key="k")
        second = mw.complete_sync(m, TOOLED.with_messages(first), api_key="k")
        assert proc.stdout is not None
        log = [json.loads(proc.stdout.readline()) for _ in range(2)]
    finally:
        code = _stop(proc)
    assert code == 0
    assert first.text == "Let me look." and first.tool_calls[0].arguments == {"path": "a"}
    assert second.text == "Done."
    assert [(e["path"], e["api"]) for e in log] == [(get_api(API).path(CLAUDE), API)] * 2


def test_cli_replay_and_trace_take_the_api(tmp_path: Path) -> None:
    path = tmp_path / "call.bin"
    path.write_bytes(FULL)
    proc = _cli("replay", "--api", API, str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    last = json.loads(proc.stdout.splitlines()[-1])
    assert last["api"] == API and last["stop_reason"] == "tool_use"
    traced = _cli("trace", "--api", API, str(path), "--json")
    assert traced.returncode == 0, traced.stderr
    assert {"read", "sse", "delta", "event", "message"} <= {
        json.loads(x)["layer"] for x in traced.stdout.splitlines()
    }


# --------------------------------------------------------------------------- faults


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_a_bad_crc_over_the_wire_is_malformed_keeping_the_content(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    before, f = at(API, "你".encode())
    broken = bytearray(f)
    broken[8] ^= 0x01  # the prelude CRC: its lengths are never trusted
    with serving([streamed(API, [*before, bytes(broken)])]) as server:
        _events, msg = run(mode, model(f"http://127.0.0.1:{server.port}"), "plain", api_key=KEY)
        closed = server.wait_closed()
    assert msg.error is not None and msg.error.kind == "malformed_chunk"
    assert "CRC" in msg.error.message and msg.text == "Hello wörld "
    assert closed and TEXT.startswith(msg.text)
    assert_no_key(repr(msg), caplog.text)


def test_a_429_with_the_aws_error_type_is_a_rate_limit() -> None:
    body = json.dumps({"message": "Too many requests, please wait before trying again."})
    plan = Plan(status=429, body=[body.encode()], content_type="application/json",
                headers={"x-amzn-ErrorType": "ThrottlingException:http://internal"})  # fmt: skip
    with serving([plan]) as server:
        _events, msg = run("sync", model(f"http://127.0.0.1:{server.port}"), "plain",
                           api_key=KEY, max_retries=0)  # fmt: skip
    assert msg.error is not None and msg.error.kind == "rate_limit"
    assert "please wait" in msg.error.message
