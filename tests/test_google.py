"""Google Gemini wire API: recorded and synthetic streams, request shape, schema
reduction, signature replay.

Expectations for the recorded fixtures are derived here from the fixture's own
JSON payloads (parsed with ``json``), never from modelwire's output.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import modelwire as mw
from eventlist import final as last_message
from modelwire._apis import get_api
from modelwire._apis.google_generative_ai import (
    SKIP_SIGNATURE,
    SYNTHETIC_ID_PREFIX,
    GoogleDecoder,
    detect_compat,
    gemini_schema,
)
from modelwire._client._options import resolve_options
from modelwire._client._replay import replay
from modelwire._wire.sse import Frame
from modelwire.errors import ConfigurationError, MalformedChunkError
from recorded import recorded_streams

API_NAME = "google-generative-ai"
FIXTURES = recorded_streams("google")
DATA = Path(__file__).resolve().parent / "data" / "google"
RECORDED = sorted(FIXTURES.glob("*.sse"))
SYNTHETIC = sorted(DATA.glob("*.sse"))
BASE = "https://generativelanguage.googleapis.com/v1beta"


def wire_frame(*, event: str = "message", data: str) -> Frame:
    """A frame as the pipeline's framing hands it to a decoder: the payload as bytes."""
    return Frame(event, data.encode())


def model(mid: str = "gemini-2.5-flash", **kw: Any) -> mw.Model:
    return mw.Model(id=mid, api=API_NAME, provider="google", base_url=BASE, **kw)


def opts(**kw: Any) -> Any:
    return resolve_options("google", api_key=kw.pop("api_key", "AIza-test-secret"), **kw)


def body_of(m: mw.Model, ctx: mw.Context, **kw: Any) -> dict[str, Any]:
    req = get_api(API_NAME).build_request(m, ctx, opts(**kw))
    out: dict[str, Any] = json.loads(req.body)
    return out


# --------------------------------------------------------------------------- helpers


def payloads(body: bytes) -> list[dict[str, Any]]:
    """The JSON of every ``data:`` line, parsed independently of modelwire."""
    out = []
    for block in body.decode("utf-8").replace("\r\n", "\n").split("\n\n"):
        lines = [ln[6:] if ln.startswith("data: ") else ln[5:] for ln in block.split("\n")
                 if ln.startswith("data:")]  # fmt: skip
        if lines:
            out.append(json.loads("\n".join(lines)))
    return out


def _set_path(root: dict[str, Any], path: str, value: Any, append: bool) -> None:
    segs: list[Any] = [int(i) if i else k for k, i in re.findall(r"\.(\w+)|\[(\d+)\]", path)]
    node: Any = root
    for seg, nxt in itertools.pairwise(segs):
        if isinstance(node, list):
            while len(node) <= seg:
                node.append(None)
            node[seg] = node[seg] if node[seg] is not None else ([] if isinstance(nxt, int) else {})
        else:
            node.setdefault(seg, [] if isinstance(nxt, int) else {})
        node = node[seg]
    last = segs[-1]
    if isinstance(node, list):
        while len(node) <= last:
            node.append(None)
    node[last] = node[last] + value if append else value


def derive(body: bytes) -> dict[str, Any]:
    """What the stream says, by a plain reading of the Gemini response format."""
    exp: dict[str, Any] = {"text": "", "thinking": "", "text_sigs": set(), "calls": [],
                           "kinds": [], "finish": None, "usage": None, "response_id": None,
                           "total": None, "searches": []}  # fmt: skip
    streamed: dict[str, Any] | None = None
    open_path: str | None = None
    for chunk in payloads(body):
        exp["response_id"] = exp["response_id"] or chunk.get("responseId")
        for cand in chunk.get("candidates", []):
            for part in cand.get("content", {}).get("parts", []):
                sig = part.get("thoughtSignature")
                if "functionCall" in part:
                    fc = part["functionCall"]
                    if "name" in fc:
                        call = {"name": fc["name"], "args": fc.get("args", {}), "sig": sig}
                        exp["calls"].append(call)
                        exp["kinds"].append("tool_call")
                        streamed = call if fc.get("willContinue") else None
                    elif streamed is not None:
                        for pa in fc.get("partialArgs", []):
                            value = next(pa[k] for k in ("stringValue", "numberValue",
                                         "boolValue", "nullValue") if k in pa)  # fmt: skip
                            if k_null := "nullValue" in pa and "stringValue" not in pa:
                                value = None
                            _set_path(streamed["args"], pa["jsonPath"], value,
                                      append=open_path == pa["jsonPath"] and not k_null)  # fmt: skip
                            open_path = pa["jsonPath"] if pa.get("willContinue") else None
                        if sig:
                            streamed["sig"] = sig
                elif "text" in part:
                    kind = "thinking" if part.get("thought") else "text"
                    exp[kind] += part["text"]
                    if sig:
                        exp["text_sigs"].add(sig)
                    if (part["text"] or sig) and (not exp["kinds"] or exp["kinds"][-1] != kind):
                        exp["kinds"].append(kind)
                elif "executableCode" in part:
                    exp["kinds"].append("server_tool_call")  # code Gemini ran
                elif "codeExecutionResult" in part:
                    exp["kinds"].append("server_tool_result")
                else:
                    exp["kinds"].append("other")
            queries = cand.get("groundingMetadata", {}).get("webSearchQueries")
            if queries and queries not in exp["searches"]:
                exp["searches"].append(queries)
                exp["kinds"].append("server_tool_call")  # the search Gemini ran
            exp["finish"] = cand.get("finishReason", exp["finish"])
        u = chunk.get("usageMetadata", {})
        if "promptTokenCount" in u or "candidatesTokenCount" in u:
            cached = u.get("cachedContentTokenCount", 0)
            exp["usage"] = (
                u.get("promptTokenCount", 0) + u.get("toolUsePromptTokenCount", 0) - cached,
                u.get("candidatesTokenCount", 0) + u.get("thoughtsTokenCount", 0),
                cached,
            )
            exp["total"] = u.get("totalTokenCount")
    exp["kinds"] = [k for k in exp["kinds"] if k != "other"]
    return exp


def summary(events: list[Any]) -> list[Any]:
    """Events as plain data (terminal message without its timestamp)."""
    out: list[Any] = []
    for e in events:
        item = e.to_dict()
        if "message" in item:
            item["message"].pop("timestamp")
        out.append(item)
    return out


def check_event_invariants(events: list[Any], *, exact_args: bool = True) -> None:
    assert events[0].type == "start"
    assert events[-1].type in ("done", "error")
    assert sum(e.type in ("done", "error") for e in events) == 1
    final = events[-1].message
    streamed: dict[int, str] = {}
    ended: set[int] = set()
    for e in events[1:-1]:
        if e.type.endswith("_delta"):
            streamed[e.content_index] = streamed.get(e.content_index, "") + e.delta
            assert e.content_index not in ended
        if e.type.endswith("_end"):
            ended.add(e.content_index)
            block = e.content if hasattr(e, "content") else e.tool_call
            assert final.content[e.content_index] == block
    for ci, block in enumerate(final.content):
        text = getattr(block, "text", None) or getattr(block, "thinking", None)
        if block.type == "tool_call":
            text = block.raw_arguments
            if not exact_args:
                continue  # ToolCallArguments replaced what was shown while streaming
        assert streamed.get(ci, "") == (text or "")


# --------------------------------------------------------------------------- fixtures


def test_all_ten_recorded_fixtures_are_present() -> None:
    assert len(RECORDED) == 10


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_recorded_fixture_whole(path: Path) -> None:
    body = path.read_bytes()
    exp = derive(body)
    events = replay(API_NAME, body)
    check_event_invariants(events)
    msg = last_message(events)
    assert events[-1].type == "done", msg.error
    assert [b.type for b in msg.content] == exp["kinds"]
    assert "".join(b.text for b in msg.content if b.type == "text") == exp["text"]
    assert "".join(b.thinking for b in msg.content if b.type == "thinking") == exp["thinking"]
    block_sigs = {
        b.signature
        for b in msg.content
        if isinstance(b, mw.TextContent | mw.ThinkingContent) and b.signature
    }
    assert block_sigs == exp["text_sigs"]
    calls = msg.tool_calls
    assert [(c.name, c.arguments, c.signature) for c in calls] == [
        (c["name"], c["args"], c["sig"]) for c in exp["calls"]
    ]
    for c in calls:
        assert json.loads(c.raw_arguments or "") == c.arguments
        assert c.id.startswith(SYNTHETIC_ID_PREFIX)  # no recording carries an id
    assert len({c.id for c in calls}) == len(calls)
    assert exp["finish"] == "STOP" == msg.provider_stop_reason
    assert msg.stop_reason == ("tool_use" if exp["calls"] else "stop")
    u = msg.usage
    assert (u.input, u.output, u.cache_read) == exp["usage"]
    assert u.total_tokens == exp["total"]  # tool-use prompt tokens counted as input
    assert msg.response_id == exp["response_id"]


@pytest.mark.parametrize("path", RECORDED + SYNTHETIC, ids=lambda p: p.stem)
def test_byte_by_byte_equals_whole(path: Path) -> None:
    body = path.read_bytes()
    whole = summary(replay(API_NAME, body))
    assert summary(replay(API_NAME, [body[i : i + 1] for i in range(len(body))])) == whole


@pytest.mark.parametrize("path", RECORDED + SYNTHETIC, ids=lambda p: p.stem)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_random_splits_equal_whole(path: Path, data: st.DataObject) -> None:
    body = path.read_bytes()
    cuts = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=12)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert summary(replay(API_NAME, chunks)) == summary(replay(API_NAME, body))


def test_partial_snapshots_follow_the_stream() -> None:
    body = (FIXTURES / "gemini-2.5-pro-thought-summaries.sse").read_bytes()
    seen = ""
    for e in replay(API_NAME, body):
        if e.type == "text_delta":
            seen += e.delta
            block = e.partial.content[e.content_index]
            assert isinstance(block, mw.TextContent)
            assert block.text == seen
            assert e.partial.stop_reason is None


def test_streamed_function_call_arguments_vertex_fixture() -> None:
    events = replay(
        API_NAME, (FIXTURES / "vertex-gemini-3.1-pro-streamed-function-call-args.sse").read_bytes()
    )
    deltas: dict[int, list[str]] = {}
    for e in events:
        if e.type == "tool_call_delta":
            deltas.setdefault(e.content_index, []).append(e.delta)
    # The JSON text grows while the call streams; the string closes, then the object.
    assert deltas[0] == ['{"location":"Boston', '"', "}"]
    msg = last_message(events)
    assert [c.arguments for c in msg.tool_calls] == [
        {"location": "Boston"},
        {"location": "San Francisco"},
    ]
    assert msg.tool_calls[0].signature is not None and msg.tool_calls[1].signature is None


# --------------------------------------------------------------------------- synthetic streams


def final(name: str) -> mw.AssistantMessage:
    events = replay(API_NAME, (DATA / name).read_bytes())
    check_event_invariants(events)
    return events.message


def test_max_tokens_is_length() -> None:
    m = final("SYNTHETIC-max-tokens.sse")
    assert (m.stop_reason, m.provider_stop_reason, m.text) == (
        "length",
        "MAX_TOKENS",
        "Once upon a time",
    )


@pytest.mark.parametrize(
    ("name", "kind", "raw", "text"),
    [
        ("SYNTHETIC-finish-safety.sse", "content_filter", "SAFETY", "Here is how to"),
        ("SYNTHETIC-prompt-blocked.sse", "content_filter", "PROHIBITED_CONTENT", ""),
        (
            "SYNTHETIC-malformed-function-call.sse",
            "provider_stream",
            "MALFORMED_FUNCTION_CALL",
            "Let me check.",
        ),
    ],
)
def test_error_finishes_keep_content_and_raw_reason(
    name: str, kind: str, raw: str, text: str
) -> None:
    m = final(name)
    assert m.stop_reason == "error" and m.error is not None
    assert (m.error.kind, m.provider_stop_reason, m.text) == (kind, raw, text)
    assert m.usage.input > 0  # usage that came with the finish is kept
    with pytest.raises(mw.errors.StreamError) as info:
        m.raise_for_error()
    assert info.value.kind == kind


def test_finish_message_is_in_the_error_text() -> None:
    m = final("SYNTHETIC-malformed-function-call.sse")
    assert m.error is not None and "print(default_api.lookup(q=))" in m.error.message


def test_in_band_error_mid_stream() -> None:
    m = final("SYNTHETIC-error-overloaded.sse")
    assert m.error is not None
    assert (m.error.kind, m.error.status, m.text) == ("overloaded", 503, "Partial answer")


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (
            {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"},
            "rate_limit",
        ),
        (
            {
                "code": 400,
                "message": "Request contains an invalid argument.",
                "status": "INVALID_ARGUMENT",
            },
            "invalid_request",
        ),
        (
            {
                "code": 400,
                "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
                "status": "INVALID_ARGUMENT",
            },
            "context_overflow",
        ),
        (
            {"code": 500, "message": "An internal error has occurred.", "status": "INTERNAL"},
            "server",
        ),
        ({"code": 403, "message": "denied", "status": "PERMISSION_DENIED"}, "permission"),
        ({"message": "no code given", "status": "UNAVAILABLE"}, "overloaded"),
        ({"message": "something odd"}, "provider_stream"),
    ],
)
def test_in_band_error_kinds(error: dict[str, Any], kind: str) -> None:
    body = f"data: {json.dumps({'error': error})}\r\n\r\n".encode()
    m = replay(API_NAME, body).message
    assert m.error is not None and m.error.kind == kind
    assert error["message"] in m.error.message


def test_no_finish_reason_is_truncated() -> None:
    m = final("SYNTHETIC-no-finish-reason.sse")
    assert m.error is not None and m.error.kind == "truncated_stream"
    assert m.text == "Never finished"


def test_decoder_end_contract() -> None:
    dec = GoogleDecoder()
    with pytest.raises(mw.errors.TruncatedStreamError):
        dec.end()
    dec.decode(
        wire_frame(
            data='{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"STOP"}]}'
        )
    )
    assert [type(d).__name__ for d in dec.end()] == ["EndOfStream"]


def test_parallel_calls_provider_ids_and_order() -> None:
    m = final("SYNTHETIC-parallel-calls-provider-ids.sse")
    assert [b.type for b in m.content] == ["thinking", "tool_call", "text", "tool_call"]
    a, b = m.tool_calls
    assert (a.id, a.name, a.arguments, a.signature) == (
        "fc-a1",
        "get_weather",
        {"city": "Paris", "unit": "c"},
        "c2lnLWZpcnN0",
    )
    assert (b.id, b.signature) == ("fc-b2", None)
    assert a.raw_arguments == '{"city": "Paris", "unit": "c"}'  # the provider's own text
    assert m.stop_reason == "tool_use"
    assert (m.usage.input, m.usage.cache_read, m.usage.output, m.usage.total_tokens) == (
        8,
        32,
        18,
        58,
    )


def test_signatures_stay_on_their_blocks() -> None:
    m = final("SYNTHETIC-thought-text-signatures.sse")
    got = [
        (
            b.type,
            getattr(b, "text", None) or getattr(b, "thinking", None),
            getattr(b, "signature", None),
        )
        for b in m.content
    ]
    assert got == [
        ("thinking", "Think A. Think B.", "c2lnLXRoaW5r"),
        # the empty part's signature joins the text before it; a second
        # signature starts a new block so neither is lost
        ("text", "Answer one.", "c2lnLXRleHQtMQ=="),
        ("text", " Answer two.", "c2lnLXRleHQtMg=="),
        # the code Gemini ran and its result are blocks of their own, between the texts
        ("server_tool_call", None, None),
        ("server_tool_result", None, None),
        ("text", "Result: 1", None),
    ]
    code, result = m.content[3:5]
    assert isinstance(code, mw.ServerToolCall) and isinstance(result, mw.ServerToolResult)
    assert code.input == {"language": "PYTHON", "code": "print(1)"}
    assert (result.tool_call_id, result.result) == (
        code.id,
        {"outcome": "OUTCOME_OK", "output": "1\n"},
    )
    assert m.usage.total_tokens == 29


def test_nested_streamed_arguments() -> None:
    m = final("SYNTHETIC-streamed-args-nested.sse")
    (call,) = m.tool_calls
    assert call.arguments == {
        "recipe": {"name": 'Lasagna "classic"',
                   "ingredients": [{"item": "pasta", "grams": 250}, {"item": "ragù", "grams": 300.5}]},
        "vegetarian": False,
        "notes": None,
    }  # fmt: skip
    assert json.loads(call.raw_arguments or "") == call.arguments
    assert call.signature == "c2lnLXJlY2lwZQ=="
    events = replay(API_NAME, (DATA / "SYNTHETIC-streamed-args-nested.sse").read_bytes())
    # one display delta per fragment: a growing string, then each new value
    assert [e.delta for e in events if e.type == "tool_call_delta"] == [
        '{"recipe":{"name":"Lasa',
        'gna \\"classic\\""',
        ',"ingredients":[{"item":"pasta","grams":250',
        '},{"item":"ragù","grams":300.5',
        '}]},"vegetarian":false,"notes":null',
        "}",
    ]
    assert m.stop_reason == "tool_use" and m.text == "Saved."


WILL_CONTINUE = "SYNTHETIC-streamed-args-will-continue.sse"


def test_will_continue_only_parts_keep_the_streamed_call_open() -> None:
    # Vertex streamed function-call arguments: parts carrying only
    # ``{"functionCall": {"willContinue": true}}`` sit between argument fragments
    # (also inside a string still growing); they neither close nor restart the call.
    m = final(WILL_CONTINUE)
    assert m.stop_reason == "tool_use", m.error
    plan, weather = m.tool_calls
    assert (plan.name, weather.name) == ("planTrip", "checkWeather")
    assert plan.arguments == {
        "trip": {"title": 'Tour de France ☀️ "été"',
                 "stops": [{"city": "Paris", "nights": 2, "tags": ["museums", "cafés"]},
                           {"city": "Lyon", "nights": 1.5, "tags": ["food"]}]},
        "budget": 1200,
        "flexible": True,
        "notes": None,
    }  # fmt: skip
    assert weather.arguments == {"cities": ["Paris", "Lyon"]}
    assert plan.signature == "c2lnLXRyaXA=" and weather.signature is None
    assert [b.type for b in m.content] == ["tool_call", "tool_call", "text"]
    assert m.text == "Planning."


def test_will_continue_stream_at_every_split_point() -> None:
    body = (DATA / WILL_CONTINUE).read_bytes()
    whole = summary(replay(API_NAME, body))
    assert whole[-1]["type"] == "done"
    for i in range(1, len(body)):
        assert summary(replay(API_NAME, [body[:i], body[i:]])) == whole, i


def test_will_continue_only_part_before_any_call_is_still_an_error() -> None:
    # Nothing to continue: the part is not a call, and no fragment may follow it.
    body = (
        f"data: {_chunk([{'functionCall': {'willContinue': True}}])}\n\n"
        f"data: {_chunk([{'functionCall': {'partialArgs': [], 'willContinue': True}}])}\n\n"
    )
    events = replay(API_NAME, body.encode())
    assert events[-1].type == "error"
    error = last_message(events).error
    assert error is not None and "parts[0].functionCall.partialArgs" in error.message
    assert events[-1].message.tool_calls == ()


def _streamed(*fragments: list[dict[str, Any]], exact_args: bool = False) -> list[Any]:
    body = f"data: {_chunk([{'functionCall': {'name': 'f', 'willContinue': True}}])}\n\n"
    for args in fragments:
        fc = {"partialArgs": args, "willContinue": True}
        body += f"data: {_chunk([{'functionCall': fc}])}\n\n"
    body += f"data: {_chunk([{'functionCall': {}}], finishReason='STOP')}\n\n"
    events = replay(API_NAME, body.encode())
    check_event_invariants(events, exact_args=exact_args)
    return events


@pytest.mark.parametrize(
    ("fragments", "expected"),
    [
        # an earlier key rewritten: the shown text cannot grow into the new one
        (
            [
                [{"jsonPath": "$.a", "stringValue": "x"}],
                [{"jsonPath": "$.b", "stringValue": "y", "willContinue": True}],
                [{"jsonPath": "$.a", "stringValue": "z"}],
                [{"jsonPath": "$.c", "numberValue": 1}],
            ],
            {"a": "z", "b": "y", "c": 1},
        ),
        # a string growing before another key (not at the end of the text)
        (
            [
                [{"jsonPath": "$.a", "numberValue": 1}, {"jsonPath": "$.b", "numberValue": 2}],
                [{"jsonPath": "$.a", "stringValue": "he", "willContinue": True}],
                [{"jsonPath": "$.a", "stringValue": "llo", "willContinue": True}],
                [{"jsonPath": "$.a", "stringValue": "!"}],
            ],
            {"a": "hello!", "b": 2},
        ),
    ],
)
def test_streamed_arguments_rewritten_out_of_order(
    fragments: list[list[dict[str, Any]]], expected: dict[str, Any]
) -> None:
    events = _streamed(*fragments)
    (call,) = events[-1].message.tool_calls
    assert call.arguments == expected
    assert json.loads(call.raw_arguments or "") == expected


def test_streamed_arguments_cut_by_max_tokens_are_not_trusted() -> None:
    m = final("SYNTHETIC-streamed-args-max-tokens.sse")
    (call,) = m.tool_calls
    assert m.stop_reason == "length"
    assert call.arguments == {}
    assert call.raw_arguments == '{"path":"notes.txt","content":"first line\\nsecond li'


def _chunk(parts: Sequence[Mapping[str, Any]], **extra: Any) -> str:
    return json.dumps({"candidates": [{"content": {"parts": parts}, **extra}]})


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        (
            '{"candidates": [{"content": {"parts": [{"text": 5}]}}]}',
            "candidates[0].content.parts[0].text",
        ),
        (
            '{"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": [1]}}]}}]}',
            "parts[0].functionCall.args",
        ),
        (
            '{"candidates": [{"content": {"parts": [{"functionCall": {"args": {"a": 1}}}]}}]}',
            "parts[0].functionCall.name",
        ),
        (
            '{"candidates": [{"content": {"parts": [{"functionCall": {"partialArgs": [{"jsonPath": "$.a", "stringValue": "x"}]}}]}}]}',
            "parts[0].functionCall.partialArgs",
        ),
        ('{"candidates": [{"content": {"parts": []}}, {"index": 1}]}', "candidates[1].index"),
        ('{"candidates": [{"index": 2}]}', "candidates[0].index"),
        ('{"usageMetadata": {"promptTokenCount": -1}}', "usageMetadata.promptTokenCount"),
        ('{"usageMetadata": {"promptTokenCount": "7"}}', "usageMetadata.promptTokenCount"),
        ('{"candidates": "none"}', "candidates"),
        ("{not json", "invalid JSON"),
    ],
)
def test_bad_payloads_name_the_field(payload: str, path: str) -> None:
    with pytest.raises(MalformedChunkError) as info:
        GoogleDecoder().decode(wire_frame(data=payload))
    assert path in str(info.value)


@pytest.mark.parametrize(
    ("args", "path"),
    [
        ([{"jsonPath": "location", "stringValue": "x"}], "partialArgs[0].jsonPath"),
        ([{"jsonPath": "$", "stringValue": "x"}], "partialArgs[0].jsonPath"),
        (
            [{"jsonPath": "$.a", "numberValue": 1}, {"jsonPath": "$.a.b", "numberValue": 2}],
            "partialArgs[1].jsonPath",
        ),
        ([{"jsonPath": "$.a[999999999]", "numberValue": 1}], "partialArgs[0].jsonPath"),
        ([{"jsonPath": "$.a", "numberValue": "1"}], "partialArgs[0].numberValue"),
        ([{"stringValue": "x"}], "partialArgs[0]"),
    ],
)
def test_bad_partial_args_name_the_field(args: list[dict[str, Any]], path: str) -> None:
    dec = GoogleDecoder()
    dec.decode(wire_frame(data=_chunk([{"functionCall": {"name": "f", "willContinue": True}}])))
    with pytest.raises(MalformedChunkError) as info:
        dec.decode(
            wire_frame(data=_chunk([{"functionCall": {"partialArgs": args, "willContinue": True}}]))
        )
    assert path in str(info.value)


def test_json_path_forms() -> None:
    args = [
        {"jsonPath": "$['a.b']", "stringValue": "dotted"},
        {"jsonPath": '$["q\\"x"][1]', "boolValue": True},
    ]
    body = (
        f"data: {_chunk([{'functionCall': {'name': 'f', 'willContinue': True}}])}\n\n"
        f"data: {_chunk([{'functionCall': {'partialArgs': args}}], finishReason='STOP')}\n\n"
    )
    m = replay(API_NAME, body.encode()).message
    assert m.tool_calls[0].arguments == {"a.b": "dotted", 'q"x': [None, True]}


def test_synthesized_ids_are_unique_and_deterministic() -> None:
    parts = [
        {"functionCall": {"name": "f", "args": {}}},
        {"functionCall": {"name": "f", "args": {}}},
    ]
    body = f"data: {json.dumps({'responseId': 'R-1', 'candidates': [{'content': {'parts': parts}, 'finishReason': 'STOP'}]})}\n\n".encode()
    ids = [c.id for c in replay(API_NAME, body).message.tool_calls]
    assert len(set(ids)) == 2 and all(i.startswith(SYNTHETIC_ID_PREFIX + "R-1") for i in ids)
    assert ids == [c.id for c in replay(API_NAME, body).message.tool_calls]


def test_unknown_fields_and_parts_are_ignored() -> None:
    parts: list[dict[str, Any]] = [
        {"text": "a", "futureField": {"x": 1}},
        {"someNewPart": {"y": 2}},
        {"text": "b"},
    ]
    body = f"data: {_chunk(parts, finishReason='STOP', newThing=[1, 2])}\n\n".encode()
    m = replay(API_NAME, body).message
    assert [b.text for b in m.content if isinstance(b, mw.TextContent)] == [
        "a",
        "b",
    ]  # an unknown part kind splits blocks
    assert len(m.content) == 2
    assert m.stop_reason == "stop"


# --------------------------------------------------------------------------- request shape


def test_request_url_header_and_no_key_in_url_or_body() -> None:
    secret = "AIza-very-secret-key"
    req = get_api(API_NAME).build_request(
        model(), mw.Context(messages=[mw.UserMessage(content="hi")]), opts(api_key=secret)
    )
    assert req.url == f"{BASE}/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert req.headers["x-goog-api-key"] == secret
    assert "Authorization" not in req.headers
    assert secret not in req.url and "key=" not in req.url
    assert secret.encode() not in req.body
    assert req.secrets == (secret,)
    assert secret not in repr(req)


def test_trailing_slash_and_no_key() -> None:
    m = mw.Model(
        id="gemini-2.0-flash", api=API_NAME, provider="local", base_url="http://127.0.0.1:9/v1beta/"
    )
    req = get_api(API_NAME).build_request(
        m, mw.Context(messages=[mw.UserMessage(content="hi")]), resolve_options("local")
    )
    assert (
        req.url == "http://127.0.0.1:9/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse"
    )
    assert "x-goog-api-key" not in req.headers and req.secrets == ()


def test_contents_roles_and_merging() -> None:
    call_a = mw.ToolCall(
        id="gcall_x_0", name="read", arguments={"path": "a"}, raw_arguments='{"path":"a"}'
    )
    call_b = mw.ToolCall(
        id="gcall_x_1", name="read", arguments={"path": "b"}, raw_arguments='{"path": "b"}'
    )
    m = model()
    ctx = mw.Context(
        system_prompt="Be brief.",
        messages=[
            mw.UserMessage(content=[mw.TextContent(text="look"), mw.ImageContent(data="aGk=", mime_type="image/png")]),
            mw.AssistantMessage(content=[mw.TextContent(text="Reading."), call_a, call_b], api=API_NAME,
                                provider="google", model=m.id, stop_reason="tool_use"),
            mw.ToolResultMessage(tool_call_id="gcall_x_0", tool_name="read", content="AAA"),
            mw.ToolResultMessage(tool_call_id="gcall_x_1", tool_name="read", content="no such file", is_error=True),
            mw.UserMessage(content="thanks"),
        ],
    )  # fmt: skip
    body = body_of(m, ctx)
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["contents"][0]["parts"] == [
        {"text": "look"},
        {"inlineData": {"mimeType": "image/png", "data": "aGk="}},
    ]
    assert body["contents"][1]["parts"] == [
        {"text": "Reading."},
        {"functionCall": {"name": "read", "args": {"path": "a"}}},  # synthesized ids are not sent
        {"functionCall": {"name": "read", "args": {"path": "b"}}},
    ]
    assert body["contents"][2]["parts"] == [  # both results and the next user text: one user turn
        {"functionResponse": {"name": "read", "response": {"output": "AAA"}}},
        {"functionResponse": {"name": "read", "response": {"error": "no such file"}}},
        {"text": "thanks"},
    ]
    assert "tools" not in body and "toolConfig" not in body and "generationConfig" not in body


def test_failed_assistant_turns_are_not_replayed() -> None:
    m = model()
    bad = mw.AssistantMessage(content=[mw.TextContent(text="partial")], api=API_NAME, provider="google",
                              model=m.id, stop_reason="error")  # fmt: skip
    body = body_of(
        m, mw.Context(messages=[mw.UserMessage(content="a"), bad, mw.UserMessage(content="b")])
    )
    assert body["contents"] == [{"role": "user", "parts": [{"text": "a"}, {"text": "b"}]}]


def _assistant(
    m: mw.Model, *, provider: str = "google", api: str = API_NAME, model_id: str | None = None
) -> mw.AssistantMessage:
    return mw.AssistantMessage(
        content=[
            mw.ThinkingContent(thinking="I should call it.", signature="sig-think"),
            mw.TextContent(text="Calling.", signature="sig-text"),
            mw.ToolCall(id="fc-provider-1", name="get", arguments={"q": 1}, raw_arguments='{"q": 1}', signature="sig-call"),
            mw.ToolCall(id="fc-provider-2", name="get", arguments={"q": 2}, raw_arguments='{"q": 2}'),
        ],
        api=api, provider=provider, model=model_id or m.id, stop_reason="tool_use",
    )  # fmt: skip


def _replayed(
    m: mw.Model, msg: mw.AssistantMessage, *, after: list[mw.Message] | None = None
) -> list[dict[str, Any]]:
    ctx = mw.Context(messages=[
        mw.UserMessage(content="go"), msg,
        mw.ToolResultMessage(tool_call_id="fc-provider-1", tool_name="get", content="1"),
        mw.ToolResultMessage(tool_call_id="fc-provider-2", tool_name="get", content="2"),
        *(after or []),
    ])  # fmt: skip
    contents: list[dict[str, Any]] = body_of(m, ctx)["contents"]
    return contents


def test_signatures_replayed_to_the_same_model() -> None:
    m = model("gemini-2.5-pro")
    contents = _replayed(m, _assistant(m))
    assert contents[1]["parts"] == [
        {"text": "I should call it.", "thought": True, "thoughtSignature": "sig-think"},
        {"text": "Calling.", "thoughtSignature": "sig-text"},
        {
            "functionCall": {"name": "get", "args": {"q": 1}, "id": "fc-provider-1"},
            "thoughtSignature": "sig-call",
        },
        {"functionCall": {"name": "get", "args": {"q": 2}, "id": "fc-provider-2"}},
    ]
    assert [p["functionResponse"]["id"] for p in contents[2]["parts"]] == [
        "fc-provider-1",
        "fc-provider-2",
    ]


@pytest.mark.parametrize(
    "other", [{"model_id": "gemini-2.5-flash"}, {"provider": "vertex"}, {"api": "openai-chat"}]
)
def test_signatures_dropped_for_another_model(other: dict[str, str]) -> None:
    m = model("gemini-2.5-pro")
    contents = _replayed(m, _assistant(m, **other))
    assert contents[1]["parts"] == [
        {"text": "<thinking>\nI should call it.\n</thinking>"},
        {"text": "Calling."},
        {"functionCall": {"name": "get", "args": {"q": 1}}},
        {"functionCall": {"name": "get", "args": {"q": 2}}},
    ]
    assert all("id" not in p["functionResponse"] for p in contents[2]["parts"])


def test_gemini3_unsigned_calls_of_the_current_turn_get_the_skip_value() -> None:
    m = model("gemini-3-pro-preview")
    contents = _replayed(m, _assistant(m, model_id="gemini-2.5-pro"))
    assert [p.get("thoughtSignature") for p in contents[1]["parts"]] == [
        None,
        None,
        SKIP_SIGNATURE,
        SKIP_SIGNATURE,
    ]
    # same model: real signatures win; only the unsigned call gets the skip value
    contents = _replayed(m, _assistant(m))
    assert [p.get("thoughtSignature") for p in contents[1]["parts"]] == [
        "sig-think",
        "sig-text",
        "sig-call",
        SKIP_SIGNATURE,
    ]
    # an earlier turn (a user message follows) is not validated: left alone
    contents = _replayed(m, _assistant(m, model_id="x"), after=[mw.AssistantMessage(
        content=[mw.TextContent(text="ok")], api=API_NAME, provider="google", model=m.id, stop_reason="stop"),
        mw.UserMessage(content="next")])  # fmt: skip
    assert all("thoughtSignature" not in p for p in contents[1]["parts"])
    # Gemini 2.5 does not validate: no skip value
    contents = _replayed(model("gemini-2.5-pro"), _assistant(m, model_id="x"))
    assert all("thoughtSignature" not in p for p in contents[1]["parts"])


def test_round_trip_of_a_recorded_tool_call() -> None:
    m = model("gemini-3-pro-preview", reasoning=True)
    events = replay(
        API_NAME,
        (FIXTURES / "gemini-3-pro-function-call-thought-signature.sse").read_bytes(),
        model=m,
    )
    msg = last_message(events)
    (call,) = msg.tool_calls
    recorded = payloads(
        (FIXTURES / "gemini-3-pro-function-call-thought-signature.sse").read_bytes()
    )
    sig = recorded[0]["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    ctx = mw.Context(messages=[mw.UserMessage(content="Which country?"), msg,
                               mw.ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content="Mexico")])  # fmt: skip
    contents = body_of(m, ctx)["contents"]
    assert contents[1] == {
        "role": "model",
        "parts": [{"functionCall": {"name": "get_country", "args": {}}, "thoughtSignature": sig}],
    }
    assert contents[2] == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "get_country", "response": {"output": "Mexico"}}}],
    }


def test_request_is_pure_and_deterministic() -> None:
    m = model("gemini-3-flash-preview", reasoning=True)
    ctx = mw.Context(
        system_prompt="s",
        messages=[mw.UserMessage(content="go"), _assistant(m, model_id="other")],
        tools=[mw.ToolDefinition(name="get", description="d", parameters={
            "type": "object", "$defs": {"Q": {"type": "integer"}}, "properties": {"q": {"$ref": "#/$defs/Q"}},
            "additionalProperties": False})],
    )  # fmt: skip
    before = mw.to_json(ctx)
    api = get_api(API_NAME)
    a = api.build_request(m, ctx, opts(reasoning="low", tool_choice="required", max_tokens=100))
    b = api.build_request(m, ctx, opts(reasoning="low", tool_choice="required", max_tokens=100))
    assert a.body == b.body
    assert mw.to_json(ctx) == before


def test_tools_and_tool_choice() -> None:
    tool = mw.ToolDefinition(name="read", description="Read a file", parameters={
        "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
        "properties": {"path": {"type": "string"}}, "required": ["path"], "additionalProperties": False})  # fmt: skip
    noargs = mw.ToolDefinition(
        name="now", description="Time", parameters={"type": "object", "properties": {}}
    )
    ctx = mw.Context(messages=[mw.UserMessage(content="hi")], tools=[tool, noargs])
    body = body_of(model(), ctx)
    assert body["tools"] == [{"functionDeclarations": [
        {"name": "read", "description": "Read a file", "parameters": {
            "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
        {"name": "now", "description": "Time"},
    ]}]  # fmt: skip
    assert "toolConfig" not in body
    cases = {"auto": {"mode": "AUTO"}, "none": {"mode": "NONE"}, "required": {"mode": "ANY"}}
    for choice, expected in cases.items():
        assert body_of(model(), ctx, tool_choice=choice)["toolConfig"] == {
            "functionCallingConfig": expected
        }
    assert body_of(model(), ctx, tool_choice={"name": "now"})["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["now"]}
    }
    with pytest.raises(ConfigurationError, match="not a declared tool"):
        body_of(model(), ctx, tool_choice={"name": "write"})
    bare = mw.Context(messages=[mw.UserMessage(content="hi")])
    with pytest.raises(ConfigurationError, match="needs tools"):
        body_of(model(), bare, tool_choice="required")
    assert "toolConfig" not in body_of(model(), bare, tool_choice="none")


@pytest.mark.parametrize(
    "bad",
    [
        mw.ToolDefinition(name="has space", description="", parameters={"type": "object"}),
        mw.ToolDefinition(
            name="t", description="", parameters={"type": "array", "items": {"type": "string"}}
        ),
    ],
)
def test_impossible_tools_raise_before_any_request(bad: mw.ToolDefinition) -> None:
    with pytest.raises(ConfigurationError, match=r"tools\[0\]"):
        body_of(model(), mw.Context(messages=[mw.UserMessage(content="hi")], tools=[bad]))


@pytest.mark.parametrize(
    ("mid", "level", "expected"),
    [
        ("gemini-2.5-flash", "minimal", {"thinkingBudget": 128}),
        ("gemini-2.5-flash", "medium", {"thinkingBudget": 8192}),
        ("gemini-2.5-flash", "xhigh", {"thinkingBudget": 24576}),
        ("gemini-2.5-pro", "high", {"thinkingBudget": 32768}),
        ("gemini-2.5-flash-lite", "minimal", {"thinkingBudget": 512}),
        ("gemini-3-flash-preview", "minimal", {"thinkingLevel": "minimal"}),
        ("gemini-3-pro-preview", "minimal", {"thinkingLevel": "low"}),
        ("gemini-3.1-pro-preview", "xhigh", {"thinkingLevel": "high"}),
        ("gemini-3-flash-preview", "medium", {"thinkingLevel": "medium"}),
    ],
)
def test_generation_config_thinking(mid: str, level: str, expected: dict[str, Any]) -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content="hi")])
    gen = body_of(
        model(mid, reasoning=True), ctx, reasoning=level, max_tokens=512, temperature=0.2
    )["generationConfig"]
    assert gen == {
        "maxOutputTokens": 512,
        "temperature": 0.2,
        "thinkingConfig": {**expected, "includeThoughts": True},
    }


def test_reasoning_needs_a_reasoning_model() -> None:
    with pytest.raises(ConfigurationError, match="reasoning"):
        body_of(
            model(reasoning=False),
            mw.Context(messages=[mw.UserMessage(content="hi")]),
            reasoning="low",
        )


def test_extra_body_merges_and_refuses_overrides() -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content="hi")])
    body = body_of(
        model(),
        ctx,
        max_tokens=5,
        extra_body={"generationConfig": {"topK": 3}, "safetySettings": []},
    )
    assert body["generationConfig"] == {"maxOutputTokens": 5, "topK": 3}
    assert body["safetySettings"] == []
    extra: dict[str, Any]
    for extra in ({"contents": []}, {"tool_config": {}}, {"generationConfig": {"maxOutputTokens": 9}},
                  {"systemInstruction": {}}):  # fmt: skip
        with pytest.raises(ConfigurationError, match="extra_body"):
            body_of(model(), ctx, extra_body=extra)


def test_empty_context_and_compat_errors() -> None:
    with pytest.raises(ConfigurationError):
        body_of(model(), mw.Context())
    with pytest.raises(ConfigurationError, match="unknown google-generative-ai compat"):
        detect_compat(model(compat={"nope": True}))
    assert detect_compat(model("my-proxy", compat={"thinking": "level"})).thinking == "level"
    assert detect_compat(model("gemini-2.5-flash")).signature_fallback is False


# --------------------------------------------------------------------------- schema reduction


def test_schema_reduction_examples() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "$defs": {
            "Unit": {"type": "string", "enum": ["c", "f"], "description": "unit"},
            "Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}, "v": {"type": "integer"}}},
        },
        "properties": {
            "unit": {"$ref": "#/$defs/Unit"},
            "tree": {"$ref": "#/$defs/Node"},
            "mode": {"const": "fast"},
            "level": {"type": "integer", "enum": [1, 2, 3], "description": "How hard."},
            "maybe": {"type": ["string", "null"], "format": "uri", "maxLength": 10},
            "either": {"oneOf": [{"type": "string"}, {"type": "integer", "exclusiveMinimum": 0}]},
            "opt": {"anyOf": [{"type": "number", "format": "double"}, {"type": "null"}], "description": "o"},
            "both": {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                               {"properties": {"b": {"type": "boolean"}}, "required": ["b", "zz"]}]},
            "list": {"type": "array", "items": {"type": "string", "format": "date-time"}, "minItems": 1},
            "mixed": {"type": ["string", "integer"]},
        },
        "required": ["unit", "ghost"],
    }  # fmt: skip
    assert gemini_schema(schema) == {
        "type": "object",
        "properties": {
            "unit": {"type": "string", "description": "unit", "enum": ["c", "f"]},
            "tree": {"type": "object", "properties": {
                "child": {"type": "object", "description": "(structure of Node omitted)"},
                "v": {"type": "integer"}}},
            "mode": {"type": "string", "enum": ["fast"]},
            "level": {"type": "integer", "description": "How hard. Allowed values: 1, 2, 3."},
            "maybe": {"type": "string", "maxLength": 10, "nullable": True},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "opt": {"type": "number", "format": "double", "description": "o", "nullable": True},
            "both": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "boolean"}},
                     "required": ["a", "b"]},
            "list": {"type": "array", "minItems": 1, "items": {"type": "string", "format": "date-time"}},
            "mixed": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        },
        "required": ["unit"],
    }  # fmt: skip


def test_schema_reduction_is_pure() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/definitions/A"}},
        "definitions": {"A": {"type": "string"}},
    }
    before = json.dumps(schema, sort_keys=True)
    assert gemini_schema(schema)["properties"]["a"] == {"type": "string"}
    assert json.dumps(schema, sort_keys=True) == before


_ALLOWED = {"type", "format", "title", "description", "nullable", "enum", "properties", "required",
            "items", "anyOf", "minLength", "maxLength", "pattern", "minItems", "maxItems",
            "minProperties", "maxProperties", "minimum", "maximum"}  # fmt: skip


def _only_gemini_keys(node: Any) -> None:
    assert isinstance(node, dict)
    assert set(node) <= _ALLOWED, set(node) - _ALLOWED
    if "enum" in node:
        assert node["type"] == "string" and all(isinstance(v, str) for v in node["enum"])
    for sub in (node.get("properties") or {}).values():
        _only_gemini_keys(sub)
    if "items" in node:
        _only_gemini_keys(node["items"])
    for sub in node.get("anyOf", []):
        _only_gemini_keys(sub)
    if "required" in node:
        assert set(node["required"]) <= set(node.get("properties", {}))


_scalar = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=3))
_keys = st.sampled_from(["type", "enum", "const", "$ref", "properties", "items", "anyOf", "oneOf",
                         "allOf", "required", "additionalProperties", "format", "description",
                         "$defs", "nullable", "prefixItems", "x-custom"])  # fmt: skip
_schemas = st.recursive(
    _scalar | st.sampled_from([{"type": "string"}, {"$ref": "#/$defs/A"}, {"type": ["null", "integer"]}]),
    lambda inner: st.dictionaries(_keys, inner | st.lists(inner, max_size=3) | st.sampled_from(
        ["string", "object", "null", "#/$defs/A", "date-time", "uri"]), max_size=5)
    | st.fixed_dictionaries({"properties": st.dictionaries(st.text(max_size=3), inner, max_size=3)}),
    max_leaves=10,
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(body=_schemas, a=_schemas)
@example(body={"type": "string", "enum": None, "format": []}, a=None)  # found by hypothesis
def test_schema_reduction_never_fails_and_emits_only_gemini_keys(body: Any, a: Any) -> None:
    schema = {"type": "object", "$defs": {"A": a}, "properties": {"x": body}}
    reduced = gemini_schema(schema)
    _only_gemini_keys(reduced)
    msgspec.json.encode(reduced)  # serializable as sent


# --------------------------------------------------------------------------- loopback

KEY = "AIza-loopback-secret"
GET_COUNTRY = mw.ToolDefinition(
    name="get_country", description="The user's country", parameters={"type": "object"}
)


def _loopback_model(server: Any, mid: str, **kw: Any) -> mw.Model:
    # provider "google": a key is required (GEMINI_API_KEY is cleared in tests).
    m: mw.Model = server.model(API_NAME, id=mid, provider="google", reasoning=True, **kw)
    return m


def test_request_shape_over_loopback() -> None:
    body = (FIXTURES / "gemini-2.0-flash-text.sse").read_bytes()
    with mw.testing.MockServer([mw.testing.Reply(body=body, seed=3)]) as server:
        m = _loopback_model(server, "gemini-2.5-flash")
        ctx = mw.Context(
            system_prompt="sys", messages=[mw.UserMessage(content="Capital?")], tools=[GET_COUNTRY]
        )
        msg = mw.complete_sync(m, ctx, api_key=KEY, reasoning="low", max_tokens=64, max_retries=0)
        rec = server.last_request
    assert msg.stop_reason == "stop", msg.error
    assert msg.text == "".join(
        p["candidates"][0]["content"]["parts"][0]["text"] for p in payloads(body)
    )
    assert rec.method == "POST"
    assert rec.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert rec.headers["x-goog-api-key"] == KEY
    assert "authorization" not in rec.headers
    assert rec.headers["content-type"] == "application/json"
    assert KEY not in rec.path and KEY.encode() not in rec.body
    sent = rec.json()
    assert sent == json.loads(
        get_api(API_NAME).build_request(m, ctx, opts(reasoning="low", max_tokens=64)).body
    )
    assert sent["systemInstruction"] == {"parts": [{"text": "sys"}]}
    assert sent["generationConfig"] == {
        "maxOutputTokens": 64,
        "thinkingConfig": {"thinkingBudget": 2048, "includeThoughts": True},
    }
    assert sent["tools"] == [
        {"functionDeclarations": [{"name": "get_country", "description": "The user's country"}]}
    ]


@pytest.mark.anyio
async def test_tool_round_trip_through_complete() -> None:
    turn1 = (FIXTURES / "gemini-3-pro-function-call-thought-signature.sse").read_bytes()
    turn2 = (FIXTURES / "gemini-3-pro-text-after-function-response.sse").read_bytes()
    recorded_call = payloads(turn1)[0]["candidates"][0]["content"]["parts"][0]
    replies = [mw.testing.Reply(body=turn1, chunk_size=97), mw.testing.Reply(body=turn2, seed=5)]
    with mw.testing.MockServer(replies) as server:
        m = _loopback_model(server, "gemini-3-pro-preview")
        ctx = mw.Context(messages=[mw.UserMessage(content="Where am I?")], tools=[GET_COUNTRY])
        first = await mw.complete(m, ctx, api_key=KEY, reasoning="high", max_retries=0)
        assert first.stop_reason == "tool_use", first.error
        (call,) = first.tool_calls
        assert (call.name, call.arguments) == ("get_country", recorded_call["functionCall"]["args"])
        assert call.signature == recorded_call["thoughtSignature"]
        ctx2 = ctx.with_messages(
            first, mw.ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content="Mexico")
        )
        second = await mw.complete(m, ctx2, api_key=KEY, reasoning="high", max_retries=0)
        requests = server.requests
    assert second.stop_reason == "stop" and second.text == "The capital of Mexico is Mexico City."
    assert len(requests) == 2
    assert requests[0].json()["generationConfig"]["thinkingConfig"] == {
        "thinkingLevel": "high",
        "includeThoughts": True,
    }
    assert requests[1].json()["contents"] == [
        {"role": "user", "parts": [{"text": "Where am I?"}]},
        {"role": "model", "parts": [recorded_call]},  # the call exactly as Gemini sent it
        {"role": "user", "parts": [
            {"functionResponse": {"name": "get_country", "response": {"output": "Mexico"}}}]},
    ]  # fmt: skip


def test_scripted_mock_reply_round_trips() -> None:
    # The MockServer's Gemini renderer and this decoder agree on every block kind.
    script = [
        mw.ThinkingContent(thinking="let me think — 好的", signature="U0lH"),
        mw.TextContent(text="Calling the tool."),
        mw.ToolCall(id="call-from-mock", name="get_country", arguments={"hint": "north"}),
    ]
    with mw.testing.MockServer([mw.testing.Reply(message=script, piece_chars=4)]) as server:
        m = _loopback_model(server, "gemini-2.5-pro")
        ctx = mw.Context(messages=[mw.UserMessage(content="go")], tools=[GET_COUNTRY])
        msg = mw.complete_sync(m, ctx, api_key=KEY, max_retries=0)
    assert msg.stop_reason == "tool_use", msg.error
    assert msg.content[:2] == tuple(script[:2])
    (call,) = msg.tool_calls
    assert (call.id, call.name, call.arguments) == (
        "call-from-mock",
        "get_country",
        {"hint": "north"},
    )


def test_http_errors_are_typed_and_redacted() -> None:
    def google_error(status: int, message: str, rpc: str) -> Any:
        err = {"error": {"code": status, "message": message, "status": rpc}}
        return mw.testing.Reply(status=status, content_type="application/json",
                                body=json.dumps(err).encode())  # fmt: skip

    replies = [
        google_error(429, "Resource has been exhausted (e.g. check quota).", "RESOURCE_EXHAUSTED"),
        google_error(403, f"Permission denied for key {KEY}", "PERMISSION_DENIED"),
    ]
    with mw.testing.MockServer(replies) as server:
        m = _loopback_model(server, "gemini-2.5-flash")
        ctx = mw.Context(messages=[mw.UserMessage(content="hi")])
        first = mw.complete_sync(m, ctx, api_key=KEY, max_retries=0)
        second = mw.complete_sync(m, ctx, api_key=KEY, max_retries=0)
    assert first.error is not None and first.error.kind == "rate_limit"
    assert second.error is not None and second.error.kind == "permission"
    assert KEY not in second.error.message and "[redacted]" in second.error.message
