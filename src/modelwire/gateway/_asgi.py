"""The ASGI messages the gateway exchanges with its server: reading a request body
within its limit, answering, and noticing that the client left.

Reference: the ASGI HTTP connection scope and its ``http.request``,
``http.disconnect``, ``http.response.start`` and ``http.response.body`` messages
(https://asgi.readthedocs.io/en/latest/specs/www.html).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any

from .._apis._server.request import RequestError
from ._observe import Exchange

__all__ = [
    "DRAIN_BYTES",
    "JSON",
    "MAX_FIELD_LINE",
    "MAX_HEAD",
    "SSE",
    "MethodError",
    "Receive",
    "Scope",
    "Send",
    "head_error",
    "plain_error",
    "read_body",
    "respond",
    "utf8_error",
    "watch_disconnect",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: The longest header field line (name and value) and request head (request line and
#: every field line) the gateway reads; past them: 431 (RFC 6585 §5), a request
#: line past MAX_HEAD: 414 (RFC 9112 §3: a server "MUST" bound what it parses; 8000
#: octets is the least it should take). An SDK's head is well under 2 KiB.
MAX_FIELD_LINE = 16 * 1024
MAX_HEAD = 64 * 1024
#: Bytes of a request body the server reads and discards after it answered early
#: (a 401 before the body, a 413): past them it closes the connection. A client
#: reads its answer only once it has sent its body, so closing at once would reset
#: the connection under it (RFC 9112 §9.6); reading on for ever would let a client
#: without a key stream into the gateway for ever.
DRAIN_BYTES = 1024 * 1024

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


def head_error(headers: Iterable[tuple[bytes, bytes]]) -> RequestError | None:
    """A 431 when a header field line or all of them are past the limits — for an
    ASGI server that does not bound them itself (``serve`` does, before the app)."""
    total = 0
    for name, value in headers:
        size = len(name) + len(value) + 4  # "name: value\r\n"
        if size > MAX_FIELD_LINE:
            return RequestError(
                f"the request's {name.decode('latin-1')!r} header is longer than the "
                f"gateway's limit of {MAX_FIELD_LINE} bytes", status=431,
            )  # fmt: skip
        total += size
    if total > MAX_HEAD:
        return RequestError(
            f"the request's headers are longer than the gateway's limit of {MAX_HEAD} bytes",
            status=431,
        )  # fmt: skip
    return None


# A JSON token (a string, terminated or not, or a structural character) for the path.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"?|[][{},:]', re.S)


def utf8_error(body: bytes) -> RequestError | None:
    """A 400 naming the field whose text holds the body's first byte that is not UTF-8
    (RFC 8259 §8.1: JSON exchanged between systems is UTF-8), for any front-end:
    such a string has no text to translate or forward (msgspec refuses it too, but
    only where a field is decoded, not where a front-end keeps its raw JSON)."""
    if body.isascii():
        return None
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = exc.start
    else:
        return None
    path, name = _json_path(body, at)
    if path.startswith("["):
        path = ""  # not an object: no field to name (the front-end would refuse it)
    if name:
        where = path or "the request body"
        return RequestError(f"a field name in {where} is not valid UTF-8 text", param=path or None)
    what = path or "the request body"
    return RequestError(f"{what} is not valid UTF-8 text", param=path or None)


def _json_path(body: bytes, at: int) -> tuple[str, bool]:
    """The field path (``messages[0].content``) of byte ``at`` of a JSON text, and
    whether it lies in a field name. Only the bytes before ``at`` are read (valid
    UTF-8); a text that is no JSON gives the path as far as it goes."""
    # Each open container: [is_object, key or index, expecting a key].
    stack: list[list[Any]] = []
    for m in _TOKEN.finditer(body, 0, at):
        tok = m.group()
        top = stack[-1] if stack else None
        if tok[:1] == b'"':
            if top is not None and top[0] and top[2]:
                if m.end() == at and (len(tok) == 1 or not _closed(tok)):
                    return _path(stack, in_key=True), True
                top[1] = _key(tok)
            continue
        if tok == b"{":
            stack.append([True, None, True])
        elif tok == b"[":
            stack.append([False, 0, False])
        elif tok in (b"}", b"]"):
            if stack:
                stack.pop()
        elif tok == b"," and top is not None:
            if top[0]:
                top[2] = True
            else:
                top[1] += 1
        elif tok == b":" and top is not None:
            top[2] = False
    return _path(stack, in_key=False), False


def _closed(tok: bytes) -> bool:
    # A string token ends with a quote no backslash escapes (an even run of them).
    if not tok.endswith(b'"'):
        return False
    run = len(tok) - 1 - len(tok[:-1].rstrip(b"\\"))
    return run % 2 == 0


def _key(tok: bytes) -> str:
    try:
        value = json.loads(tok)
    except ValueError:
        return tok.strip(b'"').decode("utf-8", "replace")
    return value if isinstance(value, str) else ""


def _path(stack: list[list[Any]], *, in_key: bool) -> str:
    out = ""
    for i, (is_object, key, _) in enumerate(stack):
        if in_key and i == len(stack) - 1:
            break
        if is_object:
            if key is None:
                break
            out = f"{out}.{key}" if out else str(key)
        else:
            out += f"[{key}]"
    return out


async def watch_disconnect(receive: Receive, s: Any, state: dict[str, bool]) -> None:
    # After the body, receive() returns only when the client goes (ASGI http.disconnect).
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            if not state["done"]:
                state["gone"] = True
                s.abort()  # ends the stream as aborted and closes the backend connection
            return


class MethodError(RequestError):
    """405: the path takes another method (``allow`` names it)."""

    def __init__(self, message: str, allow: str) -> None:
        super().__init__(message, status=405)
        self.allow = allow
