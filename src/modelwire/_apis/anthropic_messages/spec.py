"""The wire facts of the Anthropic Messages API, shared by the decoder, the mock
server's renderer and the gateway's renderer so the three cannot drift apart.

References: https://docs.anthropic.com/en/api/messages,
https://docs.anthropic.com/en/docs/build-with-claude/handling-stop-reasons and
https://docs.anthropic.com/en/docs/build-with-claude/streaming
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal

from ...types import Capabilities

if TYPE_CHECKING:
    from ...types import Model

__all__ = [
    "EVENTS",
    "ID_PREFIX",
    "RAW_PREDICT",
    "REFUSAL",
    "SERVER_TOOLS",
    "SERVER_TOOL_BETAS",
    "STOP_OF",
    "STOP_REASONS",
    "TOOL_ID_PREFIX",
    "capabilities",
]

#: Message ids as Anthropic spells them (``msg_…``).
ID_PREFIX: Final = "msg_"
#: Tool-use block ids (``toolu_…``).
TOOL_ID_PREFIX: Final = "toolu_"
#: Claude on Vertex AI streams the same events from
#: ``…/publishers/anthropic/models/{id}:streamRawPredict``, the model in the path.
RAW_PREDICT: Final = ":streamRawPredict"

# Structured outputs ("Structured outputs" docs) are a first-party feature of Claude
# Sonnet 4.5, Opus 4.1 and later: not the 3.x and 4.0 models, and not Claude served
# by another provider (Vertex AI), where a forced tool is the documented fallback.
_BEFORE_OUTPUTS = ("claude-3", "claude-sonnet-4-0", "claude-opus-4-0",
                   "claude-sonnet-4-2", "claude-opus-4-2")  # fmt: skip
_FIRST_PARTY = "anthropic"
# Mid-conversation system messages: Claude Opus 4.8 on the Claude API, not on Bedrock,
# Vertex AI or Foundry (https://platform.claude.com/docs/en/build-with-claude/
# mid-conversation-system-messages); another model that has them says so in its
# capabilities.
_MID_CONVERSATION_SYSTEM = "claude-opus-4-8"


def capabilities(model: Model) -> Capabilities:
    """What the Messages API gives ``model``: ``output_format`` where Anthropic serves a
    model that has it (else the field exists but is not the default), a forced tool
    (``tool_choice: {"type": "tool"}``)."""
    native = model.provider == _FIRST_PARTY and not model.id.startswith(_BEFORE_OUTPUTS)
    return Capabilities(
        structured_output="schema" if native else "json",
        forced_tool_choice=True,
        late_call_signatures=False,
        mid_conversation_system=model.provider == _FIRST_PARTY
        and model.id.startswith(_MID_CONVERSATION_SYSTEM),
    )


#: The stream's event types (streaming docs, "Event types").
EVENTS: Final = frozenset({
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
})  # fmt: skip

#: Provider ``stop_reason`` → modelwire stop reason, for a normal end.
STOP_REASONS: Final[Mapping[str, Literal["stop", "length", "tool_use"]]] = MappingProxyType({
    "end_turn": "stop",
    "stop_sequence": "stop",
    # A server-tool loop paused a long turn: the turn is valid as it stands and goes
    # on when the message is sent back; the raw reason stays in provider_stop_reason,
    # which is what the Agent acts on.
    "pause_turn": "stop",
    # Compaction with pause_after_compaction (compaction docs): likewise.
    "compaction": "stop",
    "tool_use": "tool_use",
    "max_tokens": "length",
    # The response filled the context window: truncated like max_tokens.
    "model_context_window_exceeded": "length",
})  # fmt: skip

#: The ``stop_reason`` of a declined request: modelwire reads it as a failed
#: response (error kind ``content_filter``), not as one of STOP_REASONS.
REFUSAL: Final = "refusal"

#: modelwire stop reason → the ``stop_reason`` a server of this API sends.
STOP_OF: Final[Mapping[str, str]] = MappingProxyType({
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_use": "tool_use",
})  # fmt: skip


#: Provider-run tools by modelwire's neutral name, as Messages tool objects (server
#: tools: https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/web-search-tool,
#: .../web-fetch-tool, .../code-execution-tool), and the beta each one needs.
SERVER_TOOLS: Final[dict[str, dict[str, Any]]] = {
    "web_search": {"type": "web_search_20250305", "name": "web_search"},
    "web_fetch": {"type": "web_fetch_20250910", "name": "web_fetch"},
    "code_execution": {"type": "code_execution_20250825", "name": "code_execution"},
}
SERVER_TOOL_BETAS: Final = {
    "web_fetch_20250910": "web-fetch-2025-09-10",
    "code_execution_20250825": "code-execution-2025-08-25",
}
