"""The content model beyond text, thinking, images and client tool calls: provider-run
tools and their results, citations, opaque provider items, documents and audio —
values that round-trip through JSON, and the assembler seam that carries them."""

from __future__ import annotations

from typing import Any

import pytest

import modelwire as mw
from modelwire._wire.assemble import Assembler
from modelwire.events import BlockEvent, CitationEvent, Event
from modelwire.ext import BlockComplete, CitationDelta, EndOfStream, Finish, TextDelta


def ANY(value: Any) -> Any:  # a wrong type on purpose, past the type checker
    return value


CITE = mw.Citation(
    kind="url",
    url="https://example.com/a",
    title="A",
    cited_text="the sky is blue",
    start=0,
    end=15,
    raw='{"type":"web_search_result_location","url":"https://example.com/a"}',
)
CALL = mw.ServerToolCall(
    id="srvtoolu_1",
    name="web_search",
    input={"query": "sky"},
    provider_type="server_tool_use",
    raw='{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"sky"}}',
)
RESULT = mw.ServerToolResult(
    tool_call_id="srvtoolu_1",
    provider_type="web_search_tool_result",
    result=[{"type": "web_search_result", "url": "https://example.com/a"}],
)
ITEM = mw.ProviderItem(
    api="anthropic-messages", provider_type="compaction", data='{"type":"compaction","content":"x"}'
)


def test_every_new_block_round_trips_through_json() -> None:
    msg = mw.AssistantMessage(
        content=[CALL, RESULT, mw.TextContent(text="Blue.", citations=[CITE]), ITEM],
        api="anthropic-messages",
        provider="anthropic",
        model="m",
        stop_reason="stop",
    )
    back = mw.from_json(mw.to_json(msg), mw.AssistantMessage)
    assert back == msg
    assert back.server_tool_calls == (CALL,)
    assert back.tool_calls == ()  # a provider-run tool is never a client call
    user = mw.UserMessage(
        content=[
            mw.DocumentContent(mime_type="application/pdf", data="JVBERi0=", title="Paper"),
            mw.DocumentContent(mime_type="application/pdf", url="https://example.com/p.pdf"),
            mw.DocumentContent(mime_type="application/pdf", file_id="file_123"),
            mw.AudioContent(data="UklGRg==", mime_type="audio/wav"),
        ]
    )
    assert mw.from_json(mw.to_json(user), mw.UserMessage) == user
    result = mw.ToolResultMessage(
        tool_call_id="c1",
        tool_name="read",
        content=[mw.DocumentContent(mime_type="text/plain", data="aGk=")],
    )
    assert mw.from_json(mw.to_json(result), mw.ToolResultMessage) == result
    assert ITEM.value == {"type": "compaction", "content": "x"}


@pytest.mark.parametrize(
    "sources",
    [{}, {"data": "eA==", "url": "https://e.com/x.pdf"}, {"url": "u", "file_id": "f", "data": "d"}],
)
def test_a_document_needs_exactly_one_source(sources: dict[str, str]) -> None:
    with pytest.raises(mw.ConfigurationError, match="exactly one of data=, url= or file_id="):
        mw.DocumentContent(mime_type="application/pdf", **sources)


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: mw.Citation(kind=""), "Citation.kind must be a non-empty string"),
        (
            lambda: mw.TextContent(text="x", citations=[ANY("a")]),
            r"citations\[0\] must be a Citation",
        ),
        (
            lambda: mw.ServerToolCall(id="i", name="n", input=ANY([]), provider_type="t"),
            "input must be a dict",
        ),
        (lambda: mw.ProviderItem(api="a", provider_type="t", data=""), "data must be a non-empty"),
        (lambda: mw.AudioContent(data="x", mime_type=""), "mime_type must be a non-empty"),
        (lambda: mw.UserMessage(content=[ANY(CALL)]), r"content\[0\] must be one of"),
    ],
)
def test_bad_values_are_refused_with_their_field(make: Any, says: str) -> None:
    with pytest.raises(mw.ConfigurationError, match=says):
        make()


def test_model_input_names_the_known_kinds() -> None:
    base: dict[str, Any] = {
        "id": "m",
        "api": "openai-chat",
        "provider": "p",
        "base_url": "http://x",
    }
    assert mw.Model(**base, input=("text", "image", "document", "audio")).input == (
        "text",
        "image",
        "document",
        "audio",
    )
    with pytest.raises(mw.ConfigurationError, match=r"Model\.input names 'video'"):
        mw.Model(**base, input=("text", "video"))
    with pytest.raises(mw.ConfigurationError, match="got the string 'text'"):
        mw.Model(**base, input=ANY("text"))


def test_whole_blocks_and_citations_through_the_assembler() -> None:
    asm = Assembler(api="anthropic-messages", tools_declared=False)
    out: list[Event] = []
    asm.start(out)
    asm.feed(
        [
            BlockComplete(0, CALL),
            BlockComplete(1, RESULT),
            CitationDelta(2, CITE),  # a citation may come before its text
            TextDelta(2, "Blue."),
            Finish("stop", "end_turn"),
            EndOfStream(),
        ],
        out,
    )
    types = [e.type for e in out]
    assert types == [
        "start",
        "block",
        "block",
        "text_start",
        "citation",
        "text_delta",
        "text_end",
        "done",
    ]
    blocks = [e for e in out if isinstance(e, BlockEvent)]
    assert [(b.content_index, b.content) for b in blocks] == [(0, CALL), (1, RESULT)]
    cite = next(e for e in out if isinstance(e, CitationEvent))
    assert (cite.content_index, cite.citation) == (2, CITE)
    # The snapshot at the citation has the citation and no text yet.
    assert cite.partial.content[2] == mw.TextContent(text="", citations=(CITE,))
    msg = asm.message
    assert msg is not None
    # No tools were declared, yet a provider-run tool is no protocol violation, and the
    # response ends as the provider said: stop, not tool_use.
    assert (msg.stop_reason, msg.error) == ("stop", None)
    assert msg.content == (CALL, RESULT, mw.TextContent(text="Blue.", citations=(CITE,)))


def test_a_whole_block_cannot_reuse_an_open_key() -> None:
    asm = Assembler(api="x")
    out: list[Event] = []
    asm.feed([TextDelta(0, "a")], out)
    with pytest.raises(mw.errors.MalformedChunkError, match="block 0 is a text block"):
        asm.feed([BlockComplete(0, ITEM)], out)
