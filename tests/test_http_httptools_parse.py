"""The httptools transport's parsing, fed as a socket may deliver it: one recorded
response split at every byte offset, byte by byte, and at random points must give
the same status, headers and body, byte for byte — so the same events. Driven on
``_Connection`` directly (a fake asyncio transport, no socket, no loop): every
split is cheap, and the connection is the code that sees the pieces. The request
head it writes is checked here too, without a socket.
"""

from __future__ import annotations

import asyncio
import gzip
import itertools
import zlib
from collections.abc import Iterable
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelwire._http._httptools import _wire
from rawserver import frames

SSE = b"".join(frames("openai-chat"))
NO_LOOP = cast("asyncio.AbstractEventLoop", None)  # parsing waits for nothing


def _chunked(body: bytes, size: int) -> bytes:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    out = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts)
    return out + b"0\r\nX-Trailer: t\r\n\r\n"  # a trailer section (RFC 9112 §7.1.2)


def _response(coding: str, framing: str) -> bytes:
    body = {"identity": SSE, "gzip": gzip.compress(SSE), "deflate": zlib.compress(SSE)}[coding]
    head = [
        "HTTP/1.1 103 Early Hints",  # an interim response first (RFC 9110 §15.2)
        "Link: </a.css>; rel=preload",
        "",
        "HTTP/1.1 200 OK",
        "Content-Type: text/event-stream",
        "X-Dup: a",
        "X-Dup: b",
    ]
    if coding != "identity":
        head.append(f"Content-Encoding: {coding}")
    if framing == "chunked":
        head.append("Transfer-Encoding: chunked")
        return ("\r\n".join(head) + "\r\n\r\n").encode() + _chunked(body, 97)
    head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


RESPONSES = {
    f"{coding}-{framing}": _response(coding, framing)
    for coding in ("identity", "gzip", "deflate")
    for framing in ("chunked", "length")
}


class FakeTransport(asyncio.Transport):
    """The socket side the connection calls; an abort is noted."""

    def __init__(self) -> None:
        super().__init__()
        self.aborted = False

    def abort(self) -> None:
        self.aborted = True

    def is_closing(self) -> bool:
        return self.aborted

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def parse(pieces: Iterable[bytes]) -> tuple[Any, ...]:
    """Feed the pieces as reads, taking the body after each one; what came of it."""
    conn = _wire.Connection(("http", "h", 80), NO_LOOP)
    transport = FakeTransport()
    conn.connection_made(transport)
    conn.begin()
    body = b""
    for piece in pieces:
        conn.data_received(piece)
        if conn.chunks:
            body += conn.take()
    # A trailer is not the head's (RFC 9110 §6.5.1): it is left out of the headers.
    return (conn.status, dict(conn.headers), body, conn.complete, conn.reusable(), conn.error,
            transport.aborted)  # fmt: skip


WHOLE = (200, {"content-type": "text/event-stream", "x-dup": "a, b"}, SSE, True, True, None, False)


def _expected(name: str) -> tuple[Any, ...]:
    headers = dict(WHOLE[1])
    coding, framing = name.split("-")
    if coding != "identity":
        headers["content-encoding"] = coding
    if framing == "chunked":
        headers["transfer-encoding"] = "chunked"
    else:
        headers["content-length"] = str(len(RESPONSES[name].split(b"\r\n\r\n", 2)[2]))
    return (200, headers, *WHOLE[2:])


@pytest.mark.parametrize("name", list(RESPONSES))
def test_the_whole_response_at_once(name: str) -> None:
    assert parse([RESPONSES[name]]) == _expected(name)


@pytest.mark.parametrize("name", list(RESPONSES))
def test_split_in_two_at_every_offset(name: str) -> None:
    """Every place a read can end: inside the interim response, the status line, a
    header, a chunk size, a compressed stream, the trailer."""
    data, expected = RESPONSES[name], _expected(name)
    for i in range(len(data) + 1):
        assert parse([data[:i], data[i:]]) == expected, i


@pytest.mark.parametrize("name", list(RESPONSES))
def test_byte_by_byte(name: str) -> None:
    data = RESPONSES[name]
    assert parse([data[i : i + 1] for i in range(len(data))]) == _expected(name)


@settings(max_examples=50, deadline=None)
@given(name=st.sampled_from(list(RESPONSES)), cuts=st.lists(st.integers(0, 4000), max_size=40))
def test_split_at_random_points(name: str, cuts: list[int]) -> None:
    data = RESPONSES[name]
    points = [0, *sorted({c % (len(data) + 1) for c in cuts}), len(data)]
    assert parse(data[a:b] for a, b in itertools.pairwise(points)) == _expected(name)


@pytest.mark.parametrize(
    ("url", "host", "line"),
    [
        ("http://example.com/v1/x", "example.com", "POST /v1/x HTTP/1.1"),
        ("http://example.com:80/v1", "example.com", "POST /v1 HTTP/1.1"),
        ("https://example.com:443/v1?a=1", "example.com", "POST /v1?a=1 HTTP/1.1"),
        ("https://example.com:8443", "example.com:8443", "POST / HTTP/1.1"),
        ("http://[::1]:8080/v1", "[::1]:8080", "POST /v1 HTTP/1.1"),
    ],
)
def test_the_host_header_names_the_port_only_when_not_the_default(
    url: str, host: str, line: str
) -> None:
    """RFC 9112 §3.2: Host is the authority; the scheme's default port goes unsaid."""
    head = _wire.request_head(_wire.Target(url), {"X-A": "1", "Connection": "close"}, 2).decode()
    assert head.startswith(f"{line}\r\nHost: {host}\r\n")
    assert "X-A: 1\r\n" in head and "Connection" not in head  # it frames the request itself
    assert head.endswith("Content-Length: 2\r\n\r\n")


@pytest.mark.parametrize(
    "headers",
    [{"X-A": "1\r\nX-B: 2"}, {"X-A": "1\n"}, {"X-A": "1\r"}, {"X-A": "a\0b"},
     {"X-A\r\nX-B": "1"}, {"X-\0": "1"}, {"X:A": "1"}],
    ids=["crlf-value", "lf-value", "cr-value", "nul-value", "crlf-name", "nul-name", "colon-name"],
)  # fmt: skip
def test_a_header_that_would_start_another_is_refused(headers: dict[str, str]) -> None:
    """RFC 9110 §5.5: no line break or NUL in a field (it would end it and start
    another), no colon in a name; refused, never written."""
    with pytest.raises(ValueError, match="line break or a colon"):
        _wire.request_head(_wire.Target("http://example.com/v1"), headers, 0)


def test_a_colon_in_a_header_value_is_written() -> None:
    head = _wire.request_head(_wire.Target("http://example.com/v1"), {"X-A": "a:b"}, 0)
    assert b"X-A: a:b\r\n" in head


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 204 No Content\r\nContent-Encoding: deflate\r\n\r\n",
    ],
)
def test_an_empty_body_under_a_coding_is_complete(head: bytes) -> None:
    """No bytes, no compressed stream to end: not a cut one."""
    status, _, body, complete, reusable, error, aborted = parse([head])
    assert (body, complete, reusable, error, aborted) == (b"", True, True, None, False)
    assert status in (200, 204)
