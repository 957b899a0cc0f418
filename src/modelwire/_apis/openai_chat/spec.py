"""The wire facts of OpenAI Chat Completions, shared by the decoder, the mock server's
renderer and the gateway's renderer so the three cannot drift apart.

Reference: https://platform.openai.com/docs/api-reference/chat-streaming
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal

from ...types import Capabilities

__all__ = [
    "API_NAME",
    "CAPABILITIES",
    "CHUNK_OBJECT",
    "COMPLETION_OBJECT",
    "DONE",
    "FAILED_FINISH_REASONS",
    "FILTERED_FINISH",
    "FINISH_OF",
    "FINISH_REASONS",
    "ID_PREFIX",
    "OWN_FINISH_REASONS",
]

#: The wire API's registered name.
API_NAME: Final = "openai-chat"

#: What Chat Completions gives a model: ``response_format`` with a ``json_schema``, and
#: ``tool_choice`` naming one function. Servers that take JSON mode only say so in the
#: catalog (their provider's ``capabilities``).
CAPABILITIES = Capabilities(
    structured_output="schema", forced_tool_choice=True, late_call_signatures=False
)

#: ``object`` of a streamed chunk and of a whole (non-streamed) answer.
CHUNK_OBJECT = "chat.completion.chunk"
COMPLETION_OBJECT = "chat.completion"
#: The payload of the stream's last ``data:`` line.
DONE = "[DONE]"
#: Response ids as OpenAI spells them (``chatcmpl-…``).
ID_PREFIX = "chatcmpl-"

#: The ``finish_reason`` of an answer a content filter stopped: this API reports a
#: filter on a normal answer, not with an error.
FILTERED_FINISH = "content_filter"

#: Provider ``finish_reason`` → modelwire stop reason, for a normal end. Compatible
#: servers add their own spellings; a reason in neither this table nor
#: :data:`FAILED_FINISH_REASONS` is read as ``"stop"`` (forward compatible).
FINISH_REASONS: Mapping[str, Literal["stop", "length", "tool_use"]] = MappingProxyType({
    "stop": "stop",
    "length": "length",
    "model_length": "length",  # Mistral: the model's context window was reached
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "eos": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
})  # fmt: skip

#: Finish reasons that mean the generation failed → (modelwire error kind, message):
#: treating them as "stop" would pass a broken response off as a complete one.
#: Mistral and OpenRouter send ``error``; DeepSeek ``insufficient_system_resource``
#: ("the inference was interrupted for lack of resources", api-docs.deepseek.com);
#: vLLM ``abort``.
FAILED_FINISH_REASONS: Mapping[str, tuple[str, str]] = MappingProxyType({
    FILTERED_FINISH: (
        "content_filter",
        "the provider's content filter stopped the response (finish_reason content_filter)",
    ),
    "error": ("provider_stream", "the provider stopped the response with finish_reason 'error'"),
    "abort": ("provider_stream", "the server aborted the response (finish_reason 'abort')"),
    "insufficient_system_resource": (
        "overloaded",
        "the provider interrupted the response for lack of resources "
        "(finish_reason 'insufficient_system_resource')",
    ),
})  # fmt: skip

#: modelwire stop reason → the ``finish_reason`` a server of this API sends.
FINISH_OF: Mapping[str, str] = MappingProxyType({
    "stop": "stop",
    "length": "length",
    "tool_use": "tool_calls",
})  # fmt: skip

#: The finish reasons of the API reference itself: a backend of this API may have its
#: own passed on as sent.
OWN_FINISH_REASONS = frozenset({"stop", "length", "tool_calls", "content_filter", "function_call"})
