"""The pipeline's hand-off: the frames of one network read are decoded into one list
of deltas and assembled in one call, with the per-frame loop's outcome in every
case — the terminal delta ends the stream and what follows it in the same read is
never an error, a frame that fails to decode keeps everything before it — whole,
byte by byte and at every split point."""

from __future__ import annotations

import json
from typing import Any

import pytest

import modelwire as mw
from modelwire._apis import get_api
from modelwire._client._replay import pipeline_for
from modelwire._wire.assemble import Assembler
from modelwire._wire.framing import EventStreamDecoder
from modelwire._wire.sse import Frame, SSEFraming


def chunk(content: str | None = None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    payload = {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


TEXT = ["Hel", "lo ", "wö", "rld"]
BODY = b"".join(chunk(t) for t in TEXT) + chunk(finish="stop") + b"data: [DONE]\n\n"


def shapes(events: list[Any]) -> list[tuple[str, str]]:
    return [(e.type, getattr(e, "delta", "")) for e in events]


def splits(body: bytes) -> list[list[bytes]]:
    """The body whole, byte by byte, and cut once at every point."""
    out = [[body], [body[i : i + 1] for i in range(len(body))]]
    out += [[body[:i], body[i:]] for i in range(1, len(body))]
    return out


def test_one_read_is_assembled_in_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = Assembler.feed

    def counting(self: Assembler, deltas: Any, out: list[Any]) -> None:
        calls.append(len(deltas))
        real(self, deltas, out)

    monkeypatch.setattr(Assembler, "feed", counting)
    p = pipeline_for("openai-chat")
    p.feed(chunk("a"))  # the first payload is checked on its own (wrong-API sniffing)
    calls.clear()
    events = p.feed(b"".join(chunk(t) for t in TEXT))
    assert calls == [len(TEXT)]  # one call, every delta of the read
    assert [e.delta for e in events if e.type == "text_delta"] == TEXT


@pytest.mark.parametrize("reads", splits(BODY), ids=lambda r: f"{len(r)} reads")
def test_every_split_gives_the_events_of_the_whole_body(reads: list[bytes]) -> None:
    whole = mw.replay("openai-chat", [BODY])
    assert whole.message.text == "".join(TEXT) and whole[-1].type == "done"
    assert shapes(mw.replay("openai-chat", reads)) == shapes(whole)


def test_a_broken_frame_after_the_terminal_one_in_the_same_read_is_not_an_error() -> None:
    # The per-frame loop stopped at [DONE] and never decoded what followed; the batch
    # decodes ahead, and must not turn the finished response into an error.
    body = BODY + b"data: {broken\n\n"
    for reads in splits(body):
        events = mw.replay("openai-chat", reads)
        assert events[-1].type == "done", (reads, events[-1])
        assert events.message.text == "".join(TEXT)


def test_a_broken_frame_mid_read_keeps_every_delta_before_it() -> None:
    body = b"".join(chunk(t) for t in TEXT) + b'data: {"choices": 7}\n\n' + chunk("lost")
    for reads in ([chunk("a"), body], splits(chunk("a") + body)[1]):
        events = mw.replay("openai-chat", reads)
        last = events[-1]
        assert last.type == "error" and last.message.error is not None
        assert last.message.error.kind == "malformed_chunk"
        assert "choices" in last.message.error.message
        assert events.message.text == "a" + "".join(TEXT)  # nothing before it lost


def test_a_tool_call_protocol_error_mid_read_ends_the_stream_there() -> None:
    # The assembler's own error at one frame of a batch: the stream ends with it, not
    # with a decode error of a later frame of the same read.
    def call(index: int, id_: str) -> bytes:
        tc = {"index": index, "id": id_, "function": {"name": "f", "arguments": "{}"}}
        payload = {"choices": [{"index": 0, "delta": {"tool_calls": [tc]}}]}
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    body = chunk("a") + call(0, "same") + call(1, "same") + b"data: {broken\n\n"
    events = mw.replay("openai-chat", [chunk("x"), body])
    err = events.message.error
    assert err is not None and err.kind == "tool_call_protocol", err


# ``decode_batch`` (one call per read) against ``decode`` frame by frame: the same
# deltas in the same order, and at a failing frame the same error with exactly the
# deltas of the frames before it.
def _chat(payload: object) -> Frame:
    return Frame("message", json.dumps(payload).encode())


def _choice(delta: dict[str, Any], finish: str | None = None, index: int = 0) -> Any:
    return {"id": "c1", "model": "m", "choices": [
        {"index": index, "delta": delta, "finish_reason": finish}]}  # fmt: skip


CHAT_FRAMES = [
    _chat(_choice({"role": "assistant", "content": ""})),
    _chat(_choice({"content": "Hel"})),
    _chat(_choice({"content": "lo", "reasoning_content": "hm"})),
    _chat(_choice({"reasoning": "thinking"})),
    _chat(_choice({"content": [{"type": "text", "text": "part"}]})),
    _chat(
        _choice(
            {
                "content": None,
                "tool_calls": [
                    {"index": 0, "id": "call_1", "function": {"name": "f", "arguments": ""}}
                ],
            }
        )
    ),
    _chat(_choice({"tool_calls": [{"index": 0, "function": {"arguments": '{"a":'}}]})),
    _chat(_choice({"content": "x", "tool_calls": [{"index": 1, "function": {"arguments": "1"}}]})),
    _chat(_choice({"refusal": "no"})),
    _chat(_choice({}, "")),
    _chat({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}}),
    _chat({"choices": [{"index": 0, "delta": {"content": "u"}, "usage": {"prompt_tokens": 1}}]}),
    _chat(
        {
            "choices": [{"index": 0, "delta": {"content": "g"}}],
            "x_groq": {"usage": {"prompt_tokens": 2}},
        }
    ),
    _chat({"choices": [{"index": 0, "delta": {"content": "p"}}], "citations": ["https://a"]}),
    Frame("message", b""),
    Frame("ping", b"{}"),
    _chat(_choice({"content": "!"}, "stop")),
    Frame("message", b"[DONE]"),
]
CHAT_BAD = [
    _chat(_choice({"content": 5})),
    _chat({"choices": [_choice({"content": "a"})["choices"][0], {"index": 1, "delta": {}}]}),
    _chat(_choice({"content": "a"}, index=1)),
    _chat({"error": {"message": "overloaded"}}),
    Frame("message", b"{not json"),
    Frame("error", b"boom"),
]


def _anth(payload: dict[str, Any]) -> Frame:
    return Frame(str(payload["type"]), json.dumps(payload, separators=(",", ":")).encode())


def _block_delta(index: int, delta: dict[str, Any]) -> Frame:
    return _anth({"type": "content_block_delta", "index": index, "delta": delta})


ANTHROPIC_FRAMES = [
    _anth(
        {
            "type": "message_start",
            "message": {"id": "msg_1", "model": "m", "content": [], "usage": {"input_tokens": 3}},
        }
    ),
    _anth(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": ""},
        }
    ),
    _block_delta(0, {"type": "thinking_delta", "thinking": "hm"}),
    _block_delta(0, {"type": "signature_delta", "signature": "sig"}),
    _anth({"type": "content_block_stop", "index": 0}),
    _anth({"type": "ping"}),
    _anth(
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}
    ),
    _block_delta(1, {"type": "text_delta", "text": "Hi"}),
    _block_delta(1, {"type": "text_delta", "text": ""}),
    # The same event with its type not first (another server's JSON): the typed envelope.
    Frame(
        "content_block_delta",
        b'{"index": 1, "type": "content_block_delta", '
        b'"delta": {"type": "text_delta", "text": " there"}}',
    ),
    _anth({"type": "content_block_stop", "index": 1}),
    _anth(
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
        }
    ),
    _block_delta(2, {"type": "input_json_delta", "partial_json": ""}),
    _block_delta(2, {"type": "input_json_delta", "partial_json": '{"a": 1}'}),
    _anth({"type": "content_block_stop", "index": 2}),
    _anth(
        {
            "type": "content_block_start",
            "index": 3,
            "content_block": {"type": "tool_use", "id": "t2", "name": "f", "input": {"b": 2}},
        }
    ),
    _block_delta(3, {"type": "input_json_delta", "partial_json": '{"c": 3}'}),
    _anth({"type": "content_block_stop", "index": 3}),
    _anth(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 9},
        }
    ),
    _anth({"type": "message_stop"}),
]
ANTHROPIC_BAD = [
    _block_delta(1, {"type": "text_delta", "text": 5}),
    _block_delta(7, {"type": "text_delta", "text": "no block"}),
    _block_delta(0, {"type": "text_delta", "text": "stopped block"}),
    _block_delta(1, {"type": "text_delta", "text": "a stopped text block"}),
    _block_delta(2, {"type": "text_delta", "text": "a tool block"}),
    _anth({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
    Frame("message", b"{not json"),
]


def _resp_delta(**fields: object) -> Frame:
    payload = {"type": "response.output_text.delta", "sequence_number": 1, **fields}
    return Frame("response.output_text.delta", json.dumps(payload, separators=(",", ":")).encode())


RESPONSES_FRAMES = SSEFraming().feed(
    mw.testing.render("Hello there, a few deltas of text.", "openai-responses", piece_chars=5)
)
# The last text delta dropped: the finished item carries text no delta did (filled in).
_last = max(i for i, f in enumerate(RESPONSES_FRAMES) if f.event == "response.output_text.delta")
RESPONSES_UNFINISHED = RESPONSES_FRAMES[:_last] + RESPONSES_FRAMES[_last + 1 :]
RESPONSES_FRAMES[5:5] = [
    _resp_delta(item_id="msg_resp_mock_0", output_index=0, content_index=0, delta=""),
    _resp_delta(item_id="msg_resp_mock_0", delta="by id "),
    _resp_delta(output_index=0, delta="no item id "),
]
RESPONSES_BAD = [
    _resp_delta(output_index=0, delta="late "),  # an error once the item is done
    _resp_delta(output_index=0, delta=5),
    _resp_delta(output_index=-1, delta="x"),
    _resp_delta(output_index=7, delta="a delta before its item"),
    _resp_delta(delta="neither index nor id"),
    Frame("response.output_text.delta", b'{"type":"response.output_text.delta",'),
]


def _gemini(*parts: dict[str, Any], **extra: Any) -> Frame:
    cand = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
    cand.update(extra.pop("candidate", {}))
    payload = {"candidates": [cand], "usageMetadata": {"promptTokenCount": 2}, **extra}
    return Frame("message", json.dumps(payload, separators=(",", ":")).encode())


GEMINI_FRAMES = SSEFraming().feed(
    mw.testing.render("Hello there, a few deltas of text.", "google-generative-ai", piece_chars=5)
)
GEMINI_FRAMES[3:3] = [
    _gemini({"text": "a "}, {"text": "b "}),
    _gemini({"text": "think", "thought": True}),
    _gemini({"text": "signed ", "thoughtSignature": "c2ln"}),
    _gemini({"text": "again "}),
    _gemini({"text": ""}),
    _gemini({"text": "usage "}, usageMetadata={"promptTokenCount": 5, "candidatesTokenCount": 1}),
    _gemini({"text": "no usage "}, usageMetadata=None),
    _gemini({"functionCall": {"name": "f", "args": {"a": 1}}}),
    _gemini({"text": "after the call "}),
    _gemini(
        {"text": "cited "},
        candidate={
            "citationMetadata": {
                "citationSources": [{"startIndex": 0, "endIndex": 3, "uri": "https://a"}]
            }
        },
    ),
]
GEMINI_BAD = [
    _gemini({"text": 5}),
    _gemini({"text": "x"}, candidate={"index": 1}),
    _gemini({"text": "x"}, usageMetadata={"promptTokenCount": -1}),
    _gemini({"text": "x"}, error={"code": 500, "message": "boom"}),
    _gemini({"text": "x"}, promptFeedback={"blockReason": "SAFETY"}),
    Frame("message", b'{"candidates":'),
]
BEDROCK_FRAMES = EventStreamDecoder().feed(
    mw.testing.render("Hello there, a few deltas of text.", "bedrock-converse", piece_chars=5)
)
BEDROCK_BAD = [
    Frame("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"text":5}}'),
    Frame("contentBlockDelta", b'{"contentBlockIndex":0}'),
    Frame("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"toolUse":{"input":"{}"}}}'),
    Frame("contentBlockDelta", b'{"contentBlockIndex":'),
]


def _per_frame(decoder: Any, frames: list[Frame]) -> tuple[list[Any], str]:
    out: list[Any] = []
    for f in frames:
        try:
            out += decoder.decode(f)
        except Exception as exc:
            return out, f"{type(exc).__name__}: {exc}"
    return out, ""


def _batched(decoder: Any, frames: list[Frame]) -> tuple[list[Any], str]:
    out: list[Any] = []
    try:
        decoder.decode_batch(frames, out)
    except Exception as exc:
        return out, f"{type(exc).__name__}: {exc}"
    return out, ""


@pytest.mark.parametrize(
    ("api", "frames", "bad"),
    [
        ("openai-chat", CHAT_FRAMES, CHAT_BAD),
        ("anthropic-messages", ANTHROPIC_FRAMES, ANTHROPIC_BAD),
        ("openai-responses", RESPONSES_FRAMES, RESPONSES_BAD),
        ("openai-responses", RESPONSES_UNFINISHED, RESPONSES_BAD),
        ("google-generative-ai", GEMINI_FRAMES, GEMINI_BAD),
        ("bedrock-converse", BEDROCK_FRAMES, BEDROCK_BAD),
    ],
)
def test_decode_batch_gives_what_decode_gives_frame_by_frame(
    api: str, frames: list[Frame], bad: list[Frame]
) -> None:
    wire = get_api(api)
    # Whole, in every two reads (a batch may start after the response id is known),
    # and with each broken frame at every position.
    cases = [[frames]] + [[frames[:i], frames[i:]] for i in range(1, len(frames))]
    cases += [[[*frames[:i], b, *frames[i:]]] for b in bad for i in range(len(frames) + 1)]
    cases += [
        [frames[:1], [*frames[1:i], b, *frames[i:]]] for b in bad for i in range(1, len(frames) + 1)
    ]
    for reads in cases:
        one, two = wire.new_decoder(None), wire.new_decoder(None)
        want: list[Any] = []
        got: list[Any] = []
        for read in reads:
            w, w_err = _per_frame(one, read)
            g, g_err = _batched(two, read)
            want += w
            got += g
            assert (got, g_err) == (want, w_err), reads
            if w_err:
                break
