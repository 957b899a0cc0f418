"""The Anthropic Messages wire tables live once, in ``anthropic_messages.spec``: the
decoder and the server-side renderer (the gateway's and the mock server's alike) all
read them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import pytest

import modelwire as mw
import modelwire._apis.anthropic_messages.render as gateway_render
from modelwire._apis.anthropic_messages import decode as _decode
from modelwire._apis.anthropic_messages import parse as _parse
from modelwire._apis.anthropic_messages import spec
from modelwire._wire.deltas import Finish
from modelwire.errors import ErrorInfo
from modelwire.testing import render_frames, tool_call
from modelwire.testing._render import render_reply
from modelwire.types import AssistantContent, AssistantMessage, TextContent

SRC = Path(__file__).resolve().parents[1] / "src" / "modelwire"
API = "anthropic-messages"

_Reason = Literal["stop", "length", "tool_use"]
#: The stop reasons of a normal end, which every renderer must name.
_REASONS: tuple[_Reason, ...] = ("stop", "length", "tool_use")


def test_the_readers_share_the_spec_tables() -> None:
    shared = {
        _decode: ("STOP_REASONS", "EVENTS", "REFUSAL"),
        gateway_render: ("STOP_REASONS", "STOP_OF", "REFUSAL", "ID_PREFIX", "TOOL_ID_PREFIX"),
        _parse: ("RAW_PREDICT",),
    }
    for module, names in shared.items():
        for name in names:
            assert vars(module).get(name) is vars(spec)[name], (module.__name__, name)
    # The mock server takes its ids from the same server description.
    assert gateway_render.SERVER.id_prefix is spec.ID_PREFIX
    assert gateway_render.SERVER.tool_id_prefix is spec.TOOL_ID_PREFIX


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


# --------------------------------------------------------------------------- rendered


def _script(reason: _Reason, provider: str | None = None) -> AssistantMessage:
    # A scripted reply ends tool_use only when it holds a call to answer.
    content: list[AssistantContent] = [TextContent(text="hi")]
    if reason == "tool_use":
        content.append(tool_call("read", {"path": "a"}))
    return AssistantMessage(content=content, api=API, provider="mock", model="m",
                            stop_reason=reason, provider_stop_reason=provider)  # fmt: skip


def _sent_stop(script: AssistantMessage) -> tuple[str, str]:
    """The ``stop_reason`` the mock server streams for ``script``, and the one its
    non-streamed body holds."""
    rendered = render_reply(script, API)
    (delta,) = [p for e, p in render_frames(script, API) if e == "message_delta"]
    assert rendered.complete is not None
    body: dict[str, Any] = json.loads(rendered.complete)
    return delta["delta"]["stop_reason"], body["stop_reason"]


@pytest.mark.parametrize("provider", sorted(spec.STOP_REASONS))
def test_the_renderer_passes_on_a_stop_reason_that_means_the_same(provider: str) -> None:
    reason = spec.STOP_REASONS[provider]
    script = _script(reason, provider)
    assert _sent_stop(script) == (provider, provider)
    # The client reads the very reason back, and what it means.
    back = mw.replay(API, render_reply(script, API).pieces).message
    assert (back.stop_reason, back.provider_stop_reason) == (reason, provider)
    message = AssistantMessage(content=[TextContent(text="hi")], api=API, provider="anthropic",
                               model="m", stop_reason=reason,
                               provider_stop_reason=provider)  # fmt: skip
    assert gateway_render.stop_reason(message) == provider


@pytest.mark.parametrize("reason", _REASONS)
def test_the_renderer_names_a_stop_reason_from_the_table(reason: _Reason) -> None:
    assert _sent_stop(_script(reason)) == (spec.STOP_OF[reason], spec.STOP_OF[reason])
    # Another API's own reason is never passed on, even when it is spelled alike.
    message = AssistantMessage(content=[TextContent(text="hi")], api="openai-chat",
                               provider="openai", model="m", stop_reason=reason,
                               provider_stop_reason="end_turn")  # fmt: skip
    assert gateway_render.stop_reason(message) == spec.STOP_OF[reason]


def test_a_failed_message_is_rendered_as_a_refusal() -> None:
    message = AssistantMessage(content=[], api=API, provider="anthropic",
                               model="m", stop_reason="error",
                               error=ErrorInfo(kind="content_filter", message="declined"))  # fmt: skip
    assert gateway_render.stop_reason(message) == spec.REFUSAL
    # Streamed, a refusal ends the message as this API says it, and reads back as one.
    frames = render_frames(message, API)
    (delta,) = [p for e, p in frames if e == "message_delta"]
    assert delta["delta"]["stop_reason"] == spec.REFUSAL
    back = mw.replay(API, render_reply(message, API).pieces).message
    assert back.stop_reason == "error"
    assert back.error is not None and back.error.kind == "content_filter"


def test_the_mock_server_sends_only_events_and_ids_of_the_api() -> None:
    script = _script("tool_use")
    frames = render_frames(script, API)
    assert {event for event, _ in frames} <= spec.EVENTS
    assert all(isinstance(p, dict) and p["type"] == e for e, p in frames)
    start = frames[0][1]
    assert isinstance(start, dict)
    assert start["message"]["id"].startswith(spec.ID_PREFIX)
    calls = [p["content_block"] for e, p in frames
             if e == "content_block_start" and p["content_block"]["type"] == "tool_use"]  # fmt: skip
    assert len(calls) == 1 and calls[0]["id"].startswith(spec.TOOL_ID_PREFIX)
    complete = render_reply(script, API).complete
    assert complete is not None and json.loads(complete)["id"].startswith(spec.ID_PREFIX)


_MAPPINGS = (
    re.compile(r"""["']end_turn["']\s*:\s*["']stop["']"""),
    re.compile(r"""["']stop["']\s*:\s*["']end_turn["']"""),
)


def test_no_other_copy_of_the_stop_reason_tables() -> None:
    own = SRC / "_apis" / "anthropic_messages"
    files = [*sorted((SRC / "gateway").rglob("*.py")),
             *(own / name for name in ("decode.py", "render.py", "parse.py"))]  # fmt: skip
    copies = [f"{path.relative_to(SRC)}: {m.group()}"
              for path in files for pattern in _MAPPINGS
              for m in pattern.finditer(path.read_text(encoding="utf-8"))]  # fmt: skip
    assert copies == []
    # The patterns see a spelled-out table (a check that cannot fail proves nothing).
    assert _MAPPINGS[0].search('{"end_turn": "stop"}')
    assert _MAPPINGS[1].search("{'stop': 'end_turn'}")
