"""The ``openai-responses`` wire API: recorded streams, synthetic edge cases, requests.

Expectations are derived from the fixtures themselves, independently of the code
under test: the SSE bodies are split with a few lines of plain Python, payloads
parsed with :mod:`json`, and each output item's final text, arguments and ids
are read from its ``response.output_item.done`` item (the server's final word),
while modelwire builds them from the deltas. The official SDK's Responses stream
accumulator (``openai.lib.streaming.responses.ResponseStreamState``) is a second,
test-only reference.
"""

from __future__ import annotations

import itertools
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import modelwire as mw
from modelwire._apis import get_api
from modelwire._apis.openai_responses import API, ResponsesDecoder, detect_compat
from modelwire._client._options import resolve_options
from modelwire._client._replay import replay
from modelwire._wire.sse import Frame
from modelwire.errors import ConfigurationError, MalformedChunkError, TruncatedStreamError
from modelwire.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)
from recorded import recorded_streams

FIXTURES = recorded_streams("openai-responses")
DATA = Path(__file__).resolve().parent / "data" / "openai-responses"
RECORDED = sorted(p.name for p in FIXTURES.glob("*.sse"))
SYNTHETIC = sorted(p.name for p in DATA.glob("*.sse"))
ALL = [FIXTURES / n for n in RECORDED] + [DATA / n for n in SYNTHETIC]
API_NAME = "openai-responses"
# Provider-run items: a ServerToolCall (the item as received) and, for those that carry a
# result, a ServerToolResult — read here straight from the API reference's field names.
BUILTIN = {"web_search_call": ("web_search", "sources"), "file_search_call": ("file_search", "results"),
           "code_interpreter_call": ("code_interpreter", "outputs"),
           "image_generation_call": ("image_generation", "result"),
           "mcp_call": (None, "output"), "mcp_list_tools": ("mcp_list_tools", "tools")}  # fmt: skip

MODEL = Model(
    id="gpt-5-nano",
    api=API_NAME,
    provider="openai",
    base_url="https://api.openai.com/v1/",
    reasoning=True,
)


def wire_frame(*, event: str = "message", data: str) -> Frame:
    """A frame as the pipeline's framing hands it to a decoder: the payload as bytes."""
    return Frame(event, data.encode())


def test_all_recorded_fixtures_are_present() -> None:
    assert len(RECORDED) == 16
    assert len(SYNTHETIC) >= 8


# --------------------------------------------------------------------------- reference


def payloads(raw: bytes) -> list[str]:
    """The ``data`` of each SSE event, by the simplest reading of the format."""
    text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    out = []
    for block in text.split("\n\n"):
        data = [ln[5:].removeprefix(" ") for ln in block.split("\n") if ln.startswith("data:")]
        if data:
            out.append("\n".join(data))
    return out


def raw_item(payload: str) -> str:
    """The ``item`` object of an ``output_item.done`` payload, as the exact text sent."""
    start = payload.index('"item":') + len('"item":')
    while payload[start] in " \t\n":
        start += 1
    _, end = json.JSONDecoder().raw_decode(payload, start)
    return payload[start:end]


# Items whose block starts when they are added (or their first delta comes); any other
# item is one whole block, placed where it ends.
_STREAMED = frozenset({"message", "reasoning", "function_call"})


def expected(raw: bytes) -> dict[str, Any]:
    """Final content, usage and outcome of a stream, from its items' done events."""
    items: dict[Any, dict[str, Any]] = {}  # insertion order = first appearance
    ids: dict[str, Any] = {}
    response_id = None
    outcome: tuple[str, Any] = ("truncated", None)
    for d in payloads(raw):
        if d == "[DONE]":
            continue
        ev = json.loads(d)
        t = ev["type"]
        if "response" in ev and response_id is None:
            response_id = ev["response"].get("id")
        if t == "error":
            outcome = ("error", ev)
            break
        if t in ("response.completed", "response.incomplete", "response.failed"):
            outcome = (t, ev["response"])
            # The Response object is the whole response: an item whose done event never
            # came (or that was never announced) is there, and ends there.
            for oi, item in enumerate(ev["response"].get("output") or []):
                key = ids.get(item.get("id"), oi)
                it = items.setdefault(key, {"type": item["type"], "streamed": "", "done": None,
                                            "notes": {}})  # fmt: skip
                if it["done"] is None:
                    it["done"], it["raw"] = item, json.dumps(item, separators=(",", ":"),
                                                              ensure_ascii=False)  # fmt: skip
                    if item["type"] not in _STREAMED:
                        items[key] = items.pop(key)
            break
        if t.startswith("response.output_item."):
            item = ev["item"]
            key = ev["output_index"]
            ids[item.get("id")] = key
            it = items.setdefault(
                key, {"type": item["type"], "streamed": "", "done": None, "notes": {}}
            )
            if t.endswith(".done"):
                it["done"] = item
                it["raw"] = raw_item(d)
                if item["type"] not in _STREAMED:
                    items[key] = items.pop(key)  # a whole block: its place is where it ends
        elif t == "response.output_text.annotation.added":
            key = ev.get("output_index", ids.get(ev.get("item_id")))
            items[key]["notes"].setdefault(ev["content_index"], []).append(ev["annotation"])
        elif "delta" in ev and isinstance(ev["delta"], str):
            key = ev.get("output_index", ids.get(ev.get("item_id")))
            if key in items:
                items[key]["streamed"] += ev["delta"]
    content: list[tuple[Any, ...]] = []
    search = None  # the last server tool search's id
    for it in items.values():
        done = it["done"] or {}
        if it["type"] == "message":
            parts = done.get("content", [])
            text = "".join(p.get("text") or p.get("refusal") or "" for p in parts)
            # Annotations streamed first (annotation.added), then any the done item adds.
            notes = []
            for pi, p in enumerate(parts):
                streamed = it["notes"].get(pi, [])
                notes += streamed + (p.get("annotations") or [])[len(streamed) :]
            content.append(
                ("text", text or it["streamed"], done.get("id"), done.get("phase"), notes)
            )
        elif it["type"] == "reasoning":
            parts = [*(done.get("summary") or []), *(done.get("content") or [])]
            thinking = "\n\n".join(p["text"] for p in parts if p.get("text"))
            content.append(("thinking", thinking, it.get("raw")))
        elif it["type"] == "function_call":
            content.append(("call", done["call_id"], done["name"], done["arguments"], done["id"]))
        elif it["type"] in BUILTIN:
            name, field = BUILTIN[it["type"]]
            name = name or done["name"]
            content.append(("server_call", done["id"], name, it["type"], it["raw"]))
            holder = done.get("action") or {} if it["type"] == "web_search_call" else done
            if it["type"] == "image_generation_call" and done.get("result"):
                # The generated image (base64 result; output_format, png by default).
                mime = "image/" + (done.get("output_format") or "png")
                content.append(("image", done["result"], mime, done["id"]))
            else:
                content.append(("server_result", done["id"], name, holder.get(field)))
        elif it["type"] == "tool_search_call" and done.get("execution") == "server":
            search = done["id"]
            content.append(("server_call", search, "tool_search", it["type"], it["raw"]))
        elif it["type"] == "tool_search_output" and done.get("execution") == "server":
            # A null call_id answers the search just before it.
            content.append(("search_result", done.get("call_id") or search, done["tools"],
                            it["raw"]))  # fmt: skip
        else:
            content.append(("item", it["type"], it["raw"]))
    return {"content": content, "outcome": outcome, "response_id": response_id}


def check_message(msg: AssistantMessage, exp: dict[str, Any]) -> None:
    assert len(msg.content) == len(exp["content"])
    for block, want in zip(msg.content, exp["content"], strict=True):
        if want[0] == "text":
            assert isinstance(block, TextContent)
            assert block.text == want[1]
            if want[3] is None:
                assert block.signature == want[2]
            else:
                assert json.loads(block.signature or "") == {"id": want[2], "phase": want[3]}
            assert [json.loads(c.raw or "") for c in block.citations] == want[4]
        elif want[0] == "server_call":
            assert isinstance(block, mw.ServerToolCall)
            assert (block.id, block.name, block.provider_type, block.raw) == want[1:]
        elif want[0] == "server_result":
            assert isinstance(block, mw.ServerToolResult)
            assert (block.tool_call_id, block.name, block.result) == want[1:]
        elif want[0] == "image":
            assert isinstance(block, ImageContent)
            assert (block.data, block.mime_type, block.signature) == want[1:]
        elif want[0] == "search_result":
            assert isinstance(block, mw.ServerToolResult)
            assert (block.tool_call_id, block.result, block.raw) == want[1:]
        elif want[0] == "item":
            assert isinstance(block, mw.ProviderItem)
            assert (block.provider_type, block.data) == want[1:]
        elif want[0] == "thinking":
            assert isinstance(block, ThinkingContent)
            assert block.thinking == want[1]
            assert block.signature == want[2]  # byte for byte
        else:
            assert isinstance(block, ToolCall)
            assert (block.id, block.name, block.raw_arguments) == want[1:4]
            assert block.signature == want[4]
            assert block.arguments == json.loads(want[3])
    assert msg.response_id == exp["response_id"]
    kind, resp = exp["outcome"]
    if kind == "response.completed":
        calls = [c for c in exp["content"] if c[0] == "call"]
        assert msg.stop_reason == ("tool_use" if calls else "stop")
        u = resp["usage"]
        details = u.get("input_tokens_details") or {}
        cached, written = details.get("cached_tokens") or 0, details.get("cache_write_tokens") or 0
        assert msg.usage.input == u["input_tokens"] - cached - written
        assert msg.usage.cache_read == cached
        assert msg.usage.output == u["output_tokens"]  # reasoning included, once
        assert msg.usage.total_tokens == u["input_tokens"] + u["output_tokens"]
    else:
        assert msg.stop_reason == "error"


def norm(events: list[mw.Event]) -> list[dict[str, Any]]:
    out = []
    for e in events:
        d = e.to_dict()
        if "message" in d:
            d["message"]["timestamp"] = 0
        out.append(d)
    return out


def check_events(events: list[mw.Event]) -> None:
    """Event grammar: start first, one terminal last, deltas inside their block."""
    assert events[0].type == "start"
    assert [e.type for e in events].count("done") + [e.type for e in events].count("error") == 1
    assert events[-1].type in ("done", "error")
    msg = events[-1].message
    open_: dict[int, str] = {}
    text: dict[int, str] = {}
    for e in events[1:-1]:
        kind, _, phase = e.type.rpartition("_")
        ci = e.content_index  # type: ignore[union-attr]
        if e.type == "block":
            assert ci not in open_ and ci == len(text)
            text[ci] = ""
            continue
        if e.type == "citation":
            assert open_[ci] == "text"
            continue
        if phase == "start":
            assert ci not in open_ and ci == len(text)
            open_[ci] = kind
            text[ci] = ""
        elif phase == "delta":
            assert open_[ci] == kind
            text[ci] += e.delta  # type: ignore[union-attr]
        else:
            assert open_.pop(ci) == kind
    for ci, block in enumerate(msg.content):
        if isinstance(block, ToolCall):
            assert text[ci] == block.raw_arguments or msg.stop_reason == "error"
        elif isinstance(block, mw.ServerToolCall | mw.ServerToolResult | mw.ProviderItem
                        | ImageContent):  # fmt: skip
            assert text[ci] == ""
        else:
            assert isinstance(block, TextContent | ThinkingContent)
            assert text[ci] == (block.text if isinstance(block, TextContent) else block.thinking)
    if events[-1].type == "done":
        assert not open_


# --------------------------------------------------------------------------- recorded


@pytest.mark.parametrize("name", RECORDED)
def test_recorded_fixture_whole(name: str) -> None:
    raw = (FIXTURES / name).read_bytes()
    events = replay(API_NAME, raw, model=MODEL)
    check_events(events)
    check_message(events[-1].message, expected(raw))  # type: ignore[union-attr]


@pytest.mark.parametrize("name", [n for n in RECORDED if (FIXTURES / n).stat().st_size < 40_000])
def test_recorded_fixture_byte_by_byte(name: str) -> None:
    raw = (FIXTURES / name).read_bytes()
    whole = replay(API_NAME, raw)
    assert norm(replay(API_NAME, [raw[i : i + 1] for i in range(len(raw))])) == norm(whole)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_split_gives_the_same_events(path: Path, data: st.DataObject) -> None:
    raw = path.read_bytes()
    cuts = data.draw(st.lists(st.integers(1, len(raw) - 1), max_size=40, unique=True))
    points = [0, *sorted(cuts), len(raw)]
    chunks = [raw[a:b] for a, b in itertools.pairwise(points)]
    assert norm(replay(API_NAME, chunks)) == norm(replay(API_NAME, raw))


def _sdk_reference(raw: bytes) -> tuple[dict[int, str], dict[int, str], Any]:
    """Text per message (from the SDK's delta snapshots), arguments per call, and
    the completed response, as the official SDK accumulates them."""
    from openai import omit
    from openai._models import construct_type
    from openai.lib.streaming.responses._responses import ResponseStreamState
    from openai.types.responses import ResponseStreamEvent

    state: Any = ResponseStreamState(input_tools=omit, text_format=omit)
    texts: dict[int, dict[int, str]] = {}
    args: dict[int, str] = {}
    final = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pydantic serializer noise on built-in items
        for d in payloads(raw):
            if d == "[DONE]":
                continue
            for e in state.handle_event(
                construct_type(type_=ResponseStreamEvent, value=json.loads(d))
            ):
                if e.type == "response.output_text.delta":
                    texts.setdefault(e.output_index, {})[e.content_index] = e.snapshot
                elif e.type == "response.function_call_arguments.delta":
                    args[e.output_index] = e.snapshot
                elif e.type == "response.completed":
                    final = e.response
    return {k: "".join(v.values()) for k, v in texts.items()}, args, final


# The SDK refuses a stream that does not start with response.created (the resumed
# background stream) and does nothing with error events.
SDK_COMPARABLE = [
    n for n in RECORDED if n not in ("background-resume-starting-after.sse",)
    and not n.startswith("error-")
]  # fmt: skip


@pytest.mark.parametrize("name", SDK_COMPARABLE)
def test_matches_official_sdk_accumulator(name: str) -> None:
    raw = (FIXTURES / name).read_bytes()
    texts, args, final = _sdk_reference(raw)
    msg = replay(API_NAME, raw)[-1].message  # type: ignore[union-attr]
    if texts:  # streamed text, message by message, as the SDK's snapshots have it
        assert [b.text for b in msg.content if isinstance(b, TextContent)] == list(texts.values())
    calls = msg.tool_calls
    sdk_calls = [o for o in final.output if o.type == "function_call"]
    assert [(c.id, c.name, c.raw_arguments) for c in calls] == [
        (o.call_id, o.name, o.arguments) for o in sdk_calls
    ]
    for streamed in args.values():  # what the deltas said is a prefix of the final text
        assert any(c.raw_arguments.startswith(streamed) for c in calls)  # type: ignore[union-attr]
    assert msg.text == final.output_text
    # Reasoning: summaries (OpenAI) or raw reasoning_text parts (OpenRouter, LM
    # Studio, DeepSeek), parts joined with a blank line.
    sdk_reasoning = [
        "\n\n".join(p.text for p in [*o.summary, *(o.content or [])] if p.text)
        for o in final.output
        if o.type == "reasoning"
    ]
    assert [b.thinking for b in msg.content if isinstance(b, ThinkingContent)] == sdk_reasoning
    u = final.usage
    assert msg.usage.cache_read == u.input_tokens_details.cached_tokens
    assert msg.usage.output == u.output_tokens


def test_lmstudio_arguments_only_in_done_are_used() -> None:
    raw = (FIXTURES / "lmstudio-reasoning-text-tool-call.sse").read_bytes()
    assert b"function_call_arguments.delta" not in raw
    events = replay(API_NAME, raw)
    (call,) = events[-1].message.tool_calls  # type: ignore[union-attr]
    assert call.arguments == {"location": "San Francisco"}
    assert [e for e in events if e.type == "tool_call_delta"]  # streamed once, from .done
    assert events[-1].reason == "tool_use"  # type: ignore[union-attr]


def test_arguments_done_event_alone_completes_the_call() -> None:
    # Without the item's done event, only function_call_arguments.done has them.
    raw = (FIXTURES / "lmstudio-reasoning-text-tool-call.sse").read_bytes()
    blocks = raw.split(b"\n\n")
    kept = [b for b in blocks if not (b"output_item.done" in b and b"function_call" in b)]
    assert len(kept) == len(blocks) - 1
    msg = replay(API_NAME, b"\n\n".join(kept))[-1].message  # type: ignore[union-attr]
    (call,) = msg.tool_calls
    assert (call.raw_arguments, call.arguments) == (
        '{"location":"San Francisco"}',
        {"location": "San Francisco"},
    )


def test_event_lines_and_done_marker_are_optional() -> None:
    raw = (FIXTURES / "gpt-5-nano-reasoning-summary-function-call.sse").read_bytes()
    stripped = b"\n".join(ln for ln in raw.split(b"\n") if not ln.startswith(b"event:"))
    with_done = stripped + b"data: [DONE]\n\n"
    want = norm(replay(API_NAME, raw))
    assert norm(replay(API_NAME, stripped)) == want
    assert norm(replay(API_NAME, with_done)) == want


def test_partials_grow_with_the_text() -> None:
    raw = (FIXTURES / "gpt-4o-text.sse").read_bytes()
    so_far = ""
    for e in replay(API_NAME, raw):
        if e.type == "text_delta":
            so_far += e.delta
            block = e.partial.content[e.content_index]
            assert isinstance(block, mw.TextContent)
            assert block.text == so_far
            assert e.partial.stop_reason is None


# --------------------------------------------------------------------------- failures


def _terminal_offset(raw: bytes) -> int:
    for marker in (b"event: response.completed", b'data: {"type":"response.completed"'):
        i = raw.find(marker)
        if i >= 0:
            return i
    raise AssertionError("no response.completed")


@pytest.mark.parametrize("name", [n for n in RECORDED if not n.startswith("error-")])
def test_missing_terminal_event_is_truncated(name: str) -> None:
    raw = (FIXTURES / name).read_bytes()
    cut = raw[: _terminal_offset(raw)]
    events = replay(API_NAME, cut)
    check_events(events)
    last = events[-1]
    assert last.type == "error"
    msg = last.message
    assert msg.error is not None and msg.error.kind == "truncated_stream"
    full = replay(API_NAME, raw)[-1].message  # type: ignore[union-attr]
    # Everything received is kept: same blocks, same text.
    assert [type(b) for b in msg.content] == [type(b) for b in full.content]
    assert msg.text == full.text
    with pytest.raises(TruncatedStreamError):
        msg.raise_for_error()


def test_done_marker_before_terminal_is_truncated() -> None:
    raw = (FIXTURES / "openrouter-gpt-oss-reasoning-text.sse").read_bytes()
    cut = raw[: _terminal_offset(raw)] + b"data: [DONE]\n\n"
    msg = replay(API_NAME, cut)[-1].message  # type: ignore[union-attr]
    assert msg.error is not None and msg.error.kind == "truncated_stream"
    assert "[DONE]" in msg.error.message
    assert msg.text == "4"


def test_error_event_then_failed_is_typed_and_says_why() -> None:
    raw = (FIXTURES / "error-insufficient-quota-response-failed.sse").read_bytes()
    msg = replay(API_NAME, raw)[-1].message  # type: ignore[union-attr]
    err = json.loads(payloads(raw)[2])["error"]
    assert msg.stop_reason == "error" and msg.error is not None
    assert msg.error.kind == "provider_stream"
    assert err["message"] in msg.error.message and "insufficient_quota" in msg.error.message
    assert msg.response_id == json.loads(payloads(raw)[0])["response"]["id"]


@pytest.mark.parametrize(
    ("name", "kind", "text"),
    [
        ("failed-rate-limit.sse", "rate_limit", "Partial answer"),
        ("error-event-server-error.sse", "server", "Working on it"),
        ("incomplete-content-filter.sse", "content_filter", "Here is how to"),
    ],
)
def test_failures_keep_content_and_type_the_error(name: str, kind: str, text: str) -> None:
    events = replay(API_NAME, (DATA / name).read_bytes())
    check_events(events)
    msg = events[-1].message  # type: ignore[union-attr]
    assert msg.stop_reason == "error" and msg.error is not None
    assert msg.error.kind == kind
    assert msg.text == text


def test_incomplete_max_output_tokens_is_length_and_never_trusts_arguments() -> None:
    raw = (DATA / "incomplete-max-output-tokens.sse").read_bytes()
    events = replay(API_NAME, raw)
    check_events(events)
    done = events[-1]
    assert done.type == "done" and done.reason == "length"
    msg = done.message
    assert msg.provider_stop_reason == "max_output_tokens"
    (call,) = msg.tool_calls
    assert (call.raw_arguments, call.arguments) == ('{"city":"Par', {})
    assert (msg.usage.input, msg.usage.cache_read, msg.usage.output) == (20, 100, 32)


# Streams whose items the final message must hold, each as the independent reading
# (``expected``) says: provider-run items, a backfilled listing, a search output without
# a call id, a generated image.
ITEM_STREAMS = ["refusal.sse", "items-whole-in-done.sse", "forward-compat.sse",
                "SYNTHETIC-mcp-list-tools-backfill.sse",
                "SYNTHETIC-tool-search-server-null-call-id.sse",
                "SYNTHETIC-image-generation.sse"]  # fmt: skip


@pytest.mark.parametrize("name", ITEM_STREAMS)
def test_synthetic_streams_match_their_items(name: str) -> None:
    raw = (DATA / name).read_bytes()
    events = replay(API_NAME, raw)
    check_events(events)
    check_message(events[-1].message, expected(raw))  # type: ignore[union-attr]


NEW_ITEM_STREAMS = [n for n in ITEM_STREAMS if n.startswith("SYNTHETIC-")]


@pytest.mark.parametrize("name", [*NEW_ITEM_STREAMS, "SYNTHETIC-shell-call.sse"])
def test_item_streams_whole_byte_by_byte_and_at_every_split(name: str) -> None:
    raw = (DATA / name).read_bytes()
    whole = norm(replay(API_NAME, raw))
    assert norm(replay(API_NAME, [raw[i : i + 1] for i in range(len(raw))])) == whole
    for i in range(1, len(raw)):
        assert norm(replay(API_NAME, [raw[:i], raw[i:]])) == whole, i


def _completed_output(raw: bytes) -> list[dict[str, Any]]:
    (done,) = [json.loads(d) for d in payloads(raw) if '"response.completed"' in d]
    output: list[dict[str, Any]] = done["response"]["output"]
    return output


def test_items_only_in_the_completed_output_are_kept() -> None:
    # Only the second listing got output_item.done; the first was only added and a
    # third never announced: response.output holds all three, and so does the message.
    raw = (DATA / "SYNTHETIC-mcp-list-tools-backfill.sse").read_bytes()
    msg = replay(API_NAME, raw)[-1].message  # type: ignore[union-attr]
    assert msg.stop_reason == "stop", msg.error
    calls = [b for b in msg.content if isinstance(b, mw.ServerToolCall)]
    output = _completed_output(raw)
    # Blocks keep the index they first got; what only the output held follows, in order.
    assert [c.id for c in calls] == ["mcpl_s7b", "mcpl_s7a", "mcpl_s7c"]
    assert {c.id: json.loads(c.raw or "") for c in calls} == {
        o["id"]: o for o in output if o["type"] == "mcp_list_tools"}  # fmt: skip
    results = {b.tool_call_id: b.result for b in msg.content if isinstance(b, mw.ServerToolResult)}
    assert results == {o["id"]: o["tools"] for o in output if o["type"] == "mcp_list_tools"}
    assert msg.text == "Both servers are ready — déjà vu."
    assert [b.type for b in msg.content].count("text") == 1


def test_a_message_only_in_the_completed_output_is_the_answer() -> None:
    # Deltas streamed part of it; no done event: the output item finishes it.
    item = {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": "Hello there", "annotations": []}]}  # fmt: skip
    events = [
        {"type": "response.output_item.added", "output_index": 0,
         "item": {**item, "content": [], "status": "in_progress"}},
        {"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1",
         "content_index": 0, "delta": "Hello"},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
                                                    "output": [item]}},
    ]  # fmt: skip
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()
    msg = replay(API_NAME, body)[-1].message  # type: ignore[union-attr]
    assert msg.content == (TextContent(text="Hello there", signature="msg_1"),)


def test_a_malformed_completed_output_item_names_its_path() -> None:
    data = '{"type":"response.completed","response":{"id":"r","output":[{"id":"x"}]}}'
    events = replay(API_NAME, f"data: {data}\n\n".encode())
    assert events[-1].type == "error"
    assert "response.output[0].type" in events[-1].message.error.message  # type: ignore[union-attr]


def test_a_search_output_without_call_id_answers_the_search_before_it() -> None:
    raw = (DATA / "SYNTHETIC-tool-search-server-null-call-id.sse").read_bytes()
    msg = replay(API_NAME, raw)[-1].message  # type: ignore[union-attr]
    call, result, text = msg.content
    assert isinstance(call, mw.ServerToolCall) and isinstance(result, mw.ServerToolResult)
    assert (call.id, call.name) == ("tsc_s8", "tool_search")
    assert result.tool_call_id == "tsc_s8"  # not its own id, tso_s8
    assert result.result == _completed_output(raw)[1]["tools"]
    assert isinstance(text, TextContent) and text.text == "I found the orders tool."


def test_a_generated_image_is_an_image_block() -> None:
    raw = (DATA / "SYNTHETIC-image-generation.sse").read_bytes()
    msg = replay(API_NAME, raw)[-1].message  # type: ignore[union-attr]
    item = _completed_output(raw)[0]
    call, image, text = msg.content
    assert isinstance(call, mw.ServerToolCall) and json.loads(call.raw or "") == item
    assert call.input == {k: item[k] for k in ("revised_prompt", "size", "quality",
                                                "background", "output_format")}  # fmt: skip
    assert image == ImageContent(data=item["result"], mime_type="image/webp", signature="ig_s9")
    assert isinstance(text, TextContent)
    assert msg.stop_reason == "stop"
    assert mw.from_json(mw.to_json(msg), AssistantMessage) == msg


# Each stream's turn, as the next request carries it back: stream → the user's turn,
# the final message and (for a call) its answer.
_ROUND_TRIPS = [*NEW_ITEM_STREAMS, "SYNTHETIC-shell-call.sse", "apply-patch-call.sse",
                "custom-tool-call.sse"]  # fmt: skip
_ANSWERS = {
    "SYNTHETIC-shell-call.sse": {"type": "shell_call_output", "call_id": "call_sh_s6",
                                 "output": [{"stdout": "ok", "stderr": "",
                                             "outcome": {"type": "exit", "exit_code": 0}}],
                                 "max_output_length": 4096},
    "apply-patch-call.sse": {"type": "apply_patch_call_output", "call_id": "call_apc_s2",
                             "status": "completed", "output": "ok"},
    "custom-tool-call.sse": {"type": "custom_tool_call_output", "call_id": "call_ctc_s3",
                             "output": "ok"},
}  # fmt: skip


def _stream_model(raw: bytes) -> Model:
    """``MODEL`` as the model the stream names (so its items go back to it)."""
    created = json.loads(payloads(raw)[0])["response"]["model"]
    return msgspec.structs.replace(MODEL, id=created)


@pytest.mark.parametrize("name", _ROUND_TRIPS)
def test_decoded_turn_goes_back_as_the_items_it_came_as(name: str) -> None:
    raw = (DATA / name).read_bytes()
    model = _stream_model(raw)
    turn = replay(API_NAME, raw, model=model)[-1].message  # type: ignore[union-attr]
    messages: list[Any] = [UserMessage(content="go"), turn]
    for call in turn.tool_calls:
        messages.append(ToolResultMessage(tool_call_id=call.id, tool_name=call.name,
                                          content="ok"))  # fmt: skip
    items = body_of(model, Context(messages=messages))["input"][1:]
    output = _completed_output(raw) or _items_done(raw)
    sent = {i.get("id"): i for i in items if i.get("id")}
    # Every output item goes back once, each field as it came (a message: its id, text
    # and annotations; every other item exactly as received).
    assert len(sent) == len(output)
    for item in output:
        got = sent[item["id"]]
        if item["type"] == "message":
            part = item["content"][0]
            assert (got["type"], got["role"]) == ("message", "assistant")
            assert got["status"] == "completed"
            assert got["content"] == [{"type": "output_text", "text": part["text"],
                                       "annotations": part["annotations"]}]  # fmt: skip
        else:
            assert got == item
    answers = [i for i in items if "id" not in i]
    assert answers == ([_ANSWERS[name]] if name in _ANSWERS else [])


def _items_done(raw: bytes) -> list[dict[str, Any]]:
    """The items of a stream whose response.completed lists none, from their done events."""
    events = [json.loads(d) for d in payloads(raw)]
    return [e["item"] for e in events if e["type"] == "response.output_item.done"]


def test_a_generated_image_without_its_call_goes_back_by_id() -> None:
    raw = (DATA / "SYNTHETIC-image-generation.sse").read_bytes()
    model = msgspec.structs.replace(MODEL, id="gpt-5.1")
    turn = replay(API_NAME, raw, model=model)[-1].message  # type: ignore[union-attr]
    alone = msgspec.structs.replace(turn, content=turn.content[1:])
    items = body_of(model, Context(messages=[UserMessage(content="go"), alone]))["input"]
    assert items[1] == {"id": "ig_s9", "type": "image_generation_call", "status": "completed",
                        "result": _completed_output(raw)[0]["result"], "output_format": "webp"}  # fmt: skip
    # Another model reads that an image was made (an assistant message has no image).
    other = msgspec.structs.replace(MODEL, id="gpt-4.1")
    items = body_of(other, Context(messages=[UserMessage(content="go"), alone]))["input"]
    assert items[1] == {"type": "message", "role": "assistant",
                        "content": "[an image (image/webp) was generated]"}  # fmt: skip


@pytest.mark.parametrize("name", _ROUND_TRIPS)
def test_the_mock_server_serves_each_turn(name: str) -> None:
    # The Responses renderer sends a client call as the item it came as and an image
    # as its image_generation_call item: read back, the turn is the same.
    raw = (DATA / name).read_bytes()
    turn = replay(API_NAME, raw, model=_stream_model(raw))[-1].message  # type: ignore[union-attr]
    tools = [ToolDefinition(name=c.name, description="", parameters={"type": "object"})
             for c in turn.tool_calls]  # fmt: skip
    ctx = Context(messages=[UserMessage(content="go")], tools=tools)
    with mw.testing.MockServer([turn]) as server:
        got = mw.complete_sync(server.model(API_NAME), ctx)
    assert got.stop_reason == turn.stop_reason, got.error
    assert len(got.content) == len(turn.content)
    for a, b in zip(got.content, turn.content, strict=True):
        assert type(a) is type(b)
        if isinstance(b, ToolCall):
            assert isinstance(a, ToolCall)
            assert (a.id, a.name, a.arguments) == (b.id, b.name, b.arguments)
            assert json.loads(a.signature or "") == json.loads(b.signature or "")
        elif isinstance(b, mw.ServerToolCall | mw.ServerToolResult):
            assert msgspec.structs.replace(a, raw=None) == msgspec.structs.replace(b, raw=None)
        elif isinstance(b, TextContent):
            assert a.text == b.text  # type: ignore[union-attr]
        else:
            assert a == b


def test_the_non_streamed_body_holds_the_items() -> None:
    from modelwire._apis.openai_responses._output_items import message_output

    out = []
    for name in ("SYNTHETIC-shell-call.sse", "SYNTHETIC-image-generation.sse"):
        turn = replay(API_NAME, (DATA / name).read_bytes())[-1].message  # type: ignore[union-attr]
        out += [json.loads(bytes(i)) if isinstance(i, msgspec.Raw) else i
                for i in message_output(turn, "resp_x")]  # fmt: skip
    shell = _completed_output((DATA / "SYNTHETIC-shell-call.sse").read_bytes())[1]
    image = _completed_output((DATA / "SYNTHETIC-image-generation.sse").read_bytes())[0]
    assert [i["type"] for i in out] == ["reasoning", "shell_call", "image_generation_call",
                                        "message"]  # fmt: skip
    assert out[1] == shell and out[2] == image  # the image rides in its call's item
    # An image another API generated: an image_generation_call item holding it.
    gemini = AssistantMessage(content=[ImageContent(data="AAAA", mime_type="image/jpeg")],
                              api="google-generative-ai", provider="google", model="g",
                              stop_reason="stop")  # fmt: skip
    (item,) = message_output(gemini, "resp_x")
    assert item == {"id": "ig_mwgw_x_0", "type": "image_generation_call", "status": "completed",
                    "result": "AAAA", "output_format": "jpeg"}  # fmt: skip


def test_items_whole_in_done_event() -> None:
    msg = replay(API_NAME, (DATA / "items-whole-in-done.sse").read_bytes())[-1].message  # type: ignore[union-attr]
    thinking, text, call = msg.content
    assert thinking.thinking == "**Plan**\n\nLook it up.\n\nThen answer."  # type: ignore[union-attr]
    assert text.text == "Looking it up now."  # type: ignore[union-attr]
    assert call.arguments == {"q": "ünïcödé"}  # type: ignore[union-attr]


def test_interleaved_items_keep_first_appearance_order() -> None:
    raw = (DATA / "interleaved-items.sse").read_bytes()
    events = replay(API_NAME, raw)
    check_events(events)
    msg = events[-1].message  # type: ignore[union-attr]
    assert [(type(b).__name__, getattr(b, "id", None)) for b in msg.content] == [
        ("ToolCall", "call_s8a"), ("TextContent", None), ("ToolCall", "call_s8b"),
    ]  # fmt: skip
    assert msg.text == "Reading files."
    assert [c.arguments for c in msg.tool_calls] == [{"path": "a.txt"}, {"dir": "src"}]


def _decode_all(*payloads_: str) -> list[Any]:
    dec = ResponsesDecoder()
    out: list[Any] = []
    for p in payloads_:
        out.extend(dec.decode(wire_frame(data=p)))
    return out


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        ('{"type":"response.output_text.delta","output_index":0,"delta":5}', "delta must be a string"),
        ('{"type":"response.output_text.delta","output_index":"0","delta":"x"}', "output_index must be an integer"),
        ('{"type":"response.output_text.delta","delta":"x"}', "output_index must be an integer"),
        ('{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","name":7}}', "item.name must be a string"),
        ('{"type":"response.output_item.done","output_index":0,"item":{"type":"message","content":[{"type":"output_text","text":1}]}}', "item.content[0].text must be a string"),
        ('{"type":"response.completed","response":{"usage":{"input_tokens":"9"}}}', "response.usage.input_tokens must be an integer"),
        ('{"type":"response.completed"}', "response"),
        ('{"type": 3}', "type must be a string"),
        ('{"type":"response.output_text.delta", "output_index":0, "delta":"x"', "invalid JSON"),
    ],
)  # fmt: skip
def test_malformed_payloads_name_the_field(payload: str, path: str) -> None:
    with pytest.raises(MalformedChunkError, match=path.replace("[", r"\[").replace("]", r"\]")):
        _decode_all(payload)


def test_malformed_chunk_ends_the_stream_typed() -> None:
    raw = (FIXTURES / "gpt-4o-text.sse").read_bytes()
    bad = raw.replace(b'"delta":"The"', b'"delta":["The"]', 1)
    assert bad != raw
    msg = replay(API_NAME, bad)[-1].message  # type: ignore[union-attr]
    assert msg.error is not None and msg.error.kind == "malformed_chunk"
    assert "delta must be a string" in msg.error.message


def test_delta_after_item_done_is_refused() -> None:
    add = (
        '{"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"m"}}'
    )
    done = (
        '{"type":"response.output_item.done","output_index":0,"item":{"type":"message","id":"m"}}'
    )
    late = '{"type":"response.output_text.delta","output_index":0,"delta":"late"}'
    with pytest.raises(MalformedChunkError, match="already ended"):
        _decode_all(add, done, late)


@pytest.mark.parametrize(
    ("reason", "stop"),
    [("max_output_tokens", "length"), ("max_messages", "length"), (None, "length"),
     ("content_filter", "error")],
)  # fmt: skip
def test_incomplete_reasons(reason: str | None, stop: str) -> None:
    resp = {"id": "r", "incomplete_details": {"reason": reason} if reason else None}
    deltas = _decode_all(json.dumps({"type": "response.incomplete", "response": resp}))
    finish = next(d for d in deltas if type(d).__name__ == "Finish")
    assert finish.stop_reason == stop
    assert type(deltas[-1]).__name__ == "EndOfStream"


def test_deltas_for_provider_run_items_are_ignored_until_the_item_is_done() -> None:
    add = '{"type":"response.output_item.added","output_index":0,"item":{"type":"web_search_call","id":"ws"}}'
    delta = '{"type":"response.output_text.delta","output_index":0,"delta":"x"}'
    args = '{"type":"response.function_call_arguments.done","item_id":"ws","arguments":"{}"}'
    assert _decode_all(add, delta, args) == []
    done = '{"type":"response.output_item.done","output_index":0,"item":{"type":"web_search_call","id":"ws","status":"completed"}}'
    blocks = [d.block for d in _decode_all(add, delta, args, done)]
    assert [(b.type, b.provider_type) for b in blocks] == [
        ("server_tool_call", "web_search_call"),
        ("server_tool_result", "web_search_call"),
    ]


def test_unknown_events_are_ignored_and_end_reports_truncation() -> None:
    assert (
        _decode_all('{"type":"response.brand_new","delta":{"x":1}}', '{"weird":1,"type":"x"}') == []
    )
    with pytest.raises(TruncatedStreamError):
        ResponsesDecoder().end()


# --------------------------------------------------------------------------- requests


def options(**kw: Any) -> Any:
    return resolve_options("openai", api_key=kw.pop("api_key", "sk-test-secret"), **kw)


def body_of(model: Model, ctx: Context, **kw: Any) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(API.build_request(model, ctx, options(**kw)).body)
    return body


TOOLS = [ToolDefinition(name="read", description="Read a file", parameters={"type": "object"})]


def test_get_api_returns_this_module() -> None:
    assert get_api(API_NAME) is API and API.name == API_NAME


def test_request_shape() -> None:
    ctx = Context(
        system_prompt="Be brief.",
        messages=[
            UserMessage(content="hi"),
            UserMessage(content=[TextContent(text="see"), ImageContent(data="QUJD", mime_type="image/png")]),
        ],
        tools=TOOLS,
    )  # fmt: skip
    req = API.build_request(
        MODEL, ctx,
        options(reasoning="high", max_tokens=512, temperature=0.5, tool_choice={"name": "read"},
                parallel_tool_calls=False, session_id="sess-1"),
    )  # fmt: skip
    assert req.url == "https://api.openai.com/v1/responses"
    assert req.headers["Authorization"] == "Bearer sk-test-secret"
    assert req.headers["Accept"] == "text/event-stream"
    assert req.secrets == ("sk-test-secret",)
    assert b"sk-test-secret" not in req.body and "sk-test-secret" not in repr(req)
    assert json.loads(req.body) == {
        "model": "gpt-5-nano",
        "instructions": "Be brief.",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "see"},
                {"type": "input_image", "image_url": "data:image/png;base64,QUJD", "detail": "auto"},
            ]},
        ],
        "stream": True,
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "max_output_tokens": 512,
        "temperature": 0.5,
        "tools": [{"type": "function", "name": "read", "description": "Read a file",
                   "parameters": {"type": "object"}, "strict": False}],
        "tool_choice": {"type": "function", "name": "read"},
        "parallel_tool_calls": False,
        "reasoning": {"effort": "high", "summary": "auto"},
        "prompt_cache_key": "sess-1",
    }  # fmt: skip


def test_request_minimal_without_key_or_reasoning() -> None:
    local = Model(id="m", api=API_NAME, provider="lmstudio", base_url="http://127.0.0.1:1234/v1")
    req = API.build_request(
        local, Context(messages=[UserMessage(content="x")]), resolve_options("lmstudio")
    )
    assert "Authorization" not in req.headers and req.secrets == ()
    body = json.loads(req.body)
    assert set(body) == {"model", "input", "stream", "store"}
    assert req.url == "http://127.0.0.1:1234/v1/responses"


@pytest.mark.parametrize(
    ("choice", "wire"),
    [("auto", "auto"), ("required", "required"), ("none", "none"),
     ({"name": "read"}, {"type": "function", "name": "read"})],
)  # fmt: skip
def test_tool_choice_mapping(choice: Any, wire: Any) -> None:
    ctx = Context(messages=[UserMessage(content="x")], tools=TOOLS)
    assert body_of(MODEL, ctx, tool_choice=choice)["tool_choice"] == wire


def test_impossible_options_raise_before_any_request() -> None:
    no_tools = Context(messages=[UserMessage(content="x")])
    with pytest.raises(ConfigurationError, match="needs tools"):
        body_of(MODEL, no_tools, tool_choice="required")
    assert "tool_choice" not in body_of(MODEL, no_tools, tool_choice="none")
    with pytest.raises(ConfigurationError, match="not among"):
        body_of(MODEL, Context(tools=TOOLS), tool_choice={"name": "write"})
    plain = Model(id="gpt-4o", api=API_NAME, provider="openai", base_url="https://x.test/v1")
    with pytest.raises(ConfigurationError, match="reasoning"):
        body_of(plain, no_tools, reasoning="low")
    assert "include" not in body_of(plain, no_tools)  # encrypted content only when reasoning
    for key in (
        "model",
        "input",
        "stream",
        "max_output_tokens",
        "tools",
        "tool_choice",
        "instructions",
    ):
        with pytest.raises(ConfigurationError, match=key):
            body_of(MODEL, no_tools, extra_body={key: 1})
    assert (
        body_of(MODEL, no_tools, extra_body={"store": True, "service_tier": "flex"})["store"]
        is True
    )


def test_compat_flags() -> None:
    m = Model(id="m", api=API_NAME, provider="openai", base_url="https://x.test/v1", reasoning=True,
              compat={"system_role": "developer", "store": None, "encrypted_reasoning": False,
                      "reasoning_summary": None, "strict_tools": None, "prompt_cache_key": False,
                      "reasoning_effort_map": {"xhigh": "high"}})  # fmt: skip
    body = body_of(m, Context(system_prompt="S", tools=TOOLS), reasoning="xhigh", session_id="s")
    assert body["input"][0] == {"type": "message", "role": "developer", "content": "S"}
    assert "instructions" not in body and "store" not in body and "include" not in body
    assert "prompt_cache_key" not in body and "strict" not in body["tools"][0]
    assert body["reasoning"] == {"effort": "high"}
    assert "prompt_cache_key" not in body_of(MODEL, Context(), session_id="s", cache=False)
    assert body_of(MODEL, Context(), session_id="s")["prompt_cache_key"] == "s"
    bad = Model(id="m", api=API_NAME, provider="x", base_url="https://x.test", compat={"nope": 1})
    with pytest.raises(ConfigurationError, match="nope"):
        detect_compat(bad)


def _turn(name: str, model: Model = MODEL) -> AssistantMessage:
    msg = replay(API_NAME, (FIXTURES / name).read_bytes(), model=model)[-1].message  # type: ignore[union-attr]
    assert msg.stop_reason in ("stop", "tool_use")
    return msg


def _done_items(name: str) -> dict[str, str]:
    """Raw text of each output_item.done item, by item type (last wins)."""
    out = {}
    for d in payloads((FIXTURES / name).read_bytes()):
        if '"response.output_item.done"' in d:
            out[json.loads(d)["item"]["type"]] = raw_item(d)
    return out


def _history(turn: AssistantMessage) -> Context:
    call = turn.tool_calls[0]
    return Context(
        messages=[
            UserMessage(content="What is 12 + 7?"),
            turn,
            ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content="19"),
        ]
    )


def test_reasoning_item_replayed_byte_for_byte_to_the_same_model() -> None:
    name = "gpt-5-nano-reasoning-summary-function-call.sse"
    raw = _done_items(name)
    ctx = _history(_turn(name))
    before = mw.to_json(ctx)
    req = API.build_request(MODEL, ctx, options())
    assert raw["reasoning"].encode() in req.body  # the exact bytes received
    body = json.loads(req.body)
    rs, fc, out = body["input"][1:]
    assert rs == json.loads(raw["reasoning"])
    done_fc = json.loads(raw["function_call"])
    assert fc == {"type": "function_call", "call_id": done_fc["call_id"], "name": done_fc["name"],
                  "arguments": done_fc["arguments"], "id": done_fc["id"]}  # fmt: skip
    assert out == {"type": "function_call_output", "call_id": done_fc["call_id"], "output": "19"}
    # Pure and deterministic: the context is unchanged, the bytes repeat.
    assert mw.to_json(ctx) == before
    assert API.build_request(MODEL, ctx, options()).body == req.body


def test_reasoning_not_replayed_to_another_model() -> None:
    name = "gpt-5-nano-reasoning-summary-function-call.sse"
    turn = _turn(name)
    other = msgspec.structs.replace(MODEL, id="gpt-5")
    req = API.build_request(other, _history(turn), options())
    assert b'"encrypted_content":' not in req.body and b'"rs_' not in req.body
    body = json.loads(req.body)
    thinking = next(b for b in turn.content if isinstance(b, ThinkingContent)).thinking
    assert body["input"][1] == {"type": "message", "role": "assistant",
                                "content": f"<thinking>\n{thinking}\n</thinking>"}  # fmt: skip
    assert "id" not in body["input"][2]  # no fc_ id without its reasoning item
    assert body["input"][2]["call_id"] == turn.tool_calls[0].id


def test_call_item_id_dropped_after_an_unreplayable_reasoning_block() -> None:
    turn = _turn("gpt-5-nano-reasoning-summary-function-call.sse")
    thinking, call = turn.content
    assert isinstance(call, mw.ToolCall)
    stripped = msgspec.structs.replace(
        turn, content=(msgspec.structs.replace(thinking, signature=None), call)
    )
    items = body_of(MODEL, _history(stripped))["input"]
    assert items[1]["role"] == "assistant" and items[1]["content"].startswith("<thinking>")
    assert items[2]["type"] == "function_call" and "id" not in items[2]
    assert body_of(MODEL, _history(turn))["input"][2]["id"] == call.signature


def test_message_id_and_phase_replayed_to_the_same_model_only() -> None:
    name = "gpt-5.5-phase-commentary-function-call.sse"
    turn = _turn(name)
    msg_item = json.loads(_done_items(name)["message"])
    same = body_of(MODEL, _history(turn))["input"]
    assert same[2] == {"type": "message", "role": "assistant", "id": msg_item["id"],
                       "status": "completed", "phase": "commentary",
                       "content": [{"type": "output_text", "text": msg_item["content"][0]["text"],
                                    "annotations": []}]}  # fmt: skip
    other = body_of(msgspec.structs.replace(MODEL, provider="azure"), _history(turn))["input"]
    assert other[1] == {"type": "message", "role": "assistant", "content": turn.text}


def test_failed_turns_are_not_replayed_and_bad_signatures_are_refused() -> None:
    turn = _turn("gpt-4o-text.sse")
    failed = msgspec.structs.replace(turn, stop_reason="error")
    assert body_of(MODEL, Context(messages=[UserMessage(content="q"), failed]))["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]}
    ]
    bad = msgspec.structs.replace(turn, content=(ThinkingContent(thinking="t", signature="{oops"),))
    with pytest.raises(ConfigurationError, match=r"messages\[0\].content\[0\].signature"):
        body_of(MODEL, Context(messages=[bad]))
    not_reasoning = ThinkingContent(thinking="t", signature='{"type":"message"}')
    with pytest.raises(ConfigurationError, match="not a reasoning item"):
        body_of(MODEL, Context(messages=[msgspec.structs.replace(turn, content=(not_reasoning,))]))


def test_tool_result_with_image_is_a_content_list() -> None:
    res = ToolResultMessage(tool_call_id="call_1", tool_name="shot",
                            content=[TextContent(text="ok"), ImageContent(data="AA==", mime_type="image/jpeg")])  # fmt: skip
    (item,) = body_of(MODEL, Context(messages=[res]))["input"]
    assert item == {"type": "function_call_output", "call_id": "call_1", "output": [
        {"type": "input_text", "text": "ok"},
        {"type": "input_image", "image_url": "data:image/jpeg;base64,AA==", "detail": "auto"},
    ]}  # fmt: skip


# --------------------------------------------------------------------------- loopback


def test_two_request_tool_round_trip_over_loopback() -> None:
    first = "gpt-5-nano-reasoning-summary-function-call.sse"
    second = (FIXTURES / "gpt-4o-text.sse").read_bytes()
    raw = _done_items(first)
    replies = [
        mw.testing.Reply(body=(FIXTURES / first).read_bytes(), seed=7),
        mw.testing.Reply(body=second, chunk_size=3),
    ]
    with mw.testing.MockServer(replies) as server:
        model = msgspec.structs.replace(MODEL, base_url=server.base_url)
        ctx = Context(system_prompt="Use the calculator.",
                      messages=[UserMessage(content="What is 12 + 7?")],
                      tools=[ToolDefinition(name="calculator", description="Add",
                                            parameters={"type": "object"})])  # fmt: skip
        turn = mw.complete_sync(model, ctx, api_key="sk-loop", reasoning="low")
        assert turn.stop_reason == "tool_use", turn.error
        call = turn.tool_calls[0]
        ctx = ctx.with_messages(
            turn, ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content="19")
        )
        final = mw.complete_sync(model, ctx, api_key="sk-loop", reasoning="low")
        assert final.stop_reason == "stop" and final.text == "The capital of France is Paris."
        r1, r2 = server.requests
    assert (r1.method, r1.path) == ("POST", "/v1/responses")
    assert r1.headers["authorization"] == "Bearer sk-loop"
    assert r1.json()["stream"] is True and r1.json()["store"] is False
    # The second request carries the encrypted reasoning item byte for byte, the
    # call with its fc_ id, and the output answering its call_id.
    assert raw["reasoning"].encode() in r2.body
    done_fc = json.loads(raw["function_call"])
    items = r2.json()["input"]
    assert items[1] == json.loads(raw["reasoning"])
    assert items[2]["id"] == done_fc["id"] and items[2]["call_id"] == done_fc["call_id"]
    assert items[2]["arguments"] == done_fc["arguments"]
    assert items[3] == {
        "type": "function_call_output",
        "call_id": done_fc["call_id"],
        "output": "19",
    }
    assert b"sk-loop" not in r1.body + r2.body


# --------------------------------------------------------------------------- client-executed items

# Synthetic stream → (item type, ToolCall.name, how the item gives the arguments).
CLIENT_STREAMS: dict[str, tuple[str, str, Callable[[Any], Any]]] = {
    "SYNTHETIC-shell-call.sse": ("shell_call", "shell", lambda it: it["action"]),
    "local-shell-call.sse": ("local_shell_call", "local_shell", lambda it: it["action"]),
    "apply-patch-call.sse": ("apply_patch_call", "apply_patch", lambda it: it["operation"]),
    "custom-tool-call.sse": ("custom_tool_call", "apply_grammar_patch",
                             lambda it: {"input": it["input"]}),
    "mcp-approval-request.sse": ("mcp_approval_request", "mcp_approval_request",
                                 lambda it: {k: it[k] for k in ("server_label", "name", "arguments")}),
    "tool-search-call-client.sse": ("tool_search_call", "tool_search", lambda it: it["arguments"]),
}  # fmt: skip


def _client_item(name: str) -> tuple[dict[str, Any], str]:
    """The client item of a stream (parsed, and its exact text in output_item.done)."""
    kind = CLIENT_STREAMS[name][0]
    for d in payloads((DATA / name).read_bytes()):
        ev = json.loads(d)
        if ev["type"] == "response.output_item.done" and ev["item"]["type"] == kind:
            if ev["item"].get("execution", "client") == "client":
                return ev["item"], raw_item(d)
    raise AssertionError(name)


@pytest.mark.parametrize("name", sorted(CLIENT_STREAMS))
def test_client_executed_item_is_an_answerable_tool_call(name: str) -> None:
    # Before: the response ended "stop" with no call, and the agent stopped silently.
    kind, tool_name, args_of = CLIENT_STREAMS[name]
    item, text = _client_item(name)
    events = replay(API_NAME, (DATA / name).read_bytes(), model=MODEL)
    check_events(events)
    msg = events[-1].message  # type: ignore[union-attr]
    assert events[-1].type == "done" and msg.stop_reason == "tool_use", msg.error
    (call,) = msg.tool_calls
    call_id = item["id"] if kind == "mcp_approval_request" else item["call_id"]
    assert (call.id, call.name, call.arguments) == (call_id, tool_name, args_of(item))
    assert json.loads(call.raw_arguments or "") == call.arguments
    assert call.signature == text  # the item exactly as received


@pytest.mark.parametrize("name", sorted(CLIENT_STREAMS))
def test_client_item_streams_at_every_split_point(name: str) -> None:
    raw = (DATA / name).read_bytes()
    whole = norm(replay(API_NAME, raw))
    for i in range(1, len(raw)):
        assert norm(replay(API_NAME, [raw[:i], raw[i:]])) == whole, i


def test_custom_tool_input_streams_as_the_arguments_object() -> None:
    events = replay(API_NAME, (DATA / "custom-tool-call.sse").read_bytes())
    item, _ = _client_item("custom-tool-call.sse")
    shown = "".join(e.delta for e in events if e.type == "tool_call_delta")
    assert json.loads(shown) == {"input": item["input"]}
    assert len([e for e in events if e.type == "tool_call_delta"]) > 2  # it streamed


def test_server_executed_tool_search_is_not_surfaced() -> None:
    msg = replay(API_NAME, (DATA / "tool-search-call-client.sse").read_bytes())[-1].message  # type: ignore[union-attr]
    assert [c.id for c in msg.tool_calls] == ["call_tsc_s5b"]


_RESULTS = {
    "SYNTHETIC-shell-call.sse": ("total 0\n", False),
    "local-shell-call.sse": ("total 0\n", False),
    "apply-patch-call.sse": ("patch rejected: context mismatch", True),
    "custom-tool-call.sse": ("applied", False),
    "mcp-approval-request.sse": ("approve", False),
    "tool-search-call-client.sse": ('[{"type":"function","name":"get_weather","parameters":{}}]', False),
}  # fmt: skip


def _answered(name: str, model: Model = MODEL) -> tuple[Context, ToolCall]:
    turn = replay(API_NAME, (DATA / name).read_bytes(), model=model)[-1].message  # type: ignore[union-attr]
    (call,) = turn.tool_calls
    text, is_error = _RESULTS[name]
    result = ToolResultMessage(
        tool_call_id=call.id, tool_name=call.name, content=text, is_error=is_error
    )
    return Context(messages=[UserMessage(content="go"), turn, result]), call


@pytest.mark.parametrize("name", sorted(CLIENT_STREAMS))
def test_client_item_replayed_byte_exact_and_answered_by_type(name: str) -> None:
    item, text = _client_item(name)
    ctx, call = _answered(name)
    before = mw.to_json(ctx)
    body = API.build_request(MODEL, ctx, options()).body
    assert text.encode() in body  # the item exactly as received
    items = json.loads(body)["input"]
    assert items[-2] == item
    out = items[-1]
    expected_out = {
        "SYNTHETIC-shell-call.sse": {"type": "shell_call_output", "call_id": call.id,
                                     "output": [{"stdout": "total 0\n", "stderr": "",
                                                 "outcome": {"type": "exit", "exit_code": 0}}],
                                     "max_output_length": 4096},
        "local-shell-call.sse": {"type": "local_shell_call_output", "id": call.id,
                                 "output": "total 0\n"},
        "apply-patch-call.sse": {"type": "apply_patch_call_output", "call_id": call.id,
                                 "status": "failed", "output": "patch rejected: context mismatch"},
        "custom-tool-call.sse": {"type": "custom_tool_call_output", "call_id": call.id,
                                 "output": "applied"},
        "mcp-approval-request.sse": {"type": "mcp_approval_response",
                                     "approval_request_id": "mcpr_s4", "approve": True},
        "tool-search-call-client.sse": {"type": "tool_search_output", "call_id": call.id,
                                        "execution": "client",
                                        "tools": [{"type": "function", "name": "get_weather",
                                                   "parameters": {}}]},
    }[name]  # fmt: skip
    assert out == expected_out
    assert mw.to_json(ctx) == before  # pure
    assert API.build_request(MODEL, ctx, options()).body == body  # deterministic


_CHUNKS = [{"stdout": "a\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}},
           {"stdout": "", "stderr": "", "outcome": {"type": "timeout"}}]  # fmt: skip


@pytest.mark.parametrize(
    ("content", "is_error", "output"),
    [
        ("grep: notes/: No such file", True,
         [{"stdout": "", "stderr": "grep: notes/: No such file",
           "outcome": {"type": "exit", "exit_code": 1}}]),
        (json.dumps(_CHUNKS), False, _CHUNKS),
        (json.dumps({"output": _CHUNKS}), False, _CHUNKS),
        ("[1, 2]", False, [{"stdout": "[1, 2]", "stderr": "",
                            "outcome": {"type": "exit", "exit_code": 0}}]),
    ],
)  # fmt: skip
def test_shell_call_answers(content: str, is_error: bool, output: list[Any]) -> None:
    # shell_call_output carries one {stdout, stderr, outcome} chunk per command and the
    # call's max_output_length (https://platform.openai.com/docs/guides/tools-shell).
    ctx, call = _answered("SYNTHETIC-shell-call.sse")
    result = ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content=content,
                               is_error=is_error)  # fmt: skip
    out = body_of(MODEL, Context(messages=[*ctx.messages[:2], result]))["input"][-1]
    assert out == {"type": "shell_call_output", "call_id": "call_sh_s6", "output": output,
                   "max_output_length": 4096}  # fmt: skip


def test_a_hosted_shell_call_is_not_the_clients_to_run() -> None:
    item = {"type": "shell_call", "id": "sh_1", "call_id": "call_sh", "status": "completed",
            "action": {"commands": ["ls"]}, "environment": {"type": "container_reference",
                                                             "container_id": "cntr_1"}}  # fmt: skip
    events = [
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}},
    ]
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()
    msg = replay(API_NAME, body)[-1].message  # type: ignore[union-attr]
    assert (msg.stop_reason, msg.tool_calls) == ("stop", ())
    assert [b.type for b in msg.content] == ["provider_item"]


def test_client_item_to_another_model_is_a_plain_function_call() -> None:
    ctx, call = _answered("local-shell-call.sse")
    other = msgspec.structs.replace(MODEL, id="gpt-5")
    items = body_of(other, ctx)["input"]
    assert items[-2] == {"type": "function_call", "call_id": call.id, "name": "local_shell",
                         "arguments": call.raw_arguments}  # fmt: skip
    assert items[-1] == {"type": "function_call_output", "call_id": call.id, "output": "total 0\n"}


@pytest.mark.parametrize(
    ("content", "is_error", "approve", "reason"),
    [
        ("approve", False, True, None),
        ("DENY", False, False, None),
        ("true", False, True, None),
        ('{"approve": false, "reason": "not this repo"}', False, False, "not this repo"),
        ("tool refused by policy", True, False, "tool refused by policy"),
    ],
)
def test_mcp_approval_answers(
    content: str, is_error: bool, approve: bool, reason: str | None
) -> None:
    ctx, call = _answered("mcp-approval-request.sse")
    result = ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content=content,
                               is_error=is_error)  # fmt: skip
    ctx = Context(messages=[*ctx.messages[:2], result])
    out = body_of(MODEL, ctx)["input"][-1]
    want: dict[str, Any] = {"type": "mcp_approval_response", "approval_request_id": "mcpr_s4",
                            "approve": approve}  # fmt: skip
    if reason:
        want["reason"] = reason
    assert out == want


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [
        (
            "mcp-approval-request.sse",
            "maybe later",
            r"messages\[2\] answers an mcp_approval_request",
        ),
        (
            "tool-search-call-client.sse",
            "no tools",
            r"messages\[2\] answers a client tool_search_call",
        ),
    ],
)
def test_unusable_answers_to_client_items_raise_before_any_request(
    name: str, content: str, match: str
) -> None:
    ctx, call = _answered(name)
    result = ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content=content)
    with pytest.raises(ConfigurationError, match=match):
        body_of(MODEL, Context(messages=[*ctx.messages[:2], result]))


@pytest.mark.parametrize(
    ("item", "path"),
    [
        (
            '{"type":"local_shell_call","id":"l","call_id":"c","action":[1]}',
            "item.action must be an object",
        ),
        (
            '{"type":"mcp_approval_request","id":"m","name":"n","arguments":{}}',
            "item.arguments must be a string",
        ),
        (
            '{"type":"custom_tool_call","id":"x","call_id":"c","name":"n","input":5}',
            "item.input must be a string",
        ),
    ],
)
def test_malformed_client_items_name_the_field(item: str, path: str) -> None:
    data = f'{{"type":"response.output_item.done","output_index":0,"item":{item}}}'
    events = replay(API_NAME, f"data: {data}\n\n".encode())
    assert events[-1].type == "error"
    assert path in events[-1].message.error.message  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_agent_answers_client_items_over_loopback() -> None:
    # Two requests: the apply_patch call, then the answer; the second request
    # replays the reasoning and apply_patch items byte for byte with the result.
    seen: list[dict[str, Any]] = []

    def apply_patch(args: dict[str, Any], ctx: Any) -> str:
        seen.append(args)
        return "patched src/app.py"

    tool = mw.Tool(name="apply_patch", description="Apply a patch", execute=apply_patch,
                   parameters={"type": "object", "properties": {"path": {"type": "string"}}})  # fmt: skip
    first = (DATA / "apply-patch-call.sse").read_bytes()
    item, text = _client_item("apply-patch-call.sse")
    reasoning = next(raw_item(d) for d in payloads(first)
                     if "output_item.done" in d and '"type":"reasoning"' in d)  # fmt: skip
    replies = [
        mw.testing.Reply(body=first, seed=3),
        mw.testing.Reply(body=(FIXTURES / "gpt-4o-text.sse").read_bytes(), chunk_size=5),
    ]
    with mw.testing.MockServer(replies) as server:
        model = server.model(API_NAME, id="gpt-5.1-codex", reasoning=True)
        agent = mw.Agent(model, tools=[tool])
        run = await agent.run("fix the typo")
        r1, r2 = server.requests
    assert [t["name"] for t in r1.json()["tools"]] == ["apply_patch"]
    assert seen == [item["operation"]]
    assert run.final.text == "The capital of France is Paris."
    assert text.encode() in r2.body and reasoning.encode() in r2.body
    items = r2.json()["input"]
    assert items[-3:] == [
        json.loads(reasoning),
        item,
        {"type": "apply_patch_call_output", "call_id": "call_apc_s2", "status": "completed",
         "output": "patched src/app.py"},
    ]  # fmt: skip


def test_custom_tool_input_streamed_but_left_out_of_the_done_item() -> None:
    added = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1", "name": "grep"}
    events = [
        {"type": "response.output_item.added", "output_index": 0, "item": added},
        {"type": "response.custom_tool_call_input.delta", "output_index": 0, "delta": "TODO "},
        {"type": "response.custom_tool_call_input.delta", "output_index": 0, "delta": "src/"},
        {"type": "response.output_item.done", "output_index": 0, "item": added},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}},
    ]
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()
    msg = replay(API_NAME, body)[-1].message  # type: ignore[union-attr]
    assert msg.stop_reason == "tool_use", msg.error
    (call,) = msg.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_1", "grep", {"input": "TODO src/"})


def test_null_arguments_of_a_client_tool_search_call() -> None:
    item = {"type": "tool_search_call", "id": "ts_1", "call_id": "call_ts", "execution": "client",
            "arguments": None, "status": "completed"}  # fmt: skip
    events = [
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}},
    ]
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()
    (call,) = replay(API_NAME, body)[-1].message.tool_calls  # type: ignore[union-attr]
    assert (call.name, call.arguments, call.raw_arguments) == ("tool_search", {}, "{}")
