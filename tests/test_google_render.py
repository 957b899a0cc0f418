"""The server side of ``google-generative-ai``: modelwire's events → Gemini's
``streamGenerateContent?alt=sse`` chunks, and a final message → the
``GenerateContentResponse`` of ``generateContent`` (``google_generative_ai.render``).

Shapes are checked against Google's references —
https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent (each
event a ``GenerateContentResponse``; ``finishReason`` and the whole ``usageMetadata``
on the last), https://ai.google.dev/gemini-api/docs/thought-signatures (a signature
may come in a part of its own, with empty text), https://ai.google.dev/gemini-api/docs/function-calling
(a call whole in one part) — and every rendered body is read back with ``mw.replay``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import modelwire as mw
from eventlist import final
from modelwire._apis._server.request import GatewayRequest
from modelwire._apis.google_generative_ai import spec
from modelwire._apis.google_generative_ai.render import Renderer, finish_reason, message_body
from modelwire.events import Event, RestartEvent
from modelwire.testing import deltas_for, events_from_deltas

API = "google-generative-ai"
DATA = Path(__file__).parent / "data" / "google"
ORIGIN = mw.Model(id="m", api=API, provider="mock", base_url="http://127.0.0.1")
REQUEST = GatewayRequest(model="gemini-x", context=mw.Context(), options={}, stream=True)
USAGE = mw.Usage(input=120, output=35, cache_read=40, cache_write=7)
SEP = b"\r\n\r\n"


def msg(*content: Any, stop: Any = "stop", **kw: Any) -> mw.AssistantMessage:
    blocks = [mw.TextContent(text=c) if isinstance(c, str) else c for c in content]
    return mw.AssistantMessage(content=blocks, api=API, provider="mock", model="m",
                               stop_reason=stop, **kw)  # fmt: skip


def events_of(script: Any, pc: int = 4, origin: mw.Model = ORIGIN) -> list[Event]:
    return events_from_deltas(deltas_for(script, piece_chars=pc), origin)


def feed(events: list[Event], rid: str = "") -> bytes:
    r = Renderer(REQUEST, rid)
    pieces = [r.feed(e) for e in events]
    # Each feed is whole events: nothing, or data events each ended by CRLF CRLF.
    assert all(not p or (p.startswith(b"data: ") and p.endswith(SEP)) for p in pieces)
    return b"".join(pieces)


def render(script: Any, pc: int = 4, rid: str = "") -> bytes:
    return feed(events_of(script, pc), rid)


def chunks(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(c.removeprefix(b"data: ")) for c in body.split(SEP) if c]


def parts(body: bytes) -> list[dict[str, Any]]:
    return [p for c in chunks(body) for p in c["candidates"][0]["content"]["parts"]]


def meaning(m: mw.AssistantMessage) -> list[Any]:
    out: list[Any] = []
    for b in m.content:
        if isinstance(b, mw.TextContent):
            out.append(("text", b.text, b.signature, [(c.url, c.cited_text) for c in b.citations]))
        elif isinstance(b, mw.ThinkingContent):
            out.append(("thinking", b.thinking, b.signature))
        elif isinstance(b, mw.ToolCall):
            out.append(("call", b.id, b.name, b.arguments))
        elif isinstance(b, mw.ServerToolCall):
            out.append(("server", b.name, b.provider_type))
        elif isinstance(b, mw.ServerToolResult):
            out.append(("result", b.provider_type, b.is_error))
    return out


CALL = mw.ToolCall(id="c-1", name="read", arguments={"path": "README.md", "n": [1, 2]},
                   raw_arguments='{"path": "README.md", "n": [1, 2]}')  # fmt: skip
CALL2 = mw.ToolCall(id="c-2", name="ls", arguments={}, raw_arguments="{}")
CITE = mw.Citation(kind="url", url="https://example.com/paris", title="Paris",
                   cited_text="Paris is in France")  # fmt: skip
CODE = mw.ServerToolCall(id="x1", name="code_execution", input={"code": "print(1)"},
                         provider_type="executableCode")  # fmt: skip
RESULT = mw.ServerToolResult(tool_call_id="x1", provider_type="codeExecutionResult",
                             result={"output": "1\n"}, name="code_execution")  # fmt: skip
SEARCH = mw.ServerToolCall(id="g1", name="google_search", input={"queries": ["where is paris"]},
                           provider_type="groundingMetadata")  # fmt: skip

SCRIPTS: dict[str, mw.AssistantMessage] = {
    "text": msg("hello wörld 🙂, and some more text", usage=USAGE),
    "thinking": msg(
        mw.ThinkingContent(thinking="let me think it over", signature="sig-abc"),
        "the answer",
        usage=USAGE,
    ),
    "parallel calls": msg(
        mw.ThinkingContent(thinking="plan"), "calling ", CALL, CALL2, stop="tool_use", usage=USAGE
    ),
    # The search is metadata of the last chunk: it is read back after the text.
    "code and search": msg(
        CODE, RESULT, mw.TextContent(text="Paris is in France.", citations=(CITE,)), SEARCH
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
        # Gemini reports no cache writes: they are prompt tokens, read back as input.
        assert (u.input, u.output, u.cache_read) == (s.input + s.cache_write, s.output,
                                                      s.cache_read)  # fmt: skip


def test_every_chunk_is_one_candidate_and_the_last_one_ends_it() -> None:
    # API reference: GenerateContentResponse (candidates, usageMetadata, modelVersion,
    # responseId); Candidate (content with role "model", index, finishReason).
    body = render(SCRIPTS["text"], rid="resp-9")
    got = chunks(body)
    for c in got:
        assert set(c) == {"candidates", "usageMetadata", "modelVersion", "responseId"}
        assert (c["modelVersion"], c["responseId"]) == ("gemini-x", "resp-9")
        (cand,) = c["candidates"]
        assert cand["index"] == 0 and cand["content"]["role"] == "model"
    assert all("finishReason" not in c["candidates"][0] for c in got[:-1])
    assert got[-1]["candidates"][0]["finishReason"] == "STOP"
    # The last chunk carries the whole usage: promptTokenCount counts cached tokens.
    assert got[-1]["usageMetadata"] == {"promptTokenCount": 167, "candidatesTokenCount": 35,
                                        "totalTokenCount": 202, "cachedContentTokenCount": 40}  # fmt: skip
    assert [p["text"] for p in parts(body)[:-1]] == ["hell", "o wö", "rld ", "🙂, a", "nd s",
                                                     "ome ", "more", " tex", "t"]  # fmt: skip
    # A response id not given: the mock's own.
    assert chunks(render("x"))[0]["responseId"] == spec.MOCK_ID


def test_thoughts_are_thought_parts_and_signatures_come_in_a_part_of_their_own() -> None:
    # Thought-signatures guide: a signature may arrive in a part with empty text.
    got = parts(render(SCRIPTS["thinking"], pc=10))
    assert got[:3] == [{"text": "let me thi", "thought": True},
                       {"text": "nk it over", "thought": True},
                       {"text": "", "thought": True, "thoughtSignature": "sig-abc"}]  # fmt: skip
    assert got[3:] == [{"text": "the answer"}, {"text": ""}]
    signed = msg(mw.TextContent(text="signed", signature="t-sig"))
    assert parts(render(signed, pc=10))[:2] == [{"text": "signed"},
                                                {"text": "", "thoughtSignature": "t-sig"}]  # fmt: skip
    assert mw.replay(API, render(signed)).message.content[0] == signed.content[0]


def test_a_call_is_sent_whole_in_one_part_with_its_arguments_as_an_object() -> None:
    body = render(SCRIPTS["parallel calls"], pc=3)
    calls = [p["functionCall"] for p in parts(body) if "functionCall" in p]
    assert calls == [{"name": "read", "args": {"path": "README.md", "n": [1, 2]}, "id": "c-1"},
                     {"name": "ls", "args": {}, "id": "c-2"}]  # fmt: skip
    # Gemini says STOP for a turn that calls functions (FinishReason).
    assert chunks(body)[-1]["candidates"][0]["finishReason"] == "STOP"


def test_a_gemini_stream_renders_back_to_the_same_message() -> None:
    # A Gemini backend's events (signed calls with provider ids, thoughts, text between)
    # come back as what they were.
    for name in ("SYNTHETIC-parallel-calls-provider-ids.sse", "SYNTHETIC-text-then-call.sse",
                 "SYNTHETIC-max-tokens.sse", "SYNTHETIC-finish-safety.sse"):  # fmt: skip
        events = mw.replay(API, (DATA / name).read_bytes())
        again = mw.replay(API, feed(list(events), rid="r")).message
        first = events.message
        assert meaning(again) == meaning(first), name
        assert [getattr(b, "signature", None) for b in again.content] == [
            getattr(b, "signature", None) for b in first.content
        ]
        assert (again.stop_reason, again.provider_stop_reason, again.usage) == (
            first.stop_reason, first.provider_stop_reason, first.usage)  # fmt: skip
        assert (again.error and again.error.kind) == (first.error and first.error.kind)


def test_code_runs_as_its_parts_and_searches_and_citations_as_grounding() -> None:
    body = render(SCRIPTS["code and search"])
    got = parts(body)
    assert got[0] == {"executableCode": {"language": "PYTHON", "code": "print(1)", "id": "x1"}}
    assert got[1] == {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n",
                                              "id": "x1"}}  # fmt: skip
    # Google Search docs: webSearchQueries, groundingChunks, groundingSupports whose
    # segments count UTF-8 bytes of the answer text.
    grounding = chunks(body)[-1]["candidates"][0]["groundingMetadata"]
    assert grounding == {
        "webSearchQueries": ["where is paris"],
        "groundingChunks": [{"web": {"uri": "https://example.com/paris", "title": "Paris"}}],
        "groundingSupports": [{"segment": {"startIndex": 0, "endIndex": 19,
                                           "text": "Paris is in France"},
                               "groundingChunkIndices": [0]}],
    }  # fmt: skip


def test_another_apis_blocks_read_as_text_or_are_left_out() -> None:
    web = mw.ServerToolCall(id="s1", name="web_search", input={"query": "q"},
                            provider_type="server_tool_use")  # fmt: skip
    item = mw.ProviderItem(api="openai-responses", provider_type="x", data='{"type":"x"}')
    own = mw.ProviderItem(api=API, provider_type="fileData",
                          data='{"fileData": {"fileUri": "f", "mimeType": "text/plain"}}')  # fmt: skip
    got = parts(render(msg(web, item, own, "t")))
    assert "web_search" in got[0]["text"] and "q" in got[0]["text"]
    assert got[1] == {"fileData": {"fileUri": "f", "mimeType": "text/plain"}}
    assert got[2:] == [{"text": "t"}, {"text": ""}]


def test_the_finish_reason_is_gemini_own_when_it_means_the_same() -> None:
    cut = msg("x", stop="length", provider_stop_reason="MAX_TOKENS")
    assert finish_reason(cut) == "MAX_TOKENS"
    other = msg("x", stop="stop", provider_stop_reason="end_turn")
    assert finish_reason(other) == "STOP"
    # A Gemini reason that means something else is not sent for a normal end.
    assert finish_reason(msg("x", provider_stop_reason="MAX_TOKENS")) == "STOP"
    assert finish_reason(msg(CALL, stop="tool_use")) == "STOP"


def _failed(kind: str) -> mw.AssistantMessage:
    return msg("partial answer", stop="error", error=mw.ErrorInfo(kind=kind, message="it broke"))


def test_an_error_is_a_status_object_in_the_stream_and_nothing_follows() -> None:
    events = events_of(_failed("server"))
    r = Renderer(REQUEST, "")
    body = b"".join(r.feed(e) for e in events)
    # A google.rpc.Status in a data event (the troubleshooting guide's 503 UNAVAILABLE).
    assert chunks(body)[-1] == {"error": {"code": 503, "message": "it broke",
                                          "status": "UNAVAILABLE"}}  # fmt: skip
    assert r.feed(events[-1]) == b""
    got = mw.replay(API, body).message
    assert got.stop_reason == "error" and got.text == "partial answer"
    assert got.error is not None and "it broke" in got.error.message


def test_a_content_filter_is_a_safety_finish() -> None:
    body = render(_failed("content_filter"))
    cand = chunks(body)[-1]["candidates"][0]
    assert (cand["finishReason"], cand["finishMessage"]) == ("SAFETY", "it broke")
    err = mw.replay(API, body).message.error
    assert err is not None and err.kind == "content_filter" and "it broke" in err.message


def test_a_restart_writes_nothing_and_the_next_model_continues() -> None:
    first = events_of(msg("abandoned"))[:-1]
    second = events_of(msg("kept"))[1:]
    restart = RestartEvent(message=final(events_of(msg("abandoned"))))
    body = feed([*first, restart, *second])
    assert mw.replay(API, body).message.text == "abandonedkept"


def test_the_message_body_holds_every_part() -> None:
    # API reference: GenerateContentResponse of :generateContent, one candidate.
    script = msg(mw.ThinkingContent(thinking="plan", signature="s"), "calling ", CALL,
                 CODE, SEARCH, mw.TextContent(text="Paris.", citations=(CITE,)),
                 stop="tool_use", usage=USAGE, response_id="ignored")  # fmt: skip
    body = json.loads(message_body(REQUEST, final(events_of(script)), "resp-1"))
    assert set(body) == {"candidates", "usageMetadata", "modelVersion", "responseId"}
    assert (body["modelVersion"], body["responseId"]) == ("gemini-x", "resp-1")
    (cand,) = body["candidates"]
    assert cand["content"]["parts"] == [
        {"text": "plan", "thought": True, "thoughtSignature": "s"},
        {"text": "calling "},
        {"functionCall": {"name": "read", "args": {"path": "README.md", "n": [1, 2]},
                          "id": "c-1"}},
        {"executableCode": {"language": "PYTHON", "code": "print(1)", "id": "x1"}},
        {"text": "Paris."},
    ]  # fmt: skip
    assert cand["finishReason"] == "STOP" and cand["content"]["role"] == "model"
    assert cand["groundingMetadata"]["groundingSupports"][0]["segment"]["startIndex"] == 8
    assert body["usageMetadata"]["totalTokenCount"] == 202
    no_id = json.loads(message_body(REQUEST, msg("x"), ""))
    assert no_id["responseId"] == spec.MOCK_ID
