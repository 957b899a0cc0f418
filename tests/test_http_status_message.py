"""What an HTTP error status says, over real loopback sockets on every transport (the
sync path, and async on httpx, aiohttp and httptools): the request's method and URL
(no key, no userinfo, no query value), an HTML page summarized by its title instead
of its markup, and on a 404 from a base URL without its API's version segment, the
base URL to try.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import modelwire as mw
from modelwire._redact import MARK, display_url
from modelwire._wire.request import Transport

KEY = "sk-status-Qm3Zt8Lp2Wv6Xn4Rb9Kd"
QUERY_KEY = "AIzaQueryKey-Hs7Pq2Lw9Xc4Vb1"
PAGE = (
    b"<!DOCTYPE html>\n<html><head><meta charset='utf-8'>\n<title>404 Not Found</title>"
    b"</head>\n<body><center><h1>404 Not Found</h1></center>\n<hr><center>nginx</center>"
    b"</body></html>\n"
)
FAST = mw.Timeout(connect=2, idle=2)


class _PageHandler(BaseHTTPRequestHandler):
    """Answers every POST with the 404 page a web server in front of no API sends."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.send_response(404)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(PAGE)))
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _PageHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _error(model: mw.Model, transport: Transport | None) -> mw.ErrorInfo:
    opts: dict[str, Any] = {"api_key": KEY, "max_retries": 0, "timeout": FAST}
    if transport is None:
        message = mw.complete_sync(model, "hi", **opts)
    else:
        message = asyncio.run(mw.complete(model, "hi", transport=transport, **opts))
    assert message.error is not None
    return message.error


@pytest.mark.parametrize("transport", [None, "httpx", "aiohttp", "httptools"])
@pytest.mark.parametrize(
    ("path", "shown", "hint"),
    [
        ("", "/chat/completions", "/v1"),
        ("/v1", "/v1/chat/completions", None),
        (f"/v1?key={QUERY_KEY}", f"/v1?key={MARK}", None),
    ],
)
def test_a_status_error_names_the_request_and_summarizes_an_html_page(
    origin: str, transport: Transport | None, path: str, shown: str, hint: str | None
) -> None:
    model = mw.Model(id="m", api="openai-chat", provider="local", base_url=origin + path)
    error = _error(model, transport)
    assert error.kind == "not_found" and error.status == 404
    text = error.message
    assert text.startswith(f"HTTP 404 from POST {origin}{shown}: 404 Not Found (an HTML page)")
    assert "<" not in text and "nginx" not in text  # the title, not the markup
    assert KEY[:8] not in text and QUERY_KEY[:8] not in text
    if hint is None:
        assert "try base_url" not in text
    else:
        assert (
            f" — the base_url {origin} has no {hint} in its path, where openai-chat servers "
            f"usually serve the API: try base_url='{origin}{hint}'"
        ) in text


def test_no_hint_when_the_base_url_names_a_version_or_the_api_has_none(origin: str) -> None:
    for base, api in [(origin + "/v2", "openai-chat"), (origin, "ollama-chat")]:
        model = mw.Model(id="m", api=api, provider="local", base_url=base)
        error = _error(model, None)
        assert error.status == 404 and "try base_url" not in error.message, (base, api)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://u:pw@h/v1/x?key=abc&alt=sse#frag", f"https://{MARK}@h/v1/x?key={MARK}&alt=sse"),
        ("https://h/v1?api-version=2024-10-21&sig=s1", f"https://h/v1?api-version=2024-10-21&sig={MARK}"),
        (f"https://h/{KEY}/x?{KEY}", f"https://h/{MARK}/x?{MARK}"),
    ],
)  # fmt: skip
def test_display_url_shows_no_credential(url: str, shown: str) -> None:
    assert display_url(url, (KEY,)) == shown


@pytest.mark.parametrize(
    ("body", "content_type", "says"),
    [
        (b"<html><body><h2>Bad &amp; gateway</h2></body></html>", "text/html", "Bad & gateway"),
        (b"  <!doctype html><p>upstream  <b>down</b></p>", "text/plain", "upstream down"),
        (b"<html><head><title></title></head></html>", "text/html", "(an empty page)"),
    ],
)
def test_html_pages_are_summarized_without_markup(
    body: bytes, content_type: str, says: str
) -> None:
    from modelwire._providers._status import status_error

    err = status_error(502, body, {"Content-Type": content_type}, ())
    assert str(err) == f"HTTP 502: {says} (an HTML page)"
