"""Chat Completions lines of an OpenAI Batch job (:mod:`modelwire._apis._openai_batch`).

A batched line is answered by a whole ``chat.completion`` object (API reference, "The
chat completion object"). :func:`as_stream` gives it as the one chunk a stream would
have carried — the message's fields as the ``delta``, each tool call with its
``index`` —, then ``[DONE]``, so the live decoder and assembler read it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...errors import MalformedChunkError
from .._openai_batch import OpenAIBatch
from .spec import CHUNK_OBJECT, DONE

__all__ = ["BATCHING", "as_stream"]


def as_stream(body: bytes) -> bytes:
    """A ``chat.completion`` body as its Chat Completions stream."""
    try:
        whole: Any = msgspec.json.decode(body)
        choices = whole["choices"]
    except (msgspec.DecodeError, KeyError, TypeError) as exc:
        raise MalformedChunkError(f"a batched chat.completion has no choices ({exc!r})") from None
    out = []
    for choice in choices if isinstance(choices, list) else ():
        if not isinstance(choice, dict):
            continue
        delta = dict(choice.get("message") or {})
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            delta["tool_calls"] = [{**c, "index": i} if isinstance(c, dict) else c
                                   for i, c in enumerate(calls)]  # fmt: skip
        out.append({"index": choice.get("index", 0), "delta": delta,
                    "finish_reason": choice.get("finish_reason")})  # fmt: skip
    chunk = {**{k: v for k, v in whole.items() if k not in ("choices", "object")},
             "object": CHUNK_OBJECT, "choices": out}  # fmt: skip
    return b"data: " + msgspec.json.encode(chunk) + b"\n\ndata: " + DONE.encode() + b"\n\n"


BATCHING = OpenAIBatch("/chat/completions", as_stream)
