"""The latency the gateway adds to a streamed answer, against calling the backend
directly, and against the LiteLLM proxy in front of the same backend.

    python bench/bench_gateway.py [--quick] [--deltas N] [--requests N]
    python bench/bench_gateway.py --icount [--deltas N]
    python bench/bench_gateway.py --stamps [--quick] [--deltas N] [--requests N]
    make bench-gateway

One backend — a loopback ``MockServer`` streaming an OpenAI Chat answer of ``N``
deltas (default 100), in a process of its own as a provider's server is — and one
client, httpx (a keep-alive ``httpx.Client``), sending the same streamed Chat
Completions request three ways, interleaved request by request so that load on the
machine falls on all alike:

* ``direct``: to the backend itself;
* ``gateway``: to ``modelwire serve`` (its own process, uvicorn, the Chat front-end),
  whose model routes to the backend over openai-chat;
* ``passthru``: to the floor of any Python proxy here — an ASGI app on the same
  uvicorn settings (``serve``'s) that forwards the body to the backend with aiohttp and
  copies the response bytes back as they come: no parsing, no translation, no
  checks. What the gateway adds beyond it is the gateway's own work;
* ``translate``: to the floor of a *translating* Python proxy here — the pass-through's
  app, which also authenticates the key (sha256), parses the request and encodes the
  backend's anew (msgspec), and decodes each SSE event of the answer and renders it
  anew, its head sent once the backend has answered (as the gateway's) and its first
  content at once: the work no gateway that translates can skip,
  and nothing checked (:func:`serve_translate`). What the gateway adds beyond it is
  the price of its checks, typed events, limits, log and trace;
* ``translate-raw``: the same app with aiohttp replaced by the least an HTTP/1.1
  client can do on asyncio — one keep-alive connection, ``httptools`` parsing the
  answer, no pool, timeout or error handling (:class:`RawConnection`): what is left
  of a translating proxy's added latency once the client costs next to nothing;
* ``litellm``: to ``litellm --config`` (its own process) routing to the backend, when
  ``bench/.venv-litellm`` holds it (``python3 -m venv bench/.venv-litellm &&
  bench/.venv-litellm/bin/pip install 'litellm[proxy]==1.108.7'``); skipped otherwise.

Reported per path: p50 and p99 of the time to the first body byte (TTFB), to the
first delta's text (what a user waits for; see :func:`one_request`) and to the end of
the response (total), in ms; the added latency is the proxy's percentile minus the
direct one. And the proxy process's CPU time per streamed delta (user + system from
``/proc/PID/stat`` over the measured requests, divided by requests x deltas).
Goal: gateway p50 added latency < 1 ms and < 1/3 of LiteLLM's.

``--icount``: what the latency figures cannot show on a shared machine, counted by
valgrind (``callgrind``: instructions, the same from run to run whatever the load):
the instructions of one request through the gateway's ASGI app, called in-process
(no server, the backend in its own process, not counted), against one request of
the same answer made with aiohttp alone (split + ``json.loads``), the floor of any
proxy's client side. Each runs twice, with 10 and 50 requests after a warm-up; the
difference over 40 is per request. Default ``--deltas 1``: the per-request work,
which is what the time to the first byte pays for.

``--stamps``: where the gateway's time to the first byte goes, in the served
processes themselves (the gateway and the pass-through, LiteLLM not run): each
takes the time (``perf_counter``) at the steps of every measured request — the app
called, modelwire's transport asked to send (gateway), the backend request written
(on the gateway's httptools transport: the moment before it is),
the backend's first bytes, its head parsed and the first body bytes read (gateway),
the first and the last body sent to the client, the app's return (what it does after
the response, before it can take the next request on its loop) — and the p50 of each
step, in ms from the app call, is printed per proxy. (The clock calls and the wrappers add a little to both.)
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LITELLM = HERE / ".venv-litellm" / "bin" / "litellm"


def _arg(name: str, default: int) -> int:
    if name in sys.argv:
        return int(sys.argv[sys.argv.index(name) + 1])
    return default


QUICK = "--quick" in sys.argv
DELTAS = _arg("--deltas", 1 if "--icount" in sys.argv else 100)
REQUESTS = _arg("--requests", 40 if QUICK else 300)
WARMUP = 10 if QUICK else 30
FIRST_TEXT = b"w000"  # the first delta's text
KEY = "sk-bench-4f1c9a7e2b6d8053c1e9a4f7b2d6e8c0"  # both proxies authenticate it


def serve_gateway(config_path: str, port: int) -> None:
    """``--serve-gateway CONFIG PORT``: the gateway process."""
    from modelwire.gateway import app, serve

    gateway = app(config_path)
    if STAMPS_FILE is None:
        serve(gateway, "127.0.0.1", port)
        return
    import uvicorn

    # serve()'s uvicorn settings, the app wrapped.
    uvicorn.run(stamped(gateway, STAMPS_FILE), host="127.0.0.1", port=port, lifespan="on",
                access_log=False, log_level="info", server_header=False, proxy_headers=False)  # fmt: skip


# --------------------------------------------------------------------------- --stamps

#: ``--stamps-file PATH`` (given to the served processes): where they write their steps.
STAMPS_FILE = sys.argv[sys.argv.index("--stamps-file") + 1] if "--stamps-file" in sys.argv else None
#: The steps, in their order in a request.
STEPS = ("request arrived", "send called", "request written", "backend bytes", "head parsed", "body read",
         "first body sent", "last body sent", "app returned")  # fmt: skip


def stamped(app: Any, path: str) -> Any:
    """``app`` taking the time at each step of every POST (:data:`STEPS`), relative to
    the app's call; written to ``path`` as JSON when the server shuts down."""
    import json

    from aiohttp import client_proto, http_writer

    runs: list[dict[str, float]] = []
    now: dict[str, float] = {}

    def mark(step: str) -> None:
        if step not in now:
            now[step] = time.perf_counter()

    def wrap(cls: Any, name: str, step: str) -> None:
        original = getattr(cls, name)

        def marked(self: Any, *args: Any) -> Any:
            mark(step)
            return original(self, *args)

        setattr(cls, name, marked)

    from uvicorn.protocols.http import httptools_impl

    arrived: list[float] = [0.0]
    original_received = httptools_impl.HttpToolsProtocol.data_received

    def received(self: Any, data: bytes) -> None:
        arrived[0] = time.perf_counter()
        original_received(self, data)

    httptools_impl.HttpToolsProtocol.data_received = received  # type: ignore[method-assign]
    wrap(http_writer.StreamWriter, "_write", "request written")
    wrap(http_writer.StreamWriter, "_writelines", "request written")
    wrap(client_proto.ResponseHandler, "data_received", "backend bytes")
    # modelwire's transports (the gateway's: httptools, or aiohttp with a proxy set):
    # asked to send, the head parsed, a body read returned; on httptools, the request
    # written (the response expected just before) and the backend's bytes.
    from modelwire._http._aiohttp import AiohttpTransport
    from modelwire._http._httptools import HttptoolsTransport
    from modelwire._http._httptools._wire import Connection

    for transport in (AiohttpTransport, HttptoolsTransport):
        original_send, original_read = transport.send, transport.read

        async def timed_send(self: Any, i: Any, send: Any = original_send) -> Any:
            mark("send called")
            out = await send(self, i)
            mark("head parsed")
            return out

        async def timed_read(self: Any, i: Any, read: Any = original_read) -> Any:
            out = await read(self, i)
            mark("body read")
            return out

        transport.send = timed_send  # type: ignore[method-assign]
        transport.read = timed_read  # type: ignore[method-assign]
    wrap(Connection, "begin", "request written")
    wrap(Connection, "data_received", "backend bytes")

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            if scope["type"] == "lifespan":

                async def receive_then_dump() -> Any:
                    message = await receive()
                    if message["type"] == "lifespan.shutdown":
                        Path(path).write_text(json.dumps(runs))
                    return message

                await app(scope, receive_then_dump, send)
                return
            await app(scope, receive, send)
            return
        now.clear()
        t0 = time.perf_counter()

        async def timed(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                if message.get("body"):
                    mark("first body sent")
                if not message.get("more_body"):
                    mark("last body sent")
            await send(message)

        await app(scope, receive, timed)
        mark("app returned")
        now["request arrived"] = arrived[0]
        runs.append({step: (t - t0) * 1000 for step, t in now.items()})

    return wrapped


def stamps() -> None:
    import json

    import httpx

    backend, origin = start_backend()
    results: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        procs: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
        files = {name: tmp / f"{name}.json" for name in ("gateway", "passthru")}
        try:
            procs["gateway"] = start_gateway(
                origin + "/v1", tmp, ["--stamps-file", str(files["gateway"])]
            )
            procs["passthru"] = start_passthrough(
                origin + "/v1", ["--stamps-file", str(files["passthru"])]
            )
            clients = {name: httpx.Client(timeout=60) for name in procs}
            for _ in range(WARMUP + REQUESTS):
                for name, (_, url) in procs.items():
                    one_request(clients[name], url, "bench")
            for c in clients.values():
                c.close()
        finally:
            stop(backend, [p for p, _ in procs.values()])
        for name, path in files.items():
            results[name] = json.loads(path.read_text())[WARMUP:]
    print(f"p50 ms from the app's call, {REQUESTS} requests per proxy (after {WARMUP}), "
          f"a {DELTAS}-delta answer:")  # fmt: skip
    print(f"{'step':<18}" + "".join(f"{name:>10}" for name in results))
    for step in STEPS:
        cells = []
        for runs in results.values():
            values = [r[step] for r in runs if step in r]
            cells.append(f"{pct(values, 0.5):>10.3f}" if values else f"{'-':>10}")
        print(f"{step:<18}" + "".join(cells))


# --------------------------------------------------------------------------- --icount

ICOUNT_BODY = b'{"model": "%s", "stream": true, "messages": [{"role": "user", "content": "Hi."}]}'


def icount_run(kind: str, origin: str, n: int) -> None:
    """``--icount-run KIND ORIGIN N``: N requests (after 5 warm-up), KIND gateway or raw."""
    import asyncio
    import json

    if kind == "raw":
        import aiohttp

        async def main() -> None:
            async with aiohttp.ClientSession() as session:

                async def one() -> None:
                    async with session.post(origin + "/v1/chat/completions",
                                            data=ICOUNT_BODY % b"mock-model",
                                            headers={"content-type": "application/json"}) as r:  # fmt: skip
                        async for chunk in r.content.iter_any():
                            for part in chunk.split(b"\n\n"):
                                if part.startswith(b"data: {"):
                                    json.loads(part[6:])

                for _ in range(5 + n):
                    await one()

    else:
        from modelwire.gateway import app, hash_key

        gateway = app({"models": {"bench": {"api": "openai-chat", "id": "mock-model",
                                            "base_url": origin + "/v1"}},
                       "keys": {"bench": {"key_sha256": hash_key(KEY), "models": ["*"]}}})  # fmt: skip
        body = ICOUNT_BODY % b"bench"
        scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions",
                 "headers": [(b"authorization", f"Bearer {KEY}".encode()),
                             (b"content-length", str(len(body)).encode())]}  # fmt: skip

        async def main() -> None:
            async def one() -> None:
                sent = asyncio.Event()

                async def receive() -> dict[str, Any]:
                    if not sent.is_set():
                        sent.set()
                        return {"type": "http.request", "body": body}
                    await asyncio.Event().wait()  # the client stays
                    raise AssertionError

                statuses: list[int] = []

                async def send(message: Any) -> None:
                    if message["type"] == "http.response.start":
                        statuses.append(message["status"])

                await gateway(scope, receive, send)
                assert statuses == [200], statuses

            for _ in range(5 + n):
                await one()
            await gateway.aclose()

    import uvloop

    uvloop.run(main())


def icount() -> None:
    import shutil

    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    backend, origin = start_backend()
    per: dict[str, float] = {}
    try:
        for kind in ("raw", "gateway"):
            totals = []
            for n in (10, 50):
                with tempfile.TemporaryDirectory() as tmp:
                    out = os.path.join(tmp, "cg.out")
                    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONHASHSEED": "0"}
                    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                                    sys.executable, __file__, "--icount-run", kind, origin, str(n)],
                                   check=True, capture_output=True, env=env)  # fmt: skip
                    lines = Path(out).read_text().splitlines()
                    totals.append(next(int(x.split()[1]) for x in lines
                                       if x.startswith(("summary:", "totals:"))))  # fmt: skip
            per[kind] = (totals[1] - totals[0]) / 40
    finally:
        backend.kill()
        backend.wait()
    print(f"instructions per request, a {DELTAS}-delta streamed OpenAI Chat answer (callgrind):")
    print(f"  aiohttp alone (split + json.loads)   {per['raw']:>12,.0f}")
    print(f"  the gateway's ASGI app, in-process   {per['gateway']:>12,.0f}"
          f"   ({per['gateway'] / per['raw']:.2f}x; {per['gateway'] - per['raw']:,.0f} more)")  # fmt: skip


async def floor_request(scope: dict[str, Any], receive: Any, send: Any) -> bytes | None:
    """What the floors' apps share: the lifespan and ``wait_ready``'s GET answered here
    (``None``), a POST's body read whole."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return None
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    if scope["method"] == "GET":  # wait_ready's probe
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})
        return None
    return body


def serve_passthrough(backend_v1: str, port: int) -> None:
    """``--serve-passthrough BACKEND_V1 PORT``: the pass-through proxy process."""
    import aiohttp
    import uvicorn

    session: list[aiohttp.ClientSession] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await floor_request(scope, receive, send)
        if body is None:
            return
        if not session:
            session.append(aiohttp.ClientSession())
        url = backend_v1 + "/chat/completions"
        data = body.replace(b'"bench"', b'"mock-model"')
        async with session[0].post(
            url, data=data, headers={"content-type": "application/json"}
        ) as r:
            await send({"type": "http.response.start", "status": r.status,
                        "headers": [(b"content-type", b"text/event-stream")]})  # fmt: skip
            async for chunk in r.content.iter_any():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    served = app if STAMPS_FILE is None else stamped(app, STAMPS_FILE)
    uvicorn.run(served, host="127.0.0.1", port=port, lifespan="on", access_log=False,
                log_level="warning", server_header=False, proxy_headers=False)  # fmt: skip


def start_passthrough(
    backend_v1: str, extra: list[str] | None = None, mode: str = "--serve-passthrough"
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, mode, backend_v1, str(port),
                             *(extra or [])],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_ready(url + "/v1/models", proc, {})
    return proc, url


class RawConnection:
    """``translate-raw``'s client: one keep-alive HTTP/1.1 connection, the answer parsed
    by ``httptools`` (uvicorn's parser, installed with the gateway extra), its body
    handed over as it comes. The least a client can do — no pool, no timeout, no
    error handling: a floor to measure against, not a client to use."""

    def __init__(self) -> None:
        import asyncio

        import httptools

        self._asyncio, self._httptools = asyncio, httptools
        self.transport: Any = None
        self.chunks: list[bytes] = []
        self.done = False
        self.waiter: Any = None
        self.headed: Any = None
        self.parser: Any = None

    # asyncio.Protocol
    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def connection_lost(self, exc: BaseException | None) -> None:
        self.done = True
        self._wake()

    def eof_received(self) -> None:
        pass

    # httptools callbacks
    def on_headers_complete(self) -> None:
        self.headed.set_result(self.parser.get_status_code())

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)
        self._wake()

    def on_message_complete(self) -> None:
        self.done = True
        self._wake()

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def post(self, host: str, port: int, path: str, body: bytes) -> int:
        loop = self._asyncio.get_running_loop()
        self.parser = self._httptools.HttpResponseParser(self)
        self.chunks, self.done, self.headed = [], False, loop.create_future()
        head = (f"POST {path} HTTP/1.1\r\nhost: {host}:{port}\r\n"
                f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n")  # fmt: skip
        self.transport.write(head.encode() + body)
        status: int = await self.headed
        return status

    async def read(self) -> bytes:
        """What arrived since the last read; ``b""`` at the end of the body."""
        while not self.chunks and not self.done:
            self.waiter = self._asyncio.get_running_loop().create_future()
            await self.waiter
        out = b"".join(self.chunks)
        self.chunks.clear()
        return out


def serve_translate(backend_v1: str, port: int, raw: bool) -> None:
    """``--serve-translate BACKEND_V1 PORT [--raw-client]``: the floor of a translating
    proxy (``translate``, ``translate-raw``): the key checked against its sha256, the
    request parsed and the backend's encoded anew, the head sent once the backend has
    answered, each event of the answer decoded and rendered anew, the first content
    sent as soon as it is rendered. Chat to Chat, as the gateway in this bench;
    nothing is validated."""
    import asyncio
    import hashlib
    import hmac

    import aiohttp
    import msgspec
    import uvicorn
    import yarl

    digest = hashlib.sha256(KEY.encode()).digest()
    backend = yarl.URL(backend_v1 + "/chat/completions")
    session: list[aiohttp.ClientSession] = []
    connection: list[RawConnection] = []
    decode, encode = msgspec.json.decode, msgspec.json.encode

    async def answer(body: bytes) -> Any:
        """The backend's status, then its body's pieces as they come."""
        if raw:
            if not connection:
                loop = asyncio.get_running_loop()
                await loop.create_connection(lambda: connection.append(RawConnection()) or connection[0],
                                             backend.host, backend.port)  # fmt: skip
            conn = connection[0]
            yield await conn.post(str(backend.host), int(backend.port or 80), backend.path, body)
            while piece := await conn.read():
                yield piece
            return
        if not session:
            session.append(aiohttp.ClientSession())
        async with session[0].post(backend, data=body,
                                   headers={"content-type": "application/json"}) as r:  # fmt: skip
            yield r.status
            async for piece in r.content.iter_any():
                yield piece

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await floor_request(scope, receive, send)
        if body is None:
            return
        auth = dict(scope["headers"]).get(b"authorization", b"")[7:]
        if not hmac.compare_digest(hashlib.sha256(auth).digest(), digest):
            raise RuntimeError("the key is not the bench's")
        req = decode(body)
        out = encode({"model": "mock-model", "stream": True,
                      "stream_options": {"include_usage": True},
                      "messages": [{"role": m["role"], "content": m["content"]}
                                   for m in req["messages"]]})  # fmt: skip
        pieces = answer(out)
        if await anext(pieces) != 200:
            raise RuntimeError("the backend did not answer 200")
        # As the gateway: the head once the backend has answered, read by the client
        # while the first content is still to come.
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})  # fmt: skip
        started = False
        rest = b""
        async for piece in pieces:
            *frames, rest = (rest + piece).split(b"\n\n")
            parts: list[bytes] = []
            for frame in frames:
                if frame == b"data: [DONE]":
                    parts.append(b"data: [DONE]\n\n")
                    continue
                if not frame.startswith(b"data: {"):
                    continue
                chunk = decode(frame[6:])
                choice = chunk["choices"][0] if chunk.get("choices") else None
                rendered = {"id": "chatcmpl-bench", "object": "chat.completion.chunk",
                            "created": 0, "model": req["model"],
                            "choices": [{"index": 0, "delta": choice["delta"],
                                         "finish_reason": choice.get("finish_reason")}]
                            if choice else [], "usage": chunk.get("usage")}  # fmt: skip
                parts.append(b"data: " + encode(rendered) + b"\n\n")
                if not started and choice and choice["delta"].get("content"):
                    # The first content goes out at once, the rest of the read after.
                    started = True
                    await send({"type": "http.response.body", "body": b"".join(parts),
                                "more_body": True})  # fmt: skip
                    parts.clear()
            if started and parts:
                await send({"type": "http.response.body", "body": b"".join(parts),
                            "more_body": True})  # fmt: skip
        await send({"type": "http.response.body", "body": b""})

    uvicorn.run(app, host="127.0.0.1", port=port, lifespan="on", access_log=False,
                log_level="warning", server_header=False, proxy_headers=False)  # fmt: skip


def serve_backend() -> None:
    """``--serve-backend``: the backend process; prints its origin, serves until killed.

    Not a thread of the client's process: a thread there shares the client's GIL, so
    the client would read each byte only when the backend thread, busy writing the
    rest of the stream, let it run (up to the 5 ms switch interval) — a cost of the
    bench, not of any proxy, and larger for whichever path's first byte arrives while
    the backend is still writing."""
    from modelwire.testing import MockServer, Reply

    text = "".join(f"w{i:03d} " for i in range(DELTAS))  # 5 characters a delta
    with MockServer([Reply(message=text, piece_chars=5)], repeat_last=True) as backend:
        print(backend.origin, flush=True)
        sys.stdin.read()  # until the bench closes the pipe


def start_backend() -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, __file__, "--serve-backend", "--deltas", str(DELTAS)],
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None
    origin = proc.stdout.readline().strip()
    if not origin.startswith("http://"):
        proc.kill()
        raise RuntimeError(f"the backend process did not start: {origin!r}")
    return proc, origin


# --------------------------------------------------------------------------- processes


def stop(backend: subprocess.Popen[str], proxies: list[subprocess.Popen[bytes]]) -> None:
    """The backend killed; each proxy asked to shut down (its lifespan runs), else killed."""
    backend.kill()
    backend.wait()
    for p in proxies:
        p.terminate()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (and its reaped children) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def wait_ready(url: str, proc: subprocess.Popen[bytes], headers: dict[str, str]) -> None:
    import httpx

    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: the process exited with {proc.returncode}")
        try:
            if httpx.get(url, headers=headers, timeout=2).status_code < 500:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer")


def start_gateway(
    backend_v1: str, tmp: Path, extra: list[str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    from modelwire.gateway import hash_key

    config = tmp / "gateway.toml"
    config.write_text(
        f'[models.bench]\napi = "openai-chat"\nid = "mock-model"\nbase_url = "{backend_v1}"\n\n'
        f'[keys.bench]\nkey_sha256 = "{hash_key(KEY)}"\nmodels = ["*"]\n'
    )
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, __file__, "--serve-gateway", str(config), str(port),
                             *(extra or [])],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_ready(url + "/v1/models", proc, {"authorization": f"Bearer {KEY}"})
    return proc, url


def start_litellm(backend_v1: str, tmp: Path) -> tuple[subprocess.Popen[bytes], str] | None:
    if not LITELLM.exists():
        print("litellm: skipped (bench/.venv-litellm is not installed; see the module docstring)")
        return None
    config = tmp / "litellm.yaml"
    config.write_text(
        "model_list:\n  - model_name: bench\n    litellm_params:\n"
        f"      model: openai/mock-model\n      api_base: {backend_v1}\n      api_key: sk-x\n"
        "litellm_settings:\n  telemetry: false\n"
        f"general_settings:\n  master_key: {KEY}\n"
    )
    port = free_port()
    env = {**os.environ, "LITELLM_LOG": "ERROR", "LITELLM_TELEMETRY": "False",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # fmt: skip
    proc = subprocess.Popen([str(LITELLM), "--config", str(config), "--port", str(port),
                             "--host", "127.0.0.1", "--num_workers", "1"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_ready(url + "/health/liveliness", proc, {"authorization": f"Bearer {KEY}"})
    return proc, url


# --------------------------------------------------------------------------- measuring


def one_request(client: Any, url: str, model: str) -> tuple[float, float, float]:
    """(TTFB, time to the first delta's text, total) in seconds, of one streamed Chat
    Completions request. TTFB is the first body byte — for the backend, its role-only
    first chunk; a proxy that waits for the first content (as the gateway does, to
    answer an error with the right status) sends its first byte later, so the time
    to the first text (``w000``) compares like with like."""
    body = {"model": model, "stream": True,
            "messages": [{"role": "user", "content": "Stream something."}]}  # fmt: skip
    t0 = time.perf_counter()
    first = token = 0.0
    seen = b""
    with client.stream("POST", url + "/v1/chat/completions", json=body,
                       headers={"authorization": f"Bearer {KEY}"}) as r:  # fmt: skip
        if r.status_code != 200:
            raise RuntimeError(f"{url}: HTTP {r.status_code}: {r.read()[:300]!r}")
        for chunk in r.iter_raw():
            now = time.perf_counter()
            if not first:
                first = now
            if not token:
                seen = seen[-8:] + chunk
                if FIRST_TEXT in seen:
                    token = now
    if not token:
        raise RuntimeError(f"{url}: the stream has no {FIRST_TEXT!r}")
    return first - t0, token - t0, time.perf_counter() - t0


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def main() -> None:
    import httpx

    backend, origin = start_backend()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        backend_v1 = origin + "/v1"
        procs: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
        try:
            procs["gateway"] = start_gateway(backend_v1, tmp)
            procs["passthru"] = start_passthrough(backend_v1)
            procs["translate"] = start_passthrough(backend_v1, [], "--serve-translate")
            procs["translate-raw"] = start_passthrough(backend_v1, ["--raw-client"],
                                                       "--serve-translate")  # fmt: skip
            lite = start_litellm(backend_v1, tmp)
            if lite is not None:
                procs["litellm"] = lite
            paths: dict[str, tuple[str, str]] = {"direct": (origin, "mock-model")}
            paths.update({name: (url, "bench") for name, (_, url) in procs.items()})
            clients = {name: httpx.Client(timeout=60) for name in paths}
            runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in paths}
            for _ in range(WARMUP):
                for name, (url, model) in paths.items():
                    one_request(clients[name], url, model)
            cpu0 = {name: cpu_seconds(p.pid) for name, (p, _) in procs.items()}
            for _ in range(REQUESTS):
                for name, (url, model) in paths.items():
                    runs[name].append(one_request(clients[name], url, model))
            cpu = {name: cpu_seconds(p.pid) - cpu0[name] for name, (p, _) in procs.items()}
            for c in clients.values():
                c.close()
        finally:
            stop(backend, [p for p, _ in procs.values()])
    report(runs, cpu)


def report(runs: dict[str, list[tuple[float, float, float]]], cpu: dict[str, float]) -> None:
    print(f"backend: MockServer, OpenAI Chat stream of {DELTAS} deltas; {REQUESTS} requests "
          f"per path (after {WARMUP} warm-up), interleaved; client httpx")  # fmt: skip
    metrics = ("TTFB", "first text", "total")
    print(f"{'ms':<15}" + "".join(f"{m + ' p50':>16}{'p99':>8}" for m in metrics)
          + "   cpu/delta")  # fmt: skip
    direct = [[pct([r[i] for r in runs["direct"]], q) for q in (0.5, 0.99)] for i in range(3)]
    added: dict[str, list[float]] = {}
    for name, rs in runs.items():
        values = [[pct([r[i] for r in rs], q) for q in (0.5, 0.99)] for i in range(3)]
        line = f"{name:<15}" + "".join(f"{v[0] * 1000:>16.2f}{v[1] * 1000:>8.2f}" for v in values)
        if name != "direct":
            per_delta = cpu[name] / (len(rs) * DELTAS) * 1e6
            line += f"   {per_delta:.1f} µs"
            added[name] = [values[i][j] - direct[i][j] for i in range(3) for j in range(2)]
        print(line)
    for name, a in added.items():
        print(f"{'+' + name:<15}" + "".join(f"{v * 1000:>+16.2f}" if j % 2 == 0 else f"{v * 1000:>+8.2f}"
                                         for j, v in enumerate(a)) + "   (added to direct)")  # fmt: skip
    if "litellm" in added:
        for i, m in enumerate(metrics):
            lite = added["litellm"][2 * i]
            if lite > 0:
                print(f"gateway added {m} p50 = {added['gateway'][2 * i] / lite:.2f} x LiteLLM's")
    for floor in ("translate", "translate-raw"):
        if floor in added:
            over = [(added["gateway"][2 * i] - added[floor][2 * i]) * 1000 for i in range(3)]
            print(f"gateway added p50 beyond {floor}'s: "
                  + ", ".join(f"{m} {v:+.2f} ms" for m, v in zip(metrics, over, strict=True)))  # fmt: skip


if __name__ == "__main__":
    if "--serve-backend" in sys.argv:
        serve_backend()
    elif "--icount-run" in sys.argv:
        i = sys.argv.index("--icount-run")
        icount_run(sys.argv[i + 1], sys.argv[i + 2], int(sys.argv[i + 3]))
    elif "--icount" in sys.argv:
        icount()
    elif "--stamps" in sys.argv:
        stamps()
    elif "--serve-translate" in sys.argv:
        i = sys.argv.index("--serve-translate")
        serve_translate(sys.argv[i + 1], int(sys.argv[i + 2]), "--raw-client" in sys.argv)
    elif "--serve-passthrough" in sys.argv:
        i = sys.argv.index("--serve-passthrough")
        serve_passthrough(sys.argv[i + 1], int(sys.argv[i + 2]))
    elif "--serve-gateway" in sys.argv:
        i = sys.argv.index("--serve-gateway")
        serve_gateway(sys.argv[i + 1], int(sys.argv[i + 2]))
    else:
        main()
