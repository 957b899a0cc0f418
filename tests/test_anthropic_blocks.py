"""Anthropic's provider-run tools, citations, compaction and ``pause_turn``: decoded
into ServerToolCall / ServerToolResult / Citation / ProviderItem, replayed to
Anthropic as received, handed to every other API as text it accepts, rendered by the
mock server, and never executed by the agent.

The synthetic stream ``server-tools-citations-pause.sse`` is written from the
Messages streaming reference and the server-tool pages of the Anthropic docs (web
search, web fetch, code execution, MCP connector, citations, compaction,
handling stop reasons); every expectation below is read from its payloads with
``json``, independently of the adapter.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

import modelwire as mw
from modelwire._apis import get_api
from modelwire._client._handoffs import handoff
from modelwire._client._options import resolve_options
from modelwire._client._replay import replay
from modelwire.trace import ContextTrace, TraceLog

DATA = Path(__file__).resolve().parent / "data" / "anthropic"
STREAM = DATA / "server-tools-citations-pause.sse"
API_NAME = "anthropic-messages"
KEY = "sk-ant-api03-TEST-SECRET-blocks-0123456789"


def payloads(raw: bytes) -> list[dict[str, Any]]:
    out = []
    for block in raw.decode().split("\n\n"):
        for line in block.split("\n"):
            if line.startswith("data: "):
                out.append(json.loads(line[6:]))
    return out


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def reference(raw: bytes) -> list[dict[str, Any]]:
    """The blocks of the stream, accumulated by hand from its payloads: input from
    ``input_json_delta``, compaction ``content`` appended and ``encrypted_content``
    replaced (compaction docs), citations appended, text concatenated."""
    blocks: dict[int, dict[str, Any]] = {}
    streamed: dict[int, str] = {}
    for p in payloads(raw):
        if p["type"] == "content_block_start":
            blocks[p["index"]] = dict(p["content_block"])
        elif p["type"] == "content_block_delta":
            b, d = blocks[p["index"]], p["delta"]
            if d["type"] == "input_json_delta":
                streamed[p["index"]] = streamed.get(p["index"], "") + d["partial_json"]
            elif d["type"] == "compaction_delta":
                b["content"] = (b.get("content") or "") + d["content"]
                b["encrypted_content"] = d["encrypted_content"]
            elif d["type"] == "citations_delta":
                b.setdefault("citations", []).append(d["citation"])
            elif d["type"] == "text_delta":
                b["text"] += d["text"]
    for i, text in streamed.items():
        if text:
            blocks[i]["input"] = json.loads(text)
    return [blocks[i] for i in sorted(blocks)]


def run(chunks: list[bytes]) -> list[Any]:
    return replay(API_NAME, chunks)


def message(raw: bytes | None = None) -> mw.AssistantMessage:
    events = run([raw if raw is not None else STREAM.read_bytes()])
    assert events[-1].type == "done", events[-1].message.error
    msg: mw.AssistantMessage = events[-1].message
    return msg


def canon(events: list[Any]) -> list[tuple[Any, ...]]:
    out = []
    for e in events:
        m = e.message if e.type in ("done", "error") else None
        out.append((e.type, getattr(e, "content_index", None), getattr(e, "delta", None),
                    getattr(e, "content", None), getattr(e, "citation", None),
                    m.content if m else None, m.provider_stop_reason if m else None))  # fmt: skip
    return out


# --------------------------------------------------------------------------- decoding


def test_every_block_is_kept_in_order_with_its_fields() -> None:
    raw = STREAM.read_bytes()
    ref = reference(raw)
    msg = message()
    assert [b.type for b in msg.content] == [
        "provider_item", "server_tool_call", "server_tool_result", "text",
        "server_tool_call", "server_tool_result", "server_tool_call", "server_tool_result",
        "server_tool_call", "server_tool_result", "text",
    ]  # fmt: skip
    for ours, want in zip(msg.content, ref, strict=True):
        if isinstance(ours, mw.ProviderItem):
            assert (ours.api, ours.provider_type) == (API_NAME, want["type"])
            assert json.loads(ours.data) == want
        elif isinstance(ours, mw.ServerToolCall):
            assert (ours.id, ours.name, ours.input, ours.provider_type) == (
                want["id"], want["name"], want["input"], want["type"],
            )  # fmt: skip
            assert json.loads(ours.raw or "") == want  # mcp_tool_use keeps server_name
        elif isinstance(ours, mw.ServerToolResult):
            assert (ours.tool_call_id, ours.provider_type, ours.result) == (
                want["tool_use_id"], want["type"], want["content"],
            )  # fmt: skip
            # Results come whole in their start: their bytes exactly as sent.
            assert ours.raw is not None and ours.raw.encode() in raw
            assert json.loads(ours.raw) == want
        else:
            assert isinstance(ours, mw.TextContent) and ours.text == want["text"]
            assert [json.loads(c.raw or "") for c in ours.citations] == want.get("citations", [])
            assert all((c.raw or "").encode() in raw for c in ours.citations)
    # The error flag: web_fetch_tool_error is an error object; mcp says is_error itself.
    results = [b for b in msg.content if isinstance(b, mw.ServerToolResult)]
    assert [r.is_error for r in results] == [False, True, False, False]
    # A result names its call's tool.
    assert [r.name for r in results] == ["web_search", "web_fetch", "bash_code_execution",
                                         "lookup"]  # fmt: skip


def test_citations_are_typed() -> None:
    msg = message()
    web = msg.content[3]
    doc = msg.content[10]
    assert isinstance(web, mw.TextContent) and isinstance(doc, mw.TextContent)
    (w,) = web.citations
    assert (w.kind, w.url, w.title, w.cited_text) == (
        "url", "https://weather.example/zurich", "Zürich weather", "Sunny, 21 °C",
    )  # fmt: skip
    (d,) = doc.citations
    assert (d.kind, d.document, d.title, d.start, d.end) == ("document", "0", "Report", 4, 17)


def test_provider_run_tools_are_no_client_calls_and_pause_turn_is_kept() -> None:
    msg = message()
    assert msg.tool_calls == () and len(msg.server_tool_calls) == 4
    assert msg.stop_reason == "stop" and msg.provider_stop_reason == "pause_turn"
    # Even with tools declared and tool_choice "required"-free auto: no protocol error.
    events = replay(API_NAME, [STREAM.read_bytes()])
    assert [e.type for e in events].count("block") == 9  # 4 calls, 4 results, compaction
    assert [e.type for e in events].count("citation") == 2


def test_whole_byte_by_byte_and_at_every_split_point() -> None:
    raw = STREAM.read_bytes()
    whole = canon(run([raw]))
    assert canon(run([raw[i : i + 1] for i in range(len(raw))])) == whole
    for i in range(1, len(raw)):
        assert canon(run([raw[:i], raw[i:]])) == whole, i


def test_the_message_round_trips_through_json() -> None:
    msg = message()
    assert mw.from_json(mw.to_json(msg), mw.AssistantMessage) == msg


@pytest.mark.parametrize(
    ("block", "says"),
    [
        ({"type": "server_tool_use", "name": "web_search", "input": {}}, "content_block.id is missing"),
        ({"type": "server_tool_use", "id": "s", "name": "w", "input": [1]}, "content_block.input must be an object"),
        ({"type": "web_search_tool_result", "content": []}, "content_block.tool_use_id is missing"),
        ({"type": "mcp_tool_result", "tool_use_id": "m", "is_error": "no"}, "content_block.is_error must be a boolean"),
    ],
)  # fmt: skip
def test_a_bad_server_block_names_its_field(block: dict[str, Any], says: str) -> None:
    start = payloads(STREAM.read_bytes())[0]
    body = "".join(
        f"data: {compact(p)}\n\n"
        for p in (start, {"type": "content_block_start", "index": 0, "content_block": block})
    )
    err = run([body.encode()])[-1]
    assert err.type == "error" and err.message.error.kind == "malformed_chunk"
    assert says in err.message.error.message


def test_streamed_server_input_that_is_not_an_object_is_malformed() -> None:
    start = payloads(STREAM.read_bytes())[0]
    frames = [
        start,
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "server_tool_use", "id": "s", "name": "w", "input": {}}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": "[1, 2]"}},
        {"type": "content_block_stop", "index": 0},
    ]  # fmt: skip
    err = run(["".join(f"data: {compact(p)}\n\n" for p in frames).encode()])[-1]
    assert err.message.error.kind == "malformed_chunk"
    assert "not a JSON object" in err.message.error.message


def test_a_bad_citation_names_its_field() -> None:
    start = payloads(STREAM.read_bytes())[0]
    frames = [
        start,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "citations_delta", "citation": {"type": "char_location",
                                                           "start_char_index": "4"}}},
    ]  # fmt: skip
    err = run(["".join(f"data: {compact(p)}\n\n" for p in frames).encode()])[-1]
    assert err.message.error.kind == "malformed_chunk"
    assert "delta.citation.start_char_index must be an integer" in err.message.error.message


# --------------------------------------------------------------------------- replay


def claude(**kw: Any) -> mw.Model:
    fields: dict[str, Any] = {"id": "claude-sonnet-4-5", "api": API_NAME, "provider": "anthropic",
                              "base_url": "https://api.anthropic.com/v1", "max_tokens": 8192}  # fmt: skip
    fields.update(kw)
    return mw.Model(**fields)


def conversation(msg: mw.AssistantMessage) -> mw.Context:
    return mw.Context(messages=[mw.UserMessage(content="Weather in Zürich?", timestamp=1), msg,
                                mw.UserMessage(content="Thanks!", timestamp=3)])  # fmt: skip


def anthropic_message() -> mw.AssistantMessage:
    msg = message()
    return msgspec.structs.replace(msg, provider="anthropic", model="claude-sonnet-4-5")


def request_bytes(model: mw.Model, ctx: mw.Context) -> bytes:
    options = resolve_options(model.provider, api_key=KEY)
    return get_api(model.api).build_request(model, handoff(ctx, model), options).body


def test_replay_to_anthropic_is_byte_exact_for_every_block() -> None:
    raw = STREAM.read_bytes()
    msg = anthropic_message()
    body = request_bytes(claude(), conversation(msg))
    sent = json.loads(body)["messages"][1]
    assert sent["role"] == "assistant"
    # Every block as the provider sent it (reassembled from its deltas where it
    # streamed): compaction, server tool calls and results, cited text.
    assert sent["content"] == [
        {k: v for k, v in b.items() if not (b["type"] == "text" and k == "citations" and not v)}
        for b in reference(raw)
    ]
    for b in msg.content:
        exact = b.data if isinstance(b, mw.ProviderItem) else getattr(b, "raw", None)
        if exact is not None:
            assert exact.encode() in body  # byte for byte, not re-encoded
        for c in getattr(b, "citations", ()):
            assert (c.raw or "").encode() in body
    # The same message to another Anthropic model keeps the blocks too (same API).
    other = request_bytes(claude(id="claude-opus-4-1"), conversation(msg))
    assert json.loads(other)["messages"][1] == sent


def test_a_paused_message_is_sent_back_as_the_last_message() -> None:
    msg = anthropic_message()
    ctx = mw.Context(messages=[mw.UserMessage(content="Weather?", timestamp=1), msg])
    sent = json.loads(request_bytes(claude(), ctx))["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant"]
    assert len(sent[1]["content"]) == len(msg.content)


def test_hand_built_server_blocks_are_encoded_from_their_fields() -> None:
    call = mw.ServerToolCall(id="srvtoolu_9", name="web_search", input={"query": "q"},
                             provider_type="server_tool_use")  # fmt: skip
    result = mw.ServerToolResult(tool_call_id="srvtoolu_9", provider_type="web_search_tool_result",
                                 result=[])  # fmt: skip
    msg = mw.AssistantMessage(content=[call, result, mw.TextContent(text="none")], api=API_NAME,
                              provider="anthropic", model="claude-sonnet-4-5", stop_reason="stop")  # fmt: skip
    sent = json.loads(request_bytes(claude(), conversation(msg)))["messages"][1]["content"]
    assert sent[:2] == [
        {"type": "server_tool_use", "id": "srvtoolu_9", "name": "web_search", "input": {"query": "q"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_9", "content": []},
    ]  # fmt: skip


# --------------------------------------------------------------------------- handoff

OTHER_APIS = {
    "openai-chat": "http://127.0.0.1:9/v1",
    "openai-responses": "http://127.0.0.1:9/v1",
    "google-generative-ai": "http://127.0.0.1:9/v1beta",
    "ollama-chat": "http://127.0.0.1:9",
    "bedrock-converse": "http://127.0.0.1:9",
}


def _texts_only(parts: Any, allowed: set[str], where: str) -> list[str]:
    """Every part is one of the ``allowed`` request part types; their texts."""
    texts = []
    for part in parts:
        assert isinstance(part, dict), where
        kind = part.get("type")
        if kind is None:  # Gemini / Bedrock parts: one key each
            assert len(part) == 1 or set(part) <= {"text", "thought"}, (where, part)
            kind = next(iter(part))
        assert kind in allowed, (where, part)
        text = part.get("text")
        if isinstance(text, str):
            texts.append(text)
    return texts


def accepted_texts(api: str, body: dict[str, Any]) -> list[str]:
    """Check ``body`` against the request shape of ``api`` (its reference: Chat
    ``messages[].content`` a string or text parts; Responses ``input`` items of
    ``message`` type with ``input_text``/``output_text`` parts; Gemini ``contents[].parts``
    with one field each; Ollama string content; Bedrock Converse content blocks with
    one member each) and return every text it carries."""
    texts: list[str] = []
    if api in ("openai-chat", "ollama-chat"):
        for m in body["messages"]:
            assert m["role"] in ("system", "user", "assistant")
            c = m["content"]
            texts += [c] if isinstance(c, str) else _texts_only(c, {"text"}, api)
    elif api == "openai-responses":
        for item in body["input"]:
            assert item.get("type", "message") == "message" and item["role"] in (
                "user", "assistant", "system", "developer",
            ), item  # fmt: skip
            c = item["content"]
            texts += (
                [c] if isinstance(c, str) else _texts_only(c, {"input_text", "output_text"}, api)
            )
    elif api == "google-generative-ai":
        for content in body["contents"]:
            assert content["role"] in ("user", "model")
            texts += _texts_only(content["parts"], {"text"}, api)
    else:
        for m in body["messages"]:
            assert m["role"] in ("user", "assistant")
            texts += _texts_only(m["content"], {"text"}, api)
    return texts


@pytest.mark.parametrize("api", sorted(OTHER_APIS))
def test_handoff_of_a_web_search_conversation_to_every_other_api(api: str) -> None:
    msg = anthropic_message()
    target = mw.Model(id="target-model", api=api, provider="local", base_url=OTHER_APIS[api])
    body = json.loads(request_bytes(target, conversation(msg)))
    joined = "\n".join(accepted_texts(api, body))
    # The search and its results, readable; the provider's opaque fields left out.
    assert '[web_search was run by the provider with {"query":"weather Zürich"}]' in joined
    assert "https://weather.example/zurich" in joined and "Zürich weather" in joined
    assert "EqgfCioIARgBIiQ3" not in joined and "Eo8BCioIAhgB" not in joined
    assert "[web_fetch failed:" in joined and "url_not_accessible" in joined
    assert "station ZRH" in joined and '"stdout":"21\\n"' in joined
    # Citations: numbered sources after the text they support.
    assert (
        "It is sunny in Zürich — 21 °C.\n\nSources:\n[1] Zürich weather "
        '<https://weather.example/zurich>: "Sunny, 21 °C"'
    ) in joined
    assert '[1] Report <document 0>: "sunny all day"' in joined
    # The compaction item is Anthropic's alone: not sent.
    assert "Earlier: the user asked" not in joined and "enc-final" not in joined


def test_handoff_is_idempotent_and_notes_dropped_items_in_the_trace() -> None:
    msg = anthropic_message()
    ctx = conversation(msg)
    target = mw.Model(id="gpt", api="openai-chat", provider="local", base_url="http://x/v1")
    once = handoff(ctx, target)
    assert handoff(once, target) == once
    assert all(
        isinstance(b, mw.TextContent) and not b.citations
        for m in once.messages
        if isinstance(m, mw.AssistantMessage)
        for b in m.content
    )
    # The trace of a call says what the handoff left out.
    log = TraceLog()
    with mw.testing.MockServer(["ok"]) as server:
        model = server.model("openai-chat")
        mw.complete_sync(model, ctx, trace=log)
    (record,) = log.of("context")
    assert isinstance(record, ContextTrace)
    assert record.handoff == (
        "messages[1].content[0]: a compaction item of anthropic-messages is not sent to "
        "openai-chat (opaque to other APIs)",
    )
    assert tuple(record.to_dict()["handoff"]) == record.handoff


# --------------------------------------------------------------------------- mock server


def test_the_mock_server_renders_every_block_back_to_the_same_message() -> None:
    msg = anthropic_message()
    with mw.testing.MockServer([msg]) as server:
        got = mw.complete_sync(server.model(API_NAME), mw.Context(messages=[
            mw.UserMessage(content="Weather?")]))  # fmt: skip
        body = server.requests[0]
    assert body.path.endswith("/messages")
    assert got.content == msg.content
    assert got.provider_stop_reason == "pause_turn" and got.stop_reason == "stop"


def test_the_scripted_model_streams_every_block() -> None:
    msg = anthropic_message()
    sm = mw.testing.ScriptedModel([msg])
    events = list(mw.stream_sync(sm.model, mw.Context(messages=[mw.UserMessage(content="x")])))
    end = events[-1]
    assert isinstance(end, mw.events.DoneEvent)
    final = end.message
    assert final.content == msg.content and final.provider_stop_reason == "pause_turn"
    assert [e.type for e in events].count("block") == 9
    assert [e.type for e in events].count("citation") == 2


def test_an_item_of_another_api_cannot_be_rendered_by_the_anthropic_mock() -> None:
    item = mw.ProviderItem(api="openai-responses", provider_type="x", data='{"type":"x"}')
    with pytest.raises(mw.ConfigurationError, match=r"content\[0\]: anthropic-messages cannot "
                       r"carry an item of openai-responses"):  # fmt: skip
        mw.testing.render([item, "t"], API_NAME)
    # Its own API's item is sent exactly as it was received.
    own = mw.ProviderItem(api=API_NAME, provider_type="container_upload",
                          data='{"type":"container_upload","file_id":"file_1"}')  # fmt: skip
    body = mw.testing.render([own, "t"], API_NAME)
    assert b'"content_block":{"type":"container_upload","file_id":"file_1"}}' in body


def test_a_request_without_stream_gets_every_block_in_the_message_object() -> None:
    import httpx

    msg = anthropic_message()
    with mw.testing.MockServer([msg]) as server:
        got = httpx.post(server.origin + "/v1/messages",
                         json={"model": "m", "messages": [], "max_tokens": 9}).json()  # fmt: skip
    assert got["stop_reason"] == "pause_turn"
    ref = reference(STREAM.read_bytes())
    assert got["content"] == [
        {k: v for k, v in b.items() if not (b["type"] == "text" and k == "citations" and not v)}
        for b in ref
    ]


# --------------------------------------------------------------------------- documents


def test_documents_are_sent_as_the_messages_api_documents_them() -> None:
    import base64

    pdf = mw.DocumentContent(mime_type="application/pdf", data="JVBERi0=", title="Paper")
    text = mw.DocumentContent(mime_type="text/plain",
                              data=base64.b64encode("Grüße".encode()).decode())  # fmt: skip
    url = mw.DocumentContent(mime_type="application/pdf", url="https://e.example/p.pdf")
    stored = mw.DocumentContent(mime_type="application/pdf", file_id="file_011")
    result = mw.ToolResultMessage(tool_call_id="toolu_1", tool_name="fetch", content=[pdf])
    call = mw.ToolCall(id="toolu_1", name="fetch", arguments={})
    ctx = mw.Context(messages=[
        mw.UserMessage(content=[mw.TextContent(text="Read these."), pdf, text, url, stored]),
        mw.AssistantMessage(content=[call], api=API_NAME, provider="anthropic",
                            model="claude-sonnet-4-5", stop_reason="tool_use"),
        result,
    ])  # fmt: skip
    model = claude(input=("text", "document"))
    options = resolve_options("anthropic", api_key=KEY)
    request = get_api(API_NAME).build_request(model, handoff(ctx, model), options)
    sent = json.loads(request.body)["messages"]
    assert sent[0]["content"][1:] == [
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                        "data": "JVBERi0="}, "title": "Paper"},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                        "data": "Grüße"}},
        {"type": "document", "source": {"type": "url", "url": "https://e.example/p.pdf"}},
        {"type": "document", "source": {"type": "file", "file_id": "file_011"}},
    ]  # fmt: skip
    assert sent[2]["content"][0]["content"] == [sent[0]["content"][1]]  # in a tool result too
    # A Files API id needs the files beta header (Files API docs).
    assert request.headers["anthropic-beta"] == "files-api-2025-04-14"
    without = get_api(API_NAME).build_request(
        model, mw.Context(messages=[mw.UserMessage(content=[pdf])]), options
    )
    assert "anthropic-beta" not in without.headers


def test_input_the_messages_api_cannot_carry_is_refused() -> None:
    options = resolve_options("anthropic", api_key=KEY)
    model = claude(input=("text", "document", "audio"))
    audio = mw.UserMessage(content=[mw.AudioContent(data="UklGRg==", mime_type="audio/wav")])
    with pytest.raises(mw.ConfigurationError, match="cannot carry an audio block"):
        get_api(API_NAME).build_request(model, mw.Context(messages=[audio]), options)
    bad = mw.UserMessage(content=[mw.DocumentContent(mime_type="text/plain", data="%%%")])
    with pytest.raises(mw.ConfigurationError, match="base64 of UTF-8 text"):
        get_api(API_NAME).build_request(model, mw.Context(messages=[bad]), options)
    # Another API's provider-run block without mw.handoff: refused, never sent as is.
    foreign = mw.AssistantMessage(
        content=[mw.ServerToolCall(id="ws_1", name="web_search", input={},
                                   provider_type="web_search_call")],
        api="openai-responses", provider="openai", model="gpt", stop_reason="stop",
    )  # fmt: skip
    with pytest.raises(mw.ConfigurationError, match=r"pass the context through mw\.handoff"):
        get_api(API_NAME).build_request(model, conversation(foreign), options)


def test_a_hand_built_citation_reaches_anthropic_as_a_numbered_source() -> None:
    cite = mw.Citation(kind="url", url="https://sky.example", title="Sky", cited_text="blue")
    msg = mw.AssistantMessage(content=[mw.TextContent(text="Blue.", citations=(cite,))],
                              api=API_NAME, provider="anthropic", model="claude-sonnet-4-5",
                              stop_reason="stop")  # fmt: skip
    (block,) = json.loads(request_bytes(claude(), conversation(msg)))["messages"][1]["content"]
    assert block == {"type": "text",
                     "text": 'Blue.\n\nSources:\n[1] Sky <https://sky.example>: "blue"'}  # fmt: skip
