"""OpenAI Responses background responses (``background=True``): a broken stream is
picked up again with ``GET /responses/{id}?stream=true&starting_after=N`` — at every
cut point of a scripted stream, no event missing and none twice — and
``mw.resume_stream`` / ``mw.cancel_response`` (and their sync twins) by id.
OpenAI API reference, "Background mode"."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

import modelwire as mw
from modelwire._apis import get_api
from modelwire._apis.openai_responses._background import BackgroundDecoding
from modelwire._wire.pipeline import Pipeline
from modelwire.events import DoneEvent, ErrorEvent, Event
from modelwire.testing import MockServer, Reply, Retrieval
from recorded import recorded_streams

FIXTURES = recorded_streams("openai-responses")

# A fixed response id: every scripted response renders the same bytes.
SCRIPT = mw.AssistantMessage(
    content=[
        mw.TextContent(text="Reading the README for you now."),
        mw.ToolCall(id="call_1", name="read", arguments={"path": "README.md"}),
    ],
    api="openai-responses", provider="mock", model="mock-model", usage=mw.Usage(),
    stop_reason="tool_use", response_id="resp_bg1",
)  # fmt: skip
CTX = mw.Context(
    messages=[mw.UserMessage(content="Read README.md")],
    tools=[
        mw.ToolDefinition(name="read", description="Read a file", parameters={"type": "object"})
    ],
)
FAST = mw.Timeout(connect=5, idle=5)


def _key(events: list[Event]) -> list[tuple[Any, ...]]:
    return [(e.type, getattr(e, "content_index", None), getattr(e, "delta", None)) for e in events]


def _final(events: list[Event]) -> mw.AssistantMessage:
    last = events[-1]
    assert isinstance(last, DoneEvent | ErrorEvent)
    return last.message


def _same_message(a: mw.AssistantMessage, b: mw.AssistantMessage) -> None:
    assert (a.content, a.stop_reason, a.usage, a.response_id, a.error) == (
        b.content, b.stop_reason, b.usage, b.response_id, b.error,
    )  # fmt: skip


def _frame_ends(server: MockServer) -> list[int]:
    """The byte offset where each SSE event of the scripted body ends."""
    stored = next(iter(server.background.responses.values()))
    ends, at = [], 0
    for _, frame in stored.events:
        at += len(frame)
        ends.append(at)
    return ends


def _cuts(ends: list[int]) -> list[int]:
    # Every event boundary, one byte into every event, and mid-event.
    starts = [0, *ends[:-1]]
    return sorted({c for s, e in zip(starts, ends, strict=True) for c in (s, s + 1, (s + e) // 2)}
                  | {ends[-1]})  # fmt: skip


# --------------------------------------------------------------------------- the option


def test_background_sends_background_and_store() -> None:
    with MockServer([Reply(message=SCRIPT)]) as server:
        m = mw.complete_sync(server.model("openai-responses"), CTX, background=True)
    body = server.requests[0].json()
    assert (body["background"], body["store"], body["stream"]) == (True, True, True)
    assert m.stop_reason == "tool_use" and m.response_id


def test_background_is_refused_by_other_apis_and_must_be_a_bool() -> None:
    model = mw.Model(id="m", api="openai-chat", provider="local", base_url="http://127.0.0.1:9/v1")
    refused = r"background=True needs an API that runs responses in the background \(OpenAI"
    with pytest.raises(mw.ConfigurationError, match=refused):
        mw.stream_sync(model, "hi", background=True)
    responses = mw.Model(id="m", api="openai-responses", provider="local",
                         base_url="http://127.0.0.1:9/v1")  # fmt: skip
    with pytest.raises(mw.ConfigurationError, match="background must be a bool"):
        mw.stream(responses, "hi", background="yes")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- picked up again


def test_a_cut_at_every_point_is_picked_up_sync() -> None:
    with MockServer([Reply(message=SCRIPT)]) as server:
        model = server.model("openai-responses")
        whole = list(mw.stream_sync(model, CTX, background=True))
        assert whole[-1].type == "done"
        ends = _frame_ends(server)
        for cut in _cuts(ends):
            server.requests.clear()
            server.add(Reply(message=SCRIPT, cut_after=cut))
            events = list(mw.stream_sync(model, CTX, background=True, timeout=FAST))
            _check_cut(server, whole, events, cut, ends)


@pytest.mark.anyio
async def test_a_cut_at_every_point_is_picked_up_async() -> None:
    with MockServer([Reply(message=SCRIPT)]) as server:
        model = server.model("openai-responses")
        whole = [e async for e in mw.stream(model, CTX, background=True)]
        ends = _frame_ends(server)
        for cut in _cuts(ends):
            server.requests.clear()
            server.add(Reply(message=SCRIPT, cut_after=cut))
            events = [e async for e in mw.stream(model, CTX, background=True, timeout=FAST)]
            _check_cut(server, whole, events, cut, ends)


def _check_cut(
    server: MockServer, whole: list[Event], events: list[Event], cut: int, ends: list[int]
) -> None:
    methods = [r.method for r in server.requests]
    if cut < ends[0]:
        # response.created never arrived whole: no id to pick up, and the POST is
        # never sent again.
        error = _final(events).error
        assert events[-1].type == "error" and error is not None, cut
        assert error.kind == "stream_interrupted"
        assert methods == ["POST"], cut
        return
    assert _key(events) == _key(whole), cut
    _same_message(_final(events), _final(whole))
    if cut >= ends[-1]:
        assert methods == ["POST"], cut  # the terminal event came before the cut
    else:
        assert methods == ["POST", "GET"], cut
        after = max(n for n, _ in _stored(server) if _end_of(server, n) <= cut)
        assert server.requests[1].path.endswith(f"?stream=true&starting_after={after}")


def _stored(server: MockServer) -> list[tuple[int, bytes]]:
    return next(iter(server.background.responses.values())).events


def _end_of(server: MockServer, seq: int) -> int:
    at = 0
    for n, frame in _stored(server):
        at += len(frame)
        if n == seq:
            return at
    raise AssertionError(seq)


def test_a_server_that_resends_old_events_is_deduplicated() -> None:
    with MockServer([Reply(message=SCRIPT)]) as server:
        model = server.model("openai-responses")
        whole = list(mw.stream_sync(model, CTX, background=True))
        ends = _frame_ends(server)
        server.background.retrievals.append(Retrieval(resend=4))
        server.add(Reply(message=SCRIPT, cut_after=ends[6] + 3))
        events = list(mw.stream_sync(model, CTX, background=True, timeout=FAST))
    assert _key(events) == _key(whole)
    _same_message(_final(events), _final(whole))


@pytest.mark.anyio
async def test_retries_exhausted_end_with_the_typed_error() -> None:
    with MockServer([Reply(message=SCRIPT)]) as server:
        model = server.model("openai-responses")
        await mw.complete(model, CTX, background=True)
        ends = _frame_ends(server)
        server.requests.clear()
        server.background.retrievals.append(Retrieval(cut_after=0))
        server.add(Reply(message=SCRIPT, cut_after=ends[3] + 1))
        events = [e async for e in mw.stream(model, CTX, background=True, max_retries=1)]
        final = _final(events)
        assert events[-1].type == "error" and final.error is not None
        assert final.error.kind == "stream_interrupted"
        with pytest.raises(mw.errors.StreamInterruptedError):
            final.raise_for_error()
        assert [r.method for r in server.requests] == ["POST", "GET"]
        # What was delivered is kept, and never delivered twice.
        assert [e.type for e in events].count("text_start") == 1


def test_a_retrieval_refused_with_a_status_is_that_typed_error() -> None:
    with MockServer([Reply(message=SCRIPT)]) as server:
        model = server.model("openai-responses")
        mw.complete_sync(model, CTX, background=True)
        ends = _frame_ends(server)
        server.background.retrievals.append(Retrieval(status=404))
        server.add(Reply(message=SCRIPT, cut_after=ends[3] + 1))
        final = mw.complete_sync(model, CTX, background=True, max_retries=1)
    assert final.error is not None and final.error.kind == "not_found"
    # The error names the request that failed, a GET, with no hint about where
    # responses are created (that is for the POST).
    assert "HTTP 404 from GET " in final.error.message
    assert "may serve only" not in final.error.message


def test_picking_up_an_unknown_id_is_a_plain_not_found() -> None:
    with MockServer(["hi"]) as server:
        message = mw.resume_stream_sync(server.model("openai-responses"), "resp_nope").result()
    assert message.error is not None and message.error.kind == "not_found"
    assert message.error.message.startswith("HTTP 404 from GET ")
    assert "resp_nope" in message.error.message and "may serve only" not in message.error.message


@pytest.mark.parametrize("background", [False, None])
def test_without_background_a_cut_stays_an_error_and_nothing_is_resent(
    background: bool | None,
) -> None:
    opts: Any = {} if background is None else {"background": background}
    with MockServer([Reply(message=SCRIPT, cut_after=1500)]) as server:
        final = mw.complete_sync(server.model("openai-responses"), CTX, **opts)
    assert final.error is not None and final.error.kind == "stream_interrupted"
    assert len(server.requests) == 1 and "background" not in server.requests[0].json()


def test_on_another_api_a_cut_stays_an_error() -> None:
    with MockServer([Reply(message=SCRIPT, cut_after=200)]) as server:
        final = mw.complete_sync(server.model("openai-chat"), CTX)
    assert final.error is not None and final.error.kind == "stream_interrupted"
    assert len(server.requests) == 1


# --------------------------------------------------------------------------- by id


@pytest.mark.anyio
async def test_resume_stream_whole_and_after_n() -> None:
    with MockServer([Reply(message=SCRIPT)]) as server:
        model = server.model("openai-responses")
        whole = [e async for e in mw.stream(model, CTX, background=True)]
        rid = _final(whole).response_id
        assert rid is not None
        again = [e async for e in mw.resume_stream(model, rid)]
        assert _key(again) == _key(whole)
        _same_message(_final(again), _final(whole))
        # After N: only the events past N (here: the tool call's, the text's are before).
        stored = _stored(server)
        call_added = next(n for n, f in stored if b'"function_call"' in f and b"item.added" in f)
        tail = [e async for e in mw.resume_stream(model, rid, after=call_added - 1)]
        assert [e.type for e in tail][:2] == ["start", "tool_call_start"]
        final = _final(tail)
        assert final.response_id == rid and final.stop_reason == "tool_use"
        # The text item, ended before N, is filled in from response.completed's output
        # (after the blocks the stream showed).
        assert final.tool_calls == _final(whole).tool_calls
        assert final.text == _final(whole).text
        # A message item cut at N holds its text from N on.
        text_delta = next(n for n, f in stored if b"output_text.delta" in f)
        cut = await mw.resume_stream(model, rid, after=text_delta).result()
        assert cut.stop_reason == "tool_use" and cut.tool_calls == final.tool_calls
        assert _final(whole).text.endswith(cut.text) and cut.text != _final(whole).text
        assert [(r.method, r.path.partition("?")[2]) for r in server.requests] == [
            ("POST", ""),
            ("GET", "stream=true"),
            ("GET", f"stream=true&starting_after={call_added - 1}"),
            ("GET", f"stream=true&starting_after={text_delta}"),
        ]


def test_resume_stream_sync_whole_and_after_n() -> None:
    with MockServer([Reply(message=SCRIPT)]) as server:
        model = server.model("openai-responses")
        whole = mw.complete_sync(model, CTX, background=True)
        assert whole.response_id is not None
        again = mw.resume_stream_sync(model, whole.response_id).result()
        _same_message(again, whole)
        last = _stored(server)[-1][0]
        # After the terminal event nothing is left: a truncated stream, typed.
        empty = mw.resume_stream_sync(model, whole.response_id, after=last, max_retries=0)
        assert empty.result().error is not None


def test_resume_stream_checks_its_arguments() -> None:
    model = mw.Model(id="m", api="openai-responses", provider="local",
                     base_url="http://127.0.0.1:9/v1")  # fmt: skip
    with pytest.raises(mw.ConfigurationError, match="response_id"):
        mw.resume_stream_sync(model, "")
    with pytest.raises(mw.ConfigurationError, match="after"):
        mw.resume_stream(model, "resp_1", after=-1)
    chat = mw.Model(id="m", api="openai-chat", provider="local", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(mw.ConfigurationError, match="background=True needs"):
        mw.resume_stream(chat, "resp_1")


@pytest.mark.anyio
async def test_cancel_response_and_its_sync_twin() -> None:
    with MockServer([Reply(message=SCRIPT)]) as server:
        model = server.model("openai-responses")
        m = await mw.complete(model, CTX, background=True)
        assert m.response_id is not None
        assert await mw.cancel_response(model, m.response_id) == "cancelled"
        assert mw.cancel_response_sync(model, m.response_id) == "cancelled"
        assert server.background.responses[m.response_id].cancelled
        # GET /v1/responses/{id}: the response object, as it stands.
        with urllib.request.urlopen(f"{server.base_url}/responses/{m.response_id}") as r:
            obj = json.loads(r.read())
        assert (obj["id"], obj["status"]) == (m.response_id, "cancelled")
        server.requests.pop()
        assert [(r.method, r.path) for r in server.requests][1:] == [
            ("POST", f"/v1/responses/{m.response_id}/cancel"),
        ] * 2
        with pytest.raises(mw.errors.NotFoundError):
            mw.cancel_response_sync(model, "resp_unknown")


# --------------------------------------------------------------------------- recorded bytes


@pytest.mark.parametrize(
    "name", ["background-mode-queued.sse", "background-resume-starting-after.sse"]
)
def test_recorded_background_streams_cut_and_resent_decode_as_whole(name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    wire = get_api("openai-responses")
    reference = mw.replay("openai-responses", [data])
    frames = [f + b"\n\n" for f in data.split(b"\n\n") if f.strip()]
    at = 0
    for frame in frames:
        at += len(frame)
        for cut in (at - len(frame) // 2, at):
            # The body cut, then the whole stream sent again (a server that resends):
            # the sequence numbers drop what was decoded already.
            p = Pipeline(BackgroundDecoding(wire), api="openai-responses")
            events = p.start() + p.feed(data[:cut])
            p.reframe()
            events += p.feed(data) + (p.end() if not p.done else [])
            assert _key(events) == _key(reference), (name, cut)
            assert _final(events).text == _final(reference).text
    assert p.decoder.response_id is not None and p.decoder.response_id.startswith("resp_")  # type: ignore[attr-defined]


def test_a_stall_past_the_idle_timeout_is_picked_up() -> None:
    with MockServer([Reply(message=SCRIPT)]) as server:
        model = server.model("openai-responses")
        whole = list(mw.stream_sync(model, CTX, background=True))
        ends = _frame_ends(server)
        # The stall is released when the server stops; the idle timeout ends the read.
        server.add(Reply(message=SCRIPT, stall_after=ends[5] + 2, stall_seconds=30))
        idle = mw.Timeout(connect=5, idle=0.2)
        events = list(mw.stream_sync(model, CTX, background=True, timeout=idle))
    assert _key(events) == _key(whole)
    assert [r.method for r in server.requests][1:] == ["POST", "GET"]


def test_an_explicit_pick_up_that_breaks_is_picked_up_again() -> None:
    with MockServer([Reply(message=SCRIPT)]) as server:
        model = server.model("openai-responses")
        whole = list(mw.stream_sync(model, CTX, background=True))
        ends = _frame_ends(server)
        server.background.retrievals.append(Retrieval(cut_after=ends[8] + 5))
        again = list(mw.resume_stream_sync(model, "resp_bg1", timeout=FAST))
    assert _key(again) == _key(whole)
    _same_message(_final(again), _final(whole))
    paths = [r.path for r in server.requests][1:]
    assert paths == [
        "/v1/responses/resp_bg1?stream=true",
        f"/v1/responses/resp_bg1?stream=true&starting_after={_stored(server)[8][0]}",
    ]


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["httpx", "aiohttp", "httptools"])
async def test_every_async_transport_picks_up_with_a_get(transport: Any) -> None:
    with MockServer([Reply(message=SCRIPT)]) as server:
        model = server.model("openai-responses")
        whole = [e async for e in mw.stream(model, CTX, background=True)]
        ends = _frame_ends(server)
        server.add(Reply(message=SCRIPT, cut_after=ends[5] + 7))
        events = [
            e
            async for e in mw.stream(model, CTX, background=True, transport=transport, timeout=FAST)
        ]
    assert _key(events) == _key(whole)
    get = server.requests[-1]
    assert (get.method, get.body) == ("GET", b"")
