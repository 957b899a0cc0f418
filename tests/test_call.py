"""The sans-IO Call, driven by a fake transport and a fake clock (no I/O, no waiting),
and its two drivers given the same scripted responses (httpx.MockTransport)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest

import modelwire as mw
from eventlist import final, plain
from modelwire._call import (
    DRAIN_BYTES,
    DRAIN_SECONDS,
    Authorize,
    Call,
    Close,
    Drain,
    Emit,
    Failure,
    Head,
    Intent,
    Read,
    ReadError,
    Send,
    Sleep,
)
from modelwire._client._replay import pipeline_for, replay
from modelwire._wire.pipeline import Pipeline
from modelwire._wire.request import HTTPRequest
from modelwire.errors import (
    AuthenticationError,
    ConnectError,
    RateLimitError,
    StreamError,
    StreamInterruptedError,
)
from modelwire.events import Event
from modelwire.trace import TraceLog

KEY = "sk-call-test-0123456789abcdef"
URL = "http://127.0.0.1:9/v1/chat/completions"
REQUEST = HTTPRequest(
    url=URL,
    headers={"Accept": "text/event-stream", "Authorization": f"Bearer {KEY}"},
    body=b"{}",
    secrets=(KEY,),
)
SSE = {"content-type": "text/event-stream"}


def chunk(text: str) -> bytes:
    return b'data: {"choices":[{"index":0,"delta":{"content":"%s"}}]}\n\n' % text.encode()


FINISH = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def new_call(
    clock: Clock,
    *,
    total: float | None = None,
    retries: int = 2,
    aborted: Callable[[], bool] = lambda: False,
    trace: TraceLog | None = None,
) -> Call:
    p = pipeline_for("openai-chat", secrets=REQUEST.secrets, trace=trace)
    t = mw.Timeout(connect=5, idle=30, total=total)
    return Call(p, REQUEST, timeout=t, max_retries=retries, aborted=aborted,
                clock=clock, rng=lambda: 0.0)  # fmt: skip


class Script:
    """A fake transport: answers each intent from lists, records every intent."""

    def __init__(
        self,
        clock: Clock,
        sends: list[Head | Failure],
        body: list[bytes | Failure | None] | None = None,
        error_body: bytes = b"",
        authorize: HTTPRequest | Failure = REQUEST,
        read_cost: float = 0.0,
    ) -> None:
        self.clock = clock
        self.sends = sends
        self.body = list(body or [])
        self.error_body = error_body
        self.authorize = authorize
        self.read_cost = read_cost
        self.intents: list[Intent] = []
        self.events: list[Event] = []

    def answer(self, intent: Intent) -> Any:
        if isinstance(intent, Authorize):
            return self.authorize
        if isinstance(intent, Send):
            return self.sends.pop(0)
        if isinstance(intent, ReadError):
            return self.error_body
        if isinstance(intent, Sleep):
            self.clock.now += intent.seconds
            return None
        if isinstance(intent, Read):
            self.clock.now += self.read_cost
            return self.body.pop(0)
        if isinstance(intent, Emit):
            self.events += intent.events
        return None

    def run(self, call: Call) -> list[Event]:
        intent = call.first()
        while True:
            self.intents.append(intent)
            if isinstance(intent, Close):
                with pytest.raises(StopIteration):
                    call.send(None)
                return self.events
            intent = call.send(self.answer(intent))

    def kinds(self) -> list[str]:
        return [type(i).__name__ for i in self.intents if not isinstance(i, Emit)]


def error_of(events: list[Event]) -> mw.ErrorInfo:
    err = final(events).error
    assert err is not None
    return err


# --------------------------------------------------------------------------- the Call


def test_a_connect_failure_is_retried_then_the_stream_succeeds() -> None:
    clock = Clock()
    log = TraceLog()
    s = Script(
        clock,
        [Failure(ConnectError("refused")), Head(200, SSE)],
        [chunk("Hel"), chunk("lo"), FINISH, None],
    )
    events = s.run(new_call(clock, trace=log))
    assert final(events).stop_reason == "stop"
    assert final(events).content == (mw.TextContent(text="Hello"),)
    # jitter 0: half the 0.5 s base; the body's end came with its terminal event, so
    # the rest is drained; the response is closed last.
    assert s.kinds() == ["Authorize", "Send", "Sleep", "Send", "Read", "Read", "Read", "Drain",
                         "Close"]  # fmt: skip
    assert [i.seconds for i in s.intents if isinstance(i, Sleep)] == [0.25]
    (retry,) = log.of("retry")
    assert (retry.attempt, retry.kind, retry.status) == (1, "connect", None)  # type: ignore[attr-defined]
    assert [r.status for r in log.of("response")] == [200]  # type: ignore[attr-defined]


def test_the_send_phases_are_cut_to_what_is_left_of_the_deadline() -> None:
    clock = Clock()
    s = Script(clock, [Failure(ConnectError("refused")), Head(200, SSE)], [FINISH])
    s.run(new_call(clock, total=3.0))
    first, second = (i for i in s.intents if isinstance(i, Send))
    assert (first.connect, first.idle, first.remaining) == (3.0, 3.0, 3.0)
    assert (second.connect, second.idle, second.remaining) == (2.75, 2.75, 2.75)


def test_a_retry_after_beyond_the_deadline_ends_at_once_without_sleeping() -> None:
    clock = Clock()
    s = Script(
        clock,
        [Head(429, {"retry-after": "5", "content-type": "application/json"})],
        error_body=b'{"error": {"message": "slow down"}}',
    )
    events = s.run(new_call(clock, total=3.0))
    err = error_of(events)
    assert err.kind == "rate_limit" and err.retry_after == 5.0
    assert "slow down" in err.message and "total timeout leaves" in err.message
    assert s.kinds() == ["Authorize", "Send", "ReadError", "Close"]


def test_a_retry_after_within_the_cap_is_slept_exactly() -> None:
    clock = Clock()
    s = Script(clock, [Head(503, {"retry-after": "7"}), Head(200, SSE)], [FINISH])
    events = s.run(new_call(clock))
    assert final(events).stop_reason == "stop"
    assert [i.seconds for i in s.intents if isinstance(i, Sleep)] == [7.0]


def test_the_total_deadline_during_the_body_ends_it_as_a_timeout_with_the_content() -> None:
    clock = Clock()
    s = Script(clock, [Head(200, SSE)], [chunk("Hi"), chunk("there")], read_cost=2.0)
    events = s.run(new_call(clock, total=3.0))
    err = error_of(events)
    assert err.kind == "timeout" and "total timeout" in err.message
    assert final(events).content == (mw.TextContent(text="Hithere"),)
    # The second read left no time: no third read is started, no drain.
    assert s.kinds() == ["Authorize", "Send", "Read", "Read", "Close"]
    reads = [i.remaining for i in s.intents if isinstance(i, Read)]
    assert reads == [3.0, 1.0]


def test_a_read_failure_after_the_deadline_is_a_total_timeout() -> None:
    # The sync driver ends a blocked read at the deadline by shutting the socket:
    # the read fails as an interrupted stream, and the Call names the real cause.
    clock = Clock()
    cut = Failure(StreamInterruptedError("the connection closed"))
    s = Script(clock, [Head(200, SSE)], [chunk("Hi"), cut], read_cost=2.0)
    err = error_of(s.run(new_call(clock, total=3.0)))
    assert err.kind == "timeout"
    clock = Clock()
    s = Script(clock, [Head(200, SSE)], [chunk("Hi"), cut])
    assert error_of(s.run(new_call(clock, total=3.0))).kind == "stream_interrupted"


def test_drain_follows_the_terminal_event_only_when_the_body_goes_on() -> None:
    clock = Clock()
    s = Script(clock, [Head(200, SSE)], [chunk("Hi") + FINISH + b": trailing\n\n", b"more"])
    events = s.run(new_call(clock))
    assert final(events).stop_reason == "stop"
    assert s.kinds() == ["Authorize", "Send", "Read", "Drain", "Close"]
    (drain,) = (i for i in s.intents if isinstance(i, Drain))
    assert (drain.max_bytes, drain.seconds) == (DRAIN_BYTES, DRAIN_SECONDS)
    # The terminal event is delivered before the drain starts.
    emits = [i for i in s.intents if isinstance(i, Emit | Drain)]
    assert isinstance(emits[-2], Emit) and emits[-2].events[-1].type == "done"
    # A body that ended (EOF) or failed has nothing left to drain.
    ends: list[list[bytes | Failure | None]] = [
        [chunk("Hi"), None],
        [chunk("Hi"), Failure(StreamInterruptedError("cut"))],
    ]
    for body in ends:
        s = Script(clock, [Head(200, SSE)], body)
        s.run(new_call(clock))
        assert "Drain" not in s.kinds()
        assert s.kinds()[-1] == "Close"


def test_a_failing_authorize_ends_typed_and_still_closes() -> None:
    clock = Clock()
    s = Script(clock, [], authorize=Failure(AuthenticationError("no token")))
    events = s.run(new_call(clock))
    assert [e.type for e in events] == ["start", "error"]
    assert error_of(events).kind == "authentication"
    assert s.kinds() == ["Authorize", "Close"]


def test_an_abort_mid_read_ends_aborted_with_the_content_and_closes() -> None:
    clock = Clock()
    s = Script(clock, [Head(200, SSE)], [chunk("Hel"), chunk("lo")])
    call = new_call(clock)
    intent = call.first()
    reads = 0
    while not (isinstance(intent, Read) and reads == 1):  # the second read
        reads += isinstance(intent, Read)
        intent = call.send(s.answer(intent))
    intent = call.abort()  # the task was cancelled while this read waited
    assert isinstance(intent, Emit)
    (last,) = intent.events
    assert last.type == "error" and last.message.stop_reason == "aborted"
    assert last.message.content == (mw.TextContent(text="Hel"),)
    assert isinstance(call.abort(), Close)  # aborted again on the way out: still closes
    assert isinstance(call.abort(), Close)  # and again while closing


def test_a_failure_the_caller_caused_by_aborting_ends_aborted() -> None:
    clock = Clock()
    flag = [False]
    cut = Failure(StreamInterruptedError("socket shut down"))
    s = Script(clock, [Head(200, SSE)], [chunk("Hi"), cut])
    call = new_call(clock, aborted=lambda: flag[0])
    intent = call.first()
    while not isinstance(intent, Close):
        if isinstance(intent, Read) and len(s.body) == 1:
            flag[0] = True  # SyncAssistantMessageStream.abort from another thread
        intent = call.send(s.answer(intent))
    assert final(s.events).stop_reason == "aborted"
    assert final(s.events).content == (mw.TextContent(text="Hi"),)


def test_a_key_quoted_in_an_error_status_body_is_redacted() -> None:
    clock = Clock()
    s = Script(clock, [Head(401, {})], error_body=b'{"error": {"message": "bad key %s"}}'
               % KEY.encode())  # fmt: skip
    err = error_of(s.run(new_call(clock)))
    assert err.kind == "authentication" and KEY not in err.message and "[redacted]" in err.message


def test_a_page_instead_of_the_stream_is_a_provider_stream_error() -> None:
    clock = Clock()
    s = Script(clock, [Head(200, {"content-type": "text/html"})], error_body=b"<html>login</html>")
    err = error_of(s.run(new_call(clock)))
    assert err.kind == "provider_stream" and "text/html" in err.message and "login" in err.message


# --------------------------------------------------------------------------- redaction


def test_redacted_returns_a_copy_and_leaves_the_error_unchanged() -> None:
    err = RateLimitError(f"quota for {KEY} used up", status=429, retry_after=3.0)
    copy = err.redacted([KEY])
    assert copy is not err and type(copy) is RateLimitError
    assert copy.message == "quota for [redacted] used up" and str(copy) == copy.message
    assert (copy.status, copy.retry_after) == (429, 3.0)
    assert copy.to_info().message == copy.message
    assert err.message == f"quota for {KEY} used up" and err.args == (err.message,)
    assert not hasattr(StreamError, "redact")  # no in-place variant left to call


def test_a_failure_keeps_the_drivers_error_unredacted_and_redacts_the_message() -> None:
    # A transport error quoting the key is redacted on the message; the error object
    # the driver handed over is not changed (it may be shared, logged, re-raised).
    clock = Clock()
    raw = StreamInterruptedError(f"reset while sending {KEY}")
    s = Script(clock, [Head(200, SSE)], [chunk("Hi"), Failure(raw)])
    err = error_of(s.run(new_call(clock)))
    assert KEY not in err.message and "[redacted]" in err.message
    assert KEY in raw.message


# --------------------------------------------------------------------------- drivers


class _Body(httpx.SyncByteStream, httpx.AsyncByteStream):
    def __init__(self, parts: list[bytes]) -> None:
        self.parts = parts

    def __iter__(self) -> Iterator[bytes]:
        yield from self.parts

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for p in self.parts:
            yield p


def _handler() -> Callable[[httpx.Request], httpx.Response]:
    # 503 (retried at once), then the stream in pieces that split events anywhere.
    body = chunk("多字节") + chunk(" text") + FINISH
    parts = [body[i : i + 7] for i in range(0, len(body), 7)]
    replies = [
        lambda: httpx.Response(503, headers={"retry-after": "0"}, content=b"busy"),
        lambda: httpx.Response(200, headers=SSE, stream=_Body(parts)),
    ]

    def handle(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == f"Bearer {KEY}"
        return replies.pop(0)()

    return handle


def _run_sync(log: TraceLog) -> list[Event]:
    from modelwire._http import SyncDriver

    call = new_call(Clock(), trace=log)
    call = Call(call.pipeline, REQUEST, timeout=mw.Timeout(), max_retries=2)
    with httpx.Client(transport=httpx.MockTransport(_handler())) as client:
        return [e for batch in SyncDriver(call, client).events() for e in batch]


def _run_async(log: TraceLog) -> list[Event]:
    from modelwire._http import AsyncDriver

    async def run() -> list[Event]:
        p = pipeline_for("openai-chat", secrets=REQUEST.secrets, trace=log)
        call = Call(p, REQUEST, timeout=mw.Timeout(), max_retries=2)
        out: list[Event] = []
        async with httpx.AsyncClient(transport=httpx.MockTransport(_handler())) as client:
            d = AsyncDriver(call, client)
            while (batch := await d.next()) is not None:
                out += batch
        return out

    return asyncio.run(run())


def test_the_sync_and_the_async_driver_give_identical_events_and_trace() -> None:
    logs = TraceLog(), TraceLog()
    sync, async_ = _run_sync(logs[0]), _run_async(logs[1])
    assert final(sync).content == (mw.TextContent(text="多字节 text"),)
    assert plain(sync) == plain(async_)
    layers = [[(r.layer, r.id, r.parent) for r in log.records] for log in logs]
    assert layers[0] == layers[1]
    assert ("retry", "retry-1", "request") in layers[0]


# --------------------------------------------------------------------------- trace


def _bodies() -> dict[str, tuple[str, bytes]]:
    good = chunk("Hi") + chunk(" there") + FINISH
    return {
        "done": ("openai-chat", good),
        "malformed": ("openai-chat", chunk("Hi") + b'data: {"choices": 3}\n\n' + FINISH),
        "truncated": ("openai-chat", chunk("Hi") + b'data: {"choi'),
        "no finish": ("openai-chat", chunk("Hi")),
        "tool protocol": (
            "openai-chat",
            b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
            b"data: [DONE]\n\n",
        ),
        "anthropic": (
            "anthropic-messages",
            b'event: message_start\ndata: {"type":"message_start","message":{"id":"m",'
            b'"type":"message","role":"assistant","content":[],"model":"c","usage":'
            b'{"input_tokens":3,"output_tokens":1}}}\n\n'
            b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
            b'"content_block":{"type":"text","text":""}}\n\n'
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
            b'"delta":{"type":"text_delta","text":"Hi"}}\n\n'
            b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
            b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":'
            b'"end_turn"},"usage":{"output_tokens":2}}\n\n'
            b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
        ),
    }


@pytest.mark.parametrize("name", list(_bodies()))
@pytest.mark.parametrize("size", [1, 5, 64, 100_000])
def test_the_traced_and_the_untraced_loop_give_identical_events(name: str, size: int) -> None:
    api, body = _bodies()[name]
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    untraced = replay(api, pieces)
    log = TraceLog()
    traced = replay(api, pieces, trace=log)
    assert plain(traced) == plain(untraced)
    assert [r.event for r in log.of("event")] == list(traced)  # type: ignore[attr-defined]
    if name != "done" and name != "anthropic":
        assert final(traced).stop_reason == "error" and len(log.of("error")) == 1


# --------------------------------------------------------------------------- in-band errors


def overloaded_frame() -> bytes:
    # OpenAI-compatible servers (Groq, vLLM) send the error as a data payload after the 200.
    from modelwire.testing._render import in_band_error

    return in_band_error("openai-chat", "Overloaded, try again")


def retrying_call(clock: Clock, *, total: float | None = None, retries: int = 2,
                  trace: TraceLog | None = None) -> Call:  # fmt: skip
    def fresh() -> Pipeline:
        return pipeline_for("openai-chat", secrets=REQUEST.secrets, trace=trace)

    t = mw.Timeout(connect=5, idle=30, total=total)
    return Call(fresh(), REQUEST, timeout=t, max_retries=retries, clock=clock,
                rng=lambda: 0.0, new_pipeline=fresh)  # fmt: skip


def test_an_in_band_error_before_any_content_is_retried_like_a_status() -> None:
    clock = Clock()
    log = TraceLog()
    s = Script(clock, [Head(200, SSE), Head(200, SSE)],
               [overloaded_frame(), chunk("Hi"), FINISH])  # fmt: skip
    events = s.run(retrying_call(clock, trace=log))
    assert final(events).stop_reason == "stop" and final(events).text == "Hi"
    # The failed attempt is not delivered: one start, one terminal.
    assert [e.type for e in events].count("start") == 1
    assert not any(e.type == "error" for e in events)
    assert s.kinds() == ["Authorize", "Send", "Read", "Sleep", "Authorize", "Send", "Read",
                         "Read", "Drain", "Close"]  # fmt: skip
    assert [i.seconds for i in s.intents if isinstance(i, Sleep)] == [0.25]
    (retry,) = log.of("retry")
    assert (retry.attempt, retry.kind, retry.status) == (1, "overloaded", None)  # type: ignore[attr-defined]


def test_an_in_band_error_after_content_is_never_retried() -> None:
    clock = Clock()
    s = Script(clock, [Head(200, SSE), Head(200, SSE)], [chunk("Hi"), overloaded_frame()])
    events = s.run(retrying_call(clock))
    err = error_of(events)
    assert err.kind == "overloaded" and final(events).text == "Hi"
    assert s.kinds().count("Send") == 1 and "Sleep" not in s.kinds()


def test_in_band_retries_share_the_retry_budget_and_the_deadline() -> None:
    clock = Clock()
    s = Script(clock, [Head(200, SSE)] * 3, [overloaded_frame()] * 3)
    events = s.run(retrying_call(clock, retries=1))
    assert error_of(events).kind == "overloaded"
    assert s.kinds().count("Send") == 2  # the first try and one retry
    clock = Clock()
    s = Script(clock, [Head(200, SSE)] * 2, [overloaded_frame()] * 2, read_cost=0.9)
    events = s.run(retrying_call(clock, total=1.0))
    # 0.1 s left of the deadline, less than the 0.25 s backoff: not retried.
    assert error_of(events).kind == "overloaded"
    assert s.kinds().count("Send") == 1


def test_a_cut_stream_before_content_is_not_an_in_band_retry() -> None:
    clock = Clock()
    s = Script(clock, [Head(200, SSE)] * 2, [Failure(StreamInterruptedError("reset"))])
    events = s.run(retrying_call(clock))
    assert error_of(events).kind == "stream_interrupted"
    assert s.kinds().count("Send") == 1


# --------------------------------------------------------------------------- a first read


ROLE = b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'


def test_a_first_read_delivers_its_first_content_before_decoding_the_rest() -> None:
    """A body's first read often holds many events: the first content is emitted from
    its first ``FIRST_PIECE`` bytes, the rest of the read is fed after that Emit
    (without another Read), and the events are those of the read fed whole."""
    from modelwire._call import FIRST_PIECE

    body = ROLE + b"".join(chunk(f"w{i:03d} ") for i in range(100)) + FINISH
    assert len(body) > 8 * FIRST_PIECE
    clock = Clock()
    s = Script(clock, [Head(200, SSE)], [body, None])
    events = s.run(new_call(clock))
    emits = [i.events for i in s.intents if isinstance(i, Emit)]
    assert [e.type for e in emits[0]] == ["start"]
    # The second Emit: the chunks that end within the first piece, no more.
    within = (FIRST_PIECE - len(ROLE)) // len(chunk("w000 "))
    assert [e.type for e in emits[1]] == ["text_start"] + ["text_delta"] * within
    assert emits[1][1].delta == "w000 "  # type: ignore[union-attr]
    assert s.kinds() == ["Authorize", "Send", "Read", "Drain", "Close"]
    whole = replay("openai-chat", [body])
    assert plain(events) == plain(whole)
    assert final(events).text == "".join(f"w{i:03d} " for i in range(100))
    # Traced, the read is fed as it came: one Emit for all its events.
    clock = Clock()
    s = Script(clock, [Head(200, SSE)], [body, None])
    traced = s.run(new_call(clock, trace=TraceLog()))
    assert plain(traced) == plain(events)
    assert len([i for i in s.intents if isinstance(i, Emit)]) == 2


def test_a_burst_after_an_eventless_first_read_delivers_its_first_content_first() -> None:
    """The first read holds only the role chunk (no event); the next holds the whole
    answer at once: that read too is fed in pieces until the first content is out,
    and later reads are fed whole."""
    from modelwire._call import FIRST_PIECE

    burst = b"".join(chunk(f"w{i:03d} ") for i in range(100))
    late = b"".join(chunk(f"x{i:03d} ") for i in range(100))
    assert len(burst) > 8 * FIRST_PIECE and len(late) > 8 * FIRST_PIECE
    clock = Clock()
    s = Script(clock, [Head(200, SSE)], [ROLE, burst, late + FINISH, None])
    events = s.run(new_call(clock))
    emits = [i.events for i in s.intents if isinstance(i, Emit)]
    assert [e.type for e in emits[0]] == ["start"]
    within = FIRST_PIECE // len(chunk("w000 "))
    assert [e.type for e in emits[1]] == ["text_start"] + ["text_delta"] * within
    assert [e.type for e in emits[2]] == ["text_delta"] * (100 - within)
    # The third read comes out in one Emit: the body had given its first event.
    assert [e.type for e in emits[3]][:100] == ["text_delta"] * 100
    assert s.kinds() == ["Authorize", "Send", "Read", "Read", "Read", "Drain", "Close"]
    whole = replay("openai-chat", [ROLE + burst + late + FINISH])
    assert plain(events) == plain(whole)


def test_pieces_of_a_first_read_keep_the_in_band_retry_decisions() -> None:
    """Fed in pieces, a first read decides as the whole read did: an in-band error
    past the first piece but before any content is retried; after content, not."""
    from modelwire._call import FIRST_PIECE

    padding = b": " + b"x" * (2 * FIRST_PIECE) + b"\n\n"  # an SSE comment: no event
    clock = Clock()
    s = Script(clock, [Head(200, SSE), Head(200, SSE)],
               [padding + overloaded_frame(), chunk("Hi") + FINISH])  # fmt: skip
    events = s.run(retrying_call(clock))
    assert final(events).stop_reason == "stop" and final(events).text == "Hi"
    assert s.kinds().count("Send") == 2
    clock = Clock()
    s = Script(clock, [Head(200, SSE), Head(200, SSE)],
               [ROLE + chunk("Hi") + padding + overloaded_frame()])  # fmt: skip
    events = s.run(retrying_call(clock))
    assert error_of(events).kind == "overloaded" and final(events).text == "Hi"
    assert s.kinds().count("Send") == 1


@pytest.mark.parametrize("ends", [True, False], ids=["answer-in-the-read", "answer-goes-on"])
def test_an_abort_after_a_first_reads_first_piece_keeps_the_whole_read(ends: bool) -> None:
    """The caller aborts when the first piece's events are out and the rest of that
    read is not yet decoded: the aborted message holds everything received, the rest
    of the read too (and when the read held the whole answer, all of it)."""
    from modelwire._call import FIRST_PIECE

    texts = [f"w{i:03d} " for i in range(100)]
    body = ROLE + b"".join(chunk(t) for t in texts) + (FINISH if ends else b"")
    assert len(body) > 4 * FIRST_PIECE
    clock = Clock()
    call = new_call(clock)
    s = Script(clock, [Head(200, SSE)], [body])
    intent = call.first()
    emits: list[list[Event]] = []
    while True:
        if isinstance(intent, Emit):
            emits.append(intent.events)
            if any(e.type == "text_delta" for e in intent.events):
                break  # the first content: the caller aborts here
        intent = call.send(s.answer(intent))
    intent = call.abort()
    assert isinstance(intent, Emit)
    (terminal,) = intent.events
    assert terminal.type == "error" and terminal.reason == "aborted"
    assert terminal.message.text == "".join(texts)
    assert terminal.message.stop_reason == "aborted"
    assert isinstance(call.send(None), Close)
    assert call.abort_events() == []  # ended


@pytest.mark.parametrize("ends", [True, False], ids=["answer-in-the-read", "answer-goes-on"])
def test_a_driver_failure_after_a_first_reads_first_piece_keeps_the_whole_read(ends: bool) -> None:
    """A driver that fails unexpectedly while the rest of a first read waits gets, as
    its terminal, the failure with everything that read held (redacted)."""
    texts = [f"w{i:03d} " for i in range(100)]
    body = ROLE + b"".join(chunk(t) for t in texts) + (FINISH if ends else b"")
    clock = Clock()
    call = new_call(clock)
    s = Script(clock, [Head(200, SSE)], [body])
    intent = call.first()
    while not (isinstance(intent, Emit) and any(e.type == "text_delta" for e in intent.events)):
        intent = call.send(s.answer(intent))
    (terminal,) = call.fail_events(RuntimeError(f"boom {KEY}"))
    assert terminal.type == "error" and terminal.reason == "error"
    assert terminal.message.text == "".join(texts)
    err = terminal.message.error
    assert err is not None and err.kind == "stream_interrupted" and KEY not in err.message


# --------------------------------------------------------------------------- phases


def phases(call: Call, answer: Callable[[Intent], Any], *, abort_at: int | None = None,
           drain: Any = None) -> tuple[list[str], list[Event]]:  # fmt: skip
    """Drive ``call`` to Close: its phase after every intent (repeats folded), and the
    events. ``abort_at``: abort while the n-th Read waits; ``drain``: Drain's answer."""
    seen: list[str] = []
    events: list[Event] = []
    reads = 0
    intent = call.first()
    while True:
        if not seen or seen[-1] != call.phase:
            seen.append(call.phase)
        if isinstance(intent, Emit):
            events += intent.events
        if isinstance(intent, Close):
            return seen, events
        if isinstance(intent, Read):
            reads += 1
            if reads == abort_at:
                intent = call.abort()
                continue
        intent = call.send(drain if isinstance(intent, Drain) else answer(intent))


def test_a_normal_call_goes_through_its_phases_in_order() -> None:
    clock = Clock()
    call = new_call(clock)
    s = Script(clock, [Head(200, SSE)], [chunk("Hel"), chunk("lo"), FINISH, b"rest"])
    seen, events = phases(call, s.answer)
    assert seen == ["start", "authorize", "send", "read", "drain", "closed"]
    assert final(events).text == "Hello" and call.ended


def test_a_retry_after_a_503_waits_then_sends_again_without_authorizing_again() -> None:
    clock = Clock()
    s = Script(clock, [Head(503, {}), Head(200, SSE)], [FINISH], error_body=b"busy")
    seen, events = phases(new_call(clock), s.answer)
    assert seen == ["start", "authorize", "send", "read_error", "wait", "send", "read",
                    "drain", "closed"]  # fmt: skip
    assert final(events).stop_reason == "stop"


def test_an_in_band_retry_is_decided_from_the_read_phase_and_starts_over() -> None:
    clock = Clock()
    s = Script(clock, [Head(200, SSE), Head(200, SSE)], [overloaded_frame(), chunk("Hi"), FINISH])
    seen, events = phases(retrying_call(clock), s.answer)
    assert seen == ["start", "authorize", "send", "read", "wait", "authorize", "send", "read",
                    "drain", "closed"]  # fmt: skip
    assert final(events).text == "Hi"


def test_an_abort_mid_body_goes_from_read_to_closed() -> None:
    clock = Clock()
    s = Script(clock, [Head(200, SSE)], [chunk("Hel"), chunk("lo")])
    call = new_call(clock)
    seen, events = phases(call, s.answer, abort_at=2)
    assert seen == ["start", "authorize", "send", "read", "closed"]
    assert final(events).stop_reason == "aborted" and final(events).text == "Hel"
    assert isinstance(call.abort(), Close) and call.phase == "closed"  # stays closed


def test_a_failure_during_drain_closes_and_leaves_the_delivered_answer_alone() -> None:
    clock = Clock()
    s = Script(clock, [Head(200, SSE)], [chunk("Hi") + FINISH + b": trailing\n\n"])
    seen, events = phases(new_call(clock), s.answer,
                          drain=Failure(StreamInterruptedError("reset while draining")))  # fmt: skip
    assert seen == ["start", "authorize", "send", "read", "drain", "closed"]
    assert [e.type for e in events][-1] == "done" and final(events).stop_reason == "stop"
    # An abort while draining (a cancelled driver) closes without a second terminal.
    clock = Clock()
    s = Script(clock, [Head(200, SSE)], [chunk("Hi") + FINISH + b": trailing\n\n"])
    call = new_call(clock)
    intent = call.first()
    while not isinstance(intent, Drain):
        intent = call.send(s.answer(intent))
    draining = call.phase
    assert isinstance(call.abort(), Close)
    assert (draining, call.phase) == ("drain", "closed")
