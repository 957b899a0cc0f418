"""The async path's three transports, httpx, aiohttp and modelwire's own on httptools:
how one is chosen (the ``transport`` option, the caller's ``http_client``, what is
installed), that aiohttp and httptools are imported on first use only, and the
environment they honour — proxies from ``HTTP_PROXY``/``NO_PROXY`` (httptools refuses
one, never bypassing it), TLS verification with the one shared context, gzip and
deflate — over real loopback sockets. The fault matrix (``test_faults.py``) and the
secrets suite (``test_secrets.py``) run on every transport as well.
"""

from __future__ import annotations

import ast
import asyncio
import datetime
import gzip
import ipaddress
import socket
import ssl
import subprocess
import sys
import threading
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest

import modelwire as mw
import modelwire._http as http
from modelwire._wire.request import Transport
from modelwire.trace import RetryTrace, TraceLog
from rawserver import CTX, TEXT, Plan, RawServer, frames, model_for, ok, serving

SRC = Path(mw.__file__).parent
MODES = ("httpx", "aiohttp", "httptools", "sync")
AGENTS = {"httpx": "python-httpx/", "aiohttp": "aiohttp/", "httptools": "modelwire/",
          "sync": "python-httpx/"}  # fmt: skip
TRANSPORT: dict[str, Transport] = {"httpx": "httpx", "aiohttp": "aiohttp", "httptools": "httptools"}
# The modes that go through a proxy the environment names (httptools refuses one).
PROXIED = ("httpx", "aiohttp", "sync")


def run(mode: str, model: mw.Model, **opts: Any) -> mw.AssistantMessage:
    if mode == "sync":
        return mw.complete_sync(model, CTX, **opts)
    return asyncio.run(mw.complete(model, CTX, transport=TRANSPORT[mode], **opts))


# --------------------------------------------------------------------------- choosing


def test_only_the_http_modules_import_aiohttp_httptools_and_httpx() -> None:
    importers: dict[str, set[str]] = {"aiohttp": set(), "httptools": set(), "httpx": set()}
    for path in SRC.rglob("*.py"):
        module = "modelwire." + ".".join(path.relative_to(SRC).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            for lib in importers:
                if any(n == lib or n.startswith(lib + ".") for n in names):
                    importers[lib].add(module)
    # The HTTP modules: the httpx package (its drivers, the JSON request), aiohttp's
    # and httptools'; and the gateway's server protocol, which bounds uvicorn's httptools
    # parser on the server side (a server, not a client transport).
    assert importers == {
        "aiohttp": {"modelwire._http._aiohttp"},
        "httptools": {"modelwire._http._httptools._wire", "modelwire.gateway._server"},
        "httpx": {
            "modelwire._http",
            "modelwire._http._base",
            "modelwire._http._httpx_async",
            "modelwire._http._httpx_sync",
        },
    }


def test_import_modelwire_does_not_import_aiohttp_and_a_stream_does_on_first_use() -> None:
    code = (
        "import sys, modelwire as mw\n"
        "assert 'aiohttp' not in sys.modules, 'import modelwire imported aiohttp'\n"
        "m = mw.Model(id='m', api='openai-chat', provider='local', base_url='http://127.0.0.1:9/v1')\n"
        "s = mw.stream(m, mw.Context(), transport='aiohttp')\n"
        "assert 'aiohttp' not in sys.modules, 'stream() imported aiohttp before any I/O'\n"
        "import modelwire._http as h\n"
        "h.async_transport(None, 'auto')\n"
        "assert 'aiohttp' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_import_modelwire_does_not_import_httptools_and_a_stream_does_on_first_use() -> None:
    """httptools comes with the gateway extra: ``import modelwire`` (and a stream not
    yet iterated) must work without it."""
    code = (
        "import sys, modelwire as mw\n"
        "assert 'httptools' not in sys.modules, 'import modelwire imported httptools'\n"
        "m = mw.Model(id='m', api='openai-chat', provider='local', base_url='http://127.0.0.1:9/v1')\n"
        "s = mw.stream(m, mw.Context(), transport='httptools')\n"
        "assert 'httptools' not in sys.modules, 'stream() imported httptools before any I/O'\n"
        "import modelwire._http as h\n"
        "h.async_transport(None, 'auto')\n"
        "assert 'httptools' not in sys.modules, 'the aiohttp transport imported httptools'\n"
        "h.async_transport(None, 'httptools')\n"
        "assert 'httptools' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("mode", MODES)
def test_each_transport_is_the_one_that_sends(mode: str) -> None:
    with serving([ok("openai-chat")]) as server:
        message = run(mode, model_for("openai-chat", server.port))
        assert server.wait_closed()
    assert message.stop_reason == "stop" and message.text == TEXT
    [agent] = server.agents
    assert AGENTS[mode] in agent


def test_auto_is_aiohttp_when_installed_and_httpx_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert http.aiohttp_installed()
    assert type(http.async_transport(None)).__name__ == "AiohttpTransport"
    assert type(http.async_transport(None, "httpx")).__name__ == "HttpxAsyncTransport"
    assert type(http.async_transport(None, "httptools")).__name__ == "HttptoolsTransport"
    with serving([ok("openai-chat")]) as server:
        asyncio.run(mw.complete(model_for("openai-chat", server.port), CTX))
        from modelwire._http import _base

        # Patched where it is looked up: the transport choice and the client check.
        monkeypatch.setattr(http, "aiohttp_installed", lambda: False)
        monkeypatch.setattr(_base, "aiohttp_installed", lambda: False)
        asyncio.run(mw.complete(model_for("openai-chat", server.port), CTX))
        assert server.wait_closed()
    assert [a.split("/")[0] for a in server.agents] == ["Python", "python-httpx"]
    assert "aiohttp/" in server.agents[0]
    # Asked for by name and missing: a clear error with the fix, before any request.
    with pytest.raises(mw.ConfigurationError, match=r"pip install 'modelwire\[aiohttp\]'"):
        mw.stream(model_for("openai-chat", 9), CTX, transport="aiohttp")


def test_httptools_asked_for_and_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from modelwire._http import _base

    monkeypatch.setattr(_base, "httptools_installed", lambda: False)
    with pytest.raises(mw.ConfigurationError, match=r"needs httptools: pip install httptools"):
        mw.stream(model_for("openai-chat", 9), CTX, transport="httptools")


def test_a_bad_transport_or_combination_is_refused_up_front() -> None:
    model = model_for("openai-chat", 9)
    with pytest.raises(mw.ConfigurationError, match='transport must be "auto", "httpx"'):
        mw.stream(model, CTX, transport="curl")  # type: ignore[arg-type]
    async_only: tuple[Transport, ...] = ("aiohttp", "httptools")
    for transport in async_only:
        with pytest.raises(
            mw.ConfigurationError,
            match=rf'transport="{transport}" is for stream\(\)/complete\(\); the sync twins use httpx',
        ):
            mw.stream_sync(model, CTX, transport=transport)
        with pytest.raises(mw.ConfigurationError, match="sync twins use httpx"):
            mw.complete_sync(model, CTX, transport=transport)
    mw.stream_sync(model, CTX, transport="httpx")  # fine: no I/O until iterated
    mw.stream(model, CTX, transport="httptools")  # fine: no I/O until iterated

    async def combos() -> None:
        # Each transport's own kind of client (httptools: its Pool), and the words that
        # name it: every other transport refuses it, before any request.
        pool = http.pooled_async_client(2, "httptools")
        async with httpx.AsyncClient() as hc, aiohttp.ClientSession() as session:
            clients = [(hc, "httpx", r"an httpx\.AsyncClient"),
                       (session, "aiohttp", r"an aiohttp\.ClientSession"),
                       (pool, "httptools", r"the httptools transport's Pool")]  # fmt: skip
            for client, own, named in clients:
                for transport in TRANSPORT.values():
                    if transport == own:
                        mw.stream(model, CTX, http_client=client, transport=transport)  # fine
                        continue
                    with pytest.raises(
                        mw.ConfigurationError,
                        match=rf'transport="{transport}" cannot use {named} as http_client',
                    ):
                        mw.stream(model, CTX, http_client=client, transport=transport)
            with pytest.raises(mw.ConfigurationError, match=r"must be an httpx\.Client"):
                mw.stream_sync(model, CTX, http_client=session)
        await http.close_async_client(pool)
        with pytest.raises(mw.ConfigurationError, match=r"or an aiohttp\.ClientSession"):
            mw.stream(model, CTX, http_client=object())

    asyncio.run(combos())


def test_a_clients_kind_is_decided_once_per_type_and_the_memory_is_bounded() -> None:
    """Each call asks a client's kind twice (checked, then run): decided by type, once;
    a subclass is its base's kind; types made on the fly do not grow it past its cap."""
    from modelwire._http import _base

    async def kinds() -> list[str]:
        pool = http.pooled_async_client(2, "httptools")
        async with httpx.AsyncClient() as hc, aiohttp.ClientSession() as session:
            with httpx.Client() as sc:
                found = [http.client_kind(c) for c in (hc, sc, session, pool, object(), None)]
        await http.close_async_client(pool)
        return found

    assert asyncio.run(kinds()) == ["httpx", "httpx-sync", "aiohttp", "httptools", "", ""]
    decided: list[type] = []
    kind_of = _base._kind_of

    def counted(client: object) -> str:
        decided.append(type(client))
        return kind_of(client)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_base, "_kind_of", counted)
        sub = type("MyClient", (httpx.AsyncClient,), {})
        assert [http.client_kind(sub()) for _ in range(3)] == ["httpx"] * 3
        assert decided == [sub]  # once for the type, not once per call
        for i in range(200):
            http.client_kind(type(f"T{i}", (), {})())
        assert len(_base._KINDS) <= 64
        assert http.client_kind(sub()) == "httpx"  # decided again after a clear, the same


def test_a_callers_aiohttp_session_is_used_and_left_open() -> None:
    async def main(port: int) -> tuple[mw.AssistantMessage, bool]:
        async with aiohttp.ClientSession(headers={"x-from": "session"}) as session:
            message = await mw.complete(model_for("openai-chat", port), CTX, http_client=session)
            return message, session.closed

    with serving([ok("openai-chat")]) as server:
        message, closed = asyncio.run(main(server.port))
        assert server.wait_closed()
    assert message.text == TEXT and not closed
    assert b"x-from: session" in server.heads[0].lower()


# --------------------------------------------------------------------------- environment


@pytest.mark.parametrize("mode", PROXIED)
def test_a_proxy_from_the_environment_carries_the_request(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``HTTP_PROXY`` is honoured as httpx honours it (``trust_env``): the request goes
    to the proxy in absolute form; ``NO_PROXY`` exempts a host."""
    for var in ("ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.delenv(var, raising=False)
    with serving([ok("openai-chat")]) as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("NO_PROXY", "exempt.invalid")
        model = mw.Model(id="m", api="openai-chat", provider="local",
                         base_url="http://api.proxied.invalid/v1")  # fmt: skip
        message = run(mode, model)
        assert message.text == TEXT, message.error
        assert proxy.targets == ["http://api.proxied.invalid/v1/chat/completions"]
        exempt = mw.Model(id="m", api="openai-chat", provider="local",
                          base_url="http://exempt.invalid/v1")  # fmt: skip
        message = run(mode, exempt, max_retries=0)
        assert message.error is not None and message.error.kind == "connect"
        assert len(proxy.targets) == 1  # not sent through the proxy
        assert proxy.wait_closed()


@pytest.mark.parametrize("mode", PROXIED)
def test_a_proxy_url_s_credentials_reach_the_proxy_and_no_error_text(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Credentials in ``HTTP_PROXY``/``HTTPS_PROXY`` go to the proxy as Basic
    ``Proxy-Authorization``: on the request itself for an http URL, on the tunnel's
    ``CONNECT`` for an https one; never to the provider, never into an error."""
    import base64

    for var in ("ALL_PROXY", "all_proxy", "https_proxy", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    expected = b"proxy-authorization: basic " + base64.b64encode(b"user:hunter2-secret").lower()
    with serving([ok("openai-chat")]) as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://user:hunter2-secret@127.0.0.1:{proxy.port}")
        model = mw.Model(id="m", api="openai-chat", provider="local",
                         base_url="http://api.proxied.invalid/v1")  # fmt: skip
        message = run(mode, model)
        assert message.text == TEXT, message.error
        assert expected in proxy.heads[0].lower()
    with serving([Plan(status=0)]) as proxy:  # the CONNECT is answered by hanging up
        monkeypatch.setenv("HTTPS_PROXY", f"http://user:hunter2-secret@127.0.0.1:{proxy.port}")
        model = mw.Model(id="m", api="openai-chat", provider="local",
                         base_url="https://api.proxied.invalid/v1")  # fmt: skip
        message = run(mode, model, max_retries=0)
        assert message.error is not None
        assert proxy.heads[0].startswith(b"CONNECT api.proxied.invalid:443 ")
        assert expected in proxy.heads[0].lower()
        assert "hunter2" not in message.error.message
        assert base64.b64encode(b"user:hunter2-secret").decode() not in message.error.message


PROXY_VARS = ("ALL_PROXY", "all_proxy", "HTTP_PROXY", "http_proxy", "HTTPS_PROXY",
              "https_proxy", "NO_PROXY", "no_proxy")  # fmt: skip


@pytest.mark.parametrize(
    ("var", "scheme"),
    [("HTTP_PROXY", "http"), ("http_proxy", "http"), ("HTTPS_PROXY", "https"),
     ("ALL_PROXY", "http"), ("ALL_PROXY", "https")],
)  # fmt: skip
def test_httptools_refuses_a_proxy_from_the_environment_before_any_request(
    var: str, scheme: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """transport="httptools" goes through no proxy: one the environment names for the
    URL fails the call at once — a final connect error naming the transports that do,
    no retry, no connection anywhere — never a silent direct connection around it."""
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
    log = TraceLog()
    with serving([ok("openai-chat")]) as proxy:
        monkeypatch.setenv(var, f"http://user:hunter2-secret@127.0.0.1:{proxy.port}")
        model = mw.Model(id="m", api="openai-chat", provider="local",
                         base_url=f"{scheme}://api.proxied.invalid/v1")  # fmt: skip
        message = run("httptools", model, max_retries=2, trace=log)
        assert proxy.connections == [] and proxy.requests == []
    assert message.error is not None and message.error.kind == "connect", message.error
    assert not [r for r in log.records if isinstance(r, RetryTrace)]  # final: not retried
    assert message.error.retryable is False  # nor by a batch or a fallback
    text = message.error.message
    assert "transport='httptools' does not go through proxies" in text, text
    assert all(word in text for word in ("'aiohttp'", "'httpx'", "NO_PROXY")), text
    assert "hunter2" not in text and "api.proxied.invalid" not in text


def test_httptools_goes_direct_to_a_no_proxy_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host ``NO_PROXY`` exempts is connected to directly, the proxy set for all
    the others untouched (it would answer too: only who saw the request tells)."""
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
    with serving([ok("openai-chat")]) as proxy, serving([ok("openai-chat")]) as direct:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("ALL_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("NO_PROXY", "exempt.invalid,127.0.0.1")
        message = run("httptools", model_for("openai-chat", direct.port))
        assert message.text == TEXT, message.error
        assert direct.targets == ["/v1/chat/completions"]  # origin form: not proxied
        assert proxy.connections == []
        assert direct.wait_closed()


def _cert(tmp: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (its own CA) and its key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "modelwire test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))  # fmt: skip
    return cert_path, key_path


class TLSServer(RawServer):
    """:class:`RawServer` behind TLS (the handshake in the connection's thread)."""

    def __init__(self, plans: list[Plan], context: ssl.SSLContext) -> None:
        self.context = context
        self.handshakes: list[str] = []  # "ok" or the failure
        super().__init__(plans)

    def _serve(self, conn: socket.socket, closed: threading.Event) -> None:
        try:
            tls = self.context.wrap_socket(conn, server_side=True)
        except (OSError, ssl.SSLError) as exc:
            self.handshakes.append(type(exc).__name__)
            conn.close()
            closed.set()
            return
        self.handshakes.append("ok")
        super()._serve(tls, closed)


@pytest.fixture
def tls(tmp_path: Path) -> Iterator[tuple[TLSServer, Path]]:
    cert, key = _cert(tmp_path)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    server = TLSServer([ok("openai-chat")], ctx)
    try:
        yield server, cert
    finally:
        server.close()


@pytest.mark.parametrize("mode", MODES)
def test_tls_is_verified_with_the_one_shared_context(
    mode: str, tls: tuple[TLSServer, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, cert = tls
    model = mw.Model(id="m", api="openai-chat", provider="local",
                     base_url=f"https://127.0.0.1:{server.port}/v1")  # fmt: skip
    # An unknown issuer is refused (certifi's bundle does not hold it) and not sent.
    message = run(mode, model, max_retries=0)
    assert message.error is not None and message.error.kind == "connect", message.error
    assert "CERTIFICATE_VERIFY_FAILED" in message.error.message or "certificate" in (
        message.error.message.lower()
    )
    assert server.requests == []
    # Trusted through the context every transport takes: the stream goes through.
    trusting = ssl.create_default_context(cafile=str(cert))
    monkeypatch.setattr(http, "ssl_context", lambda: trusting)
    message = run(mode, model)
    assert message.text == TEXT, message.error
    # The refused handshake may be recorded after this one (its own thread): count.
    assert len(server.requests) == 1 and server.handshakes.count("ok") == 1
    assert server.wait_closed()


def _raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


# Each coding the transports ask for; "deflate" as RFC 9110 says (zlib-wrapped) and
# as some servers send it (raw RFC 1951).
CODINGS: dict[str, tuple[str, Callable[[bytes], bytes]]] = {"gzip": ("gzip", gzip.compress), "deflate": ("deflate", zlib.compress),
           "deflate-raw": ("deflate", _raw_deflate)}  # fmt: skip


@pytest.mark.parametrize("coding", list(CODINGS))
@pytest.mark.parametrize("mode", MODES)
def test_a_gzip_or_deflate_event_stream_is_decoded(mode: str, coding: str) -> None:
    """Providers may send the event stream gzip-encoded (Anthropic does); each coding
    asked for in ``Accept-Encoding`` is undone."""
    name, compress = CODINGS[coding]
    body = compress(b"".join(frames("openai-chat")))
    cut = len(body) // 2  # two reads, the cut inside the deflate stream
    plan = Plan(body=[body[:cut], body[cut:]], headers={"Content-Encoding": name})
    with serving([plan]) as server:
        message = run(mode, model_for("openai-chat", server.port))
        assert server.wait_closed()
    assert message.text == TEXT and message.stop_reason == "stop", message.error
    [head] = server.heads
    accepted = next(line for line in head.lower().split(b"\r\n")
                    if line.startswith(b"accept-encoding:"))  # fmt: skip
    assert name.encode() in accepted
