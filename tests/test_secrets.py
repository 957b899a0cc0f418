"""No secret leaks: every credential a request carries is
a secret for all four wire APIs, and redaction runs before any cut, so no cut
edge — an error body cut at 500 characters, a malformed-chunk excerpt cut at
120, a key split over network reads — shows a piece of a key. Checked in the
pure module, in the request builder, and end to end over loopback HTTP (sync, and
async on each transport: httpx, aiohttp, httptools): ``ErrorInfo.message``,
``str(exc)``, ``repr``, trace records, CLI stderr and ``--json``.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import modelwire as mw
from modelwire._apis import builtin_api_names, get_api
from modelwire._catalog import env_vars
from modelwire._cli import main
from modelwire._client._options import resolve_options
from modelwire._providers import provider_rules
from modelwire._redact import (
    MARK,
    MIN_FRAGMENT,
    StreamRedactor,
    credential_secrets,
    head,
    is_credential_header,
    redact,
    tail,
)
from modelwire._wire.framing.eventstream import encode_event
from modelwire._wire.request import HTTPRequest, Transport
from modelwire.testing import MockServer, Reply
from modelwire.trace import ReadTrace, TraceLog

KEY = "sk-hdr-Qw3rtyZx9Lm2Np5Vb8Kj4Hg6Tf1Dc"  # 37 characters, as in the issue
# Every wire API modelwire ships, from the registry (so ollama-chat is covered too).
APIS = builtin_api_names()
CTX = mw.Context(messages=[mw.UserMessage(content="hi")])


def own_header(api: str) -> tuple[str, str]:
    """The API's own credential header for ``KEY``, as a caller would pass it in
    ``headers=``: asked of the API (the one header its request carries the key in)."""
    model = mw.Model(id="m", api=api, provider="local", base_url="http://127.0.0.1:9/v1")
    req = get_api(api).build_request(model, CTX, resolve_options("local", api_key=KEY))
    [(name, value)] = [(k, v) for k, v in req.headers.items() if KEY in v]
    return name, value


def test_each_api_names_its_own_credential_header() -> None:
    headers = {api: own_header(api) for api in APIS}
    assert headers["openai-chat"] == ("Authorization", f"Bearer {KEY}")
    assert headers["anthropic-messages"][0].lower() == "x-api-key"


FAST = mw.Timeout(connect=2, idle=2)
# The async path's transports: every end-to-end check runs on each, and on the sync path.
TRANSPORTS: tuple[Transport, ...] = ("httpx", "aiohttp", "httptools")


def fragments(text: str, key: str = KEY, n: int = 3) -> list[str]:
    """Every run of ``n`` or more characters of ``key`` found in ``text``."""
    return [key[i : i + n] for i in range(len(key) - n + 1) if key[i : i + n] in text]


# --------------------------------------------------------------------------- the module


def test_whole_secrets_and_long_fragments_go_short_pieces_stay() -> None:
    assert redact(f"a {KEY} b", [KEY]) == f"a {MARK} b"
    # A cut piece of 8 or more characters, at either end or in the middle.
    for piece in (KEY[:8], KEY[-8:], KEY[5:30]):
        shown = redact(f"x {piece} y", [KEY])
        assert shown == f"x {MARK} y", piece
    # Shorter pieces are ordinary text (``sk-``, ``sk-hdr``): the rule's floor.
    assert redact("sk-hdr- and sk-", [KEY]) == "sk-hdr- and sk-"
    assert redact(KEY[: MIN_FRAGMENT - 1], [KEY]) == KEY[: MIN_FRAGMENT - 1]
    # A short secret is redacted whole, whatever its length.
    assert redact("token=abc;", ["abc"]) == f"token={MARK};"
    # As a repr quotes it (h11 echoes an illegal header value as bytes).
    odd = "sk-odd\\key-000000\n"
    for text in (f"x {odd!r} y", f"x {odd.encode()!r} y"):
        assert "sk-odd" not in redact(text, [odd]) and "key-0000" not in redact(text, [odd])


def test_head_redacts_before_cutting_at_every_position() -> None:
    """Before: ``text[:500]`` then redact left the head of the key at the cut."""
    text = "." * 20 + KEY + "." * 20
    for limit in range(len(text) + 2):
        shown = head(text, limit, [KEY])
        assert not fragments(shown), (limit, shown)
        body = shown.removesuffix("…")
        # The marker is whole or absent: the cut moved before it.
        assert MARK in body or "[" not in body, (limit, shown)
        assert (MARK in body) == (limit >= 20 + len(MARK)), (limit, shown)


def test_tail_drops_a_marker_the_cut_would_split() -> None:
    text = "." * 20 + KEY + "." * 20
    for limit in range(len(text) + 2):
        shown = tail(text, limit, [KEY])
        assert not fragments(shown), (limit, shown)
        body = shown.removeprefix("…")
        assert MARK in body or "]" not in body, (limit, shown)


def _split3(data: bytes, i: int, j: int) -> list[bytes]:
    return [data[:i], data[i:j], data[j:]]


def test_a_key_split_over_three_reads_shows_no_piece_after_its_head() -> None:
    """The issue's case: 2 + 33 + 2 characters over three reads used to show the
    33 in the middle read. Every pair of split points inside the key is tried."""
    body = f'data: {{"error":"{KEY}"}}\n\n'.encode()
    at = body.index(KEY.encode())
    end = at + len(KEY)
    for i in range(at, end + 1):
        for j in range(i, end + 1):
            r = StreamRedactor([KEY])
            bounds = [(0, i), (i, j), (j, len(body))]
            shown = [r.feed(body[a:b]).decode() for a, b in bounds]
            # All that shows of the key is a head shorter than the floor, in the
            # read(s) it began in, before its end was known; the rest is one marker.
            joined = re.sub(r"(\[redacted\])+", MARK, "".join(shown))
            m = re.fullmatch(
                re.escape(body[:at].decode()) + "(.*)" + re.escape(MARK + body[end:].decode()),
                joined,
                re.S,
            )
            assert m is not None, (i, j, shown)
            assert len(m.group(1)) < MIN_FRAGMENT and KEY.startswith(m.group(1)), (i, j, shown)
            assert all(not fragments(x, n=MIN_FRAGMENT) for x in shown)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=120), min_size=1, max_size=30))
def test_a_key_split_at_random_reads_never_shows_a_long_piece(cuts: list[int]) -> None:
    body = (f"data: {KEY}\n\n: comment {KEY}{KEY}\n\n" * 2).encode()
    points = sorted({c for c in cuts if c < len(body)})
    r = StreamRedactor([KEY, "other-secret-value"])
    prev = 0
    for p in [*points, len(body)]:
        shown = r.feed(body[prev:p]).decode("utf-8", "surrogateescape")
        assert not fragments(shown, n=MIN_FRAGMENT), (points, shown)
        prev = p


def test_credential_headers_any_case_and_their_secrets() -> None:
    for name in ("Authorization", "PROXY-AUTHORIZATION", "x-api-key", "Api-Key",
                 "x-goog-api-key", "Cookie", "X-Auth-Token", "x-secret"):  # fmt: skip
        assert is_credential_header(name), name
    for name in ("Content-Type", "Accept", "anthropic-version", "X-Request-Id"):
        assert not is_credential_header(name), name
    got = credential_secrets(
        {"Authorization": f"Bearer {KEY}", "Cookie": "a=1; session=abcdefgh12345", "X-T": "x"}
    )
    # ``Bearer X``: X (which covers the whole value), each long cookie value.
    assert got == [KEY, "a=1; session=abcdefgh12345", "abcdefgh12345"]
    assert redact(f"Bearer {KEY}", got) == f"Bearer {MARK}"
    # Basic credentials (RFC 7617): the encoded token, the pair and the password.
    basic = credential_secrets({"proxy-authorization": "Basic dXNlcjpodW50ZXIyLXNlY3JldA=="})
    assert basic == ["dXNlcjpodW50ZXIyLXNlY3JldA==", "user:hunter2-secret", "hunter2-secret"]


# --------------------------------------------------------------------------- requests


def _request(
    api: str, headers: dict[str, str] | None = None, model_headers: dict[str, str] | None = None
) -> HTTPRequest:
    model = mw.Model(id="m", api=api, provider="local", base_url="http://127.0.0.1:9/v1",
                     headers=model_headers)  # fmt: skip
    request: HTTPRequest = get_api(api).build_request(
        model, CTX, resolve_options("local", headers=headers)
    )
    return request


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("name", "value", "secret"),
    [
        ("Authorization", f"Bearer {KEY}", KEY),
        ("authorization", f"Bearer {KEY}", KEY),
        ("Proxy-Authorization", f"Basic {KEY}", KEY),
        ("X-API-KEY", KEY, KEY),
        ("api-key", KEY, KEY),
        ("x-goog-api-key", KEY, KEY),
        ("Cookie", f"sid={KEY}", KEY),
        ("X-Auth-Token", KEY, KEY),
    ],
)
def test_every_credential_header_is_a_secret_for_every_api(
    api: str, name: str, value: str, secret: str
) -> None:
    """Before, only Anthropic counted ``headers=`` keys (and only two names, lower-case)."""
    # From the ``headers=`` option, and from ``Model.headers``.
    for req in (_request(api, {name: value}), _request(api, model_headers={name: value})):
        assert secret in req.secrets, (api, name, req.secrets)
        assert KEY not in repr(req)
        assert not fragments(redact(json.dumps(req.headers), req.secrets), n=MIN_FRAGMENT)


@pytest.mark.parametrize("api", APIS)
def test_one_auth_header_whatever_the_case(api: str) -> None:
    """Before, OpenAI Chat/Responses sent ``Authorization`` *and* a caller's
    ``authorization`` (case-sensitive merge): two credentials on one request."""
    name = own_header(api)[0]
    model = mw.Model(id="m", api=api, provider="local", base_url="http://127.0.0.1:9/v1")
    opts = resolve_options("local", api_key=KEY, headers={name.swapcase(): "stale-credential-1"})
    req = get_api(api).build_request(model, CTX, opts)
    names = [k.lower() for k in req.headers]
    assert len(names) == len(set(names)), req.headers
    assert KEY in req.headers[next(k for k in req.headers if k.lower() == name.lower())]
    assert req.secrets[0] == KEY


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer([]) as srv:
        yield srv


def _texts(message: mw.AssistantMessage, events: list[Any]) -> list[str]:
    assert message.error is not None
    out = [message.error.message, repr(message.error), mw.to_json(message).decode()]
    out += [json.dumps(e.to_dict(), default=str) for e in events if hasattr(e, "to_dict")]
    try:
        message.raise_for_error()
    except mw.ModelwireError as exc:
        out += [str(exc), repr(exc), repr(exc.args)]
    return out


async def _both(server: MockServer, reply: Reply, model: mw.Model, **kw: Any) -> list[str]:
    """Run the call async (on each transport) and sync; every text a user may see of
    each run."""
    texts: list[str] = []
    for transport in TRANSPORTS:
        server.add(reply)
        s = mw.stream(model, CTX, max_retries=0, timeout=FAST, transport=transport, **kw)
        events: list[Any] = [e async for e in s]
        texts += _texts(await s.result(), events)
    server.add(reply)
    events = list(mw.stream_sync(model, CTX, max_retries=0, timeout=FAST, **kw))
    texts += _texts(events[-1].message, events)
    return texts


@pytest.mark.anyio
@pytest.mark.parametrize("api", APIS)
async def test_a_header_key_echoed_in_an_error_body_is_redacted(
    server: MockServer, api: str
) -> None:
    """The key given only in ``headers=`` (not ``api_key``), echoed by a 401 body.
    Before: OpenAI Chat, Responses and Gemini returned it verbatim in error.message."""
    name, value = own_header(api)
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}."}}).encode()
    reply = Reply(status=401, content_type="application/json", body=body)
    texts = await _both(server, reply, server.model(api), headers={name: value})
    assert server.requests[-1].headers[name.lower()] == value  # the key was sent
    for text in texts:
        assert not fragments(text, n=MIN_FRAGMENT), text
    assert MARK in texts[0]


@pytest.mark.anyio
@pytest.mark.parametrize("api", APIS)
async def test_an_error_body_cut_at_500_shows_no_piece_of_the_key(
    server: MockServer, api: str
) -> None:
    """Before: the body was cut at 500 characters, then redacted — 20 characters
    of the key, cut by the limit, no longer matched and were shown."""
    body = ("." * 480 + f"key {KEY} rejected" + "." * 100).encode()
    reply = Reply(status=400, content_type="text/plain", body=body)
    texts = await _both(server, reply, server.model(api), api_key=KEY)
    for text in texts:
        assert not fragments(text), text


def _stream_with_bad_chunk(api: str, payload: str) -> bytes:
    # One SSE event whose JSON is broken (an unterminated string), for any API.
    if api == "ollama-chat":  # an NDJSON API: one broken line
        return f'{{"x": "{payload}\n'.encode()
    if api == "bedrock-converse":  # a whole binary frame holding broken JSON
        return encode_event("contentBlockDelta", f'{{"x": "{payload}'.encode())
    name = {"anthropic-messages": "content_block_delta"}.get(api)
    head_ = f"event: {name}\n" if name else ""
    return f'{head_}data: {{"x": "{payload}\n\n'.encode()


@pytest.mark.anyio
@pytest.mark.parametrize("api", APIS)
async def test_a_malformed_chunk_excerpt_cut_at_120_shows_no_piece_of_the_key(
    server: MockServer, api: str
) -> None:
    """Before: the excerpt was cut at 120 characters inside the decoder and only
    redacted later: the 33 characters before the cut stayed."""
    payload = "." * 92 + KEY + "." * 50  # the cut at 120 falls inside the key
    texts = await _both(
        server, Reply(body=_stream_with_bad_chunk(api, payload)), server.model(api), api_key=KEY
    )
    assert "malformed" in texts[0] and "invalid JSON" in texts[0], texts[0]
    for text in texts:
        assert not fragments(text), text


@pytest.mark.anyio
async def test_a_plain_text_error_event_cut_at_500_shows_no_piece_of_the_key(
    server: MockServer,
) -> None:
    payload = "." * 490 + KEY + "." * 30
    reply = Reply(body=f"event: error\ndata: {payload}\n\n".encode())
    texts = await _both(server, reply, server.model("openai-chat"), api_key=KEY)
    for text in texts:
        assert not fragments(text), text


@pytest.mark.anyio
@pytest.mark.parametrize("api", APIS)
async def test_a_key_split_over_three_reads_is_hidden_in_the_trace(
    server: MockServer, api: str
) -> None:
    """The issue's 2 + 33 + 2 split: the middle read used to show 33 of the 37
    characters (a piece cut by two read boundaries is neither a head nor a tail)."""
    body = f": echo {KEY}\n\n".encode()  # an SSE comment: every decoder ignores it
    if api == "ollama-chat":  # NDJSON has no comments: a line of unknown fields
        body = f'{{"echo":"{KEY}"}}\n'.encode()
    if api == "bedrock-converse":  # an unknown event, padded so its CRC bytes are ASCII
        for n in range(200):
            body = encode_event("echo", f'{{"echo":"{KEY}","p":"{"x" * n}"}}'.encode())
            if body[-4:].isascii():  # the trace's reads are decoded as text below
                break
    at = body.index(KEY.encode())
    reply = Reply(body=body, split_points=(at + 2, at + 35), delay=0.05)
    for mode in (None, *TRANSPORTS):  # None: the sync path
        server.add(reply)
        log = TraceLog()
        if mode is None:
            events = list(mw.stream_sync(server.model(api), CTX, api_key=KEY, trace=log,
                                         timeout=FAST))  # fmt: skip
            msg = events[-1].message  # type: ignore[union-attr]
        else:
            msg = await mw.complete(
                server.model(api), CTX, api_key=KEY, trace=log, timeout=FAST, transport=mode
            )
        assert msg.error is not None and msg.error.kind == "truncated_stream"
        reads = [r for r in log.records if isinstance(r, ReadTrace)]
        assert [r.size for r in reads] == [at + 2, 33, len(body) - at - 35]
        assert not fragments(reads[1].data.decode()) and not fragments(reads[2].data.decode())
        dumped = json.dumps([r.to_dict() for r in log.records], default=str)
        assert not fragments(dumped, n=MIN_FRAGMENT)


def _keyed_provider(api: str) -> str:
    """A catalog provider that serves ``api`` with a key variable and no rules of its
    own (its URL is the CLI's ``--base-url``), else any such provider pointed at the
    API (Ollama has no key variable): read from the provider records, so a new API
    needs no entry here."""
    plain = [m.provider for m in mw.models()
             if env_vars(m.provider) and provider_rules(m.provider) is None]  # fmt: skip
    own = [m.provider for m in mw.models() if m.api == api and m.provider in plain]
    return (own or plain)[0]


@pytest.mark.parametrize("api", APIS)
def test_cli_stderr_and_json_show_no_piece_of_the_key(
    server: MockServer, api: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    provider = _keyed_provider(api)
    env = env_vars(provider)[0]
    monkeypatch.setenv(env, KEY)
    # The CLI reads piped stdin as part of the prompt: give it an empty one.
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    base = server.model(api).base_url
    body = ("." * 485 + KEY + "." * 40).encode()  # cut at 500 falls inside the key
    for extra in ([], ["--json"]):
        server.add(Reply(status=400, content_type="text/plain", body=body))
        code = main(["chat", "-m", f"{provider}/loop-model", "--base-url", base, "--api", api,
                     "--timeout", "2", *extra, "hi"])  # fmt: skip
        out, err = capsys.readouterr()
        assert code == 1, (out, err)
        assert "invalid_request" in out + err
        assert not fragments(out) and not fragments(err), (out, err)


# --------------------------------------------------------------------------- credentials that cannot be header values
# A CR/LF (or any control character) in a credential would split or break a header:
# refused at stream(), before any I/O, naming the variable and never quoting the value.

BAD_VALUES = [
    "tok\r\nX-Injected: 1",
    "tok\nmore",
    "tok\n",
    "tok\x00nul",
    "tok\x7fdel",
    "tok\x85nel",
]
ENV_BAD_VALUES = [v for v in BAD_VALUES if "\x00" not in v]  # the OS refuses NUL in env


def _refused_up_front(model: mw.Model, var: str, recorder: Any, **opts: Any) -> None:
    before = len(recorder.lines)
    for call in (mw.stream, mw.stream_sync):
        with pytest.raises(mw.ConfigurationError) as info:
            call(model, CTX, max_retries=0, **opts)
        text = f"{info.value} {info.value!r}"
        assert var in text
        assert "X-Injected" not in text and "more" not in text and "\n" not in str(info.value)
    assert len(recorder.lines) == before  # nothing was sent


@pytest.fixture
def recorder() -> Iterator[Any]:
    from test_url_paths import Recorder

    rec = Recorder()
    yield rec
    rec.server.shutdown()
    rec.server.server_close()


@pytest.mark.parametrize("value", ENV_BAD_VALUES)
def test_a_control_character_in_the_azure_ad_token_is_refused_at_stream(
    value: str, recorder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", value)
    model = mw.Model(id="dep", api="openai-chat", provider="azure-openai",
                     base_url=f"http://{recorder.netloc}/openai/v1")  # fmt: skip
    _refused_up_front(model, "AZURE_OPENAI_AD_TOKEN", recorder)


@pytest.mark.parametrize("var", ["AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"])
@pytest.mark.parametrize("value", ENV_BAD_VALUES)
def test_a_control_character_in_an_aws_credential_variable_is_refused_at_stream(
    var: str, value: str, recorder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "FwoGZXIvYXdzEXAMPLE")
    monkeypatch.setenv(var, value)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    model = mw.Model(id="anthropic.claude-v1", api="bedrock-converse", provider="amazon-bedrock",
                     base_url=f"http://{recorder.netloc}")  # fmt: skip
    _refused_up_front(model, var, recorder)


def _key_vars() -> dict[str, str]:
    """Every API-key variable the catalog's providers read, with one provider reading it."""
    from modelwire._catalog import models

    out: dict[str, str] = {}
    for model in models():
        for var in env_vars(model.provider):
            out.setdefault(var, model.provider)
    return out


@pytest.mark.parametrize("var", sorted(_key_vars()))
def test_a_control_character_in_any_api_key_variable_is_refused_at_stream(
    var: str, recorder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import msgspec

    from modelwire._catalog import models

    found = models(_key_vars()[var])[0]
    monkeypatch.setenv(var, "tok\r\nX-Injected: 1")
    model = msgspec.structs.replace(found, base_url=f"http://{recorder.netloc}/v1")
    _refused_up_front(model, var, recorder)


@pytest.mark.parametrize("mode", [None, *TRANSPORTS], ids=["sync", *TRANSPORTS])
def test_a_token_provider_returning_a_newline_fails_typed_and_not_retried(
    mode: Transport | None, recorder: Any
) -> None:
    from modelwire._providers import register_provider
    from modelwire.cloud.azure import AzureAuth
    from modelwire.ext import AzureOpenAIRules

    calls: list[int] = []

    def provider() -> str:
        calls.append(1)
        return "tok\r\nX-Injected: 1"

    rules = AzureOpenAIRules(auth=AzureAuth(token_provider=provider))
    register_provider("azure-crlf", rules)
    model = mw.Model(id="dep", api="openai-chat", provider="azure-crlf",
                     base_url=f"http://{recorder.netloc}/openai/v1")  # fmt: skip
    import asyncio

    if mode is None:
        message = mw.complete_sync(model, CTX, max_retries=2)
    else:
        message = asyncio.run(mw.complete(model, CTX, max_retries=2, transport=mode))
    assert message.error is not None
    assert message.error.kind == "authentication" and not message.error.retryable
    assert "token_provider" in message.error.message
    assert "X-Injected" not in message.error.message
    assert len(calls) == 1 and recorder.lines == []


def test_explicit_cloud_credentials_with_control_characters_are_refused() -> None:
    from modelwire.cloud.aws import BedrockAuth
    from modelwire.cloud.azure import AzureAuth
    from modelwire.cloud.google import VertexAuth

    cases: list[tuple[Callable[[str], object], str]] = [
        (lambda v: AzureAuth(ad_token=v), "AzureAuth(ad_token=)"),
        (lambda v: AzureAuth(api_key=v), "AzureAuth(api_key=)"),
        (lambda v: VertexAuth(token=v), "VertexAuth(token=)"),
        (lambda v: VertexAuth(api_key=v), "VertexAuth(api_key=)"),
        (lambda v: BedrockAuth(api_key=v, region="us-east-1"), "BedrockAuth(api_key=)"),
    ]
    for make, source in cases:
        for value in BAD_VALUES:
            with pytest.raises(mw.ConfigurationError, match=re.escape(source)) as info:
                make(value)
            assert "X-Injected" not in str(info.value)


def test_a_session_token_from_the_credential_chain_with_a_newline_is_refused_when_signing() -> None:
    from botocore.credentials import Credentials

    from modelwire.cloud.aws import SigV4Signer

    signer = SigV4Signer(
        "us-east-1", credentials=Credentials("AKIDEXAMPLE", "secret", "tok\r\nX-Injected: 1")
    )
    with pytest.raises(mw.ConfigurationError, match="session token") as info:
        signer.authorize(
            "POST",
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse-stream",
            {},
            b"{}",
        )
    assert "X-Injected" not in str(info.value)


# --------------------------------------------------------------------------- format checks match the whole value
# ``$`` matches before a final newline: every format check is a fullmatch.


@pytest.mark.parametrize("version", ["2024-10-21\n", "2024-10-21\r\n", "2024-10-21-preview\n"])
def test_an_api_version_with_a_trailing_newline_is_refused(version: str, recorder: Any) -> None:
    from modelwire._providers.azure_openai import azure_url

    with pytest.raises(mw.ConfigurationError, match="api_version"):
        azure_url("https://r.openai.azure.com", "dep", "/chat/completions", version)
    # In the base_url's query too, before any request.
    from urllib.parse import quote

    model = mw.Model(id="dep", api="openai-chat", provider="azure-openai",
                     base_url=f"http://{recorder.netloc}?api-version={quote(version)}")  # fmt: skip
    with pytest.raises(mw.ConfigurationError, match="api_version"):
        mw.stream_sync(model, CTX, api_key="azure-key-1")
    assert recorder.lines == []


def test_format_checks_refuse_a_trailing_newline() -> None:
    from modelwire.cloud.google import resolve_location, resolve_project

    with pytest.raises(mw.ConfigurationError, match="location"):
        resolve_location("us-central1\n")
    with pytest.raises(mw.ConfigurationError, match="project"):
        resolve_project("my-project-1\n")
    with pytest.raises(mw.ConfigurationError):
        mw.Tool(name="read\n", description="d", parameters={"type": "object"},
                execute=lambda args, ctx: "x")  # fmt: skip
    # Gemini's FunctionDeclaration.name format, checked when the body is built.
    gemini = mw.Model(id="gemini-x", api="google-generative-ai", provider="google",
                      base_url="http://127.0.0.1:9/v1beta")  # fmt: skip
    tools = [mw.ToolDefinition(name="read\n", description="d", parameters={"type": "object"})]
    with pytest.raises(mw.ConfigurationError, match="read"):
        mw.stream_sync(gemini, mw.Context(messages=CTX.messages, tools=tools), api_key="k")
