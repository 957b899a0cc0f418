"""The Chat Completions wire facts live in one module the decoder and both renderers read."""

from __future__ import annotations

import inspect
import re
from types import MappingProxyType

import pytest

import modelwire._apis.openai_chat.render as gateway_render
from modelwire._apis.openai_chat import decode as _decode
from modelwire._apis.openai_chat import mock as mock_render
from modelwire._apis.openai_chat import spec
from modelwire._apis.openai_chat._compat import ChatCompat
from modelwire._apis.openai_chat.decode import ChatDecoder

_RENDERERS = (mock_render, gateway_render)


def test_tables_are_read_only() -> None:
    for table in (spec.FINISH_REASONS, spec.FAILED_FINISH_REASONS, spec.FINISH_OF):
        assert isinstance(table, MappingProxyType)
        with pytest.raises(TypeError):
            table["x"] = "stop"  # type: ignore[index]
    assert isinstance(spec.OWN_FINISH_REASONS, frozenset)


def test_decoder_and_renderers_share_the_table_objects() -> None:
    # vars(): the modules import these names for their own use, not to export them.
    assert vars(_decode)["FINISH_REASONS"] is spec.FINISH_REASONS
    assert vars(_decode)["FAILED_FINISH_REASONS"] is spec.FAILED_FINISH_REASONS
    assert vars(mock_render)["FINISH_OF"] is spec.FINISH_OF
    assert vars(gateway_render)["FINISH_OF"] is spec.FINISH_OF
    assert vars(gateway_render)["OWN_FINISH_REASONS"] is spec.OWN_FINISH_REASONS
    for module in (_decode, *_RENDERERS):
        assert not hasattr(module, "_FINISH"), module.__name__


@pytest.mark.parametrize("reason", sorted(spec.FINISH_OF))
def test_rendered_finish_reason_reads_back(reason: str) -> None:
    assert spec.FINISH_REASONS[spec.FINISH_OF[reason]] == reason
    # The decoder itself, not only its table: what a renderer sends, it reads back.
    finish = ChatDecoder(ChatCompat())._finish_delta(spec.FINISH_OF[reason])
    assert (finish.stop_reason, finish.provider_reason) == (reason, spec.FINISH_OF[reason])


def test_filtered_finish_reads_back_as_a_content_filter_error() -> None:
    finish = ChatDecoder(ChatCompat())._finish_delta(spec.FILTERED_FINISH)
    assert finish.stop_reason == "error"
    assert finish.error_kind == "content_filter"


def test_own_finish_reasons_are_all_known_to_the_decoder() -> None:
    known = spec.FINISH_REASONS.keys() | spec.FAILED_FINISH_REASONS.keys()
    assert known >= spec.OWN_FINISH_REASONS
    assert set(spec.FINISH_OF.values()) <= spec.OWN_FINISH_REASONS


@pytest.mark.parametrize("module", _RENDERERS, ids=lambda m: m.__name__)
def test_renderers_spell_no_wire_literals_of_their_own(module: object) -> None:
    source = inspect.getsource(module)  # type: ignore[arg-type]
    compact = re.sub(r"\s+", "", source)
    assert '{"stop":"stop","length":"length","tool_use":"tool_calls"}' not in compact
    assert '"chat.completion' not in source  # docstrings name it in ``…`` only
    assert '"chatcmpl-"' not in source
    assert '"[DONE]' not in source


def test_gateway_done_and_chunk_pieces_come_from_the_spec() -> None:
    assert gateway_render._DONE == b"data: [DONE]\n\n"
    assert b'"chat.completion.chunk"' in gateway_render._CHUNK_OBJECT
    assert spec.DONE.encode() == _decode._DONE
