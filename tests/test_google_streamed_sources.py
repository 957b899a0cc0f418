"""Gemini grounding spread over a stream, file-search citations and generated images.

The streams are synthetic (tests/data/google/SOURCES.md), written from the API
reference: ``GroundingSupport.groundingChunkIndices`` count the grounding chunks of all
responses of a stream, each response bringing only its new ``groundingChunks``;
``RetrievedContext`` (``uri``, ``title``, ``text``, ``fileSearchStore``,
``customMetadata``); image generation (``inlineData`` parts with ``thoughtSignature``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

import modelwire as mw
from eventlist import final, same_at_every_split
from modelwire._apis import get_api
from modelwire._client._handoffs import handoff_notes
from modelwire._client._options import resolve_options
from modelwire.events import BlockEvent, CitationEvent, TextDeltaEvent
from modelwire.testing import MockServer, Reply
from modelwire.testing._render import render_reply
from test_google import API_NAME, body_of, model, payloads

DATA = Path(__file__).resolve().parent / "data" / "google"
GROUNDING = (DATA / "SYNTHETIC-grounding-across-stream.sse").read_bytes()
FILE_SEARCH = (DATA / "SYNTHETIC-file-search-citations.sse").read_bytes()
IMAGE = (DATA / "SYNTHETIC-image-generation.sse").read_bytes()


def _candidates(body: bytes) -> list[dict[str, Any]]:
    return [p["candidates"][0] for p in payloads(body)]


def _sse(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(f"data: {json.dumps(c)}\r\n\r\n".encode() for c in chunks)


@pytest.mark.parametrize(
    "body", [GROUNDING, FILE_SEARCH, IMAGE], ids=["grounding", "file", "image"]
)
def test_whole_byte_by_byte_and_every_split_agree(body: bytes) -> None:
    same_at_every_split(API_NAME, body)


# --------------------------------------------------------------------------- grounding


@pytest.mark.parametrize("body", [GROUNDING, FILE_SEARCH], ids=["grounding", "file"])
def test_a_grounded_answer_replays_to_gemini_as_its_text(body: bytes) -> None:
    # Grounding is response metadata: the text goes back, no part carries the sources.
    answer = final(mw.replay(API_NAME, body, model=model()))
    ctx = mw.Context(messages=[mw.UserMessage(content="q"), answer, mw.UserMessage(content="go")])
    text = "".join(p["text"] for c in _candidates(body) for p in c["content"]["parts"])
    assert body_of(model(), ctx)["contents"][1]["parts"] == [{"text": text}]


def test_grounding_chunks_accumulate_across_the_stream() -> None:
    events = mw.replay(API_NAME, GROUNDING)
    msg = final(events)
    assert (msg.stop_reason, msg.error) == ("stop", None)
    cands = _candidates(GROUNDING)
    # What the stream sent, read independently: every response's new chunks, in order.
    chunks = [c for cand in cands for c in cand["groundingMetadata"]["groundingChunks"]]
    supports = [s for cand in cands for s in cand["groundingMetadata"].get("groundingSupports", [])]
    expected = [(chunks[i]["web"]["uri"], chunks[i]["web"]["title"], s["segment"]["text"],
                 s["segment"]["startIndex"], s["segment"]["endIndex"], s, chunks[i])
                for s in supports for i in s["groundingChunkIndices"]]  # fmt: skip
    text, search = msg.content
    assert isinstance(text, mw.TextContent) and isinstance(search, mw.ServerToolCall)
    got = []
    for c in text.citations:
        assert c.kind == "url" and c.raw is not None
        raw = json.loads(c.raw)
        got.append((c.url, c.title, c.cited_text, c.start, c.end, raw["groundingSupport"],
                    raw["groundingChunk"]))  # fmt: skip
    assert got == expected
    assert search.input == {"queries": ["Eiffelturm Höhe", "Eiffelturm Eröffnung"]}
    # Chunks first: response 2's supports cite response 1's chunks as it arrives; the
    # reverse: the support naming chunk 3 is cited when response 3 brings that chunk.
    kinds = [e.type for e in events if isinstance(e, TextDeltaEvent | CitationEvent)]
    assert kinds == ["text_delta", "text_delta", "citation", "citation", "citation",
                     "text_delta", "citation", "citation"]  # fmt: skip


def test_a_grounding_index_the_stream_never_answers_is_a_malformed_chunk() -> None:
    last = payloads(GROUNDING)[-1]
    del last["candidates"][0]["groundingMetadata"]["groundingChunks"]  # chunk 3 never comes
    body = GROUNDING[: GROUNDING.rindex(b"data: ")] + _sse([last])
    msg = final(mw.replay(API_NAME, body))
    assert msg.error is not None and msg.error.kind == "malformed_chunk"
    assert re.search(
        r"candidates\[0\]\.groundingMetadata\.groundingSupports\[1\]\.groundingChunkIndices\[1\] "
        r"is 3, but groundingChunks has 3 entries over the whole stream",
        msg.error.message,
    ), msg.error.message
    # Nothing received is lost: the text and the citations that did resolve stay.
    assert msg.text.endswith("zur Weltausstellung.")
    (text, _search) = msg.content
    assert isinstance(text, mw.TextContent) and len(text.citations) == 3


# --------------------------------------------------------------------------- file search


def test_file_search_citations_cite_the_passage_and_keep_store_and_metadata() -> None:
    msg = final(mw.replay(API_NAME, FILE_SEARCH))
    (text,) = msg.content
    assert isinstance(text, mw.TextContent)
    grounding = _candidates(FILE_SEARCH)[-1]["groundingMetadata"]
    for c, chunk, support in zip(
        text.citations, grounding["groundingChunks"], grounding["groundingSupports"], strict=True
    ):
        rc = chunk["retrievedContext"]
        assert (c.kind, c.url, c.title, c.cited_text, c.document) == (
            "file", rc.get("uri"), rc["title"], rc["text"], rc["fileSearchStore"])  # fmt: skip
        assert (c.start, c.end) == (
            support["segment"]["startIndex"],
            support["segment"]["endIndex"],
        )
        assert c.raw is not None
        # customMetadata and pageNumber have no Citation field: they stay in raw.
        assert json.loads(c.raw) == {"groundingSupport": support, "groundingChunk": chunk}
    assert mw.from_json(mw.to_json(msg), mw.AssistantMessage) == msg


def test_the_mock_server_serves_file_search_citations_as_it_received_them() -> None:
    msg = final(mw.replay(API_NAME, FILE_SEARCH))
    rendered = render_reply(msg, API_NAME)
    assert rendered.complete is not None
    whole = json.loads(rendered.complete)["candidates"][0]
    sent = _candidates(FILE_SEARCH)[-1]["groundingMetadata"]
    assert whole["groundingMetadata"]["groundingChunks"] == sent["groundingChunks"]
    assert [s["segment"] for s in whole["groundingMetadata"]["groundingSupports"]] == [
        s["segment"] for s in sent["groundingSupports"]
    ]
    (text,) = final(mw.replay(API_NAME, rendered.pieces)).content
    assert isinstance(text, mw.TextContent)
    (original,) = msg.content
    assert isinstance(original, mw.TextContent)
    fields = [(c.kind, c.url, c.title, c.cited_text, c.document, c.start, c.end,
               json.loads(c.raw or "")["groundingChunk"]) for c in text.citations]  # fmt: skip
    assert fields == [(c.kind, c.url, c.title, c.cited_text, c.document, c.start, c.end,
                       json.loads(c.raw or "")["groundingChunk"]) for c in original.citations]  # fmt: skip


@pytest.mark.parametrize(
    ("retrieved", "fields"),
    [
        # Vertex RAG Engine: the passage in ragChunk.text.
        ({"uri": "gs://b/a.pdf", "title": "A", "ragChunk": {"text": "Passage A."}},
         ("document", "gs://b/a.pdf", "A", "Passage A.", "gs://b/a.pdf")),
        # Vertex AI Search: the document's name; no passage: the segment is cited.
        ({"uri": "https://s.example/b", "title": "B",
          "documentName": "projects/p/locations/global/dataStores/d/documents/b"},
         ("document", "https://s.example/b", "B", "Paris",
          "projects/p/locations/global/dataStores/d/documents/b")),
    ],
)  # fmt: skip
def test_other_retrieved_contexts(retrieved: dict[str, Any], fields: tuple[Any, ...]) -> None:
    grounding = {"groundingChunks": [{"retrievedContext": retrieved}],
                 "groundingSupports": [{"segment": {"startIndex": 0, "endIndex": 5, "text": "Paris"},
                                        "groundingChunkIndices": [0]}]}  # fmt: skip
    body = _sse([{"candidates": [{"content": {"parts": [{"text": "Paris"}]}, "index": 0,
                                  "finishReason": "STOP", "groundingMetadata": grounding}]}])  # fmt: skip
    (text,) = final(mw.replay(API_NAME, body)).content
    assert isinstance(text, mw.TextContent)
    (c,) = text.citations
    assert (c.kind, c.url, c.title, c.cited_text, c.document) == fields


# --------------------------------------------------------------------------- images


def test_a_generated_image_is_a_block_in_place_among_the_text() -> None:
    events = mw.replay(API_NAME, IMAGE)
    msg = final(events)
    assert (msg.stop_reason, msg.error) == ("stop", None)
    parts = [p for cand in _candidates(IMAGE) for p in cand["content"]["parts"]]
    image_part = next(p for p in parts if "inlineData" in p and not p.get("thought"))
    thinking, before, image, after = msg.content
    assert isinstance(thinking, mw.ThinkingContent)
    assert isinstance(before, mw.TextContent) and isinstance(after, mw.TextContent)
    assert image == mw.ImageContent(
        data=image_part["inlineData"]["data"],
        mime_type=image_part["inlineData"]["mimeType"],
        signature=image_part["thoughtSignature"],
    )
    # The interim "thought" image is the model's draft: not part of the answer.
    assert sum(isinstance(b, mw.ImageContent) for b in msg.content) == 1
    (block,) = [e for e in events if isinstance(e, BlockEvent)]
    assert (block.content_index, block.content) == (2, image)
    assert mw.from_json(mw.to_json(msg), mw.AssistantMessage) == msg


def test_an_image_answer_replays_to_gemini_as_the_parts_it_came_in() -> None:
    m = model("gemini-3-pro-image-preview")
    answer = final(mw.replay(API_NAME, IMAGE, model=m))
    ctx = mw.Context(messages=[mw.UserMessage(content="Male ein rotes Rechteck."), answer,
                               mw.UserMessage(content="Jetzt blau.")])  # fmt: skip
    sent = body_of(m, ctx)["contents"][1]["parts"]
    # The stream's answer parts (thoughts as one part, the draft image left out).
    parts = [p for cand in _candidates(IMAGE) for p in cand["content"]["parts"]]
    expected = [{"text": parts[0]["text"], "thought": True}] + [
        p for p in parts if not p.get("thought")
    ]
    assert sent == expected
    # Another Gemini model gets the image without the signature it cannot check.
    other = body_of(model("gemini-2.5-flash-image"), ctx)["contents"][1]["parts"]
    image = next(p for p in expected if "inlineData" in p)
    assert {"inlineData": image["inlineData"]} in other
    assert all("thoughtSignature" not in p for p in other)


@pytest.mark.parametrize(
    ("part", "path"),
    [
        ({"inlineData": {"mimeType": "image/png"}},
         r"parts\[0\]\.inlineData\.data is missing"),
        ({"inlineData": {"mimeType": 3, "data": "AA=="}},
         r"parts\[0\]\.inlineData\.mimeType must be a string"),
        ({"inlineData": {"mimeType": "", "data": "AA=="}},
         r"parts\[0\]\.inlineData\.mimeType is empty"),
    ],
)  # fmt: skip
def test_a_malformed_image_part_names_its_field(part: dict[str, Any], path: str) -> None:
    body = _sse(
        [{"candidates": [{"content": {"parts": [part]}, "index": 0, "finishReason": "STOP"}]}]
    )
    msg = final(mw.replay(API_NAME, body))
    assert msg.error is not None and msg.error.kind == "malformed_chunk"
    assert re.search(path, msg.error.message), msg.error.message


_OTHER = [
    ("openai-chat", "openai"),
    ("anthropic-messages", "anthropic"),
    ("ollama-chat", "ollama"),
    ("cohere-chat", "cohere"),
    ("bedrock-converse", "amazon-bedrock"),
]


@pytest.mark.parametrize(("api", "provider"), _OTHER, ids=[a for a, _ in _OTHER])
def test_apis_without_an_assistant_image_refuse_it_naming_the_field(
    api: str, provider: str
) -> None:
    answer = final(mw.replay(API_NAME, IMAGE))
    ctx = mw.Context(messages=[mw.UserMessage(content="q"), answer, mw.UserMessage(content="go")])
    target = mw.Model(id="m", api=api, provider=provider, base_url="http://127.0.0.1:9/v1")
    options = resolve_options(provider, api_key="k")
    with pytest.raises(mw.ConfigurationError, match=r"messages\[1\]\.content\[2\] is an image"):
        get_api(api).build_request(target, ctx, options)
    # mw.handoff (what stream() applies first) makes it a note the model can read.
    handed = mw.handoff(ctx, target)
    note = handed.messages[1]
    assert isinstance(note, mw.AssistantMessage)
    assert mw.TextContent(text="[an image (image/png) was generated]") in note.content
    assert any(n.startswith("messages[1].content[2]: an image") for n in handoff_notes(ctx, target))
    get_api(api).build_request(target, handed, options)


def test_handoff_keeps_the_image_for_gemini_and_its_signature_for_the_same_model() -> None:
    m = model("gemini-3-pro-image-preview")
    answer = final(mw.replay(API_NAME, IMAGE, model=m))
    ctx = mw.Context(messages=[mw.UserMessage(content="q"), answer, mw.UserMessage(content="go")])
    image = answer.content[2]
    assert isinstance(image, mw.ImageContent) and image.signature is not None

    def kept(target: mw.Model) -> mw.ImageContent:
        msg = mw.handoff(ctx, target).messages[1]
        assert isinstance(msg, mw.AssistantMessage) and isinstance(msg.content[2], mw.ImageContent)
        assert handoff_notes(ctx, target) == []
        return msg.content[2]

    assert kept(m) == image
    assert kept(model("gemini-2.5-flash-image")) == mw.ImageContent(
        data=image.data, mime_type=image.mime_type)  # fmt: skip


def test_the_mock_server_serves_a_generated_image() -> None:
    image = mw.ImageContent(data="iVBORw0KGgo=", mime_type="image/png", signature="c2ln")
    message = mw.AssistantMessage(
        content=[mw.TextContent(text="Hier: "), image, mw.TextContent(text="fertig.")],
        api="", provider="", model="", stop_reason="stop",
    )  # fmt: skip
    with MockServer([Reply(message=message, piece_chars=4), Reply(message=message)]) as server:
        m = server.model(API_NAME, "gemini-3-pro-image-preview")
        got = mw.complete_sync(m, mw.Context(messages=[mw.UserMessage(content="q")]))
        whole = httpx.post(f"{server.origin}/v1beta/models/gemini-3:generateContent",
                           json={"contents": []}).json()  # fmt: skip
    assert got.error is None and got.content == message.content
    part = {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="},
            "thoughtSignature": "c2ln"}  # fmt: skip
    assert whole["candidates"][0]["content"]["parts"][1] == part
    streamed = render_reply(message, API_NAME).pieces
    assert any(part in c["content"]["parts"] for c in _candidates(b"".join(streamed)))


@pytest.mark.parametrize("api", [a for a, _ in _OTHER])
def test_servers_of_apis_without_an_assistant_image_say_one_was_made(api: str) -> None:
    # The mock server and the gateway answer with the handoff's note, streamed and whole.
    image = mw.ImageContent(data="iVBORw0KGgo=", mime_type="image/png")
    message = mw.AssistantMessage(content=[mw.TextContent(text="Hier: "), image],
                                  api=API_NAME, provider="", model="", stop_reason="stop")  # fmt: skip
    rendered = render_reply(message, api)
    note = b"[an image (image/png) was generated]"
    assert rendered.complete is not None and note in rendered.complete
    assert final(mw.replay(api, rendered.pieces)).text.startswith("Hier: [an image (image/png)")
