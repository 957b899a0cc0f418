"""How :class:`~modelwire.testing.MockServer` answers an embedding request
(``POST /v1/embeddings``, ``/api/embed``, ``:batchEmbedContents``…; each API's
``WireServer.embed_paths``).

With no scripted reply left it answers at once, with the API's body and
deterministic vectors (:func:`~modelwire.testing.mock_vector`: the same text always
gives the same vector; ``dimensions`` honoured). A queued reply is used first, as a
chat request uses it: an :func:`~modelwire.testing.error_reply` is the API's HTTP
error, raw ``bytes`` are sent as they are, and any other :class:`Reply` (its
``message`` ignored) sends the computed body with its faults — ``status``,
``headers``, ``cut_after``, ``stall_after``, ``chunk_size``, ``delay``. A request the
API would refuse (no texts, a bad ``dimensions``) is answered 400 and uses no reply.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

import msgspec

from .._apis import find_server
from .._apis._server.embed import BadEmbedRequest
from .._apis._server.reply import compact_json
from ._reply import Reply

__all__ = ["embed_reply"]

_SSE = "text/event-stream"  # Reply's default media type


class _Server(Protocol):
    """What of the mock server an embedding reply uses."""

    _lock: threading.Lock
    _replies: list[Any]
    requests: list[Any]
    repeat_last: bool

    def _resolve(self, rec: Any, item: Any) -> Reply: ...


def _next(server: _Server, rec: Any) -> Any:
    """The next queued reply (``None``: none left, the computed answer is sent)."""
    with server._lock:
        server.requests.append(rec)
        if not server._replies:
            return None
        if len(server._replies) == 1 and server.repeat_last:
            return server._replies[0]
        return server._replies.pop(0)


def embed_reply(server: _Server, rec: Any, api: str) -> Reply:
    """The reply to embedding request ``rec`` (a ``RecordedRequest``) of wire API ``api``."""
    mock = find_server(api)
    assert mock is not None and mock.render_embeddings is not None  # routed only then
    try:
        answer = mock.render_embeddings(rec.path, rec._body())
    except BadEmbedRequest as exc:  # recorded; like a 404, it uses no reply
        with server._lock:
            server.requests.append(rec)
        error = mock.error_body(400, str(exc), None)
        return Reply(status=400, body=compact_json(error.body).encode(),
                     headers=dict(error.headers), content_type="application/json")  # fmt: skip
    item = _next(server, rec)
    if callable(item):  # a responder decides now
        item = item(rec)
    if isinstance(item, bytes | bytearray):
        item = Reply(body=bytes(item))
    if isinstance(item, Reply) and item.error is not None:
        return server._resolve(rec, item)  # the API's error shape
    if isinstance(item, Reply) and item.body:  # raw bytes, as JSON unless told otherwise
        if item.content_type == _SSE:
            return msgspec.structs.replace(item, content_type="application/json")
        return item
    plain = item if isinstance(item, Reply) else Reply()  # a script: the computed body
    return msgspec.structs.replace(
        plain, body=msgspec.json.encode(answer), message=None, content_type="application/json"
    )
