"""Bad input is refused up front, naming the field: header names and
values HTTP cannot carry, a non-ASCII API key, values JSON cannot encode anywhere
in the request, non-finite numbers and negative limits raise
``ConfigurationError`` before any I/O — for all four wire APIs, sync and async.
Chunks: an OpenAI Chat tool-call ``index`` and usage counts must be
non-negative integers, else ``malformed_chunk`` naming the path (whole, byte by
byte and at every split point).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import modelwire as mw
from modelwire._apis import builtin_api_names
from modelwire.testing import MockServer

KEY = "sk-val-Zq81_only_in_the_header_4c2b"
# Every wire API modelwire ships, from the registry (so ollama-chat is covered too).
APIS = builtin_api_names()
CTX = mw.Context(messages=[mw.UserMessage(content="hi")])


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer([]) as srv:
        yield srv


def refused(server: MockServer, model: mw.Model, ctx: mw.Context = CTX, **kw: Any) -> str:
    """The ConfigurationError message, the same from ``stream`` and
    ``stream_sync``, raised at the call and with no request sent."""
    before = len(server.requests)
    messages = []
    for call in (mw.stream, mw.stream_sync):
        with pytest.raises(mw.ConfigurationError) as info:
            call(model, ctx, **{"max_retries": 0, **kw})
        messages.append(str(info.value))
    assert len(server.requests) == before  # refused before any I/O
    assert messages[0] == messages[1]
    assert KEY not in messages[0]
    return messages[0]


# --------------------------------------------------------------------------- headers


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("X-Trace", "a\r\nX-Injected: 1", "line break"),
        ("X-Trace", "a\nb", "line break"),
        ("X-Trace", "naïve", "non-ASCII"),
        ("X-Trace", "a\x00b", "control character"),
        ("X-Trace", " padded ", "whitespace"),
        ("", "val-9Zq", "empty header name"),
        ("X Trace", "val-9Zq", "not a valid HTTP header name"),
        ("X-Tracé", "val-9Zq", "not a valid HTTP header name"),
        ("X-Trace:", "val-9Zq", "not a valid HTTP header name"),
        ("X-Trace\n", "val-9Zq", "not a valid HTTP header name"),
        ("Authorization", f"Bearer {KEY}\n", "line break"),
    ],
)
def test_header_names_and_values_http_cannot_carry(
    server: MockServer, api: str, name: str, value: str, says: str
) -> None:
    """Before: httpx/h11 refused them only once the request started (a
    ``LocalProtocolError`` quoting the value, which may be a key)."""
    message = refused(server, server.model(api), api_key=KEY, headers={name: value})
    assert says in message and "headers" in message, message
    if name:
        assert repr(name) in message  # named, its value never quoted
    assert value.strip() not in message


@pytest.mark.parametrize("api", APIS)
def test_model_headers_are_checked_too(server: MockServer, api: str) -> None:
    model = server.model(api, headers={"X-Team": "a\r\nb"})
    message = refused(server, model, api_key=KEY)
    assert "Model.headers['X-Team']" in message and "line break" in message


@pytest.mark.parametrize("api", APIS)
def test_a_non_ascii_api_key_is_refused_naming_its_source(
    server: MockServer, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-curly\u2019quote-000"  # a typographic apostrophe from a copy-paste
    message = refused(server, server.model(api), api_key=key)
    assert "api_key" in message and "non-ASCII" in message and key not in message
    monkeypatch.setenv("OPENAI_API_KEY", key)
    model = server.model(api, provider="openai")
    message = refused(server, model)
    assert "OPENAI_API_KEY" in message and key not in message


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("temperature", float("nan"), "temperature must be a finite number"),
        ("temperature", float("inf"), "temperature must be a finite number"),
        ("temperature", -0.5, "temperature must be a finite number >= 0"),
        ("timeout", float("nan"), "timeout must be a positive finite number"),
        ("timeout", float("inf"), "timeout must be a positive finite number"),
        ("timeout", -1.0, "timeout must be a positive finite number"),
        ("max_tokens", -1, "max_tokens must be a positive integer"),
        ("max_retries", -1, "max_retries must be a non-negative integer"),
    ],
)
def test_non_finite_numbers_and_negative_limits(
    server: MockServer, api: str, option: str, value: Any, says: str
) -> None:
    """Before: ``temperature=nan`` was sent as ``null``, ``timeout=nan`` never expired."""
    assert says in refused(server, server.model(api), api_key=KEY, **{option: value})


@pytest.mark.parametrize("field", ["connect", "idle", "total"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0, 0])
def test_timeout_fields_must_be_positive_and_finite(field: str, value: float) -> None:
    with pytest.raises(mw.ConfigurationError, match=f"Timeout.{field} must be a positive finite"):
        mw.Timeout(**{field: value})


# --------------------------------------------------------------------------- JSON values


def _with_call(arguments: dict[str, Any]) -> mw.Context:
    call = mw.ToolCall(id="call_1", name="read", arguments=arguments)
    return mw.Context(
        messages=[
            mw.UserMessage(content="hi"),
            mw.AssistantMessage(
                content=(mw.TextContent(text="ok"), call),
                api="openai-chat",
                provider="mock",
                model="m",
                stop_reason="tool_use",
            ),
            mw.ToolResultMessage(tool_call_id="call_1", tool_name="read", content="x"),
        ],
        tools=(mw.ToolDefinition(name="read", description="r", parameters={"type": "object"}),),
    )


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("value", "says"),
    [
        (float("nan"), "is nan, which JSON cannot carry"),
        (float("-inf"), "is -inf, which JSON cannot carry"),
        (object(), "is a object, which JSON cannot encode"),
        ({(1, 2): "x"}, "has a key (1, 2) of type tuple"),
    ],
)
def test_tool_call_arguments_json_cannot_carry_name_their_path(
    server: MockServer, api: str, value: Any, says: str
) -> None:
    """Before: NaN went out as ``null`` (OpenAI Chat: inside the arguments
    string), an object raised a bare TypeError from deep in the encoder."""
    ctx = _with_call({"path": "README.md", "opts": {"x": [1, value]}})
    message = refused(server, server.model(api), ctx, api_key=KEY)
    assert "messages[1].content[1].arguments.opts.x[1]" in message and says in message, message


@pytest.mark.parametrize("api", APIS)
def test_tool_parameters_json_cannot_carry_name_their_body_path(
    server: MockServer, api: str
) -> None:
    tool = mw.ToolDefinition(
        name="read", description="r",
        parameters={"type": "object", "properties": {"n": {"type": "number",
                                                           "maximum": float("inf")}}},
    )  # fmt: skip
    ctx = mw.Context(messages=[mw.UserMessage(content="hi")], tools=(tool,))
    message = refused(server, server.model(api), ctx, api_key=KEY)
    assert "properties.n.maximum is inf, which JSON cannot carry" in message, message
    assert "tools[0]" in message


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("value", "says"),
    [
        (float("nan"), "extra_body.metadata.w is nan"),
        ("bad \ud800 surrogate", "extra_body.metadata.w contains a lone surrogate"),
        (b"raw", None),  # msgspec sends bytes as base64: JSON can carry it
    ],
)
def test_extra_body_values_json_cannot_carry(
    server: MockServer, api: str, value: Any, says: str | None
) -> None:
    extra = {"metadata": {"w": value}}
    if says is None:
        mw.stream(server.model(api), CTX, api_key=KEY, extra_body=extra)  # no I/O yet
        return
    message = refused(server, server.model(api), api_key=KEY, extra_body=extra)
    assert says in message, message


def test_a_request_with_null_values_but_no_bad_ones_is_sent_unchanged() -> None:
    """The NaN walk runs only when the encoded body has a ``null``: a ``None``
    the caller meant is kept."""
    from modelwire._apis._common import encode_body

    body = {"a": None, "b": [1.5, "null"], "c": {"d": True}}
    assert json.loads(encode_body(body)) == body


# --------------------------------------------------------------------------- chunks


def _chunk(delta: dict[str, Any] | None = None, usage: dict[str, Any] | None = None) -> bytes:
    frame: dict[str, Any] = {"id": "c1", "choices": []}
    if delta is not None:
        frame["choices"] = [{"index": 0, "delta": delta, "finish_reason": None}]
    if usage is not None:
        frame["usage"] = usage
    return f"data: {json.dumps(frame)}\n\n".encode()


GOOD = _chunk({"content": "hi"})
BAD_CHUNKS = [
    (_chunk({"tool_calls": [{"index": -1, "id": "a", "function": {"name": "f"}}]}),
     "choices[0].delta.tool_calls[0].index must be an integer >= 0"),
    (_chunk({"tool_calls": [{"index": "0", "id": "a", "function": {"name": "f"}}]}),
     "choices[0].delta.tool_calls[0].index must be an integer or null (got str)"),
    (_chunk({"tool_calls": [{"index": 1.5, "id": "a", "function": {"name": "f"}}]}),
     "choices[0].delta.tool_calls[0].index must be an integer or null (got float)"),
    (_chunk({"tool_calls": [{"index": True, "id": "a", "function": {"name": "f"}}]}),
     "choices[0].delta.tool_calls[0].index must be an integer or null (got bool)"),
    (_chunk(usage={"prompt_tokens": -5, "completion_tokens": 2}),
     "usage.prompt_tokens must be an integer >= 0"),
    (_chunk(usage={"prompt_tokens": 5, "completion_tokens": -2}),
     "usage.completion_tokens must be an integer >= 0"),
    (_chunk(usage={"prompt_tokens": 5, "completion_tokens": 2,
                   "prompt_tokens_details": {"cached_tokens": -1}}),
     "usage.prompt_tokens_details.cached_tokens must be an integer >= 0"),
    (_chunk(usage={"prompt_tokens": 5, "completion_tokens": 2,
                   "completion_tokens_details": {"reasoning_tokens": 1.5}}),
     "usage.completion_tokens_details.reasoning_tokens must be an integer or null"),
    (_chunk(usage={"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": -7}),
     "usage.total_tokens must be an integer >= 0"),
]  # fmt: skip


def _error(chunks: list[bytes]) -> mw.ErrorInfo:
    events = mw.replay("openai-chat", chunks)
    message = events[-1].message  # type: ignore[union-attr]
    assert message.stop_reason == "error" and message.error is not None
    assert message.text == "hi"  # content received so far is kept
    return message.error


@pytest.mark.parametrize(("bad", "path"), BAD_CHUNKS)
def test_chunk_indexes_and_counts_must_be_non_negative_integers(bad: bytes, path: str) -> None:
    """Before: index -1 keyed a call that could never finish, a negative count
    corrupted usage and cost."""
    body = GOOD + bad + b"data: [DONE]\n\n"
    whole = _error([body])
    assert whole.kind == "malformed_chunk" and path in whole.message, whole.message
    assert _error([bytes([b]) for b in body]) == whole  # byte by byte
    for i in range(1, len(body)):  # every split point
        assert _error([body[:i], body[i:]]) == whole


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(BAD_CHUNKS), st.lists(st.integers(1, 400), max_size=12))
def test_chunk_validation_at_random_splits(case: tuple[bytes, str], cuts: list[int]) -> None:
    bad, path = case
    body = GOOD + bad + b"data: [DONE]\n\n"
    points = sorted({c for c in cuts if c < len(body)})
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    error = _error(pieces)
    assert error.kind == "malformed_chunk" and path in error.message


def test_valid_indexes_and_counts_still_pass() -> None:
    body = (
        _chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f",
                                                                   "arguments": "{}"}}]})
        + b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
        + _chunk(usage={"prompt_tokens": 0, "completion_tokens": 3, "total_tokens": 3})
        + b"data: [DONE]\n\n"
    )  # fmt: skip
    message = mw.replay("openai-chat", [body])[-1].message  # type: ignore[union-attr]
    assert message.stop_reason == "tool_use" and message.error is None
    assert (message.usage.input, message.usage.output) == (0, 3)


def _named(frames: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {f['type']}\ndata: {json.dumps(f)}\n\n".encode() for f in frames)


_A_START = {
    "type": "message_start",
    "message": {"id": "m", "model": "c", "usage": {"input_tokens": 5, "output_tokens": 1}},
}
_R_START = {
    "type": "response.created",
    "response": {"id": "r", "status": "in_progress", "output": []},
}
OTHER_APIS = [
    ("anthropic-messages",
     _named([{**_A_START, "message": {"id": "m", "usage": {"input_tokens": -5}}}]),
     "message.usage.input_tokens must be an integer >= 0"),
    ("anthropic-messages",
     _named([_A_START, {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                        "usage": {"output_tokens": -3}}]),
     "usage.output_tokens must be an integer >= 0"),
    ("anthropic-messages",
     _named([_A_START, {"type": "content_block_start", "index": -1,
                        "content_block": {"type": "tool_use", "id": "t", "name": "f"}}]),
     "index must be an integer >= 0"),
    ("openai-responses",
     _named([_R_START, {"type": "response.output_item.added", "output_index": -1,
                        "item": {"type": "function_call", "id": "i", "call_id": "c",
                                 "name": "f", "arguments": ""}}]),
     "output_index must be an integer >= 0"),
    ("openai-responses",
     _named([_R_START, {"type": "response.completed",
                        "response": {"id": "r", "status": "completed", "output": [],
                                     "usage": {"input_tokens": -2, "output_tokens": 1}}}]),
     "response.usage.input_tokens must be an integer >= 0"),
    ("google-generative-ai",
     b'data: {"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}],'
     b'"usageMetadata":{"promptTokenCount":-4,"candidatesTokenCount":2}}\n\n',
     "usageMetadata.promptTokenCount must be an integer >= 0"),
]  # fmt: skip


@pytest.mark.parametrize(("api", "body", "path"), OTHER_APIS)
def test_indexes_and_counts_of_the_other_apis(api: str, body: bytes, path: str) -> None:
    """Before: Anthropic summed ``input_tokens: -5`` into usage and keyed a block
    at index -1; Responses did the same with ``output_index``."""
    for chunks in ([body], [bytes([b]) for b in body]):
        message = mw.replay(api, chunks)[-1].message  # type: ignore[union-attr]
        assert message.error is not None and message.error.kind == "malformed_chunk"
        assert path in message.error.message, message.error.message


@pytest.mark.parametrize("limit", ["max_tokens", "context_window"])
@pytest.mark.parametrize("value", [-1, 0, 1.5, True])
def test_model_limits_must_be_positive_integers(limit: str, value: Any) -> None:
    """Before: ``Model(max_tokens=-1)`` was sent as ``max_tokens: -1``."""
    with pytest.raises(mw.ConfigurationError, match=f"Model.{limit} must be a positive integer"):
        mw.Model(id="m", api="openai-chat", provider="local", base_url="http://127.0.0.1:9/v1",
                 **{limit: value})  # fmt: skip
