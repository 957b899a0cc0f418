"""The HTTP path over a real loopback server: request shape, status errors,
retries, timeouts, truncation, cancellation, the sync twins, key redaction, and
live/replay parity. ``MockServer`` speaks real HTTP/1.1 with chunked bodies.

One server serves the whole module (starting and stopping one costs half a
second): each test scripts its replies through ``srv.script(...)`` and reads the
requests it caused from ``srv.requests``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import msgspec
import pytest

import modelwire as mw
from eventlist import final
from modelwire._apis.openai_chat import API
from modelwire._client._options import resolve_options
from modelwire.testing import MockServer, RecordedRequest, Reply, sse_body
from recorded import recorded_streams

FIXTURES = recorded_streams("openai-chat")
KEY = "sk-test-Zq81_only_in_the_header_4c2b"
FAST = mw.Timeout(connect=2, idle=2)

# --------------------------------------------------------------------------- server


class Scripted:
    """A per-test view of the shared server: its replies and the requests it saw."""

    def __init__(self, server: MockServer) -> None:
        self.server = server
        self.replies: list[Any] = []  # Reply, or a callable returning one
        self.offset = 0
        self.lock = threading.Lock()

    def __call__(self, rec: RecordedRequest) -> Reply:
        with self.lock:
            reply = self.replies.pop(0) if self.replies else None
        # Called outside the lock: a reply that takes its time (a server that thinks)
        # must not hold up the next test's script().
        if reply is not None:
            out: Reply = reply(rec) if callable(reply) else reply
            return out
        return Reply(
            status=500,
            content_type="application/json",
            body=b'{"error":{"message":"no reply scripted"}}',
        )

    def script(self, *replies: Any) -> Scripted:
        with self.lock:
            self.replies = [Reply(body=r) if isinstance(r, bytes) else r for r in replies]
            self.offset = len(self.server.requests)
        return self

    @property
    def requests(self) -> list[RecordedRequest]:
        return self.server.requests[self.offset :]

    def model(self, **kw: Any) -> mw.Model:
        args: dict[str, Any] = {
            "id": "gpt-loop",
            "api": "openai-chat",
            "provider": "local",
            "base_url": self.server.base_url,
        }
        args.update(kw)
        return mw.Model(**args)


@pytest.fixture(scope="module")
def _server() -> Iterator[Scripted]:
    holder: list[Scripted] = []
    with MockServer([lambda rec: holder[0](rec)], repeat_last=True) as server:
        holder.append(Scripted(server))
        yield holder[0]


@pytest.fixture
def srv(_server: Scripted) -> Scripted:
    return _server.script()


def ch(delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-L",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }


TEXT = sse_body([ch({"content": "正在"}), ch({"content": "读取"}), ch(finish="stop"),
                 {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}])  # fmt: skip
FIRST_EVENT = len(sse_body([ch({"content": "正在"})], done=False))
CTX = mw.Context(system_prompt="sys", messages=[mw.UserMessage(content="读取 README.md")])
READ = mw.ToolDefinition(
    name="read",
    description="Read a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)


def comparable(msg: mw.AssistantMessage) -> mw.AssistantMessage:
    return msgspec.structs.replace(msg, timestamp=0)


def trace(events: list[Any]) -> list[tuple[Any, ...]]:
    return [(e.type, getattr(e, "content_index", None), getattr(e, "delta", None)) for e in events]


async def collect(s: mw.AssistantMessageStream) -> list[Any]:
    return [e async for e in s]


# --------------------------------------------------------------------------- transport spies


class _Spy:
    def __init__(self) -> None:
        self.opened = 0
        self.closed = 0
        self.bytes = 0


class AsyncSpyTransport(httpx.AsyncBaseTransport):
    """Counts responses opened and closed and the body bytes read through them."""

    def __init__(self, **kw: Any) -> None:
        self.inner = httpx.AsyncHTTPTransport(**kw)
        self.spy = _Spy()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        resp = await self.inner.handle_async_request(request)
        spy, inner = self.spy, resp.stream
        spy.opened += 1

        class Stream(httpx.AsyncByteStream):
            async def __aiter__(self) -> AsyncIterator[bytes]:
                async for part in inner:  # type: ignore[union-attr]
                    spy.bytes += len(part)
                    yield part

            async def aclose(self) -> None:
                spy.closed += 1
                await inner.aclose()  # type: ignore[union-attr]

        return httpx.Response(
            resp.status_code, headers=resp.headers, stream=Stream(), extensions=resp.extensions
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


class SyncSpyTransport(httpx.BaseTransport):
    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.spy = _Spy()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        resp = self.inner.handle_request(request)
        spy, inner = self.spy, resp.stream
        spy.opened += 1

        class Stream(httpx.SyncByteStream):
            def __iter__(self) -> Iterator[bytes]:
                for part in inner:  # type: ignore[union-attr]
                    spy.bytes += len(part)
                    yield part

            def close(self) -> None:
                spy.closed += 1
                inner.close()  # type: ignore[union-attr]

        return httpx.Response(
            resp.status_code, headers=resp.headers, stream=Stream(), extensions=resp.extensions
        )

    def close(self) -> None:
        self.inner.close()


# =========================================================================== request shape


@pytest.mark.anyio
async def test_request_shape(srv: Scripted) -> None:
    srv.script(Reply(body=TEXT))
    m = srv.model(headers={"X-Model-Header": "m"})
    msg = await mw.complete(
        m, CTX, api_key=KEY, headers={"X-Caller": "c"}, max_tokens=64, timeout=FAST
    )
    assert msg.stop_reason == "stop" and msg.text == "正在读取"
    (req,) = srv.requests
    assert req.method == "POST"
    assert req.path == "/v1/chat/completions"
    h = req.headers
    assert h["authorization"] == f"Bearer {KEY}"
    assert h["accept"] == "text/event-stream"
    assert h["content-type"] == "application/json"
    assert (h["x-model-header"], h["x-caller"]) == ("m", "c")
    # The key is in that one header and nowhere else.
    assert KEY.encode() not in req.body
    assert [k for k, v in h.items() if KEY in v] == ["authorization"]
    assert req.json() == {
        "model": "gpt-loop",
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "读取 README.md"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 64,
    }
    # What went over the wire is exactly the adapter's bytes.
    built = API.build_request(m, CTX, resolve_options("local", api_key=KEY, max_tokens=64))
    assert req.body == built.body


@pytest.mark.anyio
async def test_base_url_with_trailing_slash(srv: Scripted) -> None:
    srv.script(Reply(body=TEXT))
    await mw.complete(srv.model(base_url=srv.server.base_url + "/"), CTX, timeout=FAST)
    assert srv.requests[0].path == "/v1/chat/completions"
    assert "authorization" not in srv.requests[0].headers  # local provider, no key


@pytest.mark.anyio
async def test_tool_round_trip_through_complete(srv: Scripted) -> None:
    call = sse_body([
        ch({"content": "先读。"}),
        ch({"tool_calls": [{"index": 0, "id": "call-1", "type": "function", "function": {"name": "read", "arguments": '{"path": '}}]}),
        ch({"tool_calls": [{"index": 0, "function": {"arguments": '"README.md"}'}}]}),
        ch(finish="tool_calls"),
    ])  # fmt: skip
    srv.script(Reply(body=call, chunk_size=7), Reply(body=TEXT, chunk_size=3))
    ctx = mw.Context(messages=[mw.UserMessage(content="读取 README.md")], tools=[READ])
    first = await mw.complete(srv.model(), ctx, tool_choice="auto", timeout=FAST)
    assert first.stop_reason == "tool_use"
    (tc,) = first.tool_calls
    assert (tc.id, tc.arguments, tc.raw_arguments) == (
        "call-1",
        {"path": "README.md"},
        '{"path": "README.md"}',
    )
    ctx = ctx.with_messages(
        first, mw.ToolResultMessage(tool_call_id="call-1", tool_name="read", content="# hi")
    )
    second = await mw.complete(srv.model(), ctx, timeout=FAST)
    assert second.text == "正在读取"
    sent = srv.requests[1].json()
    assert sent["messages"][1:] == [
        {
            "role": "assistant",
            "content": "先读。",
            "tool_calls": [
                {
                    "id": "call-1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "README.md"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call-1", "name": "read", "content": "# hi"},
    ]
    assert "tool_choice" not in sent  # not given for the second call
    assert srv.requests[0].json()["tool_choice"] == "auto"


@pytest.mark.anyio
async def test_configuration_errors_send_nothing(srv: Scripted) -> None:
    srv.script(Reply(body=TEXT))
    with pytest.raises(mw.ConfigurationError):
        mw.stream(srv.model(), CTX, tool_choice="always")
    with pytest.raises(mw.ConfigurationError):
        mw.stream(srv.model(), CTX, extra_body={"messages": []})
    with pytest.raises(mw.MissingAPIKeyError):
        mw.stream(srv.model(provider="openai"), CTX)
    await asyncio.sleep(0.05)
    assert srv.requests == []


@pytest.mark.anyio
async def test_no_io_until_iterated(srv: Scripted) -> None:
    srv.script(Reply(body=TEXT))
    s = mw.stream(srv.model(), CTX, timeout=FAST)
    await asyncio.sleep(0.1)
    assert srv.requests == []
    assert (await s.result()).text == "正在读取"
    assert len(srv.requests) == 1


# =========================================================================== status errors


def error_body(message: str, type_: str = "invalid_request_error") -> bytes:
    return json.dumps({"error": {"message": message, "type": type_}}).encode()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "message", "kind"),
    [
        (401, "Incorrect API key provided", "authentication"),
        (403, "Project does not have access", "permission"),
        (404, "The model `gpt-loop` does not exist", "not_found"),
        (429, "Rate limit reached", "rate_limit"),
        (
            400,
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
            "context_overflow",
        ),
        (400, "Invalid value for 'temperature'", "invalid_request"),
        (413, "Request too large", "invalid_request"),
        (422, "Unprocessable", "invalid_request"),
        (500, "The server had an error", "server"),
        (503, "Service unavailable", "overloaded"),
        (529, "Overloaded", "overloaded"),
    ],
)
async def test_status_errors(srv: Scripted, status: int, message: str, kind: str) -> None:
    srv.script(Reply(status=status, content_type="application/json", body=error_body(message)))
    events = await collect(mw.stream(srv.model(), CTX, max_retries=0, timeout=FAST))
    assert [e.type for e in events] == ["start", "error"]
    msg = events[-1].message
    assert msg.stop_reason == "error" and msg.content == ()
    assert msg.error.kind == kind and msg.error.status == status
    assert message in msg.error.message
    assert len(srv.requests) == 1
    with pytest.raises(mw.errors.error_class_for_kind(kind)):
        msg.raise_for_error()


@pytest.mark.anyio
async def test_non_json_error_body(srv: Scripted) -> None:
    srv.script(Reply(status=502, content_type="text/html", body=b"<html>Bad gateway</html>"))
    msg = await mw.complete(srv.model(), CTX, max_retries=0, timeout=FAST)
    assert msg.error is not None
    assert msg.error.kind == "server" and "Bad gateway" in msg.error.message


@pytest.mark.anyio
async def test_retry_after_is_reported(srv: Scripted) -> None:
    srv.script(
        Reply(
            status=429,
            headers={"Retry-After": "7"},
            content_type="application/json",
            body=error_body("slow", "rate_limit"),
        )
    )
    msg = await mw.complete(srv.model(), CTX, max_retries=0, timeout=FAST)
    assert msg.error is not None
    assert (msg.error.kind, msg.error.retry_after, msg.error.status) == ("rate_limit", 7.0, 429)


@pytest.mark.anyio
async def test_retry_after_beyond_the_cap_ends_at_once(srv: Scripted) -> None:
    srv.script(
        *[
            Reply(
                status=429,
                headers={"Retry-After": "120"},
                content_type="application/json",
                body=error_body("slow"),
            )
        ]
        * 3
    )
    t0 = time.monotonic()
    msg = await mw.complete(srv.model(), CTX, max_retries=2, timeout=FAST)
    assert time.monotonic() - t0 < 1.0
    assert msg.error is not None
    assert (msg.error.kind, msg.error.retry_after) == ("rate_limit", 120.0)
    assert len(srv.requests) == 1


# =========================================================================== retries


def busy(status: int = 500, after: str = "0") -> Reply:
    return Reply(
        status=status,
        headers={"Retry-After": after},
        content_type="application/json",
        body=error_body("busy", "server_error"),
    )


@pytest.mark.anyio
async def test_retries_before_the_first_byte(srv: Scripted) -> None:
    srv.script(busy(500), busy(529), Reply(body=TEXT))
    msg = await mw.complete(srv.model(), CTX, max_retries=2, timeout=FAST)
    assert msg.stop_reason == "stop" and msg.text == "正在读取"
    assert len(srv.requests) == 3
    assert srv.requests[0].body == srv.requests[2].body  # the same request each time


@pytest.mark.anyio
async def test_retries_are_bounded(srv: Scripted) -> None:
    srv.script(busy(), busy(), busy(), Reply(body=TEXT))
    msg = await mw.complete(srv.model(), CTX, max_retries=2, timeout=FAST)
    assert msg.error is not None
    assert msg.error.kind == "server"
    assert len(srv.requests) == 3
    srv.script(busy(), Reply(body=TEXT))
    failed = await mw.complete(srv.model(), CTX, max_retries=0, timeout=FAST)
    assert failed.error is not None and failed.error.kind == "server"
    assert len(srv.requests) == 1


@pytest.mark.anyio
async def test_retry_after_is_honoured(srv: Scripted) -> None:
    srv.script(busy(429, "0.3"), Reply(body=TEXT))
    t0 = time.monotonic()
    msg = await mw.complete(srv.model(), CTX, max_retries=1, timeout=FAST)
    assert msg.stop_reason == "stop"
    assert time.monotonic() - t0 >= 0.3
    assert len(srv.requests) == 2


@pytest.mark.anyio
async def test_client_errors_are_not_retried(srv: Scripted) -> None:
    srv.script(
        Reply(status=401, content_type="application/json", body=error_body("no")), Reply(body=TEXT)
    )
    msg = await mw.complete(srv.model(), CTX, max_retries=3, timeout=FAST)
    assert msg.error is not None
    assert msg.error.kind == "authentication"
    assert len(srv.requests) == 1


@pytest.mark.anyio
async def test_no_retry_after_the_first_byte(srv: Scripted) -> None:
    srv.script(Reply(body=TEXT, cut_after=FIRST_EVENT + 5), Reply(body=TEXT))
    msg = await mw.complete(srv.model(), CTX, max_retries=3, timeout=FAST)
    assert msg.error is not None
    assert msg.error.kind == "stream_interrupted"
    assert msg.text == "正在"
    assert len(srv.requests) == 1


@pytest.mark.anyio
async def test_connection_refused() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    m = mw.Model(
        id="m", api="openai-chat", provider="local", base_url=f"http://127.0.0.1:{port}/v1"
    )
    msg = await mw.complete(m, CTX, max_retries=0, timeout=FAST, api_key=KEY)
    assert msg.error is not None
    assert msg.error.kind == "connect"
    assert msg.error is not None
    assert KEY not in msg.error.message


# =========================================================================== timeouts


@pytest.mark.anyio
async def test_idle_timeout_with_a_stalled_server(srv: Scripted) -> None:
    srv.script(Reply(body=TEXT, stall_after=FIRST_EVENT, stall_seconds=2))
    t0 = time.monotonic()
    msg = await mw.complete(srv.model(), CTX, timeout=mw.Timeout(connect=2, idle=0.3))
    elapsed = time.monotonic() - t0
    assert msg.error is not None
    assert msg.error.kind == "timeout"
    assert msg.text == "正在"  # content kept
    assert 0.3 <= elapsed < 1.5
    assert len(srv.requests) == 1


@pytest.mark.anyio
async def test_comments_count_as_bytes_for_the_idle_timeout(srv: Scripted) -> None:
    keepalive = b": OPENROUTER PROCESSING\n\n"
    body = keepalive * 6 + TEXT
    points = tuple(len(keepalive) * i for i in range(1, 7))
    srv.script(Reply(body=body, split_points=points, delay=0.1))
    msg = await mw.complete(srv.model(), CTX, timeout=mw.Timeout(connect=2, idle=0.3))
    assert msg.stop_reason == "stop" and msg.text == "正在读取"


@pytest.mark.anyio
async def test_total_timeout(srv: Scripted) -> None:
    srv.script(Reply(body=TEXT, chunk_size=4, delay=0.1))
    t0 = time.monotonic()
    msg = await mw.complete(srv.model(), CTX, timeout=mw.Timeout(connect=2, idle=1, total=0.5))
    assert msg.error is not None
    assert msg.error.kind == "timeout"
    assert 0.4 <= time.monotonic() - t0 < 1.5
    assert "正在读取".startswith(msg.text)


def test_float_timeout_sets_connect_and_idle(srv: Scripted) -> None:
    srv.script(Reply(body=TEXT, stall_after=FIRST_EVENT, stall_seconds=2))
    t0 = time.monotonic()
    msg = mw.complete_sync(srv.model(), CTX, timeout=0.3)
    assert msg.error is not None
    assert msg.error.kind == "timeout" and msg.text == "正在"
    assert time.monotonic() - t0 < 1.5


# =========================================================================== truncation


@pytest.mark.anyio
async def test_cut_mid_body_is_stream_interrupted(srv: Scripted) -> None:
    srv.script(Reply(body=TEXT, cut_after=FIRST_EVENT + 10))
    events = await collect(mw.stream(srv.model(), CTX, timeout=FAST))
    msg = events[-1].message
    assert msg.error.kind == "stream_interrupted"
    assert msg.text == "正在" and msg.stop_reason == "error"
    assert [e.type for e in events] == ["start", "text_start", "text_delta", "error"]


@pytest.mark.anyio
async def test_complete_body_without_finish_is_truncated(srv: Scripted) -> None:
    srv.script(Reply(body=sse_body([ch({"content": "正在"}), ch({"content": "读取"})], done=False)))
    msg = await mw.complete(srv.model(), CTX, timeout=FAST)
    assert msg.error is not None
    assert msg.error.kind == "truncated_stream" and msg.text == "正在读取"
    srv.script(Reply(body=TEXT[: FIRST_EVENT + 12]))  # complete HTTP body, but mid-event
    msg = await mw.complete(srv.model(), CTX, timeout=FAST)
    assert msg.error is not None
    assert msg.error.kind == "truncated_stream" and msg.text == "正在"


@pytest.mark.anyio
async def test_gzip_encoded_event_stream(srv: Scripted) -> None:
    srv.script(Reply(body=gzip.compress(TEXT), headers={"Content-Encoding": "gzip"}, chunk_size=16))
    msg = await mw.complete(srv.model(), CTX, timeout=FAST)
    assert (msg.stop_reason, msg.text) == ("stop", "正在读取")
    srv.script(Reply(body=gzip.compress(TEXT), headers={"Content-Encoding": "gzip"}, chunk_size=16))
    assert mw.complete_sync(srv.model(), CTX, timeout=FAST).text == "正在读取"


@pytest.mark.anyio
async def test_rest_of_the_body_is_drained_after_done(srv: Scripted) -> None:
    tail = b": trailing keep-alive\n\n" * 20
    body = TEXT + tail
    srv.script(Reply(body=body, split_points=(len(TEXT),), delay=0.02))
    transport = AsyncSpyTransport()
    async with httpx.AsyncClient(transport=transport) as client:
        msg = await mw.complete(srv.model(), CTX, http_client=client, timeout=FAST)
        assert msg.stop_reason == "stop"
        # The result comes first; the producer then drains the tail in the background.
        for _ in range(100):
            if transport.spy.closed:
                break
            await asyncio.sleep(0.01)
    assert transport.spy.bytes == len(body)  # read to the end: the connection is reusable
    assert transport.spy.closed == transport.spy.opened == 1


def test_sync_drains_the_rest_of_the_body_after_done(srv: Scripted) -> None:
    tail = b": trailing keep-alive\n\n" * 20
    body = TEXT + tail
    srv.script(Reply(body=body, split_points=(len(TEXT),), delay=0.02))
    transport = SyncSpyTransport()
    with httpx.Client(transport=transport) as client:
        msg = mw.complete_sync(srv.model(), CTX, http_client=client, timeout=FAST)
    assert msg.stop_reason == "stop"
    assert transport.spy.bytes == len(body)
    assert transport.spy.closed == transport.spy.opened == 1


def test_sync_drain_is_bounded_when_the_server_stalls(srv: Scripted) -> None:
    srv.script(Reply(body=TEXT + b": more\n\n", stall_after=len(TEXT), stall_seconds=3))
    t0 = time.monotonic()
    msg = mw.complete_sync(srv.model(), CTX, timeout=mw.Timeout(connect=2, idle=10))
    assert msg.stop_reason == "stop"
    assert time.monotonic() - t0 < 1.5  # not the 10 s idle timeout


def test_sync_total_timeout(srv: Scripted) -> None:
    srv.script(Reply(body=TEXT, stall_after=FIRST_EVENT, stall_seconds=3))
    t0 = time.monotonic()
    msg = mw.complete_sync(srv.model(), CTX, timeout=mw.Timeout(connect=2, idle=10, total=0.4))
    assert msg.error is not None
    assert (msg.error.kind, msg.text) == ("timeout", "正在")
    assert msg.error is not None
    assert "total" in msg.error.message
    assert 0.4 <= time.monotonic() - t0 < 1.5


# =========================================================================== cancellation


def stalled() -> Reply:
    return Reply(body=TEXT, stall_after=FIRST_EVENT, stall_seconds=3)


@pytest.mark.anyio
async def test_aclose_ends_aborted_keeping_content(srv: Scripted) -> None:
    srv.script(stalled())
    transport = AsyncSpyTransport()
    async with httpx.AsyncClient(transport=transport) as client:
        s = mw.stream(srv.model(), CTX, http_client=client, timeout=FAST)
        seen = []
        async for e in s:
            seen.append(e.type)
            if e.type == "text_delta":
                break
        t0 = time.monotonic()
        await s.aclose()
        assert time.monotonic() - t0 < 0.5
        msg = await s.result()
        assert transport.spy.closed == transport.spy.opened == 1
    assert seen == ["start", "text_start", "text_delta"]
    assert msg.error is not None
    assert msg.stop_reason == "aborted" and msg.error.kind == "aborted"
    assert msg.text == "正在"


@pytest.mark.anyio
async def test_next_item_after_abort_is_the_aborted_terminal(srv: Scripted) -> None:
    srv.script(Reply(body=TEXT, chunk_size=FIRST_EVENT, delay=0.05))
    s = mw.stream(srv.model(), CTX, timeout=FAST)
    async for e in s:
        if e.type == "text_delta":
            s.abort()
            break
    rest = [e async for e in s]
    assert [e.type for e in rest] == ["error"]
    (end,) = rest
    assert isinstance(end, mw.ErrorEvent)
    assert end.reason == "aborted" and end.message.text.startswith("正在")


@pytest.mark.anyio
async def test_async_context_manager_closes(srv: Scripted) -> None:
    srv.script(stalled())
    async with mw.stream(srv.model(), CTX, timeout=FAST) as s:
        async for e in s:
            if e.type == "text_delta":
                break
    assert (await s.result()).stop_reason == "aborted"


@pytest.mark.anyio
async def test_abort_from_another_thread(srv: Scripted) -> None:
    srv.script(stalled())
    transport = AsyncSpyTransport()
    async with httpx.AsyncClient(transport=transport) as client:
        s = mw.stream(srv.model(), CTX, http_client=client, timeout=FAST)
        types = []
        t0 = 0.0
        async for e in s:
            types.append(e.type)
            if e.type == "text_delta":
                t0 = time.monotonic()
                threading.Timer(0.1, s.abort).start()
        elapsed = time.monotonic() - t0
        msg = await s.result()
        await asyncio.sleep(0.05)
        assert transport.spy.closed == transport.spy.opened == 1
    assert types[-1] == "error"
    assert 0.1 <= elapsed < 1.0  # not the 3 s stall, nor the idle timeout
    assert msg.error is not None
    assert msg.error.kind == "aborted" and msg.text == "正在"


@pytest.mark.anyio
async def test_abort_before_the_response_headers(srv: Scripted) -> None:
    def slow(rec: RecordedRequest) -> Reply:
        time.sleep(1.0)  # the server thinks before it answers
        return Reply(body=TEXT)

    srv.script(slow)
    s = mw.stream(srv.model(), CTX, timeout=FAST)
    loop = asyncio.get_running_loop()
    loop.call_later(0.2, s.abort)
    t0 = time.monotonic()
    events = await collect(s)
    assert time.monotonic() - t0 < 0.9  # the server answers only after 1 s
    assert [e.type for e in events] == ["start", "error"]
    assert events[-1].message.error.kind == "aborted"


@pytest.mark.anyio
async def test_task_cancellation(srv: Scripted) -> None:
    srv.script(stalled())
    transport = AsyncSpyTransport()
    async with httpx.AsyncClient(transport=transport) as client:
        s = mw.stream(srv.model(), CTX, http_client=client, timeout=FAST)
        got_delta = asyncio.Event()

        async def consume() -> None:
            async for e in s:
                if e.type == "text_delta":
                    got_delta.set()

        task = asyncio.create_task(consume())
        await got_delta.wait()
        t0 = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        msg = await s.result()
        assert time.monotonic() - t0 < 0.5
        assert transport.spy.closed == transport.spy.opened == 1
    assert msg.stop_reason == "aborted" and msg.text == "正在"


@pytest.mark.anyio
async def test_cancelling_complete_closes_the_connection(srv: Scripted) -> None:
    srv.script(stalled())
    transport = AsyncSpyTransport()
    async with httpx.AsyncClient(transport=transport) as client:
        task = asyncio.create_task(mw.complete(srv.model(), CTX, http_client=client, timeout=FAST))
        while transport.spy.opened == 0:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(20):
            if transport.spy.closed:
                break
            await asyncio.sleep(0.01)
        assert transport.spy.closed == 1


@pytest.mark.anyio
async def test_cancelled_streams_do_not_exhaust_the_pool(srv: Scripted) -> None:
    n = 200
    srv.script(*[Reply(body=TEXT, stall_after=FIRST_EVENT, stall_seconds=1)] * n)
    limits = httpx.Limits(max_connections=10, max_keepalive_connections=10)
    async with httpx.AsyncClient(limits=limits) as client:
        for _ in range(n):
            s = mw.stream(
                srv.model(), CTX, http_client=client, timeout=mw.Timeout(connect=2, idle=2)
            )
            async for e in s:
                if e.type == "text_delta":
                    break
                assert e.type != "error", e.message.error
            await s.aclose()
            msg = await s.result()
            assert msg.stop_reason == "aborted" and msg.text == "正在"
    assert len(srv.requests) == n


# =========================================================================== sync twins


def test_complete_sync_and_stream_sync(srv: Scripted) -> None:
    srv.script(Reply(body=TEXT, chunk_size=5), Reply(body=TEXT, chunk_size=1))
    msg = mw.complete_sync(srv.model(), CTX, timeout=FAST)
    assert (msg.stop_reason, msg.text, msg.usage.input, msg.usage.output) == (
        "stop",
        "正在读取",
        5,
        2,
    )
    events = list(mw.stream_sync(srv.model(), CTX, timeout=FAST))
    ref = mw.replay("openai-chat", TEXT, model=srv.model())
    assert trace(events) == trace(ref)
    assert comparable(final(events)) == comparable(final(ref))
    assert len(srv.requests) == 2


@pytest.mark.anyio
async def test_sync_twins_inside_a_running_event_loop(srv: Scripted) -> None:
    asyncio.get_running_loop()  # we are inside one
    srv.script(Reply(body=TEXT), Reply(body=TEXT))
    assert mw.complete_sync(srv.model(), CTX, timeout=FAST).text == "正在读取"
    assert [e.type for e in mw.stream_sync(srv.model(), CTX, timeout=FAST)][-1] == "done"


def test_sync_errors_and_retries(srv: Scripted) -> None:
    srv.script(busy(), Reply(body=TEXT))
    assert mw.complete_sync(srv.model(), CTX, max_retries=1, timeout=FAST).text == "正在读取"
    assert len(srv.requests) == 2
    srv.script(Reply(status=404, content_type="application/json", body=error_body("no model")))
    events = list(mw.stream_sync(srv.model(), CTX, timeout=FAST))
    assert [e.type for e in events] == ["start", "error"]
    error = final(events).error
    assert error is not None and error.kind == "not_found"
    srv.script(Reply(body=TEXT, cut_after=FIRST_EVENT + 3))
    msg = mw.complete_sync(srv.model(), CTX, timeout=FAST)
    assert msg.error is not None
    assert (msg.error.kind, msg.text) == ("stream_interrupted", "正在")


def test_sync_idle_timeout(srv: Scripted) -> None:
    srv.script(Reply(body=TEXT, stall_after=FIRST_EVENT, stall_seconds=2))
    t0 = time.monotonic()
    msg = mw.complete_sync(srv.model(), CTX, timeout=mw.Timeout(connect=2, idle=0.3))
    assert msg.error is not None
    assert msg.error.kind == "timeout" and msg.text == "正在"
    assert time.monotonic() - t0 < 1.5


def test_sync_close_and_abort_from_another_thread(srv: Scripted) -> None:
    srv.script(stalled(), stalled())
    transport = SyncSpyTransport()
    with httpx.Client(transport=transport) as client:
        s = mw.stream_sync(srv.model(), CTX, http_client=client, timeout=FAST)
        for e in s:
            if e.type == "text_delta":
                break
        s.close()
        assert s.result().stop_reason == "aborted" and s.result().text == "正在"
        assert transport.spy.closed == transport.spy.opened == 1

        s = mw.stream_sync(srv.model(), CTX, http_client=client, timeout=FAST)
        types, t0 = [], 0.0
        for e in s:
            types.append(e.type)
            if e.type == "text_delta":
                t0 = time.monotonic()
                threading.Timer(0.1, s.abort).start()
        assert types[-1] == "error"
        assert time.monotonic() - t0 < 1.0
        msg = s.result()
        assert msg.error is not None
        assert (msg.error.kind, msg.text) == ("aborted", "正在")
        assert transport.spy.closed == transport.spy.opened == 2


def test_sync_rejects_an_async_client(srv: Scripted) -> None:
    # verify=False: no CA bundle to load, these clients never connect.
    with pytest.raises(mw.ConfigurationError):
        mw.stream_sync(srv.model(), CTX, http_client=httpx.AsyncClient(verify=False))
    with pytest.raises(mw.ConfigurationError):
        mw.stream(srv.model(), CTX, http_client=httpx.Client(verify=False))


# =========================================================================== the key never leaks


def _everything(msg: mw.AssistantMessage, events: list[Any]) -> list[str]:
    texts = [repr(msg), str(msg), mw.to_json(msg).decode(), repr(msg.error), repr(events)]
    texts += [json.dumps(e.to_dict(), default=str) for e in events]
    if msg.error is not None:
        try:
            msg.raise_for_error()
        except mw.ModelwireError as exc:
            texts += [str(exc), repr(exc), repr(exc.args)]
    return texts


@pytest.mark.anyio
@pytest.mark.parametrize(
    "reply",
    [
        # The server echoes the key in its error body (as some do for a bad key).
        Reply(
            status=401,
            content_type="application/json",
            body=error_body(f"Incorrect API key provided: {KEY}"),
        ),
        Reply(status=400, content_type="text/plain", body=f"bad header Bearer {KEY}".encode()),
        Reply(
            status=429,
            headers={"Retry-After": "0"},
            content_type="application/json",
            body=error_body(f"key {KEY} is rate limited"),
        ),
        # ... inside a 200 stream: an in-band error and a malformed chunk quoting it.
        Reply(
            body=sse_body([ch({"content": "hi"})], done=False)
            + f'event: error\ndata: {{"error":{{"message":"key {KEY} revoked"}}}}\n\n'.encode()
        ),
        Reply(
            body=sse_body([ch({"content": "hi"})], done=False)
            + f'data: {{"choices":"{KEY}"}}\n\n'.encode()
        ),
        Reply(
            body=sse_body([ch({"content": "hi"})], done=False)
            + f"data: not json {KEY}\n\n".encode()
        ),
        Reply(
            body=sse_body([ch({"content": "hi"})], done=False)
            + f'data: {{"error":"{KEY}"}}\n\n'.encode()
        ),
    ],
)
async def test_the_api_key_never_appears(srv: Scripted, reply: Reply) -> None:
    srv.script(reply)
    s = mw.stream(srv.model(), CTX, api_key=KEY, max_retries=0, timeout=FAST)
    events = await collect(s)
    msg = events[-1].message
    assert msg.error is not None
    assert srv.requests[0].headers["authorization"] == f"Bearer {KEY}"
    for text in _everything(msg, events):
        assert KEY not in text
    if f'choices":"{KEY}' not in reply.body.decode():  # that message quotes no value
        assert "[redacted]" in msg.error.message
    # The sync path too.
    srv.script(reply)
    events = list(mw.stream_sync(srv.model(), CTX, api_key=KEY, max_retries=0, timeout=FAST))
    for text in _everything(events[-1].message, events):
        assert KEY not in text


def test_redact_catches_quoted_forms() -> None:
    from modelwire._http import redact

    key = "sk-odd\\key\n"
    for text in (f"x {key} y", f"x {key!r} y", f"x {key.encode()!r} y"):
        assert "sk-odd" not in redact(text, (key,)), text


def test_the_api_key_is_not_in_reprs() -> None:
    opts = resolve_options("openai", api_key=KEY)
    assert KEY not in repr(opts)
    req = API.build_request(
        mw.Model(
            id="m", api="openai-chat", provider="openai", base_url="https://api.openai.com/v1"
        ),
        CTX,
        opts,
    )
    assert KEY not in repr(req)


# =========================================================================== live == replay


LIVE = sorted(p.name for p in FIXTURES.glob("*.sse"))


@pytest.mark.anyio
@pytest.mark.parametrize("name", LIVE)
async def test_live_and_replay_agree(srv: Scripted, name: str) -> None:
    raw = (FIXTURES / name).read_bytes()
    srv.script(Reply(body=raw, seed=len(name)), Reply(body=raw, chunk_size=97))
    m = srv.model()
    ctx = mw.Context(messages=[mw.UserMessage(content="go")], tools=[READ])  # calls are allowed
    live = await collect(mw.stream(m, ctx, timeout=FAST))
    ref = mw.replay("openai-chat", raw, model=m)
    assert trace(live) == trace(ref)
    assert comparable(final(live)) == comparable(final(ref))
    sync = list(mw.stream_sync(m, ctx, timeout=FAST))
    assert trace(sync) == trace(ref)
    assert comparable(final(sync)) == comparable(final(ref))


# =========================================================================== one retry policy


@pytest.mark.parametrize(
    ("value", "ms", "want"),
    [
        ("3", None, 3.0),
        ("0", None, 0.0),
        ("1.5", None, 1.5),
        ("nan", None, None),
        ("NaN", None, None),
        ("inf", None, None),
        ("-inf", None, None),
        ("-1", None, None),
        ("soon", None, None),
        ("", None, None),
        (None, "250", 0.25),
        (None, "nan", None),
        (None, "-5", None),
        ("2", "garbage", 2.0),  # an unusable retry-after-ms falls back to Retry-After
        ("Wed, 21 Oct 2015 07:28:00 GMT", None, 0.0),  # a date in the past: now
        ("Wed, 21 Oct 2015 07:28:30 GMT", None, 30.0),
        ("Wed, 99 Foo 2015 07:28:00 GMT", None, None),
    ],
)
def test_parse_retry_after(value: str | None, ms: str | None, want: float | None) -> None:
    from modelwire._providers._status import parse_retry_after

    now = 1445412480.0  # Wed, 21 Oct 2015 07:28:00 GMT
    assert parse_retry_after(value, ms, now=now) == want


class _Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _err(status: int | None, retry_after: float | None = None) -> mw.errors.StreamError:
    from modelwire._http import status_error

    if status is None:
        return mw.errors.ConnectError("refused")
    headers = httpx.Headers({} if retry_after is None else {"retry-after": str(retry_after)})
    return status_error(status, b"{}", headers, ())


def test_retry_policy_decisions() -> None:
    from modelwire._call._retry import RetryPolicy

    clock = _Clock()
    p = RetryPolicy(mw.Timeout(total=10), 3, clock=clock, rng=lambda: 0.0)
    assert p.next_wait(_err(None)) == 0.25  # connect refused: backoff 0.5 × [0.5, 1)
    assert p.next_wait(_err(503)) == 0.5
    assert p.next_wait(_err(429, 2)) == 2.0  # Retry-After wins over the backoff
    with pytest.raises(mw.errors.ServerError):  # the 4th failure: retries used up
        p.next_wait(_err(500))
    assert p.attempts == 4
    for status in (400, 401, 403, 404, 422):
        with pytest.raises(mw.errors.StreamError):
            RetryPolicy(mw.Timeout(), 3).next_wait(_err(status))
    with pytest.raises(mw.errors.RequestTimeoutError):  # a timeout spent the budget
        RetryPolicy(mw.Timeout(), 3).next_wait(mw.errors.RequestTimeoutError("idle"))
    with pytest.raises(mw.errors.RateLimitError, match="longer than modelwire waits"):
        RetryPolicy(mw.Timeout(), 3).next_wait(_err(429, 61))


def test_retry_policy_never_waits_past_the_deadline() -> None:
    from modelwire._call._retry import RetryPolicy

    clock = _Clock()
    p = RetryPolicy(mw.Timeout(connect=10, idle=300, total=5), 5, clock=clock, rng=lambda: 0.0)
    assert p.bound(10) == 5 and p.bound(None) == 5  # every phase is cut to the deadline
    clock.t += 4
    assert p.remaining() == 1 and p.bound(300) == 1
    err = _err(429, 3)
    with pytest.raises(mw.errors.RateLimitError, match="not retried: the total timeout") as got:
        p.next_wait(err)
    # The reason is added to a copy: the attempt's error is left as it was.
    assert got.value is not err and "not retried" not in err.message
    assert got.value.message.startswith(err.message) and got.value.status == err.status
    clock.t += 2
    assert p.expired() and p.remaining() == 0
    unbounded = RetryPolicy(mw.Timeout(total=None), 1, clock=clock)
    assert unbounded.remaining() is None and unbounded.bound(7) == 7


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "garbage"])
@pytest.mark.parametrize("mode", ["async", "sync"])
def test_an_unusable_retry_after_gets_the_normal_backoff(
    srv: Scripted, mode: str, value: str
) -> None:
    # Before: "nan" made the async stream sleep forever and the sync one raise an
    # untyped ValueError; "inf" ended the call as a wait beyond the cap.
    srv.script(busy(429, value), Reply(body=TEXT))
    t0 = time.monotonic()
    if mode == "async":
        msg = asyncio.run(
            asyncio.wait_for(mw.complete(srv.model(), CTX, max_retries=1, timeout=FAST), 5)
        )
    else:
        msg = mw.complete_sync(srv.model(), CTX, max_retries=1, timeout=FAST)
    assert (msg.stop_reason, msg.text) == ("stop", "正在读取")
    assert len(srv.requests) == 2
    assert time.monotonic() - t0 < 2.0  # the first backoff is at most 0.5 s


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_total_timeout_bounds_a_retry_after_wait(srv: Scripted, mode: str) -> None:
    # Before: both paths slept the whole 3 s under total=0.5 (sync then re-sent).
    srv.script(busy(429, "3"), Reply(body=TEXT))
    opts: dict[str, Any] = {"timeout": mw.Timeout(total=0.5), "max_retries": 2}
    t0 = time.monotonic()
    if mode == "async":
        msg = asyncio.run(mw.complete(srv.model(), CTX, **opts))
    else:
        msg = mw.complete_sync(srv.model(), CTX, **opts)
    assert time.monotonic() - t0 < 1.0  # not the 3 s the provider asked for
    assert msg.error is not None and msg.error.kind == "rate_limit"
    assert msg.error.retry_after == 3.0
    assert len(srv.requests) == 1


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_total_timeout_bounds_the_wait_for_headers(srv: Scripted, mode: str) -> None:
    # Before: the sync path waited the 2 s for the headers under total=0.5.
    def slow(rec: RecordedRequest) -> Reply:
        time.sleep(2)
        return Reply(body=TEXT)

    srv.script(slow)
    opts: dict[str, Any] = {"timeout": mw.Timeout(connect=5, idle=5, total=0.5)}
    t0 = time.monotonic()
    if mode == "async":
        msg = asyncio.run(mw.complete(srv.model(), CTX, **opts))
    else:
        msg = mw.complete_sync(srv.model(), CTX, **opts)
    elapsed = time.monotonic() - t0
    assert msg.error is not None and msg.error.kind == "timeout"
    assert "total timeout (0.5 s) expired before the response" in msg.error.message
    assert 0.45 <= elapsed < 1.6  # the server answers after 2 s


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_non_event_stream_200_is_a_typed_error(srv: Scripted, mode: str) -> None:
    page = f"<html><head><title>502</title></head><body>upstream {KEY} down</body></html>"
    srv.script(Reply(status=200, content_type="text/html", body=page.encode()))
    if mode == "async":
        msg = asyncio.run(mw.complete(srv.model(), CTX, api_key=KEY))
    else:
        msg = mw.complete_sync(srv.model(), CTX, api_key=KEY)
    assert msg.error is not None
    assert (msg.error.kind, msg.error.status) == ("provider_stream", 200)
    assert "'text/html'" in msg.error.message and "text/event-stream" in msg.error.message
    assert "upstream [redacted] down" in msg.error.message
    assert KEY not in repr(msg)
    assert "without a finish reason" not in msg.error.message
    assert len(srv.requests) == 1  # a 200 is an answer: never retried


def test_connect_error_names_the_url_it_tried() -> None:
    from modelwire._http import origin

    assert origin("http://127.0.0.1:11434/api/chat") == "http://127.0.0.1:11434"
    assert origin("https://u:pw@api.example.com/v1/x?key=s") == "https://api.example.com:443"
    assert origin("http://[::1]/v1") == "http://[::1]:80"
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    m = mw.Model(
        id="m", api="openai-chat", provider="local", base_url=f"http://127.0.0.1:{port}/v1"
    )
    msg = mw.complete_sync(m, CTX, max_retries=0, timeout=FAST)
    assert msg.error is not None and msg.error.kind == "connect"
    assert msg.error.message.startswith(f"could not connect to http://127.0.0.1:{port} (")


def test_status_error_takes_any_mapping_of_headers_case_insensitively() -> None:
    # The mapping lives in the httpx-free modelwire._providers._status; a plain dict works
    # as httpx.Headers does, and modelwire._http re-exports the same function.
    from modelwire import _http as http
    from modelwire._providers import _status

    assert http.status_error is _status.status_error
    for headers in (
        {"Retry-After": "3"},
        {"retry-after": "3"},
        httpx.Headers({"RETRY-AFTER": "3"}),
    ):
        err = http.status_error(429, b"{}", headers, ())
        assert isinstance(err, mw.errors.RateLimitError) and err.retry_after == 3.0
    assert http.status_error(503, b"{}", {"retry-after-ms": "1500"}, ()).retry_after == 1.5
    assert http.status_error(503, b"{}", {}, ()).retry_after is None


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_total_timeout_bounds_the_connect(mode: str) -> None:
    # A listener that never accepts, its backlog full: the kernel drops further SYNs,
    # so connecting hangs. Before, the sync path waited the whole 5 s connect timeout.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(3):
        c = socket.socket()
        c.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            c.connect(("127.0.0.1", port))
        fillers.append(c)
    try:
        m = mw.Model(id="m", api="openai-chat", provider="local",
                     base_url=f"http://127.0.0.1:{port}/v1")  # fmt: skip
        opts: dict[str, Any] = {"timeout": mw.Timeout(connect=5, idle=5, total=0.5)}
        t0 = time.monotonic()
        if mode == "async":
            msg = asyncio.run(mw.complete(m, CTX, **opts))
        else:
            msg = mw.complete_sync(m, CTX, **opts)
        assert msg.error is not None and msg.error.kind == "timeout"
        assert "total timeout (0.5 s)" in msg.error.message
        assert 0.45 <= time.monotonic() - t0 < 2.0
    finally:
        for c in fillers:
            c.close()
        listener.close()


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_an_unusable_url_is_not_retried(mode: str) -> None:
    # ``Model`` refuses such a base_url up front; a wire API could still build one.
    from modelwire._call import Call
    from modelwire._client._replay import pipeline_for
    from modelwire._http import AsyncDriver, SyncDriver
    from modelwire._wire.request import HTTPRequest
    from modelwire.trace import TraceLog

    request = HTTPRequest(url="ftp://127.0.0.1/v1/chat/completions", headers={}, body=b"{}")
    log = TraceLog()
    call = Call(pipeline_for("openai-chat", trace=log), request, timeout=FAST, max_retries=3)
    events: list[mw.events.Event] = []
    if mode == "sync":
        for batch in SyncDriver(call, None).events():
            events += batch
    else:

        async def run() -> None:
            d = AsyncDriver(call, None)
            while (batch := await d.next()) is not None:
                events.extend(batch)

        asyncio.run(run())
    last = events[-1]
    assert last.type == "error" and last.message.error is not None
    assert last.message.error.kind == "connect" and "invalid URL" in last.message.error.message
    assert log.of("retry") == []
    assert last.message.error.retryable is False  # nor by a batch runner or a fallback


@pytest.mark.parametrize("mode", ["async", "sync"])
@pytest.mark.parametrize("offset", [180, 190, 196, 199, 205])
def test_non_event_stream_200_excerpt_cut_shows_no_piece_of_the_key(
    srv: Scripted, mode: str, offset: int
) -> None:
    # The excerpt is cut at 200 characters: a key straddling the cut must be
    # redacted before the cut, never left as a fragment at the edge.
    page = "x" * offset + KEY + " tail"
    srv.script(Reply(status=200, content_type="text/html", body=page.encode()))
    if mode == "async":
        msg = asyncio.run(mw.complete(srv.model(), CTX, api_key=KEY))
    else:
        msg = mw.complete_sync(srv.model(), CTX, api_key=KEY)
    assert msg.error is not None and msg.error.kind == "provider_stream"
    text = msg.error.message
    assert not any(KEY[i : i + 8] in text for i in range(len(KEY) - 7)), text


# =========================================================================== classified errors


def _quota(code: str) -> Reply:
    body = {"error": {"message": "You exceeded your current quota, please check your plan.",
                      "type": code, "code": code}}  # fmt: skip
    return Reply(status=429, headers={"Retry-After": "0", "x-request-id": "req_q1"},
                 content_type="application/json", body=json.dumps(body).encode())  # fmt: skip


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["async", "sync"])
async def test_a_429_out_of_quota_is_sent_once_and_a_rate_limit_is_retried(
    srv: Scripted, mode: str
) -> None:
    async def run() -> mw.AssistantMessage:
        if mode == "async":
            return await mw.complete(srv.model(), CTX, max_retries=2, timeout=FAST)
        return await asyncio.to_thread(mw.complete_sync, srv.model(), CTX, max_retries=2,
                                       timeout=FAST)  # fmt: skip

    srv.script(_quota("insufficient_quota"), Reply(body=TEXT))
    msg = await run()
    assert len(srv.requests) == 1  # "retrying will not help": sent once, not three times
    err = msg.error
    assert err is not None and (err.kind, err.status, err.retryable) == ("rate_limit", 429, False)
    assert err.code == "insufficient_quota" and err.request_id == "req_q1"
    assert "retrying will not help" in err.message
    srv.script(_quota("rate_limit_exceeded"), _quota("rate_limit_exceeded"), Reply(body=TEXT))
    assert (await run()).stop_reason == "stop"
    assert len(srv.requests) == 3  # two 429s retried, then the answer


@pytest.mark.parametrize(
    ("headers", "body", "want"),
    [
        ({"x-request-id": "req_openai"}, {}, "req_openai"),
        ({"Request-Id": "req_anthropic"}, {}, "req_anthropic"),
        ({"x-amzn-RequestId": "aws-1"}, {}, "aws-1"),
        ({"x-goog-request-id": "goog-1"}, {}, "goog-1"),
        ({}, {"type": "error", "request_id": "req_in_body"}, "req_in_body"),
        ({}, {}, None),
    ],
)
def test_status_errors_carry_the_request_id_from_headers_or_body(
    headers: dict[str, str], body: dict[str, Any], want: str | None
) -> None:
    from modelwire._providers._status import status_error

    payload = {**body, "error": {"message": "no", "type": "invalid_request_error"}}
    err = status_error(400, json.dumps(payload).encode(), headers, ())
    assert err.request_id == want and err.to_info().request_id == want
    assert err.code == "invalid_request_error" and err.retryable is False


def test_status_error_codes_and_request_ids_are_redacted() -> None:
    from modelwire._providers._status import status_error

    key = "sk-leaky-5be0c2"
    body = {"error": {"message": f"bad {key}", "code": f"code-{key}"}}
    err = status_error(400, json.dumps(body).encode(), {"x-request-id": f"id-{key}"}, (key,))
    info = err.to_info()
    assert key not in (info.code or "") + (info.request_id or "") + info.message
    assert info.code == "code-[redacted]" and info.request_id == "id-[redacted]"


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [(429, "rate_limit_exceeded", True), (429, "insufficient_quota", False), (503, None, True),
     (500, "server_error", True), (409, None, True), (408, None, True), (400, None, False),
     (401, None, False), (404, None, False), (429, "billing_hard_limit_reached", False)],
)  # fmt: skip
def test_the_classifier_decides_retryable_and_the_retry_policy_obeys(
    status: int, code: str | None, retryable: bool
) -> None:
    from modelwire._call._retry import RetryPolicy
    from modelwire._providers._status import status_error

    body = {"error": {"message": "x", "code": code}} if code else {}
    err = status_error(status, json.dumps(body).encode(), {}, ())
    assert err.retryable is retryable
    policy = RetryPolicy(mw.Timeout(), 3, rng=lambda: 0.0)
    if retryable:
        assert policy.next_wait(err) >= 0
    else:
        with pytest.raises(type(err)):
            policy.next_wait(err)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Request-Id": "b", "X-Request-Id": "a"}, "a"),  # the first-ranked name wins
        ({"x-amzn-RequestId": "c", "apim-request-id": "d"}, "c"),  # any case
        ({"X-Request-Id": "", "request-id": "e"}, "e"),  # an empty value is no id
        ({"content-type": "text/event-stream"}, None),
    ],
)
def test_request_id_is_read_from_the_first_ranked_header(
    headers: dict[str, str], expected: str | None
) -> None:
    from modelwire._providers._status import request_id

    assert request_id(headers) == expected
    assert request_id(httpx.Headers(headers)) == expected
