"""The wire facts of Amazon Bedrock's Converse API, shared by the decoder and the mock
server's renderer so they cannot drift apart.

References: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html
(the stream's events and ``StopReason``) and
https://docs.aws.amazon.com/bedrock/latest/userguide/tool-use-inference-call.html
(``toolChoice``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal

from ...types import Capabilities

__all__ = ["CAPABILITIES", "FAILED_STOPS", "STOP_OF", "STOP_REASONS", "TOOL_ID_PREFIX"]

#: ``toolUseId`` as Bedrock spells it (``tooluse_…``).
TOOL_ID_PREFIX: Final = "tooluse_"

#: ``stopReason`` → modelwire stop reason, for a normal end; a reason in neither this
#: table nor :data:`FAILED_STOPS` is read as ``"stop"`` (forward compatible).
STOP_REASONS: Mapping[str, Literal["stop", "length", "tool_use"]] = MappingProxyType({
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_use",
    "max_tokens": "length",
})  # fmt: skip

#: Stop reasons that mean the answer was withheld: the error kind and what to say.
FAILED_STOPS: Mapping[str, tuple[str, str]] = MappingProxyType({
    "guardrail_intervened": ("content_filter", "a Bedrock guardrail intervened"),
    "content_filtered": ("content_filter", "Bedrock filtered the content"),
    "model_context_window_exceeded": (
        "context_overflow",
        "the conversation no longer fits the model's context window; shorten it",
    ),
})  # fmt: skip

#: modelwire stop reason → the ``stopReason`` a server sends for it.
STOP_OF: Mapping[str, str] = MappingProxyType(
    {"stop": "end_turn", "length": "max_tokens", "tool_use": "tool_use"}
)

#: Converse has no native structured-output field (the documented way is a forced
#: tool, ``toolChoice: {"tool": {"name": …}}``).
CAPABILITIES = Capabilities(
    structured_output="none", forced_tool_choice=True, late_call_signatures=False
)
