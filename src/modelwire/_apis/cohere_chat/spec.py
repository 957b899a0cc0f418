"""The wire facts of Cohere's v2 chat API, shared by the decoder, the encoder and the
mock renderer so they cannot drift apart.

References: https://docs.cohere.com/reference/chat-stream (the stream's events),
https://docs.cohere.com/reference/chat (the request and the whole response),
https://docs.cohere.com/docs/streaming and https://docs.cohere.com/docs/rag-streaming
(event order, citations), https://docs.cohere.com/docs/reasoning (thinking),
https://docs.cohere.com/reference/errors (error statuses).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal

from ...types import Capabilities

__all__ = [
    "API_NAME",
    "CAPABILITIES",
    "CITATION_SOURCE_KINDS",
    "CONTENT_KINDS",
    "DONE",
    "ENDPOINT",
    "ERROR_FINISH",
    "ERROR_STATUSES",
    "EVENTS",
    "FAILED_FINISH_REASONS",
    "FINISH_OF",
    "FINISH_REASONS",
    "ID_PREFIX",
    "INPUT_KINDS",
    "MOCK_ID",
    "THINKING_BUDGETS",
    "TOOL_CHOICE",
    "TOOL_ID_PREFIX",
    "VERSION_SEGMENT",
]

API_NAME: Final = "cohere-chat"
#: ``base_url`` ends in the API version (``https://api.cohere.com/v2``), as the other
#: versioned APIs' do; the endpoint follows it: ``POST {base_url}/chat``.
VERSION_SEGMENT: Final = "/v2"
ENDPOINT: Final = "/chat"

#: The stream's event types (``type`` in every payload, also sent as the SSE
#: ``event:`` line). Others (added later, e.g. ``debug``) are ignored.
EVENTS: Final = frozenset({
    "message-start",
    "content-start",
    "content-delta",
    "content-end",
    "tool-plan-delta",
    "tool-call-start",
    "tool-call-delta",
    "tool-call-end",
    "citation-start",
    "citation-end",
    "message-end",
})  # fmt: skip
#: What a real stream sends after ``message-end`` (seen in recordings; ignored).
DONE: Final = "[DONE]"

#: Response ids are UUIDs without a prefix; tool-call ids are ``<tool name>_<12
#: random characters>`` (``subtract_d41p5xnhmncp``). The mock's made-up ids.
ID_PREFIX: Final = ""
TOOL_ID_PREFIX: Final = "call_"
#: The response id the mock sends when a script fixes none (a UUID, as Cohere's are).
MOCK_ID: Final = "7d4e1c52-0b6a-4c2e-9f0e-3a1b2c3d4e5f"

#: ``content-start`` content types → the modelwire block each streams into.
CONTENT_KINDS: Final[Mapping[str, Literal["text", "thinking"]]] = MappingProxyType({
    "text": "text",
    "thinking": "thinking",
})  # fmt: skip

#: ``finish_reason`` of ``message-end`` → modelwire stop reason, for a normal end.
FINISH_REASONS: Final[Mapping[str, Literal["stop", "length", "tool_use"]]] = MappingProxyType({
    "COMPLETE": "stop",
    "STOP_SEQUENCE": "stop",
    "MAX_TOKENS": "length",
    "TOOL_CALL": "tool_use",
})  # fmt: skip

#: Finish reasons of a failed generation → (modelwire error kind, message). ``ERROR``
#: and ``TIMEOUT`` are v2's; ``ERROR_TOXIC`` and ``ERROR_LIMIT`` are v1's, still
#: listed by some deployments (OCI, Bedrock) that share the format.
FAILED_FINISH_REASONS: Final[Mapping[str, tuple[str, str]]] = MappingProxyType({
    "ERROR": ("provider_stream", "Cohere stopped the response with an error"),
    "TIMEOUT": ("timeout", "Cohere timed out generating the response"),
    "ERROR_TOXIC": ("content_filter", "Cohere's safety filter stopped the response"),
    "ERROR_LIMIT": ("context_overflow", "the conversation exceeds the model's context limit"),
})  # fmt: skip
#: The finish reason of a generation that failed after the ``200`` (``message-end``
#: with ``delta.error``, the error's text): what a server writes for an error event.
ERROR_FINISH: Final = "ERROR"

#: modelwire stop reason → the ``finish_reason`` Cohere sends (the mock's).
FINISH_OF: Final[Mapping[str, str]] = MappingProxyType({
    "stop": "COMPLETE",
    "length": "MAX_TOKENS",
    "tool_use": "TOOL_CALL",
})  # fmt: skip

#: modelwire ``tool_choice`` → Cohere's (only ``REQUIRED`` and ``NONE`` exist; a
#: specific tool cannot be forced: chat reference, ``tool_choice``).
TOOL_CHOICE: Final[Mapping[str, str]] = MappingProxyType({
    "required": "REQUIRED",
    "none": "NONE",
})  # fmt: skip

#: ``thinking.token_budget`` per reasoning level. The reasoning docs recommend
#: leaving 1K tokens for the answer and 31K as the budget for the longest thinking.
THINKING_BUDGETS: Final[Mapping[str, int]] = MappingProxyType({
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 31000,
})  # fmt: skip

#: What every Cohere chat model supports as far as the API says. ``response_format``
#: takes a JSON schema but "is not supported in combination with the documents or
#: tools parameters" (chat reference), so a forced tool call, which works beside
#: other tools, is the default way to structured output (``json``: native may still
#: be asked for). ``tool_choice`` ``REQUIRED`` with the one answer tool forces it.
CAPABILITIES: Final = Capabilities(structured_output="json", forced_tool_choice=True)

#: Input a user message can carry: text, and images for the vision models
#: (``image_url`` parts with a data URL); documents go to the request's ``documents``.
INPUT_KINDS: Final = frozenset({"text", "image", "document"})

#: Citation ``sources[].type`` → modelwire ``Citation.kind`` (a ``tool`` source is a
#: tool result the model cited: ``other``).
CITATION_SOURCE_KINDS: Final[Mapping[str, str]] = MappingProxyType({
    "document": "document",
    "tool": "other",
})  # fmt: skip

#: HTTP status → an error text Cohere's errors page gives for it (errors-reference):
#: what the mock's error bodies (``{"id", "message"}``) say when no text is scripted.
ERROR_STATUSES: Final[Mapping[int, str]] = MappingProxyType({
    400: "invalid request",
    401: "invalid api token",
    402: "payment required",
    404: "not found",
    429: "too many requests",
    499: "request cancelled",
    500: "internal server error",
    503: "service unavailable",
})  # fmt: skip
