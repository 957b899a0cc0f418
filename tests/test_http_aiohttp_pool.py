"""The aiohttp transport's pooled session: one per event loop for every call without
an ``http_client``. A finished response's connection serves the next call on that
loop; an aborted one is closed at once, never handed to the next call; the session
closes with its loop without a warning; and calls share nothing else through it —
no cookies, no connection past a proxy the environment now names. Real loopback
sockets (the fault matrix's raw server), ``filterwarnings = error``.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import warnings

import pytest

import modelwire as mw
from modelwire._http import _aiohttp as pool
from rawserver import CTX, TEXT, Plan, frames, model_for, ok, serving, stall_after_two

API = "openai-chat"


async def _stream_text(model: mw.Model) -> str:
    message = await mw.complete(model, CTX, transport="aiohttp", max_retries=0)
    assert message.error is None, message.error
    return message.text


async def _settled() -> None:
    """Wait until the calls' background work is over: after the terminal event a
    call drains the rest of the body (bounded), then hands the connection back."""
    me = asyncio.current_task()
    for _ in range(1000):
        if all(t is me or t.done() for t in asyncio.all_tasks()):
            return
        await asyncio.sleep(0.005)


def test_calls_on_one_loop_share_a_connection_closed_with_the_loop() -> None:
    async def main(port: int) -> tuple[list[str], int]:
        model = model_for(API, port)
        texts = []
        for _ in range(3):
            texts.append(await _stream_text(model))
            await _settled()
        return texts, len(pool._POOL)

    with serving([ok(API)]) as server:
        texts, pooled = asyncio.run(main(server.port))
        assert texts == [TEXT] * 3 and pooled >= 1
        assert len(server.requests) == 3
        assert len(server.connections) == 1  # the finished body's connection was reused
        assert server.wait_closed()  # closed by asyncio.run's shutdown_asyncgens
    gc.collect()  # an unclosed session or connector would warn here (an error)


def test_an_aborted_stream_closes_its_own_connection_not_the_pool() -> None:
    """Cancelling mid-body closes THAT connection while the loop runs on (the server
    sees it closed); the next call opens a fresh one and is answered in full."""
    opts = {"timeout": mw.Timeout(idle=30)}

    async def main(port: int) -> tuple[bool, str]:
        model = model_for(API, port)
        s = mw.stream(model, CTX, transport="aiohttp", max_retries=0, **opts)  # type: ignore[arg-type]
        async for ev in s:
            if ev.type == "text_delta":
                break
        await s.aclose()
        seen_closed = False
        for _ in range(300):  # keep the loop running while we look
            if server.connections and server.connections[0].is_set():
                seen_closed = True
                break
            await asyncio.sleep(0.01)
        return seen_closed, await _stream_text(model)

    with serving([stall_after_two(API), ok(API)]) as server:
        closed, text = asyncio.run(main(server.port))
        assert closed
        assert text == TEXT
        assert len(server.connections) == 2 and len(server.requests) == 2
        assert server.wait_closed()


def test_a_cancelled_task_closes_its_connection() -> None:
    async def main(port: int) -> bool:
        model = model_for(API, port)
        started = asyncio.Event()

        async def consume() -> None:
            async for ev in mw.stream(model, CTX, transport="aiohttp", timeout=mw.Timeout(idle=30)):
                if ev.type == "text_delta":
                    started.set()

        task = asyncio.create_task(consume())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(300):
            if server.all_closed():
                return True
            await asyncio.sleep(0.01)
        return False

    with serving([stall_after_two(API)]) as server:
        assert asyncio.run(main(server.port))


def test_a_cookie_set_by_one_call_is_not_sent_by_the_next() -> None:
    body = frames(API)
    plan = Plan(body=body, headers={"Set-Cookie": "session=abc123; Path=/"})

    async def main(port: int) -> None:
        # A host name: a cookie jar takes no cookie from an IP address.
        model = mw.Model(id="m", api=API, provider="mock", base_url=f"http://localhost:{port}/v1")
        for _ in range(2):
            assert await _stream_text(model) == TEXT
            await _settled()  # the second call reuses the connection the cookie came on

    with serving([plan]) as server:
        asyncio.run(main(server.port))
        assert len(server.heads) == 2
        assert all(b"cookie:" not in h.lower() for h in server.heads)


def test_a_proxy_named_after_a_direct_call_is_not_bypassed_by_its_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pooled connection to the origin is not reused once the environment names a
    proxy: the second call goes to the proxy (the pool is keyed by proxy too)."""
    for var in ("ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy", "http_proxy",
                "HTTP_PROXY", "NO_PROXY", "no_proxy"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)

    async def main(origin: int, proxy: int) -> None:
        model = model_for(API, origin)
        assert await _stream_text(model) == TEXT
        await _settled()  # the direct connection is idle in the pool now
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy}")
        assert await _stream_text(model) == TEXT

    with serving([ok(API)]) as direct, serving([ok(API)]) as proxy:
        asyncio.run(main(direct.port, proxy.port))
        assert len(direct.requests) == 1
        assert proxy.targets == [f"http://127.0.0.1:{direct.port}/v1/chat/completions"]


def test_each_loop_has_its_own_session() -> None:
    sessions: list[object] = []

    async def main(port: int) -> None:
        assert await _stream_text(model_for(API, port)) == TEXT
        sessions.append(await pool.pooled_session())

    with serving([ok(API)]) as server:
        asyncio.run(main(server.port))
        thread = threading.Thread(target=lambda: asyncio.run(main(server.port)))
        thread.start()
        thread.join()
        asyncio.run(main(server.port))
        assert len(server.requests) == 3 and len(server.connections) == 3
        assert server.wait_closed()
    assert len({id(s) for s in sessions}) == 3
    assert all(s.closed for s in sessions)  # type: ignore[attr-defined]


def test_a_loop_closed_without_shutdown_leaves_no_unclosed_session() -> None:
    """``loop.close()`` without ``shutdown_asyncgens``: the next loop's first call
    drops the old loop's session, marked closed (no "Unclosed client session")."""
    with serving([ok(API)]) as server:
        loop = asyncio.new_event_loop()
        try:
            assert loop.run_until_complete(_stream_text(model_for(API, server.port))) == TEXT
            session = loop.run_until_complete(pool.pooled_session())
            # What asyncio.run would do, minus shutdown_asyncgens: the connection is
            # closed by the caller here so that only the session is left to the pool.
            loop.run_until_complete(session.connector.close())  # type: ignore[union-attr]
        finally:
            loop.close()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            asyncio.run(_stream_text(model_for(API, server.port)))
            assert loop not in pool._POOL
            del loop, session
            gc.collect()
        assert server.wait_closed()


def test_a_pooled_client_for_many_calls_is_an_aiohttp_session_capped_at_its_size() -> None:
    from modelwire._http import close_async_client, pooled_async_client

    async def main(port: int) -> tuple[list[str], int, bool]:
        session = pooled_async_client(2, transport="auto")
        limit = session.connector.limit
        model = model_for(API, port)
        messages = await asyncio.gather(
            *(mw.complete(model, CTX, http_client=session, max_retries=0) for _ in range(5))
        )
        await close_async_client(session)
        return [m.text for m in messages], limit, session.closed

    with serving([ok(API)]) as server:
        texts, limit, closed = asyncio.run(main(server.port))
        assert texts == [TEXT] * 5 and limit == 2 and closed
        assert len(server.requests) == 5
        assert len(server.connections) <= 2  # five calls, at most two connections
    assert isinstance(pooled_async_client(3), __import__("httpx").AsyncClient)  # the default
    gc.collect()


_PROXY_VARS = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
               "ALL_PROXY", "no_proxy", "NO_PROXY")  # fmt: skip


@pytest.mark.parametrize(
    ("env", "url", "proxy"),
    [
        ({}, "http://api.example/v1", None),
        ({"HTTP_PROXY": "http://upper:1"}, "http://api.example/v1", "http://upper:1"),
        # The lowercase name wins, as in urllib.request.getproxies_environment.
        ({"HTTP_PROXY": "http://upper:1", "http_proxy": "http://lower:2"},
         "http://api.example/v1", "http://lower:2"),
        # An https URL takes the https names only, else ALL_PROXY.
        ({"HTTP_PROXY": "http://plain:1"}, "https://api.example/v1", None),
        ({"HTTP_PROXY": "http://plain:1", "HTTPS_PROXY": "http://tls:3"},
         "https://api.example/v1", "http://tls:3"),
        ({"ALL_PROXY": "http://all:4"}, "https://api.example/v1", "http://all:4"),
        ({"https_proxy": "http://tls:3", "ALL_PROXY": "http://all:4"},
         "https://api.example/v1", "http://tls:3"),
        # An empty value is no proxy; the next name is read.
        ({"http_proxy": "", "HTTP_PROXY": "http://upper:1"}, "http://api.example/v1",
         "http://upper:1"),
        # A bare host:port is an http proxy; NO_PROXY exempts a host.
        ({"HTTP_PROXY": "proxy.example:8080"}, "http://api.example/v1",
         "http://proxy.example:8080"),
        ({"HTTP_PROXY": "http://upper:1", "NO_PROXY": "api.example"}, "http://api.example/v1",
         None),
    ],
)  # fmt: skip
def test_the_environment_names_the_proxy_of_a_url_as_urllib_reads_it(
    env: dict[str, str], url: str, proxy: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yarl

    for var in _PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    found, authorization = pool._env_proxy(yarl.URL(url))
    assert (str(found) if found is not None else None) == proxy
    assert authorization is None


def test_a_proxy_url_with_credentials_gives_them_as_basic_proxy_authorization(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import base64

    import yarl

    for var in _PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    # Percent-encoded userinfo is decoded before it is encoded (RFC 3986 §3.2.1).
    monkeypatch.setenv("HTTPS_PROXY", "http://us%40er:s3cr%3Aet@proxy.example:3128")
    found, authorization = pool._env_proxy(yarl.URL("https://api.example/v1"))
    assert str(found) == "http://proxy.example:3128"
    assert authorization == "Basic " + base64.b64encode(b"us@er:s3cr:et").decode()
