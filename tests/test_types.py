"""Protocol types: round-trip, immutability, equality, validation (DESIGN §2, §2a)."""

from __future__ import annotations

import gc
import subprocess
import sys
from typing import Any

import msgspec
import pytest

import modelwire as mw
from modelwire.errors import ConfigurationError

USAGE = mw.Usage(
    input=10,
    output=5,
    cache_read=3,
    cache_write=2,
    total_tokens=20,
    cost=mw.Cost(input=0.1, output=0.2, cache_read=0.01, cache_write=0.02, total=0.33),
)
ASSISTANT = mw.AssistantMessage(
    content=[
        mw.ThinkingContent(thinking="先想一想", signature="sig=="),
        mw.ThinkingContent(thinking="", signature="opaque", redacted=True),
        mw.TextContent(text="正在读取", signature="msg_1"),
        mw.ToolCall(
            id="call-1",
            name="read",
            arguments={"path": "README.md"},
            raw_arguments='{"path": "README.md"}',
            signature="ts",
        ),
    ],
    api="openai-chat",
    provider="openai",
    model="gpt-4.1-mini",
    usage=USAGE,
    stop_reason="tool_use",
    provider_stop_reason="tool_calls",
    response_id="chatcmpl-1",
    timestamp=1,
)
FAILED = mw.AssistantMessage(
    content=[mw.TextContent(text="partial")],
    api="anthropic-messages",
    provider="anthropic",
    model="claude",
    stop_reason="error",
    error=mw.ErrorInfo(kind="rate_limit", message="slow down", status=429, retry_after=3.0),
)
USER = mw.UserMessage(
    content=[mw.TextContent(text="看图"), mw.ImageContent(data="aGVsbG8=", mime_type="image/png")],
    timestamp=2,
)
RESULT = mw.ToolResultMessage(
    tool_call_id="call-1",
    tool_name="read",
    content="# modelwire",
    is_error=False,
    details={"version": "abc"},
    timestamp=3,
)
TOOL = mw.ToolDefinition(
    name="read",
    description="Read a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)
CONTEXT = mw.Context(
    system_prompt="回答要简洁。",
    messages=[
        mw.UserMessage(content="读取 README.md", timestamp=0),
        ASSISTANT,
        RESULT,
        USER,
        FAILED,
    ],
    tools=[TOOL],
)
MODEL = mw.Model(
    id="m",
    api="openai-chat",
    provider="local",
    base_url="http://127.0.0.1:8000/v1/",
    reasoning=True,
    input=["text", "image"],  # type: ignore[arg-type]
    cost=mw.ModelCost(input=1, output=2, cache_read=0.1, cache_write=1.25),
    context_window=1000,
    max_tokens=100,
    headers={"X-A": "b"},
    compat={"stream_options": False},
)

ALL_VALUES: list[Any] = [
    *ASSISTANT.content,
    USER.content[1],
    USAGE,
    USAGE.cost,
    FAILED.error,
    ASSISTANT,
    FAILED,
    USER,
    RESULT,
    TOOL,
    CONTEXT,
    MODEL,
    mw.ModelCost(input=3),
]


@pytest.mark.parametrize("value", ALL_VALUES, ids=lambda v: type(v).__name__)
def test_round_trip_every_type(value: Any) -> None:
    data = mw.to_json(value)
    back = mw.from_json(data, type(value))
    assert back == value
    assert mw.to_json(back) == data


def test_whole_context_round_trips_with_all_message_kinds() -> None:
    back = mw.from_json(mw.to_json(CONTEXT), mw.Context)
    assert [m.role for m in back.messages] == [
        "user",
        "assistant",
        "tool_result",
        "user",
        "assistant",
    ]
    assert back == CONTEXT
    assert isinstance(back.messages[1], mw.AssistantMessage)
    assert back.messages[1].content[3] == ASSISTANT.content[3]


@pytest.mark.parametrize("value", ALL_VALUES, ids=lambda v: type(v).__name__)
def test_frozen(value: Any) -> None:
    field = msgspec.structs.fields(value)[0].name
    with pytest.raises(AttributeError):
        setattr(value, field, getattr(value, field))


def test_tags_readable_and_lists_become_tuples() -> None:
    assert [b.type for b in ASSISTANT.content] == ["thinking", "thinking", "text", "tool_call"]
    assert isinstance(USER.content, tuple) and USER.content[1].type == "image"
    assert (USER.role, ASSISTANT.role, RESULT.role) == ("user", "assistant", "tool_result")
    assert isinstance(ASSISTANT.content, tuple)
    assert isinstance(CONTEXT.messages, tuple)
    assert isinstance(CONTEXT.tools, tuple)
    assert isinstance(USER.content, tuple)
    assert RESULT.content == (mw.TextContent(text="# modelwire"),)
    assert MODEL.input == ("text", "image")
    assert MODEL.url_root == "http://127.0.0.1:8000/v1"


def test_equality_and_hash_semantics() -> None:
    a = mw.TextContent(text="x")
    assert a == mw.TextContent(text="x")
    assert a != mw.TextContent(text="y")
    assert a != mw.ThinkingContent(thinking="x")  # type: ignore[comparison-overlap]  # on purpose
    assert hash(a) == hash(mw.TextContent(text="x"))


def test_frozen_is_shallow_arguments_stay_a_dict() -> None:
    call = mw.ToolCall(id="1", name="n", arguments={"a": 1})
    assert isinstance(call.arguments, dict)


def test_timestamp_defaults_to_now_in_ms() -> None:
    import time

    before = time.time() * 1000
    m = mw.UserMessage(content="x")
    after = time.time() * 1000
    assert before - 1 <= m.timestamp <= after + 1


def test_partial_stop_reason_none_and_helpers() -> None:
    msg = mw.AssistantMessage(content=(), api="a", provider="p", model="m")
    assert msg.stop_reason is None
    assert ASSISTANT.text == "正在读取"
    assert [c.id for c in ASSISTANT.tool_calls] == ["call-1"]
    ASSISTANT.raise_for_error()  # no error: no raise


def test_raise_for_error_maps_kind_to_class() -> None:
    with pytest.raises(mw.errors.RateLimitError) as info:
        FAILED.raise_for_error()
    assert info.value.retry_after == 3.0
    assert info.value.status == 429
    assert info.value.kind == "rate_limit"


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda: mw.ToolResultMessage(tool_call_id="", tool_name="r", content="x"), "tool_call_id"),
        (lambda: mw.ToolResultMessage(tool_call_id=5, tool_name="r", content="x"), "tool_call_id"),  # type: ignore[arg-type]
        (
            lambda: mw.UserMessage(content=[mw.ToolCall(id="1", name="n", arguments={})]),  # type: ignore[list-item]
            "content[0]",
        ),
        (lambda: mw.UserMessage(content=5), "content"),  # type: ignore[arg-type]
        (lambda: mw.Context(messages=["hi"]), "messages[0]"),  # type: ignore[list-item]
        (lambda: mw.Context(tools=[{"name": "x"}]), "tools[0]"),  # type: ignore[list-item]
        (lambda: mw.ToolDefinition(name="", description="", parameters={}), "name"),
        (lambda: mw.ToolDefinition(name="x", description="", parameters=[]), "parameters"),  # type: ignore[arg-type]
        (lambda: mw.Model(id="m", api="openai-chat", provider="p", base_url="ftp://x"), "base_url"),
        (lambda: mw.Model(id="", api="openai-chat", provider="p", base_url="http://x"), "Model.id"),
        (lambda: mw.ImageContent(data="x", mime_type=""), "mime_type"),
    ],
)
def test_cheap_validation_on_construction(make: Any, needle: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        make()
    assert needle in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b'{"messages":[{"role":"robot","content":"x"}]}', "role"),
        (b'{"messages":[{"role":"user","content":5}]}', "$.messages[0].content"),
        (
            b'{"messages":[{"role":"tool_result","tool_call_id":"","tool_name":"r","content":[]}]}',
            "tool_call_id",
        ),
        (
            b'{"messages":[{"role":"assistant","content":[{"type":"text"}],"api":"a","provider":"p","model":"m"}]}',
            "text",
        ),
        (b"{not json", "invalid JSON"),
    ],
)
def test_from_json_mismatch_raises_configuration_error_naming_field(
    data: bytes, needle: str
) -> None:
    with pytest.raises(ConfigurationError) as info:
        mw.from_json(data, mw.Context)
    assert needle in str(info.value)


def test_to_json_rejects_unserializable() -> None:
    with pytest.raises(ConfigurationError):
        mw.to_json(object())


def test_snapshot_types_are_not_gc_tracked() -> None:
    assert not gc.is_tracked(mw.TextContent(text="x"))
    assert not gc.is_tracked(ASSISTANT)
    events = mw.replay(
        "openai-chat",
        b'data: {"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n",
    )
    assert events and not any(gc.is_tracked(e) for e in events)


def test_a_tool_definition_checks_its_refs_without_loading_the_tools_package() -> None:
    code = (
        "import sys, modelwire as mw\n"
        "schema = {'type': 'object', '$defs': {'p': {'type': 'string'}},\n"
        "          'properties': {'path': {'$ref': '#/$defs/p'}}}\n"
        "mw.ToolDefinition(name='read', description='Read a file', parameters=schema)\n"
        "try:\n"
        "    mw.ToolDefinition(name='bad', description='', parameters={'$ref': '#/nowhere'})\n"
        "except mw.ConfigurationError as exc:\n"
        "    assert 'nowhere' in str(exc), exc\n"
        "else:\n"
        "    raise AssertionError('a dangling $ref was accepted')\n"
        "print(sorted(m for m in sys.modules if m.startswith('modelwire.tools')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]"]
