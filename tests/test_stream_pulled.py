"""``stream()`` is pulled by its consumer: the call runs in the consumer's own task
(``modelwire._http.AsyncDriver``), no producer task or queue in between. These are
the waits only that design has to get right, on each async transport (httpx,
aiohttp, httptools) over real loopback sockets: an abort from another thread or task
while the consumer waits inside a read or a retry's backoff, a consumer cancelled by
an outer deadline, and closing after the terminal event.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import modelwire as mw
from modelwire.trace import RetryTrace
from rawserver import CTX, KEY, TEXT, error_json, model_for, ok, serving, stall_after_two

API = "openai-chat"
TRANSPORTS = ("httpx", "aiohttp", "httptools")
SLOW = mw.Timeout(idle=30)  # a stalled body is ended by the abort, never by this


def _stream(port: int, transport: str, **opts: Any) -> mw.AssistantMessageStream:
    return mw.stream(model_for(API, port), CTX, transport=transport, api_key=KEY,  # type: ignore[arg-type]
                     timeout=SLOW, **opts)  # fmt: skip


async def _until_closed(server: Any) -> bool:
    for _ in range(300):  # keep the loop running while we look
        if server.all_closed():
            return True
        await asyncio.sleep(0.01)
    return False


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("where", ["thread", "task"])
def test_an_abort_wakes_a_consumer_waiting_in_a_read(transport: str, where: str) -> None:
    """The consumer waits on a stalled body; ``abort()`` from another thread or task
    ends that wait: the next item is the aborted terminal with the content so far,
    and the connection is closed while the loop runs on."""

    async def main(port: int) -> tuple[list[str], mw.AssistantMessage, bool]:
        s = _stream(port, transport)
        types: list[str] = []
        async for ev in s:
            types.append(ev.type)
            if ev.type == "text_delta" and ev.delta == "o wö":
                if where == "thread":
                    threading.Timer(0.05, s.abort).start()
                else:
                    asyncio.get_running_loop().call_later(0.05, s.abort)
        return types, await s.result(), await _until_closed(server)

    with serving([stall_after_two(API)]) as server:
        types, message, closed = asyncio.run(main(server.port))
    assert types[-1] == "error" and types.count("error") == 1
    assert message.stop_reason == "aborted" and message.text == "Hello wö"
    assert closed and len(server.requests) == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_abort_during_a_retrys_backoff_ends_it_at_once(transport: str) -> None:
    """A 30 s Retry-After wait is cut short by the abort: no second request."""

    async def main(port: int) -> mw.AssistantMessage:
        loop = asyncio.get_running_loop()

        def trace(record: object) -> None:
            if isinstance(record, RetryTrace):  # the call is about to wait 30 s
                loop.call_later(0.05, s.abort)

        s = _stream(port, transport, max_retries=3, trace=trace)
        return await asyncio.wait_for(s.result(), 20)

    with serving([error_json(429, {"retry-after": "30"}), ok(API)]) as server:
        message = asyncio.run(main(server.port))
        assert message.stop_reason == "aborted"
        assert len(server.requests) == 1
        assert server.wait_closed()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_outer_deadline_cancels_the_consumer_and_the_stream_ends_aborted(
    transport: str,
) -> None:
    """``asyncio.timeout`` around the loop: the deadline is the caller's (TimeoutError
    reaches it, not swallowed as an abort), the connection is closed, and the stream's
    next item is its aborted terminal, content kept."""

    async def main(port: int) -> tuple[bool, mw.AssistantMessage, bool]:
        s = _stream(port, transport)
        timed_out = False
        try:
            async with asyncio.timeout(None) as deadline:
                async for ev in s:
                    if ev.type == "text_delta" and ev.delta == "o wö":
                        # Then nothing more comes: the deadline ends the wait.
                        deadline.reschedule(asyncio.get_running_loop().time() + 0.05)
        except TimeoutError:
            timed_out = True
        return timed_out, await s.result(), await _until_closed(server)

    with serving([stall_after_two(API)]) as server:
        timed_out, message, closed = asyncio.run(main(server.port))
    assert timed_out
    assert message.stop_reason == "aborted" and message.text == "Hello wö"
    assert closed


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_abort_and_a_cancel_at_once_still_cancel(transport: str) -> None:
    """An abort's wake-up and a real cancellation of the consumer landing together:
    the cancellation is not absorbed by the abort."""

    async def main(port: int) -> tuple[bool, mw.AssistantMessage]:
        s = _stream(port, transport)

        async def consume() -> None:
            async for ev in s:
                if ev.type == "text_delta" and ev.delta == "o wö":
                    loop.call_later(0.05, both)

        def both() -> None:
            s.abort()
            task.cancel()

        loop = asyncio.get_running_loop()
        task = asyncio.create_task(consume())
        try:
            await task
        except asyncio.CancelledError:
            return True, await s.result()
        return False, await s.result()

    with serving([stall_after_two(API)]) as server:
        cancelled, message = asyncio.run(main(server.port))
        assert server.wait_closed()
    assert cancelled
    assert message.stop_reason == "aborted" and message.text == "Hello wö"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_after_the_terminal_the_rest_is_drained_and_aclose_is_a_no_op(transport: str) -> None:
    async def main(port: int) -> tuple[list[str], mw.AssistantMessage]:
        s = _stream(port, transport)
        types: list[str] = [ev.type async for ev in s]
        await s.aclose()
        await s.aclose()
        return types, await s.result()

    with serving([ok(API)]) as server:
        types, message = asyncio.run(main(server.port))
        assert server.wait_closed()
    assert types[0] == "start" and types[-1] == "done" and types.count("done") == 1
    assert message.text == TEXT and message.stop_reason == "stop"


def _one_write_server(body: bytes) -> tuple[Any, int]:
    """A loopback server answering one request with ``body`` in a single write."""
    import socket

    sock = socket.create_server(("127.0.0.1", 0))
    response = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(body), body))  # fmt: skip

    def serve() -> None:
        with sock:
            conn, _ = sock.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(response)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread, sock.getsockname()[1]


def _answer(deltas: int) -> bytes:
    """An OpenAI Chat answer of ``deltas`` texts ``w0 ``, ``w1 ``…, as one body."""
    chunks = [b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"role":"assistant"}}]}']
    chunks += [b'data: {"choices":[{"index":0,"delta":{"content":"w%d "}}]}' % i
               for i in range(deltas)]  # fmt: skip
    chunks += [
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}',
        b"data: [DONE]",
    ]
    return b"\n\n".join(chunks) + b"\n\n"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ready_counts_the_events_of_the_read_not_taken_yet(transport: str) -> None:
    """``ready``: the events the next iterations return without waiting. A body that
    arrives in one read is decoded in two batches — the events of its first
    ``FIRST_PIECE`` bytes, then the rest — each ready at once; each step takes one,
    and the terminal leaves none."""
    from modelwire._call import FIRST_PIECE

    body = _answer(20)
    thread, port = _one_write_server(body)

    async def main() -> list[tuple[str, int]]:
        s = _stream(port, transport)
        assert s.ready == 0  # nothing read yet
        return [(ev.type, s.ready) async for ev in s]

    seen = asyncio.run(main())
    thread.join(timeout=10)
    readies = [n for _, n in seen]
    assert seen[-1] == ("done", 0)
    assert len(body) > FIRST_PIECE
    # Once the read is in, every step takes one event: the counts fall by one to 0,
    # once for the first piece's events and once for the rest's.
    start = next(i for i, (t, _) in enumerate(seen) if t == "text_delta")
    first = readies[start]
    assert first > 0
    rest = readies[start + first + 1]
    assert rest > first
    assert readies[start:] == [*range(first, -1, -1), *range(rest, -1, -1)]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_closing_the_callers_client_at_once_after_the_end_logs_nothing(transport: str) -> None:
    """After the terminal event the rest of the body is drained in a task of its own.
    A caller that closes its client at once (the body not ended: a comment is still
    arriving) cuts that drain short: the connection is closed, and no "Task exception
    was never retrieved" reaches the loop's handler."""
    import aiohttp
    import httpx

    from modelwire._http._httptools import Pool
    from modelwire.testing import MockServer, Reply, render

    body = render("hello there", API) + b": a keep-alive comment, stalled in the middle\n\n"
    reply = Reply(body=body, stall_after=len(body) - 10, stall_seconds=3)
    reported: list[dict[str, Any]] = []

    async def main(origin: str) -> str:
        asyncio.get_running_loop().set_exception_handler(lambda _, c: reported.append(c))
        # The caller's client of each kind (httptools: the transport's own Pool).
        client: Any = {"aiohttp": aiohttp.ClientSession, "httptools": Pool,
                       "httpx": httpx.AsyncClient}[transport]()  # fmt: skip
        model = mw.Model(api=API, id="m", provider="mock", base_url=origin + "/v1")
        s = mw.stream(model, "hi", api_key=KEY, http_client=client)
        last = [ev async for ev in s][-1]
        await (client.aclose() if transport == "httpx" else client.close())
        for _ in range(5):
            await asyncio.sleep(0.02)  # the drain task's turns
        return last.type

    with MockServer([reply]) as server:
        assert asyncio.run(main(server.origin)) == "done"
        [request] = server.requests
    assert reported == []
    agent = {"aiohttp": "aiohttp/", "httptools": "modelwire/", "httpx": "python-httpx/"}
    assert agent[transport] in request.headers["user-agent"]  # the caller's client sent it


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_closing_after_the_first_event_of_a_one_read_answer_keeps_all_of_it(
    transport: str,
) -> None:
    """The first read is decoded in pieces; the consumer that closes the stream after
    its first content still gets, in the aborted message, everything that read held."""
    thread, port = _one_write_server(_answer(40))

    async def main() -> mw.AssistantMessage:
        s = _stream(port, transport)
        async for ev in s:
            if ev.type == "text_delta":
                break
        await s.aclose()
        return await s.result()

    message = asyncio.run(main())
    thread.join(timeout=10)
    assert message.stop_reason == "aborted"
    assert message.text == "".join(f"w{i} " for i in range(40))


def test_closing_a_sync_stream_after_the_first_event_of_a_one_read_answer_keeps_all_of_it() -> None:
    """The sync twin of the above: the same Call, the same aborted message."""
    thread, port = _one_write_server(_answer(40))
    s = mw.stream_sync(model_for(API, port), CTX, api_key=KEY, timeout=SLOW)
    for ev in s:
        if ev.type == "text_delta":
            break
    s.close()
    message = s.result()
    thread.join(timeout=10)
    assert message.stop_reason == "aborted"
    assert message.text == "".join(f"w{i} " for i in range(40))
