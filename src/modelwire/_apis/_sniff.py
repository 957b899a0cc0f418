"""Which wire API a stream payload looks like: diagnostics for a stream decoded
with the wrong ``api`` (a Gemini body replayed as ``openai-chat``…).

Each decoder ignores unknown fields and event types (forward compatibility), so a
foreign payload often decodes to nothing and the stream would end as merely
"truncated". Until a decoder has recognised its first payload, the pipeline asks
:func:`wrong_api_error` whether the payload is another API's; if so the stream
ends with a ``malformed_chunk`` that names the field this API needed and the API
the payload looks like. After that first payload nothing here runs.

The tells, from each API's stream reference: Chat Completions chunks carry
``choices`` (``object: "chat.completion.chunk"``); Responses events a ``type``
starting with ``response.``; Anthropic events a ``type`` among ``message_start``,
``content_block_*``, ``message_delta``, ``message_stop``, ``ping``; Gemini
``GenerateContentResponse`` chunks ``candidates``, ``usageMetadata`` or
``promptFeedback`` and no ``type``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..errors import MalformedChunkError

__all__ = ["looks_like", "wrong_api_error"]

_ANTHROPIC_EVENTS = frozenset({"message_start", "content_block_start", "content_block_delta",
                               "content_block_stop", "message_delta", "message_stop",
                               "ping"})  # fmt: skip
_GEMINI_KEYS = ("candidates", "usageMetadata", "promptFeedback")
_BUILTIN = ("openai-chat", "openai-responses", "anthropic-messages", "google-generative-ai")


def _classify(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return None
    t = obj.get("type")
    if isinstance(t, str):
        if t.startswith("response."):
            return "openai-responses"
        if t in _ANTHROPIC_EVENTS:
            return "anthropic-messages"
        return None  # "error" and unknown types: Anthropic and Responses share them
    if "choices" in obj or obj.get("object") == "chat.completion.chunk":
        return "openai-chat"
    if any(k in obj for k in _GEMINI_KEYS):
        return "google-generative-ai"
    return None


def looks_like(data: str) -> str | None:
    """The built-in API whose stream payload ``data`` resembles (``None``: unsure)."""
    try:
        return _classify(msgspec.json.decode(data))
    except msgspec.DecodeError:
        return None


def _needed(api: str, obj: dict[str, Any]) -> str:
    """What ``api`` needed from this payload, as a field path."""
    if api == "openai-chat":
        return "choices is missing"
    if api == "google-generative-ai":
        return "candidates is missing"
    t = obj.get("type")
    if not isinstance(t, str):
        return "type is missing"
    kind = "a Responses" if api == "openai-responses" else "an Anthropic Messages"
    return f"type {t!r} is not {kind} stream event"


def wrong_api_error(api: str, data: str, cause: str | None = None) -> MalformedChunkError | None:
    """A ``malformed_chunk`` saying ``data`` belongs to another API, or ``None``
    when it does not clearly look like one (``cause``: the decoder's own message)."""
    if api not in _BUILTIN:
        return None  # a registered custom API: no opinion
    try:
        obj = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return None
    guess = _classify(obj)
    if guess is None or guess == api:
        return None
    keys = ", ".join(list(obj)[:4])
    if cause and cause.startswith("malformed "):
        cause = cause.split(": ", 1)[-1]
    detail = f" ({cause})" if cause and "missing required field" not in cause else ""
    return MalformedChunkError(
        f"malformed chunk: {_needed(api, obj)}{detail}; the payload (fields {keys}) looks like "
        f"{guess} output, not {api}: decode it with api={guess!r} "
        f"(mw.replay({guess!r}, …) or a Model with that api)"
    )
