"""Ollama's chat beyond text and images: text documents go as their text, other
documents and audio are refused naming the block (the API takes neither), and other
providers' tool blocks reach an Ollama model as text (docs/api.md, "Generate a chat
completion": ``content``, ``images``, ``thinking``, ``tool_calls``)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

import modelwire as mw
from modelwire._apis import get_api
from modelwire._client._options import resolve_options

API = "ollama-chat"


def _model(**kw: Any) -> mw.Model:
    return mw.Model(id="qwen3:8b", api=API, provider="ollama", base_url="http://127.0.0.1:11434",
                    **kw)  # fmt: skip


def messages(ctx: mw.Context, m: mw.Model | None = None) -> list[dict[str, Any]]:
    request = get_api(API).build_request(m or _model(input=["text", "image", "document"]), ctx,
                                         resolve_options("ollama"))  # fmt: skip
    out: list[dict[str, Any]] = json.loads(request.body)["messages"]
    return out


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_a_text_document_is_sent_as_its_text_beside_images() -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content=[
        mw.TextContent(text="Compare these."),
        mw.DocumentContent(mime_type="text/markdown", data=b64("# Notes\nbonjour ✓"),
                           title="notes.md"),
        mw.ImageContent(data="aGk=", mime_type="image/png"),
        mw.DocumentContent(mime_type="application/json; charset=utf-8", data=b64('{"a": 1}')),
        mw.TextContent(text="Which is newer?"),
    ])])  # fmt: skip
    (user,) = messages(ctx)
    assert user == {
        "role": "user",
        "content": 'Compare these.\n\nnotes.md\n# Notes\nbonjour ✓\n\n{"a": 1}\n\nWhich is newer?',
        "images": ["aGk="],
    }


def test_a_tool_result_carries_a_text_document_too() -> None:
    call = mw.AssistantMessage(content=[mw.ToolCall(id="ocall_1", name="read", arguments={})],
                               api=API, provider="ollama", model="qwen3:8b", stop_reason="tool_use")  # fmt: skip
    result = mw.ToolResultMessage(tool_call_id="ocall_1", tool_name="read", content=[
        mw.TextContent(text="the file:"), mw.DocumentContent(mime_type="text/plain", data=b64("x=1"))])  # fmt: skip
    sent = messages(mw.Context(messages=[mw.UserMessage(content="read"), call, result]))
    assert sent[2] == {"role": "tool", "tool_name": "read", "content": "the file:\n\nx=1"}


@pytest.mark.parametrize(
    ("block", "says"),
    [
        (mw.DocumentContent(mime_type="application/pdf", data="JVBERi0="),
         r"messages\[0\]\.content\[0\] is a application/pdf document"),
        (mw.DocumentContent(mime_type="text/plain", url="https://e.example/a.txt"),
         r"content\[0\] is a text/plain document given by url/file_id"),
        (mw.DocumentContent(mime_type="text/plain", data="%%%"),
         r"content\[0\]\.data must be base64 of UTF-8 text"),
        (mw.DocumentContent(mime_type="text/plain", data=base64.b64encode(b"\xff").decode()),
         r"content\[0\]\.data must be base64 of UTF-8 text"),
        (mw.AudioContent(data="UklGRg==", mime_type="audio/wav"),
         r"content\[0\] is audio, which Ollama's chat cannot take"),
    ],
)  # fmt: skip
def test_what_ollama_cannot_take_is_refused_with_its_path(block: Any, says: str) -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content=[block])])
    m = _model(input=["text", "document", "audio"])
    with pytest.raises(mw.ConfigurationError, match=says):
        messages(ctx, m)


def test_another_providers_tool_blocks_become_text_and_opaque_items_are_dropped() -> None:
    other = mw.AssistantMessage(
        content=[
            mw.ServerToolCall(id="srvtoolu_1", name="web_search", input={"query": "sky"},
                              provider_type="server_tool_use"),
            mw.ServerToolResult(tool_call_id="srvtoolu_1", provider_type="web_search_tool_result",
                                result=["https://e.com"], name="web_search", is_error=True),
            mw.ProviderItem(api="anthropic-messages", provider_type="compaction", data='{"a":1}'),
            mw.TextContent(text="Blue."),
        ],
        api="anthropic-messages", provider="anthropic", model="claude", stop_reason="stop",
    )  # fmt: skip
    sent = messages(mw.Context(messages=[mw.UserMessage(content="q"), other]))
    assert sent[1] == {"role": "assistant", "content": (
        '[web_search was run by the provider with {"query":"sky"}]\n'
        '[web_search failed: ["https://e.com"]]\n'
        "Blue.")}  # fmt: skip
