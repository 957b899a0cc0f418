"""How one OpenAI-compatible server departs from OpenAI's own Chat Completions."""

from __future__ import annotations

from typing import Literal

import msgspec

from ..._catalog._records import compat_defaults, derived
from ...types import Model
from .._common import merge_compat

__all__ = ["ChatCompat", "detect_compat"]


# --------------------------------------------------------------------------- compat


class ChatCompat(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How one server departs from OpenAI's own Chat Completions."""

    system_role: Literal["system", "developer"] = "system"
    """Role of the system prompt message (OpenAI reasoning models want ``developer``)."""
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    """Body field for the output limit."""
    stream_options: bool = True
    """Send ``stream_options: {"include_usage": true}`` (usage arrives in a last chunk)."""
    store: bool | None = None
    """Send ``store`` with this value (``None``: omit)."""
    reasoning_style: Literal["reasoning_effort", "openrouter", "enable_thinking", "zai", "none"] = (
        "reasoning_effort"
    )
    """How a reasoning level is sent: ``reasoning_effort: "low"``; OpenRouter's
    ``reasoning: {effort}``; Qwen's ``enable_thinking``; Z.ai's ``thinking: {type}``."""
    reasoning_effort_map: dict[str, str] | None = None
    """Rename levels for servers with fewer (e.g. ``{"xhigh": "high"}``)."""
    thinking_replay: Literal["drop", "text", "reasoning_content"] = "drop"
    """How assistant thinking in history is sent back: dropped, as text, or in a
    ``reasoning_content`` field (DeepSeek needs it for tool-call turns)."""
    tool_result_name: bool = True
    """Send ``name`` on tool messages (some servers reject it)."""
    empty_tools: bool = False
    """Send ``tools: []`` when no tools are declared (some servers need the key)."""
    infer_finish_reason: bool = False
    """Accept a stream that ends with ``[DONE]`` but no ``finish_reason`` (servers
    known to omit it); otherwise that is ``truncated_stream``."""
    leaked_tool_calls: bool = False
    """Turn tool calls the server leaked into the text (``<tool_call>{…}</tool_call>``,
    Mistral ``[TOOL_CALLS]``) into tool calls: only a complete block that names a
    declared tool with a JSON object as arguments; anything else stays text
    (``modelwire._apis._leaked``). Text from a marker on is shown when the response ends."""


def detect_compat(model: Model) -> ChatCompat:
    """The provider record's defaults (``compat["openai-chat"]`` of the record that
    matches the model's provider or base URL, :mod:`modelwire._catalog._records`),
    then ``model.compat`` overrides."""

    def build() -> ChatCompat:
        defaults = compat_defaults(model, "openai-chat")
        return merge_compat("openai-chat", ChatCompat, model.compat, defaults)

    if model.compat:
        return build()
    # Without overrides the flags follow from the record alone (a frozen value,
    # shared): what picks the record and what the record applies (reasoning).
    return derived(("openai-chat", model.provider, model.base_url, model.reasoning), build)
