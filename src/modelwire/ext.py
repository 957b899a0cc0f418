"""What an extender needs to add a wire API: the one public module for it.

A wire API is a small codec (:class:`WireCodec`: name, endpoint path, request
encoding, framing, decoder factory, ``recognizes``, and ``capabilities(model)``: what a
model of the API supports, as :class:`Capabilities`) plus optional facets
(:class:`MockFacet` for the mock server, :class:`HandoffFacet` for tool-call id
rules, :class:`CountFacet` for a token-counting endpoint), registered with
:func:`register_wire_api`. Its decoder turns each
:class:`Frame` (an event type and the payload bytes, whatever the framing) into the
normalized deltas below, decoding payloads with :func:`decode_json` (typed, with
field paths in its errors). The mock-rendering helpers build a scripted reply's
events. docs/adding-a-wire-api.md walks through a complete API built from these
names only.

A *provider* reuses any wire API with its own URL, auth, body and request-time
credentials: subclass :class:`ProviderRules`, override the hooks you need, and
install it with :func:`register_provider`; the client applies the rules to the
request any wire API built, the built-in ones and those registered at run time
alike. :class:`AzureOpenAIRules` are provider ``azure-openai``'s, to register again with
an :class:`~modelwire.cloud.azure.AzureAuth` of your own.
"""

from __future__ import annotations

from ._apis import MODEL_SLOT, register_wire_api
from ._apis._codec import (
    CountFacet,
    Counting,
    HandoffFacet,
    IdRule,
    IdRules,
    MockFacet,
    MockRendering,
    WireCodec,
    WireDecoder,
    first_line_json,
    first_sse_json,
    sse_framing,
)
from ._apis._common import (
    Count,
    bearer_auth,
    check_context_values,
    check_reasoning,
    check_tool_choice,
    decode_json,
    decoder_for,
    http_request,
    in_band_error,
)
from ._apis._mock import (
    MockFrame,
    ScriptedReply,
    arguments_object,
    arguments_text,
    compact_json,
    encode_sse,
    model_in_body,
    role_tool_results,
    split_text,
    text_of,
)
from ._providers import ProviderRules, register_provider
from ._providers.azure_openai import AzureOpenAIRules
from ._wire.deltas import (
    BlockComplete,
    BlockEnd,
    BlockSignature,
    BlockStart,
    CitationDelta,
    Delta,
    EndOfStream,
    Finish,
    ResponseMeta,
    TextDelta,
    ThinkingDelta,
    ToolCallArguments,
    ToolCallDelta,
    UsageUpdate,
)
from ._wire.framing import EventStreamDecoder, Framing, NDJSONDecoder
from ._wire.request import HTTPRequest, RequestOptions, check_extra_body
from ._wire.sse import Frame, SSEFraming
from .types import Capabilities

__all__ = [  # noqa: RUF022 - plain sorted() order, as tests/test_public_api.py checks
    "AzureOpenAIRules",
    "BlockComplete",
    "BlockEnd",
    "BlockSignature",
    "BlockStart",
    "Capabilities",
    "CitationDelta",
    "Count",
    "CountFacet",
    "Counting",
    "Delta",
    "EndOfStream",
    "EventStreamDecoder",
    "Finish",
    "Frame",
    "Framing",
    "HTTPRequest",
    "HandoffFacet",
    "IdRule",
    "IdRules",
    "MODEL_SLOT",
    "MockFacet",
    "MockFrame",
    "MockRendering",
    "NDJSONDecoder",
    "ProviderRules",
    "RequestOptions",
    "ResponseMeta",
    "SSEFraming",
    "ScriptedReply",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallArguments",
    "ToolCallDelta",
    "UsageUpdate",
    "WireCodec",
    "WireDecoder",
    "arguments_object",
    "arguments_text",
    "bearer_auth",
    "check_context_values",
    "check_extra_body",
    "check_reasoning",
    "check_tool_choice",
    "compact_json",
    "decode_json",
    "decoder_for",
    "encode_sse",
    "first_line_json",
    "first_sse_json",
    "http_request",
    "in_band_error",
    "model_in_body",
    "register_provider",
    "register_wire_api",
    "role_tool_results",
    "split_text",
    "sse_framing",
    "text_of",
]
