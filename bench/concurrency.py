"""Many concurrent streams over loopback from one process: events/s and peak memory.

Two processes, so that each one's CPU time and memory are its own:

* ``python bench/concurrency.py server STREAMS CHUNKS [kib|delta]`` — an asyncio HTTP/1.1
  server on 127.0.0.1 (an ephemeral port, printed on the first line). It holds every request
  until ``STREAMS`` of them are open at once (or 30 s passed), so the streams really are
  concurrent, then answers each with the same OpenAI Chat stream of ``CHUNKS`` text deltas,
  chunked, in pieces of about 1 KiB (``kib``, the default) or one SSE event per write
  (``delta``: what a model serving tokens does), with a yield to the event loop between
  pieces (so the streams interleave). It serves ``STREAMS`` requests, prints how many were open at once,
  and exits; it also exits after 120 s whatever happens.
* ``python bench/concurrency.py client LIB PORT STREAMS CHUNKS`` — opens ``STREAMS``
  streams at once with ``asyncio.gather`` and prints one JSON line: wall and CPU time,
  text deltas received, peak RSS before and after, and whether every stream's text was
  right. ``LIB`` is ``modelwire`` (one shared ``httpx.AsyncClient`` allowing ``STREAMS``
  connections), ``modelwire-default`` (no client given, the default transport: with
  aiohttp the event loop's pooled session, with httpx a client per stream),
  ``modelwire-httpx`` / ``modelwire-aiohttp`` (no client given, that ``transport=``), ``modelwire-aiohttp-shared`` (one shared ``aiohttp.ClientSession``),
  ``raw-httpx`` / ``raw-aiohttp`` (one shared client, the body split on blank lines and each
  payload ``json.loads``-ed: no validation, no events — the floor of each HTTP stack), or
  ``openai`` (``AsyncOpenAI(...).chat.completions.create(stream=True)``, text joined by
  the caller: the SDK's lightest streaming path, without the accumulating helper).

Everything stays on 127.0.0.1 and is bounded in count and time.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from streams import chat_stream, expected_text

HOST = "127.0.0.1"
SERVER_LIFETIME = 120.0
BARRIER_TIMEOUT = 30.0
PIECE = 1024


def _raise_fd_limit(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, need))
    if want > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def _rss_kib() -> int:
    """Peak resident set size of this process so far, in KiB."""
    # VmHWM belongs to this process image. ru_maxrss would do, but Linux carries it
    # over exec() from the parent, so a child of a large parent reports the parent's.
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


# --------------------------------------------------------------------------- server


async def _serve(streams: int, chunks: int, mode: str = "kib") -> None:
    body = chat_stream(chunks)
    if mode == "delta":  # one SSE event per write
        frames = [e + b"\n\n" for e in body.split(b"\n\n") if e]
    else:
        frames = [body[i : i + PIECE] for i in range(0, len(body), PIECE)]
    framed = [b"%x\r\n" % len(f) + f + b"\r\n" for f in frames]
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    )
    arrived = 0
    held_at_release = 0
    served = 0
    everyone = asyncio.Event()
    finished = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal arrived, served, held_at_release
        try:
            request = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in request.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            arrived += 1
            if arrived == streams:
                held_at_release = arrived
                everyone.set()
            try:
                await asyncio.wait_for(everyone.wait(), BARRIER_TIMEOUT)
            except TimeoutError:
                if not everyone.is_set():
                    held_at_release = arrived
                    everyone.set()
            writer.write(head)
            for piece in framed:
                writer.write(piece)
                await writer.drain()
                await asyncio.sleep(0)
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            served += 1
            if served >= streams:
                finished.set()

    server = await asyncio.start_server(handle, HOST, 0, backlog=streams + 64)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    try:
        await asyncio.wait_for(finished.wait(), SERVER_LIFETIME)
    except TimeoutError:
        pass
    server.close()
    print(json.dumps({"held_at_once": held_at_release, "served": served}), flush=True)


# --------------------------------------------------------------------------- clients


async def _modelwire(port: int, streams: int, lib: str) -> list[tuple[int, str]]:
    import httpx

    import modelwire as mw

    model = mw.Model(id="bench", api="openai-chat", provider="local",
                     base_url=f"http://{HOST}:{port}/v1")  # fmt: skip
    ctx = mw.Context(messages=[mw.UserMessage(content="hi")])
    client: Any = None
    opts: dict[str, Any] = {}
    if lib == "modelwire":
        limits = httpx.Limits(max_connections=streams, max_keepalive_connections=0)
        client = httpx.AsyncClient(limits=limits, timeout=60.0)
    elif lib == "modelwire-aiohttp-shared":
        import aiohttp

        client = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=streams))
    elif lib in ("modelwire-httpx", "modelwire-aiohttp"):
        opts["transport"] = lib.removeprefix("modelwire-")

    async def one() -> tuple[int, str]:
        n = 0
        async for ev in mw.stream(model, ctx, http_client=client, timeout=60.0, max_retries=0,
                                  **opts):  # fmt: skip
            if ev.type == "text_delta":
                n += 1
            elif ev.type in ("done", "error"):
                message = ev.message
        text = "".join(getattr(b, "text", "") for b in message.content)
        return n, text

    try:
        return await asyncio.gather(*(one() for _ in range(streams)))
    finally:
        if isinstance(client, httpx.AsyncClient):
            await client.aclose()
        elif client is not None:
            await client.close()


_REQUEST = json.dumps({"model": "bench", "stream": True,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()  # fmt: skip


class _Split:
    """The floor's consumer: split the body on blank lines, ``json.loads`` each payload,
    keep the text (to check it); no validation, no events."""

    __slots__ = ("buf", "n", "parts")

    def __init__(self) -> None:
        self.buf = b""
        self.n = 0
        self.parts: list[str] = []

    def feed(self, data: bytes) -> None:
        *events, self.buf = (self.buf + data).split(b"\n\n")
        for e in events:
            if e.startswith(b"data: {"):
                choices = json.loads(e[6:])["choices"]  # the usage chunk has none
                text = choices[0]["delta"].get("content") if choices else None
                if text:
                    self.n += 1
                    self.parts.append(text)


async def _raw_httpx(port: int, streams: int) -> list[tuple[int, str]]:
    import httpx

    limits = httpx.Limits(max_connections=streams, max_keepalive_connections=0)
    client = httpx.AsyncClient(limits=limits, timeout=60.0)
    url = f"http://{HOST}:{port}/v1/chat/completions"

    async def one() -> tuple[int, str]:
        split = _Split()
        async with client.stream("POST", url, content=_REQUEST,
                                 headers={"content-type": "application/json"}) as r:  # fmt: skip
            async for data in r.aiter_bytes():
                split.feed(data)
        return split.n, "".join(split.parts)

    try:
        return await asyncio.gather(*(one() for _ in range(streams)))
    finally:
        await client.aclose()


async def _raw_aiohttp(port: int, streams: int) -> list[tuple[int, str]]:
    import aiohttp

    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=streams),
                                    timeout=aiohttp.ClientTimeout(total=None, sock_read=60))  # fmt: skip
    url = f"http://{HOST}:{port}/v1/chat/completions"

    async def one() -> tuple[int, str]:
        split = _Split()
        async with session.post(url, data=_REQUEST,
                                headers={"content-type": "application/json"}) as r:  # fmt: skip
            while data := await r.content.readany():
                split.feed(data)
        return split.n, "".join(split.parts)

    try:
        return await asyncio.gather(*(one() for _ in range(streams)))
    finally:
        await session.close()


async def _openai(port: int, streams: int) -> list[tuple[int, str]]:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(api_key="sk-bench", base_url=f"http://{HOST}:{port}/v1",
                         max_retries=0, timeout=60.0)  # fmt: skip

    async def one() -> tuple[int, str]:
        stream = await client.chat.completions.create(
            model="bench", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        n = 0
        parts: list[str] = []
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                n += 1
                parts.append(chunk.choices[0].delta.content)
        return n, "".join(parts)

    try:
        return await asyncio.gather(*(one() for _ in range(streams)))
    finally:
        await client.close()


def _client(lib: str, port: int, streams: int, chunks: int) -> None:
    # Import everything the run needs first, so the baseline holds the libraries.
    if lib == "openai":
        import openai  # noqa: F401
    else:
        import aiohttp  # noqa: F401
        import httpx  # noqa: F401

        if lib.startswith("modelwire"):
            import modelwire as mw
            import modelwire._http
            import modelwire._http._aiohttp

            # Warm up without the network: the modules a call imports on first use
            # (wire API, assembler) are loaded before the baseline, as the raw
            # clients' are.
            mw.replay("openai-chat", chat_stream(3))
            model = mw.Model(id="bench", api="openai-chat", provider="local",
                             base_url=f"http://{HOST}:{port}/v1")  # fmt: skip
            mw.stream(model, mw.Context(messages=[mw.UserMessage(content="hi")]))
    base_rss = _rss_kib()
    t0, c0 = time.perf_counter(), time.process_time()
    if lib == "openai":
        results = asyncio.run(_openai(port, streams))
    elif lib == "raw-httpx":
        results = asyncio.run(_raw_httpx(port, streams))
    elif lib == "raw-aiohttp":
        results = asyncio.run(_raw_aiohttp(port, streams))
    else:
        results = asyncio.run(_modelwire(port, streams, lib))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    want = expected_text(chunks)
    report = {
        "lib": lib,
        "streams": streams,
        "deltas": sum(n for n, _ in results),
        "correct": sum(1 for n, text in results if n == chunks and text == want),
        "wall": wall,
        "cpu": cpu,
        "base_rss_kib": base_rss,
        "peak_rss_kib": _rss_kib(),
    }
    print(json.dumps(report), flush=True)


def main() -> None:
    role = sys.argv[1]
    if role == "server":
        streams, chunks = int(sys.argv[2]), int(sys.argv[3])
        mode = sys.argv[4] if len(sys.argv) > 4 else "kib"
        _raise_fd_limit(streams + 256)
        asyncio.run(_serve(streams, chunks, mode))
    elif role == "client":
        lib, port, streams, chunks = (
            sys.argv[2],
            int(sys.argv[3]),
            int(sys.argv[4]),
            int(sys.argv[5]),
        )
        _raise_fd_limit(streams + 256)
        _client(lib, port, streams, chunks)
    else:
        raise SystemExit(f"unknown role {role!r}")


if __name__ == "__main__":
    main()
