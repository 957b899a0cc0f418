"""The server side of ``cohere-chat``: modelwire's events → Cohere's v2 chat stream, and
a final message → the whole chat response (``cohere_chat.render``).

Shapes are checked against Cohere's references — https://docs.cohere.com/v2/reference/chat-stream
(events), https://docs.cohere.com/v2/docs/streaming (order),
https://docs.cohere.com/docs/rag-streaming (citations),
https://docs.cohere.com/v2/reference/chat (the whole response) — and against the
recorded streams of tests/data/cohere-chat (see its SOURCES.md), which the renderer
must write back byte for byte from their own events.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import modelwire as mw
from eventlist import final, plain
from modelwire._apis._server.request import GatewayRequest
from modelwire._apis.cohere_chat import spec
from modelwire._apis.cohere_chat.render import Renderer, message_body
from modelwire.events import ErrorEvent, Event, RestartEvent
from modelwire.testing import deltas_for, events_from_deltas

API = "cohere-chat"
DATA = Path(__file__).parent / "data" / "cohere-chat"
ORIGIN = mw.Model(id="m", api=API, provider="mock", base_url="http://127.0.0.1")
READ = mw.ToolDefinition(name="read", description="Read a file", parameters={"type": "object"})
USAGE = mw.Usage(input=12, output=7)
# A client's request (it has a conversation): with tools a call may come, without none can.
HI = [mw.UserMessage(content="hi")]
WITH_TOOLS = GatewayRequest(model="m", context=mw.Context(messages=HI, tools=[READ]),
                            options={}, stream=True)  # fmt: skip
NO_TOOLS = GatewayRequest(model="m", context=mw.Context(messages=HI), options={}, stream=True)


def msg(*content: Any, stop: Any = "stop", **kw: Any) -> mw.AssistantMessage:
    return mw.AssistantMessage(content=list(content), api=API, provider="p", model="m",
                               stop_reason=stop, usage=kw.pop("usage", USAGE), **kw)  # fmt: skip


def events_of(script: Any, pc: int = 4, origin: mw.Model = ORIGIN) -> list[Event]:
    return events_from_deltas(deltas_for(script, piece_chars=pc), origin)


def render(script: Any, request: GatewayRequest = WITH_TOOLS, rid: str = "r-1", pc: int = 4,
           origin: mw.Model = ORIGIN) -> bytes:  # fmt: skip
    r = Renderer(request, rid)
    return b"".join(r.feed(e) for e in events_of(script, pc, origin))


def frames(body: bytes) -> list[tuple[str | None, Any]]:
    """``(event line, payload)`` of each SSE event (``[DONE]`` kept as a string)."""
    out: list[tuple[str | None, Any]] = []
    for block in body.decode().split("\n\n"):
        if not block:
            continue
        name = None
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            else:
                data = line.removeprefix("data: ")
                out.append((name, data if data == spec.DONE else json.loads(data)))
    return out


def content_of(m: mw.AssistantMessage) -> list[Any]:
    out: list[Any] = []
    for b in m.content:
        if isinstance(b, mw.TextContent):
            out.append(("text", b.text, [(c.document, c.cited_text) for c in b.citations]))
        elif isinstance(b, mw.ThinkingContent):
            out.append(("thinking", b.thinking))
        elif isinstance(b, mw.ToolCall):
            out.append(("call", b.id, b.name, b.arguments))
    return out


CITE = mw.Citation(kind="url", document="doc_1", cited_text="Paris", start=0, end=5,
                   title="Guide", url="https://guide.example")  # fmt: skip
SCRIPTS: dict[str, Any] = {
    "text": msg(mw.TextContent(text="Bonjour ! Je suis là 🙂.")),
    "texts": msg(mw.TextContent(text="one "), mw.TextContent(text="two")),
    "thinking": msg(
        mw.ThinkingContent(thinking="2 - 5 is -3.", signature="s"), mw.TextContent(text="-3.")
    ),
    "plan and parallel calls": msg(
        mw.TextContent(text="I will read both."),
        mw.ToolCall(id="read_1", name="read", arguments={"path": "a"}),
        mw.ToolCall(
            id="read_2",
            name="read",
            arguments={"path": "é\n"},
            raw_arguments='{\n    "path": "é\\n"\n}',
        ),
        stop="tool_use",
    ),
    "thinking, plan, call": msg(
        mw.ThinkingContent(thinking="hmm"),
        mw.TextContent(text="Plan."),
        mw.ToolCall(id="r", name="read", arguments={}),
        stop="tool_use",
    ),
    "citations": msg(mw.TextContent(text="Paris is nice.", citations=(CITE,))),
    "length": msg(mw.TextContent(text="The ocean,"), stop="length"),
}


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_the_rendered_stream_replays_to_the_script(name: str) -> None:
    script = SCRIPTS[name]
    for pc in (1, 5, 100):
        body = render(script, pc=pc)
        whole = mw.replay(API, body)
        got = final(whole)
        assert content_of(got) == content_of(script)
        assert got.stop_reason == script.stop_reason
        assert (got.usage.input, got.usage.output) == (12, 7)
        assert got.response_id == "r-1"
        # The same events whatever the reads' sizes.
        assert plain(mw.replay(API, [body[i : i + 7] for i in range(0, len(body), 7)])) == plain(
            whole
        )


def test_each_feed_is_whole_events_named_by_their_type() -> None:
    r = Renderer(WITH_TOOLS, "r-1")
    for event in events_of(SCRIPTS["plan and parallel calls"], pc=3):
        out = r.feed(event)
        assert out == b"" or out.endswith(b"\n\n")
        for name, payload in frames(out):
            # Every event names its type on the event: line too; [DONE] alone has none.
            assert name == (None if payload == spec.DONE else payload["type"])
            assert name is None or name in spec.EVENTS


@pytest.mark.parametrize("path", sorted(DATA.glob("*.sse")), ids=lambda p: p.name)
def test_a_recorded_stream_is_written_back_from_its_own_events(path: Path) -> None:
    """Recorded Cohere streams, decoded then rendered, are the same bytes — but for
    what modelwire does not keep (``tokens`` and ``cached_tokens`` beside the billed
    units; the error text it words itself) and a stream cut before message-end."""
    src = path.read_bytes()
    events = mw.replay(API, src, ORIGIN)
    r = Renderer(WITH_TOOLS, final(events).response_id or "")
    body = b"".join(r.feed(e) for e in events)
    got, want = body.split(b"\n\n"), src.split(b"\n\n")
    if path.name == "truncated.sse":
        assert got[: len(want) - 1] == want[:-1]
        assert frames(body)[-1][1]["delta"]["finish_reason"] == "ERROR"
        return
    end = next(i for i, e in enumerate(want) if e.startswith(b"event: message-end"))
    assert got[:end] == want[:end]  # every event before message-end, byte for byte
    sent, recorded = frames(got[end])[0][1]["delta"], frames(want[end])[0][1]["delta"]
    assert sent["finish_reason"] == recorded["finish_reason"]
    if "usage" in sent:
        assert sent["usage"]["billed_units"] == recorded["usage"]["billed_units"]
    if path.name == "error-finish.sse":
        assert got[end + 1 :] == [b""]  # nothing after the error, [DONE] neither
    else:
        assert got[end + 1 :] == want[end + 1 :]


def test_a_tool_turn_has_cohere_s_shapes() -> None:
    # https://docs.cohere.com/v2/reference/chat-stream: message-start carries the id
    # (first, as recorded) and an empty message; tool calls and the plan as below.
    body = render(SCRIPTS["plan and parallel calls"], pc=100)
    assert body.startswith(b'event: message-start\ndata: {"id":"r-1","type":"message-start",')
    fs = frames(body)
    assert fs[0][1]["delta"] == {"message": {"role": "assistant", "content": [], "tool_plan": "",
                                             "tool_calls": [], "citations": []}}  # fmt: skip
    kinds = [n for n, _ in fs]
    assert kinds == ["message-start", "tool-plan-delta", "tool-call-start", "tool-call-delta",
                     "tool-call-end", "tool-call-start", "tool-call-delta", "tool-call-end",
                     "message-end", None]  # fmt: skip
    # The plan has no index; calls are numbered from 0 apart from content.
    assert fs[1][1] == {"type": "tool-plan-delta",
                        "delta": {"message": {"tool_plan": "I will read both."}}}  # fmt: skip
    assert fs[5][1] == {"type": "tool-call-start", "index": 1, "delta": {"message": {
        "tool_calls": {"id": "read_2", "type": "function",
                       "function": {"name": "read", "arguments": ""}}}}}  # fmt: skip
    # Arguments are streamed as the text the backend sent, not re-encoded.
    assert fs[6][1]["delta"]["message"]["tool_calls"]["function"]["arguments"] == (
        '{\n    "path": "é\\n"\n}'
    )
    assert fs[-2][1] == {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL", "usage": {
        "billed_units": {"input_tokens": 12, "output_tokens": 7},
        "tokens": {"input_tokens": 12, "output_tokens": 7}, "cached_tokens": 0}}}  # fmt: skip
    assert fs[-1] == (None, "[DONE]")


def test_thinking_is_a_content_block_before_the_text() -> None:
    # https://docs.cohere.com/docs/reasoning: a "thinking" content block, then the text.
    fs = frames(render(SCRIPTS["thinking"], pc=100))
    assert fs[1][1] == {"type": "content-start", "index": 0, "delta": {"message": {
        "content": {"type": "thinking", "thinking": ""}}}}  # fmt: skip
    assert fs[2][1]["delta"]["message"]["content"] == {"thinking": "2 - 5 is -3."}
    assert fs[4][1] == {"type": "content-start", "index": 1, "delta": {"message": {
        "content": {"type": "text", "text": ""}}}}  # fmt: skip


def test_text_is_content_when_the_request_declares_no_tools() -> None:
    script = SCRIPTS["plan and parallel calls"]
    planned = [n for n, _ in frames(render(script, WITH_TOOLS))]
    live = [n for n, _ in frames(render(script, NO_TOOLS))]
    assert "tool-plan-delta" in planned and "content-start" not in planned
    assert "tool-plan-delta" not in live and live[1:4] == ["content-start", "content-delta",
                                                           "content-delta"]  # fmt: skip
    # Without tools, text goes out as it comes; with them it waits for what follows.
    text_only = events_of("Hello there")
    r, held = Renderer(NO_TOOLS, ""), Renderer(WITH_TOOLS, "")
    assert [bool(r.feed(e)) for e in text_only][:3] == [True, True, True]
    assert [bool(held.feed(e)) for e in text_only][1:3] == [False, False]
    assert final(mw.replay(API, render(script, NO_TOOLS))).text == "I will read both."


def test_citations_follow_the_text_they_cite() -> None:
    # https://docs.cohere.com/docs/rag-streaming: citation-start holds the whole
    # citation, numbered apart from content; a citation modelwire built (no Cohere
    # object) is a document source with the span and the cited text.
    fs = frames(render(SCRIPTS["citations"], pc=100))
    kinds = [n for n, _ in fs]
    assert kinds[1:6] == ["content-start", "content-delta", "citation-start", "citation-end",
                          "content-end"]  # fmt: skip
    assert fs[3][1] == {"type": "citation-start", "index": 0, "delta": {"message": {"citations": {
        "start": 0, "end": 5, "text": "Paris", "sources": [{"type": "document", "id": "doc_1",
        "document": {"id": "doc_1", "title": "Guide", "url": "https://guide.example"}}],
        "type": "TEXT_CONTENT"}}}}  # fmt: skip
    assert fs[4][1] == {"type": "citation-end", "index": 0}
    got = final(mw.replay(API, render(SCRIPTS["citations"])))
    (c,) = got.content[0].citations  # type: ignore[union-attr]
    assert (c.url, c.title, c.start, c.end, c.document) == (
        "https://guide.example", "Guide", 0, 5, "doc_1")  # fmt: skip


def test_a_cohere_citation_is_sent_as_received_and_once() -> None:
    raw = ('{"start":0,"end":4,"text":"Dock","sources":[{"type":"document","id":"a",'
           '"document":{"id":"a"}},{"type":"tool","id":"b","tool_output":{"x":1}}],'
           '"type":"TEXT_CONTENT"}')  # fmt: skip
    # Two sources: modelwire keeps one Citation per source, Cohere sent one citation.
    two = (mw.Citation(kind="document", document="a", raw=raw),
           mw.Citation(kind="other", document="b", raw=raw))  # fmt: skip
    body = render(msg(mw.TextContent(text="Dock 7", citations=two)))
    assert body.count(b"event: citation-start") == 1 and raw.encode() in body
    # From another API, its own raw object means nothing to Cohere: built from fields.
    other = mw.Model(id="m", api="anthropic-messages", provider="p", base_url="http://h")
    foreign = mw.Citation(kind="document", document="0", cited_text="Dock", raw='{"type":"x"}')
    body = render(msg(mw.TextContent(text="Dock 7", citations=(foreign,))), origin=other)
    (cite,) = [p for n, p in frames(body) if n == "citation-start"]
    assert cite["delta"]["message"]["citations"]["text"] == "Dock"
    assert cite["delta"]["message"]["citations"]["end"] == 6  # no end given: the text's


def test_provider_stop_reasons_usage_and_ids() -> None:
    stop = msg(mw.TextContent(text="x"), provider_stop_reason="STOP_SEQUENCE")
    assert frames(render(stop))[-2][1]["delta"]["finish_reason"] == "STOP_SEQUENCE"
    wrong = msg(mw.TextContent(text="x"), provider_stop_reason="MAX_TOKENS")  # means length
    assert frames(render(wrong))[-2][1]["delta"]["finish_reason"] == "COMPLETE"
    length = frames(render(SCRIPTS["length"]))[-2][1]["delta"]["finish_reason"]
    assert length == "MAX_TOKENS"
    # No cache split in Cohere's counts: every prompt token is input, cached_tokens the reads.
    cached = msg(mw.TextContent(text="x"), usage=mw.Usage(input=3, output=2, cache_read=5,
                                                          cache_write=1))  # fmt: skip
    usage = frames(render(cached))[-2][1]["delta"]["usage"]
    assert usage["billed_units"] == {"input_tokens": 9, "output_tokens": 2}
    assert usage["cached_tokens"] == 5
    assert frames(render("x", rid=""))[0][1]["id"] == spec.MOCK_ID


def test_an_error_event_is_message_end_with_the_error() -> None:
    failed = msg(mw.TextContent(text="Le port"), stop="error",
                 error=mw.ErrorInfo(kind="provider_stream", message="it broke"))  # fmt: skip
    r = Renderer(WITH_TOOLS, "r-1")  # the text is held until the error: then sent
    outs = [r.feed(e) for e in events_of(failed)]
    # https://docs.cohere.com/v2/reference/chat-stream: message-end's delta.error.
    assert outs[-1].endswith(b'event: message-end\ndata: {"type":"message-end","delta":'
                        b'{"finish_reason":"ERROR","error":"it broke"}}\n\n')  # fmt: skip
    got = final(mw.replay(API, b"".join(outs)))
    assert got.text == "Le port" and got.error is not None
    assert got.error.kind == "provider_stream" and "it broke" in got.error.message
    # A kind Cohere has a finish reason for keeps it (TIMEOUT is v2's).
    timeout = msg(stop="error", error=mw.ErrorInfo(kind="timeout", message="slow"))
    out = Renderer(NO_TOOLS, "").feed(ErrorEvent(reason="error", message=timeout))
    assert b'"finish_reason":"TIMEOUT"' in out
    assert final(mw.replay(API, out)).error.kind == "timeout"  # type: ignore[union-attr]


def test_held_text_is_released_at_a_restart() -> None:
    r = Renderer(WITH_TOOLS, "")
    first = events_of("partial answer")[:-1]  # no done: the first model failed
    out = b"".join(r.feed(e) for e in first)
    assert out.count(b"event: content-delta") == 0  # held: a call could still follow
    out += r.feed(RestartEvent(message=msg(mw.TextContent(text="partial answer"))))
    assert out.count(b"event: content-delta") == 4
    # The next model's blocks restart at content index 0: they take the next index.
    out += b"".join(r.feed(e) for e in events_of("again")[1:])
    starts = [p["index"] for n, p in frames(out) if n == "content-start"]
    assert starts == [0, 1]
    assert final(mw.replay(API, out)).text == "partial answeragain"


def test_a_provider_run_tool_of_another_api_is_text() -> None:
    other = mw.Model(id="m", api="anthropic-messages", provider="p", base_url="http://h")
    ran = mw.ServerToolCall(id="s1", name="web_search", input={"q": "x"},
                            provider_type="server_tool_use")  # fmt: skip
    got = final(mw.replay(API, render(msg(ran, mw.TextContent(text="done")), origin=other)))
    assert [b.text for b in got.content if isinstance(b, mw.TextContent)][1] == "done"
    assert "web_search" in got.text


def test_message_body_is_the_chat_response() -> None:
    # https://docs.cohere.com/v2/reference/chat: id, finish_reason, message, usage.
    read = mw.ToolCall(id="r", name="read", arguments={"path": "a"})
    plan = mw.TextContent(text="Plan.", citations=(CITE,))
    script = msg(mw.ThinkingContent(thinking="hmm"), plan, read, stop="tool_use")
    body = message_body(WITH_TOOLS, script, "r-9")
    assert b" " not in body.replace(b"Plan.", b"")  # compact JSON
    out = json.loads(body)
    assert list(out) == ["id", "finish_reason", "message", "usage"]
    assert (out["id"], out["finish_reason"]) == ("r-9", "TOOL_CALL")
    m = out["message"]
    assert m["role"] == "assistant" and m["tool_plan"] == "Plan."
    assert m["content"] == [{"type": "thinking", "thinking": "hmm"}]
    call = {
        "id": "r",
        "type": "function",
        "function": {"name": "read", "arguments": '{"path":"a"}'},
    }
    assert m["tool_calls"] == [call]
    assert m["citations"][0]["sources"][0]["id"] == "doc_1"
    assert out["usage"]["billed_units"] == {"input_tokens": 12, "output_tokens": 7}
    plain_text = json.loads(message_body(NO_TOOLS, SCRIPTS["text"], ""))
    assert plain_text["id"] == spec.MOCK_ID and plain_text["finish_reason"] == "COMPLETE"
    assert plain_text["message"] == {"role": "assistant", "content": [
        {"type": "text", "text": "Bonjour ! Je suis là 🙂."}]}  # fmt: skip
