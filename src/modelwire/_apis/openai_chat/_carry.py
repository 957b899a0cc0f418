"""Thinking origins carried through a Chat Completions client, sealed.

Chat Completions has no field for a thinking signature. A turn that came from a
backend of another API (an Anthropic thinking signature, a Responses reasoning
item, a Gemini thought signature) carries each thinking block's origin sealed
(:func:`modelwire._apis._server.origin.seal`) in a ``reasoning_details`` entry — the
field OpenRouter defined for reasoning a client must send back unchanged
(https://openrouter.ai/docs/use-cases/reasoning-tokens, "Preserving reasoning
blocks") — of type ``reasoning.encrypted`` with ``format`` :data:`FORMAT`, so no
reader counts its ``text`` twice (modelwire's decoder and OpenRouter clients read
``reasoning.text`` entries as thinking; the text itself streams in
``reasoning_content``). The same entries ride on the next tool call's
``extra_content`` (the vendor extension Gemini's compatible API uses for thought
signatures, which clients such as pydantic-ai send back on tool calls), with a
tool call's own sealed signature; a client that keeps either form round-trips them.
"""

from __future__ import annotations

from typing import Any

from ...types import AssistantMessage, ThinkingContent, ToolCall
from .._server.origin import Origin, seal

__all__ = ["API", "FORMAT", "call_extra", "needs_seal", "thinking_entry"]

API = "openai-chat"
#: ``reasoning_details[].format`` of an entry the gateway sealed.
FORMAT = "modelwire-gateway-v1"


def needs_seal(api: str) -> bool:
    """A message of another API carries its origins sealed; one of this API passes
    its own fields unchanged (its thinking signature is the field name it came in)."""
    return api != API


def _origin(message: AssistantMessage, signature: str | None, redacted: bool = False) -> str:
    return seal(Origin(message.api, message.provider, message.model, signature, redacted))


def thinking_entry(message: AssistantMessage, block: ThinkingContent, index: int) -> dict[str, Any]:
    """The ``reasoning_details`` entry of one thinking block of ``message``."""
    return {
        "type": "reasoning.encrypted",
        "data": _origin(message, block.signature, block.redacted),
        "text": block.thinking,
        "format": FORMAT,
        "index": index,
    }


def call_extra(
    message: AssistantMessage, call: ToolCall, entries: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """``extra_content`` of a tool call: the thinking entries since the previous call
    and the call's own sealed signature; ``None`` when there is neither."""
    carried: dict[str, Any] = {}
    if entries:
        carried["reasoning_details"] = entries
    if call.signature is not None:
        carried["signature"] = _origin(message, call.signature)
    return {"modelwire": carried} if carried else None
