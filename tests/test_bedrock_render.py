"""The server side of ``bedrock-converse``: modelwire's events → ConverseStream's AWS
event-stream messages, and a final message → the ``Converse`` body
(``bedrock_converse.render``).

Shapes are checked against the Bedrock Runtime API reference —
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html
(``messageStart``; ``contentBlockStart`` for tool use only; ``contentBlockDelta`` with
``text`` / ``reasoningContent`` / ``toolUse.input`` / ``citation``; ``contentBlockStop``;
``messageStop`` with ``stopReason``; ``metadata`` with ``usage`` and ``metrics``; error
members such as ``throttlingException``) and
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html —,
against the byte shapes of the recordings in ``data/bedrock-converse`` (see its
SOURCES.md), and every rendered body is read back with ``mw.replay``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import modelwire as mw
from eventlist import final
from modelwire._apis._server.origin import unseal
from modelwire._apis._server.request import GatewayRequest
from modelwire._apis.bedrock_converse.render import Renderer, message_body
from modelwire._wire.deltas import (
    BlockComplete,
    BlockEnd,
    BlockSignature,
    BlockStart,
    Delta,
    EndOfStream,
    Finish,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
)
from modelwire._wire.framing.eventstream import decode_messages
from modelwire.events import Event, RestartEvent
from modelwire.testing import deltas_for, events_from_deltas

API = "bedrock-converse"
DATA = Path(__file__).parent / "data" / "bedrock-converse"
ORIGIN = mw.Model(id="m", api=API, provider="mock", base_url="http://127.0.0.1")
REQUEST = GatewayRequest(model="claude", context=mw.Context(), options={}, stream=True)
USAGE = mw.Usage(input=120, output=35, cache_read=40, cache_write=7)


def msg(*content: Any, stop: Any = "stop", **kw: Any) -> mw.AssistantMessage:
    blocks = [mw.TextContent(text=c) if isinstance(c, str) else c for c in content]
    return mw.AssistantMessage(content=blocks, api=API, provider="mock", model="m",
                               stop_reason=stop, **kw)  # fmt: skip


def events_of(script: Any, pc: int = 4, origin: mw.Model = ORIGIN) -> list[Event]:
    return events_from_deltas(deltas_for(script, piece_chars=pc), origin)


def feed(events: list[Event]) -> bytes:
    r = Renderer(REQUEST, "")
    pieces = [r.feed(e) for e in events]
    for p in pieces:
        decode_messages(p)  # whole messages: a cut one raises
    return b"".join(pieces)


def render(script: Any, pc: int = 4) -> bytes:
    return feed(events_of(script, pc))


def frames(body: bytes) -> list[tuple[str, dict[str, Any]]]:
    """``(event or "exception:<type>", payload)`` of each message, its headers checked."""
    out = []
    for m in decode_messages(body):
        h = {k: str(v) for k, v in m.headers.items()}  # Bedrock's are all strings
        assert h[":content-type"] == "application/json"
        kind = h[":message-type"]
        name = h[":event-type"] if kind == "event" else f"exception:{h[':exception-type']}"
        out.append((name, json.loads(m.payload)))
    return out


def meaning(m: mw.AssistantMessage) -> list[Any]:
    out: list[Any] = []
    for b in m.content:
        if isinstance(b, mw.TextContent):
            out.append(("text", b.text, [(c.url, c.cited_text, c.document) for c in b.citations]))
        elif isinstance(b, mw.ThinkingContent):
            out.append(("thinking", b.thinking, b.signature, b.redacted))
        elif isinstance(b, mw.ToolCall):
            out.append(("call", b.id, b.name, b.arguments))
        elif isinstance(b, mw.ServerToolCall):
            out.append(("server", b.id, b.name, b.input))
        elif isinstance(b, mw.ServerToolResult):
            out.append(("result", b.tool_call_id, b.provider_type, b.result, b.is_error))
    return out


CALL = mw.ToolCall(id="tooluse_a", name="read", arguments={"path": "README.md", "n": [1, 2]},
                   raw_arguments='{"path": "README.md", "n": [1, 2]}')  # fmt: skip
CALL2 = mw.ToolCall(id="tooluse_b", name="ls", arguments={}, raw_arguments="{}")
CITES = (
    mw.Citation(kind="url", url="https://example.com/paris", title="Paris", cited_text="France"),
    mw.Citation(kind="document", document="0", start=3, end=9, cited_text="Paris"),
)
GROUNDING = mw.ServerToolCall(id="tooluse_g", name="nova_grounding", input={"query": "paris"},
                              provider_type="server_tool_use")  # fmt: skip
RESULT = mw.ServerToolResult(tool_call_id="tooluse_g", provider_type="toolResult",
                             result=[{"text": "Paris is in France"}])  # fmt: skip

SCRIPTS: dict[str, mw.AssistantMessage] = {
    "text": msg('hello wörld 🙂, "quoted"\nand more', usage=USAGE),
    "thinking": msg(mw.ThinkingContent(thinking="let me think", signature="sig-abc"), "answer"),
    "redacted thinking": msg(
        mw.ThinkingContent(thinking="", signature="ZW5jcnlwdGVk", redacted=True), "ok"
    ),
    "parallel calls": msg("calling ", CALL, CALL2, stop="tool_use", usage=USAGE),
    "citations and grounding": msg(
        GROUNDING, RESULT, mw.TextContent(text="Paris is in France.", citations=CITES)
    ),
    "length": msg("cut off mid", stop="length", usage=mw.Usage(input=3, output=9)),
}


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_a_rendered_stream_replays_to_the_script_whole_and_in_pieces(name: str) -> None:
    script = SCRIPTS[name]
    body = render(script)
    for fed in (body, [body[i : i + 7] for i in range(0, len(body), 7)]):
        got = mw.replay(API, fed).message
        assert got.error is None, got.error
        assert meaning(got) == meaning(script)
        assert got.stop_reason == script.stop_reason
        u, s = got.usage, script.usage
        assert (u.input, u.output, u.cache_read, u.cache_write) == (
            s.input, s.output, s.cache_read, s.cache_write)  # fmt: skip


def test_the_events_come_in_the_documented_order_and_shapes() -> None:
    got = frames(render(SCRIPTS["parallel calls"], pc=100))
    assert [n for n, _ in got] == [
        "messageStart",
        "contentBlockDelta", "contentBlockStop",  # text: no contentBlockStart
        "contentBlockStart", "contentBlockDelta", "contentBlockStop",
        "contentBlockStart", "contentBlockDelta", "contentBlockStop",
        "messageStop", "metadata",
    ]  # fmt: skip
    assert got[0][1] == {"role": "assistant"}
    assert got[1][1] == {"contentBlockIndex": 0, "delta": {"text": "calling "}}
    # ToolUseBlockStart: toolUseId and name; the input is JSON text in pieces.
    start = {"toolUse": {"toolUseId": "tooluse_a", "name": "read"}}
    assert got[3][1] == {"contentBlockIndex": 1, "start": start}
    assert got[4][1] == {"contentBlockIndex": 1,
                         "delta": {"toolUse": {"input": CALL.raw_arguments}}}  # fmt: skip
    assert got[8][1] == {"contentBlockIndex": 2}
    assert got[9][1] == {"stopReason": "tool_use"}
    # TokenUsage: inputTokens excludes the cache reads and writes; totalTokens all.
    assert got[10][1] == {
        "usage": {"inputTokens": 120, "outputTokens": 35, "totalTokens": 202,
                  "cacheReadInputTokens": 40, "cacheWriteInputTokens": 7},
        "metrics": {"latencyMs": 0},
    }  # fmt: skip


def test_reasoning_is_text_deltas_then_its_signature_or_its_redacted_content() -> None:
    got = frames(render(SCRIPTS["thinking"], pc=6))
    reasoning = [p["delta"]["reasoningContent"] for n, p in got
                 if n == "contentBlockDelta" and p["contentBlockIndex"] == 0]  # fmt: skip
    assert reasoning == [{"text": "let me"}, {"text": " think"}, {"signature": "sig-abc"}]
    got = frames(render(SCRIPTS["redacted thinking"]))
    redacted = {"reasoningContent": {"redactedContent": "ZW5jcnlwdGVk"}}
    assert got[1][1] == {"contentBlockIndex": 0, "delta": redacted}


def test_citations_follow_their_text_and_provider_run_tools_have_starts() -> None:
    got = frames(render(SCRIPTS["citations and grounding"], pc=100))
    starts = [p["start"] for n, p in got if n == "contentBlockStart"]
    assert starts == [
        {
            "toolUse": {
                "toolUseId": "tooluse_g",
                "name": "nova_grounding",
                "type": "server_tool_use",
            }
        },
        {"toolResult": {"toolUseId": "tooluse_g", "status": "success"}},
    ]
    text = [p["delta"] for n, p in got if n == "contentBlockDelta" and p["contentBlockIndex"] == 2]
    # CitationsDelta: title, sourceContent, location (web url | documentChar span).
    assert text == [
        {"text": "Paris is in France."},
        {"citation": {"title": "Paris", "sourceContent": [{"text": "France"}],
                      "location": {"web": {"url": "https://example.com/paris"}}}},
        {"citation": {"sourceContent": [{"text": "Paris"}],
                      "location": {"documentChar": {"documentIndex": 0, "start": 3, "end": 9}}}},
    ]  # fmt: skip


@pytest.mark.parametrize("name", ["nova-text", "claude-two-tool-uses", "claude-reasoning",
                                  "max-tokens"])  # fmt: skip
def test_a_recorded_stream_renders_back_to_the_same_events(name: str) -> None:
    recorded = [(f["headers"][":event-type"], json.loads(f["payload"])) for f in
                json.loads((DATA / f"{name}.frames.json").read_text())["frames"]]  # fmt: skip
    want = []
    for event, payload in recorded:
        payload.pop("p")  # Bedrock's padding
        if payload.get("delta") == {"toolUse": {"input": ""}}:
            continue  # an empty piece adds nothing: not an event of modelwire's
        want.append((event, payload))
    got = frames(feed(mw.replay(API, (DATA / f"{name}.bin").read_bytes())))
    # metadata: the recorded counters (ours adds zero cache counters), latency our own.
    (_, got_meta), (_, want_meta) = got.pop(), want.pop()
    assert want_meta["usage"].items() <= got_meta["usage"].items()
    assert got == want


def test_the_stop_reason_is_bedrocks_own_from_a_bedrock_backend_else_mapped() -> None:
    def stop(message: mw.AssistantMessage) -> Any:
        return frames(render(message))[-2][1]["stopReason"]

    assert stop(msg("x", stop="length")) == "max_tokens"
    assert stop(msg("x", provider_stop_reason="stop_sequence")) == "stop_sequence"
    chat = mw.Model(id="g", api="openai-chat", provider="p", base_url="http://h")
    foreign = events_of(msg("x", provider_stop_reason="stop_sequence"), origin=chat)
    assert frames(feed(foreign))[-2][1] == {"stopReason": "end_turn"}


def failed(kind: str, text: str) -> list[Event]:
    deltas: list[Delta] = [TextDelta(0, "partial"), Finish("error", "x", kind, text), EndOfStream()]
    return events_from_deltas(deltas, ORIGIN)


@pytest.mark.parametrize(("kind", "exception"), [
    ("rate_limit", "throttlingException"), ("overloaded", "serviceUnavailableException"),
    ("invalid_request", "validationException"), ("provider_stream", "modelStreamErrorException"),
    ("authentication", "serviceUnavailableException"),  # no member says it: an overload
])  # fmt: skip
def test_an_error_is_an_exception_message_and_nothing_follows(kind: str, exception: str) -> None:
    body = feed(failed(kind, "it broke"))
    got = frames(body)
    assert got[-1] == (f"exception:{exception}", {"message": "it broke"})
    assert [n for n, _ in got] == ["messageStart", "contentBlockDelta", got[-1][0]]
    message = mw.replay(API, body).message
    assert message.error is not None and message.error.message.startswith("it broke")
    assert [b.text for b in message.content if isinstance(b, mw.TextContent)] == ["partial"]
    if kind != "authentication":
        assert message.error.kind == kind


def test_a_recorded_exception_is_sent_again_as_it_came() -> None:
    events = mw.replay(API, (DATA / "throttling-mid-stream.bin").read_bytes())
    assert frames(feed(events))[-1] == (
        "exception:throttlingException",
        {"message": "Too many tokens, please wait before trying again."},
    )


def test_a_filter_or_a_full_context_is_a_stop_reason() -> None:
    # StopReason "content_filtered" / "model_context_window_exceeded": a normal end.
    for kind, reason in (("content_filter", "content_filtered"),
                         ("context_overflow", "model_context_window_exceeded")):  # fmt: skip
        body = feed(failed(kind, "no"))
        assert frames(body)[-2] == ("messageStop", {"stopReason": reason})
        message = mw.replay(API, body).message
        assert message.error is not None and message.error.kind == kind


def test_overlapping_blocks_are_sent_one_after_another() -> None:
    # A Chat Completions backend: the text ends at the finish, the calls' arguments
    # interleave. On the wire, one block at a time; a call is never split.
    chat = mw.Model(id="g", api="openai-chat", provider="p", base_url="http://h")
    deltas: list[Delta] = [
        TextDelta("t", "Hello "), ToolCallDelta("a", "id_a", "fa", ""),
        TextDelta("t", "world"), ToolCallDelta("b", "id_b", "fb", ""),
        ToolCallDelta("a", None, None, '{"x":'), ToolCallDelta("b", None, None, '{"y":2}'),
        ToolCallDelta("a", None, None, "1}"), BlockEnd("t"), BlockEnd("a"), BlockEnd("b"),
        Finish("tool_use", "tool_calls"), EndOfStream(),
    ]  # fmt: skip
    got = frames(feed(events_from_deltas(deltas, chat)))
    open_now: int | None = None
    for name, p in got[1:-2]:
        i = p["contentBlockIndex"]
        assert open_now in (None, i), f"{name} for {i} while {open_now} is open"
        open_now = None if name == "contentBlockStop" else i
    message = mw.replay(API, feed(events_from_deltas(deltas, chat))).message
    assert [(b.name, b.arguments) for b in message.content if isinstance(b, mw.ToolCall)] == [
        ("fa", {"x": 1}), ("fb", {"y": 2})]  # fmt: skip
    assert "".join(b.text for b in message.content if isinstance(b, mw.TextContent)) == (
        "Hello world")  # fmt: skip


def test_another_apis_reasoning_is_sealed_and_its_tool_blocks_read_as_text() -> None:
    anthropic = mw.Model(id="c", api="anthropic-messages", provider="anthropic",
                         base_url="http://h")  # fmt: skip
    search = mw.ServerToolCall(id="s1", name="web_search", input={"q": "x"},
                               provider_type="server_tool_use")  # fmt: skip
    item = mw.ProviderItem(api="anthropic-messages", provider_type="compaction", data="{}")
    deltas: list[Delta] = [
        BlockStart("th", "thinking", signature="anth-sig"), ThinkingDelta("th", "hmm"),
        BlockEnd("th"), BlockStart("r", "thinking", signature="enc", redacted=True),
        BlockEnd("r"), BlockComplete("s", search), BlockComplete("p", item),
        TextDelta("t", "done"), BlockEnd("t"), Finish("stop", "end_turn"), EndOfStream(),
    ]  # fmt: skip
    events = events_from_deltas(deltas, anthropic)
    body = feed(events)
    stops = [p["contentBlockIndex"] for n, p in frames(body) if n == "contentBlockStop"]
    assert stops == [0, 1, 2]  # dense: the blocks not sent take no index
    message = mw.replay(API, body).message
    thinking, as_text, text = message.content
    # Its signature is the origin sealed; redacted reasoning with no text has no
    # Converse form a reader takes, and the opaque item none at all.
    assert isinstance(thinking, mw.ThinkingContent) and thinking.thinking == "hmm"
    origin = unseal(thinking.signature or "")
    assert origin is not None and (origin.api, origin.signature) == ("anthropic-messages",
                                                                     "anth-sig")  # fmt: skip
    assert isinstance(as_text, mw.TextContent) and "web_search" in as_text.text
    assert isinstance(text, mw.TextContent) and text.text == "done"
    whole = json.loads(message_body(REQUEST, final(events), ""))
    assert [next(iter(b)) for b in whole["output"]["message"]["content"]] == [
        "reasoningContent", "reasoningContent", "text", "text"]  # fmt: skip


def test_a_restart_continues_with_the_next_indexes() -> None:
    deltas: list[Delta] = [
        TextDelta(0, "first try"),
        Finish("error", "x", "overloaded", "down"),
        EndOfStream(),
    ]
    first = events_from_deltas(deltas, ORIGIN)
    second = events_of(msg("again"))
    events = [*first[:-1], RestartEvent(message=final(first)), *second[1:]]
    got = frames(feed(events))
    assert [n for n, _ in got].count("messageStart") == 1
    assert [p["contentBlockIndex"] for n, p in got if n == "contentBlockStop"] == [0, 1]
    texts = [b.text for b in mw.replay(API, feed(events)).message.content
             if isinstance(b, mw.TextContent)]  # fmt: skip
    assert texts == ["first try", "again"]


def test_a_signature_that_comes_late_is_sent_when_the_block_ends() -> None:
    deltas: list[Delta] = [
        ThinkingDelta(0, "a"), ThinkingDelta(0, "b"), BlockSignature(0, "s1", append=True),
        BlockSignature(0, "s2", append=True), BlockEnd(0), Finish("stop", "end_turn"),
        EndOfStream(),
    ]  # fmt: skip
    got = frames(feed(events_from_deltas(deltas, ORIGIN)))
    assert got[3][1]["delta"] == {"reasoningContent": {"signature": "s1s2"}}


def test_the_message_body_holds_every_block() -> None:
    # Converse response: output.message.content (ContentBlock union), stopReason,
    # usage, metrics.
    think = mw.ThinkingContent(thinking="plan", signature="sig")
    message = msg(think, mw.TextContent(text="Paris.", citations=CITES[:1]), CALL, GROUNDING,
                  RESULT, stop="tool_use", usage=USAGE)  # fmt: skip
    body = json.loads(message_body(REQUEST, message, ""))
    assert body["stopReason"] == "tool_use"
    assert body["usage"]["totalTokens"] == 202 and body["metrics"] == {"latencyMs": 0}
    assert body["output"]["message"]["role"] == "assistant"
    assert body["output"]["message"]["content"] == [
        {"reasoningContent": {"reasoningText": {"text": "plan", "signature": "sig"}}},
        {"citationsContent": {"content": [{"text": "Paris."}], "citations": [
            {"title": "Paris", "sourceContent": [{"text": "France"}],
             "location": {"web": {"url": "https://example.com/paris"}}}]}},
        {"toolUse": {"toolUseId": "tooluse_a", "name": "read",
                     "input": {"path": "README.md", "n": [1, 2]}}},
        {"toolUse": {"toolUseId": "tooluse_g", "name": "nova_grounding",
                     "input": {"query": "paris"}, "type": "server_tool_use"}},
        {"toolResult": {"toolUseId": "tooluse_g", "content": [{"text": "Paris is in France"}],
                        "status": "success"}},
    ]  # fmt: skip
