"""The ASGI messages the gateway exchanges with its server: reading a request body
within its limit, answering, and noticing that the client left.

Reference: the ASGI HTTP connection scope and its ``http.request``,
``http.disconnect``, ``http.response.start`` and ``http.response.body`` messages
(https://asgi.readthedocs.io/en/latest/specs/www.html).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from .._apis._server.request import RequestError
from ._observe import Exchange

__all__ = [
    "JSON",
    "SSE",
    "Receive",
    "Scope",
    "Send",
    "plain_error",
    "read_body",
    "respond",
    "watch_disconnect",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

JSON = [(b"content-type", b"application/json")]
SSE = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache"),
        (b"x-accel-buffering", b"no")]  # fmt: skip


async def respond(
    send: Send, ex: Exchange, status: int, headers: list[tuple[bytes, bytes]], body: bytes
) -> None:
    ex.status = status
    await send({"type": "http.response.start", "status": status,
                "headers": [*headers, (b"content-length", str(len(body)).encode())]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})


async def plain_error(send: Send, ex: Exchange, status: int, kind: str, message: str) -> None:
    body = json.dumps({"error": {"message": message, "type": kind, "param": None, "code": None}})
    await respond(send, ex, status, JSON, body.encode())


async def read_body(receive: Receive, headers: Mapping[str, str], limit: int) -> bytes:
    length = headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise _too_big(limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise RequestError("the client closed the connection", status=499)
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _too_big(limit)
        if not message.get("more_body", False):
            if not chunks:
                return chunk  # the whole body in one message, as servers mostly send it
            chunks.append(chunk)
            return b"".join(chunks)
        chunks.append(chunk)


def _too_big(limit: int) -> RequestError:
    return RequestError(
        f"the request body is larger than the gateway's limit of {limit} bytes "
        "(gateway.max_body_bytes)", status=413,
    )  # fmt: skip


async def watch_disconnect(receive: Receive, s: Any, state: dict[str, bool]) -> None:
    # After the body, receive() returns only when the client goes (ASGI http.disconnect).
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            if not state["done"]:
                state["gone"] = True
                s.abort()  # ends the stream as aborted and closes the backend connection
            return
