"""One scripted HTTP response of :class:`~modelwire.testing.MockServer`: what it sends
and the faults it sends it with."""

from __future__ import annotations

import random
from typing import Any

import msgspec

__all__ = ["Reply"]


class Reply(msgspec.Struct, kw_only=True):
    """One scripted HTTP response.

    ``body`` is sent as a chunked body split by ``chunk_size`` (bytes per piece;
    ``1`` = every byte), or at ``split_points``, or randomly with ``seed``;
    ``delay`` seconds pass between pieces. ``cut_after`` closes the connection
    after that many body bytes without finishing the chunked body;
    ``stall_after`` stops sending (keeping the connection open) after that
    many bytes, for idle timeouts, for ``stall_seconds``.

    ``message`` instead of ``body``: a script (text, ``ToolCall``, blocks or an
    ``AssistantMessage``) rendered for the API of the request path when the
    request arrives, ``piece_chars`` characters per delta. Without an explicit
    split it is sent one SSE event per chunk, as a provider flushes them.

    ``error`` instead of either: an HTTP error (``status``) with this message, in
    the body and headers the request path's API sends errors with
    (:func:`error_reply`); ``error_type`` is the provider's own error type.
    """

    body: bytes = b""
    message: Any = None
    error: str | None = None
    error_type: str | None = None
    piece_chars: int = 8
    status: int = 200
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    content_type: str = "text/event-stream"
    """The response's media type; left at this default, the reply gets the media
    type of the request path's API (``application/x-ndjson`` for NDJSON APIs)."""
    chunk_size: int | None = None
    split_points: tuple[int, ...] | None = None
    seed: int | None = None
    delay: float = 0.0
    cut_after: int | None = None
    stall_after: int | None = None
    stall_seconds: float = 30.0

    def pieces(self) -> list[bytes]:
        body = self.body
        if self.split_points is not None:
            points = sorted({p for p in self.split_points if 0 < p < len(body)})
        elif self.chunk_size is not None:
            points = list(range(self.chunk_size, len(body), self.chunk_size))
        elif self.seed is not None:
            rng = random.Random(self.seed)
            k = rng.randint(0, min(len(body), 64))
            points = sorted(rng.sample(range(1, len(body)), k)) if len(body) > 1 else []
        else:
            points = []
        out, prev = [], 0
        for p in [*points, len(body)]:
            if p > prev:
                out.append(body[prev:p])
            prev = p
        return out
