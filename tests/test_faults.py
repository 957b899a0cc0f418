"""The fault matrix: every fault, for every wire API, sync and async — the async
path on each of its transports (httpx, aiohttp, and modelwire's own on httptools) —
over real loopback sockets.

Each run checks the terminal kind, the content kept, the number of requests the
server saw, that every socket the client opened is closed afterwards, and that a
distinctive API key appears nowhere: not in the error, not in any repr, not in a
trace record, not in any log line at DEBUG of any logger.

The server is a small raw socket server (not ``MockServer``) because the matrix needs
byte-level control (a cut inside a UTF-8 character, a stall mid-event) and must see
when the client closes each connection. The bodies are the bytes providers send, not
what modelwire's own renderer writes: per API, a recorded text answer from
``tests/data`` (``tests/wire_recordings.py`` names which), sent one piece per wire event
(SSE event, NDJSON line, AWS event-stream message) at the recording's own event
boundaries; the faults cut it at those boundaries or inside an event. The in-band error
is the API's own mid-stream error event, taken from an error recording of that API
with the key written into its message. The content each case must keep is read from
the bytes sent with the independent readers of ``tests/test_recorded_fidelity.py``
(``json.loads`` of each payload), not with modelwire.
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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

import modelwire as mw
import modelwire._call._retry
from modelwire._apis import builtin_api_names, get_server
from modelwire._wire.request import Transport
from modelwire.trace import RetryTrace, TraceLog
from rawserver import CTX, KEY, Plan, error_json, model_for, serving, streamed
from wire_recordings import ANSWERS, ERRORS, answer, error_events, reading, text_events, utf8_cut

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
BACKOFF_BASE = 0.02  # the normal backoff, made short (see ``fast_backoff``)


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
TARGETS = [("mock", a, None, a) for a in APIS] + [
    (p, a, b, f"{p}:{a}") for p, a, b in PROVIDER_RUNS
]


# --------------------------------------------------------------------------- bodies


def pivot(api: str) -> int:
    """The answer's second text event: a cut inside it, or a stall before it, keeps the
    first text event's content; the in-band error comes right after it."""
    return text_events(api)[1]


def kept(api: str, pieces: list[bytes]) -> str:
    """The text the whole events among ``pieces`` hold, read without modelwire."""
    return reading(api, pieces).text


def mid_event(api: str) -> list[bytes]:
    events, p = answer(api), pivot(api)
    return [*events[:p], events[p][: len(events[p]) // 2]]  # inside the second text event


def mid_utf8(api: str) -> list[bytes]:
    events = answer(api)
    i, at = utf8_cut(api)
    return [*events[:i], events[i][:at]]  # 1 byte of a multi-byte character


def in_band(api: str) -> list[bytes]:
    # The API's own mid-stream error event (as recorded, echoing the key), after the
    # answer's events up to and including its second text event.
    return [*answer(api)[: pivot(api) + 1], *error_events(api, KEY)]


def stalled(api: str) -> list[bytes]:
    """The answer's events before its second text event; then nothing more is sent."""
    return answer(api)[: pivot(api)]


def cancel_after(api: str) -> str:
    """The text delta the cancel case waits for: the first text event's, the last sent
    before the stall."""
    events, first = answer(api), text_events(api)[0]
    return kept(api, events[: first + 1])[len(kept(api, events[:first])) :]


def answered(api: str) -> Plan:
    """The API's recorded answer, whole."""
    return streamed(api, answer(api))


def stall(api: str) -> Plan:
    """The recorded answer up to its second text event, then a stall."""
    return streamed(api, stalled(api), end="stall")


# The content each case keeps, per API.
def whole(api: str) -> str:
    return kept(api, answer(api))


def nothing(api: str) -> str:
    return ""


# --------------------------------------------------------------------------- cases


@dataclass
class Case:
    plans: Callable[[str], list[Plan]]
    kind: str | None  # the error kind; None: done(stop); IN_BAND: the API's own (ERRORS)
    text: Callable[[str], str]  # the content the final message keeps, per API
    requests: int
    driver: str = "plain"
    opts: dict[str, Any] = field(default_factory=dict)
    retries: list[tuple[int, int | None, str]] = field(default_factory=list)
    wait: Callable[[RetryTrace], bool] = lambda r: True
    says: str = ""  # a phrase the error message must contain
    retry_after: float | None = None  # the wait the failed message reports
    # The case ends on a wall-clock timeout: it runs on every API and transport, but not
    # again through each provider's URL and auth rules, which take no part in timing.
    waits: bool = False


def backoff(r: RetryTrace) -> bool:
    """The normal backoff applied (the header was ignored): base × 2^(n-1) × [0.5, 1)."""
    full = BACKOFF_BASE * 2 ** (r.attempt - 1)
    return bool(full * 0.5 <= r.wait <= full)


def r429(value: str, header: str = "retry-after") -> Callable[[str], list[Plan]]:
    return lambda api: [error_json(429, {header: value}), answered(api)]


RETRY_429: list[tuple[int, int | None, str]] = [(1, 429, "rate_limit")]
# The kind and message of the API's own mid-stream error (``wire_recordings.ERRORS``).
IN_BAND = "in-band"

CASES: dict[str, Case] = {
    "ok": Case(lambda api: [answered(api)], None, whole, 1),
    "cut_mid_event": Case(
        lambda api: [streamed(api, mid_event(api), end="cut")],
        "stream_interrupted",
        lambda api: kept(api, mid_event(api)[:-1]),
        1,
    ),
    "cut_mid_utf8": Case(
        lambda api: [streamed(api, mid_utf8(api), end="cut")],
        "stream_interrupted",
        lambda api: kept(api, mid_utf8(api)[:-1]),
        1,
    ),
    "body_ends_mid_event": Case(
        lambda api: [streamed(api, mid_event(api))],
        "truncated_stream",
        lambda api: kept(api, mid_event(api)[:-1]),
        1,
    ),
    # A Retry-After does not make a client error retryable, whatever its form.
    "401": Case(lambda api: [error_json(401, {"retry-after": "0"})], "authentication", nothing, 1),
    "403": Case(
        lambda api: [error_json(403, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})],
        "permission",
        nothing,
        1,
    ),
    "404": Case(lambda api: [error_json(404, {"retry-after": "nan"})], "not_found", nothing, 1),
    "429_seconds": Case(r429("0"), None, whole, 2, retries=RETRY_429, wait=lambda r: r.wait == 0),
    "429_http_date": Case(
        r429("Wed, 21 Oct 2015 07:28:00 GMT"),
        None,
        whole,
        2,
        retries=RETRY_429,
        wait=lambda r: r.wait == 0,
    ),
    "429_retry_after_ms": Case(
        r429("30", "retry-after-ms"),
        None,
        whole,
        2,
        retries=RETRY_429,
        wait=lambda r: abs(r.wait - 0.03) < 1e-9,
    ),
    "429_nan": Case(r429("nan"), None, whole, 2, retries=RETRY_429, wait=backoff),
    "429_inf": Case(r429("inf"), None, whole, 2, retries=RETRY_429, wait=backoff),
    "429_negative": Case(r429("-1"), None, whole, 2, retries=RETRY_429, wait=backoff),
    "429_garbage": Case(r429("soon-ish"), None, whole, 2, retries=RETRY_429, wait=backoff),
    "429_ms_nan_falls_back_to_seconds": Case(
        lambda api: [error_json(429, {"retry-after-ms": "nan", "retry-after": "0"}), answered(api)],
        None,
        whole,
        2,
        retries=RETRY_429,
        wait=lambda r: r.wait == 0,
    ),
    "429_beyond_the_cap": Case(
        lambda api: [error_json(429, {"retry-after": "120"}), answered(api)],
        "rate_limit",
        nothing,
        1,
        says="longer than modelwire waits",
        retry_after=120.0,
    ),
    "429_retries_used_up": Case(
        lambda api: [error_json(429, {"retry-after": "0"})],
        "rate_limit",
        nothing,
        2,
        opts={"max_retries": 1},
        retries=RETRY_429,
    ),
    "429_longer_than_the_deadline": Case(
        lambda api: [error_json(429, {"retry-after": "3"}), answered(api)],
        "rate_limit",
        nothing,
        1,
        opts={"timeout": mw.Timeout(total=0.5)},
        says="not retried: the total timeout",
        retry_after=3.0,
    ),
    "5xx_then_ok": Case(
        lambda api: [error_json(500), error_json(529), answered(api)],
        None,
        whole,
        3,
        retries=[(1, 500, "server"), (2, 529, "overloaded")],
        wait=backoff,
    ),
    "5xx_not_retried_with_max_retries_0": Case(
        lambda api: [error_json(502), answered(api)], "server", nothing, 1, opts={"max_retries": 0}
    ),
    "in_band_error": Case(
        lambda api: [streamed(api, in_band(api))],
        IN_BAND,
        lambda api: kept(api, in_band(api)),
        1,
    ),
    "idle_stall": Case(
        lambda api: [stall(api)],
        "timeout",
        lambda api: kept(api, stalled(api)),
        1,
        opts={"timeout": mw.Timeout(idle=0.3)},
        waits=True,
    ),
    "total_deadline_mid_body": Case(
        lambda api: [stall(api)],
        "timeout",
        lambda api: kept(api, stalled(api)),
        1,
        opts={"timeout": mw.Timeout(total=1.0)},
        waits=True,
    ),
    "non_sse_200": Case(
        lambda api: [
            Plan(
                content_type="text/html; charset=utf-8",
                body=[f"<html><body>Bad gateway {KEY}</body></html>".encode()],
            )
        ],
        "provider_stream",
        nothing,
        1,
        says="'text/html; charset=utf-8'",
    ),
    "cancel": Case(
        lambda api: [stall(api)], "aborted", lambda api: kept(api, stalled(api)), 1, driver="cancel"
    ),
    "abort_before_iterating": Case(
        lambda api: [answered(api)], "aborted", nothing, 0, driver="abort_first"
    ),
}


# --------------------------------------------------------------------------- drivers


async def _async_run(
    model: mw.Model, driver: str, delta: str, opts: dict[str, Any]
) -> tuple[list[Any], Any]:
    s = mw.stream(model, CTX, **opts)
    events: list[Any] = []
    if driver == "abort_first":
        s.abort()
    if driver == "cancel":
        seen = asyncio.Event()

        async def consume() -> None:
            try:
                async for ev in s:
                    events.append(ev)
                    if ev.type == "text_delta" and ev.delta == delta:
                        seen.set()
            finally:
                seen.set()  # the delta never came: the checks fail, nothing hangs

        task = asyncio.create_task(consume())
        await seen.wait()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    async for ev in s:
        events.append(ev)
    return events, await s.result()


def _sync_run(
    model: mw.Model, driver: str, delta: str, opts: dict[str, Any]
) -> tuple[list[Any], Any]:
    s = mw.stream_sync(model, CTX, **opts)
    events: list[Any] = []
    if driver == "abort_first":
        s.abort()
    for ev in s:
        events.append(ev)
        if driver == "cancel" and ev.type == "text_delta" and ev.delta == delta:
            # From another thread, while this one blocks reading the stalled body.
            threading.Timer(0.05, s.abort).start()
    return events, s.result()


def run(
    mode: str, model: mw.Model, driver: str, *, delta: str = "", **opts: Any
) -> tuple[list[Any], Any]:
    """One call in ``mode``; the ``cancel`` driver cancels (or aborts) once it has seen
    the text delta ``delta``."""
    if mode.startswith("async-"):
        opts["transport"] = TRANSPORT[mode]
        return asyncio.run(_async_run(model, driver, delta, opts))
    return _sync_run(model, driver, delta, opts)


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


def test_every_api_streams_a_recorded_answer_and_error() -> None:
    """A new built-in API needs a recorded answer and a recorded mid-stream error under
    tests/data (``wire_recordings.ANSWERS`` and ``ERRORS``) before the matrix can run it."""
    assert sorted(ANSWERS) == sorted(APIS), "add the API's text answer to ANSWERS"
    assert sorted(ERRORS) == sorted(APIS), "add the API's mid-stream error to ERRORS"


MATRIX = [
    pytest.param(name, provider, api, base, id=f"{name}-{target}")
    for name, case in CASES.items()
    for provider, api, base, target in TARGETS
    if provider == "mock" or not case.waits
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("name", "provider", "api", "base"), MATRIX)
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
        delta = cancel_after(api)  # what the cancel driver waits for
        events, message = run(mode, model, case.driver, delta=delta, api_key=KEY, trace=log,
                              **case.opts)  # fmt: skip
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
        own = ERRORS[api]  # the API's own mid-stream error, as recorded
        kind, says = (own.kind, own.message) if case.kind == IN_BAND else (case.kind, case.says)
        assert message.error is not None, message
        assert (terminal.type, message.error.kind) == ("error", kind), message.error
        assert message.stop_reason == ("aborted" if kind == "aborted" else "error")
        assert says in message.error.message
        if case.retry_after is not None:
            assert message.error.retry_after == case.retry_after
    # The content kept, the requests the server saw, every socket closed.
    assert message.text == case.text(api)
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
    with serving([stall(api)]) as server:
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
            answered(api),
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
