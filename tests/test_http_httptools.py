"""modelwire's own HTTP/1.1 transport (``transport="httptools"``) over real loopback
sockets: the keep-alive pool (reuse, closing with the loop, aborted and stale
connections, the ``limit`` slots), the request head it writes and refuses to write,
a server that does not speak HTTP, and TLS. The server writes exact bytes
(:class:`Wire`) where the test needs byte-level control. The bodies it reads are
``test_http_httptools_body.py``; the parser fed split by split, without sockets,
``test_http_httptools_parse.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import modelwire as mw
import modelwire._call._retry
import modelwire._http as http
from modelwire._call import Failure, Head, Send
from modelwire._http import _httptools as hh
from modelwire._http._httptools import _pool, _wire
from modelwire._wire.request import HTTPRequest
from modelwire.errors import ConnectError
from rawserver import CTX, KEY, TEXT, RawServer, frames, model_for, ok, serving, stall_after_two
from test_transport import TLSServer, _cert

API = "openai-chat"
SSE = b"".join(frames(API))  # the whole event stream: TEXT, then [DONE]
# Without [DONE] the body's own end ends the stream: the framing decides.
OPEN_SSE = SSE.removesuffix(b"data: [DONE]\n\n")


# --------------------------------------------------------------------------- server


class _HangUp(Exception):
    pass


def apart() -> None:
    """A step of an answer: the next write reaches the client as a read of its own."""
    time.sleep(0.01)


def hang_up() -> None:
    """A step of an answer: the server shuts the connection down."""
    raise _HangUp


Step = bytes | Callable[[], object]


class Wire(RawServer):
    """Answers each request with exact bytes: an answer is a list of steps, each
    one write (``bytes``) or an action (``hang_up``, waiting for the test); the
    last answer serves every request after it. Records each request's head."""

    def __init__(self, *answers: Sequence[Step]) -> None:
        self.answers = list(answers)
        super().__init__([])

    def _serve(self, conn: socket.socket, closed: threading.Event) -> None:
        buf = b""
        try:
            while True:
                got = self.read_request(conn, buf)
                if got is None:
                    return
                head, body, buf = got
                with self._lock:
                    self.heads.append(head)
                    self.requests.append(body)
                    answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
                for step in answer:
                    if isinstance(step, bytes):
                        conn.sendall(step)
                    else:
                        step()
        except _HangUp:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            return
        finally:
            conn.close()
            closed.set()


@contextlib.contextmanager
def wire(*answers: Sequence[Step]) -> Iterator[Wire]:
    server = Wire(*answers)
    try:
        yield server
    finally:
        server.close()


def field(head: bytes, name: str) -> str | None:
    """A request header's value, as the server received it."""
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name.encode():
            return value.strip().decode("latin-1")
    return None


def reply(body: bytes = SSE, *headers: str, framing: str = "chunked") -> bytes:
    """A 200 response's exact bytes: ``chunked`` (two chunks), ``length``
    (Content-Length) or ``close`` (no framing: the body ends with the connection)."""
    lines = ["HTTP/1.1 200 OK", "Content-Type: text/event-stream", *headers]
    if framing == "chunked":
        lines.append("Transfer-Encoding: chunked")
        half = len(body) // 2
        parts = [p for p in (body[:half], body[half:]) if p]
        body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"
    elif framing == "length":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


# --------------------------------------------------------------------------- helpers


async def call(port: int, **opts: Any) -> mw.AssistantMessage:
    opts.setdefault("max_retries", 0)
    return await mw.complete(model_for(API, port), CTX, transport="httptools", api_key=KEY, **opts)


def run(port: int, **opts: Any) -> mw.AssistantMessage:
    return asyncio.run(call(port, **opts))


async def settled() -> None:
    """Until the calls' background work is over: after the terminal event a call
    drains the rest of the body, then hands the connection back to the pool."""
    me = asyncio.current_task()
    for _ in range(1000):
        if all(t is me or t.done() for t in asyncio.all_tasks()):
            return
        await asyncio.sleep(0.005)


async def until(check: Callable[[], bool]) -> bool:
    """Keep the loop running (the client reacting) until ``check`` holds, at most 3 s."""
    for _ in range(3000):
        if check():
            return True
        await asyncio.sleep(0.001)
    return check()


def send_of(url: str, headers: dict[str, str] | None = None) -> Send:
    request = HTTPRequest(url=url, headers=headers or {}, body=b"{}")
    return Send(request, connect=5.0, idle=5.0, remaining=None)


def failed(message: mw.AssistantMessage, kind: str) -> str:
    """The error's message, after checking the call failed with ``kind``."""
    assert message.error is not None, message
    assert (message.error.kind, message.stop_reason) == (kind, "error"), message.error
    return message.error.message


@pytest.fixture(autouse=True)
def _collected() -> Iterator[None]:
    """What a test leaves unclosed warns in that test (an error), not in a later one."""
    yield
    gc.collect()


# --------------------------------------------------------------------------- keep-alive


def test_calls_on_one_loop_share_a_connection_closed_with_the_loop() -> None:
    """Keep-alive: the finished body's connection serves the next call; asyncio.run's
    shutdown closes the loop's pool (the server sees the close; nothing warns)."""

    async def main(port: int) -> tuple[list[str], asyncio.AbstractEventLoop]:
        texts = []
        for _ in range(3):
            texts.append((await call(port)).text)
            await settled()
        return texts, asyncio.get_running_loop()

    with serving([ok(API)]) as server:
        texts, loop = asyncio.run(main(server.port))
        assert texts == [TEXT] * 3
        assert len(server.requests) == 3 and len(server.connections) == 1
        assert server.wait_closed()
        assert loop not in _pool._POOLS


def test_a_loop_closed_without_shutdown_leaves_no_keeper_behind() -> None:
    """``loop.close()`` without ``shutdown_asyncgens``: the next loop's first call drops
    the old loop's pool and finishes its keeper without that loop (no warning)."""
    with serving([ok(API)]) as server:
        loop = asyncio.new_event_loop()
        try:
            message = loop.run_until_complete(call(server.port))
            loop.run_until_complete(settled())
            # What asyncio.run would do, minus shutdown_asyncgens: the connections are
            # closed here, so that only the pool's keeper is left open.
            loop.run_until_complete(_pool._POOLS[loop][0].aclose())
        finally:
            loop.close()
        assert message.text == TEXT and loop in _pool._POOLS
        assert run(server.port).text == TEXT
        assert loop not in _pool._POOLS
        assert server.wait_closed()
        del loop
        gc.collect()  # an unfinished keeper would be finalized on the closed loop here


def test_an_aborted_stream_closes_its_own_connection() -> None:
    """``aclose()`` mid-body closes THAT connection while the loop runs on (its rest
    would reach the next request); the next call opens a fresh one."""

    async def main(port: int) -> tuple[bool, str]:
        s = mw.stream(model_for(API, port), CTX, transport="httptools", api_key=KEY,
                      timeout=mw.Timeout(idle=30))  # fmt: skip
        async for ev in s:
            if ev.type == "text_delta":
                break
        await s.aclose()
        closed = await until(lambda: server.connections[0].is_set())
        return closed, (await call(port)).text

    with serving([stall_after_two(API), ok(API)]) as server:
        closed, text = asyncio.run(main(server.port))
        assert closed and text == TEXT
        assert len(server.connections) == 2 and len(server.requests) == 2
        assert server.wait_closed()


def test_a_response_with_connection_close_is_not_reused() -> None:
    """``Connection: close`` (RFC 9112 §9.6) ends the connection's use even when the
    server leaves it open: the next call opens another, the client closes the first."""

    async def main(port: int) -> list[str]:
        texts = [(await call(port)).text]
        await settled()
        texts.append((await call(port)).text)
        return texts

    with wire([reply(SSE, "Connection: close", framing="length")]) as server:
        assert asyncio.run(main(server.port)) == [TEXT, TEXT]
        assert len(server.connections) == 2 and len(server.requests) == 2
        assert server.wait_closed()


def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    """The server closes a kept-alive connection while it is idle: the pool drops it
    and the next call succeeds on a new one."""
    go = threading.Event()

    async def main(port: int) -> tuple[bool, str]:
        assert (await call(port)).text == TEXT
        await settled()
        idle = (await hh.pooled())._idle[("http", "127.0.0.1", port)]
        assert len(idle) == 1
        go.set()  # the server hangs up now
        lost = await until(lambda: idle[0].lost)
        return lost, (await call(port)).text

    with wire([reply(), go.wait, hang_up], [reply()]) as server:
        lost, text = asyncio.run(main(server.port))
        assert lost and text == TEXT
        assert len(server.connections) == 2 and len(server.requests) == 2
        assert server.wait_closed()


class ClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock the test moves forward: time passes, nobody sleeps."""

    skew = 0.0

    def time(self) -> float:
        return super().time() + self.skew


def test_an_idle_connection_older_than_the_keepalive_is_not_reused() -> None:
    """Reused just before :data:`KEEPALIVE_SECONDS` of idleness, replaced (and closed)
    just after: a server's own keep-alive timeout may have closed it meanwhile."""

    async def main(port: int) -> list[str]:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, ClockLoop)
        texts = []
        for skip in (0.0, _pool.KEEPALIVE_SECONDS - 0.5, _pool.KEEPALIVE_SECONDS + 0.5):
            loop.skew += skip
            texts.append((await call(port)).text)
            await settled()
            assert len(server.connections) == (1 if skip < _pool.KEEPALIVE_SECONDS else 2)
        assert await until(lambda: server.connections[0].is_set())
        return texts

    with serving([ok(API)]) as server, asyncio.Runner(loop_factory=ClockLoop) as runner:
        assert runner.run(main(server.port)) == [TEXT] * 3


# --------------------------------------------------------------------------- Pool(limit)


def test_a_pool_of_one_runs_two_calls_one_after_the_other_on_one_connection() -> None:
    """The second call waits for the first to end, then takes its connection (with
    no limit, it would have opened a second one)."""

    async def main(port: int) -> list[str]:
        pool = hh.Pool(1)
        messages = await asyncio.gather(call(port, http_client=pool), call(port, http_client=pool))
        await pool.aclose()
        return [m.text for m in messages]

    with serving([ok(API)]) as server:
        assert asyncio.run(main(server.port)) == [TEXT, TEXT]
        assert len(server.requests) == 2 and len(server.connections) == 1
        assert server.wait_closed()


def test_a_call_cancelled_while_waiting_for_a_slot_holds_none() -> None:
    """A call cancelled in the queue for the one slot leaves no trace there: once the
    first call ends, the next one goes through."""

    async def main(port: int) -> str:
        pool = hh.Pool(1)
        s = mw.stream(model_for(API, port), CTX, transport="httptools", api_key=KEY,
                      http_client=pool, timeout=mw.Timeout(idle=30))  # fmt: skip
        async for ev in s:
            if ev.type == "text_delta":
                break
        waiting = asyncio.create_task(call(port, http_client=pool))
        assert await until(lambda: bool(pool._waiters))
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await s.aclose()  # the first call's slot is free now
        async with asyncio.timeout(5):
            text = (await call(port, http_client=pool)).text
        await pool.aclose()
        return text

    with serving([stall_after_two(API), ok(API)]) as server:
        assert asyncio.run(main(server.port)) == TEXT
        assert len(server.requests) == 2
        assert server.wait_closed()


def test_a_waiter_woken_then_cancelled_passes_the_slot_on() -> None:
    """Cancelled between being woken and running, a waiter hands its turn to the next
    one, which would otherwise wait for a slot nobody holds."""

    async def main(port: int) -> None:
        pool = hh.Pool(1)
        target = _wire.target(f"http://127.0.0.1:{port}/v1")
        first = await pool.acquire(target, http.ssl_context)
        woken = asyncio.create_task(pool.acquire(target, http.ssl_context))
        after = asyncio.create_task(pool.acquire(target, http.ssl_context))
        assert await until(lambda: len(pool._waiters) == 2)
        pool.release(first)  # wakes `woken`…
        woken.cancel()  # …cancelled before it runs
        async with asyncio.timeout(5):
            conn = await after
        with pytest.raises(asyncio.CancelledError):
            await woken
        pool.release(conn)
        assert not pool._busy
        await pool.aclose()

    with serving([ok(API)]) as server:
        asyncio.run(main(server.port))
        assert server.wait_closed()


# --------------------------------------------------------------------------- request


def test_the_request_head() -> None:
    """Host with the port (not the default), the body's length, modelwire's
    User-Agent, the codings it undoes, and the call's own headers as given."""
    with wire([reply()]) as server:
        message = run(server.port, headers={"X-Trace": "t-1"})
        assert message.text == TEXT
    head = server.heads[0]
    assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert field(head, "host") == f"127.0.0.1:{server.port}"
    assert field(head, "content-length") == str(len(server.requests[0])) != "0"
    assert field(head, "user-agent") == f"modelwire/{mw.__version__}"
    assert field(head, "accept-encoding") == "gzip, deflate"
    assert field(head, "x-trace") == "t-1"
    assert field(head, "authorization") == f"Bearer {KEY}"
    assert field(head, "transfer-encoding") is None


@pytest.mark.parametrize(
    ("url", "headers", "says"),
    [
        ("http://127.0.0.1:{port}/v1", {"X-Bad": "a\r\nX-Injected: 1"}, "line break"),
        ("http://user:hunter2pw@127.0.0.1:{port}/v1", {}, "user or password"),
        ("ftp://127.0.0.1:{port}/v1", {}, "scheme must be http or https"),
    ],
    ids=["crlf-header", "userinfo", "scheme"],
)
def test_a_request_that_cannot_be_written_fails_final_before_connecting(
    url: str, headers: dict[str, str], says: str
) -> None:
    """modelwire refuses these before the transport; the transport refuses them
    again on its own: final (never retried), nothing sent, no secret shown."""

    async def send(port: int) -> Head | Failure:
        t = hh.HttptoolsTransport(None, http.ssl_context)
        got = await t.send(send_of(url.format(port=port), headers))
        await t.close()
        return got

    with wire([reply()]) as server:
        got = asyncio.run(send(server.port))
        assert server.connections == []
    assert isinstance(got, Failure) and got.final
    assert isinstance(got.error, ConnectError) and says in got.error.message
    assert "hunter2pw" not in got.error.message


# --------------------------------------------------------------------------- protocol


def test_a_server_that_does_not_speak_http_fails_to_connect(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bytes that are no status line: a connect failure, as on the other transports
    (nothing was answered), so the call is tried again."""
    monkeypatch.setattr(modelwire._call._retry, "_BACKOFF_BASE", 0.001)
    with wire([b"SSH-2.0-OpenSSH_9.6\r\n"]) as server:
        message = run(server.port, max_retries=1)
        assert server.wait_closed()
        assert len(server.requests) == 2
    assert "not valid HTTP/1.1" in failed(message, "connect")


def test_bytes_on_an_idle_connection_drop_it() -> None:
    """What a server sends while no request is out would be read as the next
    response: the connection is closed at once, the next call opens another."""
    go = threading.Event()

    async def main(port: int) -> tuple[bool, str]:
        assert (await call(port)).text == TEXT
        await settled()
        go.set()  # the stray bytes come now
        dropped = await until(lambda: server.connections[0].is_set())
        return dropped, (await call(port)).text

    stray = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray"
    with wire([reply(), go.wait, stray], [reply()]) as server:
        dropped, text = asyncio.run(main(server.port))
        assert dropped and text == TEXT
        assert len(server.connections) == 2
        assert server.wait_closed()


# --------------------------------------------------------------------------- TLS


def test_tls_is_verified_with_the_shared_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = _cert(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server = TLSServer([ok(API)], context)
    try:
        model = mw.Model(id="m", api=API, provider="local",
                         base_url=f"https://127.0.0.1:{server.port}/v1")  # fmt: skip
        # An issuer nobody trusts: refused before anything is sent.
        message = asyncio.run(mw.complete(model, CTX, transport="httptools", max_retries=0))
        assert "CERTIFICATE_VERIFY_FAILED" in failed(message, "connect")
        assert server.requests == []
        trusting = ssl.create_default_context(cafile=str(cert))
        monkeypatch.setattr(http, "ssl_context", lambda: trusting)
        message = asyncio.run(mw.complete(model, CTX, transport="httptools"))
        assert (message.text, message.error) == (TEXT, None)
        # The refused handshake may be recorded after this one (its own thread): count.
        assert len(server.requests) == 1 and server.handshakes.count("ok") == 1
        assert server.wait_closed()
    finally:
        server.close()
