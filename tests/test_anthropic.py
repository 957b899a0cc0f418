"""Anthropic Messages wire API: decoding recorded streams, building requests.

Expectations are derived independently of the adapter: from the fixture's SSE
payloads parsed here with ``json``, and from the official ``anthropic`` SDK's
stream accumulator (``accumulate_event``), a test-only differential reference.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import modelwire as mw
from modelwire import errors
from modelwire._apis import get_api
from modelwire._apis.anthropic_messages import (
    API,
    THINKING_BUDGETS,
    AnthropicDecoder,
    uses_adaptive_thinking,
)
from modelwire._client._options import resolve_options
from modelwire._client._replay import replay
from modelwire._wire.deltas import EndOfStream
from modelwire._wire.sse import Frame
from recorded import recorded_streams

FIXTURES = recorded_streams("anthropic")
DATA = Path(__file__).resolve().parent / "data" / "anthropic"
RECORDED = sorted(FIXTURES.glob("*.sse"))
SYNTHETIC = sorted(DATA.glob("*.sse"))
API_NAME = "anthropic-messages"
KEY = "sk-ant-api03-TEST-SECRET-do-not-leak-0123456789"

# Stop reasons per the "Handling stop reasons" page of the Anthropic docs.
DONE_REASON = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_use",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
}
# Error types per the Anthropic "Errors" reference → modelwire kinds (DESIGN §2).
ERROR_KINDS = {
    "overloaded_error": "overloaded",
    "rate_limit_error": "rate_limit",
    "api_error": "server",
    "timeout_error": "server",
    "authentication_error": "authentication",
    "permission_error": "permission",
    "not_found_error": "not_found",
    "invalid_request_error": "invalid_request",
    "request_too_large": "invalid_request",
    "billing_error": "provider_stream",
    "an_error_type_from_the_future": "provider_stream",
}


def wire_frame(*, event: str = "message", data: str) -> Frame:
    """A frame as the pipeline's framing hands it to a decoder: the payload as bytes."""
    return Frame(event, data.encode())


def test_fixtures_present() -> None:
    assert len(RECORDED) == 15, [p.name for p in RECORDED]
    assert len(SYNTHETIC) >= 7


# --------------------------------------------------------------------------- references


def sse_payloads(raw: bytes) -> list[dict[str, Any]]:
    """The JSON payloads of a body, parsed independently of ``modelwire._wire.sse``."""
    text = raw.decode("utf-8").replace("\r\n", "\n")
    out = []
    for block in text.split("\n\n"):
        lines = [ln[5:].removeprefix(" ") for ln in block.split("\n") if ln.startswith("data:")]
        if lines:
            out.append(json.loads("\n".join(lines)))
    return out


def json_reference(payloads: list[dict[str, Any]]) -> dict[str, Any]:
    """A hand-written accumulator over the payloads: blocks by index, usage, stop."""
    blocks: dict[int, dict[str, Any]] = {}
    usage: dict[str, int] = {}
    stop = error = None
    for p in payloads:
        t = p["type"]
        if t == "message_start":
            usage = {k: v for k, v in p["message"]["usage"].items() if isinstance(v, int)}
        elif t == "content_block_start":
            cb = p["content_block"]
            blocks[p["index"]] = {
                "type": cb["type"],
                "text": cb.get("text") or cb.get("thinking") or "",
                "sig": cb.get("signature") or cb.get("data") or None,
                "json": "",
                "id": cb.get("id"),
                "name": cb.get("name"),
            }
        elif t == "content_block_delta":
            d, b = p["delta"], blocks[p["index"]]
            if d["type"] == "compaction_delta":
                b["summary"] = b.get("summary", "") + (d.get("content") or "")
            elif d["type"] == "text_delta":
                b["text"] += d["text"]
            elif d["type"] == "thinking_delta":
                b["text"] += d["thinking"]
            elif d["type"] == "signature_delta":
                b["sig"] = d["signature"]
            elif d["type"] == "input_json_delta":
                b["json"] += d["partial_json"]
        elif t == "message_delta":
            stop = p["delta"]["stop_reason"]
            usage.update({k: v for k, v in p["usage"].items() if isinstance(v, int)})
        elif t == "error":
            error = p["error"]
            break
    return {"blocks": [blocks[i] for i in sorted(blocks)], "usage": usage, "stop": stop,
            "error": error}  # fmt: skip


def sdk_reference(payloads: list[dict[str, Any]]) -> tuple[Any, dict[int, bytes], Any]:
    """The official SDK's accumulated message (up to an in-band error)."""
    # Imported here: the SDK takes seconds to import, and only these tests need it.
    from anthropic.lib.streaming._messages import accumulate_event

    snapshot: Any = None
    bufs: dict[int, bytes] = {}
    for p in payloads:
        if p["type"] == "error":
            return snapshot, bufs, p["error"]
        if p["type"] == "ping":
            continue
        snapshot = accumulate_event(event=p, current_snapshot=snapshot, json_bufs=bufs)
    return snapshot, bufs, None


def _reference_citation(c: dict[str, Any]) -> mw.Citation:
    # The citation types of the Anthropic citations and web-search docs.
    t = c["type"]
    raw = json.dumps(c)
    if t == "web_search_result_location":
        return mw.Citation(kind="url", url=c["url"], title=c.get("title"),
                           cited_text=c.get("cited_text"), raw=raw)  # fmt: skip
    if t == "char_location":
        return mw.Citation(kind="document", title=c.get("document_title"),
                           cited_text=c.get("cited_text"), document=str(c["document_index"]),
                           start=c["start_char_index"], end=c["end_char_index"], raw=raw)  # fmt: skip
    return mw.Citation(kind="other", cited_text=c.get("cited_text"), raw=raw)


def expected_content(
    snapshot: Any, bufs: dict[int, bytes], ref: dict[str, Any] | None = None
) -> list[Any]:
    """Our content, derived from the SDK snapshot: text with its citations, thinking,
    redacted thinking, client tool calls, provider-run tool calls and results, and
    every other block as an opaque item (its JSON; ``raw`` and ``data`` compared
    parsed, see :func:`comparable`). The SDK accumulator (non-beta) does not apply
    ``compaction_delta``: the hand reference ``ref`` gives that summary."""
    length = snapshot.stop_reason in ("max_tokens", "model_context_window_exceeded")
    names: dict[str, str] = {}
    out: list[Any] = []
    for i, block in enumerate(snapshot.content):
        d = block.to_dict()
        if block.type == "text":
            cites = [_reference_citation(c) for c in d.get("citations") or ()]
            out.append(mw.TextContent(text=block.text, citations=tuple(cites)))
        elif block.type == "thinking":
            out.append(
                mw.ThinkingContent(thinking=block.thinking, signature=block.signature or None)
            )
        elif block.type == "redacted_thinking":
            out.append(mw.ThinkingContent(thinking="", signature=block.data, redacted=True))
        elif block.type == "tool_use":
            out.append(
                mw.ToolCall(
                    id=block.id,
                    name=block.name,
                    # A length finish never trusts arguments (DESIGN §3 rule 3).
                    arguments={} if length else block.input,
                    raw_arguments=bufs.get(i, b"").decode(),
                )
            )
        elif block.type in ("server_tool_use", "mcp_tool_use"):
            names[d["id"]] = d["name"]
            out.append(mw.ServerToolCall(id=d["id"], name=d["name"], input=d["input"],
                                         provider_type=block.type, raw=json.dumps(d)))  # fmt: skip
        elif block.type.endswith("_tool_result"):
            content = d.get("content")
            failed = d.get("is_error")
            if failed is None:
                failed = isinstance(content, dict) and content["type"].endswith("_error")
            out.append(mw.ServerToolResult(
                tool_call_id=d["tool_use_id"], provider_type=block.type, result=content,
                is_error=failed, name=names.get(d["tool_use_id"]), raw=json.dumps(d),
            ))  # fmt: skip
        else:
            summary = ref["blocks"][i].get("summary") if ref is not None else None
            if summary:
                d["content"] = (d.get("content") or "") + summary
            out.append(mw.ProviderItem(api=API_NAME, provider_type=block.type,
                                       data=json.dumps(d)))  # fmt: skip
    return out


def comparable(block: Any) -> Any:
    """A block with its provider JSON (``raw``, ``data``, citations' ``raw``) parsed,
    so blocks built from the SDK's dicts compare with ours."""
    if isinstance(block, mw.TextContent):
        cites = [
            msgspec.structs.replace(c, raw=json.loads(c.raw or "null")) for c in block.citations
        ]
        return (block.text, block.signature, cites)
    if isinstance(block, mw.ServerToolCall | mw.ServerToolResult):
        return msgspec.structs.replace(block, raw=json.loads(block.raw or "null"))
    if isinstance(block, mw.ProviderItem):
        return (block.api, block.provider_type, json.loads(block.data))
    return block


# --------------------------------------------------------------------------- helpers


def norm_message(msg: mw.AssistantMessage) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(msg)
    data.pop("timestamp")
    return data


def event_trace(events: list[Any]) -> list[tuple[Any, ...]]:
    return [(e.type, getattr(e, "content_index", None), getattr(e, "delta", None)) for e in events]


def block_text(block: Any) -> str:
    if isinstance(block, mw.TextContent):
        return block.text
    if isinstance(block, mw.ThinkingContent):
        return block.thinking
    if isinstance(block, mw.ToolCall):
        return block.raw_arguments or ""
    return ""  # whole blocks stream no text


STREAMED = (mw.TextContent, mw.ThinkingContent, mw.ToolCall)


def check_event_stream(events: list[Any]) -> None:
    """Stream invariants: one start, one terminal last, blocks started in content
    order, deltas that add up to the final blocks, ``*_end`` carrying them."""
    assert events[0].type == "start"
    assert [e.type for e in events].count("start") == 1
    terminal = events[-1]
    assert terminal.type in ("done", "error")
    assert all(e.type not in ("done", "error") for e in events[:-1])
    msg = terminal.message
    started: list[str] = []
    ended: set[int] = set()
    acc: dict[int, str] = {}
    cites: dict[int, list[Any]] = {}
    for e in events[1:-1]:
        kind, _, phase = e.type.rpartition("_")
        ci = e.content_index
        if e.type == "block":  # a whole block: started and final at once
            assert ci == len(started) and e.content == msg.content[ci]
            started.append("block")
            ended.add(ci)
        elif e.type == "citation":
            assert ci < len(started) and started[ci] == "text" and ci not in ended
            cites.setdefault(ci, []).append(e.citation)
        elif phase == "start":
            assert ci == len(started)
            started.append(kind)
        elif phase == "delta":
            assert ci < len(started) and started[ci] == kind and ci not in ended
            acc[ci] = acc.get(ci, "") + e.delta
        else:
            assert phase == "end" and ci not in ended
            ended.add(ci)
            final = e.tool_call if kind == "tool_call" else e.content
            assert final == msg.content[ci]
    assert len(started) == len(msg.content)
    for ci, block in enumerate(msg.content):
        assert acc.get(ci, "") == block_text(block)
        if isinstance(block, mw.TextContent):
            assert tuple(cites.get(ci, ())) == block.citations
    if terminal.type == "done":
        assert ended == set(range(len(msg.content)))


def run(raw: bytes, chunks: list[bytes] | None = None) -> list[Any]:
    return replay(API_NAME, chunks if chunks is not None else raw)


def split_at(raw: bytes, points: list[int]) -> list[bytes]:
    cuts = [0, *sorted(set(points)), len(raw)]
    return [raw[a:b] for a, b in itertools.pairwise(cuts)]


def sse(*payloads: dict[str, Any] | str, event_lines: bool = True) -> bytes:
    out = []
    for p in payloads:
        data = p if isinstance(p, str) else json.dumps(p)
        try:
            name = json.loads(data).get("type") if event_lines else None
        except json.JSONDecodeError:
            name = "content_block_delta"
        out.append((f"event: {name}\n" if name else "") + f"data: {data}\n\n")
    return "".join(out).encode()


MSG_START: dict[str, Any] = {
    "type": "message_start",
    "message": {"id": "msg_t", "type": "message", "role": "assistant", "model": "claude-x",
                "content": [], "usage": {"input_tokens": 21, "output_tokens": 1,
                                         "cache_read_input_tokens": 300,
                                         "cache_creation_input_tokens": 7}},
}  # fmt: skip
TEXT_START = {
    "type": "content_block_start",
    "index": 0,
    "content_block": {"type": "text", "text": ""},
}
HELLO = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}
STOP0 = {"type": "content_block_stop", "index": 0}
END_TURN = {
    "type": "message_delta",
    "delta": {"stop_reason": "end_turn"},
    "usage": {"output_tokens": 5},
}
MSG_STOP = {"type": "message_stop"}


# --------------------------------------------------------------------------- recorded fixtures


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_fixture_matches_references(path: Path) -> None:
    raw = path.read_bytes()
    payloads = sse_payloads(raw)
    events = run(raw)
    check_event_stream(events)
    msg = events[-1].message
    snapshot, bufs, sdk_error = sdk_reference(payloads)
    ref = json_reference(payloads)

    # Content: every block the SDK accumulated, in order (nothing is dropped).
    expected = expected_content(snapshot, bufs, ref)
    assert [comparable(b) for b in msg.content] == [comparable(b) for b in expected]
    # ...a result or opaque item is the provider's bytes exactly, as in the body...
    for b in msg.content:
        if isinstance(b, mw.ServerToolResult) or (
            isinstance(b, mw.ProviderItem) and b.provider_type != "compaction"
        ):
            exact = b.raw if isinstance(b, mw.ServerToolResult) else b.data
            assert exact is not None and exact.encode() in raw
        if isinstance(b, mw.TextContent):
            assert all((c.raw or "").encode() in raw for c in b.citations)
    # ...and the hand accumulator agrees on every streamed block's text and signature.
    kept = [
        b
        for b in ref["blocks"]
        if b["type"] in ("text", "thinking", "redacted_thinking", "tool_use")
    ]
    streamed = [b for b in msg.content if isinstance(b, STREAMED)]
    assert [block_text(b) for b in streamed] == [
        b["json"] if b["type"] == "tool_use" else b["text"] for b in kept
    ]
    assert [getattr(b, "signature", None) for b in streamed] == [
        b["sig"] if b["type"] in ("thinking", "redacted_thinking") else None for b in kept
    ]

    # Usage: message_start values, updated by every non-null message_delta value.
    u = snapshot.usage
    expected_usage = {
        "input": u.input_tokens,
        "output": u.output_tokens,
        "cache_read": u.cache_read_input_tokens or 0,
        "cache_write": u.cache_creation_input_tokens or 0,
    }
    assert expected_usage == {
        "input": ref["usage"]["input_tokens"],
        "output": ref["usage"]["output_tokens"],
        "cache_read": ref["usage"].get("cache_read_input_tokens", 0),
        "cache_write": ref["usage"].get("cache_creation_input_tokens", 0),
    }
    got = msg.usage
    assert {k: getattr(got, k) for k in expected_usage} == expected_usage
    assert got.total_tokens == sum(expected_usage.values())
    assert msg.response_id == snapshot.id
    assert msg.api == API_NAME

    if sdk_error is not None:
        assert events[-1].type == "error"
        assert msg.stop_reason == "error"
        assert msg.error.kind == ERROR_KINDS[sdk_error["type"]]
        assert sdk_error["message"] in msg.error.message
    else:
        assert events[-1].type == "done"
        assert msg.provider_stop_reason == snapshot.stop_reason == ref["stop"]
        assert events[-1].reason == msg.stop_reason == DONE_REASON[snapshot.stop_reason]


SMALL = [p for p in RECORDED if p.stat().st_size <= 8_000]


@pytest.mark.parametrize("path", SMALL, ids=lambda p: p.name)
def test_fixture_byte_by_byte(path: Path) -> None:
    raw = path.read_bytes()
    whole = run(raw)
    split = run(raw, [raw[i : i + 1] for i in range(len(raw))])
    assert event_trace(split) == event_trace(whole)
    assert norm_message(split[-1].message) == norm_message(whole[-1].message)


@pytest.mark.parametrize("path", RECORDED + SYNTHETIC, ids=lambda p: p.name)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fixture_random_splits(path: Path, data: st.DataObject) -> None:
    raw = path.read_bytes()
    points = data.draw(st.lists(st.integers(1, len(raw) - 1), max_size=40))
    whole = _whole(path)
    split = run(raw, split_at(raw, points))
    assert event_trace(split) == event_trace(whole)
    assert norm_message(split[-1].message) == norm_message(whole[-1].message)


_WHOLE: dict[Path, list[Any]] = {}


def _whole(path: Path) -> list[Any]:
    if path not in _WHOLE:
        _WHOLE[path] = run(path.read_bytes())
    return _WHOLE[path]


def test_max_tokens_partial_tool_input_is_kept_raw_and_never_parsed() -> None:
    raw = (FIXTURES / "claude-3-7-sonnet-max-tokens-partial-tool-input.sse").read_bytes()
    payloads = sse_payloads(raw)
    partial = "".join(
        p["delta"]["partial_json"]
        for p in payloads
        if p["type"] == "content_block_delta" and p["delta"]["type"] == "input_json_delta"
    )
    with pytest.raises(json.JSONDecodeError):
        json.loads(partial)  # the recorded input really is cut mid-JSON
    events = run(raw)
    done = events[-1]
    assert done.type == "done" and done.reason == "length"
    text, call = done.message.content
    assert isinstance(text, mw.TextContent) and text.text.startswith("I'll create")
    assert isinstance(call, mw.ToolCall)
    assert call.name == "make_file" and call.id == "toolu_01EKqbqmZrGRXy18eN7m9kvY"
    assert call.raw_arguments == partial
    assert call.arguments == {}
    # The call never got content_block_stop: it is closed at the end, untrusted.
    ends = [e for e in events if e.type == "tool_call_end"]
    assert len(ends) == 1 and ends[0].tool_call == call
    # While streaming, partial snapshots show best-effort arguments (display only).
    last_delta = [e for e in events if e.type == "tool_call_delta"][-1]
    assert last_delta.partial.content[1].arguments.get("filename") == "taxes.txt"


def test_redacted_thinking_keeps_data_as_signature() -> None:
    raw = (FIXTURES / "claude-sonnet-4-5-redacted-thinking.sse").read_bytes()
    datas = [
        p["content_block"]["data"]
        for p in sse_payloads(raw)
        if p["type"] == "content_block_start" and p["content_block"]["type"] == "redacted_thinking"
    ]
    assert len(datas) == 2
    events = run(raw)
    msg = events[-1].message
    thinking = [b for b in msg.content if isinstance(b, mw.ThinkingContent)]
    assert [(b.redacted, b.thinking, b.signature) for b in thinking] == [
        (True, "", d) for d in datas
    ]
    assert [e.type for e in events[1:7]] == ["thinking_start", "thinking_end"] * 2 + [
        "text_start",
        "text_delta",
    ]
    assert msg.text.startswith("I notice that you've sent")


def test_thinking_signature_delta_is_stored_on_the_block() -> None:
    raw = (FIXTURES / "claude-sonnet-4-thinking-signature-delta.sse").read_bytes()
    sig = [
        p["delta"]["signature"]
        for p in sse_payloads(raw)
        if p["type"] == "content_block_delta" and p["delta"]["type"] == "signature_delta"
    ]
    events = run(raw)
    block = events[-1].message.content[0]
    assert isinstance(block, mw.ThinkingContent) and not block.redacted
    assert [block.signature] == sig
    end = next(e for e in events if e.type == "thinking_end")
    assert end.content == block


def test_mid_stream_overloaded_error_keeps_content() -> None:
    raw = (FIXTURES / "SYNTHETIC-overloaded-error-mid-stream.sse").read_bytes()
    events = run(raw)
    err = events[-1]
    assert err.type == "error" and err.reason == "error"
    msg = err.message
    assert msg.stop_reason == "error"
    assert msg.error.kind == "overloaded" and "Overloaded" in msg.error.message
    assert msg.content == (mw.TextContent(text="Hello"),)
    assert msg.usage.input == 17 and msg.response_id == "msg_01KfpJoAEabmH2iHRRFjQMAG"
    with pytest.raises(errors.OverloadedError):
        msg.raise_for_error()


def test_server_tools_take_their_place_and_are_never_client_calls() -> None:
    raw = (FIXTURES / "claude-sonnet-4-6-code-execution-server-tool.sse").read_bytes()
    events = run(raw)
    msg = events[-1].message
    kinds = [type(b).__name__ for b in msg.content]
    assert kinds == ["ThinkingContent", "TextContent", "ServerToolCall", "ServerToolResult",
                     "TextContent"]  # fmt: skip
    assert {e.content_index for e in events if hasattr(e, "content_index")} == set(range(5))
    assert msg.tool_calls == () and msg.stop_reason == "stop"
    call, result = msg.content[2], msg.content[3]
    assert isinstance(call, mw.ServerToolCall) and isinstance(result, mw.ServerToolResult)
    assert result.tool_call_id == call.id and result.name == call.name


# --------------------------------------------------------------------------- synthetic streams


def _load(name: str) -> list[Any]:
    return run((DATA / name).read_bytes())


def test_refusal_is_content_filter_error_with_content() -> None:
    err = _load("refusal.sse")[-1]
    assert err.type == "error"
    assert err.message.error.kind == "content_filter"
    assert err.message.provider_stop_reason == "refusal"
    assert err.message.text == "I can't help with that."


def test_unknown_stop_reason_is_an_error_keeping_the_raw_reason() -> None:
    err = _load("unknown-stop-reason.sse")[-1]
    assert err.type == "error"
    assert err.message.error.kind == "provider_stream"
    assert err.message.provider_stop_reason == "a_future_stop_reason"
    assert err.message.text == "Partial answer"


def test_context_window_exceeded_is_length() -> None:
    done = _load("context-window-exceeded.sse")[-1]
    assert done.type == "done" and done.reason == "length"
    assert done.message.provider_stop_reason == "model_context_window_exceeded"


def test_stream_without_message_stop_is_truncated() -> None:
    err = _load("no-message-stop.sse")[-1]
    assert err.type == "error"
    assert err.message.error.kind == "truncated_stream"
    assert "message_stop" in err.message.error.message
    assert err.message.text == "Everything looked fine"


def test_stream_without_stop_reason_is_truncated() -> None:
    err = _load("no-message-delta.sse")[-1]
    assert err.type == "error" and err.message.error.kind == "truncated_stream"


def test_unknown_events_and_deltas_are_ignored_and_unknown_blocks_kept() -> None:
    events = _load("forward-compat.sse")
    done = events[-1]
    assert done.type == "done" and done.reason == "stop"
    payloads = sse_payloads((DATA / "forward-compat.sse").read_bytes())
    future = json.dumps(payloads[2]["content_block"], separators=(",", ":"))
    cite = json.dumps(payloads[11]["delta"]["citation"], separators=(",", ":"))
    item, call, text = done.message.content
    # A block type added later is kept whole, exactly as it started; its deltas
    # (unknown, or a text_delta that cannot be placed in it) are ignored.
    assert item == mw.ProviderItem(api=API_NAME, provider_type="future_block", data=future)
    assert isinstance(call, mw.ServerToolCall) and call.input == {"query": "weather"}
    assert done.message.tool_calls == ()
    assert text.text == "Sunny all day."
    assert [c.raw for c in text.citations] == [cite]
    # message_delta's null counts leave message_start's values; output is the last value.
    u = done.message.usage
    assert (u.input, u.output, u.cache_read, u.cache_write) == (21, 12, 300, 7)


def test_tool_input_given_whole_in_block_start() -> None:
    events = _load("tool-input-in-start.sse")
    done = events[-1]
    assert done.type == "done" and done.reason == "tool_use"
    first, second = done.message.tool_calls
    assert first.arguments == {"path": "README.md", "limit": 5}
    assert json.loads(first.raw_arguments or "") == first.arguments
    assert second.arguments == {"path": "src/main.py"}
    assert second.raw_arguments == '{"path": "src/main.py"}'


def test_usage_values_in_message_delta_replace_start_values() -> None:
    delta = {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
             "usage": {"input_tokens": 40, "cache_read_input_tokens": 0, "output_tokens": 9}}  # fmt: skip
    msg = run(sse(MSG_START, TEXT_START, HELLO, STOP0, delta, MSG_STOP))[-1].message
    u = msg.usage
    assert (u.input, u.output, u.cache_read, u.cache_write) == (40, 9, 0, 7)
    assert u.total_tokens == 56


def test_no_event_lines_are_needed() -> None:
    # The type inside the JSON drives decoding (the synthetic overloaded fixture has no
    # ``event:`` lines either).
    done = run(sse(MSG_START, TEXT_START, HELLO, STOP0, END_TURN, MSG_STOP, event_lines=False))[-1]
    assert done.type == "done" and done.message.text == "Hel"


@pytest.mark.parametrize(("error_type", "kind"), sorted(ERROR_KINDS.items()))
def test_error_event_types(error_type: str, kind: str) -> None:
    error = {"type": "error", "error": {"type": error_type, "message": "Something happened"}}
    err = run(sse(MSG_START, TEXT_START, HELLO, error))[-1]
    assert err.type == "error"
    assert err.message.error.kind == kind
    assert "Something happened" in err.message.error.message
    assert err.message.text == "Hel"


def test_prompt_too_long_error_is_context_overflow() -> None:
    error = {"type": "error", "error": {"type": "invalid_request_error",
                                       "message": "prompt is too long: 210000 tokens > 200000 maximum"}}  # fmt: skip
    err = run(sse(MSG_START, error))[-1]
    assert err.message.error.kind == "context_overflow"


BAD: list[tuple[str, list[Any], str]] = [
    ("index-not-int", [{**HELLO, "index": "0"}], "index must be an integer"),
    ("text-not-str", [{**HELLO, "delta": {"type": "text_delta", "text": 5}}], "delta.text must be a string"),
    ("text-missing", [{**HELLO, "delta": {"type": "text_delta"}}], "delta.text is missing"),
    ("delta-missing", [{"type": "content_block_delta", "index": 0}], "delta is missing"),
    ("index-missing", [{"type": "content_block_stop"}], "index is missing"),
    ("never-started", [{**HELLO, "index": 7}], "index 7, which never started"),
    ("after-stop", [STOP0, HELLO], "index 0, which already stopped"),
    ("twice-started", [TEXT_START], "index 0, which already started"),
    ("wrong-kind", [{**HELLO, "delta": {"type": "thinking_delta", "thinking": "x"}}], "'thinking_delta'"),
    ("bad-json", ['{"type": "content_block_delta", "index": 0, "delta": {'], "invalid JSON"),
    ("no-type", [{"index": 0}], "type"),
    ("usage-type", [{**END_TURN, "usage": {"output_tokens": "9"}}], "usage.output_tokens must be an integer"),
    ("stop-reason-type", [{**END_TURN, "delta": {"stop_reason": 3}}], "delta.stop_reason must be a string"),
    ("redacted-no-data", [{"type": "content_block_start", "index": 1,
                           "content_block": {"type": "redacted_thinking"}}], "content_block.data is missing"),
    ("input-not-object", [{"type": "content_block_start", "index": 1,
                           "content_block": {"type": "tool_use", "id": "t", "name": "n", "input": []}}],
     "content_block.input must be an object"),
    ("error-message-type", [{"type": "error", "error": {"type": "api_error", "message": 5}}],
     "error.message must be a string"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "tail", "needle"), BAD, ids=[b[0] for b in BAD])
def test_malformed_payloads_name_the_field(case: str, tail: list[Any], needle: str) -> None:
    events = run(sse(MSG_START, TEXT_START, HELLO, *tail, END_TURN, MSG_STOP))
    err = events[-1]
    assert err.type == "error", case
    assert err.message.error.kind == "malformed_chunk"
    assert needle in err.message.error.message
    assert err.message.text == "Hel"  # what arrived before is kept


def test_message_start_with_bad_usage_names_the_path() -> None:
    bad = json.loads(json.dumps(MSG_START))
    bad["message"]["usage"]["input_tokens"] = "many"
    err = run(sse(bad, MSG_STOP))[-1]
    assert err.message.error.kind == "malformed_chunk"
    assert "message.usage.input_tokens must be an integer" in err.message.error.message


def test_decoder_terminal_signal_and_end() -> None:
    dec = API.new_decoder(None)
    assert isinstance(dec, AnthropicDecoder)
    assert dec.decode(wire_frame(event="message_stop", data='{"type":"message_stop"}')) == [
        EndOfStream()
    ]
    with pytest.raises(errors.TruncatedStreamError, match="message_stop"):
        AnthropicDecoder().end()
    assert get_api(API_NAME) is API


def test_tool_call_protocol_applies_to_anthropic_streams() -> None:
    # stop_reason tool_use with no tool_use block is a protocol violation (DESIGN §2a).
    tool_stop = {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}}
    err = run(sse(MSG_START, TEXT_START, HELLO, STOP0, tool_stop, MSG_STOP))[-1]
    assert err.type == "error" and err.message.error.kind == "tool_call_protocol"


# --------------------------------------------------------------------------- requests


def model(**kw: Any) -> mw.Model:
    args: dict[str, Any] = {
        "id": "claude-sonnet-4-5",
        "api": API_NAME,
        "provider": "anthropic",
        "base_url": "https://api.anthropic.com/v1/",
        "reasoning": True,
        "max_tokens": 64_000,
    }
    args.update(kw)
    return mw.Model(**args)


def opts(**kw: Any) -> Any:
    kw.setdefault("api_key", KEY)
    return resolve_options("anthropic", **kw)


def body_of(m: mw.Model, ctx: mw.Context, **kw: Any) -> dict[str, Any]:
    req = API.build_request(m, ctx, opts(**kw))
    body: dict[str, Any] = json.loads(req.body)
    return body


READ = mw.ToolDefinition(
    name="read",
    description="Read a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
LS = mw.ToolDefinition(name="ls", description="List a directory", parameters={"type": "object"})


def assistant(
    *content: Any, m: mw.Model | None = None, stop: mw.StopReason = "tool_use"
) -> mw.AssistantMessage:
    m = m or model()
    return mw.AssistantMessage(
        content=content, api=m.api, provider=m.provider, model=m.id, stop_reason=stop
    )


def test_request_url_and_headers() -> None:
    req = API.build_request(model(), mw.Context(messages=[mw.UserMessage(content="hi")]), opts())
    assert req.url == "https://api.anthropic.com/v1/messages"
    assert req.headers == {
        "content-type": "application/json",
        "accept": "text/event-stream",
        "anthropic-version": "2023-06-01",
        "x-api-key": KEY,
    }
    assert req.secrets == (KEY,)
    body = json.loads(req.body)
    assert body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64_000,
        "stream": True,
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
            }
        ],
    }


def test_model_and_option_headers_are_merged() -> None:
    m = model(headers={"X-Team": "a", "anthropic-beta": "files-api-2025-04-14"})
    req = API.build_request(
        m,
        mw.Context(messages=[mw.UserMessage(content="hi")]),
        opts(headers={"x-team": "b", "Anthropic-Beta": "context-1m-2025-08-07"}),
    )
    assert req.headers["x-team"] == "b"
    assert "X-Team" not in req.headers
    assert req.headers["anthropic-beta"] == "files-api-2025-04-14,context-1m-2025-08-07"
    assert req.headers["x-api-key"] == KEY


def test_key_never_in_body_url_or_repr() -> None:
    ctx = mw.Context(
        system_prompt="be brief", messages=[mw.UserMessage(content="hi")], tools=[READ]
    )
    o = opts(reasoning="low", headers={"x-trace": "1"})
    req = API.build_request(model(), ctx, o)
    assert KEY.encode() not in req.body
    assert KEY not in req.url
    assert KEY not in repr(req) and KEY not in str(req)
    assert KEY not in repr(o)
    # A caller mistake names the option, not the key.
    with pytest.raises(mw.ConfigurationError) as info:
        API.build_request(model(), ctx, opts(tool_choice={"name": "nope"}))
    assert KEY not in str(info.value)


def test_key_passed_as_header_is_a_secret_too() -> None:
    req = API.build_request(
        model(), mw.Context(messages=[mw.UserMessage(content="hi")]),
        resolve_options("local", headers={"X-Api-Key": "sk-from-header"}),
    )  # fmt: skip
    assert req.headers["x-api-key"] == "sk-from-header"
    assert req.secrets == ("sk-from-header",)
    assert "sk-from-header" not in repr(req)


def test_bearer_auth_compat() -> None:
    req = API.build_request(
        model(compat={"auth": "bearer"}),
        mw.Context(messages=[mw.UserMessage(content="hi")]),
        opts(),
    )
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert "x-api-key" not in req.headers
    assert req.secrets == (KEY,)


def test_system_prompt_string_or_cached_blocks() -> None:
    ctx = mw.Context(system_prompt="回答要简洁。", messages=[mw.UserMessage(content="hi")])
    cached = body_of(model(), ctx)
    assert cached["system"] == [
        {"type": "text", "text": "回答要简洁。", "cache_control": {"type": "ephemeral"}}
    ]
    plain = body_of(model(), ctx, cache=False)
    assert plain["system"] == "回答要简洁。"
    assert "cache_control" not in json.dumps(plain)
    assert "system" not in body_of(model(), mw.Context(system_prompt="", messages=ctx.messages))


def _tool_conversation(m: mw.Model) -> mw.Context:
    calls = assistant(
        mw.TextContent(text="Reading both."),
        mw.ToolCall(
            id="toolu_a", name="read", arguments={"path": "a"}, raw_arguments='{"path": "a"}'
        ),
        mw.ToolCall(id="toolu_b", name="ls", arguments={}, raw_arguments=""),
        m=m,
    )
    return mw.Context(
        system_prompt="sys",
        tools=[READ, LS],
        messages=[
            mw.UserMessage(content="read a and list"),
            calls,
            mw.ToolResultMessage(tool_call_id="toolu_a", tool_name="read", content="A-TEXT"),
            mw.ToolResultMessage(
                tool_call_id="toolu_b",
                tool_name="ls",
                content=[
                    mw.TextContent(text="no such dir"),
                    mw.ImageContent(data="aW1n", mime_type="image/png"),
                ],
                is_error=True,
            ),
            mw.UserMessage(content="thanks"),
        ],
    )


def test_consecutive_tool_results_merge_into_one_user_message() -> None:
    body = body_of(model(), _tool_conversation(model()))
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "Reading both."},
        {"type": "tool_use", "id": "toolu_a", "name": "read", "input": {"path": "a"}},
        {"type": "tool_use", "id": "toolu_b", "name": "ls", "input": {}},
    ]
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_a",
         "content": [{"type": "text", "text": "A-TEXT"}], "is_error": False},
        {"type": "tool_result", "tool_use_id": "toolu_b",
         "content": [{"type": "text", "text": "no such dir"},
                     {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                  "data": "aW1n"}}],
         "is_error": True},
        # The last user block carries the cache breakpoint.
        {"type": "text", "text": "thanks", "cache_control": {"type": "ephemeral"}},
    ]  # fmt: skip
    assert body["tools"] == [
        {"name": "read", "description": "Read a file", "input_schema": READ.parameters},
        {"name": "ls", "description": "List a directory", "input_schema": {"type": "object"}},
    ]


def test_cache_breakpoint_on_a_trailing_tool_result() -> None:
    ctx = _tool_conversation(model())
    ctx = mw.Context(system_prompt=ctx.system_prompt, tools=ctx.tools, messages=ctx.messages[:-1])
    last = body_of(model(), ctx)["messages"][-1]["content"]
    assert [b.get("cache_control") for b in last] == [None, {"type": "ephemeral"}]
    assert "cache_control" not in json.dumps(body_of(model(), ctx, cache=False)["messages"])


def test_tool_use_input_replays_raw_arguments_exactly() -> None:
    call = mw.ToolCall(id="toolu_1", name="read", arguments={"a": [1, 2], "b": 1},
                       raw_arguments='{"b": 1, "a": [1, 2]}')  # fmt: skip
    broken = mw.ToolCall(id="toolu_2", name="read", arguments={"path": "x"}, raw_arguments='{"pa')
    ctx = mw.Context(
        tools=[READ],
        messages=[
            mw.UserMessage(content="go"),
            assistant(call, broken),
            mw.ToolResultMessage(tool_call_id="toolu_1", tool_name="read", content="1"),
            mw.ToolResultMessage(tool_call_id="toolu_2", tool_name="read", content="2"),
        ],
    )
    req = API.build_request(model(), ctx, opts())
    assert b'"input":{"b":1,"a":[1,2]}' in req.body  # the provider's order, not ours
    uses = json.loads(req.body)["messages"][1]["content"]
    assert uses[1]["input"] == {"path": "x"}  # unparsable raw text: the parsed arguments


def test_thinking_signatures_replay_only_to_the_same_model() -> None:
    thinking = mw.ThinkingContent(thinking="let me see", signature="SIG-1")
    redacted = mw.ThinkingContent(thinking="", signature="ENCRYPTED", redacted=True)
    unsigned = mw.ThinkingContent(thinking="no signature")
    call = mw.ToolCall(
        id="toolu_1", name="read", arguments={"path": "a"}, raw_arguments='{"path":"a"}'
    )

    def ctx_for(producer: mw.Model) -> mw.Context:
        return mw.Context(
            tools=[READ],
            messages=[
                mw.UserMessage(content="q"),
                assistant(
                    thinking, redacted, unsigned, mw.TextContent(text="ok"), call, m=producer
                ),
                mw.ToolResultMessage(tool_call_id="toolu_1", tool_name="read", content="A"),
            ],
        )

    same = body_of(model(), ctx_for(model()))["messages"][1]["content"]
    assert same == [
        {"type": "thinking", "thinking": "let me see", "signature": "SIG-1"},
        {"type": "redacted_thinking", "data": "ENCRYPTED"},
        {"type": "text", "text": "<thinking>\nno signature\n</thinking>"},
        {"type": "text", "text": "ok"},
        {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}},
    ]
    for other in (model(id="claude-opus-4-1"), model(provider="bedrock")):
        blocks = body_of(model(), ctx_for(other))["messages"][1]["content"]
        assert blocks == [
            {"type": "text", "text": "<thinking>\nlet me see\n</thinking>"},
            {"type": "text", "text": "<thinking>\nno signature\n</thinking>"},
            {"type": "text", "text": "ok"},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}},
        ]
        assert "SIG-1" not in json.dumps(blocks) and "ENCRYPTED" not in json.dumps(blocks)


def test_failed_turns_are_not_replayed_and_roles_alternate() -> None:
    ctx = mw.Context(
        messages=[
            mw.UserMessage(content="one"),
            assistant(mw.TextContent(text="half"), stop="error"),
            mw.UserMessage(content=[mw.TextContent(text=""), mw.TextContent(text="two")]),
            assistant(mw.TextContent(text=""), stop="stop"),  # nothing to send
            mw.UserMessage(content=[mw.ImageContent(data="iVBOR", mime_type="image/png")]),
        ]
    )
    msgs = body_of(model(), ctx, cache=False)["messages"]
    assert msgs == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "one"},
                {"type": "text", "text": "two"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"},
                },
            ],
        }
    ]


def test_tool_results_come_first_in_their_user_message() -> None:
    call = mw.ToolCall(id="toolu_1", name="read", arguments={"path": "a"})
    ctx = mw.Context(
        tools=[READ],
        messages=[
            mw.UserMessage(content="go"),
            assistant(call),
            mw.UserMessage(content="(also, hurry)"),
            mw.ToolResultMessage(tool_call_id="toolu_1", tool_name="read", content="A"),
        ],
    )
    last = body_of(model(), ctx, cache=False)["messages"][-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text"]
    assert last[1]["text"] == "(also, hurry)"


def test_foreign_tool_ids_are_rewritten_consistently() -> None:
    call = mw.ToolCall(id="fc_1|call/2", name="read", arguments={"path": "a"})
    ctx = mw.Context(
        tools=[READ],
        messages=[
            mw.UserMessage(content="go"),
            assistant(call, m=model(api="openai-responses", provider="openai", id="gpt-5")),
            mw.ToolResultMessage(tool_call_id="fc_1|call/2", tool_name="read", content="A"),
        ],
    )
    msgs = body_of(model(), ctx)["messages"]
    use_id = msgs[1]["content"][0]["id"]
    assert use_id == msgs[2]["content"][0]["tool_use_id"]
    assert use_id.replace("_", "").replace("-", "").isalnum()
    assert msgs[1]["content"][0]["input"] == {"path": "a"}


def test_building_is_pure_and_deterministic() -> None:
    ctx = _tool_conversation(model())
    before = mw.to_json(ctx)
    o = opts(reasoning="high", temperature=0.3)
    first = API.build_request(model(), ctx, o)
    second = API.build_request(model(), ctx, o)
    assert first.body == second.body and first.headers == second.headers
    assert mw.to_json(ctx) == before


CHOICES: list[tuple[Any, Any, Any]] = [
    (None, None, None),
    ("auto", None, {"type": "auto"}),
    ("required", None, {"type": "any"}),
    ("none", None, {"type": "none"}),
    ({"name": "read"}, None, {"type": "tool", "name": "read"}),
    (None, False, {"type": "auto", "disable_parallel_tool_use": True}),
    ("required", False, {"type": "any", "disable_parallel_tool_use": True}),
    ({"name": "ls"}, False, {"type": "tool", "name": "ls", "disable_parallel_tool_use": True}),
    ("none", False, {"type": "none"}),
    (None, True, None),
]


@pytest.mark.parametrize(("choice", "parallel", "expected"), CHOICES)
def test_tool_choice_mapping(choice: Any, parallel: Any, expected: Any) -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content="hi")], tools=[READ, LS])
    body = body_of(model(), ctx, tool_choice=choice, parallel_tool_calls=parallel)
    assert body.get("tool_choice") == expected


def test_tool_choice_needs_the_tool() -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content="hi")])
    with pytest.raises(mw.ConfigurationError, match="declares no tools"):
        body_of(model(), ctx, tool_choice="required")
    with pytest.raises(mw.ConfigurationError, match="'read'"):
        body_of(model(), ctx, tool_choice={"name": "read"})
    assert "tool_choice" not in body_of(model(), ctx, tool_choice="auto")
    assert "tool_choice" not in body_of(model(), ctx, tool_choice="none")


@pytest.mark.parametrize("level", list(THINKING_BUDGETS))
def test_thinking_budget_levels(level: str) -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content="hi")])
    body = body_of(model(), ctx, reasoning=level, temperature=0.2)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": THINKING_BUDGETS[level]}
    assert body["max_tokens"] == 64_000  # room enough: the model's limit
    assert "temperature" not in body  # thinking is incompatible with temperature
    assert "output_config" not in body


def test_max_tokens_is_raised_to_cover_the_budget() -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content="hi")])
    small = body_of(model(), ctx, reasoning="medium", max_tokens=1000)
    assert small["thinking"]["budget_tokens"] == 8192
    assert small["max_tokens"] == 1000 + 8192  # the answer keeps its 1000 tokens
    # Capped at the model's limit: the budget shrinks and stays below max_tokens.
    capped = body_of(model(max_tokens=16_384), ctx, reasoning="xhigh")
    assert capped["max_tokens"] == 16_384
    assert 1024 <= capped["thinking"]["budget_tokens"] < capped["max_tokens"]
    assert capped["max_tokens"] - capped["thinking"]["budget_tokens"] >= 1024
    with pytest.raises(mw.ConfigurationError, match="thinking budget"):
        body_of(model(max_tokens=1500), ctx, reasoning="low", max_tokens=500)
    with pytest.raises(mw.ConfigurationError, match="below the API minimum"):
        body_of(model(compat={"thinking_budgets": {"low": 500}}), ctx, reasoning="low")


def test_temperature_is_sent_without_thinking() -> None:
    body = body_of(model(), mw.Context(messages=[mw.UserMessage(content="hi")]), temperature=0.2)
    assert body["temperature"] == 0.2 and "thinking" not in body


@pytest.mark.parametrize(
    ("model_id", "adaptive"),
    [
        ("claude-opus-4-6", True),
        ("claude-sonnet-4-6", True),
        ("anthropic.claude-opus-4-6-v1", True),
        ("claude-opus-4-7", True),
        ("claude-sonnet-5", True),
        ("claude-sonnet-4-5", False),
        ("claude-sonnet-4-20250514", False),
        ("claude-haiku-4-5-20251001", False),
        ("claude-3-7-sonnet-20250219", False),
        ("my-local-model", False),
    ],
)
def test_adaptive_thinking_rule(model_id: str, adaptive: bool) -> None:
    assert uses_adaptive_thinking(model(id=model_id)) is adaptive


def test_adaptive_thinking_request() -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content="hi")], tools=[READ])
    body = body_of(
        model(id="claude-opus-4-6"), ctx, reasoning="xhigh", max_tokens=4000, temperature=1
    )
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": "max"}
    assert body["max_tokens"] == 4000 and "temperature" not in body
    req = API.build_request(model(id="claude-opus-4-6"), ctx, opts(reasoning="low"))
    assert "anthropic-beta" not in req.headers  # adaptive thinking interleaves by itself
    # compat decides over the id, both ways.
    forced = body_of(
        model(id="proxy-model", compat={"thinking": "adaptive"}), ctx, reasoning="medium"
    )
    assert forced["thinking"] == {"type": "adaptive"} and forced["output_config"] == {
        "effort": "medium"
    }
    legacy = body_of(
        model(id="claude-opus-4-6", compat={"thinking": "enabled"}), ctx, reasoning="low"
    )
    assert legacy["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    custom = body_of(model(id="claude-opus-4-7", compat={"efforts": {"xhigh": "xhigh"}}), ctx,
                     reasoning="xhigh")  # fmt: skip
    assert custom["output_config"] == {"effort": "xhigh"}


def test_interleaved_thinking_beta() -> None:
    tools = mw.Context(messages=[mw.UserMessage(content="hi")], tools=[READ])
    no_tools = mw.Context(messages=[mw.UserMessage(content="hi")])

    def beta(m: mw.Model, ctx: mw.Context, **kw: Any) -> str | None:
        return API.build_request(m, ctx, opts(**kw)).headers.get("anthropic-beta")

    assert beta(model(), tools, reasoning="low") == "interleaved-thinking-2025-05-14"
    assert beta(model(), tools) is None
    assert beta(model(), no_tools, reasoning="low") is None
    assert beta(model(id="claude-3-7-sonnet-20250219"), tools, reasoning="low") is None
    assert beta(model(compat={"interleaved_thinking": False}), tools, reasoning="low") is None
    both = beta(model(headers={"anthropic-beta": "x-1"}), tools, reasoning="low")
    assert both == "interleaved-thinking-2025-05-14,x-1"


def test_impossible_reasoning_options_raise_before_any_request() -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content="hi")], tools=[READ])
    with pytest.raises(mw.ConfigurationError, match="auto or none"):
        body_of(model(), ctx, reasoning="low", tool_choice="required")
    with pytest.raises(mw.ConfigurationError, match="auto or none"):
        body_of(model(), ctx, reasoning="low", tool_choice={"name": "read"})
    assert body_of(model(), ctx, reasoning="low", tool_choice="none")["tool_choice"] == {
        "type": "none"
    }
    with pytest.raises(mw.ConfigurationError, match="reasoning"):
        body_of(model(reasoning=False), ctx, reasoning="low")


def test_extra_body_and_compat_validation() -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content="hi")])
    body = body_of(model(), ctx, extra_body={"top_k": 5, "metadata": {"user_id": "u1"}})
    assert body["top_k"] == 5 and body["metadata"] == {"user_id": "u1"}
    for key in ("system", "messages", "max_tokens", "tools", "model", "stream"):
        with pytest.raises(mw.ConfigurationError, match=key):
            body_of(model(), ctx, extra_body={key: 1})
    with pytest.raises(mw.ConfigurationError, match="unknown anthropic-messages compat"):
        body_of(model(compat={"thinkng": "adaptive"}), ctx)
    with pytest.raises(mw.ConfigurationError, match="invalid anthropic-messages compat"):
        body_of(model(compat={"auth": "basic"}), ctx)


# --------------------------------------------------------------------------- loopback


FIXED_VERSION = mw.ToolDefinition(
    name="fixed_version", description="The fixed version", parameters={"type": "object"}
)


def _loopback_model(server: Any, **kw: Any) -> mw.Model:
    # provider "anthropic": the key is required (ANTHROPIC_API_KEY is cleared in tests).
    fields: dict[str, Any] = {"provider": "anthropic", "reasoning": True, "max_tokens": 32_000}
    fields.update(kw)
    model: mw.Model = server.model(API_NAME, **fields)
    return model


def _answer_stream(text: str) -> bytes:
    return sse(
        MSG_START,
        TEXT_START,
        {**HELLO, "delta": {"type": "text_delta", "text": text}},
        STOP0,
        END_TURN,
        MSG_STOP,
    )


def test_request_shape_over_loopback() -> None:
    body = (FIXTURES / "claude-haiku-4-5-text.sse").read_bytes()
    with mw.testing.MockServer([mw.testing.Reply(body=body, seed=7)]) as server:
        # The conversation holds an image: the model must declare it (Model.input).
        m = _loopback_model(server, id="claude-haiku-4-5", input=["text", "image"])
        ctx = _tool_conversation(m)
        msg = mw.complete_sync(m, ctx, api_key=KEY, reasoning="low", max_retries=0)
        rec = server.last_request
        # The same image to a model not declared to take images: refused before any
        # request, naming the block and the fix.
        text_only = _loopback_model(server, id="claude-haiku-4-5", input=("text",))
        with pytest.raises(mw.ConfigurationError, match=r"messages\[3\]\.content\[1\]"):
            mw.complete_sync(text_only, ctx, api_key=KEY, max_retries=0)
        assert len(server.requests) == 1
    assert msg.stop_reason == "stop" and msg.text == "Hello"
    assert rec.method == "POST" and rec.path == "/v1/messages"
    assert rec.headers["x-api-key"] == KEY
    assert rec.headers["anthropic-version"] == "2023-06-01"
    assert rec.headers["content-type"] == "application/json"
    assert rec.headers["accept"] == "text/event-stream"
    assert rec.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    assert KEY.encode() not in rec.body
    sent = rec.json()
    # The client applies mw.handoff before encoding.
    assert sent == json.loads(API.build_request(m, mw.handoff(ctx, m), opts(reasoning="low")).body)
    result = sent["messages"][2]["content"][1]["content"]
    assert result[1] == {"type": "image",
                         "source": {"type": "base64", "media_type": "image/png", "data": "aW1n"}}  # fmt: skip
    assert sent["system"][0]["text"] == "sys"
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert [x["role"] for x in sent["messages"]] == ["user", "assistant", "user"]
    assert [b["type"] for b in sent["messages"][2]["content"]] == [
        "tool_result",
        "tool_result",
        "text",
    ]


@pytest.mark.anyio
async def test_two_turn_tool_conversation_through_complete() -> None:
    turn1 = (FIXTURES / "claude-haiku-4-5-thinking-then-tool-use.sse").read_bytes()
    payloads = sse_payloads(turn1)
    thinking = "".join(
        p["delta"].get("thinking", "") for p in payloads if p["type"] == "content_block_delta"
    )
    signature = next(
        p["delta"]["signature"]
        for p in payloads
        if p["type"] == "content_block_delta" and p["delta"]["type"] == "signature_delta"
    )
    replies = [
        mw.testing.Reply(body=turn1, chunk_size=97),
        mw.testing.Reply(body=_answer_stream("It is 1.2.3.")),
    ]
    with mw.testing.MockServer(replies) as server:
        m = _loopback_model(server, id="claude-haiku-4-5")
        ctx = mw.Context(
            system_prompt="Answer briefly.",
            messages=[mw.UserMessage(content="Which version? Then a joke.")],
            tools=[FIXED_VERSION],
        )
        first = await mw.complete(m, ctx, api_key=KEY, reasoning="low", max_retries=0)
        assert first.stop_reason == "tool_use", first.error
        assert first.content[0] == mw.ThinkingContent(thinking=thinking, signature=signature)
        (call,) = first.tool_calls
        assert (call.name, call.arguments) == ("fixed_version", {})
        ctx2 = ctx.with_messages(
            first, mw.ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content="1.2.3")
        )
        second = await mw.complete(m, ctx2, api_key=KEY, reasoning="low", max_retries=0)
        requests = server.requests
    assert second.stop_reason == "stop" and second.text == "It is 1.2.3."
    assert len(requests) == 2
    replayed = requests[1].json()["messages"]
    assert replayed[0] == {
        "role": "user",
        "content": [{"type": "text", "text": "Which version? Then a joke."}],
    }
    assert replayed[1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": thinking, "signature": signature},
            {"type": "tool_use", "id": call.id, "name": "fixed_version", "input": {}},
        ],
    }
    assert replayed[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": call.id,
             "content": [{"type": "text", "text": "1.2.3"}], "is_error": False,
             "cache_control": {"type": "ephemeral"}},
        ],
    }  # fmt: skip


def test_scripted_mock_reply_round_trips() -> None:
    # The MockServer's Anthropic renderer and this decoder agree on every block kind.
    script = [
        mw.ThinkingContent(thinking="hmm, let me think", signature="SIG"),
        mw.ThinkingContent(thinking="", signature="OPAQUE", redacted=True),
        mw.TextContent(text="Calling the tool — 好的."),
        mw.ToolCall(id="toolu_x", name="read", arguments={"path": "README.md"}),
    ]
    with mw.testing.MockServer([mw.testing.Reply(message=script, piece_chars=3)]) as server:
        m = _loopback_model(server, id="claude-haiku-4-5")
        ctx = mw.Context(messages=[mw.UserMessage(content="go")], tools=[READ])
        msg = mw.complete_sync(m, ctx, api_key=KEY, max_retries=0)
    assert msg.stop_reason == "tool_use", msg.error
    assert msg.content[:3] == tuple(script[:3])
    assert msg.tool_calls[0].arguments == {"path": "README.md"}


def test_http_errors_are_typed_and_redacted() -> None:
    overloaded = mw.testing.Reply(
        status=529,
        content_type="application/json",
        body=json.dumps({"type": "error", "error": {"type": "overloaded_error",
                                                     "message": "Overloaded"}}).encode(),
    )  # fmt: skip
    leaky = mw.testing.error_reply(401, f"invalid x-api-key: {KEY}", type="authentication_error")
    with mw.testing.MockServer([overloaded, leaky]) as server:
        m = _loopback_model(server, id="claude-haiku-4-5")
        ctx = mw.Context(messages=[mw.UserMessage(content="hi")])
        first = mw.complete_sync(m, ctx, api_key=KEY, max_retries=0)
        second = mw.complete_sync(m, ctx, api_key=KEY, max_retries=0)
    assert first.error is not None and first.error.kind == "overloaded"
    assert second.error is not None and second.error.kind == "authentication"
    assert KEY not in second.error.message and "[redacted]" in second.error.message


# --------------------------------------------------------------------------- message_start content

PTC_TOOL = "ptc-message-start-tool-use.sse"
PTC_BLOCKS = "ptc-message-start-then-blocks.sse"


def test_message_start_content_and_stop_reason_belong_to_the_message() -> None:
    # Programmatic tool calling: the client tool call and stop_reason arrive
    # complete in message_start, followed only by message_stop.
    events = _load(PTC_TOOL)
    check_event_stream(events)
    done = events[-1]
    assert done.type == "done" and done.reason == "tool_use", done.message.error
    (call,) = done.message.tool_calls
    expected = sse_payloads((DATA / PTC_TOOL).read_bytes())[0]["message"]["content"][1]
    assert (call.id, call.name, call.arguments) == (
        "toolu_ptc_01",
        "query_db",
        expected["input"],
    )
    assert json.loads(call.raw_arguments or "") == expected["input"]
    # The code execution that made the call is kept, as received, and is no client call.
    server_call = sse_payloads((DATA / PTC_TOOL).read_bytes())[0]["message"]["content"][0]
    (srv,) = done.message.server_tool_calls
    assert done.message.content == (srv, call)
    assert (srv.id, srv.name, srv.input) == (server_call["id"], server_call["name"],
                                             server_call["input"])  # fmt: skip
    assert srv.raw is not None and srv.raw.encode() in (DATA / PTC_TOOL).read_bytes()
    assert done.message.provider_stop_reason == "tool_use"
    assert [e.type for e in events] == [
        "start", "block", "tool_call_start", "tool_call_delta", "tool_call_end", "done",
    ]  # fmt: skip


def test_message_start_blocks_keep_their_order_with_later_blocks() -> None:
    events = _load(PTC_BLOCKS)
    check_event_stream(events)
    msg = events[-1].message
    assert events[-1].type == "done" and msg.stop_reason == "stop"
    # message_delta's stop_reason (end_turn) replaces message_start's (tool_use).
    assert msg.provider_stop_reason == "end_turn"
    result = sse_payloads((DATA / PTC_BLOCKS).read_bytes())[0]["message"]["content"][1]
    assert msg.content == (
        mw.ThinkingContent(thinking="The query ran; summarise.", signature="c2lnLXB0Yw=="),
        mw.ServerToolResult(tool_call_id="srvtoolu_01", provider_type="code_execution_tool_result",
                            result=result["content"], raw=json.dumps(result, separators=(",", ":"))),
        mw.TextContent(text="Sales by region: "),
        mw.TextContent(text="north leads, south follows."),
    )  # fmt: skip
    assert [e.content_index for e in events
            if (e.type.endswith("_start") and e.type != "start") or e.type == "block"] == [
        0, 1, 2, 3,
    ]  # fmt: skip


@pytest.mark.parametrize("name", [PTC_TOOL, PTC_BLOCKS])
def test_message_start_content_at_every_split_point(name: str) -> None:
    raw = (DATA / name).read_bytes()
    whole = run(raw)
    for i in range(1, len(raw)):
        split = run(raw, [raw[:i], raw[i:]])
        assert event_trace(split) == event_trace(whole), i
        assert norm_message(split[-1].message) == norm_message(whole[-1].message), i


def test_a_block_reusing_a_message_start_index_is_malformed() -> None:
    start = {**MSG_START, "message": {**MSG_START["message"],
             "content": [{"type": "text", "text": "already here"}]}}  # fmt: skip
    err = run(sse(start, TEXT_START, HELLO, STOP0, END_TURN, MSG_STOP))[-1]
    assert err.type == "error" and err.message.error.kind == "malformed_chunk"
    assert "index 0, which already started in message_start" in err.message.error.message
    assert err.message.text == "already here"  # content received so far is kept


def test_a_bad_block_in_message_start_names_its_path() -> None:
    start = {**MSG_START, "message": {**MSG_START["message"],
             "content": [{"type": "server_tool_use", "id": 7, "text": 1},
                         {"type": "text", "text": 5}]}}  # fmt: skip
    err = run(sse(start, END_TURN, MSG_STOP))[-1]
    assert err.type == "error" and err.message.error.kind == "malformed_chunk"
    # A provider-run tool call is validated like any block: its id must be a string.
    assert "message.content[0].id must be a string" in err.message.error.message
    start = {**MSG_START, "message": {**MSG_START["message"],
             "content": [{"type": "compaction", "content": None},
                         {"type": "text", "text": 5}]}}  # fmt: skip
    err = run(sse(start, END_TURN, MSG_STOP))[-1]
    assert err.type == "error" and err.message.error.kind == "malformed_chunk"
    assert "message.content[1].text must be a string" in err.message.error.message


@pytest.mark.anyio
async def test_agent_answers_a_call_carried_in_message_start() -> None:
    seen: list[dict[str, Any]] = []

    def query_db(args: dict[str, Any], ctx: Any) -> str:
        seen.append(args)
        return "north 10, south 7"

    tool = mw.Tool(
        name="query_db",
        description="Run SQL",
        parameters={"type": "object", "properties": {"sql": {"type": "string"}}},
        execute=query_db,
    )
    replies = [
        mw.testing.Reply(body=(DATA / PTC_TOOL).read_bytes(), chunk_size=53),
        mw.testing.Reply(body=_answer_stream("North leads.")),
    ]
    with mw.testing.MockServer(replies) as server:
        agent = mw.Agent(_loopback_model(server), tools=[tool], api_key=KEY)
        run_ = await agent.run("Sales by region?")
        requests = server.requests
    assert seen and seen[0]["sql"].startswith("select region")
    assert run_.final.text == "North leads."
    sent = requests[1].json()["messages"]
    # The code execution goes back before the call it made, as received; the agent
    # ran only the client tool.
    assert [b["type"] for b in sent[1]["content"]] == ["server_tool_use", "tool_use"]
    assert (
        sent[1]["content"][0]
        == sse_payloads((DATA / PTC_TOOL).read_bytes())[0]["message"]["content"][0]
    )
    assert len(seen) == 1
    assert sent[1]["content"][1]["id"] == "toolu_ptc_01"
    assert sent[2]["content"][0]["tool_use_id"] == "toolu_ptc_01"
    assert "north 10, south 7" in json.dumps(sent[2]["content"][0])
