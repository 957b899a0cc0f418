"""A pulled stream driven until the provider has answered (``_await_answer``): what
the gateway uses to send its own response head as soon as the backend's is known,
before the first content. On each async transport, over real loopback sockets: it
returns at the head while the body is held back by the server, the body then comes
whole; a status error, a connection refused and a stream not pulled say ``False``,
with the events to take first.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import modelwire as mw
from modelwire._wire.request import Transport
from modelwire.testing import MockServer, Reply, register_text_api, render
from rawserver import RawServer

TRANSPORTS: tuple[Transport, ...] = ("httpx", "aiohttp", "httptools")
KEY = "sk-answered-test"
CTX = mw.Context(messages=(mw.UserMessage(content="Hi."),))
TEXT = "Held back until the head was read."


@contextmanager
def held_body() -> Iterator[tuple[int, threading.Event]]:
    """A server that answers one request with its 200 head at once and its body (an
    OpenAI Chat stream of ``TEXT``) only once the event is set."""
    body = render(
        mw.AssistantMessage(content=[mw.TextContent(text=TEXT)], api="", provider="",
                            model="", stop_reason="stop"), "openai-chat",
    )  # fmt: skip
    release = threading.Event()
    sock = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = sock.accept()
        with conn:
            RawServer.read_request(conn, b"")
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                         b"transfer-encoding: chunked\r\n\r\n")  # fmt: skip
            release.wait(30)
            conn.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
            conn.recv(1)  # until the client closes

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with sock:
            yield sock.getsockname()[1], release
    finally:
        release.set()
        thread.join(timeout=10)


def _model(port: int) -> mw.Model:
    return mw.Model(id="m", api="openai-chat", provider="mock",
                    base_url=f"http://127.0.0.1:{port}/v1")  # fmt: skip


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_it_returns_at_the_head_and_the_body_follows_whole(transport: Transport) -> None:
    async def main(port: int, release: threading.Event) -> tuple[bool, bool, list[str], str]:
        s = mw.stream(_model(port), CTX, api_key=KEY, transport=transport)
        before = await s._await_answer()  # the start event is to be taken first
        start = await s.__anext__()
        assert start.type == "start"
        answered = await s._await_answer()  # returns although the body is held back
        release.set()
        types: list[str] = [e.type async for e in s]
        return before, answered, types, (await s.result()).text

    with held_body() as (port, release):
        before, answered, types, text = asyncio.run(main(port, release))
    assert before is False
    assert answered is True
    assert types[0] == "text_start" and types[-1] == "done"
    assert text == TEXT


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_status_error_is_no_answer_and_its_error_comes_next(transport: Transport) -> None:
    async def main(base_url: str) -> tuple[bool, str, str | None]:
        model = mw.Model(id="m", api="openai-chat", provider="mock", base_url=base_url)
        s = mw.stream(model, CTX, api_key=KEY, transport=transport, max_retries=0)
        await s.__anext__()  # start
        answered = await s._await_answer()
        event = await s.__anext__()
        assert isinstance(event, mw.events.ErrorEvent)
        info = event.message.error
        return answered, event.type, info.kind if info is not None else None

    reply = Reply(status=429, body=b'{"error":{"message":"slow down","type":"rate_limit"}}')
    with MockServer([reply]) as server:
        answered, kind, error = asyncio.run(main(server.model("openai-chat").base_url))
    assert answered is False
    assert (kind, error) == ("error", "rate_limit")


def test_a_refused_connection_is_no_answer() -> None:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        port = sock.getsockname()[1]  # closed below: nothing listens there

    async def main() -> tuple[bool, str]:
        s = mw.stream(_model(port), CTX, api_key=KEY, transport="httptools", max_retries=0)
        await s.__anext__()
        answered = await s._await_answer()
        return answered, (await s.__anext__()).type

    assert asyncio.run(main()) == (False, "error")


def test_a_stream_not_pulled_says_false_and_streams_on() -> None:
    """A custom stream function runs as a producer task, not pulled: no head to wait for."""

    async def pieces(model: mw.Model, context: mw.Context):  # type: ignore[no-untyped-def]
        yield "custom"

    register_text_api("answered-custom", pieces)
    model = mw.Model(
        id="m", api="answered-custom", provider="custom", base_url="http://custom.invalid"
    )

    async def main() -> tuple[bool, str]:
        s = mw.stream(model, CTX)
        answered = await s._await_answer()
        return answered, (await s.result()).text

    assert asyncio.run(main()) == (False, "custom")
