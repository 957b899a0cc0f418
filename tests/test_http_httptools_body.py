"""The bodies the httptools transport reads, over real loopback sockets (the
server of ``test_http_httptools.py``, writing exact bytes): every framing (RFC 9112
§6), a body cut short of it, the codings it asks for and the ones it does not, an
interim response, repeated headers, and flow control under a slow reader.
"""

from __future__ import annotations

import asyncio
import gc
import gzip
import random
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import modelwire as mw
import modelwire._http as http
from modelwire._call import Failure, Head, Read
from modelwire._http import _httptools as hh
from modelwire._http._httptools import _wire
from rawserver import TEXT
from test_http_httptools import (
    OPEN_SSE,
    SSE,
    Step,
    apart,
    call,
    failed,
    hang_up,
    reply,
    run,
    send_of,
    settled,
    until,
    wire,
)


@pytest.fixture(autouse=True)
def _collected() -> Iterator[None]:
    """What a test leaves unclosed warns in that test (an error), not in a later one."""
    yield
    gc.collect()


# --------------------------------------------------------------------------- bodies


@pytest.mark.parametrize(("framing", "connections"), [("chunked", 1), ("length", 1), ("close", 2)])
def test_each_framing_of_the_body(framing: str, connections: int) -> None:
    """Chunked and Content-Length bodies end where their framing says and keep the
    connection; a body without framing ends with the connection (RFC 9112 §6.3)."""
    answer = [reply(OPEN_SSE, framing=framing)] + ([hang_up] if framing == "close" else [])

    async def main(port: int) -> list[mw.AssistantMessage]:
        first = await call(port)
        await settled()
        return [first, await call(port)]

    with wire(answer) as server:
        messages = asyncio.run(main(server.port))
        assert [(m.text, m.stop_reason) for m in messages] == [(TEXT, "stop")] * 2
        assert len(server.connections) == connections
        assert server.wait_closed()


@pytest.mark.parametrize("framing", ["chunked", "length"])
def test_a_body_cut_short_of_its_framing_is_interrupted(framing: str) -> None:
    """The connection closing before the framing's end is a cut, never a success."""
    full = reply(framing=framing)
    cut = full[: full.index(b'rld "')]  # inside the JSON of the "rld " delta
    with wire([cut, hang_up]) as server:
        message = run(server.port)
    assert "closed before the response body was complete" in failed(message, "stream_interrupted")
    assert message.text == "Hello wö"


def _raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


@pytest.mark.parametrize(
    ("coding", "encode"),
    [("gzip", gzip.compress), ("deflate", zlib.compress), ("deflate", _raw_deflate)],
    ids=["gzip", "deflate-zlib", "deflate-raw"],
)
def test_a_compressed_body_decodes_to_the_same_events(
    coding: str, encode: Callable[[bytes], bytes]
) -> None:
    """The codings it asks for are undone, in pieces (the cut lands inside the
    compressed stream); ``deflate`` as RFC 9110 §8.4.1.2 says (zlib) or raw."""
    body = encode(SSE)
    full = reply(body, f"Content-Encoding: {coding}", framing="length")
    cut = len(full) - len(body) // 2
    with wire([full[:cut], apart, full[cut:]]) as server:
        message = run(server.port)
    assert (message.text, message.error) == (TEXT, None)


DECODES = "does not decode as its content-encoding says"


@pytest.mark.parametrize(
    ("headers", "body", "says", "text"),
    [
        (["Content-Encoding: gzip"], gzip.compress(SSE)[:10] + b"this is not deflate data",
         DECODES, ""),
        # Every event decoded, the end of the compressed stream cut: its check never made.
        (["Content-Encoding: gzip"], gzip.compress(OPEN_SSE)[:-4], DECODES, TEXT),
        (["Content-Encoding: deflate"], zlib.compress(OPEN_SSE)[:-2], DECODES, TEXT),
        (["Content-Encoding: br"], SSE, "content-encoding 'br' was not asked for", ""),
    ],
    ids=["corrupt-gzip", "cut-gzip", "cut-deflate", "br"],
)  # fmt: skip
def test_a_body_that_does_not_decode_is_a_typed_error(
    headers: list[str], body: bytes, says: str, text: str
) -> None:
    with wire([reply(body, *headers, framing="length")]) as server:
        message = run(server.port)
        assert server.wait_closed()  # the connection is not kept for another request
    assert says in failed(message, "stream_interrupted")
    assert message.text == text


def test_an_interim_103_is_skipped_and_repeated_headers_are_joined() -> None:
    """``103 Early Hints`` (RFC 8297) comes before the answer and is not it; a header
    sent twice reads as one, its values joined with ", " (RFC 9110 §5.3)."""
    early = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
    answer: list[Step] = [early, apart, reply(SSE, "X-Dup: a", "X-Dup: b", framing="length")]

    async def head(port: int) -> Head | Failure:
        t = hh.HttptoolsTransport(None, http.ssl_context)
        got = await t.send(send_of(f"http://127.0.0.1:{port}/v1/chat/completions"))
        await t.close()
        return got

    with wire(answer) as server:
        got = asyncio.run(head(server.port))
        assert isinstance(got, Head) and got.status == 200
        assert got.headers["x-dup"] == "a, b" and "link" not in got.headers
        message = run(server.port)
        assert (message.text, message.error) == (TEXT, None)


# --------------------------------------------------------------------------- flow control


def test_a_large_body_read_slowly_pauses_the_socket_and_arrives_intact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """2 MB written at once, the reader taking nothing until reading stops: the socket
    pauses at HIGH_WATER (TCP holds the server back), resumes on each take, and the
    body arrives whole, byte for byte."""
    body = random.Random(7).randbytes(2 * 1024 * 1024)  # no period to hide a misplaced piece
    seen: list[tuple[str, int]] = []
    made = _wire.Connection.connection_made

    def spying(self: _wire.Connection, transport: Any) -> None:
        made(self, transport)
        for name in ("pause_reading", "resume_reading"):
            real = getattr(transport, name)

            def spy(real: Callable[[], None] = real, name: str = name) -> None:
                seen.append((name, self.buffered))
                real()

            setattr(transport, name, spy)

    monkeypatch.setattr(_wire.Connection, "connection_made", spying)

    async def main(port: int) -> bytes:
        pool = hh.Pool()
        t = hh.HttptoolsTransport(pool, http.ssl_context)
        assert isinstance(await t.send(send_of(f"http://127.0.0.1:{port}/")), Head)
        conn = t._conn
        assert conn is not None
        got = bytearray()
        async with asyncio.timeout(10):
            while True:
                await until(lambda: conn.paused or conn.complete)  # a slow reader
                piece = await t.read(Read(None))
                if piece is None:
                    break
                assert isinstance(piece, bytes)
                got += piece
        await t.close()
        await pool.aclose()
        return bytes(got)

    with wire([reply(body, framing="length")]) as server:
        assert asyncio.run(main(server.port)) == body
    pauses = [n for name, n in seen if name == "pause_reading"]
    assert pauses and all(_wire.HIGH_WATER < n <= _wire.HIGH_WATER + 256 * 1024 for n in pauses)
    assert [name for name, _ in seen] == ["pause_reading", "resume_reading"] * len(pauses)
