"""Bedrock Converse beyond text and client tools: Amazon Nova's built-in tools
(``nova_grounding``, ``nova_code_interpreter``) that Bedrock runs itself, their
``toolResult`` blocks, citation deltas, and documents and audio as input.

The streams are synthetic, written from the ConverseStream API reference
(``ToolUseBlockStart.type`` ``server_tool_use``, ``ToolResultBlockStart``,
``ToolResultBlockDelta``, ``CitationsDelta``) and the Nova user guide ("Using built-in
tools"); the request shapes from the Converse reference (``DocumentBlock``,
``AudioBlock``, ``CitationsContentBlock``).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

import httpx
import msgspec
import pytest

import modelwire as mw
from eventlist import final, same_at_every_split
from modelwire._apis import get_api
from modelwire._client._options import resolve_options
from modelwire.events import BlockEvent, CitationEvent
from modelwire.testing import MockServer, Reply
from modelwire.testing._render import render_reply
from test_bedrock import START, body_of, delta, ev, model, tail

API = "bedrock-converse"
NOVA = "us.amazon.nova-premier-v1:0"
CITE = {"title": "Seattle weather", "source": "https://weather.example/sea",
        "sourceContent": [{"text": "Rain is expected"}],
        "location": {"web": {"url": "https://weather.example/sea", "domain": "weather.example"}}}  # fmt: skip
NOVA_STREAM = b"".join([
    START,
    ev("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {
        "toolUseId": "tooluse_g1", "name": "nova_grounding", "type": "server_tool_use"}}}),
    delta(0, {"toolUse": {"input": '{"query": "Seattle '}}),
    delta(0, {"toolUse": {"input": 'weather 🌧"}'}}),
    ev("contentBlockStop", {"contentBlockIndex": 0}),
    ev("contentBlockStart", {"contentBlockIndex": 1, "start": {"toolResult": {
        "toolUseId": "tooluse_g1", "type": "nova_grounding_result", "status": "success"}}}),
    delta(1, {"toolResult": [{"json": {"results": [{"url": "https://weather.example/sea"}]}}]}),
    delta(1, {"toolResult": [{"text": "1 result"}]}),
    ev("contentBlockStop", {"contentBlockIndex": 1}),
    delta(2, {"text": "Rain is expected "}),
    delta(2, {"citation": CITE}),
    delta(2, {"text": "in Seattle."}),
    ev("contentBlockStop", {"contentBlockIndex": 2}),
    tail("end_turn"),
])  # fmt: skip


def nova(**kw: Any) -> mw.Model:
    return model(model_id=NOVA, **kw)


def test_a_server_tool_use_is_a_server_tool_call_and_the_stop_is_what_bedrock_said() -> None:
    events = mw.replay(API, NOVA_STREAM)
    msg = final(events)
    assert (msg.stop_reason, msg.provider_stop_reason, msg.error) == ("stop", "end_turn", None)
    assert msg.tool_calls == ()  # nothing for the caller to run
    call, result, text = msg.content
    assert isinstance(call, mw.ServerToolCall)
    assert (call.id, call.name, call.input, call.provider_type) == (
        "tooluse_g1",
        "nova_grounding",
        {"query": "Seattle weather 🌧"},
        "server_tool_use",
    )
    # The input text goes back byte for byte, inside the block the request takes.
    assert call.raw == (
        '{"toolUse":{"toolUseId":"tooluse_g1","name":"nova_grounding",'
        '"input":{"query": "Seattle weather 🌧"},"type":"server_tool_use"}}'
    )
    assert msg.server_tool_calls == (call,)
    assert isinstance(result, mw.ServerToolResult)
    assert (result.tool_call_id, result.provider_type, result.name, result.is_error) == (
        "tooluse_g1",
        "nova_grounding_result",
        "nova_grounding",
        False,
    )
    assert result.result == [{"json": {"results": [{"url": "https://weather.example/sea"}]}},
                             {"text": "1 result"}]  # fmt: skip
    assert isinstance(text, mw.TextContent)
    assert text.text == "Rain is expected in Seattle."
    (cite,) = text.citations
    assert (cite.kind, cite.url, cite.title, cite.cited_text) == (
        "url",
        "https://weather.example/sea",
        "Seattle weather",
        "Rain is expected",
    )
    assert cite.raw is not None and json.loads(cite.raw) == CITE
    kinds = [e.type for e in events]
    assert kinds.count("block") == 2 and kinds.count("citation") == 1
    assert "tool_call_start" not in kinds
    blocks = [e for e in events if isinstance(e, BlockEvent)]
    assert [b.content_index for b in blocks] == [0, 1]
    (ce,) = [e for e in events if isinstance(e, CitationEvent)]
    assert ce.content_index == 2


def test_whole_byte_by_byte_and_every_split_agree() -> None:
    same_at_every_split(API, NOVA_STREAM)


def test_the_message_round_trips_through_json() -> None:
    msg = final(mw.replay(API, NOVA_STREAM))
    assert mw.from_json(mw.to_json(msg), mw.AssistantMessage) == msg


def test_a_server_call_beside_a_client_call_still_ends_tool_use_for_the_client_call() -> None:
    body = b"".join([
        START,
        ev("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {
            "toolUseId": "tooluse_c1", "name": "nova_code_interpreter",
            "type": "server_tool_use"}}}),
        delta(0, {"toolUse": {"input": '{"code": "print(1)"}'}}),
        ev("contentBlockStop", {"contentBlockIndex": 0}),
        ev("contentBlockStart", {"contentBlockIndex": 1, "start": {"toolResult": {
            "toolUseId": "tooluse_c1", "status": "error"}}}),
        delta(1, {"toolResult": [{"text": "Traceback"}]}),
        ev("contentBlockStop", {"contentBlockIndex": 1}),
        ev("contentBlockStart", {"contentBlockIndex": 2, "start": {"toolUse": {
            "toolUseId": "tooluse_r1", "name": "read"}}}),
        delta(2, {"toolUse": {"input": '{"path": "a"}'}}),
        ev("contentBlockStop", {"contentBlockIndex": 2}),
        tail("tool_use"),
    ])  # fmt: skip
    msg = final(mw.replay(API, body))
    assert msg.stop_reason == "tool_use"
    assert [c.name for c in msg.tool_calls] == ["read"]
    assert [c.name for c in msg.server_tool_calls] == ["nova_code_interpreter"]
    result = msg.content[1]
    assert isinstance(result, mw.ServerToolResult)
    assert (result.is_error, result.provider_type, result.result) == (
        True,
        "toolResult",
        [{"text": "Traceback"}],
    )


def test_document_citations_keep_their_span() -> None:
    cite = {"title": "Q3 report", "sourceContent": [{"text": "up 4%"}],
            "location": {"documentChar": {"documentIndex": 0, "start": 120, "end": 125}}}  # fmt: skip
    page = {"location": {"documentPage": {"documentIndex": 1, "start": 3, "end": 4}}}
    body = START + delta(0, {"text": "Sales rose."}) + delta(0, {"citation": cite}) + delta(
        0, {"citation": page}) + tail()  # fmt: skip
    (text,) = final(mw.replay(API, body)).content
    assert isinstance(text, mw.TextContent)
    a, b = text.citations
    assert (a.kind, a.document, a.start, a.end, a.title, a.cited_text) == (
        "document",
        "0",
        120,
        125,
        "Q3 report",
        "up 4%",
    )
    assert (b.kind, b.document, b.start, b.end) == ("document", "1", 3, 4)


@pytest.mark.parametrize(
    ("frame", "path"),
    [
        (delta(0, {"citation": {"location": {"documentChar": {"start": -1}}}}),
         "delta.citation.location.documentChar.start must be an integer >= 0"),
        (delta(0, {"citation": {"title": 3}}), "delta.citation.title must be a string"),
        (ev("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolResult": {
            "toolUseId": ""}}}), "start.toolResult.toolUseId must not be empty"),
        (ev("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {
            "toolUseId": "t", "name": "n", "type": "server_tool_use"}}})
         + delta(0, {"toolUse": {"input": "[1]"}}) + ev("contentBlockStop", {"contentBlockIndex": 0}),
         "delta.toolUse.input of the provider-run tool call 't' must be a JSON object"),
        (ev("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolResult": {
            "toolUseId": "t"}}}) + delta(0, {"toolResult": [{"text": 1}]})
         + ev("contentBlockStop", {"contentBlockIndex": 0}),
         r"delta.toolResult\[0\].text must be a string"),
    ],
)  # fmt: skip
def test_malformed_new_blocks_name_their_field(frame: bytes, path: str) -> None:
    msg = final(mw.replay(API, START + frame + tail()))
    assert msg.error is not None and msg.error.kind == "malformed_chunk"
    assert re.search(path, msg.error.message), msg.error.message


def test_a_stream_ending_inside_a_server_block_is_truncated() -> None:
    body = START + ev("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {
        "toolUseId": "t", "name": "nova_grounding", "type": "server_tool_use"}}}) + tail()  # fmt: skip
    msg = final(mw.replay(API, body))
    assert msg.error is not None and msg.error.kind == "truncated_stream"
    assert "provider-run tool block 0" in msg.error.message


# --------------------------------------------------------------------------- replay


def _answer(model_: mw.Model) -> mw.AssistantMessage:
    m = final(mw.replay(API, NOVA_STREAM, model=model_))
    return m


def test_replay_to_bedrock_sends_every_block_back_as_received() -> None:
    m = nova()
    answer = _answer(m)
    ctx = mw.Context(messages=[mw.UserMessage(content="Weather?"), answer,
                               mw.UserMessage(content="Thanks")])  # fmt: skip
    body = body_of(ctx, m)
    sent = body["messages"][1]["content"]
    call, result, _ = answer.content
    assert isinstance(call, mw.ServerToolCall) and isinstance(result, mw.ServerToolResult)
    assert call.raw is not None and result.raw is not None
    assert sent[0] == json.loads(call.raw)
    assert sent[1] == json.loads(result.raw)
    assert sent[1] == {"toolResult": {"toolUseId": "tooluse_g1", "content": [
        {"json": {"results": [{"url": "https://weather.example/sea"}]}}, {"text": "1 result"}],
        "status": "success", "type": "nova_grounding_result"}}  # fmt: skip
    assert sent[2] == {"citationsContent": {"content": [{"text": "Rain is expected in Seattle."}],
                                            "citations": [CITE]}}  # fmt: skip
    # Byte for byte: the raw JSON text is inside the body as it was received.
    request = get_api(API).build_request(m, ctx, resolve_options("test", api_key="k"))
    assert call.raw.encode() in request.body and result.raw.encode() in request.body
    assert cite_raw(answer).encode() in request.body


def cite_raw(answer: mw.AssistantMessage) -> str:
    text = answer.content[2]
    assert isinstance(text, mw.TextContent) and text.citations[0].raw is not None
    return text.citations[0].raw


def test_another_apis_server_blocks_become_text_and_opaque_items_are_dropped() -> None:
    other = mw.AssistantMessage(
        content=[
            mw.ServerToolCall(id="srvtoolu_1", name="web_search", input={"query": "sky"},
                              provider_type="server_tool_use", raw='{"type":"server_tool_use"}'),
            mw.ServerToolResult(tool_call_id="srvtoolu_1", provider_type="web_search_tool_result",
                                result=[{"url": "https://e.com"}], name="web_search"),
            mw.ProviderItem(api="anthropic-messages", provider_type="compaction", data='{"a":1}'),
            mw.TextContent(text="Blue.", citations=(mw.Citation(kind="url", url="https://e.com",
                                                                raw='{"type":"x"}'),)),
        ],
        api="anthropic-messages", provider="anthropic", model="claude", stop_reason="stop",
    )  # fmt: skip
    ctx = mw.Context(messages=[mw.UserMessage(content="q"), other, mw.UserMessage(content="go")])
    sent = body_of(ctx, nova())["messages"][1]["content"]
    assert sent == [
        {"text": '[web_search was run by the provider with {"query":"sky"}]'},
        {"text": '[web_search result: [{"url":"https://e.com"}]]'},
        {"text": "Blue."},
    ]


def test_a_hand_edited_raw_that_is_not_json_is_refused_with_its_path() -> None:
    bad = mw.AssistantMessage(
        content=[mw.ServerToolCall(id="t", name="nova_grounding", input={},
                                   provider_type="server_tool_use", raw="{not json")],
        api=API, provider="amazon-bedrock", model=NOVA, stop_reason="stop",
    )  # fmt: skip
    ctx = mw.Context(messages=[mw.UserMessage(content="q"), bad, mw.UserMessage(content="go")])
    with pytest.raises(mw.ConfigurationError, match=r"messages\[1\]\.content\[0\]\.raw is not"):
        body_of(ctx, nova())


# --------------------------------------------------------------------------- input

PDF = mw.DocumentContent(mime_type="application/pdf", data="JVBERi0=", title="Q3: report/final.pdf")


def test_documents_and_audio_are_sent_with_the_names_bedrock_allows() -> None:
    m = nova(input=["text", "document", "audio"])
    ctx = mw.Context(messages=[
        mw.UserMessage(content=[
            mw.TextContent(text="Compare"),
            PDF,
            mw.DocumentContent(mime_type="text/plain", data="aGk=", title="Q3 report final pdf"),
            mw.DocumentContent(mime_type="text/markdown", data="aGk="),
            mw.DocumentContent(mime_type="application/pdf", file_id="s3://bucket/a.pdf",
                               title="x" * 300),
            mw.AudioContent(data="UklGRg==", mime_type="audio/wav"),
        ]),
    ])  # fmt: skip
    content = body_of(ctx, m)["messages"][0]["content"]
    assert content[1] == {"document": {"format": "pdf", "name": "Q3 report final pdf",
                                       "source": {"bytes": "JVBERi0="}}}  # fmt: skip
    # Bedrock refuses two documents of one name: the second gets a number.
    assert content[2]["document"]["name"] == "Q3 report final pdf (2)"
    assert content[3]["document"] == {"format": "md", "name": "document 3",
                                      "source": {"bytes": "aGk="}}  # fmt: skip
    assert content[4]["document"]["source"] == {"s3Location": {"uri": "s3://bucket/a.pdf"}}
    assert content[4]["document"]["name"] == "x" * 200
    assert content[5] == {"audio": {"format": "wav", "source": {"bytes": "UklGRg=="}}}


def test_a_document_in_a_tool_result_and_audio_there_is_refused() -> None:
    m = nova(input=["text", "document", "audio"])
    call = mw.AssistantMessage(content=[mw.ToolCall(id="tooluse_1", name="fetch", arguments={})],
                               api=API, provider="amazon-bedrock", model=NOVA,
                               stop_reason="tool_use")  # fmt: skip

    def ctx(block: mw.DocumentContent | mw.AudioContent) -> mw.Context:
        result = mw.ToolResultMessage(tool_call_id="tooluse_1", tool_name="fetch",
                                      content=[mw.TextContent(text="here"), block])  # fmt: skip
        return mw.Context(messages=[mw.UserMessage(content="q"), call, result])

    sent = body_of(ctx(PDF), m)["messages"][2]["content"][0]["toolResult"]["content"]
    assert sent[1]["document"]["format"] == "pdf"
    with pytest.raises(mw.ConfigurationError, match=r"messages\[2\]\.content\[1\] is audio"):
        body_of(ctx(mw.AudioContent(data="UklGRg==", mime_type="audio/wav")), m)


@pytest.mark.parametrize(
    ("block", "says"),
    [
        (mw.DocumentContent(mime_type="application/zip", data="UEs="), "application/zip"),
        (mw.DocumentContent(mime_type="application/pdf", url="https://e.com/a.pdf"),
         "S3 location"),
        (mw.AudioContent(data="eA==", mime_type="audio/x-unknown"), "audio/x-unknown"),
    ],
)  # fmt: skip
def test_input_bedrock_cannot_take_is_refused_with_its_path(block: Any, says: str) -> None:
    m = nova(input=["text", "document", "audio"])
    ctx = mw.Context(messages=[mw.UserMessage(content=[block])])
    with pytest.raises(mw.ConfigurationError, match=r"messages\[0\]\.content\[0\]") as info:
        body_of(ctx, m)
    assert says in str(info.value)


# --------------------------------------------------------------------------- mock server


def _unraw(value: Any) -> Any:
    # What a block means, without the provider's JSON text (whose spacing the mock's own).
    if isinstance(value, mw.TextContent):
        return (value.text, [msgspec.structs.replace(c, raw=None) for c in value.citations],
                [json.loads(c.raw or "null") for c in value.citations])  # fmt: skip
    return msgspec.structs.replace(value, raw=None), json.loads(getattr(value, "raw", "null"))


def test_the_mock_server_scripts_server_tools_and_citations() -> None:
    scripted = final(mw.replay(API, NOVA_STREAM))
    message = mw.AssistantMessage(content=scripted.content, api="", provider="", model="",
                                  stop_reason="stop")  # fmt: skip
    reply = Reply(message=message)
    ctx = mw.Context(messages=[mw.UserMessage(content="q")])
    with MockServer([reply, reply]) as server:
        m = server.model(API, NOVA)
        streamed = mw.complete_sync(m, ctx)
        # The non-streaming /converse endpoint answers the same script with one body.
        answer = httpx.post(f"{server.origin}/model/{quote(NOVA, safe='')}/converse",
                            json={"messages": []})  # fmt: skip
    assert streamed.error is None and streamed.stop_reason == "stop"
    assert [_unraw(b) for b in streamed.content] == [_unraw(b) for b in scripted.content]
    # That body holds the same blocks, in the request's shapes.
    assert answer.status_code == 200
    whole = answer.json()
    # The one renderer the mock server uses (the Converse body names no model or id).
    complete = render_reply(message, API, model=NOVA).complete
    assert complete is not None and json.loads(complete) == whole
    assert whole["stopReason"] == "end_turn"
    call, result, text = whole["output"]["message"]["content"]
    assert call == {"toolUse": {"toolUseId": "tooluse_g1", "name": "nova_grounding",
                                "input": {"query": "Seattle weather 🌧"}, "type": "server_tool_use"}}  # fmt: skip
    assert result["toolResult"]["status"] == "success"
    assert result["toolResult"]["content"][1] == {"text": "1 result"}
    assert text == {"citationsContent": {"content": [{"text": "Rain is expected in Seattle."}],
                                         "citations": [CITE]}}  # fmt: skip
