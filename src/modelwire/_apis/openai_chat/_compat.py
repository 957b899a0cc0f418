"""How one OpenAI-compatible server departs from OpenAI's own Chat Completions."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

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


def detect_compat(model: Model) -> ChatCompat:
    """Defaults for the model's provider and base URL, then ``model.compat`` overrides."""
    url = model.base_url.lower()
    provider = model.provider.lower()
    base: dict[str, Any] = {}
    if provider == "openai" or "api.openai.com" in url:
        base["max_tokens_field"] = "max_completion_tokens"
        if model.reasoning:
            base["system_role"] = "developer"
    elif provider == "deepseek" or "deepseek.com" in url:
        base["thinking_replay"] = "reasoning_content"
        base["reasoning_style"] = "none"
    elif provider == "openrouter" or "openrouter.ai" in url:
        base["reasoning_style"] = "openrouter"
    elif provider in ("qwen", "dashscope") or "dashscope" in url:
        base["reasoning_style"] = "enable_thinking"
    elif provider == "zai" or "z.ai" in url or "bigmodel.cn" in url:
        base["reasoning_style"] = "zai"
        base["thinking_replay"] = "reasoning_content"
    elif provider == "snowflake" or "snowflakecomputing" in url:
        # Snowflake Cortex ends with [DONE] but never sends finish_reason.
        base["infer_finish_reason"] = True
    elif provider == "mistral" or "mistral.ai" in url:
        base["reasoning_style"] = "none"
        base["stream_options"] = False
    elif provider == "groq" or "groq.com" in url:
        base["reasoning_effort_map"] = {"minimal": "low", "xhigh": "high"}
    elif provider == "xai" or "x.ai" in url:
        base["reasoning_effort_map"] = {"minimal": "low", "medium": "low", "xhigh": "high"}
    return merge_compat("openai-chat", ChatCompat, model.compat, base)
