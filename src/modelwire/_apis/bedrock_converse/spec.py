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

__all__ = [
    "API_NAME",
    "CAPABILITIES",
    "COMPLETE_SUFFIX",
    "CONTENT_BLOCK_DELTA",
    "CONTENT_BLOCK_START",
    "CONTENT_BLOCK_STOP",
    "CONTENT_TYPE",
    "EXCEPTION_OF_KIND",
    "EXCEPTION_OF_STATUS",
    "FAILED_STOPS",
    "FAILED_STOP_OF",
    "IN_STREAM_EXCEPTION",
    "MESSAGE_START",
    "MESSAGE_STOP",
    "METADATA",
    "STOP_OF",
    "STOP_REASONS",
    "STREAM_SUFFIX",
    "TOOL_ID_PREFIX",
]

#: The wire API's name in modelwire's registry.
API_NAME: Final = "bedrock-converse"

#: The ``:event-type`` of each ``ConverseStreamOutput`` member, in the order they come.
MESSAGE_START: Final = "messageStart"
CONTENT_BLOCK_START: Final = "contentBlockStart"
CONTENT_BLOCK_DELTA: Final = "contentBlockDelta"
CONTENT_BLOCK_STOP: Final = "contentBlockStop"
MESSAGE_STOP: Final = "messageStop"
METADATA: Final = "metadata"

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

#: modelwire error kind → the ``stopReason`` that says it (a server sends it as a normal
#: end; the client reads it back as that error through :data:`FAILED_STOPS`).
FAILED_STOP_OF: Mapping[str, str] = MappingProxyType(
    {"content_filter": "content_filtered", "context_overflow": "model_context_window_exceeded"}
)

#: modelwire error kind → the ``:exception-type`` of the ConverseStream exception
#: (``ConverseStreamOutput`` error members) that a client reads back as that kind
#: (a model timeout reads back as ``server``: its status is a server error's).
EXCEPTION_OF_KIND: Mapping[str, str] = MappingProxyType({
    "rate_limit": "throttlingException",
    "overloaded": "serviceUnavailableException",
    "server": "internalServerException",
    "timeout": "modelTimeoutException",
    "invalid_request": "validationException",
    "permission": "accessDeniedException",
    "not_found": "resourceNotFoundException",
    "provider_stream": "modelStreamErrorException",
})  # fmt: skip

#: The exception a server sends for a failure no other one names (an overload).
IN_STREAM_EXCEPTION: Final = "serviceUnavailableException"

#: modelwire stop reason → the ``stopReason`` a server sends for it.
STOP_OF: Mapping[str, str] = MappingProxyType(
    {"stop": "end_turn", "length": "max_tokens", "tool_use": "tool_use"}
)

#: Converse has no native structured-output field (the documented way is a forced
#: tool, ``toolChoice: {"tool": {"name": …}}``).
CAPABILITIES = Capabilities(
    structured_output="none", forced_tool_choice=True, late_call_signatures=False
)


#: The streaming endpoint after ``/model/{id}``, and the one answering with one object.
STREAM_SUFFIX: Final = "/converse-stream"
COMPLETE_SUFFIX: Final = "/converse"
#: The media type of the AWS event stream ConverseStream answers with.
CONTENT_TYPE: Final = "application/vnd.amazon.eventstream"
#: The exception each HTTP status stands for (Bedrock Runtime reference, "Errors").
EXCEPTION_OF_STATUS: Mapping[int, str] = MappingProxyType({
    400: "ValidationException", 403: "AccessDeniedException",
    404: "ResourceNotFoundException", 408: "ModelTimeoutException",
    424: "ModelErrorException", 429: "ThrottlingException",
    503: "ServiceUnavailableException",
})  # fmt: skip
