"""The error tree (DESIGN §2)."""

from __future__ import annotations

from typing import Any

import pytest

import modelwire as mw
from modelwire import errors

DESIGN_KINDS = {
    "authentication", "permission", "not_found", "rate_limit", "overloaded",
    "context_overflow", "invalid_request", "server", "provider_stream", "connect",
    "timeout", "stream_interrupted", "malformed_chunk", "truncated_stream",
    "tool_call_protocol", "event_too_large", "content_filter", "output_invalid", "aborted",
}  # fmt: skip


def test_every_design_kind_has_exactly_one_class() -> None:
    assert errors.STREAM_ERROR_KINDS == DESIGN_KINDS
    for kind in DESIGN_KINDS:
        cls = errors.error_class_for_kind(kind)
        assert cls.kind == kind
        assert issubclass(cls, errors.StreamError)
        assert issubclass(cls, mw.ModelwireError)


def test_configuration_error_is_a_value_error_and_missing_key_is_one() -> None:
    assert issubclass(mw.ConfigurationError, ValueError)
    assert issubclass(mw.MissingAPIKeyError, mw.ConfigurationError)
    assert mw.errors is errors


@pytest.mark.parametrize("kind", sorted(DESIGN_KINDS))
def test_error_info_round_trip(kind: str) -> None:
    exc = errors.error_class_for_kind(kind)(
        "boom", status=503, retry_after=1.5, code="E42", request_id="req_7", retryable=True
    )
    info = exc.to_info()
    assert (info.kind, info.message, info.status, info.retry_after) == (kind, "boom", 503, 1.5)
    assert (info.code, info.request_id, info.retryable) == ("E42", "req_7", True)
    back = errors.from_info(info)
    assert type(back) is type(exc)
    assert str(back) == "boom"
    assert (back.code, back.request_id, back.retryable) == ("E42", "req_7", True)
    # Every field survives JSON, on its own and on a failed message.
    assert mw.from_json(mw.to_json(info), mw.ErrorInfo) == info
    msg = mw.AssistantMessage(content=(), api="openai-chat", provider="p", model="m",
                              usage=mw.Usage(), stop_reason="error", error=info)  # fmt: skip
    assert mw.from_json(mw.to_json(msg), mw.AssistantMessage).error == info


# Kinds where sending the same request again may succeed (DESIGN §2c: decided once).
TRANSIENT = {"rate_limit", "overloaded", "server", "connect", "timeout", "stream_interrupted",
             "truncated_stream", "provider_stream"}  # fmt: skip


@pytest.mark.parametrize("kind", sorted(DESIGN_KINDS))
def test_retryable_defaults_to_the_kind_and_an_explicit_decision_wins(kind: str) -> None:
    from modelwire._providers._classify import RETRYABLE_KINDS, is_retryable

    cls = errors.error_class_for_kind(kind)
    assert cls("x").retryable is (kind in TRANSIENT) is cls("x").to_info().retryable
    assert (kind in RETRYABLE_KINDS) is (kind in TRANSIENT) is is_retryable(kind)
    assert cls("x", retryable=kind not in TRANSIENT).retryable is not (kind in TRANSIENT)
    assert is_retryable(kind, 429, "insufficient_quota") is False  # out of quota: never


@pytest.mark.parametrize(
    ("args", "kind", "code", "retryable"),
    [
        ({"message": "You exceeded your current quota", "code": "insufficient_quota", "status": 429},
         "rate_limit", "insufficient_quota", False),
        ({"message": "slow down", "type_": "rate_limit_error"}, "rate_limit", "rate_limit_error", True),
        ({"message": "Overloaded", "type_": "overloaded_error"}, "overloaded", "overloaded_error", True),
        ({"message": "bad", "type_": "invalid_request_error", "code": "bad_param"},
         "invalid_request", "bad_param", False),
        ({"message": "prompt is too long: 210000 tokens > 200000 maximum"},
         "context_overflow", None, False),
        ({"message": "boom", "type_": "ThrottlingException", "status": 429}, "rate_limit",
         "ThrottlingException", True),
        ({"message": "mystery"}, "provider_stream", None, True),
    ],
)  # fmt: skip
def test_in_band_errors_carry_the_code_request_id_and_retry_decision(
    args: dict[str, Any], kind: str, code: str | None, retryable: bool
) -> None:
    from modelwire._providers._classify import in_band_error

    err = in_band_error(**args, request_id="req_in_band")
    info = err.to_info()
    assert (info.kind, info.code, info.retryable) == (kind, code, retryable)
    assert info.request_id == "req_in_band"


def test_in_band_errors_through_a_decoder_keep_code_and_decision() -> None:
    body = (b'data: {"error": {"message": "You exceeded your current quota", '
            b'"type": "insufficient_quota", "code": "insufficient_quota"}}\n\n')  # fmt: skip
    info = mw.replay("openai-chat", [body]).message.error
    assert info is not None and info.code == "insufficient_quota" and info.retryable is False


def test_output_invalid_is_a_kind_with_its_class() -> None:
    info = errors.OutputInvalidError("parsed: field `x` is required").to_info()
    assert info.kind == "output_invalid" and info.retryable is False
    msg = mw.AssistantMessage(content=(), api="openai-chat", provider="p", model="m",
                              usage=mw.Usage(), stop_reason="error", error=info)  # fmt: skip
    with pytest.raises(errors.OutputInvalidError):
        msg.raise_for_error()


def test_unknown_kind_falls_back_to_stream_error() -> None:
    assert errors.error_class_for_kind("nope") is errors.StreamError


def test_tree_is_drawn_in_docstring() -> None:
    doc = errors.__doc__ or ""
    for name in errors.__all__:
        if name[0].isupper():
            assert name in doc, name


@pytest.mark.parametrize(
    ("type_", "kind", "retryable"),
    [("overloaded_error", "overloaded", True), ("request_too_large", "invalid_request", False),
     ("timeout_error", "server", True), ("billing_error", "provider_stream", False)],
)  # fmt: skip
def test_an_anthropic_error_event_is_classified_once_with_its_request_id(
    type_: str, kind: str, retryable: bool
) -> None:
    error = {"type": "error", "error": {"type": type_, "message": "no"}, "request_id": "req_011"}
    body = b"event: error\ndata: " + mw.to_json(error) + b"\n\n"
    info = mw.replay("anthropic-messages", [body]).message.error
    assert info is not None and (info.kind, info.code, info.request_id) == (kind, type_, "req_011")
    assert info.retryable is retryable


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
def test_a_failure_after_the_200_carries_the_request_id_of_the_response_head(sync: bool) -> None:
    # An in-band error (and a truncation) arrives after the status line: the request
    # id a support ticket needs is only in the response headers, and the key the
    # server echoed into it is redacted.
    from modelwire.testing import MockServer, Reply

    key = "sk-req-id-test-4f1d2c"
    in_band = (b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
               b'data: {"error":{"message":"Overloaded","type":"overloaded_error"}}\n\n')  # fmt: skip
    truncated = b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
    ctx = mw.Context(messages=[mw.UserMessage(content="hi")])
    replies = [
        Reply(body=in_band, headers={"x-request-id": "req_in_band_1"}),
        Reply(body=truncated, headers={"request-id": f"req_{key}"}),
        Reply(body=in_band),
    ]
    with MockServer(replies) as server:
        model = server.model("openai-chat")
        got = []
        for _ in replies:
            if sync:
                got.append(mw.complete_sync(model, ctx, api_key=key, max_retries=0))
            else:
                import asyncio

                got.append(asyncio.run(mw.complete(model, ctx, api_key=key, max_retries=0)))
    infos = [m.error for m in got]
    assert all(i is not None for i in infos)
    assert [(i.kind, i.request_id) for i in infos if i is not None] == [
        ("overloaded", "req_in_band_1"),
        ("truncated_stream", "req_[redacted]"),
        ("overloaded", None),
    ]
    assert [m.text for m in got] == ["Hi", "Hi", "Hi"]
