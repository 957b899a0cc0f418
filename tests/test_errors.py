"""The error tree (DESIGN §2)."""

from __future__ import annotations

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
    exc = errors.error_class_for_kind(kind)("boom", status=503, retry_after=1.5)
    info = exc.to_info()
    assert (info.kind, info.message, info.status, info.retry_after) == (kind, "boom", 503, 1.5)
    back = errors.from_info(info)
    assert type(back) is type(exc)
    assert str(back) == "boom"


def test_unknown_kind_falls_back_to_stream_error() -> None:
    assert errors.error_class_for_kind("nope") is errors.StreamError


def test_tree_is_drawn_in_docstring() -> None:
    doc = errors.__doc__ or ""
    for name in errors.__all__:
        if name[0].isupper():
            assert name in doc, name
