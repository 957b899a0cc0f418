"""The wire facts of Ollama's native chat API, shared by the encoder, the decoder and the
server-side renderer so they cannot drift apart.

Reference: https://github.com/ollama/ollama/blob/main/docs/api.md ("Generate a chat
completion", "Load a model", "List Local Models", "Errors") and
https://ollama.com/blog/streaming-tool (tool calls in a stream).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal

from ...types import Capabilities

__all__ = [
    "API_NAME",
    "CAPABILITIES",
    "CONTENT_TYPE",
    "DONE_REASONS",
    "DONE_REASON_OF",
    "ENDPOINT",
    "FAILED_DONE_REASONS",
    "MODELS_PATH",
    "RESERVED",
    "RESERVED_OPTIONS",
    "SYNTHETIC_ID_PREFIX",
    "VERSION_SEGMENT",
]

API_NAME: Final = "ollama-chat"
#: ``base_url`` is the server root (``http://127.0.0.1:11434``, DESIGN §2b): no
#: version segment; the endpoint follows it: ``POST {base_url}/api/chat``.
VERSION_SEGMENT: Final = ""
ENDPOINT: Final = "/api/chat"
#: The model listing (``GET /api/tags``, "List Local Models").
MODELS_PATH: Final = "/api/tags"
#: The stream's media type: one JSON object per line.
CONTENT_TYPE: Final = "application/x-ndjson"

#: Body fields modelwire sets; ``extra_body`` may add others (``format``,
#: ``keep_alive``) and ``options`` entries (``num_ctx``, ``top_p``…).
RESERVED: Final = frozenset({"model", "messages", "stream", "tools", "think"})
#: ``options`` entries set by the ``max_tokens`` option.
RESERVED_OPTIONS: Final = frozenset({"num_predict"})

#: Prefix of the tool-call ids the decoder makes up: Ollama's tool calls carry none
#: (``ocall_<h>_<n>``, see :mod:`.decode`).
SYNTHETIC_ID_PREFIX: Final = "ocall_"

#: ``done_reason`` of the last line → modelwire stop reason, for a normal end. No
#: reason or one not in this table nor :data:`FAILED_DONE_REASONS` is a normal
#: ``stop`` (forward compatible); the raw value stays in ``provider_stop_reason``.
DONE_REASONS: Final[Mapping[str, Literal["stop", "length"]]] = MappingProxyType({
    "stop": "stop",
    "length": "length",
})  # fmt: skip

#: ``done_reason`` values that mean nothing was generated → (modelwire error kind,
#: message): the server loaded or unloaded the model ("Load a model", "Unload a
#: model": a request with empty ``messages``), which is not an answer.
FAILED_DONE_REASONS: Final[Mapping[str, tuple[str, str]]] = MappingProxyType({
    reason: ("provider_stream",
             f"Ollama {reason}ed the model and generated nothing (done_reason {reason!r})")
    for reason in ("load", "unload")
})  # fmt: skip

#: modelwire stop reason → the ``done_reason`` Ollama sends. A turn that calls tools
#: ends with ``stop``: Ollama has no reason of its own for it.
DONE_REASON_OF: Final[Mapping[str, str]] = MappingProxyType({
    "stop": "stop",
    "length": "length",
    "tool_use": "stop",
})  # fmt: skip

#: ``format`` takes a JSON schema ("Structured outputs"); /api/chat has no
#: ``tool_choice``, so no tool call can be forced.
CAPABILITIES: Final = Capabilities(
    structured_output="schema", forced_tool_choice=False, late_call_signatures=False
)
