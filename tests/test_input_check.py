"""What a model accepts (``Model.input``) is checked once, for every wire API, before
any I/O: an image, a document or audio sent to a model not declared to take it is a
``ConfigurationError`` naming the model, the block's path and how to declare it —
never a silent replacement (the text note handoff writes is for ``mw.handoff`` only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import modelwire as mw
from modelwire._apis import api_names, get_api
from modelwire._apis._common import check_input
from modelwire._client._options import resolve_options
from modelwire.ext import register_wire_api
from modelwire.testing import MockServer

BUILT_IN = [
    "openai-chat",
    "openai-responses",
    "anthropic-messages",
    "google-generative-ai",
    "ollama-chat",
    "bedrock-converse",
]
PNG = mw.ImageContent(data="iVBORw0KGgo=", mime_type="image/png")
PDF = mw.DocumentContent(mime_type="application/pdf", data="JVBERi0=")
WAV = mw.AudioContent(data="UklGRg==", mime_type="audio/wav")


def _model(api: str, *kinds: str) -> mw.Model:
    return mw.Model(id="m-1", api=api, provider="local", base_url="http://127.0.0.1:9/v1",
                    input=("text", *kinds))  # fmt: skip


def test_the_built_in_apis_are_the_ones_checked() -> None:
    assert set(BUILT_IN) <= set(api_names())


@pytest.mark.parametrize("api", BUILT_IN)
@pytest.mark.parametrize(("block", "kind"), [(PNG, "image"), (PDF, "document"), (WAV, "audio")])
def test_input_the_model_does_not_accept_is_refused_before_any_request(
    api: str, block: Any, kind: str
) -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content=[mw.TextContent(text="look"), block])])
    with MockServer(["never sent"]) as server:
        m = server.model(api, "m-1")  # declares text only
        for call in (mw.stream_sync, mw.stream):
            with pytest.raises(mw.ConfigurationError) as info:
                call(m, ctx)
            text = str(info.value)
            assert "'m-1'" in text and f"{kind} input" in text
            assert "messages[0].content[1]" in text and "Model(..., input=['text', " in text
        assert server.requests == []  # nothing reached the server


@pytest.mark.parametrize("api", BUILT_IN)
def test_a_tool_result_is_checked_too(api: str) -> None:
    call = mw.AssistantMessage(content=[mw.ToolCall(id="call_1", name="shot", arguments={})],
                               api=api, provider="local", model="m-1", stop_reason="tool_use")  # fmt: skip
    result = mw.ToolResultMessage(tool_call_id="call_1", tool_name="shot",
                                  content=[mw.TextContent(text="done"), PNG])  # fmt: skip
    ctx = mw.Context(messages=[mw.UserMessage(content="go"), call, result])
    with pytest.raises(mw.ConfigurationError, match=r"messages\[2\]\.content\[1\] is an image"):
        mw.stream_sync(_model(api), ctx)


def test_declared_input_passes_and_text_only_contexts_always_do() -> None:
    ctx = mw.Context(messages=[mw.UserMessage(content=[PNG, PDF, WAV])])
    check_input(_model("openai-chat", "image", "document", "audio"), ctx)
    check_input(_model("openai-chat"), mw.Context(messages=[mw.UserMessage(content="hi")]))
    with pytest.raises(mw.ConfigurationError, match=r"content\[2\] is an audio block"):
        check_input(_model("openai-chat", "image", "document"), ctx)


def test_an_image_is_no_longer_replaced_by_a_note_on_the_request_path() -> None:
    # A declared image model gets the image; before, a text-only model got a note.
    m = _model("anthropic-messages", "image")
    ctx = mw.Context(messages=[mw.UserMessage(content=[PNG])])
    body = get_api(m.api).build_request(m, ctx, resolve_options("local")).body
    assert b"iVBORw0KGgo=" in body and b"omitted" not in body


def test_every_catalog_model_declares_known_kinds_and_text() -> None:
    models = mw.models()
    assert models
    for m in models:
        assert set(m.input) <= {"text", "image", "document", "audio"}, m.id
        assert "text" in m.input, m.id


def test_the_catalog_declares_what_gemini_and_bedrock_models_read() -> None:
    gemini = mw.get_model("google", "gemini-2.5-flash")
    assert set(gemini.input) == {"text", "image", "document", "audio"}
    claude = mw.get_model("amazon-bedrock", "anthropic.claude-haiku-4-5-20251001-v1:0")
    assert "document" in claude.input
    ctx = mw.Context(messages=[mw.UserMessage(content=[PDF])])
    check_input(gemini, ctx)  # a PDF for Gemini is declared, so accepted


def test_the_catalog_validator_knows_the_same_kinds() -> None:
    import json

    from modelwire._catalog import validate_catalog

    text = (Path(mw.__file__).parent / "data" / "models.json").read_text(encoding="utf-8")
    data = json.loads(text)
    data["providers"][0]["models"][0]["input"] = ["text", "video"]
    with pytest.raises(mw.ConfigurationError, match="optionally audio, document, image once"):
        validate_catalog(json.dumps(data))


def test_a_custom_stream_function_gets_only_what_its_model_accepts() -> None:
    seen: list[mw.Context] = []

    def fn(model: mw.Model, ctx: mw.Context, options: Any) -> Any:
        seen.append(ctx)
        return iter(())

    register_wire_api(fn, "input-checked-custom")
    model = mw.Model(
        id="c-1", api="input-checked-custom", provider="local", base_url="http://127.0.0.1:9"
    )
    ctx = mw.Context(messages=[mw.UserMessage(content=(mw.TextContent(text="look"), PNG))])
    with pytest.raises(mw.ConfigurationError, match=r"messages\[0\]\.content\[1\]"):
        mw.complete_sync(model, ctx)
    assert seen == []  # refused before the function was called
