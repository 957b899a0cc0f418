"""OpenAI Chat Completions: outbound encoding, inbound decoding, recorded fixtures.

Expectations are derived in this file: the fixtures' SSE payloads are split and
parsed with ``json`` here and accumulated by hand (``derive``), and the official
``openai`` SDK's ``ChatCompletionStreamState`` serves as a test-only
differential reference. References: https://platform.openai.com/docs/api-reference/chat
and the ``openai-chat`` section of ``../shared/fixtures/SOURCES.md``.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import modelwire as mw
from eventlist import final as last_message
from eventlist import same_at_every_split
from modelwire._apis.openai_chat import API, RESERVED, detect_compat
from modelwire._client._options import resolve_options
from modelwire._wire.request import HTTPRequest
from modelwire.testing import MockServer, Reply, sse_body
from recorded import recorded_streams

FIXTURES = recorded_streams("openai-chat")
DATA = Path(__file__).parent / "data" / "openai-chat"  # our own streams, always present
FIXTURE_FILES = sorted(p.name for p in FIXTURES.glob("*.sse"))
KEY = "sk-test-QX7_distinctive_9f3e"


def model(**kw: Any) -> mw.Model:
    args: dict[str, Any] = {
        "id": "gpt-test",
        "api": "openai-chat",
        "provider": "local",
        "base_url": "http://127.0.0.1:9/v1/",
    }
    args.update(kw)
    return mw.Model(**args)


def request(ctx: mw.Context, m: mw.Model | None = None, **opts: Any) -> HTTPRequest:
    m = m or model()
    return API.build_request(m, ctx, resolve_options(m.provider, **opts))


def body(ctx: mw.Context, m: mw.Model | None = None, **opts: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(request(ctx, m, **opts).body)
    return data


READ = mw.ToolDefinition(
    name="read",
    description="Read a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


def assistant(*content: Any, stop: str = "tool_use", **kw: Any) -> mw.AssistantMessage:
    args: dict[str, Any] = {
        "content": content,
        "api": "openai-chat",
        "provider": "local",
        "model": "gpt-test",
        "stop_reason": stop,
    }
    args.update(kw)
    return mw.AssistantMessage(**args)


def conversation() -> mw.Context:
    return mw.Context(
        system_prompt="回答要简洁。",
        messages=[
            mw.UserMessage(content="读取 README.md"),
            assistant(
                mw.ThinkingContent(thinking="I should read it"),
                mw.TextContent(text="Reading."),
                mw.ToolCall(
                    id="call-1",
                    name="read",
                    arguments={"path": "README.md"},
                    raw_arguments='{"path": "README.md"}',
                ),
                mw.ToolCall(id="call-2", name="read", arguments={"path": "b"}),
            ),
            mw.ToolResultMessage(tool_call_id="call-1", tool_name="read", content="# modelwire"),
            mw.ToolResultMessage(tool_call_id="call-2", tool_name="read", content="b"),
            mw.UserMessage(
                content=[mw.TextContent(text="and "), mw.TextContent(text="this one")],
            ),
            mw.UserMessage(
                content=[
                    mw.TextContent(text="look"),
                    mw.ImageContent(data="aGk=", mime_type="image/png"),
                ]
            ),
        ],
        tools=[READ],
    )


# =========================================================================== outbound


def test_messages_have_exactly_the_declared_fields() -> None:
    got = body(conversation())["messages"]
    assert got == [
        {"role": "system", "content": "回答要简洁。"},
        {"role": "user", "content": "读取 README.md"},
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "call-1",
                    "type": "function",
                    # raw_arguments is replayed byte for byte (spaces included)
                    "function": {"name": "read", "arguments": '{"path": "README.md"}'},
                },
                {
                    "id": "call-2",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path":"b"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call-1", "name": "read", "content": "# modelwire"},
        {"role": "tool", "tool_call_id": "call-2", "name": "read", "content": "b"},
        {"role": "user", "content": "and this one"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}},
            ],
        },
    ]


def test_assistant_with_only_tool_calls_has_null_content() -> None:
    ctx = mw.Context(
        messages=[
            mw.UserMessage(content="go"),
            assistant(mw.ToolCall(id="c", name="read", arguments={"path": "x"})),
        ]
    )
    msg = body(ctx)["messages"][1]
    assert msg == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path":"x"}'},
            }
        ],
    }


def test_failed_assistant_turns_are_not_replayed() -> None:
    ctx = mw.Context(
        messages=[
            mw.UserMessage(content="a"),
            assistant(mw.TextContent(text="half"), stop="error"),
            assistant(mw.TextContent(text="cut"), stop="aborted"),
            mw.UserMessage(content="b"),
        ]
    )
    assert [m["role"] for m in body(ctx)["messages"]] == ["user", "user"]


def test_tools_shape_and_absence() -> None:
    b = body(conversation())
    assert b["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file",
                "parameters": READ.parameters,
            },
        }
    ]
    bare = body(mw.Context(messages=[mw.UserMessage(content="hi")]))
    assert "tools" not in bare
    assert "parallel_tool_calls" not in body(
        mw.Context(messages=[mw.UserMessage(content="hi")]), parallel_tool_calls=False
    )
    needs = body(
        mw.Context(messages=[mw.UserMessage(content="hi")]), model(compat={"empty_tools": True})
    )
    assert needs["tools"] == []


def test_body_fields_in_order() -> None:
    b = body(
        conversation(),
        max_tokens=100,
        temperature=0.5,
        tool_choice="auto",
        parallel_tool_calls=False,
        extra_body={"top_p": 0.9, "seed": 7},
    )
    assert list(b) == [
        "model",
        "messages",
        "stream",
        "stream_options",
        "max_tokens",
        "temperature",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "top_p",
        "seed",
    ]
    assert b["model"] == "gpt-test"
    assert b["stream"] is True
    assert b["stream_options"] == {"include_usage": True}
    assert (b["max_tokens"], b["temperature"], b["tool_choice"]) == (100, 0.5, "auto")
    assert b["parallel_tool_calls"] is False
    assert (b["top_p"], b["seed"]) == (0.9, 7)


def test_minimal_body() -> None:
    b = body(mw.Context(messages=[mw.UserMessage(content="hi")]))
    assert b == {
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("none", "none"),
        ({"name": "read"}, {"type": "function", "function": {"name": "read"}}),
    ],
)
def test_tool_choice_on_the_wire(choice: Any, wire: Any) -> None:
    assert body(conversation(), tool_choice=choice)["tool_choice"] == wire


@pytest.mark.parametrize("bad", ["any", "auto ", "", {"name": ""}, {"type": "function"}, 3])
def test_unknown_tool_choice_raises(bad: Any) -> None:
    with pytest.raises(mw.ConfigurationError):
        body(conversation(), tool_choice=bad)


def test_forced_tool_must_be_declared() -> None:
    with pytest.raises(mw.ConfigurationError, match="'write'"):
        body(conversation(), tool_choice={"name": "write"})
    with pytest.raises(mw.ConfigurationError, match="required"):
        body(mw.Context(messages=[mw.UserMessage(content="hi")]), tool_choice="required")


@pytest.mark.parametrize("key", sorted(RESERVED))
def test_extra_body_may_not_override_reserved_keys(key: str) -> None:
    with pytest.raises(mw.ConfigurationError, match=key):
        body(conversation(), extra_body={key: "x"})


def test_reserved_keys_are_the_documented_ones() -> None:
    assert {
        "model",
        "messages",
        "stream",
        "stream_options",
        "max_tokens",
        "max_completion_tokens",
        "tools",
        "tool_choice",
    } <= RESERVED


def test_bad_options_are_rejected_before_any_request() -> None:
    with MockServer([Reply(body=sse_body([]))]) as srv:
        m = model(base_url=srv.base_url)
        for opts in (
            {"tool_choice": "sometimes"},
            {"tool_choice": {"name": "write"}},
            {"extra_body": {"model": "other"}},
            {"extra_body": {"stream": False}},
            {"max_tokens": 0},
            {"reasoning": "extreme"},
        ):
            with pytest.raises(mw.ConfigurationError):
                mw.stream(m, conversation(), **opts)
            with pytest.raises(mw.ConfigurationError):
                mw.complete_sync(m, conversation(), **opts)
        assert srv.requests == []


# ---- compat


def test_compat_max_tokens_field() -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content="hi")])
    assert body(ctx, max_tokens=5)["max_tokens"] == 5
    b = body(
        ctx,
        model(provider="openai", base_url="https://api.openai.com/v1"),
        api_key=KEY,
        max_tokens=5,
    )
    assert b["max_completion_tokens"] == 5 and "max_tokens" not in b
    b = body(ctx, model(compat={"max_tokens_field": "max_completion_tokens"}), max_tokens=5)
    assert b["max_completion_tokens"] == 5


def test_compat_developer_role_for_openai_reasoning_models() -> None:
    ctx = mw.Context(system_prompt="sys", messages=[mw.UserMessage(content="hi")])
    oai = model(provider="openai", base_url="https://api.openai.com/v1", reasoning=True)
    assert body(ctx, oai, api_key=KEY)["messages"][0] == {"role": "developer", "content": "sys"}
    assert body(ctx)["messages"][0] == {"role": "system", "content": "sys"}


def test_compat_stream_options_and_store() -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content="hi")])
    b = body(ctx, model(compat={"stream_options": False, "store": False}))
    assert "stream_options" not in b and b["store"] is False
    mistral = model(provider="mistral", base_url="https://api.mistral.ai/v1")
    assert "stream_options" not in body(ctx, mistral, api_key=KEY)


@pytest.mark.parametrize(
    ("kw", "level", "expected"),
    [
        ({}, "high", {"reasoning_effort": "high"}),
        (
            {"provider": "openrouter", "base_url": "https://openrouter.ai/api/v1"},
            "low",
            {"reasoning": {"effort": "low"}},
        ),
        (
            {"provider": "qwen", "base_url": "https://dashscope.aliyuncs.com/compatible-mode/v1"},
            "low",
            {"enable_thinking": True},
        ),
        (
            {"provider": "zai", "base_url": "https://api.z.ai/api/paas/v4"},
            "high",
            {"thinking": {"type": "enabled"}},
        ),
        (
            {"provider": "groq", "base_url": "https://api.groq.com/openai/v1"},
            "xhigh",
            {"reasoning_effort": "high"},
        ),
        (
            {"compat": {"reasoning_effort_map": {"minimal": "low"}}},
            "minimal",
            {"reasoning_effort": "low"},
        ),
        ({"compat": {"reasoning_style": "none"}}, "high", {}),
    ],
)
def test_compat_reasoning_effort(kw: dict[str, Any], level: str, expected: dict[str, Any]) -> None:
    m = model(reasoning=True, **kw)
    b = body(mw.Context(messages=[mw.UserMessage(content="hi")]), m, api_key=KEY, reasoning=level)
    keys = {"reasoning_effort", "reasoning", "enable_thinking", "thinking"}
    assert {k: v for k, v in b.items() if k in keys} == expected


def test_reasoning_level_on_a_model_without_reasoning_raises() -> None:
    with pytest.raises(mw.ConfigurationError, match="reasoning"):
        body(conversation(), reasoning="high")


def test_compat_thinking_replay() -> None:
    ctx = conversation()
    dropped = body(ctx)["messages"][2]
    assert "reasoning_content" not in dropped and dropped["content"] == "Reading."
    as_text = body(ctx, model(compat={"thinking_replay": "text"}))["messages"][2]
    assert as_text["content"] == "<thinking>\nI should read it\n</thinking>\nReading."
    field_ = body(ctx, model(compat={"thinking_replay": "reasoning_content"}))["messages"][2]
    assert field_["reasoning_content"] == "I should read it"
    deepseek = model(provider="deepseek", base_url="https://api.deepseek.com/v1")
    assert (
        body(ctx, deepseek, api_key=KEY)["messages"][2]["reasoning_content"] == "I should read it"
    )


def test_thinking_goes_back_in_the_field_it_came_in_for_the_same_model() -> None:
    m = model(compat={"thinking_replay": "reasoning_content"})
    stream = sse_body([
        {"id": "r", "choices": [{"index": 0, "delta": {"reasoning": "think"}}]},
        {"id": "r", "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]},
    ])  # fmt: skip
    msg = mw.replay("openai-chat", stream, model=m).message
    assert msg.content[0] == mw.ThinkingContent(thinking="think", signature="reasoning")
    ctx = mw.Context(messages=[mw.UserMessage(content="q"), msg, mw.UserMessage(content="more")])
    same = body(ctx, m)["messages"][1]
    assert same == {"role": "assistant", "content": "ok", "reasoning": "think"}
    other = body(ctx, model(id="another", compat={"thinking_replay": "reasoning_content"}))
    assert other["messages"][1] == {
        "role": "assistant",
        "content": "ok",
        "reasoning_content": "think",
    }


def test_compat_tool_result_name() -> None:
    msgs = body(conversation(), model(compat={"tool_result_name": False}))["messages"]
    assert msgs[3] == {"role": "tool", "tool_call_id": "call-1", "content": "# modelwire"}


def test_compat_unknown_or_invalid_flags_raise() -> None:
    with pytest.raises(mw.ConfigurationError, match="unknown openai-chat compat"):
        body(conversation(), model(compat={"no_such_flag": True}))
    with pytest.raises(mw.ConfigurationError, match="compat"):
        body(conversation(), model(compat={"max_tokens_field": "tokens"}))


def test_compat_detection_table() -> None:
    assert detect_compat(model()).infer_finish_reason is False
    assert detect_compat(model(provider="snowflake")).infer_finish_reason is True
    assert detect_compat(
        model(base_url="https://x.snowflakecomputing.com/api/v2/cortex/v1")
    ).infer_finish_reason
    assert detect_compat(model(provider="deepseek")).thinking_replay == "reasoning_content"
    assert detect_compat(model(provider="openai")).max_tokens_field == "max_completion_tokens"
    # An explicit override wins over detection.
    assert (
        detect_compat(
            model(provider="snowflake", compat={"infer_finish_reason": False})
        ).infer_finish_reason
        is False
    )


# ---- the HTTP request value


def test_request_url_headers_and_key_placement() -> None:
    m = model(headers={"X-Model": "1"})
    req = request(conversation(), m, api_key=KEY, headers={"X-Caller": "2"})
    assert req.url == "http://127.0.0.1:9/v1/chat/completions"  # trailing slash ignored
    assert req.headers["Authorization"] == f"Bearer {KEY}"
    assert req.headers["Accept"] == "text/event-stream"
    assert req.headers["Content-Type"] == "application/json"
    assert (req.headers["X-Model"], req.headers["X-Caller"]) == ("1", "2")
    assert KEY.encode() not in req.body
    assert req.secrets == (KEY,)
    assert KEY not in repr(req)
    others = {k: v for k, v in req.headers.items() if k != "Authorization"}
    assert KEY not in json.dumps(others)


def test_no_key_no_auth_header_for_local_servers() -> None:
    req = request(conversation())
    assert "Authorization" not in req.headers and req.secrets == ()


@pytest.mark.parametrize("bad", [f"{KEY}\n", f" {KEY}", f"{KEY}\x00", f"{KEY}\r\nX-Injected: 1"])
def test_a_key_with_a_line_break_is_refused_before_any_request(bad: str) -> None:
    # h11 would refuse the header only once the request starts, quoting the key.
    with MockServer([Reply(body=sse_body([]))]) as srv:
        with pytest.raises(mw.ConfigurationError) as info:
            mw.complete_sync(model(base_url=srv.base_url), conversation(), api_key=bad)
        assert srv.requests == []
    assert KEY not in str(info.value) and KEY not in repr(info.value)


def test_known_provider_without_key_raises_naming_the_variable() -> None:
    with pytest.raises(mw.MissingAPIKeyError, match="OPENAI_API_KEY"):
        request(conversation(), model(provider="openai"))


def test_key_from_env_and_from_a_callable_read_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-env-1")
    req = request(conversation(), model(provider="deepseek"))
    assert req.headers["Authorization"] == "Bearer sk-env-1"
    calls: list[int] = []

    def key() -> str:
        calls.append(1)
        return f"sk-rotating-{len(calls)}"

    assert request(conversation(), api_key=key).headers["Authorization"] == "Bearer sk-rotating-1"
    assert request(conversation(), api_key=key).headers["Authorization"] == "Bearer sk-rotating-2"


# ---- purity


def test_encoding_is_pure_and_deterministic() -> None:
    ctx = conversation()
    before = mw.to_json(ctx)
    params = copy.deepcopy(READ.parameters)
    assert isinstance(ctx.messages[1].content[2], mw.ToolCall)
    args = copy.deepcopy(ctx.messages[1].content[2].arguments)
    first = request(ctx, max_tokens=9, tool_choice="auto", extra_body={"x": [1]}).body
    # Mutating the produced body must not reach back into the context either.
    b = json.loads(first)
    b["tools"][0]["function"]["parameters"]["added"] = True
    second = request(ctx, max_tokens=9, tool_choice="auto", extra_body={"x": [1]}).body
    assert first == second
    assert mw.to_json(ctx) == before
    assert ctx.tools is not None and ctx.tools[0].parameters == params
    assert isinstance(ctx.messages[1].content[2], mw.ToolCall)
    assert ctx.messages[1].content[2].arguments == args
    # An equal context built separately gives the very same bytes.
    rebuilt = mw.from_json(before, mw.Context)
    assert request(rebuilt, max_tokens=9, tool_choice="auto", extra_body={"x": [1]}).body == first


def test_build_body_does_not_share_mutable_state_with_options() -> None:
    extra = {"metadata": {"k": "v"}}
    ctx = conversation()
    b = API.build_body(model(), ctx, resolve_options("local", extra_body=extra))
    assert extra == {"metadata": {"k": "v"}}
    assert b["metadata"] == {"k": "v"}


# =========================================================================== inbound


def ch(
    delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    c: dict[str, Any] = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return {"id": "chatcmpl-x", "object": "chat.completion.chunk", "choices": [c], **extra}


def final(
    payloads: list[Any], *, done: bool = True, m: mw.Model | None = None
) -> mw.AssistantMessage:
    events = mw.replay("openai-chat", sse_body(payloads, done=done), model=m)
    assert events[-1].type in ("done", "error")
    return events.message


def err(msg: mw.AssistantMessage) -> tuple[str, str]:
    assert msg.error is not None, msg
    return msg.error.kind, msg.error.message


def test_content_42_is_a_malformed_chunk_naming_the_path() -> None:
    msg = final([ch({"content": "ok "}), ch({"content": 42})])
    kind, text = err(msg)
    assert kind == "malformed_chunk"
    assert "choices[0].delta.content" in text
    assert msg.text == "ok "


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        (
            {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": 5}]}}]},
            "choices[0].delta.tool_calls[0].id",
        ),
        (
            {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": "0"}]}}]},
            "choices[0].delta.tool_calls[0].index",
        ),
        (
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {"tool_calls": [{"index": 0, "function": {"arguments": {}}}]},
                    }
                ]
            },
            "choices[0].delta.tool_calls[0].function.arguments",
        ),
        (
            {"choices": [{"index": 0, "delta": {"reasoning_content": 1}}]},
            "choices[0].delta.reasoning_content",
        ),
        ({"choices": [{"index": 0, "finish_reason": 3}]}, "choices[0].finish_reason"),
        ({"choices": "none"}, "choices"),
        ({"choices": [], "usage": {"prompt_tokens": "9"}}, "usage.prompt_tokens"),
    ],
)
def test_mistyped_used_fields_name_their_path(payload: dict[str, Any], path: str) -> None:
    kind, text = err(final([payload]))
    assert kind == "malformed_chunk"
    assert f"{path} must be" in text


def test_null_choices_carry_nothing() -> None:
    msg = final([ch({"content": "a"}, "stop"), {"id": "x", "choices": None}])
    assert (msg.stop_reason, msg.text) == ("stop", "a")


def test_invalid_json_is_malformed() -> None:
    events = mw.replay("openai-chat", b'data: {"choices": [\n\n')
    assert err(last_message(events))[0] == "malformed_chunk"


def test_unknown_fields_and_event_types_are_ignored() -> None:
    raw = b": keep-alive\n\nevent: ping\ndata: not json at all\n\ndata:\n\n" + sse_body(
        [
            ch(
                {"content": "hi", "channel": "final", "annotations": []},
                obfuscation="x",
                x_new={"a": 1},
            ),
            ch(finish="stop", service_tier="", object=""),
        ]
    )
    msg = mw.replay("openai-chat", raw).message
    assert (msg.stop_reason, msg.text) == ("stop", "hi")


@pytest.mark.parametrize("fieldname", ["reasoning_content", "reasoning", "reasoning_text"])
def test_reasoning_string_fields(fieldname: str) -> None:
    msg = final(
        [ch({fieldname: "step 1, "}), ch({fieldname: "step 2"}), ch({"content": "42"}, "stop")]
    )
    assert msg.content == (
        mw.ThinkingContent(thinking="step 1, step 2", signature=fieldname),
        mw.TextContent(text="42"),
    )


def test_reasoning_details_text_only_and_one_source_per_chunk() -> None:
    msg = final(
        [
            # OpenRouter sends the same text in ``reasoning`` and ``reasoning_details``.
            ch({"reasoning": "a", "reasoning_details": [{"type": "reasoning.text", "text": "a"}]}),
            ch(
                {
                    "reasoning_details": [
                        {"type": "reasoning.text", "text": "b"},
                        {"type": "reasoning.encrypted", "data": "xyz"},
                    ]
                }
            ),
            ch({"reasoning_details": [{"type": "reasoning.encrypted", "data": "zzz"}]}),
            ch({"content": "done"}, "stop"),
        ]
    )
    assert isinstance(msg.content[0], mw.ThinkingContent)
    assert msg.content[0].thinking == "ab"
    assert msg.text == "done"


def test_reasoning_content_wins_over_reasoning() -> None:
    msg = final([ch({"reasoning_content": "rc", "reasoning": "r"}), ch(finish="stop")])
    assert msg.content == (mw.ThinkingContent(thinking="rc", signature="reasoning_content"),)


def test_mistral_content_arrays() -> None:
    msg = final(
        [
            ch({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "hm"}]}]}),
            ch({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "m"}]}]}),
            ch({"content": [{"type": "text", "text": "Yes"}]}),
            ch({"content": "."}, "stop"),
        ]
    )
    assert [type(b).__name__ for b in msg.content] == ["ThinkingContent", "TextContent"]
    assert isinstance(msg.content[0], mw.ThinkingContent)
    assert (msg.content[0].thinking, msg.text) == ("hmm", "Yes.")


DATABRICKS_REASONING = DATA / "SYNTHETIC-reasoning-content-parts.sse"


def test_databricks_reasoning_parts_are_thinking_at_every_split() -> None:
    """Databricks' ``{"type": "reasoning", "summary": [{"type": "summary_text", …}]}``
    content parts (https://docs.databricks.com/aws/en/machine-learning/model-serving/
    score-reason-models) are the thinking, the ``text`` parts the answer."""
    body = DATABRICKS_REASONING.read_bytes()
    msg = last_message(mw.replay("openai-chat", body))
    assert msg.content == (
        mw.ThinkingContent(
            thinking="The question asks why the sky looks blue. Rayleigh scattering: "
            "短波长的蓝光散射更强, so blue light reaches the eye from every direction.",
            signature="content",
        ),
        mw.TextContent(
            text="The sky is blue because air molecules scatter short (blue) wavelengths of "
            "sunlight far more than long (red) ones — 瑞利散射。"
        ),
    )
    assert (msg.stop_reason, msg.usage.input, msg.usage.output) == ("stop", 14, 58)
    same_at_every_split("openai-chat", body)


def test_a_reasoning_part_with_a_mistyped_summary_names_its_path() -> None:
    msg = final([ch({"content": [{"type": "reasoning", "summary": "hm"}]}), ch(finish="stop")])
    kind, text = err(msg)
    assert kind == "malformed_chunk" and "choices[0].delta.content[0].summary" in text


def test_refusal_is_text_with_the_raw_finish_reason() -> None:
    msg = final([ch({"refusal": "I can't "}), ch({"refusal": "help."}), ch(finish="stop")])
    assert msg.text == "I can't help."
    assert (msg.stop_reason, msg.provider_stop_reason) == ("stop", "stop")


def test_content_filter_is_an_error_keeping_content() -> None:
    msg = final([ch({"content": "Once upon"}), ch(finish="content_filter")])
    kind, _ = err(msg)
    assert kind == "content_filter"
    assert msg.stop_reason == "error"
    assert (msg.text, msg.provider_stop_reason) == ("Once upon", "content_filter")
    with pytest.raises(mw.errors.ContentFilterError):
        msg.raise_for_error()


@pytest.mark.parametrize(
    ("finish", "stop", "kind"),
    [
        ("model_length", "length", None),
        ("error", "error", "provider_stream"),
        ("insufficient_system_resource", "error", "overloaded"),
        ("abort", "error", "provider_stream"),
        ("something_new", "stop", None),
    ],
)
def test_other_finish_reasons(finish: str, stop: str, kind: str | None) -> None:
    msg = final([ch({"content": "x"}), ch(finish=finish)])
    assert msg.stop_reason == stop and msg.provider_stop_reason == finish
    assert (msg.error.kind if msg.error else None) == kind
    assert msg.text == "x"


def test_event_error_is_typed_and_keeps_content() -> None:
    raw = sse_body([ch({"content": "partial"})], done=False) + (
        b'event: error\ndata: {"error":{"message":"Service overloaded","type":"overloaded_error"}}\n\n'
    )
    msg = mw.replay("openai-chat", raw).message
    assert err(msg)[0] == "overloaded"
    assert msg.text == "partial" and msg.stop_reason == "error"


def test_event_error_with_plain_text_payload() -> None:
    raw = (
        sse_body([ch({"content": "p"})], done=False) + b"event: error\ndata: upstream exploded\n\n"
    )
    msg = mw.replay("openai-chat", raw).message
    kind, text = err(msg)
    assert kind == "provider_stream" and "upstream exploded" in text


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        ({"message": "boom"}, "provider_stream"),
        ("a plain string", "provider_stream"),
        ({"message": "slow down", "code": "rate_limit_exceeded"}, "rate_limit"),
        ({"message": "busy", "code": 529}, "overloaded"),
        (
            {"message": "This model's maximum context length is 8192 tokens", "code": 400},
            "context_overflow",
        ),
    ],
)
def test_chunk_with_an_error_object(error: Any, kind: str) -> None:
    msg = final([ch({"content": "kept"}), {"id": "x", "choices": [], "error": error}])
    assert err(msg)[0] == kind
    assert msg.text == "kept"


def test_more_than_one_choice_is_malformed_naming_the_index() -> None:
    two = {
        "choices": [
            {"index": 0, "delta": {"content": "a"}},
            {"index": 1, "delta": {"content": "b"}},
        ]
    }
    kind, text = err(final([two]))
    assert kind == "malformed_chunk" and "choices[1].index" in text
    other = {"choices": [{"index": 2, "delta": {"content": "b"}}]}
    msg = final([ch({"content": "a"}), other])
    kind, text = err(msg)
    assert kind == "malformed_chunk" and "choices[0].index" in text
    assert msg.text == "a"


def test_no_finish_reason_is_truncated_unless_compat_infers_it() -> None:
    stream = [
        ch({"content": "15 × 27 = 405"}),
        {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}},
    ]
    msg = final(stream)
    assert err(msg)[0] == "truncated_stream"
    assert msg.text == "15 × 27 = 405"
    inferred = final(stream, m=model(provider="snowflake"))
    assert (inferred.stop_reason, inferred.error, inferred.provider_stop_reason) == (
        "stop",
        None,
        None,
    )
    assert inferred.usage.output == 4
    # The inference needs the terminal [DONE]: a body that just stops is still truncated.
    assert err(final(stream, done=False, m=model(provider="snowflake")))[0] == "truncated_stream"
    calls = [
        ch({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}]})
    ]
    assert final(calls, m=model(compat={"infer_finish_reason": True})).stop_reason == "tool_use"


def test_body_cut_mid_event_is_truncated_and_keeps_content() -> None:
    raw = sse_body([ch({"content": "kept"}), ch({"content": " lost"}, "stop")])
    cut = raw.index(b"lost")
    msg = mw.replay("openai-chat", raw[:cut]).message
    assert err(msg)[0] == "truncated_stream"
    assert msg.text == "kept"


# ---- usage


def usage_msg(u: dict[str, Any], *, where: str = "chunk") -> mw.Usage:
    if where == "chunk":
        last: dict[str, Any] = {"choices": [], "usage": u}
    elif where == "x_groq":
        last = {"choices": [], "x_groq": {"usage": u}}
    else:
        last = {"choices": [{"index": 0, "delta": {}, "usage": u}]}
    return final([ch({"content": "x"}, "stop"), last]).usage


def test_usage_cached_tokens_are_not_input() -> None:
    u = usage_msg({"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050,
                   "prompt_tokens_details": {"cached_tokens": 800},
                   "completion_tokens_details": {"reasoning_tokens": 30}})  # fmt: skip
    assert (u.input, u.cache_read, u.output, u.cache_write) == (200, 800, 50, 0)
    assert u.total_tokens == 1050


def test_usage_reasoning_counted_once_when_completion_excludes_it() -> None:
    # xAI: total = prompt + completion + reasoning (see the xai fixture: 307 + 26 + 227 = 560).
    u = usage_msg({"prompt_tokens": 307, "completion_tokens": 26, "total_tokens": 560,
                   "prompt_tokens_details": {"cached_tokens": 306},
                   "completion_tokens_details": {"reasoning_tokens": 227}})  # fmt: skip
    assert (u.input, u.cache_read, u.output, u.total_tokens) == (1, 306, 253, 560)


def test_usage_deepseek_cache_hit_field() -> None:
    u = usage_msg({"prompt_tokens": 339, "completion_tokens": 83, "prompt_cache_hit_tokens": 320})
    assert (u.input, u.cache_read, u.output, u.total_tokens) == (19, 320, 83, 422)


@pytest.mark.parametrize("where", ["x_groq", "choice"])
def test_usage_from_other_places(where: str) -> None:
    u = usage_msg({"prompt_tokens": 10, "completion_tokens": 5}, where=where)
    assert (u.input, u.output, u.total_tokens) == (10, 5, 15)


def test_usage_null_details_are_fine() -> None:
    u = usage_msg({"prompt_tokens": 40, "completion_tokens": 2, "total_tokens": 42,
                   "prompt_tokens_details": None, "completion_tokens_details": None})  # fmt: skip
    assert (u.input, u.output, u.cache_read, u.total_tokens) == (40, 2, 0, 42)


def test_response_id_is_the_first_non_empty_id() -> None:
    msg = final(
        [{"id": "", "choices": []}, ch({"content": "a"}), {**ch(finish="stop"), "id": "stub"}]
    )
    assert msg.response_id == "chatcmpl-x"


# =========================================================================== fixtures


def parse_sse(raw: bytes) -> list[tuple[str, str]]:
    """A deliberately small SSE reader for the fixtures (LF or CRLF framing)."""
    text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    out: list[tuple[str, str]] = []
    event, data = "message", list[str]()
    for line in text.split("\n"):
        if not line:
            if data:
                out.append((event, "\n".join(data)))
            event, data = "message", list[str]()
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value or "message"
        elif name == "data":
            data.append(value)
    return out


@dataclass
class Expected:
    content: list[Any] = field(default_factory=list)
    stop_reason: str = ""
    provider_stop_reason: str | None = None
    error: str | None = None  # "in_band", "malformed_chunk", "truncated_stream"
    usage: tuple[int, int, int] = (0, 0, 0)  # input, output, cache_read
    response_id: str | None = None


def derive(raw: bytes, *, infer_finish: bool = False) -> Expected:
    """Accumulate a chat stream by hand from its JSON payloads."""
    blocks: dict[Any, dict[str, Any]] = {}
    order: list[dict[str, Any]] = []
    exp = Expected()
    finish: str | None = None
    usage: dict[str, Any] | None = None

    def block(key: Any, kind: str) -> dict[str, Any]:
        if key not in blocks:
            blocks[key] = {"kind": kind, "text": "", "id": None, "name": None, "sig": None}
            order.append(blocks[key])
        return blocks[key]

    ended = False
    for event, data in parse_sse(raw):
        if event == "error":
            exp.error = "in_band"
            break
        if event != "message" or not data.strip():
            continue
        if data == "[DONE]":
            ended = True
            break
        p = json.loads(data)
        if p.get("error"):
            exp.error = "in_band"
            break
        if exp.response_id is None and p.get("id"):
            exp.response_id = p["id"]
        choices = p.get("choices") or []
        if len(choices) > 1 or (choices and choices[0].get("index", 0) != 0):
            exp.error = "malformed_chunk"
            break
        for c in choices:
            d = c.get("delta") or {}
            thinking, source = "", None
            for name in ("reasoning_content", "reasoning", "reasoning_text"):
                if d.get(name):
                    thinking, source = d[name], name
                    break
            if not thinking and d.get("reasoning_details"):
                thinking = "".join(
                    r.get("text") or ""
                    for r in d["reasoning_details"]
                    if r.get("type") == "reasoning.text"
                )
                source = "reasoning_details"
            content = d.get("content")
            text = content if isinstance(content, str) else ""
            if isinstance(content, list):
                for part in content:
                    if part.get("type") == "thinking":
                        if not thinking:
                            thinking = "".join(
                                q.get("text") or "" for q in part.get("thinking") or []
                            )
                            source = "content"
                    else:
                        text += part.get("text") or ""
            if thinking:
                b = block("thinking", "thinking")
                b["text"] += thinking
                b["sig"] = source
            if text:
                block("text", "text")["text"] += text
            if d.get("refusal"):
                block("text", "text")["text"] += d["refusal"]
            for pos, tc in enumerate(d.get("tool_calls") or []):
                idx = tc.get("index", pos)
                fn = tc.get("function") or {}
                cur = blocks.get(("tool", idx))
                if cur is not None and tc.get("id") and cur["id"] and tc["id"] != cur["id"]:
                    del blocks[("tool", idx)]  # a new id at a used index is a new call
                b = block(("tool", idx), "tool")
                b["id"] = b["id"] or tc.get("id") or None
                b["name"] = b["name"] or fn.get("name") or None
                b["text"] += fn.get("arguments") or ""
            if c.get("finish_reason"):
                finish = c["finish_reason"]
            if c.get("usage"):
                usage = c["usage"]
        u = p.get("usage") or (p.get("x_groq") or {}).get("usage")
        if u:
            usage = u
    else:
        ended = True  # the body is complete (no [DONE], but nothing pending)
    assert ended or exp.error, "fixture ends mid-stream"

    exp.provider_stop_reason = finish
    if exp.error is None and finish is None:
        if infer_finish:
            exp.provider_stop_reason = None
            finish = "tool_calls" if any(b["kind"] == "tool" for b in order) else "stop"
        else:
            exp.error = "truncated_stream"
    trusted = exp.error is None and finish != "length"
    for b in order:
        if b["kind"] == "text":
            exp.content.append(mw.TextContent(text=b["text"]))
        elif b["kind"] == "thinking":
            exp.content.append(mw.ThinkingContent(thinking=b["text"], signature=b["sig"]))
        else:
            args: Any = {}
            if trusted:
                try:
                    args = json.loads(b["text"]) if b["text"].strip() else {}
                except ValueError:
                    args = {}
                args = args if isinstance(args, dict) else {}
            exp.content.append(
                mw.ToolCall(
                    id=b["id"] or "", name=b["name"] or "", arguments=args, raw_arguments=b["text"]
                )
            )
    if exp.error is None:
        exp.stop_reason = {"stop": "stop", "length": "length", "tool_calls": "tool_use"}[
            finish or "stop"
        ]
        if exp.stop_reason == "stop" and any(isinstance(b, mw.ToolCall) for b in exp.content):
            exp.stop_reason = "tool_use"
    else:
        exp.stop_reason = "error"
    if usage:
        prompt = usage.get("prompt_tokens") or 0
        completion = usage.get("completion_tokens") or 0
        cached = (
            (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
            or usage.get("prompt_cache_hit_tokens")
            or 0
        )
        reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
        if reasoning and usage.get("total_tokens") == prompt + completion + reasoning:
            completion += reasoning
        exp.usage = (prompt - cached, completion, cached)
    return exp


# In-band error kinds, read off each fixture's error payload by hand.
IN_BAND_KINDS = {
    # {"error":{"type":"invalid_request_error","code":"tool_use_failed","status_code":400}}
    "groq-gpt-oss-reasoning-then-error-event.sse": "invalid_request",
    # {"error":{"code":400,"message":"Token limit reached"}}: the error carries status 400
    "openrouter-minimax-error-in-chunk.sse": "invalid_request",
}

# What each fixture must yield (checked against ``derive``, which knows nothing
# of these): a one-line summary that keeps the derivation itself honest.
SUMMARY = {
    "azure-model-router-content-filter.sse": ("stop", ["text"]),
    "deepseek-reasoner-reasoning-content.sse": ("stop", ["thinking", "text"]),
    "deepseek-reasoner-reasoning-then-tool-call.sse": ("tool_use", ["thinking", "tool"]),
    "gpt-4o-content-logprobs.sse": ("stop", ["text"]),
    "gpt-4o-finish-length-max-tokens.sse": ("length", ["text"]),
    "gpt-4o-mini-tool-call-obfuscation.sse": ("tool_use", ["tool"]),
    "gpt-4o-n3-multiple-choices.sse": ("malformed_chunk", ["text"]),
    "gpt-4o-parallel-tool-calls.sse": ("tool_use", ["tool", "tool"]),
    "gpt-4o-refusal-with-logprobs.sse": ("stop", ["text"]),
    "gpt-4o-refusal.sse": ("stop", ["text"]),
    "gpt-4o-single-tool-call.sse": ("tool_use", ["tool"]),
    "gpt-4o-text-with-usage-chunk.sse": ("stop", ["text"]),
    "groq-compound-web-search-reasoning.sse": ("stop", ["thinking", "text"]),
    "groq-gpt-oss-reasoning-then-error-event.sse": ("invalid_request", ["thinking"]),
    "groq-llama-tool-call-x-groq-usage.sse": ("tool_use", ["tool"]),
    "huggingface-novita-llama-text.sse": ("stop", ["text"]),
    "mistral-magistral-thinking-content-array.sse": ("stop", ["thinking", "text"]),
    "openrouter-claude-reasoning-details-text.sse": ("stop", ["thinking", "text"]),
    "openrouter-minimax-error-in-chunk.sse": ("invalid_request", ["thinking"]),
    "openrouter-o3-reasoning-details-encrypted.sse": ("stop", ["text"]),
    "qwen3-max-dashscope-reasoning.sse": ("stop", ["thinking", "text"]),
    "snowflake-cortex-claude-reasoning-details.sse": ("truncated_stream", ["thinking", "text"]),
    "vllm-crusoe-llama-usage-chunk.sse": ("stop", ["text"]),
    "xai-grok-reasoning-tool-call.sse": ("tool_use", ["thinking", "tool"]),
    "zai-glm-reasoning-content.sse": ("stop", ["thinking", "text"]),
}

_KIND_NAMES = {"TextContent": "text", "ThinkingContent": "thinking", "ToolCall": "tool"}


def comparable(msg: mw.AssistantMessage) -> mw.AssistantMessage:
    return msgspec.structs.replace(msg, timestamp=0)


def event_trace(events: list[Any]) -> list[tuple[Any, ...]]:
    return [(e.type, getattr(e, "content_index", None), getattr(e, "delta", None)) for e in events]


def check(msg: mw.AssistantMessage, exp: Expected, name: str) -> None:
    assert list(msg.content) == exp.content
    assert msg.stop_reason == exp.stop_reason
    assert msg.provider_stop_reason == exp.provider_stop_reason
    if exp.error is None:
        assert msg.error is None
        assert (msg.usage.input, msg.usage.output, msg.usage.cache_read) == exp.usage
        assert msg.usage.total_tokens == sum(exp.usage)
    else:
        assert msg.error is not None
        want = IN_BAND_KINDS[name] if exp.error == "in_band" else exp.error
        assert msg.error.kind == want
    assert msg.response_id == exp.response_id
    outcome = msg.error.kind if msg.error else msg.stop_reason
    assert (outcome, [_KIND_NAMES[type(b).__name__] for b in msg.content]) == SUMMARY[name]


def test_all_fixtures_are_listed() -> None:
    assert len(FIXTURE_FILES) == 25
    assert set(FIXTURE_FILES) == set(SUMMARY)


_WHOLE: dict[str, list[Any]] = {}


def whole(name: str) -> list[Any]:
    if name not in _WHOLE:
        _WHOLE[name] = mw.replay("openai-chat", (FIXTURES / name).read_bytes())
    return _WHOLE[name]


@pytest.mark.parametrize("name", FIXTURE_FILES)
def test_fixture_whole(name: str) -> None:
    raw = (FIXTURES / name).read_bytes()
    events = whole(name)
    assert events[0].type == "start"
    assert sum(e.type in ("done", "error") for e in events) == 1
    check(events[-1].message, derive(raw), name)
    # The streamed deltas add up to the final blocks.
    for i, block in enumerate(events[-1].message.content):
        streamed = "".join(
            e.delta
            for e in events
            if getattr(e, "content_index", None) == i and e.type.endswith("_delta")
        )
        text = (
            block.text
            if isinstance(block, mw.TextContent)
            else (block.thinking if isinstance(block, mw.ThinkingContent) else block.raw_arguments)
        )
        assert streamed == text


def test_snowflake_fixture_with_its_compat() -> None:
    name = "snowflake-cortex-claude-reasoning-details.sse"
    raw = (FIXTURES / name).read_bytes()
    m = model(provider="snowflake", id="claude-sonnet-4-6")
    msg = mw.replay("openai-chat", raw, model=m).message
    exp = derive(raw, infer_finish=True)
    assert msg.stop_reason == "stop" and msg.error is None
    assert list(msg.content) == exp.content
    assert (msg.usage.input, msg.usage.output, msg.usage.cache_read) == exp.usage
    assert (msg.provider, msg.model, msg.api) == ("snowflake", "claude-sonnet-4-6", "openai-chat")


SMALL = [n for n in FIXTURE_FILES if (FIXTURES / n).stat().st_size <= 8_000]


@pytest.mark.parametrize("name", SMALL)
def test_fixture_byte_by_byte(name: str) -> None:
    raw = (FIXTURES / name).read_bytes()
    events = mw.replay("openai-chat", [raw[i : i + 1] for i in range(len(raw))])
    ref = whole(name)
    assert event_trace(events) == event_trace(ref)
    assert comparable(last_message(events)) == comparable(last_message(ref))


@pytest.mark.parametrize("name", FIXTURE_FILES)
@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fixture_random_splits(name: str, data: st.DataObject) -> None:
    raw = (FIXTURES / name).read_bytes()
    points = data.draw(st.lists(st.integers(1, len(raw) - 1), max_size=40, unique=True).map(sorted))
    pieces = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    events = mw.replay("openai-chat", pieces)
    ref = whole(name)
    assert event_trace(events) == event_trace(ref)
    assert comparable(last_message(events)) == comparable(last_message(ref))


# ---- differential: the official SDK's accumulator


def sdk_accumulate(raw: bytes) -> Any:
    from openai._models import construct_type
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state: Any = ChatCompletionStreamState()
    for event, data in parse_sse(raw):
        if event == "error" or data == "[DONE]":
            break
        payload = json.loads(data)
        if payload.get("error"):
            break
        state.handle_chunk(construct_type(type_=ChatCompletionChunk, value=payload))
    return state.current_completion_snapshot


# The SDK cannot read these: n=3 is refused by design (one choice per stream), and
# Mistral's content arrays make its pydantic serializer warn and fail.
SDK_SKIP = {"gpt-4o-n3-multiple-choices.sse", "mistral-magistral-thinking-content-array.sse"}


@pytest.mark.parametrize("name", [n for n in FIXTURE_FILES if n not in SDK_SKIP])
def test_fixture_against_the_openai_sdk(name: str) -> None:
    raw = (FIXTURES / name).read_bytes()
    snap = sdk_accumulate(raw)
    choice = snap.choices[0]
    m = choice.message
    ours = whole(name)[-1].message
    assert ours.text == (m.content or "") + (m.refusal or "")
    want_calls = [(t.id, t.function.name, t.function.arguments) for t in m.tool_calls or []]
    assert [(c.id, c.name, c.raw_arguments) for c in ours.tool_calls] == want_calls
    extra = m.model_extra or {}
    sdk_thinking = extra.get("reasoning_content") or extra.get("reasoning")
    if isinstance(sdk_thinking, str):
        assert [b.thinking for b in ours.content if isinstance(b, mw.ThinkingContent)] == [
            sdk_thinking
        ]
    if ours.error is None or ours.error.kind == "truncated_stream":
        assert ours.provider_stop_reason == choice.finish_reason
    if snap.usage is not None and ours.error is None:
        # The SDK keeps the raw counts: prompt tokens include cached ones.
        assert ours.usage.input + ours.usage.cache_read == snap.usage.prompt_tokens
        assert ours.usage.output >= snap.usage.completion_tokens


def test_sdk_merges_repeated_ids_and_names_where_we_do_not() -> None:
    # Some servers repeat id and name on every fragment of one call. The SDK
    # concatenates every string it sees, so id and name come out tripled.
    frag = {"index": 0, "id": "call_1", "type": "function"}
    raw = sse_body(
        [
            ch({"tool_calls": [{**frag, "function": {"name": "read", "arguments": '{"p'}}]}),
            ch({"tool_calls": [{**frag, "function": {"name": "read", "arguments": '":1'}}]}),
            ch({"tool_calls": [{**frag, "function": {"name": "read", "arguments": "}"}}]}),
            ch(finish="tool_calls"),
        ]
    )
    snap = sdk_accumulate(raw)
    sdk_call = snap.choices[0].message.tool_calls[0]
    assert (sdk_call.id, sdk_call.function.name) == ("call_1call_1call_1", "readreadread")
    (call,) = mw.replay("openai-chat", raw).message.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_1", "read", {"p": 1})
    assert sdk_call.function.arguments == call.raw_arguments  # arguments agree
