"""The trace hook (``trace=`` on stream/complete/replay) and ``modelwire trace``.

Expectations are derived independently of modelwire: SSE payloads come from a
small WHATWG parser written here, where a read ended is computed from the body
prefix with Python's incremental UTF-8 decoder and a character-level JSON
string scanner, the provider key order is read from the payloads with ``json``.
Every recorded fixture of the four wire APIs is traced whole and in pieces, and
the traced run must give exactly the events of the untraced one.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import itertools
import json
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import modelwire as mw
from eventlist import final
from modelwire._cli import main
from modelwire.ext import register_wire_api
from modelwire.testing import MockServer, Reply, tool_call
from modelwire.trace import (
    ContextTrace,
    DeltaTrace,
    EndTrace,
    ErrorTrace,
    EventTrace,
    MessageTrace,
    ReadTrace,
    RequestTrace,
    ResponseTrace,
    SSETrace,
    TraceLog,
    TraceRecord,
)
from recorded import recorded_streams

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = recorded_streams()
EXAMPLES = ROOT / "docs" / "examples"
KEY = "sk-test-trace-9f3c_only_in_the_header"
API_DIRS = {
    "openai-chat": "openai-chat",
    "openai-responses": "openai-responses",
    "anthropic-messages": "anthropic",
    "google-generative-ai": "google",
}
ALL_FIXTURES = [
    (api, p) for api, d in API_DIRS.items() for p in sorted((FIXTURES / d).glob("*.sse"))
]

# --------------------------------------------------------------------------- independent oracles


def sse_payloads(body: bytes) -> list[tuple[str, str]]:
    """(event, data) of every dispatched event (WHATWG event-stream interpretation)."""
    # An incomplete last character (a body cut mid-character) is left out.
    text = codecs.getincrementaldecoder("utf-8")().decode(body, final=False)
    if text.startswith("\ufeff"):
        text = text[1:]
    out: list[tuple[str, str]] = []
    event, data = "", list[str]()
    for line in re.split(r"\r\n|\r|\n", text):
        if line == "":
            if data:
                out.append((event or "message", "\n".join(data)))
            event, data = "", list[str]()
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
    return out


def in_json_string(text: str) -> bool:
    inside = escaped = False
    for ch in text:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = inside
        elif ch == '"':
            inside = not inside
    return inside


def expected_cut(prefix: bytes) -> tuple[str | None, tuple[int, int] | None, bool | None]:
    """Where a body that has received ``prefix`` stands."""
    if prefix.startswith(b"\xef\xbb\xbf"):
        prefix = prefix[3:]
    line = re.split(rb"\r\n|\r|\n", prefix)[-1]
    dec = codecs.getincrementaldecoder("utf-8")()
    dec.decode(prefix, final=False)
    left = dec.getstate()[0]
    utf8 = None
    if left:
        lead = left[0]
        utf8 = (len(left), 4 if lead >= 0xF0 else 3 if lead >= 0xE0 else 2)
    in_string = None
    if line.startswith(b"data"):
        value = line[5:] if line.startswith(b"data:") else b""
        in_string = in_json_string(value.decode("utf-8", "ignore"))
    if utf8:
        return "utf8", utf8, in_string
    if line:
        return ("json" if line.startswith(b"data") else "line"), None, in_string
    norm = prefix.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    boundary = norm.endswith(b"\n\n") or not norm.strip(b"\n")
    return (None if boundary else "event"), None, None


def pieces(body: bytes, points: list[int]) -> list[bytes]:
    bounds = [0, *sorted(set(points)), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds) if b > a]


# --------------------------------------------------------------------------- shared checks


def check_links(records: list[TraceRecord]) -> None:
    """Ids unique; each parent an earlier record of the layer it may come from."""
    allowed: dict[str, set[str | None]] = {
        "context": {None},
        "request": {"context"},
        "response": {"request"},
        "read": {None, "response"},
        "sse": {"read", "eof"},
        "delta": {"sse", "eof"},
        "event": {None, "request", "context", "delta", "error"},
        "eof": {None, "read", "response", "request"},
        "error": {None, "request", "response", "read", "eof", "sse", "delta", "event", "context"},
        "message": {"event"},
    }
    seen: dict[str, str] = {}
    for r in records:
        assert r.id not in seen, f"duplicate id {r.id}"
        parent_layer = None if r.parent is None else seen.get(r.parent)
        assert r.parent is None or parent_layer is not None, f"{r.id}: unknown parent {r.parent}"
        assert parent_layer in allowed[r.layer], (r.id, r.parent)
        seen[r.id] = r.layer


def check_trace(records: list[TraceRecord], events: list[Any], body: bytes | None) -> None:
    check_links(records)
    traced = [r.event for r in records if isinstance(r, EventTrace)]
    assert traced == list(events)
    assert all(a is b for a, b in zip(traced, events, strict=True))
    by_id = {r.id: r for r in records}
    for r in records:
        if isinstance(r, EventTrace) and r.parent in by_id:
            parent = by_id[r.parent]
            if (
                isinstance(parent, DeltaTrace)
                and parent.key is not None
                and r.content_index is not None
            ):
                # A delta's events belong to the block its key maps to.
                assert r.content_index == parent.content_index, (r.id, parent.id)
    messages = [r for r in records if isinstance(r, MessageTrace)]
    assert len(messages) == 1
    assert messages[0].message is events[-1].message
    parent = by_id[messages[0].parent or ""]
    assert isinstance(parent, EventTrace) and parent.event is events[-1]
    assert records[-1] is messages[0]
    if body is not None:
        reads = [r for r in records if isinstance(r, ReadTrace)]
        offset = 0
        for n, r in enumerate(reads, 1):
            assert (r.n, r.offset) == (n, offset)
            assert r.data == body[offset : offset + r.size] and r.size == len(r.data)
            offset += r.size
        sse = [(r.event, r.data) for r in records if isinstance(r, SSETrace)]
        expected = sse_payloads(body[:offset])
        assert sse == expected[: len(sse)]


def plain(events: list[Any]) -> list[Any]:
    out = []
    for ev in events:
        d = ev.to_dict()
        if "message" in d:
            d["message"] = msgspec.to_builtins(msgspec.structs.replace(ev.message, timestamp=0))
        for name in ("content", "tool_call"):
            if name in d:
                d[name] = msgspec.to_builtins(d[name])
        out.append(d)
    return out


# --------------------------------------------------------------------------- replay


@pytest.mark.parametrize(("api", "path"), ALL_FIXTURES, ids=lambda v: getattr(v, "name", v))
def test_every_fixture_traces_every_layer_without_changing_the_result(api: str, path: Path) -> None:
    body = path.read_bytes()
    log = TraceLog()
    chunks = pieces(body, list(range(97, len(body), 97)))
    events = mw.replay(api, chunks, trace=log)
    check_trace(log.records, events, body)
    assert plain(events) == plain(mw.replay(api, chunks))
    assert {r.layer for r in log.records} >= {"read", "sse", "event", "message"}


SPLIT_CASES = [
    ("openai-chat", FIXTURES / "openai-chat" / "gpt-4o-parallel-tool-calls.sse"),
    ("anthropic-messages", FIXTURES / "anthropic" / "claude-haiku-4-5-thinking-then-tool-use.sse"),
    ("google-generative-ai", FIXTURES / "google" / "gemini-2.0-flash-function-call.sse"),
    ("openai-responses", FIXTURES / "openai-responses" / "gpt-4o-function-call-arguments.sse"),
    ("openai-chat", EXAMPLES / "utf8-split.sse"),
    ("openai-chat", EXAMPLES / "json-split.sse"),
]


@pytest.mark.parametrize(("api", "path"), SPLIT_CASES, ids=lambda v: getattr(v, "name", v))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_each_read_says_where_it_cut(api: str, path: Path, data: st.DataObject) -> None:
    body = path.read_bytes()
    points = data.draw(st.lists(st.integers(1, len(body) - 1), max_size=12))
    log = TraceLog()
    events = mw.replay(api, pieces(body, points), trace=log)
    check_trace(log.records, events, body)
    for r in log.records:
        if isinstance(r, ReadTrace):
            prefix = body[: r.offset + r.size]
            assert (r.cut, r.utf8, r.in_string) == expected_cut(prefix), r.id
            assert r.pending == len(re.split(rb"\r\n|\r|\n", prefix)[-1])
    assert plain(events) == plain(mw.replay(api, body))


def test_a_line_longer_than_the_tracked_limit() -> None:
    text = "字" * 400_000  # 1.2 MB in one data: line, more than the trace keeps
    body = mw.testing.sse_body(
        [{"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]}]
    )
    log = TraceLog()
    events = mw.replay("openai-chat", pieces(body, list(range(262_144, len(body), 262_144))),
                       trace=log)  # fmt: skip
    check_trace(log.records, events, body)
    reads = [r for r in log.records if isinstance(r, ReadTrace)]
    for r in reads[:-1]:
        cut, utf8, in_string = expected_cut(body[: r.offset + r.size])
        assert (r.cut, r.utf8, r.pending) == (cut, utf8, r.offset + r.size)
        assert r.in_string is None or r.in_string == in_string  # unknown past the limit
    first = final(events).content[0]
    assert isinstance(first, mw.TextContent)
    assert reads[-1].cut is None and first.text == text


def test_every_single_byte_read_of_a_cjk_stream() -> None:
    body = (EXAMPLES / "utf8-split.sse").read_bytes()
    log = TraceLog()
    events = mw.replay("openai-chat", [body[i : i + 1] for i in range(len(body))], trace=log)
    check_trace(log.records, events, body)
    reads = [r for r in log.records if isinstance(r, ReadTrace)]
    assert len(reads) == len(body)
    for r in reads:
        assert (r.cut, r.utf8, r.in_string) == expected_cut(body[: r.offset + 1])
    cut_chars = [r.utf8 for r in reads if r.cut == "utf8"]
    # "读取" is two 3-byte characters: each is cut after its 1st and 2nd byte.
    assert cut_chars == [(1, 3), (2, 3)] * 2
    first = final(events).content[0]
    assert isinstance(first, mw.TextContent)
    assert first.text == "读取 README.md"


def test_provider_keys_map_to_the_content_index_of_first_appearance() -> None:
    body = (EXAMPLES / "interleaved.sse").read_bytes()
    order: list[Any] = []
    for _, data in sse_payloads(body):
        if data == "[DONE]":
            continue
        delta = json.loads(data)["choices"][0]["delta"]
        keys: list[Any] = [("tool", tc["index"]) for tc in delta.get("tool_calls", [])]
        keys += ["text"] if delta.get("content") else []
        order += [k for k in keys if k not in order]
    assert order == [("tool", 4), "text", ("tool", 2)]  # the file is the DESIGN rule-2 case
    log = TraceLog()
    events = mw.replay("openai-chat", body, trace=log)
    check_trace(log.records, events, body)
    mapping = {
        r.key: r.content_index
        for r in log.records
        if isinstance(r, DeltaTrace) and r.key is not None
    }
    assert mapping == {k: i for i, k in enumerate(order)}
    content = final(events).content
    assert [type(b).__name__ for b in content] == ["ToolCall", "TextContent", "ToolCall"]


# --------------------------------------------------------------------------- errors at their layer


def _error(log: TraceLog) -> ErrorTrace:
    errors = log.of("error")
    assert len(errors) == 1
    err = errors[0]
    assert isinstance(err, ErrorTrace)
    return err


def _ancestors(log: TraceLog, rid: str | None) -> list[str]:
    by_id = {r.id: r for r in log.records}
    out = []
    while rid is not None:
        out.append(rid)
        rid = by_id[rid].parent
    return out


def test_malformed_chunk_shows_the_payload_and_field_path() -> None:
    body = (EXAMPLES / "malformed.sse").read_bytes()
    bad = next(d for _, d in sse_payloads(body) if '"content":42' in d)
    log = TraceLog()
    events = mw.replay("openai-chat", pieces(body, [50, 120]), trace=log)
    check_trace(log.records, events, body)
    err = _error(log)
    assert (err.at, err.kind, err.payload) == ("decode", "malformed_chunk", bad)
    assert "choices[0].delta.content" in err.message
    parent = next(r for r in log.records if r.id == err.parent)
    assert isinstance(parent, SSETrace) and parent.data == bad
    error_event = next(r for r in log.records if isinstance(r, EventTrace) and r.parent == err.id)
    first = final(events).content[0]
    assert isinstance(first, mw.TextContent)
    assert error_event.event is events[-1] and first.text == "OK"


def test_invalid_utf8_is_an_sse_layer_error() -> None:
    body = b'data: {"choices":[{"index":0,"delta":{"content":"\xff"}}]}\n\n'
    log = TraceLog()
    events = mw.replay("openai-chat", body, trace=log)
    check_trace(log.records, events, None)
    err = _error(log)
    assert (err.at, err.kind, err.parent) == ("sse", "malformed_chunk", "read-1")


def test_a_body_ending_mid_event_is_cut_at_eof() -> None:
    whole = (EXAMPLES / "text-then-drop.sse").read_bytes()
    body = whole[: whole.index("「".encode()) + 1]  # inside a character, inside a string
    log = TraceLog()
    events = mw.replay("openai-chat", body, trace=log)
    check_trace(log.records, events, body)
    (eof,) = log.of("eof")
    assert isinstance(eof, EndTrace)
    assert (eof.size, eof.reads, eof.cut) == (len(body), 1, "utf8")
    err = _error(log)
    assert (err.at, err.kind, err.parent, err.offset) == (
        "sse",
        "truncated_stream",
        "eof",
        len(body),
    )
    first = final(events).content[0]
    assert isinstance(first, mw.TextContent)
    assert first.text == "README.md 的第一行是"


def test_a_missing_finish_is_traced_back_to_the_end_of_the_body() -> None:
    body = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
    log = TraceLog()
    events = mw.replay("openai-chat", body, trace=log)
    check_trace(log.records, events, body)
    err = _error(log)
    assert err.kind == "truncated_stream"
    assert "eof" in _ancestors(log, err.id)
    eof = log.of("eof")[0]
    assert isinstance(eof, EndTrace) and eof.cut is None


def test_a_tool_call_protocol_violation_is_an_assembler_error_at_its_delta() -> None:
    frames = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": i, "id": "c1", "function": {"name": "a", "arguments": ""}}]}}]}
        for i in (0, 1)
    ]  # fmt: skip
    body = mw.testing.sse_body(frames)
    log = TraceLog()
    events = mw.replay("openai-chat", body, trace=log)
    check_trace(log.records, events, body)
    err = _error(log)
    assert (err.at, err.kind) == ("assemble", "tool_call_protocol")
    delta = next(r for r in log.records if r.id == err.parent)
    assert isinstance(delta, DeltaTrace) and delta.key == ("tool", 1)


def test_a_complete_tool_call_then_an_in_band_error() -> None:
    body = (EXAMPLES / "tool-then-error.sse").read_bytes()
    log = TraceLog()
    events = mw.replay("anthropic-messages", body, trace=log)
    check_trace(log.records, events, body)
    err = _error(log)
    assert (err.at, err.kind) == ("decode", "overloaded")
    assert err.payload == sse_payloads(body)[-1][1]
    ends = [r.event.type for r in log.records if isinstance(r, EventTrace)]
    assert ends.index("tool_call_end") < ends.index("error")
    msg = final(events)
    assert isinstance(msg.content[0], mw.ToolCall)
    assert msg.stop_reason == "error" and msg.content[0].arguments == {"path": "README.md"}


def test_length_keeps_half_written_arguments_untrusted() -> None:
    body = (EXAMPLES / "length-half-args.sse").read_bytes()
    raw = json.loads(sse_payloads(body)[0][1])["choices"][0]["delta"]["tool_calls"][0]
    log = TraceLog()
    events = mw.replay("openai-chat", body, trace=log)
    check_trace(log.records, events, body)
    msg = final(events)
    assert msg.stop_reason == "length"
    assert isinstance(msg.content[0], mw.ToolCall)
    assert msg.content[0].raw_arguments == raw["function"]["arguments"]
    assert isinstance(msg.content[0], mw.ToolCall)
    assert msg.content[0].arguments == {}


# --------------------------------------------------------------------------- the hook itself


def test_trace_must_be_callable() -> None:
    model = mw.Model(id="m", api="openai-chat", provider="local", base_url="http://127.0.0.1:9/v1")
    ctx = mw.Context(messages=[mw.UserMessage(content="hi")])
    for call in (
        lambda: mw.stream(model, ctx, trace=42),  # type: ignore[arg-type]
        lambda: mw.stream_sync(model, ctx, trace="log"),  # type: ignore[arg-type]
        lambda: mw.replay("openai-chat", b"", trace=object()),  # type: ignore[arg-type]
    ):
        with pytest.raises(mw.ConfigurationError, match="trace must be a callable"):
            call()


def test_an_observer_that_raises_is_detached_and_the_call_goes_on() -> None:
    calls: list[str] = []

    def broken(record: TraceRecord) -> None:
        calls.append(record.id)
        raise ValueError("telemetry is down")

    body = (EXAMPLES / "utf8-split.sse").read_bytes()
    with pytest.warns(RuntimeWarning, match="telemetry is down"):
        events = mw.replay("openai-chat", body, trace=broken)
    assert calls == ["event-1"]
    assert plain(events) == plain(mw.replay("openai-chat", body))


def test_without_a_trace_nothing_of_it_runs(
    monkeypatch: pytest.MonkeyPatch, server: MockServer
) -> None:
    import modelwire.trace

    def refuse(*args: Any, **kw: Any) -> None:
        raise AssertionError("the trace machinery ran for an untraced call")

    monkeypatch.setattr(modelwire.trace, "Tracer", refuse)
    body = (EXAMPLES / "json-split.sse").read_bytes()
    events = mw.replay("openai-chat", pieces(body, [5, 328, 400]))
    assert events[-1].type == "done"
    server.add(Reply(body=body, split_points=(5, 328, 400)))
    assert mw.complete_sync(server.model(), CTX).stop_reason == "tool_use"


def test_records_are_plain_json() -> None:
    body = (EXAMPLES / "interleaved.sse").read_bytes()
    log = TraceLog()
    mw.replay("openai-chat", pieces(body, [33, 400]), trace=log)
    for r in log.records:
        d = json.loads(json.dumps(r.to_dict()))
        assert (d["layer"], d["id"], d["parent"]) == (r.layer, r.id, r.parent)
    first_read = log.of("read")[0].to_dict()
    assert first_read["data"] == body[:33].decode()


# --------------------------------------------------------------------------- live (loopback)


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer([]) as srv:
        yield srv


def _script(text: str) -> Any:
    return mw.AssistantMessage(
        content=(mw.TextContent(text=text), tool_call("read", {"path": "README.md"}, id="call_9")),
        api="", provider="", model="", usage=mw.Usage(input=3, output=4, total_tokens=7),
        stop_reason="stop",
    )  # fmt: skip


CTX = mw.Context(
    system_prompt="回答要简洁。",
    messages=[mw.UserMessage(content="读取 README.md")],
    tools=[mw.ToolDefinition(name="read", description="Read a file",
                             parameters={"type": "object", "properties": {"path": {"type": "string"}}})],
)  # fmt: skip


def check_live(
    log: TraceLog, server: MockServer, model: mw.Model, message: mw.AssistantMessage
) -> None:
    records = log.records
    layers = [r.layer for r in records]
    assert layers[:4] == ["context", "request", "event", "response"]
    assert layers[-1] == "message" and "read" in layers and "sse" in layers
    check_links(records)
    ctx, req, resp = records[0], records[1], records[3]
    assert isinstance(ctx, ContextTrace) and ctx.context is CTX and ctx.model == model.id
    assert isinstance(req, RequestTrace) and isinstance(resp, ResponseTrace)
    sent = server.requests[-1]
    assert req.url == server.origin + sent.path
    assert req.body == sent.json() and req.size == len(sent.body)
    auth = {k.lower(): v for k, v in req.headers.items()}
    assert auth.get("authorization", auth.get("x-api-key", auth.get("x-goog-api-key"))) in (
        "Bearer [redacted]", "[redacted]",
    )  # fmt: skip
    assert resp.status == 200 and resp.headers["content-type"] == "text/event-stream"
    dumped = json.dumps([r.to_dict() for r in records], default=str)
    assert KEY not in dumped and KEY not in repr(records)
    body = b"".join(r.data for r in records if isinstance(r, ReadTrace))
    assert [(r.event, r.data) for r in records if isinstance(r, SSETrace)] == sse_payloads(body)[
        : len(log.of("sse"))
    ]
    assert records[-1].message is message  # type: ignore[attr-defined]
    assert message.stop_reason == "tool_use" and message.content[0].text == "读取中"


@pytest.mark.parametrize("api", list(API_DIRS))
@pytest.mark.anyio
async def test_live_stream_traces_every_layer(server: MockServer, api: str) -> None:
    server.add(Reply(message=_script("读取中"), piece_chars=2))
    model = server.model(api)
    log = TraceLog()
    s = mw.stream(model, CTX, api_key=KEY, trace=log)
    events = [ev async for ev in s]
    check_live(log, server, model, await s.result())
    assert [r.event for r in log.records if isinstance(r, EventTrace)] == events
    reads = log.of("read")
    assert all(isinstance(r, ReadTrace) and r.elapsed_ms is not None for r in reads)


@pytest.mark.parametrize("api", ["openai-chat", "google-generative-ai"])
def test_live_sync_and_complete_trace(server: MockServer, api: str) -> None:
    model = server.model(api)
    server.add(Reply(message=_script("读取中"), piece_chars=3))
    log = TraceLog()
    check_live(log, server, model, mw.complete_sync(model, CTX, api_key=KEY, trace=log))
    server.add(Reply(message=_script("读取中"), piece_chars=3))
    log = TraceLog()
    check_live(log, server, model, final(list(mw.stream_sync(model, CTX, api_key=KEY, trace=log))))


@pytest.mark.anyio
async def test_complete_passes_the_trace_on(server: MockServer) -> None:
    server.add(Reply(message=_script("读取中")))
    model = server.model("anthropic-messages")
    log = TraceLog()
    check_live(log, server, model, await mw.complete(model, CTX, api_key=KEY, trace=log))


@pytest.mark.anyio
async def test_an_http_error_status_is_an_http_layer_error(server: MockServer) -> None:
    server.add(mw.testing.error_reply(429, "slow down", type="rate_limit_error"))
    log = TraceLog()
    msg = await mw.complete(server.model(), CTX, api_key=KEY, trace=log, max_retries=0)
    assert [r.layer for r in log.records] == [
        "context",
        "request",
        "event",
        "error",
        "event",
        "message",
    ]
    check_links(log.records)
    err = _error(log)
    assert (err.at, err.kind, err.status, err.parent, err.offset) == (
        "http",
        "rate_limit",
        429,
        "request",
        0,
    )
    assert msg.error is not None and msg.error.kind == "rate_limit"


@pytest.mark.anyio
async def test_a_dropped_connection_is_cut_where_it_stopped(server: MockServer) -> None:
    body = (EXAMPLES / "text-then-drop.sse").read_bytes()
    cut = sse_payloads(body)[0][1].encode()
    at = body.index(cut) + len(cut) + 20  # the first event and part of the second
    server.add(Reply(body=body, cut_after=at))
    log = TraceLog()
    msg = await mw.complete(server.model(), CTX, trace=log, max_retries=0)
    check_links(log.records)
    err = _error(log)
    reads = log.of("read")
    assert (err.at, err.kind, err.offset, err.parent) == (
        "http",
        "stream_interrupted",
        at,
        reads[-1].id,
    )
    assert sum(r.size for r in reads if isinstance(r, ReadTrace)) == at
    assert not log.of("eof")
    assert isinstance(msg.content[0], mw.TextContent)
    assert msg.stop_reason == "error" and msg.content[0].text == "README.md 的第一行是"


@pytest.mark.anyio
async def test_abort_is_a_caller_layer_error(server: MockServer) -> None:
    body = (EXAMPLES / "text-then-drop.sse").read_bytes()
    server.add(Reply(body=body, stall_after=150, stall_seconds=5))
    log = TraceLog()
    s = mw.stream(server.model(), CTX, trace=log, max_retries=0)
    async for ev in s:
        if ev.type == "text_delta":
            await s.aclose()
    msg = await s.result()
    err = _error(log)
    assert (err.at, err.kind) == ("caller", "aborted")
    assert msg.stop_reason == "aborted"
    check_links(log.records)


@pytest.mark.anyio
async def test_secrets_echoed_by_the_server_are_redacted_in_the_trace(server: MockServer) -> None:
    frames = [
        {"choices": [{"index": 0, "delta": {"content": f"your key is {KEY}"}}]},
        {"choices": [{"index": 0, "delta": {"content": 7}}]},
        {"error": {"message": f"bad key {KEY}"}},
    ]
    body = mw.testing.sse_body(frames)
    middle = body.index(KEY.encode()) + len(KEY) // 2  # a read boundary inside the key
    server.add(Reply(body=body, split_points=(middle,), delay=0.05))
    log = TraceLog()
    await mw.complete(server.model(), CTX, api_key=KEY, trace=log)
    for r in log.records:
        if isinstance(r, ReadTrace):  # no piece of the key of 8 characters or more
            text = r.data.decode()
            assert not any(KEY[i : i + 8] in text for i in range(len(KEY) - 7)), r.data
    sse = [r for r in log.records if isinstance(r, SSETrace)]
    assert "[redacted]" in sse[0].data and KEY not in sse[0].data
    err = _error(log)
    assert err.payload is not None and KEY not in err.payload + err.message
    assert KEY not in json.dumps([r.to_dict() for r in log.records if r.layer != "message"
                                  and r.layer != "event" and r.layer != "delta"], default=str)  # fmt: skip


@pytest.mark.anyio
async def test_a_custom_stream_function_is_traced_as_context_and_events() -> None:
    from modelwire import _apis as apis

    async def fn(model: mw.Model, context: mw.Context, options: Any) -> Any:
        for ev in mw.replay("openai-chat", (EXAMPLES / "utf8-split.sse").read_bytes()):
            yield ev

    register_wire_api(fn, "trace-custom")
    try:
        model = mw.Model(
            id="c", api="trace-custom", provider="local", base_url="http://127.0.0.1:9"
        )
        log = TraceLog()
        msg = await mw.complete(model, CTX, trace=log)
    finally:
        apis._streams.pop("trace-custom", None)  # one registry for both kinds
    assert next(r.layer for r in log.records) == "context" and log.records[-1].layer == "message"
    check_links(log.records)
    assert msg.content[0].text == "读取 README.md"  # type: ignore[union-attr]


# --------------------------------------------------------------------------- the command


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        warnings.catch_warnings(),
    ):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def json_records(out: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in out.splitlines()]
    ids = set()
    for d in lines:
        assert {"layer", "id", "parent"} <= set(d)
        assert d["parent"] is None or d["parent"] in ids
        ids.add(d["id"])
    return lines


@pytest.mark.parametrize(("api", "path"), [next(c for c in ALL_FIXTURES if c[0] == a) for a in API_DIRS],
                         ids=list(API_DIRS))  # fmt: skip
def test_cli_trace_json_for_every_api(api: str, path: Path) -> None:
    code, out, _ = run_cli("trace", "--api", api, str(path), "--chunk-size", "64", "--json")
    body = path.read_bytes()
    records = json_records(out)
    sse = [(d["event"], d["data"]) for d in records if d["layer"] == "sse"]
    assert sse == sse_payloads(body)[: len(sse)]
    message = records[-1]
    assert message["layer"] == "message"
    expected = mw.replay(api, body).message
    assert message["message"]["stop_reason"] == expected.stop_reason
    assert code == (1 if expected.stop_reason == "error" else 0)
    assert sum(d["size"] for d in records if d["layer"] == "read") <= len(body)


def test_cli_trace_text_view_follows_one_call() -> None:
    code, out, err = run_cli("trace", "--api", "openai-chat", str(EXAMPLES / "json-split.sse"),
                             "--split", "328")  # fmt: skip
    assert code == 0 and err == ""
    lines = out.splitlines()
    read1 = next(ln for ln in lines if ln.startswith("read-1 "))
    assert "cuts a data: line" in read1 and "inside a JSON string" in read1
    assert any(re.match(r"delta-2 +← sse-1 +ToolCallDelta \('tool', 0\) → #0 +id='call_1' name='read'", ln)
               for ln in lines)  # fmt: skip
    assert any(ln.startswith("event-5 ") and "tool_call_end" in ln and '{"path":"README.md"}' in ln
               for ln in lines)  # fmt: skip
    assert lines[-3].startswith("message   ← event-6")


@pytest.mark.parametrize(
    ("argv", "kind"),
    [
        (["trace", str(EXAMPLES / "utf8-split.sse")], "usage"),
        (["trace", "--api", "openai-chat"], "usage"),
        (["trace", "--api", "openai-chat", "a.sse", "b.sse"], "usage"),
        (
            ["trace", "--api", "openai-chat", str(EXAMPLES / "utf8-split.sse"), "--split", "x"],
            "usage",
        ),
        (
            ["trace", "--api", "openai-chat", str(EXAMPLES / "utf8-split.sse"), "--split", "0"],
            "usage",
        ),
        (
            ["trace", "--api", "openai-chat", str(EXAMPLES / "utf8-split.sse"), "--cut-after", "9"],
            "usage",
        ),
        (["trace", "--api", "openai-chat", "/nonexistent/x.sse"], "file"),
        (["trace", "-m", "local/x", "--base-url", "http://127.0.0.1:9/v1"], "usage"),
        (
            ["trace", "-m", "local/x", "--base-url", "http://127.0.0.1:9/v1", "--loopback", "hi"],
            "usage",
        ),
        (["trace", "-m", "openai/gpt-4.1-mini", "hi"], "missing_api_key"),
    ],
)
def test_cli_trace_usage_errors_are_one_line(argv: list[str], kind: str) -> None:
    code, out, err = run_cli(*argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"modelwire: error [{kind}]: ")


def test_cli_trace_live_against_a_local_server(server: MockServer) -> None:
    server.add(Reply(message="你好，modelwire"))
    code, out, err = run_cli("trace", "-m", "local/qwen", "--base-url", server.base_url,
                             "--system", "回答要简洁。", "say hi")  # fmt: skip
    assert code == 0, err
    assert server.requests[-1].json()["messages"][-1]["content"] == "say hi"
    assert re.search(
        r"^request +← context +POST http://127\.0\.0\.1:\d+/v1/chat/completions", out, re.M
    )
    assert "HTTP 200 · content-type: text/event-stream" in out
    assert "[0] text '你好，modelwire'" in out


def test_cli_trace_loopback_cut(server: MockServer) -> None:
    path = EXAMPLES / "text-then-drop.sse"
    code, out, err = run_cli("trace", "--api", "openai-chat", str(path), "--loopback",
                             "--cut-after", "200", "--json")  # fmt: skip
    assert code == 1 and err.startswith("modelwire: error [stream_interrupted]: ")
    records = json_records(out)
    error = next(d for d in records if d["layer"] == "error")
    assert (error["at"], error["offset"]) == ("http", 200)


@pytest.mark.parametrize(
    ("api", "auth"),
    [
        ("openai-chat", "Authorization: Bearer [redacted]"),
        ("openai-responses", "Authorization: Bearer [redacted]"),
        ("anthropic-messages", "x-api-key: [redacted]"),
        ("google-generative-ai", "x-goog-api-key: [redacted]"),
    ],
)
def test_demo_trace_follows_call_1_and_redacts_the_key(api: str, auth: str) -> None:
    from modelwire._cli.demo import DEMO_KEY

    code, out, err = run_cli(
        "demo", "--trace", "--delay", "0", "--root", str(ROOT), "--plain", "--api", api
    )
    assert code == 0, err
    assert DEMO_KEY not in out
    assert out.count(auth) == 2
    assert out.count("── model call ") == 2
    # call_1 from the SSE payload, through the delta and events, to the message.
    # (a long payload is trimmed in the middle, where the call's id may be: its name
    # shows; Gemini's payload is trimmed where its whole functionCall is)
    assert re.search(r'^sse-\d+ .*(call_1|"name":"read")', out, re.M) or (
        api == "google-generative-ai")  # fmt: skip
    assert re.search(r"^delta-\d+ .* → #1 .*id='call_1' name='read'", out, re.M)
    assert re.search(r"^event-\d+ .*tool_call_start #1  read \(id call_1\)", out, re.M)
    assert re.search(r"^ +\[1\] tool_call read \(id call_1\) raw_arguments=", out, re.M)
    assert re.search(r"^tool +← message +read \(id call_1\) ran → README\.md", out, re.M)
    assert re.search(r"^ +\[2\] tool_result read \(id call_1, ok\)", out, re.M)


def test_demo_trace_json_numbers_the_calls() -> None:
    code, out, err = run_cli("demo", "--trace", "--json", "--delay", "0", "--root", str(ROOT))
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert {d["call"] for d in lines} == {1, 2}
    for n in (1, 2):
        ids = [d["id"] for d in lines if d["call"] == n]
        assert ids[0] == "context" and "message" in ids
    tool = next(d for d in lines if d["layer"] == "tool")
    assert (tool["tool_call_id"], tool["is_error"]) == ("call_1", False)


def _subprocess(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "modelwire", *args], capture_output=True,
                          text=True, encoding="utf-8", timeout=60, cwd=ROOT, **kw)  # fmt: skip


def test_subprocess_trace_and_exit_codes() -> None:
    ok = _subprocess("trace", "--api", "openai-chat", "docs/examples/interleaved.sse")
    assert ok.returncode == 0 and ok.stderr == ""
    assert "ToolCallDelta ('tool', 4) → #0" in ok.stdout
    bad = _subprocess("trace", "--api", "openai-chat", "docs/examples/malformed.sse")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert bad.stderr.startswith("modelwire: error [malformed_chunk]: ")


def test_subprocess_demo_trace_survives_a_closed_pipe() -> None:
    # --json writes far more than a pipe buffer holds, so the write does fail.
    proc = subprocess.Popen([sys.executable, "-m", "modelwire", "demo", "--trace", "--json", "--delay", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    code = proc.wait(timeout=60)
    stderr = proc.stderr.read().decode()
    proc.stderr.close()
    assert code == 0, stderr
    assert "Traceback" not in stderr and "Warning" not in stderr


def traced_registered_apis() -> list[str]:
    """Every registered API the mock can render (read from the registry when called)."""
    from modelwire._apis import api_names, find_server

    return [n for n in api_names() if find_server(n) is not None]


def test_every_registered_api_traces_one_record_per_frame() -> None:
    """Whatever its framing (SSE, NDJSON, the AWS event stream), each frame is one
    ``sse`` record whose data is the frame's payload, and tracing changes no event."""
    from modelwire.testing._render import render_reply, unframed

    script: list[str | mw.ToolCall] = ["Hello, 世界. ", tool_call("read", {"path": "README.md"})]
    apis = traced_registered_apis()
    assert {"ollama-chat", "bedrock-converse", "openai-chat"} <= set(apis)
    for api in apis:
        pieces = render_reply(script, api, piece_chars=4).pieces
        frames, body = unframed(api, pieces), b"".join(pieces)  # as on the wire
        log = TraceLog()
        events = mw.replay(api, [body[i : i + 7] for i in range(0, len(body), 7)], trace=log)
        assert events[-1].type == "done", api
        assert plain(events) == plain(mw.replay(api, body)), api
        sse = [r for r in log.records if isinstance(r, SSETrace)]
        assert len(sse) == len(frames), api
        # Each record's data is its frame's payload (JSON compared as values).
        for record, (_, payload) in zip(sse, frames, strict=True):
            got = record.data if isinstance(payload, str) else json.loads(record.data)
            assert got == payload, api


# --------------------------------------------------------------------------- userinfo in base_url
# ``user:password@`` in a base_url is sent as HTTP Basic auth (RFC 7617), as httpx and
# curl send it; the URL that is sent, traced and shown carries none of it.
PASSWORD = "s3cret-pass-77Qx"


def test_userinfo_is_sent_as_basic_auth_and_never_shown(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import base64
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    caplog.set_level("DEBUG")  # httpx logs each request's URL at INFO

    from modelwire._cli import main
    from test_url_paths import Recorder

    rec = Recorder(answer=f"bad credentials alice:{PASSWORD}".encode())
    try:
        base = f"http://alice:{PASSWORD}@{rec.netloc}/v1"
        model = mw.Model(id="m", api="openai-chat", provider="vllm", base_url=base)
        log = TraceLog()
        message = mw.complete_sync(model, CTX, trace=log, max_retries=0)
        # Sent: the path without userinfo, the pair in Authorization: Basic.
        assert rec.lines[-1].split(" ")[1] == "/v1/chat/completions"
        pair = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
        assert rec.headers[-1]["authorization"] == f"Basic {pair}"
        # Shown: the trace's request URL, its headers, the error text, reprs.
        [request] = [r for r in log.records if isinstance(r, RequestTrace)]
        assert request.url == f"http://{rec.netloc}/v1/chat/completions"
        assert message.error is not None
        shown = [repr(r) for r in log.records]
        shown += [message.error.message, repr(model), repr(message.error), str(model)]
        shown += [r.getMessage() for r in caplog.records]
        assert any(rec.netloc in r.getMessage() for r in caplog.records)  # httpx logged it
        for text in shown:
            assert PASSWORD not in text and pair not in text, text
        assert "[redacted]@" in repr(model)
        # CLI output: the error line and the connect hint.
        code = main(["chat", "-m", "local/m", "--base-url", base, "--api", "openai-chat",
                     "--timeout", "2", "hi"])  # fmt: skip
        out, err = capsys.readouterr()
        assert code != 0 and PASSWORD not in out + err
    finally:
        rec.server.shutdown()
        rec.server.server_close()
    dead = f"http://alice:{PASSWORD}@127.0.0.1:9/v1"
    code = main(["chat", "-m", "local/m", "--base-url", dead, "--api", "openai-chat",
                 "--timeout", "2", "hi"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code != 0 and "connect" in out + err and PASSWORD not in out + err


def test_userinfo_with_credentials_in_authorization_already_is_refused() -> None:
    model = mw.Model(id="m", api="openai-chat", provider="openai",
                     base_url=f"http://alice:{PASSWORD}@127.0.0.1:9/v1")  # fmt: skip
    with pytest.raises(mw.ConfigurationError, match="Basic auth") as info:
        mw.stream_sync(model, CTX, api_key="sk-test-key-123")
    assert PASSWORD not in str(info.value) and "[redacted]@127.0.0.1:9" in str(info.value)


def test_a_request_repr_and_a_bad_base_url_error_hide_userinfo() -> None:
    from modelwire._wire.request import HTTPRequest

    request = HTTPRequest(url=f"https://u:{PASSWORD}@h.test/v1", headers={}, body=b"")
    assert PASSWORD not in repr(request)
    with pytest.raises(mw.ConfigurationError) as info:
        mw.Model(id="m", api="openai-chat", provider="p", base_url=f"ftp://u:{PASSWORD}@h/v1")
    assert PASSWORD not in str(info.value)
