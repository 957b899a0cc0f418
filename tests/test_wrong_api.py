"""Replaying (or streaming) one API's body with another ``api``: a
``malformed_chunk`` naming the field the chosen API needed and the API the
payload looks like — never msgspec's bare "Expected `object`, got `array`", never
a mere truncated stream.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import modelwire as mw
from eventlist import final
from modelwire._pipeline import replay

DATA = Path(__file__).resolve().parent / "data"
STREAMS = {
    "openai-chat": DATA / "openai-chat" / "text-then-tool-call.sse",
    "openai-responses": DATA / "openai-responses" / "items-whole-in-done.sse",
    "anthropic-messages": DATA / "anthropic" / "tool-input-in-start.sse",
    "google-generative-ai": DATA / "google" / "SYNTHETIC-text-then-call.sse",
}


def needed(source: str, api: str) -> str:
    """The field ``api`` needed from ``source``'s first payload, as the error says it."""
    if api == "openai-chat":
        return "choices is missing"
    if api == "google-generative-ai":
        return "candidates is missing"
    if source in ("openai-chat", "google-generative-ai"):
        return "type is missing"
    first = {"openai-responses": "response.created", "anthropic-messages": "message_start"}
    kind = "a Responses" if api == "openai-responses" else "an Anthropic Messages"
    return f"type {first[source]!r} is not {kind} stream event"


PAIRS = [(a, b) for a, b in itertools.permutations(STREAMS, 2)]


def test_each_stream_decodes_with_its_own_api() -> None:
    for api, path in STREAMS.items():
        events = replay(api, path.read_bytes())
        assert events[-1].type == "done", (api, final(events).error)
        assert events[-1].message.tool_calls


@pytest.mark.parametrize(("source", "api"), PAIRS, ids=lambda x: str(x))
def test_wrong_api_names_the_field_and_the_right_api(source: str, api: str) -> None:
    assert len(PAIRS) == 12
    events = replay(api, STREAMS[source].read_bytes())
    end = events[-1]
    assert end.type == "error"
    err = end.message.error
    assert err is not None and err.kind == "malformed_chunk"
    assert needed(source, api) in err.message
    assert f"looks like {source} output, not {api}" in err.message
    assert f"api={source!r}" in err.message
    assert "Expected `" not in err.message
    assert end.message.content == ()  # nothing from a foreign payload is content
    with pytest.raises(mw.errors.MalformedChunkError, match=f"api={source!r}"):
        end.message.raise_for_error()


@pytest.mark.parametrize(("source", "api"), PAIRS[:3], ids=lambda x: str(x))
def test_wrong_api_diagnosis_at_every_split_point(source: str, api: str) -> None:
    raw = STREAMS[source].read_bytes()
    whole = replay(api, raw).message.error
    for i in range(1, len(raw)):
        assert replay(api, [raw[:i], raw[i:]]).message.error == whole, i


def test_payloads_without_content_first_are_not_misjudged() -> None:
    # Vertex opens with a usage-only chunk, Anthropic may send ping first: each is
    # its own API's, so nothing is said about another API.
    gemini = (
        b'data: {"usageMetadata":{"trafficType":"ON_DEMAND"}}\n\n'
        + STREAMS["google-generative-ai"].read_bytes()
    )
    assert replay("google-generative-ai", gemini)[-1].type == "done"
    anthropic = (
        b'event: ping\ndata: {"type":"ping"}\n\n' + STREAMS["anthropic-messages"].read_bytes()
    )
    assert replay("anthropic-messages", anthropic)[-1].type == "done"


def test_a_foreign_looking_event_after_the_first_recognised_one_is_ignored() -> None:
    # Forward compatibility (unknown events are ignored) wins once the stream is known.
    raw = STREAMS["anthropic-messages"].read_bytes()
    head, sep, tail = raw.partition(b"\n\n")
    odd = b'event: future_thing\ndata: {"type":"future_thing","choices":[]}\n\n'
    events = replay("anthropic-messages", head + sep + odd + tail)
    assert events[-1].type == "done"


def test_ambiguous_payloads_keep_the_decoders_own_error() -> None:
    # {"type":"error"} exists in both Anthropic and Responses: no suggestion.
    body = b'data: {"type":"error","error":{"type":"overloaded_error","message":"busy"}}\n\n'
    err = replay("anthropic-messages", body).message.error
    assert err is not None and err.kind == "overloaded" and "looks like" not in err.message


def test_wrong_api_on_the_live_path() -> None:
    body = STREAMS["google-generative-ai"].read_bytes()
    with mw.testing.MockServer([mw.testing.Reply(body=body, chunk_size=7)]) as server:
        msg = mw.complete_sync(server.model("openai-chat"), mw.Context(
            messages=[mw.UserMessage(content="hi")]), max_retries=0)  # fmt: skip
    assert msg.stop_reason == "error" and msg.error is not None
    assert msg.error.kind == "malformed_chunk"
    assert "choices is missing" in msg.error.message
    assert "api='google-generative-ai'" in msg.error.message
