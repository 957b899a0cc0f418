"""The live path for bench/icount.py: concurrent streams over loopback, in one process.

The server is a bare ``asyncio.Protocol`` that writes one piece of the body per turn of
the loop (so the streams interleave and every piece is its own socket read on the
client); its instructions are the same for modelwire and for the floor, so the two
counts differ only by the client. One event loop serves every repetition: the pooled
aiohttp session (and its connections, kept alive) is set up in the warm-up run.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from concurrency import PIECE, _Split
from streams import chat_stream, expected_text

STREAMS = 20
CHUNKS = 200


def _frames(mode: str) -> list[bytes]:
    body = chat_stream(CHUNKS)
    if mode == "delta":
        frames = [e + b"\n\n" for e in body.split(b"\n\n") if e]
    else:
        frames = [body[i : i + PIECE] for i in range(0, len(body), PIECE)]
    return [b"%x\r\n" % len(f) + f + b"\r\n" for f in frames] + [b"0\r\n\r\n"]


_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


class _Server(asyncio.Protocol):
    def __init__(self, framed: list[bytes]) -> None:
        self.framed = framed
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        head, sep, rest = self.buf.partition(b"\r\n\r\n")
        if not sep:
            return
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        if len(rest) < length:
            return
        self.buf = rest[length:]
        assert self.transport is not None
        self.transport.write(_HEAD)
        asyncio.get_running_loop().call_soon(self._write, 0)

    def _write(self, i: int) -> None:
        assert self.transport is not None
        if self.transport.is_closing():
            return
        self.transport.write(self.framed[i])
        if i + 1 < len(self.framed):
            asyncio.get_running_loop().call_soon(self._write, i + 1)


def live_workload(name: str) -> Callable[[], object]:
    floor = "-floor-" in name
    mode = name.split("-")[-2 if name.endswith("-total") else -1]
    framed = _frames(mode)
    runner = asyncio.Runner()
    loop = runner.get_loop()
    server = loop.run_until_complete(
        loop.create_server(lambda: _Server(framed), "127.0.0.1", 0, backlog=256)
    )
    port = server.sockets[0].getsockname()[1]
    want = expected_text(CHUNKS)
    if floor:
        import aiohttp

        session = loop.run_until_complete(_session())
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        request = json.dumps({"model": "bench", "stream": True,
                              "messages": [{"role": "user", "content": "hi"}]}).encode()  # fmt: skip

        async def one() -> str:
            split = _Split()
            async with session.post(url, data=request,
                                    headers={"content-type": "application/json"}) as r:  # fmt: skip
                while data := await r.content.readany():
                    split.feed(data)
            return "".join(split.parts)

        del aiohttp
    else:
        import modelwire as mw

        model = mw.Model(id="bench", api="openai-chat", provider="local",
                         base_url=f"http://127.0.0.1:{port}/v1")  # fmt: skip
        ctx = mw.Context(messages=[mw.UserMessage(content="hi")])
        timeout = mw.Timeout(
            connect=60.0, idle=60.0, total=600.0 if name.endswith("-total") else None
        )

        async def one() -> str:
            async for ev in mw.stream(model, ctx, timeout=timeout, max_retries=0):
                if ev.type in ("done", "error"):
                    message = ev.message
            return "".join(getattr(b, "text", "") for b in message.content)

    async def batch() -> None:
        texts = await asyncio.gather(*(one() for _ in range(STREAMS)))
        assert all(t == want for t in texts), "a stream's text was wrong"
        for _ in range(5):  # the drains after the terminal events end
            await asyncio.sleep(0)

    return lambda: runner.run(batch())


async def _session() -> object:
    import aiohttp

    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                 timeout=aiohttp.ClientTimeout(total=None, sock_read=60))  # fmt: skip
