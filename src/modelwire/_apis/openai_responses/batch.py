"""Responses lines of an OpenAI Batch job (:mod:`modelwire._apis._openai_batch`).

A batched line is answered by a whole ``response`` object (API reference, "The response
object"). :func:`as_stream` gives it as the stream's two ends — ``response.created``,
then the terminal event its ``status`` names, carrying the whole response — and the
live decoder fills every output item in from it, as it does for items a stream
never announced.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...errors import MalformedChunkError
from .._openai_batch import OpenAIBatch

__all__ = ["BATCHING", "as_stream"]

_TERMINAL = {"completed": "response.completed", "incomplete": "response.incomplete",
             "failed": "response.failed"}  # fmt: skip


def _event(kind: str, seq: int, response: Any) -> bytes:
    data = msgspec.json.encode({"type": kind, "sequence_number": seq, "response": response})
    return b"event: " + kind.encode() + b"\ndata: " + data + b"\n\n"


def as_stream(body: bytes) -> bytes:
    """A ``response`` body as its Responses stream."""
    try:
        whole: Any = msgspec.json.decode(body)
        status = whole.get("status") or "completed"
    except (msgspec.DecodeError, AttributeError) as exc:
        raise MalformedChunkError(f"a batched response is not an object ({exc!r})") from None
    start = {**whole, "status": "in_progress", "output": []}
    return _event("response.created", 0, start) + _event(
        _TERMINAL.get(status, "response.completed"), 1, whole
    )


BATCHING = OpenAIBatch("/responses", as_stream)
