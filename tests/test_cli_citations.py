"""The CLI shows a cited answer's sources as a numbered list, and ``modelwire trace``
shows provider-run tool blocks and citations."""

from __future__ import annotations

import io

import modelwire as mw
from modelwire._cli.output import EventPrinter, Screen, sources_lines
from modelwire._cli.trace_view import describe
from modelwire.trace import TraceLog

WEB = mw.Citation(kind="url", url="https://w.example/a", title="Page A", cited_text="blue")
WEB_AGAIN = mw.Citation(kind="url", url="https://w.example/a", title="Page A", cited_text="sky")
DOC = mw.Citation(kind="document", document="0", title="Report", start=4, end=9)
SEARCH = mw.ServerToolCall(id="srvtoolu_1", name="web_search", input={"query": "sky"},
                           provider_type="server_tool_use")  # fmt: skip
FOUND = mw.ServerToolResult(tool_call_id="srvtoolu_1", provider_type="web_search_tool_result",
                            result=[], name="web_search")  # fmt: skip
REPLY: list[mw.types.AssistantContent] = [
    SEARCH,
    FOUND,
    mw.TextContent(text="The sky is blue.", citations=(WEB, WEB_AGAIN)),
    mw.TextContent(text=" So says the report.", citations=(DOC,)),
]

ASK = mw.Context(messages=[mw.UserMessage(content="Why is the sky blue?")])


def _message() -> mw.AssistantMessage:
    return mw.AssistantMessage(content=REPLY, api="anthropic-messages", provider="p", model="m",
                               stop_reason="stop")  # fmt: skip


def test_sources_are_numbered_once_each_in_citation_order() -> None:
    assert sources_lines(_message()) == [
        "Sources:",
        "[1] Page A <https://w.example/a>",
        "[2] Report <document 0>",
    ]
    plain = mw.AssistantMessage(content=[mw.TextContent(text="x")], api="a", provider="p",
                                model="m", stop_reason="stop")  # fmt: skip
    assert sources_lines(plain) == []


def test_the_printer_shows_the_sources_after_the_answer() -> None:
    out = io.StringIO()
    printer = EventPrinter(Screen(plain=True, out=out))
    with mw.testing.MockServer([REPLY]) as server:
        for ev in mw.stream_sync(server.model("anthropic-messages"), ASK):
            printer.model_event(ev)
    text = out.getvalue()
    assert "The sky is blue.\n So says the report.\n" in text
    assert text.index("Sources:") > text.index("So says the report.")
    assert "[1] Page A <https://w.example/a>\n[2] Report <document 0>" in text


def test_trace_lines_show_blocks_and_citations() -> None:
    log = TraceLog()
    with mw.testing.MockServer([REPLY]) as server:
        msg = mw.complete_sync(server.model("anthropic-messages"), ASK, trace=log)
    assert msg.stop_reason == "stop"
    lines = [line for record in log.of("event") for line in describe(record)]
    assert any("block" in ln and "server_tool_call web_search (id srvtoolu_1" in ln for ln in lines)
    assert any("server_tool_result web_search (for srvtoolu_1, ok)" in ln for ln in lines)
    assert any(ln.startswith("citation") and "Page A <https://w.example/a>" in ln for ln in lines)
    (final,) = log.of("message")
    shown = "\n".join(describe(final))
    assert "(2 citations)" in shown and "server_tool_call web_search" in shown
