"""Replaying (or streaming) one API's body with another ``api``: a
``malformed_chunk`` naming the API the body looks like (every registered API is
asked: ``WireCodec.recognizes``) and, when the chosen decoder needed a field, that
field — never msgspec's bare "Expected `object`, got `array`", never a mere
truncated stream. The pairs come from the registry: a new API is covered as soon as
it is registered.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import modelwire as mw
from eventlist import final
from modelwire._apis import DEFAULT_API, api_names, builtin_api_names, recognizing
from modelwire._client._replay import replay
from modelwire.testing import render
from recorded import PLACEHOLDER, recorded_streams

DATA = Path(__file__).resolve().parent / "data"
FIXTURES = recorded_streams()
# Every recorded body: ours under tests/data and the shared provider recordings (a
# placeholder when that folder is absent: conftest skips it). Which API each belongs to
# is decided as the fidelity suite decides it (its folder, else the registry).
RECORDINGS = sorted(
    p
    for p in [*DATA.rglob("*"), *FIXTURES.rglob("*")]
    if p.suffix in (".sse", ".ndjson", ".bin") or PLACEHOLDER in p.name
)
STREAMS = {
    "openai-chat": DATA / "openai-chat" / "text-then-tool-call.sse",
    "openai-responses": DATA / "openai-responses" / "items-whole-in-done.sse",
    "anthropic-messages": DATA / "anthropic" / "tool-input-in-start.sse",
    "google-generative-ai": DATA / "google" / "SYNTHETIC-text-then-call.sse",
}


SCRIPT: list[str | mw.ToolCall] = [
    "Hello there, ",
    mw.ToolCall(id="call_1", name="read", arguments={"path": "a.txt"}),
]


def rendered() -> dict[str, bytes]:
    """A body of every registered API with a server side, rendered by the API."""
    from modelwire._apis import find_server

    # Stream functions have no codec, a codec registered without server= no renderer.
    return {n: render(SCRIPT, n, piece_chars=5) for n in api_names() if find_server(n)}


def pairs() -> list[tuple[str, str]]:
    return list(itertools.permutations(rendered(), 2))


def test_each_stream_decodes_with_its_own_api() -> None:
    for api, path in STREAMS.items():
        events = replay(api, path.read_bytes())
        assert events[-1].type == "done", (api, final(events).error)
        assert events[-1].message.tool_calls
    for api, body in rendered().items():
        assert replay(api, body)[-1].type == "done", api
        # Each body is recognised by its own API and by no other.
        assert recognizing(body) == [api], api


def check_wrong(events: list[mw.Event], source: str, api: str) -> str:
    end = events[-1]
    assert end.type == "error", (source, api)
    err = end.message.error
    assert err is not None and err.kind == "malformed_chunk", (source, api, err)
    assert f"looks like {source} output, not {api}" in err.message
    assert f"api={source!r}" in err.message
    assert "Expected `" not in err.message
    assert end.message.content == ()  # nothing from a foreign payload is content
    with pytest.raises(mw.errors.MalformedChunkError, match=f"api={source!r}"):
        end.message.raise_for_error()
    return err.message


def test_every_pair_of_registered_apis_names_the_right_one() -> None:
    bodies = rendered()
    assert set(builtin_api_names()) <= set(bodies)
    for source, api in pairs():
        check_wrong(replay(api, bodies[source]), source, api)


@pytest.mark.parametrize(("source", "api"), list(itertools.permutations(STREAMS, 2)),
                         ids=lambda x: str(x))  # fmt: skip
def test_recorded_streams_under_the_wrong_api(source: str, api: str) -> None:
    message = check_wrong(replay(api, STREAMS[source].read_bytes()), source, api)
    if source in ("openai-chat", "google-generative-ai") and api in (
        "openai-responses",
        "anthropic-messages",
    ):
        assert "type is missing" in message  # the field the chosen decoder needed


def test_wrong_api_diagnosis_at_every_split_point() -> None:
    bodies = rendered()
    for source, api in pairs():
        if api != DEFAULT_API:
            continue
        raw = bodies[source]
        whole = diagnosis(replay(api, raw))
        assert f"api={source!r}" in whole
        for i in range(1, len(raw)):
            assert diagnosis(replay(api, [raw[:i], raw[i:]])) == whole, (source, i)
        assert diagnosis(replay(api, [raw[i : i + 1] for i in range(len(raw))])) == whole


def diagnosis(events: list[mw.Event]) -> str:
    """The kind and the wrong-API verdict of a failed replay (an SSE framing error
    also says how many bytes were fed, which depends on the split)."""
    err = events[-1].message.error  # type: ignore[union-attr]
    assert err is not None
    return f"{err.kind}: {err.message.rpartition('; it looks like ')[2]}"


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
    assert "looks like google-generative-ai output, not openai-chat" in msg.error.message
    assert "api='google-generative-ai'" in msg.error.message


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_recording_under_every_other_api(path: Path) -> None:
    """The pairs above, over what providers really sent rather than our renders: a
    recording decoded with any other built-in API names its own. A body no API
    recognizes (it opens with an error) cannot be attributed; it must still fail."""
    from test_recorded_fidelity import api_of

    body = path.read_bytes()
    source = api_of(path)
    attributable = recognizing(body) == [source]
    for api in builtin_api_names():
        if api == source:
            continue
        events = replay(api, body)
        if attributable:
            check_wrong(events, source, api)
        else:
            assert events[-1].type == "error", (path.name, api)
