"""``mw.count_tokens`` against each provider's documented counting endpoint (request
path, body shape, answer) over a real loopback server, the marked local estimate
elsewhere, and ``max_tokens="auto"`` fitting the context window before any I/O."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import modelwire as mw
from modelwire._client._count import SAFETY_MARGIN, estimate_tokens, fit_max_tokens
from modelwire.errors import MalformedChunkError, RateLimitError
from modelwire.testing import MockServer

pytestmark = pytest.mark.anyio


class Seen:
    def __init__(self) -> None:
        self.path = ""
        self.headers: dict[str, str] = {}
        self.body: Any = None


class CountServer:
    """Answers every POST with ``answer`` (status, JSON) and records the request."""

    def __init__(
        self, status: int, answer: Any, before: list[tuple[int, Any, dict[str, str]]] | None = None
    ) -> None:
        self.seen: list[Seen] = []
        self.before = list(before or ())  # answered first, in order (status, body, headers)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                rec = Seen()
                rec.path = self.path
                rec.headers = {k.lower(): v for k, v in self.headers.items()}
                n = int(self.headers.get("content-length", "0"))
                rec.body = json.loads(self.rfile.read(n))
                owner.seen.append(rec)
                code, body, extra = owner.before.pop(0) if owner.before else (status, answer, {})
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(code)
                for k, v in extra.items():
                    self.send_header(k, v)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # A short poll interval: shutdown() waits for the serve loop to notice (at most
        # one interval, 0.5 s by default) and each test starts its own servers.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> CountServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def count_server() -> Iterator[Callable[[int, Any], CountServer]]:
    servers: list[CountServer] = []

    def make(status: int, answer: Any) -> CountServer:
        s = CountServer(status, answer).__enter__()
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.__exit__()


TOOL = mw.ToolDefinition(name="read", description="Read a file",
                         parameters={"type": "object", "properties": {"path": {"type": "string"}}})  # fmt: skip
CTX = mw.Context(system_prompt="Be brief.", tools=[TOOL],
                 messages=[mw.UserMessage(content="How many tokens is this?")])  # fmt: skip


def model(api: str, origin: str, version: str) -> mw.Model:
    return mw.Model(id="m-1", api=api, provider="mock", base_url=origin + version)


# (api, base-url version segment, answer, expected path, check of the body)
CASES: list[tuple[str, str, dict[str, Any], str, Callable[[Any], None]]] = []


def _anthropic(body: Any) -> None:
    assert set(body) <= {"model", "messages", "system", "tools", "tool_choice", "thinking",
                         "mcp_servers"}  # fmt: skip
    assert body["model"] == "m-1" and body["messages"][0]["role"] == "user"
    assert body["tools"][0]["name"] == "read" and "stream" not in body


def _gemini(body: Any) -> None:
    inner = body["generateContentRequest"]
    assert inner["model"] == "models/m-1"
    assert inner["contents"][0]["role"] == "user"
    assert "systemInstruction" in inner and inner["tools"]


def _bedrock(body: Any) -> None:
    converse = body["input"]["converse"]
    assert set(converse) <= {"messages", "system", "toolConfig"}
    assert converse["messages"][0]["role"] == "user" and converse["system"]


def _responses(body: Any) -> None:
    assert body["model"] == "m-1" and body["input"] and body["instructions"] == "Be brief."
    assert "stream" not in body and "max_output_tokens" not in body


CASES = [
    ("anthropic-messages", "/v1", {"input_tokens": 2095}, "/v1/messages/count_tokens", _anthropic),
    ("google-generative-ai", "/v1beta", {"totalTokens": 31, "promptTokensDetails": []},
     "/v1beta/models/m-1:countTokens", _gemini),
    ("bedrock-converse", "", {"inputTokens": 123}, "/model/m-1/count-tokens", _bedrock),
    ("openai-responses", "/v1", {"object": "response.input_tokens", "input_tokens": 11},
     "/v1/responses/input_tokens", _responses),
]  # fmt: skip
COUNTS = {"anthropic-messages": 2095, "google-generative-ai": 31, "bedrock-converse": 123,
          "openai-responses": 11}  # fmt: skip


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
@pytest.mark.parametrize(("api", "version", "answer", "path", "check"), CASES,
                         ids=[c[0] for c in CASES])  # fmt: skip
async def test_the_provider_counts_where_its_api_has_an_endpoint(
    count_server: Callable[[int, Any], CountServer],
    api: str, version: str, answer: dict[str, Any], path: str,
    check: Callable[[Any], None], sync: bool,
) -> None:  # fmt: skip
    srv = count_server(200, answer)
    m = model(api, srv.origin, version)
    if sync:
        got = mw.count_tokens_sync(m, CTX, api_key="sk-count")
    else:
        got = await mw.count_tokens(m, CTX, api_key="sk-count")
    assert got == mw.TokenCount(input_tokens=COUNTS[api], estimated=False, source=api)
    (rec,) = srv.seen
    assert rec.path == path
    assert rec.headers["accept"] == "application/json"
    check(rec.body)


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
async def test_base_url_replaces_a_catalog_models_address_for_a_count(
    count_server: Callable[[int, Any], CountServer], sync: bool
) -> None:
    srv = count_server(200, {"input_tokens": 7})
    opts: dict[str, Any] = {"api_key": "sk-count", "base_url": srv.origin + "/v1"}
    name = "anthropic/claude-sonnet-4-5"
    got = (
        mw.count_tokens_sync(name, CTX, **opts)
        if sync
        else await mw.count_tokens(name, CTX, **opts)
    )
    assert got.input_tokens == 7 and not got.estimated
    (rec,) = srv.seen
    assert rec.path == "/v1/messages/count_tokens" and rec.body["model"] == "claude-sonnet-4-5"


async def test_a_fallback_with_one_base_url_is_refused_for_a_count_too() -> None:
    fb = mw.Fallback(["anthropic/claude-sonnet-4-5", "openai/gpt-4.1-mini"])
    with pytest.raises(mw.ConfigurationError, match="give each model of the Fallback"):
        await mw.count_tokens(fb, CTX, base_url="http://127.0.0.1:9/v1")


async def test_other_apis_get_the_local_estimate_marked_as_such() -> None:
    got = await mw.count_tokens(mw.Model(id="x", api="openai-chat", provider="mock",
                                         base_url="http://127.0.0.1:9/v1"), CTX)  # fmt: skip
    assert got.estimated and got.source == "estimate"
    assert got.input_tokens == estimate_tokens(CTX)
    assert mw.count_tokens_sync("openai/gpt-4.1-mini", "hi", api_key="k").estimated


def test_the_estimate_counts_text_scripts_images_and_tools() -> None:
    one = mw.Context(messages=[mw.UserMessage(content="a" * 400)])
    assert estimate_tokens(one) == 4 + 100
    cjk = mw.Context(messages=[mw.UserMessage(content="你好世界" * 25)])
    assert estimate_tokens(cjk) == 4 + 100  # about one token per CJK character
    image = mw.ImageContent(data="aGk=", mime_type="image/png")
    with_image = mw.Context(messages=[mw.UserMessage(content=(image,))])
    assert estimate_tokens(with_image) == 4 + 1600
    assert estimate_tokens(CTX) > estimate_tokens(
        mw.Context(messages=[mw.UserMessage(content="How many tokens is this?")]))  # fmt: skip


async def test_a_failed_count_raises_the_typed_error(
    count_server: Callable[[int, Any], CountServer],
) -> None:
    srv = count_server(429, {"type": "error", "error": {"type": "rate_limit_error",
                                                          "message": "slow down"}})  # fmt: skip
    with pytest.raises(RateLimitError, match="slow down"):
        await mw.count_tokens(model("anthropic-messages", srv.origin, "/v1"), CTX, api_key="k")
    bad = count_server(200, {"input_tokens": "many"})
    with pytest.raises(MalformedChunkError, match="input_tokens must be a non-negative integer"):
        # A key of one letter would be redacted out of every word of the message.
        mw.count_tokens_sync(model("anthropic-messages", bad.origin, "/v1"), CTX, api_key="sk-c")


# --------------------------------------------------------------------------- a count is a call


@pytest.mark.parametrize("transport", ["httpx", "httptools", "auto"])
async def test_a_count_is_retried_as_a_call_is_on_every_transport(transport: Any) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    with CountServer(
        200, {"input_tokens": 31}, before=[(529, overloaded, {"retry-after": "0"})]
    ) as srv:
        got = await mw.count_tokens(
            model("anthropic-messages", srv.origin, "/v1"), CTX, api_key="sk-c", transport=transport
        )
    assert (got.input_tokens, got.estimated) == (31, False)
    assert [r.path for r in srv.seen] == ["/v1/messages/count_tokens"] * 2


def test_a_count_is_retried_sync_and_stops_at_max_retries() -> None:
    busy = (503, {"error": {"message": "busy"}}, {"retry-after": "0"})
    with CountServer(200, {"totalTokens": 9}, before=[busy]) as srv:
        m = model("google-generative-ai", srv.origin, "/v1beta")
        assert mw.count_tokens_sync(m, CTX, api_key="sk-c").input_tokens == 9
    with CountServer(200, {"totalTokens": 9}, before=[busy, busy]) as srv:
        with pytest.raises(mw.errors.OverloadedError):
            mw.count_tokens_sync(m_at(srv), CTX, api_key="sk-c", max_retries=1)
        assert len(srv.seen) == 2


def m_at(srv: CountServer) -> mw.Model:
    return model("google-generative-ai", srv.origin, "/v1beta")


def test_a_count_that_never_answers_ends_at_its_deadline() -> None:
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()  # accepts (in the backlog) and never answers
    try:
        port = listener.getsockname()[1]
        m = model("anthropic-messages", f"http://127.0.0.1:{port}", "/v1")
        with pytest.raises(mw.errors.RequestTimeoutError):
            mw.count_tokens_sync(m, CTX, api_key="sk-c", timeout=0.3, max_retries=0)
    finally:
        listener.close()


async def test_a_counts_error_never_shows_the_key() -> None:
    key = "sk-count-secret-123"
    quoted = {"type": "error", "error": {"type": "authentication_error",
                                         "message": f"invalid x-api-key {key}"}}  # fmt: skip
    with CountServer(401, quoted) as srv, pytest.raises(mw.errors.AuthenticationError) as info:
        await mw.count_tokens(model("anthropic-messages", srv.origin, "/v1"), CTX, api_key=key)
    assert key not in str(info.value) and "invalid x-api-key" in str(info.value)


# --------------------------------------------------------------------------- max_tokens="auto"


async def test_auto_max_tokens_is_what_the_window_leaves() -> None:
    with MockServer(["ok", "ok"]) as srv:
        small = srv.model("openai-chat", id="small", context_window=2000, max_tokens=100_000)
        await mw.complete(small, CTX, max_tokens="auto")
        capped = srv.model("openai-chat", id="capped", context_window=2000, max_tokens=50)
        await mw.complete(capped, CTX, max_tokens="auto")
        bodies = [r.json() for r in srv.requests]
    est = estimate_tokens(CTX)
    need = est + -(-est * SAFETY_MARGIN // 1)
    sent = bodies[0].get("max_completion_tokens", bodies[0].get("max_tokens"))
    assert sent == 2000 - int(need) == fit_max_tokens(small, CTX)[0]
    assert bodies[1].get("max_completion_tokens", bodies[1].get("max_tokens")) == 50


async def test_a_request_that_cannot_fit_fails_before_any_io_and_a_fallback_moves_on() -> None:
    long = mw.Context(messages=[mw.UserMessage(content="word " * 2000)])
    with MockServer(["from the big one"]) as srv:
        tiny = srv.model("openai-chat", id="tiny", context_window=1000)
        msg = await mw.complete(tiny, long, max_tokens="auto")
        assert srv.requests == []
        assert msg.error is not None and msg.error.kind == "context_overflow"
        assert "cannot fit" in msg.error.message and "tiny" in msg.error.message
        big = srv.model("anthropic-messages", id="big", context_window=200_000)
        fb = mw.Fallback([tiny, big])
        answer = mw.complete_sync(fb, long, max_tokens="auto")
        assert [r.api for r in srv.requests] == ["anthropic-messages"]
    assert answer.model == "big" and answer.text == "from the big one"


def test_auto_is_the_only_word_max_tokens_takes() -> None:
    with pytest.raises(mw.ConfigurationError, match='positive integer or "auto"'):
        mw.stream(mw.get_model("openai", "gpt-4.1-mini"), CTX, api_key="k",
                  max_tokens="max")  # type: ignore[arg-type]  # fmt: skip


# --------------------------------------------------------------------------- the default output cap

#: Where each API's body carries the output limit (its request reference).
CAP_FIELD: dict[str, Callable[[dict[str, Any]], Any]] = {
    "openai-chat": lambda b: b.get("max_completion_tokens", b.get("max_tokens")),
    "openai-responses": lambda b: b.get("max_output_tokens"),
    "google-generative-ai": lambda b: b.get("generationConfig", {}).get("maxOutputTokens"),
    "ollama-chat": lambda b: b.get("options", {}).get("num_predict"),
    "cohere-chat": lambda b: b.get("max_tokens"),
}


@pytest.mark.parametrize("api", sorted(CAP_FIELD))
def test_without_max_tokens_the_models_limit_is_sent_and_none_sends_none(api: str) -> None:
    with MockServer(["ok"], repeat_last=True) as srv:
        m = srv.model(api, max_tokens=321)
        mw.complete_sync(m, CTX)
        mw.complete_sync(m, CTX, max_tokens=None)
        mw.complete_sync(m, CTX, max_tokens=7)
        # A catalog model: its output limit; an id the catalog does not list, resolved
        # from a string: the documented default.
        base = srv.model("openai-chat").base_url
        mw.complete_sync("openai/gpt-4.1-mini", CTX, base_url=base, api_key="sk-test")
        mw.complete_sync("local/smollm2", CTX, base_url=base)
    sent = [CAP_FIELD[str(r.api)](r.json()) for r in srv.requests]
    assert [r.api for r in srv.requests] == [api, api, api, "openai-chat", "openai-chat"]
    listed = mw.get_model("openai", "gpt-4.1-mini").max_tokens
    assert sent == [321, None, 7, listed, 4096] and listed > 4096
