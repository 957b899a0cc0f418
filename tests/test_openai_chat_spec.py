"""The Chat Completions wire facts live in one module the decoder and the server-side
renderer (the gateway's and the mock server's alike) read."""

from __future__ import annotations

import inspect
import json
import re
from types import MappingProxyType
from typing import Any

import pytest

import modelwire as mw
import modelwire._apis.openai_chat.render as gateway_render
from modelwire._apis.openai_chat import decode as _decode
from modelwire._apis.openai_chat import spec
from modelwire._apis.openai_chat._compat import ChatCompat
from modelwire._apis.openai_chat.decode import ChatDecoder
from modelwire.errors import ErrorInfo
from modelwire.testing import render_frames, tool_call
from modelwire.testing._render import render_reply
from modelwire.types import AssistantContent, AssistantMessage, TextContent

API = "openai-chat"


def test_tables_are_read_only() -> None:
    for table in (spec.FINISH_REASONS, spec.FAILED_FINISH_REASONS, spec.FINISH_OF):
        assert isinstance(table, MappingProxyType)
        with pytest.raises(TypeError):
            table["x"] = "stop"  # type: ignore[index]
    assert isinstance(spec.OWN_FINISH_REASONS, frozenset)


def test_decoder_and_renderer_share_the_table_objects() -> None:
    # vars(): the modules import these names for their own use, not to export them.
    assert vars(_decode)["FINISH_REASONS"] is spec.FINISH_REASONS
    assert vars(_decode)["FAILED_FINISH_REASONS"] is spec.FAILED_FINISH_REASONS
    assert vars(gateway_render)["FINISH_OF"] is spec.FINISH_OF
    assert vars(gateway_render)["OWN_FINISH_REASONS"] is spec.OWN_FINISH_REASONS
    assert vars(gateway_render)["FILTERED_FINISH"] is spec.FILTERED_FINISH
    # The mock server's response ids come from the same server description.
    assert gateway_render.SERVER.id_prefix is spec.ID_PREFIX
    for module in (_decode, gateway_render):
        assert not hasattr(module, "_FINISH"), module.__name__


@pytest.mark.parametrize("reason", sorted(spec.FINISH_OF))
def test_rendered_finish_reason_reads_back(reason: str) -> None:
    assert spec.FINISH_REASONS[spec.FINISH_OF[reason]] == reason
    # The decoder itself, not only its table: what a renderer sends, it reads back.
    finish = ChatDecoder(ChatCompat())._finish_delta(spec.FINISH_OF[reason])
    assert (finish.stop_reason, finish.provider_reason) == (reason, spec.FINISH_OF[reason])


def _script(reason: str) -> AssistantMessage:
    # A scripted reply ends tool_use only when it holds a call to answer.
    content: list[AssistantContent] = [TextContent(text="hi")]
    if reason == "tool_use":
        content.append(tool_call("read", {"path": "a"}))
    return AssistantMessage(content=content, api=API, provider="mock", model="m",
                            stop_reason=reason)  # type: ignore[arg-type]  # fmt: skip


@pytest.mark.parametrize("reason", sorted(spec.FINISH_OF))
def test_the_mock_server_sends_the_finish_reason_of_the_table(reason: str) -> None:
    script = _script(reason)
    finishes = [c["finish_reason"] for _, p in render_frames(script, API)
                if isinstance(p, dict) for c in p["choices"] if c["finish_reason"]]  # fmt: skip
    assert finishes == [spec.FINISH_OF[reason]]
    rendered = render_reply(script, API)
    assert rendered.complete is not None
    body: dict[str, Any] = json.loads(rendered.complete)
    assert body["choices"][0]["finish_reason"] == spec.FINISH_OF[reason]
    back = mw.replay(API, rendered.pieces).message
    assert (back.stop_reason, back.provider_stop_reason) == (reason, spec.FINISH_OF[reason])


def test_the_mock_server_sends_only_chunks_of_the_api() -> None:
    script = _script("tool_use")
    frames = render_frames(script, API)
    *chunks, last = [payload for _, payload in frames]
    assert last == spec.DONE
    assert all(isinstance(c, dict) and c["object"] == spec.CHUNK_OBJECT for c in chunks)
    assert all(c["id"].startswith(spec.ID_PREFIX) for c in chunks)
    rendered = render_reply(script, API)
    assert rendered.complete is not None
    body: dict[str, Any] = json.loads(rendered.complete)
    assert body["object"] == spec.COMPLETION_OBJECT
    assert body["id"].startswith(spec.ID_PREFIX)


def test_filtered_finish_reads_back_as_a_content_filter_error() -> None:
    finish = ChatDecoder(ChatCompat())._finish_delta(spec.FILTERED_FINISH)
    assert finish.stop_reason == "error"
    assert finish.error_kind == "content_filter"


def test_a_filtered_answer_is_rendered_with_the_filtered_finish() -> None:
    failed = AssistantMessage(content=[TextContent(text="hi")], api=API, provider="mock",
                              model="m", stop_reason="error",
                              error=ErrorInfo(kind="content_filter", message="filtered"))  # fmt: skip
    assert gateway_render.finish_reason(failed) == spec.FILTERED_FINISH
    back = mw.replay(API, render_reply(failed, API).pieces).message
    assert back.error is not None and back.error.kind == "content_filter"


def test_own_finish_reasons_are_all_known_to_the_decoder() -> None:
    known = spec.FINISH_REASONS.keys() | spec.FAILED_FINISH_REASONS.keys()
    assert known >= spec.OWN_FINISH_REASONS
    assert set(spec.FINISH_OF.values()) <= spec.OWN_FINISH_REASONS


def test_the_renderer_spells_no_wire_literals_of_its_own() -> None:
    source = inspect.getsource(gateway_render)
    compact = re.sub(r"\s+", "", source)
    assert '{"stop":"stop","length":"length","tool_use":"tool_calls"}' not in compact
    assert '"chat.completion' not in source  # docstrings name it in ``…`` only
    assert '"chatcmpl-"' not in source
    assert '"[DONE]' not in source


def test_gateway_done_and_chunk_pieces_come_from_the_spec() -> None:
    assert gateway_render._DONE == b"data: [DONE]\n\n"
    assert b'"chat.completion.chunk"' in gateway_render._CHUNK_OBJECT
    assert spec.DONE.encode() == _decode._DONE
