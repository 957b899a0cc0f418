"""Gemini beyond text and function calls: code it ran (``executableCode`` /
``codeExecutionResult``), grounding with Google Search and URL context (citations on
the text), and documents and audio as input.

The streams are synthetic, written from the Gemini API docs (code execution, grounding
with Google Search, URL context, ``Candidate.citationMetadata``); the recorded ones in
the shared fixtures (tests/test_google.py) are read the same way.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import msgspec
import pytest

import modelwire as mw
from eventlist import final, same_at_every_split
from modelwire._apis import get_api
from modelwire._client._options import resolve_options
from modelwire.events import BlockEvent, CitationEvent
from modelwire.testing import MockServer, Reply, render_frames
from modelwire.testing._render import render_reply
from test_google import API_NAME, body_of, model

SIG = "Q29kZVNpZw=="
CODE = {"language": "PYTHON", "code": "print(2 ** 10)", "id": "exec_1"}
RESULT = {"outcome": "OUTCOME_OK", "output": "1024\n", "id": "exec_1"}
# "Ça" takes 3 bytes: grounding segments count UTF-8 bytes, not characters.
TEXT1 = "Ça fait 1024. "
TEXT2 = "Paris is in France."
SUPPORT = {"segment": {"startIndex": 15, "endIndex": 34, "text": "Paris is in France."},
           "groundingChunkIndices": [0, 1], "confidenceScores": [0.9, 0.8]}  # fmt: skip
GROUNDING = {
    "webSearchQueries": ["where is paris"],
    "searchEntryPoint": {"renderedContent": "<div>chips</div>"},
    "groundingChunks": [{"web": {"uri": "https://a.example/paris", "title": "a.example"}},
                        {"retrievedContext": {"uri": "gs://b/doc.pdf", "title": "Atlas"}}],
    "groundingSupports": [SUPPORT],
}  # fmt: skip
URLS = {"urlMetadata": [{"retrievedUrl": "https://c.example/",
                         "urlRetrievalStatus": "URL_RETRIEVAL_STATUS_SUCCESS"}]}  # fmt: skip


def chunk(parts: list[dict[str, Any]], **cand: Any) -> bytes:
    body = {"candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0, **cand}],
            "modelVersion": "gemini-3-flash-preview", "responseId": "resp_1"}  # fmt: skip
    return f"data: {json.dumps(body, ensure_ascii=False)}\r\n\r\n".encode()


STREAM = b"".join([
    chunk([{"executableCode": CODE, "thoughtSignature": SIG}], groundingMetadata={}),
    chunk([{"codeExecutionResult": RESULT}], groundingMetadata={}),
    chunk([{"text": TEXT1}], groundingMetadata={}),
    chunk([{"text": TEXT2}], groundingMetadata={}),
    chunk([{"text": ""}], finishReason="STOP", groundingMetadata=GROUNDING,
          urlContextMetadata=URLS, usageMetadata={"promptTokenCount": 3}),
])  # fmt: skip


def test_code_and_grounding_become_blocks_and_citations() -> None:
    events = mw.replay(API_NAME, STREAM)
    msg = final(events)
    assert (msg.stop_reason, msg.error, msg.tool_calls) == ("stop", None, ())
    code, result, text, search = msg.content
    assert isinstance(code, mw.ServerToolCall) and isinstance(result, mw.ServerToolResult)
    assert (code.id, code.name, code.input, code.provider_type) == (
        "exec_1",
        "code_execution",
        CODE,
        "executableCode",
    )
    assert code.raw is not None
    assert json.loads(code.raw) == {"executableCode": CODE, "thoughtSignature": SIG}
    assert (result.tool_call_id, result.result, result.is_error, result.provider_type) == (
        "exec_1",
        RESULT,
        False,
        "codeExecutionResult",
    )
    assert isinstance(text, mw.TextContent) and text.text == TEXT1 + TEXT2
    web, doc, url = text.citations
    assert (web.kind, web.url, web.title, web.cited_text, web.start, web.end) == (
        "url",
        "https://a.example/paris",
        "a.example",
        TEXT2,
        15,
        34,
    )
    # The offsets are as Gemini counts: bytes of the answer text.
    assert (TEXT1 + TEXT2).encode()[web.start : web.end].decode() == TEXT2
    assert (doc.kind, doc.url, doc.title, doc.document) == (
        "document",
        "gs://b/doc.pdf",
        "Atlas",
        "gs://b/doc.pdf",
    )
    # raw: the support and the chunk it names, each as received.
    assert web.raw is not None and doc.raw is not None
    chunks: list[Any] = GROUNDING["groundingChunks"]  # type: ignore[assignment]
    assert json.loads(web.raw) == {"groundingSupport": SUPPORT, "groundingChunk": chunks[0]}
    assert json.loads(doc.raw) == {"groundingSupport": SUPPORT, "groundingChunk": chunks[1]}
    assert (url.kind, url.url) == ("url", "https://c.example/")
    assert isinstance(search, mw.ServerToolCall)
    assert (search.name, search.input, search.provider_type) == (
        "google_search",
        {"queries": ["where is paris"]},
        "groundingMetadata",
    )
    assert search.raw is not None and json.loads(search.raw) == GROUNDING
    assert msg.server_tool_calls == (code, search)
    assert [e.content_index for e in events if isinstance(e, BlockEvent)] == [0, 1, 3]
    assert [e.content_index for e in events if isinstance(e, CitationEvent)] == [2, 2, 2]


def test_whole_byte_by_byte_and_every_split_agree() -> None:
    same_at_every_split(API_NAME, STREAM)


def test_the_message_round_trips_through_json() -> None:
    msg = final(mw.replay(API_NAME, STREAM))
    assert mw.from_json(mw.to_json(msg), mw.AssistantMessage) == msg


def test_metadata_repeated_on_later_chunks_is_reported_once() -> None:
    body = chunk([{"text": "x"}], groundingMetadata=GROUNDING) + STREAM
    msg = final(mw.replay(API_NAME, body))
    cites = [c for b in msg.content if isinstance(b, mw.TextContent) for c in b.citations]
    assert len(cites) == 3  # two chunks of one support, one URL: not doubled
    assert [b.name for b in msg.server_tool_calls] == ["google_search", "code_execution"]


def test_failed_code_without_ids_answers_the_code_before_it() -> None:
    body = chunk([{"executableCode": {"language": "PYTHON", "code": "1/0"}}]) + chunk(
        [{"codeExecutionResult": {"outcome": "OUTCOME_FAILED", "output": "ZeroDivisionError"}}],
        finishReason="STOP")  # fmt: skip
    code, result = final(mw.replay(API_NAME, body)).content
    assert isinstance(code, mw.ServerToolCall) and isinstance(result, mw.ServerToolResult)
    assert code.id.startswith("gcode_") and result.tool_call_id == code.id
    assert result.is_error


def test_a_citation_with_no_open_text_is_kept_on_a_text_block_of_its_own() -> None:
    cites = {"citationSources": [{"startIndex": 0, "endIndex": 4, "uri": "https://d.example/",
                                  "license": "mit"}]}  # fmt: skip
    body = chunk([{"text": "Quote"}]) + chunk([{"executableCode": CODE}]) + chunk(
        [], finishReason="STOP", citationMetadata=cites)  # fmt: skip
    text, code, holder = final(mw.replay(API_NAME, body)).content
    assert isinstance(text, mw.TextContent) and text.citations == ()  # closed before the metadata
    assert isinstance(code, mw.ServerToolCall)
    assert isinstance(holder, mw.TextContent) and holder.text == ""
    (c,) = holder.citations
    assert (c.kind, c.url, c.start, c.end) == ("url", "https://d.example/", 0, 4)
    assert c.raw is not None and json.loads(c.raw)["license"] == "mit"


@pytest.mark.parametrize(
    ("cand", "path"),
    [
        ({"content": {"parts": [{"executableCode": {"code": 5}}]}},
         r"candidates\[0\]\.content\.parts\[0\]\.executableCode\.code must be a string"),
        ({"finishReason": "STOP",
          "groundingMetadata": {"groundingChunks": [],
                                "groundingSupports": [{"groundingChunkIndices": [2]}]}},
         r"groundingSupports\[0\]\.groundingChunkIndices\[0\] is 2, but groundingChunks has 0"),
        ({"groundingMetadata": {"groundingChunks": [{"web": {"uri": 5}}]}},
         r"groundingMetadata\.groundingChunks\[0\]\.web\.uri must be a string"),
        ({"groundingMetadata": {"groundingSupports": [{"segment": {"startIndex": -1}}]}},
         r"groundingSupports\[0\]\.segment\.startIndex must be an integer >= 0"),
        ({"urlContextMetadata": {"urlMetadata": [{"retrievedUrl": 1}]}},
         r"urlMetadata\[0\]\.retrievedUrl must be a string"),
    ],
)  # fmt: skip
def test_malformed_metadata_names_its_field(cand: dict[str, Any], path: str) -> None:
    body = f"data: {json.dumps({'candidates': [{'index': 0, **cand}]})}\r\n\r\n".encode()
    msg = final(mw.replay(API_NAME, body))
    assert msg.error is not None and msg.error.kind == "malformed_chunk"
    assert re.search(path, msg.error.message), msg.error.message


# --------------------------------------------------------------------------- replay


def _turn(m: mw.Model) -> mw.Context:
    answer = final(mw.replay(API_NAME, STREAM, model=m))
    return mw.Context(messages=[mw.UserMessage(content="2**10? where is Paris?"), answer,
                                mw.UserMessage(content="thanks")])  # fmt: skip


def test_replay_to_the_same_model_sends_the_parts_gemini_sent() -> None:
    m = model("gemini-3-flash-preview")
    ctx = _turn(m)
    parts = body_of(m, ctx)["contents"][1]["parts"]
    assert parts == [
        {"executableCode": CODE, "thoughtSignature": SIG},
        {"codeExecutionResult": RESULT},
        {"text": TEXT1 + TEXT2},
    ]  # grounding is response metadata: no part carries it back
    answer = ctx.messages[1]
    assert isinstance(answer, mw.AssistantMessage)
    request = get_api(API_NAME).build_request(
        m, ctx, resolve_options("google", api_key="k"))  # fmt: skip
    for block in answer.content[:2]:
        assert isinstance(block, mw.ServerToolCall | mw.ServerToolResult)
        assert block.raw is not None and block.raw.encode() in request.body  # byte for byte


def test_another_gemini_model_gets_the_parts_without_their_signature() -> None:
    ctx = _turn(model("gemini-3-flash-preview"))
    parts = body_of(model("gemini-2.5-flash"), ctx)["contents"][1]["parts"]
    assert parts[0] == {"executableCode": CODE}


def test_another_apis_blocks_become_text_and_opaque_items_are_dropped() -> None:
    other = mw.AssistantMessage(
        content=[
            mw.ServerToolCall(id="ws_1", name="web_search", input={"query": "paris"},
                              provider_type="web_search_call", raw='{"type":"web_search_call"}'),
            mw.ProviderItem(api="openai-responses", provider_type="compaction", data='{"x":1}'),
            mw.TextContent(text="In France."),
        ],
        api="openai-responses", provider="openai", model="gpt", stop_reason="stop",
    )  # fmt: skip
    ctx = mw.Context(messages=[mw.UserMessage(content="q"), other, mw.UserMessage(content="go")])
    assert body_of(model(), ctx)["contents"][1]["parts"] == [
        {"text": '[web_search was run by the provider with {"query":"paris"}]'},
        {"text": "In France."},
    ]


def test_a_hand_edited_raw_part_is_refused_with_its_path() -> None:
    bad = mw.AssistantMessage(
        content=[mw.ServerToolResult(tool_call_id="e", provider_type="codeExecutionResult",
                                     raw="[1]")],
        api=API_NAME, provider="google", model="gemini-2.5-flash", stop_reason="stop",
    )  # fmt: skip
    ctx = mw.Context(messages=[mw.UserMessage(content="q"), bad, mw.UserMessage(content="go")])
    with pytest.raises(mw.ConfigurationError, match=r"messages\[1\]\.content\[0\]\.raw is not"):
        body_of(model(), ctx)


# --------------------------------------------------------------------------- input


def test_documents_and_audio_are_inline_data_or_file_data() -> None:
    m = model(input=["text", "document", "audio"])
    ctx = mw.Context(messages=[mw.UserMessage(content=[
        mw.TextContent(text="Summarise"),
        mw.DocumentContent(mime_type="application/pdf", data="JVBERi0=", title="Q3 report"),
        mw.DocumentContent(mime_type="application/pdf",
                           file_id="https://generativelanguage.googleapis.com/v1beta/files/abc"),
        mw.DocumentContent(mime_type="text/html", url="https://e.example/page.html"),
        mw.AudioContent(data="UklGRg==", mime_type="audio/wav"),
    ])])  # fmt: skip
    assert body_of(m, ctx)["contents"][0]["parts"] == [
        {"text": "Summarise"},
        {"text": "Q3 report"},  # a part has no title: the title goes just before it
        {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0="}},
        {"fileData": {"mimeType": "application/pdf",
                      "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/abc"}},
        {"fileData": {"mimeType": "text/html", "fileUri": "https://e.example/page.html"}},
        {"inlineData": {"mimeType": "audio/wav", "data": "UklGRg=="}},
    ]  # fmt: skip


def test_a_tool_result_carries_documents_and_audio_after_its_response() -> None:
    m = model(input=["text", "document", "audio"])
    call = mw.AssistantMessage(content=[mw.ToolCall(id="gcall_1", name="fetch", arguments={})],
                               api=API_NAME, provider="google", model=m.id, stop_reason="tool_use")  # fmt: skip
    result = mw.ToolResultMessage(tool_call_id="gcall_1", tool_name="fetch", content=[
        mw.TextContent(text="got it"),
        mw.DocumentContent(mime_type="text/plain", data="aGk="),
        mw.AudioContent(data="SUQz", mime_type="audio/mpeg"),
    ])  # fmt: skip
    ctx = mw.Context(messages=[mw.UserMessage(content="q"), call, result])
    parts = body_of(m, ctx)["contents"][2]["parts"]
    assert parts[1:] == [{"inlineData": {"mimeType": "text/plain", "data": "aGk="}},
                         {"inlineData": {"mimeType": "audio/mpeg", "data": "SUQz"}}]  # fmt: skip


# --------------------------------------------------------------------------- mock server


def _meaning(b: Any) -> Any:
    # A block without the provider JSON text, whose shape the mock builds itself.
    if isinstance(b, mw.TextContent):
        return (b.text, [(c.kind, c.url, c.title, c.cited_text, c.start, c.end)
                         for c in b.citations])  # fmt: skip
    return msgspec.structs.replace(b, raw=None)


def test_the_mock_server_scripts_code_searches_and_citations() -> None:
    cite = mw.Citation(kind="url", url="https://a.example/paris", title="a.example",
                       cited_text=TEXT2, start=15, end=34)  # fmt: skip
    script: list[mw.types.AssistantContent] = [
        mw.ServerToolCall(id="exec_1", name="code_execution", input=CODE,
                          provider_type="executableCode"),
        mw.ServerToolResult(tool_call_id="exec_1", provider_type="codeExecutionResult",
                            result=RESULT, name="code_execution"),
        mw.TextContent(text=TEXT1 + TEXT2, citations=(cite,)),
        mw.ServerToolCall(id="google_search_2", name="google_search",
                          input={"queries": ["where is paris"]}, provider_type="groundingMetadata"),
    ]  # fmt: skip
    message = mw.AssistantMessage(content=script, api="", provider="", model="", stop_reason="stop")
    reply = Reply(message=message, piece_chars=5)
    with MockServer([reply, reply]) as server:
        m = server.model(API_NAME, "gemini-3-flash-preview")
        got = mw.complete_sync(m, mw.Context(messages=[mw.UserMessage(content="q")]))
        # The non-streaming :generateContent method answers the same script with one body.
        answer = httpx.post(f"{server.origin}/v1beta/models/gemini-3:generateContent",
                            json={"contents": []})  # fmt: skip
    assert got.error is None and got.stop_reason == "stop"
    assert [_meaning(b) for b in got.content] == [_meaning(b) for b in script]
    assert answer.status_code == 200
    whole = answer.json()
    # The one renderer the mock server uses (the server numbers its responses).
    complete = render_reply(message, API_NAME, model="gemini-3",
                            response_id=whole["responseId"]).complete  # fmt: skip
    assert complete is not None and json.loads(complete) == whole
    cand = whole["candidates"][0]
    assert cand["content"]["parts"][:2] == [{"executableCode": CODE},
                                            {"codeExecutionResult": RESULT}]  # fmt: skip
    assert cand["groundingMetadata"]["webSearchQueries"] == ["where is paris"]
    assert cand["groundingMetadata"]["groundingSupports"][0]["segment"]["startIndex"] == 15


def test_the_mock_server_renders_a_provider_tool_gemini_lacks_as_the_handoff_text() -> None:
    # As the gateway does: the call reads as text, streamed and whole alike.
    search = mw.ServerToolCall(id="srvtoolu_1", name="web_search", input={"query": "q"},
                               provider_type="server_tool_use")  # fmt: skip
    said = {"text": '[web_search was run by the provider with {"query":"q"}]'}
    message = mw.AssistantMessage(content=[search], api="", provider="", model="",
                                  stop_reason="stop")  # fmt: skip
    complete = render_reply(message, API_NAME, model="gemini-3").complete
    assert complete is not None
    assert json.loads(complete)["candidates"][0]["content"]["parts"] == [said]
    streamed = [part for _, chunk in render_frames(message, API_NAME)
                for part in chunk["candidates"][0]["content"]["parts"] if part != {"text": ""}]  # fmt: skip
    assert streamed == [said]
    (text,) = final(mw.replay(API_NAME, render_reply(message, API_NAME).pieces)).content
    assert isinstance(text, mw.TextContent) and text.text == said["text"]
    # Another API's opaque item has no text to read as: a script that holds one is refused.
    item = mw.ProviderItem(api="openai-responses", provider_type="compaction", data='{"x":1}')
    with pytest.raises(mw.ConfigurationError, match="cannot carry an item of openai-responses"):
        render_reply([item], API_NAME)
