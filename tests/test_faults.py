"""The fault matrix: every fault, for every wire API, sync and async — the async
path on each of its transports (httpx, aiohttp, and modelwire's own on httptools) —
over real loopback sockets.

Each run checks the terminal kind, the content kept, the number of requests the
server saw, that every socket the client opened is closed afterwards, and that a
distinctive API key appears nowhere: not in the error, not in any repr, not in a
trace record, not in any log line at DEBUG of any logger.

The server is a small raw socket server (not ``MockServer``) because the matrix needs
byte-level control (a cut inside a UTF-8 character, a stall mid-event) and must see
when the client closes each connection. The bodies come from
:func:`modelwire.testing.render_frames`, so every API streams the same text.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

import modelwire as mw
import modelwire._call._retry
from modelwire._apis import builtin_api_names, get_server
from modelwire._wire.request import Transport
from modelwire.testing._render import in_band_error, render_reply
from modelwire.trace import RetryTrace, TraceLog

# Every wire API modelwire ships, from the registry (so ollama-chat is covered too).
APIS = builtin_api_names()
# The async path runs on each transport; the User-Agent the server saw proves which.
MODES = ("async-httpx", "async-aiohttp", "async-httptools", "sync")
AGENTS = {"async-httpx": "python-httpx/", "async-aiohttp": "aiohttp/",
          "async-httptools": "modelwire/", "sync": "python-httpx/"}  # fmt: skip
TRANSPORT: dict[str, Transport] = {
    "async-httpx": "httpx",
    "async-aiohttp": "aiohttp",
    "async-httptools": "httptools",
}
KEY = "sk-FAULTMATRIX-7c1d3f9a2b5e"
CTX = mw.Context(messages=[mw.UserMessage(content="hi")])
# piece_chars=4 streams it as "Hell", "o wö", "rld ", "你好": cuts below land between
# or inside those pieces, so the content each fault must keep is known exactly.
TEXT = "Hello wörld 你好"
BACKOFF_BASE = 0.02  # the normal backoff, made short (see ``fast_backoff``)


# --------------------------------------------------------------------------- server


@dataclass
class Plan:
    """One response: status line, headers, body pieces (each sent as one chunk),
    then ``end``: ``finish`` (the chunked body completes, keep-alive), ``cut``
    (the connection is shut down mid-body) or ``stall`` (nothing more is sent until
    the client hangs up; before that, the ``late`` pieces, one write each)."""

    status: int = 200
    body: list[bytes] = field(default_factory=list)
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)
    end: str = "finish"
    late: list[bytes] = field(default_factory=list)  # a stall's pieces after the first write


class RawServer:
    """HTTP/1.1 on loopback, one thread per connection; records every request and
    whether the client closed each connection."""

    def __init__(self, plans: list[Plan]) -> None:
        self.plans = plans
        self.requests: list[bytes] = []
        self.targets: list[str] = []  # the request targets (path and query)
        self.agents: list[str] = []  # the User-Agent of each request
        self.heads: list[bytes] = []  # each request's line and headers
        self.connections: list[threading.Event] = []
        self._lock = threading.Lock()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._stop.set()
        self._sock.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            closed = threading.Event()
            with self._lock:
                self.connections.append(closed)
            threading.Thread(target=self._serve, args=(conn, closed), daemon=True).start()

    def _next_plan(self, body: bytes) -> Plan:
        with self._lock:
            self.requests.append(body)
            return self.plans.pop(0) if len(self.plans) > 1 else self.plans[0]

    @staticmethod
    def read_request(conn: socket.socket, buf: bytes) -> tuple[bytes, bytes, bytes] | None:
        """The next request on ``conn`` (``buf``: bytes already read): its head, its
        body, and what was read past it; ``None`` once the client closed."""
        while b"\r\n\r\n" not in buf:
            data = conn.recv(65536)
            if not data:
                return None  # the client closed the connection
            buf += data
        head, buf = buf.split(b"\r\n\r\n", 1)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(buf) < length:
            data = conn.recv(65536)
            if not data:
                return None
            buf += data
        return head, buf[:length], buf[length:]

    def _serve(self, conn: socket.socket, closed: threading.Event) -> None:
        buf = b""
        try:
            while True:
                got = self.read_request(conn, buf)
                if got is None:
                    return
                head, body, buf = got
                self.heads.append(head)
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"user-agent":
                        self.agents.append(value.strip().decode())
                self.targets.append(head.split(b" ", 2)[1].decode())
                plan = self._next_plan(body)
                if plan.status == 0:  # hang up without a response (a transport error)
                    conn.shutdown(socket.SHUT_RDWR)
                    return
                lines = [f"HTTP/1.1 {plan.status} X", f"Content-Type: {plan.content_type}",
                         "Transfer-Encoding: chunked"]  # fmt: skip
                lines += [f"{k}: {v}" for k, v in plan.headers.items()]
                head_bytes = ("\r\n".join(lines) + "\r\n\r\n").encode()
                chunks = [b"%x\r\n%s\r\n" % (len(p), p) for p in plan.body]
                if plan.end == "stall":
                    # One write with the head: the content is in the client's socket buffer
                    # when it sees the status, so a stall case's deadline (idle or total)
                    # can only fire after that content was read, however loaded the machine.
                    conn.sendall(head_bytes + b"".join(chunks))
                    for piece in plan.late:  # each a socket read of its own, later
                        time.sleep(0.05)
                        conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                else:
                    conn.sendall(head_bytes)
                    for chunk in chunks:
                        conn.sendall(chunk)
                        time.sleep(0.002)  # one read per piece, as a provider flushes them
                if plan.end == "finish":
                    conn.sendall(b"0\r\n\r\n")
                    continue
                if plan.end == "cut":
                    conn.shutdown(socket.SHUT_RDWR)
                    return
                conn.settimeout(30)  # stall: wait for the client to hang up
                while conn.recv(65536):
                    pass
                return
        except OSError:
            return
        finally:
            conn.close()
            closed.set()

    def all_closed(self) -> bool:
        with self._lock:
            return all(c.is_set() for c in self.connections)

    def wait_closed(self, seconds: float = 3.0) -> bool:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if self.all_closed():
                return True
            time.sleep(0.005)
        return self.all_closed()


@contextlib.contextmanager
def serving(plans: list[Plan]) -> Iterator[RawServer]:
    server = RawServer(plans)
    try:
        yield server
    finally:
        server.close()


def model_for(api: str, port: int, provider: str = "mock", base: str | None = None) -> mw.Model:
    segment = get_server(api).version_segment  # /v1, /v1beta, or the server root
    url = f"http://127.0.0.1:{port}" + (segment if base is None else base)
    return mw.Model(id="mock-model", api=api, provider=provider, base_url=url)


# A provider that reuses an API runs the matrix through its own provider rules (URL,
# auth header) too: (provider, api, what follows the origin in base_url).
PROVIDER_RUNS = [
    ("azure-openai", "openai-chat", "?api-version=2024-10-21"),  # the deployment form
    ("azure-openai", "openai-responses", ""),  # the /openai/v1 form
    ("amazon-bedrock", "bedrock-converse", ""),  # Bearer key; the runtime endpoint root
    # Vertex AI: project and location in base_url; an API key (Gemini) or a token (Claude).
    ("google-vertex", "google-generative-ai", "/v1/projects/proj-test-123/locations/us-east5"),
    ("vertex-anthropic", "anthropic-messages", "/v1/projects/proj-test-123/locations/us-east5"),
]
# Where each provider's URL rule puts a request (checked on every attempt).
PROVIDER_PATHS = {
    "azure-openai": "/openai/",
    "amazon-bedrock": "/model/mock-model/",
    "google-vertex": "/v1/projects/proj-test-123/locations/us-east5/publishers/google/",
    "vertex-anthropic": "/v1/projects/proj-test-123/locations/us-east5/publishers/anthropic/",
}
TARGETS = [pytest.param("mock", a, None, id=a) for a in APIS] + [
    pytest.param(p, a, b, id=f"{p}:{a}") for p, a, b in PROVIDER_RUNS
]


# --------------------------------------------------------------------------- bodies


def streamed(api: str, body: list[bytes], end: str = "finish") -> Plan:
    """A 200 response with the API's own media type (text/event-stream, x-ndjson)."""
    return Plan(body=body, end=end, content_type=get_server(api).content_type)


def frames(api: str) -> list[bytes]:
    return list(render_reply(TEXT, api, piece_chars=4).pieces)


def at(api: str, piece: bytes) -> tuple[list[bytes], bytes]:
    """The frames before the first one carrying ``piece``, and that frame."""
    fr = frames(api)
    i = next(i for i, f in enumerate(fr) if piece in f)
    return fr[:i], fr[i]


def mid_event(api: str) -> list[bytes]:
    before, f = at(api, b'rld "')
    return [*before, f[: f.index(b"rld")]]  # inside the JSON of the "rld " delta


def mid_utf8(api: str) -> list[bytes]:
    before, f = at(api, "你".encode())
    return [*before, f[: f.index("你".encode()) + 1]]  # 1 of the 3 bytes of 你


def in_band(api: str) -> list[bytes]:
    # The API's own mid-stream error event (what its renderer writes for an error
    # event), after the frames up to and including "rld ".
    before, _f = at(api, "你".encode())
    return [*before, in_band_error(api, f"Overloaded for {KEY}")]


def error_json(status: int, headers: dict[str, str] | None = None) -> Plan:
    # Providers echo (part of) a bad key; the client must redact it everywhere.
    body = json.dumps({"error": {"message": f"status {status} for key {KEY}", "type": "x"}})
    return Plan(status=status, body=[body.encode()], content_type="application/json",
                headers=headers or {})  # fmt: skip


def ok(api: str) -> Plan:
    return streamed(api, frames(api))


def stall_after_two(api: str) -> Plan:
    before, _ = at(api, b'rld "')
    return streamed(api, before, end="stall")


# --------------------------------------------------------------------------- cases


@dataclass
class Case:
    plans: Callable[[str], list[Plan]]
    kind: str | None  # the error kind; None: done(stop)
    text: str  # the content the final message keeps
    requests: int
    driver: str = "plain"
    opts: dict[str, Any] = field(default_factory=dict)
    retries: list[tuple[int, int | None, str]] = field(default_factory=list)
    wait: Callable[[RetryTrace], bool] = lambda r: True
    says: str = ""  # a phrase the error message must contain
    retry_after: float | None = None  # the wait the failed message reports


def backoff(r: RetryTrace) -> bool:
    """The normal backoff applied (the header was ignored): base × 2^(n-1) × [0.5, 1)."""
    full = BACKOFF_BASE * 2 ** (r.attempt - 1)
    return bool(full * 0.5 <= r.wait <= full)


def r429(value: str, header: str = "retry-after") -> Callable[[str], list[Plan]]:
    return lambda api: [error_json(429, {header: value}), ok(api)]


RETRY_429: list[tuple[int, int | None, str]] = [(1, 429, "rate_limit")]

CASES: dict[str, Case] = {
    "ok": Case(lambda api: [ok(api)], None, TEXT, 1),
    "cut_mid_event": Case(
        lambda api: [streamed(api, mid_event(api), end="cut")], "stream_interrupted", "Hello wö", 1
    ),
    "cut_mid_utf8": Case(
        lambda api: [streamed(api, mid_utf8(api), end="cut")],
        "stream_interrupted",
        "Hello wörld ",
        1,
    ),
    "body_ends_mid_event": Case(
        lambda api: [streamed(api, mid_event(api))], "truncated_stream", "Hello wö", 1
    ),
    # A Retry-After does not make a client error retryable, whatever its form.
    "401": Case(lambda api: [error_json(401, {"retry-after": "0"})], "authentication", "", 1),
    "403": Case(
        lambda api: [error_json(403, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})],
        "permission",
        "",
        1,
    ),
    "404": Case(lambda api: [error_json(404, {"retry-after": "nan"})], "not_found", "", 1),
    "429_seconds": Case(r429("0"), None, TEXT, 2, retries=RETRY_429, wait=lambda r: r.wait == 0),
    "429_http_date": Case(
        r429("Wed, 21 Oct 2015 07:28:00 GMT"),
        None,
        TEXT,
        2,
        retries=RETRY_429,
        wait=lambda r: r.wait == 0,
    ),
    "429_retry_after_ms": Case(
        r429("30", "retry-after-ms"),
        None,
        TEXT,
        2,
        retries=RETRY_429,
        wait=lambda r: abs(r.wait - 0.03) < 1e-9,
    ),
    "429_nan": Case(r429("nan"), None, TEXT, 2, retries=RETRY_429, wait=backoff),
    "429_inf": Case(r429("inf"), None, TEXT, 2, retries=RETRY_429, wait=backoff),
    "429_negative": Case(r429("-1"), None, TEXT, 2, retries=RETRY_429, wait=backoff),
    "429_garbage": Case(r429("soon-ish"), None, TEXT, 2, retries=RETRY_429, wait=backoff),
    "429_ms_nan_falls_back_to_seconds": Case(
        lambda api: [error_json(429, {"retry-after-ms": "nan", "retry-after": "0"}), ok(api)],
        None,
        TEXT,
        2,
        retries=RETRY_429,
        wait=lambda r: r.wait == 0,
    ),
    "429_beyond_the_cap": Case(
        lambda api: [error_json(429, {"retry-after": "120"}), ok(api)],
        "rate_limit",
        "",
        1,
        says="longer than modelwire waits",
        retry_after=120.0,
    ),
    "429_retries_used_up": Case(
        lambda api: [error_json(429, {"retry-after": "0"})],
        "rate_limit",
        "",
        2,
        opts={"max_retries": 1},
        retries=RETRY_429,
    ),
    "429_longer_than_the_deadline": Case(
        lambda api: [error_json(429, {"retry-after": "3"}), ok(api)],
        "rate_limit",
        "",
        1,
        opts={"timeout": mw.Timeout(total=0.5)},
        says="not retried: the total timeout",
        retry_after=3.0,
    ),
    "5xx_then_ok": Case(
        lambda api: [error_json(500), error_json(529), ok(api)],
        None,
        TEXT,
        3,
        retries=[(1, 500, "server"), (2, 529, "overloaded")],
        wait=backoff,
    ),
    "5xx_not_retried_with_max_retries_0": Case(
        lambda api: [error_json(502), ok(api)], "server", "", 1, opts={"max_retries": 0}
    ),
    "in_band_error": Case(
        lambda api: [streamed(api, in_band(api))],
        "overloaded",
        "Hello wörld ",
        1,
        says="Overloaded for",
    ),
    "idle_stall": Case(
        lambda api: [stall_after_two(api)],
        "timeout",
        "Hello wö",
        1,
        opts={"timeout": mw.Timeout(idle=0.3)},
    ),
    "total_deadline_mid_body": Case(
        lambda api: [stall_after_two(api)],
        "timeout",
        "Hello wö",
        1,
        opts={"timeout": mw.Timeout(total=1.0)},
    ),
    "non_sse_200": Case(
        lambda api: [
            Plan(
                content_type="text/html; charset=utf-8",
                body=[f"<html><body>Bad gateway {KEY}</body></html>".encode()],
            )
        ],
        "provider_stream",
        "",
        1,
        says="'text/html; charset=utf-8'",
    ),
    "cancel": Case(lambda api: [stall_after_two(api)], "aborted", "Hello wö", 1, driver="cancel"),
    "abort_before_iterating": Case(lambda api: [ok(api)], "aborted", "", 0, driver="abort_first"),
}


# --------------------------------------------------------------------------- drivers


async def _async_run(model: mw.Model, driver: str, opts: dict[str, Any]) -> tuple[list[Any], Any]:
    s = mw.stream(model, CTX, **opts)
    events: list[Any] = []
    if driver == "abort_first":
        s.abort()
    if driver == "cancel":
        seen = asyncio.Event()

        async def consume() -> None:
            async for ev in s:
                events.append(ev)
                if ev.type == "text_delta" and ev.delta == "o wö":
                    seen.set()

        task = asyncio.create_task(consume())
        await seen.wait()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    async for ev in s:
        events.append(ev)
    return events, await s.result()


def _sync_run(model: mw.Model, driver: str, opts: dict[str, Any]) -> tuple[list[Any], Any]:
    s = mw.stream_sync(model, CTX, **opts)
    events: list[Any] = []
    if driver == "abort_first":
        s.abort()
    for ev in s:
        events.append(ev)
        if driver == "cancel" and ev.type == "text_delta" and ev.delta == "o wö":
            # From another thread, while this one blocks reading the stalled body.
            threading.Timer(0.05, s.abort).start()
    return events, s.result()


def run(mode: str, model: mw.Model, driver: str, **opts: Any) -> tuple[list[Any], Any]:
    if mode.startswith("async-"):
        opts["transport"] = TRANSPORT[mode]
        return asyncio.run(_async_run(model, driver, opts))
    return _sync_run(model, driver, opts)


@pytest.fixture
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    # The normal backoff (0.5 s base) made short so the matrix stays fast; RetryTrace
    # shows which wait was taken, so a Retry-After honoured or ignored is still visible.
    monkeypatch.setattr(modelwire._call._retry, "_BACKOFF_BASE", BACKOFF_BASE)


def assert_no_key(*texts: str) -> None:
    for text in texts:
        assert KEY not in text
        assert KEY[3:] not in text  # not even without the prefix


# --------------------------------------------------------------------------- matrix


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("provider", "api", "base"), TARGETS)
@pytest.mark.parametrize("name", list(CASES))
def test_fault_matrix(
    name: str,
    provider: str,
    api: str,
    base: str | None,
    mode: str,
    fast_backoff: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    case = CASES[name]
    caplog.set_level(logging.DEBUG)  # the root logger: every logger propagates here
    log = TraceLog()
    with serving(case.plans(api)) as server:
        t0 = time.monotonic()
        model = model_for(api, server.port, provider, base)
        events, message = run(mode, model, case.driver, api_key=KEY, trace=log, **case.opts)
        elapsed = time.monotonic() - t0
        closed = server.wait_closed()
        n_requests = len(server.requests)
        targets = server.targets
        agents = server.agents
    assert len(agents) == n_requests and all(AGENTS[mode] in a for a in agents), agents
    if provider != "mock":  # the provider's URL rule was applied on every attempt
        assert all(t.startswith(PROVIDER_PATHS[provider]) for t in targets), targets

    # The terminal kind, and the stream's shape: start first (unless aborted before
    # iterating: nothing at all happened), exactly one terminal event, last.
    terminal = events[-1]
    assert terminal.message is message
    assert [e.type for e in events].count("done") + [e.type for e in events].count("error") == 1
    if case.driver == "abort_first":
        assert [e.type for e in events] == ["error"]
    else:
        assert events[0].type == "start"
    if case.kind is None:
        assert (terminal.type, message.stop_reason, message.error) == ("done", "stop", None)
    else:
        kind = get_server(api).in_band_kind if name == "in_band_error" else case.kind
        assert message.error is not None, message
        assert (terminal.type, message.error.kind) == ("error", kind), message.error
        assert message.stop_reason == ("aborted" if kind == "aborted" else "error")
        assert case.says in message.error.message
        if case.retry_after is not None:
            assert message.error.retry_after == case.retry_after
    # The content kept, the requests the server saw, every socket closed.
    assert message.text == case.text
    assert n_requests == case.requests
    assert closed, "a connection was left open"
    # Retries: one trace record each, with the wait taken; no wait outlasts its budget.
    retries = [r for r in log.records if isinstance(r, RetryTrace)]
    assert [(r.attempt, r.status, r.kind) for r in retries] == case.retries
    assert all(case.wait(r) for r in retries), [r.wait for r in retries]
    assert elapsed < 3.0
    # The key appears nowhere.
    records = json.dumps([r.to_dict() for r in log.records], default=repr, ensure_ascii=False)
    assert_no_key(
        repr(message), repr(events), str(message.error), records, caplog.text,
        "\n".join(repr(r.__dict__) for r in caplog.records),
    )  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("api", APIS)
def test_a_dropped_stream_closes_its_connection_promptly(api: str, mode: str) -> None:
    """``break`` out of the loop and drop the stream: the connection closes at once
    (reference counting alone, no GC), not at the idle timeout (30 s here)."""
    opts: dict[str, Any] = {"api_key": KEY, "timeout": mw.Timeout(idle=30)}
    with serving([stall_after_two(api)]) as server:
        model = model_for(api, server.port)
        gc.disable()
        try:
            if mode != "sync":

                async def main() -> bool:
                    s = mw.stream(model, CTX, transport=TRANSPORT[mode], **opts)
                    async for ev in s:
                        if ev.type == "text_delta":
                            break
                    del s
                    for _ in range(300):  # keep the loop running while we look
                        if server.all_closed():
                            return True
                        await asyncio.sleep(0.01)
                    return False

                closed = asyncio.run(main())
            else:
                s = mw.stream_sync(model, CTX, **opts)
                for ev in s:
                    if ev.type == "text_delta":
                        break
                del s
                closed = server.wait_closed()
        finally:
            gc.enable()
        assert closed
        assert len(server.requests) == 1


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("api", APIS)
def test_connect_error_names_the_origin_only(api: str, mode: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # closed on exit: connecting is refused
    segment = get_server(api).version_segment  # /v1, /v1beta, or the server root
    # userinfo is sent as Basic auth, so it goes without a key in Authorization.
    for userinfo, key in (("user:hunter2pw@", None), ("", KEY)):
        model = mw.Model(id="m", api=api, provider="mock",
                         base_url=f"http://{userinfo}127.0.0.1:{port}{segment}?tenant=q1")  # fmt: skip
        _events, message = run(mode, model, "plain", api_key=key, max_retries=0)
        assert message.error is not None and message.error.kind == "connect"
        assert f"http://127.0.0.1:{port}" in message.error.message
        for secret in ("hunter2pw", "user:", "tenant", "?", "/v1", KEY):
            assert secret not in message.error.message


@pytest.mark.parametrize("api", APIS)
def test_sync_and_async_take_the_same_decisions(
    api: str, monkeypatch: pytest.MonkeyPatch, fast_backoff: None
) -> None:
    """One RetryPolicy for both loops: the same server sequence gives the same
    attempts, statuses, kinds, waits and terminal on both paths."""
    monkeypatch.setattr(
        random, "random", lambda: 0.5
    )  # fixed jitter (modelwire._call._retry.random)

    def plans() -> list[Plan]:
        return [
            error_json(429, {"retry-after": "0.01"}),
            Plan(status=0),  # the server hangs up before answering: a transport error
            error_json(500, {"retry-after-ms": "20"}),
            error_json(503),
            error_json(401),
            ok(api),
        ]

    seen = {}
    for mode in MODES:
        log = TraceLog()
        with serving(plans()) as server:
            _, message = run(mode, model_for(api, server.port), "plain", api_key=KEY,
                             trace=log, max_retries=5)  # fmt: skip
            n = len(server.requests)
            assert server.wait_closed()
        retries = [(r.attempt, r.status, r.kind, r.wait) for r in log.records
                   if isinstance(r, RetryTrace)]  # fmt: skip
        seen[mode] = (retries, message.error and message.error.kind, n)
    assert all(seen[mode] == seen["sync"] for mode in MODES), seen
    assert seen["sync"] == (
        [(1, 429, "rate_limit", 0.01), (2, None, "connect", 0.75 * BACKOFF_BASE * 2),
         (3, 500, "server", 0.02), (4, 503, "overloaded", 0.75 * BACKOFF_BASE * 8)],
        "authentication",
        5,
    )  # fmt: skip
