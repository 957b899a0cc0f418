"""The Anthropic Messages wire tables live once, in ``anthropic_messages.spec``: the
decoder, the mock server's renderer and the gateway's renderer all read them."""

from __future__ import annotations

import re
from pathlib import Path
from types import MappingProxyType
from typing import Literal

import pytest

import modelwire._apis.anthropic_messages.render as gateway_render
from modelwire._apis._mock import ScriptedReply
from modelwire._apis.anthropic_messages import decode as _decode
from modelwire._apis.anthropic_messages import mock as _render
from modelwire._apis.anthropic_messages import spec
from modelwire._wire.deltas import Finish
from modelwire.errors import ErrorInfo
from modelwire.types import AssistantMessage, TextContent, Usage

SRC = Path(__file__).resolve().parents[1] / "src" / "modelwire"

_Reason = Literal["stop", "length", "tool_use"]
#: The stop reasons of a normal end, which every renderer must name.
_REASONS: tuple[_Reason, ...] = ("stop", "length", "tool_use")


def test_the_three_sides_share_the_spec_tables() -> None:
    shared = {
        _decode: ("STOP_REASONS", "EVENTS", "REFUSAL"),
        _render: ("STOP_REASONS", "STOP_OF", "ID_PREFIX"),
        gateway_render: ("STOP_REASONS", "STOP_OF", "REFUSAL"),
    }
    for module, names in shared.items():
        for name in names:
            assert vars(module).get(name) is vars(spec)[name], (module.__name__, name)


def test_the_tables_are_read_only() -> None:
    assert isinstance(spec.STOP_REASONS, MappingProxyType)
    assert isinstance(spec.STOP_OF, MappingProxyType)
    assert isinstance(spec.EVENTS, frozenset)


def test_every_rendered_stop_reason_reads_back_as_itself() -> None:
    assert set(spec.STOP_OF) == set(_REASONS)
    for reason, provider in spec.STOP_OF.items():
        assert spec.STOP_REASONS[provider] == reason


def test_the_documented_stop_reasons_are_known() -> None:
    assert set(spec.STOP_REASONS) == {
        "end_turn", "stop_sequence", "pause_turn", "compaction", "tool_use",
        "max_tokens", "model_context_window_exceeded",
    }  # fmt: skip
    assert spec.REFUSAL not in spec.STOP_REASONS


@pytest.mark.parametrize("provider", sorted(spec.STOP_REASONS))
def test_the_decoder_finishes_as_the_table_says(provider: str) -> None:
    assert _decode._finish(provider) == Finish(spec.STOP_REASONS[provider], provider)


def test_the_decoder_reads_a_refusal_as_a_content_filter_error() -> None:
    finish = _decode._finish(spec.REFUSAL)
    assert (finish.stop_reason, finish.error_kind) == ("error", "content_filter")


@pytest.mark.parametrize("provider", sorted(spec.STOP_REASONS))
def test_both_renderers_pass_on_a_stop_reason_that_means_the_same(provider: str) -> None:
    reason = spec.STOP_REASONS[provider]
    reply = ScriptedReply(content=(), stop_reason=reason, usage=Usage(),
                          provider_stop_reason=provider)  # fmt: skip
    assert _render._stop_reason(reply) == provider
    message = AssistantMessage(content=[TextContent(text="hi")], api="anthropic-messages",
                               provider="anthropic", model="m", stop_reason=reason,
                               provider_stop_reason=provider)  # fmt: skip
    assert gateway_render.stop_reason(message) == provider


@pytest.mark.parametrize("reason", _REASONS)
def test_both_renderers_name_a_stop_reason_from_the_table(reason: _Reason) -> None:
    reply = ScriptedReply(content=(), stop_reason=reason, usage=Usage())
    assert _render._stop_reason(reply) == spec.STOP_OF[reason]
    message = AssistantMessage(content=[TextContent(text="hi")], api="openai-chat",
                               provider="openai", model="m", stop_reason=reason,
                               provider_stop_reason="end_turn")  # fmt: skip
    assert gateway_render.stop_reason(message) == spec.STOP_OF[reason]


def test_the_gateway_renders_a_failed_message_as_a_refusal() -> None:
    message = AssistantMessage(content=[], api="anthropic-messages", provider="anthropic",
                               model="m", stop_reason="error",
                               error=ErrorInfo(kind="content_filter", message="declined"))  # fmt: skip
    assert gateway_render.stop_reason(message) == spec.REFUSAL


def test_the_mock_sends_only_events_of_the_api() -> None:
    reply = ScriptedReply(content=(TextContent(text="hi"),), stop_reason="stop", usage=Usage())
    frames = _render.render(reply, "m", "r1", 8)
    assert {event for event, _ in frames} <= spec.EVENTS
    start = frames[0][1]
    assert isinstance(start, dict)
    assert start["message"]["id"].startswith(spec.ID_PREFIX)


_MAPPINGS = (
    re.compile(r"""["']end_turn["']\s*:\s*["']stop["']"""),
    re.compile(r"""["']stop["']\s*:\s*["']end_turn["']"""),
)


def test_no_other_copy_of_the_stop_reason_tables() -> None:
    own = SRC / "_apis" / "anthropic_messages"
    files = [*sorted((SRC / "gateway").rglob("*.py")),
             *(own / name for name in ("mock.py", "decode.py", "render.py", "parse.py"))]  # fmt: skip
    copies = [f"{path.relative_to(SRC)}: {m.group()}"
              for path in files for pattern in _MAPPINGS
              for m in pattern.finditer(path.read_text(encoding="utf-8"))]  # fmt: skip
    assert copies == []
