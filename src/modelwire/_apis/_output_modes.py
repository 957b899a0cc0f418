"""Which structured-output mode a model gets by default, and which it cannot use.

A capability of the wire APIs and the catalog's models: the APIs with a native
field (each adds it in its ``_output.py``), the models and servers known to lack
it (then a forced tool call, the documented fallback), and the API that cannot
force a tool at all. Read by :mod:`modelwire._client._output._plan`.
"""

from __future__ import annotations

from ..types import Model
from . import builtin_api_names

__all__ = ["NATIVE_OUTPUT_APIS", "mode_problem", "native_output", "output_mode"]

#: Wire APIs with a native structured-output field (``modelwire._client._output``); Bedrock
#: Converse has none (its documented way is a forced tool).
NATIVE_OUTPUT_APIS: frozenset[str] = frozenset(
    {"openai-chat", "openai-responses", "anthropic-messages", "google-generative-ai",
     "ollama-chat"}
)  # fmt: skip
# Chat Completions servers documented to accept only ``json_object``, not
# ``json_schema`` (DeepSeek, DashScope, Moonshot and Z.ai JSON-mode docs).
_CHAT_JSON_OBJECT_ONLY = frozenset({"deepseek", "qwen", "moonshot", "zai"})
# Anthropic models older than structured outputs ("Structured outputs": Claude
# Sonnet 4.5, Opus 4.1 and later; not the 3.x and 4.0 models).
_ANTHROPIC_BEFORE_OUTPUTS = ("claude-3", "claude-sonnet-4-0", "claude-opus-4-0",
                             "claude-sonnet-4-2", "claude-opus-4-2")  # fmt: skip


def native_output(model: Model) -> bool:
    """Whether ``model``'s wire API has a native structured-output field."""
    return model.api in NATIVE_OUTPUT_APIS


def output_mode(model: Model) -> str:
    """The default ``output_mode`` for ``model``: ``"native"`` where its API and the
    model have structured outputs, else ``"tool"`` (a forced tool call) for the
    built-in APIs, and ``"prompted"`` for a custom API (which may have no tools)."""
    api = model.api
    if api not in builtin_api_names():
        return "prompted"
    if not native_output(model):
        return "tool"
    if api == "openai-chat" and model.provider in _CHAT_JSON_OBJECT_ONLY:
        return "tool"
    if api == "anthropic-messages" and (
        model.provider != "anthropic" or model.id.startswith(_ANTHROPIC_BEFORE_OUTPUTS)
    ):
        # Claude on Vertex AI and older models: a forced tool (documented fallback).
        return "tool"
    if api == "google-generative-ai" and model.id.startswith(("gemini-1", "gemini-2.0")):
        # ``responseJsonSchema`` arrived with Gemini 2.5 (structured-output docs).
        return "tool"
    return "native"


def mode_problem(model: Model, mode: str) -> str | None:
    """Why ``model`` cannot give its output in ``mode`` (``None``: it can)."""
    if mode == "native" and not native_output(model):
        return f"{model.api} has no native structured output: use output_mode='tool' or 'prompted'"
    if mode == "tool" and model.api == "ollama-chat":
        # /api/chat has no tool_choice, so the answer tool cannot be forced.
        return (
            "ollama-chat cannot force a tool call (its /api/chat has no tool_choice): use "
            "output_mode='native' (its format field) or 'prompted'"
        )
    return None
