"""The peers: other Python libraries' path from a response body's bytes to accumulated output.

Each peer is a function ``chunks -> result`` that runs the library's own streaming code
on the same byte pieces modelwire gets, as the library does it after its HTTP client has
handed over the body (HTTP itself is measured separately, in the concurrency section):

* **OpenAI SDK**: ``openai._streaming.SSEDecoder.iter_bytes`` → ``sse.json()`` →
  ``construct_type(ChatCompletionChunk)`` (what ``Stream.__stream__`` does without strict
  validation) → ``ChatCompletionStreamState.handle_chunk`` (what
  ``client.chat.completions.stream()`` runs) → ``get_final_completion()``.
* **Anthropic SDK**: ``anthropic._streaming.SSEDecoder.iter_bytes`` (``ping`` skipped as
  ``Stream.__stream__`` does) → ``construct_type(RawMessageStreamEvent)`` →
  ``accumulate_event`` + ``build_events`` (what ``MessageStream.__stream__`` runs).
* **httpx-sse + json**: httpx's incremental UTF-8 text decoding (``codecs``, as
  ``Response.iter_text``), ``SSELineDecoder`` and ``SSEDecoder`` from httpx-sse, then
  ``json.loads`` of each payload. No accumulation, no validation: a lower bound for
  anyone who builds on httpx-sse.
* **LiteLLM**: LiteLLM receives chunks from the OpenAI SDK, turns each into a
  ``ModelResponseStream`` and builds the final response with ``stream_chunk_builder``.
  Measured here: the OpenAI SDK decoder + ``json.loads`` + ``ModelResponseStream(**chunk)``
  per chunk + ``stream_chunk_builder`` at the end (the ``CustomStreamWrapper`` bookkeeping
  around it, which needs a live call, is left out, so LiteLLM is measured favourably).

A peer whose package is missing is reported as unavailable, never faked.
"""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["PEERS", "available", "version", "version_of"]

Peer = Callable[[list[bytes]], Any]

# LiteLLM fetches a price list from the network at import unless told not to; the
# benchmark never leaves the machine.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def openai_sdk_chat() -> Peer:
    from openai._models import construct_type
    from openai._streaming import SSEDecoder
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    def run(chunks: list[bytes]) -> Any:
        state: Any = ChatCompletionStreamState()
        for sse in SSEDecoder().iter_bytes(iter(chunks)):
            if sse.data.startswith("[DONE]"):
                break
            chunk: Any = construct_type(type_=ChatCompletionChunk, value=sse.json())
            # ChatCompletionStream skips chunks whose object is not a chunk (Azure filters).
            if chunk.object != "chat.completion.chunk":
                continue
            for _event in state.handle_chunk(chunk):
                pass
        return state.get_final_completion()

    return run


def anthropic_sdk() -> Peer:
    from anthropic._models import construct_type
    from anthropic._streaming import SSEDecoder
    from anthropic.lib.streaming._messages import accumulate_event, build_events
    from anthropic.types import RawMessageStreamEvent

    def run(chunks: list[bytes]) -> Any:
        snapshot: Any = None
        json_bufs: dict[int, bytes] = {}
        for sse in SSEDecoder().iter_bytes(iter(chunks)):
            if sse.event == "ping" or sse.event is None or not sse.data:
                continue
            event: Any = construct_type(type_=RawMessageStreamEvent, value=sse.json())
            snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=json_bufs)
            for _event in build_events(event=event, message_snapshot=snapshot):
                pass
        return snapshot

    return run


def httpx_sse_json() -> Peer:
    from httpx_sse._decoders import SSEDecoder, SSELineDecoder

    def run(chunks: list[bytes]) -> Any:
        text = codecs.getincrementaldecoder("utf-8")()
        lines = SSELineDecoder()
        sse_decoder = SSEDecoder()
        payloads: list[Any] = []
        for chunk in chunks:
            for line in lines.decode(text.decode(chunk)):
                sse = sse_decoder.decode(line.rstrip("\n"))
                if sse is not None and sse.data != "[DONE]":
                    payloads.append(json.loads(sse.data))
        return payloads

    return run


def litellm_chat() -> Peer:
    from litellm import stream_chunk_builder
    from litellm.types.utils import ModelResponseStream
    from openai._streaming import SSEDecoder

    def run(chunks: list[bytes]) -> Any:
        out: list[Any] = []
        for sse in SSEDecoder().iter_bytes(iter(chunks)):
            if sse.data.startswith("[DONE]"):
                break
            out.append(ModelResponseStream(**json.loads(sse.data)))
        return stream_chunk_builder(out)

    return run


PEERS: dict[str, Callable[[], Peer]] = {
    "OpenAI SDK": openai_sdk_chat,
    "Anthropic SDK": anthropic_sdk,
    "httpx-sse + json": httpx_sse_json,
    "LiteLLM": litellm_chat,
}

_PACKAGES = {
    "OpenAI SDK": "openai",
    "Anthropic SDK": "anthropic",
    "httpx-sse + json": "httpx-sse",
    "LiteLLM": "litellm",
}


def available(names: Iterable[str]) -> dict[str, Peer | str]:
    """Each peer's runner, or why it is unavailable (a string)."""
    out: dict[str, Peer | str] = {}
    for name in names:
        try:
            out[name] = PEERS[name]()
        except ImportError as exc:
            out[name] = f"not installed ({exc.name})"
    return out


def version(name: str) -> str:
    """The installed version of a peer's package."""
    return version_of(_PACKAGES[name])


def version_of(package: str) -> str:
    """The installed version of ``package``, or ``-``."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as _version

    try:
        return _version(package)
    except PackageNotFoundError:
        return "-"
