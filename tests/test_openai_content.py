"""OpenAI Responses and Chat beyond text and client calls: provider-run tools, opaque
items, citations, documents and audio, provider error lines, leaked tool calls.

The synthetic streams are written here from the API references (Responses "Output
items" and "Streaming events"; Chat ``delta.annotations``; Perplexity's chunk fields;
llama.cpp's ``error:`` line). Expectations come from the JSON written here, not from
the code under test; every stream is decoded whole, byte by byte and at every split.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

import modelwire as mw
from modelwire._apis._leaked import LeakedCall, LeakedText, split_leaked
from modelwire._apis.openai_chat import ChatCompat, encode_messages
from modelwire._apis.openai_responses import encode_input
from modelwire._client._options import resolve_options
from modelwire._client._replay import pipeline_for, replay
from modelwire._wire.sse import SSEDecoder, SSEFraming
from modelwire.events import Replay
from modelwire.types import Context, Model, ToolDefinition, ToolResultMessage, UserMessage

RESP = Model(id="gpt-5", api="openai-responses", provider="openai",
             base_url="https://api.openai.com/v1", reasoning=True)  # fmt: skip
Q = Context(messages=[UserMessage(content="q")])
CHAT = Model(id="m", api="openai-chat", provider="local", base_url="http://127.0.0.1:8080/v1")


def sse(events: list[str], named: bool = True) -> bytes:
    """Each payload as an SSE event (``event:`` line from its type when ``named``)."""
    out = []
    for data in events:
        t = json.loads(data).get("type") if data.startswith("{") else None
        head = f"event: {t}\n" if named and t else ""
        out.append(f"{head}data: {data}\n\n")
    return "".join(out).encode()


def norm(events: list[mw.Event]) -> list[dict[str, Any]]:
    out = []
    for e in events:
        d = e.to_dict()
        if "message" in d:
            d["message"]["timestamp"] = 0
        out.append(d)
    return out


def check_splits(api: str, raw: bytes, model: Model | None = None) -> mw.AssistantMessage:
    """The same events whole, byte by byte and at every split point; the final message."""
    whole = replay(api, raw, model=model)
    want = norm(whole)
    assert norm(replay(api, [raw[i : i + 1] for i in range(len(raw))], model=model)) == want
    for n in range(len(raw) + 1):
        assert norm(replay(api, [raw[:n], raw[n:]], model=model)) == want, n
    msg = whole.message
    assert msg is not None
    return msg


# --------------------------------------------------------------------------- Responses

RS = '{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"gAAA"}'
WS = (
    '{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search",'
    '"query":"paris weather","sources":[{"type":"url","url":"https://weather.example/paris"}]}}'
)
FS = (
    '{"id":"fs_1","type":"file_search_call","status":"completed","queries":["capital"],'
    '"results":[{"file_id":"file-1","filename":"geo.txt","score":0.9,"text":"Paris"}]}'
)
CI = (
    '{"id":"ci_1","type":"code_interpreter_call","status":"completed","code":"print(2+2)",'
    '"container_id":"cntr_1","outputs":[{"type":"logs","logs":"4\\n"}]}'
)
IG = '{"id":"ig_1","type":"image_generation_call","status":"completed","result":"iVBORw0K","revised_prompt":"a cat"}'
ML = (
    '{"id":"mcpl_1","type":"mcp_list_tools","server_label":"docs","tools":[{"name":"search",'
    '"input_schema":{"type":"object"}}],"error":null}'
)
MC = (
    '{"id":"mcp_1","type":"mcp_call","server_label":"docs","name":"search",'
    '"arguments":"{\\"q\\":\\"x\\"}","output":null,"error":"server timed out","status":"failed"}'
)
TS = '{"id":"tsc_1","type":"tool_search_call","call_id":"tsc_1","execution":"server","arguments":{"query":"weather"},"status":"completed"}'
TO = '{"id":"tso_1","type":"tool_search_output","call_id":"tsc_1","execution":"server","tools":[{"type":"function","name":"w"}],"status":"completed"}'
CP = '{"id":"cmp_1","type":"compaction","encrypted_content":"zzz"}'
URL_NOTE = '{"type":"url_citation","url":"https://weather.example/paris","title":"Paris weather","start_index":0,"end_index":5}'
FILE_NOTE = '{"type":"file_citation","file_id":"file-1","filename":"geo.txt","index":12}'
CFILE_NOTE = '{"type":"container_file_citation","container_id":"cntr_1","file_id":"cfile_1","filename":"plot.png","start_index":6,"end_index":10}'
PATH_NOTE = '{"type":"file_path","file_id":"file-2","index":3}'
TEXT = "Sunny. Paris is the capital."
MSG = ('{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":'
       f'"output_text","text":"{TEXT}","annotations":[{URL_NOTE},{FILE_NOTE},{CFILE_NOTE},{PATH_NOTE}]}}]}}')  # fmt: skip
SERVER_ITEMS = [RS, WS, FS, CI, IG, ML, MC, TS, TO, CP]


def responses_stream(items: list[str], *, created_model: str | None = "gpt-5-2025") -> bytes:
    """created/in_progress, each item added then done (annotations of the message
    streamed first: the URL one only, the rest only in the done item), completed."""
    model = json.dumps(created_model)
    ev = [f'{{"type":"response.created","response":{{"id":"resp_1","model":{model},"status":"in_progress"}}}}',
          f'{{"type":"response.in_progress","response":{{"id":"resp_1","model":{model}}}}}']  # fmt: skip
    for oi, item in enumerate(items):
        obj = json.loads(item)
        ev.append(
            f'{{"type":"response.output_item.added","output_index":{oi},"item":{{"id":"{obj["id"]}","type":"{obj["type"]}"}}}}'
        )
        if obj["type"] == "message":
            ev.append(
                f'{{"type":"response.output_text.delta","output_index":{oi},"item_id":"msg_1","content_index":0,"delta":"Sunny. "}}'
            )
            ev.append(
                f'{{"type":"response.output_text.annotation.added","output_index":{oi},"item_id":"msg_1","content_index":0,"annotation_index":0,"annotation":{URL_NOTE}}}'
            )
            ev.append(
                f'{{"type":"response.output_text.delta","output_index":{oi},"item_id":"msg_1","content_index":0,"delta":"Paris is the capital."}}'
            )
        if obj["type"] == "web_search_call":
            ev.append(
                f'{{"type":"response.web_search_call.searching","output_index":{oi},"item_id":"ws_1"}}'
            )
        if obj["type"] == "code_interpreter_call":
            ev.append(
                f'{{"type":"response.code_interpreter_call_code.delta","output_index":{oi},"item_id":"ci_1","delta":"print"}}'
            )
        ev.append(f'{{"type":"response.output_item.done","output_index":{oi},"item":{item}}}')
    ev.append('{"type":"response.completed","response":{"id":"resp_1","model":"gpt-5-2025","status":"completed",'
              '"usage":{"input_tokens":10,"output_tokens":5}}}')  # fmt: skip
    return sse(ev)


def test_provider_run_items_become_blocks_in_place_at_every_split() -> None:
    msg = check_splits("openai-responses", responses_stream([*SERVER_ITEMS, MSG]), RESP)
    # Nothing was for the client to run: the response ends as the provider said.
    assert (msg.stop_reason, msg.error, msg.tool_calls) == ("stop", None, ())
    kinds = [b.type for b in msg.content]
    # The image generation's result is the image itself (an ImageContent).
    assert kinds == ["thinking"] + ["server_tool_call", "server_tool_result"] * 3 + [
        "server_tool_call", "image"] + ["server_tool_call", "server_tool_result"] * 2 + [
        "server_tool_call", "server_tool_result", "provider_item", "text"]  # fmt: skip
    calls = [b for b in msg.content if isinstance(b, mw.ServerToolCall)]
    results = [b for b in msg.content if isinstance(b, mw.ServerToolResult)]
    assert [(c.id, c.name, c.provider_type) for c in calls] == [
        ("ws_1", "web_search", "web_search_call"), ("fs_1", "file_search", "file_search_call"),
        ("ci_1", "code_interpreter", "code_interpreter_call"),
        ("ig_1", "image_generation", "image_generation_call"),
        ("mcpl_1", "mcp_list_tools", "mcp_list_tools"), ("mcp_1", "search", "mcp_call"),
        ("tsc_1", "tool_search", "tool_search_call")]  # fmt: skip
    # Each call keeps its item exactly as received, and what it was run with.
    assert [c.raw for c in calls] == [WS, FS, CI, IG, ML, MC, TS]
    assert calls[0].input == {"type": "search", "query": "paris weather"}
    assert calls[1].input == {"queries": ["capital"]}
    assert calls[2].input == {"code": "print(2+2)", "container_id": "cntr_1"}
    assert calls[5].input == {"q": "x"}
    assert calls[6].input == {"query": "weather"}
    by_id = {r.tool_call_id: r for r in results}
    assert by_id["ws_1"].result == json.loads(WS)["action"]["sources"]
    assert by_id["fs_1"].result == json.loads(FS)["results"]
    assert by_id["ci_1"].result == json.loads(CI)["outputs"]
    (image,) = [b for b in msg.content if isinstance(b, mw.ImageContent)]
    assert (image.data, image.mime_type, image.signature) == ("iVBORw0K", "image/png", "ig_1")
    assert by_id["mcpl_1"].result == json.loads(ML)["tools"]
    assert by_id["mcp_1"].is_error and by_id["mcp_1"].result == {"error": "server timed out",
                                                                 "output": None}  # fmt: skip
    assert not any(r.is_error for r in results if r.tool_call_id != "mcp_1")
    # tool_search_output is its own item: a result with its raw, answering the call.
    assert (by_id["tsc_1"].raw, by_id["tsc_1"].result) == (TO, [{"type": "function", "name": "w"}])
    assert [r.raw for r in results if r.tool_call_id != "tsc_1"] == [None] * 5
    (item,) = [b for b in msg.content if isinstance(b, mw.ProviderItem)]
    assert (item.api, item.provider_type, item.data) == ("openai-responses", "compaction", CP)
    text = msg.content[-1]
    assert isinstance(text, mw.TextContent) and text.text == TEXT
    # The streamed citation once, then those only the done item had, in order.
    assert [c.raw for c in text.citations] == [URL_NOTE, FILE_NOTE, CFILE_NOTE, PATH_NOTE]
    url, file, cfile, path = text.citations
    assert (url.kind, url.url, url.title, url.start, url.end) == (
        "url", "https://weather.example/paris", "Paris weather", 0, 5)  # fmt: skip
    assert (file.kind, file.document, file.title, file.start) == ("file", "file-1", "geo.txt", 12)
    assert (cfile.kind, cfile.document, cfile.start, cfile.end) == ("file", "cfile_1", 6, 10)
    assert (path.kind, path.document, path.start) == ("file", "file-2", 3)
    assert mw.from_json(mw.to_json(msg), mw.AssistantMessage) == msg


def test_block_and_citation_events_come_in_stream_order() -> None:
    events = replay("openai-responses", responses_stream([WS, MSG]))
    types = [e.type for e in events]
    assert types[:3] == ["start", "block", "block"]
    assert types.index("citation") > types.index("text_delta")
    assert types.count("citation") == 4
    assert types[-2:] == ["text_end", "done"]


def test_unknown_item_types_are_kept_never_dropped() -> None:
    future = '{"id":"x_1","type":"brand_new_call","status":"completed","payload":{"a":[1,2]}}'
    msg = check_splits("openai-responses", responses_stream([future]))
    assert msg.content == (
        mw.ProviderItem(api="openai-responses", provider_type="brand_new_call", data=future),
    )
    assert msg.stop_reason == "stop"


def test_response_model_read_from_completed_when_created_lacks_it() -> None:
    # llama.cpp names the model only in response.completed.
    msg = check_splits("openai-responses", responses_stream([MSG], created_model=None))
    assert (msg.response_id, msg.response_model) == ("resp_1", "gpt-5-2025")


def _turn(items: list[str], model: Model = RESP) -> mw.AssistantMessage:
    msg = replay("openai-responses", responses_stream(items), model=model).message
    assert msg is not None
    return msg


def test_items_replay_byte_for_byte_to_the_same_model() -> None:
    turn = _turn([*SERVER_ITEMS, MSG])
    ctx = Context(messages=[UserMessage(content="weather?"), turn, UserMessage(content="thanks")])
    items = encode_input(RESP, ctx)
    raws = [bytes(i).decode() for i in items if isinstance(i, msgspec.Raw)]
    # Every item once, as received (a result without raw of its own rode in its call).
    assert raws == [RS, WS, FS, CI, IG, ML, MC, TS, TO, CP]
    body = API_BODY(ctx)
    for raw in raws:
        assert raw.encode() in body
    (message,) = [i for i in items if isinstance(i, dict) and i.get("id") == "msg_1"]
    notes = message["content"][0]["annotations"]
    assert [bytes(n).decode() for n in notes] == [URL_NOTE, FILE_NOTE, CFILE_NOTE, PATH_NOTE]
    assert (
        b'"annotations":[' + ",".join([URL_NOTE, FILE_NOTE, CFILE_NOTE, PATH_NOTE]).encode() in body
    )


def API_BODY(ctx: Context, model: Model = RESP) -> bytes:
    from modelwire._apis.openai_responses import API

    return API.build_request(model, ctx, resolve_options("openai", api_key="sk-test")).body


def test_items_degrade_to_text_for_another_model() -> None:
    turn = _turn([WS, MC, CP, MSG])
    other = msgspec.structs.replace(RESP, id="gpt-4.1")
    ctx = Context(messages=[UserMessage(content="q"), turn])
    items = encode_input(other, ctx)
    assert not any(isinstance(i, msgspec.Raw) for i in items)
    texts = [i["content"] for i in items if i.get("role") == "assistant"]
    assert texts[0] == (
        '[web_search was run by the provider with {"type":"search","query":"paris weather"}]'
    )
    assert texts[1] == '[web_search result: [{"type":"url","url":"https://weather.example/paris"}]]'
    assert texts[2].startswith('[search was run by the provider with {"q":"x"}]')
    assert texts[3] == '[search failed: {"error":"server timed out","output":null}]'
    # The opaque compaction item is left out; the text carries its sources, numbered.
    assert texts[4] == (
        f"{TEXT}\n\nSources:\n[1] Paris weather <https://weather.example/paris>\n"
        "[2] geo.txt <file file-1>\n[3] plot.png <file cfile_1>\n[4] <file file-2>"
    )
    assert len(texts) == 5


def test_agent_executes_no_provider_run_item() -> None:
    ran: list[Any] = []

    def run_it(args: Any, ctx: Any) -> str:
        ran.append(args)
        return "x"

    tool = mw.Tool(name="web_search", description="d", parameters={"type": "object"},
                   execute=run_it)  # fmt: skip
    turn = _turn([WS, CI, MSG])
    with mw.testing.MockServer([turn]) as server:
        model = server.model("openai-responses")
        run = mw.Agent(model, tools=[tool]).run_sync("weather?")
    assert ran == []
    assert run.final.stop_reason == "stop"
    assert [b.type for b in run.final.content] == [b.type for b in turn.content]
    assert [m.role for m in run.messages] == ["user", "assistant"]


def test_mock_server_scripts_each_responses_block() -> None:
    turn = _turn([*SERVER_ITEMS, MSG])
    with mw.testing.MockServer([turn]) as server:
        got = mw.complete_sync(server.model("openai-responses"), Q)
    assert [b.type for b in got.content] == [b.type for b in turn.content]
    for a, b in zip(got.content, turn.content, strict=True):
        if isinstance(b, mw.ServerToolCall):
            assert isinstance(a, mw.ServerToolCall)
            assert json.loads(a.raw or "") == json.loads(b.raw or "")
            assert (a.id, a.name, a.input) == (b.id, b.name, b.input)
        elif isinstance(b, mw.ServerToolResult):
            assert isinstance(a, mw.ServerToolResult)
            assert (a.tool_call_id, a.result, a.is_error) == (b.tool_call_id, b.result, b.is_error)
        elif isinstance(b, mw.ProviderItem):
            assert isinstance(a, mw.ProviderItem) and a.value == b.value
        elif isinstance(b, mw.ImageContent):
            assert isinstance(a, mw.ImageContent) and a == b
        elif isinstance(b, mw.TextContent):
            assert isinstance(a, mw.TextContent) and a.text == b.text
            assert [json.loads(c.raw or "") for c in a.citations] == [
                json.loads(c.raw or "") for c in b.citations]  # fmt: skip


def test_mock_builds_an_item_for_blocks_without_raw() -> None:
    call = mw.ServerToolCall(id="ws_9", name="web_search", input={"type": "search", "query": "q"},
                             provider_type="web_search_call")  # fmt: skip
    result = mw.ServerToolResult(tool_call_id="ws_9", provider_type="web_search_call",
                                 result=[{"type": "url", "url": "https://e.com"}])  # fmt: skip
    cite = mw.Citation(kind="url", url="https://e.com", title="E", start=0, end=2)
    script = mw.AssistantMessage(content=[call, result, mw.TextContent(text="Hi", citations=(cite,))],
                                 api="openai-responses", provider="p", model="m",
                                 stop_reason="stop")  # fmt: skip
    with mw.testing.MockServer([script]) as server:
        got = mw.complete_sync(server.model("openai-responses"), Q)
    a, b, c = got.content
    assert isinstance(a, mw.ServerToolCall) and (a.id, a.input) == ("ws_9", call.input)
    assert isinstance(b, mw.ServerToolResult) and b.result == result.result
    assert isinstance(c, mw.TextContent)
    assert [(x.url, x.title, x.start, x.end) for x in c.citations] == [("https://e.com", "E", 0, 2)]


def _doc_ctx(*blocks: Any) -> Context:
    return Context(messages=[UserMessage(content=[mw.TextContent(text="read"), *blocks])])


DOCS = (
    mw.DocumentContent(mime_type="application/pdf", data="JVBERi0=", title="paper.pdf"),
    mw.DocumentContent(mime_type="application/pdf", url="https://e.com/a.pdf"),
    mw.DocumentContent(mime_type="application/pdf", file_id="file-abc"),
    mw.DocumentContent(mime_type="text/plain", data="aGk="),
)
AUDIO = mw.AudioContent(data="UklGRg==", mime_type="audio/wav")
READER = msgspec.structs.replace(RESP, input=("text", "image", "document", "audio"))


def test_responses_documents_and_audio_in_user_messages() -> None:
    (item,) = encode_input(READER, _doc_ctx(*DOCS, AUDIO))
    assert item["content"] == [
        {"type": "input_text", "text": "read"},
        {"type": "input_file", "filename": "paper.pdf", "file_data": "data:application/pdf;base64,JVBERi0="},
        {"type": "input_file", "file_url": "https://e.com/a.pdf"},
        {"type": "input_file", "file_id": "file-abc"},
        {"type": "input_file", "filename": "document.txt", "file_data": "data:text/plain;base64,aGk="},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
    ]  # fmt: skip


def test_responses_tool_result_document_and_refused_audio() -> None:
    call = mw.ToolCall(id="call_1", name="read", arguments={})
    asst = mw.AssistantMessage(content=[call], api="openai-responses", provider="openai",
                               model="gpt-5", stop_reason="tool_use")  # fmt: skip
    res = ToolResultMessage(tool_call_id="call_1", tool_name="read",
                            content=[mw.TextContent(text="here"), DOCS[2]])  # fmt: skip
    items = encode_input(READER, Context(messages=[UserMessage(content="q"), asst, res]))
    assert items[-1] == {"type": "function_call_output", "call_id": "call_1", "output": [
        {"type": "input_text", "text": "here"}, {"type": "input_file", "file_id": "file-abc"}]}  # fmt: skip
    bad = msgspec.structs.replace(res, content=[AUDIO])
    with pytest.raises(
        mw.ConfigurationError, match=r"messages\[2\]\.content\[0\] is a audio block"
    ):
        encode_input(READER, Context(messages=[UserMessage(content="q"), asst, bad]))


def test_unsupported_audio_format_is_refused() -> None:
    ogg = mw.AudioContent(data="T2dnUw==", mime_type="audio/ogg")
    with pytest.raises(mw.ConfigurationError, match="wav or mp3"):
        encode_input(READER, _doc_ctx(ogg))


# --------------------------------------------------------------------------- errors


LLAMA_ERROR = ('error: {"code":500,"message":"failed to decode the batch, n_batch = 2048, '
               'ret = 1; try increasing context size","type":"server_error"}\n\n')  # fmt: skip


def test_chat_stream_ending_with_a_llama_cpp_error_line() -> None:
    head = sse(['{"id":"c1","model":"qwen","choices":[{"index":0,"delta":{"content":"Hel"}}]}'])
    msg = check_splits("openai-chat", head + LLAMA_ERROR.encode())
    assert msg.stop_reason == "error" and msg.error is not None
    assert msg.error.kind == "context_overflow"
    assert "failed to decode the batch" in msg.error.message
    assert msg.error.status == 500
    assert msg.text == "Hel"  # what came before is kept


def test_responses_stream_ending_with_an_error_line() -> None:
    head = sse(['{"type":"response.created","response":{"id":"resp_1"}}'])
    line = 'error: {"code":503,"message":"Loading model","type":"unavailable_error"}\n\n'
    msg = check_splits("openai-responses", head + line.encode())
    assert msg.error is not None and msg.error.message.startswith("Loading model")
    assert msg.error.kind == "overloaded"


def test_error_line_is_an_event_for_the_framing_only() -> None:
    data = b'error: {"message":"x"}\n\ndata: 1\n\n'
    # The public decoder keeps to WHATWG: an unknown field, ignored.
    assert [(e.event, e.data) for e in SSEDecoder().feed(data)] == [("message", "1")]
    frames = SSEFraming().feed(data)
    assert [(f.event, f.data) for f in frames] == [("error", b'{"message":"x"}'), ("message", b"1")]


# --------------------------------------------------------------------------- Chat


def chat_chunk(delta: dict[str, Any], finish: str | None = None, **top: Any) -> str:
    return json.dumps({"id": "gen-1", "model": "m", **top,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})  # fmt: skip


OR_NOTE = {"type": "url_citation", "url_citation": {"url": "https://a.example", "title": "A",
           "content": "quoted", "start_index": 0, "end_index": 4}}  # fmt: skip


def test_chat_delta_annotations_become_citations_once() -> None:
    raw = sse([chat_chunk({"content": "Blue [a]"}),
               chat_chunk({"annotations": [OR_NOTE]}),
               chat_chunk({"content": "", "annotations": [OR_NOTE]}),  # repeated: cited once
               chat_chunk({}, "stop"), "[DONE]"], named=False)  # fmt: skip
    msg = check_splits("openai-chat", raw)
    (text,) = msg.content
    assert isinstance(text, mw.TextContent) and text.text == "Blue [a]"
    (c,) = text.citations
    assert (c.kind, c.url, c.title, c.cited_text, c.start, c.end) == (
        "url", "https://a.example", "A", "quoted", 0, 4)  # fmt: skip
    assert json.loads(c.raw or "") == OR_NOTE


def test_perplexity_sources_on_every_chunk_are_cited_once_in_order() -> None:
    results = [{"title": "One", "url": "https://1.example", "date": "2025-01-01"},
               {"title": "Two", "url": "https://2.example"}]  # fmt: skip
    urls = [r["url"] for r in results]
    raw = sse([chat_chunk({"content": "Paris [1]"}, citations=urls[:1], search_results=results[:1]),
               chat_chunk({"content": "[2]."}, citations=urls, search_results=results),
               chat_chunk({}, "stop", citations=urls, search_results=results),
               "[DONE]"], named=False)  # fmt: skip
    msg = check_splits("openai-chat", raw)
    (text,) = msg.content
    assert isinstance(text, mw.TextContent)
    assert [(c.url, c.title) for c in text.citations] == [(r["url"], r["title"]) for r in results]
    assert [json.loads(c.raw or "") for c in text.citations] == results
    only_urls = sse([chat_chunk({"content": "x"}, citations=urls), chat_chunk({}, "stop"), "[DONE]"],
                    named=False)  # fmt: skip
    (t2,) = check_splits("openai-chat", only_urls).content
    assert isinstance(t2, mw.TextContent)
    assert [(c.url, c.title, c.raw) for c in t2.citations] == [
        (u, None, json.dumps(u)) for u in urls
    ]


def test_chat_mock_scripts_citations() -> None:
    cite = mw.Citation(kind="url", url="https://a.example", title="A", start=0, end=4)
    script = mw.AssistantMessage(content=[mw.TextContent(text="Blue", citations=(cite,))],
                                 api="openai-chat", provider="p", model="m", stop_reason="stop")  # fmt: skip
    with mw.testing.MockServer([script]) as server:
        got = mw.complete_sync(server.model("openai-chat"), Q)
    (text,) = got.content
    assert isinstance(text, mw.TextContent)
    assert [(c.url, c.title, c.start, c.end) for c in text.citations] == [
        ("https://a.example", "A", 0, 4)
    ]


CHAT_READER = msgspec.structs.replace(CHAT, input=("text", "image", "document", "audio"))


def test_chat_documents_audio_and_tool_result_attachments() -> None:
    ctx = _doc_ctx(DOCS[0], DOCS[2], AUDIO)
    (user,) = encode_messages(ctx, ChatCompat(), CHAT_READER)
    assert user["content"][1:] == [
        {"type": "file", "file": {"filename": "paper.pdf", "file_data": "data:application/pdf;base64,JVBERi0="}},
        {"type": "file", "file": {"file_id": "file-abc"}},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
    ]  # fmt: skip
    with pytest.raises(mw.ConfigurationError, match="document given by URL"):
        encode_messages(_doc_ctx(DOCS[1]), ChatCompat(), CHAT_READER)
    calls = [
        mw.ToolCall(id="c1", name="shot", arguments={}),
        mw.ToolCall(id="c2", name="read", arguments={}),
    ]
    asst = mw.AssistantMessage(content=calls, api="openai-chat", provider="local", model="m",
                               stop_reason="tool_use")  # fmt: skip
    img = mw.ImageContent(data="iVBO", mime_type="image/png")
    r1 = ToolResultMessage(
        tool_call_id="c1", tool_name="shot", content=[mw.TextContent(text="done"), img]
    )
    r2 = ToolResultMessage(tool_call_id="c2", tool_name="read", content="plain")
    msgs = encode_messages(Context(messages=[UserMessage(content="q"), asst, r1, r2]), ChatCompat(),
                           CHAT_READER)  # fmt: skip
    # Both tool messages right after the assistant turn, then the image in a user message.
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "tool", "user"]
    assert msgs[2]["content"] == "done"  # no note replaces the image
    assert msgs[4]["content"] == [
        {"type": "text", "text": "[attached to the result of shot (call c1)]"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
    ]


def test_chat_replays_other_apis_blocks_as_text() -> None:
    turn = _turn([WS, CP, MSG])
    msgs = encode_messages(Context(messages=[UserMessage(content="q"), turn]), ChatCompat(), CHAT)
    content = msgs[1]["content"]
    assert content.startswith(
        '[web_search was run by the provider with {"type":"search","query":"paris weather"}]\n'
    )
    assert "[web_search result: " in content and "compaction" not in content
    assert content.endswith("[4] <file file-2>") and TEXT in content


# --------------------------------------------------------------------------- leaked calls

NAMES = frozenset({"get_weather"})
HERMES = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (HERMES, [LeakedCall("get_weather", '{"city":"Paris"}')]),
        ("Let me check.\n" + HERMES, ["Let me check.\n", LeakedCall("get_weather", '{"city":"Paris"}')]),
        ('[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Rome"}}]',
         [LeakedCall("get_weather", '{"city":"Rome"}')]),
        ('[TOOL_CALLS]get_weather[ARGS]{"city": "Oslo"}', [LeakedCall("get_weather", '{"city":"Oslo"}')]),
        ('<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Nice\\"}"}</tool_call>',
         [LeakedCall("get_weather", '{"city":"Nice"}')]),
    ],
)  # fmt: skip
def test_leaked_blocks_that_are_whole_and_declared_become_calls(text: str, want: list[Any]) -> None:
    assert split_leaked(text, NAMES) == want


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>',  # not a declared tool
        '<tool_call>{"name": "get_weather", "arguments": [1]}</tool_call>',  # not an object
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Pa',  # incomplete
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}',  # no closing tag
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "R"}}, {"name": "x"}]',
        "Use the <tool_call> tag to call tools.",
    ],
)
def test_other_leaked_text_stays_text(text: str) -> None:
    assert split_leaked(text, NAMES) == [text]
    assert split_leaked(HERMES, frozenset()) == [HERMES]  # no tools declared: nothing to call


def test_leaked_text_holder_at_every_split() -> None:
    text = "Checking.\n" + HERMES + " Done."
    for n in range(len(text) + 1):
        h = LeakedText(NAMES)
        shown = h.feed(text[:n]) + h.feed(text[n:])
        assert shown == "Checking.\n"
        assert h.finish() == [LeakedCall("get_weather", '{"city":"Paris"}'), " Done."]
    h = LeakedText(NAMES)
    assert h.feed("a <tool_") == "a "  # a marker may start here: held
    assert h.feed("x>") == "<tool_x>" and h.finish() == []


def _leaky_stream(text: str) -> bytes:
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
    return sse([*(chat_chunk({"content": p}) for p in pieces), chat_chunk({}, "stop"), "[DONE]"],
               named=False)  # fmt: skip


def _replay_with_tools(raw: list[bytes], model: Model) -> Replay:
    p = pipeline_for("openai-chat", model=model, tools_declared=True)
    declare = getattr(p.decoder, "declare_tools", None)
    if declare is not None:  # as the client does (only the leaky decoder has it)
        declare(("get_weather",))
    out = p.start()
    for c in raw:
        out.extend(p.feed(c))
    out.extend(p.end())
    return Replay(out)


def test_leaked_calls_in_a_chat_stream_under_the_compat_flag_at_every_split() -> None:
    leaky = msgspec.structs.replace(CHAT, compat={"leaked_tool_calls": True})
    raw = _leaky_stream("On it. " + HERMES)
    want = norm(_replay_with_tools([raw], leaky))
    for n in range(len(raw) + 1):
        assert norm(_replay_with_tools([raw[:n], raw[n:]], leaky)) == want
    msg = _replay_with_tools([raw], leaky).message
    assert msg is not None
    assert msg.stop_reason == "tool_use"
    assert msg.text == "On it. "
    (call,) = msg.tool_calls
    assert (call.name, call.arguments, call.raw_arguments) == ("get_weather", {"city": "Paris"},
                                                               '{"city":"Paris"}')  # fmt: skip
    # Off by default: the same stream is text.
    plain = _replay_with_tools([raw], CHAT).message
    assert plain is not None
    assert (plain.stop_reason, plain.text, plain.tool_calls) == ("stop", "On it. " + HERMES, ())


def test_leaked_calls_end_to_end_declared_tools_come_from_the_request() -> None:
    tools = [ToolDefinition(name="get_weather", description="d", parameters={"type": "object"})]
    with mw.testing.MockServer(["Sure." + HERMES, "Sure." + HERMES]) as server:
        base = server.model("openai-chat")
        leaky = msgspec.structs.replace(base, compat={"leaked_tool_calls": True})
        got = mw.complete_sync(leaky, Context(messages=[UserMessage(content="q")], tools=tools))
        # Without the tool declared, the block stays text.
        other = [ToolDefinition(name="other", description="d", parameters={"type": "object"})]
        kept = mw.complete_sync(leaky, Context(messages=[UserMessage(content="q")], tools=other))
    assert [c.name for c in got.tool_calls] == ["get_weather"] and got.text == "Sure."
    assert kept.tool_calls == () and kept.text == "Sure." + HERMES


@pytest.mark.parametrize(
    ("api", "payload", "path"),
    [
        ("openai-chat",
         chat_chunk({"annotations": [{"type": "url_citation", "url_citation": {"url": 5}}]}),
         "choices[0].delta.annotations[0].url_citation.url must be a string"),
        ("openai-chat", chat_chunk({}, citations=[1]), "citations[0] must be a string"),
        ("openai-responses",
         '{"type":"response.output_text.annotation.added","output_index":0,"annotation":[1]}',
         "annotation must be an object"),
        ("openai-responses",
         '{"type":"response.output_item.done","output_index":0,"item":{"type":"mcp_call","id":"m"}}',
         "item.name must be a string"),
    ],
)  # fmt: skip
def test_malformed_sources_and_items_name_the_field(api: str, payload: str, path: str) -> None:
    msg = replay(api, sse([payload], named=False)).message
    assert msg is not None and msg.error is not None
    assert msg.error.kind == "malformed_chunk"
    assert path in msg.error.message
