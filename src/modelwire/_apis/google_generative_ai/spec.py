"""Facts of the Gemini wire format that other layers ask about, so none of them
names Gemini (thought signatures guide:
https://ai.google.dev/gemini-api/docs/thought-signatures; streamed function-call
arguments: https://cloud.google.com/vertex-ai/generative-ai/docs/multimodal/function-calling#streaming-fc;
structured output: https://ai.google.dev/gemini-api/docs/structured-output).

Constant data only: importing this module costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Literal

from ...types import Capabilities

if TYPE_CHECKING:
    from ...types import Model

__all__ = [
    "API_NAME",
    "CODE_PARTS",
    "FILTERED_FINISH",
    "FILTERED_FINISH_REASONS",
    "FINISH_OF",
    "FINISH_REASONS",
    "GROUNDING",
    "MOCK_ID",
    "ROLE",
    "RPC_STATUS_OF",
    "SERVER_TOOLS",
    "STATUS_OF_RPC",
    "STREAM_ERROR_CODE",
    "STREAM_ERROR_STATUS",
    "capabilities",
]

API_NAME: Final = "google-generative-ai"
#: The ``responseId`` a mock server sends when a script fixes none (Gemini's ids are
#: opaque strings without a prefix).
MOCK_ID: Final = "mock-response"
#: ``Content.role`` of the model's answer.
ROLE: Final = "model"

#: ``Candidate.finishReason`` → modelwire stop reason, for a normal end (API
#: reference, ``FinishReason``). Gemini says STOP for a turn that calls functions too.
FINISH_REASONS: Final[Mapping[str, Literal["stop", "length", "tool_use"]]] = MappingProxyType({
    "STOP": "stop",
    "MAX_TOKENS": "length",
})  # fmt: skip
#: modelwire stop reason → the ``finishReason`` a server of this API sends.
FINISH_OF: Final[Mapping[str, str]] = MappingProxyType({
    "stop": "STOP",
    "length": "MAX_TOKENS",
    "tool_use": "STOP",
})  # fmt: skip
#: ``finishReason`` values that mean a safety or recitation filter stopped the answer
#: (modelwire: a failed response of error kind ``content_filter``).
FILTERED_FINISH_REASONS: Final = frozenset({
    "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION",
})  # fmt: skip
#: The one a server sends for a filtered answer whose own reason it does not know.
FILTERED_FINISH: Final = "SAFETY"

#: A failure after the ``200``: a ``google.rpc.Status`` object (``{"error": {"code",
#: "message", "status"}}``) in a ``data:`` event, as a server sends for an overload.
STREAM_ERROR_CODE: Final = 503
STREAM_ERROR_STATUS: Final = "UNAVAILABLE"

#: The part kinds of code Gemini ran (code-execution docs), as ``provider_type`` of
#: the blocks they are read into; their ``raw`` is the part as received.
CODE_PARTS: Final = frozenset({"executableCode", "codeExecutionResult"})
#: The ``provider_type`` of a Google Search block: response metadata
#: (``Candidate.groundingMetadata``), no part.
GROUNDING: Final = "groundingMetadata"

# ``responseJsonSchema`` (a full JSON schema) arrived with Gemini 2.5; the older
# models have only ``responseSchema``, an OpenAPI subset: the field exists, but a
# forced tool is the default there.
_BEFORE_JSON_SCHEMA = ("gemini-1", "gemini-2.0")

# A function call's ``thoughtSignature`` may be known only when the call ends: it
# sits on the ``functionCall`` part, and a call streamed in fragments
# (``partialArgs``, ``willContinue``) may carry it on a later fragment than the one
# that named the call.
_LATE_CALL_SIGNATURES = True


def capabilities(model: Model) -> Capabilities:
    """What ``generateContent`` gives ``model``: a JSON-schema answer (2.5 and later),
    ``functionCallingConfig`` mode ``ANY`` with one allowed name, late call signatures."""
    old = model.id.startswith(_BEFORE_JSON_SCHEMA)
    return Capabilities(
        structured_output="json" if old else "schema",
        forced_tool_choice=True,
        late_call_signatures=_LATE_CALL_SIGNATURES,
    )


#: HTTP status → the Google RPC status name an error body carries
#: (https://cloud.google.com/apis/design/errors#handling_errors).
RPC_STATUS_OF: Mapping[int, str] = MappingProxyType({
    400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
    404: "NOT_FOUND", 409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED",
    500: "INTERNAL", 501: "UNIMPLEMENTED", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
})  # fmt: skip
#: A ``google.rpc.Status`` name → the HTTP status, for an error object that carries only
#: ``status``: the table above read the other way, with the names that share a status.
STATUS_OF_RPC: Mapping[str, int] = MappingProxyType({
    **{name: status for status, name in RPC_STATUS_OF.items()},
    "FAILED_PRECONDITION": 400, "OUT_OF_RANGE": 400,
})  # fmt: skip


#: Provider-run tools by modelwire's neutral name: the ``Tool`` field that turns each on
#: (``googleSearch``, ``urlContext``, ``codeExecution``:
#: https://ai.google.dev/api/caching#Tool); a tool's options are that field's object.
SERVER_TOOLS: Final = {
    "web_search": "googleSearch",
    "web_fetch": "urlContext",
    "code_execution": "codeExecution",
}
